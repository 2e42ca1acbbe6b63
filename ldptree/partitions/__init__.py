"""Partitions of the feature space and the rules that grow them on public data."""

from ldptree.partitions._builder import grow
from ldptree.partitions._max_edge import MaxEdgePartitioner
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler

__all__ = ["MaxEdgePartitioner", "Partition", "RangeScaler", "grow"]
