"""Working directories that nobody else can prepare: no predictable /tmp paths.

Run as root, a fixed path such as /tmp/<name> is a trap: another user can create
it first (or a symbolic link by that name) and have root write, delete or run
what they chose. :func:`private_dir` either makes a fresh directory with
mkdtemp (a random name, mode 0700) or, for a path the user gave, makes it 0700
or accepts an existing one only if it is a real directory (not a link), owned
by this user and writable by nobody else.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

PRIVATE_MODE = 0o700


class PrivateDirError(OSError):
    """A directory that is not private: a link, another user's, or writable by others."""


def check_private(path: Path) -> None:
    """PrivateDirError unless path is a directory (not a symbolic link) owned by
    the effective user, with no write permission for group or others."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise PrivateDirError(f"{path}: a symbolic link, not a private directory")
    if not stat.S_ISDIR(st.st_mode):
        raise PrivateDirError(f"{path}: not a directory")
    if st.st_uid != os.geteuid():
        raise PrivateDirError(f"{path}: owned by uid {st.st_uid}, not by this user "
                              f"({os.geteuid()}): not a private directory")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PrivateDirError(f"{path}: writable by others (mode "
                              f"{stat.S_IMODE(st.st_mode):04o}): not a private directory")


def private_dir(path: Path | None = None, *, prefix: str = "mmaqm-") -> Path:
    """A directory only this user can write: a fresh mkdtemp one (prefix, in the
    system's temporary directory) when path is None; else path, created 0700 if
    absent (its parents as usual), checked with :func:`check_private` if present."""
    if path is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, PRIVATE_MODE)
    except FileExistsError:
        pass
    check_private(path)
    return path
