"""LaplaceCellClassMechanism: reports, exact sums, unbiasedness, likelihood and the certificate."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldptree.accounting import verify_ldp
from ldptree.mechanisms import Geometric, LaplaceCellClassMechanism, LaplaceCellClassReport
from ldptree.rounds import SumAggregator
from ldptree.testing import assert_ldp, assert_unbiased


def _records(n: int, n_cells: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_cells, n), rng.integers(0, n_classes, n)


def sum_tolerance(n: int, gamma: float, ffr: float) -> float:
    """A rigorous two-sided bound on |debiased sum - truth| for one coordinate.

    Each report adds two-sided geometric noise ``Z = G_1 - G_2`` (``P(G = k) = (1 - r) r^k``,
    ``r = e^{-gamma}``) whose realised law has the same integer counts up to ``2^-64`` rounding;
    its moment generating function is ``M(s) = (1 - r)^2 / ((1 - r e^s)(1 - r e^{-s}))`` for
    ``|s| < gamma``. Chernoff: ``P(|S| >= t) <= 2 min_s e^{-s t} M(s)^n``; we solve for ``t`` at
    ``ffr`` with ``s`` on a grid (any ``s`` gives a valid bound). The clamp can only shrink ``|Z|``.
    """
    r = math.exp(-gamma)
    best = math.inf
    for s in np.linspace(gamma / 200, gamma * 0.99, 200):
        log_m = 2 * math.log1p(-r) - math.log1p(-r * math.exp(s)) - math.log1p(-r * math.exp(-s))
        t = (n * log_m + math.log(2 / ffr)) / s
        best = min(best, t)
    return best


@pytest.mark.parametrize("n_classes", [2, 3])
def test_reports_have_the_documented_shapes(n_classes: int) -> None:
    mech = LaplaceCellClassMechanism(epsilon=1.0, n_classes=n_classes)
    cells, labels = _records(50, 6, n_classes, 0)
    report = mech.privatize(jax.random.key(0), cells, labels, 6)
    assert report.cell.shape == (50, 6) and report.cell.dtype == np.int32
    expected = (50, 6) if n_classes == 2 else (50, 6, n_classes)
    assert report.label.shape == expected
    assert mech.report_width(6) == 6 * (1 + mech.label_width)
    assert np.abs(np.asarray(report.cell)).max() <= mech.noise.max_abs_output


@pytest.mark.slow
def test_reports_do_not_depend_on_chunking_and_fused_sums_agree() -> None:
    mech = LaplaceCellClassMechanism(epsilon=2.0, n_classes=3)
    cells, labels = _records(3000, 5, 3, 1)
    key = jax.random.key(42)
    whole = mech.privatize(key, cells, labels, 5)
    first = mech.privatize(key, cells[:1234], labels[:1234], 5)
    rest = mech.privatize(key, cells[1234:], labels[1234:], 5, first_holder=1234)
    np.testing.assert_array_equal(np.concatenate([first.cell, rest.cell]), whole.cell)
    np.testing.assert_array_equal(np.concatenate([first.label, rest.label]), whole.label)
    agg = SumAggregator(mechanism=mech, n_cells=5)
    one = agg.finalize(agg.update(agg.init(), whole))
    two = agg.finalize(agg.merge(agg.update(agg.init(), rest), agg.update(agg.init(), first)))
    np.testing.assert_array_equal(one.count, two.count)  # integer sums: bitwise equal
    np.testing.assert_array_equal(one.label_sum, two.label_sum)
    fused = mech.privatize_summarize(key, cells, labels, 5)
    direct = mech.summarize(whole, 5)
    for name in ("cell", "label"):
        np.testing.assert_array_equal(np.asarray(fused[name]), np.asarray(direct[name]))


# 25 examples x at most 8 cells x (1 + 3) coordinates = 800 comparisons at 1e-7 each: a correct
# mechanism fails this test with probability below 1e-4 (union bound over sum_tolerance).
@pytest.mark.slow
@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_cells=st.integers(1, 8),
    n_classes=st.integers(2, 3),
    epsilon=st.sampled_from([0.5, 1.0, 4.0, 16.0]),
)
def test_debiased_sums_are_within_a_rigorous_bound_of_the_truth(
    seed: int, n_cells: int, n_classes: int, epsilon: float
) -> None:
    n = 2000
    mech = LaplaceCellClassMechanism(epsilon=epsilon, n_classes=n_classes)
    cells, labels = _records(n, n_cells, n_classes, seed)
    labels[:100] = n_classes  # unknown labels: null records, counted nowhere
    report = mech.privatize(jax.random.key(seed), cells, labels, n_cells)
    est = mech.debias(mech.summarize(report, n_cells), n)
    valid = labels < n_classes
    true_count = np.bincount(cells[valid], minlength=n_cells)
    per_class = np.zeros((n_cells, n_classes))
    np.add.at(per_class, (cells[valid], labels[valid]), 1.0)
    true_label = per_class[:, 1] if n_classes == 2 else per_class
    tol = sum_tolerance(n, mech.noise.gamma, ffr=1e-7)
    assert np.all(np.abs(est.count - true_count) <= tol)
    assert np.all(np.abs(est.label_sum - true_label) <= tol)


def test_debiased_binary_sums_are_unbiased_over_repeats() -> None:
    # ldptree.testing.assert_unbiased: per-cell t-tests over 200 independent runs, Bonferroni,
    # family-wise false-failure rate 1e-6 (binary class codes are labels in [0, 1]).
    mech = LaplaceCellClassMechanism(epsilon=1.0)
    cells, labels = _records(600, 4, 2, 5)
    assert_unbiased(mech, cells, labels, 4, key=jax.random.key(3), label_bound=(0.0, 1.0))


def test_aggregate_simulation_has_the_per_holder_mean_and_variance() -> None:
    # 300 aggregate draws of a 4-cell release with n = 5000 holders. Mean: the t-statistic of the
    # debiased count error is N(0,1) up to CLT error; |t| < 5 fails w.p. ~6e-7 per coordinate.
    # Variance: the sample sd is within 20% of sqrt(n var Z) (chi-square with 299 dof: a 20%
    # deviation is beyond 4.9 sd). Together < 1e-5.
    mech = LaplaceCellClassMechanism(epsilon=1.0)
    cells, labels = _records(5000, 4, 2, 3)
    draws = np.stack(
        [
            mech.debias(mech.simulate_summary(jax.random.key(i), cells, labels, 4), 5000).count
            for i in range(300)
        ]
    )
    truth = np.bincount(cells, minlength=4)
    sd = math.sqrt(5000 * mech.noise.variance(0))
    t = (draws.mean(axis=0) - truth) / (sd / math.sqrt(300))
    assert np.all(np.abs(t) < 5)
    assert np.all(np.abs(draws.std(axis=0, ddof=1) / sd - 1) < 0.2)


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
def test_accountant_certifies_epsilon_exactly(n_classes: int, epsilon: float) -> None:
    mech = LaplaceCellClassMechanism(epsilon=epsilon, n_classes=n_classes)
    cert = assert_ldp(mech, n_cells=4)
    assert cert.exact and cert.epsilon_bound == pytest.approx(epsilon, rel=2e-9)
    # the witness report, read back through log_prob, attains the claim
    w = cert.witness
    ratio = mech.log_prob(w.report, *w.record, 4) - mech.log_prob(w.report, *w.other, 4)
    assert ratio == pytest.approx(epsilon, rel=2e-9)
    assert cert.pure  # exact integer sampling: nothing left to a floating-point caveat


def test_a_mechanism_claiming_less_than_it_spends_is_refuted() -> None:
    class Overclaiming(LaplaceCellClassMechanism):
        @property
        def noise(self) -> Geometric:
            return Geometric(self.epsilon / 2.0, span=1)  # half the noise the claim needs

    cert = verify_ldp(Overclaiming(epsilon=1.0), n_cells=3)
    assert not cert.holds and cert.epsilon_bound == pytest.approx(2.0, rel=1e-6)


@pytest.mark.slow
@settings(max_examples=30)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_cells=st.integers(1, 6),
    n_classes=st.integers(2, 4),
    epsilon=st.floats(0.05, 20.0),
)
def test_log_likelihood_ratio_between_any_two_records_is_at_most_epsilon(
    seed: int, n_cells: int, n_classes: int, epsilon: float
) -> None:
    mech = LaplaceCellClassMechanism(epsilon=epsilon, n_classes=n_classes)
    rng = np.random.default_rng(seed)
    cell, other_cell = (int(c) for c in rng.integers(0, n_cells, 2))
    label, other_label = (int(c) for c in rng.integers(-1, n_classes + 1, 2))  # incl. null
    report = mech.privatize(jax.random.key(seed), [cell], [label], n_cells)
    one = LaplaceCellClassReport(report.cell[0], report.label[0])
    ratio = mech.log_prob(one, cell, label, n_cells) - mech.log_prob(
        one, other_cell, other_label, n_cells
    )
    assert abs(ratio) <= epsilon + 1e-9


def test_null_records_release_nothing_but_noise() -> None:
    mech = LaplaceCellClassMechanism(epsilon=1.0, n_classes=3)
    u, v = mech.encode(2, 7, 4)
    assert not u.any() and not v.any()
    u, v = mech.encode(2, 1, 4)
    assert u.tolist() == [0, 0, 1, 0] and v.sum() == 1 and v[2, 1] == 1


def test_noise_constants() -> None:
    mech = LaplaceCellClassMechanism(epsilon=2.0)
    assert mech.noise.gamma == 0.5 and mech.noise.span == 1
    # the discrete law is less noisy than the paper's Laplace(4 / eps): variance below 2 b^2
    assert mech.noise.variance(0) < 2 * (4.0 / 2.0) ** 2
    assert mech.count_variance == mech.noise.variance(0)


def test_spend_declares_the_split() -> None:
    spend = LaplaceCellClassMechanism(epsilon=3.0).spend
    assert spend.epsilon == 3.0
    assert [eps for _, eps in spend.parts] == [1.5, 1.5]


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda m: m.privatize(jax.random.key(0), [0, 1], [0.5, 1.0], 2), TypeError, "labels"),
        (lambda m: m.privatize(jax.random.key(0), [0, 2], [0, 1], 2), ValueError, "cells"),
        (lambda m: m.privatize(jax.random.key(0), [0.0], [1], 2), TypeError, "cells"),
        (lambda m: m.privatize(jax.random.key(0), [0, 1], [1], 2), ValueError, "labels"),
        (lambda m: m.privatize(jax.random.key(0), [0], [1], 0), ValueError, "n_cells"),
    ],
)
def test_bad_records_are_named(call: object, error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        call(LaplaceCellClassMechanism(epsilon=1.0))  # type: ignore[operator]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"epsilon": 0.0}, "epsilon"), ({"epsilon": 1.0, "n_classes": 1}, "n_classes")],
)
def test_bad_parameters_are_named(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        LaplaceCellClassMechanism(**kwargs)  # type: ignore[arg-type]
