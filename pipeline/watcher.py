"""Watching sources/: filesystem events as hints, a stability wait as the gate.

- :func:`choose_observer` picks watchdog's native observer, or its
  PollingObserver for ``polling = true`` or for a root on a network filesystem
  (``"auto"``, read from /proc/self/mountinfo): inotify does not see writes
  made by other hosts on NFS/SMB/SSHFS.
- :class:`SourceEvents` turns events under ``<root>/<project>/sources/`` into
  candidate paths (created, modified, closed, moved-in; a directory moved in
  is walked, since its files raise no events), reports paths that left
  sources/ (deleted, moved away) so a file in conflict with them is looked at
  again at once, and notices new projects.
- :class:`StabilityTracker` queues a candidate only once its size and mtime
  have not changed for ``settle_seconds`` and it opens for reading; a file
  still growing is re-checked, never dropped. A file that stays unopenable
  (a writer's share lock, no read permission) or that cannot be looked at is
  taken after ``locked_patience_seconds`` anyway, and one that is not a
  regular file (a socket, a FIFO, a device) at once: the runner records why
  (and retries what may pass), so nothing waits in the queue unrecorded.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from typing import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from kbwatch.pipeline.fsutil import opens
from kbwatch.pipeline.lazylog import logger
from kbwatch.pipeline.sources import folder_too_deep, is_ignored

NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "davfs", "lustre",
    "gpfs", "ncpfs", "coda", "beegfs", "orangefs", "virtiofs", "vboxsf", "prl_fs", "vmhgfs",
}


def filesystem_type(path: Path, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The filesystem type of the mount holding ``path`` (Linux), or None."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, best_type = "", None
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields = left.split()
        if len(fields) < 5:
            continue
        mount_point = fields[4].replace("\\040", " ")
        fstype = right.split()[0] if right.split() else None
        if (target == mount_point or target.startswith(mount_point.rstrip("/") + "/")) and len(mount_point) >= len(best):
            best, best_type = mount_point, fstype
    return best_type


def is_network_fs(fstype: str | None) -> bool:
    if not fstype:
        return False
    return fstype in NETWORK_FS or fstype.startswith("fuse.") and fstype not in ("fuse.portal", "fuse.gvfsd-fuse")


def choose_observer(root: Path, settings: dict):
    """(observer, description) for the configured polling mode."""
    svc = settings["service"]
    mode = svc["polling"]
    fstype = filesystem_type(root)
    polling = mode is True or (mode == "auto" and is_network_fs(fstype))
    if polling:
        return PollingObserver(timeout=svc["poll_interval_seconds"]), f"polling every {svc['poll_interval_seconds']:g} s (filesystem {fstype})"
    return Observer(), f"native events (filesystem {fstype})"


class StabilityTracker:
    """Candidates waiting for size+mtime to settle."""

    def __init__(self, settle: float, submit: Callable[[Path], bool], patience: float = 60.0):
        self.settle = settle
        self.submit = submit
        self.patience = patience  # how long a file that will not open or stat is waited for
        self._lock = threading.Lock()
        self._items: dict[Path, tuple[int, int, float]] = {}  # path -> (size, mtime_ns, last change)
        self._stuck: dict[Path, float] = {}  # path -> when it first would not open or stat

    def __len__(self) -> int:
        return len(self._items)

    def touch(self, path: Path) -> None:
        with self._lock:
            if path in self._items:
                size, mtime, _ = self._items[path]
                self._items[path] = (size, mtime, time.monotonic())
            else:
                self._items[path] = (-1, -1, time.monotonic())

    def forget(self, path: Path) -> None:
        with self._lock:
            self._items.pop(path, None)
            self._stuck.pop(path, None)

    def _waited_out(self, path: Path, now: float) -> bool:
        """True once ``path`` has failed to open or stat for ``patience`` seconds."""
        with self._lock:
            since = self._stuck.setdefault(path, now)
        return now - since >= self.patience

    def check(self) -> int:
        """Submit every settled candidate; returns how many were submitted."""
        now = time.monotonic()
        with self._lock:
            items = list(self._items.items())
        ready = []
        for path, (size, mtime, changed) in items:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                self.forget(path)
                continue
            except OSError:  # e.g. a folder on the way without search permission
                if self._waited_out(path, now):
                    ready.append(path)
                continue
            if st.st_size != size or st.st_mtime_ns != mtime:
                with self._lock:
                    if path in self._items:
                        self._items[path] = (st.st_size, st.st_mtime_ns, now)
                    self._stuck.pop(path, None)  # it changed: whoever holds it is still writing
                continue
            if now - changed < self.settle:
                continue
            if stat.S_ISREG(st.st_mode) and not opens(path) and not self._waited_out(path, now):
                with self._lock:  # still locked by its writer: look again later
                    if path in self._items:
                        self._items[path] = (size, mtime, now)
                continue
            ready.append(path)  # (not a regular file: the runner refuses it with the reason)
        n = 0
        for path in ready:
            self.forget(path)
            if self.submit(path):
                n += 1
        return n


class SourceEvents(FileSystemEventHandler):
    """Routes watchdog events to the tracker and to project discovery."""

    def __init__(self, root: Path, patterns: list[str], on_candidate: Callable[[Path], None],
                 on_tree: Callable[[Path], None], on_new_dir: Callable[[Path], None],
                 on_gone: Callable[[Path, bool], None] | None = None):
        self.root = root
        self.patterns = patterns
        self.on_candidate = on_candidate
        self.on_tree = on_tree
        self.on_new_dir = on_new_dir
        self.on_gone = on_gone  # (path, is_dir): a file or folder left sources/

    def _in_sources(self, path: Path) -> bool:
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        if len(parts) < 3 or parts[1] != "sources":
            return False
        if any(is_ignored(p, self.patterns) for p in parts[2:]):
            return False
        # folders nested too deep are not entered (kbwatch.pipeline.sources.MAX_FOLDER_BYTES)
        return not folder_too_deep("/".join(parts[2:-1]))

    def _route(self, raw: str | bytes, is_dir: bool, created: bool) -> None:
        path = Path(os.fsdecode(raw))
        try:
            rel = path.relative_to(self.root).parts
        except ValueError:
            return
        if is_dir and len(rel) <= 2:
            if created:
                self.on_new_dir(path)  # a project, or a project's sources/, appeared
            return
        if not self._in_sources(path):
            return
        if is_dir:
            self.on_tree(path)
        else:
            self.on_candidate(path)

    def _gone(self, raw: str | bytes, is_dir: bool) -> None:
        if self.on_gone is None or not raw:
            return
        path = Path(os.fsdecode(raw))
        if self._in_sources(path):
            self.on_gone(path, is_dir)

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            kind = event.event_type
            if kind in ("created", "modified", "closed"):
                if event.is_directory and kind != "created":
                    # a folder's own "modified" only says an entry in it changed, and that
                    # entry raises its own event; walking the folder here re-touched every
                    # file in it each time one arrived or was removed (O(n²) in a busy
                    # sub-folder, and a second run for files whose commit was pending)
                    return
                self._route(event.src_path, event.is_directory, kind == "created")
            elif kind == "moved":
                self._gone(event.src_path, event.is_directory)
                self._route(event.dest_path, event.is_directory, True)
            elif kind == "deleted":  # also a move out of the watched tree
                self._gone(event.src_path, event.is_directory)
        except Exception:  # an event must never kill the observer thread
            logger.exception("error handling {}", event)
