"""Checks a context-resolution record against the Agent Knowledge rules (v0.5 and current).

``validate_context_run`` (the MCP tool and :meth:`kbwatch.pipeline.api.Knowledge.validate_run`)
uses this. It is kbwatch's own code for the rules of ``context-resolution.v0.5.0`` and
``context-resolution`` (v0.6): required keys, types, enumerations and no unknown keys.
The current version adds pack keys (profile, runtime_mode, selected_documents,
selected_splits, wrapper_order, builder_skill) and a top-level ``wrapper_order``.
The tests hold it to the published JSON schemas with jsonschema.

Also the labels a pack carries (:func:`pack_labels`: status, trust, grounding), which every
reader of a project (``ask``, ``read_document``, the MCP catalog) takes from here.
"""

from __future__ import annotations

from typing import Any

RUN_STATUSES = ("passed", "needs-review", "stale", "disputed", "failed")
PACK_STATUSES = ("draft", "ready", "needs-review", "stale", "disputed", "archived")
ACTIVATIONS = ("explicit", "implicit", "resolver-driven")
TRUST = ("unreviewed", "user-confirmed", "official", "external")
GROUNDING = ("none", "recommended", "required")
SEVERITIES = ("info", "warning", "error")

_STR, _INT, _ARR, _OBJ = "string", "integer", "array", "object"


def _type_ok(value: Any, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _ARR:
        return isinstance(value, list)
    return isinstance(value, dict)


def _check_object(obj: Any, where: str, fields: dict[str, tuple], required: tuple[str, ...], errors: list[str]) -> None:
    """``fields``: key -> (type, enum or None, item type or None, min length or None)."""
    if not isinstance(obj, dict):
        errors.append(f"{where}: expected an object")
        return
    for key in required:
        if key not in obj:
            errors.append(f"{where}: missing required key {key!r}")
    for key, value in obj.items():
        if key not in fields:
            errors.append(f"{where}: unexpected key {key!r}")
            continue
        kind, enum, item, min_len = fields[key]
        if not _type_ok(value, kind):
            errors.append(f"{where}.{key}: expected {kind}")
            continue
        if enum is not None and value not in enum:
            errors.append(f"{where}.{key}: {value!r} is not one of {', '.join(enum)}")
        if min_len is not None and len(value) < min_len:
            errors.append(f"{where}.{key}: must not be empty" if kind == _STR else f"{where}.{key}: needs at least {min_len} item(s)")
        if item is not None:
            for i, v in enumerate(value):
                if not _type_ok(v, item):
                    errors.append(f"{where}.{key}[{i}]: expected {item}")


def _fields_v05() -> tuple[dict, dict]:
    top = {
        "run_id": (_STR, None, None, 1), "query": (_STR, None, None, 1), "status": (_STR, RUN_STATUSES, None, None),
        "resolver": (_OBJ, None, None, None), "activated_packs": (_ARR, None, None, 1),
        "missing": (_ARR, None, _STR, None), "token_estimate": (_INT, None, None, None),
    }
    pack = {
        "name": (_STR, None, None, 1), "activation": (_STR, ACTIVATIONS, None, None),
        "status": (_STR, PACK_STATUSES, None, None), "trust": (_STR, TRUST, None, None),
        "grounding": (_STR, GROUNDING, None, None), "selected_files": (_ARR, None, _STR, None),
        "source_anchors": (_ARR, None, _STR, None), "warnings": (_ARR, None, None, None),
    }
    return top, pack


def _fields_current() -> tuple[dict, dict]:
    top, pack = _fields_v05()
    top = {**top, "wrapper_order": (_ARR, None, _STR, None)}
    pack = {
        **pack,
        "profile": (_STR, ("document-first", "wiki-first", "hybrid"), None, None),
        "runtime_mode": (_STR, ("data", "persona"), None, None),
        "selected_documents": (_ARR, None, _STR, None), "selected_splits": (_ARR, None, _STR, None),
        "wrapper_order": (_INT, None, None, None), "builder_skill": (_OBJ, None, None, None),
    }
    return top, pack


def check(record: Any, version: str = "current") -> list[str]:
    """Every rule ``record`` breaks under ``version`` ("0.5" or "current"); empty when valid."""
    top, pack = _fields_v05() if version == "0.5" else _fields_current()
    errors: list[str] = []
    _check_object(record, "record", top, ("run_id", "query", "status", "activated_packs"), errors)
    if not isinstance(record, dict):
        return errors
    resolver = record.get("resolver")
    if isinstance(resolver, dict):
        _check_object(resolver, "record.resolver", {k: (_STR, None, None, None) for k in ("tool", "version", "strategy")},
                      (), errors)
    for i, p in enumerate(record.get("activated_packs") or [] if isinstance(record.get("activated_packs"), list) else []):
        where = f"record.activated_packs[{i}]"
        _check_object(p, where, pack, ("name", "activation", "selected_files"), errors)
        if not isinstance(p, dict):
            continue
        for j, w in enumerate(p.get("warnings") or [] if isinstance(p.get("warnings"), list) else []):
            _check_object(w, f"{where}.warnings[{j}]",
                          {"severity": (_STR, SEVERITIES, None, None), "path": (_STR, None, None, None),
                           "message": (_STR, None, None, None)}, ("severity", "message"), errors)
        skill = p.get("builder_skill")
        if version != "0.5" and isinstance(skill, dict):
            _check_object(skill, f"{where}.builder_skill",
                          {"name": (_STR, None, None, 1), "version": (_STR, None, None, None),
                           "digest": (_STR, None, None, None)}, ("name",), errors)
    return errors


def validate(record: Any) -> dict:
    """``{"valid", "errors", "versions": {"0.5": [...], "current": [...]}}``: valid under both."""
    v05, cur = check(record, "0.5"), check(record, "current")
    errors = [f"v0.5: {e}" for e in v05] + [f"current: {e}" for e in cur]
    return {"valid": not errors, "errors": errors, "versions": {"0.5": v05, "current": cur}}


def pack_status(front_status: str, pending_reviews: int) -> str:
    """The pack's status: KNOWLEDGE.md's (one of the Agent Knowledge statuses; anything else
    reads as ``draft``), but never ``ready`` while findings wait for review (the file can be
    stale, e.g. edited by hand or written before a journal rebuild)."""
    if front_status not in PACK_STATUSES:
        front_status = "draft"
    if pending_reviews and front_status in ("ready", "draft"):
        return "needs-review"
    return front_status


def pack_labels(front: dict, pending_reviews: int, settings: dict) -> tuple[str, str, str]:
    """``(status, trust, grounding)`` a pack of this project carries. Trust and grounding are the
    configuration's ``[project]`` values, which the service writes into KNOWLEDGE.md: that file
    sits in the shared folder, and a hand edit there (``trust: official``) must not raise what an
    agent is told to trust. The status is the file's (people set lifecycle states there, or
    through ``set_knowledge_status``), checked by :func:`pack_status`."""
    opts = settings.get("project", {})
    return (pack_status(front.get("status", "draft"), pending_reviews),
            opts.get("trust", "unreviewed"), opts.get("grounding", "recommended"))
