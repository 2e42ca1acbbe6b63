"""Optimized unary encoding: the exact UnaryFlip bit and the OUE mechanisms (LPDT and LPCT)."""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ldptree.accounting import verify_ldp
from ldptree.mechanisms import (
    CellVariance,
    OUECellClassMechanism,
    OUELaplaceMechanism,
    RRLaplaceMechanism,
    UnaryFlip,
)

KEY = jax.random.key(20261124)


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0, 30.0, 100.0])
@pytest.mark.parametrize("bits", [None, 32, 64])
def test_unary_flip_rounds_towards_privacy(eps: float, bits: int | None) -> None:
    noise = UnaryFlip(eps, bits)
    q = 1.0 / (1.0 + math.exp(eps))
    assert q <= noise.flip_prob < 0.5
    # the pair of swapped coordinates costs log((1 - q') / q') <= eps, and 99% of it is used
    # when the width is automatic, unless 64-bit uniforms cannot realise it (eps above 64 ln 2)
    pair = math.log(noise.keep_one / 2**noise.bits / noise.flip_prob) + math.log(
        2.0 * (1.0 - noise.flip_prob)
    )
    assert pair <= eps * (1 + 1e-12)
    assert math.isclose(pair, noise.realised_epsilon, rel_tol=1e-12)
    if bits is None and noise.bits < 64:
        assert pair >= 0.99 * eps
    assert noise.keep_one == 2 ** (noise.bits - 1)  # P(1 | 1) = 1/2 exactly
    assert noise.mean(1) == pytest.approx(0.5) and noise.mean(0) == noise.flip_prob


@pytest.mark.parametrize("bits", [16, 32, 64])
def test_unary_flip_sampler_frequencies(bits: int) -> None:
    """Two-sided binomial tests of P(1 | 1) = 1/2 and P(1 | 0) = q' on 200,000 draws each for a
    fixed key: false-failure rate 2e-6 per width."""
    mech = OUELaplaceMechanism(epsilon=4.0, label_bound=1.0, budget_split=0.5, precision_bits=bits)
    n, cells_n = 20_000, 10
    cells = jnp.asarray(np.arange(n) % cells_n, dtype=jnp.int32)
    bits_out = np.asarray(mech.privatize(KEY, cells, jnp.zeros(n), cells_n).bits)
    own = bits_out[np.arange(n), np.arange(n) % cells_n]
    other = bits_out.sum() - own.sum()
    assert stats.binomtest(int(own.sum()), n, 0.5).pvalue > 1e-6
    assert stats.binomtest(int(other), n * (cells_n - 1), mech.unary.flip_prob).pvalue > 1e-6


def test_unary_flip_channel_is_the_realised_law() -> None:
    noise = UnaryFlip(2.0, 16)
    law = noise.channel()
    np.testing.assert_allclose(np.exp(law.log_probs(1)), [0.5, 0.5])
    t = noise.threshold
    np.testing.assert_allclose(np.exp(law.log_probs(0)), [1 - t / 2**16, t / 2**16])
    with pytest.raises(ValueError, match="0 or 1"):
        law.log_probs(2)


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
@pytest.mark.parametrize(
    "make",
    [
        lambda e: OUELaplaceMechanism(epsilon=e, label_bound=(-1.0, 2.0)),
        lambda e: OUELaplaceMechanism(epsilon=e, label_bound=1.0, budget_split=0.8),
        lambda e: OUECellClassMechanism(epsilon=e, n_classes=2),
        lambda e: OUECellClassMechanism(epsilon=e, n_classes=4),
    ],
)
def test_certificate_holds_pure_and_tight(make: Any, eps: float) -> None:
    mech = make(eps)
    real = isinstance(mech, OUELaplaceMechanism)
    kw = {"label_bound": (-5.0, 5.0)} if real else {}
    for n_cells in (1, 2, 9):
        cert = verify_ldp(mech, n_cells=n_cells, **kw)
        assert cert.holds and cert.pure, str(cert)
        if n_cells > 1:
            assert cert.epsilon_bound >= 0.99 * eps


@attrs.frozen
class _FloorFlip(UnaryFlip):
    """A UnaryFlip whose threshold is rounded *down* (away from privacy)."""

    @property
    def threshold(self) -> int:
        return super().threshold - 1


@attrs.frozen
class _Rounded(OUELaplaceMechanism):
    @property
    def unary(self) -> UnaryFlip:
        return _FloorFlip(self.cell_epsilon, self.precision_bits)


def test_thresholds_rounded_away_from_privacy_are_refused() -> None:
    honest = verify_ldp(OUELaplaceMechanism(2.0, 1.0), n_cells=3, label_bound=2.0)
    cert = verify_ldp(_Rounded(2.0, 1.0), n_cells=3, label_bound=2.0)
    assert honest.holds
    assert not cert.holds and cert.epsilon_bound > 2.0


def test_reports_shapes_and_null_class() -> None:
    mech = OUECellClassMechanism(epsilon=50.0, n_classes=3, precision_bits=64)
    cells = jnp.asarray([0, 2, 1], dtype=jnp.int32)
    labels = jnp.asarray([1, 2, 9], dtype=jnp.int32)  # 9 is undeclared: the all-zero record
    bits = np.asarray(mech.privatize(KEY, cells, labels, 3).bits)
    assert bits.shape == (3, 3, 3) and bits.dtype == bool
    # at eps = 50 a 0 is released as 1 with probability ~ e^-44: only the own coordinates vary
    assert not bits[2].any() and bits[0].sum() <= 1 and bits[1].sum() <= 1
    assert mech.report_width(5) == 15


@pytest.mark.parametrize(
    "mech",
    [
        OUELaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0)),
        OUECellClassMechanism(epsilon=2.0, n_classes=3),
    ],
)
def test_unbiased_and_chunking_invariant(mech: Any) -> None:
    """Mean of 200 debiased runs against the truth, t-test per statistic with Bonferroni over
    statistics: false-failure rate 1e-6 for these fixed keys. Chunked summaries are exact."""
    rng = np.random.default_rng(3)
    n, n_cells = 400, 5
    cells = jnp.asarray(rng.integers(0, n_cells, n), dtype=jnp.int32)
    real = isinstance(mech, OUELaplaceMechanism)
    labels = (
        jnp.asarray(rng.uniform(-2.0, 4.0, n), dtype=jnp.float32)
        if real
        else jnp.asarray(rng.integers(0, 3, n), dtype=jnp.int32)
    )
    runs = [
        mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, n_cells), n)
        for r in range(200)
    ]
    counts = np.stack([e.count for e in runs])
    sums = np.stack([np.asarray(e.label_sum).reshape(-1) for e in runs])
    c = np.asarray(cells)
    true_count = np.bincount(c, minlength=n_cells)
    if real:
        true_sum = np.bincount(c, weights=np.clip(np.asarray(labels), -1.0, 3.0), minlength=n_cells)
    else:
        true_sum = np.zeros((n_cells, 3))
        np.add.at(true_sum, (c, np.asarray(labels)), 1.0)
        true_sum = true_sum.reshape(-1)
    m = true_count.size + true_sum.size
    critical = stats.t.ppf(1 - 1e-6 / (2 * m), 199)
    for runs_, truth in ((counts, true_count), (sums, true_sum)):
        t = np.abs(runs_.mean(0) - truth) / (runs_.std(0, ddof=1) / math.sqrt(200))
        assert t.max() <= critical
    # chunking: two chunks (second with first_holder) sum to the whole batch's statistics
    whole = mech.privatize_summarize(KEY, cells, labels, n_cells)
    head = mech.privatize_summarize(KEY, cells[:150], labels[:150], n_cells)
    tail = mech.privatize_summarize(KEY, cells[150:], labels[150:], n_cells, first_holder=150)
    for name, value in whole.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(head[name] + tail[name]))


def _monte_carlo(mech: Any, labels: Any, n: int = 2000, repeats: int = 400) -> Any:
    cells = jnp.zeros(n, dtype=jnp.int32)
    counts, sums = [], []
    for r in range(repeats):
        est = mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, 4), n)
        counts.append(np.asarray(est.count)[:2])
        sums.append(np.asarray(est.label_sum).reshape(4, -1)[:2, 0])
    return np.var(counts, axis=0), np.var(sums, axis=0)


def test_cell_variance_bounds_oue_laplace() -> None:
    """400 independent runs of 2,000 holders all in cell 0 at the label bound: the empirical
    variances of c^_j and s^_j (j = 0: own cell, j = 1: other) stay below 1.25 times the predicted
    bound (a 400-sample variance exceeds 1.25 times its mean with probability < 1e-3, so four
    comparisons fail falsely with probability < 4e-3), and the own cell's are within a factor 1.5
    of it (the bound is exact there up to step^2 / 4)."""
    mech = OUELaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0))
    bound = mech.cell_variance(4)
    assert isinstance(bound, CellVariance)
    n = 2000
    var_c, var_s = _monte_carlo(mech, jnp.full(n, 3.0, dtype=jnp.float32), n)
    assert np.all(var_c <= 1.25 * n * bound.count)
    assert np.all(var_s <= 1.25 * n * bound.label_sum)
    assert var_c[0] >= n * bound.count / 1.5 and var_s[0] >= n * bound.label_sum / 1.5


def test_cell_variance_bounds_oue_cell_class() -> None:
    """As above for per-class counts: all holders in cell 0 with class 0 (false-failure rate
    < 4e-3; the own cell's class-0 variance is within a factor 1.5 of its exact bound)."""
    mech = OUECellClassMechanism(epsilon=2.0, n_classes=3)
    bound = mech.cell_variance(4)
    n = 2000
    var_c, var_s = _monte_carlo(mech, jnp.zeros(n, dtype=jnp.int32), n)
    assert np.all(var_c <= 1.25 * n * bound.count)
    assert np.all(var_s <= 1.25 * n * bound.label_sum)
    assert var_s[0] >= n * bound.label_sum / 1.5


def test_oue_beats_rr_when_cells_hold_few_holders() -> None:
    """Per-holder variance of an *other* cell's count: OUE's q'(1-q')/(1/2-q')^2 against RR's."""
    for eps in (1.0, 4.0):
        oue = OUELaplaceMechanism(epsilon=2 * eps, label_bound=1.0).unary
        rr = RRLaplaceMechanism(epsilon=2 * eps, label_bound=1.0)
        other = oue.flip_prob * (1 - oue.flip_prob) / oue.slope**2
        assert other < rr.count_variance
        assert oue.indicator_variance == pytest.approx(other + 1.0)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="precision_bits"):
        OUELaplaceMechanism(epsilon=1.0, label_bound=1.0, precision_bits=8)
    with pytest.raises(ValueError, match="n_classes"):
        OUECellClassMechanism(epsilon=1.0, n_classes=1)
    with pytest.raises(ValueError, match="budget_split"):
        OUELaplaceMechanism(epsilon=1.0, label_bound=1.0, budget_split=1.5)


def test_oue_mechanisms_run_in_the_estimators() -> None:
    """One fixed-seed fit each: the estimators certify the mechanism pure and learn something
    (regression MSE below half the signal's variance; accuracy above 0.6 where predicting one
    class scores about 0.5). Deterministic given the seeds."""
    from ldptree import LPCTClassifier, LPDTRegressor

    rng = np.random.default_rng(1)
    n = 10_000
    X = rng.uniform(size=(n, 2))
    signal = 5 * np.sin(4 * X[:, 0]) + X[:, 1]
    y = signal + rng.normal(size=n)
    bound = (float(y[:500].min()), float(y[:500].max()))
    reg = LPDTRegressor(
        epsilon=4.0, max_depth=3, mechanism=OUELaplaceMechanism(4.0, bound), random_state=0
    )
    reg.fit(X[500:], y[500:], X_public=X[:500], y_public=y[:500])
    assert reg.privacy_certificate_.pure
    assert np.mean((reg.predict(X[:500]) - signal[:500]) ** 2) < np.var(signal) / 2
    codes = (signal > np.median(signal)).astype(int)
    clf = LPCTClassifier(
        epsilon=4.0, max_depth=3, mechanism=OUECellClassMechanism(4.0, 2), random_state=0
    )
    clf.fit(X[500:], codes[500:], X_public=X[:500], y_public=codes[:500])
    assert clf.privacy_certificate_.pure
    assert clf.score(X[:500], codes[:500]) > 0.6


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mech", "kw"),
    [
        (OUELaplaceMechanism(1.0, (-1.0, 1.0)), {"label_bound": (-2.0, 2.0)}),
        (OUECellClassMechanism(1.0, 3), {"labels": [0, 1, 2, 7]}),
    ],
    ids=["regression", "classes"],
)
def test_audit_at_a_million_reports_does_not_refute(mech: Any, kw: Any) -> None:
    """audit_ldp at 10^6 reports; it refutes a true claim with probability at most 1e-3 (its
    confidence 0.999). Its lower bound on epsilon is close to the claim (the audit has power)."""
    from ldptree.accounting import audit_ldp

    result = audit_ldp(mech, n_cells=4, key=jax.random.PRNGKey(7), n_samples=1_000_000, **kw)
    assert not result.refuted, str(result)
