"""ldptree's persistent kernel cache: where it goes, how to turn it off, that it holds only
ldptree's own kernels (never a user's program or its constants), that it changes no JAX option
and no environment variable, and that it changes no result."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ldptree
from ldptree import _jax_cache
from ldptree._jax_cache import ENV_VAR, cache_dir, enable_compilation_cache, kernel


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """This process's kernel cache moved to a fresh folder for one test, then restored."""
    saved = _jax_cache._FOLDER.value
    chosen = enable_compilation_cache(tmp_path / "kernels", environ={})
    assert chosen == tmp_path / "kernels"
    yield chosen
    _jax_cache._FOLDER.value = saved


def _entries(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def test_cache_location_and_switch(tmp_path: Path) -> None:
    assert ldptree.enable_compilation_cache is enable_compilation_cache
    assert cache_dir({ENV_VAR: "off"}) is None
    assert cache_dir({ENV_VAR: "0"}) is None
    assert cache_dir({ENV_VAR: "/x/y"}) == Path("/x/y")
    assert cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/ldptree/kernels")
    saved = _jax_cache._FOLDER.value
    try:
        environ = {ENV_VAR: "off"}
        assert enable_compilation_cache(environ=environ) is None
        assert enable_compilation_cache(tmp_path / "x", environ=environ) is None  # off wins
        assert environ == {ENV_VAR: "off"} and not (tmp_path / "x").exists()
        assert _jax_cache.default_compilation_cache() is None
        # a folder someone else may write into is refused (a stored program is machine code)
        shared = tmp_path / "shared"
        shared.mkdir(mode=0o777)
        shared.chmod(0o777)
        assert enable_compilation_cache(shared, environ={}) is None
        mine = enable_compilation_cache(tmp_path / "mine", environ={})
        assert mine == tmp_path / "mine" == _jax_cache.default_compilation_cache()
        assert stat.S_IMODE(mine.stat().st_mode) == 0o700
    finally:
        _jax_cache._FOLDER.value = saved


@kernel(static_argnums=(0,))
def _affine(scale: int, x: jax.Array, shift: jax.Array) -> jax.Array:
    return x * scale + shift


def test_a_kernel_computes_what_jit_computes_and_stores_one_program_per_shape(
    folder: Path,
) -> None:
    x = np.arange(6, dtype=np.float32)
    want = np.asarray(jax.jit(lambda x, s: x * 3 + s)(x, np.float32(0.5)))
    got = _affine(3, x, np.float32(0.5))
    np.testing.assert_array_equal(np.asarray(got), want)
    stored = _entries(folder)
    assert len(stored) == 1 and stored[0].startswith(f"{__name__}._affine-")
    _affine(3, x + 1, np.float32(2.0))  # same shapes: the same program, nothing new
    assert _entries(folder) == stored
    _affine(3, np.arange(7, dtype=np.float32), np.float32(0.5))  # a new shape: a new program
    assert len(_entries(folder)) == 2
    # inside the caller's jit / vmap, the kernel is plain jax.jit (nothing stored)
    traced = jax.jit(jax.vmap(lambda v: _affine(2, v, jnp.float32(1.0))))(np.ones((3, 5)))
    np.testing.assert_array_equal(np.asarray(traced), np.full((3, 5), 3.0))
    assert len(_entries(folder)) == 2


@pytest.mark.parametrize("cached", [True, False])
def test_prepare_compiles_without_running_and_the_call_reuses_it(
    cached: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saved = _jax_cache._FOLDER.value
    try:
        environ = {} if cached else {ENV_VAR: "off"}
        folder = enable_compilation_cache(tmp_path / "k", environ=environ)
        fresh = _jax_cache.Kernel(_affine.__wrapped__, (0,))  # type: ignore[attr-defined]
        x = np.arange(11 + cached, dtype=np.float32)  # shapes no other test compiles
        with jax.log_compiles(True), caplog.at_level("DEBUG", logger="jax"):
            fresh.prepare(4, x, np.float32(1.0))
            compiled = [r for r in caplog.records if "Finished XLA compilation" in r.getMessage()]
            assert len(compiled) == 1  # the program compiled now (and nothing ran)
            if cached:
                assert folder is not None and len(_entries(folder)) == 1
            caplog.clear()
            got = fresh(4, x, np.float32(1.0))
            assert not [r for r in caplog.records if "Compiling" in r.getMessage()]
        np.testing.assert_array_equal(np.asarray(got), x * 4 + 1)
    finally:
        _jax_cache._FOLDER.value = saved


def test_a_damaged_entry_is_compiled_again_and_replaced(folder: Path) -> None:
    x = np.arange(4, dtype=np.float32)
    fresh = _jax_cache.Kernel(_affine.__wrapped__, (0,))  # type: ignore[attr-defined]
    want = np.asarray(fresh(5, x, np.float32(1.0)))
    (entry,) = folder.iterdir()
    entry.write_bytes(b"not an executable")
    again = _jax_cache.Kernel(_affine.__wrapped__, (0,))  # type: ignore[attr-defined]
    np.testing.assert_array_equal(np.asarray(again(5, x, np.float32(1.0))), want)
    assert entry.read_bytes() != b"not an executable"


class _Opaque:
    """A static argument that is not plain data (it could carry anything)."""

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Opaque)


def test_static_arguments_that_are_not_plain_data_are_never_stored(folder: Path) -> None:
    opaque = kernel(static_argnums=(0,))(lambda tag, x: x + 1.0)
    np.testing.assert_array_equal(np.asarray(opaque(_Opaque(), np.zeros(3))), np.ones(3))
    committed = jax.device_put(np.zeros(3, dtype=np.float32), jax.devices()[0])
    np.testing.assert_array_equal(np.asarray(_affine(1, committed, np.float32(1.0))), np.ones(3))
    assert _entries(folder) == []


def test_a_kit_mechanisms_kernel_is_stored_and_a_users_function_static_is_not(
    folder: Path,
) -> None:
    """The kit's static description holds its release kinds' classes (ldptree's code): the fused
    kernel is stored. A static that is a user's function keeps the call out of the cache."""
    from ldptree.mechanisms import RRLaplaceMechanism, _kit

    # an earlier test of this process may have compiled this shape: forget its programs so that
    # this call goes through the cache folder
    _kit._privatize_summarize._programs.clear()
    mechanism = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0))
    cells, labels = np.zeros(64, np.int32), np.full(64, 0.5, np.float32)
    mechanism.privatize_summarize(jax.random.key(0), cells, labels, 4)
    assert any("_privatize_summarize" in name for name in _entries(folder))
    before = _entries(folder)

    def users_body(x: jax.Array) -> jax.Array:
        return x * 2.0

    apply = kernel(static_argnums=(0,))(lambda body, x: body(x))
    np.testing.assert_array_equal(np.asarray(apply(users_body, np.ones(3))), np.full(3, 2.0))
    assert _entries(folder) == before


_SCRIPT = """
import hashlib
import numpy as np
import ldptree
print(ldptree._jax_cache.default_compilation_cache())
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


def _run(env: dict[str, str], tmp_path: Path) -> list[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


@pytest.mark.slow
def test_predictions_are_identical_with_the_cache_cold_warm_and_off(tmp_path: Path) -> None:
    folder = tmp_path / "kernel-cache"
    cold = _run({ENV_VAR: str(folder)}, tmp_path)
    assert cold[0] == str(folder)
    assert any(folder.iterdir())  # programs were written
    warm = _run({ENV_VAR: str(folder)}, tmp_path)
    off = _run({ENV_VAR: "off"}, tmp_path)
    assert off[0] == "None"
    assert not (tmp_path / ".cache").exists()  # nothing in the default folder
    assert cold[1] == warm[1] == off[1]


# The user's own JAX program closes over a "secret" array (small enough for XLA to embed it as a
# constant of the compiled program), compiled before and after a fit; afterwards the script
# reports what a child process inherits and what JAX's own cache settings are.
_USER = """
import json, os, subprocess, sys
import jax, numpy as np
secret = np.frombuffer(bytes.fromhex(sys.argv[1]), dtype=np.float32)
user = jax.jit(lambda x: x * secret + secret[::-1])
user(np.ones(secret.shape, np.float32)).block_until_ready()
from ldptree import LPDTRegressor  # importing scikit-learn sets a few variables of its own
environ = dict(os.environ)
options = {k: v for k, v in jax.config.values.items() if "cache" in k}
rng = np.random.default_rng(0)
X = rng.uniform(size=(500, 2))
LPDTRegressor(epsilon=2.0, max_depth=2, random_state=0).fit(
    X, X[:, 0], X_public=X[:50], y_public=X[:50, 0]
)
again = jax.jit(lambda x: x * secret + secret[::-1])  # compiled after the fit
again(np.full(secret.shape, 2.0, np.float32)).block_until_ready()
# the control: the search of the test finds the secret in the user's program serialised the way
# ldptree stores its kernels
from jax.experimental import serialize_executable
stored = serialize_executable.serialize(again.lower(np.ones(secret.shape, np.float32)).compile())
child = subprocess.run(
    [sys.executable, "-c", "import os, json; print(json.dumps(sorted(os.environ)))"],
    capture_output=True, text=True, check=True,
)
print(json.dumps({
    "environ_unchanged": dict(os.environ) == environ,
    "options_unchanged": {k: v for k, v in jax.config.values.items() if "cache" in k} == options,
    "child_jax_variables": [k for k in json.loads(child.stdout) if k.startswith("JAX_")],
    "control_finds_secret": any(secret[i : i + 1].tobytes() in stored[0] for i in range(4)),
}))
"""


@pytest.mark.parametrize("switch", ["default", "off"])
def test_a_users_program_and_its_constants_never_reach_the_cache(
    tmp_path: Path, switch: str
) -> None:
    """After a fit, ldptree's folder holds ldptree's kernels only (no file of the user's program,
    no byte of its closed-over array); no JAX option and no environment variable changed, and a
    child process sees no ``JAX_*`` variable; with ``LDPTREE_JAX_CACHE=off`` nothing is written."""
    secret = np.array([1234.5678, -8765.4321, 3.14159e-7, 271828.18] * 4, dtype=np.float32)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if switch == "off":
        env[ENV_VAR] = "off"
    done = subprocess.run(
        [sys.executable, "-c", _USER, secret.tobytes().hex()],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {
        "environ_unchanged": True,
        "options_unchanged": True,
        "child_jax_variables": [],
        "control_finds_secret": True,
    }
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    if switch == "off":
        assert files == []
        return
    folder = tmp_path / ".cache" / "ldptree" / "kernels"
    assert files and all(p.parent == folder for p in files)
    assert all(p.name.startswith("ldptree.") and p.suffix == ".xla" for p in files)
    # no value of the secret appears in any file (the control shows that the search would
    # find it in a stored user program)
    for p in files:
        data = p.read_bytes()
        assert not any(secret[i : i + 1].tobytes() in data for i in range(4))


def test_a_fit_changes_no_jax_option_and_no_environment_variable() -> None:
    options = dict(jax.config.values)
    environ = dict(os.environ)
    X = np.random.default_rng(1).uniform(size=(400, 2))
    ldptree.LPDTRegressor(epsilon=1.0, max_depth=2, random_state=0).fit(
        X, X[:, 1], X_public=X[:40], y_public=X[:40, 1]
    )
    assert dict(jax.config.values) == options
    assert dict(os.environ) == environ
