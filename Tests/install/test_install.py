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
    # The board's gaenctl is gaend's binary by that name (issue 31: one static runtime for both).
    assert os.readlink(usr / "usr/bin/gaenctl") == "gaend"
    assert not (usr / "usr/bin/gaenctl-research").exists() and not (usr / "usr/share/gaend/deploy").exists()
    # gaenctl(1) and gaenctl's completions are the board's gaenctl's, under the generic names.
    assert pages(usr) == expected_pages(usr, "board")
    page = (usr / "usr/share/man/man1/gaenctl.1").read_text()
    assert ".It Em collect" in page and ".It Em trial" not in page and ".It Em simulate" not in page
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


def test_uninstall_removes_what_install_put(built, tmp_path):
    """Every unit among them (the app, metrics, collection and outcomes units were left behind
    once); only the directories and the administrator's /etc/gaend remain."""
    stage = tmp_path / "stage"
    make_install(stage, "PREFIX=/usr")
    units = {p.name for p in (stage / "usr/lib/systemd/system").iterdir()}
    assert {"gaend-outcomes@.service", "gaend-collect@.timer", "gaend-app@.timer"} <= units, units
    p = subprocess.run(["make", "-C", str(REPO), "uninstall", f"DESTDIR={stage}", "PREFIX=/usr"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    left = sorted(str(f.relative_to(stage)) for f in stage.rglob("*") if f.is_file())
    assert left == ["etc/gaend/gaend.conf.example"], left


PAGES = ("usr/share/man/man1/gaenctl.1", "usr/share/bash-completion/completions/gaenctl",
         "usr/share/zsh/vendor-completions/_gaenctl", "usr/share/fish/vendor_completions.d/gaenctl.fish")


def pages(root: Path) -> dict[str, Path | None]:
    """Where each generic name of gaenctl's pages leads under `root` (None: nowhere)."""
    return {p: (root / p).resolve() if (root / p).exists() else None for p in PAGES}


def expected_pages(root: Path, flavour: str) -> dict[str, Path]:
    real = root / "usr/share/gaend/completions" / flavour
    return dict(zip(PAGES, [(root / f"usr/share/man/man1/gaenctl-{flavour}.1").resolve(), real.resolve() / "gaenctl",
                            real.resolve() / "_gaenctl", real.resolve() / "gaenctl.fish"]))


def make_install_research(stage: Path, *args: str) -> None:
    p = subprocess.run(["make", "-C", str(REPO), "install-research", f"DESTDIR={stage}", *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def test_research_tools_beside_the_board_and_back(built, tmp_path):
    """`make install-research`: the full gaenctl as gaenctl-research and as gaenctl (a superset of
    the board's); a board `make install` afterwards keeps it; `uninstall-research` gives gaenctl
    back to gaend; the board's uninstall leaves the research tools alone."""
    stage = tmp_path / "stage"
    make_install(stage, "PREFIX=/usr")
    make_install_research(stage, "PREFIX=/usr")
    bin_dir = stage / "usr/bin"
    assert os.readlink(bin_dir / "gaenctl") == "gaenctl-research"
    assert (stage / "usr/share/gaend/examples/trial/inventory.yml").exists()
    # Its pages (every command's) took over the generic names with it.
    assert pages(stage) == expected_pages(stage, "research")
    assert ".It Em trial" in (stage / "usr/share/man/man1/gaenctl.1").read_text()
    make_install(stage, "PREFIX=/usr")
    assert os.readlink(bin_dir / "gaenctl") == "gaenctl-research"
    assert pages(stage) == expected_pages(stage, "research")
    p = subprocess.run(["make", "-C", str(REPO), "uninstall-research", f"DESTDIR={stage}", "PREFIX=/usr"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert os.readlink(bin_dir / "gaenctl") == "gaend" and not (bin_dir / "gaenctl-research").exists()
    assert pages(stage) == expected_pages(stage, "board")
    assert sorted(p.name for p in (stage / "usr/share/gaend").iterdir()) == ["completions"]
    assert not (stage / "usr/share/man/man1/gaenctl-research.1").exists()
    # Research tools alone (the analyst's machine), then a board's install and uninstall beside them.
    other = tmp_path / "other"
    make_install_research(other, "PREFIX=/usr")
    make_install(other, "PREFIX=/usr")
    p = subprocess.run(["make", "-C", str(REPO), "uninstall", f"DESTDIR={other}", "PREFIX=/usr"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert os.readlink(other / "usr/bin/gaenctl") == "gaenctl-research" and (other / "usr/bin/gaenctl-research").exists()
    assert (other / "usr/share/gaend/deploy/server/nginx/locations/keys.conf").exists()
    assert pages(other) == expected_pages(other, "research")
    assert not (other / "usr/share/gaend/completions/board").exists()


def test_installed_binaries_run_with_the_toolchain_hidden(built, tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    swift = shutil.which("swift")
    if swift is None:
        pytest.skip("no swift on PATH: nothing to hide")
    toolchain = Path(swift).resolve().parents[2]  # /opt/swift/usr/bin/swift -> /opt/swift
    stage = tmp_path / "stage"
    make_install(stage, "PREFIX=/usr")
    research = tmp_path / "research"
    make_install_research(research, "PREFIX=/usr")
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
{bin_dir}/gaenctl keys --help >/dev/null
{research}/usr/bin/gaenctl-research derive --tek 75c734c6dd1a782de7a965da5eb93125 --interval 2642976 --count 1
"""
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "8be6cd371c5c891604bfbe49df845096" in p.stdout, p.stdout  # interval 2642976's RPI (as in tools/virtual-radio tests)
    for b in (bin_dir / "gaend", research / "usr/bin/gaenctl-research"):
        ldd = subprocess.run(["ldd", str(b)], capture_output=True, text=True).stdout
        assert "libswift" not in ldd and "libFoundation" not in ldd, ldd


def make_install_server(stage: Path, *args: str) -> subprocess.CompletedProcess:
    p = subprocess.run(["make", "-C", str(REPO), "install-server", f"DESTDIR={stage}", *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def test_server_layout(tmp_path):
    """`make install-server` (what the server package holds) needs no build: the publisher's
    units with the prefix's gaenctl, its user and directories, the nginx site, /etc/gaend-trial."""
    stage = tmp_path / "stage"
    make_install_server(stage, "PREFIX=/usr")
    for f in ["usr/lib/systemd/system/gaend-publish.service", "usr/lib/systemd/system/gaend-publish.timer",
              "usr/lib/sysusers.d/gaend-trial-server.conf", "usr/lib/tmpfiles.d/gaend-trial-server.conf",
              "etc/nginx/gaend-trial/gaend-trial.conf", "etc/nginx/gaend-trial/locations/keys.conf",
              "etc/nginx/gaend-trial/locations/collect.conf", "etc/gaend-trial/publish.env", "etc/gaend-trial/app-config.json",
              "usr/lib/gaend-trial-server/enable-site"]:
        assert (stage / f).exists(), f
    unit = (stage / "usr/lib/systemd/system/gaend-publish.service").read_text()
    assert "ExecStart=/usr/bin/gaenctl keys publish" in unit and "/usr/local" not in unit
    assert "EnvironmentFile=/etc/gaend-trial/publish.env" in unit and "User=gaend-publish" in unit
    # The example app configuration is one the publisher and the apps read: a known engine.
    import json
    assert json.loads((stage / "etc/gaend-trial/app-config.json").read_text())["riskEngine"] == "cwa"
    # The default prefix says /usr/local, as the binaries are there.
    local = tmp_path / "local"
    make_install_server(local)
    assert "ExecStart=/usr/local/bin/gaenctl keys publish" in (local / "usr/local/lib/systemd/system/gaend-publish.service").read_text()


def test_server_install_keeps_the_trials_settings(tmp_path):
    """The trial's own publish.env (written by `gaenctl trial provision`) survives a reinstall."""
    stage = tmp_path / "stage"
    make_install_server(stage, "PREFIX=/usr")
    env = stage / "etc/gaend-trial/publish.env"
    env.write_text("KEY_ID=MINE\nKEY_VERSION=3\nPUBLISH_OPTIONS=--country FR\n")
    make_install_server(stage, "PREFIX=/usr")
    assert env.read_text().startswith("KEY_ID=MINE")


@pytest.mark.skipif(shutil.which("systemd-sysusers") is None, reason="systemd-sysusers not installed")
def test_server_user_created(tmp_path):
    """The sysusers file creates gaend-publish in group www-data (in a staged root, not the host's)."""
    stage = tmp_path / "stage"
    make_install_server(stage, "PREFIX=/usr")
    (stage / "etc").mkdir(exist_ok=True)
    p = subprocess.run(["systemd-sysusers", f"--root={stage}", str(stage / "usr/lib/sysusers.d/gaend-trial-server.conf")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert any(line.startswith("gaend-publish:") for line in (stage / "etc/passwd").read_text().splitlines())
    www = [line for line in (stage / "etc/group").read_text().splitlines() if line.startswith("www-data:")]
    assert www and "gaend-publish" in www[0].split(":")[3].split(",")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not installed")
def test_server_package(tmp_path):
    """scripts/build-deb.sh --server: the server's package, its settings as conffiles, gaenctl
    from the research tools' package of the same version (provision, publish)."""
    p = subprocess.run([str(REPO / "scripts/build-deb.sh"), "--server", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    deb = Path(p.stdout.strip())
    assert deb.name.startswith("gaend-trial-server_") and deb.name.endswith("_all.deb")
    info = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends", "Version"], capture_output=True, text=True, check=True).stdout
    version = info.split("Version: ")[1].strip()
    assert f"gaend-research-tools (= {version})" in info
    conffiles = subprocess.run(["dpkg-deb", "--ctrl-tarfile", str(deb)], capture_output=True, check=True).stdout
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(conffiles)) as t:
        names = t.extractfile("./conffiles").read().decode().split()
        postinst = t.extractfile("./postinst").read().decode()
    assert "/etc/gaend-trial/publish.env" in names and "/etc/nginx/gaend-trial/locations/keys.conf" in names
    assert "systemctl enable --now gaend-publish.timer" in postinst and "systemd-sysusers" in postinst
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "./usr/lib/systemd/system/gaend-publish.timer" in listing and "/usr/bin/gaenctl" not in listing


def test_installed_gaenctl_provisions_from_its_own_deploy_copy(built, tmp_path):
    """`make install-research` puts the shipped server files beside gaenctl (share/gaend/deploy), so
    `gaenctl trial provision` works from an installed system without --deploy and without the clone."""
    stage = tmp_path / "stage"
    make_install_research(stage, "PREFIX=/usr")
    assert (stage / "usr/share/gaend/deploy/server/nginx/locations/keys.conf").exists()
    assert (stage / "usr/share/gaend/examples/trial/inventory.yml").exists()
    out = tmp_path / "out"
    p = subprocess.run([str(stage / "usr/bin/gaenctl"), "trial", "provision", str(stage / "usr/share/gaend/examples/trial/inventory.yml"),
                        "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (out / "server/nginx/locations/keys.conf").read_text() == (REPO / "deploy/server/nginx/locations/keys.conf").read_text()


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb not installed")
def test_board_and_research_packages(built, tmp_path):
    """The board's package holds gaend, whose binary is the board's gaenctl through
    update-alternatives (priority 10); the research tools' package the full gaenctl (priority 20,
    a superset, so it wins where both are installed) and what `trial provision` reads."""
    # build-deb.sh packs $SCRATCH/release: the build under test.
    scratch = {"SCRATCH": str(built.parent)}
    debs = {}
    for kind, args in (("board", []), ("research", ["--research"])):
        p = subprocess.run([str(REPO / "scripts/build-deb.sh"), *args, str(tmp_path)], capture_output=True, text=True, timeout=600,
                           env={**os.environ, **scratch})
        assert p.returncode == 0, p.stderr
        debs[kind] = Path(p.stdout.strip().splitlines()[-1])
    assert debs["board"].name.startswith("gaend_") and debs["research"].name.startswith("gaend-research-tools_")
    import io
    import tarfile

    def control(deb: Path, name: str) -> str:
        tar = subprocess.run(["dpkg-deb", "--ctrl-tarfile", str(deb)], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            return t.extractfile("./" + name).read().decode()

    board = subprocess.run(["dpkg-deb", "-c", str(debs["board"])], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/gaend\n" in board, board
    assert "./usr/bin/gaenctl" not in board and "./usr/share/gaend/deploy" not in board, board
    # gaenctl's pages: its own under names of their own; the generic names are the alternative's slaves.
    assert "./usr/share/man/man1/gaenctl-board.1" in board and "./usr/share/gaend/completions/board/_gaenctl" in board, board
    for name in PAGES:
        assert f"./{name}\n" not in board, name
    board_postinst = control(debs["board"], "postinst")
    assert "update-alternatives --install /usr/bin/gaenctl gaenctl /usr/bin/gaend 10" in board_postinst
    assert "--slave /usr/share/man/man1/gaenctl.1 gaenctl.1 /usr/share/man/man1/gaenctl-board.1" in board_postinst, board_postinst
    assert "--slave /usr/share/zsh/vendor-completions/_gaenctl gaenctl.zsh-completion /usr/share/gaend/completions/board/_gaenctl" in board_postinst
    assert "update-alternatives --remove gaenctl /usr/bin/gaend" in control(debs["board"], "prerm")
    research = subprocess.run(["dpkg-deb", "-c", str(debs["research"])], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/gaenctl-research" in research and "./usr/share/gaend/deploy/server/nginx/locations/keys.conf" in research
    assert "./usr/bin/gaend\n" not in research and "./usr/lib/systemd" not in research, research
    research_postinst = control(debs["research"], "postinst")
    assert "update-alternatives --install /usr/bin/gaenctl gaenctl /usr/bin/gaenctl-research 20" in research_postinst
    assert "--slave /usr/share/man/man1/gaenctl.1 gaenctl.1 /usr/share/man/man1/gaenctl-research.1" in research_postinst
    for name in PAGES:
        assert f"./{name}\n" not in research, name
    # Each postinst is a shell script that parses (its slaves are continued lines).
    for script in (board_postinst, research_postinst):
        assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0, script
    # The research tools need no daemon: no dependency on gaend, and no unit or udev rule of it.
    depends = subprocess.run(["dpkg-deb", "-f", str(debs["research"]), "Depends"], capture_output=True, text=True, check=True).stdout
    assert "gaend" not in depends, depends
