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

Realisation (what the accountant certifies): each coordinate is released on the grid
``Delta Z`` by stochastic rounding and clamped at ``TAIL_SCALES`` noise scales
(:mod:`ldptree.mechanisms._grid_laplace`); ``Delta <= 1`` is a power of two, so the encoded 0/1
values are grid points. Reports are ``int32`` codes and every curator sum is an exact integer.

Debiasing (spec §3.3): with ``g = Delta E[code | value 1]`` (``= 1 - O(e^{-30})``, the clamp's
effect, computed exactly), ``c^_j = Delta sum_i code(U~_ij) / g`` and
``s^_j = Delta sum_i code(V~_ij) / g`` are unbiased for the cell count and the class-1 count
(binary, ``float[L]``) or the per-class counts (``float[L, K]``).

Simulation (spec §3.5, labelled as such): :meth:`simulate_summary` draws the per-coordinate sums of
``n`` reports directly, ``true sum + b (G_1 - G_2)`` with ``G ~ Gamma(n, 1)``, which is exact in
law for the *continuous* Laplace release (a sum of ``n`` Laplace variables is a difference of two
Gamma variables), in ``O(L K)`` instead of ``O(n L K)``. It omits the grid rounding (variance at
most ``Delta^2 / 4 <= b^2 / 1024`` per report, next to ``2 b^2``) and the clamp (mass
``e^{-30}``), and has the same mean as the per-holder path.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._grid_laplace import GridLaplace, sample_codes
from ldptree.mechanisms._records import check_records
from ldptree.protocols import CellEstimates

_INT32_LIMIT = 2**31 - 1
#: Smallest piece of holders privatized at once (see ``privatize``).
_MIN_PIECE = 1024


class LaplaceCellClassReport(NamedTuple):
    """Reports of ``n`` holders as grid codes (value = ``step * code``): ``cell`` ``int32[n, L]``
    and ``label`` ``int32[n, L]`` (binary) or ``int32[n, L, K]`` (multi-class)."""

    cell: jax.Array
    label: jax.Array


def _to_n_classes(value: Any) -> int:
    return check_int(value, "n_classes", minimum=2)


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
    def grid(self) -> GridLaplace:
        """The released grid: encoded values lie in ``{0, 1}``."""
        return GridLaplace.for_range(self.noise_scale, reach=1.0)

    @property
    def label_width(self) -> int:
        """Label coordinates per cell: 1 (binary form) or ``K``."""
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def gain(self) -> float:
        """``g = Delta E[code | value 1]``: the clamped release's mean per unit value."""
        grid = self.grid
        return grid.step * grid.mean(1.0 / grid.step)

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
        return _INT32_LIMIT // self.grid.limit

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: ``L (1 + K)`` (``2 L`` when binary)."""
        return n_cells * (1 + self.label_width)

    # -- encoding ---------------------------------------------------------------------------------
    def encode(self, cell: int, label: int, n_cells: int) -> tuple[FloatArray, FloatArray]:
        """The record's noiseless release ``(U float[L], V float[L] or float[L, K])``."""
        valid = 0 <= int(label) < self.n_classes
        u = np.zeros(n_cells)
        v = np.zeros((n_cells, self.label_width))
        if valid:
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
        """Reports of holders ``first_holder, first_holder + 1, ...`` (holder ``h`` uses only
        ``fold_in(key, h)``): ``int32[n]`` cells and class codes -> :class:`LaplaceCellClassReport`.
        """
        cells, labels = check_records(cells, labels, n_cells, integer_labels=True)
        n, n_cells = int(cells.shape[0]), int(n_cells)
        grid = self.grid
        # jit sees power-of-two shapes only, so it compiles a handful of programs rather than one
        # per (n, L, eps): holders go in power-of-two pieces (the last padded with null
        # records), cells are padded to a power of two (never occupied), and the noise constants
        # are traced arguments. Padding is cut off. Holder h's randomness depends only on
        # fold_in(key, h) and on the power-of-two bucket of L.
        width = _bucket(n_cells, minimum=8)
        constants = (jnp.float32(1.0 / grid.step), jnp.float32(grid.beta), jnp.int32(grid.limit))
        pieces = []
        for start, size in _pieces(n):
            stop = min(start + size, n)
            piece_cells = jnp.pad(cells[start:stop], (0, start + size - stop))
            piece_labels = jnp.pad(
                labels[start:stop].astype(jnp.int32), (0, start + size - stop), constant_values=-1
            )
            out = _privatize(
                width,
                self.n_classes,
                self.label_width,
                key,
                piece_cells,
                piece_labels,
                jnp.uint32(first_holder + start),
                *constants,
            )
            pieces.append((out.cell[: stop - start, :n_cells], out.label[: stop - start, :n_cells]))
        if not pieces:
            shape = (0, n_cells) if self.label_width == 1 else (0, n_cells, self.n_classes)
            return LaplaceCellClassReport(
                jnp.zeros((0, n_cells), jnp.int32), jnp.zeros(shape, jnp.int32)
            )
        return LaplaceCellClassReport(
            jnp.concatenate([c for c, _ in pieces]), jnp.concatenate([v for _, v in pieces])
        )

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
        sums: dict[str, jax.Array] = _summarize(reports.cell, reports.label)
        return sums

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and class counts from summed codes of ``n`` reports."""
        scale = self.grid.step / self.gain
        return CellEstimates(
            count=scale * np.asarray(stats["cell"], dtype=np.float64),
            label_sum=scale * np.asarray(stats["label"], dtype=np.float64),
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
        valid = (label_idx >= 0) & (label_idx < self.n_classes)
        counts = np.bincount(cell_idx[valid], minlength=n_cells).astype(np.float64)
        if self.label_width == 1:
            classes = np.bincount(cell_idx[valid & (label_idx == 1)], minlength=n_cells)
        else:
            flat = cell_idx[valid] * self.n_classes + label_idx[valid]
            classes = np.bincount(flat, minlength=n_cells * self.n_classes).reshape(
                n_cells, self.n_classes
            )
        grid, n = self.grid, int(cell_idx.shape[0])
        if n == 0:
            raise ValueError("cells must hold at least one record")
        per_unit = self.gain / grid.step
        k_cell, k_label = jax.random.split(key)

        def noisy(k: PRNGKey, truth: FloatArray) -> FloatArray:
            # one bucketed draw, cut to size, so jit compiles the sampler once per bucket
            size = _bucket(2 * truth.size, minimum=64)
            flat = np.asarray(jax.random.gamma(k, float(n), (size,)), dtype=np.float64)
            gammas = flat[: 2 * truth.size].reshape(2, *truth.shape)
            out: FloatArray = truth * per_unit + (gammas[0] - gammas[1]) * grid.beta
            return out

        return {"cell": noisy(k_cell, counts), "label": noisy(k_label, classes.astype(float))}

    # -- likelihood -----------------------------------------------------------------------------
    def log_prob(
        self, report: LaplaceCellClassReport, cell: int, label: float, n_cells: int
    ) -> float:
        """``log P(report | cell, label)`` of one holder's report (``cell`` ``[L]`` and ``label``
        ``[L]``/``[L, K]`` codes): a sum over independent coordinates."""
        u, v = self.encode(cell, int(label), n_cells)
        cell_codes = np.asarray(report.cell)
        label_codes = np.asarray(report.label)
        if cell_codes.shape != u.shape or label_codes.shape != v.shape:
            raise ValueError(
                f"report must have shapes {u.shape} and {v.shape}, got {cell_codes.shape} and "
                f"{label_codes.shape}"
            )
        grid = self.grid
        per_unit = 1.0 / grid.step
        return float(
            grid.log_probs(cell_codes, u * per_unit).sum()
            + grid.log_probs(label_codes, v * per_unit).sum()
        )


def _bucket(size: int, *, minimum: int) -> int:
    """The next power of two ``>= max(size, minimum)``."""
    return 1 << (max(size, minimum, 1) - 1).bit_length()


def _pieces(n: int) -> list[tuple[int, int]]:
    """``(start, size)`` of power-of-two pieces covering ``n`` holders (sizes >= _MIN_PIECE)."""
    pieces, start = [], 0
    while start < n:
        size = max(_MIN_PIECE, 1 << ((n - start).bit_length() - 1))
        pieces.append((start, size))
        start += size
    return pieces


@partial(jax.jit, static_argnums=(0, 1, 2))
def _privatize(
    n_cells: int,
    n_classes: int,
    width: int,
    key: PRNGKey,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
    per_unit: jax.Array,
    beta: jax.Array,
    limit: jax.Array,
) -> LaplaceCellClassReport:
    def one(holder: jax.Array, cell: jax.Array, label: jax.Array) -> LaplaceCellClassReport:
        valid = (label >= 0) & (label < n_classes)
        u = (jnp.arange(n_cells) == cell) & valid
        if width == 1:
            v = (u & (label == 1))[:, None]
        else:
            v = u[:, None] & (jnp.arange(n_classes) == label)[None, :]
        values = jnp.concatenate([u[:, None], v], axis=1).astype(jnp.float32) * per_unit
        codes = sample_codes(jax.random.fold_in(key, holder), values, beta, limit)
        label_codes = codes[:, 1] if width == 1 else codes[:, 1:]
        return LaplaceCellClassReport(codes[:, 0], label_codes)

    holders = first_holder + jnp.arange(cells.shape[0], dtype=jnp.uint32)
    return jax.vmap(one)(holders, cells, labels)


@jax.jit
def _summarize(cell: jax.Array, label: jax.Array) -> dict[str, jax.Array]:
    return {"cell": cell.sum(axis=0, dtype=jnp.int32), "label": label.sum(axis=0, dtype=jnp.int32)}
