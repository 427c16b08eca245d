"""Fixtures for the virtual radio's own tests."""

from __future__ import annotations

import json

import pytest

from helpers import Radio


@pytest.fixture(scope="session")
def _radios(tmp_path_factory):
    """Harness processes shared by the session, one per distinct configuration."""
    radios: dict[str, Radio] = {}
    yield radios, tmp_path_factory.mktemp("vradio")
    logs = {key: r.stop() for key, r in radios.items()}
    for key, log in logs.items():
        assert "Traceback" not in log, (key, log)


@pytest.fixture
def radio(_radios):
    """radio(devices=[...], channel={...}, seed=N) gives a harness in its configured start
    state (started once per configuration, then put back with the control `restore`)."""
    radios, tmp = _radios

    def start(devices=None, channel=None, seed=7) -> Radio:
        if devices is None:
            devices = [{"name": "a", "transport": "tcp-server:127.0.0.1:0"},
                       {"name": "b", "transport": "tcp-server:127.0.0.1:0", "x": 3}]
        config = {"devices": devices, "channel": channel or {}, "seed": seed}
        key = json.dumps(config, sort_keys=True)
        if key in radios and radios[key].proc.poll() is None:
            radios[key].ok(cmd="restore")
        else:
            radios[key] = Radio(config, tmp)
        return radios[key]

    return start
