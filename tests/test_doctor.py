"""``kbwatch doctor``, run for real: what is installed here, what is hidden from it, what the config asks."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from conftest import kbwatch


def doctor(root: Path, *args: str, env: dict | None = None):
    proc = kbwatch("doctor", *args, root=root, env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc


def checks(root: Path, env: dict | None = None) -> tuple[int, dict[str, dict]]:
    proc = doctor(root, "--json", env=env)
    data = json.loads(proc.stdout)
    assert data["ok"] == (proc.returncode == 0)
    for c in data["checks"]:
        assert set(c) == {"name", "level", "message", "fix", "required"} and c["level"] in ("OK", "WARN", "MISSING")
    return proc.returncode, {c["name"]: c for c in data["checks"]}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    kbwatch("init", "p", root=root, check=True)
    return root


@pytest.fixture
def no_programs(tmp_path: Path) -> dict:
    """A PATH without tesseract and soffice (the CLI runs as sys.executable, no PATH lookup)."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    return {"PATH": str(empty)}


def test_reports_python_packages_plugins_disk_and_permissions(kb):
    code, by_name = checks(kb)
    py = ".".join(map(str, sys.version_info[:3]))
    assert by_name["python"]["level"] == "OK" and py in by_name["python"]["message"]
    assert by_name["packages"]["level"] == "OK" and "watchdog " in by_name["packages"]["message"]
    assert by_name["plugins"]["level"] == "OK" and "conflict → parse" in by_name["plugins"]["message"]
    assert by_name["state dir"]["level"] == "OK" and "local disk" in by_name["state dir"]["message"]
    assert by_name["free space (root)"]["level"] in ("OK", "WARN")
    assert by_name["root permissions"]["level"] == "OK"
    text = doctor(kb).stdout
    assert text.splitlines()[0].startswith("OK       python: Python ")
    if shutil.which("tesseract") and shutil.which("soffice"):
        assert by_name["tesseract (OCR)"]["level"] == "OK" and by_name["LibreOffice"]["level"] == "OK"


def test_missing_programs_are_named_with_the_packages_to_install(kb, no_programs):
    code, by_name = checks(kb, env=no_programs)
    tess, office = by_name["tesseract (OCR)"], by_name["LibreOffice"]
    assert tess["level"] == "MISSING" and tess["required"]  # ocr = true by default
    assert "tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng" in tess["fix"]
    assert office["level"] == "MISSING" and not office["required"]  # only old .doc/.ppt need it
    assert "libreoffice-writer-nogui" in office["fix"]
    assert code == 1
    text = doctor(kb, env=no_programs).stdout
    assert "MISSING  LibreOffice: soffice is not on PATH" in text
    assert "fix: sudo apt install tesseract-ocr" in text
    # with OCR switched off nothing the configuration needs is missing
    (kb / "kbwatch.toml").write_text("[stages.parse]\nocr = false\n", encoding="utf-8")
    code, by_name = checks(kb, env=no_programs)
    assert code == 0
    assert by_name["tesseract (OCR)"]["level"] == "OK" and "disabled" in by_name["tesseract (OCR)"]["message"]
    assert by_name["LibreOffice"]["level"] == "MISSING"


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
def test_ocr_languages_compared_with_the_installed_ones(kb):
    (kb / "kbwatch.toml").write_text('[stages.parse]\nocr_languages = "eng+xyz_qq"\n', encoding="utf-8")
    code, by_name = checks(kb)
    langs = by_name["OCR languages"]
    assert langs["level"] == "WARN" and "xyz_qq" in langs["message"]
    assert langs["fix"] == "sudo apt install tesseract-ocr-xyz-qq"
    (kb / "kbwatch.toml").write_text('[stages.parse]\nocr_languages = "xyz_qq"\n', encoding="utf-8")
    code, by_name = checks(kb)
    assert by_name["OCR languages"]["level"] == "MISSING" and by_name["OCR languages"]["required"]
    assert code == 1


def test_inotify_needs_counted_from_the_folders_and_polling_needs_none(kb):
    for i in range(5):
        (kb / "p" / "sources" / f"drop-{i}" / "inner").mkdir(parents=True)
    kbwatch("init", "q", root=kb, check=True)
    _, by_name = checks(kb)
    watches = by_name["inotify max_user_watches"]
    limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    # root + 2 project folders + p/sources (1 + 10 folders) + q/sources
    assert watches["message"].startswith("15 folders to watch") and f"= {limit}" in watches["message"]
    assert by_name["inotify max_user_instances"]["message"].startswith("5 watched paths")
    (kb / "kbwatch.toml").write_text("[service]\npolling = true\n", encoding="utf-8")
    _, by_name = checks(kb)
    assert by_name["inotify"]["level"] == "OK" and "not used" in by_name["inotify"]["message"]


def test_world_writable_root_warns_unless_sticky(kb):
    os.chmod(kb, 0o777)
    _, by_name = checks(kb)
    perm = by_name["root permissions"]
    assert perm["level"] == "WARN" and "anyone can delete or rename" in perm["message"]
    assert "chmod +t" in perm["fix"]
    os.chmod(kb, 0o777 | stat.S_ISVTX)
    _, by_name = checks(kb)
    assert by_name["root permissions"]["level"] == "OK" and "sticky" in by_name["root permissions"]["message"]
    os.chmod(kb, 0o755)


def test_a_plugin_that_cannot_load_is_reported_not_a_traceback(kb):
    (kb / "kbwatch.toml").write_text('[pipeline]\nplugins = ["kbwatch_no_such_plugin_module"]\n', encoding="utf-8")
    code, by_name = checks(kb)
    assert code == 1
    assert by_name["plugins"]["level"] == "MISSING" and "kbwatch_no_such_plugin_module" in by_name["plugins"]["message"]
    assert "Traceback" not in doctor(kb).stderr


def test_a_root_config_others_could_write_is_reported(kb, tmp_path):
    """Whoever writes <root>/kbwatch.toml decides what kbwatch does at its next start: in a root a team
    writes to, doctor says when someone else could have created or replaced it, and how to fix it."""
    cfg = kb / "kbwatch.toml"

    def configuration():
        return checks(kb)[1].get("configuration")

    os.chmod(kb, 0o755)
    assert configuration() is None  # a private root, no file: nothing to say
    os.chmod(kb, 0o2775)  # the team's group writes to the root
    found = configuration()
    assert found["level"] == "WARN" and "does not exist" in found["message"] and "chmod +t" in found["fix"]
    cfg.write_text("[service]\nsettle_seconds = 1.0\n", encoding="utf-8")
    os.chmod(cfg, 0o664)
    assert "writable by its group" in configuration()["message"]
    os.chmod(cfg, 0o644)
    assert "no sticky bit" in configuration()["message"]
    os.chmod(kb, 0o3775)  # sticky: only the owner can replace it
    assert configuration()["level"] == "OK"
    os.chown(cfg, 54321, -1)
    assert "belongs to uid 54321" in configuration()["message"]
    os.chown(cfg, os.getuid(), -1)
    link = tmp_path / "elsewhere.toml"
    link.write_text("", encoding="utf-8")
    cfg.unlink()
    cfg.symlink_to(link)
    os.chown(link, 54321, -1)
    assert "belongs to uid 54321" in configuration()["message"]  # the file the link leads to
    state = kb / ".kbwatch"
    state.mkdir(exist_ok=True)
    os.chmod(state, 0o775)
    found = checks(kb)[1]["state dir permissions"]
    assert found["level"] == "WARN" and "chmod go-w" in found["fix"]
    os.chmod(state, 0o755)
    assert "state dir permissions" not in checks(kb)[1]
    # the service says it once in its log at start (and still starts)
    cfg.unlink()
    from test_watch import Service

    svc = Service(kb, tmp_path).start()
    try:
        from test_watch import wait_for

        wait_for(lambda: "configuration:" in svc.log(), 30, "the warning", proc=svc)
        assert "does not exist and others can write" in svc.log()
        assert svc.terminate()[0] == 0
    finally:
        svc.ensure_dead()
