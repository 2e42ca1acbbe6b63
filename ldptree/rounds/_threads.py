"""The per-holder round's chunks summarised concurrently, on every host device.

Each chunk of holders is routed and summarised (``work``) in a worker thread while the calling
thread reads, converts and scales the next chunks. JAX releases the interpreter lock while a
compiled kernel runs (and NumPy while it copies or indexes large arrays), so reading overlaps the
kernels. With several JAX devices (:func:`ldptree.use_host_cores` on a CPU), chunk ``i`` runs on
device ``i mod D``, so the kernels of consecutive chunks run on different cores.

The result does not depend on any of this: chunk ``i`` is summarised from the same holders with
the same holder indices wherever it runs (a device runs the same compiled program as any other),
and the summaries are exact integer sums, merged in chunk order. At most ``workers + 1`` chunks
are held at once, so memory stays bounded by a few chunks whatever ``n``. An error in any chunk
(or in reading one) stops the round and is raised once the chunks in flight have finished.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import jax

Piece = tuple[Any, Any]
Result = TypeVar("Result")
#: ``work(X_chunk, y_chunk, first_holder)``: one chunk's summary.
Work = Callable[[Any, Any, int], Result]


def round_devices() -> list[Any]:
    """The devices chunks are spread over: the default backend's local devices, or only the
    device (or platform) the caller chose with ``jax.default_device``."""
    chosen = getattr(jax.config, "jax_default_device", None)  # the calling thread's choice
    if chosen is None:
        return list(jax.local_devices())
    if isinstance(chosen, str):
        return list(jax.local_devices(backend=chosen))
    return [chosen]


def map_chunks(work: Work[Result], pieces: Iterable[Piece]) -> Iterator[Result]:
    """``work(X_chunk, y_chunk, first_holder)`` for consecutive pieces, results in order.

    A single piece is summarised in the calling thread (no pool for a small fit); several go to
    one worker per device (at least two, so that reading overlaps the kernel on one device).
    """
    items = iter(pieces)
    head = list(itertools.islice(items, 2))
    if len(head) < 2:
        for X_chunk, y_chunk in head:
            yield work(X_chunk, y_chunk, 0)
        return
    devices = round_devices()
    workers = max(2, len(devices))
    # JAX's context settings are per thread: the worker gets the caller's 64-bit mode (routing
    # compares in JAX's default float type) and its device
    x64 = bool(getattr(jax.config, "jax_enable_x64", False))  # untyped option

    def run(device: Any, X_chunk: Any, y_chunk: Any, first: int) -> Result:
        with jax.default_device(device), jax.enable_x64(x64):
            return work(X_chunk, y_chunk, first)

    with ThreadPoolExecutor(workers, thread_name_prefix="ldptree-round") as pool:
        pending: deque[Future[Result]] = deque()
        start = 0
        try:
            for i, (X_chunk, y_chunk) in enumerate(itertools.chain(head, items)):
                device = devices[i % len(devices)]
                pending.append(pool.submit(run, device, X_chunk, y_chunk, start))
                start += int(X_chunk.shape[0])
                if len(pending) > workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
