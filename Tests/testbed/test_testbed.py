"""The kernel test bed's scenarios, run by ./scripts/test.sh.

Each scenario boots Debian's kernel under qemu TCG (Tests/testbed/testbed.py) with a guest
script from Tests/testbed/guest and checks what it recorded in results.json. The binaries are
copied into the scenario's work directory first, so a rebuild on the host cannot change them
under a running guest. Set GAEND_TESTBED=0 to skip (e.g. on a machine without qemu).

Everything a run writes is in its own folder, $GAEND_TESTBED_OUT (default
.build/testbed/run-<time>-<pid> in the clone): the initramfs, one work folder per scenario
(logs, results, captures; the staged binaries go once the scenario passed), timings.json and
the reports. The only thing outside the clone is the kernel cache (testbed.CACHE).

GAEND_TESTBED_CPU_HOG=N runs N busy loops on the host beside each scenario's guest (at the
guest's own priority), to show a scenario holds on a board or host whose CPU is taken."""
from __future__ import annotations

import fcntl
import json
import re
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import testbed  # noqa: E402

REPO = testbed.REPO
TEK = "75c734c6dd1a782de7a965da5eb93125"
PREFIX = "02011a03036ffd17166ffd"
OUT = Path(os.environ.get("GAEND_TESTBED_OUT") or REPO / ".build" / "testbed" / f"run-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
TIMINGS = OUT / "timings.json"
# Reports kept for reading (capture decodes, the unit's security analysis, the package size).
REPORT = Path(os.environ.get("GAEND_TESTBED_REPORT") or OUT)


def gaenctl_pages(flavour: str = "board") -> dict[str, str]:
    """Where the generic names of gaenctl's pages lead in a guest for that gaenctl (board or research)."""
    real = f"/usr/share/gaend/completions/{flavour}"
    return {"/usr/share/man/man1/gaenctl.1": f"/usr/share/man/man1/gaenctl-{flavour}.1",
            "/usr/share/bash-completion/completions/gaenctl": f"{real}/gaenctl",
            "/usr/share/zsh/vendor-completions/_gaenctl": f"{real}/_gaenctl",
            "/usr/share/fish/vendor_completions.d/gaenctl.fish": f"{real}/gaenctl.fish"}


def bin_dir() -> Path:
    d = os.environ.get("GAEND_BIN_DIR")
    if d:
        return Path(d)
    return Path(subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="session")
def kernel():
    if os.environ.get("GAEND_TESTBED") == "0":
        pytest.skip("GAEND_TESTBED=0")
    why = testbed.missing_tools()
    if why:
        pytest.skip(why)
    try:
        k = testbed.prepare_kernel()
    except testbed.TestbedUnavailable as e:
        pytest.skip(str(e))
    OUT.mkdir(parents=True, exist_ok=True)
    REPORT.mkdir(parents=True, exist_ok=True)
    # One initramfs per pytest-xdist worker, when the scenarios boot side by side
    # (GAEND_TESTBED_WORKERS): each worker builds its own.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return k, testbed.build_initramfs(OUT / (f"initramfs-{worker}.cpio" if worker else "initramfs.cpio"), k)


@pytest.fixture(autouse=True)
def cpu_hog():
    """GAEND_TESTBED_CPU_HOG=N: N processes spinning for the whole scenario."""
    n = int(os.environ.get("GAEND_TESTBED_CPU_HOG", "0") or 0)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    yield
    for h in hogs:
        h.kill()
        h.wait()


def run_scenario(kernel, tmp_path: Path, scenario: str, timeout: float, init: str | None = None,
                 files: list[Path] = ()) -> tuple[dict, testbed.GuestRun]:
    # Not below pytest's basetemp: where several pytest runs share a machine, each prunes the
    # others' old basetemps, and a guest's share must outlive a long scenario.
    work = OUT / scenario.split('.')[0]
    shutil.rmtree(work, ignore_errors=True)  # never read an earlier run's results
    work.mkdir(parents=True)
    for f in files:
        shutil.copy2(f, work / f.name)
    staged = work / "bin"
    staged.mkdir()
    for name in ("gaend", "gaenctl"):
        shutil.copy2(bin_dir() / name, staged / name)
    k, initramfs = kernel
    guest = testbed.GUEST_REPO + "/Tests/testbed/guest/"
    run = testbed.boot(k, initramfs, work, guest + (init or "run-scenario.sh"), timeout, extra_env={
        "tb_scenario": scenario, "tb_repo": testbed.GUEST_REPO, "tb_bin": "/testbed/bin", "tb_python": sys.executable})
    with open(OUT / ".timings.lock", "w") as lock:  # scenarios finish side by side
        fcntl.flock(lock, fcntl.LOCK_EX)
        timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
        timings[scenario] = round(run.seconds, 1)
        TIMINGS.write_text(json.dumps(timings))
    results_file = work / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    log = (work / "scenario.log").read_text()[-6000:] if (work / "scenario.log").exists() else run.console[-4000:]
    assert run.returncode == 0 and results.get("ok"), f"scenario {scenario} failed ({run.seconds:.0f} s): {results.get('error')}\n{log}"
    # Passed: the staged binaries and packages go, the logs and captures stay for reading.
    shutil.rmtree(staged, ignore_errors=True)
    for f in files:
        (work / f.name).unlink(missing_ok=True)
    return results, run


def derive(interval: int, metadata: str) -> dict:
    out = subprocess.run([str(bin_dir() / "gaenctl"), "derive", "--tek", TEK, "--interval", str(interval), "--count", "1",
                          "--metadata", metadata], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["intervals"][0]


def advertising_data(capture: Path) -> list[str]:
    """Every LE Set Advertising Data command in a capture as tshark decodes it: its 16-bit
    service UUIDs and Wireshark's own GAEN fields (RPI, AEM) of the 0xFD6F service data."""
    out = subprocess.run(["tshark", "-r", str(capture), "-Y", "bthci_cmd.opcode == 0x2008", "-T", "fields",
                          "-e", "btcommon.eir_ad.entry.uuid_16", "-e", "bluetooth.gaen.rpi", "-e", "bluetooth.gaen.aemd"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [l for l in out.stdout.splitlines() if l.strip()]


def btmon(capture: Path) -> str:
    out = subprocess.run(["btmon", "-r", str(capture)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def check_capture(capture: Path, rpis: set[str]) -> dict:
    """btmon and tshark decode the capture; each LE Set Advertising Data carries service 0xFD6F,
    and the RPIs tshark finds in them are the ones given (when given)."""
    assert capture.exists() and capture.stat().st_size > 16
    decoded = btmon(capture)
    assert "LE Set Advertising Data" in decoded and "0xfd6f" in decoded.lower(), decoded[-3000:]
    fields = advertising_data(capture)
    assert fields, "tshark found no LE Set Advertising Data"
    carried = set()
    for line in fields:
        uuids, rpi, aem = (line.split("\t") + ["", "", ""])[:3]
        assert "0xfd6f" in uuids.lower() and len(rpi.replace(":", "")) == 32, line
        carried.add(rpi.replace(":", "").lower())
    if rpis:
        assert carried == rpis, (carried, rpis)
    return {"btmon_excerpt": [l.strip() for l in decoded.splitlines() if "fd6f" in l.lower() or "Set Advertising Data" in l][:8],
            "tshark": fields[:6], "rpis": sorted(carried)}


def test_kernel_scenario(kernel, tmp_path):
    r, run = run_scenario(kernel, tmp_path, "kernel.py", timeout=3600)
    assert r["plug"] == 0 and r["plug_again"] == 0

    probe = r["probe"]
    assert probe["rc"] == 0, probe
    facts = json.loads(probe["stdout"])
    assert facts["manufacturerId"] == 65535 and facts["hciVersionNumber"] >= 6, facts

    # Advertising through hci0, heard by the independent Bumble scanner with the RPIs derive gives.
    adv = r["advertise"]
    assert adv["rc"] == 0, adv["stderr"]
    assert adv["rotations"] and adv["heard"], adv
    expected = {rot["rpi"] for rot in adv["rotations"]}
    for rot in adv["rotations"]:
        d = derive(rot["interval"], "40e20000")
        assert (rot["rpi"], rot["aem"]) == (d["rpi"], d["aem"])
    heard = {rep["data"][len(PREFIX):len(PREFIX) + 32] for rep in adv["heard"]}
    assert heard <= expected and heard, (heard, expected)
    decoded = check_capture(run.work / "advertise.btsnoop", expected)

    # Scanning through hci0 decodes an independent advertiser.
    scan = r["scan"]
    assert scan["rc"] == 0 and scan["seen"], scan
    want = derive(scan["enin"], "40ec0000")
    assert all((s["rpi"], s["aem"]) == (want["rpi"], want["aem"]) for s in scan["seen"]), scan["seen"][:3]

    # gaend on hci0: status, beacons on air, a second user refused, unplug/replug survived.
    st = r["gaend_status"]
    assert st["up"] and st["rc"] == 0, st
    assert r["gaend_heard"] > 0
    # Field checks on hci0: status names the controller with the address the kernel shows for
    # hci0 (hciconfig, btmgmt info), the facts `radio probe` read, and the advertising address
    # (and, --trial, the RPI) the independent scanner heard.
    kv = r["kernel_view"]
    assert kv["hciconfig"]["rc"] == 0 and kv["btmgmt"]["rc"] == 0, kv
    kernel_address = re.search(r"BD Address: ([0-9A-F:]{17})", kv["hciconfig"]["stdout"]).group(1)
    assert re.search(r"addr " + kernel_address + r" version", kv["btmgmt"]["stdout"]), kv["btmgmt"]
    fc = r["gaend_field_check"]
    before, after = json.loads(fc["before"]), json.loads(fc["after"])
    c = before["controller"]
    assert c["name"] == "hci0" and c["address"] == kernel_address == facts["address"], (c, kernel_address, facts)
    assert (c["manufacturer"], c["manufacturerName"], c["hciVersion"], c["lmpVersion"]) == (
        facts["manufacturerId"], facts["manufacturer"], facts["hciVersionNumber"], facts["lmpVersionNumber"]), (c, facts)
    heard_pairs = {tuple(x) for x in fc["heard"]}
    if before["advertisingAddress"] == after["advertisingAddress"]:  # no rotation in between (10-20 min apart)
        assert (before["advertisingAddress"], before["currentRpi"]) in heard_pairs, (before, sorted(heard_pairs))
    else:
        assert {before["advertisingAddress"], after["advertisingAddress"]} & {a for a, _ in heard_pairs}, (before, after, heard_pairs)
    assert r["busy"]["rc"] != 0 and "busy" in r["busy"]["stderr"], r["busy"]
    assert r["replug"]["alive"] and r["replug"]["after_rc"] == 0, r["replug"]
    assert r["replug"]["heard"] > 0, "no beacon heard after replug"
    assert r["gaend_exit"] == 0, r["gaend_stderr"]
    # The gaend capture spans the whole run (unplug and replug included): every advertising
    # data command carries 0xFD6F service data with an RPI, and what the scanner heard is among them.
    gaend_capture = check_capture(run.work / "gaend.btsnoop", set())
    assert gaend_capture["rpis"]

    # Hints: rfkill and a missing capability; CAP_NET_ADMIN alone suffices.
    assert r["rfkill"]["rc"] != 0 and "rfkill unblock bluetooth" in r["rfkill"]["stderr"], r["rfkill"]
    assert r["no_capability"]["rc"] != 0 and "CAP_NET_ADMIN" in r["no_capability"]["stderr"], r["no_capability"]
    assert r["net_admin_only"]["rc"] == 0, r["net_admin_only"]
    (REPORT / "kernel-capture-decode.json").write_text(
        json.dumps({"advertise": decoded, "gaend": gaend_capture, "seconds": run.seconds}, indent=1))


def release_dir() -> Path:
    """`make`'s output (static stdlib): what `make install` and the package install."""
    d = Path(os.environ.get("GAEND_RELEASE_DIR", REPO / ".build/release"))
    if not ((d / "gaend").exists() and (d / "gaenctl").exists()):
        pytest.skip("no release build: run `make` first (scripts/test.sh does)")
    return d


def test_system_scenario(kernel, tmp_path):
    release_dir()
    r, run = run_scenario(kernel, tmp_path, "system.py", timeout=3600, init="system-init.sh")
    (REPORT / "system-security.txt").write_text(r["security"]["output"])
    assert r["make_install"]["rc"] == 0
    assert r["active_after_plug"]["active"], r
    assert r["active_after_plug"]["credential"], "gaend-store-key.service created the credential"
    # Active (READY=1) only with the controller held: bluetooth.service, ordered after gaend@,
    # cannot take it first.
    assert r["active_after_plug"]["status_text"] == "serving on D-Bus; controller held", r["active_after_plug"]
    assert r["user_status"]["rc"] == 0 and r["user_status"]["active"], r["user_status"]
    assert r["outsider_status"]["rc"] != 0, r["outsider_status"]
    assert r["heard"] > 0, "no beacon on air"
    j = r["journal"]
    assert not j["errors"], j
    assert not j["thread_priority"], j
    assert any("no trusted key set" in (w or "") for w in j["warnings"]), j
    assert "no trusted key set" in j["p_warning"] and "gaend started" not in j["p_warning"], j["p_warning"]
    # The guest's clock is synchronised (timedated says so) before gaend starts: no warning that
    # it is not, which the sandbox's refused adjtimex() used to cause before timedated's first answer.
    # Nor, on a loaded host where timedated answers late, a warning that its state stayed unknown.
    assert not [w for w in j["warnings"] if "clock not synchronized" in (w or "") or "clock synchronization" in (w or "")], j["warnings"]
    # journald's native protocol: the metadata as fields, attributed to the unit.
    v = r["journal_verbose"]
    assert "GAEND_CONTROLLER=hci0" in v and f"_SYSTEMD_UNIT=gaend@hci0.service" in v and "SYSLOG_IDENTIFIER=gaend" in v, v
    assert any(l.startswith("GAEND_LOGGER=") for l in v) and any(l.startswith("CODE_FILE=") for l in v), v
    assert r["security"]["exposure"] is not None and r["security"]["exposure"] <= 1.4, r["security"]["output"][-3000:]
    # The store key's unit, hardened like the others (it rated 8.6 EXPOSED), still made the
    # credential above under its sandbox (no TPM2 in the guest: the host key).
    k = r["security_store_key"]
    assert k["exposure"] is not None and k["exposure"] <= 4.0, k["output"][-3000:]
    assert k["result"] == "success", k
    assert r["unplug"]["stopped"], r["unplug"]
    assert r["replug"]["active"] and r["replug"]["status_rc"] == 0, r["replug"]
    # Neither start (plug, replug) left the watchdog unfed: gaend never said the radio path was
    # not live, and systemd never saw a watchdog timeout.
    w = r["watchdog_journal"]
    assert not [m for m in w["messages"] if "not live" in m] and not w["systemd"], w
    assert len(w["open_seconds"]) >= 2, w


def test_package_and_bluez_coexistence(kernel, tmp_path):
    release_dir()
    debs = tmp_path / "debs"
    debs.mkdir()
    built = subprocess.run([str(REPO / "scripts/build-deb.sh"), str(debs)], capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr
    deb = Path(built.stdout.strip().splitlines()[-1])
    # Depends comes from the libraries the binaries load: libyaml's too (gaend's config reader).
    depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True, check=True).stdout
    assert "libyaml-0-2" in depends, depends
    r, run = run_scenario(kernel, tmp_path, "package.py", timeout=3600, init="system-init.sh",
                          files=[deb])
    (REPORT / "deb-size.txt").write_text(f"{deb.name} {deb.stat().st_size}\n")
    assert not r.get("missing_depends"), f"the guest (the host's root) lacks {r.get('missing_depends')}: run scripts/setup.sh"
    assert r["apt_install"]["rc"] == 0, r["apt_install"]
    assert r["gaend_status"]["rc"] == 0 and '"active"' in r["gaend_status"]["stdout"], r["gaend_status"]
    # /usr/bin/gaenctl is the board's (gaend's binary); a research tool names its package.
    bg = r["board_gaenctl"]
    assert bg["path"] == "/usr/bin/gaend" and bg["research_rc"] == 64 and "gaend-research-tools" in bg["research_stderr"], bg
    # gaenctl(1) and its completions are the board's (slaves of the alternative).
    assert bg["pages"] == gaenctl_pages(), bg["pages"]
    assert "left to bluetoothd" in r["gaend_hci1"]["journal"], r["gaend_hci1"]
    assert r["bluetoothd"] == "active"
    found = r["bluez_discovery"]
    assert found["found"], found
    data = bytes(found["devices"][0]["service_data"]["0000fd6f-0000-1000-8000-00805f9b34fb"])
    assert len(data) == 20, data  # RPI (16) + AEM (4)


def test_trial_through_shipped_units(kernel, tmp_path):
    """Issue 30: the board and trial server packages installed with apt, the trial's loop run by
    the shipped units and timers themselves (timers shortened by drop-ins, one trial clock), and
    read back from the guest's journal (Tests/testbed/guest/trial.py)."""
    release_dir()
    debs = tmp_path / "debs"
    debs.mkdir()
    built = []
    for args in ([], ["--research"], ["--server"]):
        # The board's package from the build SCRATCH names, as in the package scenario.
        p = subprocess.run([str(REPO / "scripts/build-deb.sh"), *args, str(debs)], capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, p.stderr
        built.append(Path(p.stdout.strip().splitlines()[-1]))
    r, run = run_scenario(kernel, tmp_path, "trial.py", timeout=3600, init="system-init.sh", files=built)
    assert not r.get("missing_depends"), f"the guest (the host's root) lacks {r.get('missing_depends')}: run scripts/setup.sh"
    assert r["apt_install"]["rc"] == 0, r["apt_install"]
    # gaenctl's pages follow the alternative: the full gaenctl's while it is gaenctl, the
    # board's once the board's gaenctl is set.
    alt = r["alternatives"]
    assert alt["research_pages"] == gaenctl_pages("research") and alt["board_pages"] == gaenctl_pages(), alt
    assert r["nginx"] == "active", r
    steps = r["steps"]
    assert all(s["ok"] for s in steps.values()) and len(steps) == 4, steps
    runs = r["runs"]
    # The publisher's timer ran it again and again, every run a success (none skipped: the
    # signing key was there), and the first run that published a key did so once the hour
    # 02:00-03:00 of day 2 was complete on the trial clock, not before.
    assert len(runs["gaend-publish.service"]) >= 5 and set(runs["gaend-publish.service"]) == {"done"}, runs["gaend-publish.service"]
    pub = r["publication"]
    assert pub["first"] and pub["trial_time"] >= pub["not_before"], pub
    # Board A's app timer uploaded its key (consent yes); B's never uploads (consent no).
    a_app, b_app = r["messages"]["gaend-app@hci0.service"], r["messages"]["gaend-app@hci1.service"]
    assert any("keys uploaded to" in m for m in a_app), a_app
    assert not any("keys uploaded to" in m for m in b_app), b_app
    # B's app timer synced the published package and turned B high; A (which never heard
    # itself) does not.
    assert len(runs["gaend-app@hci1.service"]) >= 3, runs["gaend-app@hci1.service"]
    assert any(re.search(r"[1-9][0-9]* provided", m) for m in b_app), b_app
    assert any("high risk:" in m for m in b_app), b_app
    assert (r["b_status"].get("risk") or {}).get("level") == "high", r["b_status"]
    assert (r["a_status"].get("risk") or {}).get("level") != "high", r["a_status"]
    # The collect timers shipped day 1 of both boards; the server holds them complete.
    day1 = time.strftime("%Y-%m-%d", time.gmtime(r["clock"]["trial_epoch"]))
    for unit, board in (("gaend-collect@hci0.service", "A"), ("gaend-collect@hci1.service", "B")):
        assert any(f"board={board}" in m and day1 in m for m in r["messages"][unit]), (unit, r["messages"][unit])
    verify = r["verify"]
    assert verify["rc"] == 0 and verify["stdout"].count("complete") >= 2, verify
    # The metrics timers (as shipped, every 15 s) wrote each board's textfile.
    for c in ("hci0", "hci1"):
        assert len(runs[f"gaend-metrics@{c}.service"]) >= 3 and set(runs[f"gaend-metrics@{c}.service"]) == {"done"}, runs
        assert re.search(r"^gaend_up(\{[^}]*\})? 1$", r["metrics_files"][c] or "", re.M), r["metrics_files"][c]
        # On air: the board scanned (it holds its controller).
        scans = re.search(r"^gaend_scans_total\{[^}]*\} ([0-9]+)$", r["metrics_files"][c] or "", re.M)
        assert scans and int(scans.group(1)) > 0, r["metrics_files"][c]
    # Every unit's threads got the nice values libdispatch asks for (no sandbox refused them).
    assert not any(r["thread_priority"].values()), r["thread_priority"]
    # No unit failed, and no errors from the gaend units, the publisher or nginx (nor systemd's
    # about them), and no warning about the units' files. Expected, each only when gaend
    # recovered from it: finding its controller busy while the kernel's own power-on of the new
    # controller is still under way, then retrying and opening it (checked above: the metrics'
    # scans); and, on a loaded host under TCG, its radio owner answering the watchdog's
    # question later than 15 s once (gaend says so at priority crit), then live again, without
    # a restart (one start job of gaend@ each).
    def recovered(e: dict) -> bool:
        said = r["messages"].get(e["unit"], [])
        if "controller not available; retrying" in e["message"]:
            return True
        if "the radio path is not live" in e["message"]:
            return any("the radio path is live again" in m for m in said) and runs.get(e["unit"]) == ["done"]
        return False
    assert not r["failed_units"].strip(), r["failed_units"]
    assert not [e for e in r["journal_errors"] if not recovered(e)], r["journal_errors"]
    assert not r["unit_file_warnings"], r["unit_file_warnings"]
