"""The budget split between cell and label, computed from public quantities (not tuned).

A mechanism that releases the cell with budget ``rho eps`` and the label with ``(1 - rho) eps``
(``budget_split = rho``: :class:`~ldptree.mechanisms.RRLaplaceMechanism`,
:class:`~ldptree.mechanisms.DuchiMechanism`, :class:`~ldptree.mechanisms.PiecewiseMechanism`)
trades the error of the debiased count ``c^_j`` against that of the label sum ``s^_j``. LPDT
predicts a cell's label by the mean ``m^_j = s^_j / c^_j``, so the split should minimise that
ratio's error.

The proxy. By the delta method around the true ``(s_j, c_j)`` with cell mean ``mu_j``,
``Var(m^_j) ~ Var(s^_j - mu_j c^_j) / c_j^2``. By Cauchy-Schwarz,
``Var(s^_j - mu_j c^_j) <= (sd(s^_j) + |mu_j| sd(c^_j))^2``, and with ``n`` holders the
mechanism's per-holder bounds (:meth:`cell_variance`: ``V_c`` for the count, ``V_s`` for the
label sum, averaged between a cell's own holders and the others with
:meth:`~ldptree.mechanisms.CellVariance.mixed` at the public guess that a cell holds a share
``1 / L`` of them, ``L = n_cells``) give ``sd(c^_j) <= sqrt(n V_c)``, ``sd(s^_j) <= sqrt(n V_s)``;
``|mu_j| <= m``, the bound's largest magnitude ``max(|lo|, |hi|)``. With ``c_j ~ n / L``,

    Var(m^_j) <~ E(rho) / n,      E(rho) = L^2 (sqrt(V_s(rho)) + m sqrt(V_c(rho)))^2,

an upper bound (up to the delta method) that uses only ``n_cells``, ``epsilon`` and the declared
label bound, so computing it costs no privacy.

Centring. For the mechanisms here a label enters only through its position in the bound, so
shifting the bound and every label by ``d`` shifts every released label by ``d`` and leaves
``m^_j - mu_j`` unchanged; the proxy is therefore evaluated with the bound centred at zero
(``[-R/2, R/2]``, ``m = R/2``, ``R = hi - lo``), where the Cauchy-Schwarz step loses least
(``shift_invariant=False`` evaluates the bound as given, for a family without that property).
The chosen split then depends on ``epsilon`` alone for these mechanisms. (Dropping the
covariance instead would give ``V_s + m^2 V_c``, at most a factor 2 smaller; the bound is kept so
that the prediction is conservative.)

:func:`optimal_split` minimises ``E`` over a grid of splits, refines around the best point, and
always evaluates ``rho = 1/2`` too, so the split it returns never predicts a larger error than the
default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from ldptree._validation import check_int, check_open_unit, to_epsilon, to_label_bound
from ldptree.mechanisms._variance import SupportsVariance

__all__ = ["DEFAULT_GRID", "SplitChoice", "optimal_split", "predicted_error"]

#: Splits evaluated first: ``0.02, 0.04, ..., 0.98``; the best is refined to ``0.001``.
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.02 * k, 2) for k in range(1, 50))
_REFINE = 20


@attrs.frozen
class SplitChoice:
    """Result of :func:`optimal_split`.

    ``budget_split`` the chosen ``rho``; ``mechanism`` the factory's mechanism at that split;
    ``predicted`` ``E(rho)`` and ``predicted_half`` ``E(1/2)`` (module docstring: ``n`` times a
    bound on the variance of a cell mean; divide by the number of holders); ``evaluated`` every
    ``(rho, E(rho))`` computed, sorted by ``rho``.
    """

    budget_split: float
    mechanism: Any
    predicted: float
    predicted_half: float
    evaluated: tuple[tuple[float, float], ...]


def predicted_error(mechanism: Any, n_cells: int, label_bound: Any) -> float:
    """``E = L^2 (sqrt(V_s) + m sqrt(V_c))^2`` for a mechanism implementing ``cell_variance``
    (module docstring): ``n`` times a bound on the variance of one cell's debiased mean."""
    if not isinstance(mechanism, SupportsVariance):
        raise TypeError(
            f"mechanism must implement cell_variance(n_cells), got {type(mechanism).__name__}"
        )
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    lo, hi = to_label_bound(label_bound)
    big = max(abs(lo), abs(hi))
    return float(n_cells**2 * mechanism.cell_variance(n_cells).mean_error(big, 1.0 / n_cells))


def optimal_split(
    factory: Callable[..., Any],
    n_cells: int,
    epsilon: float,
    label_bound: Any,
    *,
    grid: Sequence[float] = DEFAULT_GRID,
    shift_invariant: bool = True,
    error: Callable[[Any], float] | None = None,
) -> SplitChoice:
    """The ``budget_split`` minimising the predicted error of a cell mean (module docstring).

    ``factory(epsilon=..., label_bound=..., budget_split=rho)`` builds the mechanism family (a
    mechanism class such as :class:`~ldptree.mechanisms.RRLaplaceMechanism` is one); its
    mechanisms must implement ``cell_variance``. Every ``rho`` in ``grid`` (values in
    ``(0, 1)``) and ``1/2`` are evaluated, then 20 points on each side of the best grid point,
    down to a tenth of the grid's spacing there. A split the factory refuses (a budget too small
    to realise) is skipped. With ``shift_invariant`` (default) the proxy is evaluated at the
    centred bound (module docstring); the returned mechanism always has ``label_bound``.
    ``error(mechanism)`` replaces the proxy (the mechanism built at the proxy bound), e.g. the
    exact error at public-data moments of :func:`~ldptree.mechanisms.choose_regression_mechanism`
    (pass ``shift_invariant=False`` with the bound it expects). Uses public quantities only: no
    privacy is spent.
    """
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    eps = to_epsilon(epsilon)
    bound = to_label_bound(label_bound)
    if not isinstance(shift_invariant, bool):
        raise TypeError(f"shift_invariant must be a bool, got {type(shift_invariant).__name__}")
    half_range = (bound[1] - bound[0]) / 2.0
    proxy_bound = (-half_range, half_range) if shift_invariant else bound
    points = sorted({check_open_unit(v, "grid values") for v in grid} | {0.5})
    if len(points) < 2:
        raise ValueError("grid must hold at least one split besides 0.5")
    values: dict[float, float] = {}

    def evaluate(rho: float) -> float:
        if rho not in values:
            try:
                mech = factory(epsilon=eps, label_bound=proxy_bound, budget_split=rho)
            except ValueError:
                values[rho] = math.inf
                return math.inf
            values[rho] = (
                predicted_error(mech, n_cells, proxy_bound) if error is None else error(mech)
            )
        return values[rho]

    for rho in points:
        evaluate(rho)
    best = min(points, key=lambda r: (values[r], abs(r - 0.5)))
    i = points.index(best)
    left = points[i - 1] if i > 0 else best / 2.0
    right = points[i + 1] if i + 1 < len(points) else (best + 1.0) / 2.0
    for rho in np.concatenate(
        [np.linspace(left, best, _REFINE + 1)[1:-1], np.linspace(best, right, _REFINE + 1)[1:-1]]
    ):
        evaluate(float(rho))
    chosen = min(values, key=lambda r: (values[r], abs(r - 0.5)))
    if not math.isfinite(values[chosen]):
        raise ValueError(f"the factory realised no split of epsilon={eps} in the grid")
    return SplitChoice(
        budget_split=chosen,
        mechanism=factory(epsilon=eps, label_bound=bound, budget_split=chosen),
        predicted=values[chosen],
        predicted_half=values[0.5],
        evaluated=tuple(sorted(values.items())),
    )
