"""``kbwatch doctor``: what this installation can and cannot do, and what to install.

Each check gives one line, ``OK`` / ``WARN`` / ``MISSING``, with the fix
(Debian/Ubuntu package names, a sysctl, a chmod). A ``MISSING`` line is
``required`` when the configuration needs the thing (OCR with ``ocr = true``,
inotify watches when events are used, a writable root and state dir); the
command exits 1 when a required thing is missing, 0 otherwise.

Checked: Python and the key packages, plugins that failed to load, tesseract
and the configured ``ocr_languages``, LibreOffice (``.doc``/``.ppt``), the
inotify limits against the folders the service would watch, whether the
state dir is on a local disk, free space, and the root's permissions.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from kbwatch.pipeline.config import ROOT_CONFIG_NAME, root_config_exposure, state_dir
from kbwatch.pipeline.project import discover_projects
from kbwatch.pipeline.watcher import filesystem_type, is_network_fs

OK, WARN, MISSING = "OK", "WARN", "MISSING"

KEY_PACKAGES = (
    "pluggy", "click", "rich", "loguru", "watchdog", "sqlite-utils", "tenacity", "psutil", "charset-normalizer",
    "unstructured", "pypdfium2", "pdfplumber", "python-pptx", "openpyxl", "xlrd", "pillow-heif", "PyStemmer",
)
# packages a parser needs for some formats only: missing means those formats fail, not the service
OPTIONAL_PACKAGES = {"pillow-heif": ".heic/.heif photos"}

LOW_SPACE_WARN = 2 * 1024**3
LOW_SPACE_MISSING = 200 * 1024**2
SYSCTL_FIX = ("echo fs.inotify.{key}={value} | sudo tee /etc/sysctl.d/60-kbwatch.conf && "
              "sudo sysctl --system")


@dataclass
class Check:
    name: str
    level: str
    message: str
    fix: str = ""
    required: bool = False  # a MISSING that the configuration needs: exit 1


def run_checks(kb) -> list[Check]:
    """Every check for the knowledge base ``kb`` (settings, root, state dir, plugins)."""
    settings = kb.settings
    checks = [_python()]
    checks += _packages()
    checks += _plugins(kb)
    checks += _ocr(settings)
    checks.append(_libreoffice())
    checks += _inotify(kb.root, settings)
    checks += _disks(kb.root, state_dir(settings))
    checks += _permissions(kb.root, state_dir(settings))
    return checks


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.level == MISSING and c.required for c in checks) else 0


def as_json(checks: list[Check]) -> dict:
    return {"ok": exit_code(checks) == 0, "checks": [asdict(c) for c in checks]}


def render(checks: list[Check]) -> str:
    lines = []
    for c in checks:
        lines.append(f"{c.level:<8} {c.name}: {c.message}")
        if c.fix and c.level != OK:
            lines.append(f"{'':<8} fix: {c.fix}")
    missing = [c for c in checks if c.level == MISSING and c.required]
    if missing:
        lines.append(f"{len(missing)} thing(s) the configuration needs are missing: "
                     + ", ".join(c.name for c in missing))
    else:
        lines.append("nothing the configuration needs is missing")
    return "\n".join(lines)


# -- Python and packages ------------------------------------------------------


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    sqlite = f"SQLite {sqlite3.sqlite_version}"
    if sys.version_info < (3, 11):
        return Check("python", MISSING, f"Python {version} ({sys.executable}); kbwatch needs 3.11 or newer",
                     "install python3.11 (or newer) and reinstall kbwatch with it", required=True)
    return Check("python", OK, f"Python {version} ({sys.executable}), {sqlite}")


def _packages() -> list[Check]:
    found, missing = [], []
    for name in KEY_PACKAGES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    out = [Check("packages", OK, ", ".join(found))]
    for name in missing:
        optional = OPTIONAL_PACKAGES.get(name)
        what = f"needed for {optional} only" if optional else "kbwatch needs it"
        out.append(Check(f"package {name}", MISSING, f"not installed ({what})",
                         f"pip install {name} (or reinstall kbwatch: pip install kbwatch)", required=not optional))
    return out


def _plugins(kb) -> list[Check]:
    from kbwatch.pipeline.errors import ConfigError

    try:
        plugins = kb.plugins
        stages = [s.name for s in plugins.configured_stages()]
    except ConfigError as exc:
        return [Check("plugins", MISSING, str(exc), "fix [pipeline] plugins / stages in kbwatch.toml",
                      required=True)]
    out = [Check("plugins", OK, f"{len(plugins.builtin)} built-in, {len(plugins.external)} third-party; "
                 f"stages: {' → '.join(stages)}")]
    for name, error in plugins.broken.items():
        out.append(Check(f"plugin {name}", WARN, f"failed to load and is skipped: {error}",
                         f"reinstall or uninstall the package that provides the '{name}' entry point"))
    return out


# -- external programs ----------------------------------------------------------


def tesseract_package(lang: str) -> str:
    """The Debian/Ubuntu package of a tesseract language (chi_sim -> tesseract-ocr-chi-sim)."""
    return "tesseract-ocr-" + lang.lower().replace("_", "-")


def _tesseract_langs(exe: str) -> set[str]:
    try:
        out = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.strip() for line in (out.stdout + out.stderr).splitlines()[1:] if line.strip()}


def _ocr(settings: dict) -> list[Check]:
    parse = settings["stages"].get("parse", {})
    wanted = [lang for lang in str(parse.get("ocr_languages", "")).split("+") if lang]
    if not parse.get("ocr", False):
        return [Check("tesseract (OCR)", OK, "OCR is disabled ([stages.parse] ocr = false): scanned pages "
                      "and images fail as 'no text'")]
    exe = shutil.which("tesseract")
    packages = " ".join(["tesseract-ocr"] + [tesseract_package(lang) for lang in wanted])
    if not exe:
        return [Check("tesseract (OCR)", MISSING, "not on PATH: scanned PDF pages and images cannot be read "
                      "([stages.parse] ocr = true)", f"sudo apt install {packages} (or set ocr = false)",
                      required=True)]
    installed = _tesseract_langs(exe)
    have = [lang for lang in wanted if lang in installed]
    lacking = [lang for lang in wanted if lang not in installed]
    out = [Check("tesseract (OCR)", OK, f"{exe}; languages installed: {', '.join(sorted(installed)) or 'none'}")]
    fix = "sudo apt install " + " ".join(tesseract_package(lang) for lang in lacking)
    if lacking and not have:
        out.append(Check("OCR languages", MISSING, f"none of ocr_languages = {'+'.join(wanted)!r} is installed",
                         fix, required=True))
    elif lacking:
        out.append(Check("OCR languages", WARN, f"{', '.join(lacking)} of ocr_languages = {'+'.join(wanted)!r} "
                         f"not installed; OCR uses {'+'.join(have)}", fix))
    else:
        out.append(Check("OCR languages", OK, f"{'+'.join(wanted)} (ocr_languages) all installed"))
    return out


def _libreoffice() -> Check:
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if exe:
        return Check("LibreOffice", OK, f"{exe}: old .doc and .ppt files are converted")
    return Check("LibreOffice", MISSING, "soffice is not on PATH: old .doc and .ppt files fail as "
                 "'missing program' (.docx, .pptx, .xls, .xlsx do not need it)",
                 "sudo apt install libreoffice-writer-nogui libreoffice-impress-nogui")


# -- inotify ------------------------------------------------------------------------


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def watch_counts(root: Path) -> tuple[int, int]:
    """(inotify watches, inotify instances) ``watch`` needs for ``root`` as it is now.

    The service schedules the root and every folder at the root (to notice new
    projects) and every project's sources/ recursively (one watch per folder
    in it); each scheduled path is one inotify instance of its own.
    """
    tops = [e for e in os.scandir(root) if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
    watches = instances = 1 + len(tops)
    for project in discover_projects(root):
        sources = project / "sources"
        if sources.is_dir() and not sources.is_symlink():
            instances += 1
            watches += sum(1 for _ in os.walk(sources))  # every folder in sources/, itself included
    return watches, instances


def _inotify(root: Path, settings: dict) -> list[Check]:
    svc = settings["service"]
    fstype = filesystem_type(root)
    polling = svc["polling"] is True or (svc["polling"] == "auto" and is_network_fs(fstype))
    if polling:
        why = "polling = true" if svc["polling"] is True else f"the root is on {fstype}, a network filesystem"
        return [Check("inotify", OK, f"not used: the service polls every {svc['poll_interval_seconds']:g} s ({why})")]
    max_watches = _read_int("/proc/sys/fs/inotify/max_user_watches")
    max_instances = _read_int("/proc/sys/fs/inotify/max_user_instances")
    if max_watches is None or max_instances is None:
        return [Check("inotify", WARN, "the inotify limits cannot be read (/proc/sys/fs/inotify); "
                      "native events may not work here", "set [service] polling = true")]
    watches, instances = watch_counts(root)
    out = []
    for key, need, limit, what in (("max_user_watches", watches, max_watches, "folders to watch"),
                                   ("max_user_instances", instances, max_instances, "watched paths")):
        message = f"{need} {what} for the current projects; {key} = {limit} (shared by all your processes)"
        fix = SYSCTL_FIX.format(key=key, value=max(limit * 2, need * 4, 8192 if key == "max_user_watches" else 1024))
        if need > limit:
            out.append(Check(f"inotify {key}", MISSING, message + ": the service cannot watch them all",
                             fix + " (or set [service] polling = true)", required=True))
        elif need * 2 > limit:
            out.append(Check(f"inotify {key}", WARN, message + ": little room left for growth or other programs",
                             fix))
        else:
            out.append(Check(f"inotify {key}", OK, message))
    return out


# -- disks and permissions ------------------------------------------------------------


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"


def _disks(root: Path, state: Path) -> list[Check]:
    out = []
    state_fs = filesystem_type(state if state.exists() else state.parent)
    if is_network_fs(state_fs):
        out.append(Check("state dir", MISSING, f"{state} is on {state_fs}, a network filesystem: SQLite "
                         "(journal, search index) and the service lock are not safe there",
                         "set [service] state_dir to a folder on a local disk", required=True))
    else:
        out.append(Check("state dir", OK, f"{state} on a local disk ({state_fs or 'unknown filesystem'})"))
    root_fs = filesystem_type(root)
    if is_network_fs(root_fs):
        out.append(Check("root filesystem", WARN, f"{root} is on {root_fs}: inotify does not see other hosts' "
                         "writes, so the service polls (polling = \"auto\")", ""))
    seen: set[int] = set()
    for label, path in (("root", root), ("state dir", state)):
        probe = path if path.exists() else path.parent
        try:
            dev = os.stat(probe).st_dev
            usage = shutil.disk_usage(probe)
        except OSError as exc:
            out.append(Check(f"free space ({label})", WARN, f"cannot read: {exc}"))
            continue
        if dev in seen:
            continue
        seen.add(dev)
        message = f"{_gib(usage.free)} free of {_gib(usage.total)} at {probe}"
        if usage.free < LOW_SPACE_MISSING:
            out.append(Check(f"free space ({label})", MISSING, message + ": ingests will fail",
                             "free some space or move the root/state dir", required=True))
        elif usage.free < LOW_SPACE_WARN:
            out.append(Check(f"free space ({label})", WARN, message + ": every version is archived, plan for growth",
                             "free some space or move the root/state dir"))
        else:
            out.append(Check(f"free space ({label})", OK, message))
    return out


def _world_writable_without_sticky(mode: int) -> bool:
    return bool(mode & stat.S_IWOTH) and not mode & stat.S_ISVTX


def _permissions(root: Path, state: Path) -> list[Check]:
    out = []
    if not os.access(root, os.W_OK | os.X_OK):
        out.append(Check("root permissions", MISSING, f"{root} is not writable by this user "
                         f"(uid {os.getuid()}): nothing can be ingested",
                         f"run kbwatch as the folder's owner or group, or: sudo chgrp TEAM {root} && "
                         f"sudo chmod g+rwxs {root}", required=True))
    else:
        mode = os.stat(root).st_mode
        if _world_writable_without_sticky(mode):
            out.append(Check("root permissions", WARN, f"{root} is writable by every user on this machine "
                             f"(mode {stat.filemode(mode)}) without the sticky bit: anyone can delete or rename "
                             "any project folder in it, not only their own",
                             f"chmod +t {root} (sticky: only owners delete their entries), or give it to a "
                             f"group: chgrp TEAM {root} && chmod 2775 {root}"))
        else:
            sticky = " with the sticky bit (only owners delete or rename their entries)" if mode & stat.S_ISVTX else ""
            out.append(Check("root permissions", OK, f"{root} writable (mode {stat.filemode(mode)}){sticky}"))
        loose = [p.name for p in discover_projects(root)
                 if _world_writable_without_sticky(os.stat(p).st_mode)]
        if loose:
            out.append(Check("project permissions", WARN, f"{len(loose)} project folder(s) writable by everyone "
                             f"without the sticky bit ({', '.join(sorted(loose)[:5])}"
                             f"{'...' if len(loose) > 5 else ''}): anyone can replace their parsed/ or archive/",
                             "chmod o-w (or +t) on those folders"))
    exposure = root_config_exposure(root)
    if exposure:
        out.append(Check("configuration", WARN, f"{exposure}; whoever writes {ROOT_CONFIG_NAME} decides at the "
                         "service's next start which stages and scanners run and where the state dir is",
                         f"create it yourself (an empty file will do) as the service's user, chmod 644 "
                         f"{root / ROOT_CONFIG_NAME}, and chmod +t {root} so no one else can replace it"))
    elif (root / ROOT_CONFIG_NAME).exists():
        out.append(Check("configuration", OK, f"{root / ROOT_CONFIG_NAME} can be changed by this user only"))
    probe = state if state.exists() else state.parent
    if state.is_dir() and os.stat(state).st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        out.append(Check("state dir permissions", WARN, f"{state} is writable by its group or by everyone "
                         f"(mode {stat.filemode(os.stat(state).st_mode)}): they can edit the journal and the "
                         "index, or delete the lock file", f"chmod go-w {state}"))
    if not os.access(probe, os.W_OK | os.X_OK):
        out.append(Check("state dir permissions", MISSING, f"{probe} is not writable: no journal, index or lock",
                         "make it writable for this user or set [service] state_dir", required=True))
    return out
