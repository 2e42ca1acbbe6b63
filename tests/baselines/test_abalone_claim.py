"""LPDT beats PHIST and DECONV on abalone at eps = 4 (LPDT paper Table 5: 9.46 vs 10.5 vs 11.4).

Four repetitions of the paper's split (public : train : test = 1 : 7 : 2) with fixed seeds.
LPDT-V at sensible fixed parameters (depth 2, n_l = 80, rho = 1/2); each competitor at its best
point of a pilot over 5 repetitions (seeds 1000-1004): PHIST with one cell (10.26 mean; two cells
gave 70.1), DECONV guarded with h = 5 (26.4; h = 1 gave 64.0). Measured in that pilot: LPDT 7.89
(sd 0.58 over 10 repetitions), PHIST 10.26 (sd 0.6), DECONV 26.4. The assertions compare means
over 4 repetitions: LPDT must be below PHIST by at least 0.5 and below DECONV by at least 3.
The measured margins are 2.4 and 18.5, i.e. about 7 and 20 standard errors of the mean
difference, so with these fixed seeds the test is deterministic, and under fresh seeds a false
failure would need a > 5 sd deviation (probability < 1e-6).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.baselines import DECONVRegressor, PHISTRegressor
from ldptree.datasets import load_dataset
from ldptree.experiments._splits import RandomSplit


@pytest.mark.slow
def test_lpdt_beats_phist_and_deconv_on_abalone(data_dir: Path) -> None:
    try:
        data = load_dataset("abalone", data_dir)
    except (FileNotFoundError, ValueError) as err:
        pytest.skip(f"abalone not available in the data folder: {err}")
    mse: dict[str, list[float]] = {"lpdt": [], "phist": [], "deconv": []}
    for rep in range(4):
        s = RandomSplit(data).draw(np.random.default_rng(1000 + rep))
        models = {
            "lpdt": LPDTRegressor(4.0, 2, 80, rule="cart", readout="ratio", random_state=rep),
            "phist": PHISTRegressor(4.0, 1, 0.01, random_state=rep),
            "deconv": DECONVRegressor(4.0, 5.0, random_state=rep),
        }
        for name, model in models.items():
            model.fit(s.X_train, s.y_train, X_public=s.X_public, y_public=s.y_public)
            mse[name].append(float(np.mean((model.predict(s.X_test) - s.y_test) ** 2)))
    mean = {k: float(np.mean(v)) for k, v in mse.items()}
    assert mean["lpdt"] < mean["phist"] - 0.5, mean
    assert mean["lpdt"] < mean["deconv"] - 3.0, mean
