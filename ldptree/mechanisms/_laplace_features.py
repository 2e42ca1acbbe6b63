"""Noise on the feature vector and on the label: DECONV's release (Farokhi 2020), exact.

Holder ``i`` holds features ``x_i`` (min-max scaled on public data) and a label ``y_i``. With
budget ``eps``, feature share ``phi`` (default 1/2) and label bound ``[lo, hi]`` it releases

* every feature ``x_ik``, clipped to ``[0, 1]`` and rounded at random to one of ``m_X + 1`` levels
  ``t_ik`` (unbiasedly), as ``clamp(t_ik + Z_ik, -margin, m_X + margin)``: exact two-sided geometric
  noise of budget ``phi eps / d`` over the whole level span (:class:`Geometric`), the discrete
  analogue of the paper's ``Laplace(d / (phi eps))``;
* the label, clipped and rounded to ``m_Y + 1`` levels, with geometric noise of budget
  ``(1 - phi) eps`` over its span (``Laplace(R / ((1 - phi) eps))`` in the paper).

Privacy, as implemented: for two records every feature's level moves by at most the whole span
(``phi eps / d`` each, ``phi eps`` for the ``d`` features) and the label's by at most its span
(``(1 - phi) eps``); the integer counts realise these bounds exactly. Clipping inside makes the
guarantee hold for any input. The accountant certifies the law as sampled
(:meth:`LaplaceFeatureLabelMechanism.report_law`: a feature block over levels and a label block).
The mechanism releases no cell: it is used with the trivial partition (``n_cells = 1``).

Read-out. The deconvolution kernel of the DECONV estimator assumes Laplace errors; it is given
:attr:`feature_scale`, the Laplace scale with the variance of the realised feature noise (geometric
noise plus rounding, in feature units), so the kernel is misspecified only in shape, by the
difference between a discrete and a continuous Laplace law of equal variance.

Debiasing: the only cell statistic is the label total, ``s^ = n lo + step_Y sum_i code_i``
(unbiased for ``sum_i clip(y_i)`` up to the clamp's ``e^{-40}``-scale bias).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import MIN_ROWS, bucket
from ldptree._jax_cache import kernel
from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_int, to_budget_split, to_epsilon, to_label_bound
from ldptree._xp import as_float, float_dtype, namespace
from ldptree.accounting._law import FeatureBlock, LabelBlock, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._kit import RealLabels, encode_levels, label_levels
from ldptree.mechanisms._noise import Geometric, sample_noise
from ldptree.mechanisms._random import holder_words, key_words, unit_halfopen
from ldptree.mechanisms._records import check_first_holder, check_records
from ldptree.mechanisms._variance import ExactCellVariance, check_label_moments
from ldptree.protocols import CellEstimates

_INT32_LIMIT = 2**31 - 1


class LaplaceFeatureLabelReport(NamedTuple):
    """Reports of ``n`` holders as noisy level codes: ``features`` ``int32[n, d]`` and ``label``
    ``int32[n]`` (released values ``code / m_X`` and ``lo + step_Y code``)."""

    features: jax.Array
    label: jax.Array


def _positive_features(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, got {value!r}")


@attrs.frozen
class LaplaceFeatureLabelMechanism:
    """Exact Laplace-like noise on every clipped feature and on the clipped label (module doc).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``.
    n_features:
        ``d``: the released feature vector's length (features are clipped to ``[0, 1]``).
    label_bound:
        ``M`` for ``[-M, M]`` or ``(lo, hi)``; labels are clipped into it. Must not come from
        private labels.
    feature_share:
        ``phi in (0, 1)``: share of ``eps`` spent on the features, the rest on the label.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    n_features: int = attrs.field(validator=_positive_features)
    label_bound: tuple[float, float] = attrs.field(converter=to_label_bound)
    feature_share: float = attrs.field(default=0.5, converter=to_budget_split)

    #: Per-holder inputs ``privatize`` needs besides ``(cell, label)``: the feature vector.
    record_fields: ClassVar[tuple[str, ...]] = ("features",)

    def __attrs_post_init__(self) -> None:
        _ = self.feature_noise, self.label_noise  # fail at construction, naming the problem

    # -- constants ------------------------------------------------------------------------------
    @property
    def feature_epsilon(self) -> float:
        return self.feature_share * self.epsilon

    @property
    def label_epsilon(self) -> float:
        return (1.0 - self.feature_share) * self.epsilon

    @property
    def spend(self) -> PrivacySpend:
        return PrivacySpend(
            epsilon=self.epsilon,
            parts=(
                ("features (geometric, L1 sensitivity d)", self.feature_epsilon),
                ("label (geometric, sensitivity R)", self.label_epsilon),
            ),
        )

    @property
    def feature_levels(self) -> int:
        """``m_X``: levels of each feature (``label_levels`` of its per-coordinate budget)."""
        return label_levels(self.feature_epsilon / self.n_features)

    @property
    def feature_noise(self) -> Geometric:
        return Geometric(self.feature_epsilon / self.n_features, span=self.feature_levels)

    @property
    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, label_levels(self.label_epsilon))

    @property
    def label_noise(self) -> Geometric:
        return Geometric(self.label_epsilon, span=self.labels.levels)

    @property
    def feature_scale(self) -> float:
        """Laplace scale with the realised feature noise's variance (feature units, rounding at
        its worst case ``step^2 / 4`` included): ``sqrt(var / 2)``, ``~ d / (phi eps)``."""
        step = 1.0 / self.feature_levels
        variance = step**2 * (self.feature_noise.variance(0) + 0.25)
        return math.sqrt(variance / 2.0)

    @property
    def label_scale(self) -> float:
        """Laplace scale with the realised label noise's variance (label units, rounding at its
        worst case included): ``~ R / ((1 - phi) eps)``."""
        step = self.labels.step
        return math.sqrt(step**2 * (self.label_noise.variance(0) + 0.25) / 2.0)

    @property
    def label_center(self) -> float:
        return (self.label_bound[0] + self.label_bound[1]) / 2.0

    @property
    def label_range(self) -> float:
        return self.label_bound[1] - self.label_bound[0]

    @property
    def max_summary_rows(self) -> int:
        """Largest batch whose label code total fits exactly in int32."""
        return _INT32_LIMIT // self.label_noise.max_abs_output

    # -- holder side ----------------------------------------------------------------------------
    def _check(self, cells: Any, labels: Any, n_cells: int, features: Any) -> tuple[Any, Any]:
        if int(n_cells) != 1:
            raise ValueError(
                f"{type(self).__name__} releases no cell: use the trivial partition, n_cells=1 "
                f"(got {n_cells})"
            )
        cells, labels = check_records(cells, labels, n_cells, integer_labels=False)
        if features is None:
            raise ValueError(
                f"{type(self).__name__} releases the features: pass features=float[n, d]"
            )
        x = jnp.asarray(features, dtype=jnp.float32)
        if x.shape != (cells.shape[0], self.n_features):
            raise ValueError(
                f"features must have shape ({cells.shape[0]}, {self.n_features}), got {x.shape}"
            )
        return labels, x

    def privatize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
        features: Any = None,
    ) -> LaplaceFeatureLabelReport:
        """Reports of holders ``first_holder, ...`` from ``cells`` (all 0), ``labels`` ``float[n]``
        and ``features`` ``float[n, d]`` (scaled); holder ``h``'s randomness depends only on
        ``key`` and ``h``."""
        labels, x = self._check(cells, labels, n_cells, features)
        n = int(labels.shape[0])
        check_first_holder(first_holder, n)
        pad = bucket(n, MIN_ROWS) - n
        fx, fy = self.feature_noise, self.label_noise
        out = _privatize(
            (fx.static, fy.static),
            (fx.constants(), fy.constants(), self.labels.constants(), np.float32(fx.span)),
            key_words(key),
            jnp.pad(x, ((0, pad), (0, 0))),
            jnp.pad(labels, (0, pad)),
            jnp.uint32(first_holder),
        )
        return LaplaceFeatureLabelReport(out[0][:n], out[1][:n])

    # -- curator side ---------------------------------------------------------------------------
    def summarize(self, reports: LaplaceFeatureLabelReport, n_cells: int) -> dict[str, jax.Array]:
        """The exact integer label code total (the one cell statistic)."""
        if int(n_cells) != 1:
            raise ValueError(f"n_cells must be 1 for {type(self).__name__}, got {n_cells}")
        code = jnp.asarray(reports.label, dtype=jnp.int32)
        if code.shape[0] > self.max_summary_rows:
            raise ValueError(f"a batch of {code.shape[0]} reports exceeds max_summary_rows")
        return {"code_total": code.sum(dtype=jnp.int32)[None]}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """``c^ = n`` (everyone is in the one cell) and ``s^ = n lo + step_Y sum code``."""
        xp = namespace(stats)  # traceable, see ldptree._xp
        total = as_float(stats["code_total"], xp).reshape(1)
        count = xp.full(1, float(n), dtype=float_dtype(xp))
        labels = self.labels
        return CellEstimates(
            count=count, label_sum=labels.bound[0] * count + labels.step * total, n=int(n)
        )

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances on the one cell: ``c^ = n`` exactly (variance 0) and a
        holder adds ``lo + step_Y code = V + step_Y Z`` to ``s^``, variance
        ``m2 - m1^2 + step_Y^2 var_Z`` (``var_Z`` the label noise's, the same for every level up
        to the clamp's ``e^{-40}``-scale effect). There are no outside holders (``0``)."""
        if check_int(n_cells, "n_cells", minimum=1) != 1:
            raise ValueError(f"n_cells must be 1 for {type(self).__name__}, got {n_cells}")
        m1, m2 = check_label_moments(label_mean, label_second_moment)
        labels = self.labels
        noise = labels.step**2 * self.label_noise.variance(labels.levels // 2)
        return ExactCellVariance(
            count_inside=0.0,
            count_outside=0.0,
            label_sum_inside=m2 - m1**2 + noise,
            label_sum_outside=0.0,
        )

    def decode_features(self, codes: Any) -> FloatArray:
        """Released features ``code / m_X`` as float64 ``[n, d]``."""
        out: FloatArray = np.asarray(codes, dtype=np.float64) / self.feature_levels
        return out

    def decode_labels(self, codes: Any) -> FloatArray:
        """Released labels ``lo + step_Y code`` as float64 ``[n]``."""
        return self.labels.decode(codes)

    # -- likelihood and verification ------------------------------------------------------------
    def log_prob(
        self,
        report: LaplaceFeatureLabelReport,
        cell: int,
        label: float,
        n_cells: int,
        *,
        features: Any = None,
    ) -> float:
        """``log P(report | features, label)``: per coordinate, the mixture over the levels its
        rounding can reach, under the exact noise law."""
        del cell
        if int(n_cells) != 1:
            raise ValueError(f"n_cells must be 1 for {type(self).__name__}, got {n_cells}")
        if features is None:
            raise ValueError("log_prob needs the record's features=float[d]")
        x = np.asarray(features, dtype=np.float64).reshape(-1)
        codes = np.asarray(report.features, dtype=np.int64).reshape(-1)
        if x.shape != (self.n_features,) or codes.shape != (self.n_features,):
            raise ValueError(f"features and report.features must have {self.n_features} entries")
        feature_levels = RealLabels((0.0, 1.0), self.feature_levels)
        total = math.fsum(
            _mixture(self.feature_noise, feature_levels.weights(xk), int(c))
            for xk, c in zip(x, codes, strict=True)
        )
        return total + _mixture(self.label_noise, self.labels.weights(label), int(report.label))

    def report_law(self, n_cells: int) -> ReportLaw:
        """A :class:`~ldptree.accounting.FeatureBlock` over the feature levels (each coordinate's
        input is its level ``0..m_X``; features enter only through random levels) and a label
        block over the label levels, both with the exact geometric channels that are sampled."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        if n_cells != 1:
            raise ValueError(f"n_cells must be 1 for {type(self).__name__}, got {n_cells}")
        labels = self.labels

        def assemble(outputs: dict[str, list[Any]]) -> LaplaceFeatureLabelReport:
            return LaplaceFeatureLabelReport(
                features=jnp.asarray(np.asarray(outputs["features"], dtype=np.int32)),
                label=jnp.asarray(int(outputs["label"][0]), dtype=jnp.int32),
            )

        return ReportLaw(
            blocks=(
                FeatureBlock(
                    "features",
                    self.feature_noise.channel(),
                    n_features=self.n_features,
                    feature_map=_FeatureLevel(self.feature_levels),
                    levels=tuple(t / self.feature_levels for t in range(self.feature_levels + 1)),
                ),
                LabelBlock(
                    "label", self.label_noise.channel(), inputs=lambda t: (labels.index(t),)
                ),
            ),
            label_levels=labels.domain(),
            assemble=assemble,
        )


@attrs.frozen
class _FeatureLevel:
    """The level a representative feature value ``t / m`` stands for (witness features)."""

    levels: int

    def __call__(self, x: float) -> int:
        return int(min(max(round(float(x) * self.levels), 0), self.levels))


def _mixture(noise: Geometric, weights: list[tuple[int, float]], code: int) -> float:
    index = code + noise.margin
    if not 0 <= index < len(noise.outputs):
        return -math.inf
    terms = [math.log(w) + float(noise.log_probs(t)[index]) for t, w in weights]
    return float(np.logaddexp.reduce(terms))


@kernel(static_argnums=(0,))
def _privatize(
    statics: tuple[Any, Any],
    consts: Any,
    key_data: jax.Array,
    x: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    fx_consts, fy_consts, label_consts, feature_levels = consts
    n, d = x.shape
    # words: 2 per feature noise, 2 for the label noise, then d + 1 rounding words
    words = holder_words(key_data, first_holder, n, 3 * d + 3)
    u = jnp.clip(jnp.where(jnp.isnan(x), 0.5, x), 0.0, 1.0) * feature_levels
    t_x = jnp.clip(jnp.floor(u + unit_halfopen(words[:, 2 * d + 2 : 3 * d + 2])), 0, feature_levels)
    t_y = encode_levels(label_consts, labels, words[:, 3 * d + 2])
    features = sample_noise(statics[0], fx_consts, words[:, : 2 * d], t_x.astype(jnp.int32))
    label = sample_noise(
        statics[1], fy_consts, words[:, 2 * d : 2 * d + 2], t_y.astype(jnp.int32)[:, None]
    )
    return features.astype(jnp.int32), label[:, 0].astype(jnp.int32)
