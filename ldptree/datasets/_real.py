"""Real tabular datasets described by a manifest (see :mod:`._manifest` for the format).

:func:`load_dataset` is a *curator-side simulation tool*: it reads a whole file, as a researcher
does when simulating a locally private deployment on a public benchmark. It therefore computes no
statistic of the rows; everything it does is row-wise or schema-level:

* **targets**: the chosen target column is ``y``; every target column (also the unused ones of a
  multi-output set) is removed from ``X``. Rows whose chosen target is missing are dropped (a
  holder without a label has nothing to report), and ``n_dropped`` says how many.
* **missing features**: numeric cells that are missing stay ``NaN`` in ``X``. Filling them needs
  a statistic, and in the protocol statistics may come from public rows only, so imputation is the
  runner's job after splitting (:func:`ldptree.experiments.impute_from_public`: per-column public
  medians). A missing categorical cell is its own one-hot level ``"col=<missing>"``.
* **categoricals**: the manifest's categorical columns are one-hot encoded (:mod:`._encode`) over
  every level of the file; a split keeps only the levels of its public rows
  (:func:`ldptree.experiments.public_levels`), so no level seen only in private rows is used.
* **checksums**: when the folder has ``CHECKSUMS``, the data file must be listed there and match
  (``verify=None``, the default); ``verify=True`` also requires ``CHECKSUMS`` to exist,
  ``verify=False`` skips the check.
* **download**: with ``download=True`` a missing file is fetched from the manifest's optional
  ``url`` column and accepted only if it matches its ``CHECKSUMS`` line.

Feature scaling is not done here either: the estimators scale with the public min-max box.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree.datasets._checksums import CHECKSUMS_FILE, read_checksums, verify_file
from ldptree.datasets._download import download_file
from ldptree.datasets._encode import as_number, one_hot, parse_numeric
from ldptree.datasets._manifest import ManifestEntry, manifest_entry, resolve_data_dir
from ldptree.datasets._table import is_missing, read_table


@attrs.frozen(eq=False)
class Dataset:
    """A loaded dataset: ``X float[n, p]`` (``NaN`` = missing) and ``y`` (``float[n]`` for
    regression; for classification ``float[n]`` when every label is a number, else ``str[n]``).

    ``categorical`` maps each categorical source column to the indices of its one-hot columns.
    """

    name: str
    task: str
    X: FloatArray
    y: np.ndarray[Any, Any]
    feature_names: tuple[str, ...]
    target: str
    categorical: tuple[tuple[str, tuple[int, ...]], ...]
    n_dropped: int
    path: Path

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def has_missing(self) -> bool:
        return bool(np.isnan(self.X).any())


def _verify(folder: Path, entry: ManifestEntry, path: Path, verify: bool | None) -> None:
    if verify is False:
        return
    if verify not in (None, True):
        raise TypeError(f"verify must be None, True or False, got {verify!r}")
    listing = folder / CHECKSUMS_FILE
    if not listing.is_file():
        if verify:
            raise ValueError(f"verify=True but {folder} has no {CHECKSUMS_FILE} file")
        return
    table = read_checksums(listing)
    if entry.file not in table:
        raise ValueError(
            f"{listing} has no line for {entry.file!r}; add its sha256sum line or pass "
            "verify=False to load it unchecked"
        )
    verify_file(path, table[entry.file])


def _fetch(folder: Path, entry: ManifestEntry, path: Path) -> None:
    if entry.url is None:
        raise ValueError(
            f"download=True but the manifest gives no url for {entry.name!r}; add a url column "
            "or place the file in the data folder"
        )
    listing = folder / CHECKSUMS_FILE
    table = read_checksums(listing) if listing.is_file() else {}
    if entry.file not in table:
        raise ValueError(
            f"download=True needs the expected sha256 of {entry.file!r} in {listing}; "
            "downloads without a checksum are refused"
        )
    download_file(entry.url, path, sha256=table[entry.file])


def _labels(cells: list[str], entry: ManifestEntry, target: str) -> np.ndarray[Any, Any]:
    source = f"{entry.file}"
    if entry.task == "regression":
        return parse_numeric(cells, target, source)
    numbers = [as_number(c) for c in cells]
    if all(v is not None for v in numbers):
        return np.asarray(numbers, dtype=np.float64)
    return np.asarray(cells, dtype=str)


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    target: str | None = None,
    verify: bool | None = None,
    download: bool = False,
) -> Dataset:
    """Load dataset ``name`` of the manifest in ``data_dir`` (or ``$LDPTREE_DATA``).

    ``target`` picks one of a multi-output dataset's target columns (default: the first listed).
    The module docstring states the policy for targets, missing values, categoricals, checksums
    and downloads. Errors name the argument or the manifest field at fault.
    """
    folder = resolve_data_dir(data_dir)
    entry = manifest_entry(name, folder)
    if target is None:
        target = entry.targets[0]
    elif target not in entry.targets:
        raise ValueError(
            f"target={target!r} is not a target column of {name!r}; choose one of "
            f"{list(entry.targets)}"
        )
    path = folder / entry.file
    if path.is_symlink() or path.exists():
        inside = path.resolve().is_relative_to(folder.resolve())
        if not inside:
            raise ValueError(
                f"the file {entry.file!r} of dataset {name!r} resolves to {path.resolve()}, "
                f"outside the data folder {folder} (a symbolic link); data files must lie inside it"
            )
    if not path.is_file():
        if not download:
            hint = " (or pass download=True)" if entry.url else ""
            raise ValueError(
                f"the file {entry.file!r} of dataset {name!r} is missing from {folder}{hint}"
            )
        _fetch(folder, entry, path)
    _verify(folder, entry, path, verify)

    header, rows = read_table(path)
    where = f"{path} (manifest row {name!r})"
    absent = [c for c in (*entry.targets, *entry.categorical) if c not in header]
    if absent:
        raise ValueError(f"{where}: manifest column(s) {absent} are not in the header")
    if len(rows) != entry.n:
        raise ValueError(
            f"{where}: the manifest says n={entry.n} but the file has {len(rows)} rows"
        )
    features = [c for c in header if c not in entry.targets]
    if len(features) != entry.d:
        raise ValueError(
            f"{where}: the manifest says d={entry.d} but the file has {len(features)} feature "
            "columns (all columns except the targets)"
        )
    t = header.index(target)
    keep = [row for row in rows if not is_missing(row[t])]
    if not keep:
        raise ValueError(f"{where}: every value of target {target!r} is missing")

    blocks: list[FloatArray] = []
    names: list[str] = []
    groups: list[tuple[str, tuple[int, ...]]] = []
    for column in features:
        j = header.index(column)
        cells = [row[j] for row in keep]
        if column in entry.categorical:
            block, block_names = one_hot(cells, column)
            groups.append((column, tuple(range(len(names), len(names) + len(block_names)))))
        else:
            block, block_names = parse_numeric(cells, column, str(path))[:, None], [column]
        blocks.append(block)
        names.extend(block_names)
    return Dataset(
        name=name,
        task=entry.task,
        X=np.hstack(blocks),
        y=_labels([row[t] for row in keep], entry, target),
        feature_names=tuple(names),
        target=target,
        categorical=tuple(groups),
        n_dropped=len(rows) - len(keep),
        path=path,
    )
