"""End-to-end tests: gaend's own programs against virtual controllers and independent Bumble
peers (tools/virtual-radio). They need the Swift products built first (scripts/test.sh does)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "virtual-radio" / "tests"))

from helpers import PEER, Radio  # noqa: E402


# The tests that take minutes whatever the load (two hours of node time, floods, forty-day clock
# steps). Run first, so that on several workers (scripts/test.sh uses pytest-xdist) they do not
# start last and leave the other workers idle. A scheduling hint only: order does not matter
# to any test's result.
# Longest first.
LONG_FIRST = ("test_long_run_", "test_disk_full_flood_", "test_daily_layout_report_and_duckdb", "test_forty_days_",
              "test_memory_stays_flat", "test_disk_full_under_", "test_genuine_forty_day_", "test_large_key_file_beside")


def pytest_collection_modifyitems(session, config, items):
    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONG_FIRST) if item.name.startswith(prefix)), len(LONG_FIRST))
    items.sort(key=rank)


def _bin_dir() -> Path:
    explicit = os.environ.get("GAEND_BIN_DIR")
    if explicit:
        return Path(explicit)
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


@pytest.fixture(scope="session", autouse=True)
def isolated_app_state(tmp_path_factory):
    """Every gaenctl the tests start (they inherit os.environ) looks for the app half's default
    state under a root of this run's (absent), not /var/lib/gaend-app: `gaenctl status` and
    `metrics` of a test node must not show what a real board's app left on the machine."""
    os.environ["GAEND_APP_STATE_ROOT"] = str(tmp_path_factory.mktemp("isolation") / "no-app-state")
    yield


# The commands of the board's gaenctl (gaend's binary called as gaenctl: BoardCommands).
BOARD_COMMANDS = ("keys", "app", "radio", "status", "metrics", "collect", "start", "stop")


def _board_bin_dir(real: Path, into: Path) -> Path:
    """GAEND_E2E_GAENCTL=board: a folder like the build's, whose `gaenctl` runs the board's
    commands through the board's gaenctl (a link named gaenctl to gaend, as the board package
    installs it) and the research tools through the full one, so the tests of the board's
    commands run the binary a board has."""
    board = into / "board"
    board.mkdir(mode=0o755)
    (board / "gaenctl").symlink_to(real / "gaend")
    shim = into / "bin"
    shim.mkdir(mode=0o755)
    for entry in real.iterdir():
        if entry.name != "gaenctl":
            (shim / entry.name).symlink_to(entry)
    words = " | ".join(BOARD_COMMANDS)
    (shim / "gaenctl").write_text(f"""#!/bin/sh
# The command: the first word that is neither an option nor a root option's value.
skip=0
for a in "$@"; do
    if [ $skip = 1 ]; then skip=0; continue; fi
    case "$a" in
        --bus|--name|--timeout) skip=1 ;;
        -*) ;;
        {words.replace(" | ", "|")}) exec "{board}/gaenctl" "$@" ;;
        *) break ;;
    esac
done
exec "{real}/gaenctl" "$@"
""")
    (shim / "gaenctl").chmod(0o755)
    return shim


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    d = _bin_dir()
    if not (d / "gaenctl").exists():
        pytest.fail(f"gaenctl not built in {d}; run swift build first")
    if os.environ.get("GAEND_E2E_GAENCTL") == "board":
        # In the run's folder (traversable: some tests run gaenctl as the test users), not
        # pytest's, which only its owner can enter.
        into = Path(tempfile.mkdtemp(prefix="board-gaenctl-", dir=os.environ.get("GAEND_TEST_RUN_DIR")))
        into.chmod(0o755)
        yield _board_bin_dir(d, into)
        shutil.rmtree(into, ignore_errors=True)
        return
    yield d


@pytest.fixture
def radio(tmp_path):
    """radio(devices, channel) starts a fresh harness; stopped after the test, and its log must
    show no Python traceback (a harness crash would otherwise pass silently)."""
    started: list[Radio] = []

    def start(devices, channel=None, seed=11) -> Radio:
        r = Radio({"devices": devices, "channel": channel or {}, "seed": seed}, tmp_path)
        started.append(r)
        return r

    yield start
    for r in started:
        log = r.stop()
        assert "Traceback" not in log, log


class Proc:
    """A background program whose stdout lines are JSON, collected after it ends."""

    def __init__(self, args: list[str], tmp_path: Path, name: str) -> None:
        self.out_path = tmp_path / f"{name}.out"
        self.err_path = tmp_path / f"{name}.err"
        self.proc = subprocess.Popen(args, stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"))

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def lines(self) -> list[dict]:
        return [json.loads(l) for l in self.out_path.read_text().splitlines() if l.strip()]

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()


@pytest.fixture
def spawn(tmp_path):
    procs: list[Proc] = []

    def start(args: list[str], name: str) -> Proc:
        p = Proc([str(a) for a in args], tmp_path, name)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def peer_scan(spawn, radio: Radio, device: str, duration: float, name: str = "peer-scan"):
    return spawn([sys.executable, PEER, "scan", "--transport", radio.bumble(device), "--duration", duration], name)


def derive(bin_dir: Path, tek: str, interval: int, metadata: str | None = None) -> dict:
    args = [bin_dir / "gaenctl", "derive", "--tek", tek, "--interval", str(interval), "--count", "1"]
    if metadata:
        args += ["--metadata", metadata]
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["intervals"][0]


def wait_for(predicate, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False
