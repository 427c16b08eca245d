"""Report-flood benchmark (not a test): how many GAEN reports a second a
node ingests with zero loss, and its resident memory under a report flood on a full disk.

    scripts/flood-bench.sh [--rates 500,1000,2000,3000,5000] [--seconds 20] [--disk-full-minutes 5]
    scripts/flood-bench.sh --memory-sightings 1000000 [--memory-rate 5000] --disk-full-minutes 0

One gaend in continuous scanning on the virtual radio; vradio's `flood` command delivers
distinct GAEN reports to its host while it scans. Loss = 1 - (sightings the node recorded) /
(reports vradio delivered), per rate. The disk-full run (root: a tmpfs) floods at the highest
rate for the given minutes with the store full and samples gaend's VmRSS every 10 s. The
memory run floods with the disk not full until the node recorded N more sightings and prints
RSS and anonymous RSS before the flood, after its first 30 s, and at the end."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "virtual-radio" / "tests"))
sys.path.insert(0, str(REPO / "Tests" / "e2e"))

from helpers import Radio  # noqa: E402
from test_node_e2e import Node  # noqa: E402

CONFIG = """
scanning:
  mode: continuous
  duration_seconds: 4
research:
  enabled: true
"""


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def wait(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.5)
    return False


def memory_run(node, radio, sightings: int, rate: float) -> dict:
    """Floods until `sightings` more are recorded; RSS (and anonymous RSS) after the first
    30 s of flood (the start: allocator and SQLite caches warm) and at the end."""
    def anon_kb(pid: int) -> int:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
        return -1
    pid = node.proc.pid
    idle = {"rss_kb": rss_kb(pid), "anon_kb": anon_kb(pid), "sightings": node.status()["sightingCount"]}
    radio.ok(cmd="flood", device="n", rate=rate, seconds=100000)
    time.sleep(30)
    base = node.status()["sightingCount"]
    start = {"rss_kb": rss_kb(pid), "anon_kb": anon_kb(pid), "sightings": base}
    samples, anon = [], []
    t0 = time.monotonic()
    while node.status()["sightingCount"] - base < sightings:
        samples.append(rss_kb(pid))
        anon.append((node.status()["sightingCount"] - base, anon_kb(pid)))
        time.sleep(10)
    radio.ok(cmd="flood", device="n", rate=0)
    time.sleep(6)
    end = {"rss_kb": rss_kb(pid), "anon_kb": anon_kb(pid), "sightings": node.status()["sightingCount"]}
    return {"memory_sightings": end["sightings"] - base, "rate": rate, "seconds": round(time.monotonic() - t0),
            "idle_before_flood": idle, "start": start, "end": end, "rss_kb_max": max(samples + [end["rss_kb"]]),
            "anon_kb_samples": anon, "loadavg": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="500,1000,2000,3000,5000")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--disk-full-minutes", type=float, default=5)
    ap.add_argument("--memory-sightings", type=int, default=0,
                    help="instead of the rates: flood until the node recorded this many sightings; print RSS at start and end")
    ap.add_argument("--memory-rate", type=float, default=5000)
    ap.add_argument("--bin-dir", default=os.environ.get("GAEND_BIN_DIR"))
    args = ap.parse_args()
    bin_dir = Path(args.bin_dir or subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=REPO,
                                                  capture_output=True, text=True, check=True).stdout.strip())
    tmp = Path(tempfile.mkdtemp(prefix="gaend-flood-"))
    radio = Radio({"devices": [{"name": "n", "transport": "tcp-server:127.0.0.1:0"}], "channel": {}, "seed": 3}, tmp)
    node = Node(bin_dir, tmp, "n", radio.ready["devices"]["n"]["connect"], extra=["--ignore-clock-sync"], config=CONFIG)
    results = {"bin_dir": str(bin_dir), "loadavg": os.getloadavg(), "rates": []}
    try:
        node.start()
        assert wait(lambda: node.status()["scanCount"] >= 1, 30)
        if args.memory_sightings:
            results["memory"] = memory_run(node, radio, args.memory_sightings, args.memory_rate)
            print(json.dumps(results["memory"]), flush=True)
            args.rates = ""
        for rate in [float(r) for r in args.rates.split(",") if r]:
            before_stats = radio.stats("n").get("flood_reports", 0)
            before = node.status()["sightingCount"]
            radio.ok(cmd="flood", device="n", rate=rate, seconds=args.seconds)
            time.sleep(args.seconds + 0.5)
            delivered = radio.stats("n").get("flood_reports", 0) - before_stats
            scans = node.status()["scanCount"]
            wait(lambda: node.status()["scanCount"] >= scans + 2, 20)  # the scan holding the flood's end is recorded
            status = node.status()
            stored = status["sightingCount"] - before
            row = {"rate": rate, "delivered": delivered, "delivered_per_s": round(delivered / args.seconds),
                   "stored": stored, "loss_pct": round(100 * (1 - stored / delivered), 3) if delivered else None,
                   "status": {k: v for k, v in status.items() if "rop" in k or k == "status"}}
            results["rates"].append(row)
            print(json.dumps(row), flush=True)
        zero = [r["delivered_per_s"] for r in results["rates"] if r["loss_pct"] is not None and r["loss_pct"] <= 0]
        results["zero_loss_max_per_s"] = max(zero) if zero else 0
        print(json.dumps({"zero_loss_max_reports_per_s": results["zero_loss_max_per_s"]}), flush=True)
    finally:
        node.close()

    if args.disk_full_minutes > 0 and os.geteuid() == 0:
        node2 = Node(bin_dir, tmp, "full", radio.ready["devices"]["n"]["connect"], extra=["--ignore-clock-sync"], config=CONFIG)
        node2.state.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(node2.state)], check=True)
        try:
            node2.start()
            assert wait(lambda: node2.status()["scanCount"] >= 1, 30)
            rate = max(float(r) for r in args.rates.split(","))
            subprocess.run(["dd", "if=/dev/zero", f"of={node2.state / 'filler'}", "bs=4k"], capture_output=True)
            radio.ok(cmd="flood", device="n", rate=rate, seconds=args.disk_full_minutes * 60 + 5)
            samples = []
            end = time.monotonic() + args.disk_full_minutes * 60
            while time.monotonic() < end:
                samples.append(rss_kb(node2.proc.pid))
                time.sleep(10)
            status = node2.status()
            row = {"disk_full_minutes": args.disk_full_minutes, "rate": rate, "rss_kb_first": samples[0],
                   "rss_kb_max": max(samples), "rss_kb_last": samples[-1], "rss_samples_kb": samples,
                   "status": status}
            results["disk_full"] = row
            print(json.dumps(row), flush=True)
        finally:
            node2.close()
            subprocess.run(["umount", "-l", str(node2.state)], capture_output=True)
    radio.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
