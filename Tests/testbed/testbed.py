"""The kernel test bed: Debian's own kernel under qemu TCG with the host's root read-only.

Debian's kernel package is downloaded with `apt-get download` and unpacked (never installed),
a busybox initramfs loads virtio/9p/overlay, mounts the host's `/` read-only over 9p with a
tmpfs overlay on top and hands over to a guest init: a scenario script (Tests/testbed/guest)
or systemd. So the guest has the built binaries, Python and Bumble exactly where the host has
them, and a real kernel Bluetooth stack (bluetooth.ko, hci_vhci.ko) that gaend reaches through
the HCI user channel. A second 9p share (read-write) is the scenario's work directory: results
and logs come back through it. KVM is not used (not available on these machines).
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUEST = Path(__file__).resolve().parent / "guest"
# Where the guest sees the repository (a share of its own, whatever the clone's path on the
# host: the guest mounts fresh tmpfs over /tmp and /run, which would hide a clone below them).
GUEST_REPO = "/gaend-src"
# Debian's kernel, unpacked: a cache shared by every clone and run on the machine, one entry per
# kernel package named by the package's SHA256 (what apt verified the download against), made
# whole in a temporary folder and renamed into place under a lock. Nothing else is kept there
# (the .deb goes once unpacked); entries unused for CACHE_KEEP_DAYS are removed.
CACHE = Path(os.environ.get("GAEND_TESTBED_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gaend-testbed")
CACHE_KEEP_DAYS = 14
# The kernel package linux-image-amd64 depends on (Debian's current stable kernel).
KERNEL_META = "linux-image-amd64"
# Modules the initramfs loads, in dependency order (from the kernel's modules.dep).
INITRAMFS_MODULES = [
    "drivers/virtio/virtio_ring.ko", "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko", "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci.ko", "net/9p/9pnet.ko", "net/9p/9pnet_virtio.ko",
    "fs/netfs/netfs.ko", "fs/fscache/fscache.ko", "fs/9p/9p.ko", "fs/overlayfs/overlay.ko",
]


class TestbedUnavailable(Exception):
    """The host lacks what the test bed needs (the reason says what)."""


def missing_tools() -> str | None:
    for tool in ("qemu-system-x86_64", "apt-get", "dpkg-deb", "depmod"):
        if shutil.which(tool) is None and not Path("/sbin", tool).exists():
            return f"{tool} not found (scripts/setup.sh installs qemu-system-x86, kmod)"
    if not Path("/bin/busybox").exists():
        return "/bin/busybox not found (package busybox-static)"
    if os.uname().machine != "x86_64":
        return "the test bed boots an x86_64 kernel"
    return None


def _run(cmd: list[str], **kw) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise TestbedUnavailable(f"{' '.join(cmd)} failed: {p.stderr.strip()[-400:]}")
    return p.stdout


@dataclass
class Kernel:
    version: str
    vmlinuz: Path
    modules: Path  # .../lib/modules/<version>


def _candidate(pkg: str) -> tuple[str, str]:
    """The version and SHA256 of the package apt would download."""
    info = _run(["apt-cache", "show", "--no-all-versions", pkg])
    fields = dict(l.split(": ", 1) for l in info.splitlines() if ": " in l and not l.startswith(" "))
    if not fields.get("SHA256") or not fields.get("Version"):
        raise TestbedUnavailable(f"apt-cache show {pkg}: no Version or SHA256 (run apt-get update)")
    return fields["Version"], fields["SHA256"].strip()


def prepare_kernel() -> Kernel:
    """Debian's current kernel, downloaded and unpacked once per machine ($GAEND_TESTBED_CACHE,
    default ~/.cache/gaend-testbed): safe for runs that start together (a lock; each entry
    appears whole, by rename)."""
    import fcntl
    import hashlib
    import tempfile
    CACHE.mkdir(parents=True, exist_ok=True)
    deps = _run(["apt-cache", "depends", KERNEL_META])
    pkg = next((l.split(":", 1)[1].strip() for l in deps.splitlines() if l.strip().startswith("Depends:")), None)
    if not pkg:
        raise TestbedUnavailable(f"apt-cache depends {KERNEL_META}: no kernel package named")
    version, sha256 = _candidate(pkg)
    root = CACHE / f"{pkg}_{version}_{sha256[:16]}"
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / ".unpacked").exists():
            with tempfile.TemporaryDirectory(prefix=".partial-", dir=CACHE) as tmp:
                _run(["apt-get", "download", f"{pkg}={version}"], cwd=tmp)
                deb = next(Path(tmp).glob(f"{pkg}_*.deb"))
                digest = hashlib.sha256(deb.read_bytes()).hexdigest()
                if digest != sha256:
                    raise TestbedUnavailable(f"{deb.name}: SHA256 {digest}, apt's index says {sha256}")
                tree = Path(tmp) / "tree"
                _run(["dpkg-deb", "-x", str(deb), str(tree)])
                kversion = next((tree / "lib/modules").iterdir()).name
                _run([shutil.which("depmod") or "/sbin/depmod", "-b", str(tree), kversion])
                (tree / ".unpacked").write_text(kversion)
                shutil.rmtree(root, ignore_errors=True)  # a partial entry of an older layout
                tree.rename(root)
        os.utime(root / ".unpacked")  # last used: what the pruning below goes by
        for old in CACHE.iterdir():
            if old == root or old.name == ".lock":
                continue
            stamp = old / ".unpacked"
            age_days = (time.time() - (stamp.stat().st_mtime if stamp.exists() else old.stat().st_mtime)) / 86400
            if old.name.startswith(".partial-") or age_days > CACHE_KEEP_DAYS:
                shutil.rmtree(old, ignore_errors=True)
    kversion = (root / ".unpacked").read_text().strip()
    return Kernel(kversion, root / "boot" / f"vmlinuz-{kversion}", root / "lib/modules" / kversion)


def _cpio_entry(out, name: str, mode: int, data: bytes = b"", ino: int = 1) -> None:
    nb = name.encode() + b"\0"
    hdr = "070701" + "".join(f"{v:08x}" for v in (
        ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0))
    out.write(hdr.encode() + nb)
    out.write(b"\0" * ((4 - (110 + len(nb)) % 4) % 4))
    out.write(data)
    out.write(b"\0" * ((4 - len(data) % 4) % 4))


def build_initramfs(path: Path, kernel: Kernel) -> Path:
    """A newc cpio: busybox, this clone's init script and the modules that reach the shares.
    Built per run (it is small) from the clone's own guest/initramfs-init."""
    init = (GUEST / "initramfs-init").read_bytes()
    modules, version = kernel.modules, kernel.version
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        ino = 1
        for d in ("bin", "dev", "proc", "sys", "lower", "srclower", "upper", "newroot", "modules"):
            _cpio_entry(out, d, stat.S_IFDIR | 0o755, ino=ino); ino += 1
        _cpio_entry(out, "bin/busybox", stat.S_IFREG | 0o755, Path("/bin/busybox").read_bytes(), ino); ino += 1
        _cpio_entry(out, "init", stat.S_IFREG | 0o755, init, ino); ino += 1
        order = []
        for m in INITRAMFS_MODULES:
            name = Path(m).name
            order.append(name)
            _cpio_entry(out, f"modules/{name}", stat.S_IFREG | 0o644, (modules / "kernel" / m).read_bytes(), ino); ino += 1
        _cpio_entry(out, "modules/order", stat.S_IFREG | 0o644, ("\n".join(order) + "\n").encode(), ino); ino += 1
        _cpio_entry(out, "modules/version", stat.S_IFREG | 0o644, (version + "\n").encode(), ino); ino += 1
        _cpio_entry(out, "TRAILER!!!", 0, ino=0)
    tmp.replace(path)
    return path


@dataclass
class GuestRun:
    returncode: int | None  # the scenario's exit status (None: it never finished)
    console: str
    work: Path
    seconds: float


def boot(kernel: Kernel, initramfs: Path, work: Path, init: str, timeout: float, memory_mb: int = 1536,
         cpus: int = 2, extra_env: dict[str, str] | None = None) -> GuestRun:
    """Boots the guest with `init` as its PID 1 (a path in the guest: the repository is at
    GUEST_REPO) and `work` shared read-write at /testbed; returns when the guest powers off.
    Shared with the guest: the host's root read-only (programs, Python and its packages), the
    repository (read-only, a tmpfs overlay on top) at GUEST_REPO and the kernel's modules
    at /lib/modules/<version>, each explicitly, so no host path needs to be visible."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "rc").unlink(missing_ok=True)
    env = {"tb_init": init}
    env.update(extra_env or {})
    # Unknown key=value kernel parameters reach init as environment variables. no_timer_check:
    # under TCG on a loaded host the kernel's early IO-APIC timer check sees too few ticks and
    # panics ("IO-APIC + timer doesn't work!"), as it does in other slow virtual machines.
    cmdline = ["console=ttyS0", "panic=-1", "quiet", "loglevel=4", "rdinit=/init", "no_timer_check"] + [f"{k}={v}" for k, v in env.items()]
    cmd = [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-machine", "q35", "-cpu", "max",
        "-smp", str(cpus), "-m", str(memory_mb), "-nographic", "-no-reboot", "-nic", "none",
        "-kernel", str(kernel.vmlinuz), "-initrd", str(initramfs), "-append", " ".join(cmdline),
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={REPO},mount_tag=gaendsrc,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={kernel.modules},mount_tag=modules,security_model=none,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={work},mount_tag=testbed,security_model=none,multidevs=remap",
        "-serial", f"file:{work / 'console.log'}", "-monitor", "none", "-display", "none",
    ]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    seconds = time.monotonic() - start
    console = (work / "console.log").read_text(errors="replace") if (work / "console.log").exists() else ""
    console += out.decode(errors="replace")
    rc_file = work / "rc"
    rc = int(rc_file.read_text().strip()) if rc_file.exists() and rc_file.read_text().strip() else None
    return GuestRun(rc, console, work, seconds)


if __name__ == "__main__":
    # Manual use: python3 Tests/testbed/testbed.py GUEST-INIT WORKDIR [TIMEOUT]
    k = prepare_kernel()
    w = Path(sys.argv[2]).resolve()
    w.mkdir(parents=True, exist_ok=True)
    r = boot(k, build_initramfs(w / "initramfs.cpio", k), w, sys.argv[1], float(sys.argv[3]) if len(sys.argv) > 3 else 600)
    print(r.console[-4000:])
    print(f"rc={r.returncode} seconds={r.seconds:.1f}")
