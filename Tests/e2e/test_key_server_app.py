"""`gaenctl app sync` against trees it did not publish: built here by hand in the published
layouts (Tests/e2e/keyserver.py writes them with Python's zipfile and `cryptography`), served by
real nginx with the repository's configuration, and the faults a naive client gets wrong:
an unknown signer, a truncated zip, a revoked package, a huge file, a missing hour, the server
down then back, a board off for two days, the clock 3 h off, 500 and 429 with Retry-After,
and the provide limit reached.

Server and app run at a fixed time of day (libfaketime: today 12:30 UTC, or a later day), so
no test depends on the hour it runs at."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from conftest import wait_for
from keyserver import CWA_ROOT, new_signing_key, signed_config, write_package
from test_node_e2e import TX_POWER, nodes  # noqa: F401  (the nodes fixture)
from trialserver import FAKETIME, TrialServer, faketime_env

pytestmark = pytest.mark.skipif(FAKETIME is None, reason="libfaketime is not installed (scripts/setup.sh installs the faketime package)")

DAY = 86_400
RNG = random.Random(2020)
CONFIG = {"riskEngine": "swisscovid", "parameters": {"attenuationThresholdLow": 55, "attenuationThresholdMedium": 63,
                                                     "attenuationFactorLow": 1.0, "attenuationFactorMedium": 0.5,
                                                     "minDurationForExposure": 15}}


class Clock:
    """A libfaketime offset file: the wall clock at `days` after today, 12:30 UTC."""

    def __init__(self, directory: Path) -> None:
        self.file = directory / "faketime"
        self.base = time.time() // DAY * DAY + 12 * 3600 + 1800
        self.set(0)

    def set(self, days: int, extra_seconds: int = 0) -> None:
        self.now = int(self.base + days * DAY)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(f"{int(self.now + extra_seconds - time.time()):+d}\n")
        os.replace(tmp, self.file)

    @property
    def today(self) -> int:
        return self.now // DAY


def iso(day: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(day * DAY))


def keys(day: int, n: int = 3) -> list[tuple[bytes, int, int]]:
    return [(RNG.randbytes(16), day * 144, 144) for _ in range(n)]


class Tree:
    """A CWA layout written by hand: ENDPOINT/index files, as the nginx config serves them."""

    def __init__(self, root: Path, signers, country: str = "DE") -> None:
        self.root, self.signers, self.cc = root, signers, country
        self.days: list[int] = []
        self.hours: dict[int, list[int]] = {}
        self.put(CWA_ROOT, json.dumps([country]).encode())
        self.index()

    def put(self, endpoint: str, data: bytes) -> Path:
        p = self.root / endpoint / "index"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p

    def path(self, day: int, hour: int | None = None) -> Path:
        e = f"{CWA_ROOT}/{self.cc}/date/{iso(day)}" + ("" if hour is None else f"/hour/{hour}")
        return self.root / e / "index"

    def index(self) -> None:
        self.put(f"{CWA_ROOT}/{self.cc}/date", json.dumps([iso(d) for d in sorted(self.days)]).encode())
        for d, hs in self.hours.items():
            self.put(f"{CWA_ROOT}/{self.cc}/date/{iso(d)}/hour", json.dumps(sorted(hs)).encode())

    def day(self, day: int, ks, signers=None) -> bytes:
        self.days.append(day)
        p = self.path(day)
        data = write_package(p, day * DAY, day * DAY + DAY, self.cc, ks, signers or self.signers)
        self.index()
        return data

    def hour(self, day: int, hour: int, ks, signers=None, listed_only: bool = False) -> bytes | None:
        self.hours.setdefault(day, []).append(hour)
        self.index()
        if listed_only:
            return None
        start = day * DAY + hour * 3600
        return write_package(self.path(day, hour), start, start + 3600, self.cc, ks, signers or self.signers)

    def config(self, config: dict) -> None:
        p = self.root / "version/v1/configuration/country" / self.cc / "app_config" / "index"
        signed_config(p, config, self.signers)


@pytest.fixture
def setup(radio, nodes, tmp_path, bin_dir):
    clock = Clock(tmp_path)
    env = faketime_env(clock.file)
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    node = nodes("n", r.ready["devices"]["n"]["connect"])
    node.start()
    servers: list[TrialServer] = []

    def server(extra: str = "") -> TrialServer:
        s = TrialServer(tmp_path / f"server{len(servers)}", {}, env=env, extra_locations=extra)
        servers.append(s)
        return s

    new, new_pem, new_pub = new_signing_key(tmp_path, "new")
    old, old_pem, old_pub = new_signing_key(tmp_path, "old")
    stranger, _, _ = new_signing_key(tmp_path, "stranger")
    ctx = {"clock": clock, "env": env, "node": node, "server": server, "tmp": tmp_path, "bin": bin_dir,
           "signers": [(new, {"id": "TRIAL", "version": "2"}), (old, {"id": "TRIAL", "version": "1"})],
           "stranger": [(stranger, {"id": "TRIAL", "version": "3"})],
           "trust": [f"TRIAL:2={new_pub}", f"TRIAL:1={old_pub}"]}
    yield ctx
    for s in servers:
        s.stop()


def sync(ctx, url: str, *extra: str, layout=("--country", "DE"), state: str = "app", env=None, trust=None):
    args = ["nice", "-n", "0", str(ctx["bin"] / "gaenctl"), "--bus", ctx["node"].bus.address, "app", "sync", "--server", url, *layout,
            "--state-dir", str(ctx["tmp"] / state), "--backoff", "0.2", *extra]
    for t in trust or ctx["trust"]:
        args += ["--trust", t]
    out = subprocess.run(args, capture_output=True, text=True, env=env or ctx["env"], timeout=180)
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return out, last


def state(ctx, name: str = "app") -> dict:
    return json.loads((ctx["tmp"] / name / "state.json").read_text())


def test_hand_built_cwa_tree_with_refusals(setup):
    ctx = setup
    s = ctx["server"]()
    t = Tree(s.tree, ctx["signers"])
    today = ctx["clock"].today
    good = [t.day(today - 3, keys(today - 4)), t.day(today - 2, keys(today - 3))]
    # Yesterday: signed by a key nobody trusts (refused, counted, the rest go on).
    t.day(today - 1, keys(today - 2), signers=ctx["stranger"])
    # Today's hours: one good with two signature infos (the trusted old key second), one
    # truncated, one huge (bounded), one listed whose file is missing.
    good.append(t.hour(today, 0, keys(today - 1)))
    truncated = t.hour(today, 1, keys(today - 1))
    t.path(today, 1).write_bytes(truncated[: len(truncated) // 2])
    t.hour(today, 2, keys(today - 1, 4000))
    t.hour(today, 3, [], listed_only=True)
    t.config(CONFIG)

    out, last = sync(ctx, s.keys_url, "--max-package-bytes", "65536")
    # Completed, with refusals: exit 2 (docs/key-server.md), the one missing hour waiting.
    assert out.returncode == 2, out.stderr
    assert last == "3 new packages, 3 provided, 3 refused, 1 waiting", out.stdout + out.stderr
    err = out.stderr
    assert f"refused {s.keys_url}/{CWA_ROOT}/DE/date/{iso(today - 1)}:" in err and "no trusted key" in err, err
    assert f"refused {s.keys_url}/{CWA_ROOT}/DE/date/{iso(today)}/hour/1:" in err, err
    assert f"refused {s.keys_url}/{CWA_ROOT}/DE/date/{iso(today)}/hour/2:" in err and "more than 65536 bytes" in err, err
    assert f"{CWA_ROOT}/DE/date/{iso(today)}/hour/3: listed in the index but HTTP 404" in err, err
    st = state(ctx)
    assert sorted(st["packages"]) == sorted([f"cwa/DE/{iso(today - 3)}", f"cwa/DE/{iso(today - 2)}", f"cwa/DE/{iso(today)}/0"])
    assert all(p["providedAt"] for p in st["packages"].values())

    # The missing hour appears, the stranger's day is re-signed: the next run takes both, and
    # nothing is provided twice.
    t.hour(today, 3, keys(today - 1))
    t.hours[today].remove(3)
    t.days.remove(today - 1)
    t.day(today - 1, keys(today - 2))
    out, last = sync(ctx, s.keys_url, "--max-package-bytes", "65536")
    assert last == "2 new packages, 2 provided, 2 refused", out.stdout + out.stderr

    # A revoked package: dropped, and its bytes refused when the server still has them.
    import hashlib
    revoked = hashlib.sha256(good[0]).hexdigest()
    t.config({**CONFIG, "revokedPackages": [revoked]})
    out, last = sync(ctx, s.keys_url, "--max-package-bytes", "65536")
    assert "revoked by the configuration" in out.stderr and last.endswith("3 refused"), out.stdout + out.stderr
    assert f"cwa/DE/{iso(today - 3)}" not in state(ctx)["packages"]
    # Republished (new bytes): fetched and provided again.
    t.days.remove(today - 3)
    t.day(today - 3, keys(today - 4))
    out, last = sync(ctx, s.keys_url, "--max-package-bytes", "65536")
    assert last.startswith("1 new packages, 1 provided"), out.stdout + out.stderr


def test_hand_built_google_tree_two_signature_infos(setup):
    ctx = setup
    s = ctx["server"]()
    today = ctx["clock"].today
    lines = []
    for i, h in enumerate(range(-30, -26)):
        start = today * DAY + h * 3600
        name = f"XX/{start}-{start + 3600}-00001.zip"
        # Two signature infos, newest first; one file signed by the stranger only.
        write_package(s.tree / name, start, start + 3600, "XX", keys(today - 2), ctx["stranger"] if i == 2 else ctx["signers"])
        lines.append(name)
    (s.tree / "XX/index.txt").write_text("\n".join(lines) + "\n")
    signed_config(s.tree / "XX/app-config.zip", CONFIG, ctx["signers"])
    # Trust only the older key: the second signature info is the one that verifies.
    out, last = sync(ctx, s.keys_url, layout=("--region", "XX"), trust=[ctx["trust"][1]])
    assert last == "3 new packages, 3 provided, 1 refused", out.stdout + out.stderr
    assert sorted(state(ctx)["packages"]) == sorted("google/" + l for i, l in enumerate(lines) if i != 2)
    # One connection for the whole run (libcurl's handle kept alive): index, configuration and 4 files.
    seen = [r for r in s.requests() if r[2].startswith("/keys/XX/")]
    assert len(seen) == 6 and len({c for c, _, _ in seen}) == 1, seen
    # Conditional GET: a second run gets 304 for the index and the configuration, and fetches
    # only the refused file again.
    out, last = sync(ctx, s.keys_url, layout=("--region", "XX"), trust=[ctx["trust"][1]])
    assert last == "0 new packages, 0 provided, 1 refused", out.stdout + out.stderr
    again = [r for r in s.requests() if r[2].startswith("/keys/XX/")][6:]
    assert sorted((st, uri) for _, st, uri in again) == sorted([(304, "/keys/XX/index.txt"), (304, "/keys/XX/app-config.zip"),
                                                               (200, "/keys/" + lines[2])]), again


def test_server_down_then_back_and_a_board_off_for_two_days(setup):
    ctx = setup
    s = ctx["server"]()
    t = Tree(s.tree, ctx["signers"])
    clock = ctx["clock"]
    d = clock.today
    t.config(CONFIG)
    hour_keys = [keys(d - 1) for _ in range(3)]
    for h, ks in enumerate(hour_keys):
        t.hour(d, h, ks)
    out, last = sync(ctx, s.keys_url)
    assert last == "3 new packages, 3 provided, 0 refused", out.stdout + out.stderr
    # Server down: the run fails, keeps what it had and says so.
    s.stop()
    for h in range(3, 6):
        t.hour(d, h, keys(d - 1))
    out, last = sync(ctx, s.keys_url, "--attempts", "2")
    assert out.returncode == 1 and last == "0 new packages, 0 provided, 0 refused", out.stdout + out.stderr
    assert state(ctx)["lastSync"]["error"]
    # Back: catches up, nothing missed.
    s.start()
    out, last = sync(ctx, s.keys_url)
    assert last == "3 new packages, 3 provided, 0 refused", out.stdout + out.stderr
    # The board is off two days; meanwhile day d became a day package (its hours too old for
    # hour packages) and day d+1 too. The day package replaces the held hours; gaend had all
    # of day d's keys, so only day d+1 is provided.
    for h in range(6):
        t.path(d, h).unlink()
    t.hours.clear()
    (s.tree / CWA_ROOT / "DE/date" / iso(d) / "hour/index").unlink()
    held = state(ctx)["packages"]
    from keyserver import read_package
    day_keys = []
    for p in held.values():
        data = (ctx["tmp"] / "app/cache" / p["file"]).read_bytes()
        day_keys += [(bytes.fromhex(k[0]), k[1], k[2]) for k in read_package(data)["keys"]]
    t.day(d, day_keys)
    t.day(d + 1, keys(d))
    clock.set(2)
    out, last = sync(ctx, s.keys_url)
    assert last == "2 new packages, 1 provided, 0 refused", out.stdout + out.stderr
    st = state(ctx)
    assert sorted(st["packages"]) == [f"cwa/DE/{iso(d)}", f"cwa/DE/{iso(d + 1)}"]
    assert st["packages"][f"cwa/DE/{iso(d)}"]["coveredByProvided"] is True


def test_clock_three_hours_off_aborts(setup):
    ctx = setup
    s = ctx["server"]()
    t = Tree(s.tree, ctx["signers"])
    t.hour(ctx["clock"].today, 0, keys(ctx["clock"].today - 1))
    skewed = ctx["tmp"] / "skewed"
    skewed.write_text(f"{int(ctx['clock'].now + 3 * 3600 - time.time()):+d}\n")
    out, last = sync(ctx, s.keys_url, env=faketime_env(skewed))
    assert out.returncode == 1 and last == "0 new packages, 0 provided, 0 refused", out.stdout + out.stderr
    assert "off the server's Date" in out.stderr
    assert state(ctx)["packages"] == {}


def test_500_and_429_with_retry_after(setup):
    ctx = setup
    today = ctx["clock"].today
    hour1 = f"/keys/{CWA_ROOT}/DE/date/{iso(today)}/hour/1"
    extra = f"""
location = {hour1} {{ return 500; }}
location ^~ /keys/{CWA_ROOT}/DE/date/{iso(today)}/hour/ {{
    limit_req zone=gaend_test;
    limit_req_status 429;
    add_header Retry-After 2 always;
    try_files $uri/index $uri =404;
}}
"""
    s = ctx["server"](extra)
    t = Tree(s.tree, ctx["signers"])
    for h in range(4):
        t.hour(today, h, keys(today - 1))
    t0 = time.monotonic()
    out, last = sync(ctx, s.keys_url, "--attempts", "3")
    took = time.monotonic() - t0
    assert last == "3 new packages, 3 provided, 0 refused, 1 waiting", out.stdout + out.stderr
    assert "HTTP 429, Retry-After 2.0 s" in out.stderr and "HTTP 500" in out.stderr, out.stderr
    assert f"{hour1}: 3 attempts failed; left for the next run" in out.stderr
    assert took >= 4, took  # waited for Retry-After at least twice
    assert state(ctx)["lastSync"]["pending"] >= 1
    # The fault gone, the next run takes the missing hour.
    (s.conf / "locations" / "zz-test.conf").write_text("")
    s.reload()
    out, last = sync(ctx, s.keys_url)
    assert last == "1 new packages, 1 provided, 0 refused", out.stdout + out.stderr


def test_provide_limit_reached_files_wait(setup):
    ctx = setup
    s = ctx["server"]()
    t = Tree(s.tree, ctx["signers"])
    today = ctx["clock"].today
    for h in range(20):
        t.hour(today, h, keys(today - 1, 1))
    out, last = sync(ctx, s.keys_url, "--max-provide-calls", "1")
    # Waiting for tomorrow's calls is no failure: exit 0, and the line says what waits.
    assert out.returncode == 0 and last == "20 new packages, 16 provided, 0 refused, 4 waiting", out.stdout + out.stderr
    out, last = sync(ctx, s.keys_url, "--max-provide-calls", "1")
    assert last == "0 new packages, 0 provided, 0 refused, 4 waiting" and "provide limit is reached" in out.stderr, out.stdout + out.stderr
    status = json.loads((ctx["tmp"] / "app/status.json").read_text())
    assert status["packagesWaiting"] == 4 and status["packagesHeld"] == 20
    out, last = sync(ctx, s.keys_url, "--max-provide-calls", "2")
    assert last == "0 new packages, 4 provided, 0 refused", out.stdout + out.stderr
    st = state(ctx)
    assert len(st["provideCalls"]) == 2 and all(p["providedAt"] for p in st["packages"].values())


def test_slow_server_per_file_and_run_timeouts(setup):
    ctx = setup
    today = ctx["clock"].today
    slow = f"/keys/{CWA_ROOT}/DE/date/{iso(today)}/hour/0"
    # One hour package trickles out at 1 KiB/s (about 100 s for its bytes).
    s = ctx["server"](f"location = {slow} {{ limit_rate 1k; try_files $uri/index =404; }}\n")
    t = Tree(s.tree, ctx["signers"])
    t.hour(today, 0, keys(today - 1, 4000))
    t.hour(today, 1, keys(today - 1))
    t0 = time.monotonic()
    out, last = sync(ctx, s.keys_url, "--file-timeout", "2", "--attempts", "2")
    assert time.monotonic() - t0 < 30
    assert last == "1 new packages, 1 provided, 0 refused, 1 waiting", out.stdout + out.stderr
    assert f"{slow}: 2 attempts failed; left for the next run" in out.stderr, out.stderr
    # A run of 3 s in all stops at its deadline and keeps what it has.
    t.hour(today, 2, keys(today - 1))
    t0 = time.monotonic()
    out, last = sync(ctx, s.keys_url, "--file-timeout", "60", "--run-timeout", "3")
    assert time.monotonic() - t0 < 20
    assert "the run's time is up" in out.stderr or "retry would pass the run's time" in out.stderr, out.stderr
    assert f"cwa/DE/{iso(today)}/0" not in state(ctx)["packages"]


def test_gaend_rate_limit_reached_files_wait(radio, nodes, tmp_path, bin_dir):
    """gaend's own limit (6 calls a UTC day, outside trial mode): the app stops at it and the
    rest wait, none lost."""
    clock = Clock(tmp_path)
    env = faketime_env(clock.file)
    r = radio([{"name": "n", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    node = nodes("n", r.ready["devices"]["n"]["connect"], extra=["--time-scale", "20"])
    node.start()
    server = TrialServer(tmp_path / "server", {}, env=env)
    try:
        new, _, new_pub = new_signing_key(tmp_path, "new")
        t = Tree(server.tree, [(new, {"id": "TRIAL", "version": "1"})])
        today = clock.today
        for h in range(24):
            t.hour(today, h, keys(today - 1, 1))
        for d in range(1, 5):
            t.day(today - d, keys(today - d - 1, 1))
        ctx = {"bin": bin_dir, "node": node, "tmp": tmp_path, "env": env, "trust": [f"TRIAL:1={new_pub}"]}
        assert node.status()["provideDiagnosisKeysRemaining"] == 6
        # 28 packages, 1 call of 16 and 1 of 12 would do; allowed 10 calls by the app but only
        # 1 left in gaend after 5 calls by someone else.
        for _ in range(5):
            f = tmp_path / "one.zip"
            f.write_bytes(t.path(today, 0).read_bytes())
            node.ctl("keys", "provide", f, check=True)
        assert node.status()["provideDiagnosisKeysRemaining"] == 1
        out, last = sync(ctx, server.keys_url, "--max-provide-calls", "10")
        assert last == "28 new packages, 16 provided, 0 refused, 12 waiting", out.stdout + out.stderr
        out, last = sync(ctx, server.keys_url, "--max-provide-calls", "10")
        assert last == "0 new packages, 0 provided, 0 refused, 12 waiting" and "provide limit is reached" in out.stderr, out.stdout + out.stderr
        st = state(ctx)
        assert len(st["packages"]) == 28 and sum(1 for p in st["packages"].values() if not p.get("providedAt")) == 12
    finally:
        server.stop()


def test_one_package_gaend_refuses_stalls_nothing(setup, radio, nodes):
    """The chain attack of issue 29: a day package signed by the trusted key that holds one key
    dated 400 days ahead, the oldest of 12. gaend refuses it; every board's app sets it apart,
    provides the 11 honest ones in the same run, reports it (exit 2, status, metrics) and does
    not offer it again that day; the next day it is tried alone once more."""
    ctx = setup
    s = ctx["server"]()
    t = Tree(s.tree, ctx["signers"])
    clock = ctx["clock"]
    today = clock.today
    t.config(CONFIG)
    t.day(today - 7, keys(today - 8) + [(RNG.randbytes(16), (today + 400) * 144, 144)])
    for d in range(6, 0, -1):
        t.day(today - d, keys(today - d - 1))
    for h in range(5):
        t.hour(today, h, keys(today - 1))
    bad = f"{s.keys_url}/{CWA_ROOT}/DE/date/{iso(today - 7)}"

    out, last = sync(ctx, s.keys_url)
    assert out.returncode == 2, out.stdout + out.stderr
    assert last == "12 new packages, 11 provided, 1 refused", out.stdout + out.stderr
    assert f"refused by gaend {bad}: org.gaend.Error.InvalidKeyFile: file 1: keys[3]: " in out.stderr, out.stderr
    assert "starts after tomorrow" in out.stderr and "1 packages refused" in out.stderr, out.stderr
    st = state(ctx)
    refused = [p for p in st["packages"].values() if p.get("refusedAt")]
    assert [p["url"] for p in refused] == [bad] and refused[0]["refusals"] == 1
    assert sum(1 for p in st["packages"].values() if p.get("providedAt")) == 11
    # Every honest key reached gaend: its key files are the 11 honest packages.
    node = ctx["node"]
    assert wait_for(lambda: not node.status()["matching"], 60, 0.5)
    assert node.status()["keyFiles"] == 11, node.status()
    status = json.loads((ctx["tmp"] / "app/status.json").read_text())
    assert status["packagesWaiting"] == 0 and status["packagesRefused"] == 1 and status["refusedByGaendTotal"] == 1, status
    assert status.get("oldestWaitingFetchedAt") is None and abs(status["lastProvidedAt"] - clock.now) < 600, status
    assert status["lastSync"]["refusedByGaend"] == 1 and status["lastSync"]["error"] == "", status
    text = node.ctl("app", "status", "--state-dir", ctx["tmp"] / "app", check=True).stdout
    assert "0 waiting, 1 refused by gaend" in text and "refused in all: 0 at download, 1 by gaend" in text, text
    metrics = node.ctl("metrics", "--app-state", ctx["tmp"] / "app", check=True).stdout
    for line in ['gaend_app_packages_refused_total{controller="",node="n",site="e2e",by="gaend"} 1',
                 'gaend_app_packages_waiting{controller="",node="n",site="e2e"} 0',
                 'gaend_app_oldest_waiting_package_timestamp_seconds{controller="",node="n",site="e2e"} 0',
                 'gaend_app_last_sync_success{controller="",node="n",site="e2e"} 1']:
        assert line in metrics, metrics
    assert 'gaend_app_last_provide_timestamp_seconds{controller="",node="n",site="e2e"} 0' not in metrics, metrics
    print("\n" + "\n".join(l for l in metrics.splitlines() if l.startswith("gaend_app_")))

    # A second board's app (its own gaend) in its first run: the same, every honest key there too.
    r2 = radio([{"name": "m", "transport": "tcp-server:127.0.0.1:0", "tx_power": TX_POWER}])
    other = nodes("m", r2.ready["devices"]["m"]["connect"])
    other.start()
    out2, last2 = sync({**ctx, "node": other}, s.keys_url, state="app-m")
    assert out2.returncode == 2 and last2 == "12 new packages, 11 provided, 1 refused", out2.stdout + out2.stderr
    assert wait_for(lambda: not other.status()["matching"], 60, 0.5)
    assert other.status()["keyFiles"] == 11, other.status()

    # The same day: nothing to do, nothing refused again.
    out, last = sync(ctx, s.keys_url)
    assert out.returncode == 0 and last == "0 new packages, 0 provided, 0 refused", out.stdout + out.stderr
    # The next day it is tried alone (gaend's clock might have been the cause) and refused again.
    clock.set(1)
    out, last = sync(ctx, s.keys_url)
    assert out.returncode == 2 and last == "0 new packages, 0 provided, 1 refused", out.stdout + out.stderr
    assert f"refused by gaend {bad}: " in out.stderr and "(refusal 2 of 3; tried alone again tomorrow)" in out.stderr, out.stderr


def test_older_configuration_cannot_bring_back_a_revoked_package(setup):
    """Finding 6: configuration v2 revokes a package; the validly signed v1 served again is
    refused (its version is older), so the revoked package stays out."""
    import hashlib
    ctx = setup
    s = ctx["server"]()
    t = Tree(s.tree, ctx["signers"])
    today = ctx["clock"].today
    good = t.day(today - 3, keys(today - 4))
    t.day(today - 2, keys(today - 3))
    t.config({**CONFIG, "version": 1})
    out, last = sync(ctx, s.keys_url)
    assert last == "2 new packages, 2 provided, 0 refused", out.stdout + out.stderr
    revoked = hashlib.sha256(good).hexdigest()
    t.config({**CONFIG, "version": 2, "revokedPackages": [revoked]})
    out, last = sync(ctx, s.keys_url)
    assert "revoked by the configuration" in out.stderr and last == "0 new packages, 0 provided, 1 refused", out.stdout + out.stderr
    # v1 again, validly signed by the same keys: refused, v2 stays, the package stays out.
    t.config({**CONFIG, "version": 1})
    out, last = sync(ctx, s.keys_url)
    assert "version 1 is older than version 2, accepted before under key TRIAL:2" in out.stderr, out.stderr
    assert out.returncode == 2 and last == "0 new packages, 0 provided, 2 refused", out.stdout + out.stderr
    assert f"cwa/DE/{iso(today - 3)}" not in state(ctx)["packages"]
    assert state(ctx)["configurationVersions"] == {"TRIAL:2": 2, "TRIAL:1": 2}



def test_unreadable_days_index_is_a_run_that_did_not_complete(setup):
    """Issue 29, 14: a days index the server cannot give ended the run with exit 0 and no error.
    Now its packages wait, what could be fetched is provided, and the run says it did not
    complete (exit 1, the index named, status.json's error set)."""
    ctx = setup
    today = ctx["clock"].today
    extra = f"location = /keys/{CWA_ROOT}/DE/date {{ return 500; }}\n"
    s = ctx["server"](extra)
    t = Tree(s.tree, ctx["signers"])
    t.day(today - 2, keys(today - 2))
    t.hour(today, 1, keys(today - 1))
    out, last = sync(ctx, s.keys_url, "--attempts", "1")
    assert out.returncode == 1, out.stdout + out.stderr
    assert last == "1 new packages, 1 provided, 0 refused, 1 waiting", out.stdout + out.stderr
    assert f"/keys/{CWA_ROOT}/DE/date: the days index could not be read" in out.stderr, out.stderr
    status = json.loads((ctx["tmp"] / "app/status.json").read_text())
    assert "days index could not be read" in status["lastSync"]["error"], status
    # The fault gone: the day package comes, and the run completes.
    (s.conf / "locations" / "zz-test.conf").write_text("")
    s.reload()
    out, last = sync(ctx, s.keys_url)
    assert out.returncode == 0 and last == "1 new packages, 1 provided, 0 refused", out.stdout + out.stderr


def test_a_huge_google_index_costs_a_bounded_run(setup):
    """Issue 29, 14: an index of 180,000 entries cost 73,217 requests and 180,002 stderr lines
    in one run. Now a run fetches at most --max-new-files new files (the rest wait, said in one
    line) and prints at most 200 lines about single files (the rest counted in one line)."""
    ctx = setup
    s = ctx["server"]()
    today = ctx["clock"].today
    start = today * DAY - 30 * 3600
    real = f"XX/{start}-{start + 3600}-00001.zip"
    write_package(s.tree / real, start, start + 3600, "XX", keys(today - 2), ctx["signers"])
    # 3,000 entries listed, none there (each a 404), after the one real file.
    bogus = [f"XX/missing/{i:05}.zip" for i in range(3_000)]
    (s.tree / "XX/index.txt").write_text("\n".join([real] + bogus) + "\n")
    signed_config(s.tree / "XX/app-config.zip", CONFIG, ctx["signers"])
    before = len(s.requests())
    out, last = sync(ctx, s.keys_url, "--max-new-files", "300", layout=("--region", "XX"))
    requests = len(s.requests()) - before
    assert last.startswith("1 new packages, 1 provided, 0 refused"), out.stdout + out.stderr
    # The index, the configuration and 300 files: nothing more.
    assert requests <= 302 + 5, requests
    lines = out.stderr.splitlines()
    assert len(lines) <= 200 + 10, len(lines)
    assert any("2701 more new files listed wait for the next runs (at most 300 a run)" in l for l in lines), out.stderr[-2000:]
    assert any("more lines about single files were not printed (at most 200 a run)" in l for l in lines), out.stderr[-2000:]
