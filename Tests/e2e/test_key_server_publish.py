"""`gaenctl keys publish` read back by an independent reader (Tests/e2e/keyserver.py: Python's
zipfile, a protobuf decoder by hand and `cryptography`): every signature verifies, every
publishable key appears once per layout, nothing still valid or of the current hour or day is
published, and a second run over the same inbox leaves every byte as it was."""

from __future__ import annotations

import json
import os
import random

from keyserver import (CWA_ROOT, cwa_get, new_signing_key, publish, read_package, set_mtime, tree_bytes, verify)

DAY = 86_400
# A fixed moment, in the afternoon so the current day has complete hours: the test never
# depends on the hour it runs at.
NOW = 20_400 * DAY + 15 * 3600 + 1_234


def _keys_for_board(rng: random.Random, board: int, days: range) -> list[dict]:
    return [{"keyData": rng.randbytes(16).hex(), "rollingStartIntervalNumber": (NOW // DAY - d) * 144, "rollingPeriod": 144}
            for d in days]


def test_publish_read_back_by_an_independent_reader(bin_dir, tmp_path):
    rng = random.Random(20)
    inbox = tmp_path / "inbox"
    out = tmp_path / "www" / "keys"
    new_key, new_pem, _ = new_signing_key(tmp_path, "new")
    old_key, old_pem, _ = new_signing_key(tmp_path, "old")
    trusted = {("TRIAL", "2"): new_key.public_key(), ("TRIAL", "1"): old_key.public_key()}

    submitted = []  # (hex, rsin, period, mtime)
    for board in range(6):
        d = inbox / f"board{board:02}"
        d.mkdir(parents=True)
        # Each board uploaded daily: the file of day k holds the key of day k (valid until its
        # midnight), uploaded at a board-specific minute after that midnight.
        for age in range(1, 17):
            keys = _keys_for_board(rng, board, range(age, age + 1))
            f = d / f"day-{age}.json"
            f.write_text(json.dumps(keys))
            t = (NOW // DAY - age + 1) * DAY + 600 * board + 60
            set_mtime(f, t)
            submitted += [(k["keyData"], k["rollingStartIntervalNumber"], 144, t) for k in keys]
    # Today's key, still valid, uploaded early by a broken board: must not appear.
    today = [{"keyData": rng.randbytes(16).hex(), "rollingStartIntervalNumber": (NOW // DAY) * 144, "rollingPeriod": 144}]
    (inbox / "board00" / "today.json").write_text(json.dumps(today))
    set_mtime(inbox / "board00" / "today.json", NOW - 3600 * 3)
    # Yesterday's key uploaded in the current hour: must wait for the hour to end.
    late = [{"keyData": rng.randbytes(16).hex(), "rollingStartIntervalNumber": (NOW // DAY - 1) * 144, "rollingPeriod": 144}]
    (inbox / "board01" / "late.json").write_text(json.dumps(late))
    set_mtime(inbox / "board01" / "late.json", NOW - 60)
    (inbox / "board02" / "garbage.zip").write_bytes(b"PK\x03\x04 not a zip")

    signers = [(new_pem, "TRIAL", "2"), (old_pem, "TRIAL", "1")]
    r = publish(bin_dir / "gaenctl", inbox, out, signers, NOW, "--min-keys", "1", "--country", "XY", "--region", "XY-TRIAL")
    assert "skipped" in r.stderr and "garbage.zip" in r.stderr, r.stderr

    embargo = 2 * 3600
    current_hour = NOW // 3600
    first_day = NOW // DAY - 14
    expected = set()
    for hexkey, rsin, period, t in submitted:
        available = max(t, (rsin + period) * 600 + embargo)
        if available // 3600 < current_hour and available // DAY >= first_day:
            expected.add(hexkey)
    assert len(expected) > 50
    never = {today[0]["keyData"], late[0]["keyData"]}

    def check_package(data: bytes, region: str) -> dict:
        p = read_package(data)
        # Newest signer first, both verify, and the header lists the same infos.
        assert [s["info"]["version"] for s in p["signatures"]] == ["2", "1"]
        assert verify(p, trusted) == [True, True]
        assert [i["version"] for i in p["infos"]] == ["2", "1"]
        assert p["region"] == region
        for hexkey, rsin, period in p["keys"]:
            # Expired (plus the embargo) before the package's window ended, and the window is over.
            assert (rsin + period) * 600 + embargo <= p["end"], hexkey
            assert p["end"] <= current_hour * 3600
        return p

    # CWA layout: complete days as day packages; hour packages for the days without one.
    assert json.loads(cwa_get(out, CWA_ROOT)) == ["XY"]
    days = json.loads(cwa_get(out, f"{CWA_ROOT}/XY/date"))
    assert days == sorted(days) and len(days) >= 13
    today_iso = __import__("datetime").datetime.utcfromtimestamp(NOW).strftime("%Y-%m-%d")
    assert today_iso not in days
    cwa_keys: list[str] = []
    for d in days:
        p = check_package(cwa_get(out, f"{CWA_ROOT}/XY/date/{d}"), "XY")
        assert p["end"] - p["start"] == DAY
        cwa_keys += [k[0] for k in p["keys"]]
    hours = json.loads(cwa_get(out, f"{CWA_ROOT}/XY/date/{today_iso}/hour"))
    assert hours and max(hours) < (NOW % DAY) // 3600
    for h in hours:
        p = check_package(cwa_get(out, f"{CWA_ROOT}/XY/date/{today_iso}/hour/{h}"), "XY")
        assert p["end"] - p["start"] == 3600
        cwa_keys += [k[0] for k in p["keys"]]
    assert len(cwa_keys) == len(set(cwa_keys)), "a key twice in the CWA layout"
    assert set(cwa_keys) == expected
    # Yesterday also has hour packages (the last 2 days), the same keys as its day package.
    yesterday = days[-1]
    y_hours = json.loads(cwa_get(out, f"{CWA_ROOT}/XY/date/{yesterday}/hour"))
    y_keys = sorted(k for h in y_hours for k in read_package(cwa_get(out, f"{CWA_ROOT}/XY/date/{yesterday}/hour/{h}"))["keys"])
    assert y_keys == sorted(read_package(cwa_get(out, f"{CWA_ROOT}/XY/date/{yesterday}"))["keys"])
    assert not (out / CWA_ROOT / "XY/date" / days[0] / "hour").exists()

    # Google layout: index oldest first, each file in it, each key once.
    index = (out / "XY-TRIAL/index.txt").read_text().splitlines()
    assert index and all(line.startswith("XY-TRIAL/") and line.endswith(".zip") for line in index)
    starts = [int(line.split("/")[1].split("-")[0]) for line in index]
    assert starts == sorted(starts)
    g_keys: list[str] = []
    for line in index:
        p = check_package((out / line).read_bytes(), "XY-TRIAL")
        assert line == f"XY-TRIAL/{p['start']}-{p['end']}-{p['batch_num']:05}.zip"
        assert (p["batch_num"], p["batch_size"]) == (1, 1)
        g_keys += [k[0] for k in p["keys"]]
    assert len(g_keys) == len(set(g_keys)) and set(g_keys) == expected
    assert not never & (set(g_keys) | set(cwa_keys))

    # Idempotent: the same inbox and moment give the same bytes.
    before = tree_bytes(out)
    publish(bin_dir / "gaenctl", inbox, out, signers, NOW, "--min-keys", "1", "--country", "XY", "--region", "XY-TRIAL")
    assert tree_bytes(out) == before
    # A board dates its upload into the past (nginx's PUT takes the file's time from the
    # request's Date header): its key must not change a package already published.
    backdated = [{"keyData": rng.randbytes(16).hex(), "rollingStartIntervalNumber": (NOW // DAY - 3) * 144, "rollingPeriod": 144}]
    (inbox / "board03" / "backdated.json").write_text(json.dumps(backdated))
    set_mtime(inbox / "board03" / "backdated.json", NOW - 2 * DAY)
    # An hour later the late key is out, in the now complete hour.
    publish(bin_dir / "gaenctl", inbox, out, signers, NOW + 3600, "--min-keys", "1", "--country", "XY", "--region", "XY-TRIAL")
    later = tree_bytes(out)
    changed = [p for p, data in before.items() if p in later and later[p] != data and not p.endswith(("/index", "index.txt"))]
    assert changed == [], changed
    after = (out / "XY-TRIAL/index.txt").read_text().splitlines()
    assert after[:len(index)] == index[-len(after):][:len(index)] or len(after) >= len(index)
    newest = read_package((out / after[-1]).read_bytes())
    assert {late[0]["keyData"], backdated[0]["keyData"]} <= {k[0] for k in newest["keys"]}
    assert not list(out.parent.glob(".keys.new-*")), "staging directory left behind"


def test_shifting_thin_hours_and_the_default_threshold(bin_dir, tmp_path):
    rng = random.Random(21)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    out = tmp_path / "out"
    key, pem, _ = new_signing_key(tmp_path, "k")
    # 3 keys per hour for 10 hours, two days ago (complete, published as a day).
    for h in range(10):
        f = inbox / f"h{h}.json"
        f.write_text(json.dumps([{"keyData": rng.randbytes(16).hex(), "rollingStartIntervalNumber": (NOW // DAY - 3) * 144}
                                 for _ in range(3)]))
        set_mtime(f, (NOW // DAY - 2) * DAY + h * 3600 + 5)
    publish(bin_dir / "gaenctl", inbox, out, [(pem, "K", "1")], NOW, "--min-keys", "7")
    d = __import__("datetime").datetime.utcfromtimestamp((NOW // DAY - 2) * DAY).strftime("%Y-%m-%d")
    hours = json.loads(cwa_get(out, f"{CWA_ROOT}/DE/date/{d}/hour")) if (out / CWA_ROOT / f"DE/date/{d}/hour").exists() else []
    # 3+3+3 -> hour 2; 3+3+3 -> hour 5; 3+3+3 -> hour 8; the last 3 wait.
    assert hours == []  # that day is outside the last 2 days: a day package only
    day = read_package(cwa_get(out, f"{CWA_ROOT}/DE/date/{d}"))
    assert len(day["keys"]) == 27
    index = (out / "DE/index.txt").read_text().splitlines()
    assert [int(x.split("/")[1].split("-")[0]) % DAY // 3600 for x in index] == [2, 5, 8]
    assert "3 waiting" in publish(bin_dir / "gaenctl", inbox, out, [(pem, "K", "1")], NOW, "--min-keys", "7").stdout
    # With the server's default (140), a new tree publishes nothing at all.
    fresh = tmp_path / "out-default"
    r = publish(bin_dir / "gaenctl", inbox, fresh, [(pem, "K", "1")], NOW)
    assert r.stdout.startswith("0 keys published") and json.loads(cwa_get(fresh, f"{CWA_ROOT}/DE/date")) == []
    # The tree already published keeps its packages: a published package never changes.
    before = tree_bytes(out)
    r = publish(bin_dir / "gaenctl", inbox, out, [(pem, "K", "1")], NOW)
    assert r.stdout.startswith("27 keys published"), r.stdout
    assert tree_bytes(out) == before


def test_a_failed_publish_leaves_the_tree(bin_dir, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    out = tmp_path / "out"
    _, pem, _ = new_signing_key(tmp_path, "k")
    publish(bin_dir / "gaenctl", inbox, out, [(pem, "K", "1")], NOW)
    before = tree_bytes(out)
    (tmp_path / "bad.pem").write_text("not a key")
    r = publish(bin_dir / "gaenctl", inbox, out, [(tmp_path / "bad.pem", "K", "1")], NOW, check=False)
    assert r.returncode == 1 and "--signing-key" in r.stderr
    assert tree_bytes(out) == before
