"""ReleaseCertificate: holds within a relative 1e-9 of the claim, pure only with delta = 0."""

from __future__ import annotations

import pytest

from ldptree.accounting import ReleaseCertificate


def _cert(eps: float, delta: float, claim: tuple[float, float] = (1.0, 0.0)) -> ReleaseCertificate:
    return ReleaseCertificate(claim[0], claim[1], eps, delta, "test", ("a note",))


def test_holds_and_pure() -> None:
    assert _cert(1.0, 0.0).holds and _cert(1.0, 0.0).pure
    assert _cert(1.0 + 5e-10, 0.0).holds  # within the relative slack
    assert not _cert(1.0 + 2e-9, 0.0).holds and not _cert(1.0 + 2e-9, 0.0).pure
    approx = _cert(1.0, 1e-7, claim=(1.0, 1e-6))
    assert approx.holds and not approx.pure
    assert not _cert(1.0, 2e-6, claim=(1.0, 1e-6)).holds
    assert not _cert(1.0, 1e-300).holds  # any delta above a pure claim is refused


def test_bad_input_names_the_field() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        _cert(-1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        _cert(1.0, float("nan"))
    with pytest.raises(TypeError, match="notes"):
        ReleaseCertificate(1.0, 0.0, 1.0, 0.0, "m", "not a tuple")  # type: ignore[arg-type]
