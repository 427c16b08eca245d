"""Trial scenario: a trial's whole loop through the shipped units and timers under systemd.

The board package, the research tools' and the trial server package are installed with apt
(every unit runs the board's gaenctl, gaend's binary), the trial is provisioned from a two-board
inventory with `gaenctl-research trial provision` and its files put where the provisioned
README says; nginx serves the installed site. Board A (hci0, positive: consent yes) runs on the
board's own /etc/gaend configuration; board B (hci1, 1 m away) is a second board on the same guest,
so its instances get drop-ins that point them at B's files (one guest stands for two boards; a
real board has one controller and needs none). Everything runs on one trial clock, and the
timers are shortened by drop-ins, so that a trial night passes in a few minutes:
gaend-app@ (A submits after midnight, both sync), gaend-publish (A's key of day 1 published once
the hour 02:00-03:00 of day 2 is complete), B turns high, gaend-collect@ ships day 1 of both
boards, gaend-metrics@ writes its textfiles. What each timer's runs did is read back from the
journal, and the boot's errors from the gaend units, nginx and systemd about them are recorded.
"""
import glob
import json
import os
import re
import subprocess
import time
from pathlib import Path

from common import LONG, WORK, VRadio, gaenctl_pages, log, main, mark_clock_synchronised, record, run, systemctl, unit_state, wait_for

# The trial clock: a trial hour in 3600/SCALE real seconds (24 s). The loop needs from day 1
# 20:00 (the boards start about an hour later under TCG: A and B in contact until midnight) to
# about day 2 04:00: some 3 1/2 minutes of real time.
SCALE = 150
START_HOUR = 20
TRIAL = Path("/root/trial")
CLOCK_BOARD = "/etc/gaend/trial-clock"
CLOCK_SERVER = "/etc/gaend-trial/trial-clock"
BOARDS = {"A": {"controller": "hci0", "x": 0, "consent": "yes"}, "B": {"controller": "hci1", "x": 1, "consent": "no"}}
# systemd's messages at the end of a start job: finished, and failed (their JOB_RESULT field
# says how: done, failed, ...).
JOB_DONE_IDS = ("39f53479d3a045ac8e11786248231fbf", "be02cf6855d2428ba40df7e9d022f03d")
ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}


def sh(args, **kw) -> subprocess.CompletedProcess:
    p = run(args, **kw)
    assert p.returncode == 0, f"{args[0]} failed: {p.stderr[-1500:]}"
    return p


def journal(*args) -> list[dict]:
    p = subprocess.run(["journalctl", "--no-pager", "-b", "-o", "json", *args], capture_output=True, text=True, timeout=LONG)
    out = []
    for line in p.stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def message(e: dict) -> str:
    m = e.get("MESSAGE")
    return bytes(m).decode(errors="replace") if isinstance(m, list) else str(m or "")


def unit_messages(unit: str) -> list[dict]:
    """What the unit's own processes wrote (gaenctl's lines), with their real time."""
    return [{"t": int(e["__REALTIME_TIMESTAMP"]) / 1e6, "m": message(e)} for e in journal("_SYSTEMD_UNIT=" + unit)]


def job_results(unit: str) -> list[str]:
    """systemd's result of each start job of the unit this boot (one per timer run)."""
    # Two values of one field: journalctl matches either.
    return [e.get("JOB_RESULT", "") for e in journal("_PID=1", "UNIT=" + unit, *("MESSAGE_ID=" + i for i in JOB_DONE_IDS))
            if e.get("JOB_TYPE") == "start"]


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def install_packages() -> None:
    debs = [d for kind in ("gaend_", "gaend-research-tools_", "gaend-trial-server_") for d in sorted(glob.glob(str(WORK / f"{kind}*.deb")))]
    assert len(debs) == 3, debs
    # man-db's trigger re-indexes the host's manual pages over 9p (minutes under TCG); not ours.
    Path("/var/lib/man-db/auto-update").unlink(missing_ok=True)
    names = []
    for deb in debs:
        depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
        names += [d.strip().split(" ")[0] for d in depends.split(",") if d.strip() and not d.strip().startswith("gaend")]
    # One dpkg-query for all (a dpkg call each took a second under TCG).
    q = run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n", *sorted(set(names))])
    installed = {l.split()[0] for l in q.stdout.splitlines() if l.endswith(" installed")}
    record("missing_depends", [n for n in sorted(set(names)) if n.split(":")[0] not in installed])
    # As a trial engineer would: the three packages in one apt call (the server's depends on the
    # research tools').
    inst = run(["apt", "install", "-y"] + ["./" + Path(d).name for d in debs], timeout=900, cwd=WORK, env=ENV)
    record("apt_install", {"rc": inst.returncode, "stdout": inst.stdout[-3000:], "stderr": inst.stderr[-3000:]})
    assert inst.returncode == 0, inst.stderr[-2000:]
    # This guest is the server and both boards. The research tools' full gaenctl took over
    # /usr/bin/gaenctl (priority 20); the units run the board's gaenctl (gaend's binary), as on a
    # board that has only gaend's package, and the research commands below say gaenctl-research.
    # Its pages came with it (the alternative's slaves), and go back with the board's gaenctl.
    research_pages = gaenctl_pages()
    alt = run(["update-alternatives", "--set", "gaenctl", "/usr/bin/gaend"])
    record("alternatives", {"rc": alt.returncode, "stdout": alt.stdout, "stderr": alt.stderr,
                            "gaenctl": os.path.realpath("/usr/bin/gaenctl"),
                            "research_pages": research_pages, "board_pages": gaenctl_pages()})
    assert alt.returncode == 0 and os.path.realpath("/usr/bin/gaenctl") == "/usr/bin/gaend", alt.stderr


def provision() -> Path:
    """The trial's secrets (a private CA, its server certificate, the publisher's key) and
    `gaenctl trial provision` of a two-board inventory, as docs/provision.md says."""
    ca = TRIAL / "ca"
    ca.mkdir(parents=True)
    steps = [
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
         "-out", "ca.pem", "-days", "3", "-subj", "/CN=gaend test bed trial CA"],
        ["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
         "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
        ["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.pem", "-days", "3", "-extfile", "ext.cnf"],
        ["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "signing-key.pem"],
        ["openssl", "ec", "-in", "signing-key.pem", "-pubout", "-out", "trial-key.pem"],
    ]
    (ca / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    for s in steps:
        sh(s, cwd=ca)
    boards = "\n".join(f"  - {{name: {n}, site: ward 1, position: bed {i + 1}, x: {b['x']}, y: 0, consent: {b['consent']}, "
                       f"outcomes_consent: yes, host: 127.0.0.1, metrics_port: {9100 + i}, controller: {b['controller']}}}"
                       for i, (n, b) in enumerate(BOARDS.items()))
    (TRIAL / "inventory.yml").write_text(f"""# The test bed's trial (Tests/testbed/guest/trial.py): two boards on one guest.
trial: testbed
time_zone: UTC
server:
  name: 127.0.0.1
  url: https://127.0.0.1
  ca: ca/ca.pem
  trust_key: ca/trial-key.pem
  tls_certificate: /etc/ssl/certs/gaend-trial.pem
  tls_key: /etc/ssl/private/gaend-trial.key
  country: DE
  key_id: TRIAL
  key_version: 1
  min_keys: 1
  app_config: /etc/gaend-trial/app-config.json
alerting:
  webhook: http://127.0.0.1:9/hook
boards:
{boards}
""")
    # The research tools' gaenctl, with the deploy files its package ships beside it.
    p = sh(["/usr/bin/gaenctl-research", "trial", "provision", TRIAL / "inventory.yml", "--out", TRIAL / "config"])
    record("provision", p.stdout[-2000:])
    return TRIAL / "config"


def add_option(env_file: str, key: str, extra: str) -> str:
    """The env file with `extra` appended to KEY's value (added if absent)."""
    lines, found = [], False
    for line in env_file.splitlines():
        if line.startswith(key + "="):
            line, found = (f"{line} {extra}" if line != key + "=" else line + extra), True
        lines.append(line)
    if not found:
        lines.append(f"{key}={extra}")
    return "\n".join(lines) + "\n"


def board_files(config: Path, name: str, etc: Path) -> None:
    """A board's provisioned files in `etc` (the board's /etc/gaend), with the rehearsal's
    additions: the trial clock for gaend (trial_clock:) and for the app and collection (their
    --trial-clock in TRIAL_OPTIONS, which app submit, app sync and collect all get), and a radio
    schedule for compressed time as scripts/rehearse.sh has (a 4 s scan, the longest allowed,
    every 30 s lasts 27 ms of real time at x150; with the shortest advertising interval, 20 ms,
    about one advertisement a scan)."""
    src = config / "boards" / name
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "gaend.conf").write_text((src / "gaend.conf").read_text() + f"""
# The test bed's rehearsal (Tests/testbed/guest/trial.py):
trial_clock: {CLOCK_BOARD}
advertising:
  interval_min_ms: 20
  interval_max_ms: 27
scanning:
  mode: fixed
  duration_seconds: 4
  fixed_period_seconds: 30
""")
    (etc / "app.env").write_text(add_option((src / "app.env").read_text(), "TRIAL_OPTIONS", f"--trial-clock {CLOCK_BOARD}"))
    for f, mode in (("app-password", 0o600), ("trial-ca.pem", 0o644), ("trial-key.pem", 0o644)):
        (etc / f).write_bytes((src / f).read_bytes())
        os.chmod(etc / f, mode)


def install_config(config: Path) -> None:
    record("provisioned_readme", (config / "README.md").read_text()[-4000:] if (config / "README.md").exists() else None)
    # Board A: the board's own /etc/gaend, as on a real board.
    board_files(config, "A", Path("/etc/gaend"))
    # Board B: its own files; its units' drop-ins point at them (written in dropins()).
    board_files(config, "B", Path("/etc/gaend/boards/B"))
    # The server: nginx's site and passwords, the publisher's settings and key, the TLS certificate.
    # As the provisioned README says: nginx's workers (www-data) read the passwords.
    sh(["cp", "-r", "--", f"{config}/server/nginx/.", "/etc/nginx/gaend-trial/"])
    sh(["chgrp", "www-data", "/etc/nginx/gaend-trial/boards.htpasswd"])
    publish = add_option((config / "server/publish.env").read_text(), "TRIAL_OPTIONS", f"--trial-clock {CLOCK_SERVER}")
    Path("/etc/gaend-trial/publish.env").write_text(publish)
    key = Path("/etc/gaend-trial/signing-key.pem")
    key.write_bytes((TRIAL / "ca/signing-key.pem").read_bytes())
    os.chmod(key, 0o600)
    Path("/etc/ssl/certs/gaend-trial.pem").write_bytes((TRIAL / "ca/server.pem").read_bytes())
    Path("/etc/ssl/private/gaend-trial.key").write_bytes((TRIAL / "ca/server.key").read_bytes())
    os.chmod("/etc/ssl/private/gaend-trial.key", 0o600)


def write_clock() -> tuple[int, int]:
    """The trial clock, starting now: real now is day 1 20:00 UTC (day 1 is tomorrow's date, so
    every run has the same trial hours whatever the real hour). Returns (R0, T0)."""
    r0 = int(time.time())
    t0 = (r0 // 86400 + 1) * 86400 + START_HOUR * 3600
    text = f"# gaend trial clock of the test bed: trial time = trial_epoch + (real time - real_epoch) x scale\n" \
           f"scale: {SCALE}\nreal_epoch: {iso(r0)}\ntrial_epoch: {iso(t0)}\n"
    for path in (CLOCK_BOARD, CLOCK_SERVER):
        Path(path).write_text(text)
        os.chmod(path, 0o644)
    return r0, t0


def dropin(unit: str, text: str) -> None:
    d = Path("/etc/systemd/system") / (unit + ".d")
    d.mkdir(parents=True, exist_ok=True)
    (d / "testbed.conf").write_text(text)


def dropins() -> None:
    # Shortened timers (real seconds; a trial hour is 24 s). An empty OnCalendar= or OnBootSec=
    # resets the shipped schedule; OnActiveSec starts the first run soon after the timer.
    # Not shorter: under TCG a gaenctl run takes 5-15 s of real time, so with the earlier 5, 8
    # and 12 s each timer started its next run as the last ended, six batch runs were always
    # busy on the guest's two CPUs, and gaend's radio owner twice went 15 s without answering
    # the watchdog's question (systemd then restarted it), in two of seven runs.
    dropin("gaend-publish.timer", "[Timer]\nOnCalendar=\nOnActiveSec=2s\nOnUnitActiveSec=10s\nAccuracySec=1s\nPersistent=no\n")
    dropin("gaend-app@.timer", "[Timer]\nOnCalendar=\nRandomizedDelaySec=0\nOnActiveSec=3s\nOnUnitActiveSec=20s\nAccuracySec=1s\nPersistent=no\n")
    dropin("gaend-collect@.timer", "[Timer]\nOnBootSec=\nRandomizedDelaySec=0\nOnActiveSec=5s\nOnUnitActiveSec=24s\nAccuracySec=1s\nPersistent=no\n")
    # gaend-metrics@.timer runs every 15 s as shipped: no drop-in.
    # Board B on the same guest: its gaend, app and collection read B's files. ExecStart= and
    # ExecCondition= empty reset the shipped commands; a later EnvironmentFile= overrides the
    # earlier one's values; an empty LoadCredential= drops the shipped password.
    b = "/etc/gaend/boards/B"
    dropin("gaend@hci1.service", f"[Service]\nExecCondition=\nExecCondition=/usr/bin/gaend --config {b}/gaend.conf --controller %I --check-controller\n"
           f"ExecStart=\nExecStart=/usr/bin/gaend --config {b}/gaend.conf --controller %I --state-dir /var/lib/gaend/%i --bus system --bus-name org.gaend.%i\n")
    for unit in ("gaend-app@hci1.service", "gaend-collect@hci1.service"):
        dropin(unit, f"[Service]\nEnvironmentFile={b}/app.env\nLoadCredential=\nLoadCredential=board-password:{b}/app-password\n")


def status_json(instance: str) -> dict:
    try:
        return json.loads(Path(f"/var/lib/gaend-app/{instance}/status.json").read_text())
    except (OSError, ValueError):
        return {}


def scenario() -> None:
    mark_clock_synchronised()
    run(["modprobe", "hci_vhci"])
    # The guest has no network (qemu -nic none): systemd-networkd's wait for it (pulled in by
    # nginx's network-online.target) would hold nginx's start for its 2 min timeout and then fail.
    systemctl("mask", "systemd-networkd-wait-online.service")
    # The boards' controllers are gaend's alone: bluetoothd (the host's bluez, started by
    # bluetooth.target when a controller appears) powers a controller up through mgmt while
    # gaend waits for the kernel's own slow power-on under TCG, and gaend then finds it busy for
    # good. Coexistence with bluetoothd is the package scenario's subject, not this one's.
    systemctl("mask", "bluetooth.service")
    install_packages()
    config = provision()
    install_config(config)
    # The site: enabled by the package's script now that its certificate is there, nginx started.
    site = run(["/usr/lib/gaend-trial-server/enable-site"])
    record("enable_site", {"rc": site.returncode, "stdout": site.stdout, "stderr": site.stderr})
    systemctl("start", "nginx.service")
    record("nginx", unit_state("nginx.service"))
    assert unit_state("nginx.service") == "active", run(["journalctl", "--no-pager", "-b", "-u", "nginx"]).stdout[-3000:]

    # The radio first (Bumble's start takes a while under TCG), then the clock (the publisher
    # and gaend refuse to run without it), the drop-ins, the publisher's timer (enabled by the
    # package) restarted with its shortened schedule, and the controllers. The radio's default
    # TX power (0 dBm): a negative one breaks the kernel's LE Read Transmit Power at the
    # controller's setup (Bumble cannot encode it; the command times out and the kernel's setup
    # never ends, so gaend finds the controller busy for good).
    vr = VRadio([f"name={n},transport=tcp-server:127.0.0.1:0,x={b['x']},sensitivity=-95" for n, b in BOARDS.items()])
    r0, t0 = write_clock()
    record("clock", {"real_epoch": r0, "trial_epoch": t0, "scale": SCALE})
    dropins()
    systemctl("daemon-reload")
    systemctl("restart", "gaend-publish.timer")
    for n, b in BOARDS.items():
        index = vr.plug(n)
        assert f"hci{index}" == b["controller"], (n, index)
    for b in BOARDS.values():
        unit = f"gaend@{b['controller']}.service"
        # Until it is up, or has failed or been skipped for good (a config it refused).
        wait_for(lambda: unit_state(unit) in ("active", "failed") or "exec-condition" in
                 run(["systemctl", "show", "-p", "Result", "--value", unit]).stdout, 300, 2)
        assert unit_state(unit) == "active", run(["journalctl", "--no-pager", "-b", "-u", unit]).stdout[-4000:]
    record("gaend_active_trial_hour", (time.time() - r0) * SCALE / 3600 + START_HOUR)
    # As docs/fleet.md says for each board: the app, metrics and collection timers.
    timers = [f"gaend-{k}@{b['controller']}.timer" for b in BOARDS.values() for k in ("app", "metrics", "collect")]
    sh(["systemctl", "enable", "--now", *timers])

    def trial_now() -> float:
        return t0 + (time.time() - r0) * SCALE

    def day2(hour: float) -> float:
        return t0 - START_HOUR * 3600 + 86400 + hour * 3600

    def uploaded() -> bool:
        return any("keys uploaded to" in m["m"] for m in unit_messages("gaend-app@hci0.service"))

    def published() -> list[dict]:
        return [m for m in unit_messages("gaend-publish.service") if re.search(r"\b[1-9][0-9]* keys published", m["m"])]

    def b_high() -> bool:
        return (status_json("hci1").get("risk") or {}).get("level") == "high"

    def collected() -> bool:
        day1 = time.strftime("%Y-%m-%d", time.gmtime(t0))
        return all(Path(f"/var/lib/gaend-trial/collect/board={n}/day={day1}").is_dir() and
                   any("board=" + n in m["m"] for m in unit_messages(f"gaend-collect@{b['controller']}.service"))
                   for n, b in BOARDS.items())

    # Each step by a trial time (A's app runs every 50 trial minutes, the publisher every 25,
    # B's app every 50), with 90 s of real time beyond it: every program is slower under TCG on
    # a loaded host, and a gaenctl run there takes seconds, each of them 2.5 trial minutes.
    steps = {}
    for name, pred, by in (("uploaded", uploaded, 3), ("published", lambda: bool(published()), 5),
                           ("b_high", b_high, 7), ("collected", collected, 7)):
        deadline = r0 + (day2(by) - t0) / SCALE + 90
        ok = wait_for(pred, max(deadline - time.time(), 0), 2)
        steps[name] = {"ok": ok, "by_trial_hour_day2": by, "trial_hours_since_day2": round((trial_now() - day2(0)) / 3600, 2)}
        log(f"{name}: {ok}")
        record("steps", steps)
        if not ok:
            break
    # The loop is done: the timers stop, so that the journal read below is final, and read
    # without their load (a journal query takes seconds under TCG).
    sh(["systemctl", "stop", *timers, "gaend-publish.timer"])
    first_publication = published()[:1]
    record("publication", {"first": first_publication[0]["m"] if first_publication else None,
                           "trial_time": iso(t0 + (first_publication[0]["t"] - r0) * SCALE) if first_publication else None,
                           "not_before": iso(day2(3))})
    record("b_status", status_json("hci1"))
    record("a_status", status_json("hci0"))
    units = ["gaend-publish.service", "nginx.service"] + [f"gaend{k}@{b['controller']}.service" for b in BOARDS.values()
                                                         for k in ("", "-app", "-metrics", "-collect")]
    record("runs", {u: job_results(u) for u in units})
    lines = {u: [m["m"] for m in unit_messages(u)] for u in units}
    # Each unit's lines (gaend's own: its last 60, its schedule's "ran late" lines left out).
    record("messages", {u: [m for m in lines[u] if "ran late" not in m][-60 if u.startswith("gaend@") else None:] for u in units})
    # libdispatch's complaint when a unit's sandbox refuses its threads' nice values.
    record("thread_priority", {u: len([m for m in lines[u] if "thread priority" in m]) for u in units})
    record("metrics_files", {b["controller"]: (Path(f"/var/lib/prometheus/node-exporter/gaend-{b['controller']}.prom").read_text()
                                               if Path(f"/var/lib/prometheus/node-exporter/gaend-{b['controller']}.prom").exists() else None)
                             for b in BOARDS.values()})
    verify = run(["/usr/bin/gaenctl-research", "trial", "verify", "--strict", "/var/lib/gaend-trial/collect"])
    record("verify", {"rc": verify.returncode, "stdout": verify.stdout[-3000:], "stderr": verify.stderr[-2000:]})
    record("timers", run(["systemctl", "list-timers", "--all", "--no-pager"]).stdout)
    # The boot's errors (priority err and worse) of the gaend units, the publisher and nginx,
    # and systemd's own about them (a failed unit, a refused setting).
    errors = []
    for e in journal("-p", "err"):
        unit = e.get("_SYSTEMD_UNIT") or ""
        about = e.get("UNIT") or e.get("USER_UNIT") or ""
        if any(u.startswith(("gaend", "nginx")) for u in (unit, about)) or "gaend" in message(e):
            errors.append({"unit": unit, "about": about, "priority": e.get("PRIORITY"), "message": message(e)})
    record("journal_errors", errors)
    # systemd's warnings about the units' files (an unknown or refused setting is a warning).
    record("unit_file_warnings", [message(e) for e in journal("_PID=1", "-p", "warning")
                                  if "gaend" in message(e) or "nginx" in message(e)][:30])
    record("failed_units", run(["systemctl", "--failed", "--no-legend", "--plain", "--no-pager"]).stdout)
    vr.stop()


def scenario_with_journal() -> None:
    """The scenario, then the whole boot's journal in the work folder for reading (pass or fail)."""
    try:
        scenario()
    finally:
        with open(WORK / "journal.txt", "w") as f:
            subprocess.run(["journalctl", "--no-pager", "-b", "-o", "short-monotonic"], stdout=f, timeout=LONG)


main(scenario_with_journal)
