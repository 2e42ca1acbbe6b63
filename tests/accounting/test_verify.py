"""verify_ldp on the built-in mechanism: exact bounds, witnesses, the sampled law, bad input."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ldptree.accounting import LDPCertificate, verify_ldp
from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.mechanisms._sampled_laplace import realised_magnitudes


def _expected_bound(mech: RRLaplaceMechanism, n_cells: int) -> float:
    """Two flipped bits (one when n_cells == 1: none) at the realised q', plus the label's
    declared (1 - rho) eps."""
    bits = 2 if n_cells >= 2 else 0
    return bits * math.log(mech.keep_prob / mech.flip_prob) + mech.label_epsilon


@pytest.mark.parametrize("n_cells", [1, 2, 3, 17, 1024, 4096])
def test_built_in_bound_is_exact_for_any_number_of_cells(n_cells: int) -> None:
    mech = RRLaplaceMechanism(epsilon=1.7, label_bound=(-1.0, 3.0), budget_split=0.3)
    cert = verify_ldp(mech, n_cells=n_cells, label_bound=(-1.0, 3.0))
    assert cert.declared_holds and cert.exact
    assert cert.epsilon_bound == pytest.approx(_expected_bound(mech, n_cells), rel=1e-12)
    assert cert.epsilon_bound <= mech.epsilon


def test_witness_attains_the_bound_under_the_mechanisms_own_likelihood() -> None:
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0, budget_split=0.6, precision_bits=32)
    n_cells = 5
    cert = verify_ldp(mech, n_cells=n_cells, label_bound=1.0)
    w = cert.witness
    (cell_a, label_a), (cell_b, label_b) = w.record, w.other
    ratio = mech.log_prob(w.report, cell_a, label_a, n_cells) - mech.log_prob(
        w.report, cell_b, label_b, n_cells
    )
    assert cell_a != cell_b and {label_a, label_b} == {-1.0, 1.0}
    assert ratio == pytest.approx(cert.epsilon_bound, rel=1e-12)
    assert dict(w.parts)["label"] == pytest.approx(mech.label_epsilon, rel=1e-12)


def test_a_wider_label_domain_is_certified_because_the_mechanism_clips() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0))
    narrow = verify_ldp(mech, n_cells=4, label_bound=(0.0, 1.0))
    wide = verify_ldp(mech, n_cells=4, label_bound=(-1e6, 1e6))
    assert wide.declared_holds and wide.epsilon_bound == pytest.approx(
        narrow.epsilon_bound, rel=1e-15
    )
    assert any("every real label" in note for note in wide.notes)


def test_the_sampled_law_is_reported_not_pure() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    cert = verify_ldp(mech, n_cells=3, label_bound=1.0)
    (caveat,) = cert.sampled
    assert caveat.block == "label" and "bounded support" in caveat.note
    assert cert.declared_holds and not cert.holds and not cert.pure
    assert cert.delta is not None and 0.0 < cert.delta < 1e-4
    # the unreachable code lies beyond the reach of the other record's float32 noise
    code = caveat.unreachable
    assert isinstance(code, int)
    x0 = float(realised_magnitudes()[0])
    beta = mech.label_scale / mech.label_step
    mu_b = mech.label_location(cert.witness.other[1])
    assert abs(code - mu_b) > beta * x0 + 1.0


def test_realised_label_law_matches_the_sampler() -> None:
    """Goodness of fit of the enumerated sampled law against privatize (G-test).

    False-failure rate: the G-test p-value threshold is 1e-6 for a correct law (and the key is
    fixed, so a pass is permanent); the arithmetic the law omits changes code probabilities by
    about 1e-7 relative, far below what 400 000 draws can see.
    """
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    law = mech.report_law(1).blocks[1].channel.sampling
    assert law is not None
    n = 400_000
    reports = mech.privatize(
        jax.random.key(7), jnp.zeros(n, jnp.int32), jnp.full(n, 0.3, jnp.float32), 1
    )
    codes = np.asarray(reports.code)
    first, probs = law.law(mech.label_location(0.3))
    observed = np.bincount(codes - first, minlength=probs.size)
    assert observed.size == probs.size  # nothing outside the enumerated support
    expected = probs * n
    keep = expected > 5
    tail_obs, tail_exp = observed[~keep].sum(), expected[~keep].sum()
    obs = np.append(observed[keep], tail_obs)
    exp = np.append(expected[keep], tail_exp)
    g = 2.0 * np.sum(np.where(obs > 0, obs * np.log(obs / exp), 0.0))
    p_value = stats.chi2.sf(g, obs.size - 1)
    assert p_value > 1e-6


def test_exact_sampled_delta_at_the_witness_pair() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0, budget_split=0.5)
    cert = verify_ldp(mech, n_cells=2, label_bound=1.0, exact_sampled_delta=True)
    (caveat,) = cert.sampled
    assert caveat.exact_delta is not None
    # bounded support: at least the mass beyond the other record's reach, at most the bound
    assert 1e-7 < caveat.exact_delta < caveat.delta


def test_certificate_is_immutable_and_printable() -> None:
    cert = verify_ldp(RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), n_cells=2, label_bound=1.0)
    assert isinstance(cert, LDPCertificate)
    with pytest.raises(AttributeError):
        cert.holds = False  # type: ignore[misc]
    text = str(cert)
    assert "as implemented FAILS" in text and "declared law: holds" in text
    assert "witness" in text and "records" in text


class _NotVerifiable:
    epsilon = 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_cells": 0, "label_bound": 1.0}, ValueError, "n_cells"),
        ({"n_cells": 2}, ValueError, "label_bound is required"),
        ({"n_cells": 2, "label_bound": (1.0, 0.0)}, ValueError, "label_bound"),
        ({"n_cells": 2, "label_bound": 1.0, "tolerance": -1.0}, ValueError, "tolerance"),
        ({"n_cells": 2, "labels": [0, 1]}, ValueError, "finite labels"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict, error: type, match: str) -> None:  # type: ignore[type-arg]
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
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
