"""The built-in methods of the runner's default registry.

To register a new estimator, add one :class:`MethodSpec` line to ``DEFAULT_METHODS`` (for
example ``MethodSpec("phist", "regression", PHISTRegressor, "phist-real", "PHIST",
paper_key="P")``) and, if its grid is new, one preset in :mod:`._grids`.

``lpdt-v`` is ``LPDTRegressor(rule="cart")`` (the reference's quantile CART rule). A method
fixes only what its name says (the rule; for the LPCT rows the aggregate simulation, under which
the default mechanism is the papers'; LPCT-prune names it as well): every other
parameter is the estimator's default unless the grid point names it, so a grid that names only
``max_depth`` keeps the default guarded read-out (``readout="auto"``) and variance-aware
mechanism. The presets that reproduce the papers' numbers (``lpdt-real``, ``lpdt-depth``, ...)
name the papers' settings, ``mechanism="paper"`` and ``readout="ratio"``, themselves; the runner
records in every row which protective setting a configuration turned off (:mod:`._guards`).
Both LPDT variants memoise their deterministic partition across a grid: it depends on the public
rows, ``max_depth``, ``min_samples_leaf`` and ``min_samples_split`` only, not on ``rho`` or
``epsilon``.
"""

from __future__ import annotations

from typing import Any

from ldptree._validation import NotApplicableError, check_matrix
from ldptree.baselines import (
    APHISTRegressor,
    CTClassifier,
    DECONVRegressor,
    DTRegressor,
    PGLMClassifier,
    PHISTClassifier,
    PHISTRegressor,
    PSGDClassifier,
    check_grid_size,
)
from ldptree.ensembles import (
    LPCTForestClassifier,
    LPCTTwoRoundClassifier,
    LPDTForestRegressor,
    LPDTTwoRoundRegressor,
)
from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.experiments._memo import MemoPartitioner
from ldptree.experiments._registry import MethodRegistry, MethodSpec
from ldptree.partitions import CartPartitioner, MaxEdgePartitioner


def _memoised_lpdt(
    kind: type[MaxEdgePartitioner] | type[CartPartitioner],
    *,
    epsilon: float,
    random_state: Any,
    max_depth: int = 4,
    min_samples_leaf: int = 2,
    min_samples_split: int = 5,
    **kwargs: Any,
) -> LPDTRegressor:
    """``LPDTRegressor`` whose (deterministic, key-free) partition is memoised across a grid:
    growth is the most expensive step of a small-data fit, and a grid over ``rho`` and
    ``epsilon`` would otherwise regrow the same partition at every point. Same results as the
    plain estimator."""
    rule = MemoPartitioner(
        kind(
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
        )
    )
    return LPDTRegressor(
        epsilon,
        max_depth,
        min_samples_leaf,
        min_samples_split=min_samples_split,
        rule=rule,
        random_state=random_state,
        **kwargs,
    )


def lpdt_max_edge(**kwargs: Any) -> LPDTRegressor:
    """LPDT-M: ``LPDTRegressor(rule="max_edge", ...)`` with the partition memoised (keywords
    ``epsilon``, ``random_state``, ``max_depth=4``, ``min_samples_leaf=2``,
    ``min_samples_split=5`` and the estimator's own)."""
    return _memoised_lpdt(MaxEdgePartitioner, **kwargs)


def lpdt_cart(**kwargs: Any) -> LPDTRegressor:
    """LPDT-V: ``LPDTRegressor(rule="cart", ...)`` (quantile CART) with the partition memoised
    (keywords as :func:`lpdt_max_edge`)."""
    return _memoised_lpdt(CartPartitioner, **kwargs)


LPDT_M = MethodSpec("lpdt-m", "regression", lpdt_max_edge, "lpdt-real", "LPDT-M", paper_key="M")
LPDT_V = MethodSpec("lpdt-v", "regression", lpdt_cart, "lpdt-real", "LPDT-V", paper_key="V")

# -- baselines (issue 5): private competitors and non-private references ------------------------
# The histograms run the in-law aggregate simulation: the per-holder protocol costs
# O(n num_cell^d) per fit, which made the paper's grid unaffordable (3^8 cells: 27 s per fit).
_AGGREGATE = {"simulation": "aggregate"}
PHIST = MethodSpec(
    "phist", "regression", PHISTRegressor, "phist-real", "PHIST", fixed=_AGGREGATE, paper_key="P"
)
APHIST = MethodSpec(
    "aphist",
    "regression",
    APHISTRegressor,
    "phist-real",
    "APHIST",
    fixed=_AGGREGATE,
    paper_key="A",
)
# DECONV guarded (our default: fallback and clipping where the ratio is unsafe) and as the paper
# states it (no guard), which is the one comparable with the paper's column "D".
DECONV = MethodSpec("deconv", "regression", DECONVRegressor, "deconv-real", "DECONV")
DECONV_RAW = MethodSpec(
    "deconv-raw",
    "regression",
    DECONVRegressor,
    "deconv-real",
    "DECONV (unguarded)",
    fixed={"guard": "none"},
    paper_key="D",
)
DT = MethodSpec(
    "dt", "regression", DTRegressor, "dt-real", "DT (non-private)", paper_key="DT", private=False
)
DT_PUB = MethodSpec(
    "dt-pub",
    "regression",
    DTRegressor,
    "dt-real",
    "DT-pub (public data only)",
    fixed={"training": "public"},
    private=False,
    public_only=True,
)
CT_W = MethodSpec(
    "ct-w",
    "classification",
    CTClassifier,
    "ct-real",
    "CT-W (non-private)",
    fixed={"training": "union"},
    paper_key="CT-W",
    private=False,
)
CT_Q = MethodSpec(
    "ct-q",
    "classification",
    CTClassifier,
    "ct-real",
    "CT-Q (public data only)",
    fixed={"training": "public"},
    paper_key="CT-Q",
    private=False,
    public_only=True,
)
BASELINE_METHODS = (PHIST, APHIST, DECONV, DECONV_RAW, DT, DT_PUB, CT_W, CT_Q)

# --- classification baselines: phist-c, pglm, psgd-l, psgd-n -------------------------
# Paper keys name the LPCT Table 2 columns in _published.py.

#: The LPCT experiments' PHIST skip rule: ``num_cell^d <= 2^30`` and ``d < 32``.
PHIST_PAPER_MAX_CELLS = 2**30
PHIST_PAPER_MAX_FEATURES = 31


class PaperGridPHISTClassifier(PHISTClassifier):
    """:class:`~ldptree.baselines.PHISTClassifier` refusing (``NotApplicableError``) the points
    the LPCT experiments skipped (reported as ``-``): ``d >= 32`` or ``num_cell^d > 2^30``. The
    library's own memory guard (``max_cells``, default ``2^22``) still applies and is stricter.
    """

    def fit(
        self, X: Any, y: Any = None, *, X_public: Any = None, y_public: Any = None
    ) -> PaperGridPHISTClassifier:
        d = check_matrix(X, "X").shape[1]
        if d > PHIST_PAPER_MAX_FEATURES:
            raise NotApplicableError(
                f"phist-c is skipped for d >= {PHIST_PAPER_MAX_FEATURES + 1} features (the LPCT "
                f"experiments' rule), got d={d}; use PHISTClassifier directly to run it anyway"
            )
        check_grid_size(self.num_cell, d, PHIST_PAPER_MAX_CELLS)
        super().fit(X, y, X_public=X_public, y_public=y_public)
        return self


PHIST_C = MethodSpec(
    "phist-c",
    "classification",
    PaperGridPHISTClassifier,
    "phist-cls",
    "PHIST",
    fixed=_AGGREGATE,
    paper_key="PHIST",
)
PGLM = MethodSpec("pglm", "classification", PGLMClassifier, "pglm", "PGLM", paper_key="PGLM")
PSGD_L = MethodSpec(
    "psgd-l",
    "classification",
    PSGDClassifier,
    "psgd",
    "PSGD-L",
    fixed={"model": "linear"},
    paper_key="PSGD-L",
)
PSGD_N = MethodSpec(
    "psgd-n",
    "classification",
    PSGDClassifier,
    "psgd",
    "PSGD-N",
    fixed={"model": "mlp"},
    paper_key="PSGD-N",
)
CLASSIFICATION_BASELINES = (PHIST_C, PGLM, PSGD_L, PSGD_N)
# --- end classification baselines -----------------------------------------------------------------


# --- LPCT family (LPCT Table 2) -------------------------------------------
# The LPCT runs use ``simulation="aggregate"``: per-cell noise sums drawn in law,
# the same distribution of estimates as the per-holder protocol at O(cells) cost, which is what
# makes the paper's 1800-point oracle grid affordable.


def lpct_tree(
    *,
    epsilon: float,
    random_state: Any,
    rule: str = "max_edge",
    max_depth: int = 4,
    min_samples_leaf: int = 2,
    min_samples_split: int = 5,
    criterion: str = "gini",
    **kwargs: Any,
) -> LPCTClassifier:
    """``LPCTClassifier(rule=...)`` with the (deterministic) partition memoised across a grid:
    the max-edge and CART rules ignore their key, so results equal the plain estimator's."""
    kind = {"max_edge": MaxEdgePartitioner, "cart": CartPartitioner}[rule]
    partitioner = MemoPartitioner(
        kind(
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            criterion=criterion,
        )
    )
    return LPCTClassifier(
        epsilon,
        max_depth,
        min_samples_leaf,
        min_samples_split=min_samples_split,
        rule=partitioner,
        criterion=criterion,
        random_state=random_state,
        **kwargs,
    )


_AGG = _AGGREGATE
LPCT_M = MethodSpec(
    "lpct-m", "classification", lpct_tree, "lpct-real", "LPCT-M", fixed=_AGG, paper_key="LPCT-M"
)
LPCT_V = MethodSpec(
    "lpct-v",
    "classification",
    lpct_tree,
    "lpct-real",
    "LPCT-V",
    fixed={**_AGG, "rule": "cart"},
    paper_key="LPCT-V",
)
LPCT_PRUNE_M = MethodSpec(
    "lpct-prune-m",
    "classification",
    LPCTPrunedClassifier,
    "lpct-prune-real",
    "LPCT-prune-M",
    fixed={**_AGG, "mechanism": "paper"},
    paper_key="prune-M",
)
LPCT_PRUNE_V = MethodSpec(
    "lpct-prune-v",
    "classification",
    LPCTPrunedClassifier,
    "lpct-prune-real",
    "LPCT-prune-V",
    fixed={**_AGG, "rule": "cart", "mechanism": "paper"},
    paper_key="prune-V",
)
# LPDT for classification = LPCT-P: lambda = 0 (private counts only), on the LPCT-M grid minus
# lambda (reference ``LPCT_original``)
LPDT_C = MethodSpec(
    "lpdt-c",
    "classification",
    lpct_tree,
    "lpct-real-p",
    "LPDT (lambda=0)",
    fixed={**_AGG, "lam": 0.0},
    paper_key="LPDT",
)
LPCT_METHODS = (LPCT_M, LPCT_V, LPCT_PRUNE_M, LPCT_PRUNE_V, LPDT_C)


# --- forests (ldptree.ensembles) -------------------------------------------------------------
def _forest_options(params: dict[str, Any]) -> dict[str, Any]:
    """The forest's own keywords out of a grid point (the rest are the tree's)."""
    names = ("n_trees", "composition", "public_sample")
    return {name: params.pop(name) for name in names if name in params}


def lpdt_forest(*, epsilon: float, random_state: Any, **params: Any) -> LPDTForestRegressor:
    """``LPDTForestRegressor(LPDTRegressor(**tree params), ...)``: ``n_trees``, ``composition``
    and ``public_sample`` go to the forest, every other grid parameter to its trees."""
    forest = _forest_options(params)
    return LPDTForestRegressor(
        LPDTRegressor(**params), epsilon=epsilon, random_state=random_state, **forest
    )


def lpct_forest(*, epsilon: float, random_state: Any, **params: Any) -> LPCTForestClassifier:
    """``LPCTForestClassifier(LPCTClassifier(**tree params), ...)`` (as :func:`lpdt_forest`)."""
    forest = _forest_options(params)
    return LPCTForestClassifier(
        LPCTClassifier(**params), epsilon=epsilon, random_state=random_state, **forest
    )


_SEQUENTIAL = {"composition": "sequential"}
LPDT_FOREST = MethodSpec(
    "lpdt-forest", "regression", lpdt_forest, "lpdt-forest", "LPDT forest (holders split)"
)
LPDT_FOREST_SEQ = MethodSpec(
    "lpdt-forest-seq",
    "regression",
    lpdt_forest,
    "lpdt-forest",
    "LPDT forest (sequential)",
    fixed=_SEQUENTIAL,
)
LPCT_FOREST = MethodSpec(
    "lpct-forest", "classification", lpct_forest, "lpct-forest", "LPCT forest (holders split)"
)
LPCT_FOREST_SEQ = MethodSpec(
    "lpct-forest-seq",
    "classification",
    lpct_forest,
    "lpct-forest",
    "LPCT forest (sequential)",
    fixed=_SEQUENTIAL,
)
FOREST_METHODS = (LPDT_FOREST, LPDT_FOREST_SEQ, LPCT_FOREST, LPCT_FOREST_SEQ)


# --- two rounds (ldptree.ensembles) ----------------------------------------------------------
def _two_round_options(params: dict[str, Any]) -> dict[str, Any]:
    """The two-round design's own keywords out of a grid point (the rest are the tree's)."""
    names = ("extra_depth", "refine_empty", "refine_parts", "min_snr")
    return {name: params.pop(name) for name in names if name in params}


def lpdt_two_round(*, epsilon: float, random_state: Any, **params: Any) -> LPDTTwoRoundRegressor:
    """``LPDTTwoRoundRegressor(LPDTRegressor(**tree params), ...)``: ``extra_depth``,
    ``refine_empty``, ``refine_parts`` and ``min_snr`` go to the two-round design, every other
    grid parameter to round 2's tree."""
    own = _two_round_options(params)
    return LPDTTwoRoundRegressor(
        LPDTRegressor(**params), epsilon=epsilon, random_state=random_state, **own
    )


def lpct_two_round(*, epsilon: float, random_state: Any, **params: Any) -> LPCTTwoRoundClassifier:
    """``LPCTTwoRoundClassifier(LPCTClassifier(**tree params), ...)`` (as
    :func:`lpdt_two_round`)."""
    own = _two_round_options(params)
    return LPCTTwoRoundClassifier(
        LPCTClassifier(**params), epsilon=epsilon, random_state=random_state, **own
    )


LPDT_TWO_ROUND = MethodSpec(
    "lpdt-two-round", "regression", lpdt_two_round, "lpdt-forest", "LPDT two rounds"
)
LPCT_TWO_ROUND = MethodSpec(
    "lpct-two-round", "classification", lpct_two_round, "lpct-forest", "LPCT two rounds"
)
DEFAULT_METHODS = MethodRegistry(
    (
        LPDT_M,
        LPDT_V,
        *BASELINE_METHODS,
        *LPCT_METHODS,
        *CLASSIFICATION_BASELINES,
        *FOREST_METHODS,
        LPDT_TWO_ROUND,
        LPCT_TWO_ROUND,
    )
)
