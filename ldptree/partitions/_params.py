"""Validators for the hyper-parameters shared by the partition rules (attrs field validators)."""

from __future__ import annotations

from typing import Any

import attrs

from ldptree._validation import check_int, check_real
from ldptree.partitions._criteria import CRITERIA


def to_threshold(value: Any) -> float:
    """attrs converter for ``threshold`` (minimal criterion reduction of a split)."""
    return check_real(value, "threshold")


def check_criterion(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in CRITERIA:
        raise ValueError(f"{attribute.name} must be one of {sorted(CRITERIA)}, got {value!r}")


def nonneg_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    check_int(value, attribute.name, minimum=0)


def positive_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    check_int(value, attribute.name, minimum=1)
