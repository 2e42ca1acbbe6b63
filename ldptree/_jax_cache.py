"""JAX's persistent compilation cache, for the command line and for library users.

A process compiles a few dozen small XLA programs (one per kernel and padded shape, ~0.3-0.9 s
each on a 2-core machine), so the first fit of every new process pays seconds of compilation, and
``--jobs N`` pays it again in every worker. With the persistent cache, compiled programs are
written to disk once and loaded (milliseconds) by later processes. Loading a program changes
nothing it computes: the cache key covers the program, the compiler options and the JAX/XLA
version, so results are identical with the cache on or off (a test pins this).

Where: ``$LDPTREE_JAX_CACHE`` if set, else ``$XDG_CACHE_HOME/ldptree/jax`` (``~/.cache/...``
without ``XDG_CACHE_HOME``). ``LDPTREE_JAX_CACHE=off`` (or ``0``, ``none``, ``false``, empty)
turns it off everywhere. A cache the user configured for JAX directly (``JAX_COMPILATION_CACHE_DIR``
in the environment, or ``jax.config``'s ``jax_compilation_cache_dir``) is never overridden.

Who turns it on: the CLI, and every estimator's ``fit`` (:func:`default_compilation_cache`, which
runs :func:`enable_compilation_cache` with the defaults), unless switched off; a script may also
call :func:`enable_compilation_cache` (exported as ``ldptree.enable_compilation_cache``) itself,
e.g. to pick a folder. JAX decides at its first compilation whether a process uses a cache; when
the cache is turned on after that (the user ran JAX code before the first fit), JAX's cache state
is reset so that every later compilation uses it (programs compiled before are simply not cached).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import cast

ENV_VAR = "LDPTREE_JAX_CACHE"
_OFF = ("", "0", "off", "none", "false", "no")


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The default cache folder under ``environ``, or ``None`` when it is switched off."""
    value = environ.get(ENV_VAR)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "ldptree" / "jax"


def enable_compilation_cache(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: MutableMapping[str, str] = os.environ,
) -> Path | None:
    """Turn on JAX's persistent compilation cache (module docstring); returns the folder in use.

    Best called before the first JAX computation of the process (what was compiled before is
    not cached); the first call wins for the process. ``path`` overrides the default
    folder (``$LDPTREE_JAX_CACHE``, else ``~/.cache/ldptree/jax``). Returns the user's own JAX
    cache folder untouched when one is configured, and ``None`` (doing nothing) when
    ``LDPTREE_JAX_CACHE=off`` or the folder cannot be created (a read-only home only loses the
    cache). The settings go into ``environ`` as ``JAX_*`` variables, which worker processes started
    with ``spawn`` inherit, and into ``jax.config`` for this process. Every program is cached,
    however quickly it compiled: JAX's default threshold (1 s) would skip almost all of ours.
    """
    import jax

    if "JAX_COMPILATION_CACHE_DIR" in environ:
        return Path(environ["JAX_COMPILATION_CACHE_DIR"])
    configured = getattr(jax.config, "jax_compilation_cache_dir", None)  # untyped option
    if configured:
        return Path(configured)
    folder = cache_dir(environ)
    if folder is None:
        return None
    if path is not None:
        folder = Path(path).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    environ.update(
        {
            "JAX_COMPILATION_CACHE_DIR": str(folder),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
    )
    update = cast(Callable[[str, object], None], jax.config.update)  # untyped in jax
    update("jax_compilation_cache_dir", str(folder))
    update("jax_persistent_cache_min_compile_time_secs", 0.0)
    update("jax_persistent_cache_min_entry_size_bytes", 0)
    _recheck_cache()
    return folder


def default_compilation_cache() -> Path | None:
    """What ``fit`` calls first: :func:`enable_compilation_cache` with the defaults (the folder
    from ``$LDPTREE_JAX_CACHE``/``~/.cache/ldptree/jax``, ``LDPTREE_JAX_CACHE=off`` to opt out).
    Cheap when already on: the configured folder is returned at once."""
    return enable_compilation_cache()


def _recheck_cache() -> None:
    """Let JAX look for the cache again if it decided, at an earlier compilation, that there was
    none (JAX keeps that decision per process; its ``reset_cache`` clears it). Nothing happens
    when that JAX internal is missing: the cache then starts with the next process."""
    try:
        from jax._src import compilation_cache
    except ImportError:  # pragma: no cover - a JAX without this module
        return
    checked = getattr(compilation_cache, "_cache_checked", False)
    used = getattr(compilation_cache, "_cache_used", True)
    reset = getattr(compilation_cache, "reset_cache", None)
    if checked and not used and callable(reset):
        reset()
