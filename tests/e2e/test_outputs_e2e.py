"""Output files (issue 10): a failed command never truncates or replaces an existing file.

Every file gaenctl writes goes to a temporary file beside the target and is renamed over it
only when the command succeeded (TrialKit's AtomicOutputFile)."""

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
