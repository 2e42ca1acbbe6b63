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

# The CLI turns on JAX's persistent compilation cache under the user's cache folder; tests that
# call it must not write there (nor into the repository). tests/test_jax_cache.py enables it in
# subprocesses with temporary folders.
os.environ.setdefault("LDPTREE_JAX_CACHE", "off")


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
