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
