"""Chunks of the per-holder round summarised concurrently: same results, in order, as a plain
loop; errors stop the round; several host devices give the one-device fit bit for bit."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import jax
import numpy as np
import pytest

from ldptree.rounds._executors import map_chunks


def _pieces(sizes: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.full((m, 2), float(i)), np.arange(m)) for i, m in enumerate(sizes)]


def test_results_come_in_chunk_order_with_the_right_first_holders() -> None:
    seen: list[str] = []

    def work(X: Any, y: Any, first: int) -> tuple[int, float, int]:
        seen.append(threading.current_thread().name)
        return first, float(X[0, 0]), int(y.shape[0])

    sizes = [5, 3, 7, 1, 4, 6, 2]
    out = list(map_chunks(work, _pieces(sizes)))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    assert out == [(s, float(i), m) for i, (s, m) in enumerate(zip(starts, sizes, strict=True))]
    assert all(name.startswith("ldptree-round") for name in seen)  # ran in the pool


def test_a_single_chunk_runs_in_the_calling_thread() -> None:
    names: list[str] = []

    def work(X: Any, y: Any, first: int) -> int:
        names.append(threading.current_thread().name)
        return first

    assert list(map_chunks(work, _pieces([4]))) == [0]
    assert names == [threading.current_thread().name]
    assert list(map_chunks(work, [])) == []


@pytest.mark.parametrize("sizes", [[4], [5, 3, 7]])
def test_prepare_sees_the_first_piece_beside_its_work_and_changes_no_result(
    sizes: list[int],
) -> None:
    prepared: list[tuple[int, int, str]] = []

    def prepare(X: Any, y: Any, first: int) -> str:
        prepared.append((first, int(X.shape[0]), threading.current_thread().name))
        return "dropped"

    def work(X: Any, y: Any, first: int) -> int:
        return first

    out = list(map_chunks(work, _pieces(sizes), prepare=prepare))
    assert out == list(map_chunks(work, _pieces(sizes)))
    assert [p[:2] for p in prepared] == [(0, sizes[0])]
    assert prepared[0][2].startswith("ldptree-round")  # in the pool, even for one piece


def test_a_round_prepares_its_fused_kernel_once_on_the_first_piece(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ldptree.mechanisms import RRLaplaceMechanism
    from ldptree.partitions import MaxEdgePartitioner
    from ldptree.rounds import PrivateRows, Round, Serial, Threads, run

    rng = np.random.default_rng(3)
    partition = MaxEdgePartitioner(max_depth=3).fit(rng.uniform(size=(300, 2)), None)
    X, y = rng.uniform(size=(2500, 2)), rng.normal(size=2500)
    calls: list[tuple[int, ...]] = []
    original = RRLaplaceMechanism.prepare_summary

    def spy(self: Any, key: Any, cells: Any, labels: Any, n_cells: int) -> None:
        calls.append((int(cells.shape[0]), int(labels.shape[0]), n_cells))
        original(self, key, cells, labels, n_cells)

    monkeypatch.setattr(RRLaplaceMechanism, "prepare_summary", spy)
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=2.0)
    round_ = Round(partition=partition, mechanism=mech, key=jax.random.key(1), chunk_size=1000)
    threaded = run([round_], PrivateRows.of(X, y), executor=Threads())[0].state
    assert calls == [(1000, 1000, partition.n_leaves)]
    plain = run([round_], PrivateRows.of(X, y), executor=Serial())[0].state
    for name in plain.stats:
        np.testing.assert_array_equal(
            np.asarray(threaded.stats[name]), np.asarray(plain.stats[name])
        )


def test_an_error_in_a_chunk_or_in_reading_stops_the_round() -> None:
    def work(X: Any, y: Any, first: int) -> int:
        if first == 8:
            raise ValueError("chunk at holder 8 is bad")
        return first

    with pytest.raises(ValueError, match="holder 8"):
        list(map_chunks(work, _pieces([4, 4, 4, 4, 4])))

    def reading() -> Any:
        yield from _pieces([4, 4])
        raise ValueError("reading failed")

    with pytest.raises(ValueError, match="reading failed"):
        list(map_chunks(lambda X, y, first: first, reading()))


def test_workers_get_the_callers_64_bit_mode_and_chosen_device() -> None:
    """JAX context settings are per thread; the round's workers must not drop the caller's."""

    def work(X: Any, y: Any, first: int) -> tuple[bool, Any]:
        return bool(jax.config.jax_enable_x64), jax.config.jax_default_device

    with jax.enable_x64(True):
        assert all(x64 for x64, _ in map_chunks(work, _pieces([2, 2, 2])))
    assert not any(x64 for x64, _ in map_chunks(work, _pieces([2, 2, 2])))
    device = jax.local_devices()[-1]
    with jax.default_device(device):
        assert [d for _, d in map_chunks(work, _pieces([2, 2, 2]))] == [device] * 3


_FIT = """
import hashlib, sys
import numpy as np
import ldptree
print(ldptree.use_host_cores(int(sys.argv[1])))
from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.datasets import lpdt_uniform
rng = np.random.default_rng(5)
X, y = lpdt_uniform(9000, 3, rng)
Xq, yq = lpdt_uniform(400, 3, rng)
out = hashlib.sha256()
m = LPDTRegressor(epsilon=3.0, max_depth=4, chunk_size=1000, random_state=2)
m.fit(X, y, X_public=Xq, y_public=yq)
out.update(m.estimates_.count.tobytes() + m.estimates_.label_sum.tobytes())
c = LPCTClassifier(epsilon=3.0, max_depth=3, chunk_size=700, random_state=2)
c.fit(X, (y > 0).astype(int), X_public=Xq, y_public=(yq > 0).astype(int))
out.update(c.estimates_.count.tobytes() + c.estimates_.label_sum.tobytes())
print(out.hexdigest())
"""


@pytest.mark.slow
def test_fits_on_one_two_and_three_host_devices_are_identical() -> None:
    """Fresh processes (the device count is fixed when JAX starts)."""
    runs = []
    for devices in ("1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-c", _FIT, devices], capture_output=True, text=True, check=True
        )
        runs.append(done.stdout.split())
    assert [r[0] for r in runs] == ["1", "2", "3"]
    assert runs[0][1] == runs[1][1] == runs[2][1]
