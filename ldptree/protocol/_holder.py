"""The holder's side: a privacy policy, a ledger of answered rounds, and the report itself.

A holder does not trust the curator. Before it draws a single random bit, :func:`holder_report`

1. validates the published round and certifies its mechanism again with this code
   (:func:`~ldptree.protocol.load_published`): the realised epsilon ``eps_r`` of one report is
   the larger of the claimed epsilon and the certified bound (:attr:`PublishedRound.epsilon`);
2. checks ``eps_r <= max_epsilon_per_round`` of the holder's :class:`PrivacyPolicy`;
3. looks the round's fingerprint up in the holder's :class:`HolderLedger`: a round answered
   before gets the *stored* report again (a retransmission reveals nothing new; a fresh draw
   would: averaging many answers to one round recovers the record), and a new round is
   answered only if ``spent + eps_r <= max_epsilon_total``, ``spent`` being the sum of the
   ``eps_r`` of every round in the ledger (basic composition of pure epsilon-LDP releases).

Only then are the holder's words drawn from the operating system's CSPRNG
(``secrets.token_bytes``): ``W`` uniform 32-bit words (``words_per_holder``) fed to
:meth:`~ldptree.mechanisms.KitMechanism.privatize_words`, the exact integer sampling that
:func:`~ldptree.accounting.verify_ldp` certifies. The report is written to the ledger in the
same transaction that checked the total, and returned only after that transaction committed: a
crash in between releases nothing, and two processes of one holder cannot both answer a round.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ldptree._validation import check_positive, check_real_dtype
from ldptree.protocol._published import PublishedRound, load_published
from ldptree.protocol._report import report_object
from ldptree.protocol._sqlite import connect, prepare

__all__ = ["HolderAnswer", "HolderLedger", "PrivacyPolicy", "PrivacyPolicyError", "holder_report"]

#: ``PRAGMA application_id`` of a holder's ledger (ASCII "ldph").
LEDGER_APPLICATION_ID = 0x6C647068
_LEDGER_SCHEMA = (
    "CREATE TABLE answers (round TEXT PRIMARY KEY, epsilon REAL NOT NULL, report TEXT NOT NULL)",
)


class PrivacyPolicyError(ValueError):
    """A round the holder's :class:`PrivacyPolicy` refuses to answer (nothing was drawn)."""


def _per_round(value: Any) -> float:
    return check_positive(value, "max_epsilon_per_round")


def _total(value: Any) -> float:
    return check_positive(value, "max_epsilon_total")


@attrs.frozen
class PrivacyPolicy:
    """How much privacy a holder gives away: at most ``max_epsilon_per_round`` in one round and
    ``max_epsilon_total`` summed over every round its ledger holds. Both are required (there is
    no default that accepts everything), finite and ``> 0``, with per-round <= total."""

    max_epsilon_per_round: float = attrs.field(converter=_per_round)
    max_epsilon_total: float = attrs.field(converter=_total)

    def __attrs_post_init__(self) -> None:
        if self.max_epsilon_total < self.max_epsilon_per_round:
            raise ValueError(
                f"max_epsilon_total ({self.max_epsilon_total}) must be >= "
                f"max_epsilon_per_round ({self.max_epsilon_per_round})"
            )

    def check_round(self, round_: PublishedRound) -> float:
        """The round's realised epsilon, or :class:`PrivacyPolicyError` when it is above
        ``max_epsilon_per_round`` or not certified pure epsilon-LDP."""
        if not round_.certificate.pure:
            raise PrivacyPolicyError("the round's mechanism is not certified pure epsilon-LDP")
        epsilon = round_.epsilon
        if not epsilon <= self.max_epsilon_per_round:
            raise PrivacyPolicyError(
                f"the round spends epsilon={epsilon:.6g} per report (certified by this code), "
                f"above your policy's max_epsilon_per_round={self.max_epsilon_per_round:.6g}; "
                "refused before any random draw"
            )
        return epsilon


class HolderLedger:
    """The rounds a holder has answered: an SQLite file the holder owns (``path``), or
    :meth:`in_memory` for a simulation of many holders in one process (forgotten on exit).

    One row per answered round: its fingerprint, its realised epsilon and the report sent.
    A file that is not a ledger is refused (``ValueError``) and never modified.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = str(path)
        if self._path != ":memory:" and Path(self._path).is_dir():
            raise ValueError(f"ledger path {self._path} is a folder; give a file name")
        what = f"ledger {self._path}"
        self._conn: sqlite3.Connection | None = connect(self._path, what, timeout=30.0)
        try:
            prepare(self._conn, LEDGER_APPLICATION_ID, _LEDGER_SCHEMA, what)
        except BaseException:
            self.close()
            raise

    @classmethod
    def in_memory(cls) -> HolderLedger:
        """A ledger that lives as long as this object: for simulating holders, never for a
        holder whose process may run again."""
        return cls(":memory:")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError("this ledger is closed")
        return self._conn

    @property
    def spent(self) -> float:
        """Epsilon spent so far: the sum of the realised epsilons of the answered rounds."""
        rows = self._connection().execute("SELECT epsilon FROM answers").fetchall()
        return math.fsum(r[0] for r in rows)

    def rounds(self) -> dict[str, float]:
        """Every answered round's fingerprint and realised epsilon."""
        return dict(self._connection().execute("SELECT round, epsilon FROM answers").fetchall())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> HolderLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@attrs.frozen(eq=False)
class HolderAnswer:
    """What :func:`holder_report` gives the holder: the ``report`` to send, the ``epsilon`` it
    spends (realised, certified by this code), the ledger's total ``spent`` after it, the
    ``policy`` it was checked against, and whether it is a ``replayed`` stored answer."""

    report: dict[str, Any]
    epsilon: float
    spent: float
    policy: PrivacyPolicy
    replayed: bool

    @property
    def message(self) -> str:
        """The answer in words, for the holder."""
        total = self.policy.max_epsilon_total
        if self.replayed:
            return (
                f"this round was answered before: the same report is sent again (no new "
                f"privacy spent; total epsilon {self.spent:.6g} of your {total:.6g})"
            )
        return (
            f"this report spends epsilon={self.epsilon:.6g} (pure epsilon-LDP, certified on "
            f"this device); total spent {self.spent:.6g} of your {total:.6g}"
        )


def _random_words(n_words: int) -> np.ndarray[Any, np.dtype[np.uint32]]:
    raw = secrets.token_bytes(4 * n_words)
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32).reshape(1, n_words)


def _features(record_x: Any, n_features: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    check_real_dtype(record_x, "record_x")
    try:
        x = np.asarray(record_x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("record_x must be a vector of real numbers") from None
    if x.shape != (n_features,) or not np.all(np.isfinite(x)):
        raise ValueError(f"record_x must be {n_features} finite numbers, got shape {x.shape}")
    return x


def _label(label: Any, integer: bool) -> np.ndarray[Any, Any]:
    if isinstance(label, bool | np.bool_):
        raise TypeError("label must be a number, not a bool")
    if integer:
        if not isinstance(label, int | np.integer) or not -(2**31) <= int(label) < 2**31:
            raise ValueError(f"label must be a class code (an int32 integer), got {label!r}")
        return np.asarray([int(label)], dtype=np.int32)
    if not isinstance(label, int | float | np.integer | np.floating) or not math.isfinite(label):
        raise ValueError(f"label must be a finite real number, got {label!r}")
    return np.asarray([label], dtype=np.float32)


def _code(label: Any, classes: tuple[Any, ...]) -> int:
    """The class code of ``label``: its index among the published ``classes`` (a string
    matches a string, a number a number; ``ValueError`` when it is none of them)."""
    if isinstance(label, np.generic):
        label = label.item()
    for code, value in enumerate(classes):
        same_kind = isinstance(label, str) == isinstance(value, str)
        if same_kind and not isinstance(label, bool) and label == value:
            return code
    raise ValueError(f"label {label!r} is not one of the round's classes {list(classes)}"[:300])


def _draw(round_: PublishedRound, x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> str:
    """The report's JSON text: routed here, privatized with fresh OS randomness."""
    mechanism, n_cells = round_.mechanism, round_.n_cells
    cells = np.asarray(round_.partition.cells(round_.scaler.transform(x[None, :])))
    words = _random_words(mechanism.words_per_holder(n_cells))
    report = mechanism.privatize_words(words, cells, y, n_cells)
    arrays = [np.asarray(a)[0] for a in mechanism._report_arrays(report)]
    return json.dumps(report_object(round_, secrets.token_hex(16), arrays))


def holder_report(
    record_x: Any,
    label: Any,
    published: Any,
    *,
    policy: PrivacyPolicy,
    ledger: HolderLedger,
) -> HolderAnswer:
    """One holder's answer to a published round (module docstring), from its record
    ``(record_x, label)`` alone.

    ``published`` is the curator's published object (a dict; validated and re-certified here)
    or a :class:`~ldptree.protocol.PublishedRound` from :func:`load_published` (a holder with
    many records loads once). ``record_x`` is the raw feature vector: it is scaled with the
    published box and routed through the published partition here, on the holder's side.
    ``label`` is a real label, or for a classification round the holder's class label when
    the round publishes its classes (else a class code: the label's index among them).
    ``policy`` and ``ledger`` are required: :class:`PrivacyPolicyError` (a ``ValueError``)
    when the round is above the policy or would exceed its total, raised before any random
    draw.
    """
    if not isinstance(policy, PrivacyPolicy):
        raise TypeError(f"policy must be a PrivacyPolicy, got {type(policy).__name__}")
    if not isinstance(ledger, HolderLedger):
        raise TypeError(f"ledger must be a HolderLedger, got {type(ledger).__name__}")
    round_ = load_published(published)
    epsilon = policy.check_round(round_)
    x = _features(record_x, round_.partition.n_features)
    if round_.classes is not None:
        label = _code(label, round_.classes)
    y = _label(label, round_.mechanism.labels().integer)
    conn = ledger._connection()
    conn.execute("BEGIN IMMEDIATE")  # one answer per round, even across the holder's processes
    try:
        stored = conn.execute(
            "SELECT report FROM answers WHERE round = ?", (round_.fingerprint,)
        ).fetchone()
        spent = math.fsum(r[0] for r in conn.execute("SELECT epsilon FROM answers"))
        if stored is None:
            if not math.fsum([spent, epsilon]) <= policy.max_epsilon_total:
                raise PrivacyPolicyError(
                    f"answering this round (epsilon={epsilon:.6g}) would bring your total to "
                    f"{math.fsum([spent, epsilon]):.6g}, above your policy's "
                    f"max_epsilon_total={policy.max_epsilon_total:.6g}; refused before any "
                    "random draw"
                )
            text = _draw(round_, x, y)
            conn.execute(
                "INSERT INTO answers (round, epsilon, report) VALUES (?, ?, ?)",
                (round_.fingerprint, epsilon, text),
            )
            spent = math.fsum([spent, epsilon])
        else:
            text = stored[0]
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return HolderAnswer(
        report=json.loads(text),
        epsilon=epsilon,
        spent=spent,
        policy=policy,
        replayed=stored is not None,
    )
