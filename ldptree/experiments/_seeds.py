"""Independent, reproducible seeds for every random choice of an experiment.

``derive_seed(base, *labels)`` feeds ``base`` and a stable 32-bit hash (CRC-32, unlike Python's
salted ``hash``) of each label into :class:`numpy.random.SeedSequence` and returns one 32-bit
word: the seed of one (purpose, dataset, repetition, method, epsilon, grid point) combination.
Distinct label tuples give statistically independent streams; equal tuples give equal seeds on
every machine and run. Nothing touches a global random state.
"""

from __future__ import annotations

import zlib

import numpy as np


def _word(label: object) -> int:
    return zlib.crc32(repr(label).encode("utf-8"))


def derive_seed(base: int, *labels: object) -> int:
    """A seed in ``[0, 2**32)`` determined by ``base`` and the labels (see module docstring)."""
    sequence = np.random.SeedSequence(entropy=int(base), spawn_key=tuple(_word(x) for x in labels))
    return int(sequence.generate_state(1)[0])


def derive_rng(base: int, *labels: object) -> np.random.Generator:
    """A NumPy generator seeded with :func:`derive_seed`."""
    return np.random.default_rng(derive_seed(base, *labels))
