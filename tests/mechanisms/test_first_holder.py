"""Holder indices are 32-bit: a ``first_holder`` that would wrap is refused, never reused."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.mechanisms import (
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    LaplaceFeatureLabelMechanism,
    RRLaplaceMechanism,
)
from ldptree.mechanisms._records import check_first_holder

KEY = jax.random.key(0)


def _calls():
    """``(name, call(first_holder, n))`` for every built-in entry point taking first_holder."""
    rr = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    lab = LaplaceCellLabelMechanism(epsilon=1.0, label_bound=1.0)
    cls = LaplaceCellClassMechanism(epsilon=1.0)
    feat = LaplaceFeatureLabelMechanism(epsilon=1.0, n_features=2, label_bound=1.0)

    def real(m, method):
        def call(first, n):
            cells = np.zeros(n, np.int32)
            return getattr(m, method)(KEY, cells, np.zeros(n, np.float32), 3, first_holder=first)

        return call

    def classes(method):
        def call(first, n):
            cells = np.zeros(n, np.int32)
            return getattr(cls, method)(KEY, cells, np.zeros(n, np.int32), 3, first_holder=first)

        return call

    def features(first, n):
        return feat.privatize(
            KEY,
            np.zeros(n, np.int32),
            np.zeros(n, np.float32),
            1,
            first_holder=first,
            features=np.full((n, 2), 0.5),
        )

    return [
        ("rr.privatize", real(rr, "privatize")),
        ("rr.privatize_summarize", real(rr, "privatize_summarize")),
        ("label.privatize", real(lab, "privatize")),
        ("label.privatize_summarize", real(lab, "privatize_summarize")),
        ("class.privatize", classes("privatize")),
        ("class.privatize_summarize", classes("privatize_summarize")),
        ("features.privatize", features),
    ]


@pytest.mark.parametrize(("name", "call"), _calls())
def test_wrapping_holder_range_is_refused(name, call):
    # holders 2^32 - 1 and 2^32: the second would reuse holder 0's randomness
    with pytest.raises(ValueError, match="first_holder"):
        call(2**32 - 1, 2)
    with pytest.raises(ValueError, match="first_holder"):
        call(-1, 2)
    # the last representable range is accepted
    call(2**32 - 2, 2)


def test_check_first_holder_rules():
    check_first_holder(0, 2**32)
    check_first_holder(np.int64(5), 10)
    with pytest.raises(ValueError, match="first_holder"):
        check_first_holder(1, 2**32)
    with pytest.raises(TypeError, match="first_holder"):
        check_first_holder(1.0, 2)
    with pytest.raises(TypeError, match="first_holder"):
        check_first_holder(True, 2)
    # a traced first_holder cannot be checked eagerly: it passes (documented limit)
    jax.jit(lambda h: check_first_holder(h, 2) or h)(np.uint32(3))
