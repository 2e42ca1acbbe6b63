"""The dataset manifest: one CSV row per dataset, naming its file, task, size and columns.

Format (the one of the shared data folder), a header row and then one row per dataset::

    name,file,task,n,d,target_columns,categorical_feature_columns[,url]

* ``file``: a path relative to the data folder (``.csv`` or ``.csv.gz``), never absolute and
  never leaving the folder;
* ``task``: ``regression`` or ``classification``;
* ``n``, ``d``: rows and *raw* feature columns of the file (target columns not counted);
* ``target_columns``, ``categorical_feature_columns``: column names separated by ``;`` (the
  second may be empty);
* ``url`` (optional column): where :func:`~ldptree.datasets.load_dataset` may download the file
  from, verified against ``CHECKSUMS``.

The data folder comes from the ``data_dir`` argument or else the ``LDPTREE_DATA`` environment
variable.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path, PurePosixPath

import attrs

DATA_ENV = "LDPTREE_DATA"
MANIFEST_FILE = "manifest.csv"
TASKS = ("regression", "classification")
_REQUIRED = ("name", "file", "task", "n", "d", "target_columns", "categorical_feature_columns")


@attrs.frozen
class ManifestEntry:
    """One dataset described by the manifest (see the module docstring for the fields)."""

    name: str
    file: str
    task: str
    n: int
    d: int
    targets: tuple[str, ...]
    categorical: tuple[str, ...]
    url: str | None = None


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    """The data folder: ``data_dir`` if given, else ``$LDPTREE_DATA``; it must hold a manifest."""
    if data_dir is None:
        env = os.environ.get(DATA_ENV)
        if not env:
            raise ValueError(
                f"data_dir is None and the {DATA_ENV} environment variable is not set; pass "
                f"data_dir= the folder holding {MANIFEST_FILE} or set {DATA_ENV}"
            )
        path = Path(env)
        origin = f"${DATA_ENV}"
    elif isinstance(data_dir, str | os.PathLike):
        path = Path(data_dir)
        origin = "data_dir"
    else:
        raise TypeError(f"data_dir must be a path or None, got {type(data_dir).__name__}")
    if not path.is_dir():
        raise ValueError(f"{origin} = {str(path)!r} is not a folder")
    if not (path / MANIFEST_FILE).is_file():
        raise ValueError(f"{origin} = {str(path)!r} has no {MANIFEST_FILE}")
    return path


def _names(field: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in field.split(";") if part.strip())


def _count(value: str, column: str, row: int, path: Path) -> int:
    try:
        out = int(value)
    except ValueError:
        raise ValueError(f"{path}: row {row}: {column} must be an integer, got {value!r}") from None
    if out < 1:
        raise ValueError(f"{path}: row {row}: {column} must be >= 1, got {out}")
    return out


def _check_file(value: str, row: int, path: Path) -> str:
    pure = PurePosixPath(value)
    if not value or pure.is_absolute() or ".." in pure.parts or "\\" in value:
        raise ValueError(
            f"{path}: row {row}: file must be a relative path inside the data folder, got {value!r}"
        )
    if not (value.endswith(".csv") or value.endswith(".csv.gz")):
        raise ValueError(f"{path}: row {row}: file must end in .csv or .csv.gz, got {value!r}")
    return value


def read_manifest(data_dir: str | os.PathLike[str] | None = None) -> dict[str, ManifestEntry]:
    """All datasets of the folder's ``manifest.csv`` by name, in file order.

    Raises ``ValueError`` naming the manifest row and column for a missing column, a bad count,
    an unknown task, an unsafe file path, a duplicate name or a dataset without a target.
    """
    path = resolve_data_dir(data_dir) / MANIFEST_FILE
    try:
        return _read_manifest(path)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text: {err}") from None
    except csv.Error as err:
        raise ValueError(f"{path} is not a readable CSV file: {err}") from None


def _read_manifest(path: Path) -> dict[str, ManifestEntry]:
    with path.open(newline="", encoding="utf-8-sig") as handle:  # a BOM is not a column name
        reader = csv.DictReader(handle)
        header = tuple(reader.fieldnames or ())
        missing = [c for c in _REQUIRED if c not in header]
        if missing:
            raise ValueError(
                f"{path}: missing column(s) {missing}; the header must contain {list(_REQUIRED)}"
            )
        entries: dict[str, ManifestEntry] = {}
        for row_number, row in enumerate(reader, start=2):
            if None in row or any(row.get(c) is None for c in _REQUIRED):
                raise ValueError(f"{path}: row {row_number} does not have {len(header)} fields")
            name = row["name"].strip()
            if not name:
                raise ValueError(f"{path}: row {row_number}: name is empty")
            if name in entries:
                raise ValueError(f"{path}: row {row_number}: dataset name {name!r} is repeated")
            task = row["task"].strip()
            if task not in TASKS:
                raise ValueError(
                    f"{path}: row {row_number}: task must be one of {TASKS}, got {task!r}"
                )
            targets = _names(row["target_columns"])
            if not targets:
                raise ValueError(f"{path}: row {row_number}: target_columns is empty")
            categorical = _names(row["categorical_feature_columns"])
            overlap = set(targets) & set(categorical)
            if overlap:
                raise ValueError(
                    f"{path}: row {row_number}: {sorted(overlap)} listed both as target and "
                    "categorical feature"
                )
            url = (row.get("url") or "").strip() or None
            entries[name] = ManifestEntry(
                name=name,
                file=_check_file(row["file"].strip(), row_number, path),
                task=task,
                n=_count(row["n"].strip(), "n", row_number, path),
                d=_count(row["d"].strip(), "d", row_number, path),
                targets=targets,
                categorical=categorical,
                url=url,
            )
    if not entries:
        raise ValueError(f"{path} lists no datasets")
    return entries


def manifest_entry(name: str, data_dir: str | os.PathLike[str] | None = None) -> ManifestEntry:
    """The manifest row of dataset ``name``; unknown names raise ``ValueError`` listing them."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a dataset name (str), got {type(name).__name__}")
    entries = read_manifest(data_dir)
    if name not in entries:
        raise ValueError(f"name={name!r} is not in the manifest; known datasets: {sorted(entries)}")
    return entries[name]
