"""The collector: durable, deduplicated, crash-safe, and exact."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from protocol_helpers import make_round, simulated_report

from ldptree.mechanisms import LaplaceCellClassMechanism, LaplaceCellLabelMechanism
from ldptree.protocol import STORE_FILE, Collector, load_published, parse_report
from ldptree.rounds import SumAggregator


def _reports(published: dict[str, Any], n: int, seed: int = 0) -> list[str]:
    round_ = load_published(published)
    rng = np.random.default_rng(seed)
    xs = rng.uniform([0.0, -1.0], [10.0, 1.0], (n, 2))
    ys = rng.uniform(0.0, 5.0, n)
    return [json.dumps(simulated_report(x, float(y), round_)) for x, y in zip(xs, ys, strict=True)]


def _in_process(published: dict[str, Any], texts: list[str]) -> Any:
    """The in-process estimate of the same reports: stacked arrays through SumAggregator."""
    round_ = load_published(published)
    parsed = [parse_report(t, round_)[1] for t in texts]
    arrays = [np.stack([p[i] for p in parsed]) for i in range(len(parsed[0]))]
    agg = SumAggregator(mechanism=round_.mechanism, n_cells=round_.n_cells)
    return agg.finalize(agg.update(agg.init(), round_.mechanism._assemble(arrays)))


def _same(a: Any, b: Any) -> None:
    np.testing.assert_array_equal(a.count, b.count)
    np.testing.assert_array_equal(a.label_sum, b.label_sum)
    assert a.n == b.n


def test_commit_restart_dedupe_and_exact_estimate(
    published: dict[str, Any], tmp_path: Path
) -> None:
    texts = _reports(published, 60)
    c = Collector(tmp_path, published)
    assert [c.submit(t) for t in texts[:40]] == [None] * 40
    assert c.submit(texts[0]) == "duplicate"  # pending duplicate
    assert c.commit() == 40
    with pytest.raises(ValueError, match="open in another collector"):
        Collector(tmp_path, published)
    c.close()
    c2 = Collector(tmp_path, published)  # restart
    assert c2.n_reports == 40
    assert c2.submit(texts[5]) == "duplicate"  # committed duplicate
    assert c2.submit("{") == "malformed"
    for t in texts[40:]:
        assert c2.submit(t) is None
    c2.commit()
    c2.close()
    c3 = Collector(tmp_path, published)
    assert c3.n_reports == 60
    assert c3.rejected["duplicate"] == 2 and c3.rejected["malformed"] == 1
    _same(c3.estimate(), _in_process(published, texts))


def test_pending_reports_are_lost_until_committed(
    published: dict[str, Any], tmp_path: Path
) -> None:
    texts = _reports(published, 5, seed=1)
    c = Collector(tmp_path, published)
    for t in texts:
        c.submit(t)
    c.commit()
    c.submit(_reports(published, 1, seed=2)[0])
    c.submit("garbage")
    c.close()  # as a crash would
    again = Collector(tmp_path, published)  # "crash" before commit
    assert again.n_reports == 5 and again.rejected["malformed"] == 0


def test_crash_in_the_middle_of_a_commit(published: dict[str, Any], tmp_path: Path) -> None:
    """A commit interrupted at the operating-system level (the process cannot grow the store's
    write-ahead log: EFBIG) keeps what was committed and nothing of the failed commit."""
    texts = _reports(published, 8, seed=3)
    script = tmp_path / "commit_until_efbig.py"
    script.write_text(_EFBIG_SCRIPT)
    published_path = tmp_path / "published.json"
    published_path.write_text(json.dumps(published))
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    store = tmp_path / "store"
    out = subprocess.run(
        [
            sys.executable,
            str(script),
            str(store),
            str(published_path),
            str(tmp_path / "texts.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr
    # the pending reports may survive the failed commit or be rolled back with it; the
    # committed ones are there
    assert out.stdout.split()[:3] == ["committed", "4", "failed"], out.stdout
    assert out.stdout.split()[3:] in (["4", "4"], ["0", "4"]), out.stdout
    assert "disk" in out.stderr or "full" in out.stderr, out.stderr
    restarted = Collector(store, published)
    assert restarted.n_reports == 4
    for t in texts[4:]:  # not acknowledged: the sender sends them again
        assert restarted.submit(t) is None
    restarted.commit()
    restarted.close()
    _same(Collector(store, published).estimate(), _in_process(published, texts))


# Commits 4 reports, then caps the process's file size at one page so that the next commit cannot
# write its first log frame (EFBIG, SIGXFSZ ignored), and reports how that commit ended.
_EFBIG_SCRIPT = """
import json, resource, signal, sqlite3, sys
from pathlib import Path
from ldptree.protocol import Collector
store, published, texts = sys.argv[1:]
texts = json.loads(Path(texts).read_text())
c = Collector(store, json.loads(Path(published).read_text()))
for t in texts[:4]:
    c.submit(t)
print("committed", c.commit())
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
for t in texts[4:]:
    c.submit(t)
try:
    c.commit()
    print("not failed")
except sqlite3.Error as err:
    print("failed", c.n_pending, c.n_reports)
    print(err, file=sys.stderr)
"""


def _env() -> dict[str, str]:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    return env


def test_corrupt_store_and_other_round_are_refused(
    published: dict[str, Any], tmp_path: Path
) -> None:
    c = Collector(tmp_path, published)
    for t in _reports(published, 3, seed=4):
        c.submit(t)
    c.commit()
    c.close()
    other = make_round(LaplaceCellLabelMechanism(epsilon=1.0, label_bound=5.0))
    with pytest.raises(ValueError, match="another published round"):
        Collector(tmp_path, other)
    same_again = make_round()  # the same partition and mechanism published again: a new round
    with pytest.raises(ValueError, match="another published round"):
        Collector(tmp_path, same_again)
    with sqlite3.connect(tmp_path / STORE_FILE) as db:  # bit rot in one stored report
        (fields,) = db.execute("SELECT fields FROM reports WHERE seq = 2").fetchone()
        damaged = bytes([fields[0] ^ 1]) + fields[1:]
        db.execute("UPDATE reports SET fields = ? WHERE seq = 2", (damaged,))
    db.close()
    with (
        Collector(tmp_path, published) as c,
        pytest.raises(ValueError, match="does not match its checksum"),
    ):
        c.estimate()


def test_ingest_file_is_one_unit(published: dict[str, Any], tmp_path: Path) -> None:
    texts = _reports(published, 6, seed=5)
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([*texts, texts[0], "", "not json"]) + "\n")
    c = Collector(tmp_path / "store", published)
    assert c.ingest_file(source) == 6
    assert c.ingest_file(source) is None  # already committed: skipped, nothing counted twice
    c.close()
    again = Collector(tmp_path / "store", published)
    assert again.n_reports == 6
    assert again.rejected["duplicate"] == 1 and again.rejected["malformed"] == 1
    with pytest.raises(ValueError, match="no report"):
        Collector(tmp_path / "empty", published).estimate()


@pytest.mark.parametrize(
    "mechanism",
    [
        LaplaceCellLabelMechanism(epsilon=1.5, label_bound=(0.0, 5.0)),
        LaplaceCellClassMechanism(epsilon=1.0, n_classes=2),
        LaplaceCellClassMechanism(epsilon=2.0, n_classes=3),
    ],
    ids=lambda m: f"{type(m).__name__}",
)
def test_every_registered_mechanism_round_trips(mechanism: Any, tmp_path: Path) -> None:
    published = make_round(mechanism)
    round_ = load_published(published)
    rng = np.random.default_rng(6)
    texts = []
    for x in rng.uniform([0.0, -1.0], [10.0, 1.0], (30, 2)):
        label: Any = int(rng.integers(0, 3)) if mechanism.labels().integer else float(x[0] / 2)
        texts.append(json.dumps(simulated_report(x, label, round_)))
    with Collector(tmp_path, published) as c:
        assert [c.submit(t) for t in texts] == [None] * 30
        c.commit()
    with Collector(tmp_path, published) as c:
        _same(c.estimate(), _in_process(published, texts))


def test_stores_of_several_machines_add_up_to_one_store(
    published: dict[str, Any], tmp_path: Path
) -> None:
    """Three collectors (three machines) each store a disjoint share of one round's reports;
    their exact integer sums merged are the sums of one store holding every report, and give
    the same estimate bit for bit."""
    texts = _reports(published, 45, seed=8)
    with Collector(tmp_path / "one", published) as one:
        for t in texts:
            one.submit(t)
        one.commit()
        whole = one.summary()
        single = one.estimate()
    aggregator = SumAggregator(mechanism=load_published(published).mechanism, n_cells=8)
    merged = aggregator.init()
    for machine in range(3):
        with Collector(tmp_path / f"machine-{machine}", published) as part:
            for t in texts[machine::3]:
                part.submit(t)
            part.commit()
            merged = aggregator.merge(merged, part.summary())
    assert merged.n == whole.n == 45
    for name in whole.stats:
        np.testing.assert_array_equal(merged.stats[name], whole.stats[name])
    _same(aggregator.finalize(merged), single)
    _same(single, _in_process(published, texts))
    with Collector(tmp_path / "small-batches", published) as c:  # any batch size, same sums
        for t in texts:
            c.submit(t)
        c.commit()
        batches = list(c.report_batches(batch_size=7))
        assert [len(b.bits) for b in batches] == [7] * 6 + [3]
