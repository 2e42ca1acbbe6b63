"""The validation holders' release: exact integer codes, a true certificate, no float leak."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldptree.experiments import privatize_losses
from ldptree.experiments._private_validation import (
    LossRelease,
    clamped_release_certificate,
    loss_release_certificate,
)
from ldptree.mechanisms._exact import clamped_output_counts, geometric_noise_law


def _code_likelihoods(release: LossRelease, loss: float) -> np.ndarray:
    """Exact ``P(code | loss)`` over codes ``-margin .. m + margin`` (rounding then noise)."""
    m, margin = release.levels, release.margin
    scaled = min(max(loss, 0.0), release.bound) / release.step
    base = min(math.floor(scaled), m)
    up = scaled - base
    out = np.zeros(m + 2 * margin + 1)
    for a, weight in ((base, 1.0 - up), (min(base + 1, m), up)):
        if weight > 0.0:
            counts = clamped_output_counts(release.noise, a, -margin, m + margin)
            out += weight * np.asarray([math.ldexp(float(c), -64) for c in counts])
    return out


def test_every_candidate_loss_vector_stays_possible() -> None:
    # Mironov's attack on textbook float Laplace: keep the candidates whose support contains the
    # release. With 0/1 losses, k = 4, eps = 1 it determined 82% of coordinates before; on the
    # integer release every candidate vector has positive probability for every release, and the
    # likelihood ratio of any two candidates is at most e^eps (exactly, from the counts)
    k, eps = 4, 1.0
    release = LossRelease.create(k, 1.0, eps)
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, size=(200, k)).astype(float)
    codes = release.codes(truth, rng)
    table = {v: _code_likelihoods(release, v) for v in (0.0, 1.0)}
    for row in codes:
        index = row + release.margin
        logs = []
        for candidate in itertools.product((0.0, 1.0), repeat=k):
            probs = [table[v][i] for v, i in zip(candidate, index, strict=True)]
            assert min(probs) > 0.0
            logs.append(sum(math.log(p) for p in probs))
        assert max(logs) - min(logs) <= eps * (1 + 1e-9)


def test_release_is_unbiased_and_decodes_to_loss_units() -> None:
    # losses spread over [0, B] and beyond (clipped); 40000 holders x 3 coordinates. The mean of
    # decoded releases minus the clipped mean has sd sqrt(2) k B / eps / sqrt(n) ~ 0.0636 here;
    # 5 sd fails with probability < 6e-7 per coordinate (3 coordinates: < 2e-6)
    k, bound, eps, n = 3, 4.0, 2.0, 40000
    rng = np.random.default_rng(1)
    losses = rng.uniform(-1.0, 5.0, size=(n, k))
    out = privatize_losses(losses, bound=bound, epsilon=eps, rng=np.random.default_rng(2))
    release = LossRelease.create(k, bound, eps)
    assert np.allclose(out / release.step, np.round(out / release.step))  # integer codes
    sd = math.sqrt(2.0 + 1.0 / 4.0 / release.levels**2) * k * bound / eps / math.sqrt(n)
    gap = out.mean(axis=0) - np.clip(losses, 0.0, bound).mean(axis=0)
    assert np.all(np.abs(gap) < 5 * sd + release.bias_bound())
    assert release.bias_bound() < 1e-6 * bound
    # the noise scale in loss units is k B / eps, the basic-composition Laplace scale
    var = release.noise.variance * release.step**2
    assert var == pytest.approx(2 * (k * bound / eps) ** 2, rel=1e-3)


@pytest.mark.parametrize(("k", "eps"), [(4, 0.5), (4, 1.0), (1, 8.0), (132, 1.0), (5, 2.0)])
def test_certificate_holds_and_is_pure(k: int, eps: float) -> None:
    cert = loss_release_certificate(k, 16.0, eps)
    assert cert.holds and cert.pure and cert.delta == 0.0
    assert cert.epsilon <= eps * (1 + 1e-9) and cert.epsilon >= eps * (1 - 1e-6)
    assert cert.epsilon_claimed == eps


def test_over_claim_is_refused() -> None:
    # halve the noise (double gamma) but keep the claim: the counts show 2 eps
    release = LossRelease.create(4, 1.0, 1.0)
    half = geometric_noise_law(2 * release.gamma, release.levels, release.margin)
    cert = clamped_release_certificate(half, release.levels, release.margin, 4, 1.0)
    assert not cert.holds and not cert.pure
    assert cert.epsilon == pytest.approx(2.0, rel=1e-6)
    # fewer coordinates than released also under-counts the sensitivity: refused as well
    assert not clamped_release_certificate(
        release.noise, release.levels, release.margin, 8, 1.0
    ).holds


def test_bad_input_names_the_argument() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="losses"):
        privatize_losses(np.ones(3), bound=1.0, epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="losses"):
        privatize_losses(np.array([[np.nan]]), bound=1.0, epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="epsilon"):
        privatize_losses(np.ones((2, 2)), bound=1.0, epsilon=0.0, rng=rng)
    with pytest.raises(ValueError, match="levels"):
        privatize_losses(np.ones((2, 2)), bound=1.0, epsilon=1.0, rng=rng, levels=0)
    with pytest.raises(TypeError, match="rng"):
        privatize_losses(np.ones((2, 2)), bound=1.0, epsilon=1.0, rng=0)  # type: ignore[arg-type]
