"""The private sample read chunk by chunk: in-memory, memory-mapped, or an iterable of chunks.

A fit never needs the whole private sample at once: each holder's row is routed, privatized and
summed, and holder ``i``'s randomness depends only on the key and ``i``. So the private ``(X, y)``
is validated and converted to ``float64`` one chunk at a time, and peak memory is one chunk
(``chunk_size * d`` numbers) whatever ``n``. Three inputs are accepted:

* array-likes that are not NumPy arrays (lists, ...): converted and checked at once, as before;
* NumPy arrays, including memory-mapped ones (``np.memmap``, ``np.load(path, mmap_mode="r")``):
  never copied as a whole; the labels are checked before the round, and the round checks each
  chunk ``X[s:s + chunk_size]`` (finite, labels valid) and converts it to ``float64`` as it reads
  it. The resident pages of a read-only memory map are handed back to the kernel after each
  chunk (they stay in the page cache), so resident memory stays at one chunk;
* an iterable of ``(X_chunk, y_chunk)`` pairs passed as ``X`` with ``y=None`` (a generator over
  files, a database cursor, ...): holder indices are assigned in the order the rows arrive, so
  the fit equals the in-memory fit on the concatenation of the chunks, bit for bit. It is read
  once; a chunk that fails a check stops the fit with the error (nothing is released).

A check that fails in a later chunk raises during the private round; the estimator then publishes
nothing, so no report leaves the process.
"""

from __future__ import annotations

import functools
import itertools
import mmap
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_column, check_matrix
from ldptree.rounds._chunks import cut

Labels = np.ndarray[Any, Any]
LabelCheck = Callable[..., Labels]
Chunk = tuple[FloatArray, Labels]


def is_chunk_stream(X: Any, y: Any) -> bool:
    """Whether ``X`` is an iterable of ``(X_chunk, y_chunk)`` pairs: ``y`` is ``None`` and ``X``
    is iterable but not array-like (no ``shape``, no ``__array__``, not a string)."""
    if y is not None or isinstance(X, str | bytes):
        return False
    if hasattr(X, "shape") or hasattr(X, "__array__"):
        return False
    return isinstance(X, Iterable)


@attrs.frozen(eq=False)
class PrivateRows:
    """The private sample as consecutive chunks of validated ``(float64[m, d], labels[m])``.

    ``n`` is the number of rows when known up front (``None`` for an iterable of chunks until it
    has been read). ``chunks(size)`` yields chunks of at most ``size`` rows of consecutive holders;
    an iterable of chunks can be read once. The engine's source of private rows
    (:func:`~ldptree.rounds.run`).
    """

    n_features: int
    n: int | None
    _read: Callable[[int], Iterator[Chunk]]
    #: The check each chunk's labels passed (``None``: none): data checked alike reads alike.
    label_check: LabelCheck | None = None
    #: ``stored(size)``: the chunks with float32 rows of a NumPy array left float32 (``None``:
    #: the rows are only read as :meth:`chunks` gives them).
    _stored: Callable[[int], Iterator[Chunk]] | None = None

    def chunks(self, size: int, *, stored: bool = False) -> Iterator[Chunk]:
        """Consecutive chunks of at most ``size`` rows; rows as float64, or with ``stored``
        float32 rows as they are stored (a device widens them itself: half the bytes to move;
        other dtypes are still converted to float64)."""
        if stored and self._stored is not None:
            return self._stored(size)
        return self._read(size)

    def as_read(self, X: Any) -> Any:
        """Rows of a ``chunks(size, stored=True)`` chunk as :meth:`chunks` gives them."""
        return X if self._stored is None else np.asarray(X, dtype=np.float64)

    @classmethod
    def of(cls, X: Any, y: Any = None) -> PrivateRows:
        """Rows taken as they are, unchecked and unconverted (the caller validated them): arrays
        ``X`` ``[n, d]`` and ``y`` ``[n]`` (traced ones too: the serial executor runs under
        ``jax.jit``), or with ``y=None`` an iterable of ``(X_chunk, y_chunk)`` pairs, read once."""
        if not is_chunk_stream(X, y):
            if X.shape[0] != y.shape[0]:
                raise ValueError(
                    f"X and y must have the same number of rows, got {X.shape[0]} and {y.shape[0]}"
                )
            return cls(n_features=X.shape[1], n=X.shape[0], read=functools.partial(cut, X, y))
        return _stream_rows(X, None)


def private_rows(X: Any, y: Any, *, check_labels: LabelCheck) -> PrivateRows:
    """Validated private rows; ``check_labels(y, name, n=rows)`` checks (a chunk of) labels.

    Shape and dtype are checked at once; values (finiteness, label validity) chunk by chunk for
    NumPy arrays and iterables (module docstring)."""
    if is_chunk_stream(X, y):
        return _stream_rows(X, check_labels)
    if isinstance(X, np.ndarray) and X.dtype.kind in "biuf":
        return _array_rows(X, y, check_labels)
    X_arr = check_matrix(X, "X")
    y_arr = check_labels(y, "y", n=X_arr.shape[0])
    return PrivateRows(
        n_features=X_arr.shape[1],
        n=X_arr.shape[0],
        read=functools.partial(cut, X_arr, y_arr),
        label_check=check_labels,
    )


def _array_rows(X: np.ndarray[Any, Any], y: Any, check_labels: LabelCheck) -> PrivateRows:
    if X.ndim != 2:
        check_matrix(X[:1], "X")  # raises check_matrix's message on one row
    n, d = X.shape
    if n == 0 or d == 0:
        check_matrix(X, "X")  # empty: raises
    y = check_column(y, "y", n=n) if isinstance(y, np.ndarray) else check_labels(y, "y", n=n)
    # the labels (n numbers, not n * d) are checked before the round, so that a bad label is
    # reported before the estimator's own checks of its configuration
    for start in range(0, n, _CHECK_ROWS):
        check_labels(y[start : start + _CHECK_ROWS], "y", n=min(_CHECK_ROWS, n - start))
        release_pages(y[start : start + _CHECK_ROWS])

    def read(size: int, keep: tuple[Any, ...] = ()) -> Iterator[Chunk]:
        # each chunk's values are checked as the round reads it (one pass over the data, not
        # a checking pass and a reading pass); a bad chunk stops the round, which then
        # publishes nothing
        for Xc, yc in cut(X, y, size):
            _finite(Xc)
            labels = check_labels(yc, "y", n=yc.shape[0])
            rows = Xc if Xc.dtype in keep else np.asarray(Xc, dtype=np.float64)
            yield rows, labels
            # pages of what was copied; rows handed out as stored are the consumer's to drop
            # once it has used them (a later read would bring them back in)
            if rows is not Xc:
                release_pages(Xc)
            release_pages(yc)

    stored = functools.partial(read, keep=(np.dtype(np.float32), np.dtype(np.float64)))
    return PrivateRows(n_features=d, n=n, read=read, label_check=check_labels, stored=stored)


#: Labels per step of the checking pass over them.
_CHECK_ROWS = 1 << 16


def _finite(arr: np.ndarray[Any, Any]) -> None:
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError("X contains NaN or infinite values; only finite values are allowed")


def _stream_rows(X: Iterable[Any], check_labels: LabelCheck | None) -> PrivateRows:
    """An iterable of chunks, read once; each checked (``check_labels=None``: taken as is)."""
    items = iter(X)
    first = next(items, None)
    if first is None:
        raise ValueError(
            "X is an empty iterable; pass a 2-d array X with labels y, or an iterable of "
            "(X_chunk, y_chunk) pairs with y=None"
        )

    def take(item: Any, i: int, d: int | None) -> Chunk:
        return item if check_labels is None else _check_pair(item, i, d, check_labels)

    first_chunk = take(first, 0, None)
    d = first_chunk[0].shape[1]
    used = False

    def read(size: int) -> Iterator[Chunk]:
        nonlocal used
        if used:
            raise ValueError("the iterable of (X_chunk, y_chunk) pairs was already read")
        used = True
        rows = 0
        for i, item in enumerate(itertools.chain([first], items)):
            Xc, yc = first_chunk if i == 0 else take(item, i, d)
            yield from cut(Xc, yc, size)
            rows += Xc.shape[0]
        if rows == 0:
            raise ValueError("X (an iterable of chunks) has no rows; at least one is needed")

    return PrivateRows(n_features=d, n=None, read=read, label_check=check_labels)


def _check_pair(item: Any, i: int, d: int | None, check_labels: LabelCheck) -> Chunk:
    if not isinstance(item, tuple | list) or len(item) != 2:
        raise TypeError(
            f"y is None, so X must be an iterable of (X_chunk, y_chunk) pairs; item {i} is a "
            f"{type(item).__name__}. For in-memory data pass the labels as y"
        )
    Xc = check_matrix(item[0], f"X chunk {i}", allow_empty=True)
    if d is not None and Xc.shape[1] != d:
        raise ValueError(
            f"X chunk {i} has {Xc.shape[1]} features but chunk 0 has {d}; they must match"
        )
    return Xc, check_labels(item[1], f"y chunk {i}", n=Xc.shape[0])


def release_pages(chunk: np.ndarray[Any, Any]) -> None:
    """Drop the resident pages of a chunk read from a read-only memory map (no-op otherwise).

    ``MADV_DONTNEED`` on a read-only shared mapping only unmaps the pages from this process; the
    file's data are unchanged and are read again (from the page cache) if touched again."""
    mapped = _memory_map(chunk)
    advise = getattr(mmap, "MADV_DONTNEED", None)
    if mapped is None or advise is None or not chunk.flags.c_contiguous or chunk.nbytes == 0:
        return
    start = np.frombuffer(mapped, dtype=np.uint8).ctypes.data
    offset = chunk.ctypes.data - start
    page = offset - offset % mmap.PAGESIZE
    mapped.madvise(advise, page, offset + chunk.nbytes - page)


def _memmap_under(arr: Any) -> np.memmap[Any, Any] | None:
    """The ``np.memmap`` that ``arr`` is or views (e.g. through ``np.asarray``), else ``None``."""
    obj: Any = arr
    while isinstance(obj, np.ndarray):
        if isinstance(obj, np.memmap):
            return obj
        obj = obj.base
    return None


def is_memory_mapped(X: Any) -> bool:
    """Whether ``X`` is a memory-mapped array or a view of one (its values are then read chunk
    by chunk, never all at once)."""
    return _memmap_under(X) is not None


def _memory_map(arr: np.ndarray[Any, Any]) -> mmap.mmap | None:
    """The read-only memory map under ``arr`` (an ``np.memmap`` of mode ``"r"`` or a view of
    one), else ``None``."""
    under = _memmap_under(arr)
    mapped = getattr(under, "_mmap", None)
    ok = isinstance(mapped, mmap.mmap) and getattr(under, "mode", None) == "r"
    return mapped if ok else None
