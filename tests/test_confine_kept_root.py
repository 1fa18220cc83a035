"""The roots' kept descriptors (kbwatch.pipeline.confine): fewer system calls, same containment.

Confined opens start from a descriptor of the root kept between calls instead of opening
the root each time. What must still hold: a root that is renamed away and made anew is
followed (within ``ROOT_RECHECK_SECONDS``), as each open did before; the number of kept
descriptors stays bounded however many roots a process registers; a descriptor dropped
while another thread is inside an open is not closed under it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbwatch.pipeline import confine
from kbwatch.pipeline.fsutil import atomic_write

needs_openat2 = pytest.mark.skipif(confine._OPENAT2 is None,
                                   reason="openat2(2) is not available here (not Linux 5.6+, or turned off)")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@needs_openat2
def test_the_root_is_opened_once_for_many_confined_opens(tmp_path, monkeypatch):
    root = tmp_path / "kb"
    (root / "p" / "parsed").mkdir(parents=True)
    confine.register_root(root)
    opened = []
    real = confine._open_root
    monkeypatch.setattr(confine, "_open_root", lambda r: opened.append(r) or real(r))
    for i in range(50):
        atomic_write(root / "p" / "parsed" / f"{i}.md", f"doc {i}\n", fsync=False)
        with confine.folder(root / "p" / "parsed") as fd:
            assert f"{i}.md" in os.listdir(fd)
    assert len(opened) <= 1, opened  # was two opens (and two closes) per call


@needs_openat2
def test_a_root_made_anew_is_followed_and_the_old_one_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(confine, "ROOT_RECHECK_SECONDS", 0.0)
    root = tmp_path / "kb"
    (root / "p").mkdir(parents=True)
    confine.register_root(root)
    atomic_write(root / "p" / "a.md", "old\n", fsync=False)
    os.rename(root, tmp_path / "kb-moved")
    (root / "p").mkdir(parents=True)
    atomic_write(root / "p" / "a.md", "new\n", fsync=False)
    assert (root / "p" / "a.md").read_text() == "new\n"
    assert (tmp_path / "kb-moved" / "p" / "a.md").read_text() == "old\n"


@needs_openat2
def test_kept_descriptors_stay_bounded_over_many_roots(tmp_path):
    before = _open_fds()
    for i in range(3 * confine.KEPT_ROOTS):
        root = tmp_path / f"kb{i}"
        (root / "p").mkdir(parents=True)
        confine.register_root(root)
        with confine.folder(root / "p"):
            pass
    assert _open_fds() - before <= confine.KEPT_ROOTS


@needs_openat2
def test_a_dropped_descriptor_is_closed_by_its_last_user(tmp_path):
    root = tmp_path / "kb"
    (root / "p").mkdir(parents=True)
    confine.register_root(root)
    held = confine._acquire_root(str(root.resolve()) if str(root) not in confine._ROOTS else str(root))
    fd = held.fd
    # other roots push it out of the cache while it is in use
    for i in range(confine.KEPT_ROOTS + 1):
        other = tmp_path / f"other{i}"
        (other / "p").mkdir(parents=True)
        confine.register_root(other)
        with confine.folder(other / "p"):
            pass
    assert held.dropped
    os.fstat(fd)  # still open: a thread inside an open keeps a valid descriptor
    confine._release_root(held)
    with pytest.raises(OSError):
        os.fstat(fd)
