"""Guarded read-outs on the real regression datasets: the reference ratio vs the shrinkage default.

For every regression dataset of ``$LDPTREE_DATA``, epsilon and repetition (public : train : test =
1 : 7 : 2, the LPDT table's split and seeds), LPDT-M is fitted once per grid point
(depth 1-4 x n_l in {2, 10, 40}, rho = 0.5); both read-outs are computed from the *same*
debiased cell estimates (the read-out is post-processing), so the comparison is paired and the
only difference is the read-out. Printed per dataset and epsilon: mean, median and 0.9 quantile of
test MSE over all grid points and repetitions, for ``readout="ratio"`` (the reference, tau = 0)
and ``readout="shrink"`` (the default), and the oracle grid point's mean (best mean over
repetitions, chosen separately per read-out). One process, no parallelism.

    LDPTREE_DATA=/path/to/data python benchmarks/guarded_readout.py --epsilons 1 2 4 --reps 10

``--smoke`` (one small dataset, epsilon 2, two repetitions) runs in seconds; the test suite runs
it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from ldptree.datasets import load_dataset
from ldptree.estimators._composition import route
from ldptree.estimators._readout import shrinkage_strength, shrunk_ratio
from ldptree.experiments._methods import lpdt_max_edge
from ldptree.experiments._reproduce import regression_datasets
from ldptree.experiments._seeds import derive_rng, derive_seed
from ldptree.experiments._splits import RandomSplit, impute_from_public

DEPTHS = (1, 2, 3, 4)
LEAVES = (2, 10, 40)


def _mse(values: np.ndarray, cells: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((values[cells] - y) ** 2))


def run(names: list[str], epsilons: list[float], reps: int, seed: int) -> list[str]:
    rows = [
        "| dataset | eps | ratio mean | shrink mean | ratio median | shrink median "
        "| ratio q0.9 | shrink q0.9 | ratio oracle | shrink oracle |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        source = RandomSplit(load_dataset(name))
        # the runner's split of repetition ``rep`` (same seeds as ``reproduce lpdt-table``)
        splits = [
            impute_from_public(source.draw(derive_rng(seed, "split", name, rep)))
            for rep in range(reps)
        ]
        for eps in epsilons:
            mse: dict[str, np.ndarray] = {
                k: np.empty((len(DEPTHS) * len(LEAVES), reps)) for k in ("ratio", "shrink")
            }
            for rep, split in enumerate(splits):
                grid = itertools.product(DEPTHS, LEAVES)
                for point, (depth, n_l) in enumerate(grid):
                    model = lpdt_max_edge(
                        epsilon=eps,
                        random_state=derive_seed(seed, "fit", name, eps, rep, point),
                        max_depth=depth,
                        min_samples_leaf=n_l,
                        budget_split=0.5,
                    ).fit(
                        split.X_train,
                        split.y_train,
                        X_public=split.X_public,
                        y_public=split.y_public,
                    )
                    cells, _ = route(
                        split.X_test, model.n_features_in_, model.scaler_, model.partition_
                    )
                    est = model.estimates_
                    strength = shrinkage_strength(
                        model.mechanism_, model.partition_.n_leaves, est.n, model.label_bound_
                    )
                    assert strength is not None
                    shrink, _ = shrunk_ratio(
                        est, model.public_leaf_mean_, min_ratio=0.0, strength=strength
                    )
                    mse["ratio"][point, rep] = _mse(model.leaf_values_, cells, split.y_test)
                    mse["shrink"][point, rep] = _mse(shrink, cells, split.y_test)
            stats = {
                k: (v.mean(), np.median(v), np.quantile(v, 0.9), v.mean(axis=1).min())
                for k, v in mse.items()
            }
            cells_out = [f"{stats[k][i]:.4g}" for i in range(4) for k in ("ratio", "shrink")]
            rows.append(f"| {name} | {eps:g} | " + " | ".join(cells_out) + " |")
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 2.0, 4.0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.datasets, args.epsilons, args.reps = ["concrete"], [2.0], 2
    names = args.datasets or regression_datasets(None, quick=False)
    start = time.perf_counter()
    rows = run(names, args.epsilons, args.reps, args.seed)
    print("\n".join(rows))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
