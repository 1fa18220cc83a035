"""Configuration: load config/default.toml, overlay <root>/kbwatch.toml and --config.

The shipped ``config/default.toml`` is the single declaration of every key:
its value gives the default and the type. Overrides are validated against it;
an unknown key or a wrong type raises :class:`ConfigError` naming the key, and
so does a value its rule in :mod:`kbwatch.pipeline.config_rules` refuses.
Tables under ``[stages.<name>]`` for stages the defaults do not know are free
form (they belong to third-party stages).

Plugins read their options with :func:`stage_options` (the settings' table over
its defaults from this one file): no plugin keeps a copy of a default.
"""

from __future__ import annotations

import copy
import functools
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from kbwatch.pipeline.errors import ConfigError

def _default_config() -> Path:
    """config/default.toml of a checkout, else the copy installed as package data."""
    here = Path(__file__).resolve().parent.parent / "config" / "default.toml"
    if here.is_file():
        return here
    from importlib.resources import files

    return Path(str(files("kbwatch.pipeline._config") / "default.toml"))


DEFAULT_CONFIG = _default_config()
ROOT_CONFIG_NAME = "kbwatch.toml"
FREE_FORM_TABLES = ("stages",)


def _read_toml(path: Path) -> dict:
    try:
        # O_NONBLOCK: a FIFO planted as the root's kbwatch.toml must not hang every command at its start
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ConfigError(f"{path}: not a regular file (a FIFO, a device or a folder); "
                                  "make it a TOML file or remove it")
            os.set_blocking(fd, True)
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def load_defaults() -> dict:
    return _read_toml(DEFAULT_CONFIG)


@functools.lru_cache(maxsize=1)
def _shipped_defaults() -> dict:
    return load_defaults()


def _plain_copy(value: Any) -> Any:
    """A deep copy of parsed TOML (tables and arrays copied, scalars shared: they are
    immutable). ``copy.deepcopy`` did the same ~10x slower, and plugins ask for their
    options several times per file."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def stage_defaults(stage: str) -> dict:
    """``[stages.<stage>]`` as declared in config/default.toml (empty for a third-party stage);
    a fresh copy the caller may change."""
    return _plain_copy(_shipped_defaults().get("stages", {}).get(stage, {}))


def stage_options(settings: Any, stage: str) -> dict:
    """``[stages.<stage>]`` of ``settings`` over its declared defaults; tolerant of odd
    settings (a parser called with ``{}`` or None gets the defaults)."""
    out = stage_defaults(stage)
    if isinstance(settings, dict):
        stages = settings.get("stages")
        if isinstance(stages, dict) and isinstance(stages.get(stage), dict):
            out.update(stages[stage])
    return out


def _type_ok(default: Any, value: Any) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        # "auto"-style options also accept booleans (polling = true)
        return isinstance(value, str) or (isinstance(value, bool) and default == "auto")
    if isinstance(default, list):
        if not isinstance(value, list):
            return False
        if default and all(isinstance(x, str) for x in default) or not default:
            return all(isinstance(x, str) for x in value)
        return True
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def _type_name(default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, str):
        return "a string" if default != "auto" else '"auto", true or false'
    if isinstance(default, list):
        return "a list of strings"
    if isinstance(default, dict):
        return "a table"
    return type(default).__name__


def merge(base: dict, override: dict, source: str, prefix: str = "") -> dict:
    """Return ``base`` overlaid with ``override``, validating every key."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        dotted = f"{prefix}{key}"
        if key not in base:
            if prefix.rstrip(".") in FREE_FORM_TABLES and isinstance(value, dict):
                out[key] = copy.deepcopy(value)
                continue
            raise ConfigError(f"{dotted}: unknown configuration key (in {source})")
        default = base[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{dotted}: expected a table (in {source})")
            out[key] = merge(default, value, source, dotted + ".")
            continue
        if not _type_ok(default, value):
            raise ConfigError(f"{dotted}: expected {_type_name(default)}, got {value!r} (in {source})")
        out[key] = float(value) if isinstance(default, float) else copy.deepcopy(value)
    return out


def _origin(dotted: str, overrides: list[tuple[str, dict]]) -> str:
    """The file that set ``dotted`` last ("defaults" if none did)."""
    for source, data in reversed(overrides):
        node: Any = data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            return source
    return "defaults"


def _check_values(settings: dict, overrides: list[tuple[str, dict]] | None = None) -> None:
    """Every value against its rule in :mod:`kbwatch.pipeline.config_rules`; the first bad one raises."""
    from kbwatch.pipeline.config_rules import normalise, problems

    normalise(settings)
    found = problems(settings)
    if found:
        key, value, allowed = found[0]
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise ConfigError(f"{key}: {allowed}; got {shown} (in {_origin(key, overrides or [])})")


def load_settings(root: Path, config_file: Path | None = None) -> dict:
    """Defaults, then ``<root>/kbwatch.toml``, then ``config_file``.

    The result also carries ``_root`` and ``_config_files`` (read-only facts,
    not options).
    """
    settings = load_defaults()
    files: list[str] = []
    overrides: list[tuple[str, dict]] = []
    root_cfg = root / ROOT_CONFIG_NAME
    if os.path.lexists(root_cfg):  # a FIFO, a folder or a broken link there is an error, not "no config"
        overrides.append((str(root_cfg), _read_toml(root_cfg)))
    if config_file is not None:
        overrides.append((str(config_file), _read_toml(config_file)))
    for source, data in overrides:
        settings = merge(settings, data, source)
        files.append(source)
    _check_values(settings, overrides)
    for key in ("workers", "compute_workers"):
        if settings["service"][key] == 0:
            settings["service"][key] = max(1, os.cpu_count() or 1)
    settings["_root"] = str(root)
    settings["_config_files"] = files
    return settings


def root_config_exposure(root: Path) -> str | None:
    """Why ``<root>/kbwatch.toml`` may hold what someone other than this user wrote, or None.

    Whoever can write it decides what kbwatch does at its next start (which stages and
    scanners run, where the state dir is); in a root a team writes to, a colleague can
    create it when it is missing, or replace it unless the root has the sticky bit."""
    try:
        root_mode = os.stat(root).st_mode
    except OSError:
        return None
    shared_root = bool(root_mode & (stat.S_IWGRP | stat.S_IWOTH))
    cfg = root / ROOT_CONFIG_NAME
    try:
        link = os.lstat(cfg)
        st = os.stat(cfg)
    except FileNotFoundError:
        return (f"{cfg} does not exist and others can write to {root}: anyone of them can create it"
                if shared_root else None)
    except OSError as exc:
        return f"{cfg} cannot be checked: {exc.strerror}"
    me = os.getuid()
    if link.st_uid != me or st.st_uid != me:
        return f"{cfg} belongs to uid {st.st_uid if link.st_uid == me else link.st_uid}, not to this user (uid {me})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{cfg} is writable by its group or by everyone (mode {stat.filemode(st.st_mode)})"
    if shared_root and not root_mode & stat.S_ISVTX:
        return f"others can write to {root}, which has no sticky bit: anyone of them can replace {cfg}"
    return None


def state_dir(settings: dict) -> Path:
    """The state directory (journal, index, logs, lock), absolute."""
    value = settings["service"]["state_dir"]
    if isinstance(value, str) and not value.startswith("~"):  # no home directory involved: asked once per file
        return _state_dir(str(settings["_root"]), value)
    root = Path(settings["_root"])
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else root / path


@functools.lru_cache(maxsize=64)
def _state_dir(root: str, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(root) / path


def root_argument(root: str | None) -> tuple[str, Path]:
    """The root as given (``--root``, else ``$KBWATCH_ROOT``, else ``.``) and as a path, ``~`` expanded."""
    value = root or os.environ.get("KBWATCH_ROOT") or "."
    return value, Path(value).expanduser()


def resolve_root(root: str | None) -> Path:
    value, path = root_argument(root)
    if not path.exists():
        raise ConfigError(f"--root: {value}: no such directory")
    if not path.is_dir():
        raise ConfigError(f"--root: {value}: not a directory")
    return path.resolve()
