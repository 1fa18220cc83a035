"""Secret kinds of the sixth pass (branch sec6), each with placeholders and look-alikes that stay out.

Kinds (read by kind on Nosey Parker's rule examples): New Relic admin / Insights / browser keys,
ThingsBoard device tokens in API URLs, kubeadm bootstrap tokens, Vault unseal keys, Postmark
tokens, more crypt-family password hashes (apr1, Cisco 8/9, scrypt, yescrypt, Argon2), UUIDs
under token/secret names, quoted values that hold the other quote characters, passwords passed
positionally to authentication APIs, quoted passwords stated in prose, registry ``login -p``,
``pat`` keys; and the filters: escaped ``\\$VAR`` and closed-string concatenation are references,
typed interleaved dummies (``a1B2c3D4…``) are not high-entropy tokens.
Fake values are built by concatenation so that the file itself holds no secret literal.
"""

import pytest

from kbwatch.pipeline.model import ParsedDocument
from kbwatch.plugins import scan_secrets

B64_43 = "Qw7rT9pL" + "mZx3Vb8N" + "c2Kd5Hf1" + "Jg3Lp0Rs" + "4Ty6Ua9W" + "e2E"  # 43 base64 letters
HEX32 = "9f3c2a7b" + "e18d4f60" + "5ab7c9d2" + "e4f1a086"
UUID = "c2321b4e-" + "7d9a-4f3e-" + "b8a1-" + "5e6f7a8b9c0d"
PW = "Qw7!rT9" + "pLm"
ALNUM20 = "A1b2Zx9Q" + "k3Lm7Np4" + "Rt6W"
BASE32_52 = "iyfmobq3x7" + "kzp2rl5nuw" + "d6vhtc4jgs" + "2ay7ewq5ob" + "3kdx6mfr4z" + "n2"


def findings(text):
    return [f for f in scan_secrets.kb_scan(document=ParsedDocument(markdown=text), settings={}) if f.kind == "secret"]


def rules(text):
    return {f.rule for f in findings(text)}


@pytest.mark.parametrize("text, rule", [
    ("admin_access: NRAA-" + HEX32[:27], "secret.newrelic-key"),
    ("insert key NRII-" + "q7vx2mk9pl4s" + "t8wn3bz6r5yc" + "1hj0ud9e", "secret.newrelic-key"),
    ("browser: NRJS-" + HEX32[:19], "secret.newrelic-key"),
    ("curl -v -X POST https://thingsboard.cloud/api/v1/" + ALNUM20 + "/telemetry", "secret.thingsboard-token"),
    ("coap://coap.thingsboard.cloud/api/v1/" + ALNUM20 + "/attributes", "secret.thingsboard-token"),
    ('BOOTSTRAP_TOKEN: "be8dfd.' + "da8a68q2" + 'x7kp3zr1"', "secret.kubernetes-bootstrap-token"),
    ("kubeadm join 10.0.0.1:6443 --token q7vx2m." + "k9pl4st8wn3bz6r5", "secret.kubernetes-bootstrap-token"),
    ("Unseal Key 2: " + B64_43 + "w", "secret.vault-unseal-key"),
    ("Unseal Key 1: " + B64_43 + "=", "secret.vault-unseal-key"),
    ('postmark: "' + UUID + '",', "secret.postmark-token"),
    ('"X-Postmark-Server-Token": "' + UUID + '"', "secret.postmark-token"),
])
def test_provider_shapes(text, rule):
    assert rule in rules(text)


@pytest.mark.parametrize("text", [
    "NRAA-" + "0" * 27,
    "NRJS-123",  # too short
    "https://thingsboard.cloud/api/v1/$ACCESS_TOKEN/telemetry",
    "https://thingsboard.cloud/api/v1/YOUR_ACCESS_TOKEN_HERE/telemetry",
    "kubeadm join --token abcdef.0123456789abcdef",  # the documentation's example token
    "token: [a-z0-9]{6}.[a-z0-9]{16}",
    "Unseal Key 1: <unseal key>",
    'postmark: "00000000-0000-0000-0000-000000000000"',
    "version 1.2.3.4 released",
])
def test_provider_lookalikes(text):
    assert not rules(text), rules(text)


@pytest.mark.parametrize("text", [
    "admin:$apr1$Qw7rT9pL$" + B64_43[:22].replace("+", "."),
    "username admin secret 8 $8$" + B64_43[:14] + "$" + B64_43,
    "enable secret 9 $9$" + B64_43[1:15] + "$" + B64_43,
    "root:$y$j9T$" + B64_43[:22] + "$" + B64_43 + ":19000:0:99999:7:::",
    "$7$C6..../....SodiumChloride$" + B64_43,
    "$argon2id$v=19$m=65536,t=3,p=4$" + B64_43[:22] + "$" + B64_43,
])
def test_password_hash_families(text):
    assert "secret.password-hash" in rules(text)


def test_password_hash_lookalikes():
    assert not rules("costs $8$ and $9$ today")
    assert not rules("$argon2id$v=19$m=65536,t=3,p=4$")


@pytest.mark.parametrize("text", [
    'readonly static string jenkinsToken = "' + UUID + '";',
    "HEROKU_API_TOKEN=" + UUID,
    'client_secret: "' + UUID + '"',
])
def test_uuid_under_secret_name(text):
    assert "secret.password-assignment" in rules(text) or "secret.heroku-api-key" in rules(text)


@pytest.mark.parametrize("text", [
    'token_id = "' + UUID + '"',
    'tenantId: "' + UUID + '"',
    'request_id = "' + UUID + '"',
    'api_key = "00000000-0000-0000-0000-000000000000"',
    'secret_uuid: "' + UUID + '"',
])
def test_uuid_identifiers_stay_out(text):
    assert not rules(text), rules(text)


def test_quoted_value_with_other_quotes():
    val = "7`D'}/vYR)T;W" + "5]EBrf;_&k>qX"
    assert "secret.password-assignment" in rules('jwtsecret: "' + val + '"')


@pytest.mark.parametrize("text", [
    'password: "can\'t be blank"',  # a locale message
    "- echo 'export DATABASE_PASSWORD=\"'$PRECOMPILE_PASSWORD'\"' >> .env",
    "echo 'password = '.$p['config']['daemon_password'].\"\\n\";",  # concatenation
    '\\$pwd = \\$_POST[\\"password\\"];',  # an escaped $VAR
])
def test_quote_and_reference_lookalikes(text):
    assert not rules(text), rules(text)


@pytest.mark.parametrize("text", [
    'new DirectoryEntry("LDAP://ldap.corp.internal", "svc_ldap", "' + PW + '");',
    'new DirectoryEntry("LDAP://ldap.corp.internal",\n    "svc_ldap",\n    "' + PW + '");',
    'var c = new NetworkCredential("svc_backup", "' + PW + '");',
    'new PasswordAuthentication("bob", "' + PW + '".toCharArray())',
    'server.login("me@corp.internal", "' + PW + '")',
    'requests.get(url, auth=("admin", "' + PW + '"))',
    'conn.simple_bind_s("cn=admin,dc=corp", "' + PW + '")',
])
def test_positional_credentials(text):
    fs = [f for f in findings(text) if f.rule == "secret.password-assignment"]
    assert fs and PW not in fs[0].excerpt


@pytest.mark.parametrize("text", [
    "var c = new NetworkCredential(user, password);",
    "server.login(user, os.environ['SMTP_PASSWORD'])",
    'server.login("me@corp.internal", "$SMTP_PASSWORD")',
    'new DirectoryEntry("LDAP://ldap.corp.internal", "svc", "<password>");',
    "auth = (user, pw)",
    "if (e.auth) login(user)",
])
def test_positional_lookalikes(text):
    assert not rules(text), rules(text)


@pytest.mark.parametrize("text", [
    "The default password is 'bl00berry'.",
    'so just ensure the password is "centipede" and press On',
    "2. Ensure the password for user 'postgres' is 'pgadmin7' or change .env file.",
    'The default password for the user "pyne-user" is "pyne".',
])
def test_password_in_prose(text):
    assert "secret.password-assignment" in rules(text)


@pytest.mark.parametrize("text", [
    "The password is 'required' for every account.",
    "Set the password to 'your password'.",
    "The password is stored as a hash.",
    "the password is 'password'",
    'The password is "<your password>"',
])
def test_prose_lookalikes(text):
    assert not rules(text), rules(text)


def test_registry_login_and_pat():
    assert "secret.password-assignment" in rules("docker login -u admin -p " + ALNUM20 + " registry.corp.internal")
    assert not rules("docker login -u admin -p $REGISTRY_PASSWORD registry.corp.internal")
    assert "secret.password-assignment" in rules('ado_pat = "' + BASE32_52 + '"')
    assert not rules('pat = re.compile(r"[a-z]+")')
    assert not rules('PAT: "your-personal-access-token-here"')
    assert not rules("pattern = " + BASE32_52)  # not a pat key


@pytest.mark.parametrize("text", [
    "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0",
    "X9y8Z7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0",
])
def test_typed_interleaved_is_not_entropy(text):
    assert not rules(text), rules(text)


def test_masking_of_new_kinds():
    """A positional password found once is masked everywhere the scanner reports it (excerpt ≤ 6 chars)."""
    text = 'new NetworkCredential("svc", "' + PW + '");\nnext line'
    fs = findings(text)
    assert fs and all(PW[:7] not in f.excerpt for f in fs)


# --- kinds read on the CredSweeper set (second half of the pass) ---

NTLM3 = "TlRMTVNTUAADAAAAGAAYAG4AAAAYABgAhgAAAAAAAABIAAAADgAOAEgAAAAYABgAVgAAAAAAAACeAAAA" + \
        "BYKIogUBKAoAAAAPdQBzAGUAcgAxADIAMwBXAE8AUgBLAFMAVABBAFQASQBPAE4AkQ7zq5P2vXc8L1mK"
MYSQL_HASH = "*" + "81F5E21E" + "35407D88" + "4A6CD4A7" + "31AEBFB6" + "AF209E1B"
NKEY = "SUAM" + "L2XQ7VK3" + "BZ4RDP6T" + "N5WJ2MHQ" + "CYF7GL3S" + "XK6PE4RZ" + "UA2NVB5T" + "QH" + "Q7XM"


@pytest.mark.parametrize("text, rule", [
    ('email_as_login = "smtps://ops.team@gmail.com:' + PW.replace("!", "") + '@smtp.gmail.com:465";', "secret.url-credentials"),
    ("ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '" + PW + "';", "secret.password-assignment"),
    ("ALTER USER 'app'@'%' IDENTIFIED WITH 'mysql_native_password' AS '" + MYSQL_HASH + "';", "secret.password-hash"),
    ('#define DB_PASSWORD "' + PW + '"', "secret.password-assignment"),
    ('PASSWORD = os.environ.get("PASSWORD") or "' + PW + '"', "secret.password-assignment"),
    ('db_password = os.getenv("DB_PASSWORD", "' + PW + '")', "secret.password-assignment"),
    ('$pw = ConvertTo-SecureString "' + PW.replace("!", "~") + '" -AsPlainText -Force', "secret.password-assignment"),
    ("Authorization: NTLM " + NTLM3, "secret.ntlm-auth-message"),
    ("--super-secret_token " + UUID, "secret.password-assignment"),
    ("mailgun: key-" + HEX32, "secret.mailgun-key"),
    ("// " + NKEY, "secret.nats-nkey-seed"),
    ("Authentication key:" + ALNUM20, "secret.password-assignment"),
    ('var aws_secret = "Vnpm' + "UG7qK2/xR9t" + "Lw4Zb8/Nc3Hf" + '5Jd1Qs"', "secret.password-assignment"),
])
def test_credsweeper_read_kinds(text, rule):
    assert rule in rules(text), rules(text)


@pytest.mark.parametrize("text", [
    'smtp_url = "smtps://ops.team@gmail.com@smtp.gmail.com:465"',  # no password
    "ALTER USER 'app'@'%' IDENTIFIED WITH 'mysql_native_password' AS '*" + "0" * 40 + "';",
    "#define PASSWORD_MAX_LEN 64",
    "#define PASSWORD 0x0dea1b2c3d4e5f60",
    'PASSWORD = os.environ.get("PASSWORD")',
    'token = os.getenv("API_TOKEN", "")',
    "$pw = ConvertTo-SecureString $plain -AsPlainText -Force",
    "$pw = ConvertTo-SecureString -String $plain -AsPlainText -Force",
    "mailgun: key-" + "0" * 32,
    '{"secretKey": "ENC(2dfRFq8s7Wx+3Hj/Kp1==)"}',  # Jasypt-encrypted
    "PASSWORD: AgB" + "Qw7rT9pLmZx3Vb8Nc2Kd5Hf1Jg3Lp0Rs4Ty6Ua9W/" * 5,  # a SealedSecrets ciphertext
    "secret_path = /var/lib/app/keys/server",
    "token_path: src/main/resources/config/app",
])
def test_credsweeper_read_lookalikes(text):
    assert not rules(text), rules(text)
