"""The papers' mechanisms vs ldptree's variance-aware default, paired, on the real datasets.

For every dataset of ``$LDPTREE_DATA`` (regression: LPDT-M; classification: LPCT-M), epsilon and
repetition (the runner's splits and seeds: public : train : test = 1 : 7 : 2), two arms are
fitted on the same split with the same read-out, differing only in the mechanism:

* ``paper``: ``mechanism="paper"`` (randomized response + Laplace label for LPDT; Laplace on the
  one-hots for LPCT);
* ``auto``: ``mechanism="auto"`` (the mechanism and split with the smallest predicted error for
  the grown partition; the chosen family is printed).

Two tunings per arm: *oracle* (the depth in ``--depths`` with the best mean test error over the
repetitions, chosen separately per arm, as the papers' tables do) and *private* (the
parameter-free ``max_depth="auto"`` for LPDT, which needs no validation release; LPCT uses the
middle of ``--depths``). Per (dataset, epsilon, tuning) the table gives both arms' mean test
error (MSE; misclassification rate for LPCT), their ratio, the paired two-sided Wilcoxon
signed-rank p-value over repetitions (``scipy.stats.wilcoxon``; with 10 repetitions the smallest
possible p-value is 0.002) and the verdict at 0.05. One process, no parallelism.

    LDPTREE_DATA=/path/to/data python benchmarks/mechanism_comparison.py --task regression

``--smoke`` (one small dataset per task, epsilon 2, three repetitions, depth 2) runs in seconds;
the test suite runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import collections
import time
from typing import Any

import numpy as np
from scipy import stats

from ldptree.datasets import load_dataset, read_manifest
from ldptree.estimators import LPCTClassifier, LPDTRegressor
from ldptree.experiments._seeds import derive_rng, derive_seed
from ldptree.experiments._splits import RandomSplit, impute_from_public

ARMS = ("paper", "auto")


def _model(task: str, arm: str, eps: float, depth: Any, seed: int) -> Any:
    if task == "regression":
        return LPDTRegressor(eps, depth, 10, mechanism=arm, readout="shrink", random_state=seed)
    return LPCTClassifier(eps, depth, 10, mechanism=arm, random_state=seed)


def _error(task: str, model: Any, X: np.ndarray, y: np.ndarray) -> float:
    pred = model.predict(X)
    if task == "regression":
        return float(np.mean((pred - y) ** 2))
    return float(np.mean(pred != y))


def _verdict(paper: np.ndarray, auto: np.ndarray) -> tuple[float, str]:
    if np.allclose(paper, auto):
        return 1.0, "tie"
    p = float(stats.wilcoxon(auto, paper).pvalue)
    if p >= 0.05:
        return p, "n.s."
    return p, "auto better" if np.mean(auto) < np.mean(paper) else "paper better"


def run(task: str, names: list[str], epsilons: list[float], reps: int, depths: list[int]) -> None:
    print(
        "| dataset | eps | tuning | paper | auto | auto / paper | Wilcoxon p | verdict "
        "| auto's mechanism |\n|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    tallies: collections.Counter[tuple[str, str]] = collections.Counter()
    for name in names:
        source = RandomSplit(load_dataset(name))
        splits = [
            impute_from_public(source.draw(derive_rng(0, "split", name, rep)))
            for rep in range(reps)
        ]
        for eps in epsilons:
            err = {(arm, d): np.empty(reps) for arm in ARMS for d in [*depths, "auto"]}
            chosen: collections.Counter[str] = collections.Counter()
            for rep, split in enumerate(splits):
                for d in [*depths, "auto"]:
                    if d == "auto" and task != "regression":
                        continue
                    seed = derive_seed(0, "cmp", name, eps, rep, str(d))
                    for arm in ARMS:
                        model = _model(task, arm, eps, d, seed).fit(
                            split.X_train,
                            split.y_train,
                            X_public=split.X_public,
                            y_public=split.y_public,
                        )
                        err[arm, d][rep] = _error(task, model, split.X_test, split.y_test)
                        if arm == "auto" and model.mechanism_choice_ is not None:
                            chosen[model.mechanism_choice_.name] += 1
            best = {arm: min(depths, key=lambda d, a=arm: float(err[a, d].mean())) for arm in ARMS}
            tunings = {"oracle": (err["paper", best["paper"]], err["auto", best["auto"]])}
            private = "auto" if task == "regression" else depths[len(depths) // 2]
            tunings["private"] = (err["paper", private], err["auto", private])
            family = ", ".join(f"{k} {v}" for k, v in chosen.most_common(3))
            for tuning, (paper, auto) in tunings.items():
                p, verdict = _verdict(paper, auto)
                tallies[tuning, verdict] += 1
                print(
                    f"| {name} | {eps:g} | {tuning} | {paper.mean():.4g} | {auto.mean():.4g} "
                    f"| {auto.mean() / paper.mean():.3f} | {p:.3g} | {verdict} | {family} |",
                    flush=True,
                )
    print("\nverdicts:", dict(sorted(tallies.items())))


def plot(tables: list[str], out: str) -> None:
    """Ratio auto / paper per epsilon (one point per dataset, oracle tuning) from the printed
    tables of earlier runs, one panel per table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 3.6), squeeze=False)
    for ax, path in zip(axes[0], tables, strict=True):
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        rows = [
            [c.strip() for c in line.split("|")[1:-1]]
            for line in lines
            if line.startswith("| ") and "dataset" not in line
        ]
        rows = [r for r in rows if r[2] == "oracle"]
        for r in rows:
            colour = {"auto better": "tab:green", "paper better": "tab:red"}.get(r[7], "tab:grey")
            ax.scatter(float(r[1]), float(r[5]), c=colour, s=14)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test error, auto / paper")
        ax.set_title(path.rsplit("/", 1)[-1])
    fig.suptitle("variance-aware default vs papers' mechanism (green: Wilcoxon p < 0.05)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", nargs="*", default=None, help="saved tables to plot (no run)")
    parser.add_argument("--out", default="mechanism-comparison.png")
    parser.add_argument("--task", choices=["regression", "classification"], default="regression")
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.5, 1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--depths", nargs="*", type=int, default=[2, 4, 6])
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        small = {"regression": "concrete", "classification": "diabetes_pub"}
        args.datasets, args.epsilons = [small[args.task]], [2.0]
        args.reps, args.depths = 3, [2]
    if args.plot:
        plot(args.plot, args.out)
        return
    names = args.datasets or sorted(
        e.name for e in read_manifest(None).values() if e.task == args.task
    )
    start = time.perf_counter()
    run(args.task, names, args.epsilons, args.reps, args.depths)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
