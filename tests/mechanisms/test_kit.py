"""The mechanism kit: derived sampling, sums, likelihoods and laws agree with the declarations."""

from __future__ import annotations

import math

import attrs
import jax
import numpy as np
import pytest
from scipy import stats

from ldptree.mechanisms import (
    BitFlip,
    CellRelease,
    ClassLabels,
    Geometric,
    IndexRelease,
    KaryResponse,
    KitMechanism,
    LabelRelease,
    RealLabels,
    cell_indicator,
    debias_indicators,
    label_level,
    label_levels,
)
from ldptree.protocols import CellEstimates

KEY = jax.random.key(20261124)


@attrs.frozen
class KRR(KitMechanism):
    """k-ary response on the cell index plus a geometric label (the tutorial's mechanism)."""

    epsilon: float
    label_bound: tuple[float, float] = (-1.0, 1.0)

    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, label_levels(self.epsilon / 2))

    def releases(self) -> tuple[IndexRelease, LabelRelease]:
        labels = self.labels()
        return (
            IndexRelease("cell", self.epsilon / 2),
            label_level("label", Geometric(self.epsilon / 2, labels.levels), labels),
        )

    def debias(self, stats: dict, n: int) -> CellEstimates:
        labels = self.labels()
        noise = KaryResponse(self.epsilon / 2, len(stats["cell"]))
        return debias_indicators(
            noise,
            stats["cell"],
            n,
            cross=stats["cell*label"],
            total=stats["label"],
            lo=labels.bound[0],
            step=labels.step,
        )


def _records(n: int, n_cells: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_cells, n).astype(np.int32), rng.uniform(-1.5, 1.5, n)


@pytest.mark.slow
def test_index_release_reports_one_integer_and_sums_exactly() -> None:
    mech = KRR(3.0)
    cells, labels = _records(3000, 7, 0)
    r = mech.privatize(KEY, cells, labels, 7, first_holder=11)
    assert r["cell"].shape == (3000,) and r["label"].shape == (3000,)
    assert np.all((np.asarray(r["cell"]) >= 0) & (np.asarray(r["cell"]) < 7))
    fused = mech.privatize_summarize(KEY, cells, labels, 7, first_holder=11)
    two_step = mech.summarize(r, 7)
    cell, label = np.asarray(r["cell"]), np.asarray(r["label"], dtype=np.int64)
    np.testing.assert_array_equal(np.asarray(fused["cell"]), np.bincount(cell, minlength=7))
    np.testing.assert_array_equal(
        np.asarray(fused["cell*label"]), np.bincount(cell, weights=label, minlength=7)
    )
    for name in mech.stat_names():
        np.testing.assert_array_equal(np.asarray(fused[name]), np.asarray(two_step[name]))


def test_reports_do_not_depend_on_chunking() -> None:
    mech = KRR(2.0)
    cells, labels = _records(1000, 5, 1)
    whole = mech.privatize(KEY, cells, labels, 5)
    parts = [
        mech.privatize(KEY, cells[a:b], labels[a:b], 5, first_holder=a)
        for a, b in ((0, 300), (300, 1000))
    ]
    for name in ("cell", "label"):
        np.testing.assert_array_equal(
            np.concatenate([np.asarray(p[name]) for p in parts]), np.asarray(whole[name])
        )


def test_jit_and_vmap_over_keys_match_separate_calls() -> None:
    mech = KRR(2.0)
    cells, labels = _records(64, 4, 2)
    keys = jax.random.split(KEY, 3)

    def one(key: jax.Array) -> jax.Array:
        return mech.privatize(key, cells, labels, 4)["cell"]

    batched = jax.jit(jax.vmap(one))(keys)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(one(keys[i])))


def test_k_ary_debiasing_is_unbiased_over_repeats() -> None:
    """Per-cell t-tests of the debiased counts and label sums over 300 runs, Bonferroni over 12
    statistics at family-wise level 1e-6 (a correct mechanism fails once in 10^6)."""
    mech = KRR(4.0)
    cells, labels = _records(500, 6, 3)
    runs = []
    for r in range(300):
        key = jax.random.fold_in(KEY, r)
        est = mech.debias(mech.privatize_summarize(key, cells, labels, 6), 500)
        runs.append(np.concatenate([est.count, est.label_sum]))
    runs_arr = np.asarray(runs)
    truth = np.concatenate(
        [
            np.bincount(cells, minlength=6),
            np.bincount(cells, weights=np.clip(labels, -1, 1), minlength=6),
        ]
    )
    t = (runs_arr.mean(axis=0) - truth) / (runs_arr.std(axis=0, ddof=1) / math.sqrt(300))
    p = 2 * stats.t.sf(np.abs(t), df=299)
    assert p.min() > 1e-6 / 12


def test_log_prob_is_a_distribution_over_index_reports() -> None:
    mech = KRR(1.0)
    total = math.fsum(math.exp(mech.log_prob({"cell": j, "label": 0}, 2, 0.3, 5)) for j in range(5))
    # summing over cells alone gives the label code's marginal probability
    code_only = math.exp(
        np.logaddexp.reduce(
            [
                math.log(w) + mech.releases()[1].noise.log_probs(t)[mech.releases()[1].noise.margin]
                for t, w in mech.labels().weights(0.3)
            ]
        )
    )
    assert total == pytest.approx(code_only, rel=1e-12)


def test_kary_response_realises_its_claim() -> None:
    for epsilon, k in ((0.01, 2), (1.0, 16), (8.0, 4096)):
        noise = KaryResponse(epsilon, k)
        assert 0.99 * epsilon <= noise.realised_epsilon <= epsilon * (1 + 1e-12)
        assert noise.keep_count + (k - 1) * noise.other_count == 2**64


def test_aggregate_simulation_matches_the_per_holder_mean_and_variance() -> None:
    """Geometric-only mechanisms draw summed reports in law. 200 aggregate and 200 per-holder
    draws of a 3-cell class mechanism: means within 6 standard errors, variance ratios within
    6 sd of their log (normal approximations; false-failure rate below 1e-6 per statistic)."""

    @attrs.frozen
    class OneHot(KitMechanism):
        epsilon: float

        def labels(self) -> ClassLabels:
            return ClassLabels(2)

        def releases(self) -> tuple[CellRelease]:
            return (cell_indicator("cell", Geometric(self.epsilon / 2, 1), self.labels()),)

        def debias(self, stats: dict, n: int) -> CellEstimates:
            count = np.asarray(stats["cell"], dtype=np.float64)
            return CellEstimates(count=count, label_sum=np.zeros_like(count), n=n)

    mech = OneHot(2.0)
    cells, _ = _records(2000, 3, 4)
    labels = np.zeros(2000, dtype=np.int32)
    rounds = 200
    simulated = np.stack(
        [
            mech.simulate_summary(jax.random.fold_in(KEY, i), cells, labels, 3)["cell"]
            for i in range(rounds)
        ]
    )
    exact = np.stack(
        [
            np.asarray(
                mech.privatize_summarize(jax.random.fold_in(KEY, i), cells, labels, 3)["cell"]
            )
            for i in range(rounds)
        ]
    )
    se = np.sqrt(simulated.var(axis=0) / rounds + exact.var(axis=0) / rounds)
    assert np.all(np.abs(simulated.mean(axis=0) - exact.mean(axis=0)) < 6 * se)
    ratio = np.log(simulated.var(axis=0) / exact.var(axis=0))
    assert np.all(np.abs(ratio) < 6 * np.sqrt(4 / rounds))


def test_bad_declarations_are_refused_with_the_release_named() -> None:
    @attrs.frozen
    class Bad(KitMechanism):
        epsilon: float

        def labels(self) -> RealLabels:
            return RealLabels((0.0, 1.0), 4)

        def releases(self) -> tuple[CellRelease]:
            # a bit flip takes inputs 0 and 1 only
            return (CellRelease("oops", BitFlip(1.0), on=np.full(5, 2), off=np.zeros(5, int)),)

        def debias(self, stats: dict, n: int) -> CellEstimates:
            raise NotImplementedError

    with pytest.raises(ValueError, match="oops"):
        Bad(1.0).privatize(KEY, [0], [0.5], 2)
    with pytest.raises(ValueError, match="levels"):
        RealLabels((0.0, 1.0), 3)
    with pytest.raises(TypeError, match="noise"):
        CellRelease("x", "not a noise", on=[1], off=[0])  # type: ignore[arg-type]
