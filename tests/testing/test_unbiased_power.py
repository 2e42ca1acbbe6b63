"""``assert_unbiased`` with its default design: it passes correct mechanisms (family-wise
false-failure rate 1e-6 per call, fixed keys) and fails deliberately wrong ones, a 5 % error in
the debiasing of labels and a wrong flip probability, which its design detects with probability
at least 0.99 (the mutants below sit at or above the stated 5 %; with fixed keys each outcome is
reproducible)."""

from __future__ import annotations

import math

import attrs
import jax
import numpy as np
import pytest

from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.protocols import CellEstimates
from ldptree.testing import assert_unbiased
from ldptree.testing._unbiased import unbiased_design

BOUND = (-1.0, 1.0)


@attrs.frozen
class LabelOff(RRLaplaceMechanism):
    """Debiases the centred label sums 5 % too large (the design's labels are off-centre, so
    this is a bias of 5 % of each cell's centred label sum)."""

    def debias(self, stats, n):
        est = super().debias(stats, n)
        middle = sum(BOUND) / 2
        centred = est.label_sum - middle * est.count
        return CellEstimates(est.count, est.label_sum + 0.05 * centred, est.n)


@attrs.frozen
class FlipOff(RRLaplaceMechanism):
    """Samples at ``epsilon`` but debiases with the flip probability of ``1.15 epsilon``."""

    def debias(self, stats, n):
        wrong = attrs.evolve(self, epsilon=1.15 * self.epsilon)
        return self.debias_cells(wrong.flips, stats, "bits", n)


@attrs.frozen
class ClassOff(LaplaceCellClassMechanism):
    """Counts the holders of class 1 in each cell 5 % too high."""

    def debias(self, stats, n):
        est = super().debias(stats, n)
        return CellEstimates(est.count, 1.05 * est.label_sum, est.n)


def test_a_correct_mechanism_passes_with_the_stated_power():
    check = assert_unbiased(
        RRLaplaceMechanism(2.0, BOUND), key=jax.random.key(0), label_bound=BOUND
    )
    assert check.power == 0.99 and check.alpha == 1e-6 and check.n_cells == 2
    assert check.repeats >= 50 and check.n_holders > 10_000
    # the design's reach, measured from its own runs, is close to the 5 % it planned for
    assert 0.03 < check.detectable < 0.065


def test_a_five_percent_label_debias_error_fails():
    with pytest.raises(AssertionError, match=r"label_sum of cell .* looks biased"):
        assert_unbiased(LabelOff(2.0, BOUND), key=jax.random.key(1), label_bound=BOUND)


def test_a_wrong_flip_probability_fails():
    right, wrong = RRLaplaceMechanism(2.0, BOUND), RRLaplaceMechanism(2.3, BOUND)
    q, q_wrong = right.flip_prob, wrong.flip_prob
    # the bias it causes in the design's smaller cell (a third of the holders), relative to c_j
    assert (q - q_wrong) * (3 - 2) / (1 - 2 * q_wrong) > 0.05
    with pytest.raises(AssertionError, match=r"count of cell .* looks biased"):
        assert_unbiased(FlipOff(2.0, BOUND), key=jax.random.key(2), label_bound=BOUND)


@pytest.mark.slow
def test_class_mechanisms_get_class_codes():
    mechanism = LaplaceCellClassMechanism(epsilon=4.0, n_classes=2)
    _, labels = unbiased_design(mechanism, 1000, 2, (0.0, 1.0))
    assert labels.dtype == np.int64 and set(labels.tolist()) == {0, 1}
    assert 0.8 < labels.mean() < 0.9  # off-centre: most holders in the upper class
    assert_unbiased(mechanism, key=jax.random.key(3), label_bound=(0.0, 1.0))
    with pytest.raises(AssertionError, match="label_sum"):
        assert_unbiased(ClassOff(4.0, 2), key=jax.random.key(4), label_bound=(0.0, 1.0))


def test_the_design_is_off_centre_uneven_and_clips():
    cells, labels = unbiased_design(RRLaplaceMechanism(2.0, (-1.0, 3.0)), 3000, 3, (-1.0, 3.0))
    assert np.bincount(cells).tolist() == [500, 1000, 1500]
    # the end of larger absolute value (3), within 0.1 h of it or beyond it (clipped)
    assert np.mean(labels >= 2.8) == pytest.approx(1.0) and np.mean(labels > 3.0) == 0.3
    _, low = unbiased_design(RRLaplaceMechanism(2.0, (-5.0, 1.0)), 100, 2, (-5.0, 1.0))
    assert np.all(low <= -4.7)


def test_a_budget_too_small_for_the_power_is_refused_with_what_it_could_do():
    with pytest.raises(ValueError, match=r"needs [\d,]+ holder reports .* pass detect=") as info:
        assert_unbiased(
            RRLaplaceMechanism(0.5, BOUND),
            key=jax.random.key(5),
            label_bound=BOUND,
            max_reports=1_000_000,
        )
    affordable = float(str(info.value).split("pass detect=")[1].split()[0])
    assert affordable > 0.05 and math.isfinite(affordable)


def test_inputs_are_checked():
    mechanism = RRLaplaceMechanism(2.0, BOUND)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="both cells and labels"):
        assert_unbiased(mechanism, np.zeros(10, int), key=key, label_bound=BOUND)
    with pytest.raises(ValueError, match="repeats is chosen by the default design"):
        assert_unbiased(mechanism, key=key, label_bound=BOUND, repeats=20)
    with pytest.raises(ValueError, match="n_cells is required"):
        assert_unbiased(mechanism, np.zeros(10, int), np.zeros(10), key=key, label_bound=BOUND)
    with pytest.raises(ValueError, match="label_bound"):
        assert_unbiased(mechanism, key=key, label_bound=(1.0, 1.0))
