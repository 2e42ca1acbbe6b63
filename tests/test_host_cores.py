"""``ldptree.use_host_cores``: the device count it asks JAX for, its switch, and that it never
fails once JAX has started (the count can no longer change then)."""

from __future__ import annotations

import jax
import pytest

import ldptree
from ldptree._host_cores import ENV_VAR, available_cores, requested_devices, use_host_cores


def test_requested_count_from_argument_environment_or_cores() -> None:
    assert requested_devices(3, {}) == 3
    assert requested_devices(None, {ENV_VAR: "4"}) == 4
    assert requested_devices(None, {ENV_VAR: "off"}) == 1
    assert requested_devices(None, {ENV_VAR: "0"}) == 1
    assert requested_devices(None, {}) == available_cores() >= 1
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="n must be a positive integer"):
            requested_devices(bad, {})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=ENV_VAR):
        requested_devices(None, {ENV_VAR: "many"})


def test_after_jax_started_the_existing_count_is_returned() -> None:
    jax.numpy.zeros(1).block_until_ready()  # JAX's backend is running in this process
    count = len(jax.local_devices(backend="cpu"))
    assert ldptree.use_host_cores is use_host_cores
    assert use_host_cores(count + 3) == count
    assert len(jax.local_devices(backend="cpu")) == count
