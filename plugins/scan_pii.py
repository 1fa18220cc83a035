"""Personal-data scanner, kind ``pii``.

Owns the rules:

- ``pii.cn-resident-id``  Chinese resident identity number: 18 characters,
  valid province code, valid birth date (not in the future, not before 1900)
  and valid ISO 7064 MOD 11-2 check character. Full-width digits are
  accepted (NFKC). Severity high.
- ``pii.bank-card``       13–19 digits (optionally grouped by spaces or
  dashes) passing Luhn, with a plausible issuer prefix (2–6); rejects
  repeated or sequential digits and numbers that are valid resident IDs.
  High with a card context word (卡号, 银行卡, card …), medium otherwise.
- ``pii.cn-mobile``       mainland mobile numbers 1[3-9]x xxxx xxxx with
  optional +86/0086 and separators. Medium.
- ``pii.email``           e-mail addresses. Low.

Excerpts are masked like secrets (never more than 6 characters of the value).
"""

from __future__ import annotations

import datetime as _dt
import re

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import Finding
from kbwatch.plugins.scanning import LineIndex, make_finding, normalize, scan_options
from kbwatch.plugins.scanning.normalise import gated_line_matches

KIND = "pii"
_W = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_PROVINCES = {11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52,
              53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83, 91}

RIC = re.compile(r"(?<![0-9A-Za-z])([1-9]\d{5}(?:18|19|20)\d{2}\d{2}\d{2}\d{3}[0-9Xx])(?![0-9A-Za-z])")
# CARD and MOBILE open with the class of their first character and test the character before it in a
# look-behind after it, so ``re`` skips other characters in C (a pattern that opens with a look-behind is
# tried at every position). Same matches as
#   CARD   (?<![\d\-.])((?:\d[ \-]?){12,18}\d)(?![\d\-]|\.\d)
#   MOBILE (?<![\d+])((?:(?:\+|00)86[ \-]?)?1[3-9]\d(?:[ \-]?\d{4}){2})(?!\d)
# (a mobile number opens with "+86", "0086" or "1"; tests/test_scan_fastpaths.py compares them on random texts)
CARD = re.compile(r"(\d(?<![\d\-.].)(?:[ \-]?\d){12,18})(?![\d\-]|\.\d)")
MOBILE = re.compile(r"([+01](?<![\d+].)(?:(?<=\+)86[ \-]?1|(?<=0)086[ \-]?1|(?<=1))[3-9]\d(?:[ \-]?\d{4}){2})(?!\d)")
EMAIL = re.compile(r"(?<![\w.+\-])([A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24})\b")
# digit-first necessary sub-patterns: fast tests before the look-behind-first patterns
_RIC_GATE = re.compile(r"\d{17}")
_MOBILE_GATE = re.compile(r"1[3-9]\d")  # literal-first: a quick test before MOBILE
_AT = re.compile("@")
CARD_CONTEXT = re.compile(r"(?i)卡号|银行卡|信用卡|借记卡|储蓄卡|银联|card|visa|master|amex|unionpay|account\s*(?:no|number)|账号|帳號|卡號")


_USER_COLON = re.compile(r"([A-Za-z0-9._%\-]{1,64}):$")
_NOT_A_USER = frozenset({"mailto", "email", "e-mail", "mail", "re", "fw", "fwd", "to", "from", "cc", "bcc", "contact",
                         "reply-to", "sender", "author", "maintainer", "owner", "by", "at", "user", "login", "id"})


def _credential_before(text: str, start: int) -> bool:
    """True when the address is the ``password@host`` part of ``user:password@host``."""
    m = _USER_COLON.search(text, max(0, start - 65), start)
    return bool(m and m.group(1).lower() not in _NOT_A_USER and re.search(r"[A-Za-z]", m.group(1)))


def ric_valid(s: str, today: _dt.date | None = None) -> bool:
    """True for a structurally valid 18-character Chinese resident ID."""
    if len(s) != 18 or not s[:17].isdigit() or s[17] not in "0123456789Xx":
        return False
    if int(s[:2]) not in _PROVINCES:
        return False
    try:
        born = _dt.date(int(s[6:10]), int(s[10:12]), int(s[12:14]))
    except ValueError:
        return False
    if born.year < 1900 or born > (today or _dt.date.today()):
        return False
    total = sum(int(c) * w for c, w in zip(s[:17], _W))
    return "10X98765432"[total % 11] == s[17].upper()


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_plausible(d: str) -> bool:
    if not 13 <= len(d) <= 19 or d[0] not in "23456":
        return False
    if len(set(d)) <= 2 or d in "0123456789" * 3 or d in "9876543210" * 3:
        return False
    if len(d) == 18 and ric_valid(d):
        return False
    return luhn_valid(d)


def scan_text(text: str, settings=None) -> list[Finding]:
    opts = scan_options(settings or {})
    index = LineIndex(text)
    out: list[Finding] = []
    view = normalize(text, despace=False) if re.search(r"[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff20]", text) else None
    vt = view.text if view else text

    def span(s, e):
        return view.span(s, e) if view else (s, e)

    taken: list[tuple[int, int]] = []

    def add(rule, sev, s, e, msg):
        s, e = span(s, e)
        if any(s < te and ts < e for ts, te in taken):
            return
        taken.append((s, e))
        f = make_finding(text, index, opts, kind=KIND, rule=rule, severity=sev, start=s, end=e, message=msg, secret=True)
        if f is not None:
            out.append(f)

    for m in (RIC.finditer(vt) if _RIC_GATE.search(vt) else ()):
        if ric_valid(m.group(1)):
            add("pii.cn-resident-id", "high", m.start(1), m.end(1), "Chinese resident ID number")
    for m in CARD.finditer(vt):
        raw = m.group(1)
        d = re.sub(r"[ \-]", "", raw)
        # grouped numbers must use regular groups (4-4-4-4…, 4-6-5) to count as one card
        if raw != d and not re.fullmatch(r"\d{4}(?:[ \-]\d{4}){2,3}(?:[ \-]\d{1,3})?|\d{4}[ \-]\d{6}[ \-]\d{4,5}|\d{6}[ \-]\d{10,13}", raw):
            continue
        if _card_plausible(d):
            ctx = vt[max(0, m.start() - 40):m.start()]
            add("pii.bank-card", "high" if CARD_CONTEXT.search(ctx) else "medium", m.start(1), m.end(1),
                "bank card number (Luhn-valid)")
    for m in (MOBILE.finditer(vt) if _MOBILE_GATE.search(vt) else ()):
        add("pii.cn-mobile", "medium", m.start(1), m.end(1), "mainland China mobile number")
    # (only on the lines that hold an "@": an address lies on one line, and the look-behind that opens
    # EMAIL would otherwise be tried at every position of the text)
    for m in (gated_line_matches(EMAIL, _AT, vt) if "@" in vt else ()):
        if _credential_before(vt, m.start(1)):
            continue  # user:password@host is a credential (kind secret), not an e-mail address
        add("pii.email", "low", m.start(1), m.end(1), "e-mail address")
    out.sort(key=lambda f: f.offset)
    return out


@hookimpl
def kb_scan(document, settings):
    return scan_text(document.markdown or "", settings)
