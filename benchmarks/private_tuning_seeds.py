"""Private tuning of LPDT-M and LPDT-V against the LPDT paper's Table 2, over several base seeds.

Runs ``ldptree reproduce lpdt-table --tuning private`` (the same experiment,
:func:`ldptree.experiments.lpdt_table_experiment`) once per base seed on the 12 regression
datasets whose target matches the paper's (the 14 of the data folder without algerian_forest_fires
and naval_propulsion, whose targets differ), then prints, per epsilon:

* each dataset's test MSE, mean and sd over all ``seeds x reps`` repetitions, and its ratio to the
  paper's value;
* how many of the 12 datasets are within 25 % of the paper's value (ratio <= 1.25): for the mean
  over all repetitions, and for each seed's own ``reps``-repetition means (mean, min and max of
  those counts over the seeds; each seed's count is what a single ``reproduce`` run reports).

Every fit is eps-LDP end to end (``docs/experiments.md``). A seed's runs are kept in
``<out>/seed<s>/runs.csv``; a rerun appends only missing cells.

    LDPTREE_DATA=/path/to/data .venv/bin/python benchmarks/private_tuning_seeds.py \
        --seeds 0 1 2 3 4 --epsilons 2 6 --reps 10 --out results/private-seeds
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from ldptree.experiments import lpdt_table_experiment, read_records, run_experiment
from ldptree.experiments._published import lpdt_published

DATASETS = (
    "abalone",
    "airfoil_self_noise",
    "boston_housing",
    "ccpp_power_plant",
    "concrete",
    "cpusmall",
    "geographical_origin_music",
    "qsar_aquatic_toxicity",
    "qsar_fish_toxicity",
    "residential_building",
    "wine_quality_red",
    "wine_quality_white",
)
METHODS = {"lpdt-m": ("LPDT-M", "M"), "lpdt-v": ("LPDT-V", "V")}
WITHIN = 1.25


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[2.0, 6.0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default="results/private-seeds")
    parser.add_argument(
        "--smoke", action="store_true", help="2 seeds, epsilon 2, 2 repetitions, a temporary --out"
    )
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.epsilons, args.reps = [0, 1], [2.0], 2
        with tempfile.TemporaryDirectory() as folder:
            args.out = folder
            _run(args)
        return
    _run(args)


def _run(args: argparse.Namespace) -> None:
    # (method, dataset, epsilon) -> seed -> test MSEs of the selected models
    values: dict[tuple[str, str, float], dict[int, list[float]]] = defaultdict(dict)
    start = time.perf_counter()
    for seed in args.seeds:
        experiment = lpdt_table_experiment(
            datasets=DATASETS,
            epsilons=args.epsilons,
            reps=args.reps,
            tuning="private",
            seed=seed,
        )
        runs = run_experiment(
            experiment, Path(args.out) / f"seed{seed}", progress=False, jobs=args.jobs
        )
        for r in read_records(runs):
            if r.tuning == "private" and r.selected:
                values[(r.method, r.dataset, r.epsilon)].setdefault(seed, []).append(r.value)
    print(
        f"base seeds {args.seeds}, {args.reps} repetitions each, "
        f"{time.perf_counter() - start:.0f} s\n"
    )
    for eps in args.epsilons:
        print(
            f"**epsilon = {eps:g}**: test MSE, mean (sd) over all repetitions; ratio to the paper\n"
        )
        header = "| dataset |"
        for label, _ in METHODS.values():
            header += f" {label} (private) | paper | ratio |"
        print(header)
        print("|---" * (1 + 3 * len(METHODS)) + "|")
        counts: dict[str, list[int]] = {m: [0] * len(args.seeds) for m in METHODS}
        pooled: dict[str, int] = dict.fromkeys(METHODS, 0)
        for dataset in DATASETS:
            line = f"| {dataset} |"
            for method, (_, key) in METHODS.items():
                paper = lpdt_published(dataset, key, eps)
                per_seed = values[(method, dataset, eps)]
                every = np.concatenate([per_seed[s] for s in args.seeds])
                mean = float(every.mean())
                ratio = mean / paper.value if paper else float("nan")
                pooled[method] += int(ratio <= WITHIN)
                for i, s in enumerate(args.seeds):
                    counts[method][i] += int(np.mean(per_seed[s]) / paper.value <= WITHIN)
                paper_text = f"{paper.value:.3g}" if paper else "-"
                line += f" {mean:.3g} ({every.std(ddof=1):.3g}) | {paper_text} | {ratio:.2f} |"
            print(line)
        print()
        print(f"Within 25 % of the paper (of {len(DATASETS)}), epsilon = {eps:g}:\n")
        print("| method | mean over all repetitions | per seed: mean (min-max) | per seed |")
        print("|---|---|---|---|")
        for method, (label, _) in METHODS.items():
            c = counts[method]
            print(
                f"| {label} | {pooled[method]} | {np.mean(c):.1f} ({min(c)}-{max(c)}) | "
                f"{', '.join(str(x) for x in c)} |"
            )
        print()


if __name__ == "__main__":
    main()
