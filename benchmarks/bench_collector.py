"""Capacity of the deployment collector (``ldptree.protocol.Collector``): ingestion throughput,
peak memory, store size, commit latency and streaming estimation, from 10^3 to 10^7 reports.

For each (cells, reports) configuration, report files are written to a scratch folder (not
timed): valid reports of an RR-Laplace round (``epsilon = 2``) over a data-free partition with
that many cells, random bits and label codes in their ranges under fresh report ids (the
collector cannot tell them from real holders' reports; making 10^7 real ones would time the
holders, not the collector), at most ``--file-reports`` reports per file. Then, each in a fresh
process (its peak resident memory is its own: ``VmHWM`` of ``/proc/self/status``):

* **ingest**: open a new store (the resident memory after opening is the Python process with
  ldptree, JAX and the published round loaded and certified; at 65,536 cells the round alone
  is a 17 MB JSON partition), reset the peak (``/proc/self/clear_refs``), time 20 one-report
  ``submit`` + ``commit`` (empty store), ingest every file with ``ingest_file`` (wall and CPU
  time, reports/s), time 20 one-report commits again (full store: a commit's cost does not
  grow with the store); the peak is that of this phase;
* **estimate**: reopen the store, reset the peak and time ``estimate()`` (streams the stored
  reports in batches; includes the one-off JIT compilation of the summary kernel).

The store's size on disk is measured after the ingest process closed it. One more process
ingests a file holding one valid report, a ``--oversized-mb`` single line, and another valid
report (the long line is rejected unread). The input files are deleted after each
configuration. Results are printed as a Markdown table and written to
``benchmarks/results/bench_collector.md`` (and ``.json``).

    .venv/bin/python benchmarks/bench_collector.py                      # the full table
    .venv/bin/python benchmarks/bench_collector.py --cells 256 --sizes 1e3,1e4
    .venv/bin/python benchmarks/bench_collector.py --smoke              # seconds; a test runs it
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

_STATUS = """
def memory():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {k: int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}
def reset_peak():  # Linux: VmHWM starts again from VmRSS
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
"""

INGEST = (
    _STATUS
    + r"""
import json, statistics, sys, time
from pathlib import Path
from ldptree.protocol import Collector
store, published, singles, *files = sys.argv[1:]
singles = Path(singles).read_text().splitlines()
c = Collector(store, json.loads(Path(published).read_text()))
opened, opening_peak = memory()["VmRSS"], memory()["VmHWM"]
reset_peak()
def commit_each(lines):
    times = []
    for line in lines:
        t = time.perf_counter()
        c.submit(line)
        c.commit()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)
empty = commit_each(singles[: len(singles) // 2])
wall, cpu = time.perf_counter(), time.process_time()
accepted = sum(c.ingest_file(f) or 0 for f in files)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
full = commit_each(singles[len(singles) // 2 :])
out = {"accepted": accepted, "wall": wall, "cpu": cpu, "opened_rss": opened,
       "opening_peak_rss": opening_peak, "peak_rss": memory()["VmHWM"],
       "commit_empty_ms": empty, "commit_full_ms": full,
       "rejected": {k: v for k, v in c.rejected.items() if v}}
c.close()
print(json.dumps(out))
"""
)

ESTIMATE = (
    _STATUS
    + r"""
import json, sys, time
from pathlib import Path
from ldptree.protocol import Collector
store, published = sys.argv[1:]
c = Collector(store, json.loads(Path(published).read_text()))
opened = memory()["VmRSS"]
reset_peak()
wall = time.perf_counter()
estimate = c.estimate()
wall = time.perf_counter() - wall
print(json.dumps({"wall": wall, "n": int(estimate.n), "opened_rss": opened,
                  "peak_rss": memory()["VmHWM"]}))
c.close()
"""
)


def child(code: str, *args: object) -> dict[str, Any]:
    """The last stdout line of ``python -c code args...`` (this tree), parsed as JSON."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LDPTREE_JAX_CACHE="off")
    out = subprocess.run(
        [sys.executable, "-c", code, *(str(a) for a in args)],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"child failed ({out.returncode}):\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def published_round(cells: int) -> dict[str, Any]:
    from ldptree.mechanisms import RRLaplaceMechanism
    from ldptree.partitions import MaxEdgePartitioner, RangeScaler
    from ldptree.protocol import publish

    depth = int(np.log2(cells))
    if 2**depth != cells:
        raise SystemExit(f"--cells must be powers of two, got {cells}")
    partition = MaxEdgePartitioner(max_depth=depth).fit(np.empty((0, 2)))
    mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(0.0, 1.0))
    return publish(partition, RangeScaler.unit(2), mechanism)


def _render(values: np.ndarray[Any, Any], lo: int, hi: int) -> list[bytes]:
    """Each row of ``values`` as the inside of a JSON list of integers."""
    if lo >= 0 and hi <= 9:  # one digit each: build every row's bytes at once
        n, count = values.shape
        out = np.full((n, 2 * count - 1), ord(","), dtype=np.uint8)
        out[:, ::2] = values.astype(np.uint8) + ord("0")
        flat = out.tobytes()
        width = 2 * count - 1
        return [flat[i * width : (i + 1) * width] for i in range(n)]
    return [",".join(map(str, row)).encode() for row in values.tolist()]


def write_reports(
    folder: Path, published: dict[str, Any], n: int, per_file: int, seed: int
) -> list[Path]:
    """``n`` valid reports in files of at most ``per_file`` lines (generated chunk by chunk)."""
    from ldptree.protocol import load_published

    round_ = load_published(published)
    layout = round_.layout
    row_bytes = 150 + sum(2 * int(np.prod(shape)) for _, shape, _, _ in layout)
    chunk = max(1, min(per_file, (1 << 24) // row_bytes))
    head = b'{"schema":"ldptree.protocol/report","version":1,"report_id":"'
    mid = b'","round":"' + round_.fingerprint.encode() + b'","fields":{'
    rng = np.random.default_rng(seed)
    files = []
    for start in range(0, n, per_file):
        path = folder / f"reports-{seed}-{start // per_file:04d}.jsonl"
        files.append(path)
        with open(path, "wb") as f:
            for lo_row in range(start, min(n, start + per_file), chunk):
                m = min(chunk, n - lo_row, start + per_file - lo_row)
                ids = rng.integers(0, 256, (m, 16), dtype=np.uint8)
                parts = []
                for name, shape, lo, hi in layout:
                    values = rng.integers(lo, hi + 1, (m, int(np.prod(shape))))
                    parts.append((name.encode(), _render(values, lo, hi)))
                lines = []
                for i in range(m):
                    fields = b",".join(b'"%s":[%s]' % (name, rows[i]) for name, rows in parts)
                    lines.append(head + ids[i].tobytes().hex().encode() + mid + fields + b"}}\n")
                f.write(b"".join(lines))
    return files


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def run_config(work: Path, cells: int, n: int, per_file: int, n_singles: int) -> dict[str, Any]:
    published = published_round(cells)
    published_path = work / "published.json"
    published_path.write_text(json.dumps(published))
    files = write_reports(work, published, n, per_file, seed=1)
    (singles,) = write_reports(work, published, n_singles, n_singles, seed=2)
    store = work / f"store-{cells}-{n}"
    try:
        ingest = child(INGEST, store, published_path, singles, *files)
        estimate = child(ESTIMATE, store, published_path)
        store_bytes = folder_bytes(store)
        input_bytes = sum(f.stat().st_size for f in files)
    finally:
        for f in [*files, singles]:
            f.unlink()
        shutil.rmtree(store, ignore_errors=True)
    assert ingest["accepted"] == n and estimate["n"] == n + n_singles
    return {
        "cells": cells,
        "reports": n,
        "files": len(files),
        "input_mb": input_bytes / 1e6,
        "ingest_s": ingest["wall"],
        "ingest_cpu_s": ingest["cpu"],
        "reports_per_s": n / ingest["wall"],
        "opened_rss_mib": ingest["opened_rss"],
        "opening_peak_rss_mib": ingest["opening_peak_rss"],
        "ingest_peak_rss_mib": ingest["peak_rss"],
        "store_mb": store_bytes / 1e6,
        "store_bytes_per_report": store_bytes / (n + n_singles),
        "commit_empty_ms": ingest["commit_empty_ms"],
        "commit_full_ms": ingest["commit_full_ms"],
        "estimate_s": estimate["wall"],
        "estimate_peak_rss_mib": estimate["peak_rss"],
    }


def run_oversized(work: Path, megabytes: int) -> dict[str, Any]:
    published = published_round(256)
    published_path = work / "published.json"
    published_path.write_text(json.dumps(published))
    (good,) = write_reports(work, published, 2, 2, seed=3)
    first, second = good.read_bytes().splitlines(keepends=True)
    path = work / "oversized.jsonl"
    with open(path, "wb") as f:
        f.write(first)
        f.write(b"[" + b"1," * (megabytes * 500_000) + b"1]\n")
        f.write(second)
    (singles,) = write_reports(work, published, 2, 2, seed=4)
    store = work / "store-oversized"
    try:
        ingest = child(INGEST, store, published_path, singles, path)
        size = path.stat().st_size
    finally:
        for f in (good, path, singles):
            f.unlink()
        shutil.rmtree(store, ignore_errors=True)
    assert ingest["accepted"] == 2 and ingest["rejected"] == {"oversized": 1}
    return {
        "line_mb": size / 1e6,
        "ingest_s": ingest["wall"],
        "opened_rss_mib": ingest["opened_rss"],
        "peak_rss_mib": ingest["peak_rss"],
    }


def table(rows: list[dict[str, Any]], oversized: dict[str, Any] | None) -> str:
    head = (
        "| cells | reports | files | input MB | ingest s (CPU s) | reports/s (per CPU s) | RSS "
        "after open / ingest peak MiB | store MB (B/report) | commit ms empty / full | "
        "estimate s | estimate peak MiB |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r['cells']:,} | {r['reports']:,} | {r['files']} | {r['input_mb']:,.0f} | "
            f"{r['ingest_s']:,.1f} ({r['ingest_cpu_s']:,.1f}) | {r['reports_per_s']:,.0f} "
            f"({r['reports'] / r['ingest_cpu_s']:,.0f}) | "
            f"{r['opened_rss_mib']:.0f} / {r['ingest_peak_rss_mib']:.0f} | "
            f"{r['store_mb']:,.1f} ({r['store_bytes_per_report']:,.0f}) | "
            f"{r['commit_empty_ms']:.1f} / {r['commit_full_ms']:.1f} | {r['estimate_s']:,.1f} | "
            f"{r['estimate_peak_rss_mib']:.0f} |"
        )
    if oversized is not None:
        lines.append("")
        lines.append(
            f"One {oversized['line_mb']:,.0f} MB line between two valid reports: ingested in "
            f"{oversized['ingest_s']:.1f} s, RSS {oversized['opened_rss_mib']:.0f} MiB after "
            f"opening the store, peak {oversized['peak_rss_mib']:.0f} MiB."
        )
    return "\n".join(lines)


def _sizes(text: str) -> list[int]:
    return [int(float(v)) for v in text.split(",") if v]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default="256,65536", help="comma-separated cell counts")
    parser.add_argument("--sizes", default="1e3,1e4,1e5,1e6,1e7", help="report counts")
    parser.add_argument(
        "--max-reports",
        default="65536:1e5",
        help="per cell count, the largest report count run (CELLS:N,...): the input of 10^6 "
        "reports at 65,536 cells would be 131 GB of JSON",
    )
    parser.add_argument("--file-reports", type=float, default=1e6, help="reports per file")
    parser.add_argument("--singles", type=int, default=40, help="one-report commits timed")
    parser.add_argument("--oversized-mb", type=int, default=300, help="0: skip")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch folder")
    parser.add_argument("--smoke", action="store_true", help="256 cells, 10^3 reports, 4 MB line")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_collector")
    args = parser.parse_args(argv)
    cells = _sizes(args.cells)
    sizes = _sizes(args.sizes)
    caps = {int(k): int(float(v)) for k, v in (p.split(":") for p in args.max_reports.split(","))}
    if args.smoke:
        cells, sizes, args.singles, args.oversized_mb = [256], [1000], 6, 4
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)  # a scratch folder named by the user
    work = Path(tempfile.mkdtemp(dir=args.workdir, prefix="bench-collector-"))
    rows = []
    started = time.time()
    try:
        for c in cells:
            for n in sizes:
                if n > caps.get(c, n):
                    print(f"skipped: {n:,} reports at {c:,} cells (--max-reports)", flush=True)
                    continue
                row = run_config(work, c, n, int(args.file_reports), args.singles)
                rows.append(row)
                print(json.dumps(row), flush=True)
        oversized = run_oversized(work, args.oversized_mb) if args.oversized_mb else None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = table(rows, oversized)
    load = os.getloadavg()
    text += (
        f"\n\n{os.cpu_count()} CPUs, load average {load[0]:.1f} at the end; "
        f"{time.time() - started:,.0f} s in all."
    )
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps({"rows": rows, "oversized": oversized}))


if __name__ == "__main__":
    main()
