"""The secrets scanner's engine, kind ``secret`` (every finding has ``redact=True``); the plugin is
:mod:`kbwatch.plugins.scan_secrets`, which imports this module on its first scan.

Owns the rules ``secret.*``: provider keys (``aws-access-key``,
``aws-bedrock-key``, ``gcp-api-key``, ``azure-storage-key``,
``azure-client-secret``, ``github-token``, ``gitlab-token``, ``slack-token``,
``slack-webhook``, ``stripe-key``, ``openai-key``, ``anthropic-key``,
``alibaba-access-key``, ``tencent-secret-id``, ``huggingface-token``,
``npm-token``, ``pypi-token``, ``sendgrid-key``, ``mailchimp-key``,
``telegram-bot-token``, ``discord-bot-token``, ``square-token``,
``facebook-token``, ``sourcegraph-token``, ``notion-token``,
``onepassword-token``, ``vault-token``, ``artifactory-key``, ``twilio-key``,
``softlayer-key``, ``teams-webhook``, ``mapbox-secret-token``, ``nuget-api-key``,
``newrelic-license-key``, ``newrelic-user-key``, ``salesforce-token``,
``doppler-token``, ``google-oauth-token``, ``supabase-token``,
``discord-webhook``, ``docker-swarm-token``, ``akamai-token``,
``wundergraph-key``, ``newrelic-key``, ``thingsboard-token``, ``kubernetes-bootstrap-token``,
``vault-unseal-key``, ``postmark-token``, ``mailgun-key``, ``nats-nkey-seed``, ``instagram-token``,
``ntlm-auth-message``), detect-secrets' keyed shapes (``cloudant-key``,
``ibm-cloud-iam-key``, ``aws-secret-key``), ``provider-template`` (severity
low: a detect-secrets provider shape filled with one repeated letter,
``AKCxxxxxxxxxx``), ``password-hash`` (crypt(3) md5/bcrypt/sha-crypt, apr1, Cisco type 8/9, scrypt, yescrypt,
Argon2, MySQL ``*``+40 hex),
``private-key`` (PEM/PGP/PuTTY blocks with a body), ``jwt`` (header must
decode to JSON), ``url-credentials`` (``scheme://user:pass@host``),
``connection-string`` (``Password=`` in ADO/JDBC strings),
``curl-credentials`` (``curl -u user:pass``, libcurl options),
``password-assignment`` (password/secret/token/api-key values in assignments,
XML elements and attributes, secret-named calls, command-line options,
``.netrc``, SQL user statements, ``#define``/``%define`` macros, literal fallbacks of
environment look-ups, passwords passed positionally to authentication APIs (``DirectoryEntry``,
``NetworkCredential``, ``.login``, ``auth=(…)``), ``ConvertTo-SecureString``, registry
``login -p``, quoted passwords stated in prose, ``pat`` keys, UUIDs under token/secret names, also Chinese keys 密码 口令 密钥 秘钥 令牌 私钥
and ``：``; token-like names take gitleaks' generic length/entropy floor), ``high-entropy`` (random-looking tokens, with filters for
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
import bisect
import json
import re

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
    # detect-secrets' charsets: Mailchimp [0-9a-z]{32}-usN, Telegram without the "AA" gitleaks expects,
    # Twilio AC/SK + 32 lower-case alphanumerics (generated-looking values only: see _provider_ok)
    ("secret.mailchimp-key", "high", re.compile(_B + r"([0-9a-z]{32}-us\d{1,2})" + _E), 1),
    # (?<![\w:])(\d{8,10}:…) written to begin with the digit (the look-behind checks the character before it),
    # so that a search skips non-digits in C: ":" alone gates nothing in prose
    ("secret.telegram-bot-token", "high", re.compile(r"(\d(?<![\w:]\d)\d{7,9}:[A-Za-z0-9_\-]{34,35})" + _E), 1),
    ("secret.discord-bot-token", "high", re.compile(_B + r"([MNOA][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38})(?![\w-])"), 1),
    ("secret.square-token", "high", re.compile(_B + r"(sq0(?:csp|atp)-[0-9A-Za-z\\\-_]{22,43})"), 1),
    ("secret.facebook-token", "high", re.compile(_B + r"(EAA[MC][A-Za-z0-9]{80,}|\d{15,16}(?:\||%7C)[0-9A-Za-z\-_]{27})" + _E), 1),
    ("secret.sourcegraph-token", "high", re.compile(_B + r"(sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40})" + _E), 1),
    ("secret.notion-token", "high", re.compile(_B + r"(ntn_\d{11}[A-Za-z0-9]{35})" + _E), 1),
    ("secret.onepassword-token", "high", re.compile(_B + r"(ops_eyJ[A-Za-z0-9+/=_\-]{100,})"), 1),
    ("secret.vault-token", "high", re.compile(_B + r"(hvs\.[A-Za-z0-9_\-]{90,}|hvb\.[A-Za-z0-9_\-]{90,}|hv[sbr]\.[A-Za-z0-9_\-]{24,89}(?![A-Za-z0-9_\-])"
                                              r"|s\.CAES[A-Za-z0-9_\-]{60,})"), 1),
    ("secret.artifactory-key", "high", re.compile(_B + r"(AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})" + _E), 1),
    ("secret.twilio-key", "high", re.compile(_B + r"((?:AC|SK)[0-9a-z]{32})" + _E), 1),
    ("secret.softlayer-key", "high", re.compile(r"api\.softlayer\.com/(?:soap|rest)/v3(?:\.1)?/([a-z0-9]{64})" + _E, re.I), 1),
    ("secret.intra42-secret", "high", re.compile(_B + r"(s-s4t2(?:ud|af)-[a-f0-9]{64})" + _E), 1),
    # shapes neither gitleaks' data nor the rules above cover (formats from the providers' documentation)
    ("secret.teams-webhook", "high", re.compile(r"(?i)https://(?:outlook\.office(?:365)?\.com|[\w\-]+\.webhook\.office\.com)/webhook(?:b2)?/"
                                                r"([0-9a-f\-]{36}@[0-9a-f\-]{36}/IncomingWebhook/[0-9a-f]{32}/[0-9a-f\-]{36})"), 1),
    ("secret.mapbox-secret-token", "high", re.compile(_B + r"([st]k\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{20,})" + _E), 1),
    ("secret.nuget-api-key", "high", re.compile(_B + r"(oy2[a-z0-9]{43})" + _E), 1),
    ("secret.newrelic-license-key", "high", re.compile(_B + r"([a-z0-9]{36}NRAL)" + _E), 1),
    ("secret.salesforce-token", "high", re.compile(_B + r"(00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,120})" + _E), 1),
    ("secret.doppler-token", "high", re.compile(_B + r"(dp\.(?:st(?:\.[a-z0-9\-_]{2,35})?|sa|scim|audit|ct)\.[A-Za-z0-9]{40,44})" + _E), 1),
    ("secret.google-oauth-token", "high", re.compile(_B + r"(ya29\.[A-Za-z0-9_\-]{30,}|1//0[A-Za-z0-9_\-]{40,})"), 1),
    ("secret.supabase-token", "high", re.compile(_B + r"(sbp_(?:v0_)?[a-f0-9]{40})" + _E), 1),
    ("secret.newrelic-user-key", "high", re.compile(_B + r"(NRAK-[A-Z0-9]{27})" + _E), 1),
    ("secret.discord-webhook", "high", re.compile(r"discord(?:app)?\.com/api/webhooks/\d{17,20}/([A-Za-z0-9_\-]{60,70})" + _E), 1),
    ("secret.docker-swarm-token", "high", re.compile(_B + r"(SWMTKN-1-[a-z0-9]{50}-[a-z0-9]{25})" + _E), 1),
    ("secret.akamai-token", "high", re.compile(_B + r"(akab-[a-z0-9]{16}-[a-z0-9]{16})" + _E), 1),
    ("secret.wundergraph-key", "high", re.compile(_B + r"(cosmo_[a-f0-9]{32})" + _E), 1),
    # sixth pass (kinds read on Nosey Parker's examples; formats from its rules, Apache-2.0, and the
    # providers' documentation): New Relic admin / Insights insert and query / browser keys,
    # ThingsBoard device tokens in API URLs, kubeadm bootstrap tokens after a token key, Vault unseal
    # keys as `vault operator init` prints them, Postmark server/account tokens (UUIDs after a postmark key)
    ("secret.newrelic-key", "high", re.compile(_B + r"(NRAA-[a-f0-9]{27}|NRI[IQ]-[A-Za-z0-9_\-]{32}|NRJS-[a-f0-9]{19})" + _E), 1),
    ("secret.thingsboard-token", "high", re.compile(r"(?:https?|coaps?)://[\w.\-]+(?::\d+)?/api/v1/([A-Za-z0-9]{20})/"
                                                    r"(?:telemetry|attributes|rpc|claim|firmware|software)\b"), 1),
    ("secret.kubernetes-bootstrap-token", "high", re.compile(r"(?i:token)[\w\-]*[\"'\]]?(?:[ \t]*[:=][ \t]*|[ \t]+)[\"']?"
                                                             r"([a-z0-9]{6}\.[a-z0-9]{16})(?![\w.\-])"), 1),
    ("secret.vault-unseal-key", "high", re.compile(r"(?i:unseal[ _\-]?key)(?:[ _\-]?\d{1,2})?[\"']?[ \t]*[:=][ \t]*[\"']?"
                                                   r"([A-Za-z0-9+/]{43,44}=?|[0-9a-f]{64,66})(?![\w+/=])"), 1),
    ("secret.mailgun-key", "high", re.compile(_B + r"(key-[0-9a-f]{32})" + _E), 1),
    ("secret.nats-nkey-seed", "high", re.compile(_B + r"(S[UAON]A[A-Z2-7]{55})" + _E), 1),
    ("secret.instagram-token", "high", re.compile(_B + r"(IGQVJ[A-Za-z0-9_\-]{100,})" + _E), 1),
    ("secret.ntlm-auth-message", "high", re.compile(_B + r"(TlRMTVNTUAAD[A-Za-z0-9+/]{40,}={0,2})"), 1),
    ("secret.postmark-token", "high", re.compile(r"(?i:postmark)[\w\-]*[\"']?[ \t]*[:=][ \t]*[\"']?"
                                                 r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![\w\-])"), 1),
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
    "secret.gitlab-token": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glrtr-", "glffct-", "glcbt-", "glimt-", "glptt-",
                            "glagent-", "gloas-", "GR1348941"),
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
    "secret.telegram-bot-token": (":",),
    "secret.square-token": ("sq0",),
    "secret.discord-bot-token": (".x.",),  # set by _DISCORD_GATE
    "secret.facebook-token": ("EAA", "|", "%7C"),
    "secret.sourcegraph-token": ("sgp_",),
    "secret.notion-token": ("ntn_",),
    "secret.onepassword-token": ("ops_eyJ",),
    "secret.vault-token": ("hvs.", "hvb.", "hvr.", "s.CAES"),
    "secret.artifactory-key": ("AKCp", "cmVmd"),
    "secret.twilio-key": ("AC", "SK"),
    "secret.intra42-secret": ("s-s4t2",),
    "secret.teams-webhook": ("IncomingWebhook",),
    "secret.mapbox-secret-token": ("sk.eyJ", "tk.eyJ"),
    "secret.nuget-api-key": ("oy2",),
    "secret.newrelic-license-key": ("NRAL",),
    "secret.salesforce-token": ("00D",),
    "secret.doppler-token": ("dp.",),
    "secret.google-oauth-token": ("ya29.", "1//0"),
    "secret.supabase-token": ("sbp_",),
    "secret.newrelic-user-key": ("NRAK-",),
    "secret.discord-webhook": ("/api/webhooks/",),
    "secret.docker-swarm-token": ("SWMTKN-",),
    "secret.akamai-token": ("akab-",),
    "secret.wundergraph-key": ("cosmo_",),
    "secret.newrelic-key": ("NRAA-", "NRII-", "NRIQ-", "NRJS-"),
    "secret.thingsboard-token": ("/api/v1/",),
    "secret.kubernetes-bootstrap-token": ("token", "TOKEN", "Token"),
    "secret.vault-unseal-key": ("Unseal", "unseal", "UNSEAL"),
    "secret.postmark-token": ("postmark", "Postmark", "POSTMARK"),
    "secret.mailgun-key": ("key-",),
    "secret.nats-nkey-seed": ("SUA", "SAA", "SOA", "SNA"),
    "secret.instagram-token": ("IGQVJ",),
    "secret.ntlm-auth-message": ("TlRMTVNTUAAD",),
}

# Provider shapes as detect-secrets (Apache-2.0) defines them, without an entropy check: its
# Artifactory (AKC…, AP[0-9A-F]…), Twilio (AC/SK + 32), AWS key-id and Slack webhook regexes flag a
# value of the full shape whatever its body. A body that is one letter repeated (AKCxxxxxxxxxx,
# SKxxxx…, A3T0ZZZZ…, /Txxxx/Bxxxx/xxxx) is a template of the credential: reported as
# ``secret.provider-template`` with severity low (masked, and allow-listable by rule id). An
# all-caps ``XXXX`` body is the redaction convention gitleaks' fixtures treat as not a secret, and
# stays unreported; other bodies of these legacy shapes need letters and digits.
DS_SHAPES: list[tuple[str, re.Pattern, tuple[str, ...]]] = [
    ("secret.artifactory-key", re.compile(r'(?m)(?:(?<=[\s=:"])|^)(AKC[a-zA-Z0-9]{10,}|AP[\dA-F][a-zA-Z0-9]{8,})(?=[\s"]|$)'),
     ("AKC", "AP")),
    ("secret.twilio-key", re.compile(_B + r"((?:AC|SK)[a-z0-9]{32})" + _E), ("AC", "SK")),
    ("secret.aws-access-key", re.compile(_B + r"((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})" + _E),
     ("A3T", "AKIA", "ASIA", "ABIA", "ACCA")),
    ("secret.slack-webhook", re.compile(r"hooks\.slack\.com/services/(T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)", re.I),
     ("hooks.slack.com",)),
]


# Keyed provider shapes as detect-secrets defines them (its build_assignment_regex: optional [ and
# quotes around the key, = : := => :: or spaces, optional quotes around the value), flagged on shape
# alone: Cloudant (24 lower-case letters or 64 hex), IBM Cloud IAM (44 token characters), SoftLayer
# (64 lower-case alphanumerics), AWS secret access keys (40 base64 characters quoted after aws…key). Their typed test values (abcdefghij…, abcd1234…) pass, as in
# detect-secrets; a value one character longer or shorter does not.
_DS_ASSIGN = r"(?:(?<=\W)|^)\[?[\"']?(?:{p})[_\-]?(?:{k})[\"']?\]? *(?:=|:|:=|=>| +|::) *[\"']?"


def _ds_keyed(rule: str, p: str, k: str, value: str, needles: tuple[str, ...]):
    """A keyed shape, its needles, and the key name every match holds (``{p}[_-]?{k}``) compiled
    without IGNORECASE, to be looked for in the lower-cased text first: one search that starts at
    the key's first letter, where the whole pattern is tried at every position."""
    return (rule, re.compile(_DS_ASSIGN.format(p=p, k=k) + value, re.I | re.M), needles,
            re.compile(f"(?:{p})[_\\-]?(?:{k})"))


DS_KEYED: list[tuple[str, re.Pattern, tuple[str, ...], re.Pattern | None]] = [
    _ds_keyed("secret.cloudant-key", r"cloudant|clou|cl", r"(?:api)?(?:key|pwd|pw|password|pass|token)",
              r"([0-9a-f]{64}|[a-z]{24})(?![A-Za-z0-9])", ("key", "pw", "pass", "token")),
    _ds_keyed("secret.ibm-cloud-iam-key",
              r"(?:ibm[_\-]?cloud[_\-]?iam|cloud[_\-]?iam|ibm[_\-]?cloud|ibm[_\-]?iam|ibm|iam|cloud)[_\-]?(?:api)?",
              r"key|pwd|password|pass|token", r"([a-zA-Z0-9_\-]{44})(?![a-zA-Z0-9_\-])", ("key", "pwd", "pass", "token")),
    ("secret.aws-secret-key", re.compile(r"(?i)aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"]([0-9a-zA-Z/+]{40})['\"]"),
     ("aws",), None),
    _ds_keyed("secret.softlayer-key", r"(?:softlayer|sl)[_\-]?(?:api)?", r"key|pwd|password|pass|token",
              r"([a-z0-9]{64})(?![A-Za-z0-9])", ("key", "pwd", "pass", "token")),
]
# of the four non-ASCII letters IGNORECASE matches with ASCII ones, İ is replaced before lower-casing
# and K lower-cases to k; these two do not lower-case to an ASCII letter
_FOLDS_TO_ASCII = ("ı", "ſ")


_LOOSE_CHARSET = frozenset({"secret.supabase-token", "secret.wundergraph-key", "secret.docker-swarm-token", "secret.vault-token", "secret.mailchimp-key", "secret.telegram-bot-token", "secret.twilio-key", "secret.nuget-api-key",
                            "secret.newrelic-license-key", "secret.newrelic-key", "secret.thingsboard-token",
                            "secret.kubernetes-bootstrap-token", "secret.mailgun-key", "secret.nats-nkey-seed"})


# loose-charset shapes whose typed dummies the generic rules must not re-report either
_DUMMY_OWNED = frozenset({"secret.newrelic-key", "secret.thingsboard-token", "secret.kubernetes-bootstrap-token", "secret.mailgun-key",
                          "secret.nats-nkey-seed"})
_UNDERSCORE_PREFIXED = frozenset({"secret.supabase-token", "secret.wundergraph-key"})


def _provider_ok(body: str) -> bool:
    """A provider body from a wide charset looks generated: letters and digits, varied, not typed
    (no alphabet or counting run, also when letters and digits are interleaved: a1b2c3d4…)."""
    letters, digits = re.sub(r"[^A-Za-z]", "", body), re.sub(r"\D", "", body)
    return (bool(digits) and bool(letters) and len(set(body)) >= 10 and not _periodic(body) and not _alpha_run(body)
            and not _alpha_run(letters, 8) and not any(run in digits for run in ("1234567", "2345678", "3456789", "0123456"))
            and shannon(body) >= 3.2)


def _template_body(rule: str, tok: str) -> str:
    """The part of a provider-shaped token after its fixed prefix (the id letters of a webhook)."""
    if rule == "secret.slack-webhook":
        a, b, c = tok.split("/")
        return a[1:] + b[1:] + c
    if rule == "secret.aws-access-key":
        return tok[4:]
    return tok[3:] if rule == "secret.artifactory-key" else tok[2:]


_DISCORD_GATE = re.compile(r"\.[A-Za-z\d_\-]{6}\.")  # id.timestamp.hmac: two dots six characters apart
_ALL_GATES = frozenset(x for gates in PROVIDER_GATES.values() for x in gates)
# needles of single-line rules (on the text as it is), found in the same automaton pass; scan_text
# records their presence in the per-text needle memo that _on_lines reads
_CRED_CALL_NEEDLES = ("DirectoryEntry", "NetworkCredential", "PasswordAuthentication", "UsernamePasswordCredentials",
                      "BasicAuth", "DigestAuth", "login(", "login (", "simple_bind", "auth=", "auth =")
_PAT_NEEDLES = tuple(k + c for k in ("pat", "PAT", "Pat") for c in ("=", ":", " ", "\"", "'", "`", "]"))
_HASH_NEEDLES = ("$1$", "$2", "$5$", "$6$", "$apr1$", "$8$", "$9$", "$7$", "$y$", "$argon2")
_ENV_NEEDLES = ("getenv", "environ.get", "env.get", "process.env", "ENV.fetch", "ENV[")
_EXTRA_NEEDLES = frozenset(_CRED_CALL_NEEDLES + _PAT_NEEDLES + _HASH_NEEDLES + _ENV_NEEDLES + (" login ", "#define", "%define", "'*", '"*'))
# which provider rules (indexes into PROVIDERS) each gate string opens, and the rules without gates:
# a text's present gates choose the rules to run, instead of a test of every rule's gates per text
_GATED_PROVIDERS: dict[str, list[int]] = {}
for _i, (_rule, *_) in enumerate(PROVIDERS):
    for _g in PROVIDER_GATES.get(_rule, ()):
        _GATED_PROVIDERS.setdefault(_g, []).append(_i)
_UNGATED_PROVIDERS = frozenset(i for i, (rule, *_) in enumerate(PROVIDERS) if PROVIDER_GATES.get(rule) is None)
# the per-text needle memo's keys of _EXTRA_NEEDLES (see scan_text), made once
_EXTRA_LIST = tuple(sorted(_EXTRA_NEEDLES))
_EXTRA_KEYS = tuple((x, True) for x in _EXTRA_LIST)
_SHORT_GATES = frozenset(x for x in _ALL_GATES if len(x) == 1)  # ":", "|": tested with `in`, not reported at every occurrence
try:  # the gates present in a text, found in one C pass (pyahocorasick) instead of one `in` test per gate
    import ahocorasick as _ahocorasick

    _GATE_AUTOMATON = _ahocorasick.Automaton()
    for _g in sorted((_ALL_GATES - _SHORT_GATES) | _EXTRA_NEEDLES):
        _GATE_AUTOMATON.add_word(_g, _g)
    _GATE_AUTOMATON.make_automaton()
except ImportError:  # pragma: no cover - the dependency is declared
    _GATE_AUTOMATON = None


def _present_gates(text: str) -> set[str]:
    """The provider gate strings that occur in ``text`` (``{x for x in _ALL_GATES if x in text}``)."""
    if _GATE_AUTOMATON is None:
        return {x for x in _ALL_GATES | _EXTRA_NEEDLES if x in text}
    present = {g for _, g in _GATE_AUTOMATON.iter(text)}
    present.update(x for x in _SHORT_GATES if x in text)
    return present

PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----(.*?)(?:-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d+:[^\n]*\n(?:[^\n]*\n){0,3}Private-Lines:\s*\d+\s*\n([\s\S]{20,400}?)(?:\n\S|\Z)", re.S)
# the signature may be empty or absent (alg "none"; detect-secrets reads those too): then the
# payload must decode to a JSON object as well
JWT = re.compile(_B + r"(eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]{8,}|\.?(?![A-Za-z0-9_\-])))")
URL_CRED = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://([^\s:/@'\"<>]{1,64}|[\w.+\-]{1,64}@[\w\-]+(?:\.[\w\-]+)+):"
                      r"([^\s/@'\"<>]{2,128})@[\w.\-]+")
# user:pass@host without a scheme (mysql -u admin:pw@db.internal, proxy settings): not an e-mail
BARE_CRED = re.compile(r"(?<![\w.%/:@\-])([A-Za-z0-9._%\-]{1,64}):([^\s:/@'\"<>`]{6,128})@"
                       r"(?:[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+|localhost)(?![\w\-])")
NOT_A_USER = frozenset({"mailto", "email", "e-mail", "mail", "re", "fw", "fwd", "to", "from", "cc", "bcc", "contact",
                        "reply-to", "sender", "author", "maintainer", "owner", "by", "at", "user", "login", "id"})
# SQL: CREATE/ALTER USER … IDENTIFIED BY pw; libcurl CURLOPT_(PROXY)USERPWD "user:pw"; curl --oauth2-bearer
SQL_PW = re.compile(r"(?i)\b(?:create|alter)\s+(?:user|role|login)\b[^;\n]{0,120}?\bidentified\s+(?:with\s+['\"`]?\w+['\"`]?\s+)?by\s+(?:password\s+)?"
                    r"(['\"]?)([^\s'\";]{4,128})\1"
                    r"|\b(?:create|alter)\s+(?:user|role)\b[^;\n]{0,120}?\bpassword\s+(['\"]?)(?!(?:null|expire|lock|unlock|reuse|history|require|default|valid|verify)\b)([^\s'\";]{4,128})\3")
CURLOPT_PW = re.compile(r"CURLOPT_(?:PROXY)?USERPWD\s*,\s*\"[^\":\s]*:([^\"\s]{4,128})\"|CURLOPT_(?:PROXY)?PASSWORD\s*,\s*\"([^\"\s]{4,128})\"")
OAUTH2_BEARER = re.compile(r"--oauth2-bearer[ =]+(['\"]?)([A-Za-z0-9+/=_\-.~]{8,512})\1")
# .npmrc / .yarnrc: _authToken (a UUID for legacy npm tokens, which the generic rules pass over) and _auth
NPM_AUTH = re.compile(r"(?im)(?:^|[\s:])_auth(?:Token)?\s*[=:]\s*[\"']?([A-Za-z0-9+/=_\-.]{16,200})[\"']?\s*$")
CONN_STR = re.compile(r"(?i)(?:^|[;\s\"'?&])(?:password|pwd)\s*=\s*([^;'\"\s&]{3,})")
# curl -u user:pass, also 'user:pass' quoted as one word and after "\" line continuations
CURL = re.compile(r"\bcurl\b(?:[^\n]|\\\r?\n){0,400}?(?:\s-u|\s--user)\s+(?:(['\"])([^\s'\":<>]+):([^\s'\"<>]{2,})\1"
                  r"|(['\"]?)([^\s'\":<>]+)\4:(['\"]?)([^\s'\"<>]{2,})\6)")

# password, passwd, pswd, paswrd…; passphrase; secret(e); token; and detect-secrets' other key names
_KEYWORDS = (r"(?:pa?s{1,2}w(?:o?r)?d|pwd|pw(?<![a-z]pw)(?![a-z])|pass(?:[_\-.]?phrase|(?=[\s\"'_\-:=]))|secrete?|token|"
             r"api[_\-.]?key|access[_\-.]?key|auth[_\-.]?key|priv(?:ate)?[_\-.]?key|client[_\-.]?(?:secret|key)|credentials?|"
             r"db[_\-.]?(?:pass|key)|database[_\-.]?(?:pass|key)|account[_\-.]?key|service[_\-.]?key|key[_\-.]?pass|preshared[_\-.]?key|"
             r"contrase[ñn]a|authorization)")
_ZH_KEYS = r"(?:密码|口令|密钥|秘钥|令牌|私钥|授权码|访问密钥|安全密钥|密碼|金鑰|密鑰|權杖)"
ASSIGN = re.compile(
    r"(?P<key>[\w.\-\[\]]{0,64}" + _KEYWORDS + r"[\w.\-]{0,64}|[\w]{0,8}" + _ZH_KEYS + r"[\w]{0,8})(?P<kq>[\"'`]?\]?)(?:\[\])?\s*"
    r"(?P<op>:=|=>|->|===|!==|==|!=|=|:|：|\s(?=[@]?[\"'`]))\s*@?"
    r"(?:(?P<q>\\?[\"'`])(?P<qv>[^\"'`\n]{1,200}?|(?:(?!(?P=q))[^\n]){1,200}?)(?P=q)"
    r"|(?P<uv>[^\s,;\"'`\n()](?:[^\s,;\"'`\n()]|,(?=[^\s,;\"'`\n()])){0,199}(?:[ ][^\s,;\"'`\n]+){0,6}))",
    re.I)
# every match of ASSIGN / ASSIGN_ZH holds one of these (its operator, or the quote the
# white-space operator looks ahead to) between the key's start and the line's end: a key start
# with none of them after it on its line is not tried (a long line of keywords, "密码口令密码口令…",
# tried each start's backtracking "[\w]{0,8}(?:密码|…)" for nothing); None: every start is tried
_ASSIGN_OPS: tuple[str, ...] | None = ("=", ":", "\uff1a", ">", "\"", "'", "`")
# the same for a key around a Chinese keyword hit (tried first there: CJK letters are \w, and the
# English branch would walk 64 of them back and forth at every hit)
ASSIGN_ZH = re.compile(ASSIGN.pattern.replace(
    r"(?P<key>[\w.\-\[\]]{0,64}" + _KEYWORDS + r"[\w.\-]{0,64}|[\w]{0,8}" + _ZH_KEYS + r"[\w]{0,8})",
    r"(?P<key>[\w]{0,8}" + _ZH_KEYS + r"[\w]{0,8})"), re.I)
assert ASSIGN_ZH.pattern != ASSIGN.pattern
KEYWORD_FIND = re.compile(_KEYWORDS + "|" + _ZH_KEYS, re.I)
# on text.lower(): no IGNORECASE, much faster; branches grouped by first character (same matches)
KEYWORD_FIND_LOWER = re.compile(by_first_char(_KEYWORDS + "|" + _ZH_KEYS))
REVERSE_ASSIGN = re.compile(r"([\"'`])(?P<qv>[^\"'`\n]{4,200})\1\s*(?:===|!==|==|!=)\s*[\w.]*" + _KEYWORDS, re.I)
# compound key names ending in "key" (ibm_iam_key, cloudant-key, artif-key): bare "key" is too
# common in prose and code, so the value must look machine-generated (≥ 16 token characters)
KEY_SUFFIX_ASSIGN = re.compile(
    r"(?i)(?<![\w.\-])(?P<key>[a-z][\w.\-]*[_\-.]key)(?P<kq>[\"'`]?)\s*(?::=|=>|=|:)\s*(?P<q>[\"'`]?)"
    r"(?P<v>[A-Za-z0-9_\-+/=.~]{16,200})(?P=q)(?![A-Za-z0-9_\-+/=.~])")
# what every KEY_SUFFIX_ASSIGN match holds, lower-cased ("_KEY = " → "_key = "): a quick test first (the
# pattern, case-insensitive and opened by a look-behind, is tried at every position of the text)
_KEY_SUFFIX_GATE = re.compile(r"[_\-.]key[\"'`]?\s*(?::=|=>|=|:)")
# password.assign("…"), set_password("…"), setPassword("…"): a literal handed to a secret-named
# call (not SQL's upper-case PASSWORD('…') hash function, nor get_/find_/load_… look-ups by name)
# (tried right after each keyword hit that a "(" follows: the key ends with the keyword)
CALL_ARGS = re.compile(r"(?:\.assign)?\(\s*(?P<q>[\"'])(?P<v>[^\"'\n]{1,200})(?P=q)\s*[,)]")
_LOOKUP_CALL = re.compile(r"(?i)^(?:get|find|load|read|fetch|lookup|query|has|is|delete|remove|del|validate|prompt|ask|input)")
# XML / .NET config: <password>…</password>, <add key="Password" value="…"/>, <property name="…" value="…"/>
XML_ELEMENT = re.compile(r"<(?P<key>[\w:.\-]{0,40}" + _KEYWORDS + r"[\w:.\-]{0,40})(?:\s[^<>]{0,200})?>(?P<v>[^<>\n]{1,200})</(?P=key)\s*>", re.I)
XML_ATTR = re.compile(r"(?i)\b(?:key|name)\s*=\s*(?P<kq>[\"'])(?P<key>[^\"'<>\n]{0,40}" + _KEYWORDS + r"[^\"'<>\n]{0,40})(?P=kq)"
                      r"\s+value\s*=\s*(?P<q>[\"'])(?P<v>[^\"'<>\n]{1,200})(?P=q)")
# command-line options: --password Tr0ub4dor3x (space-separated; --password=… is an assignment),
# mysql -pTr0ub4dor3x, .netrc "machine host login user password …"
CLI_OPTION = re.compile(r"(?i)-(?:(?<=^-)|(?<=[^\w-]-))-?(?P<key>[\w-]{0,30}(?:password|passwd|pass|passphrase|token|secret|api-?key|access-key)[\w-]{0,20})[ \t]+"
                        r"(?P<q>[\"']?)(?P<v>[^\s\"'<>|;&]{6,200})(?P=q)(?![^\s])")
MYSQL_P = re.compile(r"\bmysql(?:dump|admin|import|sh|check)?\b[^\n]{0,200}?\s-p(?P<q>[\"']?)(?P<v>[^\s\"'<>|;&]{4,128})(?P=q)(?!\S)")
PSEXEC_P = re.compile(r"(?i)\bpsexec(?:64)?(?:\.exe)?\b[^\n]{0,200}?\s-p\s+(?P<q>[\"']?)(?P<v>[^\s\"'<>|;&]{4,128})(?P=q)(?!\S)")
NETRC = re.compile(r"(?i)\bmachine\s+\S+\s+(?:login\s+\S+\s+)?password\s+(?P<v>\S{4,128})")
# credentials handed positionally to a known authentication API: (call name, index of the
# password among the arguments). DirectoryEntry(path, user, password), NetworkCredential(user,
# password[, domain]), PasswordAuthentication(user, "pw".toCharArray()), HTTPBasicAuth(user, pw),
# smtplib/ftplib/imaplib .login(user, pw), ldap simple_bind(_s)(dn, pw), requests auth=(user, pw)
CRED_CALLS = {"directoryentry": 2, "networkcredential": 1, "passwordauthentication": 1, "usernamepasswordcredentials": 1,
              "httpbasicauth": 1, "httpdigestauth": 1, "basicauth": 1, "login": 1, "simple_bind": 1, "simple_bind_s": 1,
              "auth": 1, "basic_auth": 1, "http_auth": 1}
CRED_CALL = re.compile(r"(?i)(?:\bnew\s+(?:[\w.]+\.)?|(?<![\w$])(?:[\w.]+\.)?)(?P<fn>DirectoryEntry|NetworkCredential|PasswordAuthentication"
                       r"|UsernamePasswordCredentials|HTTPBasicAuth|HTTPDigestAuth|BasicAuth)\s*\(|(?<=\.)(?P<fn2>login|simple_bind(?:_s)?)\s*\("
                       r"|(?<![\w$])(?P<fn3>auth|basic_auth|http_auth)\s*=\s*[(\[]")
_ARG = re.compile(r"\s*(?:(?P<q>[\"'])(?P<s>[^\"'\n]{0,200})(?P=q)(?:\.toCharArray\(\))?|[^,()\[\]\n\"']+(?:\([^()\n]*\))?)\s*(?P<sep>,|[)\]])")
# "the default password is 'blooberry'", "the password for user 'postgres' is 'admin'": a quoted
# value after "password … is / was / to" in prose (the quotes are the evidence; bare words are not read)
PROSE_PW = re.compile(r"(?i)\bpass(?:word|phrase)\b[^\n.!?;:=]{0,60}?\s(?:is|was|to|remains)\s+(?:set\s+to\s+|still\s+|now\s+)?"
                      r"(?P<q>[\"'`“‘])(?P<v>[^\"'`\s“”‘’]{4,64})[\"'`”’]")
# personal access tokens under a "pat" name (ado_pat, GITHUB_PAT, AZURE_DEVOPS_EXT_PAT): "pat" is too
# short for the keyword list, so the value must look generated (token characters, ≥ 20, digits and letters)
PAT_ASSIGN = re.compile(r"(?i)(?<![A-Za-z])pat[\"'`]?\]?[ \t]*(?::=|=>|=|:)[ \t]*(?P<q>[\"'`]?)"
                        r"(?P<v>[A-Za-z0-9_\-]{20,200})(?P=q)(?![A-Za-z0-9_\-])")
# docker / podman / helm registry login -p <password>
REGISTRY_LOGIN_P = re.compile(r"\b(?:docker|podman|buildah|skopeo|nerdctl|oras|helm\s+registry)\s+login\b[^\n]{0,200}?\s-p[ \t]+"
                              r"(?P<q>[\"']?)(?P<v>[^\s\"'<>|;&]{4,128})(?P=q)(?!\S)")
# MySQL 4.1+ password hashes (mysql_native_password: "*" + 40 upper-case hex), after AS / PASSWORD
MYSQL_HASH = re.compile(r"(?i)\b(?:as|password)\s*\(?\s*['\"](\*[0-9A-F]{40})['\"]")
# C / RPM macros: #define PASSWORD "v", %define token v (the macro name holds the keyword)
DEFINE = re.compile(r"(?<![\w#%])[#%]define[ \t]+(?P<key>(?<![\w])[\w]{0,40}" + _KEYWORDS + r"[\w]{0,40})[ \t]+(?P<q>\\?[\"']?)(?P<v>[^\s\"'\\]{4,200})(?P=q)(?=[ \t]*(?:$|\n|[\"']))", re.I)
# an environment look-up with a literal fallback: getenv("K", "v"), os.environ.get("K", "v"), … or "v"
ENV_DEFAULT = re.compile(r"(?i)(?<![\w.])(?P<key>[\w.]{0,40}" + _KEYWORDS + r"[\w]{0,40})\s*(?::=|=)\s*(?:os\.)?(?:environ\.get|getenv|env\.get|process\.env\.\w+\s*\|\||System\.getenv|ENV\.fetch)"
                         r"\s*\(?\s*[\"'][^\"'\n]{1,60}[\"']\s*(?:,\s*|\)\s*(?:or|\|\||\?\?)\s*)(?P<q>[\"'])(?P<v>[^\"'\s]{4,200})(?P=q)")
# PowerShell: ConvertTo-SecureString "plain" -AsPlainText -Force (the plain-text password on the line)
SECURESTRING = re.compile(r"(?i)ConvertTo-SecureString\s+(?:-String\s+)?(?:(?:-AsPlainText|-Force)\s+)*(?P<q>\\?[\"']?)(?P<v>[^\s\"'\\|;)]{4,200})(?P=q)(?=[\s)|;\"']|$)")
# crypt(3) password hashes: md5-crypt, bcrypt, sha256/sha512-crypt (crackable offline: reported medium)
PASSWORD_HASH = re.compile(r"(?<![\w$])(\$1\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}|\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}"
                           r"|\$[56]\$(?:rounds=\d{1,9}\$)?[./A-Za-z0-9]{1,16}\$(?:[./A-Za-z0-9]{86}|[./A-Za-z0-9]{43})"
                           # Apache apr1 (md5), Cisco type 8 (PBKDF2) / 9 (scrypt), scrypt $7$, yescrypt $y$,
                           # Argon2 PHC strings (the same families Nosey Parker's pwhash rules and hashcat name)
                           r"|\$apr1\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}|\$[89]\$[./A-Za-z0-9]{14}\$[./A-Za-z0-9]{43}"
                           r"|\$7\$[./A-Za-z0-9]{11,}\$[./A-Za-z0-9]{43}|\$y\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{1,86}\$[./A-Za-z0-9]{43}"
                           r"|\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{11,64}\$[A-Za-z0-9+/]{16,128})(?![\w./])")
# "Secret Key: AIhq5Xyb1Gga9Q3", "API token = …": a two-word label in prose; the value must look generated
LABEL_PAIR = re.compile(r"(?i)(?<![\w-])(?P<key>(?:secret|api|access|auth|authentication|encryption|signing|client|private|master|root)[ ](?:key|token|secret|password)"
                        r"|pass[ ]?phrase)[ \t]*[:=][ \t]*(?P<v>[A-Za-z0-9+/=_\-.~!@#%^&*]{8,200})(?![^\s,;])")
# LABEL_FIND and HEX_TOKEN open with the class of their first character and test the character before it
# in a look-behind after it (``re`` skips other characters in C; a pattern opening with a look-behind is
# tried at every position); the same matches as (tests/test_scan_fastpaths.py compares them)
#   (?<![\w-])(?:(?:secret|api|access|auth|authentication|encryption|signing|client|private|master|root) (?:key|token|secret|password)|pass ?phrase)
#   (?<![A-Za-z0-9_\-/.])([0-9a-fA-F]{32,64})(?![A-Za-z0-9_\-/])
LABEL_FIND = re.compile(r"[acemprs](?<![\w-].)(?:(?:(?<=s)(?:ecret|igning)|(?<=a)(?:pi|ccess|uth|uthentication)|(?<=e)ncryption"
                        r"|(?<=c)lient|(?<=p)rivate|(?<=m)aster|(?<=r)oot) (?:key|token|secret|password)|(?<=p)ass ?phrase)")
# a PEM private key written as base64 (Kubernetes secrets, JSON configs): "LS0tLS1CRUdJTi" is "-----BEGIN"
B64_PEM = re.compile(r"(?<![A-Za-z0-9+/])(LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2})")
_WORD_PASSWORDS = frozenset({"password", "passwd", "secret", "pass", "pwd"})  # user:secret@host — a password all the same
ZH_ASSIGN = re.compile(_ZH_KEYS + r"(?:\s*(?:[:：=]|是|为|為)\s*)(?P<uv>[!-~]{4,128})")

ENTROPY_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-/+.=])([A-Za-z0-9_\-+/]{20,100}={0,2})(?![A-Za-z0-9_\-/+=])")
HEX_TOKEN = re.compile(r"([0-9a-fA-F](?<![A-Za-z0-9_\-/.].)[0-9a-fA-F]{31,63})(?![A-Za-z0-9_\-/])")
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
    r"(?i)^(?:<[^>]*>|\{\{.*\}\}|\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*|%\(?\w*\)?s|%[A-Z_]+%|@[A-Za-z_.]+@|\[[A-Z _-]+\]|"
    r"\*+|x{4,}|(.)\1{5,}|null|none|nil|true|false|undefined|changeme|change_me|password|passwd|secret|"
    r"empty|required|optional|string|str|int|bool|value|\.\.\.|…|todo|tbd|n/a)$")
PLACEHOLDER_SUB = re.compile(r"(?i)x{5,}|(.)\1{7,}|\*{4,}|your[_\- ]?|<[a-z_\- ]+>|example|sample|dummy|fake|placeholder|insert[_\- ]|"
                             r"replace[_\- ]?me|redacted|changeme|\.\.\.\.|0{8,}|here\b")
CODE_REF = re.compile(r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?:\(\))?$|^[A-Za-z_]\w*\(.*\)?$|^[A-Z_][A-Z0-9_]{2,}$|"
                      r"^(?:os\.environ|process\.env|getenv|env)\b")


# key names that detect-secrets' keyword plugin flags whatever the value's length (its DENYLIST,
# plus pass/pw): password-like. Other secret names (token, access_key, credentials) take gitleaks'
# generic-api-key floor on the value instead.
_DS_KEY = re.compile(r"(?i)api[_\-.]?key|apikey|auth[_\-.]?key|service[_\-.]?key|account[_\-.]?key|db[_\-.]?key|database[_\-.]?key|"
                     r"priv(?:ate)?[_\-.]?key|client[_\-.]?key|db[_\-.]?pass|database[_\-.]?pass|key[_\-.]?pass|passw(?:or)?d|pa?s{1,2}w(?:o?r)?d|pwd|"
                     r"secret|contrase|pass(?![a-z])|pass[_\-.]?phrase|pw(?![a-z])|authorization")
_ZH_KEY = re.compile(_ZH_KEYS)
_YAML_TAG = re.compile(r"(?i)^!(?:vault|ref|sub|secret|env|getatt|join|findinmap|importvalue|select|split|base64|"
                       r"include|reference|unsafe|encrypted)\b")
_REL_PATH = re.compile(r"^(?:\.{1,2}/|~/|/(?:bin|etc|home|opt|tmp|usr|var|run)/)[\w./\-]+$")
_SSH_PUBLIC = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s+$")
# values that name or build a secret rather than hold one: $VAR… (detect-secrets' dollar-prefix
# filter), paths and routes of two or more segments, ARNs, CSS selectors, string concatenation
_REFERENCE_VALUE = re.compile(r"^(?:\\?\$|#\{|arn:|[\w.]+[\[(]$|[#.][A-Za-z][\w\-]*$|\+|.*\+\s*$|\.\s*\$|ENC\(|AQICAH|Ag[A-D][A-Za-z0-9+/]{150}"
                              # a PowerShell cmdlet call: $pw = ConvertTo-SecureString $plain …, Read-Host …
                              r"|(?:Get|Set|New|Read|Import|Export|Invoke|Select|ConvertTo|ConvertFrom|Out)-[A-Z][A-Za-z]+(?:\s|$))")
# a regular expression describing the shape ([a-z0-9]{6}, \d+, [A-Za-z0-9_-]): documentation of a format
_REGEX_VALUE = re.compile(r"\[(?:\^)?[A-Za-z0-9]-[A-Za-z0-9][^\]]*\](?:[{*+?]|$)|\\[dws][+*{]")
_PATHISH = re.compile(r"^/?[\w\-.@]+(?:/[\w\-.@]+)+(?:#[\w\-]*)?/?$")


def _reference(val: str) -> bool:
    """A value that names or builds a secret: see _REFERENCE_VALUE; or a path / route whose
    segments are short (a base64 secret with a "/" has a long one)."""
    if _REFERENCE_VALUE.match(val) or _REGEX_VALUE.search(val):
        return True
    if not _PATHISH.match(val) or max(len(x) for x in val.strip("/").split("/")) > 24:
        return False
    core = val.replace("/", "")  # VnpmUG…/…: a base64 secret holding "/" has mixed-case random segments
    return not (len(core) >= 20 and re.search(r"[a-z]", core) and re.search(r"[A-Z]", core) and re.search(r"\d", core)
                and shannon(core) >= 4.0 and not _wordy(core) and "." not in val)


# key names under which a UUID is a credential (and, within them, names of identifiers)
_UUID_SECRET_KEY = re.compile(r"(?i)token|secret|passw|pwd|api[_\-.]?key|auth[_\-.]?key|access[_\-.]?key")
_UUID_ID_KEY = re.compile(r"(?i)(?:^|[_\-.])(?:id|uuid|guid)(?:$|[_\-.\"'])|(?:token|key|secret)[_\-.]?(?:id|name|type|uuid)\b|[a-z]Id\b")
_HEX_LITERAL = re.compile(r"(?i)^0x[0-9a-f]+$")  # a number (mask, flag), not a secret
_PROSE = re.compile(r"^[A-Za-z][a-z]*(?: [a-z]+[,.]?){2,}$")  # "This is a query parameter": a sentence
_NEGATED_KEY = re.compile(r"(?i)^(?:not|no|non|is|has|use|enable|disable)[_\-]")
_AUTH_SCHEMES = ("basic", "bearer", "token", "digest", "negotiate", "apikey", "ssws", "ntlm")
_SLUG = re.compile(r"[a-z]{3,}(?:[\-_][a-z]{3,})+")


def _placeholder(v: str) -> bool:
    v = v.strip()
    return bool(PLACEHOLDER.match(v) or PLACEHOLDER_SUB.search(v))


_ALPHA = "abcdefghijklmnopqrstuvwxyz"


def _alpha_run(v: str, n: int = 6) -> bool:
    """True when ``v`` contains ``n`` consecutive letters of the alphabet (``mnopqr``): a typed dummy."""
    low = v.lower()
    return any(low[i:i + n] in _ALPHA for i in range(len(low) - n + 1) if low[i].isalpha())


_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_RUN = re.compile(r"(.)\1{7,}")
_WORDY = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])")


def _wordy(v: str) -> bool:
    """CamelCase / snake_case word concatenations (CSS classes, identifiers), not random tokens."""
    # a word is a letter run with a vowel that a digit does not touch: in a generated token
    # (rtjjpu7wkpum3…) letter runs are cut by digits; in an identifier by case, "_", "-" or "."
    covered = sum(len(m.group()) for m in _WORDY.finditer(v) if re.search(r"[aeiouy]", m.group(), re.I)
                  and not v[m.start() - 1:m.start()].isdigit() and not v[m.end():m.end() + 1].isdigit())
    return covered >= 0.6 * len(v)


def _typed_interleaved(v: str) -> bool:
    """Letters (or digits) that read as the alphabet or a count once the other class is taken out,
    forwards or backwards (a1B2c3D4…, X9y8Z7w6…): typed by a person, not generated."""
    letters = re.sub(r"[^a-z]", "", v.lower())
    digits = re.sub(r"\D", "", v)
    rev = _ALPHA[::-1]
    return (any(letters[i:i + 8] in _ALPHA or letters[i:i + 8] in rev for i in range(len(letters) - 7))
            or any(r in digits for r in ("12345678", "98765432")))


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


def _b64json(part: str):
    try:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None


def _jwt_ok(tok: str) -> bool:
    parts = tok.split(".")
    data = _b64json(parts[0])
    if not (isinstance(data, dict) and ("alg" in data or "typ" in data)):
        return False
    return len(parts) > 2 and len(parts[2]) >= 8 or isinstance(_b64json(parts[1]), dict)


def _token_value_ok(key: str, val: str) -> bool:
    """Password-like key names (detect-secrets' list, Chinese keys) take any value; other secret
    names (token, access_key, credentials) need gitleaks' generic-api-key floor: at least 10
    characters with entropy ≥ 3.5 (its token charset is not imposed: it cost real credentials
    with other characters on the independent sets)."""
    if _DS_KEY.search(key) or _ZH_KEY.search(key):
        return True
    return len(val) >= 10 and shannon(val) >= 3.5


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


def _on_lines(pat: re.Pattern, text: str, needles: tuple[str, ...], hay: str | None = None, memo: dict | None = None):
    """Matches of a single-line pattern, searched only when one of ``needles`` occurs in ``hay``
    (``text`` or a same-length view of it) and, on long texts, only on the lines holding one.
    ``memo``: a per-text dict remembering which needles occur (many rules share needles)."""
    hay = text if hay is None else hay
    if memo is None:
        if not any(x in hay for x in needles):
            return
    else:
        found = False
        for x in needles:
            k = (x, hay is text)
            if k not in memo:
                memo[k] = x in hay
            if memo[k]:
                found = True
                break
        if not found:
            return
    if len(text) <= _WHOLE_TEXT_MAX:
        yield from pat.finditer(text)
        return
    spans = set()
    for x in needles:
        if memo is not None and not memo.get((x, hay is text), True):
            continue  # known absent: no search of the whole text for it
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
    memo: dict = {}  # needle -> occurs, shared by the single-line rules
    index = LineIndex(text)
    out: list[Finding] = []
    # spans already reported, pairwise disjoint (a span is taken only if it overlaps none), kept
    # sorted by start: an overlap test looks at two neighbours (bisect), not at every span (a line of
    # 36,000 `password=x` made that quadratic)
    taken_starts: list[int] = []
    taken_ends: list[int] = []

    def overlaps(s: int, e: int) -> bool:
        i = bisect.bisect_right(taken_starts, s)
        return (i > 0 and taken_ends[i - 1] > s) or (i < len(taken_starts) and taken_starts[i] < e)

    def take(s: int, e: int) -> None:
        i = bisect.bisect_right(taken_starts, s)
        taken_starts.insert(i, s)
        taken_ends.insert(i, e)

    def add(rule: str, sev: str, s: int, e: int, msg: str) -> None:
        if e <= s or overlaps(s, e):
            return
        if text[s:e] in PUBLIC_VALUES:
            take(s, e)
            return  # public by value (gitleaks allowlist data): not a leak
        if rule in ("secret.password-assignment", "secret.high-entropy") and any(
                s < re_ and rs < e for rs, re_ in rejected):
            return  # the provider rule that owns this shape judged it a dummy
        f = make_finding(text, index, opts, kind=KIND, rule=rule, severity=sev, start=s, end=e, message=msg,
                         secret=True, redact=True)
        take(s, e)
        if f is not None:
            out.append(f)

    gated = PRIVATE_KEY.finditer(text) if ("PRIVATE KEY" in text or "PuTTY-User-Key" in text) else ()
    for m in gated:
        body = m.group(1) if m.group(1) is not None else (m.group(2) or "")
        if len(re.sub(r"\s|-----.*?-----|^[\w-]+:.*$", "", body, flags=re.M)) >= 16:
            add("secret.private-key", "high", m.start(), m.end(), "private key block")
    for m in _on_lines(B64_PEM, text, ("LS0tLS1CRUdJTi",), memo=memo):
        blob = m.group(1)
        try:
            head = base64.b64decode(blob[:len(blob) // 4 * 4][:200] + "=" * 0).decode("ascii", "replace")
        except ValueError:
            continue
        if "PRIVATE KEY" in head:
            add("secret.private-key", "high", m.start(1), m.end(1), "private key block (base64-encoded PEM)")
    rejected: list[tuple[int, int]] = []  # provider-shaped values judged to be dummies
    present = _present_gates(text)
    memo.update(zip(_EXTRA_KEYS, map(present.__contains__, _EXTRA_LIST)))
    if _DISCORD_GATE.search(text):
        present.add(".x.")
    # the rules some present gate opens (or that have none), in PROVIDERS order
    chosen = set(_UNGATED_PROVIDERS)
    for x in present:
        chosen.update(_GATED_PROVIDERS.get(x, ()))
    long_text = len(text) > _WHOLE_TEXT_MAX
    for i in sorted(chosen):
        rule, sev, pat, g = PROVIDERS[i]
        gates = PROVIDER_GATES.get(rule)
        for m in _provider_matches(pat, text, tuple(x for x in gates if x in present) if long_text and gates else None):
            tok = m.group(g)
            if rule == "secret.ntlm-auth-message":  # zero bytes of the message are "AAAA" runs: no placeholder test
                if len(set(tok[12:])) < 16 or _alpha_run(tok):
                    rejected.append((m.start(g), m.end(g)))
                    continue
            elif _placeholder(tok[4:]) or "EXAMPLE" in tok or len(set(tok[-16:])) <= 3:
                rejected.append((m.start(g), m.end(g)))
                continue
            if rule == "secret.slack-token":
                nums = re.findall(r"-(\d+)(?=-)", tok)
                if nums and all(_sequential(x) and len(x) >= 3 for x in nums):
                    rejected.append((m.start(g), m.end(g)))
                    continue  # xoxp-1234-1234-1234-…: dummy ids
            if rule in _LOOSE_CHARSET and not _provider_ok(
                    tok.split(":")[-1] if rule == "secret.telegram-bot-token" else tok[:32] if rule == "secret.mailchimp-key"
                    else tok[:36] if rule == "secret.newrelic-license-key" else tok[3:] if rule == "secret.nuget-api-key"
                    else tok.split(".", 1)[1] if rule == "secret.vault-token" else tok.split("_")[-1] if rule in _UNDERSCORE_PREFIXED
                    else tok[9:] if rule == "secret.docker-swarm-token" else tok[5:] if rule == "secret.newrelic-key"
                    else tok.replace(".", "") if rule == "secret.kubernetes-bootstrap-token"
                    else tok if rule == "secret.thingsboard-token" else tok[4:] if rule == "secret.mailgun-key" else tok[2:]):
                if rule in _DUMMY_OWNED:
                    rejected.append((m.start(g), m.end(g)))  # a typed dummy of this shape (abcdef.0123456789abcdef)
                continue
            add(rule, sev, m.start(g), m.end(g), rule.split(".", 1)[1].replace("-", " "))
    # U+0130 is the one character whose lower case is two characters long
    low = (text.replace("\u0130", "I") if "\u0130" in text else text).lower()
    for rule, pat, gates in DS_SHAPES:
        if not any(x in (low if rule == "secret.slack-webhook" else text) for x in gates):
            continue
        for m in _provider_matches(pat, text, gates if rule != "secret.slack-webhook" else None):
            tok = m.group(1)
            body = _template_body(rule, tok)
            if len(set(body)) == 1 and body[0].isalpha() and body[0] != "X":
                add("secret.provider-template", "low", m.start(1), m.end(1),
                    rule.split(".", 1)[1].replace("-", " ") + " shape filled with one repeated letter (a template)")
            elif (rule == "secret.artifactory-key" and re.search(r"\d", body) and re.search(r"[A-Za-z]", body)
                  and len(set(body)) >= 6 and not _periodic(body) and not _placeholder(body)):
                add(rule, "medium", m.start(1), m.end(1), "artifactory credential (legacy shape)")
    key_gates = not any(c in low for c in _FOLDS_TO_ASCII)
    for rule, pat, needles, key in DS_KEYED:
        if key is not None and key_gates and key.search(low) is None:
            continue  # no key name of this shape in the text: the pattern cannot match
        for m in _on_lines(pat, text, needles, low, memo=memo):
            val = m.group(1)
            if not _sequential(val) and len(set(val)) > 4:
                add(rule, "high", m.start(1), m.end(1), rule.split(".", 1)[1].replace("-", " ") + " (keyed shape)")
    for pat, needles, gs, what in ((SQL_PW, ("identified", "IDENTIFIED", "Identified", "password", "PASSWORD", "Password"), (2, 4),
                                    "password in a SQL user statement"),
                                   (CURLOPT_PW, ("CURLOPT_",), (1, 2), "credentials in a libcurl option"),
                                   (OAUTH2_BEARER, ("--oauth2-bearer",), (2,), "bearer token on a curl command line")):
        for m in _on_lines(pat, text, needles, memo=memo):
            g = next(i for i in gs if m.group(i) is not None)
            val = m.group(g)
            if _value_ok(val, quoted=True) and not val.startswith(("$", "%", "{", "<", ":")):
                add("secret.password-assignment" if pat is SQL_PW else "secret.curl-credentials",
                    "high", m.start(g), m.end(g), what)
    for m in _on_lines(NPM_AUTH, text, ("_auth",), memo=memo):
        val = m.group(1)
        if not _placeholder(val) and not _sequential(val) and not _periodic(val) and re.search(r"\d", val):
            add("secret.npm-auth-token", "high", m.start(1), m.end(1), "npm registry credential (_authToken/_auth)")
    for m in _on_lines(JWT, text, ("eyJ",), memo=memo):
        if _jwt_ok(m.group(1)):
            add("secret.jwt", "high", m.start(1), m.end(1), "JSON Web Token")
    for m in _on_lines(URL_CRED, text, ("://",), memo=memo):
        pw = m.group(2)
        if not _placeholder(pw) or pw.lower() in _WORD_PASSWORDS:
            if not (pw.startswith("$") or pw.startswith("%") or pw.startswith("{{") or pw.startswith("<")):
                add("secret.url-credentials", "high", m.start(2), m.end(2), "credentials in URL")
    for m in _on_lines(BARE_CRED, text, ("@",), memo=memo):
        user, pw = m.group(1), m.group(2)
        if user.lower() in NOT_A_USER or not re.search(r"[A-Za-z]", user) or not _value_ok(pw, quoted=True):
            continue
        if pw.startswith(("$", "%", "{{", "<")):
            continue
        add("secret.url-credentials", "high", m.start(2), m.end(2), "credentials before a host name (user:password@host)")
    for m in _on_lines(CONN_STR, text, ("pwd", "password"), low, memo=memo):
        val = m.group(1)
        if "," in val and re.match(r"[A-Za-z_][\w\-]+(?:\.[\w\-]+)*\s*[=:]", val.split(",", 1)[1]):
            val = val.split(",", 1)[0]  # password=abc,user=bob: a list of settings
        if (_value_ok(val, quoted=False) or val.lower() in _WORD_PASSWORDS) and not val.startswith(("$", "(", "#{", "{", "%", "<")):
            add("secret.connection-string", "high", m.start(1), m.start(1) + len(val), "password in connection string")
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
        # a run the format itself holds (Twitter bearer / Dropbox long-lived tokens: AAAAAAAAAA…) is
        # not a placeholder unless it fills a large part of the token
        bare = _RUN.sub(lambda r: r.group() if len(r.group()) >= 0.4 * len(tok) else "", tok)
        if _wordy(tok[6:]) or _periodic(tok) or _placeholder(bare) or _placeholder(bare[4:]) or "EXAMPLE" in tok or len(set(tok[-16:])) <= 3 or _alpha_run(tok, 8):
            continue  # a dummy of this shape; the generic rules may still judge the line
        add("secret." + rid, "high", gs, ge, rid.replace("-", " ") + " (gitleaks rule)")
    kw_iter = KEYWORD_FIND_LOWER.finditer(low) if len(low) == len(text) else KEYWORD_FIND.finditer(text)
    # ASSIGN is tried only where a key containing a keyword starts (the start of the identifier
    # around each keyword hit), not at every position of the line: linear in the text size
    starts: list[tuple[int, int, bool]] = []  # (key start, line end, Chinese keyword)
    nl = -1  # the next line break after the current keyword (one search per line, not per hit)
    calls: list[tuple[int, int]] = []  # (key start, keyword end) where "(" follows a keyword
    for km in kw_iter:
        ce = km.end()
        while ce < min(len(text), km.end() + 30) and text[ce] in _IDENT_CHARS:
            ce += 1  # secret_key(…), passwordHash(…): the identifier's end
        if text[ce:ce + 1] in ("(", ".") and "(" in text[ce:ce + 8]:
            cs = km.start()
            while cs > max(0, km.start() - 40) and (text[cs - 1].isalnum() or text[cs - 1] == "_"):
                cs -= 1
            calls.append((cs, ce))
        ks = km.start()
        # a key name is short: never walk back over a whole paragraph (CJK text has no spaces)
        floor = max(0, ks - (ZH_KEY_MAX if ks and ord(text[ks - 1]) >= 0x2E80 else KEY_MAX))
        while ks > floor and (text[ks - 1].isalnum() or text[ks - 1] in "_.-[]"):
            ks -= 1
        if starts and starts[-1][0] == ks:
            continue
        if nl < km.end():
            nl = text.find("\n", km.end())
            if nl < 0:
                nl = len(text)
        starts.append((ks, nl, ord(km.group()[0]) >= 0x2E80))

    def assign_matches():
        last = -1
        line_end, last_op = -1, len(text)
        for ks, le, zh in starts:
            if ks < last:
                continue
            if _ASSIGN_OPS is not None:
                if le != line_end:  # the last operator character of this line
                    line_end = le
                    ls = text.rfind("\n", 0, ks) + 1
                    last_op = max(text.rfind(c, ls, le) for c in _ASSIGN_OPS)
                if last_op < ks:
                    continue  # no operator after the key on its line: no assignment starts here
            m = (ASSIGN_ZH if zh else ASSIGN).match(text, ks, le)
            if m is None and zh:
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
        if quoted and any(c in val for c in "\"'`") and (
                " " in val or re.search(r"[\"'`]\$", val)):
            continue  # "can't be blank": prose holding the other quote; "'$VAR'": shell quoting around a variable
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
            if m.group("op").isspace() or m.group("op") in ("=>", "->"):
                continue  # 'password' => SOME_CONSTANT: an identifier (arrays quote their strings)
            if not _DS_KEY.search(key) and (_PROSE.match(val) or _PROSE.match(
                    text[start:text.find("\n", start) if "\n" in text[start:] else len(text)].strip())):
                continue  # Enter token : This is a query parameter — prose after a label (password-like keys
                # keep detect-secrets' reading: the rest of the line is the value)
            if "," in val:
                head, tail = val.split(",", 1)
                if re.match(r"[A-Za-z_][\w\-]+(?:\.[\w\-]+)*\s*[=:]", tail):
                    val = head  # password=abc,user=bob: a list of settings, not one value
            nxt_ch = text[m.end("uv"):m.end("uv") + 1]
            if val.endswith("[") or (nxt_ch in ("(", "[") and " " not in val):
                continue  # an indirect reference: request.headers["X-Secret"], Token(user)
            first = val.split(" ")[0]
            if len(val.split(" ")) > 1 and not re.search(r"[_\-.]", key) and not key.islower():
                val = first  # prose after a bare key: keep only the first token
            if not re.search(r"[A-Za-z0-9]", val[:1]) and not re.search(r"[A-Za-z]", val):
                continue
            if _SLUG.fullmatch(val):
                continue  # lower-case words joined by - or _ ("shorter-version"): an identifier
            if _YAML_TAG.match(val) or _REL_PATH.match(val):
                continue  # password: !vault |, token: !Ref Param; pass: ./scripts/pass.sh
            if val.split(" ")[0].lower() == re.split(r"[.\[]", key)[-1].lower().strip("\"'`]"):
                continue  # pass = pass + 1, token = token.strip(): the variable itself
        if UUID.match(val) and "-" in val and _UUID_SECRET_KEY.search(key) and not _UUID_ID_KEY.search(key):
            # a UUID under a token/secret/password name is the credential (Heroku, Postmark, Jenkins,
            # legacy npm tokens), not an identifier; typed ones (0000…, 1234…) stay out
            if not _placeholder(val) and not _periodic(val.replace("-", "")) and len(set(val)) >= 8:
                add("secret.password-assignment", "high", start, start + len(val), f"UUID-shaped credential assigned to {key[:30]}")
            continue
        if not _token_value_ok(key, val):
            continue  # token / access_key / credentials: gitleaks' generic floor
        if _reference(val) or _HEX_LITERAL.match(val):
            continue  # $VAR…, a path, a route, an ARN, a CSS selector, "+ concatenation +": not the value
        if _value_ok(val, quoted=quoted):
            sev = "high" if (quoted or len(val) >= 8) else "medium"
            add("secret.password-assignment", sev, start, start + len(val), f"value assigned to {key[:30]}")
    for m in (REVERSE_ASSIGN.finditer(text) if ("==" in text or "!=" in text) else ()):
        if _value_ok(m.group("qv"), quoted=True) and _token_value_ok(m.group(0)[m.end("qv") - m.start():], m.group("qv")):
            add("secret.password-assignment", "high", m.start("qv"), m.end("qv"), "compared with a secret variable")
    if "key" in low and _KEY_SUFFIX_GATE.search(low):
        for m in _on_lines(KEY_SUFFIX_ASSIGN, text, ("key",), low, memo=memo):
            val = m.group("v")
            if (_value_ok(val, quoted=bool(m.group("q"))) and not _NEGATED_KEY.match(m.group("key"))
                    and re.search(r"\d", val) and re.search(r"[A-Za-z]", val) and not HASH_CONTEXT.search(m.group("key"))):
                add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"value assigned to {m.group('key')[:30]}")
    for cs, ce in calls:
        m = CALL_ARGS.match(text, ce)
        if m is not None:
            key, val = text[cs:ce], m.group("v")
            if (_LOOKUP_CALL.match(key) or key.isupper() or not _token_value_ok(key, val) or _NOT_VALUE_KEY.search(key) or _NEGATED_KEY.match(key) or _SLUG.fullmatch(val)
                    or CODE_REF.match(val) or val.startswith(("$", "{", "<", "%")) or not _value_ok(val, quoted=True)):
                continue
            add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"literal passed to {key[:30]}")
    if "<" in text:
        for pat, needles in ((XML_ELEMENT, ("</",)), (XML_ATTR, ("value",))):
            for m in _on_lines(pat, text, needles, low if pat is XML_ATTR else None, memo=memo):
                key, val = m.group("key"), m.group("v").strip()
                if _NOT_VALUE_KEY.search(key.strip()) or _NEGATED_KEY.match(key) or val.startswith(("$", "{", "%", "#{")):
                    continue
                if _value_ok(val, quoted=True) and not (" " in val and pat is XML_ELEMENT) and _token_value_ok(key, val):
                    vs = m.start("v") + m.group("v").index(val)
                    add("secret.password-assignment", "high", vs, vs + len(val), f"value of {key[:30]}")
    for pat, needles, what in ((CLI_OPTION, ("-",), "command-line option"), (MYSQL_P, ("mysql",), "mysql -p option"), (PSEXEC_P, ("psexec", "PsExec", "PSEXEC"), "psexec -p option"),
                               (REGISTRY_LOGIN_P, (" login ",), "registry login -p option"),
                               (NETRC, ("machine",), ".netrc entry")):
        for m in _on_lines(pat, text, needles, memo=memo):
            val = m.group("v")
            if (pat is CLI_OPTION and UUID.match(val) and "-" in val and _UUID_SECRET_KEY.search(m.group("key"))
                    and not _UUID_ID_KEY.search(m.group("key")) and not _placeholder(val) and len(set(val)) >= 8):
                add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"UUID-shaped credential in a {what}")
                continue
            if val.startswith(("-", "$", "<", "{", "%", "/", "~", ".")) or not _value_ok(val, quoted=True):
                continue
            if pat is CLI_OPTION and (_NOT_VALUE_KEY.search(m.group("key")) or _NEGATED_KEY.match(m.group("key"))
                                      or not _token_value_ok(m.group("key"), val)
                                      or _SLUG.fullmatch(val) or CODE_REF.match(val)
                                      or not (re.search(r"\d|[^\w]", val) or (val != val.lower() and val != val.upper()))):
                continue
            add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"password in a {what}")
    for m in _on_lines(PASSWORD_HASH, text, _HASH_NEEDLES, memo=memo):
        add("secret.password-hash", "medium", m.start(1), m.end(1), "password hash (crypt)")
    for m in _on_lines(MYSQL_HASH, text, ("'*", '"*'), memo=memo):
        if len(set(m.group(1))) > 8:
            add("secret.password-hash", "medium", m.start(1), m.end(1), "password hash (mysql_native_password)")
    for pat, needles, what in ((DEFINE, ("#define", "%define"), "macro definition"), (ENV_DEFAULT, _ENV_NEEDLES, "fallback of an environment look-up"),
                               (SECURESTRING, ("SecureString", "securestring"), "ConvertTo-SecureString plain text")):
        for m in _on_lines(pat, text, needles, low if pat is SECURESTRING else None, memo=memo):
            val = m.group("v")
            key = m.group("key") if pat is not SECURESTRING else "password"
            if (pat is SECURESTRING and val.lower().startswith(("-asplaintext", "-force", "-string"))) or _reference(val) or _HEX_LITERAL.match(val):
                continue
            if _value_ok(val, quoted=True) and not CODE_REF.match(val) and _token_value_ok(key, val) and not _NOT_VALUE_KEY.search(key):
                add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"password in a {what}")
    if len(low) == len(text):
        for m in _on_lines(CRED_CALL, text, _CRED_CALL_NEEDLES, memo=memo):
            fn = (m.group("fn") or m.group("fn2") or m.group("fn3")).lower()
            want, pos, i = CRED_CALLS[fn], m.end(), 0
            while i <= want:
                a = _ARG.match(text, pos)
                if a is None:
                    break
                if i == want:
                    val = a.group("s")
                    if (val is not None and _value_ok(val, quoted=True) and not _reference(val)
                            and not val.startswith(("$", "{", "<", "%")) and " " not in val):
                        add("secret.password-assignment", "high", a.start("s"), a.end("s"), f"password passed to {fn}()")
                    break
                if a.group("sep") != ",":
                    break
                pos, i = a.end(), i + 1
    for m in _on_lines(PAT_ASSIGN, text, _PAT_NEEDLES, memo=memo):
        val = m.group("v")
        if (re.search(r"\d", val) and re.search(r"[A-Za-z]", val) and shannon(val) >= 3.5 and _value_ok(val, quoted=True)
                and not _wordy(val) and not _alpha_run(val) and not _periodic(val)):
            add("secret.password-assignment", "high", m.start("v"), m.end("v"), "personal access token (pat)")
    if "pass" in low:
        for m in _on_lines(PROSE_PW, text, ("password", "passphrase"), low, memo=memo):
            val = m.group("v")
            if _value_ok(val, quoted=True) and not _reference(val) and not CODE_REF.match(val) and val.lower() not in _WORD_PASSWORDS:
                add("secret.password-assignment", "high", m.start("v"), m.end("v"), "password stated in prose")
    for lm in (LABEL_FIND.finditer(low) if len(low) == len(text) else ()):
        m = LABEL_PAIR.match(text, lm.start())
        if m is None:
            continue
        val = m.group("v")
        if (re.search(r"\d", val) and re.search(r"[A-Za-z]", val) and shannon(val) >= 3.0 and _value_ok(val, quoted=True)
                and not _reference(val)):
            add("secret.password-assignment", "high", m.start("v"), m.end("v"), f"value after the label {m.group('key')[:30]}")
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
        if tok.startswith(("pk_live_", "pk_test_")) or _alpha_run(core) or _wordy(core) or in_public_block(s) or _typed_interleaved(core):
            continue  # Stripe publishable key (public by design); typed dummy; identifier; public key / certificate
        if HASH_CONTEXT.search(text[max(0, s - 30):s]) or _SSH_PUBLIC.search(text[max(0, s - 40):s]):
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
