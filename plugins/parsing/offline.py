"""Offline shim for ``unstructured`` (see research/parsers-offline.md §2).

Owns everything needed so that ``unstructured`` 0.27.x never reaches the
network:

- telemetry / notice / model-hub environment variables, set (``setdefault``)
  before ``unstructured`` is first imported;
- ``unstructured.nlp.tokenize._load_spacy_model`` replaced by a loader that
  uses ``en_core_web_sm`` if it is installed (vendored wheel) and otherwise a
  blank English pipeline with a sentencizer and a tiny rule-based verb tagger.
  The original loader downloads and pip-installs the model from GitHub; that
  code path is never reached once :func:`ensure_offline` has run.

Nothing here imports ``unstructured`` at module import time: parser plugins
call :func:`ensure_offline` right before their first ``partition`` call.
The patch touches private names, so unstructured is pinned in pyproject.toml
and ``tests/test_parse_offline.py`` checks that the stand-in is in use.
"""

from __future__ import annotations

import os
import re
import threading

OFFLINE_ENV = (
    "DO_NOT_TRACK",
    "SCARF_NO_ANALYTICS",
    "UNSTRUCTURED_DISABLE_NOTICE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)

STAND_IN_MARKER = "kbwatch_offline_stand_in"

_lock = threading.Lock()
_done = False

# unstructured only reads whether tag_ is one of VB, VBD, VBG, VBN, VBP, VBZ
# (``contains_verb``); a short list of frequent verbs plus -ed/-ing endings keeps
# English one-sentence paragraphs from being classified as titles.
_VERBS = frozenset(
    """am is are was were be been being have has had do does did done can could will would
    shall should may might must get gets got make makes made go goes went gone use uses used
    see sees saw seen say says said know knows knew known take takes took taken give gives gave
    given find finds found think thinks thought tell tells told become becomes became show shows
    showed shown include includes included need needs needed provide provides provided support
    supports supported come comes came want wants wanted look looks looked work works worked
    call calls called try tries tried ask asks asked feel feels felt leave leaves left put puts
    mean means meant keep keeps kept let lets begin begins began seem seems seemed help helps
    helped run runs ran write writes wrote written read reads contain contains contained
    describe describes described allow allows allowed require requires required set sets
    create creates created add adds added change changes changed follow follows followed
    bring brings brought hold holds held stand stands stood turn turns turned start starts
    started move moves moved live lives lived believe believes believed happen happens
    happened appear appears appeared continue continues continued""".split()
)
_VERB_SUFFIX = re.compile(r"^[a-z]{3,}(?:ed|ing)$")


def _set_env() -> None:
    for key in OFFLINE_ENV:
        os.environ.setdefault(key, "1")


def _build_stand_in():
    import spacy
    from spacy.language import Language

    if "offline_verb_tagger" not in Language.factories:

        @Language.component("offline_verb_tagger")
        def _offline_verb_tagger(doc):  # pragma: no cover - exercised through unstructured
            for token in doc:
                low = token.lower_
                if low in _VERBS or _VERB_SUFFIX.match(low):
                    token.tag_ = "VB"
            return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("offline_verb_tagger")
    nlp.meta["name"] = STAND_IN_MARKER
    return nlp


def _load_spacy_model_offline():
    """Real model if vendored (never downloaded), else the blank stand-in."""
    import spacy

    from unstructured.nlp import tokenize as tok

    try:
        return spacy.load(tok._SPACY_MODEL_NAME, exclude=tok._SPACY_EXCLUDE)
    except (OSError, ImportError):
        return _build_stand_in()


def ensure_offline() -> None:
    """Make ``unstructured`` safe offline. Idempotent and thread-safe."""
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        _set_env()
        from unstructured.nlp import tokenize as tok

        if getattr(tok._load_spacy_model, "__name__", "") != _load_spacy_model_offline.__name__:
            tok._load_spacy_model = _load_spacy_model_offline
            tok._get_nlp.cache_clear()
        _done = True


def active_nlp_name() -> str:
    """Name of the spaCy pipeline unstructured is using (for tests and ``plugins``)."""
    ensure_offline()
    from unstructured.nlp import tokenize as tok

    return str(tok._get_nlp().meta.get("name", ""))


# Setting the variables is cheap and harmless; doing it when this helper is
# imported means they are in place even if something else imports
# unstructured before the first parse.
_set_env()
