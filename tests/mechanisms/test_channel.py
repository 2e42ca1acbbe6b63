"""MatrixNoise: an exact finite channel rounded towards privacy, and its kit sampler."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ldptree.mechanisms import MatrixNoise, RealLabels, matrix_noise
from ldptree.mechanisms._noise import sample_noise
from ldptree.mechanisms._piecewise import piecewise_matrix


def _random_private_matrix(rng: np.random.Generator, rows: int, cols: int, eps: float):
    """A random row-stochastic matrix and its own largest column log-ratio (the tightest claim)."""
    base = rng.uniform(1.0, math.exp(eps), size=(rows, cols)) * rng.uniform(0.1, 1.0, cols)
    p = base / base.sum(axis=1, keepdims=True)
    ratio = (p.max(axis=0) / p.min(axis=0)).max()
    return p, math.log(ratio)


def _column_ratio_ok(noise: MatrixNoise, eps: float) -> bool:
    """Every column's max / min <= e^eps, checked in exact integers against a rational below
    e^eps (independently of the builder's own check)."""
    from fractions import Fraction

    r = Fraction(math.nextafter(math.exp(eps), 0.0))
    table = np.asarray(noise.counts, dtype=object)
    return all(
        int(hi) * r.denominator <= r.numerator * int(lo)
        for hi, lo in zip(table.max(axis=0), table.min(axis=0), strict=True)
    )


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("seed", range(5))
def test_realised_counts_never_exceed_the_claimed_ratio(bits: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, eps = _random_private_matrix(rng, 5, 7, 1.5)
    noise = matrix_noise(p, eps, bits=bits)
    assert all(sum(row) == 1 << bits for row in noise.counts)
    assert _column_ratio_ok(noise, eps)
    assert noise.realised_epsilon <= eps * (1 + 1e-12)
    # and the realised law is the requested one up to a few counts per entry
    realised = np.asarray(noise.counts, dtype=np.float64) / 2.0**bits
    tolerance = 1e-6 if bits == 32 else 1e-15
    assert np.abs(realised - p).max() < tolerance


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
def test_tight_columns_are_rounded_towards_privacy(eps: float) -> None:
    # the piecewise matrix attains e^eps exactly in many columns: plain rounding would overshoot
    p = piecewise_matrix(eps, 8)
    assert math.isclose((p.max(axis=0) / p.min(axis=0)).max(), math.exp(eps), rel_tol=1e-12)
    noise = matrix_noise(p, eps)
    assert _column_ratio_ok(noise, eps)
    assert eps * (1 - 1e-9) <= noise.realised_epsilon <= eps * (1 + 1e-12)


def test_bad_matrices_are_refused() -> None:
    with pytest.raises(ValueError, match="exceeds e\\^epsilon"):
        matrix_noise([[0.9, 0.1], [0.1, 0.9]], 1.0)  # ratio 9 > e
    with pytest.raises(ValueError, match="exceeds e\\^epsilon"):
        matrix_noise([[1.0, 0.0], [0.5, 0.5]], 5.0)  # a zero against a positive entry
    with pytest.raises(ValueError, match="sum to 1"):
        matrix_noise([[0.5, 0.4], [0.5, 0.5]], 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        matrix_noise([[1.5, -0.5], [0.5, 0.5]], 1.0)
    with pytest.raises(ValueError, match="bits"):
        matrix_noise([[0.5, 0.5]], 1.0, bits=16)
    with pytest.raises(ValueError, match="matrix"):
        matrix_noise([0.5, 0.5], 1.0)
    with pytest.raises(ValueError, match="summing to 2\\^32"):
        MatrixNoise([[1, 2]], 32)
    with pytest.raises(ValueError, match="bits"):
        MatrixNoise([[1 << 16, 1 << 16]], 17)


def test_moments_are_exact_from_the_counts() -> None:
    total = 1 << 32
    noise = MatrixNoise([[total // 2, total // 2, 0], [0, total // 4, 3 * total // 4]], 32)
    assert noise.mean(0) == 0.5 and noise.mean(1) == 1.75
    assert noise.variance(0) == 0.25 and noise.variance(1) == 0.1875
    assert noise.offset == 0.5 and noise.slope == 1.25 and noise.max_bias == 0.0
    assert noise.realised_epsilon == math.inf  # zeros against positive counts


@pytest.mark.parametrize("bits", [32, 64])
def test_sampler_returns_the_cumulative_count_interval(bits: int) -> None:
    p = piecewise_matrix(1.0, 4)
    noise = matrix_noise(p, 1.0, bits=bits)
    rows = []
    words = []
    want = []
    for a, row in enumerate(noise.counts):
        cumulative = np.cumsum(np.asarray(row, dtype=object))
        for k in range(len(row) - 1):
            for u in (int(cumulative[k]) - 1, int(cumulative[k])):  # last of k, first of k + 1
                rows.append(a)
                want.append(k if u < cumulative[k] else k + 1)
                words.append([u >> 32, u & 0xFFFFFFFF] if bits == 64 else [u])
    inputs = jnp.asarray(np.asarray(rows, np.int32)[:, None])
    w = jnp.asarray(np.asarray(words, dtype=np.uint64).astype(np.uint32))
    out = sample_noise(noise.static, noise.constants(), w, inputs)
    assert np.array_equal(np.asarray(out)[:, 0], np.asarray(want))
    assert noise.words(3) == 3 * bits // 32


def test_sampler_matches_the_law_in_distribution_32_bits() -> None:
    """Chi-square goodness of fit of 40,000 draws per input; false-failure rate 1e-6 overall."""
    noise = matrix_noise(piecewise_matrix(2.0, 4), 2.0, bits=32)
    n = 40_000
    key = jax.random.key(7)
    words = jax.random.bits(key, (n * 5, 1), dtype=jnp.uint32)
    inputs = jnp.repeat(jnp.arange(5, dtype=jnp.int32), n)[:, None]
    out = np.asarray(sample_noise(noise.static, noise.constants(), words, inputs))[:, 0]
    for a in range(5):
        observed = np.bincount(out[a * n : (a + 1) * n], minlength=len(noise.outputs))
        expected = n * np.exp(noise.log_probs(a))
        chi2 = float(((observed - expected) ** 2 / expected).sum())
        assert chi2 < stats.chi2.ppf(1 - 1e-6 / 5, len(noise.outputs) - 1)


def test_real_labels_accept_one_level_but_no_other_odd_count() -> None:
    labels = RealLabels((-1.0, 3.0), 1)
    assert labels.domain() == (-1.0, 3.0) and labels.weights(0.0) == [(0, 0.75), (1, 0.25)]
    with pytest.raises(ValueError, match="1 or even"):
        RealLabels((-1.0, 3.0), 3)


def test_a_32_bit_matrix_release_is_certified_and_sampled_as_declared() -> None:
    """A kit mechanism with a 32-bit MatrixNoise label release: certified pure, and the sampler
    check (false-failure rate 1e-6) does not reject privatize against the declared law."""
    import attrs

    from ldptree.accounting import check_sampler, verify_ldp
    from ldptree.mechanisms import KitMechanism, LabelRelease, label_level

    noise = matrix_noise(piecewise_matrix(1.0, 4), 1.0, bits=32)

    @attrs.frozen
    class LabelOnly(KitMechanism):
        epsilon: float

        def labels(self) -> RealLabels:
            return RealLabels((0.0, 1.0), 4)

        def releases(self) -> tuple[LabelRelease]:
            return (label_level("code", noise, self.labels()),)

        def debias(self, stats: dict, n: int):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    mech = LabelOnly(1.0)
    assert mech.words_per_holder(3) == 2  # one word for the draw, one for the level rounding
    assert verify_ldp(mech, n_cells=3, label_bound=(-1.0, 2.0)).pure
    result = check_sampler(mech, 3, key=jax.random.key(1), n=5000, label_bound=(0.0, 1.0))
    assert not result.rejected, str(result)


def test_plain_rounding_overshoots_and_the_accountant_refuses_it() -> None:
    """Floored counts with the remainder on each row's mode (the usual way to make integer
    probabilities sum to one) exceed the claim of a matrix that attains e^eps, and verify_ldp
    refuses a release built on them; matrix_noise's counts of the same matrix are certified."""
    import attrs

    from ldptree.accounting import verify_ldp
    from ldptree.mechanisms import KitMechanism, LabelRelease, label_level

    eps, bits = 2.0, 32
    p = piecewise_matrix(eps, 4)
    plain = [[int(v * 2.0**bits) for v in row] for row in p]
    for row in plain:  # make each row sum to 2^bits by moving the remainder onto the mode
        row[int(np.argmax(row))] += (1 << bits) - sum(row)
    naive = MatrixNoise(plain, bits)
    assert naive.realised_epsilon > eps

    def mechanism(noise: MatrixNoise) -> KitMechanism:
        @attrs.frozen
        class LabelOnly(KitMechanism):
            epsilon: float

            def labels(self) -> RealLabels:
                return RealLabels((0.0, 1.0), 4)

            def releases(self) -> tuple[LabelRelease]:
                return (label_level("code", noise, self.labels()),)

        return LabelOnly(eps)

    assert not verify_ldp(mechanism(naive), n_cells=2, label_bound=(0.0, 1.0)).holds
    assert verify_ldp(mechanism(matrix_noise(p, eps, bits=bits)), n_cells=2).pure
