"""Fixtures for the virtual radio's own tests."""

from __future__ import annotations

import pytest

from helpers import Radio


@pytest.fixture
def radio(tmp_path):
    """radio(devices=[...], channel={...}, seed=N) starts a harness; stopped at teardown."""
    started: list[Radio] = []

    def start(devices=None, channel=None, seed=7) -> Radio:
        if devices is None:
            devices = [{"name": "a", "transport": "tcp-server:127.0.0.1:0"},
                       {"name": "b", "transport": "tcp-server:127.0.0.1:0", "x": 3}]
        r = Radio({"devices": devices, "channel": channel or {}, "seed": seed}, tmp_path)
        started.append(r)
        return r

    yield start
    for r in started:
        err = r.stop()
        assert "Traceback" not in err, err
