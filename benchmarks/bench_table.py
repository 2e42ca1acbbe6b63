"""Before/after timing of ``ldptree reproduce lpdt-table`` on a fixed subset, in one run.

The machine these numbers come from is shared, so absolute times drift with the load; what this
script reports is the *ratio* between a baseline revision and the working tree, measured in the
same session with the runs interleaved (baseline, current, baseline, current, ...), plus the
1-minute load average around every run. It also compares the two ``runs.csv`` files value by
value: the speed-ups are meant to leave the table unchanged.

* ``baseline``: ``git archive <rev>`` of the repository (default: the last commit before the
  vectorised grid) unpacked into a temporary folder and imported from there;
* ``current``: the working tree;
* ``(cold)``: with an empty JAX compilation cache of its own (a first run); ``(warm)``
  (``--warm``): again, with the cache its cold run filled. A baseline without the persistent
  cache runs without one.

Every run is a fresh process (``python -c 'ldptree.cli.main(...)'``) writing to its own temporary
folder. Results go to stdout and ``benchmarks/results/bench_table.md`` (git-ignored).

Usage::

    LDPTREE_DATA=/path/to/data .venv/bin/python benchmarks/bench_table.py \\
        [--datasets abalone ccpp_power_plant cpusmall concrete] [--epsilons 2 6] [--reps 2] \\
        [--rounds 1] [--baseline REV] [--warm] [--jobs 1]

``--smoke`` (one small dataset, one epsilon, the CLI's ``--quick`` grids, baseline ``HEAD``
unless given, nothing written under ``benchmarks/results``) runs in seconds; the test suite runs
it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _revisions import ROOT, export

#: The last commit before the vectorised grid (``fit_many``: an oracle cell's rounds batched).
#: (The first wave's table speed-ups were measured against ``10faaca``.)
DEFAULT_BASELINE = "f886b7a"
DEFAULT_DATASETS = ("abalone", "ccpp_power_plant", "cpusmall", "concrete")


def _run(source: Path, argv: list[str], out: Path, cache: str) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds (the child and its workers) and the load averages before and
    after one CLI run from ``source``."""
    full = [*argv, "--out", str(out)]
    code = f"import sys; from ldptree.cli import main; sys.exit(main({full!r}))"
    env = dict(os.environ, PYTHONPATH=str(source), LDPTREE_JAX_CACHE=cache)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=source, check=True, capture_output=True
    )
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return wall, cpu, load_before, os.getloadavg()[0]


def _has_cache_switch(source: Path) -> bool:
    """Whether the revision in ``source`` reads ``LDPTREE_JAX_CACHE`` (a persistent cache)."""
    cache = source / "ldptree" / "_jax_cache.py"
    return cache.exists() and "LDPTREE_JAX_CACHE" in cache.read_text()


def _values(path: Path) -> dict[tuple[str, ...], float]:
    with path.open() as f:
        return {
            (r["dataset"], r["method"], r["epsilon"], r["rep"], r["grid_index"]): float(r["value"])
            for r in csv.DictReader(f)
        }


def _compare(a: Path, b: Path) -> str:
    va, vb = _values(a), _values(b)
    if va.keys() != vb.keys():
        return f"different cells: {len(va)} vs {len(vb)} rows"
    differ = [k for k in va if va[k] != vb[k]]
    if not differ:
        return f"all {len(va)} values bitwise identical"
    rel = max(abs(va[k] - vb[k]) / max(abs(va[k]), 1e-300) for k in differ)
    return (
        f"{len(va) - len(differ)} of {len(va)} values bitwise identical; {len(differ)} differ, "
        f"max relative difference {rel:.2g}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DEFAULT_DATASETS))
    parser.add_argument("--epsilons", nargs="+", default=["2", "6"])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="interleaved before/after pairs")
    parser.add_argument(
        "--baseline", default=None, help=f"git revision (default {DEFAULT_BASELINE})"
    )
    parser.add_argument("--warm", action="store_true", help="also time a warm-cache run")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.baseline = args.baseline or "HEAD"
        args.datasets, args.epsilons, args.reps, args.rounds = ["concrete"], ["2"], 2, 1
    args.baseline = args.baseline or DEFAULT_BASELINE
    cli = [
        "reproduce",
        "lpdt-table",
        "--tuning",
        "oracle",
        "--datasets",
        *args.datasets,
        "--epsilons",
        *args.epsilons,
        "--reps",
        str(args.reps),
        "--jobs",
        str(args.jobs),
        *(["--quick"] if args.smoke else []),
    ]
    rows: list[tuple[str, int, float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="ldptree-bench-table-") as tmp:
        tmp_path = Path(tmp)
        baseline = export(args.baseline, tmp_path)
        outputs: dict[str, Path] = {}
        for r in range(args.rounds):
            # each revision's own cache folder, empty for its cold run; the warm runs reuse it
            base_cache, cache = tmp_path / f"base-cache-{r}", tmp_path / f"jax-cache-{r}"
            runs = [
                ("baseline (cold)", baseline, str(base_cache)),
                ("current (cold)", ROOT, str(cache)),
            ]
            if args.warm:
                runs += [
                    ("baseline (warm)", baseline, str(base_cache)),
                    ("current (warm)", ROOT, str(cache)),
                ]
            for label, source, cache_setting in runs:
                out = tmp_path / f"{label.split()[0]}-{r}-{len(rows)}"
                if "baseline" in label and not _has_cache_switch(baseline):
                    cache_setting = "off"  # a revision without LDPTREE_JAX_CACHE: no cache
                seconds, cpu, before, after = _run(source, cli, out, cache_setting)
                rows.append((label, r, seconds, cpu, before, after))
                outputs.setdefault(label, out / "runs.csv")
                print(
                    f"{label:16s} round {r}: {seconds:8.1f} s wall {cpu:8.1f} s CPU  "
                    f"load {before:.1f} -> {after:.1f}",
                    flush=True,
                )
        same = _compare(outputs["baseline (cold)"], outputs["current (cold)"])

    def mean(label: str) -> float:
        times = [s for name, _, s, *_ in rows if name == label]
        return sum(times) / len(times)

    def ratio(label: str) -> str:
        base = mean(label.replace("current", "baseline"))
        return f"{base / mean(label):.2f}x" if "current" in label else "1.00x"

    lines = [
        f"# bench_table: `ldptree {' '.join(cli)}`",
        "",
        f"baseline `{args.baseline}` vs working tree, {args.rounds} interleaved round(s), "
        f"{os.cpu_count()} CPUs",
        "",
        "| run | round | wall s | CPU s | load before | load after |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {n} | {r} | {s:.1f} | {c:.1f} | {b:.1f} | {a:.1f} |" for n, r, s, c, b, a in rows),
        "",
        *(
            f"- {label}: mean {mean(label):.1f} s, speed-up over the baseline {ratio(label)}"
            for label in dict.fromkeys(n for n, *_ in rows)
        ),
        f"- table values, baseline vs current: {same}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.smoke:
        return 0
    results = ROOT / "benchmarks" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "bench_table.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
