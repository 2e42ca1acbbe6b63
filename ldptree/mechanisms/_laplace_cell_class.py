"""Laplace on the one-hot cell vector and on the cell-by-class vector (LPCT, spec §3.3, §1.3).

Holder ``i`` in cell ``j_i`` with class code ``y_i`` encodes its record as

* ``U_i = e_{j_i} in {0, 1}^L`` (the cell one-hot), and
* binary (``K = 2``, the paper's form): ``V_i = 1{y_i = 1} U_i in {0, 1}^L``, i.e. ``V = Y U``;
* multi-class (``K >= 3``, ours, spec §1.3 [R]): ``V_i = e_{j_i} e_{y_i}^T in {0, 1}^{L x K}``;

and releases ``U~_i = U_i + b xi_i`` and ``V~_i = V_i + b zeta_i`` with i.i.d. ``Laplace(1)``
coordinates and ``b = 4 / eps`` (LPCT paper Prop. 2; the mechanism of [BB19] and PHIST).

Privacy. Two records give one-hot ``U`` that differ in at most two coordinates, so
``||U - U'||_1 <= 2`` and the Laplace ratio of ``U~`` is at most ``e^{2 / b} = e^{eps/2}``; ``V``
has at most one non-zero entry (equal to 1) in both forms, so ``||V - V'||_1 <= 2`` and ``V~``
also costs ``eps/2``. The two releases are independent: ``eps`` in total. A class code outside
``0..K-1`` (a label the curator did not declare) is encoded as the *null record*
``U = 0, V = 0``: the holder still sends a full report, the sensitivities stay ``<= 2`` on the
extended record space, and the curator cannot tell it from a genuine record beyond what the
``eps``-LDP report allows.

As implemented (what the accountant certifies, :meth:`report_law`): every coordinate is a
grid-Laplace code, ``clamp(v / Delta + floor(beta xi + W), -K, K)`` for the encoded value
``v in {0, 1}``, with ``Delta = min(1, 2^(floor(log2 b) - 4))`` a power of two (so ``v / Delta`` is
an integer and ``b / 32 < Delta <= b / 16`` unless capped), ``beta = b / Delta``, stochastic
rounding ``W``, and ``K Delta >= 1 + 64 b``. Rounding and clamping are post-processing of the
Laplace release. ``xi`` and ``W`` come from the holder's own words
(:func:`~ldptree.mechanisms._random.holder_words`) through the same float32 sampler as the LPDT
label (:func:`~ldptree.mechanisms._random.laplace`, bounded support ``|xi| <= 16.6``), whose
deviation from the declared law the accountant bounds
(:class:`~ldptree.mechanisms._sampled_laplace.Float32LaplaceSampling`). Reports are ``int32``
codes and every curator sum is an exact integer, identical in any chunking or order.

Debiasing (spec §3.3): the sampler's noise is symmetric and never reaches the clamp, so
``c^_j = Delta sum_i code(U~_ij)`` and ``s^_j = Delta sum_i code(V~_ij)`` are unbiased for the cell
count and the class-1 count (binary, ``float[L]``) or the per-class counts (``float[L, K]``). (The
*declared* law's clamp moves the mean by less than ``beta e^{-64}``.)

Simulation (spec §3.5, labelled as such): :meth:`simulate_summary` draws the per-coordinate sums of
``n`` reports directly, ``true sum + b (G_1 - G_2)`` with ``G ~ Gamma(n, 1)``, which is exact in
law for the *continuous* Laplace release (a sum of ``n`` Laplace variables is a difference of two
Gamma variables), in ``O(L K)`` instead of ``O(n L K)``. It omits the grid rounding (variance at
most ``Delta^2 / 4 <= b^2 / 1024`` per report, next to ``2 b^2``) and the float32 sampler's
truncation, and has the same mean as the per-holder path.
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
from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._channels import grid_laplace_channel, grid_laplace_log_probs
from ldptree.accounting._law import CellBlock, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._random import holder_words, key_words, laplace, unit_halfopen
from ldptree.mechanisms._records import check_first_holder, check_records
from ldptree.mechanisms._sampled_laplace import Float32LaplaceSampling
from ldptree.protocols import CellEstimates

#: Clamp of the released codes, in noise scales beyond the encoded values (as the LPDT label).
CLAMP_SCALES = 64.0
_INT32_LIMIT = 2**31 - 1
#: The label the report law uses for "any label outside 0..K-1" (released as the null record).
NULL_LABEL = -1


class LaplaceCellClassReport(NamedTuple):
    """Reports of ``n`` holders as grid codes (value = ``step * code``): ``cell`` ``int32[n, L]``
    and ``label`` ``int32[n, L]`` (binary) or ``int32[n, L, K]`` (multi-class)."""

    cell: jax.Array
    label: jax.Array


def _to_n_classes(value: Any) -> int:
    return check_int(value, "n_classes", minimum=2)


def gamma_code_sums(
    key: PRNGKey, truth: FloatArray, n: int, per_unit: float, beta: float
) -> FloatArray:
    """Simulation only: the code sums of ``n`` grid-Laplace reports per coordinate, in law.

    ``truth`` holds the summed locations in label units; a sum of ``n`` Laplace(``beta``) codes
    is ``beta (G_1 - G_2)`` with ``G ~ Gamma(n, 1)`` (module docstring: exact for the continuous
    release, without the grid rounding and the sampler's truncation).
    """
    # one bucketed draw, cut to size, so jit compiles the sampler once per bucket
    size = bucket(2 * truth.size, 64)
    flat = np.asarray(jax.random.gamma(key, float(n), (size,)), dtype=np.float64)
    gammas = flat[: 2 * truth.size].reshape(2, *truth.shape)
    out: FloatArray = truth * per_unit + (gammas[0] - gammas[1]) * beta
    return out


@attrs.frozen
class LaplaceCellClassMechanism:
    """Laplace on the cell one-hot ``U`` and on ``V = onehot(y) (x) U`` (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``; ``eps / 2`` on ``U`` and ``eps / 2`` on ``V``.
    n_classes:
        ``K >= 2``. Labels are class codes ``0..K-1``; other codes are released as the null
        record. ``K = 2`` uses the paper's binary form ``V = Y U``.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    n_classes: int = attrs.field(default=2, converter=_to_n_classes)

    # -- constants ------------------------------------------------------------------------------
    @property
    def noise_scale(self) -> float:
        """``b = 4 / eps``: L1 sensitivity 2 at budget ``eps / 2`` for each of ``U``, ``V``."""
        return 4.0 / self.epsilon

    @property
    def step(self) -> float:
        """Grid step ``Delta = min(1, 2^(floor(log2 b) - 4))``: 0 and 1 are grid points."""
        return 2.0 ** min(0, math.floor(math.log2(self.noise_scale)) - 4)

    @property
    def per_unit(self) -> int:
        """``1 / Delta``: the code of an encoded 1 before noise."""
        return round(1.0 / self.step)

    @property
    def beta(self) -> float:
        """Noise scale in grid units, ``b / Delta``."""
        return self.noise_scale / self.step

    @property
    def code_limit(self) -> int:
        """``K``: released codes lie in ``[-K, K]``, ``K Delta >= 1 + 64 b``."""
        return math.ceil((1.0 + CLAMP_SCALES * self.noise_scale) / self.step)

    @property
    def label_width(self) -> int:
        """Label coordinates per cell: 1 (binary form) or ``K``."""
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def spend(self) -> PrivacySpend:
        half = self.epsilon / 2.0
        return PrivacySpend(
            epsilon=self.epsilon,
            parts=(("cell one-hot (Laplace)", half), ("cell x class one-hot (Laplace)", half)),
        )

    @property
    def max_summary_rows(self) -> int:
        """Largest report batch whose code sums fit exactly in int32."""
        return _INT32_LIMIT // self.code_limit

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: ``L (1 + K)`` (``2 L`` when binary)."""
        return n_cells * (1 + self.label_width)

    # -- encoding ---------------------------------------------------------------------------------
    def encode(self, cell: int, label: int, n_cells: int) -> tuple[FloatArray, FloatArray]:
        """The record's noiseless release ``(U float[L], V float[L] or float[L, K])``."""
        u = np.zeros(n_cells)
        v = np.zeros((n_cells, self.label_width))
        if 0 <= int(label) < self.n_classes:
            u[int(cell)] = 1.0
            if self.label_width > 1:
                v[int(cell), int(label)] = 1.0
            elif int(label) == 1:
                v[int(cell), 0] = 1.0
        return u, (v[:, 0] if self.label_width == 1 else v)

    # -- holder side ----------------------------------------------------------------------------
    def privatize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
    ) -> LaplaceCellClassReport:
        """Reports of holders ``first_holder, first_holder + 1, ...`` (``int32[n]`` cells and class
        codes); holder ``h``'s randomness depends only on ``key``, ``h`` and the bucket of ``L``.
        """
        n, args = self._kernel_args(key, cells, labels, n_cells, first_holder)
        padded = _privatize(*args)
        label = padded.label[:n, :n_cells]
        return LaplaceCellClassReport(padded.cell[:n, :n_cells], label)

    def privatize_summarize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
    ) -> dict[str, jax.Array]:
        """``summarize(privatize(...))`` in one jitted kernel (bitwise equal; the reports never
        leave the kernel). At most ``max_summary_rows`` holders per call."""
        n, args = self._kernel_args(key, cells, labels, n_cells, first_holder)
        if n > self.max_summary_rows:
            raise ValueError(
                f"{n} holders exceed max_summary_rows={self.max_summary_rows}; use smaller chunks"
            )
        sums = _privatize_summarize(*args, jnp.int32(n))
        return {"cell": sums["cell"][:n_cells], "label": sums["label"][:n_cells]}

    def _kernel_args(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int, first_holder: int
    ) -> tuple[int, tuple[Any, ...]]:
        """Validated records padded to the shape buckets (padded holders are null records and
        padded cells are never occupied) and the kernel's arguments; only the bucket sizes and
        ``K`` are static, so one compiled program serves every budget."""
        cells, labels = check_records(cells, labels, n_cells, integer_labels=True)
        n = int(cells.shape[0])
        check_first_holder(first_holder, n)
        pad = bucket(n, MIN_ROWS) - n
        args = (
            bucket(int(n_cells)),
            self.n_classes,
            key_words(key),
            jnp.pad(cells.astype(jnp.int32), (0, pad)),
            jnp.pad(labels.astype(jnp.int32), (0, pad), constant_values=NULL_LABEL),
            jnp.uint32(first_holder),
            jnp.int32(self.per_unit),
            jnp.float32(self.beta),
            jnp.int32(self.code_limit),
        )
        return n, args

    # -- curator side ---------------------------------------------------------------------------
    def summarize(self, reports: LaplaceCellClassReport, n_cells: int) -> dict[str, jax.Array]:
        """Exact integer code sums of a batch: ``cell`` ``[L]`` and ``label`` ``[L]``/``[L, K]``."""
        n = int(reports.cell.shape[0])
        if n > self.max_summary_rows:
            raise ValueError(
                f"a batch of {n} reports exceeds max_summary_rows={self.max_summary_rows}; "
                "split it (SumAggregator.update does)"
            )
        label_shape = (n, n_cells) if self.label_width == 1 else (n, n_cells, self.n_classes)
        if reports.cell.shape != (n, n_cells) or reports.label.shape != label_shape:
            raise ValueError(
                f"reports must have shapes ({n}, {n_cells}) and {label_shape}, got "
                f"{reports.cell.shape} and {reports.label.shape}"
            )
        cell = jnp.asarray(reports.cell, dtype=jnp.int32)
        label = jnp.asarray(reports.label, dtype=jnp.int32)
        return {
            "cell": cell.sum(axis=0, dtype=jnp.int32),
            "label": label.sum(axis=0, dtype=jnp.int32),
        }

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and class counts from summed codes of ``n`` reports."""
        return CellEstimates(
            count=self.step * np.asarray(stats["cell"], dtype=np.float64),
            label_sum=self.step * np.asarray(stats["label"], dtype=np.float64),
            n=int(n),
        )

    def simulate_summary(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int
    ) -> dict[str, FloatArray]:
        """Simulation only: the summed codes of all holders drawn in aggregate (module docstring).

        Exact in law for the continuous Laplace release, ``O(L K)`` random draws; the input is the
        whole private sample, so this never runs on a holder's device and is not the protocol.
        """
        cells_j, labels_j = check_records(cells, labels, n_cells, integer_labels=True)
        cell_idx, label_idx = np.asarray(cells_j), np.asarray(labels_j)
        n = int(cell_idx.shape[0])
        if n == 0:
            raise ValueError("cells must hold at least one record")
        valid = (label_idx >= 0) & (label_idx < self.n_classes)
        counts = np.bincount(cell_idx[valid], minlength=n_cells).astype(np.float64)
        if self.label_width == 1:
            classes = np.bincount(cell_idx[valid & (label_idx == 1)], minlength=n_cells)
        else:
            flat = cell_idx[valid] * self.n_classes + label_idx[valid]
            classes = np.bincount(flat, minlength=n_cells * self.n_classes).reshape(
                n_cells, self.n_classes
            )
        k_cell, k_label = jax.random.split(key)
        return {
            "cell": gamma_code_sums(k_cell, counts, n, self.per_unit, self.beta),
            "label": gamma_code_sums(k_label, classes.astype(float), n, self.per_unit, self.beta),
        }

    # -- likelihood and verification --------------------------------------------------------------
    def log_prob(
        self, report: LaplaceCellClassReport, cell: int, label: float, n_cells: int
    ) -> float:
        """``log P(report | cell, label)`` of one holder's report (``cell`` ``[L]`` and ``label``
        ``[L]``/``[L, K]`` codes) under the declared law: a sum over independent coordinates."""
        u, v = self.encode(cell, int(label), n_cells)
        cell_codes = np.asarray(report.cell, dtype=np.int64)
        label_codes = np.asarray(report.label, dtype=np.int64)
        if cell_codes.shape != u.shape or label_codes.shape != v.shape:
            raise ValueError(
                f"report must have shapes {u.shape} and {v.shape}, got {cell_codes.shape} and "
                f"{label_codes.shape}"
            )
        k_lim = self.code_limit
        if max(np.abs(cell_codes).max(), np.abs(label_codes).max()) > k_lim:
            return -math.inf
        # only two locations occur: 0 and 1 / Delta
        tables = [
            grid_laplace_log_probs(self.beta, k_lim, float(m * self.per_unit)) for m in (0, 1)
        ]
        total = 0.0
        for codes, values in ((cell_codes, u), (label_codes, v)):
            ones = values.astype(bool)
            total += tables[1][codes[ones] + k_lim].sum() + tables[0][codes[~ones] + k_lim].sum()
        return float(total)

    def report_law(self, n_cells: int) -> ReportLaw:
        """The report's law for :func:`~ldptree.accounting.verify_ldp` (module docstring).

        Two cell blocks of grid-Laplace codes at locations ``0`` or ``1 / Delta``: ``"cell"``
        (one coordinate per cell, ``1 / Delta`` in the record's cell for a declared class) and
        ``"label"`` (1 or ``K`` coordinates per cell, ``1 / Delta`` at the record's class in its
        cell). Labels are the finite domain ``0..K-1`` plus :data:`NULL_LABEL` for every
        undeclared label. The sampler caveat is the float32 one of the LPDT label.
        """
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        per_unit, width = float(self.per_unit), self.label_width
        sampling = Float32LaplaceSampling(
            beta=self.beta,
            beta_used=float(np.float32(self.beta)),
            location_error=0.0,  # locations are small integers, exact in float32
            limit=self.code_limit,
            locate=float,
        )
        channel = grid_laplace_channel(self.beta, self.code_limit, sampling=sampling)

        def declared(t: int) -> bool:
            return 0 <= t < self.n_classes

        def label_on(t: int) -> tuple[float, ...]:
            if width == 1:
                return (per_unit if t == 1 else 0.0,)
            return tuple(per_unit if t == k else 0.0 for k in range(width))

        def assemble(outputs: dict[str, list[Any]]) -> LaplaceCellClassReport:
            label = np.asarray(outputs["label"], dtype=np.int32)
            return LaplaceCellClassReport(
                cell=jnp.asarray(np.asarray(outputs["cell"], dtype=np.int32)),
                label=jnp.asarray(label if width == 1 else label.reshape(n_cells, width)),
            )

        return ReportLaw(
            blocks=(
                CellBlock(
                    "cell",
                    channel,
                    on=lambda t: (per_unit if declared(t) else 0.0,),
                    off=lambda t: (0.0,),
                ),
                CellBlock("label", channel, on=label_on, off=lambda t: (0.0,) * width),
            ),
            labels=(*range(self.n_classes), NULL_LABEL),
            assemble=assemble,
        )


def _report_kernel(
    n_cells: int,
    n_classes: int,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
    per_unit: jax.Array,
    beta: jax.Array,
    limit: jax.Array,
) -> LaplaceCellClassReport:
    # Two words per coordinate (Laplace variate, rounding uniform); coordinates are cell-major:
    # [U_j, V_j1, ..., V_jK'] for each cell j.
    width = 1 if n_classes == 2 else n_classes
    n = cells.shape[0]
    words = holder_words(key_data, first_holder, n, 2 * n_cells * (1 + width))
    words = words.reshape(n, n_cells, 1 + width, 2)
    valid = (labels >= 0) & (labels < n_classes)
    u = (jnp.arange(n_cells)[None, :] == cells[:, None]) & valid[:, None]
    if width == 1:
        v = (u & (labels == 1)[:, None])[:, :, None]
    else:
        v = u[:, :, None] & (jnp.arange(n_classes)[None, None, :] == labels[:, None, None])
    values = jnp.concatenate([u[:, :, None], v], axis=2).astype(jnp.int32) * per_unit
    # values are integers on the grid: floor(v + s) = v + floor(s), in integer arithmetic
    noise = jnp.floor(beta * laplace(words[..., 0]) + unit_halfopen(words[..., 1]))
    codes = jnp.clip(values + noise.astype(jnp.int32), -limit, limit)
    label_codes = codes[:, :, 1] if width == 1 else codes[:, :, 1:]
    return LaplaceCellClassReport(codes[:, :, 0], label_codes)


@partial(jax.jit, static_argnums=(0, 1))
def _privatize(*args: Any) -> LaplaceCellClassReport:
    return _report_kernel(*args)


@partial(jax.jit, static_argnums=(0, 1))
def _privatize_summarize(*args: Any) -> dict[str, jax.Array]:
    *kernel_args, n_valid = args
    reports = _report_kernel(*kernel_args)
    valid = jnp.arange(reports.cell.shape[0]) < n_valid  # padding holders report nothing
    cell = jnp.where(valid[:, None], reports.cell, 0)
    label = jnp.where(valid.reshape(-1, *([1] * (reports.label.ndim - 1))), reports.label, 0)
    sums: dict[str, jax.Array] = _column_sums(cell, label)
    return sums


@jax.jit
def _column_sums(cell: jax.Array, label: jax.Array) -> dict[str, jax.Array]:
    """Exact int32 sums over holders (no overflow below ``max_summary_rows`` holders)."""
    return {
        "cell": cell.astype(jnp.int32).sum(axis=0, dtype=jnp.int32),
        "label": label.astype(jnp.int32).sum(axis=0, dtype=jnp.int32),
    }
