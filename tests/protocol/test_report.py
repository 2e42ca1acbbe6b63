"""Holder reports: made from the record and the published round; untrusted ones are rejected."""

from __future__ import annotations

import copy
import json
from typing import Any

import jax
import numpy as np
import pytest
from protocol_helpers import simulated_report

from ldptree.mechanisms._random import holder_words, key_words
from ldptree.protocol import (
    REASONS,
    RejectedReportError,
    _holder,
    load_published,
    parse_report,
)


def test_report_is_valid_and_routed(published: dict[str, Any], monkeypatch: Any) -> None:
    """With Threefry words in place of the OS's, a holder's report is exactly the in-process
    ``privatize`` report of its routed cell."""
    round_ = load_published(published)
    mech, n_cells = round_.mechanism, round_.n_cells
    key = jax.random.key(3)
    monkeypatch.setattr(
        _holder,
        "_random_words",
        lambda n: np.asarray(holder_words(key_words(key), np.uint32(0), 1, n)),
    )
    x = np.array([7.5, -0.6])  # scaled (0.75, 0.2)
    report = simulated_report(x, 3.25, published)
    cell = round_.partition.cells(round_.scaler.transform(x[None]))
    expected = mech.privatize(key, cell, np.float32([3.25]), n_cells)
    np.testing.assert_array_equal(report["fields"]["bits"], np.asarray(expected.bits)[0])
    assert report["fields"]["code"] == [int(expected.code[0])]
    report_id, arrays = parse_report(json.dumps(report), round_)
    assert report_id == report["report_id"] and len(report_id) == 32
    assert arrays[0].shape == (n_cells,) and arrays[1].shape == ()


def test_os_randomness_gives_the_certified_flip_rate(published: dict[str, Any]) -> None:
    """400 reports x 8 bits from OS randomness: the share of bits differing from the one-hot
    is the realised flip probability q' within 6 standard deviations (false-failure rate below
    2e-9; the randomness is the OS's, so this test has no seed)."""
    round_ = load_published(published)
    q = round_.mechanism.flip_prob
    bits = np.array(
        [simulated_report([7.5, -0.6], 1.0, round_)["fields"]["bits"] for _ in range(400)]
    )
    cell = int(round_.partition.cells(round_.scaler.transform(np.array([[7.5, -0.6]])))[0])
    truth = np.zeros(round_.n_cells, int)
    truth[cell] = 1
    rate = float(np.mean(bits != truth))
    assert abs(rate - q) < 6 * np.sqrt(q * (1 - q) / bits.size)
    ids = {simulated_report([1.0, 0.0], 1.0, round_)["report_id"] for _ in range(50)}
    assert len(ids) == 50


def test_class_labels(published_classes: dict[str, Any]) -> None:
    round_ = load_published(published_classes)
    report = simulated_report([1.0, 0.5], 2, round_)
    _, arrays = parse_report(report, round_)
    assert arrays[1].shape == (round_.n_cells, 3)
    with pytest.raises(ValueError, match="class code"):
        simulated_report([1.0, 0.5], 1.5, round_)


@pytest.mark.parametrize(
    ("x", "label", "error"),
    [
        ([1.0], 1.0, ValueError),
        ([1.0, np.nan], 1.0, ValueError),
        (["a", 1.0], 1.0, TypeError),
        ([1.0, 0.0], np.inf, ValueError),
        ([1.0, 0.0], True, TypeError),
    ],
)
def test_holder_input_is_checked(
    published: dict[str, Any], x: Any, label: Any, error: type
) -> None:
    with pytest.raises(error):
        simulated_report(x, label, published)


def test_holder_refuses_unknown_versions(published: dict[str, Any]) -> None:
    bad = copy.deepcopy(published)
    bad["version"] = 99
    with pytest.raises(ValueError, match="version"):
        simulated_report([1.0, 0.0], 1.0, bad)


def _mutated(report: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(report)
    change(out)
    return out


def test_each_rejection_reason(published: dict[str, Any]) -> None:
    round_ = load_published(published)
    good = simulated_report([2.0, 0.0], 1.0, round_)
    text = json.dumps(good)
    margin = round_.mechanism.label_noise.margin

    def with_code(literal: str) -> str:
        return json.dumps(_mutated(good, lambda r: r["fields"].update(code=["@"]))).replace(
            '"@"', literal
        )

    cases: list[tuple[Any, str]] = [
        ("x" * 10**6, "oversized"),
        (text[: len(text) // 2], "malformed"),
        (b"\xff\xfe" + text.encode(), "malformed"),
        ("[" * 600, "malformed"),
        ("[" * 5000 + "]" * 5000, "oversized"),
        ("[1, 2]", "schema"),
        (_mutated(good, lambda r: r.pop("report_id")), "schema"),
        (_mutated(good, lambda r: r.update(extra=1)), "schema"),
        (_mutated(good, lambda r: r.update(version=2)), "version"),
        (_mutated(good, lambda r: r.update(version=1.0)), "version"),
        (_mutated(good, lambda r: r.update(report_id="ABC")), "report_id"),
        (_mutated(good, lambda r: r.update(report_id=7)), "report_id"),
        (_mutated(good, lambda r: r.update(round="0" * 64)), "round"),
        (_mutated(good, lambda r: r.update(round=None)), "round"),
        (_mutated(good, lambda r: r.pop("round")), "schema"),
        (_mutated(good, lambda r: r["fields"].pop("code")), "shape"),
        (_mutated(good, lambda r: r["fields"]["bits"].pop()), "shape"),
        (_mutated(good, lambda r: r["fields"].update(code=3)), "shape"),
        (_mutated(good, lambda r: r["fields"].update(code=[True])), "type"),
        (_mutated(good, lambda r: r["fields"].update(code=[1.0])), "type"),
        (_mutated(good, lambda r: r["fields"].update(code=[None])), "type"),
        (with_code("1e999"), "type"),
        (with_code("9" * 1000), "range"),
        (_mutated(good, lambda r: r["fields"].update(code=[float("inf")])), "type"),
        (_mutated(good, lambda r: r["fields"]["bits"].__setitem__(0, 2)), "range"),
        (_mutated(good, lambda r: r["fields"].update(code=[-margin - 1])), "range"),
        (_mutated(good, lambda r: r["fields"].update(code=[2**80])), "range"),
    ]
    for raw, reason in cases:
        assert reason in REASONS
        with pytest.raises(RejectedReportError) as info:
            parse_report(raw, round_)
        assert info.value.reason == reason, (str(raw)[:80], info.value)
    edge = _mutated(good, lambda r: r["fields"].update(code=[-margin]))
    assert parse_report(edge, round_)[1][1] == -margin


def test_random_garbage_never_raises_anything_else(published: dict[str, Any]) -> None:
    """Byte-level mutations of a valid report (seeded) are rejected with a reason or accepted,
    never anything else."""
    round_ = load_published(published)
    data = bytearray(json.dumps(simulated_report([2.0, 0.0], 1.0, round_)).encode())
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(2000):
        raw = bytearray(data)
        for pos in rng.integers(0, len(raw), rng.integers(1, 4)):
            raw[pos] = int(rng.integers(0, 256))
        try:
            parse_report(bytes(raw), round_)
            seen.add("accepted")
        except RejectedReportError as err:
            seen.add(err.reason)
    assert {"malformed", "accepted"} <= seen
