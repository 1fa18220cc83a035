"""Every setting is checked before anything starts (issue 12, Found 9 / Deliver 6).

A bad value makes ``kbwatch status`` and ``kbwatch watch`` (real processes)
exit 2 with one stderr line naming the key and what is allowed, never a
traceback; every key of config/default.toml has a rule or is declared free
form, so a new key cannot slip in unchecked.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, kbwatch

BAD = [
    ('[logging]\nlevel = "LOUD"\n', "logging.level", "DEBUG"),
    ('[logging]\nfile_level = "CHATTY"\n', "logging.file_level", "DEBUG"),
    ('[logging]\nrotation = "sometimes"\n', "logging.rotation", "10 MB"),
    ("[logging]\nretention = -1\n", "logging.retention", "0 or more"),
    ('[project]\ntrust = "bogus"\n', "project.trust", '"user-confirmed"'),
    ('[project]\ngrounding = "maybe"\n', "project.grounding", '"required"'),
    ('[project]\ntype = "wiki"\n', "project.type", "custom:<namespace>"),
    ('[project]\nlanguage = "fr"\n', "project.language", '"zh", "en"'),
    ("[stages.parse]\ntimeout_seconds = -5\n", "stages.parse.timeout_seconds", "more than 0"),
    ("[stages.parse]\nmax_file_mb = 0\n", "stages.parse.max_file_mb", "more than 0"),
    ("[stages.parse]\nmemory_mb = -1\n", "stages.parse.memory_mb", "0 = no cap"),
    ("[stages.parse]\nocr_min_confidence = 150\n", "stages.parse.ocr_min_confidence", "between 0 and 100"),
    ('[stages.parse]\nisolate = "sometimes"\n', "stages.parse.isolate", '"auto", true, false'),
    ('[stages.parse]\nocr_languages = "chi sim"\n', "stages.parse.ocr_languages", "chi_sim+eng"),
    ('[stages.archive]\ntimezone = "UTC+8"\n', "stages.archive.timezone", '"local", "utc"'),
    ("[service]\nheartbeat_seconds = 0\n", "service.heartbeat_seconds", "more than 0"),
    ("[service]\ncommit_batch = 0\n", "service.commit_batch", "at least 1"),
    ("[service]\nsettle_seconds = -1\n", "service.settle_seconds", "at least 0"),
    ('[service]\nstate_dir = " "\n', "service.state_dir", "must not be empty"),
    ("[stages.scan]\nmax_line_chars = 0\n", "stages.scan.max_line_chars", "at least 1"),
    ("[pipeline]\nstages = []\n", "pipeline.stages", "at least one"),
    ('[pipeline]\nstages = ["conflict", "parse", "parse"]\n', "pipeline.stages", "more than once"),
    ("[retry]\nbackoff_initial_seconds = 10.0\nbackoff_max_seconds = 5.0\n", "retry.backoff_max_seconds",
     "at least retry.backoff_initial_seconds"),
]


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "p" / "sources").mkdir(parents=True)
    return root


def _one_line(result: subprocess.CompletedProcess, key: str, allowed: str) -> str:
    err = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"Error: {key}: ") and allowed in err, err
    assert "kbwatch.toml" in err  # where the value came from
    return err


@pytest.mark.parametrize("toml, key, allowed", BAD, ids=[b[1] + ":" + b[0].split("=")[-1].strip() for b in BAD])
def test_bad_setting_stops_status_with_one_line(kb_root, toml, key, allowed):
    (kb_root / "kbwatch.toml").write_text(toml, encoding="utf-8")
    _one_line(kbwatch("status", root=kb_root, timeout=120), key, allowed)


@pytest.mark.parametrize("toml, key, allowed", [b for b in BAD if b[1] in (
    "logging.level", "logging.rotation", "project.trust", "stages.parse.timeout_seconds", "logging.retention",
    "service.heartbeat_seconds")])
def test_bad_setting_stops_watch_before_it_starts(kb_root, toml, key, allowed):
    (kb_root / "kbwatch.toml").write_text(toml, encoding="utf-8")
    (kb_root / "p" / "sources" / "a.md").write_text("# A\n", encoding="utf-8")
    result = subprocess.run([sys.executable, str(REPO / "run.py"), "watch", "--root", str(kb_root)],
                            capture_output=True, text=True, timeout=120)
    _one_line(result, key, allowed)
    # nothing started: no state, no lock, the file untouched
    assert not (kb_root / ".kbwatch").exists()
    assert (kb_root / "p" / "sources" / "a.md").is_file()


def test_bad_value_in_config_file_names_that_file(kb_root, tmp_path):
    extra = tmp_path / "extra.toml"
    extra.write_text('[project]\ntrust = "bogus"\n', encoding="utf-8")
    result = kbwatch("status", "--config", str(extra), root=kb_root)
    assert result.returncode == 2 and "project.trust" in result.stderr and str(extra) in result.stderr


GOOD = [
    '[logging]\nlevel = "debug"\nfile_level = "WARNING"\nrotation = "1 week"\nretention = 0\n',
    '[logging]\nrotation = "00:00"\n',
    '[project]\ntype = "custom:acme-wiki"\ntrust = "official"\ngrounding = "none"\nlanguage = "en"\n',
    "[service]\nrescan_seconds = 0.0\nworkers = 0\npolling = true\nsettle_seconds = 0\n",
    '[stages.parse]\nisolate = false\nmemory_mb = 0\nocr_languages = "eng"\n[stages.rebuild]\nevery_n_ingests = 0\n',
]


@pytest.mark.parametrize("toml", GOOD)
def test_documented_values_are_accepted(kb_root, toml):
    (kb_root / "kbwatch.toml").write_text(toml, encoding="utf-8")
    result = kbwatch("status", root=kb_root)
    assert result.returncode == 0, result.stderr


def _keys(table: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in table.items():
        if isinstance(value, dict):
            out += _keys(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out


def test_every_default_key_has_a_rule_or_is_free_form():
    from kbwatch.pipeline.config_rules import FREE_FORM, RULES

    with open(REPO / "config" / "default.toml", "rb") as fh:
        keys = set(_keys(tomllib.load(fh)))
    assert not set(RULES) & set(FREE_FORM), "a key is both ruled and free form"
    missing = sorted(keys - set(RULES) - set(FREE_FORM))
    assert not missing, f"keys of default.toml without a rule (add one to pipeline/config_rules.py): {missing}"
    stale = sorted((set(RULES) | set(FREE_FORM)) - keys)
    assert not stale, f"rules for keys default.toml does not have: {stale}"


def test_defaults_pass_their_own_rules(tmp_path):
    from kbwatch.pipeline.config import load_settings
    from kbwatch.pipeline.config_rules import problems

    settings = load_settings(tmp_path)
    assert problems(settings) == []


def test_plain_sizes_answered_without_loguru_are_ones_loguru_takes(tmp_path):
    """A rotation that looks like a plain size ("10 MB") is accepted without asking loguru
    (asking costs ~18 ms a value, every command checks its settings): every such value is one
    loguru takes; anything else is still asked, and a bad one still refused."""
    import itertools

    from loguru import logger

    from kbwatch.pipeline import config_rules

    sizes = ["".join(p) for p in itertools.product(("1", "10", "500", "999999"), ("", " "), ("KB", "MB", "GB"))]
    for value in sizes:
        assert config_rules.PLAIN_SIZE.fullmatch(value), value
        handler = logger.add(tmp_path / "x.log", delay=True, rotation=value)  # raises if loguru refuses it
        logger.remove(handler)
        assert config_rules.log_rotation(value) is None
    for value in ("0 MB", "10 mb", "10 TB", "1.5 MB", "10MiB", " 10 MB"):
        assert not config_rules.PLAIN_SIZE.fullmatch(value), value  # asked: loguru's own answer
    assert config_rules.log_rotation("sometimes") is not None
    assert config_rules.log_rotation("1 week") is None and config_rules.log_rotation("1 week") is None  # once asked, kept
    assert config_rules.log_retention(3) is None and config_rules.log_retention(-1) is not None
