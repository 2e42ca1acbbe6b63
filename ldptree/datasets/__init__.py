"""Synthetic generators of the papers' experiments and real-data loaders."""

from ldptree.datasets._lpct import (
    LPCTSample,
    lpct_bayes_accuracy,
    lpct_eta,
    make_lpct_pair,
    sample_lpct,
)

__all__ = ["LPCTSample", "lpct_bayes_accuracy", "lpct_eta", "make_lpct_pair", "sample_lpct"]
