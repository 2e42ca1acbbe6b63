"""Hadamard response of the cell + one geometric label."""

from __future__ import annotations

import math

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ldptree.accounting import verify_ldp
from ldptree.mechanisms import BitFlip, HadamardLaplaceMechanism, HadamardRelease
from ldptree.mechanisms._kit import Release

KEY = jax.random.key(20261124)


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
def test_certificate_holds_pure_and_tight(eps: float) -> None:
    mech = HadamardLaplaceMechanism(epsilon=eps, label_bound=(-1.0, 2.0))
    for n_cells in (1, 2, 9, 200):
        cert = verify_ldp(mech, n_cells=n_cells, label_bound=(-5.0, 5.0))
        assert cert.holds and cert.pure, str(cert)
        if n_cells > 1:
            assert cert.epsilon_bound >= 0.99 * eps


@attrs.frozen
class _FloorFlip(BitFlip):
    @property
    def threshold(self) -> int:
        return super().threshold - 1


@attrs.frozen(eq=False)
class _FloorRelease(HadamardRelease):
    @property
    def flip(self) -> BitFlip:
        return _FloorFlip(self.epsilon, self.precision_bits)


@attrs.frozen
class _Rounded(HadamardLaplaceMechanism):
    def releases(self) -> tuple[Release, ...]:
        return (_FloorRelease("cell", self.cell_epsilon), self.label_release())


def test_a_flip_rounded_away_from_privacy_is_refused() -> None:
    cert = verify_ldp(_Rounded(2.0, 1.0), n_cells=5, label_bound=2.0)
    assert not cert.holds and cert.epsilon_bound > 2.0


def test_report_size_does_not_grow_with_the_cells() -> None:
    mech = HadamardLaplaceMechanism(epsilon=2.0, label_bound=1.0)
    assert mech.words_per_holder(3) == mech.words_per_holder(1000) == 5
    assert mech.report_fields(1000)[0] == ("cell", (), 0, 2047)
    report = mech.privatize(KEY, jnp.asarray([0, 999], dtype=jnp.int32), jnp.zeros(2), 1000)
    assert report.cell.shape == (2,)


def test_unbiased_and_chunking_invariant() -> None:
    """Mean of 200 debiased runs against the truth, t-test per statistic with Bonferroni over
    statistics: false-failure rate 1e-6 for these fixed keys. Chunked and fused summaries are
    exact."""
    mech = HadamardLaplaceMechanism(epsilon=3.0, label_bound=(-1.0, 3.0))
    rng = np.random.default_rng(9)
    n, n_cells = 400, 6
    cells = jnp.asarray(rng.integers(0, n_cells, n), dtype=jnp.int32)
    labels = jnp.asarray(rng.uniform(-2.0, 4.0, n), dtype=jnp.float32)
    runs = [
        mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, n_cells), n)
        for r in range(200)
    ]
    c = np.asarray(cells)
    truths = (
        np.bincount(c, minlength=n_cells),
        np.bincount(c, weights=np.clip(np.asarray(labels), -1.0, 3.0), minlength=n_cells),
    )
    critical = stats.t.ppf(1 - 1e-6 / (4 * n_cells), 199)
    for field, truth in zip(("count", "label_sum"), truths, strict=True):
        runs_ = np.stack([getattr(e, field) for e in runs])
        t = np.abs(runs_.mean(0) - truth) / (runs_.std(0, ddof=1) / math.sqrt(200))
        assert t.max() <= critical
    whole = mech.privatize_summarize(KEY, cells, labels, n_cells)
    head = mech.privatize_summarize(KEY, cells[:150], labels[:150], n_cells)
    tail = mech.privatize_summarize(KEY, cells[150:], labels[150:], n_cells, first_holder=150)
    fused = mech.summarize(mech.privatize(KEY, cells, labels, n_cells), n_cells)
    for key, value in whole.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(head[key] + tail[key]))
        np.testing.assert_array_equal(np.asarray(value), np.asarray(fused[key]))


def test_cell_variance_bounds_the_monte_carlo() -> None:
    """400 independent runs of 2,000 holders all in cell 0 at the label bound's top: the empirical
    variances of c^_j and s^_j (j = 0 own cell, j = 1 other) stay below 1.25 times the predicted
    bound (a 400-sample variance exceeds 1.25 times its mean with probability < 1e-3: false-failure
    rate < 4e-3), and the other cell's count variance is within a factor 1.5 of its bound (exact
    there)."""
    mech = HadamardLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0))
    n, n_cells = 2000, 4
    bound = mech.cell_variance(n_cells)
    cells = jnp.zeros(n, dtype=jnp.int32)
    labels = jnp.full(n, 3.0, dtype=jnp.float32)
    counts, sums = [], []
    for r in range(400):
        est = mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, n_cells), n)
        counts.append(np.asarray(est.count)[:2])
        sums.append(np.asarray(est.label_sum)[:2])
    var_c, var_s = np.var(counts, axis=0), np.var(sums, axis=0)
    assert np.all(var_c <= 1.25 * n * bound.count)
    assert np.all(var_s <= 1.25 * n * bound.label_sum)
    assert var_c[1] >= n * bound.count / 1.5


def test_runs_in_lpdt() -> None:
    """One fixed-seed fit: certified pure, MSE below half the signal's variance (deterministic)."""
    from ldptree import LPDTRegressor

    rng = np.random.default_rng(1)
    n = 10_000
    X = rng.uniform(size=(n, 2))
    signal = 5 * np.sin(4 * X[:, 0]) + X[:, 1]
    y = signal + rng.normal(size=n)
    bound = (float(y[:500].min()), float(y[:500].max()))
    reg = LPDTRegressor(
        epsilon=4.0, max_depth=3, mechanism=HadamardLaplaceMechanism(4.0, bound), random_state=0
    )
    reg.fit(X[500:], y[500:], X_public=X[:500], y_public=y[:500])
    assert reg.privacy_certificate_.pure
    assert np.mean((reg.predict(X[:500]) - signal[:500]) ** 2) < np.var(signal) / 2


@pytest.mark.slow
def test_audit_at_a_million_reports_does_not_refute() -> None:
    """audit_ldp at 10^6 reports; it refutes a true claim with probability at most 1e-3 (its
    confidence 0.999)."""
    from ldptree.accounting import audit_ldp

    mech = HadamardLaplaceMechanism(1.0, (-1.0, 1.0))
    result = audit_ldp(
        mech, n_cells=4, key=jax.random.PRNGKey(7), n_samples=1_000_000, label_bound=(-2.0, 2.0)
    )
    assert not result.refuted, str(result)
