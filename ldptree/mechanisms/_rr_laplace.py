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
  ``|code| <= K``, ``K Delta >= R / 2 + 64 b``. Rounding and clamping are post-processing of the
  Laplace release (privacy unchanged), keep the label unbiased (``E[Delta code] = y - c`` up to the
  ``e^{-64}`` clamp mass), add variance at most ``Delta^2 / 4 <= b^2 / 1024`` next to ``2 b^2``,
  give a finite report space, and make every curator-side sum an exact integer, so aggregation is
  identical in any chunking or order.

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

from ldptree._buckets import MIN_ROWS, bucket
from ldptree._typing import PRNGKey
from ldptree._validation import check_int, to_budget_split, to_epsilon, to_label_bound
from ldptree.accounting._channels import binary_channel, grid_laplace_channel
from ldptree.accounting._law import AffineLabelMap, CellBlock, LabelBlock, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._random import holder_words, key_words, laplace, unit_halfopen
from ldptree.mechanisms._records import check_records
from ldptree.mechanisms._sampled_laplace import Float32LaplaceSampling
from ldptree.protocols import CellEstimates

#: Laplace tail beyond which released labels are clamped, in units of the noise scale ``b``.
CLAMP_SCALES = 64.0
_INT32_LIMIT = 2**31 - 1


class RRLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: ``bits`` ``bool[n, L]`` and label grid codes ``code`` ``int32[n]``
    (the released label is ``label_center + label_step * code``)."""

    bits: jax.Array
    code: jax.Array


def _check_bits(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value not in (None, 16, 32):
        raise ValueError(f"{attribute.name} must be None (automatic), 16 or 32, got {value!r}")


def _threshold(cell_epsilon: float, bits: int) -> int:
    q = 1.0 / (1.0 + math.exp(cell_epsilon / 2.0))
    return max(1, math.ceil(q * 2.0**bits))


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
        Width (16 or 32) of the uniform integers realising the flips. ``None`` (default) takes 16,
        which halves the random bits drawn, unless the cell budget is too small for 16 bits to
        realise a flip probability below 1/2; the realised budget never exceeds the claim.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    label_bound: tuple[float, float] = attrs.field(converter=to_label_bound)
    budget_split: float = attrs.field(default=0.5, converter=to_budget_split)
    precision_bits: int | None = attrs.field(default=None, validator=_check_bits)

    def __attrs_post_init__(self) -> None:
        bits = 32 if self.precision_bits is None else self.precision_bits
        if _threshold(self.cell_epsilon, bits) >= 2 ** (bits - 1):
            raise ValueError(
                f"epsilon * budget_split = {self.cell_epsilon:.3g} is too small to realise a flip "
                f"probability below 1/2 with {bits}-bit uniforms (precision_bits); "
                "raise epsilon or budget_split"
            )

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
    def bits(self) -> int:
        """Width of the uniform integers actually used (resolves ``precision_bits=None``)."""
        if self.precision_bits is not None:
            return self.precision_bits
        return 16 if _threshold(self.cell_epsilon, 16) < 2**15 else 32

    @property
    def flip_threshold(self) -> int:
        """``T = ceil(q 2^bits)`` with ``q = 1 / (1 + e^{rho eps / 2})``; at least 1."""
        return _threshold(self.cell_epsilon, self.bits)

    @property
    def flip_prob(self) -> float:
        """Realised flip probability ``q' = T / 2^bits``."""
        return self.flip_threshold / 2.0**self.bits

    @property
    def keep_prob(self) -> float:
        """Realised keep probability ``p' = 1 - q'``."""
        return 1.0 - self.flip_prob

    @property
    def count_variance(self) -> float:
        """Variance one holder adds to a debiased cell count: ``q'(1 - q') / (1 - 2q')^2`` (each
        released bit is Bernoulli with mean ``q'`` or ``1 - q'``, rescaled by ``1 / (1 - 2q')``)."""
        q = self.flip_prob
        return q * (1.0 - q) / (1.0 - 2.0 * q) ** 2

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
    def label_step(self) -> float:
        """Grid step ``Delta = 2^(floor(log2 b) - 4)`` of released labels."""
        return 2.0 ** (math.floor(math.log2(self.label_scale)) - 4)

    @property
    def code_limit(self) -> int:
        """``K``: released codes lie in ``[-K, K]``."""
        reach = self.label_range / 2.0 + CLAMP_SCALES * self.label_scale
        return math.ceil(reach / self.label_step)

    @property
    def summary_block(self) -> int:
        """Rows per float32 block in summaries: a power of two with ``block * K < 2^24``."""
        return 1 << ((2**24 - 1) // self.code_limit).bit_length() - 1

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
        :class:`RRLaplaceReport`. Holder ``h``'s randomness depends only on ``key`` and ``h``."""
        n, width, args = _kernel_args(key, cells, labels, n_cells, first_holder)
        padded = _privatize(self.bits, width, _constants(self), *args)
        return RRLaplaceReport(padded.bits[:n, :n_cells], padded.code[:n])

    def privatize_summarize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
    ) -> dict[str, np.ndarray[Any, Any]]:
        """``summarize(privatize(...))`` in one jitted kernel (the simulation fast path).

        Bitwise equal to the two-step result (as host arrays); the reports never leave the
        kernel, which saves a pass over the ``n x L`` bits. At most ``max_summary_rows`` holders
        per call.
        """
        n, width, args = _kernel_args(key, cells, labels, n_cells, first_holder)
        if n > self.max_summary_rows:
            raise ValueError(
                f"{n} holders exceed max_summary_rows={self.max_summary_rows}; use smaller chunks"
            )
        sums = _privatize_summarize(
            self.bits, width, self.summary_block, _constants(self), *args, np.int32(n)
        )
        # One transfer for the three sums, then host slicing (a jax slice is a dispatch each);
        # under an outer jit the sums stay traced.
        host = sums if isinstance(sums["count"], jax.core.Tracer) else jax.device_get(sums)
        return {
            "count": host["count"][:n_cells],
            "code_sum": host["code_sum"][:n_cells],
            "code_total": host["code_total"],
        }

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
        rows, width = bucket(n, MIN_ROWS), bucket(n_cells)
        bits = jnp.pad(jnp.asarray(reports.bits, dtype=bool), ((0, rows - n), (0, width - n_cells)))
        code = jnp.pad(jnp.asarray(reports.code, dtype=jnp.int32), (0, rows - n))
        sums = _summarize(self.summary_block, bits, code)
        return {
            "count": sums["count"][:n_cells],
            "code_sum": sums["code_sum"][:n_cells],
            "code_total": sums["code_total"],
        }

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
        """``log P(code | label)`` of the clipped, centred, snapped and clamped Laplace release.

        With ``mu = (clip(label) - c) / Delta``, ``beta = b / Delta`` and ``t = code - mu``, the
        stochastic rounding kernel is the triangle ``max(0, 1 - |t|)``, so
        ``P = beta/2 (e(t+1) - 2 e(t) + e(t-1)) + max(0, 1 - |t|)`` with ``e(t) = e^{-|t|/beta}``;
        for ``|t| >= 1`` this is ``beta (cosh(1/beta) - 1) e^{-|t|/beta}``, and the clamped end
        codes carry the tail ``beta/2 (e^{1/beta} - 1) e^{-|t|/beta}``.
        """
        k_lim = self.code_limit
        code = int(code)
        if abs(code) > k_lim:
            return -math.inf
        lo, hi = self.label_bound
        mu = (min(max(float(label), lo), hi) - self.label_center) / self.label_step
        beta = self.label_scale / self.label_step
        t = code - mu
        if abs(code) == k_lim:
            return math.log(beta / 2.0 * math.expm1(1.0 / beta)) - abs(t) / beta
        if abs(t) >= 1.0:
            return math.log(beta * (math.cosh(1.0 / beta) - 1.0)) - abs(t) / beta

        def e(s: float) -> float:
            return math.exp(-abs(s) / beta)

        return math.log(beta / 2.0 * (e(t + 1) - 2.0 * e(t) + e(t - 1)) + (1.0 - abs(t)))

    def log_prob(self, report: RRLaplaceReport, cell: int, label: float, n_cells: int) -> float:
        """Log-likelihood of one holder's report (``bits`` ``bool[L]``, scalar ``code``)."""
        bits = np.asarray(report.bits, dtype=bool)
        if bits.shape != (n_cells,):
            raise ValueError(f"report.bits must have shape ({n_cells},), got {bits.shape}")
        return self.cell_log_prob(bits, cell) + self.label_log_prob(int(report.code), label)

    # -- verification interface (ldptree.accounting.ReportLaw) -----------------------------------
    def label_location(self, label: float) -> float:
        """Declared location ``mu = (clip(label) - c) / Delta`` of the label code (float64)."""
        lo, hi = self.label_bound
        return (min(max(float(label), lo), hi) - self.label_center) / self.label_step

    def sampler_location(self, mu: float) -> float:
        """The float32 location the sampler computes for a label with declared location ``mu``."""
        lo, hi = (np.float32(v) for v in self.label_bound)
        y = np.float32(self.label_center + self.label_step * float(mu))
        shifted = np.float32(np.clip(y, lo, hi) - np.float32(self.label_center))
        return float(shifted) / self.label_step

    def report_law(self, n_cells: int) -> ReportLaw:
        """The report's law for the accountant (module docstring, "as implemented").

        * block ``"cell"``: ``n_cells`` randomized-response bits with the *realised* flip
          probability ``q' = T / 2^bits``; input 1 in the record's cell, 0 elsewhere;
        * block ``"label"``: one grid-Laplace code at ``mu = label_location(y)`` with scale
          ``beta = b / Delta`` and clamp ``K`` (the law of :meth:`label_log_prob`), with the
          float32 sampler's caveat (:class:`Float32LaplaceSampling`: bounded support, total
          variation to the declared law).

        ``label_map`` is :meth:`label_location` (monotone; the label input is affine in it).
        """
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        lo, hi = self.label_bound
        y_max = max(abs(lo), abs(hi))
        shift = (y_max + abs(self.label_center) + self.label_range / 2.0) * 2.0**-24
        sampling = Float32LaplaceSampling(
            beta=self.label_scale / self.label_step,
            beta_used=float(np.float32(self.label_scale / self.label_step)),
            location_error=shift * (1.0 + 2.0**-22) / self.label_step,
            limit=self.code_limit,
            locate=self.sampler_location,
        )
        label = grid_laplace_channel(
            self.label_scale / self.label_step, self.code_limit, sampling=sampling
        )

        def assemble(outputs: dict[str, list[Any]]) -> RRLaplaceReport:
            bits = jnp.asarray(np.asarray(outputs["cell"], dtype=bool))
            return RRLaplaceReport(bits=bits, code=jnp.asarray(outputs["label"][0], jnp.int32))

        return ReportLaw(
            blocks=(
                CellBlock(
                    "cell", binary_channel(self.flip_prob), on=lambda t: (1,), off=lambda t: (0,)
                ),
                LabelBlock("label", label, inputs=lambda t: (t,)),
            ),
            label_map=AffineLabelMap(*self.label_bound, self.label_center, 1.0 / self.label_step),
            assemble=assemble,
        )


class _Constants(NamedTuple):
    """The mechanism's constants as *traced* kernel arguments (a pytree of scalars).

    Passing them as values rather than making the mechanism a static argument lets one compiled
    program serve every ``(epsilon, label_bound, budget_split)``: a grid over ``rho`` and the
    per-repetition public label range would otherwise compile a new kernel per combination
    (~0.5 s each, the dominant cost of a tuning grid on small data). Each constant is rounded to
    the kernel's dtype exactly as the weakly typed Python scalar was before, so reports are
    bitwise unchanged.
    """

    threshold: Any  # uint32 flip threshold T
    lo: Any  # float32 label bounds
    hi: Any
    center: Any  # float32 c
    step: Any  # float32 Delta
    beta: Any  # float32 b / Delta
    limit: Any  # float32 K (an integer, exact in float32)


def _constants(mech: RRLaplaceMechanism) -> _Constants:
    # NumPy scalars, not jnp ones: creating a jnp scalar is a device dispatch (seven per call
    # here), a NumPy scalar is free and jit transfers it with the other arguments. Same rounding.
    lo, hi = mech.label_bound
    return _Constants(
        threshold=np.uint32(mech.flip_threshold),
        lo=np.float32(lo),
        hi=np.float32(hi),
        center=np.float32(mech.label_center),
        step=np.float32(mech.label_step),
        beta=np.float32(mech.label_scale / mech.label_step),
        limit=np.float32(mech.code_limit),
    )


def _kernel_args(
    key: PRNGKey, cells: Any, labels: Any, n_cells: int, first_holder: int
) -> tuple[int, int, tuple[Any, ...]]:
    """``(n, width, (key_data, cells, labels, first_holder))`` padded to the shape buckets."""
    cells, labels = check_records(cells, labels, n_cells, integer_labels=False)
    n = int(cells.shape[0])
    pad = bucket(n, MIN_ROWS) - n
    padded: tuple[Any, Any]
    if isinstance(cells, jax.core.Tracer) or isinstance(labels, jax.core.Tracer):
        padded = (jnp.pad(cells.astype(jnp.int32), (0, pad)), jnp.pad(labels, (0, pad)))
    else:
        # Concrete records are padded on the host: a NumPy pad is free, a jnp pad is a device
        # dispatch, and on small data per-call dispatch is most of a fit. Same values.
        padded = (
            np.pad(np.asarray(cells, dtype=np.int32), (0, pad)),
            np.pad(np.asarray(labels), (0, pad)),
        )
    args = (key_words(key), *padded, np.uint32(first_holder))
    return n, bucket(int(n_cells)), args


def _report_kernel(
    bits: int,
    width: int,
    const: _Constants,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
) -> RRLaplaceReport:
    # Holder words: `n_flip` for the flips (two 16-bit draws per word at 16-bit precision), one
    # for the Laplace variate, one for the stochastic rounding.
    per_word = 32 // bits
    n_flip = -(-width // per_word)
    words = holder_words(key_data, first_holder, cells.shape[0], n_flip + 2)
    threshold = const.threshold
    flips = words[:, :n_flip]
    if per_word == 2:
        flip = jnp.concatenate(
            [(flips & jnp.uint32(0xFFFF)) < threshold, (flips >> 16) < threshold], axis=1
        )
    else:
        flip = flips < threshold
    report_bits = flip[:, :width] ^ (jnp.arange(width)[None, :] == cells[:, None])
    # A NaN would survive clip and leak through a deterministic code: treat it as the centre.
    labels = jnp.where(jnp.isnan(labels), const.center, labels)
    y = (jnp.clip(labels, const.lo, const.hi) - const.center) / const.step
    v = y + const.beta * laplace(words[:, n_flip])
    code = jnp.floor(v + unit_halfopen(words[:, n_flip + 1]))
    clamped = jnp.clip(code, -const.limit, const.limit)
    return RRLaplaceReport(report_bits, clamped.astype(jnp.int32))


def _sums_kernel(block: int, bits: jax.Array, code: jax.Array) -> dict[str, jax.Array]:
    # Blocked float32 matmuls: every block sum is an integer below 2^24, hence exact in float32;
    # block results are then added in int32 (exact below max_summary_rows).
    rows, width = bits.shape
    block = min(block, rows)
    lhs = bits.reshape(rows // block, block, width).astype(jnp.float32)
    rhs = jnp.stack([jnp.ones_like(code), code], axis=-1).astype(jnp.float32)
    per_block = jnp.einsum("gbw,gbk->gwk", lhs, rhs.reshape(rows // block, block, 2))
    sums = per_block.astype(jnp.int32).sum(axis=0)
    return {"count": sums[:, 0], "code_sum": sums[:, 1], "code_total": code.sum(dtype=jnp.int32)}


# `bits`, `width` and the summary block size fix array shapes, so they are static; everything
# else about the mechanism is a traced value (`_Constants`).
@partial(jax.jit, static_argnums=(0, 1))
def _privatize(
    bits: int,
    width: int,
    const: _Constants,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
) -> RRLaplaceReport:
    return _report_kernel(bits, width, const, key_data, cells, labels, first_holder)


@partial(jax.jit, static_argnums=(0,))
def _summarize(block: int, bits: jax.Array, code: jax.Array) -> dict[str, jax.Array]:
    return _sums_kernel(block, bits, code)


@partial(jax.jit, static_argnums=(0, 1, 2))
def _privatize_summarize(
    bits: int,
    width: int,
    block: int,
    const: _Constants,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
    n_valid: jax.Array,
) -> dict[str, jax.Array]:
    reports = _report_kernel(bits, width, const, key_data, cells, labels, first_holder)
    valid = jnp.arange(cells.shape[0]) < n_valid  # padding holders report nothing
    report_bits = reports.bits & valid[:, None]
    code = jnp.where(valid, reports.code, 0)
    return _sums_kernel(block, report_bits, code)
