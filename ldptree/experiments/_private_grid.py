"""Private tuning's defaults: how many candidates the data can afford, and a warning when not.

Private validation (:mod:`._tuning`) splits ``n`` training holders into ``n_v = floor(f n)``
validation holders and ``k`` disjoint training groups of ``n_g = (n - n_v) / k``. Each validation
holder releases ``k`` losses in ``[0, B]`` with Laplace noise of scale ``k B / eps`` per loss, so
the difference of two candidates' mean validation losses carries noise of standard deviation

    sigma_k = 2 k B / (eps sqrt(n_v))            (two independent means, each sqrt(2) k B / ...).

**The default LPDT grid** (used by ``tuning="private"`` when no grid is named for an LPDT
method; rule fixed before any test result was looked at):

1. ``k`` is the largest number of candidates in ``{1, 2, 3}`` with ``sigma_k <= B / 200``: the
   grid only offers a choice when the validation can resolve loss differences of half a percent
   of ``B`` (about a tenth of a typical label variance, ``B / 20`` to ``B / 50`` here). At the
   sizes of the LPDT paper's datasets this gives ``k = 1``.
2. The candidates are depths around the parameter-free depth ``s_auto`` of the LPDT paper's
   bias-variance balance (:mod:`ldptree.estimators._auto_depth`) for the holders one candidate
   trains on (``n_g``, or all ``n`` when ``k = 1``): ``{s_auto}``, ``{s_auto, s_auto + 1}`` or
   ``{s_auto - 1, s_auto, s_auto + 1}`` (shifted up to keep depths >= 1), read out with the
   guarded default ``readout="auto"`` and the estimator's default ``mechanism="auto"`` (chosen
   from public data by the read-out's predicted error; the papers' mechanism is one of its
   candidates). The depth rule uses the papers' mechanism at ``rho = 0.5`` as its variance
   reference.
3. A one-point grid needs no validation: every training holder trains the single candidate
   (:class:`._tuning.PrivateTuning` skips the validation release when ``k = 1``).

**The warning**: any grid with ``k >= 2`` whose ``sigma_k > B / 20`` (a selection that cannot
resolve differences of 5 % of ``B``: close to random), or whose groups are smaller than
``16 v_c``, with ``v_c`` the count variance of the papers' mechanism's randomized response at
``rho = 0.5`` (below it, even a depth-1 tree's half of a group, ``n_g / 2``, is within two noise
standard deviations ``2 sqrt(n_g v_c)`` of zero), raises a ``UserWarning`` naming the sizes.
"""

from __future__ import annotations

import math

from ldptree.estimators._auto_depth import auto_depth
from ldptree.estimators._readout import shrinkage_strength
from ldptree.experiments._grids import Grid
from ldptree.mechanisms import RRLaplaceMechanism

#: The default grid offers ``k`` candidates only if ``sigma_k <= B * DEFAULT_RESOLUTION``.
DEFAULT_RESOLUTION = 1.0 / 200.0
#: A grid is warned about if ``sigma_k > B * WARN_RESOLUTION``.
WARN_RESOLUTION = 1.0 / 20.0
#: Largest number of candidates of the default grid.
MAX_CANDIDATES = 3
#: The LPDT methods' default (oracle) grids that private tuning replaces by the rule above.
LPDT_ORACLE_GRIDS = ("lpdt-real", "lpdt-taxi")


def selection_noise(k: int, n_validation: int, epsilon: float) -> float:
    """``sigma_k / B = 2 k / (eps sqrt(n_v))`` (module docstring); ``inf`` without validation."""
    if n_validation < 1:
        return math.inf
    return 2.0 * k / (epsilon * math.sqrt(n_validation))


def affordable_candidates(n_validation: int, epsilon: float) -> int:
    """The default ``k``: the largest ``k <= MAX_CANDIDATES`` with ``sigma_k <= B / 200``."""
    fits = [
        k
        for k in range(2, MAX_CANDIDATES + 1)
        if selection_noise(k, n_validation, epsilon) <= DEFAULT_RESOLUTION
    ]
    return max(fits, default=1)


_UNIT = (-1.0, 1.0)


def _papers_mechanism(epsilon: float) -> RRLaplaceMechanism:
    return RRLaplaceMechanism(epsilon=epsilon, label_bound=_UNIT, budget_split=0.5)


def _relative_variance(epsilon: float) -> float:
    """``V / h^2`` of the papers' mechanism at ``rho = 0.5`` (scale free: any bound gives it)."""
    strength = shrinkage_strength(_papers_mechanism(epsilon), 2, 1, _UNIT)
    assert strength is not None  # the papers' mechanism says its variance
    return strength


def lpdt_private_grid(
    n_private: int, n_features: int, epsilon: float, validation_fraction: float
) -> Grid:
    """The default private LPDT grid (module docstring, steps 1-2)."""
    n_v = math.floor(validation_fraction * n_private)
    k = affordable_candidates(n_v, epsilon)
    n_group = n_private if k == 1 else (n_private - n_v) // k
    s = auto_depth(max(n_group, 1), n_features, _relative_variance(epsilon))
    low = max(1, s - 1) if k == MAX_CANDIDATES else s
    depths = tuple(range(low, low + k))
    return Grid(
        {"max_depth": depths, "readout": ("auto",)},
        name="lpdt-private-auto",
        fixed={"mechanism": "auto"},
    )


def grid_warning(
    k: int, n_validation: int, n_group: int, epsilon: float, grid_name: str
) -> str | None:
    """The warning's text when a ``k``-point grid is too fine for its holders, else ``None``."""
    if k < 2:
        return None
    noise = selection_noise(k, n_validation, epsilon)
    minimum = math.ceil(16.0 * _papers_mechanism(epsilon).count_variance)
    problems = []
    if noise > WARN_RESOLUTION:
        problems.append(
            f"{n_validation} validation holders leave noise of sd {noise:.3g} B on the "
            f"difference of two candidates' mean losses (more than B / 20: selection is close "
            f"to random)"
        )
    if n_group < minimum:
        problems.append(
            f"each candidate trains on {n_group} holders, fewer than 16 v_c = {minimum} (the "
            f"noisy count of half of them is within two noise sd of zero)"
        )
    if not problems:
        return None
    return (
        f"private tuning over the {k}-point grid {grid_name!r} at epsilon={epsilon:g}: "
        + "; ".join(problems)
        + ". Use fewer candidates (the default grid picks its size from n and epsilon)."
    )
