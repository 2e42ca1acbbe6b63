"""Detecting a non-private fit upstream of an ldptree estimator.

An ldptree estimator cannot see who calls its ``fit``; but when the caller is an ordinary
scikit-learn ``Pipeline`` (not a :class:`~ldptree.preprocessing.PublicPipeline`), the
``Pipeline.fit`` frame is a few frames up the stack, and its earlier steps were just fitted on the
private ``X``. :func:`warn_if_private_preprocessing` looks for that frame (a bounded walk of the
stack, nothing else) and warns. Preprocessing done by hand before ``fit`` cannot be detected.
"""

from __future__ import annotations

import sys
import warnings

#: How many frames above ``fit`` are searched for a calling ``Pipeline``.
_MAX_DEPTH = 12


class PrivatePreprocessingWarning(UserWarning):
    """A transformer was fitted on private features in front of an ldptree estimator."""


def warn_if_private_preprocessing(estimator: object) -> None:
    """Warn if ``estimator`` is the final step of an ordinary ``Pipeline`` being fitted with
    transformers (not ``None``/``"passthrough"``) in front of it."""
    pipeline_cls = getattr(sys.modules.get("sklearn.pipeline"), "Pipeline", None)
    if pipeline_cls is None:
        return
    from ldptree.preprocessing import PublicPipeline

    frame = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame.f_back is None:
            return
        frame = frame.f_back
        caller = frame.f_locals.get("self")
        if not isinstance(caller, pipeline_cls) or isinstance(caller, PublicPipeline):
            continue
        if caller.steps[-1][1] is not estimator:
            continue
        fitted = [n for n, t in caller.steps[:-1] if t is not None and t != "passthrough"]
        if fitted:
            warnings.warn(
                f"the Pipeline steps {fitted} in front of {type(estimator).__name__} were "
                "fitted on the private X (a non-private computation) and X_public bypasses "
                "them; use ldptree.preprocessing.PublicPipeline, which fits them on X_public "
                "only and transforms both",
                PrivatePreprocessingWarning,
                stacklevel=2,
            )
        return
