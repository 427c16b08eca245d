"""The app, status, metrics and collect commands against hostile input (issue 29, findings
8-12): `app submit` never follows a redirect for its PUT (real nginx with the shipped
configuration and a location of the test's own) and does not record the day; numeric options
outside their range are usage errors, never a trap; special files are refused at once; text
from a server in status.json is printed escaped; node names with control characters are
refused when the config is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from test_key_server_e2e import day_ahead_offset
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (the nodes fixture)
from trialserver import FAKETIME, TrialServer, faketime_env


def gaenctl(bin_dir: Path, *args, env=None, timeout: float = 30) -> subprocess.CompletedProcess:
    # Under libfaketime, one exec between (it hides the arguments of the first program it is preloaded into).
    wrapper = ["nice", "-n", "0"] if env else []
    return subprocess.run([*wrapper, str(bin_dir / "gaenctl"), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.skipif(FAKETIME is None, reason="libfaketime is not installed (scripts/setup.sh installs the faketime package)")
def test_submit_does_not_follow_redirects_and_records_nothing(radio, nodes, bin_dir, tmp_path):
    """A server answering the PUT with 307 (which would resend the key ZIP) or 301 (an empty
    PUT) to its own inbox, where the board's credentials are valid: the client stops at the
    redirect, nothing lands in the inbox, the day is not recorded, and the real URL then works."""
    r = radio([{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    offset, _ = day_ahead_offset(tmp_path)
    env = faketime_env(offset)
    password = os.urandom(12).hex()
    redirects = """
location ~ "^/moved307(?<rest>/.*)$" { return 307 $scheme://$host:$server_port$rest; }
location ~ "^/moved301(?<rest>/.*)$" { return 301 $scheme://$host:$server_port$rest; }
"""
    server = TrialServer(tmp_path, {"board-a": password}, env=env, extra_locations=redirects)
    try:
        node = nodes("a", r.ready["devices"]["a"]["connect"])
        node.start()
        pw = tmp_path / "a.password"
        pw.write_text(password + "\n")
        state = tmp_path / "app-a"

        def submit(url: str) -> subprocess.CompletedProcess:
            return gaenctl(bin_dir, "--bus", node.bus.address, "app", "submit", "--server", url, "--user", "board-a",
                           "--password-file", pw, "--consent", "yes", "--state-dir", state, env=env, timeout=60)

        for code in (307, 301):
            out = submit(f"{server.url}/moved{code}")
            assert out.returncode != 0 and "keys uploaded" not in out.stdout, (code, out.stdout, out.stderr)
            assert str(code) in out.stderr and "redirect" in out.stderr.lower(), (code, out.stderr)
            assert not list((server.srv / "inbox").rglob("*.zip")), code
            recorded = state / "submitted.json"
            assert not recorded.exists() or json.loads(recorded.read_text()) == [], recorded.read_text()
        puts = [(status, uri) for _, status, uri in server.requests() if "/inbox/" in uri]
        assert [status for status, _ in puts] == [307, 301] and all(uri.startswith("/moved") for _, uri in puts), puts
        # The real URL: the day goes up now, once.
        out = submit(server.url)
        assert out.returncode == 0 and out.stdout.startswith("1 keys uploaded"), out.stdout + out.stderr
        assert len(list((server.srv / "inbox" / "board-a").glob("*.zip"))) == 1
        assert len(json.loads((state / "submitted.json").read_text())) >= 1
    finally:
        server.stop()


def test_numeric_options_are_usage_errors(bin_dir, tmp_path):
    """Each one line and exit 64, never SIGILL, never 'Missing value' for a negative number."""
    pw = tmp_path / "pw"
    pw.write_text("x\n")
    sync = ["app", "sync", "--server", "http://127.0.0.1:1/keys", "--country", "DE", "--trust", f"K:1={pw}", "--state-dir", tmp_path]
    submit = ["app", "submit", "--server", "http://127.0.0.1:1", "--user", "b", "--password-file", pw, "--consent", "yes",
              "--state-dir", tmp_path]
    collect = ["collect", "--server", "http://127.0.0.1:1/collect/", "--password-file", pw, "--spool", tmp_path / "spool"]
    for args, message in (([*sync, "--run-timeout", "inf"], "--run-timeout must be a number of seconds"),
                          ([*sync, "--file-timeout", "1e308"], "--file-timeout must be a number of seconds"),
                          ([*sync, "--match-wait", "-5"], "--match-wait must be a number of seconds"),
                          ([*sync, "--max-provide-calls", "-1"], "--max-provide-calls must be a number of calls"),
                          ([*submit, "--upload-timeout", "nan"], "--upload-timeout must be a number of seconds"),
                          ([*submit, "--upload-timeout", "-5"], "--upload-timeout must be a number of seconds in 1.0...3600.0, got -5.0"),
                          ([*collect, "--days", "-1"], "--days must be a number of days in 1...366, got -1"),
                          ([*collect, "--limit-rate", "-5"], "--limit-rate must be a number of bytes per second")):
        out = gaenctl(bin_dir, *args)
        assert out.returncode == 64 and message in out.stderr, (args[-2:], out.returncode, out.stderr[-400:])
        assert "Missing value" not in out.stderr


def test_special_files_are_refused_at_once(radio, nodes, bin_dir, tmp_path):
    """A FIFO as a password file, as status.json or as submitted.json: one line at once, no hang."""
    r = radio([{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    node = nodes("a", r.ready["devices"]["a"]["connect"])
    node.start()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pw = tmp_path / "pw"
    pw.write_text("x\n")
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "status.json")
    os.mkfifo(state / "submitted.json")
    cases = (
        (["app", "submit", "--server", "http://127.0.0.1:1", "--user", "b", "--password-file", fifo, "--consent", "yes",
          "--state-dir", tmp_path / "s1"], "is a FIFO"),
        (["collect", "--server", "http://127.0.0.1:1/c/", "--password-file", fifo, "--spool", tmp_path / "spool"], "is a FIFO"),
        (["app", "status", "--state-dir", state], "is a FIFO"),
        (["app", "submit", "--server", "http://127.0.0.1:1", "--user", "b", "--password-file", pw, "--consent", "yes",
          "--state-dir", state], "submitted.json is a FIFO"),
    )
    for args, message in cases:
        t0 = time.monotonic()
        out = gaenctl(bin_dir, "--bus", node.bus.address, *args, timeout=20)
        assert time.monotonic() - t0 < 10, args
        assert out.returncode != 0 and message in out.stderr, (args[:2], out.returncode, out.stderr[-400:])
    # gaenctl status and metrics: the app's part is a note, the node's status still comes.
    for args in (["status", "--app-state", state], ["metrics", "--app-state", state]):
        t0 = time.monotonic()
        out = gaenctl(bin_dir, "--bus", node.bus.address, *args, timeout=20)
        assert time.monotonic() - t0 < 10 and out.returncode == 0 and "status.json is a FIFO" in out.stderr, (args, out.stderr[-400:])


def test_server_text_in_status_is_printed_escaped(bin_dir, tmp_path):
    """A server URL and an error holding ESC sequences and a forged line, as a hostile index
    puts them into status.json: printed escaped, one line each."""
    state = tmp_path / "app"
    state.mkdir()
    hostile = "\x1b[2J\x1b[31mX\napp risk:       high (cwa)"
    (state / "status.json").write_text(json.dumps({
        "formatVersion": 1, "packagesHeld": 1, "packagesProvided": 1, "packagesWaiting": 0,
        "lastSync": {"startedAt": 1, "finishedAt": 2, "server": "http://x/" + hostile, "newPackages": 0, "provided": 0,
                     "refused": 0, "pending": 0, "bytes": 0, "error": "index: " + hostile},
        "risk": {"computedAt": 2, "engine": "cwa\x1b]0;x\x07", "level": "low", "windows": 0, "detail": "{}"}}))
    out = gaenctl(bin_dir, "app", "status", "--state-dir", state)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout, repr(out.stdout)
    risk_lines = [line for line in out.stdout.splitlines() if line.startswith("app risk:")]
    assert risk_lines == [risk_lines[0]] and "low" in risk_lines[0], out.stdout
    assert "\\u{1b}[2J" in out.stdout and "X\\napp risk:" in out.stdout, out.stdout


@pytest.mark.parametrize("name", ["a\\rb", "a\\0b", "x\\e[31my"])
def test_node_names_with_control_characters_are_refused_at_load(bin_dir, tmp_path, name):
    """research.node with a carriage return, a NUL or an escape: gaend does not start, with
    a message naming the setting (a NUL used to pass and then break every GetAll)."""
    config = tmp_path / "gaend.conf"
    config.write_text(f'research:\n  node: "{name}"\n  site: e2e\n')
    # --check-controller reads the config and stops: no controller, bus or store involved.
    out = subprocess.run([str(bin_dir / "gaend"), "--config", config, "--check-controller"], capture_output=True, text=True, timeout=30)
    # The node is the board's name: the one board-name rule (docs/provision.md), the value escaped.
    # Status 255, not 1: as gaend@.service's ExecCondition, 1 would only skip the unit.
    assert out.returncode == 255 and "'research.node'" in out.stderr and "allowed a letter or digit" in out.stderr, out.stderr
    assert not any(c in out.stderr for c in "\r\0\x1b"), out.stderr
    # The site is printable text: the same characters there are refused by that rule.
    config.write_text(f'research:\n  node: board-1\n  site: "{name}"\n')
    out = subprocess.run([str(bin_dir / "gaend"), "--config", config, "--check-controller"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 255 and "'research.site'" in out.stderr and "printable characters only" in out.stderr, out.stderr
