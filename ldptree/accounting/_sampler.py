"""``check_sampler``: does ``privatize`` draw from the report law the mechanism declares?

:func:`~ldptree.accounting.verify_ldp` certifies the *declared* law (``report_law``); a mechanism
that hand-writes ``privatize`` can declare one law and sample another. This is a battery of
goodness-of-fit tests of the sampler against the declaration. Under the declared law a report is
a product of independent coordinates given the record (a mixture over levels for real labels
declared through ``label_levels``, whose declared meaning is: clip to the levels' range, then
round at random to one of the two adjacent levels, unbiasedly), and different holders are
independent. Every test below compares what ``privatize`` releases with that, using the law's
exact probabilities or a *reference sample* drawn from the law itself (NumPy, independent
randomness):

* **structure**: the report's tree, leaf dtypes and per-holder shapes are the same for every
  record and batch size (one holder alone, or many), and match the law's coordinates (a dtype
  that depends on the label is a channel the law does not describe);
* **support**: every released output is possible under the law for the holder's record (an
  impossible one rejects outright);
* **marginals**: per record, block and coordinate input, the pooled outputs against the channel's
  exact probabilities (Pearson's chi-square);
* **joint**: per record, statistics of the whole report — its log-likelihood under the law, each
  block's log-likelihood and the sum of each block's outputs — against a reference sample drawn
  for the same records. One shared uniform for all cell bits keeps every marginal and changes
  all three;
* **cells**: holders spread over every cell (or a sample of cells when there are many), one
  group per cell: a leak confined to one cell;
* **labels**: real labels swept across ``[lo - w, hi + w]`` (``w = hi - lo``) in narrow
  consecutive groups, plus records at the bounds, the centre, beyond them (``hi + w``,
  ``hi + 10 w``, ``1e6 w``, ``+-3e38``); class codes: every declared code and undeclared ones
  (which the law maps to its null record ``-1``, when it has one);
* **holders**: large single-record batches under one key, as the chunks of one round, starting
  at holder ``0``, at ``2^31 - n/2`` (the signed 32-bit boundary inside the batch), at ``2^31``
  and at ``2^32 - n`` (the last indices), grouped by index residue over all batches (``i mod m
  = 0`` for ``m`` up to ``1024``, every residue for ``m <= 4``), by position (first and last
  ``64``, each side of ``2^31``) and by position within a call (64 calls of 8 holders); and
  **collisions**: pairs of holders ``(i, i + s)`` with the same record at strides ``s`` from 1 to
  4096, and holder ``i`` against holders ``2^31 + i`` and ``2^32 - n + i``, release identical
  reports (or blocks) no more often than the law's exact collision probability (independent
  pairs: an exact binomial test). Noise shared at a stride, or read from an index that wrapped,
  shows here.

Group-against-reference tests use, per statistic, the events ``{stat >= q}`` and
``{stat <= q'}`` at the reference's 80% and 20% quantiles (fitted on one reference sample) with
exact binomial tails against their probability estimated on a second, fresh reference sample
(conservatively: three standard errors towards the null), and, for groups of at least 200
holders, a chi-square homogeneity test over quantile bins. The check rejects when the smallest
p-value is below ``alpha / m`` for its ``m`` tests (Bonferroni): a sampler that draws exactly the
declared law is rejected with probability at most ``alpha`` (up to the chi-square approximation,
with at least ``MIN_EXPECTED`` expected counts per bin, and the reference's estimation error,
which the binomial tests cover conservatively).

What passing does *not* prove: that ``privatize`` samples the law at records, holders or labels
it was not run on. A leak on a label interval narrower than about ``100 / n`` of the swept
range, at one holder index among millions, or on an event rarer than about ``1 / n``, can pass.
The kit's mechanisms need no such evidence: their sampler is derived from the law
(:func:`~ldptree.accounting.provenance`).

Channels without a finite output set (continuous Laplace) cannot be tested; such blocks, and
mechanisms with feature blocks, are listed in ``skipped``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_bounds, check_int, check_real
from ldptree.accounting._channels import FiniteChannel
from ldptree.accounting._law import (
    Block,
    FeatureBlock,
    IndexBlock,
    ReportLaw,
    VerifiableMechanism,
    block_inputs,
)

__all__ = ["SamplerCheck", "check_sampler"]

#: Outputs (or bins) with a smaller expected count are pooled (chi-square approximation).
MIN_EXPECTED = 20.0
#: Strides of the collision tests.
STRIDES = (1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 100, 128, 256, 512, 1000, 1024, 2048, 4096)
#: Moduli of the residue groups (residue 0; every residue for moduli up to 4).
MODULI = (2, 3, 4, 8, 10, 16, 64, 100, 256, 1000, 1024)
#: Holders per call of the position-in-call groups, and calls.
CALL_SIZE, CALLS = 8, 64
#: Holders per group of the label sweep.
SWEEP_GROUP = 100
#: Reference reports drawn per tested holder in mixed-record groups.
REFERENCE_FACTOR = 4


@attrs.frozen(eq=False)
class SamplerCheck:
    """Result of :func:`check_sampler`.

    ``rejected`` when ``p_min < alpha / n_tests``; ``worst`` describes the test attaining
    ``p_min``; ``skipped`` lists blocks that could not be tested and why; ``families`` the test
    families run and ``holders`` how many holders were privatized (the evidence);
    ``rejections`` the (first 20) tests below the Bonferroni level, and ``rejected_families``
    their families.
    """

    rejected: bool
    alpha: float
    n_tests: int
    p_min: float
    worst: str
    n: int
    skipped: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    holders: int = 0
    rejections: tuple[str, ...] = ()
    rejected_families: tuple[str, ...] = ()

    def __str__(self) -> str:
        verdict = "REJECTED" if self.rejected else "not rejected"
        skipped = f"; not tested: {', '.join(self.skipped)}" if self.skipped else ""
        families = f" ({', '.join(self.families)})" if self.families else ""
        families_hit = (
            f"; rejected by {', '.join(self.rejected_families)}" if self.rejected_families else ""
        )
        return (
            f"privatize vs report_law {verdict}{families_hit}: smallest p-value "
            f"{self.p_min:.3g} over "
            f"{self.n_tests} tests{families}, Bonferroni level {self.alpha:g}, "
            f"{self.holders} holders privatized; worst: {self.worst}{skipped}"
        )


# -- the declared law, evaluated ---------------------------------------------------------------
@attrs.frozen(eq=False)
class _Law:
    """The testable blocks of a report law over ``n_cells`` cells, with their exact
    probabilities per coordinate input and how a label enters (components)."""

    law: ReportLaw
    n_cells: int
    blocks: tuple[Block, ...]
    outputs: dict[str, FloatArray]  # sorted output values per block
    cache: dict[tuple[str, Any], FloatArray] = attrs.field(factory=dict)

    @classmethod
    def of(cls, law: ReportLaw, n_cells: int) -> tuple[_Law, list[str]]:
        blocks: list[Block] = []
        skipped: list[str] = []
        outputs: dict[str, FloatArray] = {}
        for b in law.blocks:
            if isinstance(b, IndexBlock):
                blocks.append(b)
                outputs[b.name] = np.arange(n_cells * b.per_cell, dtype=np.float64)
            elif isinstance(b.channel, FiniteChannel) and not isinstance(b, FeatureBlock):
                values = np.asarray([float(o) for o in b.channel.outputs])
                if np.unique(values).size != values.size:
                    skipped.append(f"{b.name} (outputs are not distinct numbers)")
                    continue
                blocks.append(b)
                outputs[b.name] = np.sort(values)
            else:
                skipped.append(f"{b.name} (not a finite channel)")
        return cls(law, n_cells, tuple(blocks), outputs), skipped

    def components(self, label: Any) -> list[tuple[float, Any]]:
        """``[(weight, t)]``: the label coordinate(s) a label enters as (module docstring)."""
        law = self.law
        if law.labels is not None:
            if label in law.labels:
                return [(1.0, label)]
            return [(1.0, -1)] if -1 in law.labels else [(1.0, label)]
        if law.label_levels is None:
            return [(1.0, law.label_coordinate(label))]
        levels = sorted(float(v) for v in law.label_levels)
        y = min(max(float(label), levels[0]), levels[-1])
        j = int(np.searchsorted(levels, y, side="right")) - 1
        if j >= len(levels) - 1 or y == levels[j]:
            return [(1.0, law.label_coordinate(levels[min(j, len(levels) - 1)]))]
        up = (y - levels[j]) / (levels[j + 1] - levels[j])
        out = [(1.0 - up, law.label_coordinate(levels[j]))]
        if up > 0.0:
            out.append((up, law.label_coordinate(levels[j + 1])))
        return out

    def probs(self, block: Block, a: Any) -> FloatArray:
        """``P(output | input a)`` over the block's sorted outputs."""
        key = (block.name, a)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        if isinstance(block, IndexBlock):
            k = self.n_cells * block.per_cell
            p = np.full(k, math.exp(block.log_other))
            p[int(a)] = math.exp(block.log_keep)
        else:
            assert isinstance(block.channel, FiniteChannel)
            values = np.asarray([float(o) for o in block.channel.outputs])
            raw = np.exp(block.channel.table([a])[0])
            p = raw[np.argsort(values)]
        out: FloatArray = p / p.sum()
        self.cache[key] = out
        return out

    def inputs(self, block: Block, cell: int, t: Any) -> list[Any]:
        return block_inputs(block, cell, t, self.n_cells)


@attrs.frozen(eq=False)
class _Records:
    """``n`` holders' records as indices into distinct ``(cell, t)`` pairs: holder ``i``'s
    label enters as pair ``pair[i, c]`` with probability ``weight[i, c]`` (``c < 2``; a second
    slot of weight 0 when the label is a single component)."""

    cells: np.ndarray[Any, Any]
    labels: np.ndarray[Any, Any]
    pair: np.ndarray[Any, Any]  # int64 [n, 2]
    weight: FloatArray  # [n, 2]
    pairs: list[tuple[int, Any]]  # the distinct (cell, t)


def _records(view: _Law, cells: Any, labels: Any) -> _Records:
    cells = np.asarray(cells, dtype=np.int64)
    labels = np.asarray(labels)
    keys = np.stack([cells.astype(np.float64), labels.astype(np.float64)], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    pairs: list[tuple[int, Any]] = []
    where: dict[tuple[int, Any], int] = {}
    slots = np.zeros((unique.shape[0], 2), dtype=np.int64)
    weights = np.zeros((unique.shape[0], 2))
    first = {int(r): i for i, r in enumerate(np.asarray(inverse).ravel().tolist())}
    for r in range(unique.shape[0]):
        i = first[r]
        cell = int(cells[i])
        comps = view.components(labels[i].item())
        for c, (w, t) in enumerate(comps):
            slot = where.setdefault((cell, t), len(pairs))
            if slot == len(pairs):
                pairs.append((cell, t))
            slots[r, c], weights[r, c] = slot, w
        if len(comps) == 1:
            slots[r, 1] = slots[r, 0]
    inv = np.asarray(inverse).ravel()
    return _Records(cells, labels, slots[inv], weights[inv], pairs)


def _positions(view: _Law, block: Block, values: FloatArray) -> np.ndarray[Any, Any]:
    """Output indices of released values (``-1`` for a value outside the output set)."""
    out = view.outputs[block.name]
    pos = np.clip(np.searchsorted(out, values), 0, out.size - 1)
    return np.where(out[pos] == values, pos, -1)


def _block_log_prob(view: _Law, block: Block, pair: tuple[int, Any], values: FloatArray) -> Any:
    """``sum_k log P(values[:, k] | input_k)`` per row for the pair's coordinate inputs."""
    inputs = view.inputs(block, *pair)
    pos = _positions(view, block, values)
    lp = np.zeros(values.shape[0])
    for a in dict.fromkeys(inputs):
        cols = [k for k, v in enumerate(inputs) if v == a]
        with np.errstate(divide="ignore"):
            table = np.log(view.probs(block, a))
        sub = pos[:, cols]
        lp += np.where(sub >= 0, table[np.maximum(sub, 0)], -np.inf).sum(axis=1)
    return lp


def _log_likelihoods(
    view: _Law, recs: _Records, parts: dict[str, FloatArray]
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """Per holder: ``log P(report | record)`` and per block ``log P(block's outputs | record)``
    under the declared law (mixtures over label components); ``-inf`` for an impossible
    report."""
    n = recs.cells.size
    with np.errstate(divide="ignore"):
        log_w = np.log(recs.weight)
    per_comp = {b.name: np.zeros((n, 2)) for b in view.blocks}
    for g, pair in enumerate(recs.pairs):
        for c in (0, 1):
            rows = np.flatnonzero((recs.pair[:, c] == g) & (recs.weight[:, c] > 0))
            if rows.size == 0:
                continue
            for block in view.blocks:
                values = np.asarray(parts[block.name][rows], dtype=np.float64)
                per_comp[block.name][rows, c] = _block_log_prob(view, block, pair, values)
    stacked = sum(per_comp.values(), np.zeros((n, 2)))
    with np.errstate(invalid="ignore"):
        total: FloatArray = np.logaddexp.reduce(log_w + stacked, axis=1)
        per_block = {
            name: np.logaddexp.reduce(log_w + value, axis=1) for name, value in per_comp.items()
        }
    return total, per_block


def _repeat(recs: _Records, repeats: int) -> _Records:
    """Every holder's record ``repeats`` times in a row."""
    return _Records(
        np.repeat(recs.cells, repeats),
        np.repeat(recs.labels, repeats),
        np.repeat(recs.pair, repeats, axis=0),
        np.repeat(recs.weight, repeats, axis=0),
        recs.pairs,
    )


def _reference(
    view: _Law, recs: _Records, rng: np.random.Generator, repeats: int = 1
) -> tuple[_Records, dict[str, FloatArray]]:
    """``repeats`` reports per holder drawn from the declared law (NumPy), with their records."""
    rep = _repeat(recs, repeats)
    n = rep.cells.size
    second = rng.random(n) >= rep.weight[:, 0]
    chosen = np.where(second, rep.pair[:, 1], rep.pair[:, 0])
    parts: dict[str, FloatArray] = {}
    for block in view.blocks:
        values = view.outputs[block.name]
        width = len(view.inputs(block, *rep.pairs[int(chosen[0])])) if n else 0
        out = np.zeros((n, width))
        for g, pair in enumerate(rep.pairs):
            rows = np.flatnonzero(chosen == g)
            if rows.size == 0:
                continue
            inputs = view.inputs(block, *pair)
            u = rng.random((rows.size, len(inputs)))
            for a in dict.fromkeys(inputs):
                cols = np.asarray([k for k, v in enumerate(inputs) if v == a])
                cdf = np.cumsum(view.probs(block, a))
                cdf[-1] = 1.0
                idx = np.searchsorted(cdf, u[:, cols], side="right")
                out[np.ix_(rows, cols)] = values[np.minimum(idx, values.size - 1)]
        parts[block.name] = out
    return rep, parts


def _statistics(
    view: _Law, recs: _Records, parts: dict[str, FloatArray]
) -> tuple[dict[str, FloatArray], str | None]:
    """The joint statistics per holder (module docstring) and, if some holder's report is
    impossible under the law, a description of it."""
    total, per_block = _log_likelihoods(view, recs, parts)
    bad = np.flatnonzero(np.isneginf(total))
    impossible = None
    if bad.size:
        i = int(bad[0])
        which = [b for b, v in per_block.items() if np.isneginf(v[i])]
        impossible = (
            f"holder with record ({int(recs.cells[i])}, {recs.labels[i]!r}) released an output "
            f"impossible under the law in block(s) {which}"
        )
    out = {"log-likelihood": total}
    if len(view.blocks) > 1:
        for name, value in per_block.items():
            out[f"{name} log-likelihood"] = value
    for block in view.blocks:
        out[f"{block.name} sum"] = np.asarray(parts[block.name], dtype=np.float64).sum(axis=1)
    return out, impossible


# -- tests -----------------------------------------------------------------------------------------
def _chi_square(observed: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> float:
    """Pearson's p-value, pooling outputs with expected count below ``MIN_EXPECTED``; 0 when an
    impossible output was observed."""
    if np.any((expected == 0.0) & (observed > 0)):
        return 0.0
    keep = expected >= MIN_EXPECTED
    obs = list(observed[keep])
    exp = list(expected[keep])
    rest_obs, rest_exp = float(observed[~keep].sum()), float(expected[~keep].sum())
    if rest_exp > 0.0:
        obs.append(rest_obs)
        exp.append(rest_exp)
    if len(obs) < 2:
        return 1.0
    o, e = np.asarray(obs, dtype=np.float64), np.asarray(exp, dtype=np.float64)
    statistic = float(((o - e) ** 2 / e).sum())
    return float(stats.chi2.sf(statistic, len(obs) - 1))


@attrs.frozen(eq=False)
class _Reference:
    """A reference for group tests, per statistic: the tail events ``{x >= q_80}`` and
    ``{x <= q_20}`` with quantiles fitted on one reference sample and probabilities estimated on
    a fresh one (moved three standard errors towards the null), and ten quantile bins of the
    fitting sample with the fresh sample's counts in them."""

    tails: dict[str, tuple[tuple[float, bool, float], ...]]
    edges: dict[str, FloatArray]
    counts: dict[str, np.ndarray[Any, Any]]

    @classmethod
    def of(cls, fit: dict[str, FloatArray], test: dict[str, FloatArray]) -> _Reference:
        tails, edges, counts = {}, {}, {}
        for name, f in fit.items():
            t = test[name]
            f, t = f[np.isfinite(f)], t[np.isfinite(t)]
            if f.size == 0 or t.size == 0:
                continue
            q20, q80 = np.quantile(f, [0.2, 0.8])
            events = []
            for q, above in ((float(q80), True), (float(q20), False)):
                p_hat = float(np.mean(t >= q if above else t <= q))
                se = math.sqrt(max(p_hat * (1.0 - p_hat), 1.0 / t.size) / t.size)
                events.append((q, above, min(1.0, p_hat + 3.0 * se)))
            tails[name] = tuple(events)
            e = np.unique(np.quantile(f, np.linspace(0.0, 1.0, 11)[1:-1]))
            edges[name] = e
            counts[name] = np.bincount(np.searchsorted(e, t, side="right"), minlength=e.size + 1)
        return cls(tails, edges, counts)


def _homogeneity(group: FloatArray, edges: FloatArray, test: np.ndarray[Any, Any]) -> float:
    """Chi-square homogeneity of ``group`` and the reference's bin counts ``test``."""
    a = np.bincount(np.searchsorted(edges, group, side="right"), minlength=edges.size + 1)
    table = np.stack([a, test]).astype(np.float64)
    total = table.sum()
    # pool adjacent bins until each expected count reaches MIN_EXPECTED
    cols: list[np.ndarray[Any, Any]] = []
    current = np.zeros(2)
    for k in range(table.shape[1]):
        current = current + table[:, k]
        if current.sum() * table.sum(axis=1).min() / total >= MIN_EXPECTED:
            cols.append(current)
            current = np.zeros(2)
    if current.sum() > 0 and cols:
        cols[-1] = cols[-1] + current
    if len(cols) < 2:
        return 1.0
    _, p, _, _ = stats.chi2_contingency(np.stack(cols, axis=1), correction=False)
    return float(p)


def _compare(group: dict[str, FloatArray], ref: _Reference, where: str) -> list[tuple[float, str]]:
    """Tests of a group's statistics against the reference: the tail events' frequencies
    (exact binomial tails, one-sided: too many) and, for groups of at least 200 holders, the
    distribution over the bins."""
    results = []
    for name, events in ref.tails.items():
        values = group[name]
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        for q, above, p in events:
            k = int(np.sum(values >= q if above else values <= q))
            pv = 1.0 if p >= 1.0 else float(stats.binom.sf(k - 1, values.size, p))
            side = ">=" if above else "<="
            results.append((pv, f"{where}: {name} {side} {q:.6g} in {k}/{values.size}"))
        if values.size >= 200:
            pv = _homogeneity(values, ref.edges[name], ref.counts[name])
            results.append((pv, f"{where}: {name} distribution"))
    return results


def _marginals(view: _Law, recs: _Records, parts: dict[str, FloatArray], where: str) -> Any:
    """Per block and coordinate input, pooled outputs against the exact probabilities (one
    record, one label component)."""
    comps = _components(recs, 0)
    if len(comps) != 1:
        return []
    cell, t = comps[0][1]
    results = []
    for block in view.blocks:
        inputs = view.inputs(block, cell, t)
        pos = _positions(view, block, np.asarray(parts[block.name], dtype=np.float64))
        size = view.outputs[block.name].size
        for a in dict.fromkeys(inputs):
            cols = [k for k, v in enumerate(inputs) if v == a]
            sample = pos[:, cols].ravel()
            if (sample < 0).any():
                results.append((0.0, f"{where}, block {block.name!r}: output outside the law"))
                continue
            observed = np.bincount(sample, minlength=size).astype(np.float64)
            expected = view.probs(block, a) * sample.size
            top = int(np.argmax(np.abs(observed - expected)))
            results.append(
                (
                    _chi_square(observed, expected),
                    f"{where}, block {block.name!r}, input {a!r}: output "
                    f"{view.outputs[block.name][top]:g} seen {int(observed[top])} times, "
                    f"expected {expected[top]:.1f}",
                )
            )
    return results


def _components(recs: _Records, i: int) -> list[tuple[float, tuple[int, Any]]]:
    """Holder ``i``'s ``[(weight, (cell, t))]``."""
    out = []
    for c in (0, 1):
        w = float(recs.weight[i, c])
        if w > 0.0 and not (c == 1 and recs.pair[i, 1] == recs.pair[i, 0]):
            out.append((w, recs.pairs[int(recs.pair[i, c])]))
    return out


def _collision_probability(view: _Law, block: Block | None, comps: Any) -> float:
    """``P(two independent reports of one record agree)`` on ``block`` (``None``: all blocks),
    exactly from the law (mixture components included)."""
    blocks = view.blocks if block is None else (block,)
    total = 0.0
    for w1, pair1 in comps:
        for w2, pair2 in comps:
            agree = 1.0
            for b in blocks:
                for a1, a2 in zip(view.inputs(b, *pair1), view.inputs(b, *pair2), strict=True):
                    agree *= float(np.dot(view.probs(b, a1), view.probs(b, a2)))
            total += w1 * w2 * agree
    return total


def _matrices(view: _Law, parts: dict[str, FloatArray]) -> dict[str | None, Any]:
    """The whole report (key ``None``) and, with several blocks, each block, as rows."""
    rows = [np.asarray(parts[b.name], dtype=np.float64) for b in view.blocks]
    keys: dict[str | None, Any] = {None: np.concatenate(rows, axis=1)}
    if len(view.blocks) > 1:
        for b, r in zip(view.blocks, rows, strict=True):
            keys[b.name] = r
    return keys


def _collisions(
    view: _Law,
    recs: _Records,
    parts: dict[str, FloatArray],
    where: str,
    other: dict[str, FloatArray] | None = None,
) -> list[tuple[float, str]]:
    """Disjoint pairs ``(i, i + s)`` of a single-record batch (or, with ``other``, holder ``i``
    of each of two batches of that record): identical reports (and blocks) no more often than
    the exact collision probability (binomial tail: the pairs are independent under the law)."""
    comps = _components(recs, 0)
    keys = _matrices(view, parts)
    results = []
    if other is not None:
        theirs = _matrices(view, other)
        for name, matrix in keys.items():
            block = None if name is None else next(b for b in view.blocks if b.name == name)
            p = _collision_probability(view, block, comps)
            m = min(matrix.shape[0], theirs[name].shape[0])
            k = int(np.all(matrix[:m] == theirs[name][:m], axis=1).sum())
            pv = 1.0 if p >= 1.0 else float(stats.binom.sf(k - 1, m, p))
            what = "reports" if name is None else f"block {name!r}"
            results.append((pv, f"{where}: {what} agree {k}/{m} times, expected {p * m:.2f}"))
        return results
    n = next(iter(keys.values())).shape[0]
    for name, matrix in keys.items():
        block = None if name is None else next(b for b in view.blocks if b.name == name)
        p = _collision_probability(view, block, comps)
        for s in STRIDES:
            if 2 * s > n:
                break
            first = np.arange(n - s)
            first = first[(first % (2 * s)) < s]  # disjoint pairs
            same = np.all(matrix[first] == matrix[first + s], axis=1)
            k, m = int(same.sum()), int(first.size)
            pv = 1.0 if p >= 1.0 else float(stats.binom.sf(k - 1, m, min(1.0, p)))
            what = "reports" if name is None else f"block {name!r}"
            results.append(
                (
                    pv,
                    f"{where}: {what} of holders (i, i + {s}) agree {k}/{m} times, expected "
                    f"{p * m:.2f}",
                )
            )
    return results


# -- running privatize ---------------------------------------------------------------------------
def _split(
    law: ReportLaw, reports: Any, n: int, widths: list[int]
) -> dict[str, np.ndarray[Any, Any]]:
    """``{block: [n, k]}`` from ``law.disassemble`` or the report's leaves in order."""
    if law.disassemble is not None:
        parts = law.disassemble(reports)
        return {name: np.asarray(v).reshape(n, -1) for name, v in parts.items()}
    leaves = jax.tree_util.tree_leaves(reports)
    flat = np.concatenate([np.asarray(leaf).reshape(n, -1) for leaf in leaves], axis=1)
    if flat.shape[1] != sum(widths):
        raise ValueError(
            f"the report has {flat.shape[1]} numbers per holder but the report law's blocks have "
            f"{sum(widths)} coordinates: give the ReportLaw a disassemble function"
        )
    out = {}
    start = 0
    for block, width in zip(law.blocks, widths, strict=True):
        out[block.name] = flat[:, start : start + width]
        start += width
    return out


def _structure(report: Any) -> tuple[Any, tuple[tuple[str, tuple[int, ...]], ...]]:
    """The report's tree and, per leaf, its dtype and per-holder shape."""
    leaves, tree = jax.tree_util.tree_flatten(report)
    return tree, tuple((str(np.asarray(x).dtype), tuple(np.shape(x)[1:])) for x in leaves)


@attrs.frozen(eq=False)
class _Runner:
    mechanism: Any
    law: ReportLaw
    view: _Law
    key: PRNGKey
    integer: bool
    widths: list[int]
    structures: dict[Any, str] = attrs.field(factory=dict)
    count: list[int] = attrs.field(factory=lambda: [0, 0])  # calls, holders

    def run(
        self, cells: Any, labels: Any, first_holder: int = 0, round_key: int | None = None
    ) -> tuple[_Records, dict[str, FloatArray]]:
        """Privatize the records under a fresh key per call, or (``round_key``) under one key
        shared by the calls that name it, as the chunks of one round are."""
        n = len(cells)
        dtype = np.int32 if self.integer else np.float32
        index = self.count[0] if round_key is None else 2**31 + round_key
        report = self.mechanism.privatize(
            jax.random.fold_in(self.key, index),
            jnp.asarray(np.asarray(cells, dtype=np.int32)),
            jnp.asarray(np.asarray(labels, dtype=dtype)),
            self.view.n_cells,
            first_holder=first_holder,
        )
        self.count[0] += 1
        self.count[1] += n
        structure = _structure(report)
        self.structures.setdefault(
            structure, f"{n} holder(s), first record ({int(cells[0])}, {labels[0]!r})"
        )
        recs = _records(self.view, cells, np.asarray(labels, dtype=dtype))
        raw = _split(self.law, report, n, self.widths)
        parts = {b.name: np.asarray(raw[b.name], dtype=np.float64) for b in self.view.blocks}
        return recs, parts


def _real_labels(lo: float, hi: float) -> list[float]:
    """The bounds, the centre, and labels beyond the bounds (outliers up to float32's range)."""
    w = hi - lo
    beyond = [hi + w, hi + 10.0 * w, hi + 1e6 * w, lo - w, lo - 10.0 * w, 3e38, -3e38]
    return [lo, hi, (lo + hi) / 2.0, *beyond]


def _spread(values: list[float], keep: int, rng: np.random.Generator) -> list[float]:
    """``values`` when there are at most ``keep``, else both ends, the middle and random ones."""
    if len(values) <= keep:
        return values
    picked = {0, 1, len(values) // 2, len(values) - 2, len(values) - 1}
    picked |= set(rng.choice(len(values), keep - len(picked), replace=False).tolist())
    return [values[i] for i in sorted(picked)]


def _select(stat: dict[str, FloatArray], mask: Any) -> dict[str, FloatArray]:
    return {k: v[mask] for k, v in stat.items()}


@attrs.frozen(eq=False)
class _Battery:
    """The tests of one :func:`check_sampler` call, accumulating ``(p-value, where)``."""

    view: _Law
    runner: _Runner
    rng: np.random.Generator
    results: list[tuple[float, str, str]] = attrs.field(factory=list)

    def add(self, family: str, items: Sequence[tuple[float, str]]) -> None:
        """Record test results ``(p-value, where)`` of one family."""
        self.results.extend((p, family, where) for p, where in items)

    def run(
        self, where: str, cells: Any, labels: Any, first: int = 0, round_key: int | None = None
    ) -> Any:
        """``privatize`` on these records, or ``None`` (a failure is recorded as a rejection:
        the mechanism must run for every record and every 32-bit holder index)."""
        try:
            return self.runner.run(cells, labels, first, round_key)
        except (ValueError, TypeError, OverflowError) as err:
            self.add(
                "structure", [(0.0, f"{where}: privatize failed or its report misfits: {err}")]
            )
            return None

    def stats(self, recs: _Records, parts: dict[str, FloatArray], where: str) -> Any:
        out, impossible = _statistics(self.view, recs, parts)
        if impossible is not None:
            self.add("support", [(0.0, f"{where}: {impossible}")])
        return out

    def references(self, recs: _Records, repeats: int) -> tuple[Any, Any]:
        """Statistics of two independent reference samples (fit, test) of the same records."""
        fit = _statistics(self.view, *_reference(self.view, recs, self.rng, repeats))[0]
        test = _statistics(self.view, *_reference(self.view, recs, self.rng, repeats))[0]
        return fit, test

    def record(self, cell: int, label: Any, size: int, alone: bool) -> None:
        where = f"record ({cell}, {label!r})"
        got = self.run(where, [cell] * size, [label] * size)
        if got is None:
            return
        recs, parts = got
        self.add("marginals", _marginals(self.view, recs, parts, where))
        ref = _Reference.of(*self.references(recs, REFERENCE_FACTOR))
        self.add("joint", _compare(self.stats(recs, parts, where), ref, where))
        if alone:
            self.run(f"{where}, one holder", [cell], [label])

    def sweep(
        self, family: str, where: str, cells: Any, labels: Any, groups: list[tuple[str, Any]]
    ) -> None:
        """Mixed records; each group (a mask or slice) against the same records' reference."""
        got = self.run(where, cells, labels)
        if got is None:
            return
        recs, parts = got
        mine = self.stats(recs, parts, where)
        fit, test = self.references(recs, REFERENCE_FACTOR)
        for name, index in groups:
            chosen = np.zeros(recs.cells.size, dtype=bool)
            chosen[index] = True
            theirs = np.repeat(chosen, REFERENCE_FACTOR)
            ref = _Reference.of(_select(fit, theirs), _select(test, theirs))
            self.add(family, _compare(_select(mine, chosen), ref, name))

    def holders(self, cell: int, label: Any, n: int) -> None:
        """Large single-record batches at small and large holder indices, and small calls."""
        one = _records(self.view, [cell], [label])
        ref = _Reference.of(*self.references(_repeat(one, n), 1))
        batches: dict[int, dict[str, FloatArray]] = {}
        pooled: list[tuple[np.ndarray[Any, Any], dict[str, FloatArray]]] = []
        name = f"record ({cell}, {label!r})"
        for first in (0, 2**31 - n // 2, 2**31, 2**32 - n):
            where = f"{name}, holders {first}..{first + n - 1}"
            got = self.run(where, [cell] * n, [label] * n, first, round_key=cell)
            if got is None:
                continue
            recs, parts = got
            mine = self.stats(recs, parts, where)
            index = first + np.arange(n, dtype=np.int64)
            pooled.append((index, mine))
            masks = [("first 64", np.arange(n) < 64), ("last 64", np.arange(n) >= n - 64)]
            if first < 2**31 < first + n:
                masks += [("index < 2^31", index < 2**31), ("index >= 2^31", index >= 2**31)]
            for what, mask in masks:
                self.add("holders", _compare(_select(mine, mask), ref, f"{where}, {what}"))
            self.add("collisions", _collisions(self.view, recs, parts, where))
            batches[first] = parts
        if pooled:  # residues of the global index, over every batch
            index = np.concatenate([i for i, _ in pooled])
            every = {k: np.concatenate([m[k] for _, m in pooled]) for k in pooled[0][1]}
            for m in MODULI:
                for r in range(m) if m <= 4 else (0,):
                    mask = index % m == r
                    if int(mask.sum()) >= 10:
                        where = f"{name}, holders with index = {r} mod {m}"
                        self.add("holders", _compare(_select(every, mask), ref, where))
        # holder i against holder 2^31 + i and 2^32 - n + i: randomness read from an index
        # that wrapped (mod 2^31, or through a signed 32-bit integer) repeats far away
        for far in (2**31, 2**32 - n):
            if 0 in batches and far in batches:
                where = f"record ({cell}, {label!r}), holders i and {far} + i"
                self.add(
                    "collisions", _collisions(self.view, one, batches[0], where, other=batches[far])
                )
        collected: list[dict[str, FloatArray]] = []
        for c in range(CALLS):
            got = self.run(
                "small calls",
                [cell] * CALL_SIZE,
                [label] * CALL_SIZE,
                n + c * CALL_SIZE,
                round_key=cell,
            )
            if got is None:
                return
            collected.append(_statistics(self.view, *got)[0])
        for pos in (0, CALL_SIZE - 1):
            group = {k: np.asarray([s[k][pos] for s in collected]) for k in collected[0]}
            where = f"record ({cell}, {label!r}), holder {pos} of each call of {CALL_SIZE}"
            self.add("holders", _compare(group, ref, where))


def check_sampler(
    mechanism: Any,
    n_cells: int,
    *,
    label_bound: Any = None,
    labels: Sequence[Any] | None = None,
    n: int = 20_000,
    key: PRNGKey,
    alpha: float = 1e-6,
) -> SamplerCheck:
    """Test ``mechanism.privatize`` against ``mechanism.report_law`` (module docstring).

    ``label_bound`` (real labels) is the range the labels are swept across and beyond
    (default: the range of the law's ``label_levels``; required otherwise); ``labels``
    overrides the finite label domain. ``n`` sets the sample sizes: ``n`` holders per large
    batch and per sweep, ``max(200, n / 10)`` per record (about ``17 n`` holders in all for a
    real-label law).
    """
    if not isinstance(mechanism, VerifiableMechanism):
        raise TypeError(
            "mechanism must implement the Mechanism protocol and report_law(n_cells), got "
            f"{type(mechanism).__name__}"
        )
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    n = check_int(n, "n", minimum=100)
    alpha = check_real(alpha, "alpha")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    law = mechanism.report_law(n_cells)
    if not isinstance(law, ReportLaw):
        raise TypeError(f"report_law must return a ReportLaw, got {type(law).__name__}")
    seed = np.asarray(jax.random.key_data(key)).astype(np.uint64).ravel().tolist()
    rng = np.random.default_rng([*seed, 0x5A17])
    bound: tuple[float, float] | None = None
    if law.labels is not None:
        domain: list[Any] = list(law.labels if labels is None else labels)
        integer = all(isinstance(v, int | np.integer) for v in domain)
        record_labels = list(domain)
        if integer and -1 in domain:  # undeclared codes stand for the null record
            k = max(int(v) for v in domain) + 1
            record_labels += [k, k + 7, -2, 2**31 - 1, -(2**31)]
    else:
        integer = False
        if label_bound is not None:
            bound = check_bounds(label_bound, "label_bound")
        elif law.label_levels is not None:
            bound = (float(min(law.label_levels)), float(max(law.label_levels)))
        else:
            raise ValueError("label_bound=(lo, hi) is required for a mechanism with real labels")
        record_labels = _real_labels(*bound)
        if law.label_levels is not None:
            levels = sorted(float(v) for v in law.label_levels)
            record_labels += _spread(levels, 8, rng)
            record_labels += _spread([(a + b) / 2.0 for a, b in itertools.pairwise(levels)], 8, rng)
    if any(isinstance(b, FeatureBlock) for b in law.blocks):
        return SamplerCheck(
            rejected=False,
            alpha=alpha,
            n_tests=0,
            p_min=1.0,
            worst="none",
            n=n,
            skipped=("every block (records with features are not sampled here)",),
        )
    view, skipped = _Law.of(law, n_cells)
    if not view.blocks:
        return SamplerCheck(False, alpha, 0, 1.0, "none", n, tuple(skipped))
    t0 = view.components(record_labels[0])[0][1]
    widths = [len(block_inputs(b, 0, t0, n_cells)) for b in law.blocks]
    runner = _Runner(mechanism, law, view, key, integer, widths)
    battery = _Battery(view, runner, rng)
    families = ["structure", "support", "marginals", "joint", "cells", "holders", "collisions"]

    # records: first, second, middle, last and a random cell, times the labels
    named = {0, 1 % n_cells, n_cells // 2, n_cells - 1}
    rest = [c for c in range(n_cells) if c not in named]
    cells = sorted(named | ({int(rng.choice(rest))} if rest else set()))
    for cell in cells:
        for k, label in enumerate(record_labels):
            battery.record(cell, label, max(200, n // 10), alone=k < 2)

    # cells: one group per cell (a sample of cells when there are too many for n)
    tested = list(range(n_cells))
    if n // n_cells < 50:
        tested = sorted(named | set(rng.choice(n_cells, max(1, n // 50), replace=False).tolist()))
    sweep_cells = np.resize(np.asarray(tested), n)
    first_label = record_labels[0]
    battery.sweep(
        "cells",
        "cell sweep",
        sweep_cells.tolist(),
        [first_label] * n,
        [(f"cell sweep, cell {c}", sweep_cells == c) for c in tested],
    )

    # labels: a sweep across and beyond the range in narrow consecutive groups
    if bound is not None:
        families.append("labels")
        lo, hi = bound
        ys = np.linspace(lo - (hi - lo), hi + (hi - lo), n).astype(np.float32)
        groups = [
            (
                f"labels [{ys[a]:.6g}, {ys[min(a + SWEEP_GROUP, n) - 1]:.6g}]",
                slice(a, a + SWEEP_GROUP),
            )
            for a in range(0, n, SWEEP_GROUP)
        ]
        battery.sweep(
            "labels", "label sweep", rng.integers(0, n_cells, n).tolist(), ys.tolist(), groups
        )

    # holders: large single-record batches and many small calls
    middle = record_labels[2] if len(record_labels) > 2 else record_labels[0]
    for cell, label in ((0, first_label), (n_cells // 2, middle)):
        battery.holders(cell, label, n)

    if len(runner.structures) > 1:
        seen = "; ".join(f"{v}: {k[1]}" for k, v in runner.structures.items())
        battery.add(
            "structure",
            [(0.0, f"the report's structure (dtypes, shapes) depends on the records: {seen}")],
        )
    results = [(0.0 if math.isnan(p) else p, family, where) for p, family, where in battery.results]
    if not results:
        return SamplerCheck(False, alpha, 0, 1.0, "none", n, tuple(skipped))
    level = alpha / len(results)
    p_min, _, worst = min(results, key=lambda r: r[0])
    rejections = sorted((r for r in results if r[0] < level), key=lambda r: r[0])
    return SamplerCheck(
        rejected=p_min < level,
        alpha=alpha,
        n_tests=len(results),
        p_min=p_min,
        worst=worst,
        n=n,
        skipped=tuple(skipped),
        families=tuple(families),
        holders=runner.count[1],
        rejections=tuple(
            f"[{family}] {where} (p = {p:.3g})" for p, family, where in rejections[:20]
        ),
        rejected_families=tuple(sorted({family for _, family, _ in rejections})),
    )
