"""Array aliases shared by the package.

Shapes are written in docstrings as ``float[n, d]`` (n rows, d features), ``int32[n]`` (one cell
index per row) and ``[L]`` for per-cell arrays (L = number of cells of a partition).
"""

from __future__ import annotations

from typing import TypeAlias

import jax
import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
Int32Array: TypeAlias = npt.NDArray[np.int32]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
ArrayLike: TypeAlias = npt.ArrayLike
#: A JAX PRNG key (``jax.random.key`` or the legacy ``uint32[2]`` form).
PRNGKey: TypeAlias = jax.Array

__all__ = ["ArrayLike", "BoolArray", "FloatArray", "Int32Array", "IntArray", "PRNGKey"]
