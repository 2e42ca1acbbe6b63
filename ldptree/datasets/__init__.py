"""Synthetic generators of both papers and the manifest-driven real-data loader."""

from ldptree.datasets._checksums import ChecksumError, sha256_file
from ldptree.datasets._download import download_file
from ldptree.datasets._lpct import (
    LPCTSample,
    lpct_bayes_accuracy,
    lpct_eta,
    make_lpct_pair,
    sample_lpct,
)
from ldptree.datasets._lpdt import lpdt_figure1, lpdt_uniform, sine_regression_function
from ldptree.datasets._manifest import (
    DATA_ENV,
    ManifestEntry,
    read_manifest,
    resolve_data_dir,
)
from ldptree.datasets._real import Dataset, load_dataset

__all__ = [
    "DATA_ENV",
    "ChecksumError",
    "Dataset",
    "LPCTSample",
    "ManifestEntry",
    "download_file",
    "load_dataset",
    "lpct_bayes_accuracy",
    "lpct_eta",
    "lpdt_figure1",
    "lpdt_uniform",
    "make_lpct_pair",
    "read_manifest",
    "resolve_data_dir",
    "sample_lpct",
    "sha256_file",
    "sine_regression_function",
]
