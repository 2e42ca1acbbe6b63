"""Small synthetic sources shared by the experiments tests."""

from __future__ import annotations

import numpy as np

from ldptree.datasets import lpdt_uniform
from ldptree.experiments import SyntheticSource

EPS = (2.0,)


def uniform2(n: int, rng: np.random.Generator):
    return lpdt_uniform(n, 2, rng)


def source(name: str = "sine") -> SyntheticSource:
    return SyntheticSource(name, uniform2, n_public=200, n_train=900, n_test=300)


# --- user methods and generators named by import path ("exp_helpers:NAME") in the spend tests --
def _scaled_lpdt(factor: float):
    from ldptree.experiments._methods import lpdt_max_edge

    def build(*, epsilon: float, **kwargs):
        # deliberately spends factor x the budget it is given (its own ledger says so)
        return lpdt_max_edge(epsilon=factor * epsilon, **kwargs)

    return build


def _specs():
    from ldptree.experiments import MethodSpec

    half = MethodSpec("half-spend", "regression", _scaled_lpdt(0.5), "lpdt-quick", "half")
    double = MethodSpec("double-spend", "regression", _scaled_lpdt(2.0), "lpdt-quick", "double")
    return half, double


HALF_SPEND, DOUBLE_SPEND = _specs()


def wrong_generator(n: int, rng: np.random.Generator):
    return rng.uniform(size=n)  # not a pair (X, y)
