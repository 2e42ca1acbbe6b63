"""The ``ldptree`` command line: ``ldptree demo`` runs LPDT with and without public data on the
LPDT paper's Figure 1 design,
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


#: ``ldptree demo``'s default budget (:data:`ldptree.experiments._figure1.DEMO_EPSILON`).
DEMO_EPSILON = 4.0


def _demo(args: argparse.Namespace) -> int:
    from ldptree.experiments import plot_figure1, run_figure1

    print(
        "LPDT with and without public data: Y = sin(16X) + N(0,1), X normal with mean 0.5 and "
        f"variance 0.025 on [0,1], eps = {args.epsilon:g}, {args.reps} repetitions, the "
        "estimator's defaults in both arms\n"
    )
    result, models, sample = run_figure1(
        reps=args.reps, epsilon=args.epsilon, seed=args.seed, progress=print
    )
    table = result.table()
    print("\nBest configuration per arm (oracle choice on mean test MSE; Bayes risk 1):\n")
    print(table)
    print(result.holders_note())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    grid = result.grid_table()
    (out / "figure1.md").write_text(
        f"# LPDT with and without public data, eps = {args.epsilon:g}, {args.reps} "
        f"repetitions, seed {args.seed}\n\n"
        f"Best per arm (oracle on mean test MSE):\n\n{table}\n\n{result.holders_note()}\n\n"
        f"Every configuration:\n\n{grid}\n"
    )
    png = plot_figure1(models, sample, out / "figure1.png", result)
    print(
        f"\nwrote {out / 'figure1.md'} (with the full grid), {png} and {png.with_suffix('.json')}"
    )
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
        reps=reps, epsilon=eps, seed=args.seed, progress=print, quick=args.quick, paper=True
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
    png = plot_figure1(models, sample, out / "figure1.png", result)
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


_REPRODUCE = """\
Reproduce a table or figure of the LPDT and LPCT papers.

targets:
  lpdt-table    LPDT paper, real-data table: LPDT-M and LPDT-V on every regression
                dataset of the data folder, public : train : test = 1 : 7 : 2
  lpct-table    LPCT paper, Table 2: the LPCT family and the classification baselines
  lpdt-figure1  LPDT paper, Figure 1 (its settings): public data on a concentrated marginal
  lpdt-figure2  LPDT paper, Figure 2: test MSE against depth, leaf size and epsilon
  lpct-figure4  LPCT paper, Figure 4: accuracy against the number of public rows

The tables write runs.csv (one row per fit; a re-run with the same --out resumes),
results.md and figures into the output folder.
"""

_RUN = """\
Run the experiment a TOML file describes: its data sources, methods, privacy budgets,
repetitions and tuning (see the documentation page "Experiment configuration").
Writes runs.csv, results.md and figures into the output folder; a re-run resumes.
"""

_DEMO = """\
LPDT with and without public data (the LPDT paper's Figure 1 design): Y = sin(16 X) + N(0, 1)
with X normal of mean 0.5 and variance 0.025, truncated to [0, 1]. Arm "no public": 8,000
private holders on the data-free dyadic grid; arm "public": 7,000 private holders and 500
public rows on which the tree is grown. Both arms use the estimator's defaults and the same
label bound. Prints the best configuration per arm and writes figure1.md (every configuration),
figure1.png and figure1.json (the numbers the figure shows) into the output folder.
"""


def _add_reproduce(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser(
        "reproduce",
        help="reproduce a table or figure of the papers",
        description=_REPRODUCE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument("target", choices=TARGETS, help="what to reproduce (listed above)")
    rep.add_argument(
        "--datasets",
        nargs="+",
        default=None,
        help="dataset names of the data folder's manifest, or 'all' (default: all; tables only)",
    )
    rep.add_argument(
        "--epsilons",
        nargs="+",
        type=_budget,
        default=None,
        help="per-holder privacy budgets, each a number > 0 (default: the target's)",
    )
    rep.add_argument(
        "--reps", type=int, default=None, help="repetitions, at least 2 (default: the target's)"
    )
    rep.add_argument(
        "--methods", nargs="+", default=None, help="lpct-table only: method names (default: all)"
    )
    rep.add_argument(
        "--tuning",
        choices=["oracle", "private"],
        default="oracle",
        help="how hyper-parameters are chosen (tables only): 'oracle' picks the grid point "
        "with the best test score, as the papers do (not private); 'private' chooses from "
        "privatized validation losses, so the whole pipeline is epsilon-LDP per holder "
        "(default: oracle)",
    )
    rep.add_argument("--out", default=None, help="output folder (default: results/TARGET)")
    rep.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: small grids, few repetitions, the smallest datasets (minutes)",
    )
    rep.add_argument(
        "--data-dir",
        default=None,
        help="the data folder holding manifest.csv (default: $LDPTREE_DATA; tables only)",
    )
    rep.add_argument(
        "--seed", type=_seed, default=0, help="base seed, an integer in [0, 2**32) (default: 0)"
    )
    rep.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="worker processes running (dataset, repetition) groups side by side (default: 1)",
    )
    rep.set_defaults(func=_reproduce)
    run = sub.add_parser(
        "run",
        help="run an experiment described in a TOML file",
        description=_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("config", help="the experiment's TOML file")
    run.add_argument("--out", default=None, help="output folder (default: the file's 'out' key)")
    run.add_argument(
        "--quick", action="store_true", help="a smoke test: 2 repetitions, the first epsilon only"
    )
    run.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="worker processes running (source, repetition) groups side by side (default: 1)",
    )
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


#: ``ldptree --help``: plain text (no markup), one line per command.
DESCRIPTION = """\
Locally differentially private tree estimators with public data.

commands:
  demo        LPDT with and without public data, on the LPDT paper's Figure 1 design
  reproduce   a table or figure of the LPDT and LPCT papers
  run         an experiment described in a TOML file

Run 'ldptree COMMAND --help' for a command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``ldptree`` argument parser (every command and option, with plain-text help)."""
    parser = argparse.ArgumentParser(
        prog="ldptree",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="LPDT with and without public data (the LPDT paper's Figure 1 design)",
        description=_DEMO,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--reps", type=int, default=10, help="repetitions, at least 2 (default: 10)")
    demo.add_argument(
        "--epsilon",
        type=_budget,
        default=DEMO_EPSILON,
        help=f"per-holder privacy budget, a number > 0 (default: {DEMO_EPSILON:g})",
    )
    demo.add_argument(
        "--seed", type=_seed, default=0, help="base seed, an integer in [0, 2**32) (default: 0)"
    )
    demo.add_argument("--out", default="demo-output", help="output folder (default: demo-output)")
    demo.set_defaults(func=_demo)
    _add_reproduce(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
