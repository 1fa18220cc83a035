"""A cache, on disk, of what building the injection engine costs: compiled patterns and plans.

Building the prompt-injection engine takes ~3.5 s of CPU on a slow 2-core machine, paid by
the first scan of every process (``kbwatch scan`` on one file, a one-shot ``kbwatch ingest``,
the first file a new ``watch`` takes). Two parts of it are pure functions of the engine's
source, and this module keeps their results between processes:

- **compiled patterns** (~2.2 s): ~640 regular expressions (the rules, the frames, the anchor
  tries of :mod:`.patterns`), nearly all of whose cost is ``re``'s own Python code (the
  parser and the code generator of ``re._parser`` / ``re._compiler``). What the code
  generator returns is a list of integers that the C engine takes as it is (``_sre.compile``,
  which checks every list it is given and raises on one it cannot run);
- **plans** (~1 s): what :class:`.patterns.PatternSet` works out from its patterns (which
  literal prefixes gate which pattern, the anchor tries' sources), kept as JSON under a key
  that digests the inputs and the source of the code that computes them (:func:`remember`).

:func:`cached_build` opens a session for a block: ``re.compile`` of a ``str``
pattern *on the calling thread* is served from the cache file when the file holds it and
compiled (and added) otherwise; the file is rewritten, atomically, with exactly the patterns
the block used whenever one was new. So a pattern that changes is a new entry, never a
stale one, and the file never grows past what the engine needs. Other threads, bytes
patterns and compiled patterns pass through to ``re.compile`` untouched. A plan asked for
in the block is read from the file, or computed and added, the same way.

The file is ``<cache dir>/<name>-<python cache tag>-<sre magic>.bin``. The cache dir is
``$KBWATCH_CACHE_DIR``, else systemd's ``$CACHE_DIRECTORY`` (``CacheDirectory=kbwatch`` in
``deploy/kbwatch.service``), else ``$XDG_CACHE_HOME/kbwatch``, else ``~/.cache/kbwatch``;
``KBWATCH_CACHE_DIR=off`` turns the cache off. A cache could blind the scanner (a pattern
that never matches), so a file is read only when it is a regular file (not through a link)
that belongs to this account and that no one else can write to, in a folder no one else can
write to; anything else, a file that does not parse, or a pattern the C engine refuses, is
compiled afresh as if there were no cache. Nothing in the shared folder is read or written.
"""

from __future__ import annotations

import _sre
import contextlib
import hashlib
import json
import os
import re
import stat
import struct
import sys
import threading
from array import array
from pathlib import Path

try:  # the private halves of ``re.compile`` (CPython 3.11+); without them there is no cache
    from re import _compiler, _parser
except ImportError:  # pragma: no cover - another implementation
    _compiler = _parser = None

ENV = "KBWATCH_CACHE_DIR"
MAGIC = b"KBWRX1\n"
MAX_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct("<Q")
_usable = (_compiler is not None and hasattr(_compiler, "_code") and getattr(_sre, "CODESIZE", 0) == 4
           and array("I").itemsize == 4)
_lock = threading.RLock()  # one thread's blocks at a time patch ``re.compile`` (a block may nest)
_active: dict[int, "_Session"] = {}  # thread id -> its open session


def cache_dir() -> Path | None:
    """Where cache files go, or None when the cache is off."""
    raw = os.environ.get(ENV)
    if raw is not None:
        raw = raw.strip()
        return None if raw.lower() in ("", "off", "0", "none") else Path(raw)
    systemd = os.environ.get("CACHE_DIRECTORY", "").split(":")[0].strip()  # CacheDirectory=
    if systemd and os.path.isabs(systemd):
        return Path(systemd)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "kbwatch"
    home = os.path.expanduser("~")
    return Path(home) / ".cache" / "kbwatch" if home and home != "~" else None


def cache_file(name: str) -> Path | None:
    folder = cache_dir()
    if folder is None or not _usable:
        return None
    return folder / f"{name}-{sys.implementation.cache_tag}-{_sre.MAGIC}.bin"


def _owned_privately(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _read(path: Path) -> tuple[dict[tuple[str, int], tuple], dict[str, object]]:
    """The compiled entries and the plans of a cache file; nothing when it is missing, foreign or malformed."""
    try:
        if not _owned_privately(os.stat(path.parent)):
            return {}, {}
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return {}, {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _owned_privately(st) or st.st_size > MAX_BYTES:
            return {}, {}
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return {}, {}
    finally:
        os.close(fd)
    try:
        if not data.startswith(MAGIC):
            return {}, {}
        (size,) = _HEADER.unpack_from(data, len(MAGIC))
        start = len(MAGIC) + _HEADER.size
        head = json.loads(data[start:start + size].decode("utf-8", "surrogatepass"))
        blob = memoryview(data)[start + size:]
        if head.get("python") != sys.version:
            return {}, {}
        plans = head.get("plans", {})
        if not isinstance(plans, dict):
            return {}, {}
        codes = array("I")
        codes.frombytes(blob[:len(blob) - len(blob) % 4])
        out = {}
        for pattern, flags, final, groups, groupindex, indexgroup, at, n in head["entries"]:
            if not (isinstance(pattern, str) and 0 <= at and at + n <= len(codes)):
                return {}, {}
            out[(pattern, int(flags))] = (int(final), codes[at:at + n], int(groups), dict(groupindex),
                                          tuple(indexgroup))
        return out, plans
    except (ValueError, TypeError, KeyError, struct.error, UnicodeDecodeError):
        return {}, {}


def _write(path: Path, entries: dict[tuple[str, int], tuple], plans: dict[str, object]) -> None:
    """Replace the cache file (best effort: a cache that cannot be written is no cache)."""
    codes = array("I")
    listed = []
    for (pattern, flags), (final, code, groups, groupindex, indexgroup) in entries.items():
        listed.append([pattern, flags, final, groups, groupindex, list(indexgroup), len(codes), len(code)])
        codes.extend(code)
    head = json.dumps({"python": sys.version, "entries": listed, "plans": plans}, ensure_ascii=False).encode("utf-8", "surrogatepass")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _owned_privately(os.stat(path.parent)):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + _HEADER.pack(len(head)) + head)
                fh.write(codes.tobytes())
        except BaseException:
            os.unlink(tmp)
            raise
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


class _Session:
    """One :func:`cached_build` block: serves, compiles, remembers what it used."""

    def __init__(self, path: Path | None, real):
        self.real = real
        self.thread = threading.get_ident()
        self.known, self.plans = _read(path) if path is not None else ({}, {})
        self.used: dict[tuple[str, int], tuple] = {}
        self.objects: dict[tuple[str, int], re.Pattern] = {}  # what the block compiled, as ``re``'s own cache does
        self.plans_used: dict[str, object] = {}
        self.served = self.compiled = self.planned = 0

    def compile(self, pattern, flags=0):
        if threading.get_ident() != self.thread or type(pattern) is not str:
            return self.real(pattern, flags)
        flags = int(flags)
        key = (pattern, flags)
        done = self.objects.get(key)
        if done is not None:
            return done
        self.objects[key] = done = self._compile(pattern, flags, key)
        return done

    def _compile(self, pattern: str, flags: int, key: tuple[str, int]):
        got = self.known.get(key)
        if got is not None:
            final, code, groups, groupindex, indexgroup = got
            try:
                compiled = _sre.compile(pattern, final, code.tolist(), groups, groupindex, indexgroup)
            except (RuntimeError, TypeError, ValueError, OverflowError):  # a list the engine refuses
                self.known.pop(key, None)
            else:
                self.used[key] = got
                self.served += 1
                return compiled
        return self._fresh(pattern, flags)

    def _fresh(self, pattern: str, flags: int):
        """What ``re._compiler.compile`` does, keeping the code it generates."""
        if flags & (re.DEBUG | getattr(re, "TEMPLATE", 0)):
            return self.real(pattern, flags)
        tree = _parser.parse(pattern, flags)
        code = _compiler._code(tree, flags)
        groupindex = dict(tree.state.groupdict)
        indexgroup = [None] * tree.state.groups
        for k, i in groupindex.items():
            indexgroup[i] = k
        entry = (flags | tree.state.flags, array("I", code), tree.state.groups - 1, groupindex, tuple(indexgroup))
        compiled = _sre.compile(pattern, entry[0], code, entry[2], groupindex, entry[4])
        self.used[(pattern, flags)] = entry
        self.compiled += 1
        return compiled


@contextlib.contextmanager
def cached_build(name: str):
    """Serve ``re.compile`` and :func:`remember` on this thread from the cache ``name`` for the
    block (see the module's docstring); yields the session (``served``, ``compiled`` and
    ``planned`` count what it did)."""
    path = cache_file(name)
    with _lock:
        real = re.compile
        session = _Session(path if _usable else None, real)
        if not _usable:
            yield session
            return
        me = threading.get_ident()
        outer = _active.get(me)
        _active[me] = session
        re.compile = session.compile
        try:
            yield session
        finally:
            re.compile = real
            if outer is None:
                _active.pop(me, None)
            else:
                _active[me] = outer
    if path is not None and (session.compiled or session.planned):
        _write(path, session.used, session.plans_used)


def source_digest(*modules) -> str:
    """A digest of the named modules' source files: part of a plan's key, so that a plan made
    by other code is never taken for this code's."""
    h = hashlib.sha256()
    for mod in modules:
        try:
            with open(mod.__file__, "rb") as fh:
                h.update(fh.read())
        except (OSError, AttributeError, TypeError):
            h.update(repr(mod).encode())
    return h.hexdigest()


def _as_json(value):
    """``value`` as it comes back from the file (tuples as lists, keys as strings), so that the caller
    sees the same thing whether the plan was computed now or read."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def remember(kind: str, inputs, compute):
    """``compute()`` (a JSON value, returned as read back from JSON), kept under ``kind`` and a digest of ``inputs`` (JSON: include
    whatever the result depends on, such as :func:`source_digest` of the computing code).
    Outside a :func:`cached_build` block on this thread it is simply ``compute()``."""
    session = _active.get(threading.get_ident())
    if session is None:
        return _as_json(compute())
    text = json.dumps(inputs, ensure_ascii=False, sort_keys=True)
    key = kind + ":" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if key in session.plans:
        value = session.plans[key]
    else:
        value = session.plans[key] = _as_json(compute())
        session.planned += 1
    session.plans_used[key] = value
    return value
