"""A test suite generated per mechanism: run it on your own mechanism, the repo runs it on every
built-in.

``mechanism_checks(make, task=...)`` returns named checks (callables raising ``AssertionError``)
for a mechanism family ``make(epsilon) -> Mechanism``:

* ``certificate_pure``: :func:`~ldptree.accounting.verify_ldp` certifies the report law pure
  ``epsilon``-LDP. For a mechanism whose sampler the kit derives from its law (``cert.proven``)
  that is a proof about the code that runs (``cert.pure``); for a hand-written one it is a
  statement about the *law* only (``cert.law_holds`` with ``delta == 0``): its sampler is never
  called pure, and the two statistical checks below are the evidence that it samples the law.
  Deterministic.
* ``over_claim_rejected``: a wrapper claiming half the real epsilon is rejected by ``verify_ldp``
  (its declared law's bound exceeds the claim) and refuted by the black-box
  :func:`~ldptree.accounting.audit_ldp`. The audit cannot refute falsely with probability more
  than ``1 - 0.999``; a failure of this check means the audit lacked power (or the law lies).
* ``sampler_matches_law``: :func:`~ldptree.accounting.check_sampler` does not reject
  ``privatize`` against ``report_law``: marginals, the joint law of a report's coordinates,
  every cell class, labels across and beyond the range, holder indices (residues, strides,
  the ends of a call, indices near ``2^31`` and ``2^32``) and the report's dtypes and shapes.
  False-failure rate ``1e-6`` (Bonferroni).
* ``audit_not_refuted``: :func:`~ldptree.accounting.audit_ldp` of the mechanism itself (per
  coordinate and joint statistics, exact bits of float reports, pairs of holders) does not
  refute its claim. False-failure rate ``1 - 0.999``.
* ``unbiased``: ``debias(summarize(privatize(...)))`` is unbiased for the true per-cell counts and
  label sums (per-class counts for multi-class), for hypothesis-drawn partitions (derandomized)
  routing uniform random points. Per example a t-test per statistic with Bonferroni over all
  statistics: false-failure rate ``1e-6`` per example, ``2e-6`` for the check.
* ``count_variance`` (mechanisms with a ``count_variance`` property: the variance one holder adds
  to a debiased count): the empirical variance of debiased counts over ``repeats`` runs matches
  ``n * count_variance``; two-sided test of the sample variance at level ``1e-6`` (normal
  approximation of the sample variance of near-normal counts).
* ``jit_and_vmap``: ``jax.jit`` of ``privatize`` and ``jax.vmap`` over keys reproduce the eager
  reports exactly. Deterministic.
* ``chunking``: privatizing all holders at once equals two chunks joined with ``first_holder``.
  Deterministic.

``pytest_params(...)`` wraps the checks as ``pytest.param`` objects for ``parametrize``.

What a passing suite proves, and what it does not. For a mechanism built on the kit, the
certificate is a proof about the code that runs, and the statistical checks are a second line of
defence. For a hand-written mechanism only the *law* is proven; passing
``sampler_matches_law`` and ``audit_not_refuted`` is evidence, at the records, labels and holder
indices they run, that ``privatize`` samples it: a leak on a label interval narrower than about
``100 / n`` of the swept range (labels are swept in groups of 100 of ``n`` holders), at a handful
of holder indices among ``2^32``, or on an event rarer than about one in the sample size, can
pass. Estimators therefore refuse a hand-written
mechanism unless it is wrapped in :class:`~ldptree.accounting.HandWritten`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from scipy import stats

from ldptree.accounting import audit_ldp, check_sampler, verify_ldp
from ldptree.mechanisms import MechanismEntry, mechanism_registry
from ldptree.mechanisms._registry import Task
from ldptree.testing._strategies import partitions

__all__ = [
    "BUILT_INS",
    "NOT_BUILT_INS",
    "BuiltIn",
    "MechanismCheck",
    "built_in_mechanisms",
    "mechanism_checks",
    "pytest_params",
]


@attrs.frozen
class MechanismCheck:
    """One named check; ``run()`` raises ``AssertionError`` when the mechanism fails it."""

    name: str
    run: Callable[[], None]

    def __call__(self) -> None:
        self.run()

    def failure(self) -> str | None:
        """Run the check; ``None`` when the mechanism passes, else the failure's message (for
        collecting the results of a whole suite instead of stopping at the first failure)."""
        try:
            self.run()
        except AssertionError as err:
            return f"{self.name}: {err}"
        return None


@attrs.frozen
class _HalfClaim:
    """``inner`` with half its epsilon claimed: a 2x over-claim."""

    inner: Any

    @property
    def epsilon(self) -> float:
        return float(self.inner.epsilon) / 2.0

    def privatize(self, key: Any, cells: Any, labels: Any, n_cells: int, **kw: Any) -> Any:
        return self.inner.privatize(key, cells, labels, n_cells, **kw)

    def summarize(self, reports: Any, n_cells: int) -> Any:
        return self.inner.summarize(reports, n_cells)

    def debias(self, stats: Any, n: int) -> Any:
        return self.inner.debias(stats, n)

    def log_prob(self, report: Any, cell: int, label: Any, n_cells: int, **kw: Any) -> float:
        return float(self.inner.log_prob(report, cell, label, n_cells, **kw))

    def report_law(self, n_cells: int) -> Any:
        return self.inner.report_law(n_cells)


@attrs.frozen
class _Setup:
    make: Callable[[float], Any]
    task: Task
    n_classes: int
    label_bound: tuple[float, float]
    epsilon: float
    n_features: int
    seed: int

    @property
    def single_cell(self) -> bool:
        return self.n_features > 0

    def features(self, rng: np.random.Generator, n: int) -> dict[str, Any]:
        """``{"features": float[n, d]}`` for feature-releasing mechanisms, else ``{}``."""
        if not self.n_features:
            return {}
        return {"features": jnp.asarray(rng.uniform(0.0, 1.0, (n, self.n_features)), jnp.float32)}

    def label_args(self) -> dict[str, Any]:
        if self.task == "classification":
            return {"labels": list(range(self.n_classes))}
        return {"label_bound": self.label_bound}

    def verify_args(self) -> dict[str, Any]:
        # classification: the law's own label domain; regression: wider than the bound (clipping)
        if self.task == "classification":
            return {}
        lo, hi = self.label_bound
        return {"label_bound": (lo - (hi - lo), hi + (hi - lo))}

    def draw_labels(self, rng: np.random.Generator, n: int) -> jax.Array:
        if self.task == "classification":
            return jnp.asarray(rng.integers(0, self.n_classes, n), dtype=jnp.int32)
        lo, hi = self.label_bound
        pad = 0.25 * (hi - lo)
        return jnp.asarray(rng.uniform(lo - pad, hi + pad, n), dtype=jnp.float32)

    def truth(self, cells: Any, labels: Any, n_cells: int, shape: tuple[int, ...]) -> Any:
        c = np.asarray(cells, dtype=np.int64)
        count = np.bincount(c, minlength=n_cells).astype(np.float64)
        if self.task == "regression":
            y = np.clip(np.asarray(labels, np.float64), *self.label_bound)
            return count, np.bincount(c, weights=y, minlength=n_cells)
        k = np.asarray(labels, np.int64)
        if len(shape) == 2:
            table = np.zeros((n_cells, shape[1]))
            np.add.at(table, (c, k), 1.0)
            return count, table
        return count, np.bincount(c, weights=(k == 1).astype(np.float64), minlength=n_cells)


def _estimates(
    mech: Any, key: Any, cells: Any, labels: Any, n_cells: int, extra: dict[str, Any]
) -> Any:
    reports = mech.privatize(key, cells, labels, n_cells, **extra)
    return mech.debias(mech.summarize(reports, n_cells), int(cells.shape[0]))


def _check_pure(s: _Setup) -> None:
    mech = s.make(s.epsilon)
    n_cells = 1 if s.single_cell else 5
    cert = verify_ldp(mech, n_cells=n_cells, **s.verify_args())
    if cert.proven:
        assert cert.pure, f"{type(mech).__name__} is not certified pure as implemented:\n{cert}"
    else:  # a hand-written sampler: the law only (module docstring)
        assert cert.law_holds and cert.delta == 0.0, (
            f"{type(mech).__name__}'s report law is not certified pure:\n{cert}"
        )


def _check_over_claim(s: _Setup) -> None:
    wrapped = _HalfClaim(s.make(2.0 * s.epsilon))
    n_cells = 1 if s.single_cell else 2
    cert = verify_ldp(wrapped, n_cells=n_cells, **s.verify_args())
    assert not cert.declared_holds, f"verify_ldp accepted a 2x over-claim:\n{cert}"
    if s.n_features:
        return  # the audit varies cells and labels only; the features' share is not audited
    result = audit_ldp(
        wrapped,
        n_cells=n_cells,
        key=jax.random.PRNGKey(s.seed),
        n_samples=60_000,
        holder_pairs=False,
        **s.label_args(),
    )
    assert result.refuted, f"audit_ldp did not refute a 2x over-claim: {result}"


def _check_sampler(s: _Setup) -> None:
    mech = s.make(s.epsilon)
    if s.n_features:
        return  # check_sampler skips feature releases (their records carry features)
    n_cells = 5
    args: dict[str, Any] = {} if s.task == "classification" else {"label_bound": s.label_bound}
    result = check_sampler(mech, n_cells, key=jax.random.PRNGKey(s.seed), n=5_000, **args)
    assert not result.rejected, str(result)


def _check_audit(s: _Setup) -> None:
    mech = s.make(s.epsilon)
    if s.n_features:
        return  # the audit varies cells and labels only
    lo, hi = s.label_bound
    args: dict[str, Any] = (
        {"labels": [*range(s.n_classes), -1]}
        if s.task == "classification"
        else {"label_bound": (lo - (hi - lo), hi + (hi - lo))}
    )
    result = audit_ldp(
        mech, n_cells=5, key=jax.random.PRNGKey(s.seed + 1), n_samples=60_000, **args
    )
    assert not result.refuted, f"audit_ldp refuted the claim: {result}"


def _t_check(name: str, runs: Any, truth: Any, critical: float) -> None:
    runs = np.asarray(runs, dtype=np.float64)
    mean = runs.mean(axis=0)
    se = runs.std(axis=0, ddof=1) / math.sqrt(runs.shape[0])
    miss = (se == 0) & ~np.isclose(mean, truth, rtol=1e-9, atol=1e-9)
    t = np.where(se > 0, np.abs(mean - truth) / np.where(se > 0, se, 1.0), 0.0)
    worst = int(np.argmax(t))
    assert not miss.any() and float(t.max()) <= critical, (
        f"{name} looks biased: worst |t| = {float(t.max()):.3g} > {critical:.3g} "
        f"(mean {mean.ravel()[worst]:.6g} vs truth {np.ravel(truth)[worst]:.6g})"
    )


def _check_unbiased(s: _Setup, examples: int = 2, repeats: int = 50, n: int = 300) -> None:
    mech = s.make(s.epsilon)
    alpha = 1e-6

    def one(cells: Any, labels: Any, n_cells: int, seed: int) -> None:
        key = jax.random.PRNGKey(seed)
        extra = s.features(np.random.default_rng(seed + 1), int(cells.shape[0]))
        runs = [
            _estimates(mech, jax.random.fold_in(key, r), cells, labels, n_cells, extra)
            for r in range(repeats)
        ]
        counts = np.stack([np.asarray(e.count, np.float64) for e in runs])
        sums = np.stack([np.asarray(e.label_sum, np.float64) for e in runs])
        true_count, true_sum = s.truth(cells, labels, n_cells, sums.shape[1:])
        m = true_count.size + np.asarray(true_sum).size
        critical = float(stats.t.ppf(1.0 - alpha / (2.0 * m), repeats - 1))
        _t_check("count", counts, true_count, critical)
        _t_check("label_sum", sums, true_sum, critical)

    if s.single_cell:
        rng = np.random.default_rng(s.seed)
        one(jnp.zeros(n, jnp.int32), s.draw_labels(rng, n), 1, s.seed)
        return

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.generate,),  # no shrinking: each example runs the protocol many times
    )
    @given(partition=partitions(max_features=3, max_depth=3), seed=st.integers(0, 2**31 - 1))
    def inner(partition: Any, seed: int) -> None:
        rng = np.random.default_rng(seed)
        x = rng.uniform(0.0, 1.0, (n, partition.n_features))
        cells = jnp.asarray(partition.cells(x), dtype=jnp.int32)
        one(cells, s.draw_labels(rng, n), partition.n_leaves, seed)

    inner()


def _sample(s: _Setup, n: int, n_cells: int) -> tuple[Any, jax.Array, Any, dict[str, Any]]:
    """``(mechanism, cells, labels, extra record fields)`` for ``n`` holders over ``n_cells``
    cells (one cell for single-cell mechanisms), drawn from the setup's seed."""
    n_cells = 1 if s.single_cell else n_cells
    rng = np.random.default_rng(s.seed)
    cells = jnp.asarray(rng.integers(0, n_cells, n), dtype=jnp.int32)
    labels = s.draw_labels(rng, n)
    return s.make(s.epsilon), cells, labels, s.features(rng, n)


def _check_count_variance(s: _Setup, repeats: int = 300, n: int = 500) -> None:
    mech, cells, labels, extra = _sample(s, n, 3)
    n_cells = 1 if s.single_cell else 3
    key = jax.random.PRNGKey(s.seed)
    counts = np.stack(
        [
            np.asarray(
                _estimates(mech, jax.random.fold_in(key, r), cells, labels, n_cells, extra).count
            )
            for r in range(repeats)
        ]
    )
    expected = n * float(mech.count_variance)
    # (R - 1) s^2 / sigma^2 ~ chi2(R - 1); two-sided level 1e-6 per cell, Bonferroni over cells
    alpha = 1e-6 / n_cells
    lo = stats.chi2.ppf(alpha / 2.0, repeats - 1) / (repeats - 1)
    hi = stats.chi2.ppf(1.0 - alpha / 2.0, repeats - 1) / (repeats - 1)
    ratio = counts.var(axis=0, ddof=1) / expected
    assert np.all((lo <= ratio) & (ratio <= hi)), (
        f"empirical variance / (n * count_variance) = {ratio} outside [{lo:.3f}, {hi:.3f}]"
    )


def _check_jit_vmap(s: _Setup, n: int = 16) -> None:
    mech, cells, labels, extra = _sample(s, n, 4)
    n_cells = 1 if s.single_cell else 4
    keys = jax.random.split(jax.random.PRNGKey(s.seed), 3)
    eager = [mech.privatize(k, cells, labels, n_cells, **extra) for k in keys]
    jitted = jax.jit(lambda k: mech.privatize(k, cells, labels, n_cells, **extra))(keys[0])
    mapped = jax.vmap(lambda k: mech.privatize(k, cells, labels, n_cells, **extra))(keys)
    for got, want in zip(
        jax.tree_util.tree_leaves(jitted), jax.tree_util.tree_leaves(eager[0]), strict=True
    ):
        assert np.array_equal(np.asarray(got), np.asarray(want)), "jax.jit changed the reports"
    for i in range(len(keys)):
        for got, want in zip(
            jax.tree_util.tree_leaves(mapped), jax.tree_util.tree_leaves(eager[i]), strict=True
        ):
            assert np.array_equal(np.asarray(got)[i], np.asarray(want)), (
                "jax.vmap over keys changed the reports"
            )


def _check_chunking(s: _Setup, n: int = 40, split: int = 13) -> None:
    mech, cells, labels, extra = _sample(s, n, 4)
    n_cells = 1 if s.single_cell else 4
    head = {k: v[:split] for k, v in extra.items()}
    tail = {k: v[split:] for k, v in extra.items()}
    key = jax.random.PRNGKey(s.seed)
    whole = mech.privatize(key, cells, labels, n_cells, **extra)
    first = mech.privatize(key, cells[:split], labels[:split], n_cells, **head)
    second = mech.privatize(key, cells[split:], labels[split:], n_cells, first_holder=split, **tail)
    for w, a, b in zip(
        jax.tree_util.tree_leaves(whole),
        jax.tree_util.tree_leaves(first),
        jax.tree_util.tree_leaves(second),
        strict=True,
    ):
        joined = np.concatenate([np.asarray(a), np.asarray(b)])
        assert np.array_equal(np.asarray(w), joined), "reports depend on how holders are chunked"


def mechanism_checks(
    make: Callable[[float], Any],
    *,
    task: Task,
    n_classes: int = 2,
    label_bound: tuple[float, float] = (-1.0, 1.0),
    epsilon: float = 1.0,
    n_features: int = 0,
    seed: int = 0,
) -> tuple[MechanismCheck, ...]:
    """The checks for the mechanism family ``make(epsilon)`` (module docstring).

    ``task`` says what labels are: ``"regression"`` (reals in ``label_bound``; draws exceed it by
    25% on each side to exercise clipping) or ``"classification"`` (codes ``0..n_classes-1``).
    ``n_features > 0`` is for mechanisms that release the record's feature vector (one cell,
    ``privatize(..., features=float[n, d])``); for those the audit and the sampler cross-check are
    skipped. Every statistical check uses fixed keys derived from ``seed``.
    """
    if task not in ("regression", "classification"):
        raise ValueError(f"task must be 'regression' or 'classification', got {task!r}")
    lo, hi = (float(v) for v in label_bound)
    if not lo < hi:
        raise ValueError(f"label_bound must have lo < hi, got {label_bound!r}")
    setup = _Setup(make, task, int(n_classes), (lo, hi), float(epsilon), int(n_features), seed)
    checks = [
        MechanismCheck("certificate_pure", lambda: _check_pure(setup)),
        MechanismCheck("over_claim_rejected", lambda: _check_over_claim(setup)),
        MechanismCheck("sampler_matches_law", lambda: _check_sampler(setup)),
        MechanismCheck("audit_not_refuted", lambda: _check_audit(setup)),
        MechanismCheck("unbiased", lambda: _check_unbiased(setup)),
        MechanismCheck("jit_and_vmap", lambda: _check_jit_vmap(setup)),
        MechanismCheck("chunking", lambda: _check_chunking(setup)),
    ]
    if hasattr(make(epsilon), "count_variance"):
        checks.append(MechanismCheck("count_variance", lambda: _check_count_variance(setup)))
    return tuple(checks)


def pytest_params(
    make: Callable[[float], Any],
    *,
    prefix: str = "",
    marks: dict[str, Any] | None = None,
    **kw: Any,
) -> list[Any]:
    """``pytest.param(check, id=prefix + name)`` for each check, with ``marks[name]`` applied, for
    ``@pytest.mark.parametrize("check", pytest_params(make, task=...))`` and a test body
    ``check()``."""
    import pytest

    marks = marks or {}
    return [
        pytest.param(c, id=f"{prefix}{c.name}", marks=marks.get(c.name, ()))
        for c in mechanism_checks(make, **kw)
    ]


# -- the built-ins --------------------------------------------------------------------------------
@attrs.frozen
class BuiltIn:
    """How to construct a built-in mechanism for the suite: ``make(epsilon)`` and the keyword
    arguments of :func:`mechanism_checks` (``task`` and its options)."""

    make: Callable[[float], Any]
    task: Task
    options: dict[str, Any] = attrs.field(factory=dict)

    def checks(self) -> tuple[MechanismCheck, ...]:
        return mechanism_checks(self.make, task=self.task, **self.options)


def _built_in(entry: MechanismEntry) -> BuiltIn:
    classes = {"n_classes": 3} if entry.task == "classification" else {}  # as entry.make builds
    return BuiltIn(entry.make, entry.task, {**classes, **dict(entry.example)})


#: Every built-in mechanism class (by name in :mod:`ldptree.mechanisms`) and how to test it: a
#: view of :func:`~ldptree.mechanisms.mechanism_registry` (a new built-in needs an entry there;
#: the repo's suite fails until it has one).
BUILT_INS: dict[str, BuiltIn] = {e.name: _built_in(e) for e in mechanism_registry().entries}


#: Mechanism classes exported by :mod:`ldptree.mechanisms` that are not standalone built-ins
#: (e.g. a generic class the built-ins are assembled from), with the reason they need no entry.
NOT_BUILT_INS: dict[str, str] = {
    "KitMechanism": "the base class of the kit; every built-in subclass has its own entry",
}


def built_in_mechanisms() -> tuple[str, ...]:
    """Names in ``ldptree.mechanisms.__all__`` that are classes implementing the Mechanism
    protocol's methods, less :data:`NOT_BUILT_INS`."""
    import inspect

    import ldptree.mechanisms as mechanisms

    methods = ("privatize", "summarize", "debias", "log_prob")
    return tuple(
        sorted(
            name
            for name in mechanisms.__all__
            if name not in NOT_BUILT_INS
            and inspect.isclass(obj := getattr(mechanisms, name))
            and all(callable(getattr(obj, m, None)) for m in methods)
        )
    )
