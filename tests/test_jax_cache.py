"""The CLI's persistent JAX compilation cache: where it goes, how to turn it off, and that it
changes no result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ldptree._jax_cache import ENV_VAR, cache_dir, configure_compilation_cache

_SCRIPT = """
import hashlib, sys
import numpy as np
from ldptree._jax_cache import configure_compilation_cache
print(configure_compilation_cache())
from ldptree import LPDTRegressor
rng = np.random.default_rng(0)
X, Xq, Xt = rng.uniform(size=(3000, 3)), rng.uniform(size=(300, 3)), rng.uniform(size=(500, 3))
f = lambda A: np.sin(6 * A[:, 0]) + A[:, 1]
out = hashlib.sha256()
for rule in ("max_edge", "cart"):
    model = LPDTRegressor(epsilon=2.0, max_depth=3, rule=rule, budget_split=0.3, random_state=4)
    model.fit(X, f(X) + rng.normal(size=3000), X_public=Xq, y_public=f(Xq))
    out.update(model.predict(Xt).tobytes())
print(out.hexdigest())
"""


def _run(env_value: str, tmp_path: Path) -> list[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), ENV_VAR: env_value}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_cache_location_and_switch():
    assert cache_dir({ENV_VAR: "off"}) is None
    assert cache_dir({ENV_VAR: "0"}) is None
    assert cache_dir({ENV_VAR: "/x/y"}) == Path("/x/y")
    assert cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/ldptree/jax")
    environ = {ENV_VAR: "off"}
    assert configure_compilation_cache(environ) is None
    assert environ == {ENV_VAR: "off"}  # nothing configured


def test_predictions_are_identical_with_the_cache_cold_warm_and_off(tmp_path):
    folder = tmp_path / "jax-cache"
    cold = _run(str(folder), tmp_path)
    assert cold[0] == str(folder)
    assert any(folder.iterdir())  # programs were written
    warm = _run(str(folder), tmp_path)
    off = _run("off", tmp_path)
    assert off[0] == "None"
    assert cold[1] == warm[1] == off[1]
