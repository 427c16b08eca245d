"""Figures: a 14-day catch-up of a trial of 50 boards (run time, bytes, peak memory of the app).
Not a test (not collected): run `python3 -m pytest -q -s Tests/e2e/bench_key_server.py`."""

from __future__ import annotations

import json
import random
import resource
import subprocess
import time

from keyserver import new_signing_key, set_mtime
from test_node_e2e import TX_POWER, nodes  # noqa: F401
from trialserver import TrialServer

DAY = 86_400


def test_catch_up_14_days_50_boards(radio, nodes, bin_dir, tmp_path):
    rng = random.Random(50)
    now = int(time.time())
    today = now // DAY
    inbox = tmp_path / "srv" / "inbox"
    for b in range(50):
        d = inbox / f"board-{b:02}"
        d.mkdir(parents=True)
        for age in range(1, 16):
            f = d / f"keys-{age}.json"
            f.write_text(json.dumps([{"keyData": rng.randbytes(16).hex(), "rollingStartIntervalNumber": (today - age) * 144}]))
            set_mtime(f, (today - age + 1) * DAY + 60 * b + 30)
    _, pem, pub = new_signing_key(tmp_path, "k")
    server = TrialServer(tmp_path, {})
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"riskEngine": "swisscovid", "parameters": {
        "attenuationThresholdLow": 55, "attenuationThresholdMedium": 63, "attenuationFactorLow": 1.0,
        "attenuationFactorMedium": 0.5, "minDurationForExposure": 15}}))
    t0 = time.monotonic()
    pub_out = subprocess.run([str(bin_dir / "gaenctl"), "keys", "publish", "--inbox", str(inbox), "-o", str(server.tree),
                              "--signing-key", str(pem), "--key-id", "K", "--min-keys", "1", "--app-config", str(config)],
                             capture_output=True, text=True, check=True)
    publish_s = time.monotonic() - t0
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    node = nodes("n", r.ready["devices"]["n"]["connect"])
    node.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e s %M KiB", str(bin_dir / "gaenctl"), "--bus", node.bus.address, "app", "sync", "--server", server.keys_url,
                          "--country", "DE", "--trust", f"K:1={pub}", "--state-dir", str(tmp_path / "app")],
                         capture_output=True, text=True)
    sync_s = time.monotonic() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    status = json.loads((tmp_path / "app/status.json").read_text())
    print("\npublish:", pub_out.stdout.strip(), f"({publish_s:.2f} s)")
    print("sync:", out.stdout.strip(), f"({sync_s:.2f} s, exit {out.returncode})")
    print("bytes downloaded:", status["lastSync"]["bytes"], "packages:", status["packagesHeld"])
    print("app:", [l for l in out.stderr.splitlines() if l.startswith("TIME")])
    server.stop()


def test_national_catch_up_google_layout(radio, nodes, bin_dir, tmp_path):
    """A national-size catch-up (GAEND_BENCH_KEYS keys over 14 days, default 1,000,000), in the
    Google layout's batches of 30,000 keys a file, hand-built and signed: the app's time, peak
    memory, and the provide calls it needs (16 files and 64 MiB a call)."""
    import os
    from pathlib import Path
    from keyserver import write_package
    total = int(os.environ.get("GAEND_BENCH_KEYS", "1000000"))
    rng = random.Random(14)
    today = int(time.time()) // DAY
    key, _, pub = new_signing_key(tmp_path, "k")
    server = TrialServer(tmp_path, {})
    lines, per_file, made = [], 30_000, 0
    t0 = time.monotonic()
    per_day = total // 14
    for age in range(14, 0, -1):
        start = (today - age) * DAY
        left, batches = per_day, []
        while left > 0:
            n = min(per_file, left)
            batches.append([(rng.randbytes(16), (today - age - rng.randrange(0, 13)) * 144, 144) for _ in range(n)])
            left -= n
        for i, ks in enumerate(batches, 1):
            name = f"NAT/{start}-{start + DAY}-{i:05}.zip"
            write_package(Path(server.tree) / name, start, start + DAY, "NAT", ks, [(key, {"id": "K", "version": "1"})],
                          batch_num=i, batch_size=len(batches))
            lines.append(name)
            made += len(ks)
    (Path(server.tree) / "NAT/index.txt").write_text("\n".join(lines) + "\n")
    build_s = time.monotonic() - t0
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    node = nodes("n", r.ready["devices"]["n"]["connect"])
    node.start()
    t0 = time.monotonic()
    out = subprocess.run(["/usr/bin/time", "-f", "TIME %e s %M KiB", str(bin_dir / "gaenctl"), "--bus", node.bus.address, "app", "sync",
                          "--server", server.keys_url, "--region", "NAT", "--trust", f"K:1={pub}", "--state-dir", str(tmp_path / "app"),
                          "--max-provide-calls", "1000", "--run-timeout", "3600", "--match-wait", "1800"],
                         capture_output=True, text=True)
    sync_s = time.monotonic() - t0
    st = json.loads((tmp_path / "app/state.json").read_text())
    print(f"\nkeys: {made} in {len(lines)} files (built in {build_s:.1f} s)")
    print("sync:", out.stdout.strip(), f"({sync_s:.1f} s, exit {out.returncode})")
    print("provide calls:", len(st["provideCalls"]), "bytes downloaded:", st["lastSync"]["bytes"])
    print("app:", [l for l in out.stderr.splitlines() if l.startswith("TIME")])
    print("gaend peak RSS KiB:", [l for l in open(f"/proc/{node.proc.pid}/status").read().splitlines() if l.startswith("VmHWM")])
    server.stop()
