"""Many independent releases in one compiled call: the fused privatize-and-sum, vectorised.

An experiment fits the same holders many times: a grid over depths, leaf sizes and budget splits,
repetitions over keys. Each fit's holder side is one call of the kit's fused kernel
(:meth:`KitMechanism.privatize_summarize`), and on small data a call costs more in dispatch than
in arithmetic. :func:`summarize_many` takes the releases as :class:`SummaryJob` values, groups the
ones whose kernels have the same static description (label and noise kinds, padded cell count,
padded row count: mechanisms that differ only in their budget, split or label bound share it) and
runs each group as one ``jax.vmap`` of that kernel over the releases' keys, records and
*constants*. Every release keeps its own key, holders and mechanism, so the statistics are bit for
bit those of calling ``job.mechanism.privatize_summarize`` once per job: the kernel is integer
arithmetic on the holders' Threefry words plus exact integer sums, and vectorising it changes
neither.

A group runs :data:`BATCH` releases per call (a short call is filled up by repeating its last
release and discarding the copies; fewer when :data:`MAX_BATCH_ROWS` padded rows would be
exceeded), so each kernel shape compiles once whatever the group sizes: a compiled shape costs
tens of milliseconds to trace even when the persistent cache holds it, more than the padding.
Holders are padded to a finer row count than the single call's power of two
(:func:`~ldptree._buckets.fine_bucket`, at most an eighth more rows): the releases of one
experiment share their holder count, so the finer shape compiles once per data set while the
kernel's work, the holders' random words, shrinks by up to half.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import attrs
import jax
import numpy as np

from ldptree._buckets import fine_bucket
from ldptree._jax_cache import kernel as cached_kernel
from ldptree._typing import PRNGKey
from ldptree.protocols import FusedSummary, declares

#: Releases per vectorised call (a short group is padded to it: one compiled shape per kernel).
BATCH = 8
#: Largest number of padded holder rows (releases x rows) in one vectorised call.
MAX_BATCH_ROWS = 1 << 21


@attrs.frozen(eq=False)
class SummaryJob:
    """One release: ``mechanism.privatize_summarize(key, cells, labels, n_cells,
    first_holder=first_holder)``."""

    mechanism: FusedSummary
    key: PRNGKey
    cells: Any
    labels: Any
    n_cells: int
    first_holder: int = 0


@cached_kernel(static_argnums=(0, 1))
def _batched_sums(
    kernel: Callable[..., tuple[jax.Array, ...]], spec: Any, consts: Any, *args: Any
) -> tuple[jax.Array, ...]:
    # the kit's unblocked body: a vectorised loop whose trip count differs between releases runs
    # as a masked while loop, measured slower on an experiment's few-thousand-row releases
    return jax.vmap(partial(kernel, spec))(consts, *args)


def _signature(kernel: Any, spec: Any, consts: Any, args: Any) -> tuple[Any, ...]:
    """What must agree for releases to share one vectorised call: the kernel, the static
    description and the shapes and dtypes of every constant and input."""
    leaves = jax.tree_util.tree_leaves((consts, args))
    return (kernel, spec, tuple((np.shape(x), np.asarray(x).dtype.str) for x in leaves))


def summarize_many(jobs: Sequence[SummaryJob]) -> list[dict[str, Any]]:
    """The statistics of every job, in order (module docstring): equal bit for bit to
    ``[job.mechanism.privatize_summarize(job.key, job.cells, job.labels, job.n_cells,
    first_holder=job.first_holder) for job in jobs]``, with one compiled call per group of
    releases that share a kernel shape. ``TypeError`` for a job whose mechanism lacks the
    :class:`~ldptree.protocols.FusedSummary` capability (every kit mechanism has it); the
    per-job checks of ``privatize_summarize`` apply."""
    prepared = []
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, job in enumerate(jobs):
        if not isinstance(job, SummaryJob):
            raise TypeError(f"jobs[{index}] must be a SummaryJob, got {type(job).__name__}")
        if not declares(job.mechanism, FusedSummary):
            raise TypeError(
                f"jobs[{index}].mechanism must be a KitMechanism or another mechanism with the "
                f"FusedSummary capability (a vectorisable fused kernel), got "
                f"{type(job.mechanism).__name__}"
            )
        spec, consts, args = job.mechanism.summary_inputs(
            job.key,
            job.cells,
            job.labels,
            job.n_cells,
            job.first_holder,
            rows=fine_bucket(int(np.shape(job.cells)[0])),
        )
        kernel = job.mechanism.summary_kernel
        prepared.append((kernel, spec, consts, args))
        groups.setdefault(_signature(kernel, spec, consts, args), []).append(index)
    out: list[dict[str, Any]] = [{} for _ in jobs]
    for members in groups.values():
        kernel, spec = prepared[members[0]][:2]
        rows = int(np.shape(prepared[members[0]][3][1])[0])
        width = min(BATCH, max(1, MAX_BATCH_ROWS // rows))
        width = 1 << (width.bit_length() - 1)  # a power of two: few compiled shapes
        for start in range(0, len(members), width):
            part = members[start : start + width]
            padded = part + [part[-1]] * (width - len(part))
            consts, args = jax.tree_util.tree_map(
                lambda *xs: np.stack([np.asarray(x) for x in xs]),
                *[(prepared[i][2], prepared[i][3]) for i in padded],
            )
            sums = jax.device_get(_batched_sums(kernel, spec, consts, *args))
            for b, i in enumerate(part):
                job = jobs[i]
                out[i] = job.mechanism.summary_stats(spec, tuple(s[b] for s in sums), job.n_cells)
    return out
