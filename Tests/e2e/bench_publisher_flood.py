"""Figures: the publisher against one board flooding within nginx's 64 KiB an upload (issue 29:
720k and 2.34M keys), beside 20 honest boards of 14 days each: run time, peak memory, the largest
package. Not a test (not collected):

    GAEND_FLOOD_KEYS=720009,2340000 python3 -m pytest -q -s Tests/e2e/bench_publisher_flood.py

`GAEND_FLOOD_GAENCTL` compares another build (e.g. main's). The flooding keys are compressible
(distinct key/start pairs of few distinct bytes), as they must be to fit 18,000 in an upload."""

from __future__ import annotations

import io
import os
import random
import struct
import subprocess
import time
import zipfile
from pathlib import Path

from keyserver import HEADER, _enc_varint, _field, _ld, new_signing_key, set_mtime

DAY = 86_400


def _flood(inbox: Path, total: int, now: int, per_file: int = 18_000) -> int:
    today = now // DAY
    n = f = 0
    while n < total:
        k = min(per_file, total - n)
        body = _field(1, 1, struct.pack("<Q", 0)) + _field(2, 1, struct.pack("<Q", 0)) + _ld(3, b"DE")
        recs = []
        for i in range(k):
            j = n + i
            key = struct.pack(">IIII", 0xA5A5A5A5, 0, j // 2016, 0)
            recs.append(_ld(7, _ld(1, key) + _field(3, 0, _enc_varint((today - 14) * 144 + j % 2016)) + _field(4, 0, _enc_varint(144))))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
            z.writestr("export.bin", HEADER + body + b"".join(recs))
            z.writestr("export.sig", b"")
        assert len(buf.getvalue()) < 64 << 10
        p = inbox / "flood" / f"keys-{f:04}.zip"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(buf.getvalue())
        set_mtime(p, now - 4 * 3600)
        n += k
        f += 1
    return f


def _honest(inbox: Path, now: int) -> None:
    rng = random.Random(7)
    today = now // DAY
    for b in range(20):
        for age in range(1, 15):
            p = inbox / f"board-{b:02}" / f"keys-{age}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text('[{"keyData": "%s", "rollingStartIntervalNumber": %d}]' % (rng.randbytes(16).hex(), (today - age) * 144))
            set_mtime(p, (today - age + 1) * DAY + 600 + b * 60)


def _largest_export(tree: Path) -> tuple[int, int]:
    best = (0, 0)
    for p in tree.rglob("*"):
        if p.is_file() and "app" not in p.name and p.read_bytes()[:2] == b"PK":
            z = zipfile.ZipFile(p)
            best = max(best, (z.getinfo("export.bin").file_size, p.stat().st_size))
    return best


def test_publisher_flood(bin_dir, tmp_path):
    gaenctl = os.environ.get("GAEND_FLOOD_GAENCTL", str(bin_dir / "gaenctl"))
    _, pem, _ = new_signing_key(tmp_path, "k")
    now = int(time.time()) // DAY * DAY + 15 * 3600 + 1234
    for total in [int(x) for x in os.environ.get("GAEND_FLOOD_KEYS", "720009").split(",")]:
        inbox = tmp_path / f"inbox-{total}"
        files = _flood(inbox, total, now)
        _honest(inbox, now)
        out = tmp_path / f"out-{total}"
        r = subprocess.run(["/usr/bin/time", "-f", "TIME %e s %M KiB", gaenctl, "keys", "publish", "--inbox", str(inbox), "-o", str(out),
                            "--signing-key", str(pem), "--key-id", "T", "--min-keys", "1", "--now", str(now)],
                           capture_output=True, text=True)
        export, zipped = _largest_export(out)
        print(f"\n{total} keys in {files} uploads: {r.stdout.strip()}")
        print("  ", [line for line in r.stderr.splitlines() if line.startswith("TIME")],
              f"largest package: export.bin {export} bytes, zip {zipped} bytes (app: {16 << 20}, gaend: {(64 << 20) // 16} a file in a full call)")
