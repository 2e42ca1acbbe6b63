"""``mechanism="auto"`` for the shrinkage read-out: the candidates ranked by that read-out's error.

The exact ranking (:func:`~ldptree.mechanisms.choose_regression_mechanism` with public labels)
predicts the error of the *ratio* ``s^_j / c^_j`` by the delta method, which assumes the
debiased count ``c^_j`` is close to ``c_j``. At small epsilon it is not (a cell of 1,250 holders
of 20,000 at epsilon 0.25 has a count noise of standard deviation about 4,000), and the
estimators' default read-out is the shrunk ratio ``f^_j = m_j + g(c^_j) (s^_j - m_j c^_j)``,
``g(c) = c / (c^2 + a)`` (``0`` where ``c <= tau n``: the public leaf mean ``m_j``), whose
strength ``a`` comes from each mechanism's variance bound. This module predicts that estimator's
error for a typical cell and ranks the candidates by it.

Model (public quantities only). A cell holds ``c = n / L`` of the ``n`` holders; its true mean
``f`` differs from the public leaf mean by ``delta = f - m`` with ``E delta^2 = tau2``, the public
means' sampling variance ``mean_j(S_j^2 / k_j)`` (``S_j^2`` the public labels' variance in cell
``j``, ``k_j >= 2`` its public rows). The count is ``c^ ~ N(c, n v_c)`` and the centred sum
``D = s^ - m c^`` has mean ``c delta`` and variance ``n v_D``, with ``v_c`` and ``v_D`` the exact
per-holder variances averaged over the cell's holders and the others (``v_D = E / L^2``, ``E``
the exact ranking's prediction); ``D`` and ``c^`` are taken as independent. Then

    E[(f^ - f)^2 | c^] = g(c^)^2 n v_D + tau2 (g(c^) c - 1)^2,

averaged over ``c^`` at ``K = 256`` equal-probability normal quantiles. As ``c^ -> c`` and
``a -> 0`` it is the delta method's ``n v_D / c^2``; where the count noise swamps ``c`` it tends
to ``tau2`` (the public mean) for a large ``a``. The paper's randomized response + Laplace at
``budget_split = 1/2`` joins the candidates, so the choice can keep the papers' mechanism where
its stronger shrinkage predicts less error. ``predicted`` is ``n`` times that error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np

from ldptree.mechanisms._choose import (
    MechanismChoice,
    exact_error,
    public_residuals,
    rebuilt_candidate,
)

__all__ = ["public_mean_variance", "shrunk_choice"]

_QUANTILES = 256


@lru_cache(maxsize=1)
def _normal_quantiles() -> np.ndarray:
    dist = NormalDist()
    return np.array([dist.inv_cdf((k + 0.5) / _QUANTILES) for k in range(_QUANTILES)])


def public_mean_variance(labels: Any, cells: Any, n_cells: int) -> float | None:
    """``tau2 = mean_j S_j^2 / k_j`` over cells with ``k_j >= 2`` public rows (module docstring);
    ``None`` where no cell has two."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    leaf = np.asarray(cells).reshape(-1)
    k = np.bincount(leaf, minlength=n_cells).astype(np.float64)
    s1 = np.bincount(leaf, y, n_cells)
    s2 = np.bincount(leaf, y * y, n_cells)
    ok = k >= 2
    if not ok.any():
        return None
    var = (s2[ok] - s1[ok] ** 2 / k[ok]) / (k[ok] - 1.0)
    return float(np.mean(np.maximum(var, 0.0) / k[ok]))


def shrunk_error(
    n: int, n_cells: int, v_count: float, v_sum: float, strength: float, floor: float, tau2: float
) -> float:
    """``n E[(f^ - f)^2]`` of the module docstring: ``v_count`` / ``v_sum`` per-holder variances
    of ``c^`` and ``D``, ``strength`` ``a``, ``floor`` the fallback threshold ``tau n``."""
    c = n / n_cells
    counts = c + math.sqrt(n * max(v_count, 0.0)) * _normal_quantiles()
    if math.isinf(strength):
        g = np.zeros_like(counts)
    else:
        g = np.where(counts > floor, counts / (counts * counts + strength), 0.0)
    error = g * g * n * v_sum + tau2 * (g * c - 1.0) ** 2
    return float(n * np.mean(error))


def shrunk_choice(
    choice: MechanismChoice,
    *,
    n_cells: int,
    epsilon: float,
    bound: tuple[float, float],
    n: int,
    public_labels: Any,
    public_cells: Any,
    strength: Callable[[Any], float],
    floor: Callable[[Any], float],
) -> MechanismChoice:
    """``choice``'s candidates (and the paper's RR + Laplace at ``1/2``) ranked by the shrunk
    read-out's predicted error (module docstring), for ``n`` holders; ``choice`` itself where
    no public cell holds two labels. ``strength(mechanism)`` is the read-out's ``a`` and
    ``floor(mechanism)`` its ``tau n``."""
    residuals, centred, centre = public_residuals(public_labels, public_cells, n_cells, bound)
    tau2 = public_mean_variance(np.clip(public_labels, *bound), public_cells, n_cells)
    if tau2 is None:
        return choice
    candidates = [(name, rho) for name, rho, _ in choice.candidates]
    if ("rr-laplace", 0.5) not in candidates:
        candidates.append(("rr-laplace", 0.5))
    shifted = (bound[0] - centre, bound[1] - centre)
    share = 1.0 / n_cells
    rows: list[tuple[str, float | None, float]] = []
    for name, rho in candidates:
        probe = rebuilt_candidate(name, rho, epsilon, shifted)
        real = rebuilt_candidate(name, rho, epsilon, bound)
        counts = probe.exact_cell_variance(n_cells, label_mean=0.0, label_second_moment=0.0)
        v_count = share * counts.count_inside + (1.0 - share) * counts.count_outside
        v_sum = exact_error(probe, n_cells, residuals, centred) / n_cells**2
        error = shrunk_error(n, n_cells, v_count, v_sum, strength(real), floor(real), tau2)
        rows.append((name, rho, error))
    order = {key: i for i, key in enumerate(candidates)}
    ranked = tuple(sorted(rows, key=lambda r: (r[2], order[(r[0], r[1])])))
    name, rho, predicted = ranked[0]
    mechanism = rebuilt_candidate(name, rho, epsilon, bound)
    return MechanismChoice(name, mechanism, rho, predicted, ranked, "exact-shrink")
