"""One round across processes: curator publishes, 4 holder processes report for 10^4 holders,
reports arrive corrupted, truncated and duplicated, the collector is killed with SIGKILL midway,
restarts, and recovers exactly the in-process estimate of the accepted reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from protocol_helpers import make_round

from ldptree.protocol import Collector, load_published, parse_report
from ldptree.rounds._aggregators import SumAggregator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKERS, PER_WORKER = 4, 2500


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _python(script: str, *args: Any) -> list[str]:
    return [sys.executable, str(HERE / script), *map(str, args)]


def _corrupt(files: list[Path]) -> dict[str, int]:
    """Damage the report files as a network and careless senders would; return the expected
    rejection counts."""
    lines = [f.read_text().splitlines() for f in files]
    first = json.loads(lines[0][0])
    wrong_version = dict(first, version=2)
    out_of_range = json.loads(lines[0][1])
    out_of_range["fields"]["bits"][0] = 5
    not_integer = json.loads(lines[0][2])
    not_integer["fields"]["code"] = [1.5]
    boolean = json.loads(lines[0][3])
    boolean["fields"]["bits"][0] = True
    extra = [
        "this is not json",
        json.dumps(wrong_version),
        json.dumps(out_of_range),
        json.dumps(not_integer),
        json.dumps(boolean),
    ]
    files[0].write_text("\n".join(lines[0] + extra) + "\n")
    data = files[1].read_bytes()  # a transfer cut in the middle of its last report
    files[1].write_bytes(data[: len(data) - 40])
    dupes = [*lines[0][10:15], lines[2][7]]  # resent reports, across files and within one
    files[2].write_text("\n".join(lines[2] + dupes) + "\n")
    return {"malformed": 2, "version": 1, "range": 1, "type": 2, "duplicate": 6}


@pytest.mark.slow
def test_round_across_processes_with_a_crash(tmp_path: Path) -> None:
    # curator: publish
    published = make_round()
    published_path = tmp_path / "published.json"
    published_path.write_text(json.dumps(published))
    # holders: each process gets only the published file and its own records
    rng = np.random.default_rng(2026)
    n = WORKERS * PER_WORKER
    x = rng.uniform([0.0, -1.0], [10.0, 1.0], (n, 2))
    y = np.clip(x[:, 0] / 2 + rng.normal(0, 0.5, n), 0.0, 5.0)
    files = []
    procs = []
    for w in range(WORKERS):
        part = slice(w * PER_WORKER, (w + 1) * PER_WORKER)
        records = tmp_path / f"records-{w}.npz"
        np.savez(records, x=x[part], y=y[part])
        files.append(tmp_path / f"reports-{w}.jsonl")
        cmd = _python("holder_worker.py", published_path, records, files[-1])
        procs.append(subprocess.Popen(cmd, env=_env()))
    assert [p.wait(timeout=300) for p in procs] == [0] * WORKERS
    expected_rejected = _corrupt(files)

    # the accepted reports, as the test reads them: valid, first occurrence of each id
    round_ = load_published(published)
    accepted: dict[str, list[np.ndarray[Any, Any]]] = {}
    for f in files:
        for line in f.read_bytes().split(b"\n"):
            try:
                report_id, arrays = parse_report(line, round_)
            except ValueError:
                continue
            accepted.setdefault(report_id, arrays)
    assert len(accepted) == n - 1  # the truncated report is lost

    # collector: killed with SIGKILL after two files and half of the third, then restarted
    store = tmp_path / "store"
    first = subprocess.Popen(
        _python("collector_worker.py", store, published_path, 2, *files),
        env=_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    said = [first.stdout.readline().strip() for _ in range(3)]
    assert said == ["committed reports-0.jsonl", "committed reports-1.jsonl", "stalled"]
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=60) == -signal.SIGKILL
    with Collector(store, published) as committed:  # the killed collector's lock is gone
        assert sorted(committed.sources) == ["reports-0.jsonl", "reports-1.jsonl"]
        assert committed.n_reports == 2 * PER_WORKER - 1  # file 1 lost its truncated last line
    second = subprocess.run(
        _python("collector_worker.py", store, published_path, -1, *files),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        "skipped reports-0.jsonl",
        "skipped reports-1.jsonl",
        "committed reports-2.jsonl",
        "committed reports-3.jsonl",
        "done",
    ]

    # the curator's estimate equals the in-process one of exactly the accepted reports
    collector = Collector(store, published)
    assert collector.n_reports == len(accepted)
    assert {k: v for k, v in collector.rejected.items() if v} == expected_rejected
    ids = list(accepted)
    arrays = [np.stack([accepted[i][k] for i in ids]) for k in range(2)]
    agg = SumAggregator(mechanism=round_.mechanism, n_cells=round_.n_cells)
    expected = agg.finalize(agg.update(agg.init(), round_.mechanism._assemble(arrays)))
    got = collector.estimate()
    np.testing.assert_array_equal(got.count, expected.count)
    np.testing.assert_array_equal(got.label_sum, expected.label_sum)
    assert got.n == expected.n == n - 1
    # and it estimates the truth: the debiased counts sum to about n (6 standard deviations;
    # the randomness is the OS's, so this check has no seed; false-failure rate below 2e-9)
    sd = np.sqrt(got.n * round_.n_cells * round_.mechanism.count_variance)
    assert abs(float(got.count.sum()) - got.n) < 6 * sd
