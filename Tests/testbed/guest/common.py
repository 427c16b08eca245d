"""Helpers for scenarios that run inside the test bed's guest (Tests/testbed/guest)."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(os.environ["tb_repo"])
BIN = Path(os.environ["tb_bin"])
PY = os.environ["tb_python"]
WORK = Path("/testbed")
VRADIO = REPO / "tools/virtual-radio/vradio.py"
PEER = REPO / "tools/virtual-radio/peer.py"
BRIDGE = REPO / "Tests/testbed/guest/vhci_bridge.py"
TEK = "75c734c6dd1a782de7a965da5eb93125"
RESULTS: dict = {}
T0 = time.monotonic()
# How long one program may take under TCG on a loaded host (a gaenctl call took 35 s at load
# 25 on 2 cores, Bumble's start minutes): a bound far above it, so that the scenarios check
# what happened, not the host's load. A hung program still ends the scenario.
LONG = 900


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s] {msg}", flush=True)


def record(key: str, value) -> None:
    RESULTS[key] = value
    (WORK / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str))


def run(args, timeout=LONG, **kw) -> subprocess.CompletedProcess:
    args = [str(a) for a in args]
    log("$ " + " ".join(args))
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    log(f"  -> {p.returncode}; stdout {p.stdout[-600:]!r}; stderr {p.stderr[-600:]!r}")
    return p


def spawn(args, name: str, **kw) -> subprocess.Popen:
    args = [str(a) for a in args]
    log("& " + " ".join(args))
    return subprocess.Popen(args, stdout=open(WORK / f"{name}.out", "w"), stderr=open(WORK / f"{name}.err", "w"), text=True, **kw)


def lines(name: str) -> list[dict]:
    out = []
    for line in (WORK / f"{name}.out").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def read_json_line(proc: subprocess.Popen, timeout: float) -> dict:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise RuntimeError("no ready line")
    return json.loads(proc.stdout.readline())


class VRadio:
    """vradio.py with the given devices; `bridge(name)` attaches one to /dev/vhci."""

    def __init__(self, devices: list[str]):
        args = [PY, VRADIO, "--control", "tcp:127.0.0.1:0"]
        for d in devices:
            args += ["--device", d]
        self.proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=open(WORK / "vradio.err", "w"), text=True)
        self.ready = read_json_line(self.proc, LONG)
        self.bridges: dict[str, subprocess.Popen] = {}

    def connect(self, name: str) -> str:
        return self.ready["devices"][name]["connect"]

    def bumble(self, name: str) -> str:
        return self.ready["devices"][name]["bumble"]

    def state(self, name: str) -> dict:
        """The device's state from the control channel (scanning, advertising, addresses)."""
        import socket
        host, port = self.ready["control"].removeprefix("tcp:").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=LONG) as c:
            f = c.makefile("rw", encoding="utf-8")
            f.write(json.dumps({"cmd": "state", "device": name}) + "\n")
            f.flush()
            return json.loads(f.readline())["state"]

    def plug(self, name: str) -> int:
        """Bridges the device to /dev/vhci; returns the kernel's hci index once registered."""
        addr = self.connect(name).removeprefix("tcp:")
        p = subprocess.Popen([PY, str(BRIDGE), addr], stdout=subprocess.PIPE, stderr=open(WORK / f"bridge-{name}.err", "a"), text=True)
        index = read_json_line(p, LONG)["index"]
        self.bridges[name] = p
        wait_for(lambda: Path(f"/sys/class/bluetooth/hci{index}").exists(), 30)
        log(f"plugged {name} as hci{index}")
        return index

    def unplug(self, name: str) -> None:
        p = self.bridges.pop(name)
        p.terminate()
        p.wait(LONG)
        log(f"unplugged {name}")

    def stop(self) -> None:
        for name in list(self.bridges):
            self.unplug(name)
        self.proc.terminate()
        self.proc.wait(LONG)


def wait_for(predicate, timeout: float, step: float = 0.2) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def main(scenario) -> None:
    try:
        scenario()
        record("ok", True)
    except BaseException as e:  # the host test reads what happened from results.json
        import traceback
        traceback.print_exc()
        record("error", f"{type(e).__name__}: {e}")
        sys.exit(1)


def mark_clock_synchronised() -> None:
    """What chrony or timesyncd does on a board with network: clears the kernel's STA_UNSYNC
    (adjtimex), so gaend's clock-sync check passes in a guest without network."""
    import ctypes

    class Timex(ctypes.Structure):
        _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                    ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                    ("constant", ctypes.c_long), ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
                    ("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long), ("tick", ctypes.c_long),
                    ("ppsfreq", ctypes.c_long), ("jitter", ctypes.c_long), ("shift", ctypes.c_int),
                    ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long), ("calcnt", ctypes.c_long),
                    ("errcnt", ctypes.c_long), ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int),
                    ("pad", ctypes.c_int * 11)]
    tx = Timex(modes=0x0010 | 0x0004 | 0x0008, status=0, maxerror=1000, esterror=1000)  # ADJ_STATUS|ADJ_MAXERROR|ADJ_ESTERROR
    libc = ctypes.CDLL(None, use_errno=True)
    state = libc.adjtimex(ctypes.byref(tx))
    log(f"adjtimex -> state {state}, status {tx.status:#x}")


def systemctl(*args) -> subprocess.CompletedProcess:
    return run(["systemctl", *args], timeout=LONG)


def unit_state(unit: str) -> str:
    return subprocess.run(["systemctl", "is-active", unit], capture_output=True, text=True).stdout.strip()


# gaenctl's man page and completions under their generic names: slaves of the gaenctl
# alternative (scripts/build-deb.sh), so they follow the gaenctl that runs.
GAENCTL_PAGES = ("/usr/share/man/man1/gaenctl.1", "/usr/share/bash-completion/completions/gaenctl",
                 "/usr/share/zsh/vendor-completions/_gaenctl", "/usr/share/fish/vendor_completions.d/gaenctl.fish")


def gaenctl_pages() -> dict[str, str]:
    """Where each generic name of gaenctl's pages leads ("missing" when it leads nowhere)."""
    return {p: os.path.realpath(p) if os.path.exists(p) else "missing" for p in GAENCTL_PAGES}
