"""JAX's persistent compilation cache for the command line.

A table run compiles a few dozen small XLA programs per process (one per kernel and padded
shape, ~0.3-0.9 s each on a 2-core machine), and ``--jobs N`` pays that again in every worker
process and on every run. With the persistent cache, compiled programs are written to disk once
and loaded (milliseconds) by later processes. Loading a program changes nothing it computes:
the cache key covers the program, the compiler options and the JAX/XLA version, so results are
identical with the cache on or off (a test pins this).

Where: ``$LDPTREE_JAX_CACHE`` if set, else ``$XDG_CACHE_HOME/ldptree/jax`` (``~/.cache/...``
without ``XDG_CACHE_HOME``). ``LDPTREE_JAX_CACHE=off`` (or ``0``, ``none``, ``false``, empty)
disables it. A ``JAX_COMPILATION_CACHE_DIR`` already in the environment is left alone: the user
configured JAX directly.

Only the CLI calls :func:`configure_compilation_cache`; importing ldptree as a library never
touches the user's cache folder or JAX's global configuration.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import cast

ENV_VAR = "LDPTREE_JAX_CACHE"
_OFF = ("", "0", "off", "none", "false", "no")


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The cache folder the CLI uses under ``environ``, or ``None`` when it is disabled."""
    value = environ.get(ENV_VAR)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "ldptree" / "jax"


def configure_compilation_cache(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Turn on JAX's persistent compilation cache (module docstring); returns the folder used.

    The settings go into ``environ`` as ``JAX_*`` variables, which JAX reads at import and which
    worker processes started with ``spawn`` inherit, and into ``jax.config`` for this process.
    Every program is cached, however quickly it compiled: JAX's default threshold (1 s) would
    skip almost all of ours.
    """
    if "JAX_COMPILATION_CACHE_DIR" in environ:
        return Path(environ["JAX_COMPILATION_CACHE_DIR"])
    folder = cache_dir(environ)
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only home must not stop a run; it only loses the cache
    settings = {
        "JAX_COMPILATION_CACHE_DIR": str(folder),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    environ.update(settings)
    import jax

    update = cast(Callable[[str, object], None], jax.config.update)  # untyped in jax
    update("jax_compilation_cache_dir", str(folder))
    update("jax_persistent_cache_min_compile_time_secs", 0.0)
    update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
