"""ldptree's persistent kernel cache: compiled programs of ldptree's own kernels, and nothing else.

A fresh process compiles a few XLA programs at its first fit (one per kernel and padded shape,
about 0.2-1.5 s each on a 2-core machine). ldptree's kernels (:func:`kernel`: routing, the fused
privatize-and-sum kernels, ...) keep their compiled programs on disk, so later processes load them
in milliseconds instead.

What the cache holds, and what it never touches:

* **Only ldptree's own kernels.** A :class:`Kernel` is a jitted function of ldptree; a program is
  written only when every static argument is a plain value (numbers, strings, tuples of them,
  and ldptree's own classes and functions: shapes and mechanism structure) and every other
  argument is an array or number passed as a traced input. So a stored program is a function
  of ldptree's code, the static description and the input *shapes*; no input value is ever
  baked into it, and no user program goes near the cache (the user's own ``jax.jit`` programs
  compile exactly as they would without ldptree).
* **No process-wide configuration.** Nothing in ``jax.config`` and nothing in ``os.environ`` is
  changed: JAX's own persistent cache stays as the user configured it (off by default), and child
  processes inherit nothing from ldptree. The cache is ldptree's own code path: a kernel lowers
  its program (cheap), hashes the lowered text with everything else that decides the compiled
  code (JAX and jaxlib versions, backend, device, ``XLA_FLAGS``, JAX's global options), and loads
  the executable stored under that hash or compiles and stores it. Loading changes nothing a
  program computes: the hash covers the program, so results are identical with the cache on or
  off (a test pins this).
* **Your folder only.** Stored executables are machine code, so the folder must not be writable
  by anyone else: it is created with mode ``0o700``, and a folder owned by another user or
  writable by group or others is not used (the kernels then compile as without a cache).

Where: ``$LDPTREE_JAX_CACHE`` if set, else ``$XDG_CACHE_HOME/ldptree/kernels``
(``~/.cache/...`` without ``XDG_CACHE_HOME``), read at the first kernel call of the process.
``LDPTREE_JAX_CACHE=off`` (or ``0``, ``none``, ``false``, ``no``, empty) turns it off.
:func:`enable_compilation_cache` (``ldptree.enable_compilation_cache``) picks another folder for
the calling process. Files are named ``<kernel>-<sha256>.xla``; deleting the folder is always safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Hashable, Mapping
from functools import update_wrapper
from importlib import metadata
from pathlib import Path
from typing import Any, overload

import jax
import numpy as np

try:  # JAX's own per-thread part of a jit cache key (64-bit mode, default device, ...)
    from jax._src.config import trace_context
except ImportError:  # pragma: no cover - a JAX without it: every call is left to jax.jit
    trace_context = None

ENV_VAR = "LDPTREE_JAX_CACHE"
_OFF = ("", "0", "off", "none", "false", "no")
#: Part of every key: a new layout of the key or the files starts a fresh set of entries.
_FORMAT = "ldptree-kernel-cache-1"
#: JAX options that change no compiled program (logging, JAX's own cache): left out of the key,
#: so that turning on ``jax_log_compiles`` still finds the stored programs.
_NOT_IN_KEY = (
    "jax_log_compiles",
    "jax_logging_level",
    "jax_explain_cache_misses",
    "jax_compilation_cache",
    "jax_persistent_cache",
    "jax_raise_persistent_cache_errors",
    "jax_pprint_use_color",
    "jax_dump_ir",
    "jax_include_debug_info_in_dumps",
)


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The default cache folder under ``environ``, or ``None`` when it is switched off."""
    value = environ.get(ENV_VAR)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "ldptree" / "kernels"


class _Folder:
    """The folder this process uses (resolved at the first kernel call unless chosen before)."""

    unresolved = object()

    def __init__(self) -> None:
        self.value: Any = self.unresolved
        self.lock = threading.Lock()

    def get(self) -> Path | None:
        value = self.value
        if value is self.unresolved:
            with self.lock:
                if self.value is self.unresolved:
                    self.value = _usable(cache_dir())
                value = self.value
        return value  # type: ignore[no-any-return]


_FOLDER = _Folder()


def _usable(folder: Path | None) -> Path | None:
    """``folder``, created private (``0o700``) if missing; ``None`` when it cannot be created or
    someone else could write into it (a stored program is machine code this process would run)."""
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError:
        return None
    getuid = getattr(os, "getuid", None)  # absent on Windows, where modes do not apply
    if getuid is not None and (
        info.st_uid != getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        return None
    return folder


def enable_compilation_cache(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
) -> Path | None:
    """Use ``path`` (default: ``$LDPTREE_JAX_CACHE``, else ``~/.cache/ldptree/kernels``) for
    ldptree's kernel cache in this process (module docstring); returns the folder in use.

    Returns ``None`` (the cache is off for this process) when ``LDPTREE_JAX_CACHE=off`` in
    ``environ`` (the switch wins over ``path``), or when the folder cannot be created or is
    writable by others. Changes nothing outside ldptree: no JAX option, no environment variable
    (a worker process started later resolves its folder itself). The cache is on by default, so
    a script needs this call only to pick another folder.
    """
    folder = cache_dir(environ)
    if folder is not None and path is not None:
        folder = Path(path).expanduser()
    usable = _usable(folder)
    with _FOLDER.lock:
        _FOLDER.value = usable
    return usable


def default_compilation_cache() -> Path | None:
    """The folder ldptree's kernels use in this process (``None``: off), resolving the default
    from ``$LDPTREE_JAX_CACHE`` / ``~/.cache/ldptree/kernels`` at the first call."""
    return _FOLDER.get()


class _NotStoredError(Exception):
    """An argument that keeps a call out of the cache (a tracer, a committed array, ...)."""


def _signature(x: Any) -> Hashable:
    """What the compiled program depends on for one dynamic argument (its abstract value)."""
    if isinstance(x, jax.core.Tracer):
        raise _NotStoredError  # inside the caller's jit/vmap: the outer program is not ldptree's
    if isinstance(x, jax.Array):
        if x.committed:  # placed on a device by the caller: jit follows the placement
            raise _NotStoredError
        return (x.shape, x.dtype, getattr(x, "weak_type", False))  # keys have no weak type
    if isinstance(x, np.ndarray | np.generic):
        return (x.shape, x.dtype)
    if isinstance(x, bool | int | float | complex):
        return x.__class__.__name__
    raise _NotStoredError


def _plain(value: Any) -> bool:
    """Whether a static argument is plain data (numbers, strings, tuples of them), so that the
    program compiled for it is ldptree's code specialised to shapes and structure only."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, type) or inspect.isfunction(value):
        # ldptree's own code (a release kind's class, a kernel body): what it traces is ours;
        # a user's class or function keeps the call out of the cache
        module = getattr(value, "__module__", None) or ""
        return module == "ldptree" or module.startswith("ldptree.")
    return False


def _device() -> Any:
    """The device a jitted call with uncommitted inputs runs on: ``jax.default_device``'s choice
    in this thread, else the default backend's first device."""
    chosen = getattr(jax.config, "jax_default_device", None)  # untyped option
    if chosen is None:
        return jax.local_devices()[0]
    if isinstance(chosen, str):
        return jax.local_devices(backend=chosen)[0]
    return chosen


def _environment(device: Any) -> str:
    """Everything besides the lowered program that decides the compiled code."""
    options = {
        name: value for name, value in jax.config.values.items() if not name.startswith(_NOT_IN_KEY)
    }
    client = device.client
    return "\n".join(
        [
            _FORMAT,
            f"jax {jax.__version__} jaxlib {metadata.version('jaxlib')}",
            f"{client.platform} {client.platform_version} {device.device_kind} id={device.id}",
            f"devices={client.device_count()}",
            f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')}",
            f"LIBTPU_INIT_ARGS={os.environ.get('LIBTPU_INIT_ARGS', '')}",
            repr(sorted(options.items())),
        ]
    )


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (another process sees the whole file or none)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".xla")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _load(path: Path, lowered: Any, device: Any) -> Any:
    """The executable stored at ``path`` for ``lowered``, or ``None`` (no entry, or a damaged
    one, which is then compiled again and replaced)."""
    from jax.experimental import serialize_executable

    try:
        data = path.read_bytes()
    except OSError:
        return None
    in_tree = jax.tree_util.tree_structure(lowered.args_info)
    try:
        return serialize_executable.deserialize_and_load(
            data, in_tree, lowered.out_tree, backend=device.client, execution_devices=[device]
        )
    except Exception:
        return None


def _store(path: Path, compiled: Any, device: Any) -> None:
    """Store ``compiled`` at ``path`` if it runs on ``device`` alone (what the key says); a
    read-only or full disk, or a program JAX cannot serialise, is simply not cached."""
    from jax.experimental import serialize_executable

    shardings = jax.tree_util.tree_leaves(compiled.input_shardings)
    if {d for s in shardings for d in s.device_set} != {device}:
        return
    with contextlib.suppress(OSError, ValueError, NotImplementedError):
        _write(path, serialize_executable.serialize(compiled)[0])


class Kernel:
    """A jitted ldptree function whose compiled programs persist in ldptree's cache folder.

    Called like ``jax.jit(fun, static_argnums=...)`` and computes the same (the same lowered
    program, compiled by the same XLA). With the cache off, under ``jax.disable_jit()``, or for a
    call that cannot be stored (keyword arguments, traced or committed inputs, a static argument
    that is not plain data), it is exactly that jitted call.
    """

    def __init__(self, fun: Callable[..., Any], static_argnums: tuple[int, ...] = ()) -> None:
        self._jit = jax.jit(fun, static_argnums=static_argnums)
        self._static = frozenset(static_argnums)
        self._name = f"{fun.__module__}.{fun.__qualname__}"
        self._programs: dict[Hashable, Any] = {}  # None: the call is left to jit
        self._locks: dict[Hashable, threading.Lock] = {}
        update_wrapper(self, fun)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        program = None if kwargs else self._stored(args)
        if program is None:
            return self._jit(*args, **kwargs)
        return program(*[a for i, a in enumerate(args) if i not in self._static])

    def prepare(self, *args: Any) -> None:
        """Compile (or load) the program of a call with these arguments, without running it: a
        later call finds it ready (in this cache, or in ``jax.jit``'s own, which ahead-of-time
        compilation fills too)."""
        if self._stored(args) is None and not getattr(jax.config, "jax_disable_jit", False):
            self._jit.lower(*args).compile()

    def _stored(self, args: tuple[Any, ...]) -> Any:
        """The stored program for ``args`` (loaded or compiled now), or ``None`` when the call
        is left to ``jax.jit`` (cache off, eager mode, or inputs that cannot be stored)."""
        folder = _FOLDER.get()
        if (
            folder is None
            or trace_context is None
            or getattr(jax.config, "jax_disable_jit", False)  # eager under jax.disable_jit()
        ):
            return None
        statics = tuple(a for i, a in enumerate(args) if i in self._static)
        dynamic = [a for i, a in enumerate(args) if i not in self._static]
        leaves, tree = jax.tree_util.tree_flatten(dynamic)
        try:
            signature = tuple(_signature(x) for x in leaves)
        except _NotStoredError:
            return None
        key = (statics, tree, signature, trace_context())
        if key in self._programs:
            return self._programs[key]
        return self._program(key, folder, statics, args)

    def _program(
        self, key: Hashable, folder: Path, statics: tuple[Any, ...], args: tuple[Any, ...]
    ) -> Any:
        """The compiled program for ``key`` (loaded from ``folder``, or compiled and stored
        there), or ``None`` when the call is left to jit; one thread per key does the work."""
        with self._locks.setdefault(key, threading.Lock()):
            if key not in self._programs:
                program = None
                if _plain(statics):
                    device = _device()
                    lowered = self._jit.lower(*args)
                    digest = hashlib.sha256(_environment(device).encode())
                    digest.update(lowered.as_text().encode())
                    path = folder / f"{self._name}-{digest.hexdigest()}.xla"
                    program = _load(path, lowered, device)
                    if program is None:
                        program = lowered.compile()
                        _store(path, program, device)
                self._programs[key] = program
            return self._programs[key]

    def _cache_size(self) -> int:
        """Distinct compiled programs of this kernel in this process (as ``jax.jit``'s)."""
        stored = sum(program is not None for program in self._programs.values())
        return stored + int(self._jit._cache_size())  # type: ignore[attr-defined]

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """``jax.jit(fun).lower``: the lowered program (not cached)."""
        return self._jit.lower(*args, **kwargs)


@overload
def kernel(fun: Callable[..., Any], /) -> Kernel: ...
@overload
def kernel(*, static_argnums: tuple[int, ...] = ()) -> Callable[[Callable[..., Any]], Kernel]: ...
def kernel(fun: Any = None, /, *, static_argnums: tuple[int, ...] = ()) -> Any:
    """``@kernel`` or ``@kernel(static_argnums=(0,))``: ``jax.jit`` with ldptree's persistent
    cache (:class:`Kernel`); only for ldptree's own functions."""
    if fun is None:
        return lambda f: Kernel(f, static_argnums)
    return Kernel(fun, static_argnums)
