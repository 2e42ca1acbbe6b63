"""Small mechanisms for the verifier's tests, independent of the built-ins: one Laplace-noised
label coordinate (optionally behind a one-hot cell vector), with a declared sampler caveat."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree.accounting import (
    AffineInput,
    AffineLabelMap,
    CellBlock,
    LabelBlock,
    LaplaceChannel,
    ReportLaw,
)
from ldptree.protocols import CellEstimates


@attrs.frozen
class FixedTV:
    """A declared sampler caveat: total variation at most ``tau`` per coordinate."""

    tau: float
    note: str = "test sampler within a fixed total variation"

    def tv_bound(self, inputs: Sequence[Any]) -> float:
        return self.tau

    def unreachable(self, a: Any, b: Any) -> Any:
        return None

    def exact_delta(self, a: Any, b: Any, epsilon: float) -> float | None:
        return None


class ToyReport(NamedTuple):
    cells: jax.Array  # float[n, L]: one-hot + noise
    label: jax.Array  # float[n]: t + noise


@attrs.frozen
class ToyLaplace:
    """Cell one-hot (noise scale ``4 / epsilon``, two coordinates differ: ``epsilon / 2``) and the
    label coordinate ``t = label_map(y)`` for ``y`` in ``[0, 1]`` (noise scale ``2 / epsilon``:
    ``epsilon / 2``). ``tau``: a declared sampler caveat on every coordinate; ``delta``: the
    mechanism's own delta claim."""

    epsilon: float
    label_map: Callable[[float], float] = attrs.field(factory=lambda: AffineLabelMap(0.0, 1.0))
    tau: float = 0.0
    delta: float = 0.0

    def _t(self, labels: Any) -> np.ndarray[Any, Any]:
        return np.asarray([self.label_map(float(y)) for y in np.asarray(labels)], np.float64)

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> ToyReport:
        cells = jnp.asarray(cells)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(
            first_holder + jnp.arange(cells.shape[0])
        )
        noise = jax.vmap(lambda k: jax.random.laplace(k, (n_cells + 1,)))(keys)
        one_hot = jax.nn.one_hot(cells, n_cells)
        t = jnp.asarray(self._t(labels), jnp.float32)
        return ToyReport(
            one_hot + (4.0 / self.epsilon) * noise[:, :n_cells],
            t + (2.0 / self.epsilon) * noise[:, n_cells],
        )

    def summarize(self, reports: ToyReport, n_cells: int) -> dict[str, Any]:
        return {"cells": jnp.sum(reports.cells, axis=0), "label": jnp.sum(reports.label)}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        count = np.asarray(stats["cells"], np.float64)
        return CellEstimates(count, np.zeros_like(count), n)

    def log_prob(self, report: ToyReport, cell: int, label: float, n_cells: int) -> float:
        def laplace(x: Any, mu: Any, b: float) -> float:
            return float(np.sum(-math.log(2.0 * b) - np.abs(np.asarray(x, np.float64) - mu) / b))

        mu = (np.arange(n_cells) == cell).astype(np.float64)
        return laplace(report.cells, mu, 4.0 / self.epsilon) + laplace(
            report.label, self.label_map(float(label)), 2.0 / self.epsilon
        )

    def report_law(self, n_cells: int) -> ReportLaw:
        sampling = FixedTV(self.tau) if self.tau > 0.0 else None
        cell = LaplaceChannel(4.0 / self.epsilon, sampling=sampling)
        label = LaplaceChannel(2.0 / self.epsilon, sampling=sampling)

        def assemble(outputs: dict[str, list[Any]]) -> ToyReport:
            return ToyReport(jnp.asarray(outputs["cells"]), jnp.asarray(outputs["label"][0]))

        return ReportLaw(
            blocks=(
                # declared as data: affine in t for every label, not only those evaluated
                CellBlock("cells", cell, on=(1.0,), off=(0.0,)),
                LabelBlock("label", label, inputs=(AffineInput(),)),
            ),
            label_map=self.label_map,
            assemble=assemble,
        )
