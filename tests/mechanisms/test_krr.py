"""k-ary randomized response on the cell, on (cell, label level) and on (cell, class)."""

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
    IndexRelease,
    KRRCellClassMechanism,
    KRRJointMechanism,
    KRRLaplaceMechanism,
)
from ldptree.mechanisms._kit import Release

KEY = jax.random.key(20261124)

REAL = (KRRLaplaceMechanism, KRRJointMechanism)


def _make(name: str, eps: float) -> Any:
    return {
        "cell": lambda: KRRLaplaceMechanism(epsilon=eps, label_bound=(-1.0, 3.0)),
        "joint": lambda: KRRJointMechanism(epsilon=eps, label_bound=(-1.0, 3.0), levels=4),
        "class2": lambda: KRRCellClassMechanism(epsilon=eps, n_classes=2),
        "class4": lambda: KRRCellClassMechanism(epsilon=eps, n_classes=4),
    }[name]()


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("name", ["cell", "joint", "class2", "class4"])
def test_certificate_holds_pure_and_tight(name: str, eps: float) -> None:
    mech = _make(name, eps)
    kw = {"label_bound": (-5.0, 5.0)} if isinstance(mech, REAL) else {}
    for n_cells in (1, 2, 9):
        cert = verify_ldp(mech, n_cells=n_cells, **kw)
        assert cert.holds and cert.pure, str(cert)
        if n_cells > 1 or not isinstance(mech, KRRLaplaceMechanism):
            assert cert.epsilon_bound >= 0.99 * eps


@attrs.frozen
class _Overspends(KRRJointMechanism):
    """Releases the pair with twice the claimed budget."""

    def releases(self) -> tuple[Release, ...]:
        (pair,) = super().releases()
        assert isinstance(pair, IndexRelease)
        return (IndexRelease("pair", 2 * self.epsilon, label_index=pair.label_index),)


def test_an_overspending_pair_release_is_refused() -> None:
    cert = verify_ldp(_Overspends(1.0, 1.0), n_cells=3, label_bound=2.0)
    assert not cert.holds and cert.epsilon_bound > 1.9


def test_reports_are_one_index_per_holder() -> None:
    cells = jnp.asarray([0, 3, 3, 6], dtype=jnp.int32)
    joint = KRRJointMechanism(epsilon=60.0, label_bound=(0.0, 2.0), levels=2)
    # eps = 60: the index is kept with probability ~ 1 - 21 e^-60; labels 0, 1, 2 are levels
    pair = np.asarray(joint.privatize(KEY, cells, jnp.asarray([0.0, 1.0, 2.0, 5.0]), 7).pair)
    np.testing.assert_array_equal(pair, [0, 10, 11, 20])
    klass = KRRCellClassMechanism(epsilon=60.0, n_classes=3)
    codes = jnp.asarray([0, 2, -1, 1], dtype=jnp.int32)  # -1 is undeclared: the extra value 3
    pair = np.asarray(klass.privatize(KEY, cells, codes, 7).pair)
    np.testing.assert_array_equal(pair, [0, 14, 15, 25])
    assert klass.report_width(7) == 1
    report = KRRLaplaceMechanism(epsilon=2.0, label_bound=1.0).privatize(
        KEY, cells, jnp.zeros(4), 7
    )
    assert report.cell.shape == (4,) and np.all((np.asarray(report.cell) >= 0) & (report.cell < 7))


def test_keep_frequency_matches_the_realised_law() -> None:
    """Two-sided binomial test of the keep probability T / 2^64 on 40,000 reports (fixed key,
    false-failure rate 1e-6)."""
    mech = KRRCellClassMechanism(epsilon=2.0, n_classes=2)
    n, n_cells = 40_000, 4
    cells = jnp.asarray(np.arange(n) % n_cells, dtype=jnp.int32)
    codes = jnp.asarray(np.arange(n) % 2, dtype=jnp.int32)
    pair = np.asarray(mech.privatize(KEY, cells, codes, n_cells).pair)
    kept = int((pair == np.asarray(cells) * 3 + np.asarray(codes)).sum())
    noise = mech.pair_noise(n_cells)
    assert stats.binomtest(kept, n, noise.keep_count / 2.0**64).pvalue > 1e-6


@pytest.mark.parametrize("name", ["cell", "joint", "class4"])
def test_unbiased_and_chunking_invariant(name: str) -> None:
    """Mean of 200 debiased runs against the truth, t-test per statistic with Bonferroni over
    statistics: false-failure rate 1e-6 for these fixed keys. Chunked summaries are exact."""
    mech = _make(name, 3.0)
    rng = np.random.default_rng(5)
    n, n_cells = 400, 5
    cells = jnp.asarray(rng.integers(0, n_cells, n), dtype=jnp.int32)
    real = isinstance(mech, REAL)
    labels = (
        jnp.asarray(rng.uniform(-2.0, 4.0, n), dtype=jnp.float32)
        if real
        else jnp.asarray(rng.integers(0, 4, n), dtype=jnp.int32)
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
        true_sum = np.zeros((n_cells, 4))
        np.add.at(true_sum, (c, np.asarray(labels)), 1.0)
        true_sum = true_sum.reshape(-1)
    m = true_count.size + true_sum.size
    critical = stats.t.ppf(1 - 1e-6 / (2 * m), 199)
    for runs_, truth in ((counts, true_count), (sums, true_sum)):
        t = np.abs(runs_.mean(0) - truth) / (runs_.std(0, ddof=1) / math.sqrt(200))
        assert t.max() <= critical
    whole = mech.privatize_summarize(KEY, cells, labels, n_cells)
    head = mech.privatize_summarize(KEY, cells[:150], labels[:150], n_cells)
    tail = mech.privatize_summarize(KEY, cells[150:], labels[150:], n_cells, first_holder=150)
    for key, value in whole.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(head[key] + tail[key]))
    # summarize(privatize) is the fused kernel's result
    fused = mech.summarize(mech.privatize(KEY, cells, labels, n_cells), n_cells)
    for key, value in whole.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(fused[key]))


@pytest.mark.parametrize("name", ["cell", "joint", "class4"])
def test_cell_variance_bounds_the_monte_carlo(name: str) -> None:
    """400 independent runs of 2,000 holders all in cell 0 (label at the bound's top, class 0):
    the empirical variances of c^_j and s^_j (j = 0 own cell, j = 1 other) stay below 1.25 times
    the predicted bound (a 400-sample variance exceeds 1.25 times its mean with probability
    < 1e-3: false-failure rate < 4e-3 per mechanism); the own cell's count variance is within a
    factor 3 of its bound (not vacuous)."""
    mech = _make(name, 2.0)
    n, n_cells = 2000, 4
    bound = mech.cell_variance(n_cells)
    cells = jnp.zeros(n, dtype=jnp.int32)
    labels = (
        jnp.full(n, 3.0, dtype=jnp.float32)
        if isinstance(mech, REAL)
        else jnp.zeros(n, dtype=jnp.int32)
    )
    counts, sums = [], []
    for r in range(400):
        est = mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, n_cells), n)
        counts.append(np.asarray(est.count)[:2])
        sums.append(np.asarray(est.label_sum).reshape(n_cells, -1)[:2, 0])
    var_c, var_s = np.var(counts, axis=0), np.var(sums, axis=0)
    assert np.all(var_c <= 1.25 * n * bound.count)
    assert np.all(var_s <= 1.25 * n * bound.label_sum)
    assert var_c[0] >= n * bound.count / 3.0


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="levels"):
        KRRJointMechanism(epsilon=1.0, label_bound=1.0, levels=3)
    with pytest.raises(ValueError, match="n_classes"):
        KRRCellClassMechanism(epsilon=1.0, n_classes=1)
    with pytest.raises(ValueError, match="n_cells"):
        KRRLaplaceMechanism(epsilon=1.0, label_bound=1.0).cell_variance(0)
    with pytest.raises(ValueError, match="epsilon"):
        KRRJointMechanism(epsilon=-1.0, label_bound=1.0)


def test_krr_mechanisms_run_in_the_estimators() -> None:
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
    for mech in (KRRLaplaceMechanism(4.0, bound), KRRJointMechanism(4.0, bound)):
        reg = LPDTRegressor(epsilon=4.0, max_depth=3, mechanism=mech, random_state=0)
        reg.fit(X[500:], y[500:], X_public=X[:500], y_public=y[:500])
        assert reg.privacy_certificate_.pure
        assert np.mean((reg.predict(X[:500]) - signal[:500]) ** 2) < np.var(signal) / 2
    codes = (signal > np.median(signal)).astype(int)
    clf = LPCTClassifier(
        epsilon=4.0, max_depth=3, mechanism=KRRCellClassMechanism(4.0, 2), random_state=0
    )
    clf.fit(X[500:], codes[500:], X_public=X[:500], y_public=codes[:500])
    assert clf.privacy_certificate_.pure
    assert clf.score(X[:500], codes[:500]) > 0.6


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cell", "joint", "class4"])
def test_audit_at_a_million_reports_does_not_refute(name: str) -> None:
    """audit_ldp at 10^6 reports; it refutes a true claim with probability at most 1e-3 (its
    confidence 0.999)."""
    from ldptree.accounting import audit_ldp

    mech = _make(name, 1.0)
    kw: dict[str, Any] = (
        {"label_bound": (-2.0, 4.0)} if isinstance(mech, REAL) else {"labels": [0, 1, 3, 7]}
    )
    result = audit_ldp(mech, n_cells=4, key=jax.random.PRNGKey(7), n_samples=1_000_000, **kw)
    assert not result.refuted, str(result)
