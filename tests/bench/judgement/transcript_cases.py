"""Labelled Claude Code sessions for auto-learn (`learn --from-transcript`, the stop and
session-end hooks), with the candidates a careful person expects, written before the product
was run on them, and the eight checks of issue 20 they answer.

Each case: `script(session)` plays the session (transcript_builder.Session), `expect` lists
the candidates it must give, each as text that must and must not appear in its title, problem
and solution; `cards` are Playbooks cards that exist before learning (a lesson they hold must
not be proposed).

The checks (eval_judgement.py prints each as passed or failed):
1. the solution is what worked at the end, never a step the user rejected;
2. one candidate per problem: an unrelated second bug is not merged into the first;
3. the second problem gets a candidate of its own;
4. evidence is counted per distinct session: the same session learned again, with its lines
   shifted, adds nothing; another session adds one;
5. under `[learn] auto_promote`, one session never reaches promotion, however often it is learned;
6. nothing is proposed when a Playbooks card already holds the lesson;
7. candidate file names are readable (no backticks, semicolons, quotes or `|`) and titles are not
   cut inside a URL or a word;
8. a user message that starts with "No, ..." is a correction only when it corrects the agent
   (not "No, that's all" or the answer to the agent's question).
"""

from __future__ import annotations

from pathlib import Path

from transcript_builder import Session

PYTEST_FAIL_PSYCOPG = """============================= test session starts ==============================
collected 0 items / 1 error

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_orders.py _____________________
ImportError while importing test module '/home/dev/work/shop-api/tests/test_orders.py'.
tests/test_orders.py:3: in <module>
    from app.db import connect
app/db.py:1: in <module>
    import psycopg2
E   ModuleNotFoundError: No module named 'psycopg2'
=========================== short test summary info ============================
ERROR tests/test_orders.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.21s"""

PYTEST_FAIL_DECIMAL = """============================= test session starts ==============================
collected 14 items

tests/test_orders.py .......F......                                      [100%]

=================================== FAILURES ===================================
____________________________ test_order_total_rounding ____________________________

    def test_order_total_rounding():
        order = make_order(items=[("widget", 3, "3.333")])
>       assert order.total == Decimal("10.00")
E       AssertionError: assert Decimal('9.999') == Decimal('10.00')

tests/test_orders.py:41: AssertionError
=========================== short test summary info ============================
FAILED tests/test_orders.py::test_order_total_rounding - AssertionError: assert Decimal('9.999') == Decimal('10.00')
1 failed, 13 passed in 0.48s"""


def psycopg_session(s: Session, chatter: bool = False) -> Session:
    """The user's project is on psycopg 3; the agent reaches for psycopg2, is told no, switches,
    then meets an unrelated rounding bug and fixes that too."""
    s.summary("Add Postgres-backed order storage")
    if chatter:   # the same work in a longer session: the lines come later
        s.user("Before we start: what does `make dev` do in this repo?")
        s.bash("grep -n '^dev:' -A3 Makefile", "12:dev:\n13:\tdocker compose up -d db\n14:\tuvicorn app.main:app --reload",
               text="Let me look at the Makefile.")
        s.say("`make dev` starts the Postgres container and runs the API with auto-reload.")
    s.user("Please wire the orders repository to Postgres and make the tests pass.")
    s.say("I'll add a connection module and run the tests.", think="Need a db module; check tests after.")
    s.write("/home/dev/work/shop-api/app/db.py", "import psycopg2\n\n\ndef connect(url):\n    return psycopg2.connect(url)\n")
    s.bash("python -m pytest -q tests/test_orders.py", PYTEST_FAIL_PSYCOPG, error=True)
    s.bash("pip install psycopg2-binary", "Collecting psycopg2-binary\n  Downloading psycopg2_binary-2.9.10-cp312-cp312-"
           "manylinux_2_17_x86_64.whl (3.0 MB)\nInstalling collected packages: psycopg2-binary\n"
           "Successfully installed psycopg2-binary-2.9.10",
           text="psycopg2 is not installed; installing the binary wheel.")
    s.user("No, don't use psycopg2. This project is on psycopg 3: use `psycopg[binary]` and `import psycopg`.")
    s.say("Understood, switching to psycopg 3.")
    s.bash("pip uninstall -y psycopg2-binary", "Found existing installation: psycopg2-binary 2.9.10\n"
           "Successfully uninstalled psycopg2-binary-2.9.10")
    s.edit("/home/dev/work/shop-api/requirements.txt", "fastapi==0.115.0\n", "fastapi==0.115.0\npsycopg[binary]==3.2.3\n")
    s.edit("/home/dev/work/shop-api/app/db.py", "import psycopg2\n\n\ndef connect(url):\n    return psycopg2.connect(url)\n",
           "import psycopg\n\n\ndef connect(url):\n    return psycopg.connect(url)\n")
    s.bash("pip install -r requirements.txt", "Collecting psycopg[binary]==3.2.3\nSuccessfully installed psycopg-3.2.3 "
           "psycopg-binary-3.2.3")
    s.bash("python -m pytest -q tests/test_orders.py", PYTEST_FAIL_DECIMAL, error=True,
           text="The import works now. One test fails on rounding, which looks unrelated to the driver.")
    s.read("/home/dev/work/shop-api/app/orders.py", "from decimal import Decimal\n\n\nclass Order:\n"
           "    @property\n    def total(self):\n        return sum(q * Decimal(p) for _, q, p in self.items)\n")
    s.edit("/home/dev/work/shop-api/app/orders.py", "        return sum(q * Decimal(p) for _, q, p in self.items)\n",
           "        total = sum(q * Decimal(p) for _, q, p in self.items)\n"
           "        return total.quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_UP)\n",
           text="The total is never rounded to cents; quantizing it with ROUND_HALF_UP.")
    s.bash("python -m pytest -q tests/test_orders.py", "..............                                    [100%]\n"
           "14 passed in 0.41s")
    s.say("All 14 tests pass: the repository uses psycopg 3, and order totals are rounded to cents.")
    return s


def no_answers_session(s: Session) -> Session:
    s.user("Rename the `getCart` helper to `loadCart` everywhere.")
    s.bash("grep -rn getCart src/ | wc -l", "7")
    s.edit("/home/dev/work/web/src/cart.ts", "export function getCart(", "export function loadCart(",
           text="Renaming the definition first.")
    s.edit("/home/dev/work/web/src/pages/checkout.tsx", "getCart(", "loadCart(")
    s.say("Renamed in 7 places. Should I also update the CHANGELOG?")
    s.user("No, leave it, I'll do that at release time.")
    s.say("OK. I'll install the new date library you mentioned: running npm install date-fns.")
    s.bash("npm install date-fns", "added 1 package, and audited 412 packages in 3s\nfound 0 vulnerabilities")
    s.user("No, use pnpm in this repo, never npm. The lockfile is pnpm-lock.yaml.")
    s.bash("git checkout package-lock.json 2>/dev/null; rm -f package-lock.json && pnpm add date-fns",
           "Packages: +1\nProgress: resolved 412, reused 411, downloaded 1, added 1, done\n\ndependencies:\n+ date-fns 4.1.0")
    s.say("Installed date-fns with pnpm and removed the stray package-lock.json. Anything else?")
    s.user("No, that's all for now. Thanks!")
    s.say("You're welcome!")
    s.user("No worries if the build is slow the first time, by the way.")
    s.say("Noted.")
    return s


def known_lesson_session(s: Session) -> Session:
    s.user("CI says the settings tests fail, can you check?")
    s.bash("python -m pytest -q tests/test_settings.py", "ImportError while importing test module "
           "'/home/dev/work/shop-api/tests/test_settings.py'.\napp/settings.py:2: in <module>\n    import yaml\n"
           "E   ModuleNotFoundError: No module named 'yaml'\n1 error in 0.09s", error=True)
    s.edit("/home/dev/work/shop-api/requirements.txt", "fastapi==0.115.0\n", "fastapi==0.115.0\nPyYAML==6.0.2\n",
           text="PyYAML is imported by app/settings.py but missing from requirements.txt.")
    s.bash("pip install -r requirements.txt", "Successfully installed PyYAML-6.0.2")
    s.bash("python -m pytest -q tests/test_settings.py", "....                                  [100%]\n4 passed in 0.12s")
    s.say("Fixed: PyYAML was missing from requirements.txt.")
    return s


KNOWN_CARD = dict(type="troubleshooting", domain="dev", tags="python,pyyaml,requirements,ci",
                  title="Tests Fail to Import yaml Because PyYAML Is Not in requirements.txt",
                  body="""## Symptoms
Test collection fails with `ModuleNotFoundError: No module named 'yaml'` on CI or a fresh venv.

## Fix
The import name is `yaml` but the package is **PyYAML**: add `PyYAML` to `requirements.txt` and reinstall
(`pip install -r requirements.txt`).
""")


CURL_FAIL = ("curl: (60) SSL certificate problem: unable to get local issuer certificate; More details here: "
             "https://curl.se/docs/sslcerts.html\n\ncurl failed to verify the legitimacy of the server and therefore "
             "could not establish a secure connection to it.")


def messy_titles_session(s: Session) -> Session:
    s.user("The webhook smoke test against staging fails, please look.")
    s.bash("curl -fsS https://staging-webhooks.internal.example.com/api/v2/webhooks/deliveries/health?verbose=1",
           CURL_FAIL, error=True)
    s.say("The corporate proxy re-signs TLS; curl needs the company CA bundle.")
    s.bash("sudo cp /home/dev/certs/corp-root-ca.pem /usr/local/share/ca-certificates/corp-root-ca.crt && "
           "sudo update-ca-certificates", "Updating certificates in /etc/ssl/certs...\n1 added, 0 removed; done.")
    s.bash("curl -fsS https://staging-webhooks.internal.example.com/api/v2/webhooks/deliveries/health?verbose=1",
           '{"status":"ok","deliveries_pending":0}')
    s.user("Great. Now `npm run build` in web/ fails too.")
    s.bash("cd web && npm run build", "> web@1.4.0 build\n> next build\n\nFailed to compile.\n\n"
           "./src/pages/checkout.tsx\nModule not found: Error: Can't resolve '`@/components/ui/PaymentMethodSelector`'; "
           "did you mean './components/ui/PaymentMethodSelector'?\n\n> Build failed because of webpack errors",
           error=True)
    s.edit("/home/dev/work/web/tsconfig.json", '"paths": {}', '"paths": {"@/*": ["./src/*"]}',
           text="The `@/` alias is not declared in tsconfig.json.")
    s.bash("cd web && npm run build", "> web@1.4.0 build\n> next build\n\n✓ Compiled successfully\n✓ Generating static pages (14/14)")
    s.say("Both fixed: the corporate CA is trusted, and the @/ path alias is declared.")
    return s


def two_problems_session(s: Session) -> Session:
    s.user("Lint and tests are red on my branch, can you fix both?")
    s.bash("npm run lint", "> web@1.4.0 lint\n> eslint src\n\n/home/dev/work/web/src/api/client.ts\n"
           "  12:7  error  'retryCount' is assigned a value but never used  @typescript-eslint/no-unused-vars\n\n"
           "✖ 1 problem (1 error, 0 warnings)", error=True)
    s.bash("npm test -- --run", " FAIL  src/cart.test.ts > cart > applies the discount once\n"
           "TypeError: Cannot read properties of undefined (reading 'percent')\n"
           " ❯ applyDiscount src/cart.ts:27:31\n\n Test Files  1 failed | 8 passed (9)", error=True)
    s.edit("/home/dev/work/web/src/api/client.ts", "  const retryCount = 0;\n", "",
           text="Removing the unused variable.")
    s.bash("npm run lint", "> web@1.4.0 lint\n> eslint src\n")
    s.read("/home/dev/work/web/src/cart.ts", "export function applyDiscount(cart, code) {\n"
           "  return cart.total * (1 - cart.discount.percent / 100);\n}\n")
    s.edit("/home/dev/work/web/src/cart.ts", "cart.discount.percent", "(cart.discount?.percent ?? 0)",
           text="A cart without a discount has no `discount` object; defaulting to 0%.")
    s.bash("npm test -- --run", " ✓ src/cart.test.ts (6)\n\n Test Files  9 passed (9)\n      Tests  61 passed (61)")
    s.say("Both green: removed an unused variable, and applyDiscount handles carts without a discount.")
    return s


def japanese_session(s: Session) -> Session:
    s.user("ローカルで docker compose up すると DB が起動しません。見てもらえますか？")
    s.bash("docker compose up -d db", "Error response from daemon: driver failed programming external connectivity on "
           "endpoint shop-db-1: Bind for 0.0.0.0:5432 failed: port is already allocated", error=True)
    s.bash("sudo lsof -i :5432", "COMMAND   PID     USER   FD   TYPE DEVICE SIZE/OFF NODE NAME\n"
           "postgres 1423 postgres    5u  IPv4  31337      0t0  TCP *:postgresql (LISTEN)")
    s.say("ホストで別の PostgreSQL が 5432 を使っています。そのプロセスを止めます。")
    s.bash("sudo systemctl stop postgresql", "")
    s.user("違います、ホストの PostgreSQL は他のプロジェクトで使っているので止めないでください。compose 側のポートを 5433 に変えてください。")
    s.say("わかりました。ホストの PostgreSQL を元に戻し、compose のポートを変えます。")
    s.bash("sudo systemctl start postgresql", "")
    s.edit("/home/dev/work/shop-api/docker-compose.yml", '      - "5432:5432"', '      - "5433:5432"')
    s.edit("/home/dev/work/shop-api/.env", "DATABASE_URL=postgresql://app:app@localhost:5432/app",
           "DATABASE_URL=postgresql://app:app@localhost:5433/app")
    s.bash("docker compose up -d db", " Container shop-db-1  Started")
    s.say("起動しました。compose の DB はホストの 5433 番で待ち受け、.env の接続先も 5433 にしました。")
    return s


def refused_tool_session(s: Session) -> Session:
    s.user("The frontend build broke after I pulled main. Fix it please.")
    s.bash("npm run build", "> web@1.4.0 build\n> next build\n\nError: Cannot find module 'zod'\nRequire stack:\n"
           "- /home/dev/work/web/src/lib/validation.ts", error=True)
    s.refused("Bash", {"command": "rm -rf node_modules && npm install", "description": "Reinstall dependencies"},
              text="Dependencies look out of date; reinstalling from scratch.")
    s.user("Don't delete node_modules, it takes forever here. Just run npm ci.")
    s.bash("npm ci", "added 611 packages, and audited 612 packages in 41s")
    s.bash("npm run build", "> web@1.4.0 build\n> next build\n\n✓ Compiled successfully")
    s.say("The build passes after `npm ci`: main added zod to package.json and the lockfile.")
    return s


def repeated_error_session(s: Session, rounds: int) -> Session:
    """One session that meets the same missing-module error again after a branch switch."""
    for round_number in range(rounds):
        s.user("Run the API tests." if round_number == 0 else "I switched branches again, run the tests.")
        s.bash("python -m pytest -q tests/test_api.py", "E   ModuleNotFoundError: No module named 'httpx'\n"
               "1 error in 0.10s", error=True)
        s.bash("pip install httpx==0.27.2", "Successfully installed httpx-0.27.2",
               text="httpx is a test dependency that this venv lacks.")
        s.bash("python -m pytest -q tests/test_api.py", "12 passed in 0.33s")
    return s


def ja_answers_session(s: Session) -> Session:
    """Blind (written after the rules were frozen): a Japanese user who declines an offer, then
    corrects a command the agent ran (no command is failing)."""
    s.user("テストを実行してください。")
    s.bash("python -m pytest -q", "......\n6 passed in 0.30s", text="テストを実行します。")
    s.say("6 件すべて成功しました。カバレッジも計測しましょうか？")
    s.user("いいえ、大丈夫です。")
    s.say("了解しました。")
    s.user("あと、このリポジトリでは pytest を直接ではなく make test を使ってください。")
    s.bash("make test", "python -m pytest -q --cov=app\n......\n6 passed in 0.41s")
    s.say("make test で実行しました。")
    return s


def missing_module_ts_session(s: Session) -> Session:
    """Blind: a TypeScript build misses a module the agent then writes; a look around between."""
    s.user("npm run typecheck is failing, please fix it.")
    s.bash("npm run typecheck", "> web@1.4.0 typecheck\n> tsc --noEmit\n\nsrc/pages/cart.tsx(3,27): error TS2307: "
           "Cannot find module './format' or its corresponding type declarations.", error=True)
    s.bash("ls src/pages", "cart.tsx\ncheckout.tsx\nindex.tsx")
    s.write("/home/dev/work/web/src/pages/format.ts", "export function formatPrice(cents: number): string {\n"
            "  return (cents / 100).toFixed(2);\n}\n", text="The format helper was never committed; adding it.")
    s.bash("npm run typecheck", "> web@1.4.0 typecheck\n> tsc --noEmit\n")
    s.say("Typecheck passes: added src/pages/format.ts with formatPrice.")
    return s


# ---------------------------------------------------------------------------- split "compound"
# Written for the compound-rerun work (h20-learn) with the expected candidates below BEFORE the
# product was run on them: a fix and the rerun in one command (`A && B`, `cd x && B`, env prefixes,
# `python -m pytest` for `pytest`), a user's correction while a failure is open or just after its
# rerun passed, a rerun that still fails, and successes that must not close the failure.

def compound_env_file_session(s: Session) -> Session:
    """The fix and the rerun in one command; the rerun spelled `python -m pytest` after `cd api && pytest`."""
    s.user("The integration tests fail on my machine, can you see why?")
    s.bash("cd api && pytest -q tests/integration", "tests/integration/conftest.py:8: in <module>\n"
           "    DATABASE_URL = os.environ[\"DATABASE_URL\"]\nE   KeyError: 'DATABASE_URL'\n1 error in 0.12s", error=True)
    s.say("The settings come from a .env file that does not exist yet; creating it from the example.")
    s.bash("cp .env.example .env && cd api && python -m pytest -q tests/integration",
           "........                                  [100%]\n8 passed in 1.92s")
    s.say("The integration tests pass once .env exists (copied from .env.example).")
    return s


def correction_open_failure_session(s: Session) -> Session:
    """The user rejects the agent's fix while the tests still fail; the agent then does what was asked."""
    s.user("npm test fails locally, please fix it.")
    s.bash("npm test", "> api@2.3.0 test\n> jest\n\n FAIL  src/queue.test.ts\n  ● enqueue › stores the job\n\n"
           "    Error: connect ECONNREFUSED 127.0.0.1:6379\n\nTests:       1 failed, 22 passed, 23 total", error=True)
    s.say("Redis is not running; starting it.")
    s.bash("brew services start redis", "==> Successfully started `redis` (label: homebrew.mxcl.redis)")
    s.user("No, don't start redis on the host. Use `docker compose up -d redis` instead, like the rest of the team.")
    s.say("Understood: stopping the host redis and using the compose service.")
    s.bash("brew services stop redis && docker compose up -d redis && npm test",
           "==> Successfully stopped `redis`\n Container api-redis-1  Started\n\n> api@2.3.0 test\n> jest\n\n"
           "Tests:       23 passed, 23 total")
    s.say("All 23 tests pass with the compose redis.")
    return s


def correction_after_compound_ja_session(s: Session) -> Session:
    """The reviewer's pattern in Japanese: the fix and the rerun in one command pass, then the user rejects the fix."""
    s.user("テストを実行してください。")
    s.bash("python -m pytest -q", "ImportError while loading conftest '/home/dev/work/shop-api/tests/conftest.py'.\n"
           "tests/conftest.py:5: in <module>\n    conn = psycopg.connect(URL)\n"
           "E   psycopg.OperationalError: connection failed: connection to server at \"127.0.0.1\", port 5432 failed: "
           "Connection refused", error=True)
    s.bash("docker compose up -d db && python -m pytest -q", " Container shop-db-1  Started\n"
           "........................                 [100%]\n24 passed in 2.40s",
           text="PostgreSQL が起動していません。docker compose で起動してから再実行します。")
    s.say("DB を起動したら 24 件すべて成功しました。")
    s.user("いいえ、docker compose up ではなく `make db` を使ってください。スキーマとテストデータも作られます。")
    s.say("わかりました。今後は make db を使います。")
    return s


def rerun_still_fails_session(s: Session) -> Session:
    """A compound rerun that fails with the same error, then the real fix."""
    s.user("go test is broken after the merge.")
    s.bash("go test ./...", "# example.com/shop/internal/config\ninternal/config/load.go:14:9: undefined: parseConfig\n"
           "FAIL\texample.com/shop/internal/config [build failed]\nFAIL", error=True)
    s.bash("go generate ./... && go test ./...", "# example.com/shop/internal/config\n"
           "internal/config/load.go:14:9: undefined: parseConfig\nFAIL\texample.com/shop/internal/config [build failed]\n"
           "FAIL", error=True, text="Maybe the generated code is stale; regenerating.")
    s.read("/home/dev/work/shop/internal/config/load.go", "package config\n\nfunc Load(b []byte) (*Config, error) {\n"
           "\treturn parseConfig(b)\n}\n")
    s.write("/home/dev/work/shop/internal/config/parse.go", "package config\n\nimport \"encoding/json\"\n\n"
            "func parseConfig(b []byte) (*Config, error) {\n\tvar c Config\n\treturn &c, json.Unmarshal(b, &c)\n}\n",
            text="The merge dropped parse.go, which defined parseConfig; restoring it.")
    s.bash("go test ./...", "ok  \texample.com/shop/internal/config\t0.012s\nok  \texample.com/shop/internal/api\t0.088s")
    s.say("go test passes again: parse.go (parseConfig) was lost in the merge and is restored.")
    return s


def unrelated_success_session(s: Session) -> Session:
    """Commands that pass between the failure and its fix are other commands: they close nothing."""
    s.user("The web build is failing in CI.", )
    s.bash("npm run build", "> web@1.4.0 build\n> next build\n\nFailed to compile.\n\n./src/lib/dates.ts\n"
           "Module not found: Error: Can't resolve 'date-fns'\n\n> Build failed because of webpack errors", error=True)
    s.bash("npm run lint", "> web@1.4.0 lint\n> eslint src\n", text="Checking lint first.")
    s.bash("git status --short", " M src/lib/dates.ts")
    s.bash("npm install date-fns@4.1.0 && npm run build", "added 1 package in 2s\n\n> web@1.4.0 build\n> next build\n\n"
           "✓ Compiled successfully", text="date-fns is imported but not a dependency; adding it.")
    s.say("The build passes: date-fns was missing from package.json.")
    return s


def narrower_rerun_ja_session(s: Session) -> Session:
    """A narrower run of the tests passes: it is not the failing command, so it closes nothing."""
    s.user("テストが 1 件落ちています。直してください。")
    s.bash("python -m pytest -q", "....F.....\n=================================== FAILURES ===================================\n"
           "E       AssertionError: assert 0.08 == 0.1\n\ntests/test_tax.py:12: AssertionError\n"
           "FAILED tests/test_tax.py::test_rate - AssertionError: assert 0.08 == 0.1\n1 failed, 9 passed in 0.30s",
           error=True)
    s.bash("python -m pytest -q tests/test_cart.py", "....\n4 passed in 0.05s", text="カートのテストは通るか確認します。")
    s.edit("/home/dev/work/shop-api/app/tax.py", "RATE = 0.08\n", "RATE = 0.10\n",
           text="消費税率が 8% のままでした。10% に直します。")
    s.bash("pytest -q", "..........\n10 passed in 0.28s")
    s.say("税率を 10% に直し、テストはすべて成功しました。")
    return s


def correction_without_rerun_session(s: Session) -> Session:
    """The user rejects the fix and says what to do; the session ends before the command is run again."""
    s.user("make deploy fails with a docker permission error.")
    s.bash("make deploy", "docker build -t shop-api .\npermission denied while trying to connect to the Docker daemon "
           "socket at unix:///var/run/docker.sock\nmake: *** [Makefile:12: deploy] Error 1", error=True)
    s.bash("sudo chmod 666 /var/run/docker.sock", "", text="Opening up the Docker socket's permissions.")
    s.user("No, never chmod the docker socket. Add me to the docker group instead with `sudo usermod -aG docker $USER` "
           "and I'll log in again.")
    s.bash("sudo chmod 660 /var/run/docker.sock && sudo usermod -aG docker $USER", "",
           text="Restored the socket's permissions and added you to the docker group.")
    s.say("Done. Log out and back in, then `make deploy` will work.")
    return s


def env_prefix_ja_session(s: Session) -> Session:
    """The rerun with an environment variable in front of it passes: the variable is the fix."""
    s.user("ビルドが失敗します。")
    s.bash("npm run build", "> web@1.4.0 build\n> next build\n\nError: NEXT_PUBLIC_API_URL is not defined\n"
           "    at Object.<anonymous> (/home/dev/work/web/next.config.js:4:9)", error=True)
    s.bash("NEXT_PUBLIC_API_URL=http://localhost:8080 npm run build", "> web@1.4.0 build\n> next build\n\n"
           "✓ Compiled successfully", text="API の URL が環境変数で必要です。指定してビルドします。")
    s.say("NEXT_PUBLIC_API_URL を指定するとビルドが成功しました。")
    s.user("ありがとう。")
    s.say("どういたしまして。")
    return s


CASES = [
    dict(key="t1_psycopg", session="psycopg-a", script=psycopg_session, checks=[1, 2, 3],
         expect=[dict(problem=["psycopg2"], solution=["psycopg[binary]"],
                      solution_not=["pip install psycopg2-binary", "Decimal", "orders.py"]),
                 dict(problem=["Decimal"], solution=["orders.py"], solution_not=["psycopg"])]),
    dict(key="t2_psycopg_other_session", session="psycopg-b", script=lambda s: psycopg_session(s, chatter=True),
         checks=[4], expect=[dict(problem=["psycopg2"], solution=["psycopg[binary]"],
                                  solution_not=["pip install psycopg2-binary"]),
                             dict(problem=["Decimal"], solution=["orders.py"], solution_not=["psycopg"])]),
    dict(key="t3_no_answers", session="no-answers", script=no_answers_session, checks=[8], cwd="/home/dev/work/web",
         expect=[dict(title=["pnpm"], solution=["pnpm"])]),
    dict(key="t4_known_lesson", session="known", script=known_lesson_session, checks=[6], cards=[KNOWN_CARD],
         expect=[]),
    dict(key="t5_messy_titles", session="messy", script=messy_titles_session, checks=[7],
         expect=[dict(problem=["SSL certificate"], solution=["update-ca-certificates"]),
                 dict(problem=["PaymentMethodSelector"], solution=["tsconfig.json"], solution_not=["ca-certificates"])]),
    dict(key="t6_two_problems", session="two", script=two_problems_session, checks=[2, 3], cwd="/home/dev/work/web",
         expect=[dict(problem=["no-unused-vars"], solution=["client.ts"], solution_not=["cart.ts"]),
                 dict(problem=["percent"], solution=["cart.ts"], solution_not=["client.ts"])]),
    dict(key="t7_japanese", session="ja", script=japanese_session, checks=[1],
         expect=[dict(problem=["port is already allocated"], solution=["docker-compose.yml"],
                      solution_not=["systemctl stop"])]),
    dict(key="t8_refused_tool", session="refused", script=refused_tool_session, checks=[1], cwd="/home/dev/work/web",
         expect=[dict(problem=["zod"], solution=["npm ci"], solution_not=["rm -rf node_modules"])]),
    dict(key="t9_repeated", session="repeat", script=lambda s: repeated_error_session(s, 1), checks=[5],
         expect=[dict(problem=["httpx"], solution=["httpx"])]),
    dict(key="t9_repeated_grown", session="repeat", script=lambda s: repeated_error_session(s, 3), checks=[5],
         expect=[dict(problem=["httpx"], solution=["httpx"])]),
    # Blind: written after the rules were frozen (commit a362736), expected answers first.
    dict(key="b1_ja_answers", session="ja-answers", script=ja_answers_session, checks=[8], blind=True,
         expect=[dict(title=["make test"], solution=["make test"])]),
    dict(key="b2_missing_module", session="ts", script=missing_module_ts_session, checks=[1, 7], blind=True,
         cwd="/home/dev/work/web", expect=[dict(problem=["TS2307"], solution=["format.ts"])]),
    # Split "compound" (h20-learn): expected candidates written before the product ran on them.
    dict(key="c1_compound_env_file", session="c-env", script=compound_env_file_session, checks=[1], split="compound",
         expect=[dict(title=["pytest"], problem=["DATABASE_URL"], solution=[".env.example"])]),
    dict(key="c2_correction_open_failure", session="c-redis", script=correction_open_failure_session, checks=[1, 8],
         split="compound", cwd="/home/dev/work/api",
         expect=[dict(problem=["ECONNREFUSED"], solution=["docker compose up -d redis"],
                      solution_not=["brew services start"])]),
    dict(key="c3_correction_after_compound_ja", session="c-makedb", script=correction_after_compound_ja_session,
         checks=[1, 8], split="compound",
         expect=[dict(problem=["OperationalError"], solution=["make db"], solution_not=["docker compose up"])]),
    dict(key="c4_rerun_still_fails", session="c-go", script=rerun_still_fails_session, checks=[1], split="compound",
         cwd="/home/dev/work/shop", expect=[dict(problem=["parseConfig"], solution=["parse.go"])]),
    dict(key="c5_unrelated_success", session="c-lint", script=unrelated_success_session, checks=[1, 2],
         split="compound", cwd="/home/dev/work/web",
         expect=[dict(problem=["date-fns"], solution=["npm install date-fns"], solution_not=["npm run lint"])]),
    dict(key="c6_narrower_rerun_ja", session="c-tax", script=narrower_rerun_ja_session, checks=[1, 2],
         split="compound", expect=[dict(problem=["0.08"], solution=["tax.py"], solution_not=["test_cart.py"])]),
    dict(key="c7_correction_without_rerun", session="c-docker", script=correction_without_rerun_session,
         checks=[1, 8], split="compound",
         expect=[dict(problem=["permission denied"], solution=["usermod"], solution_not=["chmod 666"])]),
    dict(key="c8_env_prefix_ja", session="c-nextenv", script=env_prefix_ja_session, checks=[1], split="compound",
         cwd="/home/dev/work/web",
         expect=[dict(problem=["NEXT_PUBLIC_API_URL"], solution=["NEXT_PUBLIC_API_URL=http://localhost:8080"])]),
]


def build_all(folder: Path) -> list[Path]:
    out = []
    for case in CASES:
        session = Session(case["session"], cwd=case.get("cwd", "/home/dev/work/shop-api"))
        case["script"](session)
        out.append(session.write_to(folder / f"{case['key']}.jsonl"))
    # Check 4: session A again, with its lines shifted (a summary line more at the top, as a
    # resumed session's file has): the same occurrence, not new evidence.
    shifted = Session("psycopg-a")
    shifted.summary("Earlier: set up the repo")
    psycopg_session(shifted)
    out.append(shifted.write_to(folder / "t1_psycopg_shifted.jsonl"))
    return out
