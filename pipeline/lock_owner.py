"""Who holds an flock: the pid the kernel lists in /proc/locks (Linux).

Used to name the running service when its pid file is gone (the state dir
was deleted under it) but its lock on the root directory still holds.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")


def flock_holder(path: Path) -> str | None:
    """The pid (as text) holding a write flock on ``path``, or None if unknown."""
    try:
        st = os.stat(path)
        lines = PROC_LOCKS.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    same_inode = []
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (blocked waiters start with " ->")
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK" or parts[3] != "WRITE" or parts[0] == "->":
            continue
        pid, where = parts[4], parts[5]
        if where == device:
            return pid
        if where.rsplit(":", 1)[-1] == str(st.st_ino):
            same_inode.append(pid)
    return same_inode[0] if len(same_inode) == 1 else None


SERVICE_COMMANDS = ("watch", "ingest")


def holder_command(pid: str | int) -> str | None:
    """Which kbwatch command the process ``pid`` runs ("watch" or "ingest"), from
    ``/proc/<pid>/cmdline``; None when it cannot be told (another user's process, not Linux)."""
    try:
        args = Path(f"/proc/{int(pid)}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    for arg in args[1:]:
        word = arg.decode("utf-8", "replace")
        if word in SERVICE_COMMANDS:
            return word
    return None
