"""Synthetic generators of both papers and (later) real-data loaders."""

from ldptree.datasets._lpct import (
    LPCTSample,
    lpct_bayes_accuracy,
    lpct_eta,
    make_lpct_pair,
    sample_lpct,
)
from ldptree.datasets._lpdt import lpdt_figure1, lpdt_uniform, sine_regression_function

__all__ = [
    "LPCTSample",
    "lpct_bayes_accuracy",
    "lpct_eta",
    "lpdt_figure1",
    "lpdt_uniform",
    "make_lpct_pair",
    "sample_lpct",
    "sine_regression_function",
]
