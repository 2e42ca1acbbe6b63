"""The collector's capacity benchmark runs (its smoke mode: seconds); speed is never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_capacity_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_collector.py"),
            "--smoke",
            "--out",
            str(out),
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(out.with_suffix(".json").read_text())
    (row,) = results["rows"]
    assert (row["cells"], row["reports"], row["files"]) == (256, 1000, 1)
    assert row["store_mb"] > 0 and row["ingest_peak_rss_mib"] >= row["opened_rss_mib"] > 0
    assert results["oversized"]["line_mb"] > 4
    assert "| 256 | 1,000 | 1 |" in out.with_suffix(".md").read_text()
    # the scratch folder (input files, stores) is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json", "bench.md"]
