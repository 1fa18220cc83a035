"""Unit tests for plugins/scan_secrets.py. Fake keys are built by concatenation."""

import pytest

from kbwatch.pipeline.model import ParsedDocument
from kbwatch.plugins import scan_secrets
from kbwatch.plugins.scanning import mask_value

R = "Q7vX2mK9pL4sT8wN3bZ6"  # random-looking filler
AWS = "AKIA" + "Z7Q2M4K6P3X5N2R7"
GH = "ghp_" + R + "aB3dE5fG7hJ9kL1mN2oP"[:16]
SLACK = "xoxb-" + "263594206564-2343594206574-" + R[:24]
STRIPE = "sk_live_" + R + "Ab12"
OPENAI = "sk-proj-" + R + "T3Blbk" + "FJ" + R
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ" + "."
       + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + R + R + "\n-----END RSA " + "PRIVATE KEY-----"


def scan(text):
    return scan_secrets.kb_scan(document=ParsedDocument(markdown=text), settings={})


def rules(text):
    return {f.rule for f in scan(text)}


@pytest.mark.parametrize("text,rule", [
    (f"aws_access_key_id = {AWS}", "secret.aws-access-key"),
    (f"token: {GH}", "secret.github-token"),
    (f"SLACK={SLACK}", "secret.slack-token"),
    (f"stripe {STRIPE}", "secret.stripe-key"),
    (f"OPENAI_API_KEY={OPENAI}", "secret.openai-key"),
    ("LTAI" + "5tQ8mZ2kP9xR4vW7", "secret.alibaba-access-key"),
    ("SecretId: AKID" + R + "Kd8Yh3Lq2Zw9Xe5Tb6", "secret.tencent-secret-id"),
    ("AIza" + "SyD" + R + "x9Y8w7V6u5T4", "secret.gcp-api-key"),
    ("glpat-" + R, "secret.gitlab-token"),
    (f"auth: {JWT}", "secret.jwt"),
    (PEM, "secret.private-key"),
    ("postgres://admin:" + "S3cr3tPa55" + "@db.internal:5432/app", "secret.url-credentials"),
    ("Server=db;Database=app;User Id=sa;Password=" + "Zx9kLm2QwP7r" + ";", "secret.connection-string"),
    ('password: "' + "S3cr3t!Passw0rd-2024" + '"', "secret.password-assignment"),
    ("数据库密码：" + "Zx9kLm2QwP7r", "secret.password-assignment"),
    ("口令=" + "Hq7#pL2m", "secret.password-assignment"),
    ("令牌： " + "t0k3n" + R, "secret.password-assignment"),
    ("curl -u deploy:" + "pRf7vG2h1L8nQkW9" + " https://api.example", "secret.curl-credentials"),
    ("value = '" + "I6FwzQZFL9l44nviI1F04OTmorMaVQf9GS4Oe07qxLvNkW6CRas4Lo42" + "'", "secret.high-entropy"),
])
def test_positive(text, rule):
    fs = scan(text)
    assert rule in {f.rule for f in fs}
    assert all(f.redact and f.kind == "secret" for f in fs)


@pytest.mark.parametrize("text", [
    "aws_access_key: AKIAIOSFODNN7EXAMPLE",
    "ghs_" + "x" * 36,
    "api_key = <your-key>",
    "password = ${DB_PASSWORD}",
    'password = ""',
    "password: xxxxxxxx",
    "secret_length = X25519.secret_length",
    "clientId = \"73082700-1f09-405b-80d0-3131bfd6272d\"",
    "integrity sha512-" + "9a038989604e8da62ecddbe2094b16ce1b778be1",
    "commit 9a038989604e8da62ecddbe2094b16ce1b778be1",
    "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----",
    "eyJBB.eyJCC.eyJDDDD",
    "密码：请联系管理员获取",
    "The password must be at least 12 characters long.",
    "请在设置页面修改登录密码。",
    "curl --user ${USER}:${PASS} https://x",
    "See https://docs.google.com/document/d/1W7KCxOxP1Fy5EyF2lbJGE2WuKmu5v0suYqoHas1jRM for details",
])
def test_negative(text):
    assert not rules(text), text


@pytest.mark.parametrize("secret", [AWS, GH, SLACK, STRIPE, OPENAI, JWT, "Zx9kLm2QwP7r", "S3cr3t!Passw0rd-2024"])
def test_excerpt_never_leaks_more_than_6_chars(secret):
    for text in (f"key = '{secret}'", f"token: {secret}", f"密码：{secret}", f"x {secret} y"):
        for f in scan(text):
            # no 7-character window of the secret may appear in the excerpt or message
            for i in range(len(secret) - 6):
                assert secret[i:i + 7] not in f.excerpt
                assert secret[i:i + 7] not in f.message


@pytest.mark.parametrize("value,expected_max", [("a", 0), ("ab", 1), ("abcdefg", 3), ("abcdefghijklmnop", 6)])
def test_mask_value(value, expected_max):
    masked = mask_value(value)
    shown = masked.replace("…", "")
    assert len(shown) <= expected_max <= 6
    assert value not in masked or len(value) <= 1 and masked == "…"


def test_positions():
    text = "# config\n\napi_key = '" + "Q7vX2mK9pL4sT8wN3bZ6" + "'\n"
    f = scan(text)[0]
    assert (f.line, f.column) == (3, 12)
    assert text[f.offset:f.offset + f.length] == "Q7vX2mK9pL4sT8wN3bZ6" == f.match


# ---- fixes from the dev-split analysis (values built by concatenation) ----

HEX40 = "6d2fa" + "beb6a" + "dd229" + "bc199" + "faba2" + "8fd3e" + "fb57d" + "f0bd3"


@pytest.mark.parametrize("text,rule", [
    ("curl -s --user 'api:" + "d2LkV78zLx!t" + "' https://api.example.net/v2/messages", "secret.curl-credentials"),
    ("curl https://api.example.com/oauth2/token \\\n  --user c28wlsos:" + "qgsnai0xokrw4j1" + " --data x=1",
     "secret.curl-credentials"),
    ('ibm_iam_key:= "' + "abcd1234" * 4 + "ABCD1234" * 1 + '--__"', "secret.ibm-cloud-iam-key"),  # detect-secrets keyed shape
    ("cloud-key: " + "Zq8" + "Lm2Wx9Pt4Rv7Ks1" + "Nd6", "secret.password-assignment"),
    ('clou_pw = "' + "ab12" * 10 + '"', "secret.password-assignment"),
    ("http://api.softlayer.com/soap/v3/" + "ab12" * 16, "secret.softlayer-key"),
    ("glcbt-" + "helloworld380_testin", "secret.gitlab-token"),
    ("sourcegraph: " + HEX40[:20].upper()[:10] + HEX40[10:], "secret.sourcegraph-access-token"),  # gitleaks rule
])
def test_positive_dev_fixes(text, rule):
    assert rule in rules(text), text


@pytest.mark.parametrize("text", [
    "not_secret = notapassword",                                        # negated key name
    "ibm-cloud-pwd = shorter-version",                                  # lower-case slug, not a password
    "curl -u <user:password> https://test.example/endpoint",            # placeholder credentials
    '-H "Authorization: Bearer $API_KEY"',                              # variable after the scheme
    '-H "Authorization: basic {base64(email:password)}"',               # template after the scheme
    'apiKey: "AIza' + "a" * 35 + '"',                                   # long run of one character
    'API_KEY="glc_' + "1" * 42 + '="',
    '"token3": "xoxp-1234-1234-1234-' + "4ddbc191d40ee098" + "cbaae6f3523ada2d" + '"',   # dummy ids
    "MZ1yGvKTjE0rY0cV8i47" + "CjAa.uRHQPq.Xb1Mk2nEhe-4iUcrGOuegj57zM",  # dotted compound, not a token
    "glptt-" + "hellOworld380_testin",                                  # wrong length for the prefix
    "pk_live_" + "j5krY8XTgIcDaHDb3YrsAfCl",                            # Stripe publishable key (public)
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQENBFOrMNcBCAC+gLI4s3bUkobS5" + "NpOQbWfjWXbqC0Ixpc5bZYDOvs\n"
    "-----END PGP PUBLIC KEY BLOCK-----",                               # public key material
    'div[data-cel-widget="desktop-rhf_SponsoredProducts' + 'RemoteRHFSearchEXPSubsK2ClickPagination"]',
    "commit " + HEX40,                                                  # bare SHA-1
    "ReactNativeCameraKit: " + HEX40,                                   # digest under a non-secret name
    "-e SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`",               # command substitution
    "sk-ant-api03-abc123xyz-456de-klMnopqrstuvwx-3456yza789bcde-1234fghijklmnopAA",  # typed dummy
])
def test_negative_dev_fixes(text):
    assert not rules(text), text


def test_long_document_windows_find_provider_keys():
    key = "AKIA" + "Z7Q2M4K6P3X5N2R7"
    filler = "plain words on a line\n" * 2000          # > 20 000 characters: line-windowed search
    text = filler + f"aws_access_key_id = {key}\n" + filler + 'token: "' + JWT + '"\n'
    got = rules(text)
    assert "secret.aws-access-key" in got and "secret.jwt" in got
