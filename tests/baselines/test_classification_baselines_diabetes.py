"""PGLM and PSGD-L on the real Diabetes public/private split (LPCT reference data).

``diabetes_pub.csv`` (200 public rows) and ``diabetes_pri.csv`` (2568 private rows, split 80/20
into training holders and test rows as in the paper), found through the ``data_dir`` fixture
(skipped when absent). Measured over the three splits below (majority-class rate 0.636):
PSGD-L (eps = 8, lr = 1) 0.679 (margin 0.043). PGLM at eps = 1000 (the paper's "non-private"
budget) varies a lot with the noise draw (the scale correction sometimes fails): over 144 draws
on these splits its accuracy has mean 0.645 and median 0.66 (sd 0.10; the earlier float-noise
release: mean 0.656 over 168 draws, the difference within chance), and 77% of draws score above
0.60; an earlier figure of 0.730 came from three lucky draws. So the test takes the median of 24
draws (8 per split) and asserts it above ``majority - 0.04``: with 77% of draws above that line,
the median of 24 falls below it with probability about 0.3%. PGLM at eps = 8 does *not* beat the
majority rate here (0.596 on these splits, 0.556 over 10 splits; the paper's Table 2: 0.559): with
``n_P = 2054`` holders the Gaussian noise on the 54 released moments swamps the OLS estimate, so
it is not asserted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldptree.baselines import PGLMClassifier, PSGDClassifier


def _load(path: Path) -> tuple[np.ndarray, np.ndarray]:
    table = np.genfromtxt(path, delimiter=",", skip_header=1)
    return table[:, :-1], table[:, -1].astype(int)


@pytest.mark.slow
def test_psgd_and_pglm_on_diabetes(data_dir: Path) -> None:
    if (
        not (data_dir / "diabetes_pub.csv").is_file()
        or not (data_dir / "diabetes_pri.csv").is_file()
    ):
        pytest.skip(f"diabetes_pub.csv / diabetes_pri.csv not found in {data_dir}")
    X_pub, y_pub = _load(data_dir / "diabetes_pub.csv")
    X_pri, y_pri = _load(data_dir / "diabetes_pri.csv")
    scores: dict[str, list[float]] = {"psgd": [], "pglm-1000": [], "majority": []}
    for rep in range(3):
        order = np.random.default_rng(rep).permutation(len(y_pri))
        train, test = order[: int(0.8 * len(order))], order[int(0.8 * len(order)) :]
        psgd = PSGDClassifier(epsilon=8.0, lr=1.0, random_state=rep)
        psgd.fit(X_pri[train], y_pri[train], X_public=X_pub, y_public=y_pub)
        scores["psgd"].append(psgd.score(X_pri[test], y_pri[test]))
        for draw in range(8):
            pglm = PGLMClassifier(epsilon=1000.0, random_state=100 * rep + draw)
            pglm.fit(X_pri[train], y_pri[train], X_public=X_pub, y_public=y_pub)
            scores["pglm-1000"].append(pglm.score(X_pri[test], y_pri[test]))
        rate = y_pri[test].mean()
        scores["majority"].append(max(rate, 1 - rate))
    majority = float(np.mean(scores["majority"]))
    assert np.mean(scores["psgd"]) > majority + 0.02
    assert np.median(scores["pglm-1000"]) > majority - 0.04
