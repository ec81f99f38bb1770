"""A labelled set for `redaction.redact_secrets`: realistic transcript and note snippets, English
and Japanese, with the secrets each one holds (kind and exact value) written down BEFORE the
detector existed, and look-alikes that must survive (git shas, UUIDs, sha256 digests, base64
image data and names, long identifiers, placeholders, masked keys, code that only names a secret,
Japanese prose).

Split: cases marked "tune" were looked at while the detector was written; "held" cases were
written with the rest and not used for tuning: `eval_redaction.py` reports precision and recall
on the held-out part.

No value here is a real credential. Each fake one is generated from a fixed seed, and the
well-known prefixes are assembled at run time so that secret scanners do not flag this file.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass, field

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits


def fake(seed: int, length: int, alphabet: str = ALNUM, prefix: str = "") -> str:
    rng = random.Random(seed)
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def p(*parts: str) -> str:
    """A prefix assembled at run time (`p("gh", "p_")`), so this file holds no scanner-visible key."""
    return "".join(parts)


# ---------------------------------------------------------------------------- fake secrets

AKIA1 = fake(1, 16, UPPER_DIGITS, p("AK", "IA"))
AKIA2 = fake(2, 16, UPPER_DIGITS, p("AK", "IA"))
ASIA1 = fake(3, 16, UPPER_DIGITS, p("AS", "IA"))
AWS_SECRET1 = fake(4, 40, B64)
AWS_SECRET2 = fake(5, 40, B64)
AWS_SECRET3 = fake(6, 40, B64)
AWS_SESSION = fake(7, 300, B64)
OPENAI1 = fake(8, 48, ALNUM, p("s", "k-"))
OPENAI_PROJ = fake(9, 156, URLSAFE, p("s", "k-", "proj-"))
OPENAI_PROJ2 = fake(10, 120, URLSAFE, p("s", "k-", "proj-"))
ANTHROPIC1 = fake(11, 93, URLSAFE, p("s", "k-", "ant-", "api03-"))
ANTHROPIC2 = fake(12, 93, URLSAFE, p("s", "k-", "ant-", "api03-"))
GHP1 = fake(13, 36, ALNUM, p("gh", "p_"))
GHP2 = fake(14, 36, ALNUM, p("gh", "p_"))
GHO1 = fake(15, 36, ALNUM, p("gh", "o_"))
GHS1 = fake(16, 36, ALNUM, p("gh", "s_"))
GHPAT1 = fake(17, 82, ALNUM + "_", p("github", "_pat_"))
SLACK_BOT = p("xo", "xb-") + fake(18, 12, string.digits) + "-" + fake(19, 13, string.digits) + "-" + fake(20, 24)
SLACK_USER = p("xo", "xp-") + fake(21, 12, string.digits) + "-" + fake(22, 12, string.digits) + "-" \
    + fake(23, 13, string.digits) + "-" + fake(24, 32, HEX)
GOOGLE1 = fake(25, 35, URLSAFE, p("AI", "za"))
GOOGLE2 = fake(26, 35, URLSAFE, p("AI", "za"))
STRIPE1 = fake(27, 24, ALNUM, p("sk", "_live_"))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


JWT1 = ".".join([_b64url(b'{"alg":"HS256","typ":"JWT"}'),
                 _b64url(b'{"sub":"1234567890","name":"Taro Yamada","iat":1716239022}'),
                 fake(28, 43, URLSAFE)])
JWT2 = ".".join([_b64url(b'{"alg":"RS256","kid":"k1","typ":"JWT"}'),
                 _b64url(b'{"iss":"https://auth.example.com","aud":"api","exp":1893456000,"scope":"read write"}'),
                 fake(29, 342, URLSAFE)])


def pem(seed: int, label: str, lines: int = 6) -> str:
    body = "\n".join(fake(seed * 100 + n, 64, B64) for n in range(lines)) + "\n" + fake(seed * 100 + 99, 20, B64) + "=="
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


PEM_RSA = pem(30, "RSA PRIVATE KEY")
PEM_OPENSSH = pem(31, "OPENSSH PRIVATE KEY")
PEM_PKCS8 = pem(32, "PRIVATE KEY")
PEM_EC = pem(33, "EC PRIVATE KEY", 3)
PEM_CERT = pem(34, "CERTIFICATE")              # public: not a secret
PEM_PUBLIC = pem(35, "PUBLIC KEY")             # public: not a secret
PEM_JSON_ESCAPED = PEM_PKCS8.replace("\n", "\\n")
PEM_B64 = base64.b64encode((PEM_RSA + "\n").encode()).decode()   # kubeconfig client-key-data

BEARER1 = fake(36, 32, ALNUM)
BEARER2 = fake(37, 40, URLSAFE)
BASIC1 = base64.b64encode(b"deploy:Wq8#rT2mZ").decode()
PASSWORD1 = "hunter2!Xq"
PASSWORD2 = "S3cure#Pass9"
PASSWORD3 = "postgres123"
PASSWORD4 = "Tr0ub4dor&3"
PASSWORD5 = "correct-horse-battery-staple-7"
PASSWORD6 = "Hx7#kq2L"
PASSWORD7 = "pa55word"
PASSWORD8 = "N0tS0Secret"
PASSWORD9 = "Zq9!vB3@"
PASSWORD10 = "rootpw2024"
URLPW1 = "s3cr3tPW"
URLPW2 = "hunterpass9"
URLPW3 = "Xy9%40kk"
URLPW4 = "tok3n-abc987"
CLIENT_SECRET1 = fake(38, 40, URLSAFE)
CLIENT_SECRET2 = fake(39, 32, ALNUM)
DJANGO_KEY = "django-insecure-" + fake(40, 50, ALNUM + "!@#%^&*(-_=+)")
HF_TOKEN = fake(41, 34, string.ascii_letters, p("h", "f_"))
NPM_TOKEN = fake(42, 36, ALNUM, p("np", "m_"))
GENERIC1 = fake(43, 32, ALNUM)
GENERIC2 = fake(44, 40, ALNUM)
GENERIC3 = fake(45, 28, ALNUM)
GENERIC4 = fake(46, 24, ALNUM)
GLPAT1 = fake(47, 20, URLSAFE, p("gl", "pat-"))
ACCESS_TOKEN1 = fake(48, 160, URLSAFE, "ya29.")
HEX_SECRET = fake(49, 64, HEX)
UUID_APIKEY = "8c4b1f9e-2d7a-4e63-9b51-0f3c2a7d6e18"
K8S_PW = base64.b64encode(b"db-Passw0rd!").decode()

# Look-alikes (never secrets)
SHA1 = fake(60, 40, HEX)
SHA1_B = fake(61, 40, HEX)
SHA256 = fake(62, 64, HEX)
SHA256_B = fake(63, 64, HEX)
UUID1 = "123e4567-e89b-42d3-a456-426614174000"
UUID2 = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
UUID3 = "5f0c2d1e-9a1b-4c3d-8e7f-0a1b2c3d4e5f"
PNG_DATA = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
B64_NAME = base64.urlsafe_b64encode(b"team-offsite-2024-photo-01").decode().rstrip("=") + ".png"
B64_NAME2 = fake(64, 22, URLSAFE) + ".webp"
NPM_INTEGRITY = "sha512-" + fake(65, 86, B64) + "=="
MASKED_OPENAI = p("s", "k-") + "abc12" + "*" * 28 + "wxyz"


@dataclass
class Case:
    id: str
    split: str                                   # "tune" or "held"
    lang: str                                    # "en" or "ja"
    text: str
    secrets: list[tuple[str, str]] = field(default_factory=list)   # (kind, exact value)


def _cases() -> list[Case]:
    c: list[Case] = []

    def add(split: str, lang: str, text: str, *secrets: tuple[str, str]) -> None:
        c.append(Case(f"{split}-{len([x for x in c if x.split == split]) + 1:03d}", split, lang, text, list(secrets)))

    # ------------------------------------------------------------------ tune: secrets
    add("tune", "en", f"export AWS_ACCESS_KEY_ID={AKIA1}\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET1}\n"
                      "aws s3 ls s3://orders-exports",
        ("AWS access key id", AKIA1), ("AWS secret access key", AWS_SECRET1))
    add("tune", "en", f"[default]\naws_access_key_id = {AKIA2}\naws_secret_access_key = {AWS_SECRET2}\nregion = ap-northeast-1",
        ("AWS access key id", AKIA2), ("AWS secret access key", AWS_SECRET2))
    add("tune", "en", f"Set OPENAI_API_KEY={OPENAI_PROJ} in .env and restart the worker.",
        ("OpenAI API key", OPENAI_PROJ))
    add("tune", "en", f"curl https://api.anthropic.com/v1/messages -H 'x-api-key: {ANTHROPIC1}' -H 'anthropic-version: 2023-06-01'",
        ("Anthropic API key", ANTHROPIC1))
    add("tune", "en", f"git remote set-url origin https://{GHP1}@github.com/acme/shop.git",
        ("GitHub token", GHP1))
    add("tune", "en", f"GITHUB_TOKEN={GHPAT1} gh api /orgs/acme/hooks", ("GitHub token", GHPAT1))
    add("tune", "en", f"SLACK_BOT_TOKEN={SLACK_BOT}\nchannel: C024BE91L", ("Slack token", SLACK_BOT))
    add("tune", "en", f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Tokyo&key={GOOGLE1} 403",
        ("Google API key", GOOGLE1))
    add("tune", "en", f"Authorization: Bearer {JWT1}\nHTTP/1.1 401 Unauthorized", ("JWT", JWT1))
    add("tune", "en", f"cat ~/.ssh/id_rsa\n{PEM_RSA}\n", ("private key", PEM_RSA))
    add("tune", "en", f'{{"type": "service_account", "private_key_id": "{SHA1}", "private_key": "{PEM_JSON_ESCAPED}\\n", '
                      '"client_email": "ci@proj.iam.gserviceaccount.com"}',
        ("private key", PEM_JSON_ESCAPED))
    add("tune", "en", f'curl -s -H "Authorization: Bearer {BEARER1}" https://api.example.com/v2/orders',
        ("bearer token", BEARER1))
    add("tune", "en", f"DB_PASSWORD={PASSWORD1}\nDB_HOST=db.internal", ("password", PASSWORD1))
    add("tune", "en", f'  password: "{PASSWORD2}"\n  username: app', ("password", PASSWORD2))
    add("tune", "en", f"PGPASSWORD={PASSWORD3} psql -h db.internal -U app orders -c 'select 1'", ("password", PASSWORD3))
    add("tune", "en", f"mysql -h 10.0.3.12 -u admin --password={PASSWORD4} shop < dump.sql", ("password", PASSWORD4))
    add("tune", "en", f"DATABASE_URL=postgres://app:{URLPW1}@db.internal:5432/orders", ("password in URL", URLPW1))
    add("tune", "en", f"redis-cli -u redis://:{URLPW2}@cache.internal:6379/0 ping", ("password in URL", URLPW2))
    add("tune", "en", f"client_secret={CLIENT_SECRET1}&grant_type=client_credentials", ("secret", CLIENT_SECRET1))
    add("tune", "en", f"SECRET_KEY = '{DJANGO_KEY}'\nDEBUG = True", ("secret", DJANGO_KEY))
    add("tune", "en", f"export HF_TOKEN={HF_TOKEN}\nhuggingface-cli whoami", ("token", HF_TOKEN))
    add("tune", "en", f"Here is the API key for the staging account: {GENERIC1}", ("API key", GENERIC1))
    add("tune", "en", f'{{"access_token": "{ACCESS_TOKEN1}", "token_type": "Bearer", "expires_in": 3599}}',
        ("token", ACCESS_TOKEN1))
    add("tune", "en", f"apiVersion: v1\nkind: Secret\ndata:\n  password: {K8S_PW}\n  username: YXBw", ("password", K8S_PW))
    add("tune", "en", f"stripe listen --api-key {STRIPE1}", ("Stripe key", STRIPE1))
    add("tune", "ja", f"本番DBのパスワードは {PASSWORD7} です。ローテーションは来月。", ("password", PASSWORD7))
    add("tune", "ja", f"アクセスキー: {AKIA1}\nシークレットアクセスキー: {AWS_SECRET3}",
        ("AWS access key id", AKIA1), ("AWS secret access key", AWS_SECRET3))
    add("tune", "ja", f"Slack のトークン {SLACK_USER} を環境変数に入れてください", ("Slack token", SLACK_USER))
    add("tune", "en", f"webhook_secret: {CLIENT_SECRET2}", ("secret", CLIENT_SECRET2))
    add("tune", "en", f"npm config set //registry.npmjs.org/:_authToken={NPM_TOKEN}", ("token", NPM_TOKEN))

    # ------------------------------------------------------------------ tune: look-alikes
    add("tune", "en", f"commit {SHA1}\nAuthor: Hanako <h@example.com>\n\n    Fix token refresh race")
    add("tune", "en", f"docker pull ghcr.io/acme/api@sha256:{SHA256}")
    add("tune", "en", f"request_id={UUID1} status=500 path=/v1/tokens latency_ms=31")
    add("tune", "en", f'<img src="data:image/png;base64,{PNG_DATA}" alt="secret santa logo">')
    add("tune", "en", f"Saved upload as uploads/{B64_NAME} (key: uploads/{B64_NAME})")
    add("tune", "en", "def login(username: str, password: str) -> Token:\n    return auth.verify(username, password)")
    add("tune", "en", 'api_key = os.environ["OPENAI_API_KEY"]\nclient = OpenAI(api_key=api_key)')
    add("tune", "en", "curl -H \"Authorization: Bearer $GH_TOKEN\" https://api.github.com/user")
    add("tune", "en", "psql: error: FATAL:  password authentication failed for user \"app\"")
    add("tune", "en", "aws ecr get-login-password | docker login --username AWS --password-stdin 1234.dkr.ecr.us-east-1.amazonaws.com")
    add("tune", "en", "arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:prod/app/db-AbCdEf:password::")
    add("tune", "en", "SECRET_ID=prod/app/db\naws secretsmanager describe-secret --secret-id \"$SECRET_ID\"")
    add("tune", "en", "environment:\n  POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}\n  API_TOKEN: ${{ secrets.API_TOKEN }}")
    add("tune", "en", "class getUserProfileSettingsV2Handler(AbstractSingletonProxyFactoryBean): pass")
    add("tune", "en", "max_tokens=4096, temperature=0.2, tokenizer='cl100k_base'")
    add("tune", "en", f"openai.AuthenticationError: Incorrect API key provided: {MASKED_OPENAI}. You can find your API key at https://platform.openai.com")
    add("tune", "en", "DATABASE_URL=postgres://user:password@localhost:5432/app  # example, change me")
    add("tune", "en", f'"integrity": "{NPM_INTEGRITY}"')
    add("tune", "en", "pod/api-7d9f8b6c5-x2kqp   1/1   Running   0   3h   i-0abcd1234ef567890")
    add("tune", "ja", "パスワードを忘れた場合は、ログイン画面の「パスワードをリセット」から再設定してください。")
    add("tune", "ja", "トークンの有効期限が切れているため、401 が返っています。再ログインしてください。")
    add("tune", "en", f"sha256sum token.json\n{SHA256_B}  token.json")
    add("tune", "en", f"Idempotency-Key: {UUID2}\nX-Request-Id: {UUID3}")
    add("tune", "en", "password=None, secret=settings.SECRET_KEY, token=request.headers.get('X-Token')")
    add("tune", "en", "TOKEN_REFRESH_INTERVAL_SECONDS=3600\nPASSWORD_MIN_LENGTH=12")
    add("tune", "en", "API_KEY=your-api-key-here\nSECRET_KEY=changeme")

    # ------------------------------------------------------------------ held-out: secrets
    add("held", "en", f"boto3.client('s3', aws_access_key_id='{ASIA1}', aws_secret_access_key='{AWS_SECRET3}', "
                      f"aws_session_token='{AWS_SESSION}')",
        ("AWS access key id", ASIA1), ("AWS secret access key", AWS_SECRET3), ("token", AWS_SESSION))
    add("held", "en", f"openai.api_key = \"{OPENAI1}\"", ("OpenAI API key", OPENAI1))
    add("held", "en", f"I rotated it, the new one is {OPENAI_PROJ2} - can you update the GitHub secret?",
        ("OpenAI API key", OPENAI_PROJ2))
    add("held", "en", f"ANTHROPIC_API_KEY={ANTHROPIC2} python3 agent.py --model claude", ("Anthropic API key", ANTHROPIC2))
    add("held", "en", f"  Token: {GHO1}\n  Token scopes: 'gist', 'read:org', 'repo'", ("GitHub token", GHO1))
    add("held", "en", f"- name: checkout\n  env:\n    GH_TOKEN: {GHP2}", ("GitHub token", GHP2))
    add("held", "en", f"Installation token issued: {GHS1} (expires in 1h)", ("GitHub token", GHS1))
    add("held", "en", f"const maps = new Loader({{ apiKey: \"{GOOGLE2}\", version: \"weekly\" }});", ("Google API key", GOOGLE2))
    add("held", "en", f"set-cookie: session={JWT2}; HttpOnly; Secure", ("JWT", JWT2))
    add("held", "en", f"$ cat deploy_key\n{PEM_OPENSSH}\n$ chmod 600 deploy_key", ("private key", PEM_OPENSSH))
    add("held", "en", f"openssl ec -in key.pem\nread EC key\n{PEM_EC}", ("private key", PEM_EC))
    add("held", "en", f"users:\n- name: admin\n  user:\n    client-certificate-data: {base64.b64encode(PEM_CERT.encode()).decode()}\n"
                      f"    client-key-data: {PEM_B64}", ("private key", PEM_B64))
    add("held", "en", f"requests.get(url, headers={{'Authorization': 'Bearer {BEARER2}'}})", ("bearer token", BEARER2))
    add("held", "en", f"Authorization: Basic {BASIC1}", ("basic auth credentials", BASIC1))
    add("held", "en", f"spring.datasource.password={PASSWORD8}\nspring.datasource.username=orders", ("password", PASSWORD8))
    add("held", "en", f'{{"username": "admin", "password": "{PASSWORD5}", "remember": true}}', ("password", PASSWORD5))
    add("held", "en", f"machine api.heroku.com\n  login me@example.com\n  password {GENERIC4}", ("password", GENERIC4))
    add("held", "en", f"docker run -e MYSQL_ROOT_PASSWORD={PASSWORD10} -d mysql:8", ("password", PASSWORD10))
    add("held", "en", f"mongosh \"mongodb+srv://admin:{URLPW3}@cluster0.ab1cd.mongodb.net/shop\"", ("password in URL", URLPW3))
    add("held", "en", f"git clone https://deploy:{URLPW4}@git.example.com/acme/infra.git", ("password in URL", URLPW4))
    add("held", "en", f"AZURE_CLIENT_SECRET=\"{CLIENT_SECRET1}\"", ("secret", CLIENT_SECRET1))
    add("held", "en", f"hmac_secret = \"{HEX_SECRET}\"", ("secret", HEX_SECRET))
    add("held", "en", f"heroku config:set API_KEY={UUID_APIKEY}", ("API key", UUID_APIKEY))
    add("held", "en", f"The deploy token is {GLPAT1}, scope read_registry.", ("token", GLPAT1))
    add("held", "en", f"curl -X POST https://hooks.example.com/x -d token={GENERIC2}", ("token", GENERIC2))
    add("held", "en", f"x-api-key: {GENERIC3}", ("API key", GENERIC3))
    add("held", "ja", f"APIキーは {GENERIC1} です。漏らさないでください。", ("API key", GENERIC1))
    add("held", "ja", f"パスワード：{PASSWORD6}\n接続先：db.internal", ("password", PASSWORD6))
    add("held", "ja", f"GitHub のトークン（{GHP1}）を使って push しました", ("GitHub token", GHP1))
    add("held", "ja", f"接続文字列は postgresql://orders:{URLPW1}@10.0.1.5/orders です", ("password in URL", URLPW1))
    add("held", "en", f"passwd: {PASSWORD9}", ("password", PASSWORD9))

    # ------------------------------------------------------------------ held-out: look-alikes
    add("held", "en", f"Merge: {SHA1[:7]} {SHA1_B[:7]}\ngit cherry-pick {SHA1_B}")
    add("held", "en", f"Digest: sha256:{SHA256_B}\nStatus: Downloaded newer image for postgres:16")
    add("held", "en", f'{{"session_id": "{UUID3}", "transcript_path": "/home/u/.claude/projects/x/{UUID3}.jsonl"}}')
    add("held", "en", f"![diagram](attachments/{B64_NAME2}) shows the token flow")
    add("held", "en", f"background-image: url(data:image/png;base64,{PNG_DATA});")
    add("held", "en", "password = getpass.getpass('DB password: ')\nconn = connect(user=user, password=password)")
    add("held", "en", "client_secret=os.environ.get('CLIENT_SECRET'), token_url=TOKEN_URL")
    add("held", "en", "Authorization: Bearer <your-token>\nX-API-KEY: $BRAIN_API_KEY")
    add("held", "en", "test_token_refresh_handles_expired_session_v2 PASSED [ 42%]")
    add("held", "en", "kubectl create secret generic db --from-literal=password=$(cat /run/secrets/db_password)")
    add("held", "en", "The secret is stored in AWS Secrets Manager under prod/app/db; never paste it here.")
    add("held", "en", "aws iam list-users -> AIDAJQABLZS4A3QDU576Q (UserId), arn:aws:iam::123456789012:user/ci")
    add("held", "en", f"sha256 of the token file: {SHA256}")
    add("held", "en", f"ERROR: relation \"users\" does not exist (trace {fake(66, 32, HEX)})")
    add("held", "en", "password_reset_token_expiry_hours: 24\nsession_secret_rotation_days: 30")
    add("held", "en", "redis://localhost:6379/0 and postgres://app@db:5432/orders (no password: uses .pgpass)")
    add("held", "en", "Token: gho_************************************ (masked by gh auth status)")
    add("held", "en", "const password = process.env.DB_PASSWORD ?? '';\nconst apiKey = config.get('apiKey');")
    add("held", "ja", "シークレットは Secrets Manager に保存し、タスク定義の valueFrom で参照する。値は直接書かない。")
    add("held", "ja", "ECS タスクが起動しない。ResourceInitializationError: unable to pull secrets or registry auth")
    add("held", "ja", "認証トークンの形式が変わったので、ヘッダーの組み立てを修正しました（AuthHeaderBuilderV2）。")
    add("held", "en", "export ANTHROPIC_API_KEY=$(security find-generic-password -s anthropic -w)")
    add("held", "en", "  secret: true\n  password: str = Field(min_length=12)")
    add("held", "en", f"S3 object key: reports/2024/{UUID1}/summary.pdf")

    # ------------------------------------------------------------------ tune: command-line passwords (secrets review)
    add("tune", "en", "redis-cli -h cache -a S3cretPw! ping", ("password", "S3cretPw!"))
    add("tune", "en", "openssl rsa -in k.pem -passin pass:Hx7#kq2L -out plain.pem", ("password", "Hx7#kq2L"))
    add("tune", "en", "az login -u me@example.com -p Qw3rty!9x", ("password", "Qw3rty!9x"))
    add("tune", "en", "mongosh -u admin -p Zq9!vB3@ --authenticationDatabase admin", ("password", "Zq9!vB3@"))
    add("tune", "en", "redis-cli -a \"$REDIS_PASSWORD\" --no-auth-warning ping\nls -a ~/.ssh\ngit log -p -1")
    add("tune", "en", "mongosh -u admin -p --authenticationDatabase admin\nEnter password:")
    for n, token in enumerate([fake(1301, 20, URLSAFE, p("gl", "pat-")), fake(1302, 36, ALNUM, p("np", "m_")),
                               fake(1303, 34, string.ascii_letters, p("h", "f_")),
                               p("py", "pi-") + "AgEIcHlwaS5vcmc" + fake(1304, 60, URLSAFE), fake(1305, 32, HEX, p("sh", "pat_")),
                               p("S", "G.") + fake(1306, 22, URLSAFE) + "." + fake(1307, 43, URLSAFE),
                               fake(1308, 64, HEX, p("do", "p_v1_")), fake(1309, 24, URLSAFE, p("hv", "s.")),
                               fake(1310, 40, ALNUM, p("lin", "_api_"))]):
        add("tune", "en", f"the new one is {token} for the deploy", ("token", token))
    add("tune", "en", "npm_config_cache=/tmp/npm npm_package_version=1.2.3 hf_hub_download(repo_id) msg.SG.x")
    c.extend(_held2())
    c.extend(_held3())
    c.extend(_held4())
    c.extend(_gitleaks_generic())
    return c


# ---------------------------------------------------------------------------- held-out, second set
# Written for the secrets review of 2026-11-27 (decision 0029, "Secrets review"), before the
# detector was run on any of them: the shapes text takes on its way in through auto-learn (a tool
# result that holds JSON in a string, a `.env` written by the Write tool, a PEM key indented in
# YAML or with CRLF, query strings, connection strings, command-line passwords, Japanese around a
# key) and look-alikes a troubleshooting card holds (git shas, UUIDs, checksums, digests, public
# keys, fingerprints). Split "held2": `eval_redaction.py --split held2`. Two kinds were
# relabelled after the first run (the values unchanged): Telegram's tokens have a kind of their own.

H2_QUERY_TOKEN = fake(1001, 40, URLSAFE)
H2_QUERY_KEY = fake(1002, 32, ALNUM)
H2_DEPLOY_TOKEN = fake(1003, 32, ALNUM)
H2_BEARER = fake(1004, 40, ALNUM)
H2_BEARER2 = fake(1005, 48, URLSAFE)
H2_NESTED_PW = "Kq7#mZ2pLx"
H2_AZURE_KEY = fake(1006, 86, B64) + "=="
H2_SQLSERVER_PW = "Yk7!pQ3m"
H2_DOCKER_PW = "Xk9$mQ2wLp7"
H2_MYSQL_PW = "S3cr3tPass!"
H2_SSHPASS = "Wq4!nZ8r"
H2_AMQP_PW = "Rb7kQ2xZ"
H2_PGPASS = "Vq3#nT8w"
H2_JA_PW = "Mz8!qR4t"
H2_GLPAT = fake(1007, 20, URLSAFE, p("gl", "pat-"))
H2_OPENAI = fake(1008, 120, URLSAFE, p("s", "k-", "proj-"))
H2_STRIPE_RK = fake(1009, 24, ALNUM, p("r", "k_live_"))
H2_STRIPE_SK = fake(1010, 24, ALNUM, p("s", "k_live_"))
H2_GHP = fake(1011, 36, ALNUM, p("gh", "p_"))
H2_GHPAT = fake(1012, 82, ALNUM + "_", p("github", "_pat_"))
H2_SLACK_HOOK = "T0" + fake(1013, 7, UPPER_DIGITS) + "/B0" + fake(1014, 8, UPPER_DIGITS) + "/" + fake(1015, 24)
H2_AKIA = fake(1016, 16, UPPER_DIGITS, p("AK", "IA"))
H2_AWS_SECRET = fake(1017, 40, B64)
H2_TELEGRAM = fake(1018, 10, string.digits) + ":AA" + fake(1019, 33, URLSAFE)
H2_K8S_TOKEN = base64.b64encode(fake(1020, 32, ALNUM).encode()).decode()
H2_API_KEY_JSON = fake(1021, 32, ALNUM)
H2_PEM_YAML = pem(1022, "RSA PRIVATE KEY")
H2_PEM_CRLF = pem(1023, "PRIVATE KEY").replace("\n", "\r\n")
H2_PEM_ONE_LINE = " ".join(pem(1024, "OPENSSH PRIVATE KEY").split("\n"))
H2_OPENAI_JA = fake(1025, 48, ALNUM, p("s", "k-"))
H2_ANTHROPIC = fake(1026, 93, URLSAFE, p("s", "k-", "ant-", "api03-"))
H2_COOKIE = fake(1027, 64, URLSAFE)
H2_SIGNED_SIG = fake(1028, 43, URLSAFE)

H2_SHA1 = fake(1101, 40, HEX)
H2_SHA256 = fake(1102, 64, HEX)
H2_SHA256_B = fake(1103, 64, HEX)
H2_MD5 = fake(1104, 32, HEX)
H2_UUID = "9b2e4c71-3f0a-4d8e-b6c5-1a2b3c4d5e6f"
H2_UUID2 = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
H2_SSH_PUB = "AAAAC3NzaC1lZDI1NTE5AAAAI" + fake(1105, 43, B64)
H2_FINGERPRINT = fake(1106, 43, B64)
H2_GOSUM = fake(1107, 43, B64) + "="
H2_HOSTID = fake(1108, 76, B64) + "="
H2_GPG = fake(1109, 40, "0123456789ABCDEF")


def _held2() -> list[Case]:
    c: list[Case] = []

    def add(lang: str, text: str, *secrets: tuple[str, str]) -> None:
        c.append(Case(f"held2-{len(c) + 1:03d}", "held2", lang, text, list(secrets)))

    # secrets
    add("en", f"curl 'https://api.example.com/v1/export?format=csv&access_token={H2_QUERY_TOKEN}&page=2'",
        ("token", H2_QUERY_TOKEN))
    add("en", f"GET /search?q=tokyo&api_key={H2_QUERY_KEY} HTTP/1.1\" 403 117", ("API key", H2_QUERY_KEY))
    add("en", f"export DEPLOY_TOKEN={H2_DEPLOY_TOKEN}\n./deploy.sh staging", ("token", H2_DEPLOY_TOKEN))
    add("en", f'{{"url": "https://api.example.com/v2", "headers": {{"Authorization": "Bearer {H2_BEARER}"}}}}',
        ("bearer token", H2_BEARER))
    add("en", f'{{"body": "{{\\"user\\": \\"app\\", \\"password\\": \\"{H2_NESTED_PW}\\"}}", "status": 401}}',
        ("password", H2_NESTED_PW))
    add("en", f'"{{\\"Authorization\\": \\"Bearer {H2_BEARER2}\\"}}"', ("bearer token", H2_BEARER2))
    add("en", f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeprod;"
              f"AccountKey={H2_AZURE_KEY};EndpointSuffix=core.windows.net", ("API key", H2_AZURE_KEY))
    add("en", f"Server=tcp:db.internal,1433;Database=orders;User Id=sa;Password={H2_SQLSERVER_PW};Encrypt=true",
        ("password", H2_SQLSERVER_PW))
    add("en", f"docker login -u ci -p {H2_DOCKER_PW} registry.example.com", ("password", H2_DOCKER_PW))
    add("en", f"mysql -uroot -p{H2_MYSQL_PW} -h 127.0.0.1 shop", ("password", H2_MYSQL_PW))
    add("en", f"sshpass -p '{H2_SSHPASS}' ssh deploy@10.0.4.7 'systemctl restart api'", ("password", H2_SSHPASS))
    add("en", f"CELERY_BROKER_URL=amqp://worker:{H2_AMQP_PW}@rabbit:5672//", ("password in URL", H2_AMQP_PW))
    add("en", f"echo 'db.internal:5432:orders:app:{H2_PGPASS}' >> ~/.pgpass && chmod 600 ~/.pgpass",
        ("password", H2_PGPASS))
    add("ja", f"本番環境のパスワードは「{H2_JA_PW}」です。共有しないでください。", ("password", H2_JA_PW))
    add("en", f"git remote add origin https://oauth2:{H2_GLPAT}@gitlab.com/acme/infra.git", ("token", H2_GLPAT))
    add("ja", f"本番のAPIキー：{H2_OPENAI}を使ってください", ("OpenAI API key", H2_OPENAI))
    add("en", f"STRIPE_RESTRICTED_KEY={H2_STRIPE_RK}", ("Stripe key", H2_STRIPE_RK))
    add("en", f"OPENAI_API_KEY={H2_OPENAI_JA}\nSTRIPE_SECRET_KEY={H2_STRIPE_SK}\nDEBUG=false",
        ("OpenAI API key", H2_OPENAI_JA), ("Stripe key", H2_STRIPE_SK))
    add("ja", f"トークンは「{H2_GHP}」です", ("GitHub token", H2_GHP))
    add("ja", f"トークン{H2_GHPAT}を設定しました", ("GitHub token", H2_GHPAT))
    add("en", f"POST https://hooks.slack.com/services/{H2_SLACK_HOOK} -> 200 ok", ("Slack webhook", H2_SLACK_HOOK))
    add("en", f"<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist "
              f"in our records.</Message><AWSAccessKeyId>{H2_AKIA}</AWSAccessKeyId><RequestId>4442587FB7D0A2F9"
              f"</RequestId><HostId>{H2_HOSTID}</HostId></Error>", ("AWS access key id", H2_AKIA))
    add("ja", f"# 本番用の認証情報\n[prod]\naws_access_key_id={H2_AKIA}\naws_secret_access_key={H2_AWS_SECRET}\n",
        ("AWS access key id", H2_AKIA), ("AWS secret access key", H2_AWS_SECRET))
    add("en", f"curl -s https://api.telegram.org/bot{H2_TELEGRAM}/sendMessage -d chat_id=42 -d text=deployed",
        ("Telegram bot token", H2_TELEGRAM))
    add("en", f"apiVersion: v1\nkind: Secret\ndata:\n  api-token: {H2_K8S_TOKEN}\n", ("token", H2_K8S_TOKEN))
    add("en", f'{{"service": "maps", "apiKey": "{H2_API_KEY_JSON}", "region": "ap-northeast-1"}}',
        ("API key", H2_API_KEY_JSON))
    indented = "\n".join("    " + line for line in H2_PEM_YAML.splitlines())
    add("en", f"tls:\n  key: |\n{indented}\n  cert: ./tls.crt", ("private key", indented.strip()))
    add("en", f"$ type key.pem\r\n{H2_PEM_CRLF}\r\n", ("private key", H2_PEM_CRLF))
    add("en", f"ran `cat ~/.ssh/id_ed25519`, which printed {H2_PEM_ONE_LINE} then exit 0", ("private key", H2_PEM_ONE_LINE))
    add("en", f"ANTHROPIC_API_KEY={H2_ANTHROPIC}", ("Anthropic API key", H2_ANTHROPIC))
    add("en", f"Cookie: sessionid={H2_COOKIE}; csrftoken=abc", ("token", H2_COOKIE))
    add("en", f"https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={H2_AKIA}"
              f"%2F20241127%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature={H2_SHA256}",
        ("AWS access key id", H2_AKIA))

    # look-alikes
    add("en", f"Fixed in {H2_SHA1}: the token refresh raced the session write. Revert with `git revert {H2_SHA1[:12]}`.")
    add("en", f"Expected checksum {H2_SHA256} but got {H2_SHA256_B} for node-v20.11.0-linux-x64.tar.xz")
    add("en", f"auth failed for session {H2_UUID2} (request {H2_UUID})")
    add("en", f"kind: Secret\nmetadata:\n  name: db-credentials\n  uid: {H2_UUID}\n  resourceVersion: \"48213\"")
    add("en", f"Add this deploy key to GitHub: ssh-ed25519 {H2_SSH_PUB} ci@build")
    add("en", f"ED25519 key fingerprint is SHA256:{H2_FINGERPRINT}.\nAre you sure you want to continue connecting?")
    add("en", f"github.com/golang-jwt/jwt/v5 v5.2.0 h1:{H2_GOSUM}")
    add("en", f"gpg --recv-keys {H2_GPG}\ngpg: key {H2_GPG[-16:]}: public key imported")
    add("en", f"cache key: node-modules-{H2_SHA256}")
    add("ja", f"キャッシュキー node-{H2_MD5} が一致しないため再ビルドしました。")
    add("ja", f"トークンのハッシュ（sha256）は {H2_SHA256_B} です。値そのものは保存していません。")
    add("en", "AUTH_TOKEN_TTL=3600\nSESSION_SECRET_LENGTH=64\nPASSWORD_HASHER=argon2")
    add("en", f"ETag: \"{H2_MD5}\"\nx-amz-request-id: 4442587FB7D0A2F9")
    add("en", f"secret scanning baseline: {H2_SHA256}")
    add("en", "password authentication failed for user \"orders\" (SQLSTATE 28P01); check PGPASSWORD is exported")
    add("en", "export GITHUB_TOKEN=$(gh auth token)\nexport NPM_TOKEN=${NPM_TOKEN:?missing}")
    add("ja", "API キーを環境変数 OPENAI_API_KEY に設定してから再実行してください。")
    add("en", f"Uploaded as s3://acme-reports/2024/{H2_UUID}/{H2_SHA1}.pdf (key reused)")
    return c


# ---------------------------------------------------------------------------- from gitleaks
# The true and false positives of gitleaks' `generic-api-key` rule (MIT License, Copyright (c)
# 2019 Zachary Rice; cmd/generate/config/rules/generic.go and utils/generate.go at
# b58d3f102cf3): the syntaxes a secret is written in, and real text that looks like one. Read
# while the rules were written, so they are part of the tuning split.

_GITLEAKS_TEMPLATES = [
    '{i}Token="{s}"', '{i}Token = "{s}"', '{i}Token={s}', '{i}Token = {s}', '{{\n    "{i}_token": "{s}"\n}}',
    '{{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}}', '<{i}Token>\n    {s}\n</{i}Token>',
    '{i}_token: {s}', "{i}_token: '{s}'", '{i}_token: "{s}"', 'string {i}Token = "{s}";',
    'var {i}Token string = "{s}"', '{i}Token := "{s}"', '{i}Token := `{s}`', 'String {i}Token = "{s}";',
    'var {i}Token = "{s}"', '${i}Token .= "{s}"', "{i}Token = '{s}'", '{i}Token = "{s}"',
    'System.setProperty("{I}_TOKEN", "{s}")', '  "{i}Token" => "{s}"', '{i}_TOKEN = "{s}"', '{i}_TOKEN := "{s}"',
    '{i}_TOKEN ::= "{s}"', '{i}_TOKEN :::= "{s}"', '{i}_TOKEN ?= "{s}"',
]


def _gitleaks_generic() -> list[Case]:
    out = []
    for n, secret in enumerate(["CLOJARS_34bf0e88955ff5a1c328d6a7491acc4f48e865a7b8dd4d70a70749037443",
                                "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB"]):
        for m, template in enumerate(_GITLEAKS_TEMPLATES):
            text = template.format(i="generic", I="GENERIC", s=secret)
            out.append(Case(f"gl-tp-{n}-{m:02d}", "tune", "en", text, [("token", secret)]))
    plausible = lambda seed, n, alphabet=ALNUM: fake(900 + seed, n, alphabet)   # noqa: E731
    dotted = ALNUM + "-_.="
    singles = [
        ("'access_token': 'eyJ0eXAioiJKV1slS3oASx=='", "token", "eyJ0eXAioiJKV1slS3oASx=="),
        (f'some_api_token_123 = "{plausible(1, 60)}"', "token", plausible(1, 60)),
        ('"user_auth": "am9obmRvZTpkMDY5NGIxYi1jMTcxLTQ4ODYt+TMyYS0wMmUwOWQ1/mIwNjc="', "token",
         "am9obmRvZTpkMDY5NGIxYi1jMTcxLTQ4ODYt+TMyYS0wMmUwOWQ1/mIwNjc="),
        ('"credentials" : "0afae57f3ccfd9d7f5767067bc48b30f719e271ba470488056e37ab35d4b6506"', "secret",
         "0afae57f3ccfd9d7f5767067bc48b30f719e271ba470488056e37ab35d4b6506"),
        (f"creds = {plausible(2, 30)}", "secret", plausible(2, 30)),
        (f"private-key: {plausible(3, 100, dotted)}", "API key", plausible(3, 100, dotted)),
        (f"passwd = {plausible(4, 30, dotted)}", "password", plausible(4, 30, dotted)),
        ('"client_secret" : "6da89121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde",', "secret",
         "6da89121079f83b2eb6acccf8219ea982c3d79bccc3e9c6a85856480661f8fde"),
        (f"mySecretString={plausible(5, 30)}", "secret", plausible(5, 30)),
        (f"todo_secret_do_not_commit = {plausible(6, 30)}", "secret", plausible(6, 30)),
        (' utils.GetEnvOrDefault("api_token", "dafa7817-e246-48f3-91a7-e87653d587b8")', "token",
         "dafa7817-e246-48f3-91a7-e87653d587b8"),
    ]
    for n, (text, kind, value) in enumerate(singles):
        out.append(Case(f"gl-tp-x{n:02d}", "tune", "en", text, [(kind, value)]))
    negatives = [
        '"accessor":"rA1wk0Y45YCufyfq",', "report_access_id: e8e4df51-2054-49b0-ab1c-516ac95c691d",
        'accessibilityYesOptionId = "0736f5ef-7e88-499a-80cc-90c85d2a5180"',
        "_RandomAccessIterator>\n_LIBCPP_CONSTEXPR_AFTER_CXX11 ", 'this.ultraPictureBox1.Name = "ultraPictureBox1";',
        "rapidstring:marm64-uwp=fail", "event-bus-message-api:rc0.15.0_20231217_1420-SNAPSHOT'",
        "COMMUNICATION_API_VERSION=rc0.13.0_20230412_0712-SNAPSHOT",
        "MantleAPI_version=9a038989604e8da62ecddbe2094b16ce1b778be1",
        "[DEBUG]\t\torg.slf4j.slf4j-api:jar:1.7.8.:compile (version managed from default)",
        "apiUrl=apigee.corpint.com", 'X-API-Name": "NRG0-Hermes-INTERNAL-API",', 'author = "james.fake@ymail.com",',
        "X-MS-Exchange-Organization-AuthSource: sm02915.int.contoso.com", "Authentication-Results: 5h.ca.iphmx.com",
        "withCredentials([usernamePassword(credentialsId: '29f63271-dc2f-4734-8221-5b31b5169bac', "
        "usernameVariable: 'USERNAME', passwordVariable: 'PASSWORD')]) {",
        "credentialsId: 'ff083f76-7804-4ef1-80e4-fe975bb9141b'", '  "credentialId": "B9mTcFSck2LzJO2S3ols63",',
        'environment {\n\tCREDENTIALS_ID = "K8S_CRED"\n}', "dev.credentials.url=dev-lb1.api.f4ke.com:5215",
        'keyword: "Befaehigung_P2"', 'public_key = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
        "pub const X509_pubkey_st = struct_X509_pubkey_st;", "|| pIdxKey->default_rc==0",
        f"primaryKey={plausible(7, 30, dotted)}", f"foreignKey={plausible(8, 30, dotted)}",
        f"key_down_event={plausible(9, 30, dotted)}", f"issuerKeyHash={plausible(10, 30, dotted)}",
        '<entry key="jetbrains.mps.v8_elimination" value="executed" />', "IceSSL.KeyFile=s_rsa1024_priv.pem",
        '"bucket_key": "SalesResults-1.2"', "schemaKey = 'DOC_Vector_5_32'", 'sequenceKey = "18"',
        "app.keystore.file=env/cert.p12", "-DKEYTAB_FILE=/tmp/app.keytab",
        "\tdoc.Security.KeySize = PdfEncryptionKeySize.Key128Bit;", "o.keySelector=n,o.haKey=!1,",
        '                                "key_name": "prod5zyxlmy-cmk",',
        '                                "kms_key_id": "555ea4a3-d53a-4412-9c66-3a7cb667b0d6",',
        '\t"key_vault_name": "web21prqodx24021",', "  keyVaultToStoreSecrets: cmp2-qat-1208358310",
        'const validKeyChars = "0123456789abcdefghijklmnopqrstuvwxyz_-."',
        'const keyStr = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"',
        "key_length = XSalsa20.key_length", "KeyPair = X25519.KeyPair",
        'AVEncVideoMaxKeyframeDistance, "2987123a-ba93-4704-b489-ec1e5f25292c"',
        "password combination.\n\nR5: Regulatory--21", "PuttyPassword=0", 'LLM_SECRET_NAME = "NEXUS-GPT4-API-KEY"',
        "  <UserSecretsId>79a3edd0-2092-40a2-a04d-dcb46d5ca9ed</UserSecretsId>", "secret_length = X25519.secret_length",
        "secretSize must be >= XXH3_SECRET_SIZE_MIN",
        "#RUN --mount=type=secret,id=jfrog_secret \\\n#    JFROG_SECRET = $(cat /run/secrets/jfrog_secret) && \\",
        "    access_token_url='https://github.com/login/oauth/access_token',",
        'publicToken = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
        '<SourceFile SourceLocation="F:\\Extracts\\" TokenFile="RTL_INST_CODE.cer">',
        'notes            = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"',
        "csrf-token=Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7+V4eUrLfpuyOuxmiW9rhROG/Whikle15syazJOkrjJa3U2AbhIvUw==",
        'clientId = "73082700-1f09-405b-80d0-3131bfd6272d"', "GITHUB_API_KEY=\nDYNATRACE_API_KEY=",
        "snowflake.password=\njdbc.snowflake.url=",
        "import { chain_Anvil1_Key, chain_Anvil2_Key } from '../blockchain-tests/pallets/supported-chains/consts';",
        'SRCREV_moby = "43fc912ef59a83054ea7f6706df4d53a7dea4d80"',
        'LIC_FILES_CHKSUM = "file://${WORKDIR}/license.html;md5=5c94767cedb5d6987c902ac850ded2c6"',
    ]
    for n, text in enumerate(negatives):
        out.append(Case(f"gl-fp-{n:02d}", "tune", "en", text))
    return out



# ---------------------------------------------------------------------------- held-out, third set
# Written after the rules the second set's misses led to (escaped JSON quotes, command-line
# passwords, `.pgpass`, session cookies, Japanese quotes, Telegram) and before they were run on
# these: the same kinds in other words, and the look-alikes those rules could take.
# Split "held3": `eval_redaction.py --split held3`.

H3_SM_PW = "Pz4&wQ9rNm"
H3_SM_TOKEN = fake(1201, 40, ALNUM)
H3_MYSQL_PW = "Rt6%hJ2k"
H3_SSHPASS = "Dn3!vX7q"
H3_PODMAN_PW = "Lm5^tB8w"
H3_PGPASS = "Gh2@sK9p"
H3_COOKIE = fake(1202, 48, ALNUM)
H3_JA_TOKEN = fake(1203, 32, ALNUM)
H3_TELEGRAM = fake(1204, 9, string.digits) + ":AA" + fake(1205, 33, URLSAFE)
H3_ESC_BEARER = fake(1206, 36, ALNUM)


def _held3() -> list[Case]:
    c: list[Case] = []

    def add(lang: str, text: str, *secrets: tuple[str, str]) -> None:
        c.append(Case(f"held3-{len(c) + 1:03d}", "held3", lang, text, list(secrets)))

    # secrets
    add("en", f'{{"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:app-AbCdEf", '
              f'"SecretString": "{{\\"db_password\\": \\"{H3_SM_PW}\\", \\"port\\": 5432}}"}}',
        ("password", H3_SM_PW))
    add("en", f'kubectl get secret api -o json | jq .data -> "config.json": "{{\\"api_token\\":\\"{H3_SM_TOKEN}\\"}}"',
        ("token", H3_SM_TOKEN))
    add("en", f"mysqldump --single-transaction -u backup -p{H3_MYSQL_PW} orders > orders.sql", ("password", H3_MYSQL_PW))
    add("en", f'sshpass -p "{H3_SSHPASS}" scp dump.sql deploy@db1:/tmp/', ("password", H3_SSHPASS))
    add("en", f"podman login quay.io -u robot -p {H3_PODMAN_PW}", ("password", H3_PODMAN_PW))
    add("en", f'printf "*:*:*:postgres:{H3_PGPASS}\\n" > ~/.pgpass', ("password", H3_PGPASS))
    add("en", f"curl -b 'PHPSESSID={H3_COOKIE}' https://shop.example.com/admin\nCookie: PHPSESSID={H3_COOKIE}",
        ("token", H3_COOKIE))
    add("ja", f"トークン：『{H3_JA_TOKEN}』をヘッダーに入れてください", ("token", H3_JA_TOKEN))
    add("en", f"TELEGRAM_BOT_TOKEN={H3_TELEGRAM}", ("Telegram bot token", H3_TELEGRAM))
    add("en", f'"{{\\"headers\\":{{\\"authorization\\":\\"Bearer {H3_ESC_BEARER}\\"}}}}"',
        ("bearer token", H3_ESC_BEARER))

    # look-alikes
    add("en", "mysql -u root -p orders < schema.sql\nEnter password:")
    add("en", "docker run -p 8080:80 -p 5432:5432 --name web nginx")
    add("en", "ssh -p 2222 deploy@10.0.0.5 && mkdir -p /srv/app/releases")
    add("en", "Cookie: theme=dark; lang=ja; _ga=GA1.2.1234567890.1700000000")
    add("en", "pg_dump -h db -p 5432 -U app orders | gzip > orders.sql.gz")
    add("en", "sshpass -p \"$SSH_PASSWORD\" ssh deploy@host uptime")
    add("en", '"{\\"password\\": \\"\\", \\"user\\": \\"app\\"}"')
    add("en", '{"message": "{\\"error\\": \\"invalid_token\\", \\"error_description\\": \\"The access token expired\\"}"}')
    add("en", "docker login -u ci --password-stdin registry.example.com < token.txt")
    add("en", "10.0.3.7:5432:orders:app:*")
    add("ja", "トークン：有効期限切れ（401）。再発行してください。")
    add("en", "echo 'localhost:5432:*:postgres:' >> notes.txt")
    return c


# ---------------------------------------------------------------------------- held-out, fourth set
# Written for the rule that judges a plain word by the name it is given to (decision 0029, "A plain
# word given to a name that says secret", h14-small), before that rule existed and before the
# detector was run on any of them: plain-word passwords, secrets and keys in shell, env files,
# compose YAML, ini and Java properties, and look-alikes whose name holds a secret's word but says
# something else of it, or whose value is a placeholder or a reference.
# Split "held4": `eval_redaction.py --split held4`.


def _held4() -> list[Case]:
    c: list[Case] = []

    def add(lang: str, text: str, *secrets: tuple[str, str]) -> None:
        c.append(Case(f"held4-{len(c) + 1:03d}", "held4", lang, text, list(secrets)))

    # secrets
    add("en", "PGPASSWORD=orchard psql -h db.internal -U app orders -c 'select 1'", ("password", "orchard"))
    add("en", "export DB_PASSWORD=hunter2\n./manage.py migrate", ("password", "hunter2"))
    add("en", "services:\n  db:\n    image: mysql:8\n    environment:\n      MYSQL_ROOT_PASSWORD: tangerine\n"
              "      MYSQL_DATABASE: shop\n    ports:\n      - \"3306:3306\"", ("password", "tangerine"))
    add("en", "[client]\nuser = app\npassword = \"letmein\"\nhost = db.internal", ("password", "letmein"))
    add("en", "spring.datasource.url=jdbc:postgresql://db:5432/orders\nspring.datasource.password=bluejay",
        ("password", "bluejay"))
    add("en", "MYSQL_PWD=quokka mysql -u app -h 127.0.0.1 orders < seed.sql", ("password", "quokka"))
    add("en", "REDIS_SECRET=walrus node server.js", ("secret", "walrus"))
    add("en", "export STAGING_API_KEY=marmalade\ncurl -H \"X-Api-Key: $STAGING_API_KEY\" https://staging.example.com/v1/ping",
        ("API key", "marmalade"))
    add("en", "  postgres:\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: sandcastle",
        ("password", "sandcastle"))

    # look-alikes
    add("en", "PASSWORD_MIN_LENGTH=12\nTOKEN_TTL=3600\nSECRET_ROTATION_DAYS=90")
    add("en", 'password_field = "password"\nusername_field = "email"')
    add("en", "PWD=/srv/app OLDPWD=/home/deploy bash -lc 'make test'")
    add("en", "MYSQL_ROOT_PASSWORD: ${MYSQL_ROOT_PASSWORD}\nDB_PASSWORD=$DB_PASSWORD\npassword: <your-password>")
    add("en", "password: changeme\nsecret: xxx\napi_key: '***'\ntoken: ''")
    add("en", "Token: expired (401); run `gh auth login` again")
    add("en", "max_tokens: 1024\ntoken_type: bearer\nsecret_name: db-credentials")
    add("en", "password: str = Field(min_length=8)\napi_key = settings.API_KEY")
    add("en", "$ pwd\n/srv/app\n$ echo $PWD\n/srv/app")
    return c


CASES = _cases()
