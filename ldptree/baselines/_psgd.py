"""PSGD (Lowy et al. 2023): sequentially interactive LDP SGD with a public warm start.

Model ``f_theta``: ``model="linear"`` is logistic regression ``x . w + b``; ``model="mlp"`` one
hidden ReLU layer of ``int(hidden_ratio * d)`` units (at least 1) then a linear output. Loss: binary
cross-entropy ``l(theta; x, y) = log(1 + e^{f}) - y f`` with ``y in {0, 1}`` (``classes_[1]`` is 1).
Features are min-max scaled to the public box (not clipped: privacy never depends on them).

1. **Warm start** (public data only): ``warm_start_steps`` (100) full-batch gradient steps
   ``theta <- theta - lr grad mean_Q l``.
2. **One pass** over a uniformly random permutation of the ``n_P + n_Q`` samples, batch size 1:
   a public sample takes the plain step ``theta <- theta - lr grad l``; private holder ``i``
   receives the current ``theta`` (public), computes its own gradient ``g_i`` (all parameter
   tensors concatenated), normalises it to ``g_bar_i = g_i / max(|g_i|, C)`` (``C = clip_norm``,
   1 as in the reference) and sends one message ``Z_i = PrivUnitG_eps(g_bar_i)`` (after a random
   rounding of ``g_bar_i`` to the sphere, :meth:`~._privunit.PrivUnitG.privatize_ball`); the
   curator steps ``theta <- theta - lr Z_i``. ``E[Z_i | theta] = g_bar_i``.

Privacy. Each private holder sends exactly one message, from an eps-LDP randomiser chosen using
only earlier messages and public data (sequential interactivity), so the protocol is eps-LDP for
every holder (``privacy_ = (eps, 0)``); public samples cost nothing, and the permutation and
initialisation are independent of the data.

``mode="reference"`` reproduces the reference code's per-tensor privatisation: *each* parameter
tensor's gradient (weight and bias; 4 tensors for the MLP) is privatised separately with the full
``eps``, so a holder sends ``k`` messages and is ``k eps``-LDP by basic composition (``2 eps`` for
the linear model, ``4 eps`` for the MLP): ``privacy_`` reports that effective ``k eps``. The
reference also feeds a short ``g_bar`` (``|g| < C``) to PrivUnitG as it is, which voids the
PrivUnitG guarantee altogether (unbounded ratio, ``docs/baselines.md``); both modes round it to
the sphere at random instead (same mean, eps-LDP).

The per-sample step is jitted and the pass is one ``lax.scan``; holder ``i``'s randomness is
``fold_in(key, i)`` for ``i < 2^32`` (``fold_in(fold_in(key, i mod 2^32), i >> 32)`` beyond),
independent of the permutation's other entries. Holder indices are 64-bit on the host and passed
to the device as two 32-bit halves, so no index wraps and no two holders share a key.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ldptree._typing import FloatArray
from ldptree._validation import (
    as_key,
    check_choice,
    check_epsilon,
    check_features,
    check_int,
    check_positive,
    check_real,
)
from ldptree.accounting import PrivacySpend
from ldptree.baselines._privunit import PrivUnitG
from ldptree.estimators import (
    BaseEstimator,
    ClassifierMixin,
    check_class_labels,
    check_fit_data,
    encode_labels,
    fit_scaler,
    keeps_state_on_error,
    resolve_classes,
)
from ldptree.rounds import budget_ledger

__all__ = ["PSGDClassifier", "psgd_spend"]

_MODELS = ("linear", "mlp")
_MODES = ("correct", "reference")
Params = tuple[jax.Array, ...]


def _init_params(key: jax.Array, n_features: int, hidden: int | None) -> Params:
    """PyTorch's ``nn.Linear`` initialisation: weights and biases ``U(-1/sqrt(fan_in), ...)``."""
    sizes = [n_features, 1] if hidden is None else [n_features, hidden, 1]
    params: list[jax.Array] = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        key, k_w, k_b = jax.random.split(key, 3)
        bound = 1.0 / math.sqrt(fan_in)
        params.append(jax.random.uniform(k_w, (fan_in, fan_out), minval=-bound, maxval=bound))
        params.append(jax.random.uniform(k_b, (fan_out,), minval=-bound, maxval=bound))
    return tuple(params)


def _logits(params: Params, X: jax.Array) -> jax.Array:
    """``f_theta(X): float[n]`` (linear: 2 tensors; MLP: 4 tensors, ReLU hidden layer)."""
    h = X
    n_layers = len(params) // 2
    for layer in range(n_layers):
        h = h @ params[2 * layer] + params[2 * layer + 1]
        if layer < n_layers - 1:
            h = jax.nn.relu(h)
    out: jax.Array = h[..., 0]
    return out


def _bce(params: Params, X: jax.Array, y: jax.Array) -> jax.Array:
    """Mean binary cross-entropy ``softplus(f) - y f`` (stable for large ``|f|``)."""
    f = _logits(params, X)
    loss: jax.Array = jnp.mean(jax.nn.softplus(f) - y * f)
    return loss


def _step(params: Params, update: Params, lr: jax.Array) -> Params:
    return tuple(p - lr * u for p, u in zip(params, update, strict=True))


@functools.partial(jax.jit, static_argnames=("privunit", "per_tensor", "warm_start_steps", "clip"))
def _train(
    params: Params,
    X_public: jax.Array,
    y_public: jax.Array,
    sequence: tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array],
    key: jax.Array,
    lr: jax.Array,
    *,
    privunit: PrivUnitG,
    per_tensor: bool,
    warm_start_steps: int,
    clip: float,
) -> Params:
    """Warm start, then the one-pass scan over ``sequence = (x, y, index, private, valid)``.

    ``index[t]`` is a private holder's 64-bit index as ``uint32`` halves ``(low, high)``;
    ``private[t]`` is false for a public sample (index ``(0, 0)``, unused); ``valid[t] = 0``
    marks a private label outside ``classes_``, released as the null record (zero gradient, so a
    uniformly random direction: pure noise).
    """

    def warm(p: Params, _: None) -> tuple[Params, None]:
        return _step(p, jax.grad(_bce)(p, X_public, y_public), lr), None

    params, _ = jax.lax.scan(warm, params, None, length=warm_start_steps)

    def one(p: Params, sample: tuple[jax.Array, ...]) -> tuple[Params, None]:
        x, y, index, private, valid = sample
        grad = jax.grad(_bce)(p, x[None, :], y[None])
        low = jax.random.fold_in(key, index[0])
        k = jax.lax.cond(index[1] == 0, lambda: low, lambda: jax.random.fold_in(low, index[1]))
        if per_tensor:
            keys = jax.random.split(k, len(grad))
            message = tuple(
                privunit.privatize_ball(kk, valid * g.ravel(), clip).reshape(g.shape)
                for kk, g in zip(keys, grad, strict=True)
            )
        else:
            flat, unravel = ravel_pytree(grad)
            message = unravel(privunit.privatize_ball(k, valid * flat, clip))
        update = tuple(jnp.where(private, m, g) for m, g in zip(message, grad, strict=True))
        return _step(p, update, lr), None

    params, _ = jax.lax.scan(one, params, sequence)
    return params


def _to_float32(X: FloatArray) -> np.ndarray[Any, Any]:
    """``X`` as float32, finite values beyond float32's range clipped to ``+-max``."""
    top = float(np.finfo(np.float32).max)
    out: np.ndarray[Any, Any] = np.clip(X, -top, top).astype(np.float32)
    return out


def psgd_spend(epsilon: float, model: str, mode: str) -> PrivacySpend:
    """A private holder's spend: one eps message (``"correct"``), or one per parameter tensor
    (``"reference"``: 2 for the linear model, 4 for the MLP), composed sequentially."""
    if mode == "correct":
        return PrivacySpend(epsilon=epsilon, parts=(("whole gradient", epsilon),))
    names = ("w", "b") if model == "linear" else ("w1", "b1", "w2", "b2")
    return PrivacySpend.sequential(
        *(PrivacySpend(epsilon=epsilon, parts=((f"{n} gradient", epsilon),)) for n in names)
    )


#: Most full-batch warm-start steps on the public sample.
MAX_WARM_START_STEPS = 100_000


class PSGDClassifier(ClassifierMixin, BaseEstimator):
    """PSGD-L / PSGD-N (Lowy et al. 2023), binary; see the module docstring for the math.

    Parameters
    ----------
    epsilon:
        Per-holder budget ``eps > 0``; one PrivUnitG message per private holder.
    lr:
        Learning rate of the warm start and of the pass (paper grid ``{1e-5, 1e-3, 1e-1, 1}``).
    model:
        ``"linear"`` (PSGD-L, logistic regression) or ``"mlp"`` (PSGD-N, one hidden ReLU layer).
    hidden_ratio:
        Hidden units ``int(hidden_ratio * d)`` (at least 1) for ``model="mlp"``.
    mode:
        ``"correct"`` (default): the whole gradient privatised once, eps-LDP. ``"reference"``: each
        parameter tensor privatised with the full eps (reference code), ``k eps``-LDP.
    warm_start_steps:
        Full-batch public gradient steps before the pass (100 in the reference).
    clip_norm:
        ``C > 0``: a gradient is normalised to ``g / max(|g|, C)`` before privatisation.
    classes:
        The two class labels if ``y_public`` does not show both (never learned from private y).
    privacy_budget:
        Optional cap on the epsilon this fit may spend (checked before any private step).
    random_state:
        ``None``, an int seed or a JAX key: initialisation, permutation and all privacy noise.

    Attributes
    ----------
    classes_, scaler_, params_ (tuple of float32 tensors), mechanism_ (:class:`PrivUnitG`),
    messages_per_holder_ (1, or the number of tensors in reference mode), n_private_steps_,
    privacy_, privacy_ledger_, privacy_certificate_ (one message's ReleaseCertificate),
    n_features_in_
    """

    #: Not the one round (:class:`~ldptree.protocols.OwnRoundEstimator`).
    private_round: ClassVar[str] = (
        "sequentially interactive: one PrivUnitG message per holder, a gradient at the model "
        "built from the public warm start and earlier messages"
    )

    def __init__(
        self,
        epsilon: float = 1.0,
        lr: float = 0.1,
        model: str = "linear",
        *,
        hidden_ratio: float = 1.0,
        mode: str = "correct",
        warm_start_steps: int = 100,
        clip_norm: float = 1.0,
        classes: Any = None,
        privacy_budget: float | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    @keeps_state_on_error
    def fit(self, X: Any, y: Any, *, X_public: Any = None, y_public: Any = None) -> PSGDClassifier:
        """Warm start on the public sample, then one interactive pass (module docstring)."""
        epsilon = check_epsilon(self.epsilon, "epsilon")
        lr = check_positive(self.lr, "lr")
        model = check_choice(self.model, "model", _MODELS)
        mode = check_choice(self.mode, "mode", _MODES)
        warm_steps = check_int(self.warm_start_steps, "warm_start_steps", minimum=0)
        if warm_steps > MAX_WARM_START_STEPS:
            raise ValueError(
                f"warm_start_steps must be <= {MAX_WARM_START_STEPS} (each is a full pass over "
                f"the public sample), got {warm_steps}"
            )
        clip = check_positive(self.clip_norm, "clip_norm")
        X_arr, y_raw, Xq, yq = check_fit_data(
            X, y, X_public, y_public, check_labels=check_class_labels
        )
        if Xq is not None and yq is None:
            raise ValueError(
                "PSGDClassifier needs y_public with X_public (its warm start is supervised); "
                "pass both or neither"
            )
        classes = resolve_classes(self.classes, yq)
        if classes.shape[0] != 2:
            raise ValueError(
                f"PSGDClassifier is binary, but there are {classes.shape[0]} classes (from "
                "y_public/classes)"
            )
        d = X_arr.shape[1]
        hidden = None
        if model == "mlp":
            ratio = check_real(self.hidden_ratio, "hidden_ratio")
            if ratio <= 0.0:
                raise ValueError(f"hidden_ratio must be > 0, got {ratio}")
            hidden = max(1, int(ratio * d))
        scaler = fit_scaler(Xq, d, 0.0)
        privunit = PrivUnitG(epsilon)
        certificate = privunit.certificate()  # of the sampler's constants, before any private row
        if not certificate.holds:
            raise ValueError(
                f"PrivUnitG's realised bound {certificate.epsilon:.12g} exceeds epsilon={epsilon}"
            )
        spend = psgd_spend(certificate.epsilon_claimed, model, mode)
        n_tensors = len(spend.parts)
        ledger = budget_ledger(self.privacy_budget).record(
            "one PrivUnitG message per tensor" if mode == "reference" else "one message", spend
        )

        codes = encode_labels(y_raw, classes, "y")
        n_p = X_arr.shape[0]
        # features beyond float32's range are clipped to it (privacy never depends on them)
        Xp = _to_float32(scaler.transform(X_arr))
        if Xq is None or yq is None:
            Xq_s = np.zeros((0, d), np.float32)
            yq01 = np.zeros(0, np.float32)
            warm_steps = 0  # no public data: no warm start
        else:
            Xq_s = scaler.transform(Xq).astype(np.float32)
            yq01 = encode_labels(yq, classes, "y_public").astype(np.float32)
        key = as_key(self.random_state)
        k_init, k_perm, k_priv = jax.random.split(key, 3)
        params = _init_params(k_init, d, hidden)
        order = np.asarray(jax.random.permutation(k_perm, n_p + Xq_s.shape[0]))
        X_all = np.concatenate([Xp, Xq_s])[order]
        y_all = np.concatenate([np.maximum(codes, 0).astype(np.float32), yq01])[order]
        # 64-bit holder indices (an int32 index wrapped at 2^31 and its holders shared a key)
        holder = np.concatenate([np.arange(n_p, dtype=np.int64), np.full(Xq_s.shape[0], -1)])
        private = holder >= 0
        index = np.where(private, holder, 0).astype(np.uint64)
        halves = np.stack([index & np.uint64(0xFFFFFFFF), index >> np.uint64(32)], axis=1)
        halves = halves.astype(np.uint32)
        valid = np.concatenate([(codes >= 0), np.ones(Xq_s.shape[0], bool)]).astype(np.float32)
        params = _train(
            params,
            jnp.asarray(Xq_s),
            jnp.asarray(yq01),
            (
                jnp.asarray(X_all),
                jnp.asarray(y_all),
                jnp.asarray(halves[order]),
                jnp.asarray(private[order]),
                jnp.asarray(valid[order]),
            ),
            k_priv,
            jnp.float32(lr),
            privunit=privunit,
            per_tensor=mode == "reference",
            warm_start_steps=warm_steps,
            clip=clip,
        )
        self.classes_ = classes
        self.n_features_in_ = d
        self.scaler_ = scaler
        self.params_ = tuple(np.asarray(p) for p in params)
        self.mechanism_ = privunit
        self.messages_per_holder_ = n_tensors
        self.n_private_steps_ = int(np.sum(holder >= 0))
        self.privacy_ledger_ = ledger.post_process("prediction with the trained parameters")
        self.privacy_ = ledger.total
        self.privacy_certificate_ = certificate
        return self

    def decision_function(self, X: Any) -> FloatArray:
        """The logit ``f_theta(x): float[n]``."""
        self._check_fitted("params_")
        X_arr = check_features(X, self.n_features_in_)
        scaled = jnp.asarray(self.scaler_.transform(X_arr).astype(np.float32))
        logits = _logits(tuple(jnp.asarray(p) for p in self.params_), scaled)
        return np.asarray(logits, dtype=np.float64)

    def predict_proba(self, X: Any) -> FloatArray:
        """``float[n, 2]``: ``(1 - sigmoid(f), sigmoid(f))``."""
        p1 = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.stack([1.0 - p1, p1], axis=1)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """``classes_[1{f_theta(x) > 0}]``."""
        labels: np.ndarray[Any, Any] = self.classes_[(self.decision_function(X) > 0).astype(int)]
        return labels
