"""The ``ldptree`` command line: ``ldptree demo`` runs the LPDT Figure 1 experiment,
``ldptree reproduce TARGET`` a table or figure of the papers (``lpdt-table``, ``lpdt-figure1``,
``lpdt-figure2``, ``lpct-figure4``, ``lpct-table``), ``ldptree run CONFIG.toml`` a custom
experiment."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI imports the experiments lazily (start-up time)
    from ldptree.experiments import Experiment


def _demo(args: argparse.Namespace) -> int:
    from ldptree.experiments import plot_figure1, run_figure1

    print(
        f"LPDT Figure 1: Y = sin(16X) + N(0,1), X ~ N(0.5, 0.025) on [0,1], eps = {args.epsilon}, "
        f"{args.reps} repetitions\n"
    )
    result, models, sample = run_figure1(
        reps=args.reps, epsilon=args.epsilon, seed=args.seed, progress=print
    )
    table = result.table()
    print("\nBest configuration per arm (oracle choice on mean test MSE; paper: 1.19 -> 1.08):\n")
    print(table)
    print(result.holders_note())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    grid = result.grid_table()
    (out / "figure1.md").write_text(
        f"# LPDT Figure 1, eps = {args.epsilon:g}, {args.reps} repetitions, seed {args.seed}\n\n"
        f"Best per arm (oracle on mean test MSE):\n\n{table}\n\n{result.holders_note()}\n\n"
        f"Every configuration:\n\n{grid}\n"
    )
    png = plot_figure1(models, sample, out / "figure1.png")
    print(f"\nwrote {out / 'figure1.md'} (with the full grid) and {png}")
    return 0


def _finish(csv_path: Path, title: str) -> int:
    from ldptree.experiments import write_report

    for path in write_report(csv_path, title=title):
        print(f"wrote {path}")
    print(f"results: {csv_path} (a re-run with the same --out resumes)")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from ldptree.experiments import lpct_table_experiment, lpdt_table_experiment, run_experiment

    if args.target in _FIGURES:
        return _FIGURES[args.target](args)
    extra: dict[str, Any] = {}
    build: Callable[..., Experiment]
    if args.target == "lpct-table":
        build, title = lpct_table_experiment, "LPCT real-data table (LPCT paper Table 2 protocol)"
        extra["methods"] = args.methods
    else:
        if args.methods:
            raise ValueError("--methods is for lpct-table; lpdt-table runs LPDT-M and LPDT-V")
        build, title = lpdt_table_experiment, "LPDT real-data table (LPDT paper Table 2/5 protocol)"
    experiment = build(
        datasets=args.datasets,
        epsilons=args.epsilons,
        reps=args.reps,
        tuning=args.tuning,
        quick=args.quick,
        data_dir=args.data_dir,
        seed=args.seed,
        **extra,
    )
    csv_path = run_experiment(experiment, _out(args), jobs=args.jobs)
    return _finish(csv_path, title)


def _out(args: argparse.Namespace) -> Path:
    return Path(args.out or f"results/{args.target}")


def _figure1_target(args: argparse.Namespace) -> int:
    from ldptree.experiments import plot_figure1, run_figure1

    reps = args.reps or (2 if args.quick else 10)
    eps = (args.epsilons or [8.0])[0]
    result, models, sample = run_figure1(
        reps=reps, epsilon=eps, seed=args.seed, progress=print, quick=args.quick
    )
    out = _out(args)
    out.mkdir(parents=True, exist_ok=True)
    (out / "figure1.md").write_text(
        f"# LPDT Figure 1, eps = {eps:g}, {reps} repetitions, seed {args.seed}"
        + (" (quick)" if args.quick else "")
        + f"\n\nBest per arm (oracle on mean test MSE):\n\n{result.table()}\n\n"
        f"{result.holders_note()}\n\n"
        f"Every configuration:\n\n{result.grid_table()}\n"
    )
    png = plot_figure1(models, sample, out / "figure1.png")
    print(result.table())
    print(result.holders_note())
    print(f"wrote {out / 'figure1.md'} and {png}")
    return 0


def _figure2_target(args: argparse.Namespace) -> int:
    from ldptree.experiments import run_lpdt_figure2

    for path in run_lpdt_figure2(
        _out(args),
        epsilons=args.epsilons,
        reps=args.reps,
        quick=args.quick,
        seed=args.seed,
        jobs=args.jobs,
    ):
        print(f"wrote {path}")
    return 0


def _figure4_target(args: argparse.Namespace) -> int:
    from ldptree.experiments import run_lpct_figure4

    for path in run_lpct_figure4(
        _out(args), epsilons=args.epsilons, reps=args.reps, quick=args.quick, seed=args.seed
    ):
        print(f"wrote {path}")
    return 0


_FIGURES = {
    "lpdt-figure1": _figure1_target,
    "lpdt-figure2": _figure2_target,
    "lpct-figure4": _figure4_target,
}
TARGETS = ("lpdt-table", "lpdt-figure1", "lpdt-figure2", "lpct-figure4", "lpct-table")


def _run(args: argparse.Namespace) -> int:
    from ldptree.experiments import load_config, run_experiment

    experiment, out = load_config(args.config, quick=args.quick)
    folder = args.out or out
    if folder is None:
        raise ValueError("give the output folder with --out or 'out = ...' in the config")
    csv_path = run_experiment(experiment, folder, jobs=args.jobs)
    return _finish(csv_path, experiment.name)


def _add_reproduce(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser("reproduce", help="reproduce a table of the papers")
    rep.add_argument("target", choices=TARGETS, help="what to reproduce")
    rep.add_argument(
        "--datasets", nargs="+", default=None, help="manifest names or 'all' (default: all)"
    )
    rep.add_argument("--epsilons", nargs="+", type=_budget, default=None, help="privacy budgets")
    rep.add_argument("--reps", type=int, default=None, help="repetitions (default: the target's)")
    rep.add_argument(
        "--methods", nargs="+", default=None, help="lpct-table: method names (default: all)"
    )
    rep.add_argument("--tuning", choices=["oracle", "private"], default="oracle")
    rep.add_argument("--out", default=None, help="output folder (default results/TARGET)")
    rep.add_argument(
        "--quick", action="store_true", help="tiny grids and few reps (CI smoke test, < 2 min)"
    )
    rep.add_argument("--data-dir", default=None, help="data folder (default: $LDPTREE_DATA)")
    rep.add_argument("--seed", type=_seed, default=0, help="base seed (default 0)")
    rep.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    rep.set_defaults(func=_reproduce)
    run = sub.add_parser("run", help="run an experiment described in a TOML file")
    run.add_argument("config", help="the TOML file (see ldptree.experiments.load_config)")
    run.add_argument("--out", default=None, help="output folder (overrides the config's)")
    run.add_argument("--quick", action="store_true", help="2 repetitions, first epsilon only")
    run.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    run.set_defaults(func=_run)


def _budget(text: str) -> float:
    """argparse type of ``--epsilon``/``--epsilons``: a finite number > 0 (``nan`` and ``inf``
    parse as floats but are no budget)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _seed(text: str) -> int:
    """argparse type of ``--seed``: an integer in ``[0, 2**32)``."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**32), got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ldptree", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="LPDT with vs without public data (paper Figure 1)")
    demo.add_argument("--reps", type=int, default=10, help="repetitions (default 10)")
    demo.add_argument("--epsilon", type=_budget, default=8.0, help="privacy budget (default 8)")
    demo.add_argument("--seed", type=_seed, default=0, help="base seed (default 0)")
    demo.add_argument("--out", default="demo-output", help="output folder (default demo-output)")
    demo.set_defaults(func=_demo)
    _add_reproduce(sub)
    args = parser.parse_args(argv)
    if (getattr(args, "reps", 2) or 2) < 2:
        parser.error("--reps must be at least 2 (the table reports a standard deviation)")
    if getattr(args, "epsilon", 1.0) <= 0:
        parser.error("--epsilon must be > 0")
    if any(e <= 0 for e in getattr(args, "epsilons", None) or ()):
        parser.error("--epsilons must be > 0")
    if getattr(args, "jobs", 1) < 1:
        parser.error("--jobs must be >= 1")
    try:
        status: int = args.func(args)
    except (ValueError, TypeError, NotImplementedError, OSError) as err:
        print(f"ldptree {args.command}: error: {err}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
