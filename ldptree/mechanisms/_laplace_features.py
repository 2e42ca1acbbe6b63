"""Laplace noise on the feature vector and on the label: DECONV's release (Farokhi 2020, spec §6.3).

Holder ``i`` holds features ``x_i`` (min-max scaled on public data) and a label ``y_i``. With
budget ``eps``, feature share ``phi`` (default 1/2) and label bound ``[lo, hi]`` (range ``R``,
centre ``c``) it releases

* ``X~_ik = clip(x_ik, 0, 1) + b_X xi_ik`` for ``k = 1..d``, ``b_X = d / (phi eps)``;
* ``Y~_i = clip(y_i, lo, hi) + b_Y zeta_i``, ``b_Y = R / ((1 - phi) eps)``,

with i.i.d. ``Laplace(1)`` variates ``xi, zeta``. With ``phi = 1/2``: ``b_X = 2 d / eps`` and
``b_Y = 2 R / eps = 4 M / eps`` for ``R = 2 M``, the spec's constants.

Privacy: for two records, ``||clip(x) - clip(x')||_1 <= d`` (each of the ``d`` coordinates moves
by at most 1 inside ``[0, 1]``), so the feature release has likelihood ratio at most
``e^{d / b_X} = e^{phi eps}``; ``|clip(y) - clip(y')| <= R`` gives ``e^{R / b_Y} =
e^{(1 - phi) eps}``; independent parts compose to ``e^eps``. Clipping *inside* the mechanism makes
the guarantee hold for any input (points outside the public box included). The mechanism releases
no cell: it is used with the trivial partition (``n_cells = 1``).

As implemented (what the accountant certifies; as the label of
:class:`~ldptree.mechanisms.RRLaplaceMechanism`): every coordinate is centred (features at
1/2, the label at ``c``), stochastically rounded to a power-of-two grid
``Delta = 2^(floor(log2 b) - 4)`` (so ``b / 32 < Delta <= b / 16``) and clamped to
``|code| <= K`` with ``K Delta >= (half-range) + 64 b``; post-processing of the Laplace release,
so privacy is unchanged. The rounding keeps every coordinate unbiased and adds an independent
error of variance at most ``Delta^2 / 4 <= b^2 / 1024`` next to the Laplace ``2 b^2`` (0.05%):
the curator's deconvolution, which assumes pure Laplace errors, is misspecified by that
much. :meth:`LaplaceFeatureLabelMechanism.report_law` declares the law for
:func:`~ldptree.accounting.verify_ldp` (a :class:`~ldptree.accounting.FeatureBlock` and a label
block), with the float32 sampler's caveat.

Debiasing: the only cell statistic is the label total, ``s^ = n c + Delta_Y sum_i code_i``
(unbiased for ``sum_i clip(y_i)``); the kernel read-out uses the decoded reports themselves
(:meth:`decode_features`, :meth:`decode_labels`).
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
from ldptree._validation import check_int, to_budget_split, to_epsilon, to_label_bound
from ldptree.accounting._channels import grid_laplace_channel, grid_laplace_log_probs
from ldptree.accounting._law import AffineLabelMap, FeatureBlock, LabelBlock, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._random import holder_words, key_words, laplace, unit_halfopen
from ldptree.mechanisms._records import check_records
from ldptree.mechanisms._sampled_laplace import Float32LaplaceSampling
from ldptree.protocols import CellEstimates

#: Laplace tail beyond which released codes are clamped, in units of the noise scale.
CLAMP_SCALES = 64.0
_INT32_LIMIT = 2**31 - 1


class LaplaceFeatureLabelReport(NamedTuple):
    """Reports of ``n`` holders as grid codes: ``features`` ``int32[n, d]``, ``label`` ``int32[n]``
    (released values ``1/2 + Delta_X code`` and ``c + Delta_Y code``)."""

    features: jax.Array
    label: jax.Array


def _step(scale: float) -> float:
    return 2.0 ** (math.floor(math.log2(scale)) - 4)


def _positive_features(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, got {value!r}")


@attrs.frozen
class LaplaceFeatureLabelMechanism:
    """Laplace on every clipped feature and on the clipped label (module docstring).

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
                ("features (Laplace, L1 sensitivity d)", self.feature_epsilon),
                ("label (Laplace, sensitivity R)", self.label_epsilon),
            ),
        )

    @property
    def feature_scale(self) -> float:
        """``b_X = d / (phi eps)``."""
        return self.n_features / self.feature_epsilon

    @property
    def feature_step(self) -> float:
        return _step(self.feature_scale)

    @property
    def feature_code_limit(self) -> int:
        return math.ceil((0.5 + CLAMP_SCALES * self.feature_scale) / self.feature_step)

    @property
    def label_center(self) -> float:
        return (self.label_bound[0] + self.label_bound[1]) / 2.0

    @property
    def label_range(self) -> float:
        return self.label_bound[1] - self.label_bound[0]

    @property
    def label_scale(self) -> float:
        """``b_Y = R / ((1 - phi) eps)``."""
        return self.label_range / self.label_epsilon

    @property
    def label_step(self) -> float:
        return _step(self.label_scale)

    @property
    def label_code_limit(self) -> int:
        return math.ceil(
            (self.label_range / 2.0 + CLAMP_SCALES * self.label_scale) / self.label_step
        )

    @property
    def max_summary_rows(self) -> int:
        """Largest batch whose label code total fits exactly in int32."""
        return _INT32_LIMIT // self.label_code_limit

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
        and ``features`` ``float[n, d]`` (scaled); holder ``h``'s noise depends only on ``key``
        and ``h``."""
        labels, x = self._check(cells, labels, n_cells, features)
        n = int(labels.shape[0])
        pad = bucket(n, MIN_ROWS) - n
        out = _privatize(
            self,
            key_words(key),
            jnp.pad(x, ((0, pad), (0, 0))),
            jnp.pad(labels, (0, pad)),
            jnp.uint32(first_holder),
        )
        return LaplaceFeatureLabelReport(out.features[:n], out.label[:n])

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
        """``c^ = n`` (everyone is in the one cell) and ``s^ = n c + Delta_Y sum code``."""
        total = np.asarray(stats["code_total"], dtype=np.float64).reshape(1)
        count = np.array([float(n)])
        return CellEstimates(
            count=count, label_sum=self.label_center * count + self.label_step * total, n=int(n)
        )

    def decode_features(self, codes: Any) -> FloatArray:
        """Released features ``1/2 + Delta_X code`` as float64 ``[n, d]``."""
        out: FloatArray = 0.5 + self.feature_step * np.asarray(codes, dtype=np.float64)
        return out

    def decode_labels(self, codes: Any) -> FloatArray:
        """Released labels ``c + Delta_Y code`` as float64 ``[n]``."""
        out: FloatArray = self.label_center + self.label_step * np.asarray(codes, np.float64)
        return out

    # -- likelihood and verification ------------------------------------------------------------
    def feature_location(self, x: float) -> float:
        """Declared location ``(clip(x, 0, 1) - 1/2) / Delta_X`` of a feature code (float64)."""
        return (min(max(float(x), 0.0), 1.0) - 0.5) / self.feature_step

    def label_location(self, label: float) -> float:
        """Declared location ``(clip(y) - c) / Delta_Y`` of the label code (float64)."""
        lo, hi = self.label_bound
        return (min(max(float(label), lo), hi) - self.label_center) / self.label_step

    def feature_sampler_location(self, mu: float) -> float:
        """The float32 location the kernel computes for declared feature location ``mu``."""
        x = np.float32(0.5 + float(mu) * self.feature_step)
        shifted = np.float32(np.clip(x, np.float32(0.0), np.float32(1.0)) - np.float32(0.5))
        return float(shifted) / self.feature_step

    def label_sampler_location(self, mu: float) -> float:
        """The float32 location the kernel computes for declared label location ``mu``."""
        lo, hi = (np.float32(v) for v in self.label_bound)
        y = np.float32(self.label_center + self.label_step * float(mu))
        shifted = np.float32(np.clip(y, lo, hi) - np.float32(self.label_center))
        return float(shifted) / self.label_step

    def log_prob(
        self,
        report: LaplaceFeatureLabelReport,
        cell: int,
        label: float,
        n_cells: int,
        *,
        features: Any = None,
    ) -> float:
        """``log P(report | features, label)`` under the declared law (independent coordinates)."""
        del cell
        if int(n_cells) != 1:
            raise ValueError(f"n_cells must be 1 for {type(self).__name__}, got {n_cells}")
        if features is None:
            raise ValueError("log_prob needs the record's features=float[d]")
        x = np.asarray(features, dtype=np.float64).reshape(-1)
        codes = np.asarray(report.features, dtype=np.int64).reshape(-1)
        if x.shape != (self.n_features,) or codes.shape != (self.n_features,):
            raise ValueError(f"features and report.features must have {self.n_features} entries")
        k_x, k_y = self.feature_code_limit, self.label_code_limit
        code_y = int(report.label)
        if np.abs(codes).max() > k_x or abs(code_y) > k_y:
            return -math.inf
        beta_x = self.feature_scale / self.feature_step
        total = math.fsum(
            float(grid_laplace_log_probs(beta_x, k_x, self.feature_location(xk))[c + k_x])
            for xk, c in zip(x, codes, strict=True)
        )
        beta_y = self.label_scale / self.label_step
        mu_y = self.label_location(label)
        return total + float(grid_laplace_log_probs(beta_y, k_y, mu_y)[code_y + k_y])

    def report_law(self, n_cells: int) -> ReportLaw:
        """A :class:`~ldptree.accounting.FeatureBlock` of ``d`` grid-Laplace codes at
        ``feature_location(x_k)`` and one label code at ``label_location(y)``, each with the
        float32 sampler's caveat (:class:`Float32LaplaceSampling`)."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        if n_cells != 1:
            raise ValueError(f"n_cells must be 1 for {type(self).__name__}, got {n_cells}")
        beta_x = self.feature_scale / self.feature_step
        beta_y = self.label_scale / self.label_step
        # float32 rounding of x in [0, 1] and of x - 1/2: at most 2^-24 in feature units
        x_error = 2.0**-23 / self.feature_step
        lo, hi = self.label_bound
        reach = max(abs(lo), abs(hi)) + abs(self.label_center) + self.label_range / 2.0
        y_error = reach * 2.0**-24 * (1.0 + 2.0**-22) / self.label_step
        feature_channel = grid_laplace_channel(
            beta_x,
            self.feature_code_limit,
            sampling=Float32LaplaceSampling(
                beta=beta_x,
                beta_used=float(np.float32(beta_x)),
                location_error=x_error,
                limit=self.feature_code_limit,
                locate=self.feature_sampler_location,
            ),
        )
        label_channel = grid_laplace_channel(
            beta_y,
            self.label_code_limit,
            sampling=Float32LaplaceSampling(
                beta=beta_y,
                beta_used=float(np.float32(beta_y)),
                location_error=y_error,
                limit=self.label_code_limit,
                locate=self.label_sampler_location,
            ),
        )

        def assemble(outputs: dict[str, list[Any]]) -> LaplaceFeatureLabelReport:
            return LaplaceFeatureLabelReport(
                features=jnp.asarray(np.asarray(outputs["features"], dtype=np.int32)),
                label=jnp.asarray(outputs["label"][0], dtype=jnp.int32),
            )

        return ReportLaw(
            blocks=(
                FeatureBlock(
                    "features",
                    feature_channel,
                    n_features=self.n_features,
                    feature_map=AffineLabelMap(0.0, 1.0, 0.5, 1.0 / self.feature_step),
                ),
                LabelBlock("label", label_channel, inputs=lambda t: (t,)),
            ),
            label_map=AffineLabelMap(*self.label_bound, self.label_center, 1.0 / self.label_step),
            assemble=assemble,
        )


@partial(jax.jit, static_argnums=(0,))
def _privatize(
    mech: LaplaceFeatureLabelMechanism,
    key_data: jax.Array,
    x: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
) -> LaplaceFeatureLabelReport:
    # Words per holder: (Laplace, rounding) for each feature, then for the label.
    n, d = x.shape
    words = holder_words(key_data, first_holder, n, 2 * d + 2)
    # NaN would survive clip and leak through a deterministic code: treat it as the centre.
    x = jnp.where(jnp.isnan(x), jnp.float32(0.5), x)
    loc_x = (jnp.clip(x, 0.0, 1.0) - jnp.float32(0.5)) / mech.feature_step
    beta_x = mech.feature_scale / mech.feature_step
    v_x = loc_x + beta_x * laplace(words[:, 0 : 2 * d : 2])
    code_x = jnp.floor(v_x + unit_halfopen(words[:, 1 : 2 * d : 2]))
    lo, hi = mech.label_bound
    labels = jnp.where(jnp.isnan(labels), mech.label_center, labels)
    loc_y = (jnp.clip(labels, lo, hi) - mech.label_center) / mech.label_step
    v_y = loc_y + (mech.label_scale / mech.label_step) * laplace(words[:, 2 * d])
    code_y = jnp.floor(v_y + unit_halfopen(words[:, 2 * d + 1]))
    k_x, k_y = mech.feature_code_limit, mech.label_code_limit
    return LaplaceFeatureLabelReport(
        jnp.clip(code_x, -k_x, k_x).astype(jnp.int32),
        jnp.clip(code_y, -k_y, k_y).astype(jnp.int32),
    )
