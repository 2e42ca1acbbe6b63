"""Optimized local hashing: the exact law, its sampler, its privacy and its debiasing."""

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
    LocalHashRelease,
    OLHCellClassMechanism,
    OLHLaplaceMechanism,
    summarize_many,
)
from ldptree.mechanisms._batch import SummaryJob
from ldptree.mechanisms._local_hash import hash_bits
from ldptree.mechanisms._random import holder_words, key_words

KEY = jax.random.key(20260302)


def _hash(masks: tuple[int, ...], x: int) -> int:
    return sum(((a & x).bit_count() & 1) << level for level, a in enumerate(masks))


def _law(release: LocalHashRelease, n_cells: int, x: int) -> dict[tuple[int, ...], Fraction]:
    """The exact report law ``P(A, z | x)`` by enumeration of every mask tuple."""
    law = release.channel(n_cells)
    noise, r, m = law.noise, law.hash_bits, law.mask_bits
    total = 1 << 64
    out = {}
    for masks in itertools.product(range(1 << m), repeat=r):
        h = _hash(masks, x)
        for z in range(noise.k):
            count = noise.keep_count if z == h else noise.other_count
            out[(*masks, z)] = Fraction(count, total) / (1 << (r * m))
    return out


@pytest.mark.parametrize("n_cells", [1, 3, 6])
def test_indicators_have_the_declared_means_and_are_uncorrelated(n_cells: int) -> None:
    """Exact enumeration: ``P(H_A(j) = z | x) = 1/g + (p - 1/g) 1{x = j}`` and
    ``E[I_a I_b] = E[I_a] E[I_b]`` for ``a != b``."""
    release = LocalHashRelease("cell", 1.7, 2)
    law = release.channel(n_cells)
    g, d = law.noise.k, n_cells
    p = Fraction(law.noise.keep_count, 1 << 64)
    for x in range(d):
        probs = _law(release, n_cells, x)
        assert sum(probs.values()) == 1
        means = [
            sum(q for (*a, z), q in probs.items() if _hash(tuple(a), j) == z) for j in range(d)
        ]
        for j in range(d):
            assert means[j] == (p if j == x else Fraction(1, g))
        for a, b in itertools.combinations(range(d), 2):
            both = sum(
                q for (*m, z), q in probs.items() if _hash(tuple(m), a) == z == _hash(tuple(m), b)
            )
            assert both == means[a] * means[b]
    assert law.offset == pytest.approx(1 / g, rel=1e-15)
    assert law.slope == pytest.approx(float(p) - 1 / g, rel=1e-12)


@pytest.mark.parametrize(
    ("mechanism", "label"),
    [
        (OLHCellClassMechanism(epsilon=1.5, n_classes=2, hash_bits=2), 1),
        (OLHLaplaceMechanism(epsilon=3.0, label_bound=1.0, hash_bits=2), 0.0),
    ],
)
def test_sampler_draws_the_exact_law(mechanism, label) -> None:
    """Chi-square of 40,000 reports of one record (a middle cell) against the enumerated law
    (16 masks x 4 responses x ...); false-failure rate 1e-6."""
    n_cells, n, cell = 3, 40_000, 1
    release = mechanism.releases()[0]
    integer = isinstance(label, int)
    reports = mechanism.privatize(
        KEY,
        np.full(n, cell, np.int32),
        np.full(n, label, np.int32 if integer else np.float32),
        n_cells,
    )
    rows = np.asarray(reports[0])
    x = release.item(cell, mechanism.labels().index(label), mechanism.labels())
    law = _law(release, n_cells, x)
    outcomes = sorted(law)
    index = {o: i for i, o in enumerate(outcomes)}
    observed = np.zeros(len(outcomes))
    for row in rows:
        observed[index[tuple(int(v) for v in row)]] += 1
    expected = np.asarray([float(law[o]) for o in outcomes]) * n
    assert stats.chisquare(observed, expected).pvalue > 1e-6
    # and log_prob is the same law
    for o in outcomes[:: max(1, len(outcomes) // 7)]:
        lp = release.channel(n_cells).log_prob(o, x)
        assert lp == pytest.approx(math.log(float(law[o])), abs=1e-12)


def test_log_prob_is_a_distribution_over_reports() -> None:
    mechanism = OLHCellClassMechanism(epsilon=2.0, n_classes=2, hash_bits=2)
    n_cells = 2
    release = mechanism.pair_release
    total = 0.0
    for o in _law(release, n_cells, 0):
        report = mechanism.report_type(np.asarray(o, np.int32))
        total += math.exp(mechanism.log_prob(report, 1, 1, n_cells))
    assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 2.0, 10.0, 40.0])
@pytest.mark.parametrize("n_cells", [2, 7, 16])
def test_built_ins_are_certified_pure_close_to_their_claim(epsilon: float, n_cells: int) -> None:
    for mechanism in (
        OLHLaplaceMechanism(epsilon=epsilon, label_bound=(-1.0, 2.0)),
        OLHCellClassMechanism(epsilon=epsilon, n_classes=3),
    ):
        cert = verify_ldp(mechanism, n_cells=n_cells, label_bound=(-3.0, 4.0))
        assert cert.holds and cert.pure
        assert cert.epsilon_bound <= epsilon * (1 + 1e-9)
        assert cert.epsilon_bound >= 0.999 * epsilon


def test_hash_size_follows_the_budget() -> None:
    # many items: g = 2^r near e^eps + 1, 2 values at small budgets, many at large ones
    assert hash_bits(0.1, 10_000) == 1
    assert hash_bits(math.log(15.0), 10_000) == 4
    assert hash_bits(40.0, 2**24) == 20
    # few items: the own item's variance counts too, so the hash keeps it more often
    assert hash_bits(8.0, 16) < hash_bits(8.0, 10_000)


def _jobs(mechanism, cells, labels, n_cells, repeats):
    return [
        SummaryJob(mechanism, jax.random.fold_in(KEY, r), cells, labels, n_cells)
        for r in range(repeats)
    ]


def test_regression_debiasing_is_unbiased() -> None:
    """200 fits of 1,500 holders: every cell's mean debiased count and label sum lies within 5
    standard errors of the truth (per-holder variance bound; Gaussian tail 5.7e-7 per statistic,
    6e-6 over all)."""
    mechanism = OLHLaplaceMechanism(epsilon=3.0, label_bound=(-1.0, 3.0))
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
    assert np.all(np.abs(counts.mean(0) - truth_c) <= 5 * math.sqrt(n * bound.count / repeats))
    assert np.all(
        np.abs(label_sums.mean(0) - truth_s) <= 5 * math.sqrt(n * bound.label_sum / repeats)
    )
    assert np.all(counts.var(0) <= 1.5 * n * bound.count)
    assert counts.var(0).max() >= n * bound.count_outside / 3


def test_class_debiasing_is_unbiased() -> None:
    """As above for per-(cell, class) counts, 200 fits of 1,200 holders (5 standard errors)."""
    mechanism = OLHCellClassMechanism(epsilon=2.0, n_classes=3)
    n_cells, n, repeats = 3, 1200, 200
    rng = np.random.default_rng(2)
    cells = rng.integers(0, n_cells, n).astype(np.int32)
    labels = rng.integers(-1, 3, n).astype(np.int32)  # -1: undeclared, counted nowhere
    sums = summarize_many(_jobs(mechanism, cells, labels, n_cells, repeats))
    est = [mechanism.debias(s, n) for s in sums]
    per_class = np.stack([e.label_sum for e in est])
    counts = np.stack([e.count for e in est])
    declared = labels >= 0
    truth = np.zeros((n_cells, 3))
    np.add.at(truth, (cells[declared], labels[declared]), 1)
    bound = mechanism.cell_variance(n_cells)
    se = math.sqrt(n * bound.label_sum / repeats)
    assert np.all(np.abs(per_class.mean(0) - truth) <= 5 * se)
    assert np.all(np.abs(counts.mean(0) - truth.sum(1)) <= 5 * math.sqrt(n * bound.count / repeats))
    assert np.all(counts.var(0) <= 1.5 * n * bound.count)


@pytest.mark.slow
def test_reports_are_one_holder_at_a_time() -> None:
    """Chunking, caller-supplied words and the fused sums agree with privatize."""
    mechanism = OLHLaplaceMechanism(epsilon=2.0, label_bound=1.0)
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
    fused = mechanism.privatize_summarize(KEY, cells, labels, n_cells, first_holder=3)
    for name, value in mechanism.summarize(whole, n_cells).items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(fused[name]))
    # masks only use the item's bits; responses lie in the hash's range
    shape, low, high = mechanism.report_fields(n_cells)[0][1:]
    r = mechanism.cell_release.hash_bits(n_cells)
    assert shape == (r + 1,) and np.asarray(whole.cell).min() >= low
    assert np.asarray(whole.cell).max() <= high


def test_bad_hash_bits_are_refused_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="hash_bits"):
        LocalHashRelease("cell", 1.0, 0)
    with pytest.raises(ValueError, match="hash_bits"):
        OLHLaplaceMechanism(epsilon=1.0, label_bound=1.0, hash_bits=21)
