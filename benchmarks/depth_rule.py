"""``max_depth="auto"``: the current rule against the mechanism-aware rule and the best fixed depth.

Two public depth rules, both from the LPDT paper's bias-variance balance
(``ldptree.estimators._auto_depth``; public quantities only):

* **current**: ``auto_depth`` with the variance ``V`` of the papers' mechanism (randomized
  response + Laplace at ``rho = 1/2``), what ``LPDTRegressor(max_depth="auto")`` uses today even
  when the default mechanism (``mechanism="auto"``) runs;
* **mechanism** (a proposed replacement, defined here and not in the library because it lost):
  :func:`mechanism_depth`, the deepest ``s`` whose balance with the variance ``V_s`` of the
  mechanism that would run on ``2^s`` cells (the default's choice for that size) still asks for
  ``s``.

Each is compared with the **best fixed depth** (depth 1-``--max-depth`` with the smallest mean test
MSE over the seeds: an oracle, not private). Every fit is the default ``LPDTRegressor`` (default
mechanism, read-out and clipping; ``min_samples_leaf=2``) with the given depth, so a rule's MSE in
a repetition is the fixed-depth fit at the depth it picks. Sources: the real datasets named (a
public : train : test = 1 : 7 : 2 split per seed, as ``reproduce lpdt-table``) and two synthetic
models (``lpdt_uniform`` with ``d = 2`` and ``d = 4``: 4,000 private, 500 public, 2,000 test
rows). Paired over seeds: same split, same noise key for every depth.

    LDPTREE_DATA=/path/to/data .venv/bin/python benchmarks/depth_rule.py \
        --datasets ccpp_power_plant concrete wine_quality_white --epsilons 1 4 8 --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from scipy.stats import wilcoxon

from ldptree import LPDTRegressor
from ldptree.datasets import load_dataset, lpdt_uniform
from ldptree.estimators import fit_many, resolve_label_bound
from ldptree.estimators._auto_depth import auto_depth
from ldptree.estimators._default_mechanism import regression_mechanism
from ldptree.estimators._readout import shrinkage_strength
from ldptree.experiments._splits import RandomSplit, impute_from_public

Data = tuple[Any, Any, Any, Any, Any, Any]  # X_train, y_train, X_public, y_public, X_test, y_test


def _real(name: str) -> Callable[[int], Data]:
    source = RandomSplit(load_dataset(name))

    def draw(seed: int) -> Data:
        s = impute_from_public(source.draw(np.random.default_rng(seed)))
        return s.X_train, s.y_train, s.X_public, s.y_public, s.X_test, s.y_test

    return draw


def _synthetic(d: int) -> Callable[[int], Data]:
    def draw(seed: int) -> Data:
        rng = np.random.default_rng([seed, d])
        X, y = lpdt_uniform(4000, d, rng)
        Xq, yq = lpdt_uniform(500, d, rng)
        Xt, yt = lpdt_uniform(2000, d, rng)
        return X, y, Xq, yq, Xt, yt

    return draw


def mechanism_depth(
    n: int, n_features: int, relative_variance_at: Callable[[int], float | None]
) -> int | None:
    """``max {s >= 1 : auto_depth(n, d, V_s / h^2) >= s}`` with ``relative_variance_at(L)`` the
    ``V / h^2`` of the mechanism that would run on ``L = 2^s`` cells (``None``: it does not say
    its variance). For a ``V`` independent of ``L`` this is ``auto_depth``. Depths up to
    ``log2 n`` are tried."""
    best = 1
    for s in range(1, max(1, int(math.log2(n))) + 1):
        relative = relative_variance_at(2**s)
        if relative is None:
            return None
        if math.isfinite(relative) and auto_depth(n, n_features, relative) >= s:
            best = s
    return best


def rule_depths(eps: float, n: int, d: int, y_public: Any) -> tuple[int, int]:
    """``(current, mechanism)`` depths for ``n`` holders, ``d`` features, the public bound."""
    bound = resolve_label_bound(None, y_public)

    def relative(cells: int, name: str = "auto") -> float | None:
        mechanism, _ = regression_mechanism(name, eps, bound, cells, "auto")
        return shrinkage_strength(mechanism, cells, 1, bound)

    paper = relative(2, "paper")
    assert paper is not None
    new = mechanism_depth(n, d, relative)
    assert new is not None
    return auto_depth(n, d, paper), new


def _cells(
    sources: dict[str, Callable[[int], Data]], epsilons: list[float], seeds: list[int], top: int
) -> Iterator[tuple[str, float, dict[str, np.ndarray]]]:
    for name, draw in sources.items():
        for eps in epsilons:
            mse = np.empty((len(seeds), top))
            picks = np.empty((len(seeds), 2), dtype=int)
            for i, seed in enumerate(seeds):
                X, y, Xq, yq, Xt, yt = draw(seed)
                picks[i] = rule_depths(eps, X.shape[0], X.shape[1], yq)
                models = [LPDTRegressor(eps, s, 2, random_state=seed) for s in range(1, top + 1)]
                fitted = fit_many(models, X, y, X_public=Xq, y_public=yq)
                mse[i] = [np.mean((m.predict(Xt) - yt) ** 2) for m in fitted]
            yield name, eps, {"mse": mse, "picks": picks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["ccpp_power_plant", "concrete"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0, 8.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--max-depth", type=int, default=10)
    parser.add_argument("--smoke", action="store_true", help="concrete, epsilon 4, 2 seeds")
    args = parser.parse_args()
    if args.smoke:
        args.datasets, args.epsilons, args.seeds, args.max_depth = ["concrete"], [4.0], [0, 1], 2
    sources = {name: _real(name) for name in args.datasets}
    sources.update({"synthetic d=2": _synthetic(2), "synthetic d=4": _synthetic(4)})
    start = time.perf_counter()
    print(
        "| source | eps | depth: current | depth: mechanism | best fixed depth | MSE current | "
        "MSE mechanism | MSE best fixed | mechanism / current | seeds mechanism better, "
        "worse | mechanism / best |"
    )
    print("|---" * 11 + "|")
    log_ratios = []
    for name, eps, r in _cells(sources, args.epsilons, args.seeds, args.max_depth):
        mse, picks = r["mse"], r["picks"]
        rows = np.arange(len(args.seeds))
        # a rule deeper than the table is scored at the deepest fitted depth (said below)
        cur = mse[rows, np.minimum(picks[:, 0], args.max_depth) - 1]
        new = mse[rows, np.minimum(picks[:, 1], args.max_depth) - 1]
        best = int(np.argmin(mse.mean(axis=0)))
        oracle = mse[:, best]
        log_ratios.extend(np.log(new / cur))
        depths = [sorted({int(v) for v in picks[:, j]}) for j in (0, 1)]
        print(
            f"| {name} | {eps:g} | {'/'.join(map(str, depths[0]))} | "
            f"{'/'.join(map(str, depths[1]))} | {best + 1} | "
            f"{cur.mean():.4g} ({cur.std(ddof=1):.2g}) | "
            f"{new.mean():.4g} ({new.std(ddof=1):.2g}) | "
            f"{oracle.mean():.4g} ({oracle.std(ddof=1):.2g}) | {new.mean() / cur.mean():.3f} | "
            f"{int(np.sum(new < cur))}, {int(np.sum(new > cur))} | "
            f"{new.mean() / oracle.mean():.3f} |",
            flush=True,
        )
    lr = np.asarray(log_ratios)
    moved = lr[lr != 0.0]
    p = wilcoxon(moved).pvalue if moved.size else float("nan")
    print(
        f"\nAll paired repetitions: geometric mean MSE ratio mechanism / current "
        f"{np.exp(lr.mean()):.3f}; {int(np.sum(lr < 0))} better, {int(np.sum(lr > 0))} worse, "
        f"{int(np.sum(lr == 0))} equal (same depth); two-sided Wilcoxon signed-rank on the "
        f"differing pairs p = {p:.3g}. {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
