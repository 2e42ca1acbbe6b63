"""Laplace on the one-hot cell vector and on ``V = Y U`` for a real label (PHIST, spec §6.1, §3.2).

With label bound ``[lo, hi]`` (centre ``c``, half-range ``M``), holder ``i`` in cell ``j_i`` with
label ``y_i`` encodes ``U_i = e_{j_i} in {0, 1}^L`` and ``V_i = t_i U_i`` with the *normalised*
label ``t_i = (clip(y_i, lo, hi) - c) / M in [-1, 1]``, and releases ``U~_i = U_i + b xi_i``,
``V~_i = V_i + b zeta_i`` with i.i.d. ``Laplace(1)`` coordinates and ``b = 4 / eps``. In label units
this is ``Z_i = (y_i - c) U_i + Lap(4 M / eps)^L``, the spec's ``b_Z = 4 M / eps`` (§6.1 [R]).

Privacy: ``||U - U'||_1 <= 2`` and ``||V - V'||_1 <= |t| + |t'| <= 2`` (different cells) or
``|t - t'| <= 2`` (same cell), so each release costs ``2 / b = eps / 2``: ``eps`` in total.

As implemented: every coordinate is a grid-Laplace code ``clamp(floor(mu + beta xi + W), -K, K)``
at location ``mu`` in grid units (``mu in {0, 1 / Delta}`` for ``U``; ``mu = t / Delta`` in the
record's cell and 0 elsewhere for ``V``), with the same step ``Delta``, clamp ``K`` and float32
sampler as :class:`~ldptree.mechanisms.LaplaceCellClassMechanism`; :meth:`report_law` declares
it for :func:`~ldptree.accounting.verify_ldp`, with the float32 location of ``V`` as a caveat.

Debiasing: ``c^_j = Delta sum_i code(U~_ij)`` and ``s^_j = M Delta sum_i code(V~_ij) + c c^_j``
are unbiased for the count and the label sum ``sum_i clip(y_i) 1{j_i = j}`` (symmetric noise,
unbiased stochastic rounding).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import MIN_ROWS, bucket
from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_int, to_epsilon, to_label_bound
from ldptree.accounting._channels import grid_laplace_channel, grid_laplace_log_probs
from ldptree.accounting._law import AffineLabelMap, CellBlock, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._laplace_cell_class import (
    CLAMP_SCALES,
    LaplaceCellClassMechanism,
    gamma_code_sums,
)
from ldptree.mechanisms._random import holder_words, key_words, laplace, unit_halfopen
from ldptree.mechanisms._records import check_records
from ldptree.mechanisms._sampled_laplace import Float32LaplaceSampling
from ldptree.protocols import CellEstimates


class LaplaceCellLabelReport(NamedTuple):
    """Reports of ``n`` holders as grid codes: ``cell`` and ``label``, both ``int32[n, L]``."""

    cell: jax.Array
    label: jax.Array


@attrs.frozen
class LaplaceCellLabelMechanism:
    """Laplace on ``U`` and on ``V = t U`` for a real label ``t`` normalised to ``[-1, 1]``.

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``; ``eps / 2`` on ``U`` and ``eps / 2`` on ``V``.
    label_bound:
        ``M`` for ``[-M, M]`` or ``(lo, hi)``; labels are clipped into it. Must not come from
        private labels.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    label_bound: tuple[float, float] = attrs.field(converter=to_label_bound)

    # -- constants: the grid of the binary cell/class mechanism at the same budget ---------------
    @property
    def _grid(self) -> LaplaceCellClassMechanism:
        return LaplaceCellClassMechanism(epsilon=self.epsilon, n_classes=2)

    @property
    def noise_scale(self) -> float:
        """``b = 4 / eps`` in normalised units (``4 M / eps`` in label units)."""
        return self._grid.noise_scale

    @property
    def step(self) -> float:
        return self._grid.step

    @property
    def per_unit(self) -> int:
        return self._grid.per_unit

    @property
    def beta(self) -> float:
        return self._grid.beta

    @property
    def code_limit(self) -> int:
        """``K`` with ``K Delta >= 1 + 64 b`` (``CLAMP_SCALES = 64``)."""
        limit = self._grid.code_limit
        assert limit * self.step >= 1.0 + CLAMP_SCALES * self.noise_scale
        return limit

    @property
    def label_center(self) -> float:
        return (self.label_bound[0] + self.label_bound[1]) / 2.0

    @property
    def label_half_range(self) -> float:
        """``M = (hi - lo) / 2``."""
        return (self.label_bound[1] - self.label_bound[0]) / 2.0

    @property
    def spend(self) -> PrivacySpend:
        half = self.epsilon / 2.0
        return PrivacySpend(
            epsilon=self.epsilon,
            parts=(("cell one-hot (Laplace)", half), ("label x cell one-hot (Laplace)", half)),
        )

    @property
    def max_summary_rows(self) -> int:
        """Largest report batch whose code sums fit exactly in int32 (same grid, same limit)."""
        return self._grid.max_summary_rows

    def label_location(self, label: float) -> float:
        """Declared location ``(clip(y) - c) / (M Delta)`` of the label code (float64)."""
        lo, hi = self.label_bound
        clipped = min(max(float(label), lo), hi)
        return (clipped - self.label_center) / self.label_half_range * self.per_unit

    def _location_factor(self) -> float:
        return self.per_unit / self.label_half_range

    def sampler_location(self, mu: float) -> float:
        """The float32 location the kernel computes for a label with declared location ``mu``."""
        lo, hi = (np.float32(v) for v in self.label_bound)
        y = np.float32(self.label_center + float(mu) / self._location_factor())
        shifted = np.float32(np.clip(y, lo, hi) - np.float32(self.label_center))
        return float(np.float32(shifted * np.float32(self._location_factor())))

    # -- holder side ----------------------------------------------------------------------------
    def _kernel_args(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int, first_holder: int
    ) -> tuple[int, tuple[Any, ...]]:
        cells, labels = check_records(cells, labels, n_cells, integer_labels=False)
        n = int(cells.shape[0])
        pad = bucket(n, MIN_ROWS) - n
        lo, hi = self.label_bound
        y = jnp.asarray(labels, jnp.float32)
        y = jnp.where(jnp.isnan(y), jnp.float32(self.label_center), y)  # NaN: the centre
        shifted = jnp.clip(y, jnp.float32(lo), jnp.float32(hi)) - jnp.float32(self.label_center)
        loc = shifted * jnp.float32(self._location_factor())
        args = (
            bucket(int(n_cells)),
            key_words(key),
            jnp.pad(cells.astype(jnp.int32), (0, pad)),
            jnp.pad(loc, (0, pad)),
            jnp.uint32(first_holder),
            jnp.int32(self.per_unit),
            jnp.float32(self.beta),
            jnp.int32(self.code_limit),
        )
        return n, args

    def privatize(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> LaplaceCellLabelReport:
        """Reports of holders ``first_holder, ...``; noise depends only on ``key`` and ``h``."""
        n, args = self._kernel_args(key, cells, labels, n_cells, first_holder)
        padded = _privatize(*args)
        return LaplaceCellLabelReport(padded.cell[:n, :n_cells], padded.label[:n, :n_cells])

    def privatize_summarize(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> dict[str, jax.Array]:
        """``summarize(privatize(...))`` in one jitted kernel; at most ``max_summary_rows``."""
        n, args = self._kernel_args(key, cells, labels, n_cells, first_holder)
        if n > self.max_summary_rows:
            raise ValueError(
                f"{n} holders exceed max_summary_rows={self.max_summary_rows}; use smaller chunks"
            )
        sums = _privatize_summarize(*args, jnp.int32(n))
        return {"cell": sums["cell"][:n_cells], "label": sums["label"][:n_cells]}

    # -- curator side ---------------------------------------------------------------------------
    def summarize(self, reports: LaplaceCellLabelReport, n_cells: int) -> dict[str, jax.Array]:
        """Exact integer code sums ``cell[L]`` and ``label[L]`` of a batch of reports."""
        n = int(reports.cell.shape[0])
        if n > self.max_summary_rows:
            raise ValueError(
                f"a batch of {n} reports exceeds max_summary_rows={self.max_summary_rows}"
            )
        if reports.cell.shape != (n, n_cells) or reports.label.shape != (n, n_cells):
            raise ValueError(
                f"reports must have shape ({n}, {n_cells}), got {reports.cell.shape} and "
                f"{reports.label.shape}"
            )
        sums: dict[str, jax.Array] = _column_sums(
            jnp.asarray(reports.cell), jnp.asarray(reports.label)
        )
        return sums

    def simulate_summary(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int
    ) -> dict[str, FloatArray]:
        """Simulation only (spec §3.5): the summed codes of all holders drawn in aggregate.

        ``sum_i t_i`` per cell plus ``beta (G_1 - G_2)``, ``G ~ Gamma(n, 1)``, as
        :meth:`LaplaceCellClassMechanism.simulate_summary`: exact in law for the continuous
        release, ``O(L)`` draws, without the grid rounding (variance at most ``Delta^2 / 4`` per
        report next to ``2 beta^2 Delta^2``) and the sampler's truncation; same mean. The input is
        the whole private sample, so this is never the protocol.
        """
        cells_j, labels_j = check_records(cells, labels, n_cells, integer_labels=False)
        cell_idx = np.asarray(cells_j)
        n = int(cell_idx.shape[0])
        if n == 0:
            raise ValueError("cells must hold at least one record")
        lo, hi = self.label_bound
        t = (np.clip(np.asarray(labels_j, np.float64), lo, hi) - self.label_center) / (
            self.label_half_range
        )
        counts = np.bincount(cell_idx, minlength=n_cells).astype(np.float64)
        label_sums = np.bincount(cell_idx, weights=t, minlength=n_cells).astype(np.float64)
        k_cell, k_label = jax.random.split(key)
        return {
            "cell": gamma_code_sums(k_cell, counts, n, self.per_unit, self.beta),
            "label": gamma_code_sums(k_label, label_sums, n, self.per_unit, self.beta),
        }

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """``c^ = Delta sum code(U~)``, ``s^ = M Delta sum code(V~) + c c^`` (module docstring)."""
        count = self.step * np.asarray(stats["cell"], dtype=np.float64)
        centred = self.label_half_range * self.step * np.asarray(stats["label"], np.float64)
        return CellEstimates(count=count, label_sum=centred + self.label_center * count, n=int(n))

    # -- likelihood and verification --------------------------------------------------------------
    def log_prob(
        self, report: LaplaceCellLabelReport, cell: int, label: float, n_cells: int
    ) -> float:
        """``log P(report | cell, label)`` under the declared law (independent coordinates)."""
        cell_codes = np.asarray(report.cell, dtype=np.int64)
        label_codes = np.asarray(report.label, dtype=np.int64)
        if cell_codes.shape != (n_cells,) or label_codes.shape != (n_cells,):
            raise ValueError(f"report must have shapes ({n_cells},), got {cell_codes.shape}")
        k_lim = self.code_limit
        if max(np.abs(cell_codes).max(), np.abs(label_codes).max()) > k_lim:
            return -math.inf

        def table(mu: float) -> Any:
            return grid_laplace_log_probs(self.beta, k_lim, mu)

        zero = table(0.0)
        own = int(cell)
        total = float(zero[cell_codes + k_lim].sum() + zero[label_codes + k_lim].sum())
        for codes, mu in ((cell_codes, float(self.per_unit)), (label_codes, None)):
            mu = self.label_location(label) if mu is None else mu
            total += float(table(mu)[codes[own] + k_lim] - zero[codes[own] + k_lim])
        return total

    def report_law(self, n_cells: int) -> ReportLaw:
        """Two cell blocks of grid-Laplace codes: ``"cell"`` at ``1 / Delta`` in the record's cell
        and ``"label"`` at ``t = label_location(y)`` there (0 elsewhere); ``label_map`` is
        :meth:`label_location` (monotone, the inputs are affine in it)."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        per_unit = float(self.per_unit)

        def sampling(locate: Any, error: float) -> Float32LaplaceSampling:
            return Float32LaplaceSampling(
                beta=self.beta,
                beta_used=float(np.float32(self.beta)),
                location_error=error,
                limit=self.code_limit,
                locate=locate,
            )

        lo, hi = self.label_bound
        reach = max(abs(lo), abs(hi)) + abs(self.label_center) + self.label_half_range
        error = 8.0 * 2.0**-24 * reach * self._location_factor() + per_unit * 2.0**-22
        cell = grid_laplace_channel(self.beta, self.code_limit, sampling=sampling(float, 0.0))
        label = grid_laplace_channel(
            self.beta, self.code_limit, sampling=sampling(self.sampler_location, error)
        )

        def assemble(outputs: dict[str, list[Any]]) -> LaplaceCellLabelReport:
            return LaplaceCellLabelReport(
                cell=jnp.asarray(np.asarray(outputs["cell"], dtype=np.int32)),
                label=jnp.asarray(np.asarray(outputs["label"], dtype=np.int32)),
            )

        return ReportLaw(
            blocks=(
                CellBlock("cell", cell, on=lambda t: (per_unit,), off=lambda t: (0.0,)),
                CellBlock("label", label, on=lambda t: (t,), off=lambda t: (0.0,)),
            ),
            label_map=AffineLabelMap(
                *self.label_bound, self.label_center, per_unit / self.label_half_range
            ),
            assemble=assemble,
        )


def _report_kernel(
    n_cells: int,
    key_data: jax.Array,
    cells: jax.Array,
    loc: jax.Array,
    first_holder: jax.Array,
    per_unit: jax.Array,
    beta: jax.Array,
    limit: jax.Array,
) -> LaplaceCellLabelReport:
    # Two words per coordinate (Laplace variate, rounding uniform), cell-major: [U_j, V_j].
    n = cells.shape[0]
    words = holder_words(key_data, first_holder, n, 4 * n_cells).reshape(n, n_cells, 2, 2)
    own = jnp.arange(n_cells)[None, :] == cells[:, None]
    scaled = beta * laplace(words[..., 0])
    rounding = unit_halfopen(words[..., 1])
    # U: integer locations, floor(v + s) = v + floor(s); V: fl(fl(mu + beta xi) + W) as sampled
    u_noise = jnp.floor(scaled[:, :, 0] + rounding[:, :, 0]).astype(jnp.int32)
    u_code = own.astype(jnp.int32) * per_unit + u_noise
    v_loc = jnp.where(own, loc[:, None], jnp.float32(0.0))
    v_code = jnp.floor((v_loc + scaled[:, :, 1]) + rounding[:, :, 1]).astype(jnp.int32)
    return LaplaceCellLabelReport(jnp.clip(u_code, -limit, limit), jnp.clip(v_code, -limit, limit))


@partial(jax.jit, static_argnums=(0,))
def _privatize(*args: Any) -> LaplaceCellLabelReport:
    return _report_kernel(*args)


@partial(jax.jit, static_argnums=(0,))
def _privatize_summarize(*args: Any) -> dict[str, jax.Array]:
    *kernel_args, n_valid = args
    reports = _report_kernel(*kernel_args)
    valid = (jnp.arange(reports.cell.shape[0]) < n_valid)[:, None]  # padding reports nothing
    sums: dict[str, jax.Array] = _column_sums(
        jnp.where(valid, reports.cell, 0), jnp.where(valid, reports.label, 0)
    )
    return sums


@jax.jit
def _column_sums(cell: jax.Array, label: jax.Array) -> dict[str, jax.Array]:
    return {
        "cell": cell.astype(jnp.int32).sum(axis=0, dtype=jnp.int32),
        "label": label.astype(jnp.int32).sum(axis=0, dtype=jnp.int32),
    }
