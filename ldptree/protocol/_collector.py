"""The curator's collector: untrusted reports in, a durable deduplicated store, exact estimates.

Every incoming report goes through :func:`~ldptree.protocol.parse_report` (never trusted, never
a crash: anything invalid is counted under a reason, a report of another round included) and is
deduplicated by its report id. Accepted reports are *pending* until :meth:`Collector.commit`,
which makes them durable and is the acknowledgement: a crash loses only what was not yet
committed, and a restart reads back exactly what was.

**The store** is one SQLite database, ``reports.sqlite``, in the store folder (write-ahead log,
``fsync`` at every commit). Its tables:

* ``reports``: one row per accepted report: its id (``UNIQUE``: a report is stored at most
  once), its round (a key into ``rounds``), its releases as compact bytes
  (:class:`~ldptree.protocol._codec.ReportCodec`) and a BLAKE2b checksum of id and bytes;
* ``rounds``: the round fingerprint and the published object it was computed from;
* ``rejections``: one row per distinct rejected report (a digest of its bytes, and the reason),
  so each reason counts distinct reports once, however often one is resent;
* ``sources``: the committed report files (name, SHA-256, reports accepted);
* ``counts``: running counts of reports and of rejections by reason, kept by triggers in the
  same statement as each insert (reading them costs nothing, whatever the store's size).

Pending reports live in the open write transaction; :meth:`~Collector.commit` is one ``COMMIT``:
atomic by construction, and its cost depends on what it commits, not on the store's size.
Reading (counts, :meth:`~Collector.estimate`) goes through a second connection that sees only
committed data.

**Nothing tears.** Each of :meth:`~Collector.submit`, :meth:`~Collector.commit` and
:meth:`~Collector.ingest_file` makes exactly one change (one SQL statement, or a savepoint's
work ended by one ``COMMIT``) and that change is the last thing it evaluates: an exception
raised anywhere inside it (an error, a ``KeyboardInterrupt``) leaves the collector and its
store exactly as they were before the call. A closed collector refuses every call.

**One collector per store.** The collector holds an exclusive ``flock`` on the store folder
itself, taken before the database is opened. The operating system releases it when the process
ends, however it ends (a killed collector's store opens again at once); there is no lock file
whose deletion could break it.

**A folder that is not a store is never modified**: the collector creates a store only in a
new or empty folder, refuses a folder holding other files, and refuses (untouched) a store of
the earlier file format (``manifest.json`` and ``chunk-*.json``), whose reports carry no round
fingerprint.

**Estimates** come from the round engine (:func:`ldptree.rounds.run`) with the committed reports
as its source, streamed in batches of bounded size through the mechanism's exact integer
``summarize`` (:class:`~ldptree.rounds.SumAggregator`) and ``debias``: the same computation, bit
for bit, as the in-process path on the same reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import attrs
import numpy as np

from ldptree._locks import lock_folder, unlock_folder
from ldptree.protocol._codec import ReportCodec
from ldptree.protocol._published import SCHEMA_VERSION, PublishedRound, load_published
from ldptree.protocol._report import (
    REASONS,
    RejectedReportError,
    parse_report,
)
from ldptree.protocol._sqlite import connect, is_sqlite, prepare
from ldptree.protocols import CellEstimates
from ldptree.rounds import Reports, RoundResult, SumState, run

__all__ = ["STORE_FILE", "Collector"]

#: The store's database file inside the store folder.
STORE_FILE = "reports.sqlite"
#: ``PRAGMA application_id`` of a collector's store (ASCII "ldpc").
STORE_APPLICATION_ID = 0x6C647063
STORE_SCHEMA = "ldptree.protocol/store"
#: Version of the store's layout (1 was the earlier folder of JSON chunks).
STORE_VERSION = 2
_OWN_FILES = {STORE_FILE, *(STORE_FILE + suffix for suffix in ("-wal", "-shm", "-journal"))}
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE rounds (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL UNIQUE,"
    " published TEXT NOT NULL)",
    "CREATE TABLE reports (seq INTEGER PRIMARY KEY, report_id BLOB NOT NULL UNIQUE,"
    " round INTEGER NOT NULL REFERENCES rounds (id), fields BLOB NOT NULL,"
    " checksum BLOB NOT NULL)",
    "CREATE TABLE rejections (digest BLOB PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE sources (name TEXT NOT NULL, sha256 TEXT NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY (name, sha256))",
    "CREATE TABLE counts (what TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TRIGGER count_report AFTER INSERT ON reports"
    " BEGIN UPDATE counts SET n = n + 1 WHERE what = 'reports'; END",
    "CREATE TRIGGER count_rejection AFTER INSERT ON rejections"
    " BEGIN UPDATE counts SET n = n + 1 WHERE what = NEW.reason; END",
    "INSERT INTO counts (what, n) VALUES ('reports', 0), "
    + ", ".join(f"('{reason}', 0)" for reason in REASONS),
)
_INSERT_REPORT = "INSERT INTO reports (report_id, round, fields, checksum) VALUES (?, 1, ?, ?)"
_INSERT_REJECTION = "INSERT OR IGNORE INTO rejections (digest, reason) VALUES (?, ?)"
#: Bytes of decoded reports (int32) per batch when estimating from the store.
BATCH_BYTES = 8 * 2**20
#: Bytes read at a time while skipping the rest of an oversized line.
_SKIP_BYTES = 2**20


def _checksum(report_id: bytes, fields: bytes) -> bytes:
    return hashlib.blake2b(report_id + fields, digest_size=16).digest()


def _digest_of_raw(raw: Any, limit: int) -> bytes:
    """What makes two rejected reports "the same" for the rejection counts: the SHA-256 of the
    canonical JSON of what they parse to (so that spacing and key order do not matter), or of
    the stripped text when it is not JSON (or longer than ``limit``, and left unparsed)."""
    obj, text = raw, None
    if isinstance(raw, bytes | bytearray | str):
        text = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
        text = text.strip()
        obj = None
        if len(text) <= limit:
            with contextlib.suppress(ValueError, RecursionError):
                obj = json.loads(text)
    try:
        data = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=repr).encode()
    except (TypeError, ValueError, RecursionError):
        data = b"not representable"
    if obj is None and text is not None:
        data = text
    return hashlib.sha256(data).digest()


@attrs.frozen
class _Accepted:
    report_id: bytes
    fields: bytes


@attrs.frozen
class _Rejected:
    digest: bytes
    reason: str


def _undo_ingest(conn: sqlite3.Connection) -> None:
    """Roll back an ``ingest_file``'s savepoint, keeping what was pending before it (nothing
    to do when it is gone: committed, or never made)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK TO ingest")
            conn.execute("RELEASE ingest")
        except sqlite3.OperationalError:
            pass  # no such savepoint


def _old_store(manifest: Path) -> bool:
    """Whether ``manifest`` is the manifest of a store of the earlier file format."""
    try:
        with open(manifest, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return STORE_SCHEMA.encode() in head


def _check_folder(folder: Path) -> None:
    """Refuse (``ValueError``, touching nothing) a folder that is neither a collector's store
    nor empty."""
    if not folder.is_dir():
        raise ValueError(f"the store {folder} is not a folder")
    names = {p.name for p in folder.iterdir()}
    if "manifest.json" in names and _old_store(folder / "manifest.json"):
        raise ValueError(
            f"{folder} holds a report store of the earlier file format (manifest.json and "
            "chunk-*.json), whose reports carry no round fingerprint and cannot be bound to a "
            "round; it is left untouched. Collect the round anew into a new store folder."
        )
    if names and STORE_FILE not in names:
        if names <= _OWN_FILES:
            raise ValueError(
                f"the store {folder} has lost its database {STORE_FILE} (only "
                f"{sorted(names)} remain); refusing to start an empty store over them"
            )
        raise ValueError(
            f"{folder} is not a collector store and is not empty ({len(names)} entries); a "
            "collector creates its store only in a new or empty folder, so nothing was changed"
        )
    if STORE_FILE in names and not is_sqlite(folder / STORE_FILE):
        raise ValueError(f"{folder / STORE_FILE} is not an SQLite database; nothing was changed")


class Collector:
    """Collects reports for one published round into the folder ``store`` (module docstring).

    Parameters
    ----------
    store:
        Folder of the durable store: created if missing, used if empty, read back if it is a
        store of this round; anything else is refused (``ValueError``) and left untouched.
    published:
        The published round (dict or :class:`~ldptree.protocol.PublishedRound`); re-certified.
    """

    def __init__(self, store: str | os.PathLike[str], published: Any) -> None:
        self._round: PublishedRound = load_published(published)
        self._codec = ReportCodec.of(self._round.layout)
        self._limit = self._round.max_report_bytes
        self._folder = Path(store)
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock: int | None = None
        self._savepoint = False  # an ingest savepoint may be open (see _ready)
        if not self._folder.exists():
            self._folder.mkdir(parents=True, exist_ok=True)
        _check_folder(self._folder)
        self._lock = lock_folder(
            self._folder, f"the store {self._folder} is open in another collector"
        )
        try:
            _check_folder(self._folder)  # again, now that no other collector can change it
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        path = self._folder / STORE_FILE
        what = f"the store {path}"
        self._writer = connect(path, what)
        prepare(self._writer, STORE_APPLICATION_ID, _SCHEMA, what)
        if self._writer.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
            raise ValueError(f"the store {path} cannot use a write-ahead log")
        self._writer.execute("PRAGMA cache_size=-16384")  # 16 MiB of pages
        meta = dict(self._writer.execute("SELECT key, value FROM meta").fetchall())
        if not meta:
            self._writer.execute("BEGIN IMMEDIATE")
            self._writer.execute(
                "INSERT INTO rounds (id, fingerprint, published) VALUES (1, ?, ?)",
                (self._round.fingerprint, self._round.text),
            )
            self._writer.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema", STORE_SCHEMA),
                    ("version", str(STORE_VERSION)),
                    ("protocol_version", str(SCHEMA_VERSION)),
                    ("round", self._round.fingerprint),
                ],
            )
            self._writer.execute("COMMIT")
            meta = dict(self._writer.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema") != STORE_SCHEMA or meta.get("version") != str(STORE_VERSION):
            raise ValueError(f"{path} is not an ldptree report store of version {STORE_VERSION}")
        if meta.get("round") != self._round.fingerprint:
            raise ValueError(f"the store {self._folder} was written for another published round")
        self._reader = connect(path, what)
        self._reader.execute("PRAGMA query_only=ON")

    def close(self) -> None:
        """Release the store (pending, uncommitted reports are dropped, as in a crash). Every
        later call on this collector is refused. A collector that is garbage-collected without
        ``close`` (e.g. a notebook cell run again) closes itself."""
        writer, reader = getattr(self, "_writer", None), getattr(self, "_reader", None)
        lock = getattr(self, "_lock", None)
        self._writer = self._reader = self._lock = None
        for conn in (reader, writer):
            if conn is not None:
                conn.close()  # an open transaction is rolled back
        if lock is not None:
            unlock_folder(lock)

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- state ---------------------------------------------------------------------------------
    def _ready(self) -> sqlite3.Connection:
        """The writer, after undoing the savepoint of an ``ingest_file`` whose own clean-up was
        interrupted (a second exception during its rollback); ``ValueError`` once closed."""
        conn = self._writer
        if conn is None:
            raise ValueError("this collector is closed")
        if self._savepoint:
            _undo_ingest(conn)
        self._savepoint = False
        return conn

    def _committed(self) -> sqlite3.Connection:
        self._ready()
        assert self._reader is not None
        return self._reader

    def _counts(self, conn: sqlite3.Connection) -> dict[str, int]:
        return dict(conn.execute("SELECT what, n FROM counts").fetchall())

    # -- input ---------------------------------------------------------------------------------
    def _judge(self, raw: Any) -> _Accepted | _Rejected:
        """Parse one report (no side effect)."""
        try:
            report_id, arrays = parse_report(raw, self._round)
        except RejectedReportError as err:
            return _Rejected(_digest_of_raw(raw, self._limit), err.reason)
        return _Accepted(bytes.fromhex(report_id), self._codec.encode(arrays))

    def _pending_one(self, conn: sqlite3.Connection, verdict: _Accepted | _Rejected) -> str | None:
        """Hold one judged report pending. Exactly one SQL statement changes anything, and it is
        the last operation evaluated (``return (change, value)[1]`` on one line): an exception
        raised at any earlier point leaves everything as it was."""
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
        if isinstance(verdict, _Accepted):
            report_id, fields = verdict.report_id, verdict.fields
            known = conn.execute("SELECT 1 FROM reports WHERE report_id = ?", (report_id,))
            if known.fetchone() is None:
                row = (report_id, fields, _checksum(report_id, fields))
                return (conn.execute(_INSERT_REPORT, row), None)[1]
            digest = hashlib.sha256(b"duplicate\0" + report_id + fields).digest()
            verdict = _Rejected(digest, "duplicate")
        pair = (verdict.digest, verdict.reason)
        return (conn.execute(_INSERT_REJECTION, pair), pair[1])[1]

    def submit(self, raw: Any) -> str | None:
        """Validate one report (JSON text, bytes or a parsed object) and hold it pending; return
        ``None`` if accepted, else the reason (one of :data:`~ldptree.protocol.REASONS`)."""
        conn = self._ready()
        return self._pending_one(conn, self._judge(raw))

    def commit(self) -> int:
        """Make the pending reports and rejection counts durable (the acknowledgement: one
        transaction); return how many reports were committed."""
        conn = self._ready()
        if not conn.in_transaction:
            return 0
        n = self._counts(conn)["reports"] - self._counts(self._committed())["reports"]
        return (conn.execute("COMMIT"), n)[1]  # the commit point: the last operation

    def _lines(self, f: IO[bytes], digest: Any) -> Iterator[bytes | _Rejected]:
        """The non-blank lines of a report file, read line by line (at most one report's
        length at a time); a line longer than any report is skipped unread, as a rejection."""
        while line := f.readline(self._limit + 2):
            digest.update(line)
            if len(line) == self._limit + 2 and not line.endswith(b"\n"):
                long = hashlib.sha256(line.strip())
                while line and not line.endswith(b"\n"):
                    line = f.readline(_SKIP_BYTES)
                    digest.update(line)
                    long.update(line.strip())
                yield _Rejected(long.digest(), "oversized")
            elif line.strip():
                yield line.strip()

    def ingest_file(self, path: str | os.PathLike[str]) -> int | None:
        """Submit every non-blank line of a report file and commit them, with the file, as one
        transaction (pending reports submitted before are committed with it). Returns the
        number of reports accepted from it, or ``None`` when the file was already committed
        (same name and SHA-256) and is skipped. The file is read line by line, twice (once to
        check whether it was committed, once to ingest it): memory stays bounded by one report
        whatever the file's size, and a file that changes meanwhile is refused (``ValueError``)."""
        conn = self._ready()
        path = Path(path)
        first = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(_SKIP_BYTES):
                first.update(block)
        sha = first.hexdigest()
        committed = self._committed().execute(
            "SELECT 1 FROM sources WHERE name = ? AND sha256 = ?", (path.name, sha)
        )
        if committed.fetchone() is not None:
            return None
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE")
        self._savepoint = True
        conn.execute("SAVEPOINT ingest")
        try:
            before = self._counts(conn)["reports"]
            second = hashlib.sha256()
            with open(path, "rb") as f:
                for line in self._lines(f, second):
                    verdict = line if isinstance(line, _Rejected) else self._judge(line)
                    self._pending_one(conn, verdict)
            if second.hexdigest() != sha:
                raise ValueError(f"{path} changed while it was being ingested; nothing was kept")
            n = self._counts(conn)["reports"] - before
            source = (path.name, sha, n)
            conn.execute("INSERT INTO sources (name, sha256, n) VALUES (?, ?, ?)", source)
            return (conn.execute("COMMIT"), n)[1]  # the commit point: the last operation
        except BaseException:
            _undo_ingest(conn)
            raise

    # -- output --------------------------------------------------------------------------------
    @property
    def published(self) -> PublishedRound:
        """The round this collector collects (validated and re-certified)."""
        return self._round

    @property
    def n_reports(self) -> int:
        """Committed (durable) reports."""
        return self._counts(self._committed())["reports"]

    @property
    def n_pending(self) -> int:
        """Reports accepted since the last commit (dropped if the collector stops first)."""
        conn = self._ready()
        return self._counts(conn)["reports"] - self._counts(self._committed())["reports"]

    @property
    def rejected(self) -> dict[str, int]:
        """Committed rejection counts by reason (every reason, zeros included); each distinct
        rejected report counts once."""
        counts = self._counts(self._committed())
        return {reason: int(counts[reason]) for reason in REASONS}

    @property
    def sources(self) -> dict[str, str]:
        """The committed report files: name to SHA-256."""
        rows = self._committed().execute("SELECT name, sha256 FROM sources ORDER BY rowid")
        return dict(rows.fetchall())

    def report_batches(self, batch_size: int | None = None) -> Iterator[Any]:
        """The committed reports in store order, as batches of the mechanism's report type of at
        most ``batch_size`` reports (default: about 8 MiB of decoded integers). Each stored
        report's checksum is verified (``ValueError`` on a mismatch); memory holds one batch."""
        conn = self._committed()
        if batch_size is None:
            per_report = 4 * sum(p.count for p in self._codec.parts)
            batch_size = max(1, min(1 << 16, BATCH_BYTES // max(per_report, 1)))
        mechanism = self._round.mechanism
        rows = conn.execute("SELECT report_id, fields, checksum FROM reports ORDER BY seq")
        while chunk := rows.fetchmany(batch_size):
            for report_id, fields, checksum in chunk:
                if _checksum(report_id, fields) != checksum:
                    raise ValueError(
                        f"stored report {report_id.hex()} does not match its checksum: the "
                        "store is damaged"
                    )
            data = np.frombuffer(b"".join(row[1] for row in chunk), dtype=np.uint8)
            yield mechanism._assemble(self._codec.decode(data.reshape(len(chunk), -1)))

    def reports(self) -> Any:
        """All committed reports as one batch of the mechanism's report type (``O(n)`` memory:
        :meth:`report_batches` streams them)."""
        batches = [self._round.mechanism._report_arrays(b) for b in self.report_batches()]
        if not batches:
            raise ValueError("no report has been committed yet")
        merged = [np.concatenate([b[i] for b in batches]) for i in range(len(batches[0]))]
        return self._round.mechanism._assemble(merged)

    def _folded(self) -> RoundResult:
        return run([self._round.round()], Reports(self.report_batches()))[0]

    def summary(self) -> SumState:
        """The exact integer sums of every committed report (``SumAggregator``'s state): states
        of stores with disjoint reports add up (``SumAggregator.merge``) to the state of one
        store holding them all."""
        return cast(SumState, self._folded().state)

    def estimate(self) -> CellEstimates:
        """Debiased cell estimates from every committed report (exact integer sums): the
        round's engine (:func:`ldptree.rounds.run`) folding the streamed reports."""
        if self.n_reports == 0:
            raise ValueError("no report has been committed yet")
        result = self._folded()
        return result.aggregator.finalize(result.state)
