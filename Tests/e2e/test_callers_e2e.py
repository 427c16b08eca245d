"""Stalled and hostile D-Bus callers: descriptors a caller passes never hold
the node up. Calls are made with jeepney (a D-Bus client that passes descriptors), each on
its own connection, passing pipes the test holds open and never serves, as a misbehaving app
would."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import wait_for
from test_node_e2e import FAST_CONFIG, SCALE, TX_POWER, nodes  # noqa: F401 (nodes is a fixture)

TIMEOUT = 10  # callers.io_timeout_seconds in these tests: longer than WATCHDOG_USEC below
# A node held by the stalled calls would miss it. Not shorter: the radio path is asked with a
# deadline of half of it, and under CI load (debug build, the Python radio, another suite) one
# answer once took over 2 s, which a 4 s watchdog turns into a miss unrelated to the callers.
# systemd's unit uses 30 s.
WATCHDOG_SECONDS = 8
STOP_LIMIT = 15  # the unit's TimeoutStopSec (systemd/gaend.service)
CONFIG = FAST_CONFIG + f"""
callers:
  io_timeout_seconds: {TIMEOUT}
  calls_in_flight: 3
"""

jeepney = pytest.importorskip("jeepney", reason="jeepney (tools/requirements.txt) passes descriptors over D-Bus")
from jeepney import DBusAddress, MessageType, new_method_call  # noqa: E402
from jeepney.io.blocking import open_dbus_connection  # noqa: E402


class Call:
    """One method call on its own connection, in the background, as a separate app makes it.
    `h` arguments are fd numbers (sent with the message, then the test's copies stay open)."""

    def __init__(self, node, interface: str, method: str, signature: str, *args) -> None:
        self.error: str | None = None
        self.message = ""
        self.body = None
        self.done = threading.Event()
        target = DBusAddress("/org/gaend", bus_name="org.gaend", interface=f"org.gaend.{interface}")
        msg = new_method_call(target, method, signature, args)
        self.conn = open_dbus_connection(node.bus.address, enable_fds=True)
        threading.Thread(target=self.run, args=(msg,), daemon=True).start()

    def run(self, msg) -> None:
        try:
            reply = self.conn.send_and_get_reply(msg, timeout=60)
            if reply.header.message_type == MessageType.error:
                from jeepney.low_level import HeaderFields
                self.error = reply.header.fields.get(HeaderFields.error_name)
                self.message = reply.body[0] if reply.body else ""
            else:
                self.body = reply.body
        except Exception as e:  # noqa: BLE001 (reported by the test)
            self.error, self.message = "client", repr(e)
        finally:
            self.done.set()
            self.conn.close()

    def wait(self, timeout: float) -> "Call":
        assert self.done.wait(timeout), "call did not return"
        return self


def stalled_reader_pipe() -> tuple[int, int]:
    """A pipe whose writer never writes nor closes: read end to pass, write end kept."""
    return os.pipe()


def full_pipe() -> tuple[int, int]:
    """A pipe nobody reads, already full: any write into it waits forever."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return r, w


class Notify:
    """A NOTIFY_SOCKET that records when each WATCHDOG=1 arrived."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="gaend-notify-"))
        self.path = self.dir / "notify"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))
        self.sock.settimeout(0.1)
        self.pings: list[float] = []
        self.running = True
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while self.running:
            try:
                if "WATCHDOG=1" in self.sock.recv(4096).decode():
                    self.pings.append(time.monotonic())
            except socket.timeout:
                pass

    def close(self) -> None:
        self.running = False
        self.thread.join(2)
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def test_stalled_callers_never_hold_the_node(radio, nodes):
    """Two ProvideDiagnosisKeys whose key-file pipes never end and one ExportSightings into a
    pipe nobody reads: status answers within a second, scans keep being recorded, the watchdog
    keeps being fed, each call fails with org.gaend.Error.Timeout, a caller past its limit gets
    LimitExceeded at once, and SIGTERM stops gaend within TimeoutStopSec."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], config=CONFIG.format(tx=TX_POWER, name="n"))
    notify = Notify()
    try:
        # gaend pings every WATCHDOG_SECONDS / 2; a gap of WATCHDOG_SECONDS would have systemd kill
        # it, and the stall (TIMEOUT) lasts longer than that.
        n.start(env=dict(os.environ, NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC=str(WATCHDOG_SECONDS * 1_000_000)))
        n.wait_scans(2, timeout=60)
        # The node is up: it has fed the watchdog twice. (In CI, right after the unit tests, the
        # first answer of the radio path once came 2-8 s after start, callers or not.)
        assert wait_for(lambda: len(notify.pings) >= 2, 30, 0.2), notify.pings
        kept: list[int] = []
        calls = []
        for _ in range(2):
            rd, wr = stalled_reader_pipe()
            kept += [rd, wr]
            calls.append(Call(n, "ExposureNotification1", "ProvideDiagnosisKeys", "ahs", [rd], "stalled"))
        rd, wr = full_pipe()
        kept += [rd, wr]
        calls.append(Call(n, "Research1", "ExportSightings", "hxxs", wr, 0, 9_999_999_999_999, "csv"))
        started = time.monotonic()
        time.sleep(0.5)
        # A fourth call from the same uid: past calls_in_flight (3), refused at once.
        rd4, wr4 = stalled_reader_pipe()
        kept += [rd4, wr4]
        extra = Call(n, "ExposureNotification1", "ProvideDiagnosisKeys", "ahs", [rd4], "extra").wait(10)
        assert extra.error == "org.gaend.Error.LimitExceeded" and "calls passing file descriptors in flight" in extra.message, extra.message

        scans_before = n.status()["scanCount"]
        latencies = []
        while time.monotonic() - started < TIMEOUT - 0.5:
            t0 = time.monotonic()
            n.status()
            latencies.append(time.monotonic() - t0)
            time.sleep(0.2)
        assert max(latencies) < 1.0, latencies
        for c in calls:
            c.wait(30)
        elapsed = time.monotonic() - started
        for c in calls:
            assert c.error == "org.gaend.Error.Timeout" and "moved no data" in c.message, (c.error, c.message)
        assert TIMEOUT - 0.5 <= elapsed < TIMEOUT + 5, elapsed
        # Scans went on while the calls stalled (one every 3 s at x20).
        assert wait_for(lambda: n.status()["scanCount"] >= scans_before + 2, 20, 0.5), n.status()
        status = n.status()
        assert "active" in status["status"], status
        for fd in kept:
            os.close(fd)
        # The watchdog was fed all along: no gap near WATCHDOG_USEC.
        pings = [p for p in notify.pings if p >= started - 1]
        assert len(pings) >= 3 and max(b - a for a, b in zip(pings, pings[1:])) < WATCHDOG_SECONDS, pings

        # Stalled again at shutdown: SIGTERM ends the calls and gaend within TimeoutStopSec.
        rd, wr = stalled_reader_pipe()
        again = Call(n, "ExposureNotification1", "ProvideDiagnosisKeys", "ahs", [rd], "at-stop")
        time.sleep(0.5)
        t0 = time.monotonic()
        assert n.terminate() == 0, n.stderr
        assert time.monotonic() - t0 < STOP_LIMIT
        again.wait(30)
        os.close(rd)
        os.close(wr)
    finally:
        notify.close()
    # The store opens afterwards and exports what was recorded.
    n.start()
    assert len(n.export("csv").splitlines()) > 1


def test_export_into_a_pipe_nobody_reads(radio, nodes):
    """gaenctl's own path: a Research1 export whose reader never reads fails with Timeout while
    the node keeps rotating and scanning."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], config=CONFIG.format(tx=TX_POWER, name="n"))
    n.start()
    n.wait_scans(2, timeout=60)
    before = n.status()
    rd, wr = full_pipe()
    try:
        call = Call(n, "Research1", "ExportSightings", "hxxs", wr, 0, 9_999_999_999_999, "jsonl").wait(30)
        assert call.error == "org.gaend.Error.Timeout" and "moved no data" in call.message, (call.error, call.message)
    finally:
        os.close(rd)
        os.close(wr)
    assert wait_for(lambda: n.status()["scanCount"] > before["scanCount"] + 1, 20, 0.5)
    after = n.status()
    assert after["advertisementCount"] >= before["advertisementCount"], (before, after)
    assert n.proc.poll() is None


def test_fifo_key_file_gets_a_clear_message(radio, nodes, tmp_path):
    """gaenctl keys provide with a FIFO (named pipe): one clear line, not a permission error."""
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    n = nodes("n", r.ready["devices"]["n"]["connect"], config=CONFIG.format(tx=TX_POWER, name="n"))
    n.start()
    fifo = tmp_path / "keys.fifo"
    os.mkfifo(fifo)
    out = n.ctl("keys", "provide", fifo, timeout=20)
    assert out.returncode == 1 and "is a FIFO (named pipe), not a key file" in out.stderr, out.stderr
    assert "permission" not in out.stderr.lower()
    # AddMarker refuses times no one means.
    for bad in (-1, 9223372036854775807):
        res = Call(n, "Research1", "AddMarker", "xsds", bad, "label", 1.0, "note").wait(10)
        assert res.error == "org.freedesktop.DBus.Error.InvalidArgs" and "outside 2000-01-01...2200-01-01" in res.message, res.message
