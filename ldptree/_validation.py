"""Input checks shared by every public entry point.

Each check raises ``ValueError`` or ``TypeError`` whose message names the argument and what is
allowed, so that bad input never reaches JAX (where it would surface as a tracer error) or NumPy
indexing (where it would surface as an ``IndexError``).
"""

from __future__ import annotations

import hashlib
import math
import numbers
import secrets
from typing import Any

import jax
import numpy as np
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

from ldptree._fork import check_not_forked
from ldptree._typing import FloatArray, PRNGKey


class NotApplicableError(ValueError):
    """A method refuses a dataset by design, before any work (e.g. a histogram grid too large
    to allocate: the papers' "-" entries). A ``ValueError``; the experiment runner records the
    cell or grid point as not applicable instead of failing the run."""


def check_choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of the strings ``allowed``, else a ``ValueError`` naming ``name``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_not_masked(value: Any, name: str) -> None:
    """Refuse a masked array with masked entries (``ValueError`` naming ``name``):
    ``np.asarray`` drops the mask and would use the hidden values as data."""
    if isinstance(value, np.ma.MaskedArray) and np.ma.getmaskarray(value).any():
        raise ValueError(
            f"{name} is a masked array with masked entries, whose hidden values would be used "
            f"as data; fill them ({name}.filled(value)) or drop their rows first"
        )


def check_real_dtype(X: Any, name: str) -> None:
    """Refuse array-likes whose values are not real numbers, before any conversion.

    ``np.asarray(X, dtype=float)`` would quietly drop the imaginary part of complex values and
    parse strings such as ``"1.5"``; complex values raise a ``ValueError`` (scikit-learn's
    "Complex data not supported") and strings a ``TypeError``, both naming ``name``. So do
    ``datetime64``/``timedelta64`` arrays (``TypeError``: their float value is a count of time
    units, not a feature), and a masked array with masked entries (``ValueError``: the
    conversion would drop the mask and use the hidden values). An object array is scanned for
    strings and complex numbers; other entries are left to the conversion, which names what it
    cannot convert."""
    if isinstance(X, str | bytes):
        raise TypeError(f"{name} must be a numeric array, got a {type(X).__name__}")
    check_not_masked(X, name)
    dtype = getattr(X, "dtype", None)
    if dtype is None or getattr(dtype, "kind", None) is None:
        # lists, pandas frames with mixed columns, ...: look at what NumPy makes of them
        try:
            dtype = np.asarray(X).dtype
        except (TypeError, ValueError):
            return  # ragged or odd input: the conversion reports it
    kind = np.dtype(dtype).kind
    if kind == "O":
        values = np.asarray(X, dtype=object).ravel()
        if any(isinstance(v, complex | np.complexfloating) for v in values):
            kind = "c"
        elif any(isinstance(v, str | bytes) for v in values):
            kind = "U"
    if kind == "c":
        raise ValueError(
            f"{name} must hold real numbers (bool, int or float): Complex data not supported "
            "(the imaginary part would be lost)"
        )
    if kind in "mM":  # datetime64 / timedelta64: their float value is a count of time units
        raise TypeError(
            f"{name} must hold real numbers (bool, int or float), got dates or durations "
            f"(dtype {np.dtype(dtype)}); convert them to numbers explicitly"
        )
    if kind in "USV":
        raise TypeError(
            f"{name} must hold real numbers (bool, int or float), got strings or bytes "
            f"(dtype {np.dtype(dtype)}); convert numeric strings explicitly"
        )


def check_matrix(X: Any, name: str, *, allow_empty: bool = False) -> FloatArray:
    """Return ``X`` as a finite ``float64[n, d]`` array or raise naming ``name``."""
    if X is None:
        raise TypeError(f"{name} must be a 2-d array of shape (n_samples, n_features), got None")
    check_real_dtype(X, name)
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric 2-d array; could not convert: {err}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-d of shape (n_samples, n_features), got ndim={arr.ndim}"
            + (" (reshape a single feature with X.reshape(-1, 1))" if arr.ndim == 1 else "")
        )
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one feature (column), got shape {arr.shape}")
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"{name} must have at least one row, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; only finite values are allowed")
    return arr


def check_features(X: Any, n_features: int) -> FloatArray:
    """``X`` as a matrix with the ``n_features`` columns a model was fitted with."""
    X_arr = check_matrix(X, "X")
    if X_arr.shape[1] != n_features:
        raise ValueError(
            f"X has {X_arr.shape[1]} features but the model was fitted with {n_features}"
        )
    return X_arr


def check_column(arr: np.ndarray[Any, Any], name: str, *, n: int | None) -> np.ndarray[Any, Any]:
    """``arr`` as 1-d (a single column is flattened) with ``n`` entries, or raise naming
    ``name``."""
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d (one label per row), got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has length {arr.shape[0]} but X has {n} rows; they must match")
    return arr


def check_vector(y: Any, name: str, *, n: int) -> FloatArray:
    """Return ``y`` as a finite ``float64[n]`` array or raise naming ``name``."""
    if y is None:
        raise TypeError(f"{name} must be a 1-d numeric array of length {n}, got None")
    check_real_dtype(y, name)
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a 1-d numeric array; could not convert: {err}") from None
    arr = check_column(arr, name, n=n)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; only finite values are allowed")
    return arr


def check_real(value: Any, name: str) -> float:
    """A finite real number (bools are rejected: ``True`` is no budget)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out}")
    return out


def check_bool(value: Any, name: str) -> bool:
    """``True`` or ``False`` (NumPy booleans accepted; ``0``/``1`` and strings rejected)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_positive(value: Any, name: str) -> float:
    """A finite real number > 0."""
    out = check_real(value, name)
    if out <= 0:
        raise ValueError(f"{name} must be > 0, got {out}")
    return out


def check_open_unit(value: Any, name: str) -> float:
    """A real number strictly inside (0, 1)."""
    out = check_real(value, name)
    if not 0.0 < out < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {out}")
    return out


def check_int(value: Any, name: str, *, minimum: int) -> int:
    """An integer >= ``minimum`` (NumPy integers accepted, bools and floats rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {type(value).__name__}")
    out = int(value)
    if out < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {out}")
    return out


#: Range of a per-holder budget ``epsilon`` (:func:`check_epsilon`).
EPSILON_MIN = 2.0**-48
EPSILON_MAX = 1e9


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """A per-holder budget ``2^-48 <= eps <= 10^9``.

    Below ``2^-48`` the constants a mechanism derives from ``eps`` leave floating point (a
    Laplace scale ``2 M / eps`` with ``M <= 2^64`` must stay below float32's ``2^128``, and a
    flip probability must differ from 1/2 in 64-bit arithmetic); far above any meaningful budget
    (the kit's 64-bit samplers already cap the realised epsilon near 180) the baselines' noise
    scales underflow to zero. Both limits are far from any useful budget."""
    out = check_positive(value, name)
    if not EPSILON_MIN <= out <= EPSILON_MAX:
        raise ValueError(f"{name} must lie in [2**-48, 1e9], got {out!r}")
    return out


def to_epsilon(value: Any) -> float:
    """attrs converter for a budget argument named ``epsilon`` (:func:`check_epsilon`)."""
    return check_epsilon(value, "epsilon")


def to_budget_split(value: Any) -> float:
    """attrs converter for ``budget_split``."""
    return check_open_unit(value, "budget_split")


#: Largest ``|lo|``, ``|hi|`` and smallest ``hi - lo`` of a label bound (:func:`check_label_bound`).
LABEL_BOUND_MAX = 2.0**64
LABEL_BOUND_MIN_WIDTH = 2.0**-64


def _float32_outward(value: float, direction: float) -> float:
    """The float32 nearest ``value`` on the side ``direction`` (``-inf``: at or below)."""
    f = np.float32(value)
    if (direction < 0 and float(f) > value) or (direction > 0 and float(f) < value):
        f = np.nextafter(f, np.float32(direction))
    return float(f)


def check_label_bound(value: Any, name: str = "label_bound") -> tuple[float, float]:
    """A real-label range ``(lo, hi)`` the float32 mechanisms can use exactly.

    ``value`` is ``M`` (meaning ``[-M, M]``) or ``(lo, hi)`` with ``lo < hi``. The bound is
    rounded *outward* to float32: ``lo`` to the largest float32 ``<= lo``, ``hi`` to the smallest
    float32 ``>= hi``, so the range the mechanism clips to contains the declared one and is the
    range it certifies. It is refused (``ValueError`` naming ``name``) unless

        |lo|, |hi| <= 2^64      and      hi - lo >= 2^-64.

    The range's width, centre and a grid step such as ``(hi - lo) / 2^20`` then lie between
    ``2^-84`` and ``2^65``, far inside float32's *normal* range (``2^-126`` to ``2^128``): none
    overflows, and none is subnormal, which XLA flushes to zero (a zero grid step would make
    every released code the same extreme value: a deterministic release).
    """
    lo, hi = check_bounds(value, name)
    if max(abs(lo), abs(hi)) > LABEL_BOUND_MAX:
        raise ValueError(
            f"{name} must satisfy |lo|, |hi| <= 2**64 (so that float32 constants derived from "
            f"it stay finite), got ({lo!r}, {hi!r}); rescale the labels"
        )
    lo, hi = _float32_outward(lo, -math.inf), _float32_outward(hi, math.inf)
    if hi - lo < LABEL_BOUND_MIN_WIDTH:
        raise ValueError(
            f"{name} must satisfy hi - lo >= 2**-64 (so that float32 constants derived from it "
            f"are normal numbers, not flushed to zero), got ({lo!r}, {hi!r}); rescale the labels"
        )
    return (lo, hi)


def to_label_bound(value: Any) -> tuple[float, float]:
    """attrs converter for ``label_bound`` (:func:`check_label_bound`)."""
    return check_label_bound(value, "label_bound")


def check_bounds(value: Any, name: str) -> tuple[float, float]:
    """A label bound: ``M`` meaning ``[-M, M]``, or a pair ``(lo, hi)`` with ``lo < hi``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        m = check_positive(value, name)
        return (-m, m)
    try:
        lo_raw, hi_raw = value
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a positive number M (meaning [-M, M]) or a pair (lo, hi), "
            f"got {value!r}"
        ) from None
    lo = check_real(lo_raw, f"{name}[0]")
    hi = check_real(hi_raw, f"{name}[1]")
    if not lo < hi:
        raise ValueError(f"{name} must satisfy lo < hi, got ({lo}, {hi})")
    return (lo, hi)


def key_from_entropy(entropy: bytes) -> PRNGKey:
    """The threefry key ``(w_0, w_1)``: the first 8 bytes of ``SHA-256(entropy)`` as two
    little-endian 32-bit words (``entropy`` must hold at least 16 bytes, i.e. 128 bits)."""
    if not isinstance(entropy, bytes) or len(entropy) < 16:
        raise ValueError("entropy must be at least 16 bytes (128 bits)")
    digest = hashlib.sha256(entropy).digest()
    words = np.frombuffer(digest[:8], dtype="<u4").astype(np.uint32)
    key: jax.Array = jax.random.wrap_key_data(jax.device_put(words), impl="threefry2x32")
    return key


def as_key(random_state: Any, name: str = "random_state") -> PRNGKey:
    """Turn ``random_state`` (None, a non-negative int, or a JAX key) into a JAX key.

    ``None`` draws 256 bits from the operating system's CSPRNG (``secrets.token_bytes``), never
    from a global RNG, and hashes them with SHA-256 down to the key: a threefry key is two
    32-bit words, so the key is uniform over ``2^64`` values (the 256 bits make it uniform and
    unpredictable; they cannot make the key space larger than 64 bits). Simulation keys are for
    research; a deployment draws each holder's randomness from the OS directly
    (:func:`ldptree.protocol.holder_report`). In a process forked after JAX started it raises
    ``RuntimeError`` (:mod:`ldptree._fork`): JAX would deadlock there.
    """
    check_not_forked()
    if random_state is None:
        return key_from_entropy(secrets.token_bytes(32))
    if isinstance(random_state, jax.Array):
        if jax.numpy.issubdtype(random_state.dtype, jax.dtypes.prng_key):
            return random_state
        if random_state.shape == (2,) and random_state.dtype == np.uint32:
            wrapped: jax.Array = jax.random.wrap_key_data(random_state)
            return wrapped
        raise TypeError(f"{name} array must be a JAX PRNG key, got dtype {random_state.dtype}")
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            f"{name} must be None, a non-negative int seed or a JAX PRNG key, "
            f"got {type(random_state).__name__}"
        )
    seed = int(random_state)
    if not 0 <= seed < 2**32:
        raise ValueError(f"{name} must be a seed in [0, 2**32), got {seed}")
    if str(getattr(jax.config, "jax_default_prng_impl", "")) == "threefry2x32":
        # jax.random.key(seed)'s key data (0, seed), transferred and wrapped: no jitted program
        words = jax.device_put(np.array([0, seed], dtype=np.uint32))
        wrapped_seed: jax.Array = jax.random.wrap_key_data(words, impl="threefry2x32")
        return wrapped_seed
    key: jax.Array = jax.random.key(seed)
    return key


def check_key(key: Any, name: str = "key") -> PRNGKey:
    """An explicit JAX PRNG key (typed, or raw ``uint32[2]`` threefry data), else a
    ``TypeError`` naming ``name`` (an int seed or ``None`` is refused: the caller must say which
    randomness it spends)."""
    if not isinstance(key, jax.Array):
        raise TypeError(
            f"{name} must be a JAX PRNG key such as jax.random.key(0), got {type(key).__name__}"
        )
    return as_key(key, name)


class NotFittedError(_SklearnNotFittedError):
    """Raised when a method that needs ``fit`` is called on an unfitted estimator (a
    :class:`sklearn.exceptions.NotFittedError`, hence also ``ValueError`` and
    ``AttributeError``)."""
