"""``check_sampler``: does ``privatize`` draw from the report law the mechanism declares?

:func:`~ldptree.accounting.verify_ldp` certifies the *declared* law (``report_law``); a mechanism
that hand-writes ``privatize`` can declare one law and sample another (e.g. release the true
one-hot cell while declaring randomized response). This is a goodness-of-fit test of the sampler
against the declaration, per block and per channel input.

For each record ``(cell, label)`` in a small set covering the record space's classes (first and
last cell; every finite label or label level, or the ends and middle of ``label_bound`` for real
labels), ``n`` holders with that record are privatized and their reports split into the blocks'
coordinates (``ReportLaw.disassemble``, or the report's array leaves in order). Under the declared
law, coordinates of one block that receive the same input are i.i.d. draws of the channel at that
input (coordinates are independent given the record, and holders are independent), so their pooled
output counts are multinomial with the channel's exact probabilities. Each ``(record, block,
input)`` group gets Pearson's chi-square test (outputs with expected count below
``MIN_EXPECTED`` pooled into one bin; an output the channel cannot produce rejects outright).
The check rejects when the smallest p-value is below ``alpha / m`` for ``m`` tests (Bonferroni):
the probability of a false rejection of a sampler that draws exactly the declared law is at most
``alpha`` (up to the chi-square approximation of the multinomial tail). A sampler that deviates
from its declared law only by a tiny total variation ``tau`` (e.g. float32 noise, described by a
channel's ``Sampling``) is not rejected unless ``n`` is of order ``1 / tau^2``.

Only channels with a finite output set (:class:`~ldptree.accounting.FiniteChannel`) are tested;
other blocks, and mechanisms with feature blocks, are listed in ``skipped``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from ldptree._typing import PRNGKey
from ldptree._validation import check_bounds, check_int, check_real
from ldptree.accounting._channels import FiniteChannel
from ldptree.accounting._law import (
    Block,
    CellBlock,
    FeatureBlock,
    IndexBlock,
    LabelBlock,
    ReportLaw,
    VerifiableMechanism,
)

__all__ = ["SamplerCheck", "check_sampler"]

#: Outputs with a smaller expected count are pooled into one bin (chi-square approximation).
MIN_EXPECTED = 20.0


@attrs.frozen(eq=False)
class SamplerCheck:
    """Result of :func:`check_sampler`.

    ``rejected`` when ``p_min < alpha / n_tests``; ``worst`` describes the test attaining
    ``p_min``; ``skipped`` lists blocks that could not be tested and why.
    """

    rejected: bool
    alpha: float
    n_tests: int
    p_min: float
    worst: str
    n: int
    skipped: tuple[str, ...] = ()

    def __str__(self) -> str:
        verdict = "REJECTED" if self.rejected else "not rejected"
        skipped = f"; not tested: {', '.join(self.skipped)}" if self.skipped else ""
        return (
            f"privatize vs report_law {verdict}: smallest p-value {self.p_min:.3g} over "
            f"{self.n_tests} tests (Bonferroni level {self.alpha:g}, {self.n} reports per record); "
            f"worst: {self.worst}{skipped}"
        )


def _block_inputs(block: Block, cell: int, t: Any, n_cells: int) -> list[Any]:
    """Every coordinate's input for one record, cell-major for cell blocks."""
    if isinstance(block, CellBlock):
        on, off = list(block.on(t)), list(block.off(t))
        return [v for c in range(n_cells) for v in (on if c == cell else off)]
    if isinstance(block, LabelBlock):
        return list(block.inputs(t))
    if isinstance(block, IndexBlock):
        return [block.index(cell, t)]
    assert not isinstance(block, FeatureBlock)
    return list(block.inputs(cell, t))


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


def _index_test(
    block: IndexBlock, values: np.ndarray[Any, Any], index: int, n_cells: int
) -> tuple[float, str]:
    """Chi-square of reported indices against the symmetric k-ary law around ``index``."""
    k = n_cells * block.per_cell
    sample = np.asarray(values, dtype=np.int64).ravel()
    where = f"block {block.name!r}, index {index}"
    if sample.min() < 0 or sample.max() >= k:
        return 0.0, f"{where}: a reported index is outside 0..{k - 1}"
    observed = np.bincount(sample, minlength=k).astype(np.float64)
    probs = np.full(k, math.exp(block.log_other))
    probs[index] = math.exp(block.log_keep)
    p = _chi_square(observed, probs * sample.size)
    return (
        p,
        f"{where}: kept {int(observed[index])} times, expected {probs[index] * sample.size:.1f}",
    )


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
    """Goodness-of-fit test of ``mechanism.privatize`` against ``mechanism.report_law`` (module
    docstring). ``label_bound`` is needed for real labels (unless the law declares levels);
    ``labels`` overrides the finite label domain."""
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
    if law.labels is not None:
        record_labels: list[Any] = list(law.labels if labels is None else labels)
        # class codes are integers; a finite domain of real representatives stays real
        integer = all(isinstance(v, int | np.integer) for v in record_labels)
    elif law.label_levels is not None:
        record_labels, integer = [float(v) for v in law.label_levels], False
    else:
        if label_bound is None:
            raise ValueError("label_bound=(lo, hi) is required for a mechanism with real labels")
        lo, hi = check_bounds(label_bound, "label_bound")
        record_labels, integer = [lo, hi, (lo + hi) / 2.0], False
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
    cells = sorted({0, n_cells - 1})
    skipped = sorted(
        {
            f"{b.name} (not a finite channel)"
            for b in law.blocks
            if not isinstance(b, IndexBlock) and not isinstance(b.channel, FiniteChannel)
        }
    )
    results: list[tuple[float, str]] = []
    index = 0
    for cell in cells:
        for label in record_labels:
            t = law.label_coordinate(label)
            inputs = {b.name: _block_inputs(b, cell, t, n_cells) for b in law.blocks}
            widths = [len(inputs[b.name]) for b in law.blocks]
            reports = mechanism.privatize(
                jax.random.fold_in(key, index),
                jnp.asarray(np.full(n, cell, dtype=np.int32)),
                jnp.asarray(np.full(n, label, dtype=np.int32 if integer else np.float32)),
                n_cells,
            )
            index += 1
            parts = _split(law, reports, n, widths)
            for block in law.blocks:
                if isinstance(block, IndexBlock):
                    results.append(
                        _index_test(block, parts[block.name], inputs[block.name][0], n_cells)
                    )
                    continue
                channel = block.channel
                if not isinstance(channel, FiniteChannel):
                    continue
                values = np.asarray(parts[block.name], dtype=np.float64)
                outputs = np.asarray([float(o) for o in channel.outputs])
                order = np.argsort(outputs)
                sorted_out = outputs[order]
                groups: dict[Any, list[int]] = {}
                for k, a in enumerate(inputs[block.name]):
                    groups.setdefault(a, []).append(k)
                for a, columns in groups.items():
                    sample = values[:, columns].ravel()
                    pos = np.clip(np.searchsorted(sorted_out, sample), 0, sorted_out.size - 1)
                    known = sorted_out[pos] == sample
                    where = f"record ({cell}, {label!r}), block {block.name!r}, input {a!r}"
                    if not np.all(known):
                        bad = sample[~known][0]
                        results.append((0.0, f"{where}: output {bad!r} is not in the output set"))
                        continue
                    observed = np.bincount(order[pos], minlength=outputs.size).astype(np.float64)
                    probs = np.exp(channel.table([a])[0])
                    p = _chi_square(observed, probs * sample.size)
                    top = int(np.argmax(np.abs(observed - probs * sample.size)))
                    results.append(
                        (
                            p,
                            f"{where}: output {channel.outputs[top]!r} seen "
                            f"{int(observed[top])} times, expected {probs[top] * sample.size:.1f}",
                        )
                    )
    if not results:
        return SamplerCheck(False, alpha, 0, 1.0, "none", n, tuple(skipped))
    p_min, worst = min(results, key=lambda r: r[0])
    return SamplerCheck(
        rejected=p_min < alpha / len(results),
        alpha=alpha,
        n_tests=len(results),
        p_min=p_min if not math.isnan(p_min) else 0.0,
        worst=worst,
        n=n,
        skipped=tuple(skipped),
    )
