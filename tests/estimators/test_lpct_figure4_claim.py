"""The LPCT paper's Figure 4a claim at eps = 2: LPCT beats LPCT-P and LPCT-Q on the gamma = 0.5
pair (n_P = 10,000, n_Q = 50).

Each method runs at the grid point that ``benchmarks/lpct_figure4.py`` selected for it at
eps = 2 on repetitions 0-19 (see docs/lpct-figure4.md): LPCT at depth 4, n_l = 1,
lambda = 1250; LPCT-P (lambda = 0) at depth 6, n_l = 5; LPCT-Q (lambda = inf) at depth 4, n_l = 1.
The test re-runs them on 60 *fresh* repetitions (seeds 1000-1059), so it checks the claim out of
the sample the grid was chosen on, through the per-holder protocol, with fixed seeds.

Stability: the seeds are fixed, so the test is deterministic. On these 60 repetitions the means are
LPCT 0.6783, LPCT-P 0.6205, LPCT-Q 0.6691; the paired per-repetition difference LPCT - LPCT-Q is
+0.0092 with standard error 0.0031 (3.0 standard errors above 0) and LPCT - LPCT-P is +0.058, so
the ordering is not an accident of the seeds.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier
from ldptree.datasets import make_lpct_pair

REPS = 60


@pytest.mark.slow
def test_lpct_beats_private_only_and_public_only_at_eps_2() -> None:
    accuracy = np.zeros((REPS, 3))
    for i, seed in enumerate(range(1000, 1000 + REPS)):
        data = make_lpct_pair(10_000, 50, gamma=0.5, rng=seed)
        public = {"X_public": data.X_public, "y_public": data.y_public}
        common = {"epsilon": 2.0, "min_samples_leaf": 1, "min_samples_split": 1}
        key = jax.random.key(seed)
        shared = LPCTClassifier(max_depth=4, lam=1250.0, random_state=key, **common).fit(
            data.X_private, data.y_private, **public
        )
        lpct, public_only = shared.predict_proba_path(data.X_test, [1250.0, np.inf])
        private = LPCTClassifier(
            max_depth=6,
            lam=0.0,
            random_state=jax.random.fold_in(key, 1),
            **dict(common, min_samples_leaf=5),
        ).fit(data.X_private, data.y_private, **public)
        private_only = private.predict_proba(data.X_test)
        for j, proba in enumerate((lpct, private_only, public_only)):
            accuracy[i, j] = np.mean(np.argmax(proba, axis=1) == data.y_test)
    mean = accuracy.mean(axis=0)
    assert mean[0] > mean[1], f"LPCT {mean[0]:.4f} <= LPCT-P {mean[1]:.4f}"
    assert mean[0] > mean[2], f"LPCT {mean[0]:.4f} <= LPCT-Q {mean[2]:.4f}"
    diff = accuracy[:, 0] - accuracy[:, 2]
    print(
        mean,
        diff.mean(),
        diff.std(ddof=1) / np.sqrt(REPS),
        (accuracy[:, 0] - accuracy[:, 1]).mean(),
    )
