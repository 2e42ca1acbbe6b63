"""Partitions of the feature space and the rules that grow them on public data."""

from ldptree.partitions._builder import TreeRule, grow
from ldptree.partitions._cart import CartPartitioner
from ldptree.partitions._criteria import CRITERIA, Criterion
from ldptree.partitions._max_edge import MaxEdgePartitioner
from ldptree.partitions._partition import Partition
from ldptree.partitions._random_max_edge import RandomMaxEdgePartitioner
from ldptree.partitions._scaling import RangeScaler

__all__ = [
    "CRITERIA",
    "CartPartitioner",
    "Criterion",
    "MaxEdgePartitioner",
    "Partition",
    "RandomMaxEdgePartitioner",
    "RangeScaler",
    "TreeRule",
    "grow",
]
