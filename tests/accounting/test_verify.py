"""verify_ldp on the built-in mechanism: exact bounds, witnesses, purity as sampled, bad input."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_mechanisms import ToyLaplace

from ldptree.accounting import LDPCertificate, verify_ldp
from ldptree.mechanisms import RRLaplaceMechanism


def _label_divergence(mech: RRLaplaceMechanism) -> float:
    """Exact max-divergence of the label code between the two end levels, from the counts."""
    noise = mech.label_noise
    lo, hi = noise.log_probs(0), noise.log_probs(noise.span)
    return float(np.max(lo - hi))


def _expected_bound(mech: RRLaplaceMechanism, n_cells: int) -> float:
    """Two flipped bits (none when n_cells == 1) at the realised q', plus the label code's exact
    divergence between the end levels."""
    bits = 2 if n_cells >= 2 else 0
    return bits * math.log(mech.keep_prob / mech.flip_prob) + _label_divergence(mech)


@pytest.mark.parametrize("n_cells", [1, 2, 3, 17, 1024, 4096])
def test_built_in_bound_is_exact_for_any_number_of_cells(n_cells: int) -> None:
    mech = RRLaplaceMechanism(epsilon=1.7, label_bound=(-1.0, 3.0), budget_split=0.3)
    cert = verify_ldp(mech, n_cells=n_cells)
    assert cert.declared_holds and cert.exact and cert.pure
    assert cert.epsilon_bound == pytest.approx(_expected_bound(mech, n_cells), rel=1e-12)
    # with one cell the cell report reveals nothing and only the label spends
    claim = mech.epsilon if n_cells >= 2 else mech.label_epsilon
    assert 0.99 * claim <= cert.epsilon_bound <= mech.epsilon


def test_witness_attains_the_bound_under_the_mechanisms_own_likelihood() -> None:
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0, budget_split=0.6, precision_bits=32)
    n_cells = 5
    cert = verify_ldp(mech, n_cells=n_cells)
    w = cert.witness
    (cell_a, label_a), (cell_b, label_b) = w.record, w.other
    ratio = mech.log_prob(w.report, cell_a, label_a, n_cells) - mech.log_prob(
        w.report, cell_b, label_b, n_cells
    )
    assert cell_a != cell_b and {label_a, label_b} == {-1.0, 1.0}
    assert ratio == pytest.approx(cert.epsilon_bound, rel=1e-12)
    assert dict(w.parts)["code"] == pytest.approx(_label_divergence(mech), rel=1e-12)


def test_every_real_label_is_covered_through_the_levels() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0))
    cert = verify_ldp(mech, n_cells=4)
    assert cert.pure and any("every real label" in note for note in cert.notes)
    # a label far outside the bound is clipped: its report law is an end level's law
    report = mech.privatize(jax.random.key(0), jnp.zeros(1, jnp.int32), jnp.ones(1), 4)
    one = type(report)(report.bits[0], report.code[0])
    assert mech.log_prob(one, 0, 1e6, 4) == pytest.approx(mech.log_prob(one, 0, 1.0, 4))


@pytest.mark.slow
def test_the_built_in_is_pure_as_sampled() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    cert = verify_ldp(mech, n_cells=3, check_sampler=True, key=jax.random.key(3))
    assert cert.sampled == () and cert.delta == 0.0
    assert cert.declared_holds and cert.holds and cert.pure
    assert cert.sampler_check is not None and not cert.sampler_check.rejected


def test_certificate_is_immutable_and_printable() -> None:
    cert = verify_ldp(RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), n_cells=2)
    assert isinstance(cert, LDPCertificate)
    with pytest.raises(AttributeError):
        cert.holds = False  # type: ignore[misc]
    text = str(cert)
    assert "as implemented HOLDS (pure)" in text and "declared law: holds" in text
    assert "witness" in text and "records" in text


class _NotVerifiable:
    epsilon = 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_cells": 0, "label_bound": (0.0, 1.0)}, ValueError, "n_cells"),
        ({"n_cells": 2}, ValueError, "label_bound is required"),
        ({"n_cells": 2, "label_bound": (1.0, 0.0)}, ValueError, "label_bound"),
        ({"n_cells": 2, "label_bound": (0.0, 1.0), "tolerance": -1.0}, ValueError, "tolerance"),
        ({"n_cells": 2, "labels": [0, 1]}, ValueError, "finite labels"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict, error: type, match: str) -> None:  # type: ignore[type-arg]
    # a mechanism with real labels declared through an affine label map (no levels)
    mech = ToyLaplace(epsilon=1.0)
    with pytest.raises(error, match=match):
        verify_ldp(mech, **kwargs)


def test_a_mechanism_without_report_law_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="report_law"):
        verify_ldp(_NotVerifiable(), n_cells=2, label_bound=1.0)


def test_a_nan_label_is_rejected_or_released_like_the_centre() -> None:
    """Formerly a privacy bug: NaN passed clip and was released as code 0 every time."""
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 2.0))
    n = 64
    cells, nans = jnp.zeros(n, jnp.int32), jnp.full(n, jnp.nan, jnp.float32)
    with pytest.raises(ValueError, match="labels contain NaN"):
        mech.privatize(jax.random.key(0), cells, nans, 2)
    # under tracing the check cannot run; the kernel then releases NaN exactly as the centre
    traced = jax.jit(lambda y: mech.privatize(jax.random.key(0), cells, y, 2).code)
    np.testing.assert_array_equal(
        np.asarray(traced(nans)), np.asarray(traced(jnp.full(n, 1.0, jnp.float32)))
    )
    assert np.unique(np.asarray(traced(nans))).size > 1
