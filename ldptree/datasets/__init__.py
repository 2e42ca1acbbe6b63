"""Synthetic generators of both papers and (later) real-data loaders."""

from ldptree.datasets._lpdt import lpdt_figure1, lpdt_uniform, sine_regression_function

__all__ = ["lpdt_figure1", "lpdt_uniform", "sine_regression_function"]
from ldptree.datasets._checksums import ChecksumError, sha256_file
from ldptree.datasets._download import download_file
from ldptree.datasets._manifest import (
    DATA_ENV,
    ManifestEntry,
    read_manifest,
    resolve_data_dir,
)
from ldptree.datasets._real import Dataset, load_dataset

__all__ += [
    "DATA_ENV",
    "ChecksumError",
    "Dataset",
    "ManifestEntry",
    "download_file",
    "load_dataset",
    "read_manifest",
    "resolve_data_dir",
    "sha256_file",
]
