"""summarize_many: many releases through one vectorised kernel, bit for bit as one by one."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

from ldptree.mechanisms import (
    KitMechanism,
    LaplaceFeatureLabelMechanism,
    RRLaplaceMechanism,
    SummaryJob,
    summarize_many,
)
from ldptree.mechanisms._batch import BATCH
from ldptree.testing import BUILT_INS

KIT_BUILT_INS = {name: b for name, b in BUILT_INS.items() if isinstance(b.make(1.0), KitMechanism)}


def _jobs(make: Any, task: str, seed: int) -> list[SummaryJob]:
    """Three releases: one alone in its kernel shape, two sharing one (budget 6, 8 cells)."""
    rng = np.random.default_rng(seed)
    jobs = []
    for epsilon, n_cells in ((0.5, 3), (6.0, 8), (6.0, 8)):
        n = int(rng.integers(1, 256))  # one row bucket: few compiled shapes, a fast test
        cells = rng.integers(0, n_cells, n)
        labels: Any = (
            rng.integers(0, 4, n)  # code 3 is outside the 3 classes: the null level
            if task == "classification"
            else rng.uniform(-1.5, 1.5, n).astype(np.float32)
        )
        key = jax.random.key(int(rng.integers(2**31)))
        first = int(rng.integers(0, 10_000))
        jobs.append(SummaryJob(make(epsilon), key, cells, labels, n_cells, first_holder=first))
    return jobs


def _single(job: SummaryJob) -> dict[str, Any]:
    return job.mechanism.privatize_summarize(
        job.key, job.cells, job.labels, job.n_cells, first_holder=job.first_holder
    )


#: make test runs the papers' two mechanisms; every other built-in (a vectorised kernel of its own
#: to compile, seconds each) runs in the slow group.
_FAST = ("RRLaplaceMechanism", "LaplaceCellClassMechanism")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if name in _FAST else pytest.mark.slow)
        for name in sorted(KIT_BUILT_INS)
    ],
)
def test_every_kit_built_in_sums_as_one_by_one(name: str) -> None:
    built_in = KIT_BUILT_INS[name]
    jobs = _jobs(built_in.make, built_in.task, seed=len(name))
    many = summarize_many(jobs)
    assert len(many) == len(jobs)
    for got, job in zip(many, jobs, strict=True):
        want = _single(job)
        assert got.keys() == want.keys()
        for stat in want:
            assert np.asarray(got[stat]).dtype == np.asarray(want[stat]).dtype
            np.testing.assert_array_equal(np.asarray(got[stat]), np.asarray(want[stat]))


def test_groups_longer_than_one_call_and_mixed_shapes_keep_their_order() -> None:
    # 3 BATCH + 1 releases of one shape (four calls, the last one padded) between releases
    # of another shape: every result goes back to its own job
    make = KIT_BUILT_INS["RRLaplaceMechanism"].make
    rng = np.random.default_rng(5)
    cells, labels = rng.integers(0, 4, 300), rng.uniform(-1, 1, 300).astype(np.float32)
    jobs = []
    for i in range(3 * BATCH + 1):
        jobs.append(SummaryJob(make(2.0), jax.random.key(i), cells, labels, 4, first_holder=i))
        if i % 5 == 0:
            small = cells[:40] % 2
            jobs.append(SummaryJob(make(1.0), jax.random.key(100 + i), small, labels[:40], 2))
    many = summarize_many(jobs)
    for got, job in zip(many, jobs, strict=True):
        want = _single(job)
        for stat in want:
            np.testing.assert_array_equal(np.asarray(got[stat]), np.asarray(want[stat]))
    counts = {tuple(np.asarray(m["bits"]).tolist()) for m in (many[0], many[2])}
    assert len(counts) == 2  # different keys: different reports (not one result copied)


def test_no_jobs_is_no_results() -> None:
    assert summarize_many([]) == []


def test_refuses_what_it_cannot_run() -> None:
    key = jax.random.key(0)
    features = LaplaceFeatureLabelMechanism(epsilon=1.0, n_features=2, label_bound=(-1.0, 1.0))
    with pytest.raises(TypeError, match=r"jobs\[0\].mechanism must be a KitMechanism"):
        summarize_many([SummaryJob(features, key, np.zeros(3, int), np.zeros(3), 1)])
    with pytest.raises(TypeError, match=r"jobs\[0\] must be a SummaryJob"):
        summarize_many([("not", "a", "job")])  # type: ignore[list-item]
    rr = RRLaplaceMechanism(epsilon=1.0, label_bound=(-1.0, 1.0))
    with pytest.raises(ValueError, match="cells"):
        summarize_many([SummaryJob(rr, key, np.array([0, 5]), np.zeros(2, np.float32), 2)])
