"""Private forests against the single tree: LPDT on the synthetic LPDT model, LPCT on the LPCT
paper's model (both d = 2).

Regression: ``X ~ Uniform[0, 1]^2``, ``Y = sin(16 X_1) + N(0, 1)`` (``ldptree.datasets``'
``lpdt_uniform``); ``n`` private holders, ``n_q`` public rows from the same law, a noise-free test
set of 5,000 points; metric: excess MSE ``mean((f^(x) - f(x))^2)`` (lower is better).
Classification: the LPCT paper's pair (``make_lpct_pair``: private and test rows from P, public
rows from Q with ``gamma = 0.5``); metric: accuracy on 5,000 test rows (higher is better).

For every seed, epsilon and tree depth, three methods are fitted on the same data: the single
tree (:class:`~ldptree.LPDTRegressor` / :class:`~ldptree.LPCTClassifier`, defaults but
``max_depth``), the forest (:mod:`ldptree.ensembles`) with 8 trees on bootstrap resamples of the
public rows and the holders split among the trees (each holder answers one tree at epsilon), and
the same forest with sequential composition (each holder answers every tree at epsilon / 8).
Every method spends epsilon per holder (checked).

Printed per task: per epsilon and depth, mean and standard deviation over the seeds; then per
epsilon the best depth of each method (chosen on the mean over seeds: an oracle choice, the same
for every method) with the number of seeds in which the split forest beats the single tree at
those depths (paired, same data). One process, no parallelism.

    python benchmarks/forest_comparison.py            # about 10 minutes on 2 cores

``--smoke`` (2,000 holders, one epsilon, one depth, two seeds) runs in seconds; the test suite
runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.datasets._lpct import make_lpct_pair
from ldptree.datasets._lpdt import lpdt_uniform, sine_regression_function
from ldptree.ensembles import LPCTForestClassifier, LPDTForestRegressor

METHODS = ("tree", "forest split", "forest sequential")
#: One data set of a task: (X, y, X_public, y_public, X_test, score of a fitted model).
Data = tuple[Any, Any, Any, Any, Callable[[Any], float]]


def _regression(n: int, n_public: int, seed: int) -> Data:
    X, y = lpdt_uniform(n, 2, 3 * seed)
    Xq, yq = lpdt_uniform(n_public, 2, 3 * seed + 1)
    Xt = np.random.default_rng(3 * seed + 2).uniform(size=(5000, 2))
    ft = sine_regression_function(Xt)
    return X, y, Xq, yq, lambda model: float(np.mean((model.predict(Xt) - ft) ** 2))


def _classification(n: int, n_public: int, seed: int) -> Data:
    s = make_lpct_pair(n, n_public, n_test=5000, rng=seed)
    return s.X_private, s.y_private, s.X_public, s.y_public, lambda m: m.score(s.X_test, s.y_test)


TASKS: dict[str, tuple[Callable[[int, int, int], Data], type, type, str, bool]] = {
    # name: (data, tree, forest, metric, lower is better)
    "regression": (_regression, LPDTRegressor, LPDTForestRegressor, "excess MSE", True),
    "classification": (
        _classification,
        LPCTClassifier,
        LPCTForestClassifier,
        "test accuracy",
        False,
    ),
}


def _model(task: str, method: str, depth: int, eps: float, seed: int) -> Any:
    _, tree, forest, _, _ = TASKS[task]
    if method == "tree":
        return tree(epsilon=eps, max_depth=depth, random_state=seed)
    composition = "split" if method == "forest split" else "sequential"
    return forest(
        tree(max_depth=depth),
        n_trees=8,
        epsilon=eps,
        composition=composition,
        random_state=seed,
    )


def run(
    task: str, n: int, n_public: int, epsilons: list[float], depths: list[int], seeds: int
) -> list[str]:
    make, _, _, metric, lower = TASKS[task]
    # scores[eps][method][depth index, seed]
    scores = {e: {m: np.empty((len(depths), seeds)) for m in METHODS} for e in epsilons}
    for seed in range(seeds):
        X, y, Xq, yq, score = make(n, n_public, seed)
        for eps in epsilons:
            for i, depth in enumerate(depths):
                for method in METHODS:
                    model = _model(task, method, depth, eps, seed)
                    model.fit(X, y, X_public=Xq, y_public=yq)
                    assert abs(model.privacy_.epsilon - eps) < 1e-9 * eps
                    scores[eps][method][i, seed] = score(model)
    sign = 1.0 if lower else -1.0
    rows = [
        f"{task}: n = {n:,} private holders, n_q = {n_public:,} public rows, {seeds} seeds; "
        f"{metric} mean ± sd ({'lower' if lower else 'higher'} is better)",
        "",
        "| eps | depth | " + " | ".join(METHODS) + " |",
        "|---|---|" + "---|" * len(METHODS),
    ]
    for eps in epsilons:
        for i, depth in enumerate(depths):
            cells = [
                f"{scores[eps][m][i].mean():.3f} ± {scores[eps][m][i].std(ddof=1):.3f}"
                for m in METHODS
            ]
            rows.append(f"| {eps:g} | {depth} | " + " | ".join(cells) + " |")
    rows += [
        "",
        "| eps | " + " | ".join(f"best {m} (depth)" for m in METHODS) + " | split beats tree |",
        "|---|" + "---|" * (len(METHODS) + 1),
    ]
    for eps in epsilons:
        best = {m: int(np.argmin(sign * scores[eps][m].mean(axis=1))) for m in METHODS}
        cells = [
            f"{scores[eps][m][best[m]].mean():.3f} ± {scores[eps][m][best[m]].std(ddof=1):.3f} "
            f"({depths[best[m]]})"
            for m in METHODS
        ]
        split = scores[eps]["forest split"][best["forest split"]]
        wins = int(np.sum(sign * split < sign * scores[eps]["tree"][best["tree"]]))
        rows.append(f"| {eps:g} | " + " | ".join(cells) + f" | {wins} of {seeds} seeds |")
    return rows


#: (private holders, public rows, depths) of each task's full run.
FULL = {
    "regression": (100_000, 2_000, [4, 5, 6, 7]),
    "classification": (20_000, 1_000, [2, 3, 4, 5]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=(*TASKS, "both"), default="both")
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="toy sizes: seconds")
    args = parser.parse_args()
    tasks = list(TASKS) if args.task == "both" else [args.task]
    start = time.perf_counter()
    for task in tasks:
        n, n_public, depths = FULL[task]
        eps, seeds = args.eps, args.seeds
        if args.smoke:
            n, n_public, depths, eps, seeds = 2_000, 200, [3], [2.0], 2
        print("\n".join(run(task, n, n_public, eps, depths, seeds)) + "\n")
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
