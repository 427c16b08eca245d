"""scripts/rehearse.sh, the whole trial loop in compressed time (docs/runbook.md, "Rehearsal"), run
as a team runs it, on the built binaries: it must pass and say each step, so the script cannot
rot. Its own checks are the test's (exit 1 at the first step not as expected); this test reads
back the lines that name the outcome. Its work folder is made under the test's own directory."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import REPO

NEEDED = ("nginx", "prometheus", "prometheus-node-exporter", "dbus-daemon", "openssl", "curl")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")

pytestmark = pytest.mark.skipif(ALERTMANAGER is None or any(shutil.which(p) is None and not os.path.exists(f"/usr/sbin/{p}") for p in NEEDED),
                                reason="the rehearsal's servers are not installed (scripts/setup.sh installs them)")


def test_rehearsal_runs_the_loop(bin_dir, tmp_path):
    r = subprocess.run([str(REPO / "scripts" / "rehearse.sh"), "--no-build"], cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "GAEND_BIN_DIR": str(bin_dir), "TMPDIR": str(tmp_path)})
    out = r.stdout
    assert r.returncode == 0, out[-4000:] + r.stderr[-4000:]
    for expected in ("alert GaendOffAir firing for board C, received by the webhook",
                     "(the same trial clock); GaendOffAir resolved",
                     "board A (consent yes) submit: ",
                     "(hour 02:00-03:00 of day 2)",
                     "board B: high risk: the cwa engine's risk is high",
                     "board C synced the same packages and stays low: it never heard A",
                     "server: 3 board days collected and complete, and 3 boards' outcomes",
                     "rehearsal passed in"):
        assert expected in out, out
    # The work folder was removed, and nothing else was written beside it.
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
