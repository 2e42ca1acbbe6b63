"""Every script in benchmarks/ runs: its ``--smoke`` mode (toy sizes, seconds) in a fresh process
exits 0 and prints its table, so that a benchmark cannot silently rot. Speed is never asserted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

#: What each script's table looks like (a line of it), and what the smoke run needs besides
#: ldptree: ``git`` (a baseline revision is unpacked with ``git archive``), ``data`` (the real
#: datasets). A new script without an entry here fails the test below.
SCRIPTS: dict[str, tuple[str, frozenset[str]]] = {
    "bench_ab.py": (r"^warm_wall .*current/baseline \d", frozenset({"git"})),
    "bench_device.py": (r"^equal lpct-auto float64 n=3000 \w+ vs cpu: True$", frozenset()),
    "bench_collector.py": (r"^\| 256 \| 1,000 \| 1 \|", frozenset()),
    "bench_lpdt.py": (r"^\| 2,000 \| 3 \| \d+ \|", frozenset()),
    "bench_routing.py": (r"^\| 2,000 \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", frozenset()),
    "bench_scale.py": (r"^\| lpct-agg \| 2e\+03 \| 4 \|", frozenset()),
    "bench_stream.py": (r"^\| current \| [\d.]+ \|", frozenset({"git"})),
    "bench_table.py": (
        r"table values, baseline vs current: all \d+ values",
        frozenset({"git", "data"}),
    ),
    "bench_words.py": (r"^  hadamard packed=True: \d+ words", frozenset()),
    "bench_trees.py": (r"^\| 200 \| RandomMaxEdge \|.*\| yes \|$", frozenset({"git"})),
    "depth_rule.py": (r"^\| synthetic d=2 \| 4 \| \d+ \| \d+ \|", frozenset({"data"})),
    "certificates.py": (r"^\| RRLaplaceMechanism \| 1 \| [\d.]+ \|", frozenset()),
    "first_fit.py": (r"^fit 1 [\d.]+ s$", frozenset()),
    "exact_choice.py": (r"^\| sin d=4 \| 2 \| 3 \| [\d.]+ \| [\d.]+ \|", frozenset()),
    "forest_comparison.py": (r"^\| 2 \| 3 \| [\d.]+ ± [\d.]+ \|", frozenset()),
    "guarded_readout.py": (r"^\| concrete \| 2 \| [\d.e+]+ \|", frozenset({"data"})),
    "lpct_denominators.py": (r"^\| rice_cammeo_osmancik \| 2 \| 2 \| 1 \|", frozenset({"data"})),
    "lpct_figure4.py": (r"^\| 2 \| 0\.\d+ ± ", frozenset()),
    "mechanism_comparison.py": (r"^\| concrete \| 2 \| oracle \|", frozenset({"data"})),
    "private_tuning_seeds.py": (r"^\| LPDT-M \| \d+ \| [\d.]+ \(\d+-\d+\) \|", frozenset({"data"})),
    "profile_lpdt.py": (r"^sum of stages +[\d.]+$", frozenset()),
    "two_round_comparison.py": (r"^\| concrete \| 2 \| [\d.]+ ± ", frozenset({"data"})),
}


def test_every_benchmark_script_has_a_smoke_run() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SCRIPTS)


def _has_git() -> bool:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"],
            capture_output=True,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_benchmark_smoke_run(script: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pattern, needs = SCRIPTS[script]
    env = dict(os.environ)
    if "data" in needs:
        env["LDPTREE_DATA"] = str(request.getfixturevalue("data_dir"))
    if "git" in needs and not _has_git():
        pytest.skip("needs a git checkout (the script unpacks a baseline with git archive)")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--smoke"],
        cwd=tmp_path,  # a script that wrote into the working folder would write here
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(pattern, done.stdout, re.MULTILINE), done.stdout[-3000:]
    assert not any(tmp_path.iterdir())
