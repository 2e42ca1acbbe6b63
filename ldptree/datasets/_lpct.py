"""Synthetic P/Q pairs of the LPCT simulations (LPCT paper §6.1; reference
``distribution/transfer_distributions.py``).

Features are ``Uniform[0, 1]^d`` under both the private (P) and the public (Q) distribution and
labels are ``Y = 1{U < eta(X)}``, ``U ~ Uniform(0, 1)``. With

    g(x) = |1.5 x_2 - 0.5| |1.5 x_1 - 0.5| max(0, 1 - |2 x_2 - 1|),
    S(x) = sign(x_1 - 0.33) sign(x_2 - 0.33)        (numpy sign: 0 on the lines),

the two-dimensional regression functions are

    eta_P(x) = 1/2 + 0.4 S(x) g(x)^0.1,     eta_Q(x) = 1/2 + 0.4 S(x) g(x)^(0.1 gamma),

so ``|eta_Q - 1/2| = 0.4 (|eta_P - 1/2| / 0.4)^gamma``: ``gamma`` is the paper's *relative signal
exponent* (Assumption 5); the Bayes classifiers of P and Q agree. The paper's Figure 4 uses
``gamma = 0.5`` (reference "distribution 4", ``n_Q = 50``) and ``gamma = 5`` ("distribution 5",
``n_Q = 1000``). The six-dimensional pair (reference "distribution 7", the lambda analysis) is the
product ``1/2 + (eta(x_1, x_2) - 1/2)(eta(x_3, x_4) - 1/2)(eta(x_5, x_6) - 1/2)`` of the above,
for P and Q separately.

Every function takes an explicit ``numpy.random.Generator`` (or a seed for one); nothing touches a
global random state.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ldptree._typing import FloatArray, IntArray

#: Exponent of ``g`` in ``eta_P``; ``eta_Q`` uses ``P_EXPONENT * gamma``.
P_EXPONENT = 0.1
_DIMENSIONS = (2, 6)


class LPCTSample(NamedTuple):
    """A private training sample, a public sample and a private test sample."""

    X_private: FloatArray
    y_private: IntArray
    X_public: FloatArray
    y_public: IntArray
    X_test: FloatArray
    y_test: IntArray


def _generator(rng: Any) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise TypeError(
            f"rng must be a numpy.random.Generator or an int seed, got {type(rng).__name__}"
        )
    return np.random.default_rng(int(rng))


def _eta_2d(x1: FloatArray, x2: FloatArray, exponent: float) -> FloatArray:
    g = np.abs(1.5 * x2 - 0.5) * np.abs(1.5 * x1 - 0.5) * np.maximum(0.0, 1.0 - np.abs(2 * x2 - 1))
    s = np.sign(x1 - 0.33) * np.sign(x2 - 0.33)
    out: FloatArray = 0.5 + 0.4 * s * g**exponent
    return out


def lpct_eta(X: Any, *, exponent: float = P_EXPONENT) -> FloatArray:
    """``eta(x) = P(Y = 1 | X = x)`` for ``X`` of shape ``(n, 2)`` or ``(n, 6)`` (module
    docstring); ``exponent`` is ``0.1`` for P and ``0.1 gamma`` for Q."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] not in _DIMENSIONS:
        raise ValueError(f"X must have shape (n, 2) or (n, 6), got {X.shape}")
    if not exponent > 0:
        raise ValueError(f"exponent must be > 0, got {exponent}")
    if X.shape[1] == 2:
        return _eta_2d(X[:, 0], X[:, 1], exponent)
    signal = np.ones(X.shape[0])
    for k in range(0, 6, 2):
        signal *= _eta_2d(X[:, k], X[:, k + 1], exponent) - 0.5
    out: FloatArray = 0.5 + signal
    return out


def sample_lpct(n: int, *, gamma: float = 1.0, d: int = 2, rng: Any) -> tuple[FloatArray, IntArray]:
    """``n`` draws ``(X, Y)`` with ``eta`` of exponent ``0.1 gamma`` (``gamma = 1``: the private
    distribution P)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if d not in _DIMENSIONS:
        raise ValueError(f"d must be 2 or 6, got {d!r}")
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    gen = _generator(rng)
    X = gen.random((int(n), d))
    y = (gen.random(int(n)) < lpct_eta(X, exponent=P_EXPONENT * gamma)).astype(np.int64)
    return X, y


def make_lpct_pair(
    n_private: int,
    n_public: int,
    *,
    gamma: float = 0.5,
    d: int = 2,
    n_test: int = 2000,
    rng: Any,
) -> LPCTSample:
    """Private training data from P, public data from Q (exponent ``gamma``), test data from P.

    Defaults follow the paper's Figure 4a: ``gamma = 0.5``, 2000 private test points (the
    reference draws them fresh from P).
    """
    gen = _generator(rng)
    X_p, y_p = sample_lpct(n_private, gamma=1.0, d=d, rng=gen)
    X_q, y_q = sample_lpct(n_public, gamma=gamma, d=d, rng=gen)
    X_t, y_t = sample_lpct(n_test, gamma=1.0, d=d, rng=gen)
    return LPCTSample(X_p, y_p, X_q, y_q, X_t, y_t)


def lpct_bayes_accuracy(*, d: int = 2, n: int = 1_000_000, rng: Any) -> float:
    """Monte Carlo estimate of the Bayes accuracy ``E max(eta_P, 1 - eta_P)`` under P."""
    gen = _generator(rng)
    eta = lpct_eta(gen.random((n, d)))
    return float(np.mean(np.maximum(eta, 1.0 - eta)))
