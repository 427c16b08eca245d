"""Package and coexistence scenario: the .deb installed with apt under systemd, gaend taking
the controller the config gives it (hci0) while Debian's bluetoothd keeps the other (hci1),
and BlueZ's own discovery on hci1 seeing gaend's beacon with service data 0xFD6F.
"""
import glob
import os
import json
import subprocess
import time
from pathlib import Path

from common import LONG, WORK, VRadio, gaenctl_pages, log, main, mark_clock_synchronised, record, run, spawn, systemctl, unit_state, wait_for

FD6F = "0000fd6f-0000-1000-8000-00805f9b34fb"


def bluez_devices() -> list[dict]:
    p = subprocess.run(["busctl", "--json=short", "call", "org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"],
                       capture_output=True, text=True, timeout=LONG)
    if p.returncode != 0:
        return []
    objects = json.loads(p.stdout)["data"][0]
    out = []
    for path, ifaces in objects.items():
        dev = ifaces.get("org.bluez.Device1")
        if dev and path.startswith("/org/bluez/hci1/"):
            sd = dev.get("ServiceData", {}).get("data", {})
            out.append({"path": path, "address": dev.get("Address", {}).get("data"),
                        "service_data": {k: v.get("data") for k, v in sd.items()}})
    return out


def scenario() -> None:
    mark_clock_synchronised()
    run(["modprobe", "hci_vhci"])
    deb = sorted(glob.glob(str(WORK / "gaend_*.deb")))[-1]
    # man-db's dpkg trigger re-indexes every manual page of the host's tree over 9p under TCG
    # (minutes); its own switch turns it off. Not gaend's trigger, and a board's is fast.
    Path("/var/lib/man-db/auto-update").unlink(missing_ok=True)
    # As a user would: `apt install ./gaend_*.deb` (no network here: every dependency is one the
    # host's root already has: scripts/setup.sh installs the -dev packages, which pull in the
    # runtime ones, libyaml-0-2 among them). Which are missing, if any, is recorded first.
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    names = [d.strip().split(" ")[0] for d in depends.split(",") if d.strip()]
    record("depends", names)
    record("missing_depends", [n for n in names if run(["dpkg", "-s", n]).returncode != 0])
    inst = run(["apt", "install", "-y", "./" + Path(deb).name], timeout=900, cwd=WORK,
               env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    record("apt_install", {"rc": inst.returncode, "stdout": inst.stdout[-2500:], "stderr": inst.stderr[-2500:]})
    assert inst.returncode == 0
    Path("/etc/gaend/gaend.conf").write_text("# gaend takes hci0 only; hci1 stays with bluetoothd.\ncontrollers: [hci0]\n")

    vr = VRadio(["name=node,transport=tcp-server:127.0.0.1:0", "name=bt,transport=tcp-server:127.0.0.1:0,x=1"])
    record("plug_node", vr.plug("node"))
    assert wait_for(lambda: unit_state("gaend@hci0.service") == "active", 240, 2), run(["journalctl", "--no-pager", "-b", "-u", "gaend@hci0"]).stdout[-4000:]
    record("plug_bt", vr.plug("bt"))
    # udev starts bluetooth.target (systemd's own rule) and gaend@hci1, whose ExecCondition
    # leaves the controller to bluetoothd.
    wait_for(lambda: unit_state("bluetooth.service") == "active", 120, 2)
    time.sleep(5)
    hci1 = run(["systemctl", "show", "-p", "ActiveState,Result,ConditionResult", "gaend@hci1.service"])
    record("gaend_hci1", {"show": hci1.stdout, "journal": run(["journalctl", "--no-pager", "-b", "-u", "gaend@hci1", "-o", "cat"]).stdout[-2000:]})
    record("bluetoothd", unit_state("bluetooth.service"))
    run(["busctl", "set-property", "org.bluez", "/org/bluez/hci1", "org.bluez.Adapter1", "Powered", "b", "true"])
    # BlueZ's own discovery on hci1, kept running by bluetoothctl while the devices are read.
    scan = spawn(["bluetoothctl", "--timeout", "60", "scan", "on"], "bluetoothctl-scan")
    seen = []
    def found() -> bool:
        seen[:] = [d for d in bluez_devices() if FD6F in d["service_data"]]
        return bool(seen)
    ok = wait_for(found, 90, 3)
    scan.terminate()
    record("bluez_discovery", {"found": ok, "devices": seen[:5], "all": bluez_devices()[:5]})
    status = run(["/usr/bin/gaenctl", "--name", "hci0", "status", "--json"], timeout=LONG)
    record("gaend_status", {"rc": status.returncode, "stdout": status.stdout, "stderr": status.stderr})
    # The board's gaenctl is gaend's binary (update-alternatives); the research tools are not here.
    research = run(["/usr/bin/gaenctl", "trial", "report", "--help"], timeout=LONG)
    record("board_gaenctl", {"path": os.path.realpath("/usr/bin/gaenctl"), "research_rc": research.returncode,
                             "research_stderr": research.stderr[-500:], "pages": gaenctl_pages()})
    record("hci0_owner", run(["journalctl", "--no-pager", "-b", "-u", "gaend@hci0", "-o", "cat"]).stdout[-2000:])
    vr.stop()


main(scenario)
