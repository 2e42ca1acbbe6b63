"""Randomized response on the one-hot cell vector plus Laplace on the label (LPDT, spec §3.1).

With budget split ``rho`` and label bounds ``[lo, hi]`` (range ``R = hi - lo``, centre ``c``),
holder ``i`` in cell ``j_i`` with label ``y_i`` releases:

* ``Z_i in {0, 1}^L`` with ``Z_ij = U_ij XOR F_ij``, ``U_ij = 1{j = j_i}``, ``F_ij ~ Bernoulli(q)``
  i.i.d., ``q = 1 / (1 + e^{rho eps / 2})`` (LPDT paper eq. (3) for ``rho = 1/2``);
* one noisy label ``Y~_i = clip(y_i, lo, hi) + b xi_i``, ``xi_i ~ Laplace(1)``,
  ``b = R / ((1 - rho) eps)``, shared by all cells. (The reference code redraws it per cell,
  which releases ``L`` noisy copies and costs ``L (1 - rho) eps``; spec §0.4.)

Privacy (LPDT Thm 3.1): two one-hot vectors differ in at most two coordinates, each with
likelihood ratio at most ``(1 - q) / q = e^{rho eps / 2}``; the label's ratio is at most
``e^{|y - y'| / b} <= e^{(1 - rho) eps}``; the parts are independent, so the total is ``e^eps``.

As implemented (what the accountant certifies):

* ``F_ij`` compares a ``precision_bits``-bit uniform integer with ``T = ceil(q 2^bits)``, so the
  realised flip probability is ``q' = T / 2^bits >= q``: the realised cell budget
  ``2 log((1 - q') / q')`` never exceeds ``rho eps``. Debiasing uses ``q'``.
* ``Y~_i`` is centred at ``c``, rounded *stochastically* to the grid ``Delta Z`` with
  ``Delta = 2^(floor(log2 b) - 4)`` (so ``b / 32 < Delta <= b / 16``) and clamped to
  ``|code| <= K``, ``K Delta >= R / 2 + 30 b`` (:class:`~ldptree.mechanisms.GridLaplace`, whose
  sampler follows the Laplace tail out to the clamp; float32 ``jax.random.laplace`` does not).
  Rounding and clamping are post-processing of the Laplace release (privacy unchanged), keep the
  label unbiased (``E[Delta code] = y - c`` up to the ``e^{-30}`` clamp mass), add variance at
  most ``Delta^2 / 4 <= b^2 / 1024`` next to ``2 b^2``, give a finite report space, and make every
  curator-side sum an exact integer, so aggregation is identical in any chunking or order.

Debiasing (spec §3.1): with ``a = 1 - 2 q'`` and ``n`` reports,
``c^_j = (sum_i Z_ij - n q') / a`` and ``s^_j = sum_i Y~_i (Z_ij - q') / a`` are unbiased for the
cell count and label sum; the LPDT read-out ``s^_j / c^_j`` is paper eq. (5).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import PRNGKey
from ldptree._validation import to_budget_split, to_epsilon, to_label_bound
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._grid_laplace import GridLaplace, sample_codes
from ldptree.mechanisms._records import check_records
from ldptree.protocols import CellEstimates

_INT32_LIMIT = 2**31 - 1


class RRLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: ``bits`` ``bool[n, L]`` and label grid codes ``code`` ``int32[n]``
    (the released label is ``label_center + label_step * code``)."""

    bits: jax.Array
    code: jax.Array


def _check_bits(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value not in (16, 32):
        raise ValueError(f"{attribute.name} must be 16 or 32, got {value!r}")


@attrs.frozen
class RRLaplaceMechanism:
    """Randomized response on the cell one-hot vector + Laplace on the label (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``.
    label_bound:
        ``M`` for ``[-M, M]`` or a pair ``(lo, hi)``; must not come from private labels.
    budget_split:
        ``rho in (0, 1)``: share of ``eps`` spent on the cell, the rest on the label.
    precision_bits:
        Width (16 or 32) of the uniform integers realising the flips; 16 halves the random bits
        drawn, and the realised budget never exceeds the claim either way.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    label_bound: tuple[float, float] = attrs.field(converter=to_label_bound)
    budget_split: float = attrs.field(default=0.5, converter=to_budget_split)
    precision_bits: int = attrs.field(default=16, validator=_check_bits)

    # -- constants ------------------------------------------------------------------------------
    @property
    def cell_epsilon(self) -> float:
        """Budget claimed for the cell report: ``rho eps``."""
        return self.budget_split * self.epsilon

    @property
    def label_epsilon(self) -> float:
        """Budget claimed for the label report: ``(1 - rho) eps``."""
        return (1.0 - self.budget_split) * self.epsilon

    @property
    def spend(self) -> PrivacySpend:
        """The privacy map: ``rho eps`` on the cell and ``(1 - rho) eps`` on the label."""
        return PrivacySpend(
            epsilon=self.epsilon,
            parts=(
                ("cell (randomized response)", self.cell_epsilon),
                ("label (Laplace)", self.label_epsilon),
            ),
        )

    @property
    def flip_threshold(self) -> int:
        """``T = ceil(q 2^bits)`` with ``q = 1 / (1 + e^{rho eps / 2})``; at least 1."""
        q = 1.0 / (1.0 + math.exp(self.cell_epsilon / 2.0))
        return max(1, math.ceil(q * 2.0**self.precision_bits))

    @property
    def flip_prob(self) -> float:
        """Realised flip probability ``q' = T / 2^bits``."""
        return self.flip_threshold / 2.0**self.precision_bits

    @property
    def keep_prob(self) -> float:
        """Realised keep probability ``p' = 1 - q'``."""
        return 1.0 - self.flip_prob

    @property
    def label_center(self) -> float:
        return (self.label_bound[0] + self.label_bound[1]) / 2.0

    @property
    def label_range(self) -> float:
        return self.label_bound[1] - self.label_bound[0]

    @property
    def label_scale(self) -> float:
        """Laplace scale ``b = R / ((1 - rho) eps)``."""
        return self.label_range / self.label_epsilon

    @property
    def label_grid(self) -> GridLaplace:
        """The released label's law: ``Laplace(b)`` on the grid ``Delta Z``, clamped."""
        return GridLaplace.for_range(self.label_scale, self.label_range / 2.0, max_step=math.inf)

    @property
    def label_step(self) -> float:
        """Grid step ``Delta = 2^(floor(log2 b) - 4)`` of released labels."""
        return self.label_grid.step

    @property
    def code_limit(self) -> int:
        """``K``: released codes lie in ``[-K, K]``."""
        return self.label_grid.limit

    @property
    def max_summary_rows(self) -> int:
        """Largest report batch whose code sums fit exactly in int32."""
        return _INT32_LIMIT // self.code_limit

    # -- holder side ----------------------------------------------------------------------------
    def privatize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
    ) -> RRLaplaceReport:
        """Reports of holders ``first_holder, first_holder + 1, ...``: ``int32[n], float[n]`` ->
        :class:`RRLaplaceReport`. Holder ``h`` uses only ``fold_in(key, h)``."""
        cells, labels = check_records(cells, labels, n_cells, integer_labels=False)
        out: RRLaplaceReport = _privatize(
            self, int(n_cells), key, cells, labels.astype(jnp.float32), first_holder
        )
        return out

    # -- curator side ---------------------------------------------------------------------------
    def summarize(self, reports: RRLaplaceReport, n_cells: int) -> dict[str, jax.Array]:
        """Exact integer sums of a batch: per-cell ``count``, per-cell ``code_sum`` and the total
        ``code_total``."""
        n = int(reports.code.shape[0])
        if n > self.max_summary_rows:
            raise ValueError(
                f"a batch of {n} reports exceeds max_summary_rows={self.max_summary_rows}; "
                "split it (SumAggregator.update does)"
            )
        if reports.bits.shape != (n, n_cells):
            raise ValueError(
                f"reports.bits must have shape ({n}, {n_cells}), got {reports.bits.shape}"
            )
        sums: dict[str, jax.Array] = _summarize(reports.bits, reports.code)
        return sums

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and label sums from summed statistics of ``n`` reports."""
        q = self.flip_prob
        a = 1.0 - 2.0 * q
        count = np.asarray(stats["count"], dtype=np.float64)
        code_sum = np.asarray(stats["code_sum"], dtype=np.float64)
        code_total = float(stats["code_total"])
        centred = count - n * q
        label_sum = self.label_center * centred + self.label_step * (code_sum - q * code_total)
        return CellEstimates(count=centred / a, label_sum=label_sum / a, n=int(n))

    def decode_labels(self, code: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Released labels ``c + Delta code`` as float64."""
        decoded: np.ndarray[Any, np.dtype[np.float64]] = (
            self.label_center + self.label_step * np.asarray(code, dtype=np.float64)
        )
        return decoded

    # -- likelihood -----------------------------------------------------------------------------
    def cell_log_prob(self, bits: Any, cell: int) -> float:
        """``log P(Z = bits | cell)`` under the realised flip probability."""
        z = np.asarray(bits, dtype=bool)
        agree = z == (np.arange(z.shape[0]) == cell)
        n_agree = int(agree.sum())
        n_flip = int(z.shape[0]) - n_agree
        return n_agree * math.log(self.keep_prob) + n_flip * math.log(self.flip_prob)

    def label_log_prob(self, code: int, label: float) -> float:
        """``log P(code | label)`` of the clipped, centred, snapped and clamped Laplace release
        (:meth:`GridLaplace.log_prob` at ``mu = (clip(label) - c) / Delta``)."""
        lo, hi = self.label_bound
        mu = (min(max(float(label), lo), hi) - self.label_center) / self.label_step
        return self.label_grid.log_prob(code, mu)

    def log_prob(self, report: RRLaplaceReport, cell: int, label: float, n_cells: int) -> float:
        """Log-likelihood of one holder's report (``bits`` ``bool[L]``, scalar ``code``)."""
        bits = np.asarray(report.bits, dtype=bool)
        if bits.shape != (n_cells,):
            raise ValueError(f"report.bits must have shape ({n_cells},), got {bits.shape}")
        return self.cell_log_prob(bits, cell) + self.label_log_prob(int(report.code), label)


@partial(jax.jit, static_argnums=(0, 1))
def _privatize(
    mech: RRLaplaceMechanism,
    n_cells: int,
    key: PRNGKey,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: int | jax.Array,
) -> RRLaplaceReport:
    bits_per_word = 32 // mech.precision_bits
    n_words = -(-n_cells // bits_per_word)
    threshold = jnp.uint32(mech.flip_threshold)
    lo, hi = mech.label_bound
    center, grid = mech.label_center, mech.label_grid

    def one(holder: jax.Array, cell: jax.Array, label: jax.Array) -> RRLaplaceReport:
        k_bits, k_noise = jax.random.split(jax.random.fold_in(key, holder))
        words = jax.random.bits(k_bits, (n_words,), dtype=jnp.uint32)
        if bits_per_word == 2:
            words = jnp.concatenate([words & jnp.uint32(0xFFFF), words >> 16])
        flip = words[:n_cells] < threshold
        bits = flip ^ (jnp.arange(n_cells) == cell)
        y = (jnp.clip(label, lo, hi) - center) / grid.step
        return RRLaplaceReport(bits, sample_codes(k_noise, y, grid.beta, grid.limit))

    holders = jnp.uint32(first_holder) + jnp.arange(cells.shape[0], dtype=jnp.uint32)
    return jax.vmap(one)(holders, cells, labels)


@jax.jit
def _summarize(bits: jax.Array, code: jax.Array) -> dict[str, jax.Array]:
    return {
        "count": bits.sum(axis=0, dtype=jnp.int32),
        "code_sum": jnp.where(bits, code[:, None], 0).sum(axis=0, dtype=jnp.int32),
        "code_total": code.sum(dtype=jnp.int32),
    }
