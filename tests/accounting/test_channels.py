"""Channels: exact divergences, normalisation checks, the grid-Laplace law."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree.accounting import FiniteChannel, LaplaceChannel, binary_channel, grid_laplace_channel
from ldptree.accounting._channels import grid_laplace_log_probs
from ldptree.mechanisms import RRLaplaceMechanism, RRLaplaceReport


def test_binary_channel_divergence_is_the_log_odds() -> None:
    q = 0.2
    div = binary_channel(q).divergences([0, 1])
    expected = math.log((1 - q) / q)
    assert div.value[0, 0] == 0.0 and div.value[1, 1] == 0.0
    assert div.value[0, 1] == pytest.approx(expected, rel=1e-15)
    assert div.value[1, 0] == pytest.approx(expected, rel=1e-15)
    assert div.witness[0][1] == 0 and div.witness[1][0] == 1
    assert div.exact


def test_binary_channel_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="flip_prob"):
        binary_channel(0.0)
    with pytest.raises(ValueError, match="0 or 1"):
        binary_channel(0.3).divergences([2])


def test_finite_channel_impossible_output_gives_infinite_divergence() -> None:
    table = {
        0: [math.log(0.5), math.log(0.5), -math.inf],
        1: [math.log(0.5), math.log(0.25), math.log(0.25)],
    }
    channel = FiniteChannel(outputs=("a", "b", "c"), log_probs=lambda a: table[a])
    div = channel.divergences([0, 1])
    assert div.value[1, 0] == math.inf and div.witness[1][0] == "c"
    assert div.value[0, 1] == pytest.approx(math.log(2.0))
    assert div.witness[0][1] == "b"


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ([math.log(0.5), math.log(0.4)], "not normalised"),
        ([math.nan, 0.0], "NaN"),
        ([0.0], "shape"),
    ],
)
def test_finite_channel_validates_declared_log_probs(row: list[float], match: str) -> None:
    channel = FiniteChannel(outputs=(0, 1), log_probs=lambda a: row)
    with pytest.raises(ValueError, match=match):
        channel.divergences([0])


@pytest.mark.parametrize("beta", [16.0, 23.7, 31.99, 4000.0])
@pytest.mark.parametrize("mu", [0.0, 0.3, -5.5, 17.25])
def test_grid_laplace_law_is_normalised(beta: float, mu: float) -> None:
    limit = int(abs(mu) + 80 * beta)
    total = np.exp(grid_laplace_log_probs(beta, limit, mu)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)


def test_grid_laplace_divergence_is_distance_over_scale() -> None:
    beta, limit = 19.5, 3000
    mus = [-40.0, -3.3, 0.0, 0.5, 40.0]
    div = grid_laplace_channel(beta, limit).divergences(mus)
    expected = np.abs(np.subtract.outer(mus, mus)) / beta
    np.testing.assert_allclose(div.value, expected, rtol=1e-9, atol=1e-12)


def test_the_certified_label_channel_is_the_sampled_noise() -> None:
    """The accountant's channel for the built-in's label reads the very counts the sampler uses,
    and the mechanism's likelihood of a report agrees with it at every level."""
    mech = RRLaplaceMechanism(epsilon=1.3, label_bound=(-2.0, 5.0), budget_split=0.4)
    channel = mech.report_law(1).blocks[1].channel
    noise = mech.label_noise
    labels = mech.labels()
    for level in (0, labels.levels // 2, labels.levels):
        np.testing.assert_array_equal(np.asarray(channel.log_probs(level)), noise.log_probs(level))
        for code in (-noise.margin, -7, 0, 3, noise.span + noise.margin):
            report = RRLaplaceReport(bits=np.array([True]), code=np.int32(code))
            expected = math.log(mech.keep_prob) + noise.log_probs(level)[code + noise.margin]
            assert mech.log_prob(report, 0, labels.value(level), 1) == pytest.approx(
                expected, rel=1e-12
            )


def test_laplace_channel_closed_form() -> None:
    channel = LaplaceChannel(scale=2.0)
    div = channel.divergences([0.0, 1.0, -3.0])
    assert div.value[1, 2] == pytest.approx(2.0)
    # the witness attains the ratio
    s = div.witness[1][2]
    ratio = channel.log_prob(s, 1.0) - channel.log_prob(s, -3.0)
    assert ratio == pytest.approx(div.value[1, 2])
    with pytest.raises(ValueError, match="scale"):
        LaplaceChannel(scale=0.0)
