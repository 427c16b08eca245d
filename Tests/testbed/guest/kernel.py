"""Kernel scenario: gaend and `gaenctl radio` on hci0 of a real kernel Bluetooth stack.

The virtual radio's `node` controller is bridged to /dev/vhci (the kernel registers hci0 and
runs its own LE init on it); `peer` is an independent Bumble host on the same simulated link.
Results go to /testbed/results.json, which Tests/testbed/test_testbed.py checks.
"""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from common import LONG, BIN, PEER, PY, TEK, WORK, VRadio, lines, log, main, record, run, spawn, wait_for

PREFIX = "02011a03036ffd17166ffd"  # flags, 16-bit UUID list {0xFD6F}, service data 0xFD6F
GAENCTL = BIN / "gaenctl"


def gaen_reports(name: str) -> list[dict]:
    return [r for r in lines(name) if r.get("data", "").startswith(PREFIX)]


def scenario() -> None:
    run(["modprobe", "hci_vhci"])
    vr = VRadio(["name=node,transport=tcp-server:127.0.0.1:0",
                 "name=peer,transport=tcp-server:127.0.0.1:0,x=1"])
    record("plug", vr.plug("node"))
    # The kernel's own view of hci0 (what a technician reads before gaend takes it).
    # The kernel brings a plugged controller up in the background (its init commands, then the
    # management index); under TCG on a loaded host that takes seconds, and until then btmgmt
    # answers "Invalid Index" (with exit status 0). Each tool is asked until it shows the address.
    kernel_view = {}
    for name, args, ready in (("hciconfig", ["hciconfig", "hci0"], "BD Address: "),
                              ("btmgmt", ["btmgmt", "--index", "0", "info"], "addr ")):
        deadline = time.monotonic() + LONG
        while True:
            p = run(args, timeout=LONG)
            if (p.returncode == 0 and ready in p.stdout) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        kernel_view[name] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr[-1000:]}
    record("kernel_view", kernel_view)

    # Probe through the user channel.
    p = run([GAENCTL, "radio", "probe", "--controller", "hci0"], timeout=LONG)
    record("probe", {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr})

    # Advertise, heard by an independent scanner; the whole HCI dialogue captured.
    scan = spawn([PY, PEER, "scan", "--transport", vr.bumble("peer"), "--duration", "25"], "adv-peer-scan")
    # Under TCG on a loaded host Python and Bumble can take longer to start than a fixed pause:
    # advertise only once the scanner is scanning.
    record("adv_scanner_ready", wait_for(lambda: vr.state("peer")["scanning"], 90, 0.5))
    p = run([GAENCTL, "radio", "advertise", "--controller", "hci0", "--tek", TEK, "--tx-power", "-30",
             "--duration", "12", "--capture", WORK / "advertise.btsnoop"], timeout=LONG)
    scan.wait(LONG)
    rotations = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    record("advertise", {"rc": p.returncode, "stderr": p.stderr[-2000:], "rotations": rotations,
                         "heard": gaen_reports("adv-peer-scan")[:50]})

    # Scan: an independent advertiser's beacons decoded through hci0.
    enin = 2642976
    adv = spawn([PY, PEER, "advertise-gaen", "--transport", vr.bumble("peer"), "--tek", TEK, "--tx-power", "-20",
                 "--enin", str(enin), "--duration", "40"], "scan-peer-adv")
    # Scan only once the advertiser is on air (asked through vradio's control channel): under
    # load Bumble's start took longer than any fixed pause.
    record("scan_advertiser_ready", wait_for(lambda: vr.state("peer")["advertising"], LONG, 0.5))
    p = run([GAENCTL, "radio", "scan", "--controller", "hci0", "--duration", "8"], timeout=LONG)
    adv.terminate()
    adv.wait(LONG)
    record("scan", {"rc": p.returncode, "stderr": p.stderr[-2000:],
                    "seen": [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")][:50], "enin": enin})

    # gaend on hci0 with a private bus; status; a busy device refused; unplug and replug.
    bus = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-address"], capture_output=True, text=True).stdout.strip()
    os.makedirs("/var/lib/gaend-tb", exist_ok=True)
    key = "/var/lib/gaend-tb/store.key"
    with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    gaend = spawn([BIN / "gaend", "--controller", "hci0", "--state-dir", "/var/lib/gaend-tb", "--store-key-file", key,
                   "--bus", bus, "--trial", "--ignore-clock-sync", "--capture", WORK / "gaend.btsnoop"], "gaend")
    status = lambda: run([GAENCTL, "--bus", bus, "status", "--json"], timeout=LONG)
    ok = wait_for(lambda: status().returncode == 0, LONG, 2)
    first = status()
    record("gaend_status", {"up": ok, "rc": first.returncode, "stdout": first.stdout, "stderr": first.stderr})
    wait_for(lambda: '"advertisingAddress":"' in status().stdout, 60, 2)
    on_air = status()
    heard = spawn([PY, PEER, "scan", "--transport", vr.bumble("peer"), "--duration", "10"], "gaend-peer-scan")
    heard.wait(LONG)
    record("gaend_field_check", {"before": on_air.stdout, "after": status().stdout,
                                 "heard": sorted({(r["address"], r["data"][len(PREFIX):len(PREFIX) + 32])
                                                  for r in gaen_reports("gaend-peer-scan")})})
    busy = run([GAENCTL, "radio", "probe", "--controller", "hci0"], timeout=LONG)
    record("busy", {"rc": busy.returncode, "stderr": busy.stderr})
    record("gaend_heard", len(gaen_reports("gaend-peer-scan")))

    # Waits on what gaend says rather than fixed sleeps: under TCG on a loaded host the
    # unplug and the reconnect take from a second to tens of seconds.
    vr.unplug("node")
    wait_for(lambda: '"advertisingOnAir":false' in status().stdout, 60, 1)
    gone = status()
    record("plug_again", vr.plug("node"))
    wait_for(lambda: '"advertisingOnAir":true' in status().stdout, 120, 1)
    again = spawn([PY, PEER, "scan", "--transport", vr.bumble("peer"), "--duration", "10"], "replug-peer-scan")
    again.wait(LONG)
    back = status()
    record("replug", {"while_unplugged": gone.stdout, "after": back.stdout, "after_rc": back.returncode,
                      "heard": len(gaen_reports("replug-peer-scan")), "alive": gaend.poll() is None})
    gaend.send_signal(signal.SIGTERM)
    record("gaend_exit", gaend.wait(60))
    record("gaend_stderr", (WORK / "gaend.err").read_text()[-6000:])

    # rfkill: a soft block gives the hint to unblock (the block set through sysfs, as
    # `rfkill block bluetooth` does, without needing the rfkill package in the guest).
    switches = [d for d in Path("/sys/class/rfkill").iterdir() if (d / "type").read_text().strip() == "bluetooth"]
    for d in switches:
        (d / "soft").write_text("1")
    p = run([GAENCTL, "radio", "probe", "--controller", "hci0"], timeout=LONG)
    record("rfkill", {"rc": p.returncode, "stderr": p.stderr, "switches": len(switches)})
    for d in switches:
        (d / "soft").write_text("0")

    # Capabilities: none at all is refused with the hint; CAP_NET_ADMIN alone is enough.
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    p = run(nobody + ["--inh-caps=-all", GAENCTL, "radio", "probe", "--controller", "hci0"], timeout=LONG)
    record("no_capability", {"rc": p.returncode, "stderr": p.stderr})
    p = run(nobody + ["--inh-caps=+net_admin", "--ambient-caps=+net_admin", GAENCTL, "radio", "probe", "--controller", "hci0"], timeout=LONG)
    record("net_admin_only", {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr})
    vr.stop()


main(scenario)
