"""The validation holders' release in private tuning (LPDT App. D.2, spec §7.1 [R]).

Each of ``n_v`` validation holders (disjoint from the training holders) receives the ``k``
candidate models, computes its own losses ``l_i = (l_i1, ..., l_ik)``, clips them to ``[0, B]``
and releases

    l~_ij = clip(l_ij, 0, B) + Lap(k B / eps),    j = 1..k.

Privacy: changing the holder's record moves each clipped coordinate by at most ``B``, so the
L1 sensitivity of the k-vector is ``k B`` and Laplace noise of scale ``k B / eps`` makes the whole
release ``eps``-LDP (basic composition of ``k`` releases at ``eps / k``). For squared errors with
``|Y| <= M``, ``B = 4 M^2`` and the scale is ``4 M^2 k / eps``. The curator selects
``argmin_j (1/n_v) sum_i l~_ij``, which is post-processing.

The paper states the noise as ``M^2 sqrt(k) xi / eps`` "by advanced composition"; that constant
is neither pure ``eps``-LDP nor matched to the ``[0, 4M^2]`` range, so it is reported
(:func:`paper_noise_scale`) but not used.
"""

from __future__ import annotations

import math

import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_positive


def noise_scale(k: int, bound: float, epsilon: float) -> float:
    """Laplace scale ``k B / eps`` of the exact pure-``eps`` release."""
    return k * check_positive(bound, "bound") / check_positive(epsilon, "epsilon")


def paper_noise_scale(k: int, bound: float, epsilon: float) -> float:
    """The paper's ``M^2 sqrt(k) / eps`` with ``M^2 = B / 4`` (reported only)."""
    return (bound / 4.0) * math.sqrt(k) / check_positive(epsilon, "epsilon")


def privatize_losses(
    losses: FloatArray, *, bound: float, epsilon: float, rng: np.random.Generator
) -> FloatArray:
    """Each row is one validation holder's ``k`` losses; returns their ``eps``-LDP release."""
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[1] == 0:
        raise ValueError(f"losses must be float[n_v, k] with k >= 1, got shape {losses.shape}")
    if not np.all(np.isfinite(losses)):
        raise ValueError("losses contains NaN or infinite values")
    scale = noise_scale(losses.shape[1], bound, epsilon)
    clipped = np.clip(losses, 0.0, bound)
    released: FloatArray = clipped + rng.laplace(0.0, scale, size=losses.shape)
    return released
