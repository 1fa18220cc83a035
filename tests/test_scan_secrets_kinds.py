"""Secret kinds added for issue 15's hidden-half targets, each with benign look-alikes.

Kinds: detect-secrets provider shapes filled with one letter (``secret.provider-template``),
detect-secrets keyed shapes (Cloudant, IBM Cloud IAM, SoftLayer), keyword values in XML
elements/attributes, in secret-named calls, on command lines (``--password V``, ``mysql -pV``,
``.netrc``), after ``data["password"] =`` and ``->``, unquoted values with glued commas; the
filters that keep look-alikes out (indirect references, gitleaks' generic floor for
token/access-key names, identifiers vs generated lower-case tokens, long runs a format holds).
Fake values are built by concatenation so that the file itself holds no secret literal.
"""

import pytest

from kbwatch.pipeline.model import ParsedDocument
from kbwatch.plugins import scan_secrets

PW = "Tr0ub4" + "dor&3x"
PW2 = "Tr0ub4" + "dor3x9"  # no shell metacharacter: for command lines
HEX64 = "6d2fabeb6add229b" + "c199faba28fd3efb" + "57df0bd3a91c4e72" + "58b0e6d13f9a2c47"
RAND = "q7vx2mk9" + "pl4st8wn" + "3bz6r5yc" + "1hj0ud9e" + "g2fa"  # 36 lower-case alphanumerics


def findings(text):
    return [f for f in scan_secrets.kb_scan(document=ParsedDocument(markdown=text), settings={}) if f.kind == "secret"]


def rules(text):
    return {f.rule for f in findings(text)}


@pytest.mark.parametrize("text", [
    "AKC" + "x" * 10,
    'X-JFrog-Art-Api: "AP6' + "x" * 10 + '"',
    "SK" + "x" * 32,
    "AC" + "z" * 32,
    "A3T0" + "Z" * 16,
    "https://hooks.slack.com/services/T" + "x" * 8 + "/B" + "x" * 8 + "/" + "x" * 24,
])
def test_provider_template(text):
    fs = findings(text)
    assert [f.rule for f in fs] == ["secret.provider-template"], text
    assert fs[0].severity == "low"


@pytest.mark.parametrize("text", [
    "lowEntropy := AKCp" + "X" * 69,              # all-caps XXXX: the redaction convention
    "ghs_" + "x" * 36,                            # a gitleaks-only shape filled with x
    "glptt-" + "x" * 40,
    "AKIA" + "X" * 16,
    "Our APEXLEGENDS team",                        # AP + hex letter + 8 letters: a word
    "ACME" + "x" * 30,                             # not 32 after the prefix, not the shape
])
def test_provider_template_look_alikes(text):
    assert not findings(text), text


@pytest.mark.parametrize("text,rule", [
    ('cloudant_key = "' + "abcdefghij" * 2 + 'abcd"', "secret.cloudant-key"),
    ("clou-apipw: " + HEX64, "secret.cloudant-key"),
    ('"iam_api_key" : "' + "abcd1234" * 5 + '--__"', "secret.ibm-cloud-iam-key"),
    ("softlayer_api_key = " + HEX64[::-1], "secret.softlayer-key"),
])
def test_detect_secrets_keyed_shapes(text, rule):
    assert rule in rules(text), text


@pytest.mark.parametrize("text", [
    'cloudant_key = "' + "abcdefghij" * 2 + 'abcde"',   # 25 letters: not the shape
    'cloudant_url = "' + "abcdefghij" * 2 + 'abcd"',    # not a key name
    'ibm_cloud_name = "' + "abcd1234" * 5 + '--__"',
])
def test_detect_secrets_keyed_look_alikes(text):
    assert not {r for r in rules(text) if r in ("secret.cloudant-key", "secret.ibm-cloud-iam-key", "secret.softlayer-key")}


@pytest.mark.parametrize("text", [
    f"<password>{PW}</password>",
    f'<db:Password type="plain">{PW}</db:Password>',
    f'<add key="Password" value="{PW}" />',
    f"<property name='jdbc.password' value='{PW}'/>",
    f'password.assign("{PW}")',
    f'client.set_password("{PW}", user)',
    f'setPassword("{PW}");',
    f"pg_dump --password {PW2} mydb",
    f"mysql -u root -p{PW2} shop",
    f"machine api.example.net login deploy password {PW}",
    f'data["password"] = "{PW}"',
    f"config['secret'] = '{PW}'",
    f'password -> "{PW}"',
    "password = Q,w.e:r-t@y",
    "token: 9fK2mQ7x" + "Lp4Rz8Wt",
    "lin_api_" + RAND + "w8k3",                      # gitleaks linear-api-key: lower-case and digits
    "twitter_bearer = " + "A" * 22 + "4wLZiYJlEqWW6MWerDeoS1PAjsOnuwpNwp2f2t8IxwdDj8gp3wi4AbZk9" + "Qm7Rt2Xv9Lp4Nc8Hs3Kd"
     + "b6Wy1Fg5",
])
def test_keyword_syntaxes(text):
    assert findings(text), text


@pytest.mark.parametrize("text", [
    "<password></password>",
    "<passwordPolicy>strict</passwordPolicy>",
    '<add key="PasswordLength" value="12" />',
    "<password>${DB_PASSWORD}</password>",
    "<secret>true</secret>",
    "<token>Please enter the token here</token>",
    'get_password("alice")',
    "SET PASSWORD = PASSWORD('x');",
    "password(user)",
    "pg_dump --password-file /etc/pgpass mydb",
    "Use the --password flag to be prompted.",
    "mysql -u root -p shop",
    "curl --token $TOKEN https://api.example.net",
    "secret = request.headers[\"X-Secret\"]",
    "token = Token(user)",
    "password=abc,user=bob",
    "SUMO_ACCESS_KEY: Ab3De9",
    "access_token: abc12",
    "gloas-" + "checking_Length-Is-_exactly_64--Xchecking_Length-Is-_longer_longer",
])
def test_keyword_look_alikes(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])


@pytest.mark.parametrize("text,secret", [
    ("AKC" + "x" * 10, "AKC" + "x" * 10),
    (f"<password>{PW}</password>", PW),
    (f"mysql -u root -p{PW2} shop", PW2),
    (f"machine h login u password {PW}", PW),
    ('cloudant_key = "' + "abcdefghij" * 2 + 'abcd"', "abcdefghij" * 2 + "abcd"),
])
def test_new_kinds_never_show_more_than_6_chars(text, secret):
    fs = findings(text)
    assert fs
    for f in fs:
        for i in range(len(secret) - 6):
            assert secret[i:i + 7] not in f.excerpt and secret[i:i + 7] not in f.message


@pytest.mark.parametrize("text,rule", [
    (RAND[:32] + "-us12", "secret.mailchimp-key"),                     # detect-secrets' [0-9a-z]{32}, not only hex
    ("7213808860:" + "BBH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM", "secret.telegram-bot-token"),  # no "AA"
    ("SK" + RAND[:32], "secret.twilio-key"),
    ('aws_secret_key = "' + "wJa1rXUtnFEMI/K7MDENG/bPxRfiCYzq" + "Ab3dE5fG" + '"', "secret.aws-secret-key"),
])
def test_detect_secrets_charsets(text, rule):
    assert rule in rules(text), text


@pytest.mark.parametrize("text", [
    "AC" + "knowledgementsofthecontributors",      # 32 letters, no digit: a word run
    "12345678:" + "abcdefghijklmnopqrstuvwxyzabcdefgh",  # typed alphabet
    "a" * 32 + "-us1",
    'aws_region = "' + "us-east-1" + '"',
])
def test_detect_secrets_charsets_look_alikes(text):
    assert not findings(text), text


@pytest.mark.parametrize("text", [
    "<secretKey>@SECRET_KEY@</secretKey>",         # Maven/Ant filter token
    "password: !vault |",                          # YAML tag (Ansible Vault, CloudFormation !Ref)
    "api_token: !Ref ApiTokenParameter",
    "pass: ./scripts/pass.sh",                     # a path
    "pass = pass + 1",                             # the variable itself
    "token = token.strip()",
    "public_key = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + "OMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host\"",
])
def test_reference_look_alikes(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])


UUID_A = "9da5da9c-4218-4c22-aed6-" + "b5c8baebfff5"
UUID_B = "2f2b54b7-0141-4ba7-8fcd-" + "ab7d17a60547"


@pytest.mark.parametrize("text,rule", [
    ("https://outlook.office.com/webhook/" + UUID_A + "@" + UUID_B + "/IncomingWebhook/" + HEX64[:32] + "/" + UUID_B,
     "secret.teams-webhook"),
    ("MAPBOX_TOKEN=sk.eyJ1Ijoi" + "Y2FwcGVsYWVy" + "." + "P4lD1eHeSEx7AsBq1zbJ4g", "secret.mapbox-secret-token"),
    ("nuget push pkg.nupkg " + "oy2" + RAND + "w8k3x9m", "secret.nuget-api-key"),
    ("license_key: " + "eu01xx" + HEX64[:30] + "NRAL", "secret.newrelic-license-key"),
    ("dp.st.dev." + "bAqhcVzrhy5cRHkOlNTc0Ve6" + "w5NUDCpcutm8vGE9myi", "secret.doppler-token"),
    ("access_token: 'ya29." + "A0ARrdaM--PV_87ebjywDJpXKb77NBFJl16meVUapYdfNv6W6ZzCu947" + "'", "secret.google-oauth-token"),
    ("$2a$12$" + "R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW", "secret.password-hash"),
    ("root:$6$" + "qoE2letU$" + "wWPRl.PVczjzeMVgjiA8LLy2nOyZbf7Amj3qLIL978o18gbMySdKZ7uepq9tmMQXxyTIrS12Pln.2Q/6Xscao0" + ":18000:0",
     "secret.password-hash"),
    ("PsExec.exe \\\\host -u DOMAIN\\admin -p " + PW2 + " cmd", "secret.password-assignment"),
    ("Authorization: SSWS 00QCjAl4MlV-WPXM-" + "Zq8Lm2Wx9Pt4-0HmjFx-vbGua", "secret.password-assignment"),
    ("PresharedKey = uRsfsZ2Ts1rach4Zv3hh" + "wcx6wa5fuIo2u3w7sa+7j81=", "secret.password-assignment"),
    ('$db = "$password = \\"' + PW2 + '\\";"', "secret.password-assignment"),   # escaped quotes inside a string
])
def test_more_provider_and_command_kinds(text, rule):
    assert rule in rules(text), (text, rules(text))


@pytest.mark.parametrize("text", [
    "REACT_APP_FORGOT_PASSWORD=$REACT_APP_BASE_URL/classroom/#/forgot_password",  # $VAR reference
    "PASSWORD=$($(dirname $0)/../bin/get-setting DB_PASSWORD)",
    'text << "Password=#{password}, "',
    "pwd = (char *) (p + ulen + 2);",
    "IAMUserChangePassword = \"arn:aws:iam::aws:policy/IAMUserChangePassword\"",
    "this.addPassword = '#add-password';",
    "put '/forgot-password' => \"cms/sites/passwords#update\"",
    '"creating-a-strong-password":"/en/enterprise-server@3.0/auth"',
    '"//localhost:1337/:_password = "+new Buffer("feast").toString("base64")',
    "$2a$12$ is the bcrypt prefix",
    "dp.pt is a prefix",
])
def test_reference_and_code_look_alikes(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])


@pytest.mark.parametrize("text,rule", [
    ("PSWD:=" + PW2, "secret.password-assignment"),                # abbreviations of password
    ("paswrd = " + PW2, "secret.password-assignment"),
    ("app -secret " + PW2 + " -v", "secret.password-assignment"),  # single-dash option
    ("CREATE ROLE app WITH LOGIN PASSWORD " + PW2 + ";", "secret.password-assignment"),
    ('curl_easy_setopt(h, CURLOPT_PROXYPASSWORD, "' + PW2 + '");', "secret.curl-credentials"),
    ("xoxp-1-" + "Mi0yLTM5MTgwOTU0ODI3NC0xMDUzMjc0NTg2MzIx", "secret.slack-token"),  # one-digit id
    ("sbp_" + HEX64[:40], "secret.supabase-token"),
    ("NRAK-" + "X29R0RTNJIQTUFWOA8Z8YRDENG0", "secret.newrelic-user-key"),
    ("https://discord.com/api/webhooks/148392840000482200/" + "ihUFAgIi-OsnNHsjJBpvzkzZOicbe0R2UkWo1nvOnkLGHWJnW8HZjF_dRDj7fi5q",
     "secret.discord-webhook"),
    ("SWMTKN-1-" + "edmua5ub12inlget8wkvz35kckxkeyznuvc49brsy84wgfssrw" + "-otjll8wdy3yikfrksskvqzqh1", "secret.docker-swarm-token"),
    ("akab-" + "tblc7jkffv3wfxh3" + "-h5stbzeswb3v4kj3", "secret.akamai-token"),
    ("cosmo_" + HEX64[:32], "secret.wundergraph-key"),
])
def test_cred_kinds_from_credsweeper_half_a(text, rule):
    assert rule in rules(text), (text, rules(text))


@pytest.mark.parametrize("text", [
    '"pass_mask32": "0x31c45018",',                 # a number
    "Enter token : This is a query parameter",      # prose after a token label
    "CREATE ROLE app WITH LOGIN PASSWORD NULL;",
    "xoxp-1234-1234-1234-" + "abcdefabcdef",       # sequential dummy ids
    "run -password-file ./pw.txt",
    "the self-secret option",
])
def test_cred_kind_look_alikes(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])


JWT_HEAD = "eyJhbGciOiAibm9uZSIsICJ0eXAiOiAiSldUIn0"          # {"alg": "none", "typ": "JWT"}
JWT_BODY = "eyJzdWIiOiAiMTIzNDU2Nzg5MCIsICJuYW1lIjogIkpvaG4ifQ"  # {"sub": "1234567890", "name": "John"}


@pytest.mark.parametrize("text", [f"token {JWT_HEAD}.{JWT_BODY}.", f"Bearer {JWT_HEAD}.{JWT_BODY}"])
def test_unsigned_jwt(text):
    assert "secret.jwt" in rules(text)


@pytest.mark.parametrize("text", [
    f"id {JWT_HEAD}.eyJzdWIiOiAiMTIzNDU2Nzg5MCIsICJuYW1lIjogIkpvaG4i.",  # payload is not JSON
    "eyJhbasdGciOiJIUaddasdasfsasdasd.eyJzdWIiOiIxMjM0NTY3ODkwIn0.",       # header is not JSON
])
def test_unsigned_jwt_look_alikes(text):
    assert "secret.jwt" not in rules(text)


@pytest.mark.parametrize("text", [
    "'password' => SOME_CONSTANT,",                 # unquoted after an arrow: an identifier
    "token.assign(\"short\")",                       # token-like name: gitleaks' floor applies to calls too
    "<token>abc123</token>",
    'Secret "os.environ[";',                          # a reference cut at its bracket
])
def test_arrow_and_floor_look_alikes(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])


PEM_B64 = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb2dJQkFBS0NBUUVBbUhKOEJHdTFYZUZ4aENVQXBr"  # -----BEGIN RSA PRIVATE KEY-----…


@pytest.mark.parametrize("text,rule", [
    ("gpg --decrypt --passphrase " + PW2 + " --output out.txt in.gpg", "secret.password-assignment"),
    ("SECRET KEY:" + "AIhq5Xyb1Gga9Q3", "secret.password-assignment"),   # a two-word label in prose
    ("API token = " + "9fK2mQ7xLp4Rz8Wt", "secret.password-assignment"),
    ("apikey: hvs." + "JGbZZaCkOSgsZ56uhGlTK2zyC1j2mwhy0VLp4", "secret.vault-token"),
    ("MAPBOX=tk.eyJ1Ijoi" + "Y2FwcGVsYWVy" + "." + "P4lD1eHeSEx7AsBq1zbJ4g", "secret.mapbox-secret-token"),
    ("postgresql://user:secret@localhost:5433/database", "secret.url-credentials"),
    ("Server=host;User Id=sa;Password=secret;Database=db;", "secret.connection-string"),
    ("  tls.key: " + PEM_B64, "secret.private-key"),  # Kubernetes secret data
    ('"AwsSecretKey": "' + "J38YmIgn7dH6cw4W1yqoRgjsFsWvysFjfVcpCh7O9Yyv9" + "/qNvNI" + '",', "secret.password-assignment"),
])
def test_more_kinds_from_independent_half_a(text, rule):
    assert rule in rules(text), (text, rules(text))


@pytest.mark.parametrize("text", [
    "The secret key: keep it safe",                 # label followed by prose
    "Private Key: see the vault",
    '"publicKey": "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUlJQklqQU5CZ2txaGtpRzl3MEJBUUVGQUFPQ0FROEFNSUlC"',  # a public key
    "apikey: hvs.short",
    'secret_path = "config/app/credentials"',      # a path of short segments
])
def test_more_kinds_look_alikes(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])


@pytest.mark.parametrize("text", [
    "ALTER USER 'app'@'%' PASSWORD EXPIRE INTERVAL 90 DAY;",   # an SQL clause, not a password
    "sbp_" + "7558c5a93d6f38dd038df5cc2a7c3d4d7b" + "abcdef",   # typed run at the end
    "--set global.licenseKey=" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8" + "NRAL",  # interleaved alphabet and digits
])
def test_typed_provider_dummies(text):
    assert not findings(text), (text, [(f.rule, f.excerpt) for f in findings(text)])
