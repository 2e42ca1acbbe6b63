"""The curator's collector: untrusted reports in, a durable deduplicated store, exact estimates.

Every incoming report goes through :func:`~ldptree.protocol.parse_report` (never trusted, never
a crash: anything invalid is counted under a reason) and is deduplicated by its report id.
Accepted reports are *pending* until :meth:`Collector.commit`, which makes them durable and is
the acknowledgement: a crash loses only what was not yet committed, and a restart reads back
exactly what was.

Storage, in one folder:

* ``chunk-NNNNNN.json``: the reports of one commit (their ids and integer fields);
* ``manifest.json``: the committed chunks with their SHA-256 and size, the ingested source files
  (by SHA-256), the rejection counts, and the fingerprint of the published round.

One collector at a time holds a store (an exclusive lock on ``.lock``, released when the
process ends however it ends). A commit writes its chunk, then the manifest, each to a
temporary file that is flushed, ``fsync``-ed and atomically renamed over its final name (then
the folder is ``fsync``-ed). The manifest is the commit point: a crash before its rename leaves
the previous manifest, and the new chunk is an orphan that no manifest names (it is removed on
restart; its reports were never acknowledged and come again from their source). On start the
collector checks every chunk against its recorded SHA-256 and refuses a store that does not
match (``ValueError``), or one written for another published round.

Estimates: :meth:`Collector.estimate` folds all committed reports through the mechanism's exact
integer ``summarize`` (:class:`~ldptree.rounds.SumAggregator`) and ``debias``:
the same computation, bit for bit, as the in-process path on the same reports.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ldptree.protocol._published import SCHEMA_VERSION, PublishedRound, load_published
from ldptree.protocol._report import REASONS, RejectedReportError, parse_report
from ldptree.protocols import CellEstimates
from ldptree.rounds import Reports, Round, run

__all__ = ["Collector"]

STORE_SCHEMA = "ldptree.protocol/store"
_MANIFEST = "manifest.json"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(folder: Path, name: str, data: bytes) -> None:
    """``folder/name`` holds ``data`` entirely or keeps its previous content (temp + fsync +
    rename + folder fsync)."""
    tmp = folder / f".{name}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / name)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Collector:
    """Collects reports for one published round into the folder ``store`` (module docstring).

    Parameters
    ----------
    store:
        Folder of the durable store (created if missing; an existing store is read back).
    published:
        The published round (dict or :class:`~ldptree.protocol.PublishedRound`); re-certified.
    """

    def __init__(self, store: str | os.PathLike[str], published: Any) -> None:
        self._round: PublishedRound = load_published(published)
        self._folder = Path(store)
        self._folder.mkdir(parents=True, exist_ok=True)
        # one collector per store: two writers would race on chunk names and the manifest. The
        # lock is released when the process ends, however it ends (a killed one included).
        self._lock: Any = open(self._folder / ".lock", "a")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise ValueError(f"the store {self._folder} is open in another collector") from None
        self._fingerprint = _sha256(self._round.fingerprint.encode())
        self._chunks: list[dict[str, Any]] = []
        self._sources: dict[str, str] = {}
        self._committed_rejected: Counter[str] = Counter()
        self._arrays: list[list[np.ndarray[Any, Any]]] = []  # per committed chunk
        self._ids: set[str] = set()
        self._pending_ids: list[str] = []
        self._pending_set: set[str] = set()
        self._pending: list[list[np.ndarray[Any, Any]]] = []
        self._pending_rejected: Counter[str] = Counter()
        try:
            self._recover()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the store (pending, uncommitted reports are dropped, as in a crash)."""
        self._lock.close()

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- durable state -------------------------------------------------------------------------
    def _recover(self) -> None:
        path = self._folder / _MANIFEST
        if path.exists():
            try:
                manifest = json.loads(path.read_bytes())
                ok = manifest["schema"] == STORE_SCHEMA and manifest["version"] == SCHEMA_VERSION
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                raise ValueError(f"{path} is not an ldptree report store manifest")
            if manifest["published"] != self._fingerprint:
                raise ValueError(
                    f"the store {self._folder} was written for another published round"
                )
            self._chunks = list(manifest["chunks"])
            self._sources = dict(manifest["sources"])
            self._committed_rejected = Counter(manifest["rejected"])
        names = {c["file"] for c in self._chunks}
        for leftover in self._folder.iterdir():
            orphan = leftover.name.startswith("chunk-") and leftover.name not in names
            torn = leftover.name.startswith(".") and leftover.name.endswith(".tmp")
            if orphan or torn:
                leftover.unlink()  # never acknowledged: written by a commit that did not finish
        for chunk in self._chunks:
            data = (self._folder / chunk["file"]).read_bytes()
            if _sha256(data) != chunk["sha256"]:
                raise ValueError(f"chunk {chunk['file']} does not match its recorded SHA-256")
            payload = json.loads(data)
            ids = payload["ids"]
            if len(ids) != chunk["n"] or self._ids.intersection(ids):
                raise ValueError(f"chunk {chunk['file']} disagrees with the manifest")
            self._ids.update(ids)
            self._arrays.append(self._stack(payload["fields"], len(ids)))

    def _stack(self, fields: dict[str, Any], n: int) -> list[np.ndarray[Any, Any]]:
        layout = self._round.mechanism.report_fields(self._round.n_cells)
        return [
            np.asarray(fields[name], dtype=np.int32).reshape(n, *shape)
            for name, shape, _, _ in layout
        ]

    def commit(self, source: tuple[str, str] | None = None) -> int:
        """Make the pending reports and rejection counts durable (the acknowledgement); return
        how many reports were committed. ``source`` (name, SHA-256) marks an ingested file."""
        layout = self._round.mechanism.report_fields(self._round.n_cells)
        chunks = list(self._chunks)
        n = len(self._pending_ids)
        arrays: list[np.ndarray[Any, Any]] = []
        if n:
            arrays = [np.stack([report[i] for report in self._pending]) for i in range(len(layout))]
            payload = {
                "ids": self._pending_ids,
                "fields": {name: a.tolist() for (name, *_), a in zip(layout, arrays, strict=True)},
            }
            data = json.dumps(payload, separators=(",", ":")).encode()
            name = f"chunk-{len(chunks):06d}.json"
            _write_atomic(self._folder, name, data)
            chunks.append({"file": name, "sha256": _sha256(data), "n": n})
        sources = dict(self._sources)
        if source is not None:
            sources[source[0]] = source[1]
        rejected = self._committed_rejected + self._pending_rejected
        manifest = {
            "schema": STORE_SCHEMA,
            "version": SCHEMA_VERSION,
            "published": self._fingerprint,
            "chunks": chunks,
            "sources": sources,
            "rejected": dict(rejected),
        }
        _write_atomic(self._folder, _MANIFEST, json.dumps(manifest, indent=1).encode())
        # committed: only now does the in-memory state move on
        self._chunks, self._sources, self._committed_rejected = chunks, sources, rejected
        if n:
            self._arrays.append(arrays)
        self._ids.update(self._pending_ids)
        self._pending_ids, self._pending, self._pending_rejected = [], [], Counter()
        self._pending_set = set()
        return n

    # -- input ---------------------------------------------------------------------------------
    def submit(self, raw: Any) -> str | None:
        """Validate one report (JSON text, bytes or a parsed object) and hold it pending; return
        ``None`` if accepted, else the reason (one of :data:`~ldptree.protocol.REASONS`)."""
        try:
            report_id, arrays = parse_report(raw, self._round)
        except RejectedReportError as err:
            self._pending_rejected[err.reason] += 1
            return err.reason
        if report_id in self._ids or report_id in self._pending_set:
            self._pending_rejected["duplicate"] += 1
            return "duplicate"
        self._pending_ids.append(report_id)
        self._pending_set.add(report_id)
        self._pending.append(arrays)
        return None

    def ingest_file(self, path: str | os.PathLike[str]) -> int | None:
        """Submit every non-blank line of a report file and commit them with the file as one
        unit. Returns the number of reports accepted from it, or ``None`` when the file was
        already committed (same name and SHA-256) and is skipped."""
        path = Path(path)
        data = path.read_bytes()
        digest = _sha256(data)
        if self._sources.get(path.name) == digest:
            return None
        for line in data.split(b"\n"):
            if line.strip():
                self.submit(line)
        return self.commit(source=(path.name, digest))

    # -- output --------------------------------------------------------------------------------
    @property
    def n_reports(self) -> int:
        """Committed (durable) reports."""
        return len(self._ids)

    @property
    def rejected(self) -> dict[str, int]:
        """Committed rejection counts by reason (every reason, zeros included)."""
        return {reason: int(self._committed_rejected[reason]) for reason in REASONS}

    def reports(self) -> Any:
        """All committed reports as one batch of the mechanism's report type."""
        if not self._arrays:
            raise ValueError("no report has been committed yet")
        mechanism = self._round.mechanism
        merged = [
            np.concatenate([chunk[i] for chunk in self._arrays])
            for i in range(len(self._arrays[0]))
        ]
        return mechanism._assemble(merged)

    def estimate(self) -> CellEstimates:
        """Debiased cell estimates from every committed report (exact integer sums): the
        round's engine (:func:`ldptree.rounds.run`) folding the reports as its source."""
        round_ = Round(partition=self._round.partition, mechanism=self._round.mechanism)
        return run([round_], Reports([self.reports()]))[0].estimates
