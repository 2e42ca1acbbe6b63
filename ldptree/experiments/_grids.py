"""Parameter grids of the papers' experiments as named presets.

A :class:`Grid` is an ordered product of axes ``((parameter, values), ...)``; :meth:`Grid.points`
enumerates it with the *last* axis varying fastest, so ``grid_index`` is stable. Parameter names
are the estimators' constructor keywords (``max_depth``, ``min_samples_leaf``,
``min_samples_split``, ``budget_split``, ``lam``). Presets whose grid depends on the number of
private training rows take ``n_private``.

Presets (source in brackets: [P] the paper, [C] the authors' code):

A grid may also *fix* parameters at every point without tuning them (``Grid(axes,
fixed={...})``): :meth:`Grid.configurations` yields each point with them, and they enter the
rows' parameters and the grid's description like one-value axes. The LPDT presets that reproduce
the papers' numbers (``lpdt-real``, ``lpdt-taxi``, ``lpdt-synthetic``, ``lpdt-depth``,
``lpdt-leaf``, ``lpdt-private``) fix the papers' mechanism and the reference's unguarded ratio
read-out without clipping into the label bound (``mechanism="paper"``, ``readout="ratio"``,
``clip_predictions=False``); a grid of your own starts from the estimator's defaults (the guarded
``readout="auto"``, clipped predictions) and changes only what it names.

* ``lpdt-real`` [P D.1]: ``n_l in {2,5,10,20,40,60,80,100,120,140,160}``, ``s in {1,2,3,4}``,
  ``rho in {0.3,0.5,0.7}`` (132 points); ``lpdt-taxi``: the same with ``s in {4,6,8,10}``.
* ``lpdt-synthetic`` [C simulation.py]; ``lpdt-depth`` and ``lpdt-leaf`` [P §4.1, Figure 2].
* ``lpdt-private``: ours, a small grid for private tuning (its noise grows with the grid size
  ``k``, and each candidate is trained on ``1/k`` of the holders): depths 1-3 with
  ``n_l = 40`` public points per leaf, so the number of cells stays proportional to the public,
  hence the private, sample size, and the read-out guard ``min_private_ratio="auto"`` (public
  leaf mean where a debiased count is within two noise sd of zero); ``lpdt-quick``: two points
  for smoke tests.
* ``lpct-m-sim``, ``lpct-pq-sim``, ``lpct-r-sim``, ``lpct-lambda`` [C]; ``lpct-real`` (needs
  ``n_private``) and ``lpct-prune-real`` [C realdata]; ``lpct-real-p`` (``lpct-real`` without
  ``lam``: LPDT for classification, lambda = 0); ``lpct-quick``/``lpct-p-quick`` (smoke tests) and
  ``lpct-private``/``lpct-p-private`` (ours, 6/3 points for private tuning); ``lpct-table`` /
  ``lpct-table-p`` (ours: ``lpct-real`` coarsened, leaf sizes ``4^i`` and lambda in
  ``{0.1, 1, 10, 100, 1000}``; ``reproduce lpct-table``'s default, for run time).

Baseline grids, with the parameter names their estimators define:

* ``phist-real`` [P]: ``num_cell in {4, 3, 2, 1}`` (``h = 1 / num_cell``), ``truncation in
  {0.01, 0.05}``; with ``d > 21`` only ``num_cell = 1`` (the paper's "h = 1 when d > 21"; a
  grid of ``2^d`` or more cells would not fit). The rule needs the dimension, which the runner
  passes as ``n_features``; without it the preset lists the full grid. Used by PHIST and APHIST.
* ``deconv-real`` [P]: ``bandwidth in {0.02, 0.05, 0.1, 0.2, 0.5, 1, 5}``.
* ``dt-real`` [P]: ``max_depth in {1, 2, 3, 4}``; ``ct-real`` [C]: ``max_depth in {1..8, 10, 12,
  14, 16}``.
* ``phist-cls`` [C] (``num_cell`` 1-6), ``pglm`` (the one empty point),
``psgd`` (``lr in {1e-5, 1e-3, 1e-1, 1}``) [C].
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import attrs


def _check_axes(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    names = [name for name, _ in value]
    if len(set(names)) != len(names):
        raise ValueError(f"{attribute.name} repeats a parameter: {names}")
    for name, values in value:
        if not isinstance(name, str) or not name:
            raise TypeError(f"{attribute.name}: parameter names must be non-empty strings")
        if len(values) == 0:
            raise ValueError(f"{attribute.name}: parameter {name!r} has no values")


def _to_axes(value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    items = value.items() if isinstance(value, dict) else value
    return tuple((str(name), tuple(values)) for name, values in items)


def _to_fixed(value: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(dict(value or {}).items()))


def _check_fixed(grid: Grid, attribute: attrs.Attribute[Any], value: Any) -> None:
    both = sorted({name for name, _ in value} & {name for name, _ in grid.axes})
    if both:
        raise ValueError(f"{attribute.name} repeats the parameters {both} of the grid's axes")


@attrs.frozen
class Grid:
    """An ordered parameter grid (module docstring); ``Grid({})`` is the one empty point.
    ``fixed``: parameters every point sets without tuning them."""

    axes: tuple[tuple[str, tuple[Any, ...]], ...] = attrs.field(
        converter=_to_axes, validator=_check_axes
    )
    name: str = "custom"
    fixed: tuple[tuple[str, Any], ...] = attrs.field(
        default=(), converter=_to_fixed, validator=_check_fixed
    )

    @property
    def size(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    def points(self) -> Iterator[dict[str, Any]]:
        """The tuned axes' combinations, the last axis varying fastest."""
        names = [name for name, _ in self.axes]
        for combo in itertools.product(*(values for _, values in self.axes)):
            yield dict(zip(names, combo, strict=True))

    def configurations(self) -> Iterator[dict[str, Any]]:
        """:meth:`points` with the ``fixed`` parameters: what each fit is given."""
        for point in self.points():
            yield {**dict(self.fixed), **point}

    def describe(self) -> dict[str, list[Any]]:
        described = {name: list(values) for name, values in self.axes}
        described.update({name: [value] for name, value in self.fixed})
        return described


_LPDT_LEAVES = (2, 5, 10, 20, 40, 60, 80, 100, 120, 140, 160)
_RHO = (0.3, 0.5, 0.7)
_LPCT_LAMBDA = (0.01, 0.1, 0.5, 1, 2, 5, 10, 50, 100, 500, 750, 1000, 1250, 1500, 2000, 4000, 8000)


def _lpct_real(n_private: int) -> Grid:
    leaves = tuple(2**i for i in range(max(1, int(math.log2(n_private) - 1))))
    return Grid(
        {
            "min_samples_split": (1,),
            "min_samples_leaf": leaves,
            "max_depth": (*range(1, 9), 10, 12, 14, 16),
            "lam": (0.01, 0.1, 0.5, 1, 2, 5, 10, 50, 100, 200, 300, 400, 500, 750, 1000),
        },
        name="lpct-real",
    )


#: The papers' LPDT settings, fixed by the presets that reproduce their numbers (docstring).
PAPER_LPDT: dict[str, Any] = {"mechanism": "paper", "readout": "ratio", "clip_predictions": False}

_FIXED: dict[str, dict[str, tuple[Any, ...]]] = {
    "lpdt-real": {
        "max_depth": (1, 2, 3, 4),
        "min_samples_leaf": _LPDT_LEAVES,
        "budget_split": _RHO,
    },
    "lpdt-taxi": {
        "max_depth": (4, 6, 8, 10),
        "min_samples_leaf": _LPDT_LEAVES,
        "budget_split": _RHO,
    },
    "lpdt-synthetic": {
        "min_samples_split": (2,),
        "max_depth": (1, 2, 3, 4, 5, 6),
        "min_samples_leaf": (10, 20, 40, 60, 80, 100, 500, 1000, 2000),
        "budget_split": _RHO,
    },
    "lpdt-depth": {"max_depth": (2, 3, 4, 5, 6), "min_samples_leaf": (10,)},
    "lpdt-leaf": {"max_depth": (4,), "min_samples_leaf": tuple(range(15, 136, 10))},
    "lpdt-private": {
        "max_depth": (1, 2, 3),
        "min_samples_leaf": (40,),
        "budget_split": (0.5,),
        "min_private_ratio": ("auto",),
    },
    "lpdt-quick": {"max_depth": (2, 3), "min_samples_leaf": (10,), "budget_split": (0.5,)},
    "lpct-m-sim": {
        "min_samples_split": (1,),
        "min_samples_leaf": (1, 5, 10, 50, 100),
        "max_depth": tuple(range(1, 9)),
        "lam": _LPCT_LAMBDA,
    },
    "lpct-pq-sim": {"min_samples_leaf": (1, 5, 10, 50, 100), "max_depth": tuple(range(1, 7))},
    "lpct-r-sim": {
        "min_samples_leaf": (1,),
        "max_depth": tuple(range(1, 9)),
        "lam": _LPCT_LAMBDA[1:-2],
    },
    "lpct-lambda": {
        "min_samples_leaf": (1,),
        "max_depth": tuple(range(1, 9)),
        "lam": (0.1, 0.5, 1, 2, 5, 10, 50, 100, 250, 500, 750, 1000, 1250, 1500, 2000),
    },
    "lpct-prune-real": {"min_samples_leaf": (1, 5)},
    # forests (ldptree.ensembles): the depth of their trees; every other parameter the tree's
    "lpdt-forest": {"max_depth": (2, 3, 4, 5)},
    "lpct-forest": {"max_depth": (2, 3, 4, 5)},
    # classification baselines [C]: PHIST num_cell 1..6 (points with num_cell^d > 2^30
    # or d >= 32 are refused by the phist-c estimator), PGLM no grid, PSGD learning rates.
    "phist-cls": {"num_cell": (1, 2, 3, 4, 5, 6)},
    "pglm": {},
    "psgd": {"lr": (1e-5, 1e-3, 1e-1, 1.0)},
}
_DEPENDENT: dict[str, Callable[[int], Grid]] = {"lpct-real": _lpct_real}
#: Presets that fix parameters at every point (module docstring).
_SETTINGS: dict[str, dict[str, Any]] = {
    name: PAPER_LPDT
    for name in (
        "lpdt-real",
        "lpdt-taxi",
        "lpdt-synthetic",
        "lpdt-depth",
        "lpdt-leaf",
        "lpdt-private",
    )
}


# -- baselines (issue 5): PHIST/APHIST, DECONV, DT, CT ------------------------------------------
#: PHIST/APHIST use a single cell when d exceeds this (the authors' rule "h = 1 if d > 21").
PHIST_MAX_SPLIT_DIM = 21


def _phist_real(n_features: int | None) -> Grid:
    big = n_features is not None and n_features > PHIST_MAX_SPLIT_DIM
    return Grid(
        {"num_cell": (1,) if big else (4, 3, 2, 1), "truncation": (0.01, 0.05)},
        name="phist-real",
    )


_FIXED.update(
    {
        "deconv-real": {"bandwidth": (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0)},
        "dt-real": {"max_depth": (1, 2, 3, 4)},
        "ct-real": {"max_depth": (*range(1, 9), 10, 12, 14, 16)},
    }
)
#: Presets whose grid depends on the dimension ``d`` (``None``: unknown, the full grid).
_BY_DIMENSION: dict[str, Callable[[int | None], Grid]] = {"phist-real": _phist_real}


# --- LPCT Table 2 presets (reproduce lpct-table) ----------------------------------------------
def _lpct_real_p(n_private: int) -> Grid:
    """LPDT-for-classification (lambda = 0): the LPCT-M real grid without its lambda axis."""
    axes = tuple((name, values) for name, values in _lpct_real(n_private).axes if name != "lam")
    return Grid(axes, name="lpct-real-p")


def _lpct_table(n_private: int, *, lam: bool = True) -> Grid:
    """``lpct-real`` coarsened ~6x for our reproduction (same ranges): every other leaf size
    ``4^i`` and lambda on decades. The paper's 1800-point grid costs ~4 min per dataset and
    repetition on 2 cores; the oracle's optimism also grows with the grid size."""
    leaves = tuple(4**i for i in range(max(1, int(math.log2(n_private) - 1) // 2)))
    axes: dict[str, tuple[Any, ...]] = {
        "min_samples_split": (1,),
        "min_samples_leaf": leaves,
        "max_depth": (*range(1, 9), 10, 12, 14, 16),
    }
    if lam:
        axes["lam"] = (0.1, 1, 10, 100, 1000)
    return Grid(axes, name="lpct-table" if lam else "lpct-table-p")


_DEPENDENT["lpct-real-p"] = _lpct_real_p
_DEPENDENT["lpct-table"] = _lpct_table
_DEPENDENT["lpct-table-p"] = functools.partial(_lpct_table, lam=False)
_FIXED.update(
    {
        # smoke tests: 4 (LPCT) / 2 (lambda = 0) points
        "lpct-quick": {
            "min_samples_split": (1,),
            "min_samples_leaf": (1,),
            "max_depth": (2, 4),
            "lam": (1, 100),
        },
        "lpct-p-quick": {"min_samples_split": (1,), "min_samples_leaf": (1,), "max_depth": (2, 4)},
        # ours, for private tuning: few points (the validation noise grows with k, and with
        # disjoint training groups each candidate sees 1/k of the holders)
        "lpct-private": {
            "min_samples_split": (1,),
            "min_samples_leaf": (4,),
            "max_depth": (2, 4, 6),
            "lam": (1, 100),
        },
        "lpct-p-private": {
            "min_samples_split": (1,),
            "min_samples_leaf": (4,),
            "max_depth": (2, 4, 6),
        },
    }
)


def grid_names() -> tuple[str, ...]:
    """Names of all presets."""
    return tuple(sorted((*_FIXED, *_DEPENDENT, *_BY_DIMENSION)))


def grid_preset(name: str, *, n_private: int | None = None, n_features: int | None = None) -> Grid:
    """The preset ``name``; presets that depend on the training size need ``n_private``, those
    that depend on the dimension apply their rule when ``n_features`` is given."""
    if name in _BY_DIMENSION:
        return _BY_DIMENSION[name](n_features)
    if name in _FIXED:
        return Grid(_FIXED[name], name=name, fixed=_SETTINGS.get(name, {}))
    if name in _DEPENDENT:
        if n_private is None or isinstance(n_private, bool) or n_private < 4:
            raise ValueError(f"grid preset {name!r} needs n_private >= 4, got {n_private!r}")
        return _DEPENDENT[name](int(n_private))
    raise ValueError(f"name={name!r} is not a grid preset; known presets: {list(grid_names())}")
