"""Rounds resident on the device (``Threads(resident=True)``) give the host path's states bit for
bit: forced on the CPU here, where XLA flushes subnormal float64 values to zero, so the suspect
pieces' fallback is exercised for real. Deterministic (fixed seeds); no statistical assertion."""

from __future__ import annotations

import warnings
from typing import Any

import attrs
import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.accounting import KeyReuseWarning
from ldptree.rounds import Threads, run
from ldptree.rounds import _resident as resident
from ldptree.rounds._resident import DEVICE_PIECE_ROWS, ResidentRound, piece_rows
from ldptree.rounds._rows import is_memory_mapped

# the tests fit one configuration on several data sets (the watch's own test turns it back on)
pytestmark = pytest.mark.filterwarnings("ignore::ldptree.accounting.KeyReuseWarning")


def _leaves(state: Any) -> list[np.ndarray[Any, Any]]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(state.stats)]


def _state(est: Any, X: Any, y: Any, Xq: Any, yq: Any, executor: Threads) -> Any:
    pending = est._start_fit(X, y, X_public=Xq, y_public=yq)
    return run([pending.round], pending.rows, executor=executor)[0].state


def _assert_same(a: Any, b: Any) -> None:
    assert a.n == b.n
    for x, z in zip(_leaves(a), _leaves(b), strict=True):
        assert x.dtype == z.dtype
        np.testing.assert_array_equal(x, z)


def _data(n: int, dtype: Any, seed: int = 1) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    X = (rng.random((n, 3)) * 5 - 1).astype(dtype)
    y = X.sum(axis=1) + rng.normal(size=n)
    Xq = rng.random((400, 3)) * 5 - 1
    return X, y, Xq, Xq.sum(axis=1)


ESTIMATORS = {
    "lpdt-auto": (lambda: LPDTRegressor(max_depth=4, random_state=0), False),
    "lpdt-paper": (lambda: LPDTRegressor(max_depth=4, mechanism="paper", random_state=0), False),
    "lpct-auto": (lambda: LPCTClassifier(max_depth=4, random_state=0), True),
    "lpct-paper": (lambda: LPCTClassifier(max_depth=4, mechanism="paper", random_state=0), True),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_resident_round_equals_the_host_path(name: str, dtype: Any) -> None:
    make, classes = ESTIMATORS[name]
    X, y, Xq, yq = _data(5000, dtype)
    if classes:
        y, yq = (y > 3).astype(int), (yq > 3).astype(int)
    # pieces of 1,024 holders: four full ones and a short last one, padded to the compiled size
    host = _state(make(), X, y, Xq, yq, Threads(resident=False))
    device = _state(make(), X, y, Xq, yq, Threads(resident=True, piece_rows=1024))
    _assert_same(host, device)


def test_rows_next_to_every_threshold_route_as_on_the_host() -> None:
    # the box is exactly [0, 1]^2 (public corners), so a stored value is its scaled value: put
    # rows on every threshold and one float64 step either side of it
    rng = np.random.default_rng(2)
    Xq = np.vstack([[0.0, 0.0], [1.0, 1.0], rng.random((300, 2))])
    yq = Xq[:, 0] - Xq[:, 1]
    est = LPDTRegressor(max_depth=5, random_state=0)
    plan = est.plan(Xq, yq, n_holders=4096)
    thresholds = plan.partition.threshold[plan.partition.left >= 0]
    near = np.concatenate(
        [thresholds, np.nextafter(thresholds, -np.inf), np.nextafter(thresholds, np.inf)]
    )
    X = rng.random((4096, 2))
    X[: near.size, 0] = near
    X[near.size : 2 * near.size, 1] = near
    y = X[:, 0] - X[:, 1]
    host = _state(est, X, y, Xq, yq, Threads(resident=False))
    device = _state(est, X, y, Xq, yq, Threads(resident=True, piece_rows=1024))
    _assert_same(host, device)


@pytest.mark.parametrize(
    "where",
    [
        "stored subnormal",  # a row value below the smallest normal float64
        "difference subnormal",  # x - lo below it
        "quotient subnormal",  # (x - lo) / scale below it
    ],
)
def test_suspect_pieces_are_summed_again_on_the_host(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    suspects: list[int] = []
    sums = ResidentRound.sums

    def spy(self: ResidentRound, X: Any, labels: Any, first: int) -> Any:
        out = sums(self, X, labels, first)
        if out is None:
            suspects.append(first)
        return out

    monkeypatch.setattr(ResidentRound, "sums", spy)
    rng = np.random.default_rng(3)
    Xq = rng.random((300, 2)) * 4
    Xq[0] = [0.0, 1e-307]  # lo = (0, 1e-307), both normal
    Xq[1] = [0.5, 4.0]
    X = rng.random((4000, 2)) * 4
    row = 2500  # in the third piece of 1,024
    if where == "stored subnormal":
        X[row, 0] = 5e-324
    elif where == "difference subnormal":
        X[row, 1] = 1e-307 + 1e-320
    else:
        X[row, 0] = 1e-308 * 4  # divided by the width 4: a subnormal quotient
    y = X[:, 0] - X[:, 1]
    est = LPDTRegressor(max_depth=4, random_state=0)
    host = _state(est, X, y, Xq, Xq[:, 0] - Xq[:, 1], Threads(resident=False))
    device = _state(est, X, y, Xq, Xq[:, 0] - Xq[:, 1], Threads(resident=True, piece_rows=1024))
    _assert_same(host, device)
    assert suspects == [2048]


def test_plain_pieces_are_not_suspect() -> None:
    rng = np.random.default_rng(4)
    X = rng.random((600, 2))
    X[:5] = [[0.0, 0.0], [-0.0, 1.0], [1e-300, 0.5], [2.5e-308, 0.25], [1e300, -1e300]]
    lo, scale = np.zeros(2), np.ones(2)
    with jax.enable_x64(True):
        scaled, suspect = jax.jit(resident.scaled_exactly)(X, lo, scale, np.ones(600, bool))
    assert not bool(suspect)
    np.testing.assert_array_equal(np.asarray(scaled), (X - lo) / scale)


def test_a_stream_of_chunks_runs_resident_with_the_same_result() -> None:
    X, y, Xq, yq = _data(3000, np.float64, seed=5)
    chunks = [(X[s : s + 700], y[s : s + 700]) for s in range(0, 3000, 700)]
    est = LPDTRegressor(max_depth=3, mechanism="paper", random_state=0)
    host = _state(est, X, y, Xq, yq, Threads(resident=False))
    # short chunks are joined into full pieces of 1,024 holders on the device path
    device = _state(est, iter(chunks), None, Xq, yq, Threads(resident=True, piece_rows=1024))
    _assert_same(host, device)


def test_the_key_reuse_watch_signs_both_paths_alike() -> None:
    X, y, Xq, yq = _data(2000, np.float32, seed=6)
    est = LPDTRegressor(max_depth=3, random_state=0)
    X2 = X.copy()
    X2[257, 1] += 1.0  # a row the watch samples (every 257th)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", KeyReuseWarning)
        _state(est, X, y, Xq, yq, Threads(resident=False))
        _state(est, X, y, Xq, yq, Threads(resident=True, piece_rows=512))
        same = [w for w in caught if issubclass(w.category, KeyReuseWarning)]
        _state(est, X2, y, Xq, yq, Threads(resident=True, piece_rows=512))
        changed = [w for w in caught if issubclass(w.category, KeyReuseWarning)]
    assert same == []  # the same data, read by the host path then resident: one signature
    assert len(changed) == 1  # changed data under the same key: warned once


def test_executor_options_are_checked() -> None:
    with pytest.raises(ValueError, match="piece_rows"):
        Threads(piece_rows=0)
    with pytest.raises(TypeError, match="resident"):
        Threads(resident="yes")  # type: ignore[arg-type]


class _Device:
    def __init__(self, limit: int | None) -> None:
        self.limit = limit

    def memory_stats(self) -> dict[str, int] | None:
        return None if self.limit is None else {"bytes_limit": self.limit}


def test_piece_rows_follow_the_device_memory_and_the_exact_sums() -> None:
    _, _, Xq, yq = _data(100, np.float64)
    r = LPDTRegressor(max_depth=3, random_state=0).plan(Xq, yq, n_holders=100).round
    assert piece_rows(r, _Device(None), None) == DEVICE_PIECE_ROWS
    big = piece_rows(r, _Device(1 << 40), None)
    small = piece_rows(r, _Device(1 << 28), None)
    assert big == DEVICE_PIECE_ROWS and small < big
    assert 16 * small * (8 * 3 + 8) <= 1 << 28
    assert piece_rows(r, _Device(None), 1000) == 1024  # a power of two
    exact = r.mechanism.max_summary_rows
    assert piece_rows(r, _Device(None), 1 << 40) <= exact


def test_a_memory_map_s_pages_are_dropped_after_each_transfer(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the reader drops a chunk's pages when it moves on, but a resident piece is transferred
    # later, which reads them back in: the executor drops them again after the transfer
    from ldptree.rounds import _executors

    X, y, Xq, yq = _data(3000, np.float32, seed=8)
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    dropped: list[int] = []
    release = _executors.release_pages

    def spy(chunk: Any) -> None:
        if is_memory_mapped(chunk):
            dropped.append(int(chunk.shape[0]))
        release(chunk)

    monkeypatch.setattr(_executors, "release_pages", spy)
    est = LPDTRegressor(max_depth=3, random_state=0)
    host = _state(est, X, y, Xq, yq, Threads(resident=False))
    device = _state(est, mapped, y, Xq, yq, Threads(resident=True, piece_rows=1024))
    _assert_same(host, device)
    assert sorted(dropped) == [952, 1024, 1024]  # one per piece (worker threads: any order)


def test_a_prepared_kernel_is_not_compiled_again(caplog: pytest.LogCaptureFixture) -> None:
    # the round prepares the privatize-and-sum program on its first piece, beside the piece's
    # scaling and routing: the piece's own call must find it compiled
    X, y, Xq, yq = _data(700, np.float32, seed=9)
    r = LPDTRegressor(max_depth=2, random_state=0).plan(Xq, yq, n_holders=700).round
    labels = np.asarray(y, dtype=np.float32)
    device_round = ResidentRound.of(r, r.key, 1 << 12, labels[:1])
    rows = device_round.padded(700, 0)
    assert rows == 1024
    with jax.log_compiles(True), caplog.at_level("DEBUG", logger="jax"):
        device_round.prepare(rows)
        caplog.clear()
        stats = device_round.sums(X, labels, 0)
        compiled = [m.getMessage() for m in caplog.records if "Compiling" in m.getMessage()]
    assert stats is not None
    assert not [m for m in compiled if "_resident_sums" in m], compiled


class _Accelerator:
    platform = "gpu"


def test_rounds_run_resident_by_default_on_accelerators_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ldptree.rounds import _executors
    from ldptree.rounds._executors import Job

    _, _, Xq, yq = _data(100, np.float64)
    r = LPDTRegressor(max_depth=3, random_state=0).plan(Xq, yq, n_holders=100).round
    job = Job.of(r)
    assert not Threads().runs_resident(job)  # this machine's CPU: the host path
    assert Threads(resident=True).runs_resident(job)
    monkeypatch.setattr(_executors, "round_devices", lambda: [_Accelerator()])
    assert Threads().runs_resident(job)
    assert not Threads(resident=False).runs_resident(job)
    # a subnormal box keeps the round on the host whatever is asked
    tiny = attrs.evolve(r, scaler=attrs.evolve(r.scaler, lo=np.full(3, 1e-310)))
    assert not Threads(resident=True).runs_resident(Job.of(tiny))
