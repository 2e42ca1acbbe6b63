"""The collector: durable, deduplicated, crash-safe, and exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from protocol_helpers import make_round

from ldptree.mechanisms import LaplaceCellClassMechanism, LaplaceCellLabelMechanism
from ldptree.protocol import Collector, _collector, holder_report, load_published, parse_report
from ldptree.rounds._aggregators import SumAggregator


def _reports(published: dict[str, Any], n: int, seed: int = 0) -> list[str]:
    round_ = load_published(published)
    rng = np.random.default_rng(seed)
    xs = rng.uniform([0.0, -1.0], [10.0, 1.0], (n, 2))
    ys = rng.uniform(0.0, 5.0, n)
    return [json.dumps(holder_report(x, float(y), round_)) for x, y in zip(xs, ys, strict=True)]


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


def test_crash_between_chunk_and_manifest(
    published: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = _reports(published, 8, seed=3)
    c = Collector(tmp_path, published)
    for t in texts[:4]:
        c.submit(t)
    c.commit()
    real = _collector._write_atomic

    def crash_on_manifest(folder: Path, name: str, data: bytes) -> None:
        if name == "manifest.json":
            raise OSError("power cut")
        real(folder, name, data)

    monkeypatch.setattr(_collector, "_write_atomic", crash_on_manifest)
    for t in texts[4:]:
        c.submit(t)
    with pytest.raises(OSError, match="power cut"):
        c.commit()
    assert (tmp_path / "chunk-000001.json").exists()  # the orphan chunk
    monkeypatch.setattr(_collector, "_write_atomic", real)
    c.close()
    (tmp_path / ".manifest.json.tmp").write_bytes(b"{half")  # a torn temporary file
    restarted = Collector(tmp_path, published)
    assert restarted.n_reports == 4
    assert not (tmp_path / "chunk-000001.json").exists()
    assert not (tmp_path / ".manifest.json.tmp").exists()
    for t in texts[4:]:  # not acknowledged: the sender sends them again
        assert restarted.submit(t) is None
    restarted.commit()
    restarted.close()
    _same(Collector(tmp_path, published).estimate(), _in_process(published, texts))


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
    chunk = tmp_path / "chunk-000000.json"
    data = bytearray(chunk.read_bytes())
    assert data[:9] == b'{"ids":["'
    data[9] = ord("0") if data[9] != ord("0") else ord("1")  # still valid JSON, other id
    chunk.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        Collector(tmp_path, published)


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
        texts.append(json.dumps(holder_report(x, label, round_)))
    with Collector(tmp_path, published) as c:
        assert [c.submit(t) for t in texts] == [None] * 30
        c.commit()
    with Collector(tmp_path, published) as c:
        _same(c.estimate(), _in_process(published, texts))
