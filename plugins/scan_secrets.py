"""Secrets scanner, kind ``secret`` (every finding has ``redact=True``).

Owns the rules ``secret.*``: provider keys (``aws-access-key``,
``aws-bedrock-key``, ``gcp-api-key``, ``azure-storage-key``,
``azure-client-secret``, ``github-token``, ``gitlab-token``, ``slack-token``,
``slack-webhook``, ``stripe-key``, ``openai-key``, ``anthropic-key``,
``alibaba-access-key``, ``tencent-secret-id``, ``huggingface-token``,
``npm-token``, ``pypi-token``, ``sendgrid-key``, ``mailchimp-key``,
``telegram-bot-token``, ``discord-bot-token``, ``square-token``,
``facebook-token``, ``sourcegraph-token``, ``notion-token``,
``onepassword-token``, ``vault-token``, ``artifactory-key``, ``twilio-key``,
``softlayer-key``),
``private-key`` (PEM/PGP/PuTTY blocks with a body), ``jwt`` (header must
decode to JSON), ``url-credentials`` (``scheme://user:pass@host``),
``connection-string`` (``Password=`` in ADO/JDBC strings),
``curl-credentials`` (``curl -u user:pass``), ``password-assignment``
(password/secret/token/api-key lines, also Chinese keys 密码 口令 密钥 秘钥 令牌
私钥 and ``：``), ``high-entropy`` (random-looking tokens, with filters for
UUIDs, lock-file/checksum hashes, URLs and placeholders such as ``xxxx`` or
``<your-key>``).

A value a provider rule rejects as a dummy (placeholder, sequential ids) is
not re-reported by the generic rules; provider rules are gated by literal
markers and, on long texts, search only the lines that hold one.

Provider formats follow gitleaks (MIT) and detect-secrets (Apache-2.0) rule
definitions; no code is copied from AGPL sources.
"""

from __future__ import annotations

import base64
import json
import re

from kbwatch.pipeline import hookimpl
from kbwatch.pipeline.model import Finding
from kbwatch.plugins.scanning import LineIndex, make_finding, scan_options, shannon
from kbwatch.plugins.scanning.gitleaks import matches as gitleaks_matches, public_values
from kbwatch.plugins.scanning.alternation import by_first_char

PUBLIC_VALUES = public_values()
# gitleaks rules whose shape this scanner owns with its own validation (a JWT header must decode)
OWN_RULES = frozenset({"jwt", "jwt-base64", "hashicorp-tf-password"})  # password = …: the generic rule

KIND = "secret"
# Shannon entropy (bits per character) a mixed-class token needs for ``secret.high-entropy``;
# chosen by leave-one-source-out cross-validation in bench/riskscan.py (--cv)
ENTROPY_MIN = 4.3
_B = r"(?<![A-Za-z0-9_])"
_E = r"(?![A-Za-z0-9_])"

# (rule, severity, pattern, secret group)
PROVIDERS: list[tuple[str, str, re.Pattern, int]] = [
    ("secret.aws-access-key", "high", re.compile(_B + r"((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})" + _E), 1),
    ("secret.aws-bedrock-key", "high", re.compile(_B + r"(ABSK[A-Za-z0-9+/]{109,269}={0,2})"), 1),
    ("secret.gcp-api-key", "high", re.compile(_B + r"(AIza[0-9A-Za-z_\-]{35})" + _E), 1),
    ("secret.azure-storage-key", "high", re.compile(r"AccountKey=([A-Za-z0-9+/]{86}==)"), 1),
    ("secret.azure-client-secret", "high", re.compile(r"(?<![\w~.-])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34})(?![\w~.-])"), 1),
    ("secret.github-token", "high", re.compile(_B + r"((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})" + _E), 1),
    # GitLab token lengths per prefix (detect-secrets / gitleaks shapes); routable tokens end in ".<9 chars>"
    ("secret.gitlab-token", "high", re.compile(_B + r"((?:glpat|gldt|glft|glsoat|glrt|glrtr|glffct)-[A-Za-z0-9_\-]{20,50}(?:\.[A-Za-z0-9]{9})?"
                                                 r"|glcbt-(?:[0-9a-fA-F]{1,5}_)?[A-Za-z0-9_\-]{20,50}|glimt-[A-Za-z0-9_\-]{25}"
                                                 r"|glptt-[0-9a-fA-F]{40}|glagent-[A-Za-z0-9_\-]{50,1024}|gloas-[A-Za-z0-9_\-]{64}"
                                                 r"|GR1348941[A-Za-z0-9_\-]{20,50})(?![\w\-])"), 1),
    ("secret.slack-token", "high", re.compile(_B + r"(xox[abposrce]-(?:\d+-)?[0-9A-Za-z-]{10,}|xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,})"), 1),
    ("secret.slack-webhook", "high", re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,})"), 1),
    ("secret.stripe-key", "high", re.compile(_B + r"((?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,99})" + _E), 1),
    ("secret.openai-key", "high", re.compile(_B + r"(sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{16,}T3BlbkFJ[A-Za-z0-9_\-]{16,}"
                                             r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{58,}|sk-[A-Za-z0-9]{48})" + _E), 1),
    ("secret.anthropic-key", "high", re.compile(_B + r"(sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{80,100}AA)" + _E), 1),
    ("secret.alibaba-access-key", "high", re.compile(_B + r"(LTAI[A-Za-z0-9]{12,20})" + _E), 1),
    ("secret.tencent-secret-id", "high", re.compile(_B + r"(AKID[A-Za-z0-9]{13,40})" + _E), 1),
    ("secret.huggingface-token", "high", re.compile(_B + r"((?:hf_|api_org_)[A-Za-z]{34})" + _E), 1),
    ("secret.npm-token", "high", re.compile(_B + r"(npm_[A-Za-z0-9]{36})" + _E), 1),
    ("secret.pypi-token", "high", re.compile(_B + r"(pypi-AgE[A-Za-z0-9_\-]{50,})"), 1),
    ("secret.sendgrid-key", "high", re.compile(_B + r"(SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})" + _E), 1),
    ("secret.mailchimp-key", "high", re.compile(_B + r"([0-9a-f]{32}-us\d{1,2})" + _E), 1),
    ("secret.telegram-bot-token", "high", re.compile(r"(?<![\w:])(\d{8,10}:AA[A-Za-z0-9_\-]{32,33})" + _E), 1),
    ("secret.discord-bot-token", "high", re.compile(_B + r"([MNOA][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38})(?![\w-])"), 1),
    ("secret.square-token", "high", re.compile(_B + r"(sq0(?:csp|atp)-[0-9A-Za-z\\\-_]{22,43})"), 1),
    ("secret.facebook-token", "high", re.compile(_B + r"(EAA[MC][A-Za-z0-9]{80,}|\d{15,16}(?:\||%7C)[0-9A-Za-z\-_]{27})" + _E), 1),
    ("secret.sourcegraph-token", "high", re.compile(_B + r"(sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40})" + _E), 1),
    ("secret.notion-token", "high", re.compile(_B + r"(ntn_\d{11}[A-Za-z0-9]{35})" + _E), 1),
    ("secret.onepassword-token", "high", re.compile(_B + r"(ops_eyJ[A-Za-z0-9+/=_\-]{100,})"), 1),
    ("secret.vault-token", "high", re.compile(_B + r"(hvs\.[A-Za-z0-9_\-]{90,}|hvb\.[A-Za-z0-9_\-]{90,})"), 1),
    ("secret.artifactory-key", "high", re.compile(_B + r"(AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})" + _E), 1),
    ("secret.twilio-key", "high", re.compile(_B + r"((?:AC|SK)[0-9a-f]{32})" + _E), 1),
    ("secret.softlayer-key", "high", re.compile(r"api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})" + _E, re.I), 1),
    ("secret.intra42-secret", "high", re.compile(_B + r"(s-s4t2(?:ud|af)-[a-f0-9]{64})" + _E), 1),
]

# Cheap substring gates: a provider rule runs only when one of its literal
# markers occurs in the text (a C-level ``in`` test instead of a regex scan).
PROVIDER_GATES: dict[str, tuple[str, ...]] = {
    "secret.aws-access-key": ("A3T", "AKIA", "ASIA", "ABIA", "ACCA"),
    "secret.aws-bedrock-key": ("ABSK",),
    "secret.gcp-api-key": ("AIza",),
    "secret.azure-storage-key": ("AccountKey=",),
    "secret.azure-client-secret": ("Q~",),
    "secret.github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "secret.gitlab-token": ("gl", "GR1348941"),
    "secret.softlayer-key": ("softlayer",),
    "secret.slack-token": ("xox",),
    "secret.slack-webhook": ("hooks.slack.com",),
    "secret.stripe-key": ("_live_", "_test_", "_prod_"),
    "secret.openai-key": ("sk-",),
    "secret.anthropic-key": ("sk-ant-",),
    "secret.alibaba-access-key": ("LTAI",),
    "secret.tencent-secret-id": ("AKID",),
    "secret.huggingface-token": ("hf_", "api_org_"),
    "secret.npm-token": ("npm_",),
    "secret.pypi-token": ("pypi-AgE",),
    "secret.sendgrid-key": ("SG.",),
    "secret.mailchimp-key": ("-us",),
    "secret.telegram-bot-token": (":AA",),
    "secret.square-token": ("sq0",),
    "secret.discord-bot-token": (".x.",),  # set by _DISCORD_GATE
    "secret.facebook-token": ("EAA", "|", "%7C"),
    "secret.sourcegraph-token": ("sgp_",),
    "secret.notion-token": ("ntn_",),
    "secret.onepassword-token": ("ops_eyJ",),
    "secret.vault-token": ("hvs.", "hvb."),
    "secret.artifactory-key": ("AKCp", "cmVmd"),
    "secret.twilio-key": ("AC", "SK"),
    "secret.intra42-secret": ("s-s4t2",),
}

_DISCORD_GATE = re.compile(r"\.[A-Za-z\d_\-]{6}\.")  # id.timestamp.hmac: two dots six characters apart
_ALL_GATES = frozenset(x for gates in PROVIDER_GATES.values() for x in gates)

PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----(.*?)(?:-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d+:[^\n]*\n(?:[^\n]*\n){0,3}Private-Lines:\s*\d+\s*\n([\s\S]{20,400}?)(?:\n\S|\Z)", re.S)
JWT = re.compile(_B + r"(eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})")
URL_CRED = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://([^\s:/@'\"<>]{1,64}):([^\s/@'\"<>]{2,128})@[\w.\-]+")
# user:pass@host without a scheme (mysql -u admin:pw@db.internal, proxy settings): not an e-mail
BARE_CRED = re.compile(r"(?<![\w.%/:@\-])([A-Za-z0-9._%\-]{1,64}):([^\s:/@'\"<>`]{6,128})@"
                       r"(?:[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+|localhost)(?![\w\-])")
NOT_A_USER = frozenset({"mailto", "email", "e-mail", "mail", "re", "fw", "fwd", "to", "from", "cc", "bcc", "contact",
                        "reply-to", "sender", "author", "maintainer", "owner", "by", "at", "user", "login", "id"})
# SQL: CREATE/ALTER USER … IDENTIFIED BY pw; libcurl CURLOPT_(PROXY)USERPWD "user:pw"; curl --oauth2-bearer
SQL_PW = re.compile(r"(?i)\b(?:create|alter)\s+(?:user|role|login)\b[^;\n]{0,120}?\bidentified\s+by\s+(?:password\s+)?"
                    r"(['\"]?)([^\s'\";]{4,128})\1")
CURLOPT_PW = re.compile(r"CURLOPT_(?:PROXY)?USERPWD\s*,\s*\"[^\":\s]*:([^\"\s]{4,128})\"")
OAUTH2_BEARER = re.compile(r"--oauth2-bearer[ =]+(['\"]?)([A-Za-z0-9+/=_\-.~]{8,512})\1")
# .npmrc / .yarnrc: _authToken (a UUID for legacy npm tokens, which the generic rules pass over) and _auth
NPM_AUTH = re.compile(r"(?im)(?:^|[\s:])_auth(?:Token)?\s*[=:]\s*[\"']?([A-Za-z0-9+/=_\-.]{16,200})[\"']?\s*$")
CONN_STR = re.compile(r"(?i)(?:^|[;\s\"'?&])(?:password|pwd)\s*=\s*([^;'\"\s&]{3,})")
# curl -u user:pass, also 'user:pass' quoted as one word and after "\" line continuations
CURL = re.compile(r"\bcurl\b(?:[^\n]|\\\r?\n){0,400}?(?:\s-u|\s--user)\s+(?:(['\"])([^\s'\":<>]+):([^\s'\"<>]{2,})\1"
                  r"|(['\"]?)([^\s'\":<>]+)\4:(['\"]?)([^\s'\"<>]{2,})\6)")

_KEYWORDS = (r"(?:passw(?:or)?d|passwd|pwd|pw(?<![a-z]pw)(?![a-z])|pass(?=[\s\"'_\-:=])|secrete?|token|api[_\-.]?key|apikey|access[_\-.]?key|auth[_\-.]?key|"
             r"private[_\-.]?key|priv[_\-.]?key|client[_\-.]?secret|credentials?|db[_\-.]?pass|account[_\-.]?key|"
             r"service[_\-.]?key|secret[_\-.]?key|key[_\-.]?pass|contrase[ñn]a|authorization)")
_ZH_KEYS = r"(?:密码|口令|密钥|秘钥|令牌|私钥|授权码|访问密钥|安全密钥|密碼|金鑰|密鑰|權杖)"
ASSIGN = re.compile(
    r"(?P<key>[\w.\-\[\]]{0,64}" + _KEYWORDS + r"[\w.\-]{0,64}|[\w]{0,8}" + _ZH_KEYS + r"[\w]{0,8})(?P<kq>[\"'`]?)(?:\[\])?\s*"
    r"(?P<op>:=|=>|===|!==|==|!=|=|:|：|\s(?=[@]?[\"'`]))\s*@?"
    r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\n]{1,200}?)(?P=q)|(?P<uv>[^\s,;\"'`\n()]{1,200}(?:[ ][^\s,;\"'`\n]+){0,6}))",
    re.I)
KEYWORD_FIND = re.compile(_KEYWORDS + "|" + _ZH_KEYS, re.I)
# on text.lower(): no IGNORECASE, much faster; branches grouped by first character (same matches)
KEYWORD_FIND_LOWER = re.compile(by_first_char(_KEYWORDS + "|" + _ZH_KEYS))
REVERSE_ASSIGN = re.compile(r"([\"'`])(?P<qv>[^\"'`\n]{4,200})\1\s*(?:===|!==|==|!=)\s*[\w.]*" + _KEYWORDS, re.I)
# compound key names ending in "key" (ibm_iam_key, cloudant-key, artif-key): bare "key" is too
# common in prose and code, so the value must look machine-generated (≥ 16 token characters)
KEY_SUFFIX_ASSIGN = re.compile(
    r"(?i)(?<![\w.\-])(?P<key>[a-z][\w.\-]*[_\-.]key)(?P<kq>[\"'`]?)\s*(?::=|=>|=|:)\s*(?P<q>[\"'`]?)"
    r"(?P<v>[A-Za-z0-9_\-+/=.~]{16,200})(?P=q)(?![A-Za-z0-9_\-+/=.~])")
ZH_ASSIGN = re.compile(_ZH_KEYS + r"(?:\s*(?:[:：=]|是|为|為)\s*)(?P<uv>[!-~]{4,128})")

ENTROPY_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-/+.=])([A-Za-z0-9_\-+/]{20,100}={0,2})(?![A-Za-z0-9_\-/+=])")
HEX_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-/.])([0-9a-fA-F]{32,64})(?![A-Za-z0-9_\-/])")
URL = re.compile(r"\b(?:https?|ftp|file|s3|gs)://[^\s)\]>\"']+|\bdata:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
PUBLIC_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]*(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?|SIGNATURE)-----"
                          r"[\s\S]*?(?:-----END [A-Z0-9 ]*-----|\Z)")
# prefixes owned by provider rules: a token with one of them that the provider rule rejected is not
# re-reported by the generic entropy rule
PROVIDER_PREFIX = re.compile(r"(?:sk-ant-|sk-(?:proj|svcacct|admin)-|gh[pousr]_|github_pat_|gl(?:pat|ptt|rt|dt|cbt|oas|agent|soat|ft|imt|ffct|rtr)-|"
                             r"xox[abposrce]-|sgp_|ntn_|hvs\.|hvb\.|npm_|pypi-|sq0(?:csp|atp)-|hf_|api_org_|AKID|LTAI|AIza|ABSK|"
                             r"(?:sk|rk)_(?:live|test|prod)_|ops_eyJ|s-s4t2)")
_HEX_KEY = re.compile(r"([\w.\-]+)[\"'`]?\s*(?::=|=>|=|:)\s*[\"'`]?$")
UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
HASH_CONTEXT = re.compile(r"(?i)(?:md5|sha\d*|checksum|chksum|hash|digest|integrity|commit|etag|rev(?:ision)?|"
                          r"version|resolved|nonce|salt|fingerprint|uuid|guid|_id\b|\bid\b|csrf|xsrf)[\w\-]*\W{0,4}$")
PLACEHOLDER = re.compile(
    r"(?i)^(?:<[^>]*>|\{\{.*\}\}|\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*|%\(?\w*\)?s|%[A-Z_]+%|\[[A-Z _-]+\]|"
    r"\*+|x{4,}|(.)\1{5,}|null|none|nil|true|false|undefined|changeme|change_me|password|passwd|secret|"
    r"empty|required|optional|string|str|int|bool|value|\.\.\.|…|todo|tbd|n/a)$")
PLACEHOLDER_SUB = re.compile(r"(?i)x{5,}|(.)\1{7,}|\*{4,}|your[_\- ]?|<[a-z_\- ]+>|example|sample|dummy|fake|placeholder|insert[_\- ]|"
                             r"replace[_\- ]?me|redacted|changeme|\.\.\.\.|0{8,}|here\b")
CODE_REF = re.compile(r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?:\(\))?$|^[A-Za-z_]\w*\(.*\)?$|^[A-Z_][A-Z0-9_]{2,}$|"
                      r"^(?:os\.environ|process\.env|getenv|env)\b")


_NEGATED_KEY = re.compile(r"(?i)^(?:not|no|non|is|has|use|enable|disable)[_\-]")
_AUTH_SCHEMES = ("basic", "bearer", "token", "digest", "negotiate", "apikey")
_SLUG = re.compile(r"[a-z]{3,}(?:[\-_][a-z]{3,})+")


def _placeholder(v: str) -> bool:
    v = v.strip()
    return bool(PLACEHOLDER.match(v) or PLACEHOLDER_SUB.search(v))


_ALPHA = "abcdefghijklmnopqrstuvwxyz"


def _alpha_run(v: str, n: int = 6) -> bool:
    """True when ``v`` contains ``n`` consecutive letters of the alphabet (``mnopqr``): a typed dummy."""
    low = v.lower()
    return any(low[i:i + n] in _ALPHA for i in range(len(low) - n + 1) if low[i].isalpha())


_WORDY = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])")


def _wordy(v: str) -> bool:
    """CamelCase / snake_case word concatenations (CSS classes, identifiers), not random tokens."""
    covered = sum(len(m.group()) for m in _WORDY.finditer(v) if re.search(r"[aeiouy]", m.group(), re.I))
    return covered >= 0.6 * len(v)


def _periodic(v: str) -> bool:
    """A value built by repeating a short unit (``abcd1234abcd1234…``): typed, not generated."""
    n = len(v)
    if n < 12:
        return False
    for p in range(2, min(17, n // 2 + 1)):
        same = sum(v[i] == v[i + p] for i in range(n - p))
        if same >= 0.8 * (n - p):
            return True
    return False


def _sequential(v: str) -> bool:
    low = v.lower()
    return len(set(low)) <= 2 or low in "abcdefghijklmnopqrstuvwxyz0123456789" or low in "0123456789" * 3


def _jwt_ok(tok: str) -> bool:
    head = tok.split(".")[0]
    try:
        data = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and ("alg" in data or "typ" in data)


def _value_ok(v: str, *, quoted: bool) -> bool:
    v = v.strip()
    if len(v) < 4 or not re.search(r"[A-Za-z0-9]", v):
        return False
    if _placeholder(v) or _sequential(v) or UUID.match(v):
        return False
    if not quoted and CODE_REF.match(v):
        return False
    if v.isdigit() and len(v) < 8:
        return False
    return True


_WHOLE_TEXT_MAX = 20_000
KEY_MAX = 64  # characters of a key name before its keyword
ZH_KEY_MAX = 8  # the same in CJK text (数据库密码)


def _on_lines(pat: re.Pattern, text: str, needles: tuple[str, ...], hay: str | None = None):
    """Matches of a single-line pattern, searched only when one of ``needles`` occurs in ``hay``
    (``text`` or a same-length view of it) and, on long texts, only on the lines holding one."""
    hay = text if hay is None else hay
    if not any(x in hay for x in needles):
        return
    if len(text) <= _WHOLE_TEXT_MAX:
        yield from pat.finditer(text)
        return
    spans = set()
    for x in needles:
        i = hay.find(x)
        while i >= 0:
            ls = hay.rfind("\n", 0, i) + 1
            le = hay.find("\n", i)
            le = len(hay) if le < 0 else le
            spans.add((ls, le))
            i = hay.find(x, le)
    last = -1
    for ls, le in sorted(spans):
        if ls < last:
            continue
        yield from pat.finditer(text, ls, le)
        last = le


def _provider_matches(pat: re.Pattern, text: str, gates: tuple[str, ...] | None):
    """``pat.finditer(text)``; on long texts only on the lines holding one of the gate strings
    (provider keys never span a line break)."""
    if not gates or ".x." in gates:
        yield from pat.finditer(text)
        return
    spans: list[tuple[int, int]] = []
    for gs in gates:
        i = text.find(gs)
        while i >= 0:
            ls = text.rfind("\n", 0, i) + 1
            le = text.find("\n", i)
            le = len(text) if le < 0 else le
            spans.append((ls, le))
            i = text.find(gs, le)
    last = -1
    for ls, le in sorted(set(spans)):
        if ls < last:
            continue
        yield from pat.finditer(text, ls, le)
        last = le


_NOT_VALUE_KEY = re.compile(r"(?i)(?:_id|id|name|size|length|len|file|path|type|url|uri|endpoint|format|field|hint|policy|"
                            r"prompt|label|expir\w*|count|index|time|timeout|ttl)$")
_TABLE_KEY = re.compile(r"(?i)^(?:[\w .\-]*?" + _KEYWORDS + r"[\w .\-]*|[\w ]*" + _ZH_KEYS + r"[\w ]*)$")
_TABLE_ROW = re.compile(r"(?m)^[ \t]*\|.*\|[ \t]*$")


def _cells(text: str, s: int, e: int) -> list[tuple[int, int]]:
    """(start, end) of each cell's stripped content in a Markdown table row ``text[s:e]``."""
    row = text[s:e]
    first = row.index("|")
    last = row.rindex("|")
    out, pos = [], s + first + 1
    for part in row[first + 1:last].split("|"):
        lead = len(part) - len(part.lstrip())
        out.append((pos + lead, pos + len(part.rstrip())))
        pos += len(part) + 1
    return out


def _table_values(text: str):
    """(start, end, key) of table cells holding a value for a secret-named key: the cell right of
    a ``password``/``密码`` cell, or a cell under a ``password`` column header (Markdown tables, as
    the CSV and spreadsheet parsers write them)."""
    header: list[str] | None = None
    last_end = -2
    for m in _TABLE_ROW.finditer(text):
        cells = _cells(text, m.start(), m.end())
        texts = [text[a:b] for a, b in cells]
        if m.start() != last_end + 1:
            header = texts  # a new table starts
            last_end = m.end()
            for i in range(1, len(cells)):
                if _TABLE_KEY.match(texts[i - 1]) and texts[i - 1].strip():
                    yield cells[i][0], cells[i][1], texts[i - 1]
            continue
        last_end = m.end()
        if all(set(t) <= set("-: ") for t in texts):
            continue  # the delimiter row
        for i, (a, b) in enumerate(cells):
            if b <= a:
                continue
            if i and _TABLE_KEY.match(texts[i - 1]) and texts[i - 1].strip():
                yield a, b, texts[i - 1]
            elif header and i < len(header) and header[i].strip() and _TABLE_KEY.match(header[i]):
                yield a, b, header[i]


def scan_text(text: str, settings=None) -> list[Finding]:
    opts = scan_options(settings or {})
    index = LineIndex(text)
    out: list[Finding] = []
    taken: list[tuple[int, int]] = []

    def overlaps(s: int, e: int) -> bool:
        return any(s < te and ts < e for ts, te in taken)

    def add(rule: str, sev: str, s: int, e: int, msg: str) -> None:
        if e <= s or overlaps(s, e):
            return
        if text[s:e] in PUBLIC_VALUES:
            taken.append((s, e))
            return  # public by value (gitleaks allowlist data): not a leak
        if rule in ("secret.password-assignment", "secret.high-entropy") and any(
                s < re_ and rs < e for rs, re_ in rejected):
            return  # the provider rule that owns this shape judged it a dummy
        f = make_finding(text, index, opts, kind=KIND, rule=rule, severity=sev, start=s, end=e, message=msg,
                         secret=True, redact=True)
        taken.append((s, e))
        if f is not None:
            out.append(f)

    gated = PRIVATE_KEY.finditer(text) if ("PRIVATE KEY" in text or "PuTTY-User-Key" in text) else ()
    for m in gated:
        body = m.group(1) if m.group(1) is not None else (m.group(2) or "")
        if len(re.sub(r"\s|-----.*?-----|^[\w-]+:.*$", "", body, flags=re.M)) >= 16:
            add("secret.private-key", "high", m.start(), m.end(), "private key block")
    rejected: list[tuple[int, int]] = []  # provider-shaped values judged to be dummies
    present = {x for x in _ALL_GATES if x in text}
    if _DISCORD_GATE.search(text):
        present.add(".x.")
    for rule, sev, pat, g in PROVIDERS:
        gates = PROVIDER_GATES.get(rule)
        if gates is not None and present.isdisjoint(gates):
            continue
        for m in _provider_matches(pat, text, gates if len(text) > _WHOLE_TEXT_MAX else None):
            tok = m.group(g)
            if _placeholder(tok[4:]) or "EXAMPLE" in tok or len(set(tok[-16:])) <= 3:
                rejected.append((m.start(g), m.end(g)))
                continue
            if rule == "secret.slack-token":
                nums = re.findall(r"-(\d+)(?=-)", tok)
                if nums and all(_sequential(x) for x in nums):
                    rejected.append((m.start(g), m.end(g)))
                    continue  # xoxp-1234-1234-1234-…: dummy ids
            add(rule, sev, m.start(g), m.end(g), rule.split(".", 1)[1].replace("-", " "))
    for pat, needles, g, what in ((SQL_PW, ("identified", "IDENTIFIED", "Identified"), 2, "password in a SQL user statement"),
                                  (CURLOPT_PW, ("CURLOPT_",), 1, "credentials in a libcurl option"),
                                  (OAUTH2_BEARER, ("--oauth2-bearer",), 2, "bearer token on a curl command line")):
        for m in _on_lines(pat, text, needles):
            val = m.group(g)
            if _value_ok(val, quoted=True) and not val.startswith(("$", "%", "{", "<", ":")):
                add("secret.password-assignment" if g == 2 and pat is SQL_PW else "secret.curl-credentials",
                    "high", m.start(g), m.end(g), what)
    for m in _on_lines(NPM_AUTH, text, ("_auth",)):
        val = m.group(1)
        if not _placeholder(val) and not _sequential(val) and not _periodic(val) and re.search(r"\d", val):
            add("secret.npm-auth-token", "high", m.start(1), m.end(1), "npm registry credential (_authToken/_auth)")
    for m in _on_lines(JWT, text, ("eyJ",)):
        if _jwt_ok(m.group(1)):
            add("secret.jwt", "high", m.start(1), m.end(1), "JSON Web Token")
    for m in _on_lines(URL_CRED, text, ("://",)):
        pw = m.group(2)
        if not _placeholder(pw) or pw.lower() in ("password", "passwd"):
            if not (pw.startswith("$") or pw.startswith("%") or pw.startswith("{{") or pw.startswith("<")):
                add("secret.url-credentials", "high", m.start(2), m.end(2), "credentials in URL")
    for m in _on_lines(BARE_CRED, text, ("@",)):
        user, pw = m.group(1), m.group(2)
        if user.lower() in NOT_A_USER or not re.search(r"[A-Za-z]", user) or not _value_ok(pw, quoted=True):
            continue
        if pw.startswith(("$", "%", "{{", "<")):
            continue
        add("secret.url-credentials", "high", m.start(2), m.end(2), "credentials before a host name (user:password@host)")
    # U+0130 is the one character whose lower case is two characters long
    low = (text.replace("\u0130", "I") if "\u0130" in text else text).lower()
    for m in _on_lines(CONN_STR, text, ("pwd", "password"), low):
        if _value_ok(m.group(1), quoted=False):
            add("secret.connection-string", "high", m.start(1), m.end(1), "password in connection string")
    for m in (CURL.finditer(text) if "curl" in text and (" -u" in text or "--user" in text) else ()):
        g = 3 if m.group(3) is not None else 7
        pw = m.group(g)
        if len(pw) >= 6 and not pw.startswith("$") and _value_ok(pw, quoted=True):
            add("secret.curl-credentials", "high", m.start(g), m.end(g), "credentials on a curl command line")
    # provider rules generated from gitleaks' rule set (MIT; kbwatch.plugins.scanning.gitleaks)
    for rid, gs, ge in gitleaks_matches(text, low):
        if rid in OWN_RULES:
            continue
        tok = text[gs:ge]
        if _wordy(tok[6:]) or _periodic(tok) or _placeholder(tok) or _placeholder(tok[4:]) or "EXAMPLE" in tok or len(set(tok[-16:])) <= 3 or _alpha_run(tok, 8):
            continue  # a dummy of this shape; the generic rules may still judge the line
        add("secret." + rid, "high", gs, ge, rid.replace("-", " ") + " (gitleaks rule)")
    kw_iter = KEYWORD_FIND_LOWER.finditer(low) if len(low) == len(text) else KEYWORD_FIND.finditer(text)
    # ASSIGN is tried only where a key containing a keyword starts (the start of the identifier
    # around each keyword hit), not at every position of the line: linear in the text size
    starts: list[tuple[int, int]] = []
    for km in kw_iter:
        ks = km.start()
        # a key name is short: never walk back over a whole paragraph (CJK text has no spaces)
        floor = max(0, ks - (ZH_KEY_MAX if ks and ord(text[ks - 1]) >= 0x2E80 else KEY_MAX))
        while ks > floor and (text[ks - 1].isalnum() or text[ks - 1] in "_.-[]"):
            ks -= 1
        if starts and starts[-1][0] == ks:
            continue
        le = text.find("\n", km.end())
        starts.append((ks, len(text) if le < 0 else le))

    def assign_matches():
        last = -1
        for ks, le in starts:
            if ks < last:
                continue
            m = ASSIGN.match(text, ks, le)
            if m is not None:
                last = m.end()
                yield m

    for m in assign_matches():
        key = m.group("key")
        if _NOT_VALUE_KEY.search(key) or re.search(r"(?i)csrf|xsrf", key):
            continue
        if _NEGATED_KEY.match(key):
            continue  # not_secret, no_password, is_token ...: flags, not values
        quoted = m.group("qv") is not None
        val = m.group("qv") if quoted else m.group("uv")
        start = m.start("qv") if quoted else m.start("uv")
        if quoted and m.group("q") == "`" and (" " in val or val.startswith("$")):
            continue  # `command substitution`
        if key.lower().endswith("authorization"):
            parts = val.split(" ")
            if parts[0].lower() in _AUTH_SCHEMES:
                if len(parts) < 2:
                    nxt = re.match(r"[^\s\"'`,;]+", text[start + len(val):].lstrip(" "))
                    if not nxt:
                        continue
                    val = nxt.group()
                    start = text.index(val, start + len(parts[0]))
                else:
                    start += len(parts[0]) + 1
                    val = parts[1]
                if _placeholder(val) or val.startswith(("$", "{", "<", "%")):
                    continue
        if not quoted:
            if m.group("op").isspace():
                continue
            first = val.split(" ")[0]
            if len(val.split(" ")) > 1 and not re.search(r"[_\-.]", key) and not key.islower():
                val = first  # prose after a bare key: keep only the first token
            if not re.search(r"[A-Za-z0-9]", val[:1]) and not re.search(r"[A-Za-z]", val):
                continue
            if _SLUG.fullmatch(val):
                continue  # lower-case words joined by - or _ ("shorter-version"): an identifier
        if _value_ok(val, quoted=quoted):
            sev = "high" if (quoted or len(val) >= 8) else "medium"
            add("secret.password-assignment", sev, start, start + len(val), f"value assigned to {key[:30]}")
    for m in (REVERSE_ASSIGN.finditer(text) if ("==" in text or "!=" in text) else ()):
        if _value_ok(m.group("qv"), quoted=True):
            add("secret.password-assignment", "high", m.start("qv"), m.end("qv"), "compared with a secret variable")
    if "key" in low:
        for m in _on_lines(KEY_SUFFIX_ASSIGN, text, ("key",), low):
            val = m.group("v")
            if (_value_ok(val, quoted=bool(m.group("q"))) and not _NEGATED_KEY.match(m.group("key"))
                    and re.search(r"\d", val) and re.search(r"[A-Za-z]", val) and not HASH_CONTEXT.search(m.group("key"))):
                add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"value assigned to {m.group('key')[:30]}")
    for m in ZH_ASSIGN.finditer(text):
        val = m.group("uv").rstrip("。，,.;；")
        if _value_ok(val, quoted=False) and not CODE_REF.match(val):
            add("secret.password-assignment", "high", m.start("uv"), m.start("uv") + len(val), "密码/密钥赋值")

    if "|" in text and KEYWORD_FIND_LOWER.search(low):
        for vs, ve, key in _table_values(text):
            val = text[vs:ve]
            if _NOT_VALUE_KEY.search(key.strip()) or re.search(r"(?i)csrf|xsrf", key):
                continue
            if len(val) >= 6 and " " not in val and _value_ok(val, quoted=True) and not _SLUG.fullmatch(val) \
                    and not CODE_REF.match(val) and re.search(r"\d|[^\w]", val):
                add("secret.password-assignment", "high", vs, ve, f"value in a {key[:30]} table cell")

    url_spans: list[tuple[int, int]] | None = None
    public_spans = [(m.start(), m.end()) for m in PUBLIC_BLOCK.finditer(text)] if "-----BEGIN" in text else []

    def in_public_block(pos: int) -> bool:
        return any(ps <= pos < pe for ps, pe in public_spans)

    def in_url(s: int, e: int) -> bool:
        nonlocal url_spans
        if url_spans is None:  # computed lazily: most texts have no entropy candidate
            url_spans = [(m.start(), m.end()) for m in URL.finditer(text)] if (":" in text) else []
        return any(us <= s and e <= ue for us, ue in url_spans)

    for m in ENTROPY_TOKEN.finditer(text):
        tok = m.group(1)
        s, e = m.start(1), m.end(1)
        core = tok.rstrip("=")
        if (overlaps(s, e) or in_url(s, e) or UUID.match(tok) or _placeholder(tok)
                or re.fullmatch(r"[0-9a-fA-F]+", core) or "/" in core or "+" in core and "=" not in tok and len(core) > 64):
            continue
        classes = sum(bool(re.search(p, core)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
        if classes < 3 or shannon(core) < ENTROPY_MIN or re.search(r"[a-z]{12,}|[A-Z]{12,}", core):
            continue
        if re.match(r"\.[A-Za-z0-9]", text[e:e + 2]):
            continue  # first segment of a dotted compound (host name, malformed JWT/Discord token)
        if PROVIDER_PREFIX.match(tok):
            continue  # a provider's shape that its own rule did not accept (wrong length or charset)
        if tok.startswith(("pk_live_", "pk_test_")) or _alpha_run(core) or _wordy(core) or in_public_block(s):
            continue  # Stripe publishable key (public by design); typed dummy; identifier; public key / certificate
        if HASH_CONTEXT.search(text[max(0, s - 30):s]):
            continue
        add("secret.high-entropy", "medium", s, e, "high-entropy token")
    for m in HEX_TOKEN.finditer(text):
        tok = m.group(1)
        s, e = m.start(1), m.end(1)
        if overlaps(s, e) or in_url(s, e) or shannon(tok) < 3.0 or _sequential(tok) or not re.search(r"[a-fA-F]", tok):
            continue
        if HASH_CONTEXT.search(text[max(0, s - 30):s]) or re.search(r"[~.\-]$", text[max(0, s - 1):s]):
            continue
        if in_public_block(s):
            continue
        km = _HEX_KEY.search(text[max(0, s - 60):s])
        uniform_case = tok == tok.lower() or tok == tok.upper()
        if len(tok) in (40, 64) and (km is None or (uniform_case and not KEYWORD_FIND.search(km.group(1)))):
            continue  # a bare SHA-1/SHA-256-length digest, or one under a non-secret name
        line_start = text.rfind("\n", 0, s) + 1
        line_end = text.find("\n", e)
        line = text[line_start:line_end if line_end >= 0 else len(text)]
        if re.search(r"(?i)\b(?:lock|integrity|resolved|sha\d+|md5|checksum|commit|hash)\b", line):
            continue
        add("secret.high-entropy", "medium", s, e, "high-entropy hex token")
    out.sort(key=lambda f: f.offset)
    return out


@hookimpl
def kb_scan(document, settings):
    return scan_text(document.markdown or "", settings)
