"""The store key as a systemd credential ($CREDENTIALS_DIRECTORY/store-key), read by gaend as a
user that may not read it: the error says which uid gaend runs as and the file's and its
directory's mode and owner, the facts needed to see why (systemd makes the credential readable
by the unit's User=; a copy made by hand may not be)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534


@pytest.fixture
def shared_dir():
    """A folder another user can enter (pytest's own are private to root)."""
    d = Path(tempfile.mkdtemp(prefix="gaend-cred-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="runs gaend as another user (setpriv): needs root")
def test_unreadable_credential_names_uid_mode_and_owner(bin_dir, shared_dir):
    creds = shared_dir / "credentials"
    creds.mkdir(mode=0o755)
    key = creds / "store-key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o400)  # root's, as a credential copied by hand would be
    state = shared_dir / "state"
    state.mkdir()
    os.chown(state, NOBODY, NOBODY)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CREDENTIALS_DIRECTORY": str(creds)}
    p = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                        str(bin_dir / "gaend"), "--controller", "tcp:127.0.0.1:9", "--state-dir", str(state),
                        "--bus", "unix:path=/nonexistent"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 1, p
    assert (f"gaend: store key file {key} cannot be read: Permission denied; gaend runs as uid {NOBODY} gid {NOBODY}; "
            f"the file: mode 0400, owner uid 0 gid 0; its directory {creds}: a directory, mode 0755, owner uid 0 gid 0") in p.stderr, p.stderr
    # Readable by its user (as systemd makes it), the same credential opens the store.
    os.chown(key, NOBODY, NOBODY)
    p = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                        str(bin_dir / "gaend"), "--controller", "tcp:127.0.0.1:9", "--state-dir", str(state),
                        "--bus", "unix:path=/nonexistent"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert "store key" not in p.stderr and "D-Bus" in p.stderr, p.stderr
