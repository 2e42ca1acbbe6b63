"""A process forked after JAX started cannot run JAX: refuse, instead of deadlocking.

JAX runs thread pools; ``os.fork`` copies only the calling thread, so a forked child that
calls into JAX (a fit, a mechanism's ``privatize``) waits forever on locks held by threads that
do not exist in it. Python's ``multiprocessing`` forks by default on Linux. An at-fork hook
marks a child whose parent had initialised a JAX backend, and :func:`check_not_forked` (called
before ldptree draws a PRNG key, i.e. before any fit or privatization) raises a
``RuntimeError`` there that says what to do: start workers with ``spawn`` or ``forkserver``.
Prediction of a fitted estimator runs in NumPy and is unaffected.
"""

from __future__ import annotations

import os

__all__ = ["check_not_forked"]

_forked_after_jax = False


def _jax_started() -> bool:
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - JAX is a dependency
        return False
    started = getattr(xla_bridge, "backends_are_initialized", None)
    return bool(started()) if callable(started) else bool(getattr(xla_bridge, "_backends", None))


def _after_fork_in_child() -> None:
    global _forked_after_jax
    _forked_after_jax = _forked_after_jax or _jax_started()


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_not_forked() -> None:
    """``RuntimeError`` in a process forked from one where JAX had started (module docstring)."""
    if _forked_after_jax:
        raise RuntimeError(
            "this process was forked (os.fork, or multiprocessing's default 'fork' start method "
            "on Linux) from a process in which JAX had started, and JAX cannot run in it (it "
            "would deadlock); start worker processes with "
            "multiprocessing.get_context('spawn') or 'forkserver' (e.g. "
            "ProcessPoolExecutor(mp_context=multiprocessing.get_context('spawn')))"
        )
