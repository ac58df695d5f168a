"""The system user PostgreSQL runs as when we are root, and what that user can reach."""

from __future__ import annotations

import hashlib
import logging
import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

from agentlasso.devstack.processes import RunAs, ServiceStartError

logger = logging.getLogger(__name__)

SERVICE_USER = "agentlasso"
# Survives reboots (unlike /tmp) and every user may create entries in it; make_shared_dir
# checks that what we use there is ours.
SHARED_ROOT = Path("/var/tmp")  # noqa: S108
_USERADD_ALREADY_EXISTS = 9


def postgres_user() -> RunAs | None:
    """Who PostgreSQL runs as: ourselves (None), or a system user when we are root."""
    if os.geteuid() != 0:
        return None
    return ensure_system_user(SERVICE_USER)


def ensure_system_user(name: str) -> RunAs:
    """The system user `name`, created with `useradd --system` if missing."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        _create_system_user(name)
        entry = pwd.getpwnam(name)
    return RunAs(name=name, uid=entry.pw_uid, gid=entry.pw_gid)


def _create_system_user(name: str) -> None:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    if not Path(useradd).exists():
        raise ServiceStartError(
            f"PostgreSQL refuses to run as root and useradd is missing to create user {name!r}: "
            "run as a normal user, create that user, or set DATABASE_URL"
        )
    logger.info("creating system user %r to run PostgreSQL (it refuses to run as root)", name)
    argv = [useradd, "--system", "--user-group", "--no-create-home"]
    argv += ["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    # Another process may have created it at the same moment: that is as good.
    if result.returncode not in (0, _USERADD_ALREADY_EXISTS):
        raise ServiceStartError(f"useradd {name} failed: {result.stderr.strip()}")


def can_traverse(path: Path, user: RunAs) -> bool:
    """Whether `user` may search `path` and every directory above it."""
    for directory in (path, *path.parents):
        try:
            mode = directory.stat()
        except OSError:
            return False
        if not mode.st_mode & _search_bit(mode, user):
            return False
    return True


def _search_bit(mode: os.stat_result, user: RunAs) -> int:
    # The owner bits apply to the owner, else the group bits to the group, else the rest.
    if mode.st_uid == user.uid:
        return stat.S_IXUSR
    if mode.st_gid == user.gid:
        return stat.S_IXGRP
    return stat.S_IXOTH


def shared_location(kind: str, key: str) -> Path:
    """A stable directory under /var/tmp for `kind`, named after a hash of `key`."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return SHARED_ROOT / f"agentlasso-{kind}-{digest}"


def make_shared_dir(path: Path) -> Path:
    """Create `path` (under /var/tmp) for us alone to write; refuse one someone else made."""
    try:
        path.mkdir()
        # mkdir applies the umask (077 under some root shells); the postgres user must traverse.
        path.chmod(0o755)
    except FileExistsError:
        pass
    # The name is predictable and /var/tmp is world-writable: another user could have made it
    # first, or put a symlink there, to have us run their binaries or chown their files.
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise ServiceStartError(
            f"{path} is not a directory that only this user can write: remove it"
        )
    return path


def make_private_dir(path: Path, owner: RunAs | None) -> None:
    """Create `path` readable by its owner alone, as PostgreSQL requires of its data dir."""
    path.mkdir(mode=0o700, exist_ok=True)
    if owner is not None:
        os.chown(path, owner.uid, owner.gid)
    path.chmod(0o700)
