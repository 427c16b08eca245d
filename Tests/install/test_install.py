"""`make install`: the layout a board needs, and binaries that run without Swift.

The release build (`make`, Swift standard library linked in statically) is installed into a
staging directory; the binaries must run with the toolchain hidden (an empty directory mounted
over it in a private mount namespace). Needs root for the mount namespace."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The release build under test (scripts/test.sh builds it into .build-release).
RELEASE = Path(os.environ.get("GAEND_RELEASE_DIR", REPO / ".build/release"))


@pytest.fixture(scope="module")
def built():
    if not ((RELEASE / "gaend").exists() and (RELEASE / "gaenctl").exists()):
        pytest.skip("no release build: run `make` first (scripts/test.sh does)")
    return RELEASE


def make_install(stage: Path, *args: str) -> None:
    p = subprocess.run(["make", "-C", str(REPO), "install", f"DESTDIR={stage}", *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def test_layout_for_both_prefixes(built, tmp_path):
    usr = tmp_path / "usr"
    make_install(usr, "PREFIX=/usr")
    for f in ["usr/bin/gaend", "usr/bin/gaenctl", "usr/lib/systemd/system/gaend@.service",
              "usr/lib/systemd/system/gaend-store-key.service", "usr/lib/systemd/system/gaend-metrics@.service",
              "usr/lib/systemd/system/gaend-metrics@.timer", "usr/lib/udev/rules.d/99-gaend.rules",
              "usr/lib/sysusers.d/gaend.conf", "usr/share/dbus-1/system.d/org.gaend.conf",
              "usr/share/dbus-1/system.d/org.gaend.App1.conf",
              "usr/share/man/man8/gaend.8", "usr/share/man/man1/gaenctl.1", "usr/share/man/man5/gaend.conf.5",
              "usr/share/bash-completion/completions/gaenctl", "usr/share/zsh/vendor-completions/_gaenctl",
              "usr/share/fish/vendor_completions.d/gaenctl.fish", "etc/gaend/gaend.conf.example"]:
        assert (usr / f).exists(), f
    unit = (usr / "usr/lib/systemd/system/gaend@.service").read_text()
    assert "/usr/bin/gaend --controller %I" in unit and "/usr/local" not in unit
    metrics = (usr / "usr/lib/systemd/system/gaend-metrics@.service").read_text()
    assert "ExecStart=/usr/bin/gaenctl metrics" in metrics and "/usr/local" not in metrics
    assert not (usr / "etc/gaend/gaend.conf").exists(), "built-in defaults: no config file installed"
    # The default PREFIX (/usr/local): dbus-daemon reads no policy below /usr/local, so the
    # policy goes to /etc/dbus-1/system.d.
    local = tmp_path / "local"
    make_install(local)
    assert (local / "etc/dbus-1/system.d/org.gaend.conf").exists()
    assert not (local / "usr/local/share/dbus-1/system.d").exists()
    assert "/usr/local/bin/gaend --controller %I" in (local / "usr/local/lib/systemd/system/gaend@.service").read_text()


def test_installed_binaries_run_with_the_toolchain_hidden(built, tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    swift = shutil.which("swift")
    if swift is None:
        pytest.skip("no swift on PATH: nothing to hide")
    toolchain = Path(swift).resolve().parents[2]  # /opt/swift/usr/bin/swift -> /opt/swift
    stage = tmp_path / "stage"
    make_install(stage, "PREFIX=/usr")
    empty = tmp_path / "empty"
    empty.mkdir()
    bin_dir = stage / "usr/bin"
    script = f"""
set -e
mount --bind {empty} {toolchain}
test -z "$(ls -A {toolchain})"
! {swift} --version >/dev/null 2>&1
{bin_dir}/gaend --help >/dev/null
{bin_dir}/gaenctl --help >/dev/null
{bin_dir}/gaenctl radio --help >/dev/null
{bin_dir}/gaenctl derive --tek 75c734c6dd1a782de7a965da5eb93125 --interval 2642976 --count 1
"""
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "8be6cd371c5c891604bfbe49df845096" in p.stdout, p.stdout  # interval 2642976's RPI (as in tools/virtual-radio tests)
    for b in ("gaend", "gaenctl"):
        ldd = subprocess.run(["ldd", str(bin_dir / b)], capture_output=True, text=True).stdout
        assert "libswift" not in ldd and "libFoundation" not in ldd, ldd
