"""The mutation suite: every wrong mechanism in ``mutants.py`` is caught by something an
estimator or ``ldptree.testing`` runs by default, and the table in docs/privacy.md says which.

For each mutant the suite asserts three things (a ``-`` in the table: not applicable):

* **by default**: ``ldptree.accounting.admit`` — what every estimator runs before any private
  row — refuses it, for the reason in the table (its law's certificate fails; it is not a law;
  or its sampler is hand-written);
* **opted in**: wrapped in ``HandWritten`` (the explicit opt-in), its sampler test at fit
  (``check_sampler``) rejects it, in the family named in the table;
* **generated suite**: the named check of ``ldptree.testing.mechanism_checks`` fails.

False-failure rates: ``check_sampler`` rejects a correct sampler with probability at most
``1e-6``, ``audit_ldp`` refutes a correct claim with probability at most ``1e-3``; keys are
fixed, so every run is the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import mutants as m
import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.accounting import AdmissionError, HandWritten, admit
from ldptree.testing import mechanism_checks

DOCS = Path(__file__).resolve().parents[2] / "docs" / "privacy.md"
#: Sample size of the sampler test in this suite (``HandWritten``'s default is 20,000).
N_SAMPLER = 5_000


@attrs.frozen
class Mutant:
    name: str
    kind: str
    make: Callable[[], Any]
    default: str
    opted: str
    suite: str
    task: str = "regression"
    label_bound: tuple[float, float] = m.BOUND


def _class(cls: type) -> Callable[[], Any]:
    return lambda: cls(epsilon=m.EPSILON, n_classes=3)


MUTANTS = (
    Mutant(
        "label noise at twice its budget",
        "kit",
        lambda: m.rr(m.HalvedLabelScale),
        "law: bound > claim",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "bits flipped at the whole budget",
        "kit",
        lambda: m.rr(m.KeepFromEpsilon),
        "law: bound > claim",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "one noisy label per cell",
        "kit",
        lambda: m.rr(m.NoisyLabelPerCell),
        "law: bound > claim",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "matrix noise sharper than its budget",
        "kit",
        lambda: m.rr(m.SharpMatrix),
        "law: bound > claim",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "k-ary response at twice its budget",
        "kit",
        lambda: m.rr(m.IndexAtTwice),
        "law: bound > claim",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "mutated after its first fit",
        "kit",
        lambda: m.MutableKit(epsilon=m.EPSILON, bit_epsilon=0.25),
        "law: bound > claim (re-verified)",
        "-",
        "-",
    ),
    Mutant(
        "index block that is not normalised",
        "hand-written law",
        lambda: m.rr(m.UnnormalisedIndex),
        "law: not a law",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "label function that evades a symbolic probe",
        "hand-written law",
        lambda: m.EvasiveLabelMap(epsilon=m.EPSILON),
        "law: inputs not data",
        "-",
        "certificate_pure",
        label_bound=(0.0, 1.0),
    ),
    Mutant(
        "channel object reporting no divergence",
        "hand-written law",
        lambda: m.rr(m.CustomChannel),
        "law: not a library channel",
        "-",
        "certificate_pure",
    ),
    Mutant(
        "textbook float Laplace declared exact",
        "hand-written sampler",
        lambda: m.FloatLaplace(epsilon=m.EPSILON),
        "hand-written",
        "refused: untestable channel",
        "audit_not_refuted",
        label_bound=(0.0, 1.0),
    ),
    Mutant(
        "true one-hot cell under a randomized-response law",
        "hand-written sampler",
        lambda: m.rr(m.TrueCell),
        "hand-written",
        "check_sampler: marginals",
        "sampler_matches_law",
    ),
    Mutant(
        "one shared uniform for all cell bits",
        "hand-written sampler",
        lambda: m.rr(m.SharedUniform),
        "hand-written",
        "check_sampler: joint",
        "sampler_matches_law",
    ),
    Mutant(
        "leak in the middle cell",
        "hand-written sampler",
        lambda: m.rr(m.MiddleCellLeak),
        "hand-written",
        "check_sampler: marginals",
        "sampler_matches_law",
    ),
    Mutant(
        "labels above hi + 5 released without noise",
        "hand-written sampler",
        lambda: m.rr(m.NoiselessFarLabels),
        "hand-written",
        "check_sampler: marginals",
        "sampler_matches_law",
    ),
    Mutant(
        "narrow label spike released without noise",
        "hand-written sampler",
        lambda: m.rr(m.LabelSpike),
        "hand-written",
        "check_sampler: labels",
        "sampler_matches_law",
    ),
    Mutant(
        "label leaked through the report's dtype",
        "hand-written sampler",
        lambda: m.rr(m.DtypeLeak),
        "hand-written",
        "check_sampler: structure",
        "sampler_matches_law",
    ),
    Mutant(
        "first holder of every call in the clear",
        "hand-written sampler",
        lambda: m.rr(m.FirstOfCall),
        "hand-written",
        "check_sampler: holders",
        "sampler_matches_law",
    ),
    Mutant(
        "holders with index 0 mod 1000 in the clear",
        "hand-written sampler",
        lambda: m.rr(m.EveryThousandth),
        "hand-written",
        "check_sampler: holders",
        "sampler_matches_law",
    ),
    Mutant(
        "noise shared at a stride of 64 holders",
        "hand-written sampler",
        lambda: m.rr(m.StrideShared),
        "hand-written",
        "check_sampler: collisions",
        "sampler_matches_law",
    ),
    Mutant(
        "holder index clamped as int32",
        "hand-written sampler",
        lambda: m.rr(m.Int32Clamped),
        "hand-written",
        "check_sampler: collisions",
        "sampler_matches_law",
    ),
    Mutant(
        "holder index taken mod 2^31",
        "hand-written sampler",
        lambda: m.rr(m.IndexMod31),
        "hand-written",
        "check_sampler: collisions",
        "sampler_matches_law",
    ),
    Mutant(
        "kit internals overridden (sampler constants)",
        "hand-written sampler",
        lambda: m.rr(m.TamperedSpec),
        "hand-written",
        "check_sampler: marginals",
        "sampler_matches_law",
    ),
    Mutant(
        "kit built from a user's noise class",
        "hand-written sampler",
        lambda: m.rr(m.ForeignNoise),
        "hand-written",
        "check_sampler: marginals",
        "sampler_matches_law",
    ),
    Mutant(
        "undeclared class code released in the clear",
        "hand-written sampler",
        _class(m.UndeclaredClassLeak),
        "hand-written",
        "check_sampler: marginals",
        "sampler_matches_law",
        task="classification",
    ),
)

#: What ``admit``'s refusal message says for each default catch.
_DEFAULT_PHRASES = {
    "law: bound > claim": "does not hold",
    "law: bound > claim (re-verified)": "does not hold",
    "law: not a law": "does not hold",
    "law: inputs not data": "does not hold",
    "law: not a library channel": "does not hold",
    "hand-written": "is hand-written",
}
#: The note of the certificate behind a law refusal.
_LAW_NOTES = {
    "law: not a law": "not a law",
    "law: inputs not data": "Python function of the label",
    "law: not a library channel": "not a library channel",
}


def _admit(mechanism: Any, case: Mutant) -> Any:
    bound = case.label_bound if case.task == "regression" else None
    return admit(mechanism, n_cells=m.N_CELLS, label_bound=bound)


@pytest.mark.parametrize("case", MUTANTS, ids=[c.name for c in MUTANTS])
def test_refused_by_default(case: Mutant) -> None:
    mechanism = case.make()
    if case.name == "mutated after its first fit":
        return  # test_a_mechanism_mutated_after_a_fit_is_verified_again
    with pytest.raises(AdmissionError) as info:
        _admit(mechanism, case)
    assert _DEFAULT_PHRASES[case.default] in str(info.value)
    if case.default in _LAW_NOTES:
        from ldptree.accounting import verify_ldp

        bound = case.label_bound if case.task == "regression" else None
        cert = verify_ldp(mechanism, n_cells=m.N_CELLS, label_bound=bound)
        assert any(_LAW_NOTES[case.default] in note for note in cert.notes), str(cert)


_OPTED = [c for c in MUTANTS if c.opted != "-"]


@pytest.mark.slow
@pytest.mark.parametrize("case", _OPTED, ids=[c.name for c in _OPTED])
def test_refused_when_opted_in(case: Mutant) -> None:
    wrapped = HandWritten(case.make(), n=N_SAMPLER)
    with pytest.raises(AdmissionError) as info:
        _admit(wrapped, case)
    message = str(info.value)
    if case.opted.startswith("refused: untestable"):
        assert "cannot be tested" in message
        return
    family = case.opted.removeprefix("check_sampler: ")
    assert "does not sample its certified law" in message
    assert re.search(rf"rejected by [a-z, ]*\b{family}\b", message), message


_SUITE = [c for c in MUTANTS if c.suite != "-"]


@pytest.mark.slow
@pytest.mark.parametrize("case", _SUITE, ids=[c.name for c in _SUITE])
def test_flagged_by_the_generated_suite(case: Mutant) -> None:
    options: dict[str, Any] = {"task": case.task}
    if case.task == "classification":
        options["n_classes"] = 3
    else:
        options["label_bound"] = case.label_bound
    checks = mechanism_checks(lambda epsilon: case.make(), **options)
    (check,) = [c for c in checks if c.name == case.suite]
    assert check.failure() is not None


def test_a_mechanism_mutated_after_a_fit_is_verified_again() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(300, 2)), rng.uniform(-1.0, 1.0, size=300)
    mechanism = m.MutableKit(epsilon=m.EPSILON, bit_epsilon=0.25)
    args: dict[str, Any] = {"epsilon": m.EPSILON, "max_depth": 2, "label_bound": m.BOUND}
    fit = LPDTRegressor(mechanism=mechanism, random_state=0, **args).fit(X, y)
    assert fit.privacy_certificate_ is not None and fit.privacy_certificate_.pure
    mechanism.bit_epsilon = 50.0  # each bit now spends 50 while the claim stays 1
    with pytest.raises(ValueError, match="does not hold"):
        LPDTRegressor(mechanism=mechanism, random_state=0, **args).fit(X, y)


@pytest.mark.slow
def test_a_hand_written_mechanism_runs_in_an_estimator_only_when_opted_in() -> None:
    """The honest sampler under a hand-written privatize: refused, then admitted wrapped, with a
    certificate that says what it is."""

    @attrs.frozen
    class Honest(m._Rewritten):
        def rewrite(self, report: Any, *_: Any) -> Any:
            return report

    rng = np.random.default_rng(1)
    X, y = rng.uniform(size=(300, 2)), rng.uniform(-1.0, 1.0, size=300)
    mech = m.rr(Honest)
    args: dict[str, Any] = {"epsilon": m.EPSILON, "max_depth": 1, "label_bound": m.BOUND}
    with pytest.raises(ValueError, match="hand-written"):
        LPDTRegressor(mechanism=mech, **args).fit(X, y)
    fit = LPDTRegressor(mechanism=HandWritten(mech, n=N_SAMPLER), random_state=0, **args)
    fit.fit(X, y)
    cert = fit.privacy_certificate_
    assert cert is not None and cert.law_holds and not cert.holds and not cert.pure
    assert cert.status == "law certified, sampler tested, not proven"
    assert cert.sampler_check is not None and not cert.sampler_check.rejected
    assert "not proven" in fit.privacy_ledger_.entries[0].name
    assert fit.privacy_.epsilon == m.EPSILON


def _docs_table() -> list[tuple[str, ...]]:
    text = DOCS.read_text()
    start = text.index("<!-- mutation-table -->")
    rows = []
    for line in text[start:].splitlines()[3:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip().strip("`") for cell in line.strip("|").split("|")))
    return rows


def test_the_table_in_the_docs_is_this_suite() -> None:
    expected = [(c.name, c.kind, c.default, c.opted, c.suite) for c in MUTANTS]
    assert _docs_table() == expected
    assert len(MUTANTS) >= 20


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "event"),
    [(lambda: m.rr(m.SharedUniform), "joint naive-Bayes"), (lambda: m.rr(m.DtypeLeak), "")],
    ids=["shared uniform: the joint score", "dtype leak: the structure column"],
)
def test_the_audit_refutes_leaks_no_coordinate_shows(make: Callable[[], Any], event: str) -> None:
    """Every coordinate of these reports has the law's marginal; the audit's joint score (one
    shared uniform: the report is the one-hot vector or its complement) and the report's
    structure code (int16 codes for labels above the centre) refute them."""
    import jax

    from ldptree.accounting import audit_ldp

    result = audit_ldp(
        make(), n_cells=m.N_CELLS, label_bound=(-3.0, 3.0), key=jax.random.key(8), n_samples=30_000
    )
    assert result.refuted and event in result.event, str(result)
