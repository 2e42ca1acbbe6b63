"""Shared fixtures: deterministic hypothesis profile and the real-data folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Derandomized: every run draws the same examples, so a statistical test that passes keeps passing.
settings.register_profile(
    "ldptree",
    derandomize=True,
    deadline=None,
    max_examples=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ldptree")


def pytest_configure(config: pytest.Config) -> None:
    """ldptree's kernel cache goes to pytest's cache folder (``.pytest_cache``, git-ignored), never
    to the user's ``~/.cache``: the suite runs the cached path users get, its parallel workers and
    the CLI's subprocesses share compiled kernels, and a fresh clone starts empty. An
    ``LDPTREE_JAX_CACHE`` already set (``off``, or a folder) is kept."""
    if "LDPTREE_JAX_CACHE" not in os.environ:
        if config.cache is None:  # the cache plugin turned off (-p no:cacheprovider)
            os.environ["LDPTREE_JAX_CACHE"] = "off"
        else:
            os.environ["LDPTREE_JAX_CACHE"] = str(config.cache.mkdir("ldptree-kernels"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared real-data folder (``LDPTREE_DATA`` or ``../shared/data``); skips when absent."""
    root = Path(__file__).resolve().parents[1]
    path = Path(os.environ.get("LDPTREE_DATA", root.parent / "shared" / "data"))
    if not (path / "manifest.csv").is_file():
        pytest.skip(f"real datasets not found at {path} (set LDPTREE_DATA to the data folder)")
    return path


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    """A two-worker Dask cluster in this process, listening on 127.0.0.1 only; skips the test
    when dask.distributed is not installed (the ``dask`` extra)."""
    distributed = pytest.importorskip(
        "distributed", reason='dask.distributed is not installed (pip install "ldptree[dask]")'
    )
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            protocol="tcp",
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster, timeout=120) as client,
    ):
        yield client
