"""More JAX host devices for the per-holder round: one CPU device per core.

XLA runs a compiled program on one device, spreading parts of it over that device's threads, and
the round's worker threads overlap reading with the kernels. JAX can also present the host as
several CPU devices (``jax_num_cpu_devices``); the per-holder round then sends consecutive chunks
of holders to the devices in turn (one thread per device), so whole kernels of different chunks
run side by side. Holder ``h``'s randomness depends only on the key and ``h``, and the summaries
are exact integer sums, so the result is bit for bit the same with any number of devices. Whether
it is faster depends on the machine: on a loaded 2-core machine it was not (the performance
notes have the measurements), so it is opt-in.

The device count is fixed when JAX starts its CPU backend (at the first JAX operation of the
process) and cannot change afterwards; :func:`use_host_cores` must therefore run before any JAX
work. It is an explicit call, never made by ``fit``, because it changes what ``jax.devices()``
returns for the whole process. ``LDPTREE_CPU_DEVICES=N`` picks the
count, ``LDPTREE_CPU_DEVICES=off`` (or ``0``, ``1``) leaves JAX's default of one device.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import cast

ENV_VAR = "LDPTREE_CPU_DEVICES"
_OFF = ("", "0", "1", "off", "none", "false", "no")


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)


def requested_devices(n: int | None, environ: Mapping[str, str] = os.environ) -> int:
    """The device count :func:`use_host_cores` asks for: ``n``, else ``$LDPTREE_CPU_DEVICES``,
    else the available cores; ``1`` when switched off."""
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive integer (CPU devices), got {n!r}")
        return n
    value = environ.get(ENV_VAR)
    if value is None:
        return available_cores()
    if value.strip().lower() in _OFF:
        return 1
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{ENV_VAR} must be a positive integer or 'off', got {value!r}")
    return count


def use_host_cores(n: int | None = None, *, environ: Mapping[str, str] = os.environ) -> int:
    """Present the host as ``n`` JAX CPU devices (default: one per available core); returns the
    number of CPU devices the process has or will have.

    Call it before the first JAX operation of the process (module docstring). Afterwards, or when
    the user already chose a count (``jax_num_cpu_devices`` in ``jax.config`` or the
    ``JAX_NUM_CPU_DEVICES`` environment variable, or ``--xla_force_host_platform_device_count`` in
    ``XLA_FLAGS``), nothing is changed and the existing count is returned.
    """
    import jax
    from jax._src import xla_bridge

    count = requested_devices(n, environ)
    configured = int(getattr(jax.config, "jax_num_cpu_devices", -1))  # untyped option
    user_set = (
        configured >= 0
        or "JAX_NUM_CPU_DEVICES" in os.environ
        or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    )
    if xla_bridge.backends_are_initialized() or user_set:
        return len(jax.local_devices(backend="cpu"))
    update = cast(Callable[[str, object], None], jax.config.update)  # untyped in jax
    update("jax_num_cpu_devices", count)
    return count
