"""The exact per-holder variance of every built-in mechanism (``exact_cell_variance``) against a
Monte Carlo of its own sampler, against its worst-case bound (``cell_variance``), and the
variance estimated from a round's debiased estimates (``estimated_cell_variance``)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.mechanisms import (
    DuchiMechanism,
    ExactCellVariance,
    HadamardLaplaceMechanism,
    KitMechanism,
    KRRCellClassMechanism,
    KRRJointMechanism,
    KRRLaplaceMechanism,
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    LaplaceFeatureLabelMechanism,
    OLHCellClassMechanism,
    OLHLaplaceMechanism,
    OUECellClassMechanism,
    OUELaplaceMechanism,
    PiecewiseMechanism,
    RRLaplaceMechanism,
    SubsetCellClassMechanism,
    SubsetLaplaceMechanism,
    SupportsExactVariance,
    SupportsVariance,
    estimated_cell_variance,
    kit_built_ins,
    label_moments,
)
from ldptree.mechanisms._kit import fused_sums
from ldptree.testing import BUILT_INS

BOUND = (-1.0, 3.0)
N_CELLS = 4


def _mechanisms(eps: float) -> dict[str, Any]:
    """One instance of every built-in (two where the label form changes the law)."""
    return {
        "RRLaplaceMechanism": RRLaplaceMechanism(eps, BOUND),
        "OUELaplaceMechanism": OUELaplaceMechanism(eps, BOUND),
        "KRRLaplaceMechanism": KRRLaplaceMechanism(eps, BOUND),
        "KRRJointMechanism": KRRJointMechanism(eps, BOUND),
        "KRRJointMechanism-4": KRRJointMechanism(eps, BOUND, levels=4),
        "HadamardLaplaceMechanism": HadamardLaplaceMechanism(eps, BOUND),
        "SubsetLaplaceMechanism": SubsetLaplaceMechanism(eps, BOUND),
        "OLHLaplaceMechanism": OLHLaplaceMechanism(eps, BOUND),
        "DuchiMechanism": DuchiMechanism(eps, BOUND),
        "PiecewiseMechanism": PiecewiseMechanism(eps, BOUND),
        "LaplaceCellLabelMechanism": LaplaceCellLabelMechanism(eps, BOUND),
        "LaplaceFeatureLabelMechanism": LaplaceFeatureLabelMechanism(eps, 2, BOUND),
        "KRRCellClassMechanism": KRRCellClassMechanism(eps, 3),
        "OUECellClassMechanism": OUECellClassMechanism(eps, 3),
        "SubsetCellClassMechanism": SubsetCellClassMechanism(eps, 3),
        "OLHCellClassMechanism": OLHCellClassMechanism(eps, 3),
        "LaplaceCellClassMechanism": LaplaceCellClassMechanism(eps, 3),
        "LaplaceCellClassMechanism-2": LaplaceCellClassMechanism(eps, 2),
    }


NAMES = list(_mechanisms(1.0))


def group_estimates(
    mech: Any, n_cells: int, labels: np.ndarray, group: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(count, label_sum)``, each ``float[B, 2]``: cell 0 and cell 1 estimates of ``B``
    groups of ``group`` holders, all in cell 0, holder ``i`` with ``labels[i]`` (label sums:
    the first column of a per-class table). Holders are distinct across groups (their words
    come from their indices), so the groups are independent."""
    n = labels.shape[0]
    groups = n // group
    stacked = labels[: groups * group].reshape(groups, group)
    if isinstance(mech, KitMechanism) and mech.labels().integer:
        stacked = stacked.astype(np.int32)
    key = jax.random.key(seed)
    if not isinstance(mech, KitMechanism):  # one cell, no cell release: per-holder estimates
        cells = jnp.zeros(groups * group, jnp.int32)
        feats = jnp.full((groups * group, mech.n_features), 0.5, jnp.float32)
        rep = mech.privatize(key, cells, jnp.asarray(stacked.reshape(-1)), 1, features=feats)
        codes = jnp.asarray(rep.label).reshape(groups, group).sum(axis=1)
        est = jax.vmap(lambda c: mech.debias({"code_total": c[None]}, group))(codes)
        count = np.concatenate([np.asarray(est.count), np.zeros((groups, 1))], axis=1)
        return count, np.concatenate([np.asarray(est.label_sum), np.zeros((groups, 1))], axis=1)
    cells = np.zeros(group, np.int32)
    spec, consts, args = mech.summary_inputs(key, cells, stacked[0], n_cells, 0, rows=group)
    key_data, cells_p, _, _, n_valid = args

    def one(lab: jax.Array, first: jax.Array, consts: Any) -> tuple[jax.Array, jax.Array]:
        # the constants enter as arguments (device arrays), as in summarize_many
        sums = fused_sums(spec, consts, key_data, cells_p, lab, first, n_valid)
        est = mech.debias(mech.summary_stats(spec, sums, n_cells), group)
        return est.count[:2], jnp.reshape(est.label_sum, (n_cells, -1))[:2, 0]

    firsts = jnp.arange(groups, dtype=jnp.uint32) * group
    lab = jnp.asarray(stacked, jnp.int32 if mech.labels().integer else jnp.float32)
    count, label_sum = jax.jit(jax.vmap(one, in_axes=(0, 0, None)))(lab, firsts, consts)
    return np.asarray(count, np.float64), np.asarray(label_sum, np.float64)


#: Label distributions as (atoms, weights). Real labels: one point between two levels, a spread
#: with clipped labels beyond both ends, the two ends of the bound. Class labels:
#: see _class_distribution.
REAL = {
    "point": ([0.3], [1.0]),
    "spread": ([-2.0, 0.3, 1.7, 3.0, 4.5], [0.2, 0.3, 0.2, 0.2, 0.1]),
    "ends": ([-1.0, 3.0], [0.5, 0.5]),
}


def _class_distribution(mech: Any, dist: str) -> tuple[list[float], list[float]]:
    """Declared classes only (the count reads a declared class): the counted class, a mixture of
    every class, another class."""
    counted, k = _counted_class(mech), mech.n_classes
    if dist == "point":
        return [counted], [1.0]
    if dist == "ends":
        return [1 - counted], [1.0]
    return list(range(k)), [0.5 if c == counted else 0.5 / (k - 1) for c in range(k)]


def _n_cells(mech: Any) -> int:
    return 1 if isinstance(mech, LaplaceFeatureLabelMechanism) else N_CELLS


def _is_class(mech: Any) -> bool:
    return isinstance(mech, tuple(kit_built_ins().values())) and mech.labels().integer


def _counted_class(mech: Any) -> int:
    """The class the first ``label_sum`` column counts (class 1 in the binary form)."""
    return 1 if isinstance(mech, LaplaceCellClassMechanism) and mech.n_classes == 2 else 0


def _moments(mech: Any, atoms: list[float], weights: list[float]) -> tuple[float, float]:
    """Exact moments of the encoded label of a holder drawn from the atoms."""
    kw = {"label_class": _counted_class(mech)} if _is_class(mech) else {}
    per_atom = np.array([label_moments(mech, [a], **kw) for a in atoms])
    m1, m2 = np.asarray(weights) @ per_atom
    return float(m1), float(m2)


def test_every_built_in_is_covered() -> None:
    names = {name.split("-")[0] for name in NAMES}
    assert names == set(kit_built_ins()) | set(BUILT_INS)
    for mech in _mechanisms(1.0).values():
        assert isinstance(mech, SupportsExactVariance)


def _check_monte_carlo(name: str, dist: str, eps: float, seed: int, groups: int) -> None:
    mech = _mechanisms(eps)[name]
    atoms, weights = _class_distribution(mech, dist) if _is_class(mech) else REAL[dist]
    group = 8
    rng = np.random.default_rng(seed)
    labels = rng.choice(np.asarray(atoms, dtype=np.float64), group * groups, p=weights)
    count, label_sum = group_estimates(mech, _n_cells(mech), labels, group, seed)
    m1, m2 = _moments(mech, atoms, weights)
    exact = mech.exact_cell_variance(_n_cells(mech), label_mean=m1, label_second_moment=m2)
    cases = [
        ("count_inside", count[:, 0]),
        ("count_outside", count[:, 1]),
        ("label_sum_inside", label_sum[:, 0]),
        ("label_sum_outside", label_sum[:, 1]),
    ]
    for field, x in cases:
        want = getattr(exact, field) * group
        if want == 0.0:  # no variance at all (the one-cell mechanism's count, its outside)
            assert np.var(x) == 0.0, field
            continue
        centred = (x - x.mean()) ** 2
        se = float(np.std(centred) / math.sqrt(x.size)) / want  # relative standard error
        assert se < 0.02, f"{field}: the Monte Carlo is too noisy to test ({se:.3f})"
        ratio = float(np.var(x, ddof=1)) / want
        assert abs(ratio - 1.0) <= 0.10, f"{name} {dist} {field}: MC / exact = {ratio:.3f}"


_FAST = {
    ("KRRJointMechanism", "spread"),
    ("OUECellClassMechanism", "spread"),
    ("DuchiMechanism", "ends"),
}


@pytest.mark.parametrize(
    ("name", "dist"),
    [
        pytest.param(n, d, marks=() if (n, d) in _FAST else pytest.mark.slow)
        for n in NAMES
        for d in REAL
    ],
)
def test_exact_variance_matches_the_monte_carlo(name: str, dist: str) -> None:
    """160,000 holders in 20,000 groups of 8, all in cell 0, labels drawn from the distribution
    (fixed seeds): the variance over groups of the estimates of cell 0 (inside) and cell 1
    (outside) against 8 times the exact per-holder variance at the distribution's moments,
    within 10%. The test first asserts that the Monte Carlo's relative standard error (from the
    sample's fourth moment) is below 2%, so 10% is at least 5 standard errors: false-failure
    rate below 6e-7 per comparison, below 2e-4 for the whole grid (4 comparisons x 54 cases)."""
    _check_monte_carlo(name, dist, 2.0, seed=11, groups=20_000)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 4.0])
@pytest.mark.parametrize("name", NAMES)
def test_exact_variance_matches_the_monte_carlo_at_other_budgets(name: str, eps: float) -> None:
    """As above at a small and a large budget, spread labels, 100,000 groups (a large budget
    makes rare reports carry the variance: at 8 the outside class counts of k-RR would need
    millions of holders for a 2% standard error; the same false-failure rate)."""
    _check_monte_carlo(name, "spread", eps, seed=12, groups=100_000)


@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_the_bound_is_at_least_the_exact_variance(eps: float) -> None:
    """``cell_variance`` bounds the exact variance for every fixed label (worst case over the
    record): labels on a grid beyond both ends of the bound, every class. Deterministic."""
    for name, mech in _mechanisms(eps).items():
        if not isinstance(mech, SupportsVariance):
            continue  # no bound stated (LaplaceCellLabelMechanism, LaplaceFeatureLabelMechanism)
        bound = mech.cell_variance(N_CELLS)
        if _is_class(mech):
            points = [(0.0, 0.0), (1.0, 1.0)]
        else:
            points = [label_moments(mech, [y]) for y in np.linspace(-2.0, 4.0, 61)]
        for m1, m2 in points:
            ex = mech.exact_cell_variance(N_CELLS, label_mean=m1, label_second_moment=m2)
            tol = 1e-12
            assert max(ex.count_inside, ex.count_outside) <= bound.count * (1 + tol), name
            out_c = bound.count if bound.count_outside is None else bound.count_outside
            assert ex.count_outside <= out_c * (1 + tol), name
            worst = max(ex.label_sum_inside, ex.label_sum_outside)
            assert worst <= bound.label_sum * (1 + tol), (name, m1, worst, bound.label_sum)
            out_s = bound.label_sum if bound.label_sum_outside is None else bound.label_sum_outside
            assert ex.label_sum_outside <= out_s * (1 + tol), name


def test_label_moments_follow_the_rounding() -> None:
    mech = KRRJointMechanism(1.0, (-1.0, 3.0), levels=2)  # levels at -1, 1, 3 (step 2)
    assert label_moments(mech, [1.0]) == (1.0, 1.0)  # on a level: no rounding
    m1, m2 = label_moments(mech, [0.5])  # 3/4 of the way from -1 to 1
    assert m1 == pytest.approx(0.5) and m2 == pytest.approx(0.25 + 4 * 0.75 * 0.25)
    assert label_moments(mech, [9.0, -9.0]) == (1.0, 5.0)  # clipped to the ends
    klass = KRRCellClassMechanism(1.0, 3)
    assert label_moments(klass, [0, 1, 1, 2], label_class=1) == (0.5, 0.5)
    with pytest.raises(ValueError, match="label_class"):
        label_moments(klass, [0, 1])


def test_bad_moments_are_named() -> None:
    mech = RRLaplaceMechanism(1.0, BOUND)
    with pytest.raises(ValueError, match="label_second_moment"):
        mech.exact_cell_variance(4, label_mean=2.0, label_second_moment=1.0)
    with pytest.raises(ValueError, match="finite"):
        mech.exact_cell_variance(4, label_mean=math.nan, label_second_moment=1.0)
    with pytest.raises(ValueError, match="label_mean"):
        OUECellClassMechanism(1.0, 3).exact_cell_variance(
            4, label_mean=0.5, label_second_moment=0.25
        )
    with pytest.raises(ValueError, match="n_cells"):
        LaplaceFeatureLabelMechanism(1.0, 2, BOUND).exact_cell_variance(
            3, label_mean=0.0, label_second_moment=0.0
        )
    assert isinstance(
        mech.exact_cell_variance(4, label_mean=0.0, label_second_moment=0.0), ExactCellVariance
    )


#: Cell shares and per-cell label atoms (real: points inside and beyond the bound; class: codes)
#: of the estimated-variance test: unequal cells with different label distributions.
_SHARES = np.array([0.5, 0.25, 0.15, 0.10])
_CELL_ATOMS = [[-2.0, 0.3], [1.0, 2.9], [3.5, 0.0], [-1.0, 1.7]]
_CELL_CLASSES = [[0, 1], [1, 2], [2, 2], [0, 0]]


@pytest.mark.parametrize(
    "name",
    [
        "KRRJointMechanism",
        "OUECellClassMechanism",
        pytest.param("RRLaplaceMechanism", marks=pytest.mark.slow),
        pytest.param("DuchiMechanism", marks=pytest.mark.slow),
        pytest.param("PiecewiseMechanism", marks=pytest.mark.slow),
        pytest.param("SubsetCellClassMechanism", marks=pytest.mark.slow),
    ],
)
def test_estimated_variance_matches_the_monte_carlo(name: str) -> None:
    """600 rounds of 2,000 holders in 4 unequal cells, labels redrawn each round (atoms per
    cell, equal weights; fixed seeds): the mean over rounds of ``estimated_cell_variance``
    (given each cell's true second moment) against the variance over rounds of ``c^_j`` and
    ``s^_j``, within 25% per cell. A 600-round variance has relative standard error ~6%, so
    25% is ~4 standard errors: false-failure rate below 1e-4 per comparison, 1e-3 per test.
    Without the second moment the estimate uses the bound's worst case and is not smaller."""
    mech = _mechanisms(2.0)[name]
    n, rounds = 2000, 600
    rng = np.random.default_rng(3)
    cells = np.repeat(np.arange(N_CELLS), (_SHARES * n).astype(int)).astype(np.int32)
    klass = _is_class(mech)
    atoms = np.asarray(_CELL_CLASSES if klass else _CELL_ATOMS, dtype=np.float64)
    if klass:
        m2 = None
    else:
        m2 = np.array([np.mean([label_moments(mech, [a])[1] for a in row]) for row in atoms])
    runs, estimated, worst = [], [], []
    for r in range(rounds):
        pick = rng.integers(0, 2, n)
        labels = atoms[cells, pick].astype(np.int32 if klass else np.float32)
        est = mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, N_CELLS), n)
        column = np.asarray(est.label_sum).reshape(N_CELLS, -1)[:, 0]
        runs.append(np.stack([np.asarray(est.count), column]))
        var_c, var_s = estimated_cell_variance(mech, est, label_second_moment=m2)
        estimated.append(np.stack([var_c, np.asarray(var_s).reshape(N_CELLS, -1)[:, 0]]))
        if not klass:
            worst.append(estimated_cell_variance(mech, est)[1])
    ratio = np.mean(estimated, axis=0) / np.var(runs, axis=0, ddof=1)
    assert np.all(np.abs(ratio - 1.0) <= 0.25), ratio
    if worst:
        assert np.all(np.mean(worst, axis=0) >= np.mean(estimated, axis=0)[1])
