"""The app half's own identity on the bus (issue 29, finding 7): a private dbus-daemon with the
shipped policies (dbus/org.gaend.conf and dbus/org.gaend.App1.conf) and callers of the users a
deployment has (systemd/gaend.sysusers: gaend, gaend-app; scripts/setup.sh's gaend-test-app1 in
group gaend; nobody), made by forking this process and dropping to that uid.

- Only the app's user owns org.gaend.App1 and org.gaend.App1.NAME; it owns none of gaend's names,
  and gaend's user none of the app's.
- RiskChanged (interface org.gaend.App1) reaches root and group gaend only, and only from the
  app's user: forgeries by gaend's user, a group-gaend app and nobody reach no one."""

from __future__ import annotations

import json
import os
import pwd
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import wait_for
from test_hostile_e2e import as_uid, needs_root, policy_node  # noqa: F401 (policy_node is a fixture)
from test_node_e2e import REPO, SYSTEM_LIKE_POLICY, nodes  # noqa: F401 (nodes is a fixture)

jeepney = pytest.importorskip("jeepney", reason="jeepney (tools/requirements.txt)")
from jeepney import DBusAddress, MessageType, new_method_call, new_signal  # noqa: E402
from jeepney.io.blocking import open_dbus_connection  # noqa: E402
from jeepney.low_level import HeaderFields  # noqa: E402

DBUS = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
APP_NAME = "org.gaend.App1.hci0"


def account(user: str) -> tuple[int, list[int]]:
    """uid and the groups a deployment gives the user (its primary and supplementary ones)."""
    try:
        p = pwd.getpwnam(user)
    except KeyError:
        pytest.skip(f"no user {user}: run scripts/setup.sh (systemd-sysusers systemd/gaend.sysusers)")
    return p.pw_uid, os.getgrouplist(user, p.pw_gid)


class AppPolicyBus:
    """A system-like private bus with both shipped policies, as installed side by side."""

    def __init__(self) -> None:
        # Other uids must reach the socket: pytest's own directories are private (0700).
        self.dir = Path(tempfile.mkdtemp(prefix="gaend-appbus-"))
        os.chmod(self.dir, 0o755)
        self.socket = self.dir / "bus"
        conf = self.dir / "bus.conf"
        conf.write_text(SYSTEM_LIKE_POLICY.format(socket=self.socket, policy=REPO / "dbus" / "org.gaend.conf").replace(
            "</busconfig>", f"  <include>{REPO / 'dbus' / 'org.gaend.App1.conf'}</include>\n</busconfig>"))
        self.proc = subprocess.Popen(["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={conf}"], stderr=subprocess.DEVNULL)
        assert wait_for(self.socket.exists, 10), "dbus-daemon did not start"
        self.address = f"unix:path={self.socket}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def bus():
    b = AppPolicyBus()
    yield b
    b.stop()


def request_name(address: str, names: list[str], out) -> None:
    conn = open_dbus_connection(address)
    for name in names:
        reply = conn.send_and_get_reply(new_method_call(DBUS, "RequestName", "su", (name, 4)), timeout=10)
        if reply.header.message_type == MessageType.error:
            out.write(json.dumps({"name": name, "error": reply.header.fields.get(HeaderFields.error_name)}) + "\n")
        else:
            out.write(json.dumps({"name": name, "result": reply.body[0]}) + "\n")
    conn.close()


def read_all(fd: int, timeout: float) -> list[dict]:
    buf, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
    os.close(fd)
    return [json.loads(line) for line in buf.decode().splitlines() if line.strip()]


def reap(pid: int) -> None:
    os.waitpid(pid, 0)


@needs_root
def test_only_the_app_user_owns_the_app_names_and_not_gaends(bus):
    cases = {
        "gaend-app": {APP_NAME: True, "org.gaend.App1": True, "org.gaend.hci0": False, "org.gaend": False, "org.gaend.Research1x": False},
        "gaend": {APP_NAME: False, "org.gaend.App1": False, "org.gaend.hci3": True},
        "gaend-test-app1": {APP_NAME: False, "org.gaend.App1": False},
        "nobody": {APP_NAME: False, "org.gaend.App1": False},
    }
    for user, names in cases.items():
        uid, groups = account(user)
        pid, fd = as_uid(uid, groups, request_name, bus.address, list(names))
        lines = read_all(fd, 20)
        reap(pid)
        got = {line["name"]: line.get("result") == 1 for line in lines if "name" in line}
        assert got == names, (user, lines)
        for line in lines:
            if line.get("name") in names and not names[line["name"]]:
                assert line.get("error") == "org.freedesktop.DBus.Error.AccessDenied", (user, line)


def listen(address: str, seconds: float, out) -> None:
    """Subscribes to every org.gaend.App1 signal (and, on a second connection, to the app's
    name as the sender, as receivers do), says it is ready, and reports what arrived."""
    broad = open_dbus_connection(address)
    strict = open_dbus_connection(address)
    broad.send_and_get_reply(new_method_call(DBUS, "AddMatch", "s", ("type='signal',interface='org.gaend.App1'",)), timeout=10)
    strict.send_and_get_reply(new_method_call(DBUS, "AddMatch", "s", (
        f"type='signal',sender='{APP_NAME}',interface='org.gaend.App1',member='RiskChanged',path='/org/gaend/App1'",)), timeout=10)
    out.write(json.dumps({"ready": broad.unique_name, "strict": strict.unique_name}) + "\n")
    seen = {"broad": [], "strict": []}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for label, conn in (("broad", broad), ("strict", strict)):
            try:
                m = conn.receive(timeout=0.05)
            except TimeoutError:
                continue
            if m.header.message_type == MessageType.signal and m.header.fields.get(HeaderFields.interface) == "org.gaend.App1":
                seen[label].append({"sender": m.header.fields.get(HeaderFields.sender), "node": m.body[0]})
    out.write(json.dumps(seen) + "\n")


def emit(address: str, own: str | None, node: str, targets: list[str], out) -> None:
    """RiskChanged broadcast, and sent straight to each target connection, on the app's path
    and on gaend's; owning `own` first when given."""
    conn = open_dbus_connection(address)
    if own:
        reply = conn.send_and_get_reply(new_method_call(DBUS, "RequestName", "su", (own, 4)), timeout=10)
        assert reply.header.message_type != MessageType.error, reply.body
    for path in ("/org/gaend/App1", "/org/gaend"):
        m = new_signal(DBusAddress(path, interface="org.gaend.App1"), "RiskChanged", "sssx", (node, "high", "cwa", 1_700_000_000))
        conn.send(m)
        for t in targets:
            m = new_signal(DBusAddress(path, interface="org.gaend.App1"), "RiskChanged", "sssx", (node, "high", "cwa", 1_700_000_000))
            m.header.fields[HeaderFields.destination] = t
            conn.send(m)
    # Round trip: the daemon has routed everything sent before the reply.
    conn.send_and_get_reply(new_method_call(DBUS, "GetId"), timeout=10)
    out.write(json.dumps({"sent": node, "unique": conn.unique_name}) + "\n")
    time.sleep(0.5)
    conn.close()


@needs_root
def test_risk_changed_reaches_only_the_allowed_and_cannot_be_forged(bus):
    listeners = {}
    for user in ("root", "gaend-test-app1", "nobody"):
        uid, groups = (0, [0]) if user == "root" else account(user)
        pid, fd = as_uid(uid, groups, listen, bus.address, 6.0)
        ready, _, _ = select.select([fd], [], [], 15)
        assert ready, f"{user}'s listener did not start"
        line = b""
        while not line.endswith(b"\n"):
            line += os.read(fd, 1)
        listeners[user] = (pid, fd, json.loads(line))
    targets = [n for _, _, r in listeners.values() for n in (r["ready"], r["strict"])]

    app_uid, app_groups = account("gaend-app")
    pid, fd = as_uid(app_uid, app_groups, emit, bus.address, APP_NAME, "genuine", targets)
    sent = read_all(fd, 20)
    reap(pid)
    assert sent and sent[0].get("sent") == "genuine", sent
    genuine_sender = sent[0]["unique"]
    for forger in ("gaend", "gaend-test-app1", "nobody"):
        uid, groups = account(forger)
        pid, fd = as_uid(uid, groups, emit, bus.address, None, f"forged-by-{forger}", targets)
        sent = read_all(fd, 20)
        reap(pid)
        assert sent and sent[0].get("sent") == f"forged-by-{forger}", (forger, sent)

    seen = {}
    for user, (pid, fd, _) in listeners.items():
        lines = read_all(fd, 20)
        reap(pid)
        seen[user] = lines[-1]
    # Root and group gaend: the app's signal only (the broadcast on its path and the one on
    # gaend's, and those sent straight to them), from the app's connection; nothing forged.
    for user in ("root", "gaend-test-app1"):
        for label in ("broad", "strict"):
            nodes = {s["node"] for s in seen[user][label]}
            senders = {s["sender"] for s in seen[user][label]}
            assert nodes == {"genuine"} and senders == {genuine_sender}, (user, label, seen[user])
    # Anyone else: nothing at all, not even the app's real signal (it says a person's risk).
    assert seen["nobody"] == {"broad": [], "strict": []}, seen["nobody"]


def key_history(address: str, out) -> None:
    conn = open_dbus_connection(address)
    reply = conn.send_and_get_reply(new_method_call(
        DBusAddress("/org/gaend", bus_name="org.gaend", interface="org.gaend.ExposureNotification1"), "GetTemporaryExposureKeyHistory"),
        timeout=30)
    if reply.header.message_type == MessageType.error:
        out.write(json.dumps({"error": reply.header.fields.get(HeaderFields.error_name)}) + "\n")
    else:
        out.write(json.dumps({"keys": len(reply.body[0])}) + "\n")
    conn.close()


@needs_root
def test_the_app_user_reads_the_key_history_through_group_gaend_keys(policy_node):
    """The app uploads the node's keys as its own user: gaend answers members of group
    gaend-keys (and root, and its own uid), not every member of group gaend."""
    got = {}
    for user in ("gaend-app", "gaend-test-app1", "nobody"):
        uid, groups = account(user)
        pid, fd = as_uid(uid, groups, key_history, policy_node.bus.address)
        got[user] = read_all(fd, 40)
        reap(pid)
    assert len(got["gaend-app"]) == 1 and got["gaend-app"][0].get("keys", 0) >= 1, got
    assert got["gaend-test-app1"] == [{"error": "org.gaend.Error.NotAuthorized"}], got
    assert got["nobody"] == [{"error": "org.freedesktop.DBus.Error.AccessDenied"}], got
