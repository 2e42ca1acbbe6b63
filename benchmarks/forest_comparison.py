"""Private forests against the single LPDT tree on the synthetic LPDT model (d = 2).

Model: ``X ~ Uniform[0, 1]^2``, ``Y = sin(16 X_1) + N(0, 1)`` (``ldptree.datasets``'
``lpdt_uniform``); ``n`` private holders, ``n_q`` public rows, a noise-free test set of 5,000
points; excess MSE ``mean((f^(x) - f(x))^2)``. For every seed, epsilon and tree depth, three
methods are fitted on the same data: the single :class:`~ldptree.LPDTRegressor` (defaults but
``max_depth``), :class:`~ldptree.ensembles.LPDTForestRegressor` with 8 trees on bootstrap
resamples of the public rows and the holders split among the trees (each holder answers one
tree at epsilon), and the same forest with sequential composition (each holder answers every
tree at epsilon / 8). Every method spends epsilon per holder (checked).

Printed: per epsilon and depth, mean and standard deviation over the seeds; then per epsilon the
best depth of each method (chosen on the mean over seeds: an oracle choice, the same for every
method) with the number of seeds in which the split forest beats the single tree at those
depths (paired, same data). One process, no parallelism.

    python benchmarks/forest_comparison.py            # about 5 minutes on 2 cores

``--smoke`` (2,000 holders, one epsilon, one depth, two seeds) runs in seconds; the test suite
runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ldptree import LPDTRegressor
from ldptree.datasets._lpdt import lpdt_uniform, sine_regression_function
from ldptree.ensembles import LPDTForestRegressor

METHODS = ("tree", "forest split", "forest sequential")


def _model(method: str, depth: int, eps: float, seed: int) -> LPDTRegressor | LPDTForestRegressor:
    if method == "tree":
        return LPDTRegressor(epsilon=eps, max_depth=depth, random_state=seed)
    composition = "split" if method == "forest split" else "sequential"
    return LPDTForestRegressor(
        LPDTRegressor(max_depth=depth),
        n_trees=8,
        epsilon=eps,
        composition=composition,
        random_state=seed,
    )


def run(n: int, n_public: int, epsilons: list[float], depths: list[int], seeds: int) -> list[str]:
    # errors[eps][method][depth index, seed]
    errors = {e: {m: np.empty((len(depths), seeds)) for m in METHODS} for e in epsilons}
    for seed in range(seeds):
        X, y = lpdt_uniform(n, 2, 3 * seed)
        Xq, yq = lpdt_uniform(n_public, 2, 3 * seed + 1)
        Xt = np.random.default_rng(3 * seed + 2).uniform(size=(5000, 2))
        ft = sine_regression_function(Xt)
        for eps in epsilons:
            for i, depth in enumerate(depths):
                for method in METHODS:
                    model = _model(method, depth, eps, seed)
                    model.fit(X, y, X_public=Xq, y_public=yq)
                    assert abs(model.privacy_.epsilon - eps) < 1e-9 * eps
                    errors[eps][method][i, seed] = np.mean((model.predict(Xt) - ft) ** 2)
    rows = [
        f"n = {n:,} private holders, n_q = {n_public:,} public rows, {seeds} seeds; excess MSE "
        "mean ± sd",
        "",
        "| eps | depth | " + " | ".join(METHODS) + " |",
        "|---|---|" + "---|" * len(METHODS),
    ]
    for eps in epsilons:
        for i, depth in enumerate(depths):
            cells = [
                f"{errors[eps][m][i].mean():.3f} ± {errors[eps][m][i].std(ddof=1):.3f}"
                for m in METHODS
            ]
            rows.append(f"| {eps:g} | {depth} | " + " | ".join(cells) + " |")
    rows += [
        "",
        "| eps | " + " | ".join(f"best {m} (depth)" for m in METHODS) + " | split beats tree |",
        "|---|" + "---|" * (len(METHODS) + 1),
    ]
    for eps in epsilons:
        best = {m: int(np.argmin(errors[eps][m].mean(axis=1))) for m in METHODS}
        cells = [
            f"{errors[eps][m][best[m]].mean():.3f} ± {errors[eps][m][best[m]].std(ddof=1):.3f} "
            f"({depths[best[m]]})"
            for m in METHODS
        ]
        wins = int(
            np.sum(
                errors[eps]["forest split"][best["forest split"]]
                < errors[eps]["tree"][best["tree"]]
            )
        )
        rows.append(f"| {eps:g} | " + " | ".join(cells) + f" | {wins} of {seeds} seeds |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--n-public", type=int, default=2_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--depths", type=int, nargs="+", default=[4, 5, 6, 7])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="toy sizes: seconds")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.n_public, args.eps, args.depths, args.seeds = 2_000, 200, [2.0], [3], 2
    start = time.perf_counter()
    print("\n".join(run(args.n, args.n_public, args.eps, args.depths, args.seeds)))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
