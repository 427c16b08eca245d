"""Output files: a failed command never truncates or replaces an existing file.

Every file gaenctl writes goes to a temporary file beside the target and is renamed over it
only when the command succeeded (TrialFormats' AtomicOutputFile)."""

from __future__ import annotations

import hashlib
import subprocess

from test_instances_e2e import gaenctl
from test_node_e2e import SCALE, Bus, nodes, two_radios  # noqa: F401  (nodes is a fixture)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_failed_exports_leave_the_existing_file_byte_identical(radio, nodes, bin_dir, tmp_path):
    r = two_radios(radio)
    bus = Bus(tmp_path / "bus")
    try:
        plain = nodes("hci0", r.ready["devices"]["a"]["connect"], bus=bus, bus_name="org.gaend.hci0",
                      extra=["--time-scale", str(SCALE)])
        trial = nodes("hci1", r.ready["devices"]["b"]["connect"], bus=bus, bus_name="org.gaend.hci1")
        plain.start()
        trial.start()
        out_dir = tmp_path / "out"
        out_dir.mkdir()
        day = out_dir / "day.csv"
        day.write_text("".join(f"{i},row of yesterday's export\n" for i in range(11741)))
        before = digest(day)

        failures = [
            # A typo in the instance name: nothing reached, nothing written.
            ("--name", "typo", "sightings", "export", "-o", day),
            # The node is there but has no research interface: the export itself fails.
            ("--name", "hci0", "sightings", "export", "-o", day),
            ("--name", "hci0", "markers", "export", "-o", day),
            # An unwritable target directory fails before anything is asked.
            ("--name", "hci1", "sightings", "export", "-o", out_dir / "missing" / "x.csv"),
        ]
        for args in failures:
            p = gaenctl(bin_dir, bus, *args)
            assert p.returncode != 0, (args, p.stdout, p.stderr)
            assert digest(day) == before, f"{args} changed {day}"
        assert sorted(x.name for x in out_dir.iterdir()) == ["day.csv"], "no temporary file left behind"

        # The same command that succeeds replaces the file whole (mode 0600: raw sightings).
        p = gaenctl(bin_dir, bus, "--name", "hci1", "sightings", "export", "-o", day)
        assert p.returncode == 0, p.stderr
        assert day.read_text().splitlines()[0].startswith("time,rpi,aem,rssi,scan_start"), day.read_text()[:200]
        assert digest(day) != before
        assert day.stat().st_mode & 0o777 == 0o600
        assert sorted(x.name for x in out_dir.iterdir()) == ["day.csv"]
    finally:
        bus.stop()


def test_failed_offline_commands_leave_files_alone(bin_dir, tmp_path):
    target = tmp_path / "keys.zip"
    target.write_bytes(b"an earlier export\n" * 100)
    before = digest(target)
    # keys create with an unreadable input fails: the earlier file stays.
    p = subprocess.run([str(bin_dir / "gaenctl"), "keys", "create", "--keys", str(tmp_path / "nope.json"), "-o", str(target),
                        "--signing-key", str(tmp_path / "nope.pem"), "--key-id", "X"], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert digest(target) == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["keys.zip"]
    # trial rpis with a key list that is not one: an earlier RPI table stays.
    rpis = tmp_path / "rpis.csv"
    rpis.write_bytes(b"rpi,transmitter\n" * 100)
    bad = tmp_path / "bad.json"
    bad.write_text("[{\"key\": \"not base64\"}]")
    before = digest(rpis)
    p = subprocess.run([str(bin_dir / "gaenctl"), "trial", "rpis", "--keys", str(bad), "-o", str(rpis)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "trial rpis" in p.stderr, p.stderr
    assert digest(rpis) == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.json", "keys.zip", "rpis.csv"]


def tree(root) -> dict:
    return {str(p.relative_to(root)): digest(p) for p in sorted(root.rglob("*")) if p.is_file()}


def cut_off_at(limit_bytes: int):
    """preexec_fn: writes past `limit_bytes` fail with EFBIG (RLIMIT_FSIZE; SIGXFSZ ignored, so
    the process sees the error instead of dying): a disk that fills mid-write, for one process."""
    import resource
    import signal

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return apply


def test_commands_cut_off_mid_write_replace_nothing_by_a_partial_file(bin_dir, tmp_path):
    """simulate, trial report, keys create and trial import killed by a full disk in the middle
    of writing: every earlier output file is still byte-identical or a whole new one (never a
    partial file), the file being written when the disk filled is the old one, and no temporary
    file is left behind."""
    from conftest import REPO

    ctl = str(bin_dir / "gaenctl")
    scenario = REPO / "examples" / "scenarios" / "boards.json"

    def run(*args, limit: int | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([ctl, *map(str, args)], capture_output=True, text=True, timeout=600,
                              preexec_fn=cut_off_at(limit) if limit else None)

    # Outputs of a first run (seed 1), and of the run that will be cut off (seed 2) done whole elsewhere.
    old, new = tmp_path / "sim", tmp_path / "sim-whole"
    for d, seed in ((old, 1), (new, 2)):
        p = run("simulate", "--scenario", scenario, "-o", d, "--seed", seed, "--report")
        assert p.returncode == 0, p.stderr
    before, whole = tree(old), tree(new)
    biggest = max(before, key=lambda k: (old / k).stat().st_size)
    limit = (old / biggest).stat().st_size // 2
    assert limit > 4096, (biggest, limit)

    cases = {
        "simulate": ["simulate", "--scenario", scenario, "-o", old, "--seed", 2, "--report"],
        "trial report": ["trial", "report", *sum((["--sightings", f] for f in sorted((old / "sightings").glob("*.csv"))), []),
                         *sum((["--keys", f] for f in sorted((old / "keys").glob("*.json"))), []),
                         "--markers", old / "groundtruth" / "markers.csv", "-o", old / "report"],
    }
    for what, args in cases.items():
        state = tree(old)
        p = run(*args, limit=limit)
        assert p.returncode != 0, f"{what} was not cut off (limit {limit} bytes): {p.stdout[-500:]}"
        assert "File too large" in p.stderr or "EFBIG" in p.stderr or "too large" in p.stderr.lower(), f"{what}: {p.stderr}"
        after = tree(old)
        assert set(after) == set(state), f"{what}: files appeared or vanished: {set(after) ^ set(state)}"
        for name, h in after.items():
            assert h in (state[name], whole.get(name), before.get(name)), f"{what}: {name} is neither the old file nor a whole new one"
        # A file whose whole new version is over the limit cannot have been written: it is the old one.
        cut = [n for n in after if n in whole and (new / n).stat().st_size > limit]
        assert cut and all(after[n] == state[n] for n in cut), (what, cut)
        assert not [p for p in old.rglob(".*.tmp-*")], f"{what}: temporary files left"

    # keys create: a large key list whose zip cannot be written whole.
    keys = tmp_path / "keys.json"
    import json
    import os
    keys.write_text(json.dumps([{"keyData": os.urandom(16).hex(), "rollingStartIntervalNumber": 2_642_976 - 144 * (i % 14),
                                 "rollingPeriod": 144, "transmissionRiskLevel": 1} for i in range(5000)]))
    pem = tmp_path / "ha.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", pem], check=True, capture_output=True)
    target = tmp_path / "export.zip"
    target.write_bytes(b"an earlier export\n" * 100)
    earlier = digest(target)
    p = run("keys", "create", "--keys", keys, "--signing-key", pem, "--key-id", "310", "-o", target, limit=8192)
    assert p.returncode != 0 and digest(target) == earlier, p.stderr
    p = run("keys", "create", "--keys", keys, "--signing-key", pem, "--key-id", "310", "-o", target)
    assert p.returncode == 0 and target.stat().st_size > 8192, p.stderr
    assert not list(tmp_path.glob(".*.tmp-*"))
