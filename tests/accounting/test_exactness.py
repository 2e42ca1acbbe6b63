"""Exact to the last bit: thresholds proven in rational arithmetic, certificates accurate at any
budget, every built-in certified near its claim, and no crash anywhere in the accepted range.

Deterministic (no sampling).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.accounting import verify_ldp
from ldptree.mechanisms import BitFlip, KaryResponse
from ldptree.mechanisms._exact import exp_bounds, float_ratio_below
from ldptree.mechanisms._noise import _flip_threshold
from ldptree.testing import BUILT_INS


def _exp_lower(x: Fraction, terms: int = 40) -> Fraction:
    """A rational lower bound of ``e^x`` for ``0 <= x < 1``: a partial Taylor sum (every term is
    positive), independent of the library's own bound."""
    total, term = Fraction(0), Fraction(1)
    for k in range(terms):
        total += term
        term = term * x / (k + 1)
    return total


def _float_threshold(epsilon: float, bits: int) -> int:
    """The threshold as it was computed before: ``ceil(q 2^bits)`` from a float64 ``q``."""
    q = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    return max(1, math.ceil(q * 2.0**bits))


TINY = [float(e) for e in np.geomspace(2.0**-20, 2.0**-17, 400)]


def test_flip_thresholds_never_exceed_the_claim_at_tiny_budgets() -> None:
    """``(2^bits - T) / T <= e^eps`` proven with an independent rational bound of ``e^eps``;
    the float threshold it replaces overshoots in this range (so the check can fail)."""
    overshoots = 0
    for epsilon in TINY:
        lower = _exp_lower(Fraction(epsilon))
        for bits in (32, 64):
            t = _flip_threshold(epsilon, bits)
            assert Fraction(2**bits - t, t) <= lower, (epsilon, bits)
            old = _float_threshold(epsilon, bits)
            overshoots += Fraction(2**bits - old, old) > lower
            assert t >= old  # a replaced threshold only moves towards privacy
    assert overshoots > 0


def test_kit_noises_at_tiny_budgets_are_certified_exactly() -> None:
    for epsilon in TINY[::40]:
        flip = BitFlip(epsilon)
        assert flip.realised_epsilon <= epsilon
        d = flip.channel().divergences([0, 1]).value
        assert d[0, 1] == pytest.approx(flip.realised_epsilon, rel=1e-12)
        assert d[0, 1] <= epsilon * (1.0 + 1e-12)
        kary = KaryResponse(epsilon, 7)
        assert Fraction(kary.keep_count, kary.other_count) <= _exp_lower(Fraction(epsilon))


def test_exp_bounds_bracket_the_exponential() -> None:
    for x in (1e-12, 2.0**-20, 0.5, 1.0, 40.0, 700.0):
        lo, hi = exp_bounds(x)
        assert lo < hi and float(lo) <= math.exp(x) <= float(hi) * (1 + 1e-15)
        assert (hi - lo) / lo < Fraction(1, 10**38)
    assert float_ratio_below(1.0) <= exp_bounds(1.0)[0]
    assert float_ratio_below(1e6) <= exp_bounds(1000.0)[0]


def _certificate(name: str, epsilon: float) -> Any:
    built_in = BUILT_INS[name]
    mechanism = built_in.make(epsilon)
    n_cells = 1 if built_in.options.get("n_features") else 16
    extra = {"label_bound": (-3.0, 3.0)} if built_in.task == "regression" else {}
    return verify_ldp(mechanism, n_cells=n_cells, **extra)


@pytest.mark.parametrize("name", sorted(BUILT_INS))
def test_every_built_in_is_pure_and_near_its_claim_from_001_to_40(name: str) -> None:
    """The certified bound is at least 99.9% of the claim (no budget silently wasted) and never
    above it, on a grid of 25 budgets spanning [0.01, 40]."""
    for epsilon in np.geomspace(0.01, 40.0, 25):
        cert = _certificate(name, float(epsilon))
        assert cert.pure and cert.proven, str(cert)
        assert 0.999 <= cert.epsilon_bound / cert.epsilon_claimed <= 1.0 + 1e-9, (epsilon, cert)


ENDS = [2.0**-48, 2.0**-30, 1e-6, 100.0, 1000.0, 1e6, 1e9]


@pytest.mark.parametrize("name", sorted(BUILT_INS))
def test_no_crash_at_the_ends_of_the_epsilon_range(name: str) -> None:
    """Every accepted budget is either refused with a ValueError naming it, or certified pure and
    privatized; nothing overflows (``matrix_noise`` raised OverflowError at epsilon 1000)."""
    built_in = BUILT_INS[name]
    for epsilon in ENDS:
        try:
            mechanism = built_in.make(epsilon)
        except ValueError as err:
            assert "epsilon" in str(err)
            continue
        cert = _certificate(name, epsilon)
        assert cert.pure, str(cert)
        n_features = built_in.options.get("n_features", 0)
        n_cells = 1 if n_features else 4
        extra = {"features": jnp.zeros((3, n_features), jnp.float32)} if n_features else {}
        labels = (
            jnp.zeros(3, jnp.float32) if built_in.task == "regression" else jnp.zeros(3, jnp.int32)
        )
        mechanism.privatize(jax.random.key(0), jnp.zeros(3, jnp.int32), labels, n_cells, **extra)


@pytest.mark.parametrize("epsilon", [1000.0, 1e9])
def test_lpdt_fits_at_a_huge_budget(epsilon: float) -> None:
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(300, 2)), rng.uniform(-1.0, 1.0, 300)
    fit = LPDTRegressor(epsilon=epsilon, max_depth=2, label_bound=(-1.0, 1.0), random_state=0)
    fit.fit(X, y)
    assert fit.privacy_certificate_.pure and fit.privacy_.epsilon == epsilon
