"""Every built-in estimator with every built-in mechanism it takes gives, at a fixed seed, exactly
the fits recorded in ``fingerprints.json``: a SHA-256 of its predictions and cell estimates.

The stored digests were written by this module (``python tests/rounds/test_fit_fingerprints.py``)
before the curator's round machinery was rebuilt as one engine, so any change in what a built-in
fit computes, down to the last bit, fails here. Each fit is also run through
:func:`~ldptree.estimators.fit_many` where the estimator supports staged fits (its rounds batched
with the others'), which must give the same digests. Deterministic (fixed seeds, CPU arithmetic);
the digests are of this platform's float arithmetic, so regenerate them only on purpose.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.baselines import (
    APHISTRegressor,
    DECONVRegressor,
    PGLMClassifier,
    PHISTClassifier,
    PHISTRegressor,
    PSGDClassifier,
)
from ldptree.estimators import fit_many
from ldptree.testing import BUILT_INS

STORE = Path(__file__).with_name("fingerprints.json")
EPSILON = 2.0


def _data(task: str, n_classes: int = 2) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    n, n_public = 300, 100
    X = rng.uniform(0.0, 1.0, (n, 2))
    Xq = rng.uniform(0.0, 1.0, (n_public, 2))
    if task == "regression":
        return {"X": X, "y": X[:, 0] - X[:, 1], "X_public": Xq, "y_public": Xq[:, 0] - Xq[:, 1]}
    return {
        "X": X,
        "y": rng.integers(0, n_classes, n),
        "X_public": Xq,
        "y_public": np.arange(n_public) % n_classes,
    }


def _mechanisms(task: str, n_classes: int) -> dict[str, Any]:
    """The built-in mechanisms of ``task`` (class ones over ``n_classes``), by name."""
    out: dict[str, Any] = {}
    for name in sorted(BUILT_INS):
        built = BUILT_INS[name]
        if built.task != task or "n_features" in built.options:
            continue
        mechanism = built.make(EPSILON)
        if task == "classification":
            mechanism = attrs.evolve(mechanism, n_classes=n_classes)
        out[name] = mechanism
    return out


Case = tuple[str, Callable[[], Any], str, int]


def _cases() -> list[Case]:
    """``(case id, estimator factory, task, n_classes)`` for every combination."""
    cases: list[Case] = []
    e, seed = EPSILON, 3

    def add(case: str, make: Callable[[], Any], task: str, k: int = 2) -> None:
        cases.append((case, make, task, k))

    for chunk in (65536, 64):  # one chunk; several with a padded short last one
        for mech in ("auto", "paper"):
            add(
                f"LPDT-{mech}-chunk{chunk}",
                lambda m=mech, c=chunk: LPDTRegressor(
                    e, 3, mechanism=m, chunk_size=c, random_state=seed
                ),
                "regression",
            )
        for name, mechanism in _mechanisms("regression", 2).items():
            add(
                f"LPDT-{name}-chunk{chunk}",
                lambda m=mechanism, c=chunk: LPDTRegressor(
                    e, 3, mechanism=m, chunk_size=c, random_state=seed
                ),
                "regression",
            )
    add(
        "LPDT-ratio-cart",
        lambda: LPDTRegressor(e, 3, rule="cart", readout="ratio", random_state=seed),
        "regression",
    )
    for k in (2, 3):
        for mech in ("auto", "paper", *_mechanisms("classification", k)):
            chosen = _mechanisms("classification", k).get(mech, mech)
            add(
                f"LPCT-{mech}-k{k}",
                lambda m=chosen: LPCTClassifier(e, 3, mechanism=m, random_state=seed),
                "classification",
                k,
            )
            add(
                f"LPCT-{mech}-k{k}-chunk64",
                lambda m=chosen: LPCTClassifier(
                    e, 3, mechanism=m, chunk_size=64, lam=0.5, random_state=seed
                ),
                "classification",
                k,
            )
    add(
        "LPCT-aggregate",
        lambda: LPCTClassifier(e, 3, simulation="aggregate", random_state=seed),
        "classification",
    )
    add(
        "LPCT-public-only",
        lambda: LPCTClassifier(e, 3, lam=float("inf"), random_state=seed),
        "classification",
    )
    for mech in ("auto", "paper", *_mechanisms("classification", 2)):
        chosen = _mechanisms("classification", 2).get(mech, mech)
        add(
            f"LPCTPrune-{mech}",
            lambda m=chosen: LPCTPrunedClassifier(
                e, 4, min_depth=1, mechanism=m, random_state=seed
            ),
            "classification",
        )
    add(
        "LPCTPrune-aggregate-chunk64",
        lambda: LPCTPrunedClassifier(
            e, 4, min_depth=1, simulation="aggregate", chunk_size=64, random_state=seed
        ),
        "classification",
    )
    for kind in (PHISTRegressor, APHISTRegressor):
        for name, mechanism in {"default": None, **_mechanisms("regression", 2)}.items():
            add(
                f"{kind.__name__}-{name}",
                lambda k=kind, m=mechanism: k(e, 3, mechanism=m, chunk_size=64, random_state=seed),
                "regression",
            )
        add(
            f"{kind.__name__}-aggregate",
            lambda k=kind: k(e, 3, simulation="aggregate", random_state=seed),
            "regression",
        )
    for name, mechanism in {"default": None, **_mechanisms("classification", 2)}.items():
        add(
            f"PHISTClassifier-{name}",
            lambda m=mechanism: PHISTClassifier(e, 3, mechanism=m, random_state=seed),
            "classification",
        )
    add(
        "PHISTClassifier-aggregate",
        lambda: PHISTClassifier(e, 3, simulation="aggregate", random_state=seed),
        "classification",
    )
    add("DECONV", lambda: DECONVRegressor(e, 0.3, chunk_size=64, random_state=seed), "regression")
    add("PGLM", lambda: PGLMClassifier(e, 1e-3, random_state=seed), "classification")
    add("PSGD", lambda: PSGDClassifier(e, random_state=seed), "classification")
    return cases


def _digest(model: Any, X: np.ndarray[Any, Any]) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(np.asarray(model.predict(X))).tobytes())
    if hasattr(model, "predict_proba"):
        h.update(np.ascontiguousarray(np.asarray(model.predict_proba(X), np.float64)).tobytes())
    estimates = getattr(model, "estimates_", None)
    if estimates is not None:
        h.update(np.ascontiguousarray(np.asarray(estimates.count, np.float64)).tobytes())
        h.update(np.ascontiguousarray(np.asarray(estimates.label_sum, np.float64)).tobytes())
        h.update(str(estimates.n).encode())
    return h.hexdigest()


def _fit(make: Callable[[], Any], task: str, k: int, *, many: bool) -> Any:
    data = _data(task, k)
    model = make()
    args = (data["X"], data["y"])
    public = {"X_public": data["X_public"], "y_public": data["y_public"]}
    if many:
        return fit_many([model], *args, **public)[0]
    return model.fit(*args, **public)


def fingerprints(*, many: bool = False) -> dict[str, str]:
    """Every case's digest (``many``: fitted through :func:`fit_many`, all cases of one data set
    in one call, as an experiment grid runs them)."""
    cases = _cases()
    if not many:
        return {
            case: _digest(_fit(make, task, k, many=False), _data(task, k)["X"])
            for case, make, task, k in cases
        }
    out: dict[str, str] = {}
    groups: dict[tuple[str, int], list[Case]] = {}
    for case in cases:
        groups.setdefault((case[2], case[3]), []).append(case)
    for (task, k), members in groups.items():
        data = _data(task, k)
        models = fit_many(
            [make() for _, make, _, _ in members],
            data["X"],
            data["y"],
            X_public=data["X_public"],
            y_public=data["y_public"],
        )
        for (case, *_), model in zip(members, models, strict=True):
            out[case] = _digest(model, data["X"])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("many", [False, True], ids=["fit", "fit_many"])
def test_built_in_fits_match_the_recorded_fingerprints(many: bool) -> None:
    stored = json.loads(STORE.read_text())
    got = fingerprints(many=many)
    assert set(got) == set(stored)
    differ = sorted(case for case in stored if got[case] != stored[case])
    assert differ == [], f"fits changed: {differ}"


if __name__ == "__main__":  # pragma: no cover - writes the reference digests
    if "--write" not in sys.argv:
        raise SystemExit("pass --write to overwrite fingerprints.json with this tree's fits")
    STORE.write_text(json.dumps(fingerprints(), indent=1, sort_keys=True) + "\n")
