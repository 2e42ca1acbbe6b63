"""Where each repetition's public, private-training and test rows come from.

A *data source* draws one :class:`Split` per repetition from a NumPy generator:

* :class:`RandomSplit` (LPDT real data): a random permutation of one dataset cut in
  proportions ``public : train : test`` (``1 : 7 : 2``); public and test sizes are
  ``floor(n r / sum r)``, training gets the rest.
* :class:`GivenPublicSplit` (LPCT real data): the public rows are a fixed file; the
  private file is split into training and test (``test_fraction = 0.2``).
* :class:`SyntheticSource`: fresh draws from a generator ``(n, rng) -> (X, y)`` (LPDT Figure 2).

:func:`impute_from_public` then fills missing features with *public* column medians, so no
statistic of private or test rows enters the pipeline. Scaling is not done here: estimators fit
the min-max box on the public rows themselves.

Categorical features: :func:`~ldptree.datasets.load_dataset` one-hot encodes every level present
in a file, private rows included. A real-data split keeps only the indicator columns of levels
that occur in its *public* rows (:func:`public_levels`; the ``"col=<missing>"`` column too), so
the feature set never reveals a level or a missing value that only private or test rows have:
such a row has all indicators of that column at 0, as a holder with an unpublished level would
encode it. The private file of a :class:`GivenPublicSplit` is aligned to the public file's
columns by name the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_int, check_open_unit
from ldptree.datasets._real import Dataset
from ldptree.experiments._describe import callable_label


@attrs.frozen(eq=False)
class Split:
    """One repetition's data: public ``(X_public, y_public)``, private training, test."""

    X_public: FloatArray
    y_public: np.ndarray[Any, Any]
    X_train: FloatArray
    y_train: np.ndarray[Any, Any]
    X_test: FloatArray
    y_test: np.ndarray[Any, Any]

    @property
    def sizes(self) -> tuple[int, int, int]:
        return (self.X_public.shape[0], self.X_train.shape[0], self.X_test.shape[0])


@runtime_checkable
class DataSource(Protocol):
    """A named task that draws a :class:`Split` per repetition."""

    @property
    def name(self) -> str: ...

    @property
    def task(self) -> str: ...

    def draw(self, rng: np.random.Generator) -> Split: ...

    def describe(self) -> dict[str, Any]: ...


def _to_ratios(value: Any) -> tuple[float, ...]:
    return tuple(float(x) for x in value)


def _check_ratios(_: object, attribute: attrs.Attribute[Any], value: tuple[float, ...]) -> None:
    if len(value) != 3 or any(not np.isfinite(r) or r <= 0 for r in value):
        raise ValueError(f"{attribute.name} must be three positive numbers, got {value!r}")


@attrs.frozen(eq=False)
class RandomSplit:
    """Random ``public : train : test`` split of one dataset (module docstring)."""

    dataset: Dataset
    ratios: tuple[float, float, float] = attrs.field(
        default=(1.0, 7.0, 2.0),
        converter=_to_ratios,
        validator=_check_ratios,
    )

    def __attrs_post_init__(self) -> None:
        n_public, _, n_test = self._sizes()
        if n_public < 2 or n_test < 1 or self.dataset.n - n_public - n_test < 1:
            raise ValueError(
                f"ratios {self.ratios} leave dataset {self.dataset.name!r} (n={self.dataset.n}) "
                "with fewer than 2 public, 1 training or 1 test row"
            )

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def task(self) -> str:
        return self.dataset.task

    def _sizes(self) -> tuple[int, int, int]:
        n, total = self.dataset.n, sum(self.ratios)
        n_public = int(np.floor(n * self.ratios[0] / total))
        n_test = int(np.floor(n * self.ratios[2] / total))
        return n_public, n - n_public - n_test, n_test

    def draw(self, rng: np.random.Generator) -> Split:
        n_public, n_train, _ = self._sizes()
        order = rng.permutation(self.dataset.n)
        pub, train, test = np.split(order, [n_public, n_public + n_train])
        X, y = self.dataset.X, self.dataset.y
        split = Split(X[pub], y[pub], X[train], y[train], X[test], y[test])
        return public_levels(split, self.dataset.categorical)

    def describe(self) -> dict[str, Any]:
        return {"split": "random", "dataset": self.name, "ratios": list(self.ratios)}


@attrs.frozen(eq=False)
class GivenPublicSplit:
    """Fixed public file; the private file is split into training and test each repetition."""

    name: str
    public: Dataset
    private: Dataset
    test_fraction: float = attrs.field(default=0.2)

    def __attrs_post_init__(self) -> None:
        check_open_unit(self.test_fraction, "test_fraction")
        numeric = [_numeric_names(d) for d in (self.public, self.private)]
        sources = [sorted(c for c, _ in d.categorical) for d in (self.public, self.private)]
        if numeric[0] != numeric[1] or sources[0] != sources[1]:
            raise ValueError(
                f"public ({self.public.name!r}) and private ({self.private.name!r}) datasets have "
                "different feature columns; they must share the numeric and categorical columns"
            )
        if self.public.task != self.private.task:
            raise ValueError("public and private datasets must have the same task")

    @property
    def task(self) -> str:
        return self.private.task

    def draw(self, rng: np.random.Generator) -> Split:
        n = self.private.n
        n_test = max(1, int(np.floor(n * self.test_fraction)))
        order = rng.permutation(n)
        test, train = order[:n_test], order[n_test:]
        X, y = _align(self.private, self.public.feature_names), self.private.y
        split = Split(self.public.X, self.public.y, X[train], y[train], X[test], y[test])
        return public_levels(split, self.public.categorical)

    def describe(self) -> dict[str, Any]:
        return {
            "split": "given-public",
            "public": self.public.name,
            "private": self.private.name,
            "test_fraction": self.test_fraction,
        }


@attrs.frozen(eq=False)
class SyntheticSource:
    """Fresh samples from ``generator(n, rng) -> (X, y)`` for each repetition."""

    name: str
    generator: Callable[[int, np.random.Generator], tuple[FloatArray, FloatArray]]
    n_public: int
    n_train: int
    n_test: int
    task: str = "regression"

    def __attrs_post_init__(self) -> None:
        check_int(self.n_public, "n_public", minimum=2)
        check_int(self.n_train, "n_train", minimum=1)
        check_int(self.n_test, "n_test", minimum=1)

    def draw(self, rng: np.random.Generator) -> Split:
        parts = [self.generator(m, rng) for m in (self.n_public, self.n_train, self.n_test)]
        return Split(*parts[0], *parts[1], *parts[2])

    def describe(self) -> dict[str, Any]:
        return {
            "split": "synthetic",
            "generator": callable_label(self.generator),
            "sizes": [self.n_public, self.n_train, self.n_test],
        }


def _numeric_names(data: Dataset) -> list[str]:
    one_hot = {j for _, columns in data.categorical for j in columns}
    return [name for j, name in enumerate(data.feature_names) if j not in one_hot]


def _align(data: Dataset, names: tuple[str, ...]) -> FloatArray:
    """``data.X`` in the columns ``names`` (by name; a column ``data`` lacks is all 0)."""
    index = {name: j for j, name in enumerate(data.feature_names)}
    out = np.zeros((data.n, len(names)))
    for k, name in enumerate(names):
        if name in index:
            out[:, k] = data.X[:, index[name]]
    return out


def public_levels(split: Split, categorical: tuple[tuple[str, tuple[int, ...]], ...]) -> Split:
    """``split`` without the one-hot columns of levels absent from its public rows.

    ``categorical`` maps each categorical source column to its indicator columns
    (:attr:`~ldptree.datasets.Dataset.categorical`). A level (or the missing-value indicator)
    that no public row has is dropped from every part: the feature set is then a function of the
    public rows only (module docstring)."""
    if not categorical:
        return split
    keep = np.ones(split.X_public.shape[1], dtype=bool)
    for _, columns in categorical:
        cols = list(columns)
        keep[cols] = np.any(split.X_public[:, cols] != 0, axis=0)
    if keep.all():
        return split
    Xq, X, Xt = (A[:, keep] for A in (split.X_public, split.X_train, split.X_test))
    return Split(Xq, split.y_public, X, split.y_train, Xt, split.y_test)


def impute_from_public(split: Split) -> Split:
    """Fill ``NaN`` features of every part with the public column medians.

    A column with no observed public value is filled with 0 (a constant, so still no private
    statistic). Splits without missing values are returned unchanged.
    """
    parts = (split.X_public, split.X_train, split.X_test)
    if not any(np.isnan(X).any() for X in parts):
        return split
    observed = ~np.isnan(split.X_public)
    fill = np.zeros(split.X_public.shape[1])
    has = observed.any(axis=0)
    fill[has] = np.nanmedian(split.X_public[:, has], axis=0)
    Xq, X, Xt = (np.where(np.isnan(A), fill, A) for A in parts)
    return Split(Xq, split.y_public, X, split.y_train, Xt, split.y_test)
