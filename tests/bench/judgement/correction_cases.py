"""Labelled sessions for auto-learn's correction rule (review7), English and Japanese: a user's
"use X, never / not Y" after a refused or failed tool call, a correction that is about an open
failure (it belongs to that failure's lesson) and one that is not (it is a lesson of its own, and
the failure's lesson, if any, does not carry it), and instructions that are not corrections.

The expected candidates were written BEFORE the product was run on these sessions. `split`:
"dev" was looked at while the rule was changed; "held" was run once before and once after the
first change, then one change was made on what it showed (h7: "いいえ、...変えないでください" was no
correction); "blind" was written after that, and run once on the final rule.

Each case: `script(session)` plays the session (transcript_builder.Session); `expect` lists the
candidates it must give (text that must appear in the title / problem / solution, and
`solution_not`: text that must not be in the solution, e.g. a step the user rejected); `absent`:
text no candidate may hold anywhere (a correction attached to a failure it is not about, a
lesson of a failure nothing fixed). A candidate that matches no expectation is a false one.
"""

from __future__ import annotations

from transcript_builder import Session

CURL_SSL = ("curl: (60) SSL certificate problem: unable to get local issuer certificate\nMore details here: "
            "https://curl.se/docs/sslcerts.html")


# ---------------------------------------------------------------------------- dev

def d1_refused_use_never(s: Session) -> Session:
    s.user("Add date-fns to the web app.")
    s.refused("Bash", {"command": "npm install date-fns", "description": "Install date-fns"},
              text="Installing date-fns with npm.")
    s.user("Use pnpm in this repo, never npm.")
    s.bash("pnpm add date-fns", "Packages: +1\ndependencies:\n+ date-fns 4.1.0")
    s.say("Added date-fns with pnpm.")
    return s


def d2_refused_ja_forbidden(s: Session) -> Session:
    s.user("zod を追加してください。")
    s.refused("Bash", {"command": "npm install zod", "description": "Install zod"}, text="npm で zod を入れます。")
    s.user("pnpm を使ってください。このリポジトリでは npm は禁止です。")
    s.bash("pnpm add zod", "Packages: +1\ndependencies:\n+ zod 3.23.8")
    s.say("pnpm で zod を追加しました。")
    return s


def d3_failed_use_not(s: Session) -> Session:
    s.user("Install requests for the scraper.")
    s.bash("pip install requests", "error: externally-managed-environment\n\n× This environment is externally "
           "managed\n╰─> To install Python packages system-wide, try apt install python3-xyz", error=True)
    s.user("Use uv, not pip.")
    s.bash("uv add requests", "Resolved 5 packages in 120ms\nInstalled 5 packages in 8ms\n + requests==2.32.3")
    s.say("Added requests with uv.")
    return s


def d4_unrelated_correction_curl_open(s: Session) -> Session:
    s.user("Check the staging health endpoint.")
    s.bash("curl -fsS https://staging.example.com/health", CURL_SSL, error=True)
    s.say("curl does not trust the staging certificate; the corporate CA is probably missing.")
    s.user("Leave that for now. Rename app/utils.py to app/helpers.py.")
    s.bash("git mv app/utils.py app/helpers.py", "", text="Renaming the module.")
    s.edit("/home/dev/work/shop-api/app/main.py", "from app.utils import slugify", "from app.helpers import slugify")
    s.user("No, don't call it helpers. Name it text_utils.py.")
    s.bash("git mv app/helpers.py app/text_utils.py", "")
    s.edit("/home/dev/work/shop-api/app/main.py", "from app.helpers import slugify", "from app.text_utils import slugify")
    s.say("Renamed to app/text_utils.py.")
    return s


def d5_unrelated_ja_correction_curl_open(s: Session) -> Session:
    s.user("ステージングのヘルスチェックを確認してください。")
    s.bash("curl -fsS https://staging.example.com/health", CURL_SSL, error=True)
    s.say("証明書の検証で失敗しています。社内 CA が入っていないようです。")
    s.edit("/home/dev/work/shop-api/README.md", "## Setup", "## セットアップ", text="ついでに README の見出しを日本語にします。")
    s.user("違います、README の見出しは英語のままにしてください。")
    s.edit("/home/dev/work/shop-api/README.md", "## セットアップ", "## Setup")
    s.say("見出しを英語に戻しました。")
    return s


def d6_correction_about_failure(s: Session) -> Session:
    s.user("go test fails locally.")
    s.bash("go test ./...", "--- FAIL: TestOrders (0.00s)\n    orders_test.go:18: dial tcp 127.0.0.1:5432: connect: "
           "connection refused\nFAIL\texample.com/shop/internal/orders\t0.011s\nFAIL", error=True)
    s.bash("sudo service postgresql start", " * Starting PostgreSQL 16 database server", text="Starting Postgres.")
    s.user("No, never start postgres on the host. Use docker compose up -d db.")
    s.bash("sudo service postgresql stop && docker compose up -d db && go test ./...",
           " * Stopping PostgreSQL 16 database server\n Container shop-db-1  Started\n"
           "ok  \texample.com/shop/internal/orders\t0.052s")
    s.say("Tests pass with the compose database.")
    return s


def d7_failed_refused_ja(s: Session) -> Session:
    s.user("ビルドが通りません。")
    s.bash("npm run build", "> web@1.4.0 build\n> next build\n\nModule not found: Error: Can't resolve 'dayjs'",
           error=True)
    s.refused("Bash", {"command": "npm install dayjs", "description": "Install dayjs"},
              text="dayjs が依存関係にありません。入れます。")
    s.user("yarn を使ってください。npm は使わない方針です。")
    s.bash("yarn add dayjs", "success Saved 1 new dependency.\n└─ dayjs@1.11.13")
    s.bash("yarn build", "$ next build\n✓ Compiled successfully")
    s.say("yarn で dayjs を追加し、ビルドが通りました。")
    return s


def d8_request_not_correction(s: Session) -> Session:
    s.user("Format the changed files.")
    s.bash("black app/", "reformatted app/orders.py\nAll done! 1 file reformatted.")
    s.say("Formatted app/orders.py.")
    s.user("Great. From now on use ruff format, not black, for this repo's new services.")
    s.say("Noted.")
    return s


# ---------------------------------------------------------------------------- held

def h1_refused_use_never(s: Session) -> Session:
    s.user("Add lodash please.")
    s.refused("Bash", {"command": "yarn add lodash", "description": "Add lodash"}, text="Adding lodash with yarn.")
    s.user("Use npm here, never yarn.")
    s.bash("npm install lodash", "added 1 package, and audited 412 packages in 2s")
    s.say("Installed lodash with npm.")
    return s


def h2_refused_ja(s: Session) -> Session:
    s.user("httpx を追加して。")
    s.refused("Bash", {"command": "pip install httpx", "description": "Install httpx"}, text="pip で入れます。")
    s.user("poetry を使ってください。pip は使わないで。")
    s.bash("poetry add httpx", "Using version ^0.27.2 for httpx\nWriting lock file")
    s.say("poetry で httpx を追加しました。")
    return s


def h3_failed_use_not(s: Session) -> Session:
    s.user("Start the stack.")
    s.bash("docker-compose up -d", "bash: docker-compose: command not found", error=True)
    s.user("Use docker compose, not docker-compose.")
    s.bash("docker compose up -d", " Container shop-db-1  Started\n Container shop-api-1  Started")
    s.say("The stack is up.")
    return s


def h4_unrelated_ja_correction_curl_open(s: Session) -> Session:
    s.user("API のヘルスチェックをしてください。")
    s.bash("curl -fsS https://api.example.com/health", "curl: (7) Failed to connect to api.example.com port 443 "
           "after 3 ms: Couldn't connect to server", error=True)
    s.user("それは置いておいて、src/user.ts の変数名を整理して。")
    s.edit("/home/dev/work/web/src/user.ts", "const userId = ", "const user_id = ", text="snake_case にそろえます。")
    s.user("違います、変数名は camelCase のままにしてください。")
    s.edit("/home/dev/work/web/src/user.ts", "const user_id = ", "const userId = ")
    s.say("camelCase に戻しました。")
    return s


def h5_correction_about_failure(s: Session) -> Session:
    s.user("The tests don't run.")
    s.bash("pytest -q", "E   ModuleNotFoundError: No module named 'requests'\n1 error in 0.08s", error=True)
    s.bash("pip install requests", "Successfully installed requests-2.32.3", text="Installing requests.")
    s.user("No, don't pip install into the system python. Add requests to pyproject.toml and run uv sync.")
    s.edit("/home/dev/work/scraper/pyproject.toml", 'dependencies = []', 'dependencies = ["requests>=2.32"]')
    s.bash("uv sync && pytest -q", "Resolved 5 packages\n....\n4 passed in 0.21s")
    s.say("Tests pass: requests is a project dependency now.")
    return s


def h6_instruction_after_success(s: Session) -> Session:
    s.user("Deploy the docs site to staging.")
    s.bash("make deploy-docs ENV=staging", "Uploading 42 files... done\nhttps://docs.staging.example.com")
    s.say("Deployed to staging.")
    s.user("Thanks. Next time use the new bucket, not the old one, when we go to prod.")
    s.say("Will do.")
    return s


def h7_ja_correction_about_failure(s: Session) -> Session:
    s.user("make deploy が失敗します。")
    s.bash("make deploy", "permission denied while trying to connect to the Docker daemon socket at "
           "unix:///var/run/docker.sock\nmake: *** [Makefile:12: deploy] Error 1", error=True)
    s.bash("sudo chmod 666 /var/run/docker.sock", "", text="ソケットの権限を広げます。")
    s.user("いいえ、docker.sock の権限は変えないでください。docker グループに追加してください。")
    s.bash("sudo chmod 660 /var/run/docker.sock && sudo usermod -aG docker $USER", "")
    s.bash("make deploy", "docker build -t shop-api .\nSuccessfully built 3f2a1c\nDeployed.")
    s.say("docker グループに追加してデプロイできました。")
    return s


def h8_refused_not_use(s: Session) -> Session:
    s.user("Rebuild the bundle from scratch.")
    s.refused("Bash", {"command": "rm -rf dist && npm run build", "description": "Clean build"},
              text="Removing dist and rebuilding.")
    s.user("Not rm -rf, use npm run clean.")
    s.bash("npm run clean && npm run build", "> clean\n> rimraf dist\n\n> build\n✓ Compiled successfully")
    s.say("Rebuilt after npm run clean.")
    return s


CASES = [
    dict(key="d1_refused_use_never", split="dev", script=d1_refused_use_never, cwd="/home/dev/work/web",
         expect=[dict(title=["pnpm"], solution=["pnpm"], solution_not=["npm install date-fns"])]),
    dict(key="d2_refused_ja_forbidden", split="dev", script=d2_refused_ja_forbidden, cwd="/home/dev/work/web",
         expect=[dict(title=["pnpm"], solution=["pnpm"], solution_not=["npm install zod"])]),
    dict(key="d3_failed_use_not", split="dev", script=d3_failed_use_not,
         expect=[dict(problem=["externally-managed-environment"], solution=["uv add requests"],
                      solution_not=["pip install requests"])]),
    dict(key="d4_unrelated_correction_curl_open", split="dev", script=d4_unrelated_correction_curl_open,
         expect=[dict(title=["text_utils"])], absent=["SSL certificate"]),
    dict(key="d5_unrelated_ja_correction_curl_open", split="dev", script=d5_unrelated_ja_correction_curl_open,
         expect=[dict(title=["README"], solution=["英語のまま"])], absent=["SSL certificate"]),
    dict(key="d6_correction_about_failure", split="dev", script=d6_correction_about_failure, cwd="/home/dev/work/shop",
         expect=[dict(problem=["connection refused"], solution=["docker compose up -d db"],
                      solution_not=["service postgresql start"])]),
    dict(key="d7_failed_refused_ja", split="dev", script=d7_failed_refused_ja, cwd="/home/dev/work/web",
         expect=[dict(problem=["dayjs"], solution=["yarn add dayjs"], solution_not=["npm install dayjs"])]),
    dict(key="d8_request_not_correction", split="dev", script=d8_request_not_correction, expect=[]),
    dict(key="h1_refused_use_never", split="held", script=h1_refused_use_never, cwd="/home/dev/work/web",
         expect=[dict(title=["npm"], solution=["never yarn"], solution_not=["yarn add lodash"])]),
    dict(key="h2_refused_ja", split="held", script=h2_refused_ja, cwd="/home/dev/work/scraper",
         expect=[dict(title=["poetry"], solution=["poetry"], solution_not=["pip install httpx"])]),
    dict(key="h3_failed_use_not", split="held", script=h3_failed_use_not,
         expect=[dict(problem=["command not found"], solution=["docker compose up -d"])]),
    dict(key="h4_unrelated_ja_correction_curl_open", split="held", script=h4_unrelated_ja_correction_curl_open,
         cwd="/home/dev/work/web", expect=[dict(title=["camelCase"])], absent=["Failed to connect"]),
    dict(key="h5_correction_about_failure", split="held", script=h5_correction_about_failure,
         cwd="/home/dev/work/scraper",
         expect=[dict(problem=["requests"], solution=["uv sync"], solution_not=["pip install requests"])]),
    dict(key="h6_instruction_after_success", split="held", script=h6_instruction_after_success, expect=[]),
    dict(key="h7_ja_correction_about_failure", split="held", script=h7_ja_correction_about_failure,
         expect=[dict(problem=["permission denied"], solution=["usermod"], solution_not=["chmod 666"])]),
    dict(key="h8_refused_not_use", split="held", script=h8_refused_not_use, cwd="/home/dev/work/web",
         expect=[dict(title=["npm run clean"], solution=["npm run clean"], solution_not=["rm -rf dist &&"])]),
]


# ---------------------------------------------------------------------------- blind
# Written after the dev and held runs (and after a change made on what the held part showed:
# "いいえ、...変えないでください"), with the expected candidates, before anything ran on them.

def b1_refused_never(s: Session) -> Session:
    s.user("Push the fix.")
    s.refused("Bash", {"command": "git push --force origin main", "description": "Force push"},
              text="The remote has diverged; force-pushing.")
    s.user("Never force-push main. Use a pull request.")
    s.bash("git push origin HEAD:fix/orders-rounding", "To github.com:acme/shop.git\n * [new branch] HEAD -> fix/orders-rounding")
    s.say("Pushed to fix/orders-rounding; open a pull request from there.")
    return s


def b2_failed_ja_instead(s: Session) -> Session:
    s.user("マイグレーションを流してください。")
    s.bash("python manage.py migrate", "Traceback (most recent call last):\n  File \"/usr/lib/python3/django/db/backends/"
           "sqlite3/base.py\", line 328, in execute\ndjango.db.utils.OperationalError: no such table: auth_user",
           error=True)
    s.user("sqlite ではなく docker の Postgres を使ってください。")
    s.bash("docker compose up -d db && DATABASE_URL=postgres://app@localhost:5432/app python manage.py migrate",
           " Container shop-db-1  Started\nOperations to perform:\n  Apply all migrations: admin, auth\n"
           "Running migrations:\n  Applying auth.0001_initial... OK")
    s.say("Postgres でマイグレーションが通りました。")
    return s


def b3_unrelated_correction_same_turn(s: Session) -> Session:
    s.user("npm test is red.")
    s.bash("npm test", " FAIL  src/list.test.ts\nTypeError: Cannot read properties of undefined (reading 'map')\n"
           " ❯ renderList src/list.ts:9:18", error=True)
    s.edit("/home/dev/work/web/CHANGELOG.md", "## Unreleased\n", "## Unreleased\n- Fix list rendering\n",
           text="Noting the fix in the changelog first.")
    s.user("Don't touch the CHANGELOG, the release bot writes it.")
    s.edit("/home/dev/work/web/CHANGELOG.md", "## Unreleased\n- Fix list rendering\n", "## Unreleased\n")
    s.say("Reverted the changelog entry.")
    return s


def b4_ja_correction_about_failure(s: Session) -> Session:
    s.user("npm run dev が起動しません。")
    s.bash("npm run dev", "> web@1.4.0 dev\n> next dev\n\nError: listen EADDRINUSE: address already in use :::3000",
           error=True)
    s.bash("kill -9 $(lsof -t -i:3000)", "", text="3000 番を使っているプロセスを止めます。")
    s.user("いいえ、他のプロセスは止めないでください。PORT=3001 で起動してください。")
    s.bash("PORT=3001 npm run dev", "> web@1.4.0 dev\n> next dev\n\n  ▲ Next.js 14.2.3\n  - Local: http://localhost:3001")
    s.say("3001 番で起動しました。")
    return s


def b5_question_after_failure(s: Session) -> Session:
    s.user("Run the linter.")
    s.bash("make lint", "ruff check .\napp/orders.py:3:1: F401 [*] `os` imported but unused\nFound 1 error.\n"
           "make: *** [Makefile:8: lint] Error 1", error=True)
    s.user("Not sure why this fails. Can you run it again with more output?")
    s.bash("make lint V=1", "ruff check . --verbose\napp/orders.py:3:1: F401 [*] `os` imported but unused\nFound 1 error.",
           error=True)
    s.say("ruff reports that `os` is imported but unused in app/orders.py.")
    return s


def b6_refused_ja_dame(s: Session) -> Session:
    s.user("イメージをビルドしてください。")
    s.refused("Bash", {"command": "docker build -t shop-api .", "description": "Build image"}, text="docker でビルドします。")
    s.user("podman でお願いします。docker はダメです。")
    s.bash("podman build -t shop-api .", "STEP 1/6: FROM python:3.12-slim\nSuccessfully tagged localhost/shop-api:latest")
    s.say("podman でビルドしました。")
    return s


def b7_refused_edit(s: Session) -> Session:
    s.user("Add a `total` field to the Order API response.")
    s.refused("Edit", {"file_path": "/home/dev/work/shop/gen/api.pb.go", "old_string": "type Order struct {",
                       "new_string": "type Order struct {\n\tTotal int64"}, text="Adding the field to the Order type.")
    s.user("Don't edit the generated file, change the .proto and run make gen.")
    s.edit("/home/dev/work/shop/proto/api.proto", "message Order {", "message Order {\n  int64 total = 5;")
    s.bash("make gen", "protoc --go_out=gen proto/api.proto")
    s.say("Added total to api.proto and regenerated.")
    return s


def b8_style_instruction_after_failure(s: Session) -> Session:
    s.user("Add the exporter module and run the tests.")
    s.write("/home/dev/work/shop-api/app/exporter.py", "FORMAT = 'csv'\n\ndef export(rows):\n    return rows\n")
    s.bash("pytest -q", "E   ImportError: cannot import name 'export_rows' from 'app.exporter'\n1 error in 0.10s",
           error=True)
    s.user("Use double quotes, not single quotes, in the new module.")
    s.edit("/home/dev/work/shop-api/app/exporter.py", "FORMAT = 'csv'", 'FORMAT = "csv"')
    s.say("Switched to double quotes.")
    return s


CASES += [
    dict(key="b1_refused_never", split="blind", script=b1_refused_never,
         expect=[dict(title=["force-push"], solution=["pull request"], solution_not=["git push --force"])]),
    dict(key="b2_failed_ja_instead", split="blind", script=b2_failed_ja_instead,
         expect=[dict(problem=["no such table"], solution=["docker compose up -d db"])]),
    dict(key="b3_unrelated_correction_same_turn", split="blind", script=b3_unrelated_correction_same_turn,
         cwd="/home/dev/work/web", expect=[dict(title=["CHANGELOG"])], absent=["reading 'map'", "reading map"]),
    dict(key="b4_ja_correction_about_failure", split="blind", script=b4_ja_correction_about_failure,
         cwd="/home/dev/work/web",
         expect=[dict(problem=["EADDRINUSE"], solution=["PORT=3001"], solution_not=["kill -9"])]),
    dict(key="b5_question_after_failure", split="blind", script=b5_question_after_failure, expect=[]),
    dict(key="b6_refused_ja_dame", split="blind", script=b6_refused_ja_dame,
         expect=[dict(title=["podman"], solution=["podman"], solution_not=["docker build -t"])]),
    dict(key="b7_refused_edit", split="blind", script=b7_refused_edit, cwd="/home/dev/work/shop",
         expect=[dict(title=[".proto"], solution=["make gen"])]),
    dict(key="b8_style_instruction_after_failure", split="blind", script=b8_style_instruction_after_failure,
         expect=[dict(title=["double quotes"])], absent=["ImportError"]),
]
