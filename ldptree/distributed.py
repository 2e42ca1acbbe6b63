"""Rounds on a Dask cluster (the ``dask`` extra), and reports in files: the engine
(:func:`ldptree.rounds.run`) with the :class:`Dask` executor runs any round over private rows
(each piece on a worker) or released :class:`Reports` (arrays, futures or files written by
:func:`save_reports`, folded where they lie), with the one-process result bit for bit."""

from __future__ import annotations

from ldptree.rounds import Dask, Reports, load_reports, save_reports

__all__ = ["Dask", "Reports", "load_reports", "save_reports"]
