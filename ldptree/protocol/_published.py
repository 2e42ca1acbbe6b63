"""What the curator publishes, as versioned JSON, and its validation on the holder's side.

A published round is a JSON object

.. code-block:: text

    {"schema": "ldptree.protocol/published", "version": 1,
     "partition": <Partition.to_json() as an object>,
     "scaler": {"lo": [float.hex, ...], "hi": [float.hex, ...]},
     "mechanism": {"name": "RRLaplaceMechanism", "params": {"epsilon": 1.0, ...}},
     "epsilon": 1.0,
     "certificate": {"epsilon_claimed": .., "epsilon_bound": .., "delta": 0.0, "pure": true},
     "nonce": "<32 lowercase hex digits: 128 random bits>",
     "classes": ["no", "yes"]}

``classes`` is optional: a classification round that publishes its class labels (in code order)
lets each holder report its own label, which the holder encodes; without it a holder reports a
class code.

Every float that routes a record is exact (hexadecimal ``float.hex`` strings, as in
:meth:`~ldptree.partitions.Partition.to_json`); mechanism parameters are JSON numbers, which
Python writes and reads back exactly. The certificate is the curator's
:func:`~ldptree.accounting.verify_ldp` result, published for information only: a holder rebuilds
the mechanism from its name and parameters and certifies it again (:func:`load_published`).

The **round fingerprint** (:func:`round_fingerprint`) is the SHA-256 of the published object's
canonical JSON text (keys sorted, no blanks, ASCII). The ``nonce`` is drawn afresh for every
published round, so publishing the same partition, box and mechanism again is a *new* round with
a new fingerprint: every report names the fingerprint of its round, the collector of a round
rejects reports of any other, and a holder's ledger answers each fingerprint at most once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import secrets
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

import ldptree.mechanisms
from ldptree.accounting._verify import LDPCertificate
from ldptree.mechanisms import KitMechanism
from ldptree.partitions import Partition, RangeScaler
from ldptree.rounds._charge import certify
from ldptree.rounds._plan import Round

__all__ = [
    "MECHANISMS",
    "PUBLISHED_SCHEMA",
    "SCHEMA_VERSION",
    "PublishedRound",
    "canonical_json",
    "load_published",
    "publish",
    "round_fingerprint",
]

#: Schema name of a published round.
PUBLISHED_SCHEMA = "ldptree.protocol/published"
#: The one schema version this release writes and reads (reports use the same number).
SCHEMA_VERSION = 1


#: Mechanisms a published round may name: every publishable built-in (the kit's), by class name
#: (:func:`~ldptree.mechanisms.mechanism_registry`).
MECHANISMS: Mapping[str, type[KitMechanism]] = ldptree.mechanisms.kit_built_ins()


_HEX32 = re.compile(r"[0-9a-f]{32}")


def canonical_json(published: Mapping[str, Any]) -> str:
    """The canonical JSON text of a published object: keys sorted, separators without blanks,
    ASCII only (a NaN or infinity, which JSON cannot hold, is a ``ValueError``)."""
    try:
        return json.dumps(
            published, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        )
    except (TypeError, ValueError) as err:
        raise ValueError(f"published is not plain JSON: {err}") from None


def round_fingerprint(published: Mapping[str, Any]) -> str:
    """The round's fingerprint: SHA-256 (64 lowercase hex digits) of
    :func:`canonical_json` of the published object ``published``.

    The one definition of "the same round": the holder's ledger, every report and the
    collector's store all carry this value."""
    return hashlib.sha256(canonical_json(published).encode("ascii")).hexdigest()


def _param_names(cls: type[KitMechanism]) -> list[str]:
    """The constructor parameters of a built-in mechanism (its attrs fields)."""
    attrs_cls: Any = cls
    return [field.name for field in attrs.fields(attrs_cls)]


def _mechanism_params(mechanism: KitMechanism) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name in _param_names(type(mechanism)):
        value = getattr(mechanism, name)
        params[name] = list(value) if isinstance(value, tuple) else value
    return params


def _pure_certificate(mechanism: KitMechanism, n_cells: int, refusal: str) -> LDPCertificate:
    """This code's certificate of ``mechanism`` (never a published one); ``ValueError`` ending in
    ``refusal`` unless it is pure epsilon-LDP as sampled."""
    cert = certify(mechanism, n_cells, getattr(mechanism, "label_bound", None))
    if not cert.pure:
        raise ValueError(
            f"{type(mechanism).__name__} is not certified pure epsilon-LDP as sampled by this "
            f"code (epsilon_bound={cert.epsilon_bound}, delta={cert.delta}); {refusal}"
        )
    return cert


def publish(
    partition: Partition,
    scaler: RangeScaler,
    mechanism: Any,
    *,
    classes: Any = None,
    nonce: str | None = None,
) -> dict[str, Any]:
    """The JSON object a curator publishes for one round (module docstring); ``classes``
    (optional) are the class labels of a classification round, in code order.

    Runs :func:`~ldptree.accounting.verify_ldp` for ``partition.n_leaves`` cells and refuses
    (``ValueError``) a mechanism whose certificate is not pure epsilon-LDP as sampled; a
    mechanism that is not one of :data:`MECHANISMS` is a ``TypeError``. ``nonce`` (32 lowercase
    hex digits) is drawn from the operating system's CSPRNG when not given: each call publishes
    a new round (a new :func:`round_fingerprint`) unless the caller repeats a nonce on purpose,
    e.g. to re-publish the very same round.
    """
    if not isinstance(partition, Partition):
        raise TypeError(f"partition must be a Partition, got {type(partition).__name__}")
    if not isinstance(scaler, RangeScaler):
        raise TypeError(f"scaler must be a RangeScaler, got {type(scaler).__name__}")
    if scaler.n_features != partition.n_features:
        raise ValueError(
            f"scaler has {scaler.n_features} features but the partition {partition.n_features}"
        )
    nonce = secrets.token_hex(16) if nonce is None else _nonce(nonce)
    name = type(mechanism).__name__
    if MECHANISMS.get(name) is not type(mechanism):
        raise TypeError(f"mechanism must be one of {sorted(MECHANISMS)}, got {name}")
    # Admission of a mechanism: today the built-in registry above plus this code's own
    # certificate; hand-written mechanisms get their admission check here.
    cert = _pure_certificate(mechanism, partition.n_leaves, "it cannot be published")
    out = {
        "schema": PUBLISHED_SCHEMA,
        "version": SCHEMA_VERSION,
        "partition": json.loads(partition.to_json()),
        "scaler": {
            "lo": [float(v).hex() for v in scaler.lo],
            "hi": [float(v).hex() for v in scaler.hi],
        },
        "mechanism": {"name": name, "params": _mechanism_params(mechanism)},
        "epsilon": float(mechanism.epsilon),
        "certificate": {
            "epsilon_claimed": cert.epsilon_claimed,
            "epsilon_bound": cert.epsilon_bound,
            "delta": cert.delta,
            "pure": cert.pure,
        },
        "nonce": nonce,
    }
    if classes is not None:
        listed = classes.tolist() if isinstance(classes, np.ndarray) else classes
        out["classes"] = _classes(listed, mechanism)
    return out


def _classes(value: Any, mechanism: KitMechanism) -> list[Any]:
    """The published class labels: a list of distinct JSON strings or finite numbers (not
    booleans), as many as the mechanism's classes; ``ValueError`` otherwise."""
    n_classes = getattr(mechanism.labels(), "n_classes", None)
    if n_classes is None:
        raise ValueError(f"classes were given but {type(mechanism).__name__} takes real labels")
    ok = isinstance(value, list | tuple) and all(
        isinstance(c, str)
        or (isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(c))
        for c in value
    )
    if not ok or len(value) != n_classes or len({(type(c), c) for c in value}) != n_classes:
        raise ValueError(
            f"classes must be {n_classes} distinct strings or finite numbers (the mechanism's "
            f"classes), got {value!r}"[:300]
        )
    return list(value)


def _nonce(value: Any) -> str:
    if not isinstance(value, str) or not _HEX32.fullmatch(value):
        raise ValueError(f"nonce must be 32 lowercase hex digits (128 bits), got {value!r}"[:200])
    return value


@attrs.frozen(eq=False)
class PublishedRound:
    """A validated published round: what a holder and the collector work from.

    ``certificate`` is the one computed here, never the published one; ``text`` is the
    published object's :func:`canonical_json` and ``fingerprint`` its :func:`round_fingerprint`.
    """

    partition: Partition
    scaler: RangeScaler
    mechanism: KitMechanism
    certificate: LDPCertificate
    text: str
    fingerprint: str
    #: The class labels, in code order, when the round publishes them (``None``: a holder
    #: reports a real label, or a class code it knows otherwise).
    classes: tuple[Any, ...] | None = None

    @property
    def n_cells(self) -> int:
        return self.partition.n_leaves

    def round(self) -> Round:
        """The round as the engine folds its collected reports (:func:`ldptree.rounds.run`
        over :class:`~ldptree.rounds.Reports`): this partition, box and mechanism, the exact
        sum aggregator, and no key (the holders drew their own randomness)."""
        return Round(partition=self.partition, mechanism=self.mechanism, scaler=self.scaler)

    @functools.cached_property
    def layout(self) -> tuple[tuple[str, tuple[int, ...], int, int], ...]:
        """The mechanism's ``report_fields`` for this round's cells (what a report holds)."""
        return self.mechanism.report_fields(self.n_cells)

    @functools.cached_property
    def max_report_bytes(self) -> int:
        """A generous bound on the size of a valid report's JSON text (longer input is
        rejected unread): 24 bytes per integer plus 1 KiB."""
        return 1024 + 24 * sum(math.prod(shape) for _, shape, _, _ in self.layout)

    @property
    def epsilon(self) -> float:
        """What one report of this round spends, as this code certified it: the larger of the
        claimed epsilon and the certified bound (the bound may exceed the claim by the
        verifier's rounding tolerance)."""
        return max(self.certificate.epsilon_claimed, self.certificate.epsilon_bound)


def _field(obj: Mapping[str, Any], name: str) -> Any:
    if name not in obj:
        raise ValueError(f"published round has no {name!r}")
    return obj[name]


def _hexes(value: Any, name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"published {name} must be a list of float.hex strings")
    try:
        out = np.asarray([float.fromhex(v) for v in value], dtype=np.float64)
    except ValueError:
        raise ValueError(f"published {name} holds a string that is not float.hex") from None
    if not np.all(np.isfinite(out)):
        raise ValueError(f"published {name} must be finite")
    return out


def _mechanism(spec: Any) -> KitMechanism:
    if not isinstance(spec, Mapping) or set(spec) != {"name", "params"}:
        raise ValueError("published mechanism must be an object with 'name' and 'params'")
    name, params = spec["name"], spec["params"]
    cls = MECHANISMS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"published mechanism must be one of {sorted(MECHANISMS)}, got {name!r}")
    allowed = set(_param_names(cls))
    if not isinstance(params, Mapping) or not set(params) <= allowed:
        raise ValueError(f"published {name} params must be an object with keys in {allowed}")
    try:
        return cls(**params)
    except (TypeError, ValueError) as err:
        raise ValueError(f"published {name} params are invalid: {err}") from None


def load_published(published: Any) -> PublishedRound:
    """Validate a published object (a dict, or a :class:`PublishedRound` returned as is).

    Refuses (``ValueError``) an unknown schema or version, a malformed partition, scaler or
    mechanism, an ``epsilon`` that is not the mechanism's, and a mechanism that this code does
    not itself certify pure epsilon-LDP for the partition's cell count.
    """
    if isinstance(published, PublishedRound):
        return published
    if not isinstance(published, Mapping):
        raise TypeError(f"published must be a JSON object (dict), got {type(published).__name__}")
    if published.get("schema") != PUBLISHED_SCHEMA:
        raise ValueError(f"published must have schema {PUBLISHED_SCHEMA!r}")
    version = published.get("version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise ValueError(
            f"published schema version {version!r} is not known (this code reads version "
            f"{SCHEMA_VERSION})"
        )
    text = canonical_json(published)
    if not isinstance(published.get("nonce"), str) or not _HEX32.fullmatch(published["nonce"]):
        raise ValueError("published nonce must be 32 lowercase hex digits (a round's own nonce)")
    partition = Partition.from_json(json.dumps(_field(published, "partition")))
    scaler_obj = _field(published, "scaler")
    if not isinstance(scaler_obj, Mapping):
        raise ValueError("published scaler must be an object with 'lo' and 'hi'")
    lo = _hexes(_field(scaler_obj, "lo"), "scaler.lo")
    hi = _hexes(_field(scaler_obj, "hi"), "scaler.hi")
    if lo.shape != hi.shape or lo.shape[0] != partition.n_features or np.any(lo > hi):
        raise ValueError(
            f"published scaler needs lo <= hi with {partition.n_features} entries each"
        )
    mechanism = _mechanism(_field(published, "mechanism"))
    epsilon = _field(published, "epsilon")
    if type(epsilon) not in (int, float) or float(epsilon) != mechanism.epsilon:
        raise ValueError(f"published epsilon {epsilon!r} is not the mechanism's epsilon")
    classes = published.get("classes")
    if classes is not None:
        classes = tuple(_classes(classes, mechanism))
    cert = _pure_certificate(mechanism, partition.n_leaves, "refusing to report")
    return PublishedRound(
        partition=partition,
        scaler=RangeScaler(lo=lo, hi=hi),
        mechanism=mechanism,
        certificate=cert,
        text=text,
        fingerprint=round_fingerprint(published),
        classes=classes,
    )
