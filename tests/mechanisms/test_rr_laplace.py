"""RR on the one-hot cell + one Laplace label per holder (LPDT mechanism)."""

from __future__ import annotations

import hashlib
import itertools
import math

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from ldptree.mechanisms import BitFlip, RRLaplaceMechanism, RRLaplaceReport, debias_indicators
from ldptree.testing import assert_unbiased, budget_splits, budgets, partitions

KEY = jax.random.key(20261121)


@given(budgets(), budget_splits(), st.sampled_from([None, 32]))
def test_realised_flip_probability_never_overshoots_the_claim(eps, rho, bits):
    m = RRLaplaceMechanism(epsilon=eps, label_bound=1.0, budget_split=rho, precision_bits=bits)
    q = 1.0 / (1.0 + math.exp(rho * eps / 2.0))
    assert q <= m.flip_prob < 0.5 or m.flip_prob == 2.0**-m.bits
    # two one-hot vectors differ in two coordinates: realised cell budget <= rho * eps
    assert 2.0 * math.log(m.keep_prob / m.flip_prob) <= m.cell_epsilon * (1 + 1e-12)
    assert math.isclose(m.spend.epsilon, sum(e for _, e in m.spend.parts), rel_tol=1e-12)


def test_tiny_budgets_switch_to_32_bits_or_fail_clearly():
    assert RRLaplaceMechanism(epsilon=1e-4, label_bound=1.0, budget_split=0.1).bits == 32
    assert RRLaplaceMechanism(epsilon=1.0, label_bound=1.0).bits == 16
    # a huge cell budget needs 64-bit flips to realise at least 99% of it
    assert RRLaplaceMechanism(epsilon=100.0, label_bound=1.0).bits == 64
    with pytest.raises(ValueError, match="precision_bits"):
        RRLaplaceMechanism(epsilon=1e-4, label_bound=1.0, budget_split=0.1, precision_bits=16)
    with pytest.raises(ValueError, match="too small"):
        RRLaplaceMechanism(epsilon=1e-9, label_bound=1.0)


def test_constants_match_the_paper_at_rho_one_half():
    m = RRLaplaceMechanism(epsilon=4.0, label_bound=(-1.0, 3.0), precision_bits=32)
    # LPDT eq. (3): keep probability e^{eps/4} / (1 + e^{eps/4})
    assert math.isclose(m.keep_prob, math.exp(1.0) / (1 + math.exp(1.0)), abs_tol=2**-32)
    assert m.label_center == 1.0
    # the label's geometric noise has the variance of Laplace(4M/eps) (M = 2) to within 1%
    assert m.label_variance == pytest.approx(2 * (4.0 * 2.0 / 4.0) ** 2, rel=0.01)
    assert m.label_step * m.labels().levels == pytest.approx(4.0)


def test_reports_have_the_documented_shapes_and_ranges():
    m = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0)
    cells = np.array([0, 3, 3, 6], dtype=np.int32)
    r = m.privatize(KEY, cells, np.zeros(4), 7)
    assert r.bits.shape == (4, 7) and r.bits.dtype == bool
    code = np.asarray(r.code)
    margin, levels = m.label_noise.margin, m.labels().levels
    assert r.code.shape == (4,) and np.all((code >= -margin) & (code <= levels + margin))


def test_flip_frequency_matches_realised_probability():
    m = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    n, L = 20000, 16
    cells = np.arange(n, dtype=np.int32) % L
    bits = np.asarray(m.privatize(KEY, cells, np.zeros(n), L).bits)
    flips = int((bits != (np.arange(L) == cells[:, None])).sum())
    # two-sided binomial test, false-failure rate 1e-6 for this fixed key
    assert stats.binomtest(flips, n * L, m.flip_prob).pvalue > 1e-6


def test_labels_are_clipped_inside_the_mechanism():
    m = RRLaplaceMechanism(epsilon=3.0, label_bound=(-1.0, 2.0))
    cells = np.zeros(64, dtype=np.int32)
    at_bound = m.privatize(KEY, cells, np.full(64, 2.0), 4)
    far_out = m.privatize(KEY, cells, np.full(64, 1e9), 4)
    np.testing.assert_array_equal(np.asarray(at_bound.code), np.asarray(far_out.code))


def test_chunked_privatization_reproduces_the_whole_population():
    m = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0)
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 5, size=1000).astype(np.int32)
    labels = rng.uniform(-1, 1, size=1000)
    whole = m.privatize(KEY, cells, labels, 5)
    parts = [
        m.privatize(KEY, cells[a:b], labels[a:b], 5, first_holder=a)
        for a, b in ((0, 123), (123, 700), (700, 1000))
    ]
    np.testing.assert_array_equal(
        np.concatenate([np.asarray(p.bits) for p in parts]), np.asarray(whole.bits)
    )
    np.testing.assert_array_equal(
        np.concatenate([np.asarray(p.code) for p in parts]), np.asarray(whole.code)
    )


@pytest.mark.parametrize(("n", "L"), [(1, 1), (300, 7), (5000, 130)])
def test_fused_path_equals_privatize_then_summarize(n, L):
    m = RRLaplaceMechanism(epsilon=3.0, label_bound=(-1.0, 2.0))
    rng = np.random.default_rng(n)
    cells = rng.integers(0, L, size=n).astype(np.int32)
    labels = rng.normal(size=n)
    fused = m.privatize_summarize(KEY, cells, labels, L, first_holder=17)
    two_step = m.summarize(m.privatize(KEY, cells, labels, L, first_holder=17), L)
    for name in ("bits", "bits*code", "code"):
        np.testing.assert_array_equal(np.asarray(fused[name]), np.asarray(two_step[name]))
    # and the integer sums are the plain sums of the reports
    r = m.privatize(KEY, cells, labels, L, first_holder=17)
    bits, code = np.asarray(r.bits), np.asarray(r.code, dtype=np.int64)
    np.testing.assert_array_equal(np.asarray(fused["bits"]), bits.sum(axis=0))
    np.testing.assert_array_equal(
        np.asarray(fused["bits*code"]), (bits * code[:, None]).sum(axis=0)
    )
    assert int(fused["code"]) == int(code.sum())


@pytest.mark.slow
def test_jit_and_eager_privatization_agree():
    m = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0)
    cells = np.arange(40, dtype=np.int32) % 3
    labels = np.linspace(-1, 1, 40)
    jitted = m.privatize(KEY, cells, labels, 3)
    with jax.disable_jit():
        eager = m.privatize(KEY, cells, labels, 3)
    np.testing.assert_array_equal(np.asarray(jitted.bits), np.asarray(eager.bits))
    np.testing.assert_array_equal(np.asarray(jitted.code), np.asarray(eager.code))


def _label_log_prob(m, code, label):
    """``log P(code | label)``: the mixture over the label's two rounding levels."""
    first = -m.label_noise.margin
    terms = [
        math.log(w) + m.label_noise.log_probs(t)[code - first] for t, w in m.labels().weights(label)
    ]
    return float(np.logaddexp.reduce(terms))


@pytest.mark.parametrize(("eps", "rho"), [(0.5, 0.5), (4.0, 0.3), (40.0, 0.7)])
def test_label_likelihood_is_a_distribution_with_bounded_ratio(eps, rho):
    m = RRLaplaceMechanism(epsilon=eps, label_bound=(-2.0, 1.0), budget_split=rho)
    codes = m.label_noise.outputs
    labels = np.linspace(-2.5, 1.5, 9)
    table = np.array([[_label_log_prob(m, k, y) for k in codes] for y in labels])
    np.testing.assert_allclose(np.exp(table).sum(axis=1), 1.0, rtol=1e-9)
    # exact geometric noise over the level span: log-ratio <= (1 - rho) eps for every code
    assert (table.max(axis=0) - table.min(axis=0)).max() <= m.label_epsilon * (1 + 1e-9)


def test_label_codes_follow_the_likelihood():
    m = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0, budget_split=0.5)
    n = 40000
    code = np.asarray(m.privatize(KEY, np.zeros(n, dtype=np.int32), np.full(n, 0.3), 1).code)
    edges = np.array([-np.inf, -40, -20, -10, -5, -2, 0, 1, 2, 3, 5, 10, 20, 40, np.inf])
    observed = np.histogram(code, bins=edges)[0]
    support = np.asarray(m.label_noise.outputs)
    probs = np.exp([_label_log_prob(m, k, 0.3) for k in support])
    expected = (
        np.array(
            [probs[(support >= a) & (support < b)].sum() for a, b in itertools.pairwise(edges)]
        )
        * n
    )
    # chi-square goodness of fit, false-failure rate 1e-6 for this fixed key
    assert stats.chisquare(observed, expected).pvalue > 1e-6


def test_log_prob_combines_cell_and_label_parts():
    m = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0, precision_bits=32)
    report = RRLaplaceReport(bits=np.array([False, True, True]), code=np.int32(3))
    lp = m.log_prob(report, 1, 0.2, 3)
    expected = 2 * math.log(m.keep_prob) + math.log(m.flip_prob) + _label_log_prob(m, 3, 0.2)
    assert math.isclose(lp, expected, rel_tol=1e-12)


@pytest.mark.slow
@given(
    partitions(max_features=5, max_depth=4),
    budgets(0.5, 10.0),
    budget_splits(),
    st.integers(0, 2**31),
)
def test_debiased_sums_are_unbiased_on_random_partitions(p, eps, rho, seed):
    """Property: for any partition (d = 1..5) and data, debiased cell sums are unbiased.

    Each example is a t-test at family-wise level 1e-6 (see assert_unbiased); with 25
    derandomized examples the suite's false-failure probability is below 2.5e-5. Budgets stop at
    10 so that flips are not rare events over 150 x 150 draws (the t-test needs the mean of the
    runs to be near-normal); the flip frequency itself is tested at any budget above.
    """
    rng = np.random.default_rng(seed)
    X = rng.beta(0.7, 1.3, size=(150, p.n_features))
    cells = np.asarray(p.cells(X))
    labels = rng.normal(0.0, 1.5, size=150)  # some exceed the bound: sums are of clipped labels
    m = RRLaplaceMechanism(epsilon=eps, label_bound=(-2.0, 2.0), budget_split=rho)
    assert_unbiased(
        m, cells, labels, p.n_leaves, key=jax.random.key(seed), label_bound=(-2.0, 2.0), repeats=150
    )


def test_biased_debiasing_is_caught():
    """The unbiasedness check can fail: debiasing with the flip probability of the whole cell
    budget instead of one bit's (a real slip: rho eps where rho eps / 2 is meant) is detected."""

    class WrongQ(RRLaplaceMechanism):
        def debias(self, stats, n):
            labels = self.labels()
            return debias_indicators(
                BitFlip(self.cell_epsilon),
                stats["bits"],
                n,
                cross=stats["bits*code"],
                total=stats["code"],
                lo=labels.bound[0],
                step=labels.step,
            )

    m = WrongQ(epsilon=1.0, label_bound=1.0)
    cells = np.arange(300, dtype=np.int32) % 3
    with pytest.raises(AssertionError, match="biased"):
        assert_unbiased(m, cells, np.zeros(300), 3, key=KEY, label_bound=(-1.0, 1.0))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(epsilon=0.0, label_bound=1.0), "epsilon"),
        (dict(epsilon=-1.0, label_bound=1.0), "epsilon"),
        (dict(epsilon=float("inf"), label_bound=1.0), "epsilon"),
        (dict(epsilon=True, label_bound=1.0), "epsilon"),
        (dict(epsilon=1.0, label_bound=(2.0, 1.0)), "label_bound"),
        (dict(epsilon=1.0, label_bound="wide"), "label_bound"),
        (dict(epsilon=1.0, label_bound=1.0, budget_split=1.0), "budget_split"),
        (dict(epsilon=1.0, label_bound=1.0, budget_split=0.0), "budget_split"),
        (dict(epsilon=1.0, label_bound=1.0, precision_bits=8), "precision_bits"),
    ],
)
def test_bad_parameters_name_the_argument(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        RRLaplaceMechanism(**kwargs)


def test_bad_records_name_the_argument():
    m = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    with pytest.raises(ValueError, match="cells"):
        m.privatize(KEY, np.array([0, 5]), np.zeros(2), 5)
    with pytest.raises(ValueError, match="equal length"):
        m.privatize(KEY, np.array([0, 1]), np.zeros(3), 5)
    with pytest.raises(TypeError, match="cells"):
        m.privatize(KEY, np.array([0.5, 1.0]), np.zeros(2), 5)


# Flips of three mechanisms at fixed keys, hashed. The hash was recorded on the implementation
# before the mechanism kit (float32 Laplace labels): moving the label to exact geometric noise and
# the mechanism onto the kit left every holder's flips bitwise unchanged (they draw the same words).
_BITS_SHA256 = "97cb0b3e579a428470de9f5e771ecf0fb320c83e7efa184937609295c0c0c8a3"
_STREAM_MECHANISMS = (
    RRLaplaceMechanism(epsilon=2.0, label_bound=(1.0, 29.0), budget_split=0.3),
    RRLaplaceMechanism(epsilon=6.0, label_bound=(420.2, 495.7), budget_split=0.7),
    RRLaplaceMechanism(epsilon=4.0, label_bound=3.3, precision_bits=32),
)


def _bits_digest() -> str:
    rng = np.random.default_rng(5)
    digest = hashlib.sha256()
    for i, m in enumerate(_STREAM_MECHANISMS):
        for n, L in ((1, 1), (300, 7), (3000, 16)):
            cells = rng.integers(0, L, size=n).astype(np.int32)
            labels = (rng.normal(size=n) * 20 + 10).astype(np.float32)
            key = jax.random.key(100 * i + n)
            r = m.privatize(key, cells, labels, L, first_holder=5)
            fused = m.privatize_summarize(key, cells, labels, L, first_holder=5)
            for arr in (r.bits, fused["bits"]):
                digest.update(np.ascontiguousarray(np.asarray(arr)).tobytes())
    return digest.hexdigest()


@pytest.mark.slow
def test_flip_stream_is_pinned():
    assert _bits_digest() == _BITS_SHA256


def test_one_compiled_kernel_serves_every_budget_and_label_bound():
    # The mechanism's constants are traced values, so a grid over (epsilon, rho, label bound)
    # at one shape compiles the fused kernel once, not once per mechanism.
    from ldptree.mechanisms._kit import _privatize_summarize

    cells = np.arange(50, dtype=np.int32) % 4
    labels = np.linspace(0.0, 1.0, 50)
    RRLaplaceMechanism(epsilon=1.5, label_bound=1.0).privatize_summarize(KEY, cells, labels, 4)
    before = _privatize_summarize._cache_size()
    for eps, rho, bound in itertools.product((2.0, 6.0), (0.3, 0.7), ((0.0, 1.0), (-3.0, 9.5))):
        m = RRLaplaceMechanism(epsilon=eps, label_bound=bound, budget_split=rho)
        m.privatize_summarize(KEY, cells, labels, 4)
    # 16-bit flips throughout; the geometric table and the summary block are shape buckets, so
    # the eight mechanisms share one program
    assert _privatize_summarize._cache_size() - before <= 1


@pytest.mark.slow
def test_cell_variance_bounds_the_empirical_variance_of_debiased_estimates() -> None:
    """Monte Carlo over 400 independent fits of 2,000 holders all at the label bound's extreme:
    the empirical variances of c^_j and s^_j stay below the predicted bound times 1.25 (the
    ratio of a 400-sample variance to its mean exceeds 1.25 with probability < 1e-3)."""
    from ldptree.mechanisms import CellVariance, RRLaplaceMechanism

    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0))
    bound = mech.cell_variance(4)
    assert isinstance(bound, CellVariance)
    n = 2000
    cells = jax.numpy.zeros(n, dtype=jax.numpy.int32)
    labels = jax.numpy.full(n, 3.0, dtype=jax.numpy.float32)
    counts, sums = [], []
    for r in range(400):
        stats = mech.privatize_summarize(jax.random.key(r), cells, labels, 4)
        est = mech.debias(stats, n)
        counts.append(float(est.count[0]))
        sums.append(float(est.label_sum[0]))
    assert np.var(counts) <= 1.25 * n * bound.count
    assert np.var(sums) <= 1.25 * n * bound.label_sum
    # and the bound is not vacuous: within a factor 3 of what is observed in the holders' cell
    assert np.var(sums) >= n * bound.label_sum / 3.0
