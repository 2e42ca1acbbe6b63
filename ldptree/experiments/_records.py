"""The tidy results file: one CSV row per fitted configuration, and resuming from it.

A *cell* is ``(method, dataset, epsilon, rep, tuning)``; all rows of a cell are appended in one
write, and each row carries ``cell_rows`` (the cell's row count) and ``fingerprint`` (a hash of
everything that determines the cell's numbers: seed, data source, grid, tuning settings, method).
On resume, :func:`load_completed` keeps the cells whose row count is complete, drops a cell cut
short by an interruption, and refuses a file whose cells were produced under a different
fingerprint (mixing protocols in one table would be silent nonsense).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

FIELDS = (
    "experiment",
    "dataset",
    "task",
    "method",
    "tuning",
    "epsilon",
    "rep",
    "grid_index",
    "params",
    "metric",
    "value",
    "selected",
    "validation_score",
    "seconds",
    "n_public",
    "n_train",
    "n_validation",
    "n_test",
    "holder_epsilon",
    "private_pipeline",
    "spend",
    "fingerprint",
    "cell_rows",
    "privacy",
    "guards",
)
#: the headers before the ``guards`` and the ``privacy`` columns existed (still readable)
_OLD_HEADERS = (FIELDS[:-1], FIELDS[:-2])

CellKey = tuple[str, str, float, int, str]


def _optional_bool(text: str) -> bool | None:
    return None if text == "" else text == "True"


def _optional_float(text: str) -> float | None:
    return None if text == "" else float(text)


@attrs.frozen
class RunRecord:
    """One row of the results file (see ``FIELDS``; ``params`` is a JSON object)."""

    experiment: str
    dataset: str
    task: str
    method: str
    tuning: str
    epsilon: float
    rep: int
    grid_index: int
    params: str
    metric: str
    value: float
    selected: bool | None
    validation_score: float | None
    seconds: float
    n_public: int
    n_train: int
    n_validation: int
    n_test: int
    holder_epsilon: float
    private_pipeline: bool
    spend: str
    fingerprint: str
    cell_rows: int
    privacy: str = ""  # JSON: the cell's privacy ledger from its models' own spends
    guards: str = ""  # the protective settings the configuration turned off, else empty

    @property
    def cell(self) -> CellKey:
        return (self.method, self.dataset, self.epsilon, self.rep, self.tuning)

    @property
    def param_dict(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.params)
        return loaded

    def to_row(self) -> dict[str, str]:
        row = attrs.asdict(self)
        return {
            k: "" if row[k] is None else repr(row[k]) if isinstance(row[k], float) else str(row[k])
            for k in FIELDS
        }

    @classmethod
    def from_row(cls, row: dict[str, str]) -> RunRecord:
        return cls(
            experiment=row["experiment"],
            dataset=row["dataset"],
            task=row["task"],
            method=row["method"],
            tuning=row["tuning"],
            epsilon=float(row["epsilon"]),
            rep=int(row["rep"]),
            grid_index=int(row["grid_index"]),
            params=row["params"],
            metric=row["metric"],
            value=float(row["value"]),
            selected=_optional_bool(row["selected"]),
            validation_score=_optional_float(row["validation_score"]),
            seconds=float(row["seconds"]),
            n_public=int(row["n_public"]),
            n_train=int(row["n_train"]),
            n_validation=int(row["n_validation"]),
            n_test=int(row["n_test"]),
            holder_epsilon=float(row["holder_epsilon"]),
            private_pipeline=row["private_pipeline"] == "True",
            spend=row["spend"],
            fingerprint=row["fingerprint"],
            cell_rows=int(row["cell_rows"]),
            privacy=row.get("privacy") or "",
            guards=row.get("guards") or "",
        )


def read_records(path: str | os.PathLike[str]) -> list[RunRecord]:
    """All rows of a results file (a missing file has none).

    A last line cut short (a run killed mid-write) is ignored; a bad row elsewhere is an error.
    """
    file = Path(path)
    if not file.is_file():
        return []
    with file.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) not in (FIELDS, *_OLD_HEADERS):
            raise ValueError(f"{file} is not an ldptree results file (unexpected header)")
        rows = list(reader)
    records = []
    for number, row in enumerate(rows, start=2):
        try:
            records.append(RunRecord.from_row(row))
        except (TypeError, ValueError):
            if number != len(rows) + 1:
                raise ValueError(f"{file}: line {number} is not a valid results row") from None
    return records


def write_records(path: Path, records: Iterable[RunRecord], *, append: bool) -> None:
    """Write rows (with a header when the file is new) in one flushed write."""
    new = not append or not path.is_file() or path.stat().st_size == 0
    with path.open("a" if append else "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n")
        if new:
            writer.writeheader()
        writer.writerows(record.to_row() for record in records)
        handle.flush()
        os.fsync(handle.fileno())


def load_completed(path: Path, fingerprints: dict[tuple[str, str, str], str]) -> set[CellKey]:
    """Complete cells of ``path`` (module docstring); rewrites the file without partial cells.

    ``fingerprints`` maps ``(method, dataset, tuning)`` of the current experiment to its
    fingerprint; a stored cell with the same triple but another fingerprint raises ``ValueError``.
    """
    try:
        records = read_records(path)
    except (ValueError, KeyError) as err:
        raise ValueError(
            f"cannot resume from {path}: {err}; choose another output folder"
        ) from None
    by_cell: dict[CellKey, list[RunRecord]] = {}
    for record in records:
        expected = fingerprints.get((record.method, record.dataset, record.tuning))
        if expected is not None and record.fingerprint != expected:
            raise ValueError(
                f"{path} holds {record.method}/{record.dataset}/{record.tuning} results of a "
                "different protocol (seed, grid, split or tuning settings changed); use another "
                "output folder or delete the file"
            )
        by_cell.setdefault(record.cell, []).append(record)
    complete = {cell for cell, rows in by_cell.items() if len(rows) == rows[0].cell_rows}
    cut_short = path.is_file() and not path.read_bytes().endswith(b"\n")
    # a file from before the privacy or guards column is rewritten with the current header, so
    # appended rows line up with it
    old_header = bool(records) and not path.read_text(encoding="utf-8").startswith(
        ",".join(FIELDS) + "\n"
    )
    if len(complete) != len(by_cell) or cut_short or old_header:
        kept = [r for r in records if r.cell in complete]
        tmp = path.with_name(path.name + ".tmp")
        write_records(tmp, kept, append=False)
        tmp.replace(path)
    return complete
