"""Fault injection on the collector: an exception at every statement boundary, real signals,
SIGKILL, a second collector, a dead lock owner, missing and foreign files. Every acknowledged
report must end up stored exactly once, and the store must always load."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest
from protocol_helpers import simulated_report

from ldptree.protocol import STORE_FILE, Collector, _collector, load_published

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROTOCOL = str(ROOT / "ldptree" / "protocol")


def _texts(published: dict[str, Any], n: int, seed: int) -> list[str]:
    """``n`` distinct valid reports: one holder's report under ``n`` fresh report ids (seeded);
    the collector cannot tell them from ``n`` holders' reports."""
    base = simulated_report([2.0, 0.5], 1.0, load_published(published))
    rng = np.random.default_rng(seed)
    ids = {bytes(rng.integers(0, 256, 16, dtype=np.uint8)).hex() for _ in range(n)}
    assert len(ids) == n
    return [json.dumps({**base, "report_id": i}) for i in sorted(ids)]


@pytest.fixture(scope="module")
def texts(published: dict[str, Any]) -> list[str]:
    return _texts(published, 12, seed=11)


def _state(c: Collector) -> dict[str, Any]:
    """Everything the collector holds: the committed view and the pending (writer's) view,
    read straight from its two connections (no clean-up runs first)."""
    writer, reader = c._writer, c._reader
    assert writer is not None and reader is not None

    def view(conn: Any) -> tuple[Any, ...]:
        return (
            conn.execute("SELECT report_id, fields, checksum FROM reports ORDER BY seq").fetchall(),
            conn.execute("SELECT digest, reason FROM rejections ORDER BY digest").fetchall(),
            conn.execute("SELECT * FROM sources ORDER BY name").fetchall(),
            conn.execute("SELECT * FROM counts ORDER BY what").fetchall(),
        )

    return {"committed": view(reader), "pending": view(writer)}


class InjectedError(Exception):
    """The fault raised at one statement boundary."""


def _boundaries(run: Callable[[], Any], fail_at: int | None) -> int:
    """Run ``run`` under a tracer that counts the statement boundaries (``line`` events) of
    ``ldptree.protocol`` code, raising :class:`InjectedError` at boundary ``fail_at``; returns the
    number of boundaries passed."""
    seen = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal seen
        if event == "line":
            if seen == fail_at:
                seen += 1
                raise InjectedError(f"boundary {fail_at} ({frame.f_code.co_name}:{frame.f_lineno})")
            seen += 1
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(PROTOCOL) else None

    sys.settrace(global_)
    try:
        run()
    finally:
        sys.settrace(None)
    return seen


def _setup(published: dict[str, Any], texts: list[str], folder: Path) -> Collector:
    """A store with 3 committed reports and 2 pending (and one pending rejection)."""
    c = Collector(folder, published)
    for t in texts[:3]:
        c.submit(t)
    c.submit("{broken")
    c.commit()
    for t in texts[3:5]:
        c.submit(t)
    c.submit('["pending", "garbage"]')
    return c


def _report_file(folder: Path, texts: list[str]) -> Path:
    path = folder / "drop.jsonl"
    lines = [texts[5], texts[6], texts[0], texts[3], "not json", "", texts[5], "[1]"]
    path.write_text("\n".join(lines) + "\n")
    return path


OPERATIONS: dict[str, Callable[[Collector, list[str], Path], Any]] = {
    "submit-new": lambda c, t, f: c.submit(t[7]),
    "submit-pending-duplicate": lambda c, t, f: c.submit(t[4]),
    "submit-committed-duplicate": lambda c, t, f: c.submit(t[1]),
    "submit-rejected": lambda c, t, f: c.submit('{"schema": 5}'),
    "commit": lambda c, t, f: c.commit(),
    "ingest_file": lambda c, t, f: c.ingest_file(_report_file(f, t)),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_exception_at_every_statement_boundary_changes_nothing(
    operation: str, published: dict[str, Any], texts: list[str], tmp_path: Path
) -> None:
    """Dry run: count the boundaries and keep the end state. Then, for each boundary, a fresh
    collector in the same state raises there: its state must be exactly the state before the
    call, and the call, repeated, must end in exactly the dry run's end state."""
    op = OPERATIONS[operation]
    ref = _setup(published, texts, tmp_path / "ref")
    before = _state(ref)
    results: list[Any] = []
    total = _boundaries(lambda: results.append(op(ref, texts, tmp_path)), None)
    after = _state(ref)
    ref.close()
    assert total > 5 and after != before
    c = _setup(published, texts, tmp_path / "store")
    for k in range(total):  # the state never moves, so one collector serves every boundary
        with pytest.raises(InjectedError):
            _boundaries(lambda: op(c, texts, tmp_path), k)
        assert _state(c) == before, f"boundary {k} of {total} tore the collector"
    assert op(c, texts, tmp_path) == results[0]
    assert _state(c) == after
    c.close()
    with Collector(tmp_path / "store", published) as again:  # as committed, after a restart
        assert _state(again)["committed"] == after["committed"]


class Interrupt(BaseException):
    """A real signal's exception (raised by the handler, like KeyboardInterrupt)."""


def _light_state(c: Collector) -> tuple[Any, ...]:
    writer, reader = c._writer, c._reader
    assert writer is not None and reader is not None
    return tuple(
        conn.execute(sql).fetchall()
        for conn in (writer, reader)
        for sql in (
            "SELECT * FROM counts ORDER BY what",
            "SELECT max(seq) FROM reports",
            "SELECT count(*) FROM sources",
        )
    )


def test_real_signals_never_tear_the_store(published: dict[str, Any], tmp_path: Path) -> None:
    """A thread sends this process SIGINT every 0.2 to 5 ms (seeded) while the collector
    ingests files, submits and commits; each interrupted call is retried until it returns, for
    at least 300 interrupts. After every interrupt the collector is as before the call or as
    after it (a signal that arrives after the commit point is taken as the call completed);
    at the end every report is stored exactly once and each rejection reason counts each
    distinct report once."""
    target, most = 300, 3000
    texts = iter(_texts(published, 14 * most, seed=12))
    armed = threading.Event()
    interrupts = 0

    def handler(signum: int, frame: Any) -> None:
        nonlocal interrupts
        if armed.is_set():
            armed.clear()  # one exception per call, never one inside its own clean-up
            interrupts += 1
            raise Interrupt

    stop = threading.Event()

    def sender() -> None:
        rng = np.random.default_rng(2026)
        while not stop.wait(float(rng.uniform(0.0002, 0.005))):
            os.kill(os.getpid(), signal.SIGINT)

    c = Collector(tmp_path / "store", published)

    def call(op: Callable[[], Any]) -> None:
        """Run ``op`` until it returns (or an interrupt finds it completed)."""
        while True:
            before = _light_state(c)
            try:
                armed.set()
                op()
                armed.clear()
                return
            except Interrupt:
                armed.clear()
                if _light_state(c) != before:  # the signal came after the commit point
                    return

    sent: list[str] = []
    iterations = 0
    previous = signal.signal(signal.SIGINT, handler)
    thread = threading.Thread(target=sender, daemon=True)
    try:
        thread.start()
        while interrupts < target and iterations < most:
            batch = [next(texts) for _ in range(10)]
            path = tmp_path / f"drop-{iterations}.jsonl"
            path.write_text("\n".join([*batch, batch[0], f"bad {iterations}", "{"]) + "\n")
            call(lambda path=path: c.ingest_file(path))
            singles = [next(texts) for _ in range(3)]
            for t in [*singles, singles[0]]:
                call(lambda t=t: c.submit(t))
            call(c.commit)
            call(lambda: c.submit("} not a report"))
            sent += batch + singles
            iterations += 1
        call(c.commit)
    finally:
        stop.set()
        thread.join()
        armed.clear()
        signal.signal(signal.SIGINT, previous)
    c.close()
    assert interrupts >= target, f"only {interrupts} interrupts in {iterations} iterations"
    with Collector(tmp_path / "store", published) as again:
        assert again.n_pending == 0 and again.n_reports == len(sent) == 13 * iterations
        assert len(again.sources) == iterations
        expected = {"duplicate": 2 * iterations, "malformed": iterations + 2}
        assert {k: v for k, v in again.rejected.items() if v} == expected
        assert sorted(_stored_ids(again)) == sorted(json.loads(t)["report_id"] for t in sent)


def _stored_ids(c: Collector) -> list[str]:
    assert c._reader is not None
    return [row[0].hex() for row in c._reader.execute("SELECT report_id FROM reports")]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")])
    return env


# Ingests the report files given, then submits and commits the single reports one by one,
# printing what it acknowledged; "ready" first.
_WORKER = """
import json, sys
from pathlib import Path
from ldptree.protocol import Collector
store, published, singles, *files = sys.argv[1:]
c = Collector(store, json.loads(Path(published).read_text()))
print("ready", flush=True)
for name in files:
    n = c.ingest_file(name)
    print("file", Path(name).name, n, flush=True)
for text in json.loads(Path(singles).read_text()):
    c.submit(text)
    c.commit()
    print("ack", json.loads(text)["report_id"], flush=True)
print("done", flush=True)
"""


@pytest.mark.slow
def test_sigkill_loop(published: dict[str, Any], tmp_path: Path) -> None:
    """A collector process is killed (SIGKILL) at a random moment (seeded) and restarted, again
    and again; after each kill the store loads, holds every acknowledged report and file, and
    in the end holds every report exactly once. ``LDPTREE_KILL_LOOP`` sets the number of kills
    (default 6; each restart imports the package anew)."""
    kills = int(os.environ.get("LDPTREE_KILL_LOOP", "6"))
    texts = _texts(published, 400, seed=13)
    files = []
    for i in range(0, 300, 30):
        path = tmp_path / f"drop-{i:03d}.jsonl"
        path.write_text("\n".join([*texts[i : i + 30], "junk"]) + "\n")
        files.append(path)
    singles = tmp_path / "singles.json"
    singles.write_text(json.dumps(texts[300:]))
    published_path = tmp_path / "published.json"
    published_path.write_text(json.dumps(published))
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    store = tmp_path / "store"
    cmd = [sys.executable, str(script), str(store), str(published_path), str(singles)]
    rng = np.random.default_rng(7)
    acked: set[str] = set()
    single_ids = {json.loads(t)["report_id"] for t in texts[300:]}
    stored: set[str] = set()
    done = False
    for kill in range(kills + 1):
        resent = stored & single_ids  # stored singles this run submits again: duplicates
        proc = subprocess.Popen(
            [*cmd, *map(str, files)], stdout=subprocess.PIPE, text=True, env=_env()
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        if kill < kills:
            time.sleep(float(rng.uniform(0.0, 1.5)))
            proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=300)
        for line in out.splitlines():
            word, *rest = line.split()
            if word == "ack":
                acked.add(rest[0])
            done = done or word == "done"
        with Collector(store, published) as c:  # loads at once: the lock died with its owner
            stored = set(_stored_ids(c))
            assert acked <= stored
            assert c.n_reports == len(stored)
            committed = set(c.sources)
            for path in files:  # a committed file is committed whole
                ids = {json.loads(t)["report_id"] for t in path.read_text().splitlines()[:30]}
                assert (ids <= stored) == (path.name in committed)
    assert done
    with Collector(store, published) as c:
        assert c.n_reports == 400
        expected = {"malformed": 1, "duplicate": len(resent)} if resent else {"malformed": 1}
        assert {k: v for k, v in c.rejected.items() if v} == expected


def test_a_dead_owners_lock_is_recovered_and_a_live_one_holds(
    published: dict[str, Any], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import json, sys, time; from ldptree.protocol import Collector; "
            "c = Collector(sys.argv[1], json.loads(sys.argv[2])); print('held', flush=True); "
            "time.sleep(600)",
            str(store),
            json.dumps(published),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(ValueError, match="open in another collector"):
        Collector(store, published)
    assert not [p for p in store.iterdir() if "lock" in p.name]  # nothing an operator could delete
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    holder.stdout.close()
    with Collector(store, published) as c:  # no manual step
        assert c.n_reports == 0


def test_a_closed_collector_refuses_every_call(
    published: dict[str, Any], texts: list[str], tmp_path: Path
) -> None:
    c = Collector(tmp_path / "store", published)
    c.submit(texts[0])
    c.commit()
    (tmp_path / "f.jsonl").write_text(texts[1] + "\n")
    c.close()
    c.close()  # twice is fine
    calls: list[Callable[[], Any]] = [
        lambda: c.submit(texts[1]),
        c.commit,
        lambda: c.ingest_file(tmp_path / "f.jsonl"),
        lambda: c.n_reports,
        lambda: c.n_pending,
        lambda: c.rejected,
        lambda: c.sources,
        c.estimate,
        c.summary,
        c.reports,
        lambda: next(c.report_batches()),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="this collector is closed"):
            call()
    with Collector(tmp_path / "store", published) as again:  # and it let the store go
        assert again.n_reports == 1
    forgotten = Collector(tmp_path / "store", published)  # never closed, then dropped
    forgotten.submit(texts[2])
    del forgotten
    gc.collect()
    with Collector(tmp_path / "store", published) as again:
        assert again.n_reports == 1 and again.n_pending == 0


def _listing(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_folder_that_is_not_a_store_is_never_modified(
    published: dict[str, Any], texts: list[str], tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "chunk-notes.txt").write_text("my notes")
    (mine / ".draft.tmp").write_text("a draft")
    (mine / "photo.jpg").write_bytes(b"\xff\xd8" * 100)
    old = tmp_path / "old"  # a store of the earlier file format
    old.mkdir()
    (old / "manifest.json").write_text('{"schema": "ldptree.protocol/store", "version": 1}')
    (old / "chunk-000000.json").write_text('{"ids": [], "fields": {}}')
    lost = tmp_path / "lost"  # a store whose database was deleted: its log remains
    with Collector(lost, published) as c:
        c.submit(texts[0])
        c.commit()
    (lost / STORE_FILE).unlink()
    (lost / (STORE_FILE + "-wal")).write_bytes(b"committed frames")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / STORE_FILE).write_text("not a database")
    cases = [
        (mine, "not a collector store and is not empty"),
        (old, "earlier file format"),
        (lost, "has lost its database"),
        (foreign, "is not an SQLite database"),
        (mine / "photo.jpg", "is not a folder"),
    ]
    for folder, match in cases:
        root = folder if folder.is_dir() else folder.parent
        listing = _listing(root)
        with pytest.raises(ValueError, match=match):
            Collector(folder, published)
        assert _listing(root) == listing, folder


def test_ingest_reads_line_by_line(
    published: dict[str, Any], texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 20 MB line is rejected as oversized without being held (no read returns more than
    one report's length or 1 MiB); a file that changes between the two passes is refused."""
    big = tmp_path / "big.jsonl"
    with open(big, "w") as f:
        f.write(texts[0] + "\n")
        f.write("[" + "1," * 10_000_000 + "1]\n")
        f.write(texts[1] + "\n")
    largest = 0

    class Tracked:
        def __init__(self, path: Any, mode: str) -> None:
            self._f = open(path, mode)  # noqa: SIM115

        def __enter__(self) -> Tracked:
            return self

        def __exit__(self, *exc: object) -> None:
            self._f.close()

        def read(self, n: int) -> bytes:
            return self._track(self._f.read(n))

        def readline(self, n: int) -> bytes:
            return self._track(self._f.readline(n))

        def _track(self, data: bytes) -> bytes:
            nonlocal largest
            largest = max(largest, len(data))
            return data

    monkeypatch.setattr(_collector, "open", Tracked, raising=False)
    with Collector(tmp_path / "store", published) as c:
        assert c.ingest_file(big) == 2
        assert c.rejected["oversized"] == 1
    assert 0 < largest <= 2**20
    growing = tmp_path / "growing.jsonl"
    growing.write_text(texts[2] + "\n")
    opened = 0

    def changing(path: Any, mode: str) -> Tracked:
        nonlocal opened
        opened += 1
        if opened == 2:  # between the check and the ingestion, the sender appends
            with open(path, "a") as f:
                f.write(texts[3] + "\n")
        return Tracked(path, mode)

    monkeypatch.setattr(_collector, "open", changing, raising=False)
    with Collector(tmp_path / "store2", published) as c:
        with pytest.raises(ValueError, match="changed while it was being ingested"):
            c.ingest_file(growing)
        assert c.n_reports == 0 and c.n_pending == 0 and c.sources == {}
