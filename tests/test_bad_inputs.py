"""The bad-input matrix: every public entry point refuses bad input with a ``ValueError`` or
``TypeError`` whose message names the argument and what is allowed.

One parametrised test, :func:`test_bad_input_is_refused_naming_the_argument`; each case id starts
with the entry point (``<entry>-<what>``), so ``pytest --collect-only -q`` counts the cases per
entry point. Cases per entry point (kept in step by
:func:`test_the_matrix_covers_every_entry_point`):

=============  =====  ====================================================================
entry point    cases  what
=============  =====  ====================================================================
lpdt           24     ``LPDTRegressor.fit`` (features, labels, public data, hyper-params)
lpct           8      ``LPCTClassifier.fit`` (class labels and the class policy)
forest         4      ``LPDTForestRegressor.fit``, ``LPCTForestClassifier.fit``
baselines      7      ``DECONVRegressor``, ``PSGDClassifier``, ``PGLMClassifier``
partitioner    5      ``MaxEdgePartitioner``, ``RangeScaler.fit``
partition      10     ``Partition.from_json`` (malformed JSON and fields)
mechanism      13     RR-Laplace, cell-class, Duchi, piecewise mechanisms and ``privatize``
accountant     8      ``verify_ldp``, ``audit_ldp``
datasets       12     ``read_manifest``, ``load_dataset`` (manifest, CHECKSUMS, CSV, links)
config         11     ``load_config`` (TOML)
cli            4      ``ldptree`` command line (exit status 2 and a message naming the option)
protocol       5      ``holder_report``, ``load_published``
collector      7      ``Collector.submit``: rejected *and counted* under a reason, no raise
=============  =====  ====================================================================

The CLI's convention is an exit status of 2 and a message on stderr (argparse's for bad options,
``ldptree <command>: error: ...`` for bad configurations); :func:`_cli` turns that into a
``ValueError`` carrying the message so that the same ``match=`` assertion applies. A collector
never raises on a report: :func:`_submit` checks that the report was counted under its reason
and returns the reason, which the test matches. No case is statistical.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor, Partition
from ldptree.accounting import audit_ldp, verify_ldp
from ldptree.baselines import (
    APHISTRegressor,
    CTClassifier,
    DECONVRegressor,
    DTRegressor,
    PGLMClassifier,
    PHISTClassifier,
    PHISTRegressor,
    PSGDClassifier,
)
from ldptree.cli import main as cli_main
from ldptree.datasets import load_dataset, read_manifest
from ldptree.ensembles import (
    LPCTForestClassifier,
    LPCTTwoRoundClassifier,
    LPDTForestRegressor,
    LPDTTwoRoundRegressor,
)
from ldptree.estimators import UnknownClassWarning
from ldptree.experiments import load_config
from ldptree.mechanisms import (
    DuchiMechanism,
    LaplaceCellClassMechanism,
    PiecewiseMechanism,
    RRLaplaceMechanism,
)
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.protocol import (
    Collector,
    HolderLedger,
    PrivacyPolicy,
    holder_report,
    load_published,
    publish,
)

RNG = np.random.default_rng(0)
X = RNG.random((30, 2))
Y = RNG.random(30)
CLASSES = (Y > 0.5).astype(int)
KEY = jax.random.key(0)


def rr() -> RRLaplaceMechanism:
    return RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)


def lpdt(**kw: Any) -> LPDTRegressor:
    return LPDTRegressor(**{"label_bound": 1.0, "random_state": 0, **kw})


def lpct(**kw: Any) -> LPCTClassifier:
    return LPCTClassifier(**{"random_state": 0, **kw})


# -- partition JSON ---------------------------------------------------------------------------
def _partition_json(**changes: Any) -> str:
    payload = json.loads(MaxEdgePartitioner(max_depth=2).fit(np.empty((0, 2))).to_json())
    payload.update(changes)
    return json.dumps({k: v for k, v in payload.items() if v is not _DROP})


_DROP = object()


# -- data folders -----------------------------------------------------------------------------
_HEADER = "name,file,task,n,d,target_columns,categorical_feature_columns\n"


def _folder(tmp: Path, manifest: bytes | str, files: dict[str, bytes | str] | None = None) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    for name, content in {"manifest.csv": manifest, **(files or {})}.items():
        data = content.encode() if isinstance(content, str) else content
        (tmp / name).write_bytes(data)
    return tmp


def _one_dataset(tmp: Path, csv_text: str, n: int = 2) -> Path:
    return _folder(tmp, _HEADER + f"toy,toy.csv,regression,{n},1,y,\n", {"toy.csv": csv_text})


def _outside_link(tmp: Path) -> Path:
    folder = _one_dataset(tmp / "data", "x,y\n1,2\n3,4\n")
    (tmp / "secret.csv").write_text("x,y\n1,2\n3,4\n")
    (folder / "toy.csv").unlink()
    os.symlink(tmp / "secret.csv", folder / "toy.csv")
    return folder


# -- TOML -------------------------------------------------------------------------------------
_SOURCE = '[[sources]]\nsynthetic = "lpdt-uniform"\nsizes = [20, 40, 20]\n'


def _toml(tmp: Path, top: str, sources: str = _SOURCE) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "exp.toml"
    path.write_text(top + "\n" + sources)
    return path


# -- CLI --------------------------------------------------------------------------------------
def _cli(argv: list[str]) -> int:
    """Run the CLI; a failure (exit status 2) becomes a ``ValueError`` with its stderr text."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli_main(argv)
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    if status != 0:
        raise ValueError(f"exit status {status}: {err.getvalue()}")
    return status


# -- protocol ---------------------------------------------------------------------------------
_ROUND: dict[str, Any] = {}


def _published() -> dict[str, Any]:
    if not _ROUND:
        partition = MaxEdgePartitioner(max_depth=2).fit(np.empty((0, 2)))
        scaler = RangeScaler(lo=np.zeros(2), hi=np.ones(2))
        _ROUND.update(json.loads(json.dumps(publish(partition, scaler, rr()))))
    return _ROUND


def _holder_report(record_x: Any, label: Any) -> dict[str, Any]:
    """One simulated holder's report (its own ledger, a policy that accepts the round)."""
    policy = PrivacyPolicy(max_epsilon_per_round=1.0, max_epsilon_total=1.0)
    answer = holder_report(
        record_x, label, _published(), policy=policy, ledger=HolderLedger.in_memory()
    )
    return answer.report


def _report(**field_changes: Any) -> dict[str, Any]:
    report = _holder_report([0.2, 0.7], 0.5)
    report["fields"].update(field_changes)
    return report


def _submit(tmp: Path, raw: Any) -> str:
    """``Collector.submit``: the reason, after checking that the report was counted under it
    and that nothing was accepted."""
    with Collector(tmp / "store", _published()) as collector:
        reason = collector.submit(raw)
        assert reason is not None, "a bad report was accepted"
        collector.commit()
        assert collector.n_reports == 0
        assert {k: v for k, v in collector.rejected.items() if v} == {reason: 1}
    return reason


def _bad_field(kind: str) -> dict[str, Any]:
    report = _report()
    name = next(iter(report["fields"]))
    values = report["fields"][name]
    report["fields"][name] = {
        "short": values[:-1],
        "float": [0.5] * len(values),
        "range": [2**40] * len(values),
    }[kind]
    return report


Case = Callable[[Path], Any]
CASES: list[tuple[str, Case, type[Exception] | None, str]] = [
    # -- LPDTRegressor.fit -------------------------------------------------------------------
    ("lpdt-X-nan", lambda t: lpdt().fit(np.where(X > 0.9, np.nan, X), Y), ValueError, "X"),
    ("lpdt-X-inf", lambda t: lpdt().fit(np.where(X > 0.9, np.inf, X), Y), ValueError, "X"),
    ("lpdt-X-complex", lambda t: lpdt().fit(X + 1j, Y), ValueError, "X must hold real"),
    ("lpdt-X-strings", lambda t: lpdt().fit(X.astype(str), Y), TypeError, "X must hold real"),
    (
        "lpdt-X-objects",
        lambda t: lpdt().fit(np.array([[1.0, "a"]] * 30, dtype=object), Y),
        TypeError,
        "X must hold real",
    ),
    ("lpdt-X-1d", lambda t: lpdt().fit(X[:, 0], Y), ValueError, "Expected 2D array"),
    ("lpdt-X-empty", lambda t: lpdt().fit(np.empty((0, 2)), Y[:0]), ValueError, r"0 sample\(s\)"),
    ("lpdt-y-length", lambda t: lpdt().fit(X, Y[:-1]), ValueError, "y has length 29"),
    ("lpdt-y-complex", lambda t: lpdt().fit(X, Y + 1j), ValueError, "y must hold real"),
    ("lpdt-y-strings", lambda t: lpdt().fit(X, Y.astype(str)), TypeError, "y must hold real"),
    (
        "lpdt-X_public-dimension",
        lambda t: lpdt().fit(X, Y, X_public=RNG.random((5, 3))),
        ValueError,
        "X_public has 3 features",
    ),
    (
        "lpdt-X_public-overflowing-range",
        lambda t: lpdt().fit(X, Y, X_public=[[-1e308, 0.0], [1e308, 1.0]], y_public=[0.0, 1.0]),
        ValueError,
        "X_public column 0 spans",
    ),
    ("lpdt-epsilon-huge", lambda t: lpdt(epsilon=1e300).fit(X, Y), ValueError, "epsilon must"),
    ("lpdt-epsilon-tiny", lambda t: lpdt(epsilon=1e-300).fit(X, Y), ValueError, "epsilon must"),
    ("lpdt-epsilon-nan", lambda t: lpdt(epsilon=np.nan).fit(X, Y), ValueError, "epsilon must"),
    ("lpdt-budget_split", lambda t: lpdt(budget_split=1.0).fit(X, Y), ValueError, "budget_split"),
    ("lpdt-label_bound", lambda t: lpdt(label_bound=1e39).fit(X, Y), ValueError, "label_bound"),
    (
        "lpdt-max_depth-data-free",
        lambda t: lpdt(max_depth=40).fit(X, Y),
        ValueError,
        "max_depth must be <= 20 without public data",
    ),
    (
        "lpdt-max_depth-data-free-too-many-cells",
        lambda t: lpdt(max_depth=20).fit(X, Y),
        ValueError,
        r"max_depth=20 without public data makes a partition of 2\*\*20",
    ),
    ("lpdt-random_state", lambda t: lpdt(random_state=-1).fit(X, Y), ValueError, "random_state"),
    (
        "lpdt-X-datetime",
        lambda t: lpdt().fit(np.datetime64("2020-01-01") + np.arange(60).reshape(30, 2), Y),
        TypeError,
        "X must hold real numbers .* got dates or durations",
    ),
    (
        "lpdt-X-timedelta",
        lambda t: lpdt().fit(np.arange(60).reshape(30, 2).astype("timedelta64[s]"), Y),
        TypeError,
        "X must hold real numbers .* got dates or durations",
    ),
    (
        "lpdt-X-masked",
        lambda t: lpdt().fit(np.ma.masked_greater(np.where(X > 0.9, 1e6, X), 1.0), Y),
        ValueError,
        "X is a masked array with masked entries",
    ),
    (
        "lpdt-y-masked",
        lambda t: lpdt().fit(X, np.ma.masked_less(Y, 0.1)),
        ValueError,
        "y is a masked array with masked entries",
    ),
    # -- LPCTClassifier.fit ------------------------------------------------------------------
    (
        "lpct-epsilon-huge",
        lambda t: lpct(epsilon=1e300).fit(X, CLASSES, X_public=X, y_public=CLASSES),
        ValueError,
        "epsilon must lie in",
    ),
    (
        "lpct-y-complex",
        lambda t: lpct().fit(X, CLASSES + 1j, X_public=X, y_public=CLASSES),
        TypeError,
        "y has dtype complex",
    ),
    (
        "lpct-y-fractional",
        lambda t: lpct().fit(X, CLASSES + 0.5, X_public=X, y_public=CLASSES),
        ValueError,
        "y has non-integer",
    ),
    (
        "lpct-classes-one",
        lambda t: lpct(classes=[1]).fit(X, CLASSES),
        ValueError,
        "classes must list at least two",
    ),
    (
        "lpct-y_public-outside-classes",
        lambda t: lpct(classes=[0, 1]).fit(X, CLASSES, X_public=X, y_public=CLASSES + 5),
        ValueError,
        "y_public contains labels",
    ),
    (
        "lpct-y-strings-against-numeric-classes",
        lambda t: lpct(classes=[0, 1]).fit(X, CLASSES.astype(str)),
        TypeError,
        "y has <U",
    ),
    ("lpct-no-classes", lambda t: lpct().fit(X, CLASSES), ValueError, "classes is required"),
    (
        "lpct-max_depth-data-free-too-many-cells",
        lambda t: lpct(max_depth=20, classes=[0, 1]).fit(X, CLASSES),
        ValueError,
        r"max_depth=20 without public data makes a partition of 2\*\*20",
    ),
    # -- forests ------------------------------------------------------------------------------
    (
        "forest-n_trees-zero",
        lambda t: LPDTForestRegressor(n_trees=0).fit(X, Y, X_public=X, y_public=Y),
        ValueError,
        "n_trees must be an integer >= 1",
    ),
    (
        "forest-composition-unknown",
        lambda t: LPCTForestClassifier(composition="both").fit(
            X, CLASSES, X_public=X, y_public=CLASSES
        ),
        ValueError,
        "composition must be one of",
    ),
    (
        "forest-no-public-data",
        lambda t: LPDTForestRegressor().fit(X, Y),
        ValueError,
        "X_public is required",
    ),
    (
        "forest-estimator-wrong-tree",
        lambda t: LPDTForestRegressor(estimator=lpct()).fit(X, Y, X_public=X, y_public=Y),
        TypeError,
        "estimator must be an unfitted LPDTRegressor",
    ),
    # -- baselines ---------------------------------------------------------------------------
    (
        "baselines-deconv-bandwidth",
        lambda t: DECONVRegressor(bandwidth=1e-300, label_bound=1.0).fit(X, Y),
        ValueError,
        "bandwidth must lie in",
    ),
    (
        "baselines-psgd-warm_start_steps",
        lambda t: PSGDClassifier(warm_start_steps=10**9).fit(
            X, CLASSES, X_public=X, y_public=CLASSES
        ),
        ValueError,
        "warm_start_steps must be <=",
    ),
    (
        "baselines-pglm-default-delta-one-holder",
        lambda t: PGLMClassifier(random_state=0).fit(
            X[:1], CLASSES[:1], X_public=X, y_public=CLASSES
        ),
        ValueError,
        "delta=None means",
    ),
    (
        "baselines-pglm-delta",
        lambda t: PGLMClassifier(delta=1.5).fit(X, CLASSES, X_public=X, y_public=CLASSES),
        ValueError,
        "delta must be a number in",
    ),
    (
        "baselines-deconv-X-complex",
        lambda t: DECONVRegressor(label_bound=1.0).fit(X + 1j, Y),
        ValueError,
        "X must hold real",
    ),
    (
        "baselines-psgd-epsilon-huge",
        lambda t: PSGDClassifier(epsilon=1e300).fit(X, CLASSES, X_public=X, y_public=CLASSES),
        ValueError,
        "epsilon must lie in",
    ),
    (
        "baselines-pglm-epsilon-huge",
        lambda t: PGLMClassifier(epsilon=1e300).fit(X, CLASSES, X_public=X, y_public=CLASSES),
        ValueError,
        "epsilon must lie in",
    ),
    # -- partitioners ------------------------------------------------------------------------
    (
        "partitioner-max_depth-negative",
        lambda t: MaxEdgePartitioner(max_depth=-1),
        ValueError,
        "max_depth must be an integer >= 0",
    ),
    (
        "partitioner-max_depth-data-free",
        lambda t: MaxEdgePartitioner(max_depth=40).fit(np.empty((0, 2))),
        ValueError,
        "max_depth must be <= 20",
    ),
    (
        "partitioner-X_public-nan",
        lambda t: MaxEdgePartitioner().fit(np.full((5, 2), np.nan)),
        ValueError,
        "X_public contains NaN",
    ),
    (
        "partitioner-X_public-3d",
        lambda t: MaxEdgePartitioner().fit(np.zeros((2, 2, 2))),
        ValueError,
        "X_public must be 2-d",
    ),
    (
        "partitioner-scaler-overflowing-range",
        lambda t: RangeScaler.fit([[-1e308], [1e308]]),
        ValueError,
        "X_public column 0 spans",
    ),
    # -- Partition.from_json -----------------------------------------------------------------
    ("partition-not-json", lambda t: Partition.from_json("{"), ValueError, "not valid JSON"),
    (
        "partition-deep-nesting",
        lambda t: Partition.from_json("[" * 100_000 + "]" * 100_000),
        ValueError,
        "not valid JSON",
    ),
    ("partition-not-text", lambda t: Partition.from_json(5), TypeError, "text must be a JSON"),
    (
        "partition-n_features-overflow",
        lambda t: Partition.from_json(
            _partition_json().replace('"n_features": 2', '"n_features": 1e400')
        ),
        ValueError,
        "'n_features' must be an integer",
    ),
    (
        "partition-n_features-string",
        lambda t: Partition.from_json(_partition_json(n_features="2")),
        ValueError,
        "'n_features' must be an integer",
    ),
    (
        "partition-feature-huge",
        lambda t: Partition.from_json(_partition_json(feature=[2**40, -1, -1])),
        ValueError,
        "'feature' must hold integers",
    ),
    (
        "partition-left-string",
        lambda t: Partition.from_json(_partition_json(left="abc")),
        ValueError,
        "'left' must be a list",
    ),
    (
        "partition-left-missing",
        lambda t: Partition.from_json(_partition_json(left=_DROP)),
        ValueError,
        "'left' must be a list",
    ),
    (
        "partition-threshold-not-hex",
        lambda t: Partition.from_json(_partition_json(threshold=[0.5, "nope", 1])),
        ValueError,
        "'threshold' must hold float.hex",
    ),
    (
        "partition-lower-row-length",
        lambda t: Partition.from_json(_partition_json(lower=[["0x0p+0"]])),
        ValueError,
        "'lower' must be a list of rows",
    ),
    # -- mechanisms --------------------------------------------------------------------------
    (
        "mechanism-epsilon-huge",
        lambda t: RRLaplaceMechanism(epsilon=1e300, label_bound=1.0),
        ValueError,
        "epsilon must lie in",
    ),
    (
        "mechanism-epsilon-tiny",
        lambda t: RRLaplaceMechanism(epsilon=1e-300, label_bound=1.0),
        ValueError,
        "epsilon must lie in",
    ),
    (
        "mechanism-label_bound-float32-overflow",
        lambda t: RRLaplaceMechanism(epsilon=1.0, label_bound=1e39),
        ValueError,
        "label_bound must satisfy",
    ),
    (
        "mechanism-first_holder-negative",
        lambda t: rr().privatize(KEY, np.array([0]), np.array([0.5]), 4, first_holder=-1),
        ValueError,
        "first_holder must be",
    ),
    (
        "mechanism-key-int",
        lambda t: rr().privatize(0, np.array([0]), np.array([0.5]), 4),
        TypeError,
        "key must be a JAX PRNG key",
    ),
    (
        "mechanism-cell-int64-wraps",
        lambda t: rr().privatize(KEY, np.array([2**32 + 1], dtype=np.int64), np.array([0.5]), 4),
        ValueError,
        r"cells must lie in \[0, 4\)",
    ),
    (
        "mechanism-cells-float",
        lambda t: rr().privatize(KEY, np.array([0.5]), np.array([0.5]), 4),
        TypeError,
        "cells must be integer",
    ),
    (
        "mechanism-labels-strings",
        lambda t: rr().privatize(KEY, np.array([0]), np.array(["a"]), 4),
        TypeError,
        "labels must be real numbers",
    ),
    (
        "mechanism-labels-nan",
        lambda t: rr().privatize(KEY, np.array([0]), np.array([np.nan]), 4),
        ValueError,
        "labels contain NaN",
    ),
    (
        "mechanism-length-mismatch",
        lambda t: rr().privatize(KEY, np.array([0, 1]), np.array([0.5]), 4),
        ValueError,
        "cells and labels must be 1-d of equal length",
    ),
    (
        "mechanism-class-codes-float",
        lambda t: LaplaceCellClassMechanism(epsilon=1.0).privatize(
            KEY, np.array([0]), np.array([0.5]), 4
        ),
        TypeError,
        "labels must be integer class codes",
    ),
    (
        "mechanism-duchi-epsilon-huge",
        lambda t: DuchiMechanism(epsilon=1e300, label_bound=1.0),
        ValueError,
        "epsilon must lie in",
    ),
    (
        "mechanism-piecewise-labels-strings",
        lambda t: PiecewiseMechanism(epsilon=1.0, label_bound=1.0).privatize(
            KEY, np.array([0]), np.array(["a"]), 4
        ),
        TypeError,
        "labels must be real numbers",
    ),
    # -- accountant --------------------------------------------------------------------------
    (
        "accountant-verify-n_cells-huge",
        lambda t: verify_ldp(rr(), n_cells=2**40, label_bound=1.0),
        ValueError,
        r"n_cells must be <= 2\*\*24",
    ),
    (
        "accountant-verify-n_cells-zero",
        lambda t: verify_ldp(rr(), n_cells=0, label_bound=1.0),
        ValueError,
        "n_cells must be an integer >= 1",
    ),
    (
        "accountant-verify-labels-fraction",
        lambda t: verify_ldp(LaplaceCellClassMechanism(epsilon=1.0), n_cells=4, labels=[0.5]),
        TypeError,
        "labels must hold integer class codes",
    ),
    (
        "accountant-verify-labels-string",
        lambda t: verify_ldp(LaplaceCellClassMechanism(epsilon=1.0), n_cells=4, labels=["a"]),
        TypeError,
        "labels must hold integer class codes",
    ),
    (
        "accountant-verify-not-a-mechanism",
        lambda t: verify_ldp(object(), n_cells=4),
        TypeError,
        "mechanism must implement",
    ),
    (
        "accountant-audit-key-none",
        lambda t: audit_ldp(rr(), n_cells=2, label_bound=1.0, key=None),
        TypeError,
        "key must be a JAX PRNG key",
    ),
    (
        "accountant-audit-confidence",
        lambda t: audit_ldp(rr(), n_cells=2, label_bound=1.0, key=KEY, confidence=1.5),
        ValueError,
        "confidence must lie",
    ),
    (
        "accountant-audit-huge-n-cells",
        lambda t: audit_ldp(rr(), n_cells=2**40, label_bound=1.0, key=KEY),
        ValueError,
        r"n_cells=1099511627776 with n_samples=200000 would privatize",
    ),
    # -- datasets ----------------------------------------------------------------------------
    (
        "datasets-manifest-not-utf8",
        lambda t: read_manifest(_folder(t, _HEADER.encode() + b"t\xff,t.csv,regression,1,1,y,\n")),
        ValueError,
        "manifest.csv is not UTF-8",
    ),
    (
        "datasets-checksums-not-utf8",
        lambda t: load_dataset(
            "toy",
            _folder(
                t,
                _HEADER + "toy,toy.csv,regression,2,1,y,\n",
                {"CHECKSUMS": b"\xff", "toy.csv": "x,y\n1,2\n3,4\n"},
            ),
        ),
        ValueError,
        "CHECKSUMS is not UTF-8",
    ),
    (
        "datasets-csv-field-too-long",
        lambda t: load_dataset("toy", _one_dataset(t, "x,y\n" + "1" * 200_000 + ",2\n", n=1)),
        ValueError,
        "toy.csv is not a readable CSV",
    ),
    (
        "datasets-target-inf",
        lambda t: load_dataset("toy", _one_dataset(t, "x,y\n1,inf\n2,3\n")),
        ValueError,
        "column 'y'.*must be finite",
    ),
    (
        "datasets-feature-infinity",
        lambda t: load_dataset("toy", _one_dataset(t, "x,y\n-Infinity,1\n2,3\n")),
        ValueError,
        "column 'x'.*must be finite",
    ),
    (
        "datasets-symlink-outside",
        lambda t: load_dataset("toy", _outside_link(t)),
        ValueError,
        "outside the data folder",
    ),
    (
        "datasets-manifest-missing-column",
        lambda t: read_manifest(_folder(t, "name,file\ntoy,toy.csv\n")),
        ValueError,
        "missing column",
    ),
    (
        "datasets-manifest-bad-count",
        lambda t: read_manifest(_folder(t, _HEADER + "toy,toy.csv,regression,many,1,y,\n")),
        ValueError,
        "n must be an integer",
    ),
    (
        "datasets-manifest-path-escapes",
        lambda t: read_manifest(_folder(t, _HEADER + "toy,../toy.csv,regression,2,1,y,\n")),
        ValueError,
        "file must be a relative path inside the data folder",
    ),
    (
        "datasets-name-not-a-string",
        lambda t: load_dataset(5, _one_dataset(t, "x,y\n1,2\n3,4\n")),
        TypeError,
        "name must be a dataset name",
    ),
    ("datasets-data_dir-int", lambda t: load_dataset("toy", 5), TypeError, "data_dir must be"),
    (
        "datasets-csv-number-with-underscore",
        lambda t: load_dataset("toy", _one_dataset(t, "x,y\n1_000,2\n3,4\n")),
        ValueError,
        "column 'x', data row 1 holds the non-numeric value '1_000'",
    ),
    # -- load_config (TOML) ------------------------------------------------------------------
    (
        "config-not-toml",
        lambda t: load_config(_toml(t, "methods = [")),
        ValueError,
        "is not valid TOML",
    ),
    (
        "config-sources-not-tables",
        lambda t: load_config(_toml(t, 'methods = ["lpdt-m"]\nsources = [1]', sources="")),
        TypeError,
        r"sources\[0\] must be a table",
    ),
    (
        "config-data_dir-number",
        lambda t: load_config(_toml(t, 'methods = ["lpdt-m"]\ndata_dir = 5')),
        TypeError,
        "data_dir must be a string",
    ),
    (
        "config-sizes-string",
        lambda t: load_config(
            _toml(
                t, 'methods = ["lpdt-m"]', '[[sources]]\nsynthetic = "lpdt-figure1"\nsizes = "abc"'
            )
        ),
        TypeError,
        r"sources\[0\].sizes must be an array",
    ),
    (
        "config-epsilons-strings",
        lambda t: load_config(_toml(t, 'methods = ["lpdt-m"]\nepsilons = ["a"]')),
        TypeError,
        r"epsilons\[0\] must be a real number",
    ),
    (
        "config-methods-string",
        lambda t: load_config(_toml(t, 'methods = "lpdt-m"')),
        TypeError,
        "methods must be an array",
    ),
    (
        "config-reps-string",
        lambda t: load_config(_toml(t, 'methods = ["lpdt-m"]\nreps = "ten"')),
        TypeError,
        "reps must be an integer",
    ),
    (
        "config-unknown-key",
        lambda t: load_config(_toml(t, 'methods = ["lpdt-m"]\nrepz = 3')),
        ValueError,
        "unknown key",
    ),
    (
        "config-params-in-oracle-mode",
        lambda t: load_config(
            _toml(t, 'methods = ["lpdt-m"]\n[tuning]\nmode = "oracle"\nparams = {max_depth = 2}')
        ),
        ValueError,
        r"key\(s\) \['params'\] do not apply",
    ),
    (
        "config-validation_fraction-in-fixed-mode",
        lambda t: load_config(
            _toml(t, 'methods = ["lpdt-m"]\n[tuning]\nmode = "fixed"\nvalidation_fraction = 0.3')
        ),
        ValueError,
        r"key\(s\) \['validation_fraction'\] do not apply",
    ),
    (
        "config-d-for-figure1",
        lambda t: load_config(
            _toml(t, 'methods = ["lpdt-m"]', '[[sources]]\nsynthetic = "lpdt-figure1"\nd = 3')
        ),
        ValueError,
        r"sources\[0\] \(synthetic = 'lpdt-figure1'\): key\(s\) \['d'\] do not apply",
    ),
    # -- command line ------------------------------------------------------------------------
    ("cli-epsilon-nan", lambda t: _cli(["demo", "--epsilon", "nan"]), ValueError, "--epsilon"),
    ("cli-seed-negative", lambda t: _cli(["demo", "--seed", "-1"]), ValueError, "--seed"),
    (
        "cli-epsilons-inf",
        lambda t: _cli(["reproduce", "lpdt-table", "--epsilons", "inf"]),
        ValueError,
        "--epsilons",
    ),
    (
        "cli-run-config-methods-string",
        lambda t: _cli(["run", str(_toml(t, 'methods = "lpdt-m"')), "--out", str(t / "o")]),
        ValueError,
        "methods must be an array",
    ),
    # -- protocol (holder side) --------------------------------------------------------------
    (
        "protocol-record_x-complex",
        lambda t: _holder_report([0.2 + 1j, 0.5], 0.5),
        ValueError,
        "record_x must hold real",
    ),
    (
        "protocol-record_x-length",
        lambda t: _holder_report([0.2, 0.5, 0.1], 0.5),
        ValueError,
        "record_x must be 2 finite numbers",
    ),
    (
        "protocol-label-nan",
        lambda t: _holder_report([0.2, 0.5], float("nan")),
        ValueError,
        "label must be a finite real number",
    ),
    (
        "protocol-published-not-object",
        lambda t: load_published("round"),
        TypeError,
        "published must be a JSON object",
    ),
    (
        "protocol-published-epsilon",
        lambda t: load_published({**_published(), "epsilon": 3.0}),
        ValueError,
        "published epsilon",
    ),
    # -- collector (rejected and counted, never raised) --------------------------------------
    ("collector-malformed", lambda t: _submit(t, "{not json"), None, "malformed"),
    ("collector-deep-nesting", lambda t: _submit(t, "[" * 2000), None, "malformed|oversized"),
    ("collector-oversized", lambda t: _submit(t, " " * 10**7), None, "oversized"),
    ("collector-schema", lambda t: _submit(t, {"schema": "x"}), None, "schema"),
    ("collector-short-field", lambda t: _submit(t, _bad_field("short")), None, "shape"),
    ("collector-float-values", lambda t: _submit(t, _bad_field("float")), None, "type"),
    ("collector-out-of-range", lambda t: _submit(t, _bad_field("range")), None, "range"),
]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [pytest.param(call, error, match, id=case_id) for case_id, call, error, match in CASES],
)
def test_bad_input_is_refused_naming_the_argument(
    call: Case, error: type[Exception] | None, match: str, tmp_path: Path
) -> None:
    if error is None:  # the collector: counted under a reason, never raised
        assert pytest.importorskip("re").search(match, call(tmp_path))
        return
    with pytest.raises(error, match=match):
        call(tmp_path)


def test_the_matrix_covers_every_entry_point() -> None:
    """The docstring's table: at least 60 cases, and the listed count for each entry point."""
    counts: dict[str, int] = {}
    for case_id, *_ in CASES:
        entry = case_id.split("-")[0]
        counts[entry] = counts.get(entry, 0) + 1
    table = {
        line.split()[0]: int(line.split()[1])
        for line in (__doc__ or "").splitlines()
        if len(line.split()) > 1 and line.split()[1].isdigit()
    }
    assert counts == table
    assert sum(counts.values()) >= 60
    assert len({case_id for case_id, *_ in CASES}) == len(CASES)


def test_private_labels_outside_the_public_classes_warn_once() -> None:
    """Public classes disjoint from the private labels: a holder releases the null record
    locally (no error is possible without private data); the simulation warns once per fit."""
    with pytest.warns(UnknownClassWarning, match="not among the classes") as caught:
        lpct().fit(X, CLASSES + 5, X_public=X, y_public=CLASSES)
    assert sum(issubclass(w.category, UnknownClassWarning) for w in caught) == 1


def test_target_cells_spelled_nan_in_any_case_are_missing(tmp_path: Path) -> None:
    """``nAn`` is a missing target (the row is dropped), never a value."""
    data = load_dataset("toy", _one_dataset(tmp_path, "x,y\n1,nAn\n2,3\n"))
    assert data.n_dropped == 1
    np.testing.assert_array_equal(data.y, [3.0])


REFIT_CASES: list[tuple[str, Callable[[], Any], bool]] = [  # (name, estimator, classifier)
    ("lpdt", lambda: lpdt(max_depth=2), False),
    ("lpct", lambda: lpct(max_depth=2), True),
    ("lpct-prune", lambda: LPCTPrunedClassifier(max_depth=3, random_state=0), True),
    (
        "lpdt-forest",
        lambda: LPDTForestRegressor(lpdt(max_depth=2), n_trees=2, random_state=0),
        False,
    ),
    (
        "lpct-forest",
        lambda: LPCTForestClassifier(lpct(max_depth=2), n_trees=2, random_state=0),
        True,
    ),
    (
        "lpdt-two-round",
        lambda: LPDTTwoRoundRegressor(lpdt(max_depth=2), random_state=0),
        False,
    ),
    (
        "lpct-two-round",
        lambda: LPCTTwoRoundClassifier(lpct(max_depth=2), random_state=0),
        True,
    ),
    ("deconv", lambda: DECONVRegressor(label_bound=1.0, random_state=0), False),
    ("phist", lambda: PHISTRegressor(label_bound=1.0, random_state=0), False),
    ("aphist", lambda: APHISTRegressor(label_bound=1.0, random_state=0), False),
    ("phist-c", lambda: PHISTClassifier(random_state=0), True),
    ("pglm", lambda: PGLMClassifier(random_state=0), True),
    ("psgd", lambda: PSGDClassifier(random_state=0), True),
    ("dt", lambda: DTRegressor(max_depth=2), False),
    ("ct", lambda: CTClassifier(max_depth=2), True),
]


@pytest.mark.parametrize(
    ("make", "classifier"), [pytest.param(m, c, id=n) for n, m, c in REFIT_CASES]
)
def test_a_refused_refit_leaves_the_fitted_estimator_untouched(
    make: Callable[[], Any], classifier: bool
) -> None:
    """Fitted on 2 features, then refit on 1 feature with public data of 3 features (refused):
    every attribute is the object it was, and the model predicts 2-feature input as before."""
    labels = CLASSES if classifier else Y
    model = make().fit(X, labels, X_public=X[:10], y_public=labels[:10])
    before = dict(model.__dict__)
    predicted = model.predict(X)
    with pytest.raises(ValueError, match="X_public has 3 features"):
        model.fit(X[:, :1], labels, X_public=RNG.random((10, 3)), y_public=labels[:10])
    assert model.__dict__.keys() == before.keys()
    assert all(model.__dict__[k] is v for k, v in before.items())
    assert model.n_features_in_ == 2
    np.testing.assert_array_equal(model.predict(X), predicted)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :1])


def test_a_refit_refused_in_its_round_leaves_the_fit_untouched(tmp_path: Path) -> None:
    """A refusal that can only come during the round (a NaN in a later chunk of a memory-mapped
    X) also leaves the previous fit whole."""
    model = lpdt(max_depth=2, chunk_size=8).fit(X, Y)
    before = dict(model.__dict__)
    bad = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64, shape=(30, 2))
    bad[:] = X
    bad[25, 1] = np.nan
    bad.flush()
    with pytest.raises(ValueError, match="NaN"):
        model.fit(np.load(tmp_path / "X.npy", mmap_mode="r"), Y)
    assert all(model.__dict__[k] is v for k, v in before.items())
    assert model.__dict__.keys() == before.keys()


def _fit_in_a_forked_child(_: int) -> str:
    try:
        lpdt(max_depth=1).fit(X, Y)
    except RuntimeError as err:
        return str(err)
    return "fitted"


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # JAX's own warning, the point here
def test_a_fit_in_a_process_forked_after_jax_started_is_refused() -> None:
    """JAX cannot run in a child forked after it started (it deadlocks): the fit refuses at
    once, naming the fix."""
    lpdt(max_depth=1).fit(X, Y)  # JAX has started in this process
    with multiprocessing.get_context("fork").Pool(1) as pool:
        message = pool.apply_async(_fit_in_a_forked_child, (0,)).get(timeout=120)
    assert "forked" in message and "get_context('spawn')" in message


def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path: Path) -> None:
    """Files saved by editors that write a UTF-8 BOM: the manifest, CHECKSUMS and a TOML
    configuration read as without it."""
    folder = _one_dataset(tmp_path / "data", "x,y\n1,2\n3,4\n")
    manifest = folder / "manifest.csv"
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
    digest = hashlib.sha256((folder / "toy.csv").read_bytes()).hexdigest()
    (folder / "CHECKSUMS").write_bytes(b"\xef\xbb\xbf" + f"{digest}  toy.csv\n".encode())
    assert list(read_manifest(folder)) == ["toy"]
    np.testing.assert_array_equal(load_dataset("toy", folder).y, [2.0, 4.0])
    config = _toml(tmp_path / "exp", 'methods = ["lpdt-m"]\nreps = 2')
    config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())
    experiment, _ = load_config(config)
    assert experiment.reps == 2
