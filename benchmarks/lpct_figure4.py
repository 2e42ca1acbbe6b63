"""LPCT vs LPCT-P vs LPCT-Q (and LPCT-prune) on the gamma = 0.5 pair: the LPCT paper's Figure 4a.

A thin wrapper of :mod:`ldptree.experiments._lpct_figure4` (the protocol, oracle selection and
held-out re-run are documented there; ``ldptree reproduce lpct-figure4`` runs the same code and
also writes the n_Q curve and a figure).

Run: ``python benchmarks/lpct_figure4.py --reps 20`` (writes the tables to stdout and the raw
accuracies to ``benchmarks/results/lpct_figure4.json``). ``--smoke`` (500 private rows, epsilon
2, two repetitions, aggregate simulation, nothing written unless ``--out`` is given) runs in
seconds; the test suite runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ldptree.experiments._lpct_figure4 import (
    Figure4Config,
    holdout_table,
    run,
    summary_table,
    to_json,
)

OUT = Path("benchmarks/results/lpct_figure4.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--n-private", type=int, default=10_000)
    parser.add_argument("--n-public", type=int, default=50)
    parser.add_argument("--gamma", type=float, default=0.5)
    parser.add_argument("--holdout-reps", type=int, default=60)
    parser.add_argument("--simulation", choices=("per_holder", "aggregate"), default="per_holder")
    parser.add_argument("--out", type=Path, default=None, help=f"default {OUT}")
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.reps, args.eps, args.n_private, args.holdout_reps = 2, [2.0], 500, 2
        args.simulation = "aggregate"
    elif args.out is None:
        args.out = OUT
    config = Figure4Config(
        reps=args.reps,
        epsilons=args.eps,
        n_private=args.n_private,
        n_public=args.n_public,
        gamma=args.gamma,
        holdout_reps=args.holdout_reps,
        simulation=args.simulation,
    )
    start = time.perf_counter()
    result = run(config, progress=lambda line: print(line, flush=True))
    print(summary_table(result))
    print(f"\nHeld-out: the configurations above on {args.holdout_reps} fresh repetitions\n")
    print(holdout_table(result))
    elapsed = time.perf_counter() - start
    print(f"\n{args.reps} + {args.holdout_reps} repetitions, {elapsed:.0f} s")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({**to_json(result), "seconds": elapsed}))


if __name__ == "__main__":
    main()
