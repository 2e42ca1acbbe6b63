"""The persistent JAX compilation cache (CLI and ``ldptree.enable_compilation_cache``): where it
goes, how to turn it off, that a user's own JAX cache is left alone, and that it changes no
result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ldptree
from ldptree._jax_cache import ENV_VAR, cache_dir, enable_compilation_cache

_SCRIPT = """
import hashlib, sys
import numpy as np
import ldptree
print(ldptree.enable_compilation_cache(*sys.argv[1:]))
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


def _run(env: dict[str, str], tmp_path: Path, *args: str) -> list[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_cache_location_and_switch():
    assert ldptree.enable_compilation_cache is enable_compilation_cache
    assert cache_dir({ENV_VAR: "off"}) is None
    assert cache_dir({ENV_VAR: "0"}) is None
    assert cache_dir({ENV_VAR: "/x/y"}) == Path("/x/y")
    assert cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/ldptree/jax")
    environ = {ENV_VAR: "off"}
    assert enable_compilation_cache(environ=environ) is None
    assert enable_compilation_cache("/somewhere", environ=environ) is None  # off wins
    assert environ == {ENV_VAR: "off"}  # nothing configured


def test_a_users_own_jax_cache_is_left_alone(tmp_path):
    environ = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "mine")}
    assert enable_compilation_cache(tmp_path / "ours", environ=environ) == tmp_path / "mine"
    assert environ == {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "mine")}
    assert not (tmp_path / "ours").exists()


def test_predictions_are_identical_with_the_cache_cold_warm_and_off(tmp_path):
    folder = tmp_path / "jax-cache"
    cold = _run({ENV_VAR: str(folder)}, tmp_path)
    assert cold[0] == str(folder)
    assert any(folder.iterdir())  # programs were written
    warm = _run({ENV_VAR: str(folder)}, tmp_path)
    off = _run({ENV_VAR: "off"}, tmp_path)
    assert off[0] == "None"
    # the library default: ~/.cache/ldptree/jax (HOME is tmp_path), or a folder passed explicitly
    default = _run({}, tmp_path)
    assert default[0] == str(tmp_path / ".cache" / "ldptree" / "jax")
    explicit = _run({}, tmp_path, str(tmp_path / "chosen"))
    assert explicit[0] == str(tmp_path / "chosen") and any((tmp_path / "chosen").iterdir())
    assert cold[1] == warm[1] == off[1] == default[1] == explicit[1]


_FIT_ONLY = """
import sys
import jax, numpy as np
if sys.argv[1] == "jax-first":  # the user's own JAX work compiles before the first fit
    jax.numpy.arange(5).sum().block_until_ready()
from ldptree import LPDTRegressor
rng = np.random.default_rng(0)
X = rng.uniform(size=(500, 2))
LPDTRegressor(epsilon=2.0, max_depth=2, random_state=0).fit(
    X, X[:, 0], X_public=X[:50], y_public=X[:50, 0]
)
"""


@pytest.mark.parametrize("order", ["fit-first", "jax-first"])
def test_fit_turns_the_cache_on_by_default_and_off_switch_wins(tmp_path: Path, order: str) -> None:
    """Without any call, a fit fills the default folder (also after the user's own JAX work);
    with ``LDPTREE_JAX_CACHE=off`` nothing is written."""
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", _FIT_ONLY, order], env=base, check=True)
    default = tmp_path / ".cache" / "ldptree" / "jax"
    assert default.is_dir() and any(default.iterdir())
    off_home = tmp_path / "off"
    off = {**base, "HOME": str(off_home), ENV_VAR: "off"}
    subprocess.run([sys.executable, "-c", _FIT_ONLY, order], env=off, check=True)
    assert not (off_home / ".cache").exists()
