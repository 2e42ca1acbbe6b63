"""k-subset selection: the exact law, its sampler, its privacy and its debiasing."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import jax
import numpy as np
import pytest
from scipy import stats

from ldptree.accounting import verify_ldp
from ldptree.mechanisms import (
    SubsetCellClassMechanism,
    SubsetLaplaceMechanism,
    SubsetRelease,
    summarize_many,
)
from ldptree.mechanisms._batch import SummaryJob
from ldptree.mechanisms._random import holder_words, key_words
from ldptree.mechanisms._subset import SubsetLaw, subset_size

KEY = jax.random.key(20260301)


def _sets(law: SubsetLaw) -> list[tuple[int, ...]]:
    return [(), *itertools.combinations(range(law.d), law.k)]


@pytest.mark.parametrize(("d", "k"), [(1, 1), (2, 1), (5, 2), (7, 3), (12, 11), (40, 6)])
def test_the_law_sums_to_one_exactly(d: int, k: int) -> None:
    law = SubsetLaw(1.3, d, k)
    inside, outside, null = law.set_probabilities
    assert law.c1 * inside + law.c0 * outside + null == 1
    assert 0 <= null < Fraction(d * d, 2**33)  # zero when every modulus is a power of two
    offset, slope = law.indicator
    # P(j in S | x) summed over the items is the expected size of S (k unless null)
    assert offset * d + slope == (1 - null) * k


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 4.0, 12.0, 40.0])
@pytest.mark.parametrize("d", [2, 3, 16, 257])
def test_realised_budget_is_within_the_claim_and_close_to_it(epsilon: float, d: int) -> None:
    law = SubsetLaw(epsilon, d, subset_size(epsilon, d))
    # exactly: the largest ratio of two records' set probabilities is below the float e^eps
    # (itself within an ulp of the true value); its logarithm in float64 within 1e-12
    inside, outside, _ = law.set_probabilities
    ratio = inside / outside
    assert 1 <= ratio < Fraction(math.exp(epsilon))
    assert law.realised_epsilon <= epsilon * (1 + 1e-12)
    assert law.realised_epsilon >= 0.999 * epsilon


@pytest.mark.parametrize(
    ("mechanism", "label"),
    [
        (SubsetCellClassMechanism(epsilon=1.5, n_classes=2), 1),  # 3 items per cell
        (SubsetLaplaceMechanism(epsilon=3.0, label_bound=1.0, subset_size=2), 0.0),
    ],
)
@pytest.mark.slow
def test_sampler_draws_the_exact_law(mechanism, label) -> None:
    """Chi-square of 60,000 reports of one record (a middle cell) against the exact set
    probabilities; false-failure rate 1e-6."""
    n_cells, n, cell = 3, 60_000, 1
    release = mechanism.releases()[0]
    law = release.law(n_cells)
    integer = isinstance(label, int)
    cells = np.full(n, cell, np.int32)
    labels = np.full(n, label, np.int32 if integer else np.float32)
    reports = mechanism.privatize(KEY, cells, labels, n_cells)
    bits = np.asarray(reports[0]).reshape(n, -1)
    t = mechanism.labels().index(label)
    x = release.item(cell, t, mechanism.labels())
    sets = _sets(law)
    index = {s: i for i, s in enumerate(sets)}
    observed = np.zeros(len(sets))
    for row in bits:
        observed[index[tuple(int(i) for i in np.flatnonzero(row))]] += 1
    expected = np.asarray([math.exp(law.log_prob(s, x)) for s in sets]) * n
    keep = expected >= 5
    assert observed[~keep].sum() <= 2  # the null report has probability ~1e-9
    scaled = expected[keep] * observed[keep].sum() / expected[keep].sum()
    assert stats.chisquare(observed[keep], scaled).pvalue > 1e-6


def test_log_prob_is_a_distribution_over_reports() -> None:
    mechanism = SubsetCellClassMechanism(epsilon=2.0, n_classes=2)
    n_cells = 2
    law = mechanism.pair_release.law(n_cells)
    total = 0.0
    for members in _sets(law):
        bits = np.zeros(law.d, dtype=bool)
        bits[list(members)] = True
        report = mechanism.report_type(bits.reshape(n_cells, 3))
        total += math.exp(mechanism.log_prob(report, 1, 0, n_cells))
    assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 2.0, 10.0, 40.0])
@pytest.mark.parametrize("n_cells", [2, 7, 16])
def test_built_ins_are_certified_pure_close_to_their_claim(epsilon: float, n_cells: int) -> None:
    for mechanism in (
        SubsetLaplaceMechanism(epsilon=epsilon, label_bound=(-1.0, 2.0)),
        SubsetCellClassMechanism(epsilon=epsilon, n_classes=3),
    ):
        cert = verify_ldp(mechanism, n_cells=n_cells, label_bound=(-3.0, 4.0))
        assert cert.holds and cert.pure
        assert cert.epsilon_bound <= epsilon * (1 + 1e-9)
        assert cert.epsilon_bound >= 0.999 * epsilon


def test_block_variance_matches_enumeration() -> None:
    law = SubsetLaw(1.1, 7, 3)
    block = [0, 1, 2]
    for x, inside in ((1, True), (5, False)):
        mean = second = Fraction(0)
        for members in _sets(law):
            y = sum(1 for a in block if a in members)
            prob = _exact(law, members, x)
            mean += prob * y
            second += prob * y * y
        assert law.block_variance(3, inside) == pytest.approx(float(second - mean**2), rel=1e-12)


def _exact(law: SubsetLaw, members: tuple[int, ...], x: int) -> Fraction:
    inside, outside, null = law.set_probabilities
    if not members:
        return null
    return inside if x in members else outside


def _jobs(mechanism, cells, labels, n_cells, repeats):
    return [
        SummaryJob(mechanism, jax.random.fold_in(KEY, r), cells, labels, n_cells)
        for r in range(repeats)
    ]


@pytest.mark.slow
def test_regression_debiasing_is_unbiased() -> None:
    """200 fits of 1,500 holders: every cell's mean debiased count and label sum lies within 5
    standard errors of the truth (the per-holder variance bound gives the standard error; a
    Gaussian tail of 5.7e-7 per statistic, 6e-6 over all)."""
    mechanism = SubsetLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0))
    n_cells, n, repeats = 5, 1500, 200
    rng = np.random.default_rng(1)
    cells = rng.choice(n_cells, n, p=[0.4, 0.3, 0.2, 0.1, 0.0]).astype(np.int32)
    labels = rng.uniform(-2.0, 4.0, n).astype(np.float32)
    sums = summarize_many(_jobs(mechanism, cells, labels, n_cells, repeats))
    est = [mechanism.debias(s, n) for s in sums]
    counts = np.stack([e.count for e in est])
    label_sums = np.stack([e.label_sum for e in est])
    truth_c = np.bincount(cells, minlength=n_cells)
    truth_s = np.bincount(cells, np.clip(labels, -1.0, 3.0), minlength=n_cells)
    bound = mechanism.cell_variance(n_cells)
    se_c = math.sqrt(n * bound.count / repeats)
    se_s = math.sqrt(n * bound.label_sum / repeats)
    assert np.all(np.abs(counts.mean(0) - truth_c) <= 5 * se_c)
    assert np.all(np.abs(label_sums.mean(0) - truth_s) <= 5 * se_s)
    # the variance bound is an upper bound, and not a vacuous one
    assert np.all(counts.var(0) <= 1.5 * n * bound.count)
    assert counts.var(0).max() >= n * bound.count_outside / 3


def test_class_debiasing_is_unbiased() -> None:
    """As above for per-(cell, class) counts, 200 fits of 1,200 holders (5 standard errors)."""
    mechanism = SubsetCellClassMechanism(epsilon=2.0, n_classes=3)
    n_cells, n, repeats = 3, 1200, 200
    rng = np.random.default_rng(2)
    cells = rng.integers(0, n_cells, n).astype(np.int32)
    labels = rng.integers(-1, 3, n).astype(np.int32)  # -1: undeclared, counted nowhere
    sums = summarize_many(_jobs(mechanism, cells, labels, n_cells, repeats))
    est = [mechanism.debias(s, n) for s in sums]
    per_class = np.stack([e.label_sum for e in est]).mean(0)
    counts = np.stack([e.count for e in est]).mean(0)
    declared = labels >= 0
    truth = np.zeros((n_cells, 3))
    np.add.at(truth, (cells[declared], labels[declared]), 1)
    bound = mechanism.cell_variance(n_cells)
    assert np.all(np.abs(per_class - truth) <= 5 * math.sqrt(n * bound.label_sum / repeats))
    assert np.all(np.abs(counts - truth.sum(1)) <= 5 * math.sqrt(n * bound.count / repeats))


@pytest.mark.slow
def test_reports_are_one_holder_at_a_time() -> None:
    """Chunking, caller-supplied words and the fused sums agree with privatize."""
    mechanism = SubsetLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    n_cells, n = 11, 90
    rng = np.random.default_rng(4)
    cells = rng.integers(0, n_cells, n).astype(np.int32)
    labels = rng.normal(size=n).astype(np.float32)
    whole = mechanism.privatize(KEY, cells, labels, n_cells, first_holder=3)
    head = mechanism.privatize(KEY, cells[:40], labels[:40], n_cells, first_holder=3)
    tail = mechanism.privatize(KEY, cells[40:], labels[40:], n_cells, first_holder=43)
    np.testing.assert_array_equal(whole.cell, np.concatenate([head.cell, tail.cell]))
    words = holder_words(key_words(KEY), np.uint32(3), n, mechanism.words_per_holder(n_cells))
    again = mechanism.privatize_words(np.asarray(words), cells, labels, n_cells)
    np.testing.assert_array_equal(whole.cell, again.cell)
    assert np.all(np.asarray(whole.cell).sum(1) == mechanism.cell_release.law(n_cells).k)
    fused = mechanism.privatize_summarize(KEY, cells, labels, n_cells, first_holder=3)
    for name, value in mechanism.summarize(whole, n_cells).items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(fused[name]))


def test_bad_sizes_are_refused_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="size"):
        SubsetRelease("cell", 1.0, 0)
    with pytest.raises(ValueError, match="subset size"):
        SubsetLaw(1.0, 5, 5)
    # a size above the item count is capped at d - 1 (a larger set reveals nothing)
    assert SubsetRelease("cell", 1.0, 9).law(4).k == 3
