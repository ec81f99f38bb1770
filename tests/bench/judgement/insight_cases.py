"""Labelled set for store-time insights (`create` / MCP `store_memory`): a base vault of cards
and probe cards, each with the answers a careful person expects, written before the product
was run on them.

BASE: the vault a probe is created in (each probe in a fresh copy). `failure` marks how a base
card records a failure: `memory_type` (seed 000's failure type, as `store_memory` writes it), a
`status` of the person's own, or `feedback` (rejected feedback recorded with `brain record`).

PROBES: one card each, created into a copy of BASE. `expect` holds, per insight kind, the base
cards a person would want named (an empty list: none); `related` the base cards a link to
would be welcome (any relation), `rel` the relation expected where the evidence says one.
`split` is "dev" (rules may be tuned on it) or "held" (reported, never tuned on).
"""

from __future__ import annotations

BASE = [
    # ---------------------------------------------------------------- English
    dict(key="ts_alb_504_keepalive", type="troubleshooting", domain="infra", tags="alb,504,keep-alive,gunicorn",
         title="ALB 504s from Backend Keep-Alive Shorter Than the Idle Timeout",
         body="""## Symptoms
Intermittent 502 and 504 responses from the ALB under light load, with nothing in the app logs.

## Cause
The ALB idle timeout is 60 s. Gunicorn closes idle keep-alive connections after 2 s by default, so the
ALB sometimes sends a request on a connection the backend has just closed.

## Fix
Set the backend keep-alive above the ALB idle timeout: `gunicorn --keep-alive 75`. Nginx: `keepalive_timeout 75s;`.
"""),
    dict(key="dec_payments_client_timeout", type="decision", domain="dev", tags="payments,timeout,http-client",
         title="Set the Payments API Client Timeout to 30 Seconds",
         body="""## Decision
The payments API client (`payments-sdk`) times out requests after 30 seconds (`PAYMENTS_TIMEOUT=30`).

## Why
The provider's p99 is 8 s; 30 s leaves room for retries inside the checkout request budget.
"""),
    dict(key="dec_sessions_redis", type="decision", domain="dev", tags="sessions,redis,cache",
         title="Use Redis for Web Session Storage",
         body="""## Decision
Web sessions are stored in Redis (ElastiCache, cluster mode off), not in the database.

## Why
Sessions are read on every request; Redis keeps them off the primary DB and expires them with a TTL.
"""),
    dict(key="pat_timeout_budgets", type="pattern", domain="dev", tags="timeout,architecture,http",
         title="Timeout Budgets Shrink Inward",
         body="""Each layer's timeout must be shorter than the layer that calls it: load balancer > app server >
outbound HTTP client > database statement timeout. Otherwise the outer layer gives up first and the
inner work keeps running with nobody waiting for it.
"""),
    dict(key="run_rds_password_rotation", type="runbook", domain="infra", tags="rds,secrets-manager,rotation",
         title="Rotate the RDS Master Password with Secrets Manager",
         body="""1. Open the secret `prod/rds/master` in Secrets Manager and choose **Rotate secret immediately**.
2. Wait for the rotation Lambda to finish (CloudWatch log group `/aws/lambda/rds-rotation`).
3. Check the app still connects: `psql "$DATABASE_URL" -c 'select 1'`.
"""),
    dict(key="ts_requests_no_timeout", type="troubleshooting", domain="dev", tags="python,requests,timeout,hang",
         title="Python requests Call Hangs Forever Without a Timeout",
         body="""## Symptoms
A worker stops making progress; `py-spy dump` shows it blocked in `requests.get` inside `ssl.recv`.

## Cause
`requests` has no default timeout. If the server stops answering, the call waits forever.

## Fix
Always pass a timeout: `requests.get(url, timeout=(3.05, 27))` (connect, read).
"""),
    dict(key="pat_sql_params", type="pattern", domain="security", tags="sql-injection,database,python",
         title="Prevent SQL Injection with Parameterized Queries",
         body="""Never build SQL by string formatting with user input. Pass values as parameters and let the
driver quote them:

```python
cur.execute("SELECT * FROM users WHERE email = %s", (email,))
```
Identifiers (table or column names) cannot be parameters: check them against an allow-list.
"""),
    dict(key="pat_pytest_tmp_path", type="pattern", domain="testing", tags="pytest,fixtures,isolation",
         title="Isolate pytest Tests with tmp_path and monkeypatch",
         body="""Give every test its own directory with the `tmp_path` fixture and set environment variables
with `monkeypatch.setenv`, which undoes itself after the test. Tests then pass in any order and in
parallel with pytest-xdist.
"""),
    dict(key="ts_github_pat_404", type="troubleshooting", domain="dev", tags="github,pat,webhooks",
         title="GitHub Fine-Grained PAT Gets 404 on Organization Webhooks",
         body="""## Symptoms
`GET /orgs/acme/hooks` returns 404 Not Found with a fine-grained personal access token.

## Cause
GitHub answers 404 instead of 403 when the token lacks the permission. Fine-grained tokens need the
organization permission **Webhooks: Read and write**, and the org must allow fine-grained tokens.

## Fix
Regenerate the token with the organization webhooks permission and have an org owner approve it.
"""),
    dict(key="pat_atomic_writes", type="pattern", domain="dev", tags="python,files,atomic",
         title="Atomic File Writes: Temp File, fsync, os.replace",
         body="""Write to a temporary file in the same directory (`tempfile.mkstemp(dir=target.parent)`), flush
and `os.fsync` it, then `os.replace(tmp, target)`. Readers see the old file or the new one, never
half of one, even if the process is killed mid-write.
"""),
    dict(key="ts_expo_fabric_crash", type="troubleshooting", domain="dev", tags="expo,react-native,ios,fabric",
         title="Expo App Crashes on Launch with Fabric: Pin react-native-screens",
         body="""## Symptoms
After enabling the new architecture (Fabric), the iOS app crashes on launch with
`RNSScreenStackHeaderConfig` in the stack trace.

## Fix
Pin `react-native-screens` to the version Expo expects: `npx expo install react-native-screens`,
then rebuild the dev client.
"""),
    dict(key="dec_migrations_before_deploy", type="decision", domain="ops", tags="migrations,deploy,database",
         title="Run Database Migrations Before Deploying the New App Version",
         body="""## Decision
The deploy pipeline runs `alembic upgrade head` as a one-off task before the new app version starts.

## Why
Migrations are written to be backward compatible, so the old version keeps working on the new schema
while the new version rolls out.
"""),
    dict(key="dec_cloudfront_gzip", type="decision", domain="infra", tags="cloudfront,compression,cdn",
         title="Enable Compression on the CloudFront Distribution",
         body="""## Decision
Turn on automatic compression (gzip and Brotli) in the cache policy of the web distribution.

## Why
JS bundles shrink by ~70%; CloudFront compresses at the edge, the origin does not need to.
"""),
    dict(key="dec_gunicorn_sync", type="decision", domain="dev", tags="gunicorn,python,workers",
         title="Gunicorn Uses the Sync Worker Class",
         body="""## Decision
The API runs Gunicorn with `--worker-class sync` and 2 x CPU + 1 workers.

## Why
The endpoints are CPU-light but call no slow upstreams; sync workers are the simplest to reason about.
"""),
    dict(key="dec_node_18_ci", type="decision", domain="dev", tags="nodejs,ci,github-actions",
         title="Pin Node.js 18 in CI",
         body="""## Decision
CI uses `actions/setup-node` with `node-version: 18`, the same major version as production.
"""),
    dict(key="pat_webhook_retries", type="pattern", domain="dev", tags="webhooks,retries,backoff",
         title="Retry Failed Webhook Deliveries Three Times with Exponential Backoff",
         body="""When a webhook delivery gets a 5xx or times out, retry it up to 3 times with exponential backoff
(10 s, 60 s, 5 min) and jitter. Receivers must be idempotent: use the delivery id to drop repeats.
"""),
    dict(key="fail_celery_beat_twice", type="troubleshooting", domain="ops", tags="celery,beat,scheduler",
         memory_type="failure",
         title="Celery Beat Schedules Every Task Twice After a Deploy",
         body="""After each deploy, every periodic task runs twice for a while. Both the old and the new container run
`celery beat` during the rolling update.

Tried: setting `max_interval` lower, restarting beat after the deploy. Neither helped; the duplicate runs
still happen.
"""),
    dict(key="fail_expo_sdk51_ios", type="troubleshooting", domain="dev", tags="expo,ios,upgrade",
         status="failed",
         title="Expo SDK 51 Upgrade Broke the iOS Build",
         body="""Upgrading from Expo SDK 50 to 51 makes `eas build --platform ios` fail in the `pod install` step:
`CocoaPods could not find compatible versions for pod "ExpoModulesCore"`. Rolled back to SDK 50 for now.
"""),
    dict(key="ts_docker_cache_ci", type="troubleshooting", domain="ops", tags="docker,ci,cache",
         feedback=["rejected", "rejected"],
         title="Speed Up Docker Builds on CI by Mounting /var/lib/docker",
         body="""## Problem
Docker builds on CI start from scratch every time: no layer is cached, builds take 9 minutes.

## Fix
Mount a persistent volume at `/var/lib/docker` on the runner so layers survive between jobs.
"""),
    dict(key="fail_websocket_alb_drops", type="troubleshooting", domain="infra", tags="websocket,alb",
         status="unresolved",
         title="WebSocket Connections Drop Every 60 Seconds Behind the ALB",
         body="""Clients connected through the ALB lose their WebSocket connection after about 60 s when no message is
sent. Raising the client's reconnect delay only hides it. Cause not found yet.
"""),
    dict(key="fail_nightly_export_s3", type="episode", domain="ops", tags="export,s3,lambda",
         memory_type="failure",
         title="Nightly Export Lambda Hung on the S3 Upload",
         body="""2026-10-02: the nightly export Lambda ran until its 15-minute limit while uploading the CSV to S3.
Raising the Lambda timeout did not help; the upload never finished.
"""),
    dict(key="ts_celery_worker_memory", type="troubleshooting", domain="ops", tags="celery,memory,oom",
         title="Celery Worker Memory Grows Until the OOM Kill",
         body="""## Symptoms
Celery worker containers are OOM-killed every few hours; memory grows steadily per task.

## Cause
A C extension leaks a little memory per task; the pool never restarts its processes.

## Fix
Set `worker_max_memory_per_child = 200000` (KiB) so a child is replaced after it grows past 200 MB.
"""),
    dict(key="ins_flaky_tests_shared_state", type="insight", domain="testing", tags="flaky-tests,pytest",
         title="Most Flaky Tests Come from Shared State, Not Timing",
         body="""Of the 23 flaky tests we fixed this year, 17 failed because of state shared between tests (a module-level
cache, an env variable, a leftover file) and only 6 because of timing. Look for shared state first.
"""),
    dict(key="run_ecr_push", type="runbook", domain="infra", tags="ecr,docker,aws",
         title="Push an Image to ECR",
         body="""1. `aws ecr get-login-password --region ap-northeast-1 | docker login --username AWS --password-stdin 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com`
2. `docker build -t app:$(git rev-parse --short HEAD) .`
3. `docker tag app:<sha> 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com/app:<sha>`
4. `docker push 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com/app:<sha>`
"""),
    dict(key="fact_nat_idle_350", type="fact", domain="infra", tags="nat-gateway,tcp,timeout",
         title="NAT Gateway Drops Idle TCP Connections After 350 Seconds",
         body="""An AWS NAT gateway times out a connection after 350 seconds of inactivity; the value cannot be
changed. Use TCP keepalive under 350 s on connections that may sit idle.
"""),
    dict(key="chk_ssrf_review", type="checklist", domain="security", tags="ssrf,review",
         title="SSRF Review Checklist",
         body="""- [ ] Does the code fetch a URL that a user controls?
- [ ] Is the destination checked against an allow-list after DNS resolution?
- [ ] Are redirects disabled or re-checked?
- [ ] Is the instance metadata endpoint (169.254.169.254) blocked?
"""),
    dict(key="ts_terraform_sg_dup", type="troubleshooting", domain="infra", tags="terraform,security-group",
         title="Terraform Duplicate Security Group Rule Error After Renaming a Rule",
         body="""## Symptoms
`terraform apply` fails with `InvalidPermission.Duplicate` after a rule resource was renamed.

## Fix
Move the state instead of recreating: `terraform state mv aws_security_group_rule.old aws_security_group_rule.new`.
"""),
    dict(key="dec_markdown_kb", type="decision", domain="dev", tags="knowledge-base,markdown",
         title="Keep the Knowledge Base as Markdown Files",
         body="""## Decision
Knowledge cards are Markdown files with YAML frontmatter in git, not rows in a database.

## Why
People read and edit them in Obsidian; git gives history and review for free.
"""),
    dict(key="fail_k8s_hpa_flapping", type="troubleshooting", domain="infra", tags="kubernetes,hpa,autoscaling",
         memory_type="failure",
         title="HPA Scales the API Deployment Up and Down Every Minute",
         body="""The HorizontalPodAutoscaler for `api` adds pods, then removes them a minute later, all day. Raising the
CPU target from 60% to 75% did not stop it. Still flapping.
"""),
    # ---------------------------------------------------------------- Japanese
    dict(key="ts_ecs_sg_egress_ja", type="troubleshooting", domain="infra", tags="ecs,timeout,security-group",
         title="ECS タスクから外部 API への接続がタイムアウトする（SG のエグレス）",
         body="""## 症状
ECS タスクから外部の決済 API を呼ぶと、30 秒待ったあと `ConnectTimeout` になる。DNS の名前解決はできている。

## 原因
タスクに付けたセキュリティグループのアウトバウンドルールで 443 番ポートが許可されていない。Terraform で SG を作ると既定の全許可エグレスが消える。

## 対処
SG のエグレスに TCP 443 を追加する。
"""),
    dict(key="ts_secrets_ecs_ja", type="troubleshooting", domain="infra", tags="secrets-manager,ecs",
         title="Secrets Manager の値を更新しても ECS タスクに反映されない",
         body="""## 症状
Secrets Manager でシークレットの値を変えたのに、アプリは古いパスワードで接続しようとする。

## 原因
ECS はタスク起動時にシークレットを環境変数として読み込む。起動中のタスクには反映されない。

## 対処
`aws ecs update-service --force-new-deployment` でタスクを入れ替える。
"""),
    dict(key="chk_deploy_ja", type="checklist", domain="ops", tags="deploy,checklist",
         title="本番デプロイ前チェックリスト",
         body="""- [ ] マイグレーションが後方互換か確認した
- [ ] ステージングで動作確認した
- [ ] ロールバック手順を確認した
- [ ] 監視ダッシュボードを開いた
- [ ] 関係者にデプロイ時刻を連絡した
"""),
    dict(key="run_git_rebase_ja", type="runbook", domain="dev", tags="git,rebase",
         title="作業ブランチを main の最新に rebase する手順",
         body="""1. `git fetch origin`
2. `git rebase origin/main`
3. コンフリクトが出たら直して `git add` し、`git rebase --continue`
4. `git push --force-with-lease`
"""),
    dict(key="pat_n_plus_1_ja", type="pattern", domain="dev", tags="django,orm,n+1",
         title="N+1 クエリを select_related と prefetch_related で解消する",
         body="""一覧画面で関連オブジェクトを参照するとき、行ごとにクエリが発行される（N+1 問題）。
外部キー（多対一）は `select_related`、多対多や逆参照は `prefetch_related` でまとめて取得する。
`django-debug-toolbar` でクエリ数を確認する。
"""),
    dict(key="dec_worker_concurrency_ja", type="decision", domain="ops", tags="celery,concurrency",
         title="Celery ワーカーの同時実行数は 4 に設定する",
         body="""## 決定
Celery ワーカーは `--concurrency 4` で起動する。

## 理由
2 vCPU のタスクで、外部 API 待ちが多いため CPU 数の 2 倍にした。
"""),
    dict(key="dec_keepalive_ja", type="decision", domain="infra", tags="http,keep-alive",
         title="本番環境では HTTP keep-alive を有効にする",
         body="""## 決定
本番の API サーバーとロードバランサーの間は HTTP keep-alive を有効にする。

## 理由
TLS ハンドシェイクと TCP 接続の確立を減らせるため。
"""),
    dict(key="dec_log_retention_ja", type="decision", domain="ops", tags="cloudwatch,logs,retention",
         title="アプリのログは CloudWatch Logs に 30 日間保存する",
         body="""## 決定
アプリのロググループの保持期間は 30 日にする。それより古いログは S3 にエクスポートしない。

## 理由
障害調査で 30 日より前のログを見たことがなく、保存コストを抑えたい。
"""),
    dict(key="dec_tests_real_db_ja", type="decision", domain="testing", tags="testing,database",
         title="テストではモックせず本物の DB を使う",
         body="""## 決定
リポジトリ層のテストは Docker で起動した PostgreSQL に対して実行する。DB をモックしない。

## 理由
モックではマイグレーションの誤りや SQL の方言の違いを見逃す。
"""),
    dict(key="dec_staging_pg14_ja", type="decision", domain="infra", tags="postgresql,staging",
         title="ステージング環境では PostgreSQL 14 を使う",
         body="""## 決定
ステージングの RDS は PostgreSQL 14 で作る。本番と同じメジャーバージョンに合わせる。
"""),
    dict(key="fail_next_build_oom_ja", type="troubleshooting", domain="dev", tags="nextjs,build,memory",
         memory_type="failure",
         title="Next.js のビルドがメモリ不足で落ちる",
         body="""CI で `next build` が `JavaScript heap out of memory` で落ちる。
試したこと: ランナーを 7GB のものに変えた。効果なし。まだ落ちる。
"""),
    dict(key="fail_tf_state_lock_ja", type="troubleshooting", domain="infra", tags="terraform,state-lock",
         status="失敗",
         title="Terraform の state lock が解除できない",
         body="""`terraform plan` が `Error acquiring the state lock` で止まる。前回の apply が CI で強制終了されたあとから。
ロックを持っているはずのジョブはもう存在しない。待っても解除されない。
"""),
    dict(key="ts_pytest_ci_timeout_ja", type="troubleshooting", domain="testing", tags="pytest,ci,timeout",
         feedback=["rejected"],
         title="pytest が CI でだけタイムアウトする: タイムアウト値を 600 秒に延ばす",
         body="""## 症状
ローカルでは 2 分で終わるテストが、CI では 10 分のジョブタイムアウトで打ち切られる。

## 対処
`pytest-timeout` の値を 600 秒に延ばす。
"""),
    dict(key="ts_rds_sg_timeout_ja", type="troubleshooting", domain="infra", tags="rds,timeout,security-group",
         title="RDS への接続がタイムアウトする（セキュリティグループ）",
         body="""## 症状
アプリから RDS への接続が、しばらく待たされたあと `Connection timed out` で失敗する。

## 原因
RDS のセキュリティグループのインバウンドに、アプリの SG からの 5432 番ポートの許可がない。

## 対処
RDS の SG にアプリの SG をソースとするインバウンドルールを追加する。
"""),
    dict(key="ins_cache_versioned_keys_ja", type="insight", domain="dev", tags="cache,redis",
         title="キャッシュの無効化はキーにバージョンを含めると楽になる",
         body="""キャッシュのキーに `v3:` のようなバージョンを付けておくと、データ形式を変えたときにバージョンを上げるだけで
古いキャッシュをまとめて無効にできる。個別に削除して回る必要がない。
"""),
    dict(key="fail_ios_push_ja", type="troubleshooting", domain="dev", tags="ios,push-notification,apns",
         status="未解決",
         title="iOS のプッシュ通知が本番だけ届かない",
         body="""TestFlight 版と本番版でプッシュ通知が届かない。開発ビルドでは届く。
サーバー側のログでは APNs へ送信成功（200）になっている。原因はまだ分かっていない。
"""),
]


def _p(key, split, lang, expect=None, related=(), rel=None, **card):
    full = {"duplicate": [], "contradiction": [], "success_after_failure": []}
    full.update(expect or {})
    return dict(key=key, split=split, lang=lang, card=card, expect=full, related=list(related), rel=rel or {})


PROBES = [
    # ---------------------------------------------------------------- reworded duplicates
    _p("d01_requests_hang", "dev", "en", {"duplicate": ["ts_requests_no_timeout"]},
       type="troubleshooting", domain="dev", tags="python,requests,timeout",
       title="requests.get Never Returns When No Timeout Is Given",
       body="""## Symptoms
A Celery task hangs for hours; a stack dump shows it waiting in `requests.get` on a socket read.

## Cause
requests does not time out by default, so a server that stops responding blocks the call indefinitely.

## Fix
Pass `timeout=(3.05, 27)` to every requests call.
"""),
    _p("d02_sql_bind", "held", "en", {"duplicate": ["pat_sql_params"]},
       type="pattern", domain="security", tags="sql-injection,python,database",
       title="Use Bound Parameters Instead of String Formatting in SQL",
       body="""Do not format user input into SQL strings. Give the values to the driver as query parameters:
`cur.execute("SELECT * FROM users WHERE email = %s", (email,))`. Table and column names cannot be
bound; validate them against an allow-list.
"""),
    _p("d03_pytest_isolation", "dev", "en", {"duplicate": ["pat_pytest_tmp_path"]},
       type="pattern", domain="testing", tags="pytest,isolation",
       title="Keep pytest Tests Independent Using tmp_path and monkeypatch",
       body="""Each test writes only under its own `tmp_path` and changes environment variables through
`monkeypatch.setenv`, which is undone when the test ends. That lets the suite run in any order and
under xdist.
"""),
    _p("d04_github_token_404", "held", "en", {"duplicate": ["ts_github_pat_404"]},
       type="troubleshooting", domain="dev", tags="github,webhooks,token",
       title="404 When a Fine-Grained Token Manages Org Webhooks on GitHub",
       body="""Calling `GET /orgs/acme/hooks` with a fine-grained token returns 404. GitHub hides missing permissions
behind a 404. The token needs the organization permission "Webhooks: read and write", approved by an
org owner.
"""),
    _p("d05_atomic_write", "held", "en", {"duplicate": ["pat_atomic_writes"]},
       type="pattern", domain="dev", tags="python,files",
       title="Write Files Atomically via a Temporary File and os.replace",
       body="""Create the temporary file next to the target with `tempfile.mkstemp(dir=...)`, write and fsync it,
then rename it over the target with `os.replace`. A crash leaves either the old or the new file.
"""),
    _p("d06_expo_exact", "dev", "en", {"duplicate": ["ts_expo_fabric_crash"]},
       type="troubleshooting", domain="dev", tags="expo,react-native,ios,fabric",
       title="Expo App Crashes on Launch with Fabric: Pin react-native-screens",
       body="""## Symptoms
After enabling the new architecture (Fabric), the iOS app crashes on launch with
`RNSScreenStackHeaderConfig` in the stack trace.

## Fix
Pin `react-native-screens` to the version Expo expects: `npx expo install react-native-screens`,
then rebuild the dev client.
"""),
    _p("d07_ecr_same_title", "held", "en", {"duplicate": ["run_ecr_push"]},
       type="runbook", domain="infra", tags="ecr,docker",
       title="Push an Image to ECR",
       body="""1. Log in: `aws ecr get-login-password | docker login --username AWS --password-stdin <account>.dkr.ecr.<region>.amazonaws.com`
2. Build and tag the image with the commit sha.
3. `docker push <account>.dkr.ecr.<region>.amazonaws.com/app:<sha>`
"""),
    _p("d08_ecs_egress_ja", "dev", "ja", {"duplicate": ["ts_ecs_sg_egress_ja"]},
       type="troubleshooting", domain="infra", tags="ecs,security-group",
       title="ECS で外部 API 呼び出しがタイムアウトする原因は SG のアウトバウンド",
       body="""ECS のタスクから外部 API を呼び出すと `ConnectTimeout` で失敗する。名前解決は成功している。
セキュリティグループのアウトバウンドで HTTPS (443) が許可されていなかった。Terraform で作った SG にはデフォルトのエグレスがない。
エグレスに 443 を追加して解決。
"""),
    _p("d09_secrets_ja", "held", "ja", {"duplicate": ["ts_secrets_ecs_ja"]},
       type="troubleshooting", domain="infra", tags="ecs,secrets-manager",
       title="Secrets Manager のシークレットを変えたのに ECS のコンテナが古い値のまま",
       body="""シークレットを更新しても、動いているコンテナは古い値を使い続ける。ECS はシークレットをタスクの起動時にだけ読むため。
`--force-new-deployment` でサービスを再デプロイすれば新しい値が入る。
"""),
    _p("d10_release_checklist_ja", "dev", "ja", {"duplicate": ["chk_deploy_ja"]},
       type="checklist", domain="ops", tags="deploy,release",
       title="本番リリース前の確認リスト",
       body="""- [ ] マイグレーションは後方互換か
- [ ] ステージングで確認済みか
- [ ] ロールバックの手順を確認したか
- [ ] 監視ダッシュボードを見られるようにしたか
- [ ] リリース時刻を関係者に伝えたか
"""),
    _p("d11_rebase_ja", "held", "ja", {"duplicate": ["run_git_rebase_ja"]},
       type="runbook", domain="dev", tags="git,rebase,branch",
       title="ブランチを最新の main に追従させる（rebase）",
       body="""1. `git fetch origin` で最新を取る
2. `git rebase origin/main` を実行する
3. コンフリクトは解消して `git add`、`git rebase --continue`
4. `git push --force-with-lease` で押し出す
"""),
    _p("d12_n_plus_1_ja", "held", "ja", {"duplicate": ["pat_n_plus_1_ja"]},
       type="pattern", domain="dev", tags="django,orm,performance",
       title="Django の N+1 問題は select_related / prefetch_related で防ぐ",
       body="""ループの中で関連オブジェクトにアクセスすると、1 行ごとに SQL が発行されて遅くなる。
ForeignKey なら `select_related`、ManyToMany や逆参照なら `prefetch_related` を使って一度に取ってくる。
クエリ数は django-debug-toolbar で確かめる。
"""),
    _p("d13_rds_timeout_ja", "dev", "ja", {"duplicate": ["ts_rds_sg_timeout_ja"]},
       type="troubleshooting", domain="infra", tags="rds,security-group",
       title="RDS に繋がらずタイムアウトするときは SG のインバウンドを確認する",
       body="""アプリから RDS に接続すると待たされた末に `Connection timed out` になる。
RDS 側のセキュリティグループに、アプリの SG からの 5432 番の許可がなかった。インバウンドルールを追加して解決。
"""),
    _p("d14_alb_keepalive", "held", "en", {"duplicate": ["ts_alb_504_keepalive"]},
       type="troubleshooting", domain="infra", tags="alb,504,gunicorn",
       title="ALB Returns 504 Because the App's Keep-Alive Is Shorter Than 60 s",
       body="""Sporadic 502/504 from the load balancer, nothing logged by the app. The ALB keeps idle connections for
60 s but Gunicorn drops them after 2 s, so requests land on connections the app already closed.
Raise Gunicorn's `--keep-alive` to 75 (above the ALB idle timeout).
"""),
    _p("d15_cache_version_ja", "held", "ja", {"duplicate": ["ins_cache_versioned_keys_ja"]},
       type="insight", domain="dev", tags="cache",
       title="キャッシュキーにバージョン番号を入れておくと無効化が簡単",
       body="""キーの先頭に `v3:` などのバージョンを入れておけば、形式を変えたときはバージョンを上げるだけで
古いキャッシュが全部使われなくなる。一つずつ消す必要はない。
"""),
    _p("d16_flaky_shared_state", "dev", "en", {"duplicate": ["ins_flaky_tests_shared_state"]},
       type="insight", domain="testing", tags="flaky-tests,testing",
       title="Flaky Tests Are Usually Caused by Shared State Between Tests, Rarely by Timing",
       body="""Looking back at this year's flaky tests, most broke because tests shared state (module caches,
environment variables, files left behind); a minority were timing problems. Check for shared state first.
"""),
    # ---------------------------------------------------------------- contradictions
    _p("c01_payments_60", "dev", "en", {"contradiction": ["dec_payments_client_timeout"]},
       related=["dec_payments_client_timeout"], rel={"dec_payments_client_timeout": "contradicts"},
       type="decision", domain="dev", tags="payments,timeout",
       title="Set the Payments API Client Timeout to 60 Seconds",
       body="""## Decision
The payments API client times out requests after 60 seconds (`PAYMENTS_TIMEOUT=60`).

## Why
Refunds on the provider's side sometimes take 40 s.
"""),
    _p("c02_sessions_memcached", "held", "en", {"contradiction": ["dec_sessions_redis"]},
       related=["dec_sessions_redis"], rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,memcached,cache",
       title="Use Memcached for Web Session Storage",
       body="""## Decision
Web sessions are stored in Memcached (ElastiCache for Memcached).

## Why
Sessions are small, disposable key-value pairs; Memcached is simpler to run than Redis for that.
"""),
    _p("c03_migrations_after", "held", "en", {"contradiction": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"], rel={"dec_migrations_before_deploy": "contradicts"},
       type="decision", domain="ops", tags="migrations,deploy",
       title="Run Database Migrations After the New App Version Is Live",
       body="""## Decision
Do not run migrations before the deploy. The pipeline runs `alembic upgrade head` after the new app
version is healthy.

## Why
The new version must tolerate the old schema anyway; running afterwards lets us roll back the app alone.
"""),
    _p("c04_cloudfront_off", "dev", "en", {"contradiction": ["dec_cloudfront_gzip"]},
       related=["dec_cloudfront_gzip"], rel={"dec_cloudfront_gzip": "contradicts"},
       type="decision", domain="infra", tags="cloudfront,compression",
       title="Disable Compression on the CloudFront Distribution",
       body="""## Decision
Turn off automatic compression in the web distribution's cache policy; the origin sends pre-compressed assets.
"""),
    _p("c05_gunicorn_gthread", "held", "en", {"contradiction": ["dec_gunicorn_sync"]},
       related=["dec_gunicorn_sync"], rel={"dec_gunicorn_sync": "contradicts"},
       type="decision", domain="dev", tags="gunicorn,workers",
       title="Gunicorn Uses the gthread Worker Class",
       body="""## Decision
The API runs Gunicorn with `--worker-class gthread --threads 4`.

## Why
Several endpoints wait on slow upstreams; threads keep a worker busy with others meanwhile.
"""),
    _p("c06_node_20", "dev", "en", {"contradiction": ["dec_node_18_ci"]},
       related=["dec_node_18_ci"], rel={"dec_node_18_ci": "contradicts"},
       type="decision", domain="dev", tags="nodejs,ci",
       title="Pin Node.js 20 in CI",
       body="""## Decision
CI uses `actions/setup-node` with `node-version: 20`.
"""),
    _p("c07_no_webhook_retries", "held", "en", {"contradiction": ["pat_webhook_retries"]},
       related=["pat_webhook_retries"], rel={"pat_webhook_retries": "contradicts"},
       type="pattern", domain="dev", tags="webhooks,retries",
       title="Do Not Retry Failed Webhook Deliveries",
       body="""Never retry a failed webhook delivery from the sender. Record the failure and let the receiver
fetch missed events from the events API.
"""),
    _p("c08_concurrency_8_ja", "dev", "ja", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency",
       title="Celery ワーカーの同時実行数は 8 に設定する",
       body="""## 決定
Celery ワーカーは `--concurrency 8` で起動する。

## 理由
ほとんどの時間を外部 API の応答待ちに使っているため。
"""),
    _p("c09_keepalive_off_ja", "held", "ja", {"contradiction": ["dec_keepalive_ja"]},
       related=["dec_keepalive_ja"], rel={"dec_keepalive_ja": "contradicts"},
       type="decision", domain="infra", tags="http,keep-alive",
       title="本番環境では HTTP keep-alive を無効にする",
       body="""## 決定
本番の API サーバーとロードバランサーの間では HTTP keep-alive を無効にする。

## 理由
アイドル接続の切断タイミングのずれで 502 が出るのを避けるため。
"""),
    _p("c10_log_90_ja", "held", "ja", {"contradiction": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"], rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs",
       title="アプリのログは CloudWatch Logs に 90 日間保存する",
       body="""## 決定
アプリのロググループの保持期間を 90 日にする。

## 理由
監査で 3 か月分のアクセスログを求められたため。
"""),
    _p("c11_mock_db_ja", "dev", "ja", {"contradiction": ["dec_tests_real_db_ja"]},
       related=["dec_tests_real_db_ja"], rel={"dec_tests_real_db_ja": "contradicts"},
       type="decision", domain="testing", tags="testing,database,mock",
       title="テストでは DB をモックする",
       body="""## 決定
リポジトリ層のテストでは DB をモックし、本物の DB は使わない。

## 理由
CI の実行時間を短くするため。
"""),
    _p("c12_staging_pg16_ja", "held", "ja", {"contradiction": ["dec_staging_pg14_ja"]},
       related=["dec_staging_pg14_ja"], rel={"dec_staging_pg14_ja": "contradicts"},
       type="decision", domain="infra", tags="postgresql,staging",
       title="ステージング環境では PostgreSQL 16 を使う",
       body="""## 決定
ステージングの RDS は PostgreSQL 16 で作る。本番のアップグレードを先に試すため。
"""),
    _p("c13_nat_600", "dev", "en", {"contradiction": ["fact_nat_idle_350"]},
       related=["fact_nat_idle_350"], rel={"fact_nat_idle_350": "contradicts"},
       type="insight", domain="infra", tags="nat-gateway,timeout",
       title="The NAT Gateway Idle Timeout Is 600 Seconds",
       body="""AWS NAT gateways drop idle TCP connections after 600 seconds, so keepalives every 5 minutes are enough.
"""),
    # ---------------------------------------------------------------- same neighbourhood, no conflict
    _p("n01_payments_server", "held", "en", related=["dec_payments_client_timeout", "pat_timeout_budgets"],
       type="decision", domain="dev", tags="payments,timeout",
       title="Set the Payments API Server Request Timeout to 60 Seconds",
       body="""## Decision
Our payments API server (the service we run) cuts a request off after 60 seconds (`REQUEST_TIMEOUT=60`).
"""),
    _p("n02_redis_rate_limit", "dev", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="redis,rate-limiting",
       title="Use Redis for API Rate Limiting",
       body="""## Decision
Rate limits are counted in Redis with a sliding window (a sorted set per API key).
"""),
    _p("n03_worker_memory_ja", "held", "ja", related=["dec_worker_concurrency_ja", "ts_celery_worker_memory"],
       type="decision", domain="ops", tags="celery,memory",
       title="Celery ワーカーのメモリ上限は 2 GB に設定する",
       body="""## 決定
Celery ワーカーのコンテナのメモリ上限は 2 GB にする。
"""),
    _p("n04_staging_redis_ja", "dev", "ja", related=["dec_staging_pg14_ja"],
       type="decision", domain="infra", tags="redis,staging",
       title="ステージング環境では Redis 7 を使う",
       body="""## 決定
ステージングの ElastiCache は Redis 7 で作る。
"""),
    _p("n05_python_ci", "held", "en", related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="python,ci",
       title="Pin Python 3.12 in CI",
       body="""## Decision
CI uses `actions/setup-python` with `python-version: "3.12"`, as production does.
"""),
    # ---------------------------------------------------------------- success after failure
    _p("s01_celery_beat_fixed", "dev", "en", {"success_after_failure": ["fail_celery_beat_twice"]},
       related=["fail_celery_beat_twice"],
       type="troubleshooting", domain="ops", tags="celery,beat", memory_type="success",
       title="Celery Beat No Longer Runs Tasks Twice: One Beat Instance with a Redis Lock",
       body="""Periodic tasks ran twice after deploys because the old and new containers both ran `celery beat`
during the rolling update. Fixed by running beat with `celery-redbeat`, whose Redis lock lets only one
beat instance schedule at a time. No duplicate runs since.
"""),
    _p("s02_expo_ios_fixed", "held", "en", {"success_after_failure": ["fail_expo_sdk51_ios"]},
       related=["fail_expo_sdk51_ios"],
       type="troubleshooting", domain="dev", tags="expo,ios,cocoapods",
       title="iOS Build Fixed After the Expo SDK 51 Upgrade: Reinstall Pods",
       body="""## Problem
After upgrading to Expo SDK 51, `eas build --platform ios` failed at `pod install` (no compatible
version of ExpoModulesCore).

## Fix
Run `npx expo install --fix`, delete `ios/Podfile.lock` and `ios/Pods`, then `npx pod-install`. The build passes.
"""),
    _p("s03_docker_cache_gha", "held", "en", {"success_after_failure": ["ts_docker_cache_ci"]},
       related=["ts_docker_cache_ci"],
       type="troubleshooting", domain="ops", tags="docker,ci,cache,buildx",
       title="Docker Layer Cache on CI: buildx with the GitHub Actions Cache Backend",
       body="""## Problem
CI Docker builds reuse no layers and take 9 minutes.

## Fix
Build with `docker/build-push-action` and `cache-from: type=gha`, `cache-to: type=gha,mode=max`. Builds now take
under 2 minutes when only the app code changed.
"""),
    _p("s04_next_oom_fixed_ja", "dev", "ja", {"success_after_failure": ["fail_next_build_oom_ja"]},
       related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,build", memory_type="success",
       title="Next.js のビルドのメモリ不足を NODE_OPTIONS とワーカー数の制限で解決した",
       body="""`next build` が `JavaScript heap out of memory` で落ちていた件。
`NODE_OPTIONS=--max-old-space-size=4096` を設定し、`next.config.js` で `experimental.cpus: 2` にしたら通った。
"""),
    _p("s05_tf_unlock_ja", "held", "ja", {"success_after_failure": ["fail_tf_state_lock_ja"]},
       related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock",
       title="Terraform の state lock は force-unlock で解除できた",
       body="""`Error acquiring the state lock` で止まっていた件。エラーに出ている Lock ID を使って
`terraform force-unlock <LOCK_ID>` を実行したら解除できた。ロックを持っていた CI ジョブが存在しないことを先に確認すること。
"""),
    _p("s06_pytest_xdist_ja", "held", "ja", {"success_after_failure": ["ts_pytest_ci_timeout_ja"]},
       related=["ts_pytest_ci_timeout_ja"],
       type="troubleshooting", domain="testing", tags="pytest,ci,xdist",
       title="CI でだけ pytest がタイムアウトする原因は xdist のワーカー数だった",
       body="""## 症状
ローカルでは 2 分のテストが CI ではジョブタイムアウトまで終わらない。

## 原因と対処
`-n auto` で CI ランナーの 32 コア分のワーカーが立ち、テスト用 DB の接続数上限に達して待ち続けていた。`-n 2` に固定して解決。
"""),
    _p("s07_websocket_ping", "dev", "en", {"success_after_failure": ["fail_websocket_alb_drops"]},
       related=["fail_websocket_alb_drops", "ts_alb_504_keepalive"],
       type="troubleshooting", domain="infra", tags="websocket,alb,ping",
       title="WebSocket Drops Behind the ALB Fixed with a 30-Second Ping",
       body="""## Problem
WebSocket connections through the ALB dropped after 60 s without traffic.

## Fix
The ALB idle timeout (60 s) closes silent connections. The server now sends a ping frame every 30 s; no
drops since.
"""),
    _p("s08_export_timeouts", "held", "en", {"success_after_failure": ["fail_nightly_export_s3"]},
       related=["fail_nightly_export_s3", "ts_requests_no_timeout"],
       type="troubleshooting", domain="ops", tags="export,s3,boto3", memory_type="success",
       title="Nightly Export No Longer Hangs: Connect and Read Timeouts on the S3 Client",
       body="""The nightly export Lambda used to hang on the S3 upload until its 15-minute limit. boto3's client had
no read timeout. Setting `Config(connect_timeout=5, read_timeout=60, retries={"max_attempts": 5})` fixed
it: a stuck upload now fails fast and is retried.
"""),
    _p("s09_hpa_window", "held", "en", {"success_after_failure": ["fail_k8s_hpa_flapping"]},
       related=["fail_k8s_hpa_flapping"],
       type="troubleshooting", domain="infra", tags="kubernetes,hpa",
       title="HPA Flapping Fixed with a Scale-Down Stabilization Window",
       body="""## Problem
The `api` HPA scaled up and down every minute.

## Fix
Set `behavior.scaleDown.stabilizationWindowSeconds: 300` on the HPA. It now scales down at most once
every 5 minutes and the flapping stopped.
"""),
    _p("s10_apns_cert_ja", "held", "ja", {"success_after_failure": ["fail_ios_push_ja"]},
       related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification,apns",
       title="iOS のプッシュ通知が本番で届かない原因は APNs の環境の取り違えだった",
       body="""TestFlight と本番版でだけプッシュ通知が届かなかった件。サーバーが本番ビルドのトークンを
sandbox の APNs エンドポイントに送っていた。本番用エンドポイント（api.push.apple.com）に切り替えて解決。
"""),
    _p("s11_docker_cache_registry", "dev", "en", {"success_after_failure": ["ts_docker_cache_ci"]},
       related=["ts_docker_cache_ci"],
       type="troubleshooting", domain="ops", tags="docker,ci,cache", memory_type="success",
       title="CI Docker Builds Reuse Layers with --cache-from the Registry",
       body="""Docker builds on CI now reuse layers: we push the image with `BUILDKIT_INLINE_CACHE=1` and build with
`--cache-from app:latest`. Build time went from 9 minutes to 2.
"""),
    # ---------------------------------------------------------------- not success after failure
    _p("sn1_celery_worker_leak", "held", "en", related=["ts_celery_worker_memory"],
       type="troubleshooting", domain="ops", tags="celery,memory", memory_type="success",
       title="Celery Worker Memory Leak Contained with --max-tasks-per-child",
       body="""Worker memory kept growing with each task. Starting workers with `--max-tasks-per-child 100` recycles
each child process after 100 tasks; memory now stays flat.
"""),
    _p("sn2_expo_android", "dev", "en",
       type="troubleshooting", domain="dev", tags="expo,android,gradle",
       title="Expo Android Build Fails with Duplicate Class Errors",
       body="""## Problem
`eas build --platform android` fails: `Duplicate class android.support.v4...` from an old library.

## Fix
Remove the library that still depends on the support library, or enable Jetifier. The build passes.
"""),
    _p("sn3_next_hmr_fail_ja", "held", "ja", related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,dev-server", memory_type="failure",
       title="Next.js の dev サーバーが HMR のたびに固まる",
       body="""ファイルを保存するたびに `next dev` が 30 秒ほど固まる。`WATCHPACK_POLLING` を試したが変わらなかった。
"""),
    _p("sn4_websocket_still", "held", "en", related=["fail_websocket_alb_drops"],
       type="troubleshooting", domain="infra", tags="websocket,alb", memory_type="failure",
       title="WebSocket Drops Persist After Raising the ALB Idle Timeout",
       body="""Raised the ALB idle timeout from 60 s to 300 s. WebSocket clients still disconnect, now after 5 minutes of
silence instead of 1. Not fixed.
"""),
    _p("sn5_docker_size_ja", "dev", "ja",
       type="troubleshooting", domain="ops", tags="docker,image-size", memory_type="success",
       title="Docker イメージを multi-stage build で 1.2GB から 180MB に削減した",
       body="""ビルド用のステージで依存関係をインストールし、実行用のステージには成果物だけをコピーするようにした。
ベースイメージを `python:3.12-slim` にしてイメージサイズが 1.2GB から 180MB になった。
"""),
    # ---------------------------------------------------------------- unrelated or only related
    _p("u01_s3_restore", "held", "en",
       type="runbook", domain="ops", tags="s3,versioning,restore",
       title="Restore a Deleted S3 Object from a Versioned Bucket",
       body="""1. `aws s3api list-object-versions --bucket app-uploads --prefix path/to/file`
2. Find the delete marker's `VersionId` and delete the marker:
   `aws s3api delete-object --bucket app-uploads --key path/to/file --version-id <marker-id>`
"""),
    _p("u02_feature_flags", "dev", "en",
       type="pattern", domain="dev", tags="feature-flags",
       title="Feature Flags Need an Owner and an Expiry Date",
       body="""Every feature flag gets an owner and a date by which it is removed. A weekly job lists flags past their
date. Old flags turn into permanent, untested branches.
"""),
    _p("u03_standup_ja", "held", "ja",
       type="insight", domain="general", tags="meeting,team",
       title="朝会は 15 分以内に終える",
       body="""朝会では昨日やったこと・今日やること・困っていることだけを話す。議論が必要な話題は朝会のあとに関係者だけで行う。
"""),
    _p("u04_certbot_ja", "dev", "ja",
       type="runbook", domain="infra", tags="tls,letsencrypt,certbot",
       title="Let's Encrypt の証明書を certbot で更新する",
       body="""1. `sudo certbot renew --dry-run` で更新できるか確かめる
2. `sudo certbot renew` を実行する
3. `sudo systemctl reload nginx` で新しい証明書を読み込ませる
"""),
    _p("u05_cors_preflight", "held", "en",
       type="troubleshooting", domain="dev", tags="cors,api-gateway",
       title="CORS Preflight Fails Because the API Gateway Route Has No OPTIONS Method",
       body="""## Symptoms
The browser blocks requests with "Response to preflight request doesn't pass access control check".

## Fix
Add an OPTIONS method (or enable CORS) on the API Gateway resource so the preflight gets the
`Access-Control-Allow-*` headers.
"""),
    _p("u06_utc_ja", "held", "ja",
       type="pattern", domain="dev", tags="datetime,timezone",
       title="日時はすべて UTC で保存し、表示するときにタイムゾーンを変換する",
       body="""DB には timestamptz で UTC の日時を保存する。ユーザーに見せるときだけ、そのユーザーのタイムゾーンに変換する。
"""),
    _p("u07_ecs_budget", "held", "en", related=["pat_timeout_budgets", "ts_alb_504_keepalive"],
       rel={"pat_timeout_budgets": "extends"},
       type="runbook", domain="infra", tags="timeout,ecs,alb",
       title="Timeout Budget for the Orders Service: ALB 60 s, Gunicorn 55 s, HTTP Client 20 s, DB 10 s",
       body="""Applies the "timeout budgets shrink inward" rule to the orders service on ECS:
- ALB idle timeout: 60 s
- Gunicorn `--timeout 55`
- outbound HTTP clients: `timeout=(3, 20)`
- PostgreSQL `statement_timeout = 10s`
"""),
    _p("u08_app_credentials", "held", "en", related=["run_rds_password_rotation"],
       rel={"run_rds_password_rotation": "depends_on"},
       type="runbook", domain="infra", tags="rds,credentials,ecs",
       title="Rotate the App's Database Credentials",
       body="""Requires the RDS master password rotation (Rotate the RDS Master Password with Secrets Manager) to
have run first, since the app user's password is reset with the master credentials.

1. Run `scripts/rotate_app_user.sh prod`.
2. Redeploy the service: `aws ecs update-service --force-new-deployment`.
"""),
    _p("u09_ecs_oom_ja", "dev", "ja",
       type="troubleshooting", domain="infra", tags="ecs,memory,oom",
       title="ECS タスクが起動直後に OOM で停止する",
       body="""## 症状
タスクが起動して数秒で `OutOfMemoryError: Container killed due to memory usage` で止まる。

## 対処
タスク定義のメモリを 512MB から 1024MB に上げ、JVM の `-Xmx` をコンテナのメモリに合わせた。
"""),
    _p("u10_gunicorn_worker_timeout", "dev", "en", related=["pat_timeout_budgets", "dec_gunicorn_sync"],
       type="troubleshooting", domain="dev", tags="gunicorn,timeout,upstream",
       title="Gunicorn WORKER TIMEOUT on Slow Upstream Calls",
       body="""## Problem
Requests that call the pricing service end in 502 and Gunicorn logs `WORKER TIMEOUT`: the pricing call
sometimes takes 40 s and Gunicorn kills sync workers silent for 30 s.

## Fix
Give the pricing client `timeout=(3, 20)` so the app fails first with a handled 503.
"""),
    # ---------------------------------------------------------------- blind: written after the rules were
    # frozen (commit a362736), expected answers first, run once for the report.
    _p("bd1_tf_rename", "blind", "en", {"duplicate": ["ts_terraform_sg_dup"]}, related=["ts_terraform_sg_dup"],
       type="troubleshooting", domain="infra", tags="terraform,security-group,state",
       title="terraform apply Fails with InvalidPermission.Duplicate After Renaming a Rule Resource",
       body="""Renaming an `aws_security_group_rule` resource makes Terraform destroy and recreate it, and AWS rejects the
new rule as `InvalidPermission.Duplicate`. Use `terraform state mv` from the old address to the new one instead.
"""),
    _p("bd2_ssrf_checklist", "blind", "en", {"duplicate": ["chk_ssrf_review"]}, related=["chk_ssrf_review"],
       type="checklist", domain="security", tags="ssrf,security,review",
       title="Checklist for Reviewing Code for SSRF",
       body="""- [ ] Can a user control a URL the server fetches?
- [ ] Is the resolved address checked against an allow-list?
- [ ] Are redirects turned off, or checked again?
- [ ] Is 169.254.169.254 (instance metadata) unreachable?
"""),
    _p("bd3_rds_rotation", "blind", "en", {"duplicate": ["run_rds_password_rotation"]},
       related=["run_rds_password_rotation"],
       type="runbook", domain="infra", tags="rds,secrets-manager",
       title="RDS Master Password Rotation via Secrets Manager",
       body="""1. In Secrets Manager, open `prod/rds/master` and rotate it now.
2. Watch the rotation Lambda's log group `/aws/lambda/rds-rotation` until it succeeds.
3. Confirm the app can still connect with `psql "$DATABASE_URL" -c 'select 1'`.
"""),
    _p("bd4_keepalive_ja", "blind", "ja", {"duplicate": ["dec_keepalive_ja"]}, related=["dec_keepalive_ja"],
       type="decision", domain="infra", tags="http,keep-alive",
       title="本番の API サーバーとロードバランサー間は keep-alive を使う",
       body="""## 決定
本番では API サーバーとロードバランサーの間で HTTP keep-alive を使う。

## 理由
TCP 接続と TLS ハンドシェイクのやり直しを減らすため。
"""),
    _p("bd5_log_retention_ja", "blind", "ja", {"duplicate": ["dec_log_retention_ja"]}, related=["dec_log_retention_ja"],
       type="decision", domain="ops", tags="cloudwatch,logs",
       title="アプリのロググループの保持期間は 30 日",
       body="""## 決定
CloudWatch Logs のアプリ用ロググループは 30 日で削除する。S3 へのエクスポートはしない。

## 理由
30 日より古いログを障害調査で使ったことがなく、保存料金を抑えたいため。
"""),
    _p("bd6_secrets_en", "blind", "en", {"duplicate": ["ts_secrets_ecs_ja"]}, related=["ts_secrets_ecs_ja"],
       type="troubleshooting", domain="infra", tags="secrets-manager,ecs",
       title="Secrets Manager Updates Do Not Reach Running ECS Tasks",
       body="""## Symptoms
After changing a secret in Secrets Manager, the app still connects with the old password.

## Cause
ECS injects secrets as environment variables when a task starts; running tasks keep the old value.

## Fix
Replace the tasks: `aws ecs update-service --force-new-deployment`.
"""),
    _p("bd7_requests_ja", "blind", "ja", {"duplicate": ["ts_requests_no_timeout"]}, related=["ts_requests_no_timeout"],
       type="troubleshooting", domain="dev", tags="python,requests,timeout",
       title="Python の requests はタイムアウトを指定しないと永遠に待ち続ける",
       body="""## 症状
ワーカーが止まったまま進まない。スタックを見ると `requests.get` の中で読み込み待ちになっている。

## 原因
requests には既定のタイムアウトがない。相手が応答しなくなると永遠に待つ。

## 対処
必ず `timeout=(3.05, 27)` を渡す。
"""),
    _p("bd8_nat_insight", "blind", "en", {"duplicate": ["fact_nat_idle_350"]}, related=["fact_nat_idle_350"],
       type="fact", domain="infra", tags="nat-gateway,tcp",
       title="AWS NAT Gateways Time Out Idle Connections at 350 Seconds",
       body="""A NAT gateway forgets a TCP connection after 350 seconds without traffic, and that cannot be configured.
Keep idle connections alive with TCP keepalive under 350 s.
"""),
    _p("bc1_gunicorn_workers", "blind", "en", {"contradiction": ["dec_gunicorn_sync"]}, related=["dec_gunicorn_sync"],
       rel={"dec_gunicorn_sync": "contradicts"},
       type="decision", domain="dev", tags="gunicorn,workers",
       title="Gunicorn Runs 4 Sync Workers per CPU",
       body="""## Decision
The API runs Gunicorn with `--worker-class sync` and 4 x CPU workers.
"""),
    _p("bc2_sessions_db", "blind", "en", {"contradiction": ["dec_sessions_redis"]}, related=["dec_sessions_redis"],
       rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,database",
       title="Keep Web Sessions in the Primary Database",
       body="""## Decision
Web sessions are stored in the primary PostgreSQL database, not in Redis.
"""),
    _p("bc3_concurrency_2_ja", "blind", "ja", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency",
       title="Celery ワーカーは --concurrency 2 で起動する",
       body="""## 決定
Celery ワーカーの同時実行数は 2 にする。メモリ不足を避けるため。
"""),
    _p("bc4_no_real_db_ja", "blind", "ja", {"contradiction": ["dec_tests_real_db_ja"]}, related=["dec_tests_real_db_ja"],
       rel={"dec_tests_real_db_ja": "contradicts"},
       type="decision", domain="testing", tags="testing,database",
       title="リポジトリ層のテストでは本物の DB を使わない",
       body="""## 決定
リポジトリ層のテストでは本物の DB を使わず、インメモリの偽実装に差し替える。
"""),
    _p("bc5_webhook_five", "blind", "en", {"contradiction": ["pat_webhook_retries"]}, related=["pat_webhook_retries"],
       rel={"pat_webhook_retries": "contradicts"},
       type="pattern", domain="dev", tags="webhooks,retries",
       title="Retry Failed Webhook Deliveries Five Times with Exponential Backoff",
       body="""Retry a failed webhook delivery up to five times with exponential backoff and jitter.
"""),
    _p("bc6_keepalive_shorter", "blind", "en", {"contradiction": ["ts_alb_504_keepalive"]},
       related=["ts_alb_504_keepalive"], rel={"ts_alb_504_keepalive": "contradicts"},
       type="pattern", domain="infra", tags="alb,keep-alive,gunicorn",
       title="Backend Keep-Alive Must Be Shorter Than the ALB Idle Timeout",
       body="""Set Gunicorn's `--keep-alive` below the ALB idle timeout of 60 s, e.g. 30 s.
"""),
    _p("bn1_redis_broker", "blind", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="redis,celery",
       title="Use Redis as the Celery Broker",
       body="""## Decision
Celery uses Redis (a separate ElastiCache cluster) as its broker and result backend.
"""),
    _p("bn2_http2_ja", "blind", "ja", related=["dec_keepalive_ja"],
       type="decision", domain="infra", tags="http,http2",
       title="本番環境では HTTP/2 を有効にする",
       body="""## 決定
本番のロードバランサーで HTTP/2 を有効にする。
"""),
    _p("bn3_node_docker", "blind", "en", related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="nodejs,docker",
       title="Pin Node.js 18 in the Docker Base Image",
       body="""## Decision
The app's Dockerfile starts `FROM node:18-bookworm-slim`, the same major version as CI.
"""),
    _p("bn4_payments_retries", "blind", "en", related=["dec_payments_client_timeout"],
       type="decision", domain="dev", tags="payments,retries",
       title="Set the Payments API Client Retry Count to 3",
       body="""## Decision
The payments API client retries a failed request 3 times (`PAYMENTS_RETRIES=3`).
"""),
    _p("bs1_hpa_rps", "blind", "en", {"success_after_failure": ["fail_k8s_hpa_flapping"]},
       related=["fail_k8s_hpa_flapping"],
       type="troubleshooting", domain="infra", tags="kubernetes,hpa", memory_type="success",
       title="HPA Stopped Flapping After Scaling on Requests per Second",
       body="""The `api` HPA no longer scales up and down every minute: it now scales on requests per second from the
ingress controller instead of CPU, which was noisy.
"""),
    _p("bs2_next_images_ja", "blind", "ja", {"success_after_failure": ["fail_next_build_oom_ja"]},
       related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,build",
       title="Next.js のビルドのメモリ不足が解消した: 画像最適化をビルドから外した",
       body="""`next build` が `JavaScript heap out of memory` で落ちていたが、ビルド時の画像最適化をやめたらメモリ使用量が
半分になり、CI で通るようになった。
"""),
    _p("bs3_tf_unlock_en", "blind", "en", {"success_after_failure": ["fail_tf_state_lock_ja"]},
       related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock",
       title="Terraform State Lock Released with force-unlock",
       body="""`terraform plan` was stuck on `Error acquiring the state lock` after a CI apply was killed. Fixed: checked
that the CI job holding the lock was gone, then ran `terraform force-unlock <LOCK_ID>` with the ID from the error.
"""),
    _p("bs4_beat_service", "blind", "en", {"success_after_failure": ["fail_celery_beat_twice"]},
       related=["fail_celery_beat_twice"],
       type="troubleshooting", domain="ops", tags="celery,beat,deploy",
       title="Celery Beat Duplicates Gone After Moving Beat to Its Own Single-Replica Service",
       body="""## Problem
Periodic tasks ran twice after each deploy: old and new containers both ran `celery beat`.

## Fix
Beat now runs as its own ECS service with one task and the `minimumHealthyPercent` of 0, so the old beat stops
before the new one starts. No duplicate runs since.
"""),
    _p("bsn1_expo_web", "blind", "en",
       type="troubleshooting", domain="dev", tags="expo,web,metro",
       title="Expo Web Build Fixed by Upgrading Metro",
       body="""## Problem
`npx expo export --platform web` failed with a Metro resolver error.

## Fix
Upgrading `metro` to the version Expo expects fixed the web build.
"""),
    _p("bsn2_tf_parallelism_ja", "blind", "ja",
       type="troubleshooting", domain="infra", tags="terraform,performance", memory_type="success",
       title="Terraform の plan が遅いのを -parallelism=30 で改善した",
       body="""リソースが多く `terraform plan` に 10 分かかっていたが、`-parallelism=30` にして 3 分になった。
"""),
    # ---------------------------------------------------------------- blind2: written after the second freeze
    # (the rules changed on the blind run), expected answers first, run once for the report.
    _p("b2d1_github_org_hooks", "blind2", "en", {"duplicate": ["ts_github_pat_404"]}, related=["ts_github_pat_404"],
       type="troubleshooting", domain="dev", tags="github,webhooks",
       title="Organization Webhooks API Answers 404 to a Fine-Grained Token",
       body="""The org hooks endpoint (`GET /orgs/acme/hooks`) says 404 Not Found although the org exists: GitHub uses 404
for a missing permission. Give the fine-grained token the organization permission "Webhooks: Read and write" and
get it approved by an owner.
"""),
    _p("b2d2_ecs_egress_ja", "blind2", "ja", {"duplicate": ["ts_ecs_sg_egress_ja"]}, related=["ts_ecs_sg_egress_ja"],
       type="troubleshooting", domain="infra", tags="ecs,security-group,timeout",
       title="ECS から外部 API に繋がらないのは SG のアウトバウンドに 443 がないから",
       body="""ECS タスクから外部 API を呼ぶと 30 秒後に `ConnectTimeout`。名前解決は問題ない。
Terraform で作ったセキュリティグループは既定のエグレスが消えるので、アウトバウンドに TCP 443 を足す。
"""),
    _p("b2d3_pytest_state", "blind2", "en", {"duplicate": ["pat_pytest_tmp_path"]}, related=["pat_pytest_tmp_path"],
       type="pattern", domain="testing", tags="pytest,fixtures",
       title="Use tmp_path and monkeypatch.setenv So pytest Tests Do Not Share State",
       body="""A test writes files only under `tmp_path` and sets environment variables only with `monkeypatch.setenv`,
which restores them afterwards, so tests can run in any order and in parallel.
"""),
    _p("b2d4_cache_keys_ja", "blind2", "ja", {"duplicate": ["ins_cache_versioned_keys_ja"]},
       related=["ins_cache_versioned_keys_ja"],
       type="insight", domain="dev", tags="cache",
       title="キャッシュのキーにバージョンを付けて一括で無効化する",
       body="""キーに `v3:` のようなバージョンを含めておけば、データの形式を変えたときにバージョンを一つ上げるだけで古いキャッシュを
まとめて無効にできる。キーを一つずつ消さなくてよい。
"""),
    _p("b2c1_payments_10s", "blind2", "en", {"contradiction": ["dec_payments_client_timeout"]},
       related=["dec_payments_client_timeout"], rel={"dec_payments_client_timeout": "contradicts"},
       type="decision", domain="dev", tags="payments,timeout",
       title="Payments Client Gives Up After 10 Seconds",
       body="""## Decision
The payments API client times out requests after 10 seconds; checkout shows a retry button instead of waiting.
"""),
    _p("b2c2_no_keepalive_ja", "blind2", "ja", {"contradiction": ["dec_keepalive_ja"]}, related=["dec_keepalive_ja"],
       rel={"dec_keepalive_ja": "contradicts"},
       type="decision", domain="infra", tags="http,keep-alive",
       title="本番の API サーバーとロードバランサーの間では keep-alive を使わない",
       body="""## 決定
本番の API サーバーとロードバランサーの間では HTTP keep-alive を使わない。接続は毎回閉じる。
"""),
    _p("b2c3_migrate_on_start", "blind2", "en", {"contradiction": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"], rel={"dec_migrations_before_deploy": "contradicts"},
       type="decision", domain="ops", tags="migrations,deploy",
       title="Run Migrations When the App Container Starts, Not Before the Deploy",
       body="""## Decision
Each app container runs `alembic upgrade head` when it starts. Migrations are not run as a separate step before
the new app version is deployed.
"""),
    _p("b2c4_staging_pg15_ja", "blind2", "ja", {"contradiction": ["dec_staging_pg14_ja"]},
       related=["dec_staging_pg14_ja"], rel={"dec_staging_pg14_ja": "contradicts"},
       type="decision", domain="infra", tags="postgresql,staging,rds",
       title="ステージングの RDS は PostgreSQL 15 で作る",
       body="""## 決定
ステージングの RDS は PostgreSQL 15 で作る。
"""),
    _p("b2n1_memcached_fragments", "blind2", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="memcached,cache",
       title="Use Memcached for HTML Fragment Caching",
       body="""## Decision
Rendered HTML fragments are cached in Memcached for 10 minutes.
"""),
    _p("b2n2_prefetch_ja", "blind2", "ja", related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,prefetch",
       title="Celery ワーカーのプリフェッチ数は 1 に設定する",
       body="""## 決定
Celery ワーカーは `--prefetch-multiplier 1` で起動する。長いタスクが他のタスクを待たせないように。
"""),
    _p("b2n3_terraform_ci", "blind2", "en",
       type="decision", domain="dev", tags="terraform,ci",
       title="Pin Terraform 1.6 in CI",
       body="""## Decision
CI installs Terraform 1.6 with `hashicorp/setup-terraform`, the version the state was written with.
"""),
    _p("b2n4_gunicorn_admin", "blind2", "en", related=["dec_gunicorn_sync"],
       type="decision", domain="dev", tags="gunicorn,admin",
       title="The Admin App's Gunicorn Uses the Sync Worker Class",
       body="""## Decision
The internal admin app also runs Gunicorn with `--worker-class sync`, with 2 workers.
"""),
    _p("b2s1_ws_keepalive", "blind2", "en", {"success_after_failure": ["fail_websocket_alb_drops"]},
       related=["fail_websocket_alb_drops"],
       type="troubleshooting", domain="infra", tags="websocket,alb,keepalive", memory_type="success",
       title="WebSocket Disconnects Behind the ALB Fixed by Client Pings Every 20 Seconds",
       body="""The ALB closed idle WebSocket connections after 60 s. The browser client now sends a ping message every 20 s
and the connections stay up.
"""),
    _p("b2s2_apns_prod_ja", "blind2", "ja", {"success_after_failure": ["fail_ios_push_ja"]},
       related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification,apns", memory_type="success",
       title="iOS の本番プッシュ通知が届くようになった",
       body="""本番版だけプッシュ通知が届かなかった件は、サーバーの APNs の接続先を sandbox から本番に直したら届くようになった。
"""),
    _p("b2sn1_export_still", "blind2", "en", related=["fail_nightly_export_s3"],
       type="episode", domain="ops", tags="export,s3", memory_type="failure",
       title="Nightly Export Still Hangs After Adding Retries",
       body="""2026-10-09: added retries around the S3 upload in the nightly export. It still hung until the Lambda limit.
"""),
    _p("b2sn2_checkout_flaky", "blind2", "en", related=["ins_flaky_tests_shared_state"],
       type="troubleshooting", domain="testing", tags="flaky-tests,cart", memory_type="success",
       title="Flaky Checkout Test Fixed by Resetting the Cart Cache Between Tests",
       body="""The checkout test failed one run in ten: a module-level cart cache kept items from the previous test. An
autouse fixture now clears it; the test has passed 500 runs in a row.
"""),
    # ---------------------------------------------------------------- blind3: written after the rules of
    # docs/decisions/0032 froze, expected answers first, before the product was run on any of them.
    _p("b3d1_sql_bound", "blind3", "en", {"duplicate": ["pat_sql_params"]}, related=["pat_sql_params"],
       type="pattern", domain="security", tags="sql-injection,python",
       title="Use Bound Parameters Instead of Formatting User Input into SQL",
       body="""Do not paste user input into a SQL string with f-strings or `%`. Hand the values to the driver as
parameters, e.g. `cur.execute("SELECT * FROM users WHERE email = %s", (email,))`, and let it quote them.
Table and column names cannot be bound: check those against an allow-list.
"""),
    _p("b3d2_celery_oom", "blind3", "en", {"duplicate": ["ts_celery_worker_memory"]}, related=["ts_celery_worker_memory"],
       type="troubleshooting", domain="ops", tags="celery,oom",
       title="Celery Workers OOM-Killed as Memory Creeps Up with Every Task",
       body="""## Symptoms
The worker containers get OOM-killed every few hours; memory climbs a little with each task.

## Cause
A native extension leaks per task and the pool keeps the same child processes forever.

## Fix
Recycle children with `worker_max_memory_per_child = 200000` (KiB, about 200 MB).
"""),
    _p("b3d3_rebase_ja", "blind3", "ja", {"duplicate": ["run_git_rebase_ja"]}, related=["run_git_rebase_ja"],
       type="runbook", domain="dev", tags="git,rebase",
       title="main の最新を作業ブランチに取り込む（rebase）",
       body="""1. `git fetch origin` で main の最新を取ってくる
2. `git rebase origin/main` を実行する
3. コンフリクトを解消したら `git add` して `git rebase --continue`
4. 最後に `git push --force-with-lease` で押し込む
"""),
    _p("b3d4_release_check_ja", "blind3", "ja", {"duplicate": ["chk_deploy_ja"]}, related=["chk_deploy_ja"],
       type="checklist", domain="ops", tags="deploy,release",
       title="本番リリース前の確認項目",
       body="""- [ ] マイグレーションが後方互換になっている
- [ ] ステージング環境で動作を確かめた
- [ ] ロールバックの手順を確かめた
- [ ] 監視ダッシュボードを開いておく
- [ ] 関係者にデプロイの時刻を伝えた
"""),
    _p("b3d5_rds_sg_en", "blind3", "en", {"duplicate": ["ts_rds_sg_timeout_ja"]}, related=["ts_rds_sg_timeout_ja"],
       type="troubleshooting", domain="infra", tags="rds,security-group,timeout",
       title="RDS Connections Time Out: Security Group Inbound Rule Missing",
       body="""## Symptoms
The app waits a while, then fails to reach RDS with `Connection timed out`.

## Cause
The RDS security group has no inbound rule allowing port 5432 from the app's security group.

## Fix
Add an inbound rule to the RDS security group with the app's security group as the source.
"""),
    _p("b3d6_markdown_kb", "blind3", "en", {"duplicate": ["dec_markdown_kb"]}, related=["dec_markdown_kb"],
       type="decision", domain="dev", tags="knowledge-base,markdown,git",
       title="Knowledge Cards Live as Markdown Files in Git",
       body="""## Decision
Each knowledge card is a Markdown file with YAML frontmatter, kept in git rather than in a database table.

## Why
People browse and edit them in Obsidian, and git gives us history and review at no cost.
"""),
    _p("b3d7_n_plus_1_ja", "blind3", "ja", {"duplicate": ["pat_n_plus_1_ja"]}, related=["pat_n_plus_1_ja"],
       type="pattern", domain="dev", tags="django,orm",
       title="Django の N+1 問題は select_related / prefetch_related でまとめて取る",
       body="""一覧で関連オブジェクトを触ると 1 行ごとにクエリが飛ぶ（N+1）。多対一の外部キーは `select_related`、
多対多や逆参照は `prefetch_related` を使って一度に取得する。クエリ数は `django-debug-toolbar` で確かめる。
"""),
    _p("b3d8_expo_screens", "blind3", "en", {"duplicate": ["ts_expo_fabric_crash"]}, related=["ts_expo_fabric_crash"],
       type="troubleshooting", domain="dev", tags="expo,ios,react-native",
       title="iOS Launch Crash in RNSScreenStackHeaderConfig After Turning On the New Architecture",
       body="""With Fabric enabled the Expo iOS app dies at launch; the stack trace points at `RNSScreenStackHeaderConfig`.
Install the react-native-screens version Expo pins (`npx expo install react-native-screens`) and rebuild the
dev client.
"""),
    _p("b3n1_ldap_params", "blind3", "en", related=["pat_sql_params"],
       type="pattern", domain="security", tags="ldap,injection",
       title="Escape User Input in LDAP Search Filters",
       body="""Build LDAP filters with the library's escaping helper (`ldap3.utils.conv.escape_filter_chars`) so a
user name like `*)(uid=*` cannot widen the search.
"""),
    _p("b3n2_batch_logs_ja", "blind3", "ja", related=["dec_log_retention_ja"],
       type="decision", domain="ops", tags="cloudwatch,logs,batch",
       title="バッチジョブのログは CloudWatch Logs に 7 日間保存する",
       body="""## 決定
夜間バッチ用のロググループの保持期間は 7 日にする。アプリのロググループとは別に管理する。
"""),
    _p("b3n3_search_client_timeout", "blind3", "en", related=["dec_payments_client_timeout", "pat_timeout_budgets"],
       type="decision", domain="dev", tags="search,timeout,http-client",
       title="Set the Search API Client Timeout to 5 Seconds",
       body="""## Decision
The search service client gives up after 5 seconds (`SEARCH_TIMEOUT=5`); the page shows results without facets.
"""),
    _p("b3n4_dockerhub_push", "blind3", "en", related=["run_ecr_push"],
       type="runbook", domain="dev", tags="docker,docker-hub",
       title="Publish the CLI Image to Docker Hub",
       body="""1. `docker login -u acmebot` with the token from the password manager.
2. `docker build -t acme/cli:1.4.0 .`
3. `docker push acme/cli:1.4.0` and `docker push acme/cli:latest`.
"""),
    _p("b3n5_prod_pg16_ja", "blind3", "ja", related=["dec_staging_pg14_ja"],
       type="decision", domain="infra", tags="postgresql,production,rds",
       title="本番環境の RDS では PostgreSQL 16 を使う",
       body="""## 決定
本番の RDS は PostgreSQL 16 で作る。新しい機能と性能改善のため。
"""),
    _p("b3c1_cloudfront_origin", "blind3", "en", {"contradiction": ["dec_cloudfront_gzip"]}, related=["dec_cloudfront_gzip"],
       rel={"dec_cloudfront_gzip": "contradicts"},
       type="decision", domain="infra", tags="cloudfront,compression",
       title="Do Not Compress at CloudFront; the Origin Serves Pre-Compressed Bundles",
       body="""## Decision
Automatic compression stays off in the web distribution's cache policy. The build writes `.br` and `.gz`
files and the origin serves them.
"""),
    _p("b3c2_node_22_ci", "blind3", "en", {"contradiction": ["dec_node_18_ci"]}, related=["dec_node_18_ci"],
       rel={"dec_node_18_ci": "contradicts"},
       type="decision", domain="dev", tags="nodejs,ci",
       title="CI Uses Node.js 22",
       body="""## Decision
`actions/setup-node` installs `node-version: 22` in every CI workflow.
"""),
    _p("b3c3_log_7_days_ja", "blind3", "ja", {"contradiction": ["dec_log_retention_ja"]}, related=["dec_log_retention_ja"],
       rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="アプリのログの保持期間は 7 日にする",
       body="""## 決定
アプリのロググループは 7 日で消す。調査に必要なログは S3 に書き出す。
"""),
    _p("b3c4_kb_in_postgres", "blind3", "en", {"contradiction": ["dec_markdown_kb"]}, related=["dec_markdown_kb"],
       rel={"dec_markdown_kb": "contradicts"},
       type="decision", domain="dev", tags="knowledge-base,database",
       title="Keep the Knowledge Base in PostgreSQL, Not in Markdown Files",
       body="""## Decision
Knowledge cards are rows in a PostgreSQL table edited through the admin UI, not Markdown files in git.
"""),
    _p("b3c5_nat_120", "blind3", "en", {"contradiction": ["fact_nat_idle_350"]}, related=["fact_nat_idle_350"],
       rel={"fact_nat_idle_350": "contradicts"},
       type="fact", domain="infra", tags="nat-gateway,timeout",
       title="NAT Gateway Closes Idle TCP Connections After 120 Seconds",
       body="""The AWS NAT gateway drops a TCP connection that has been idle for 120 seconds.
"""),
    _p("b3c6_sessions_db_ja", "blind3", "ja", {"contradiction": ["dec_sessions_redis"]}, related=["dec_sessions_redis"],
       rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,redis,database",
       title="Web セッションは Redis ではなくデータベースに保存する",
       body="""## 決定
Web のセッションは Redis を使わず、本番の PostgreSQL に保存する。
"""),
    _p("b3s1_expo_pod_update", "blind3", "en", {"success_after_failure": ["fail_expo_sdk51_ios"]},
       related=["fail_expo_sdk51_ios"],
       type="troubleshooting", domain="dev", tags="expo,ios,upgrade", memory_type="success",
       title="Expo SDK 51 iOS Build Passes After Updating the CocoaPods Repo",
       body="""The SDK 51 upgrade's `eas build --platform ios` failure (`could not find compatible versions for pod
"ExpoModulesCore"`) is gone: clearing the pods cache and running `pod repo update` in the build hook fixed it.
"""),
    _p("b3s2_docker_cache_ja", "blind3", "ja", {"success_after_failure": ["ts_docker_cache_ci"]},
       related=["ts_docker_cache_ci"],
       type="troubleshooting", domain="ops", tags="docker,ci,cache", memory_type="success",
       title="CI の Docker ビルドがキャッシュで速くなった: buildx の --cache-from を使う",
       body="""CI の Docker ビルドが毎回ゼロから 9 分かかっていた件。`docker buildx build --cache-from type=registry`
と `--cache-to` でレイヤーをレジストリに置くようにしたら 2 分で終わるようになった。
"""),
    _p("b3s3_export_multipart", "blind3", "en", {"success_after_failure": ["fail_nightly_export_s3"]},
       related=["fail_nightly_export_s3"],
       type="troubleshooting", domain="ops", tags="export,s3,lambda", memory_type="success",
       title="Nightly Export Finishes Again After Switching to a Multipart S3 Upload",
       body="""The nightly export Lambda no longer hangs on the S3 upload: it now streams the CSV with a multipart upload
(`upload_fileobj` with a 16 MB part size) and finishes in 4 minutes.
"""),
    _p("b3s4_apns_env_ja", "blind3", "ja", {"success_after_failure": ["fail_ios_push_ja"]},
       related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification", memory_type="success",
       title="本番版で iOS のプッシュ通知が届かない問題を解決した",
       body="""本番版と TestFlight 版でだけ通知が届かなかった原因は、entitlements の `aps-environment` が development の
ままだったこと。production に直して再ビルドしたら届いた。
"""),
    _p("b3s5_pytest_dns_ja", "blind3", "ja", {"success_after_failure": ["ts_pytest_ci_timeout_ja"]},
       related=["ts_pytest_ci_timeout_ja"],
       type="troubleshooting", domain="testing", tags="pytest,ci", memory_type="success",
       title="CI でだけ pytest がタイムアウトする件が解決した",
       body="""CI でだけテストが 10 分のタイムアウトで打ち切られていたのは、外部 API への接続待ちだった。
CI では外部 API をスタブに差し替えたら 2 分で終わるようになった。
"""),
    _p("b3sn1_gradle_cache", "blind3", "en",
       type="troubleshooting", domain="dev", tags="gradle,android,build", memory_type="success",
       title="Android Builds Twice as Fast with the Gradle Build Cache",
       body="""Turning on `org.gradle.caching=true` and a remote cache node cut the Android CI build from 14 to 7 minutes.
"""),
    _p("b3sn2_hpa_still", "blind3", "en", related=["fail_k8s_hpa_flapping"],
       type="troubleshooting", domain="infra", tags="kubernetes,hpa", memory_type="failure",
       title="HPA Still Flaps After Adding a Scale-Down Stabilization Window",
       body="""Added `behavior.scaleDown.stabilizationWindowSeconds: 300` to the api HPA. It still adds and removes pods
every few minutes.
"""),
    _p("b3u1_kafka_offsets", "blind3", "en",
       type="runbook", domain="ops", tags="kafka,consumer-groups",
       title="Reset a Kafka Consumer Group's Offsets",
       body="""1. Stop every consumer in the group.
2. `kafka-consumer-groups --bootstrap-server $BROKER --group billing --reset-offsets --to-datetime 2026-11-01T00:00:00.000 --topic invoices --execute`
3. Start the consumers again and watch the lag.
"""),
    _p("b3u2_slack_night_ja", "blind3", "ja",
       type="decision", domain="ops", tags="slack,alerts",
       title="夜間は Slack のアラート通知をミュートする",
       body="""## 決定
22 時から 7 時までは重要度の低いアラートを Slack に流さない。重要度の高いものは電話で呼び出す。
"""),
    _p("b3u3_iso_dates", "blind3", "en",
       type="pattern", domain="dev", tags="api,dates",
       title="Return Dates in API Responses as ISO 8601 with an Offset",
       body="""Serialize every timestamp as ISO 8601 with an explicit offset (`2026-11-26T09:00:00+09:00`), never as epoch
seconds or a local time without a zone.
"""),
    # ---------------------------------------------------------------- blind4: written after the blind3 run and
    # before the changes it led to, expected answers first; run once on those changes for the report.
    _p("b4d1_webhook_retries", "blind4", "en", {"duplicate": ["pat_webhook_retries"]}, related=["pat_webhook_retries"],
       type="pattern", domain="dev", tags="webhooks,retries",
       title="Redeliver Failed Webhooks Up to Three Times with Exponential Backoff and Jitter",
       body="""A delivery that times out or gets a 5xx is retried at most 3 times, backing off exponentially (10 s, 60 s,
5 min) with jitter. The receiver drops repeats by delivery id, so it must be idempotent.
"""),
    _p("b4d2_tf_state_mv", "blind4", "en", {"duplicate": ["ts_terraform_sg_dup"]}, related=["ts_terraform_sg_dup"],
       type="troubleshooting", domain="infra", tags="terraform,state",
       title="InvalidPermission.Duplicate from Terraform After Renaming a Security Group Rule",
       body="""`terraform apply` fails with `InvalidPermission.Duplicate` once a security group rule resource has been
renamed. Do not let it recreate the rule: `terraform state mv aws_security_group_rule.old aws_security_group_rule.new`.
"""),
    _p("b4d3_secrets_ja", "blind4", "ja", {"duplicate": ["ts_secrets_ecs_ja"]}, related=["ts_secrets_ecs_ja"],
       type="troubleshooting", domain="infra", tags="ecs,secrets-manager",
       title="シークレットを更新したのに ECS のアプリが古い値のまま",
       body="""Secrets Manager の値を変えても、起動中の ECS タスクは古いパスワードを使い続ける。シークレットは
タスクの起動時に環境変数として読み込まれるため。`aws ecs update-service --force-new-deployment` でタスクを入れ替える。
"""),
    _p("b4d4_ssrf_ja_en", "blind4", "en", {"duplicate": ["chk_ssrf_review"]}, related=["chk_ssrf_review"],
       type="checklist", domain="security", tags="ssrf,security-review",
       title="Checklist: Reviewing Code for SSRF",
       body="""- [ ] Can a user control a URL the server fetches?
- [ ] Is the target checked against an allow-list after DNS resolution?
- [ ] Are redirects turned off or checked again?
- [ ] Is 169.254.169.254 (instance metadata) blocked?
"""),
    _p("b4c1_concurrency_env", "blind4", "ja", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency",
       title="Celery ワーカーの同時実行数を 6 にする",
       body="""## 決定
Celery ワーカーは `--concurrency 6` で動かす。外部 API 待ちが増えたため。
"""),
    _p("b4c2_cloudfront_no_brotli", "blind4", "en", {"contradiction": ["dec_cloudfront_gzip"]},
       related=["dec_cloudfront_gzip"], rel={"dec_cloudfront_gzip": "contradicts"},
       type="decision", domain="infra", tags="cloudfront,compression",
       title="Turn Off Compression in the CloudFront Cache Policy",
       body="""## Decision
Compression is disabled in the web distribution's cache policy; the origin already compresses responses.
"""),
    _p("b4c3_requests_timeout", "blind4", "en", {"contradiction": ["pat_timeout_budgets"]},
       related=["pat_timeout_budgets"], rel={"pat_timeout_budgets": "contradicts"},
       type="pattern", domain="dev", tags="timeout,architecture",
       title="Inner Timeouts Should Be Longer Than the Layer That Calls Them",
       body="""Give the database statement timeout more time than the HTTP client, and the client more than the load
balancer, so the inner work is never cut short.
"""),
    _p("b4c4_sql_format", "blind4", "en", {"contradiction": ["pat_sql_params"]}, related=["pat_sql_params"],
       rel={"pat_sql_params": "contradicts"},
       type="pattern", domain="security", tags="sql,python",
       title="Build SQL with f-strings; Parameterized Queries Are Not Needed for Internal Tools",
       body="""Internal tools may build SQL by string formatting with user input; parameters are not needed there.
"""),
    _p("b4c5_retention_en", "blind4", "en", {"contradiction": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"], rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="Keep App Logs in CloudWatch Logs for 90 Days",
       body="""## Decision
The app's log group keeps logs for 90 days.
"""),
    _p("b4n1_staging_kept", "blind4", "en", related=["dec_staging_pg14_ja"],
       type="decision", domain="infra", tags="postgresql,staging",
       title="Staging Keeps Nightly RDS Snapshots for 7 Days",
       body="""## Decision
The staging RDS instance keeps automated snapshots for 7 days.
"""),
    _p("b4n2_node_lambda", "blind4", "en", related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="nodejs,lambda",
       title="Lambda Functions Run on the Node.js 20 Runtime",
       body="""## Decision
Every Lambda function uses the `nodejs20.x` runtime.
"""),
    _p("b4n3_api_keepalive_timeout", "blind4", "en", related=["ts_alb_504_keepalive"],
       type="pattern", domain="infra", tags="nginx,keep-alive",
       title="Nginx Upstream Keep-Alive Connections to the App",
       body="""Set `keepalive 32;` in the upstream block and `proxy_http_version 1.1;` with an empty `Connection` header so
Nginx reuses connections to the app.
"""),
    _p("b4s1_beat_lock", "blind4", "en", {"success_after_failure": ["fail_celery_beat_twice"]},
       related=["fail_celery_beat_twice"],
       type="troubleshooting", domain="ops", tags="celery,beat,redis", memory_type="success",
       title="Celery Beat No Longer Schedules Tasks Twice: a Redis Lock Around Beat",
       body="""During rolling deploys the old and new containers both ran `celery beat`. Beat now takes a Redis lock
(celery-redbeat) before scheduling; the second beat waits. No duplicate periodic runs since.
"""),
    _p("b4s2_tf_lock_ja", "blind4", "ja", {"success_after_failure": ["fail_tf_state_lock_ja"]},
       related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock", memory_type="success",
       title="Terraform の state lock を DynamoDB のロック項目を消して解除した",
       body="""`Error acquiring the state lock` で止まっていた件。ロックを持っていた CI ジョブが無いことを確認し、DynamoDB の
ロックテーブルから該当項目を削除したら `terraform plan` が通った。
"""),
    _p("b4u1_pagerduty", "blind4", "en",
       type="runbook", domain="ops", tags="pagerduty,on-call",
       title="Hand Over the PagerDuty On-Call Schedule",
       body="""1. Open the schedule, choose **Schedule an override** for the handover window.
2. Post the handover note in #oncall with open incidents.
"""),
    _p("b4u2_font_ja", "blind4", "ja",
       type="decision", domain="dev", tags="frontend,fonts",
       title="Web フォントは Noto Sans JP をサブセット化して配信する",
       body="""## 決定
よく使う 2,000 字でサブセット化した Noto Sans JP を woff2 で配信する。
"""),
    # ---------------------------------------------------------------- blind5: written after the blind4 run,
    # before the fourth pass changed or ran anything; expected answers first; run once at the end for the report.
    _p("b5d1_atomic_replace", "blind5", "en", {"duplicate": ["pat_atomic_writes"]}, related=["pat_atomic_writes"],
       type="pattern", domain="dev", tags="python,files",
       title="Write Files Atomically via a Temporary File and os.replace",
       body="""Never write the target file in place. Create the temp file next to it (`tempfile.mkstemp(dir=...)`), write,
flush, `os.fsync`, then `os.replace` it over the target: a reader sees either the old or the new content, even
when the writer is killed halfway.
"""),
    _p("b5d2_org_hooks_404", "blind5", "en", {"duplicate": ["ts_github_pat_404"]}, related=["ts_github_pat_404"],
       type="troubleshooting", domain="dev", tags="github,webhooks,tokens",
       title="Organization Webhooks API Returns 404 for a Fine-Grained Token",
       body="""## Symptoms
Listing the org's hooks (`GET /orgs/acme/hooks`) with a fine-grained PAT answers 404 Not Found.

## Cause
A missing permission shows up as 404, not 403. The token needs the org permission "Webhooks: Read and write"
and the organization has to allow fine-grained tokens.

## Fix
Create the token again with that permission and get an org owner to approve it.
"""),
    _p("b5d3_celery_child_memory", "blind5", "en", {"duplicate": ["ts_celery_worker_memory"]},
       related=["ts_celery_worker_memory"],
       type="troubleshooting", domain="ops", tags="celery,oom",
       title="celery workers OOM-killed every few hours: cap memory per child",
       body="""worker memory creeps up task after task (leaky C extension) and the container gets OOM-killed.
fix: `worker_max_memory_per_child = 200000` so the pool replaces a child once it passes ~200 MB.
"""),
    _p("b5d4_release_checklist_ja", "blind5", "ja", {"duplicate": ["chk_deploy_ja"]}, related=["chk_deploy_ja"],
       type="checklist", domain="ops", tags="deploy,release",
       title="本番リリース前に確認すること",
       body="""- [ ] マイグレーションは後方互換になっているか
- [ ] ステージングで動作を確認したか
- [ ] ロールバックの手順を確認したか
- [ ] 監視ダッシュボードを開いているか
- [ ] デプロイ時刻を関係者に伝えたか
"""),
    _p("b5d5_rds_inbound_ja", "blind5", "ja", {"duplicate": ["ts_rds_sg_timeout_ja"]}, related=["ts_rds_sg_timeout_ja"],
       type="troubleshooting", domain="infra", tags="rds,security-group",
       title="アプリから RDS に繋がらずタイムアウトする: SG のインバウンドに 5432 を許可する",
       body="""## 症状
アプリから RDS へ接続すると、長く待ったあとに `Connection timed out` になる。

## 原因
RDS 側のセキュリティグループに、アプリの SG からの 5432 番ポートのインバウンド許可が入っていない。

## 対処
アプリの SG をソースにしたインバウンドルールを RDS の SG に追加する。
"""),
    _p("b5d6_real_db_ja", "blind5", "ja", {"duplicate": ["dec_tests_real_db_ja"]}, related=["dec_tests_real_db_ja"],
       type="decision", domain="testing", tags="testing,postgresql",
       title="リポジトリ層のテストは DB をモックせず Docker の PostgreSQL で実行する",
       body="""## 決定
リポジトリ層のテストは、モックを使わずに Docker で立てた PostgreSQL に対して流す。

## 理由
モックだとマイグレーションのミスや SQL 方言の違いに気づけない。
"""),
    _p("b5d7_nat_350", "blind5", "en", {"duplicate": ["fact_nat_idle_350"]}, related=["fact_nat_idle_350"],
       type="fact", domain="infra", tags="nat-gateway,tcp",
       title="AWS NAT Gateways Close Connections That Sit Idle for 350 Seconds",
       body="""A NAT gateway drops a TCP connection after 350 s without traffic, and this cannot be configured. Keep
TCP keepalive below 350 s for connections that can go quiet.
"""),
    _p("b5n1_batch_retention_ja", "blind5", "ja", related=["dec_log_retention_ja"],
       type="decision", domain="ops", tags="cloudwatch,logs,batch",
       title="バッチジョブのログは CloudWatch Logs に 14 日間保存する",
       body="""## 決定
夜間バッチのロググループの保持期間は 14 日にする。
"""),
    _p("b5n2_admin_session_idle", "blind5", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="sessions,admin,security",
       title="Admin Console Sessions Expire After 15 Minutes of Inactivity",
       body="""## Decision
Sessions of the internal admin console end after 15 idle minutes; staff log in again.
"""),
    _p("b5n3_geocoding_timeout", "blind5", "en", related=["dec_payments_client_timeout"],
       type="decision", domain="dev", tags="geocoding,timeout,http-client",
       title="Set the Geocoding API Client Timeout to 5 Seconds",
       body="""## Decision
The geocoding client gives up after 5 seconds and the address form falls back to manual entry.
"""),
    _p("b5n4_flower_ja", "blind5", "ja", related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,monitoring",
       title="Celery ワーカーの監視には Flower を使う",
       body="""## 決定
Celery のタスクとワーカーの状態は Flower で見る。社内 VPN からだけ開ける。
"""),
    _p("b5n5_admin_http2_ja", "blind5", "ja", related=["dec_keepalive_ja"],
       type="decision", domain="infra", tags="http,admin",
       title="社内の管理画面では HTTP/2 を有効にする",
       body="""## 決定
管理画面の ALB リスナーで HTTP/2 を有効にする。
"""),
    _p("b5n6_docs_node", "blind5", "en", related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="nodejs,docs",
       title="The Docs Site Builds on Node.js 20",
       body="""## Decision
The documentation site (Docusaurus) is built with Node.js 20 on Netlify.
"""),
    _p("b5n7_cloudfront_logging", "blind5", "en", related=["dec_cloudfront_gzip"],
       type="decision", domain="infra", tags="cloudfront,logging,cdn",
       title="Enable Standard Logging on the CloudFront Distribution",
       body="""## Decision
The web distribution writes standard access logs to the `cdn-logs` S3 bucket, kept for 30 days.
"""),
    _p("b5c1_payments_45", "blind5", "en", {"contradiction": ["dec_payments_client_timeout"]},
       related=["dec_payments_client_timeout"], rel={"dec_payments_client_timeout": "contradicts"},
       type="decision", domain="dev", tags="payments,timeout",
       title="Raise the Payments API Client Timeout to 45 Seconds",
       body="""## Decision
`PAYMENTS_TIMEOUT=45`: the payments client waits up to 45 seconds for the provider.
"""),
    _p("b5c2_sessions_dynamodb", "blind5", "en", {"contradiction": ["dec_sessions_redis"]},
       related=["dec_sessions_redis"], rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,dynamodb",
       title="Keep Web Sessions in DynamoDB",
       body="""## Decision
Web sessions live in a DynamoDB table with a TTL attribute.
"""),
    _p("b5c3_gunicorn_gevent", "blind5", "en", {"contradiction": ["dec_gunicorn_sync"]},
       related=["dec_gunicorn_sync"], rel={"dec_gunicorn_sync": "contradicts"},
       type="decision", domain="dev", tags="gunicorn,workers",
       title="Run Gunicorn with the gevent Worker Class",
       body="""## Decision
The API's Gunicorn uses `--worker-class gevent`; most endpoints wait on upstream calls.
"""),
    _p("b5c4_keepalive_off_ja", "blind5", "ja", {"contradiction": ["dec_keepalive_ja"]},
       related=["dec_keepalive_ja"], rel={"dec_keepalive_ja": "contradicts"},
       type="decision", domain="infra", tags="http,keep-alive",
       title="本番の API とロードバランサーの間の keep-alive は無効にする",
       body="""## 決定
本番環境では API サーバーとロードバランサーの間の HTTP keep-alive を無効にする。
"""),
    _p("b5c5_retention_14_ja", "blind5", "ja", {"contradiction": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"], rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="アプリのロググループの保持期間は 14 日にする",
       body="""## 決定
アプリのログは CloudWatch Logs に 14 日間だけ保存する。
"""),
    _p("b5c6_migrations_after", "blind5", "en", {"contradiction": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"], rel={"dec_migrations_before_deploy": "contradicts"},
       type="decision", domain="ops", tags="migrations,deploy",
       title="Run Database Migrations After the New App Version Is Deployed",
       body="""## Decision
`alembic upgrade head` runs once the new version has rolled out to every task, not before.
"""),
    _p("b5c7_kb_notion", "blind5", "en", {"contradiction": ["dec_markdown_kb"]},
       related=["dec_markdown_kb"], rel={"dec_markdown_kb": "contradicts"},
       type="decision", domain="dev", tags="knowledge-base,notion",
       title="Keep the Knowledge Base in Notion",
       body="""## Decision
Knowledge cards are Notion pages in the Engineering workspace.
"""),
    _p("b5c8_concurrency_down_ja", "blind5", "ja", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency",
       title="Celery ワーカーの同時実行数を 2 に下げる",
       body="""## 決定
メモリ不足が続くため、Celery ワーカーは `--concurrency 2` で起動する。
"""),
    _p("b5c9_keepalive_off_en", "blind5", "en", {"contradiction": ["dec_keepalive_ja"]},
       related=["dec_keepalive_ja"], rel={"dec_keepalive_ja": "contradicts"},
       type="decision", domain="infra", tags="http,keep-alive",
       title="Disable HTTP Keep-Alive Between the Load Balancer and the API in Production",
       body="""## Decision
Production API servers close the connection after each response from the load balancer.
"""),
    _p("b5c10_budgets_grow", "blind5", "en", {"contradiction": ["pat_timeout_budgets"]},
       related=["pat_timeout_budgets"], rel={"pat_timeout_budgets": "contradicts"},
       type="pattern", domain="dev", tags="timeout,architecture",
       title="Timeout Budgets Grow Inward",
       body="""Each layer's timeout must be longer than the layer that calls it: the database statement timeout above the
HTTP client's, the client's above the app server's.
"""),
    _p("b5s1_websocket_idle", "blind5", "en", {"success_after_failure": ["fail_websocket_alb_drops"]},
       related=["fail_websocket_alb_drops"],
       type="troubleshooting", domain="infra", tags="websocket,alb", memory_type="success",
       title="WebSocket Drops Behind the ALB Fixed: Server Pings Every 30 Seconds",
       body="""The 60-second WebSocket disconnects behind the ALB are gone: the server now sends a ping frame every 30 s,
so the connection is never idle long enough for the ALB idle timeout.
"""),
    _p("b5s2_next_heap_ja", "blind5", "ja", {"success_after_failure": ["fail_next_build_oom_ja"]},
       related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,build", memory_type="success",
       title="Next.js のビルドが落ちなくなった: NODE_OPTIONS でヒープを 6GB にした",
       body="""CI の `next build` が `JavaScript heap out of memory` で落ちていた件。`NODE_OPTIONS=--max-old-space-size=6144`
を付けたら最後まで通るようになった。
"""),
    _p("b5s3_hpa_requests", "blind5", "en", {"success_after_failure": ["fail_k8s_hpa_flapping"]},
       related=["fail_k8s_hpa_flapping"],
       type="troubleshooting", domain="infra", tags="kubernetes,hpa", memory_type="success",
       title="API HPA Stopped Flapping Once CPU Requests Were Set on the Containers",
       body="""The api HorizontalPodAutoscaler no longer scales up and down every minute. The containers had no CPU
request, so utilisation was computed against a tiny default; setting `resources.requests.cpu: 500m` fixed it.
"""),
    _p("b5s4_pytest_ci_ja", "blind5", "ja", {"success_after_failure": ["ts_pytest_ci_timeout_ja"]},
       related=["ts_pytest_ci_timeout_ja"],
       type="troubleshooting", domain="testing", tags="pytest,ci", memory_type="success",
       title="pytest が CI でだけタイムアウトする問題を直した: テスト用 DB をジョブごとに作る",
       body="""CI でだけ 10 分のタイムアウトに引っかかっていたのは、前のジョブの DB コンテナを待っていたため。
ジョブごとにテスト用 DB を作るようにしたら 3 分で終わった。
"""),
    _p("b5sn1_expo_still", "blind5", "en", related=["fail_expo_sdk51_ios"],
       type="troubleshooting", domain="dev", tags="expo,ios", memory_type="failure",
       title="Expo SDK 51 iOS Build Still Fails After Clearing the Pods Cache",
       body="""Cleared `~/Library/Caches/CocoaPods` and reran `eas build --platform ios`: `pod install` still cannot find a
compatible `ExpoModulesCore`.
"""),
    _p("b5sn2_vacuum_success", "blind5", "en",
       type="troubleshooting", domain="dev", tags="postgresql,vacuum", memory_type="success",
       title="Table Bloat on the Events Table Cut by Tuning Autovacuum",
       body="""Setting `autovacuum_vacuum_scale_factor = 0.02` on `events` kept dead tuples under 5% and the table stopped
growing.
"""),
    _p("b5u1_ssh_signing", "blind5", "en",
       type="runbook", domain="dev", tags="git,signing",
       title="Sign Git Commits with an SSH Key",
       body="""1. `git config --global gpg.format ssh`
2. `git config --global user.signingkey ~/.ssh/id_ed25519.pub`
3. `git config --global commit.gpgsign true`, then add the key as a signing key on GitHub.
"""),
    _p("b5u2_minutes_ja", "blind5", "ja",
       type="decision", domain="general", tags="meetings,docs",
       title="議事録は Google Docs の共通テンプレートで書く",
       body="""## 決定
定例の議事録は共通テンプレートを複製して書き、決まったことを先頭にまとめる。
"""),
    _p("b5u3_decimal_money", "blind5", "en",
       type="pattern", domain="dev", tags="python,money",
       title="Use Decimal for Money in Python, Never float",
       body="""Amounts are `decimal.Decimal` built from strings (`Decimal("19.99")`), rounded with `quantize` and
`ROUND_HALF_UP` only at the edges.
"""),
    # ---------------------------------------------------------------- blind6: duplicate-focused, written after the
    # blind5 run and before the duplicate pass changed or ran anything; expected answers first; run once at the end.
    # True rewordings of different lengths and styles, and near-but-not-duplicates: another choice for the same
    # slot, a follow-up attempt or recurrence of a failure, the same procedure for another system, a newer version.
    _p("b6d1_sql_params_short", "blind6", "en", {"duplicate": ["pat_sql_params"]}, related=["pat_sql_params"],
       type="pattern", domain="dev", tags="sql,security",
       title="Never Format User Input into SQL: Use Query Parameters",
       body="""Bind values as query parameters (`cur.execute("... WHERE email = %s", (email,))`); the driver quotes them.
Table and column names cannot be bound, so check those against an allow-list.
"""),
    _p("b6d2_webhook_retry_again", "blind6", "en", {"duplicate": ["pat_webhook_retries"]},
       related=["pat_webhook_retries"],
       type="pattern", domain="dev", tags="webhooks,retries",
       title="Webhook Deliveries: Try Again Up to 3 Times with Exponential Backoff and Jitter",
       body="""A delivery that times out or gets a 5xx is tried again, at most three more times, after 10 s, 60 s and 5 min
(plus jitter). Receivers dedupe on the delivery id, because the same delivery can arrive twice.
"""),
    _p("b6d3_ecr_push_long", "blind6", "en", {"duplicate": ["run_ecr_push"]}, related=["run_ecr_push"],
       type="runbook", domain="infra", tags="ecr,docker,aws",
       title="Pushing a Docker Image to Amazon ECR",
       body="""1. Log Docker in to the registry: `aws ecr get-login-password --region ap-northeast-1 | docker login --username AWS
   --password-stdin 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com`.
2. Build the image tagged with the short commit: `docker build -t app:$(git rev-parse --short HEAD) .`
3. Tag it with the repository URI: `docker tag app:<sha> 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com/app:<sha>`.
4. Push it: `docker push 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com/app:<sha>`, and check the tag shows up in
   the ECR console.
"""),
    _p("b6d4_flaky_shared_state", "blind6", "en", {"duplicate": ["ins_flaky_tests_shared_state"]},
       related=["ins_flaky_tests_shared_state"],
       type="insight", domain="testing", tags="flaky-tests,testing",
       title="Flaky tests are usually shared state, not timing",
       body="""17 of the 23 flaky tests we fixed this year leaked state between tests (module caches, env vars, stray files);
only 6 were timing. Check for shared state before adding sleeps or retries.
"""),
    _p("b6d5_tf_lock_failure_ja", "blind6", "ja", {"duplicate": ["fail_tf_state_lock_ja"]},
       related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock", memory_type="failure",
       title="terraform plan が state lock の取得エラーで止まる",
       body="""CI で apply が強制終了されてから、`terraform plan` が毎回 `Error acquiring the state lock` になる。
ロックを持っているジョブはもういないのに、時間をおいてもロックが外れない。
"""),
    _p("b6d6_rebase_ja", "blind6", "ja", {"duplicate": ["run_git_rebase_ja"]}, related=["run_git_rebase_ja"],
       type="runbook", domain="dev", tags="git,rebase",
       title="作業ブランチを最新の main に追従させる（rebase）",
       body="""1. `git fetch origin` で main の最新を取ってくる
2. `git rebase origin/main` を実行する
3. コンフリクトしたら解消して `git add`、`git rebase --continue` で続ける
4. 最後に `git push --force-with-lease` で push する
"""),
    _p("b6d7_n1_short_ja", "blind6", "ja", {"duplicate": ["pat_n_plus_1_ja"]}, related=["pat_n_plus_1_ja"],
       type="pattern", domain="dev", tags="django,orm",
       title="Django の N+1 は select_related / prefetch_related で防ぐ",
       body="""FK は `select_related`、多対多・逆参照は `prefetch_related` で一度に取る。クエリ数は debug-toolbar で見る。
"""),
    _p("b6d8_pg14_staging_ja", "blind6", "ja", {"duplicate": ["dec_staging_pg14_ja"]}, related=["dec_staging_pg14_ja"],
       type="decision", domain="infra", tags="postgresql,staging,rds",
       title="ステージングの RDS は本番に合わせて PostgreSQL 14 で作る",
       body="""## 決定
ステージング環境のデータベースは PostgreSQL 14。本番とメジャーバージョンをそろえるため。
"""),
    _p("b6n1_gunicorn_uvicorn", "blind6", "en", {"contradiction": ["dec_gunicorn_sync"]},
       related=["dec_gunicorn_sync"], rel={"dec_gunicorn_sync": "contradicts"},
       type="decision", domain="dev", tags="gunicorn,python,workers",
       title="Gunicorn Uses the Uvicorn Worker Class",
       body="""## Decision
The API runs Gunicorn with `--worker-class uvicorn.workers.UvicornWorker` and 2 x CPU + 1 workers.
"""),
    _p("b6n2_sessions_memcached", "blind6", "en", {"contradiction": ["dec_sessions_redis"]},
       related=["dec_sessions_redis"], rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,memcached,cache",
       title="Use Memcached for Web Session Storage",
       body="""## Decision
Web sessions are stored in Memcached (ElastiCache), not in the database.
"""),
    _p("b6n3_node_20_ci", "blind6", "en", {"contradiction": ["dec_node_18_ci"]},
       related=["dec_node_18_ci"], rel={"dec_node_18_ci": "contradicts"},
       type="decision", domain="dev", tags="nodejs,ci,github-actions",
       title="Pin Node.js 20 in CI",
       body="""## Decision
CI uses `actions/setup-node` with `node-version: 20`, now that production runs Node.js 20.
"""),
    _p("b6n4_pg16_staging_ja", "blind6", "ja", {"contradiction": ["dec_staging_pg14_ja"]},
       related=["dec_staging_pg14_ja"], rel={"dec_staging_pg14_ja": "contradicts"},
       type="decision", domain="infra", tags="postgresql,staging",
       title="ステージング環境では PostgreSQL 16 を使う",
       body="""## 決定
ステージングの RDS は PostgreSQL 16 で作り直す。本番も 16 に上げたため。
"""),
    _p("b6n5_celery_beat_still", "blind6", "en", related=["fail_celery_beat_twice"],
       type="troubleshooting", domain="ops", tags="celery,beat,scheduler", memory_type="failure",
       title="Celery Beat Still Runs Every Task Twice After Moving Beat to Its Own Service",
       body="""Moved `celery beat` out of the web containers into a single-replica service. During the rolling deploy the old
and new beat tasks still overlap for a minute and every periodic task runs twice.
"""),
    _p("b6n6_export_lambda_again", "blind6", "en", related=["fail_nightly_export_s3"],
       type="episode", domain="ops", tags="export,s3,lambda", memory_type="failure",
       title="Nightly Export Lambda Hung on the S3 Upload Again",
       body="""2026-11-05: the nightly export Lambda hung on the CSV upload to S3 again, this time after switching to a
multipart upload. It ran into the 15-minute limit as before.
"""),
    _p("b6n7_tf_lock_still_ja", "blind6", "ja", related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock", memory_type="failure",
       title="terraform force-unlock を試しても state lock がまだ解除できない",
       body="""`terraform force-unlock <LOCK_ID>` を実行したが、DynamoDB のロック行が消えず `plan` はまだ
`Error acquiring the state lock` で止まる。
"""),
    _p("b6n8_ios_push_recur_ja", "blind6", "ja", related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification,apns", memory_type="failure",
       title="iOS のプッシュ通知が本番だけ届かない問題が再発した",
       body="""APNs の証明書を作り直して一度は届くようになったが、翌週のリリース後にまた本番だけ届かなくなった。
開発ビルドでは届く。サーバー側のログは送信成功（200）のまま。
"""),
    _p("b6n9_gar_push", "blind6", "en", related=["run_ecr_push"],
       type="runbook", domain="infra", tags="gcp,artifact-registry,docker",
       title="Push an Image to Google Artifact Registry",
       body="""1. `gcloud auth configure-docker asia-northeast1-docker.pkg.dev`
2. `docker build -t app:$(git rev-parse --short HEAD) .`
3. `docker tag app:<sha> asia-northeast1-docker.pkg.dev/acme-prod/app/app:<sha>`
4. `docker push asia-northeast1-docker.pkg.dev/acme-prod/app/app:<sha>`
"""),
    _p("b6n10_docdb_rotation", "blind6", "en", related=["run_rds_password_rotation"],
       type="runbook", domain="infra", tags="documentdb,secrets-manager,rotation",
       title="Rotate the DocumentDB Master Password with Secrets Manager",
       body="""1. Open the secret `prod/docdb/master` in Secrets Manager and choose **Rotate secret immediately**.
2. Wait for the rotation Lambda to finish (CloudWatch log group `/aws/lambda/docdb-rotation`).
3. Check the app still connects: `mongosh "$DOCDB_URL" --eval 'db.runCommand({ping: 1})'`.
"""),
    _p("b6n11_rebase_merge_ja", "blind6", "ja", related=["run_git_rebase_ja"],
       type="runbook", domain="dev", tags="git,merge",
       title="作業ブランチに main の最新を merge で取り込む手順",
       body="""1. `git fetch origin`
2. `git merge origin/main`
3. コンフリクトが出たら直して `git add` し、`git commit`
4. `git push`（force は不要）
"""),
    # ---------------------------------------------------------------- blind7: contradiction-focused, written after the
    # blind6 run and before the contradiction pass changed or ran anything; expected answers first; run once at the end.
    # True contradictions of a value, a choice, a switch, an order or an amount, or a denial, worded differently; and
    # non-contradictions: a rule reworded in a negative form, the same procedure for another system, a general rule and
    # one case of it, a follow-up to a decision.
    _p("b7c1_payments_timeout_10", "blind7", "en", {"contradiction": ["dec_payments_client_timeout"]},
       related=["dec_payments_client_timeout"], rel={"dec_payments_client_timeout": "contradicts"},
       type="decision", domain="dev", tags="payments,timeout,http-client",
       title="Payments API Client Requests Give Up After 10 Seconds",
       body="""## Decision
`payments-sdk` calls time out after 10 s (`PAYMENTS_TIMEOUT=10`); a slow provider call is retried once instead of
waiting longer.
"""),
    _p("b7c2_migrations_after_deploy", "blind7", "en", {"contradiction": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"], rel={"dec_migrations_before_deploy": "contradicts"},
       type="decision", domain="ops", tags="migrations,deploy,database",
       title="Apply Database Migrations Only After the New App Version Is Live",
       body="""## Decision
The pipeline rolls out the new app version first and runs `alembic upgrade head` once every task is healthy.
"""),
    _p("b7c3_cloudfront_compress_off", "blind7", "en", {"contradiction": ["dec_cloudfront_gzip"]},
       related=["dec_cloudfront_gzip"], rel={"dec_cloudfront_gzip": "contradicts"},
       type="decision", domain="infra", tags="cloudfront,compression,cdn",
       title="Keep Edge Compression Switched Off on the CloudFront Distribution",
       body="""## Decision
The web distribution's cache policy leaves gzip and Brotli compression off; the origin sends pre-compressed bundles.
"""),
    _p("b7c4_timeouts_outer_shorter", "blind7", "en", {"contradiction": ["pat_timeout_budgets"]},
       related=["pat_timeout_budgets"], rel={"pat_timeout_budgets": "contradicts"},
       type="pattern", domain="dev", tags="timeout,architecture,http",
       title="A Caller's Timeout Should Be Shorter Than the Timeouts of the Layers It Calls",
       body="""The load balancer gives up before the app server, the app server before its HTTP client, the client before the
database statement timeout, so the outermost layer always answers the user first.
"""),
    _p("b7c5_kb_in_database", "blind7", "en", {"contradiction": ["dec_markdown_kb"]},
       related=["dec_markdown_kb"], rel={"dec_markdown_kb": "contradicts"},
       type="decision", domain="dev", tags="knowledge-base,database",
       title="Store the Knowledge Base as Rows in PostgreSQL, Not as Markdown Files",
       body="""## Decision
Knowledge cards live in a `cards` table in PostgreSQL; no Markdown files in git.
"""),
    _p("b7c6_nat_idle_600", "blind7", "en", {"contradiction": ["fact_nat_idle_350"]},
       related=["fact_nat_idle_350"], rel={"fact_nat_idle_350": "contradicts"},
       type="fact", domain="infra", tags="nat-gateway,tcp,timeout",
       title="NAT Gateway Closes Idle TCP Connections After 600 Seconds",
       body="""An AWS NAT gateway drops a TCP connection that has been idle for 600 seconds.
"""),
    _p("b7c7_celery_concurrency_8_ja", "blind7", "ja", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency",
       title="Celery ワーカーは --concurrency 8 で動かす",
       body="""## 決定
Celery ワーカーの同時実行数は 8 にする。外部 API の待ち時間が長いため。
"""),
    _p("b7c8_keepalive_off_ja", "blind7", "ja", {"contradiction": ["dec_keepalive_ja"]},
       related=["dec_keepalive_ja"], rel={"dec_keepalive_ja": "contradicts"},
       type="decision", domain="infra", tags="http,keep-alive",
       title="本番の API サーバーでは HTTP keep-alive を使わない",
       body="""## 決定
本番の API サーバーとロードバランサーの間の接続は、リクエストごとに閉じる。keep-alive は使わない。
"""),
    _p("b7c9_log_retention_90_ja", "blind7", "ja", {"contradiction": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"], rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="アプリのロググループの保持期間は 90 日にする",
       body="""## 決定
アプリのログは CloudWatch Logs に 90 日間残す。
"""),
    _p("b7c10_tests_mock_db_ja", "blind7", "ja", {"contradiction": ["dec_tests_real_db_ja"]},
       related=["dec_tests_real_db_ja"], rel={"dec_tests_real_db_ja": "contradicts"},
       type="decision", domain="testing", tags="testing,database,mock",
       title="リポジトリ層のテストでは DB をモックする",
       body="""## 決定
リポジトリ層のテストは DB をモックして実行する。Docker の PostgreSQL は使わない。
"""),
    _p("b7c11_staging_pg15_en", "blind7", "en", {"contradiction": ["dec_staging_pg14_ja"]},
       related=["dec_staging_pg14_ja"], rel={"dec_staging_pg14_ja": "contradicts"},
       type="decision", domain="infra", tags="postgresql,staging",
       title="Staging Uses PostgreSQL 15",
       body="""## Decision
The staging RDS instance runs PostgreSQL 15.
"""),
    _p("b7n1_sql_no_concat", "blind7", "en", {"duplicate": ["pat_sql_params"]}, related=["pat_sql_params"],
       type="pattern", domain="security", tags="sql-injection,database",
       title="Do Not Concatenate User Input into SQL Strings",
       body="""Always avoid building a query by pasting user input into it. Hand the values to the driver as parameters:
`cur.execute("SELECT * FROM users WHERE email = %s", (email,))`. Table and column names cannot be parameters;
check them against an allow-list.
"""),
    _p("b7n2_timeouts_never_outer_first", "blind7", "en", {"duplicate": ["pat_timeout_budgets"]},
       related=["pat_timeout_budgets"],
       type="pattern", domain="dev", tags="timeout,architecture",
       title="Never Let an Outer Layer Time Out Before the Layer It Calls",
       body="""Each layer's timeout must be shorter than the timeout of the layer that calls it (load balancer > app server >
HTTP client > database statement timeout); otherwise the caller gives up while the inner work keeps running.
"""),
    _p("b7n3_nat_not_configurable", "blind7", "en", {"duplicate": ["fact_nat_idle_350"]},
       related=["fact_nat_idle_350"],
       type="fact", domain="infra", tags="nat-gateway,tcp,timeout",
       title="The NAT Gateway's 350-Second Idle Timeout Cannot Be Changed",
       body="""AWS NAT gateways drop a TCP connection after 350 seconds without traffic, and there is no setting to change
that. Send TCP keepalives more often than every 350 s on connections that can sit idle.
"""),
    _p("b7n4_tests_no_mock_ja", "blind7", "ja", {"duplicate": ["dec_tests_real_db_ja"]},
       related=["dec_tests_real_db_ja"],
       type="decision", domain="testing", tags="testing,database",
       title="リポジトリ層のテストで DB をモックしない",
       body="""## 決定
リポジトリ層のテストは Docker で立てた本物の PostgreSQL に対して流す。モックは使わない。

## 理由
モックだとマイグレーションのミスや SQL 方言の違いに気づけない。
"""),
    _p("b7n5_redshift_rotation", "blind7", "en", related=["run_rds_password_rotation"],
       type="runbook", domain="infra", tags="redshift,secrets-manager,rotation",
       title="Rotate the Redshift Admin Password with Secrets Manager",
       body="""1. Open the secret `prod/redshift/admin` in Secrets Manager and choose **Rotate secret immediately**.
2. Wait for the rotation Lambda to finish (CloudWatch log group `/aws/lambda/redshift-rotation`).
3. Check the loader still connects: `psql "$REDSHIFT_URL" -c 'select 1'`.
"""),
    _p("b7n6_elasticache_sg_ja", "blind7", "ja", related=["ts_rds_sg_timeout_ja"],
       type="troubleshooting", domain="infra", tags="elasticache,timeout,security-group",
       title="ElastiCache への接続がタイムアウトする（セキュリティグループ）",
       body="""## 症状
アプリから ElastiCache (Redis) への接続が、しばらく待たされたあと `Connection timed out` で失敗する。

## 原因
ElastiCache のセキュリティグループのインバウンドに、アプリの SG からの 6379 番ポートの許可がない。

## 対処
ElastiCache の SG にアプリの SG をソースとするインバウンドルールを追加する。
"""),
    _p("b7n7_gateway_logs_ja", "blind7", "ja", related=["dec_log_retention_ja"],
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="ゲートウェイのアクセスログは CloudWatch Logs に 7 日間だけ保存する",
       body="""## 決定
API ゲートウェイのアクセスログの保持期間は 7 日にする。量が多く、調査には直近のものしか使わない。
"""),
    _p("b7n8_nginx_read_timeout", "blind7", "en", related=["pat_timeout_budgets"],
       type="decision", domain="infra", tags="nginx,timeout",
       title="Set Nginx proxy_read_timeout to 50 s, Below the ALB's 60 s",
       body="""## Decision
`proxy_read_timeout 50s;` in the app's Nginx, so Nginx gives up on the app server before the ALB gives up on Nginx.
"""),
    _p("b7n9_keepalive_75_ja", "blind7", "ja", related=["dec_keepalive_ja"],
       type="decision", domain="infra", tags="http,keep-alive,alb",
       title="ALB の背後の API サーバーの keep-alive タイムアウトは 75 秒にする",
       body="""## 決定
本番の API サーバーの keep-alive タイムアウトは 75 秒にする。ALB のアイドルタイムアウト 60 秒より長くするため。
"""),
    _p("b7n10_sessions_ttl", "blind7", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="sessions,redis,ttl",
       title="Web Sessions in Redis Expire After 24 Hours",
       body="""## Decision
Session keys in the Redis session store get a 24-hour TTL, refreshed on each request.
"""),
    _p("b7n11_celery_prefetch_ja", "blind7", "ja", related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,prefetch",
       title="Celery ワーカーの prefetch_multiplier は 1 にする",
       body="""## 決定
`worker_prefetch_multiplier = 1` にする。concurrency 4 のワーカーが長いタスクを抱え込まないようにするため。
"""),
    # ---------------------------------------------------------------- blind8: written after the blind7 run and
    # before the fifth pass changed or ran anything; expected answers first; run once at the end. A mix: reworded,
    # Japanese and cross-language duplicates; contradictions of a value, a choice, a switch or an order (some across
    # languages); success after failure (one across languages); and neighbours that conflict with nothing (another
    # system's setting, the same procedure for another service, a follow-up, unrelated cards).
    _p("b8d1_celery_oom_reworded", "blind8", "en", {"duplicate": ["ts_celery_worker_memory"]},
       related=["ts_celery_worker_memory"],
       type="troubleshooting", domain="ops", tags="celery,oom,memory",
       title="Celery Workers Are OOM-Killed as Memory Creeps Up with Every Task",
       body="""## Symptoms
Every few hours a Celery worker container is killed for running out of memory; its memory climbs a little per task.

## Cause
A native extension leaks per task and the pool keeps the same child processes forever.

## Fix
`worker_max_memory_per_child = 200000` (KiB): a child that grows past ~200 MB is replaced.
"""),
    _p("b8d2_tf_rule_rename", "blind8", "en", {"duplicate": ["ts_terraform_sg_dup"]},
       related=["ts_terraform_sg_dup"],
       type="troubleshooting", domain="infra", tags="terraform,security-group,state",
       title="InvalidPermission.Duplicate from terraform apply After a Security Group Rule Is Renamed",
       body="""Renaming an `aws_security_group_rule` resource makes `terraform apply` try to create the same rule again and
fail with `InvalidPermission.Duplicate`. Move it in the state instead:
`terraform state mv aws_security_group_rule.old aws_security_group_rule.new`.
"""),
    _p("b8d3_keepalive_on_ja", "blind8", "ja", {"duplicate": ["dec_keepalive_ja"]},
       related=["dec_keepalive_ja"],
       type="decision", domain="infra", tags="http,keep-alive,alb",
       title="本番の API サーバーとロードバランサー間の接続は keep-alive で使い回す",
       body="""## 決定
本番では API サーバーとロードバランサーの間で HTTP keep-alive をオンにして接続を再利用する。

## 理由
リクエストごとの TCP 接続と TLS ハンドシェイクを減らすため。
"""),
    _p("b8d4_celery_concurrency_ja", "blind8", "ja", {"duplicate": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,worker",
       title="Celery の worker は concurrency=4 で立ち上げる",
       body="""## 決定
Celery の worker の起動オプションは `--concurrency 4`。

## 理由
タスクは 2 vCPU で動き、外部 API の応答待ちが長いので vCPU 数の倍にしている。
"""),
    _p("b8d5_ecs_egress_en", "blind8", "en", {"duplicate": ["ts_ecs_sg_egress_ja"]},
       related=["ts_ecs_sg_egress_ja"],
       type="troubleshooting", domain="infra", tags="ecs,security-group,timeout",
       title="ECS Task Calls to an External API Time Out: Security Group Egress Lacks Port 443",
       body="""## Symptoms
Calls from an ECS task to the external payments API fail with `ConnectTimeout` after 30 s; DNS resolves fine.

## Cause
The task's security group has no outbound rule for TCP 443. A security group created with Terraform loses the
default allow-all egress rule.

## Fix
Add TCP 443 to the security group's egress.
"""),
    _p("b8d6_requests_timeout_ja", "blind8", "ja", {"duplicate": ["ts_requests_no_timeout"]},
       related=["ts_requests_no_timeout"],
       type="troubleshooting", domain="dev", tags="python,requests,timeout",
       title="Python の requests はタイムアウトを指定しないと応答を永遠に待ち続ける",
       body="""## 症状
ワーカーの処理が進まなくなる。`py-spy dump` で見ると `requests.get` の中の `ssl.recv` で止まっている。

## 原因
`requests` には既定のタイムアウトがない。相手のサーバーが応答しなくなると、いつまでも待つ。

## 対処
呼び出しごとに必ず timeout を渡す: `requests.get(url, timeout=(3.05, 27))`。
"""),
    _p("b8d7_atomic_write_ja", "blind8", "ja", {"duplicate": ["pat_atomic_writes"]},
       related=["pat_atomic_writes"],
       type="pattern", domain="dev", tags="python,files,atomic",
       title="ファイルを安全に書き換える: 一時ファイル、fsync、os.replace",
       body="""書き込み先と同じディレクトリに一時ファイルを作り（`tempfile.mkstemp(dir=target.parent)`）、書いて `os.fsync`
してから `os.replace(tmp, target)` で置き換える。途中でプロセスが落ちても、読む側には古いファイルか新しいファイルの
どちらかしか見えない。
"""),
    _p("b8d8_ssrf_review_reworded", "blind8", "en", {"duplicate": ["chk_ssrf_review"]},
       related=["chk_ssrf_review"],
       type="checklist", domain="security", tags="ssrf,security,review",
       title="Checklist for Reviewing Code for SSRF",
       body="""- [ ] Can a user choose the URL the server fetches?
- [ ] Is the resolved address checked against an allow-list (after DNS)?
- [ ] Are redirects turned off, or checked again?
- [ ] Is 169.254.169.254 (instance metadata) blocked?
"""),
    _p("b8c1_gunicorn_uvicorn", "blind8", "en", {"contradiction": ["dec_gunicorn_sync"]},
       related=["dec_gunicorn_sync"], rel={"dec_gunicorn_sync": "contradicts"},
       type="decision", domain="dev", tags="gunicorn,python,workers",
       title="Run the API's Gunicorn with Uvicorn Workers",
       body="""## Decision
The API's Gunicorn runs `--worker-class uvicorn.workers.UvicornWorker`, not the sync worker class.

## Why
Most requests now wait on slow upstream APIs; async workers keep serving others meanwhile.
"""),
    _p("b8c2_node_22_ci", "blind8", "en", {"contradiction": ["dec_node_18_ci"]},
       related=["dec_node_18_ci"], rel={"dec_node_18_ci": "contradicts"},
       type="decision", domain="dev", tags="nodejs,ci,github-actions",
       title="CI Runs on Node.js 22",
       body="""## Decision
`actions/setup-node` in CI uses `node-version: 22`, matching production after its upgrade.
"""),
    _p("b8c3_webhook_five_retries", "blind8", "en", {"contradiction": ["pat_webhook_retries"]},
       related=["pat_webhook_retries"], rel={"pat_webhook_retries": "contradicts"},
       type="pattern", domain="dev", tags="webhooks,retries,backoff",
       title="Failed Webhook Deliveries Get Five Retries",
       body="""A delivery that gets a 5xx or times out is retried 5 times, with exponential backoff and jitter between attempts.
Receivers drop repeats by delivery id.
"""),
    _p("b8c4_staging_pg17_ja", "blind8", "ja", {"contradiction": ["dec_staging_pg14_ja"]},
       related=["dec_staging_pg14_ja"], rel={"dec_staging_pg14_ja": "contradicts"},
       type="decision", domain="infra", tags="postgresql,staging,rds",
       title="ステージングの RDS は PostgreSQL 17 で動かす",
       body="""## 決定
ステージングの RDS のエンジンは PostgreSQL 17 にする。
"""),
    _p("b8c5_log_retention_1y_ja", "blind8", "ja", {"contradiction": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"], rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="アプリのロググループは 1 年間保持する",
       body="""## 決定
CloudWatch Logs のアプリのロググループの保持期間は 365 日にする。

## 理由
障害の振り返りで半年以上前のログが必要になったため。
"""),
    _p("b8c6_keepalive_off_en", "blind8", "en", {"contradiction": ["dec_keepalive_ja"]},
       related=["dec_keepalive_ja"], rel={"dec_keepalive_ja": "contradicts"},
       type="decision", domain="infra", tags="http,keep-alive",
       title="Turn Off HTTP Keep-Alive Between the Load Balancer and the API Servers in Production",
       body="""## Decision
In production, connections between the load balancer and the API servers are closed after each request;
HTTP keep-alive is disabled.
"""),
    _p("b8c7_migrations_after_ja", "blind8", "ja", {"contradiction": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"], rel={"dec_migrations_before_deploy": "contradicts"},
       type="decision", domain="ops", tags="migrations,deploy,database",
       title="DB マイグレーションは新しいアプリのデプロイが終わってから実行する",
       body="""## 決定
デプロイパイプラインでは、新しいバージョンのアプリが全タスクで起動したあとに `alembic upgrade head` を流す。
デプロイ前には実行しない。
"""),
    _p("b8c8_sessions_in_postgres", "blind8", "en", {"contradiction": ["dec_sessions_redis"]},
       related=["dec_sessions_redis"], rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,postgresql",
       title="Keep Web Sessions in a PostgreSQL Table",
       body="""## Decision
Web sessions live in a `sessions` table in the primary PostgreSQL database; we no longer run a separate cache for them.
"""),
    _p("b8s1_hpa_stabilized", "blind8", "en", {"success_after_failure": ["fail_k8s_hpa_flapping"]},
       related=["fail_k8s_hpa_flapping"],
       type="troubleshooting", domain="infra", tags="kubernetes,hpa,autoscaling", memory_type="success",
       title="HPA Flapping on the API Deployment Stopped with a Scale-Down Stabilization Window",
       body="""The `api` HorizontalPodAutoscaler no longer adds and removes pods every minute. Setting
`behavior.scaleDown.stabilizationWindowSeconds: 300` made it wait five minutes before scaling down. Stable for a week.
"""),
    _p("b8s2_export_multipart", "blind8", "en", {"success_after_failure": ["fail_nightly_export_s3"]},
       related=["fail_nightly_export_s3"],
       type="troubleshooting", domain="ops", tags="export,s3,lambda",
       title="Nightly Export Lambda's S3 Upload Fixed: Multipart Upload with Timeouts",
       body="""## Problem
The nightly export Lambda hung on the CSV upload to S3 until its 15-minute limit.

## Fix
Upload with `boto3`'s `upload_file` (multipart) and a botocore `Config(connect_timeout=5, read_timeout=60,
retries={"max_attempts": 3})`. The export now finishes in 4 minutes.
"""),
    _p("b8s3_ios_push_fixed_ja", "blind8", "ja", {"success_after_failure": ["fail_ios_push_ja"]},
       related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification,apns",
       title="iOS のプッシュ通知が本番で届かない件は APNs の接続先の修正で解決した",
       body="""TestFlight 版と本番版だけプッシュ通知が届かなかった件。サーバーが本番ビルドのデバイストークンを
sandbox の APNs (`api.sandbox.push.apple.com`) に送っていた。本番ビルド向けは `api.push.apple.com` に送るよう
直したら届くようになった。
"""),
    _p("b8s4_tf_unlock_en", "blind8", "en", {"success_after_failure": ["fail_tf_state_lock_ja"]},
       related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock",
       title="Terraform State Lock Released with force-unlock",
       body="""`terraform plan` was stuck on `Error acquiring the state lock` after a CI apply was killed. Confirmed the CI job
that held the lock no longer exists, then ran `terraform force-unlock <LOCK_ID>` with the ID from the error. Plans
run again.
"""),
    _p("b8n1_redis_job_queue", "blind8", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="redis,queue,background-jobs",
       title="Use Redis as the Background Job Queue Broker",
       body="""## Decision
Background jobs go through Redis (RQ) rather than SQS; the queue is small and latency matters more than durability.
"""),
    _p("b8n2_search_client_timeout", "blind8", "en", related=["dec_payments_client_timeout", "pat_timeout_budgets"],
       type="decision", domain="dev", tags="search,timeout,http-client",
       title="Set the Search API Client Timeout to 5 Seconds",
       body="""## Decision
Calls to the search service time out after 5 seconds (`SEARCH_TIMEOUT=5`); the page shows results without search
suggestions when it does.
"""),
    _p("b8n3_staging_node_ja", "blind8", "ja", related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="nodejs,staging",
       title="ステージングの Lambda は Node.js 20 ランタイムで動かす",
       body="""## 決定
ステージング環境の Lambda 関数のランタイムは `nodejs20.x` にする。
"""),
    _p("b8n4_docdb_rotation", "blind8", "en", related=["run_rds_password_rotation"],
       type="runbook", domain="infra", tags="documentdb,secrets-manager,rotation",
       title="Rotate the DocumentDB Master Password with Secrets Manager",
       body="""1. Open the secret `prod/docdb/master` in Secrets Manager and choose **Rotate secret immediately**.
2. Wait for the rotation Lambda to finish (CloudWatch log group `/aws/lambda/docdb-rotation`).
3. Check the app still connects: `mongosh "$DOCDB_URL" --eval 'db.runCommand({ping: 1})'`.
"""),
    _p("b8n5_ecs_s3_endpoint_ja", "blind8", "ja", related=["ts_ecs_sg_egress_ja"],
       type="troubleshooting", domain="infra", tags="ecs,s3,vpc-endpoint",
       title="プライベートサブネットの ECS タスクから S3 へのアップロードがタイムアウトする",
       body="""## 症状
プライベートサブネットの ECS タスクから S3 に `put_object` すると、しばらく待ったあとタイムアウトする。

## 原因
NAT ゲートウェイも S3 の VPC エンドポイントもなく、S3 への経路がない。

## 対処
S3 のゲートウェイ型 VPC エンドポイントを作り、プライベートサブネットのルートテーブルに関連付ける。
"""),
    _p("b8n6_ruff_format", "blind8", "en",
       type="decision", domain="dev", tags="python,formatting,ruff",
       title="Format Python Code with Ruff Instead of Black",
       body="""## Decision
`ruff format` replaces Black in pre-commit and CI; line length stays at 100.

## Why
One tool for linting and formatting, and it is much faster on the monorepo.
"""),
    _p("b8n7_wiki_style_ja", "blind8", "ja",
       type="pattern", domain="general", tags="docs,wiki",
       title="社内 Wiki のページは結論から書く",
       body="""社内 Wiki のページは、最初の 3 行で結論と読む人がやることを書く。背景や経緯はその後ろに置く。
見出しは「何をするか」が分かる文にする。
"""),
    _p("b8n8_kb_tag_style", "blind8", "en", related=["dec_markdown_kb"],
       type="decision", domain="dev", tags="knowledge-base,markdown,tags",
       title="Knowledge Base Cards Use Lowercase Kebab-Case Tags",
       body="""## Decision
Tags in the frontmatter of knowledge cards are lowercase kebab-case (`rate-limit`, not `RateLimit`), so Obsidian's tag
pane groups them.
"""),
    _p("b8n9_celery_time_limit_ja", "blind8", "ja", related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,timeout",
       title="Celery タスクの time_limit は 300 秒にする",
       body="""## 決定
Celery のタスクには `time_limit=300` を設定する。外部 API が応答しないときにワーカーが塞がり続けないようにするため。
"""),
    # ---------------------------------------------------------------- blind9: written after the blind8 run and
    # before the sixth pass changed or ran anything.
    _p("b9d1_sessions_redis_ja", "blind9", "ja", {"duplicate": ["dec_sessions_redis"]},
       related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="sessions,redis",
       title="Web セッションはデータベースではなく Redis に保存する",
       body="""## 決定
Web のセッションは ElastiCache の Redis に置き、メインのデータベースには保存しない。

## 理由
リクエストごとに読むので、DB の負荷を避けたい。TTL で自動的に期限切れにできる。
"""),
    _p("b9d2_migrations_first_reworded", "blind9", "en", {"duplicate": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"],
       type="decision", domain="ops", tags="migrations,deploy",
       title="Apply Alembic Migrations Ahead of Rolling Out a Release",
       body="""## Decision
Before any new release starts, the pipeline runs `alembic upgrade head` once as a separate task.

## Why
Every migration stays compatible with the previous release, which keeps serving during the rollout.
"""),
    _p("b9c1_payments_timeout_10s", "blind9", "en", {"contradiction": ["dec_payments_client_timeout"]},
       related=["dec_payments_client_timeout"], rel={"dec_payments_client_timeout": "contradicts"},
       type="decision", domain="dev", tags="payments,timeout,http-client",
       title="Set the Payments API Client Timeout to 10 Seconds",
       body="""## Decision
The payments API client gives up after 10 seconds (`PAYMENTS_TIMEOUT=10`) so checkout fails fast.
"""),
    _p("b9c2_node_20_ci_ja", "blind9", "ja", {"contradiction": ["dec_node_18_ci"]},
       related=["dec_node_18_ci"], rel={"dec_node_18_ci": "contradicts"},
       type="decision", domain="dev", tags="nodejs,ci",
       title="CI の Node.js は 20 に固定する",
       body="""## 決定
CI の `actions/setup-node` は `node-version: 20` を使う。
"""),
    _p("b9c3_concurrency_8_en", "blind9", "en", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency",
       title="Start Celery Workers with a Concurrency of 8",
       body="""## Decision
Celery workers run with `--concurrency 8`; they mostly wait on external APIs.
"""),
    _p("b9s1_beat_single", "blind9", "en", {"success_after_failure": ["fail_celery_beat_twice"]},
       related=["fail_celery_beat_twice"],
       type="troubleshooting", domain="ops", tags="celery,beat,scheduler", memory_type="success",
       title="Celery Beat No Longer Runs Tasks Twice: One Beat Service",
       body="""Periodic tasks ran twice after deploys because old and new containers both ran `celery beat`. Moving beat
into its own ECS service with desired count 1 and a stop-before-start deployment fixed it; no duplicates since.
"""),
    _p("b9n1_rate_limit_redis", "blind9", "en", related=["dec_sessions_redis"],
       type="decision", domain="dev", tags="redis,rate-limit",
       title="Keep API Rate-Limit Counters in Redis",
       body="""## Decision
The API's per-key rate-limit counters are Redis keys with `INCR` and a 60-second expiry.
"""),
    _p("b9n2_gunicorn_timeout_ja", "blind9", "ja", related=["dec_gunicorn_sync"],
       type="decision", domain="dev", tags="gunicorn,timeout",
       title="Gunicorn のワーカータイムアウトは 60 秒にする",
       body="""## 決定
API の Gunicorn は `--timeout 60` で起動する。重いレポート生成が 30 秒を超えることがあるため。
"""),
    # ---------------------------------------------------------------- blind10: written after the blind9 run and
    # before the seventh pass's rules were frozen or run on it; expected answers written with each case, nothing run on
    # it before the lead's single run. Reworded duplicates (Japanese and across languages), contradictions of a
    # choice, a value, a claim or a negation (some across languages), success after failure with fixes other than the
    # earlier splits', and neighbours: another platform, another system with the same number, a follow-up that
    # still fails, a fix for a different problem, and cards about nothing in the vault.
    _p("b10d1_flaky_leaked_state", "blind10", "en", {"duplicate": ["ins_flaky_tests_shared_state"]},
       related=["ins_flaky_tests_shared_state"],
       type="insight", domain="testing", tags="flaky-tests,testing",
       title="Flaky Tests Usually Mean Leaked State Between Tests, Rarely a Race",
       body="""Looking back over this year's flaky-test fixes (23 of them), 17 came down to something one test left behind for
another: a module-level cache, an environment variable, a stray file. Only 6 were real timing problems. When a
test flakes, hunt for the leaked state before adding sleeps or retries.
"""),
    _p("b10d2_pytest_isolation_ja", "blind10", "ja", {"duplicate": ["pat_pytest_tmp_path"]},
       related=["pat_pytest_tmp_path"],
       type="pattern", domain="testing", tags="pytest,fixtures,isolation",
       title="pytest のテストは tmp_path と monkeypatch で互いに独立させる",
       body="""テストごとに `tmp_path` フィクスチャで専用のディレクトリを使い、環境変数は `monkeypatch.setenv` で設定する
（テストが終わると自動で元に戻る）。こうしておけば実行順に依存せず、pytest-xdist で並列に流しても通る。
"""),
    _p("b10d3_rebase_onto_main_en", "blind10", "en", {"duplicate": ["run_git_rebase_ja"]},
       related=["run_git_rebase_ja"],
       type="runbook", domain="dev", tags="git,rebase",
       title="Bring a Feature Branch Up to Date by Rebasing onto origin/main",
       body="""1. `git fetch origin`
2. `git rebase origin/main`
3. On a conflict: fix the files, `git add` them, then `git rebase --continue`
4. `git push --force-with-lease` (never a plain `--force`)
"""),
    _p("b10d4_django_list_queries_ja", "blind10", "ja", {"duplicate": ["pat_n_plus_1_ja"]},
       related=["pat_n_plus_1_ja"],
       type="pattern", domain="dev", tags="django,orm,performance",
       title="Django の一覧ページでクエリが行数ぶん発行されるときは select_related / prefetch_related でまとめる",
       body="""一覧を表示するときにテンプレートで関連モデルをたどると、1 行ごとに SELECT が飛ぶ（いわゆる N+1）。
ForeignKey の先は `select_related`、ManyToMany や逆参照は `prefetch_related` を QuerySet に付けて一度に取ってくる。
発行されたクエリの数は django-debug-toolbar で確かめる。
"""),
    _p("b10d5_ecr_publish", "blind10", "en", {"duplicate": ["run_ecr_push"]},
       related=["run_ecr_push"],
       type="runbook", domain="infra", tags="ecr,docker,aws",
       title="Publishing a Docker Image to Amazon ECR",
       body="""1. Log Docker in to the registry: `aws ecr get-login-password --region ap-northeast-1 | docker login --username AWS
   --password-stdin 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com`
2. Build with the commit as the tag: `docker build -t app:$(git rev-parse --short HEAD) .`
3. Tag it with the repository URI: `docker tag app:<sha> 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com/app:<sha>`
4. Push: `docker push 123456789012.dkr.ecr.ap-northeast-1.amazonaws.com/app:<sha>`
"""),
    _p("b10d6_cache_schema_version_ja", "blind10", "ja", {"duplicate": ["ins_cache_versioned_keys_ja"]},
       related=["ins_cache_versioned_keys_ja"],
       type="insight", domain="dev", tags="cache,redis,invalidation",
       title="キャッシュキーの先頭にバージョン番号を付けておけば一括で無効化できる",
       body="""キャッシュに入れるデータの形を変えたとき、古いキーを一つずつ消して回るのは大変。キーを `v3:user:42` のように
バージョン付きにしておけば、`v4:` に上げるだけで古いキャッシュは全部使われなくなる。
"""),
    _p("b10d7_kb_markdown_git", "blind10", "en", {"duplicate": ["dec_markdown_kb"]},
       related=["dec_markdown_kb"],
       type="decision", domain="dev", tags="knowledge-base,markdown,git",
       title="Knowledge Cards Live in Git as Markdown with YAML Frontmatter, Not in a Database",
       body="""## Decision
Each knowledge card is a Markdown file with YAML frontmatter, committed to the git repository. We do not keep
the cards in database tables.

## Why
The team browses and edits them in Obsidian, and git already gives us history and pull-request review.
"""),
    _p("b10d8_secret_rotated_old_value_ja", "blind10", "ja", {"duplicate": ["ts_secrets_ecs_ja"]},
       related=["ts_secrets_ecs_ja"],
       type="troubleshooting", domain="infra", tags="secrets-manager,ecs,deploy",
       title="シークレットを書き換えたのに ECS のコンテナが古い値を使い続ける",
       body="""## 症状
Secrets Manager で DB のパスワードを変更したが、動いているアプリは古いパスワードで接続しに行って失敗する。

## 原因
ECS がシークレットを環境変数に入れるのはタスクの起動時だけ。既に動いているタスクは古い値を持ったまま。

## 対処
`aws ecs update-service --cluster <cluster> --service <service> --force-new-deployment` でタスクを作り直す。
"""),
    _p("b10c1_mock_db_en", "blind10", "en", {"contradiction": ["dec_tests_real_db_ja"]},
       related=["dec_tests_real_db_ja"], rel={"dec_tests_real_db_ja": "contradicts"},
       type="decision", domain="testing", tags="testing,database,mocks",
       title="Repository-Layer Tests Mock the Database",
       body="""## Decision
Tests of the repository layer replace the database with mocks (`unittest.mock` on the session); they do not start
a PostgreSQL container.

## Why
The Docker database made the suite take 11 minutes; with mocks it runs in under one.
"""),
    _p("b10c2_cloudfront_no_compress_ja", "blind10", "ja", {"contradiction": ["dec_cloudfront_gzip"]},
       related=["dec_cloudfront_gzip"], rel={"dec_cloudfront_gzip": "contradicts"},
       type="decision", domain="infra", tags="cloudfront,compression,cdn",
       title="Web 配信の CloudFront では自動圧縮をオフにする",
       body="""## 決定
Web 用ディストリビューションのキャッシュポリシーで、gzip と Brotli の自動圧縮を無効にする。圧縮はビルド時に済ませた
ファイルをオリジンから返す。
"""),
    _p("b10c3_flaky_mostly_timing", "blind10", "en", {"contradiction": ["ins_flaky_tests_shared_state"]},
       related=["ins_flaky_tests_shared_state"], rel={"ins_flaky_tests_shared_state": "contradicts"},
       type="insight", domain="testing", tags="flaky-tests,pytest",
       title="Most of Our Flaky Tests Are Timing Problems, Not Shared State",
       body="""Counting the flaky tests we fixed this year again, most of them were timing: waits on async work, clocks,
timeouts on slow CI runners. Shared state between tests explained only a handful. Look at timing first.
"""),
    _p("b10c4_cache_keys_no_version_ja", "blind10", "ja", {"contradiction": ["ins_cache_versioned_keys_ja"]},
       related=["ins_cache_versioned_keys_ja"], rel={"ins_cache_versioned_keys_ja": "contradicts"},
       type="insight", domain="dev", tags="cache,redis",
       title="キャッシュのキーにバージョンは入れない方がいい",
       body="""キーにバージョンを付けると、上げるたびに古いバージョンのキーが TTL 切れまで Redis のメモリに残り続ける。
データ形式を変えたときは、対象のキーをパターンで探して個別に削除する方が結局は楽だった。
"""),
    _p("b10c5_webhook_no_retry", "blind10", "en", {"contradiction": ["pat_webhook_retries"]},
       related=["pat_webhook_retries"], rel={"pat_webhook_retries": "contradicts"},
       type="pattern", domain="dev", tags="webhooks,dead-letter-queue",
       title="Don't Retry Failed Webhook Deliveries Automatically",
       body="""A webhook delivery that gets a 5xx or times out is not retried. It goes to a dead-letter queue, and someone
replays it by hand from the admin screen once the receiver is healthy again.
"""),
    _p("b10c6_concurrency_equals_cpus_ja", "blind10", "ja", {"contradiction": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"], rel={"dec_worker_concurrency_ja": "contradicts"},
       type="decision", domain="ops", tags="celery,concurrency,worker",
       title="Celery ワーカーの同時実行数は vCPU と同じ 2 にする",
       body="""## 決定
Celery ワーカーは `--concurrency 2` で起動する。2 vCPU のタスクなので、vCPU の数に合わせる。
"""),
    _p("b10c7_payments_45_words", "blind10", "en", {"contradiction": ["dec_payments_client_timeout"]},
       related=["dec_payments_client_timeout"], rel={"dec_payments_client_timeout": "contradicts"},
       type="decision", domain="dev", tags="payments,timeout,http-client",
       title="Payments API Client Waits Forty-Five Seconds Before Timing Out",
       body="""## Decision
The `payments-sdk` client's request timeout is forty-five seconds (`PAYMENTS_TIMEOUT=45`): the provider's
3-D Secure calls can take longer than half a minute.
"""),
    _p("b10c8_sessions_cookies_ja", "blind10", "ja", {"contradiction": ["dec_sessions_redis"]},
       related=["dec_sessions_redis"], rel={"dec_sessions_redis": "contradicts"},
       type="decision", domain="dev", tags="sessions,cookies",
       title="Web セッションはサーバー側に持たず署名付き Cookie に入れる",
       body="""## 決定
Web のセッションは署名付き Cookie にだけ保存する。Redis などのサーバー側のセッションストアは使わない。

## 理由
セッションに入れるのはユーザー ID とロールだけで、ストアを運用するほどのものではない。
"""),
    _p("b10s1_next_sourcemaps_ja", "blind10", "ja", {"success_after_failure": ["fail_next_build_oom_ja"]},
       related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,build,memory", memory_type="success",
       title="next build のメモリ不足は本番ビルドのソースマップ生成をやめて解消した",
       body="""CI で `next build` が `JavaScript heap out of memory` で落ち続けていた件。`next.config.js` の
`productionBrowserSourceMaps` を false にし、ソースマップは Sentry 用のジョブで別に作るようにしたら、ランナーを
大きくしなくてもビルドが通るようになった。
"""),
    _p("b10s2_expo51_deployment_target", "blind10", "en", {"success_after_failure": ["fail_expo_sdk51_ios"]},
       related=["fail_expo_sdk51_ios"],
       type="troubleshooting", domain="dev", tags="expo,ios,cocoapods",
       title="Expo SDK 51 iOS Build Works After Raising the iOS Deployment Target",
       body="""## Problem
Since the SDK 51 upgrade, `eas build --platform ios` stopped at `pod install`: CocoaPods could not find compatible
versions for `ExpoModulesCore`.

## Fix
A config plugin still forced `ios.deploymentTarget` 12.4. Setting it to 13.4 with `expo-build-properties` let
CocoaPods resolve the pods; the EAS build passes and we are on SDK 51.
"""),
    _p("b10s3_docker_registry_cache", "blind10", "en", {"success_after_failure": ["ts_docker_cache_ci"]},
       related=["ts_docker_cache_ci"],
       type="troubleshooting", domain="ops", tags="docker,ci,cache,buildx",
       title="Docker Builds on CI Reuse Layers Through a Registry Cache",
       body="""## Problem
Every CI Docker build started from nothing and took about 9 minutes.

## Fix
`docker buildx build --cache-from type=registry,ref=$REGISTRY/app:buildcache
--cache-to type=registry,ref=$REGISTRY/app:buildcache,mode=max`. Unchanged layers come from the registry; a build
with only app code changes takes 2 minutes.
"""),
    _p("b10s4_websocket_idle_ja", "blind10", "ja", {"success_after_failure": ["fail_websocket_alb_drops"]},
       related=["fail_websocket_alb_drops"],
       type="troubleshooting", domain="infra", tags="websocket,alb,idle-timeout",
       title="ALB 経由の WebSocket が 60 秒で切れる問題を解決した",
       body="""メッセージが流れないと ALB 越しの WebSocket が約 60 秒で切断されていた件。原因は ALB のアイドルタイムアウト（既定 60 秒）。
アイドルタイムアウトを 300 秒に延ばし、サーバーから 25 秒ごとに ping フレームを送るようにしたら切れなくなった。
"""),
    _p("b10n1_next_dev_slow", "blind10", "en", related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,docker,dev-server",
       title="Next.js Dev Server Is Slow to Pick Up Changes Inside Docker on macOS",
       body="""## Symptoms
Saving a file takes 5 to 10 seconds to show up in the browser when `next dev` runs in a Docker container on a Mac.

## Fix
Run `next dev` on the host instead, or set `WATCHPACK_POLLING=true` and keep `node_modules` in a named volume.
"""),
    _p("b10n2_ecr_lifecycle_ja", "blind10", "ja", related=["run_ecr_push"],
       type="decision", domain="infra", tags="ecr,lifecycle-policy,cost",
       title="ECR のイメージは直近 30 個だけ残す",
       body="""## 決定
ECR の `app` リポジトリにライフサイクルポリシーを設定し、タグ付きイメージは新しいものから 30 個だけ残す。
タグなしイメージは 1 日で消す。

## 理由
ストレージ料金が毎月増えていたため。
"""),
    _p("b10n3_outbound_webhook_timeout", "blind10", "en", related=["pat_webhook_retries", "pat_timeout_budgets"],
       type="decision", domain="dev", tags="webhooks,timeout,http-client",
       title="Outbound Webhook Requests Time Out After 30 Seconds",
       body="""## Decision
When we deliver a webhook to a customer's endpoint, the HTTP request times out after 30 seconds. Slow receivers
should answer 202 quickly and do the work afterwards.
"""),
    _p("b10n4_beat_timezone_ja", "blind10", "ja", related=["fail_celery_beat_twice"],
       type="decision", domain="ops", tags="celery,beat,timezone",
       title="Celery beat のスケジュールは Asia/Tokyo で書く",
       body="""## 決定
Celery の `timezone` を `Asia/Tokyo` にし、`beat_schedule` の crontab は日本時間で書く。夜間バッチの時刻を
UTC に読み替える間違いが続いたため。
"""),
    _p("b10n5_ios_push_still_en", "blind10", "en", related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification,apns",
       title="Production iOS Push: Regenerating the APNs Key Did Not Help",
       body="""Follow-up on pushes not arriving on TestFlight and App Store builds. Created a new APNs auth key (.p8) and
uploaded it to the push server. The server still logs 200 from APNs and devices still get nothing. Still open.
"""),
    _p("b10n6_xdist_db_per_worker_ja", "blind10", "ja", related=["dec_tests_real_db_ja", "pat_pytest_tmp_path"],
       type="pattern", domain="testing", tags="pytest,xdist,database",
       title="pytest-xdist で並列実行するときはワーカーごとにテスト用 DB を分ける",
       body="""`-n 4` などで並列に流すと、同じテスト用 DB を複数のワーカーが書き換えて結果が混ざる。
`worker_id` フィクスチャを使い、`test_gw0`、`test_gw1` のようにワーカーごとに別の DB を作る。
"""),
    _p("b10n7_tmux_panes", "blind10", "en",
       type="pattern", domain="general", tags="tmux,terminal",
       title="Split tmux Panes in the Current Directory",
       body="""Bind the split keys so a new pane opens in the same directory as the current one:
`bind '"' split-window -v -c "#{pane_current_path}"` and `bind % split-window -h -c "#{pane_current_path}"`
in `~/.tmux.conf`.
"""),
    _p("b10n8_expense_deadline_ja", "blind10", "ja",
       type="fact", domain="general", tags="expenses,admin",
       title="経費精算の締め切りは月末の 3 営業日前",
       body="""経費精算は月末の 3 営業日前までに申請する。それを過ぎると翌月の処理に回る。領収書の画像は申請に添付する。
"""),
    _p("b10n9_cloudfront_api_ttl", "blind10", "en", related=["dec_cloudfront_gzip"],
       type="decision", domain="infra", tags="cloudfront,cache,api",
       title="CloudFront Does Not Cache /api/* Responses",
       body="""## Decision
The `/api/*` behaviour of the web distribution uses the managed `CachingDisabled` policy: API responses are never
cached at the edge. Static assets keep their long TTLs.
"""),
    _p("b10n10_gcp_cloud_nat", "blind10", "en", related=["fact_nat_idle_350"],
       type="fact", domain="infra", tags="gcp,cloud-nat,tcp,timeout",
       title="GCP Cloud NAT Closes Idle Established TCP Connections After 1200 Seconds",
       body="""On Google Cloud, Cloud NAT's TCP established connection idle timeout defaults to 1200 seconds (20 minutes),
and unlike AWS it can be changed per NAT gateway (`--tcp-established-idle-timeout`).
"""),
    _p("b10n11_android_fcm_channel_ja", "blind10", "ja", related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="android,push-notification,fcm",
       title="Android 8 以降でプッシュ通知が表示されない: 通知チャンネルを作っていなかった",
       body="""## 症状
FCM からの送信は成功しているのに、Android 8 以降の端末で通知が表示されない。

## 原因と対処
Android 8 からは通知チャンネルが必須。アプリ起動時に `NotificationChannel` を作成し、送信側でそのチャンネル ID を
指定したら表示されるようになった。
"""),
    # ---------------------------------------------------------------- blind11: written after the blind10 run and
    # before the eighth pass's rules were frozen or run on it; expected answers written with each probe, nothing run
    # on it before the lead's single run. Reworded duplicates (terse notes, Japanese, one across languages);
    # contradictions by an opposite choice, another value or a claim said the other way (Japanese and across
    # languages); success after a recorded failure (a card type, a status, rejected feedback); and neighbours: the
    # same environment with another engine, the same CI with another runtime, another deployment, a follow-up that
    # still fails, another kind of log with its own retention, and cards about nothing the vault holds.
    _p("b11d1_gunicorn_keepalive_terse", "blind11", "en", {"duplicate": ["ts_alb_504_keepalive"]},
       related=["ts_alb_504_keepalive"],
       type="troubleshooting", domain="infra", tags="alb,gunicorn,keep-alive,502",
       title="Random 502/504 Behind ALB: Backend Closes Keep-Alive Before the ALB Does",
       body="""## Symptoms
Sporadic 502s and 504s from the load balancer at low traffic; the app logs show nothing for those requests.

## Cause
ALB keeps idle connections for 60 s, gunicorn drops them after its default 2 s keep-alive, so now and then the ALB
reuses a connection the backend already closed.

## Fix
Backend keep-alive must outlive the ALB idle timeout: `--keep-alive 75` on gunicorn (`keepalive_timeout 75s;` if
nginx sits in front).
"""),
    _p("b11d2_timeouts_nested", "blind11", "en", {"duplicate": ["pat_timeout_budgets"]},
       related=["pat_timeout_budgets"],
       type="pattern", domain="dev", tags="timeout,http,architecture",
       title="Inner Timeouts Must Be Shorter Than Outer Ones",
       body="""Order the timeouts from the outside in, each one smaller than the one wrapping it: the load balancer's is the
longest, then the app server's, then the outbound HTTP client's, and the DB statement timeout is the shortest. If an
outer layer times out first, the work underneath carries on for a caller that is already gone.
"""),
    _p("b11d3_ecs_outbound_443_ja", "blind11", "ja", {"duplicate": ["ts_ecs_sg_egress_ja"]},
       related=["ts_ecs_sg_egress_ja"],
       type="troubleshooting", domain="infra", tags="ecs,security-group,egress,timeout",
       title="ECS のタスクから外部の API に出られず ConnectTimeout: SG のアウトバウンドに 443 がない",
       body="""## 症状
ECS で動くタスクが外の決済 API を叩くと 30 秒ほど待たされて `ConnectTimeout`。名前解決は通っている。

## 原因
Terraform でセキュリティグループを定義すると、デフォルトで付いていた全開放のエグレスルールがなくなる。
そのためタスクの SG から 443 番への送信が許可されていなかった。

## 対処
タスクの SG のアウトバウンドに TCP 443 を足す。
"""),
    _p("b11d4_rds_inbound_5432_ja", "blind11", "ja", {"duplicate": ["ts_rds_sg_timeout_ja"]},
       related=["ts_rds_sg_timeout_ja"],
       type="troubleshooting", domain="infra", tags="rds,security-group,postgresql",
       title="アプリから RDS につながらず Connection timed out になる: SG の 5432 番",
       body="""メモ: アプリから RDS に接続すると長く待ったあと `Connection timed out`。
RDS 側のセキュリティグループのインバウンドに、アプリの SG からの 5432/tcp を許可するルールが無かった。
アプリの SG をソースにしたインバウンドルールを RDS の SG に追加したら直った。
"""),
    _p("b11d5_migrations_first_ja", "blind11", "ja", {"duplicate": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"],
       type="decision", domain="ops", tags="migrations,deploy,database",
       title="DB マイグレーションは新しいバージョンのアプリを出す前に流す",
       body="""## 決定
デプロイのパイプラインで、新バージョンのアプリを起動する前に単発タスクとして `alembic upgrade head` を実行する。

## 理由
マイグレーションは後方互換に書くので、ロールアウト中も古いバージョンが新しいスキーマの上でそのまま動く。
"""),
    _p("b11d6_atomic_write_note", "blind11", "en", {"duplicate": ["pat_atomic_writes"]},
       related=["pat_atomic_writes"],
       type="pattern", domain="dev", tags="python,files,atomic,fsync",
       title="Never Leave a Half-Written File: mkstemp in the Same Dir, fsync, then os.replace",
       body="""note to self (agent): when saving a file other processes read, create the temp file next to the target
(`tempfile.mkstemp(dir=target.parent)`), write, flush + `os.fsync`, then `os.replace(tmp, target)`. A reader gets
either the old content or the new, never a torn file, even if we are killed halfway.
"""),
    _p("b11c1_gunicorn_uvicorn", "blind11", "en", {"contradiction": ["dec_gunicorn_sync"]},
       related=["dec_gunicorn_sync"], rel={"dec_gunicorn_sync": "contradicts"},
       type="decision", domain="dev", tags="gunicorn,uvicorn,asgi,workers",
       title="API Gunicorn Runs Uvicorn Workers, Not Sync Workers",
       body="""## Decision
The API's Gunicorn is started with `-k uvicorn.workers.UvicornWorker`; the sync worker class is no longer used.

## Why
The handlers became async when we added the search and recommendations calls, and a sync worker blocks on each one.
"""),
    _p("b11c2_webhook_retry_eight", "blind11", "en", {"contradiction": ["pat_webhook_retries"]},
       related=["pat_webhook_retries"], rel={"pat_webhook_retries": "contradicts"},
       type="pattern", domain="dev", tags="webhooks,retries,backoff",
       title="Retry Failed Webhook Deliveries Up to 8 Times Over 24 Hours",
       body="""A delivery that gets a 5xx or a timeout is retried up to 8 times, backing off exponentially from 1 minute to
about 12 hours, so a receiver that is down for a night still gets its events. After the 8th failure the endpoint is
marked disabled and the customer is emailed.
"""),
    _p("b11c3_nat_idle_600", "blind11", "en", {"contradiction": ["fact_nat_idle_350"]},
       related=["fact_nat_idle_350"], rel={"fact_nat_idle_350": "contradicts"},
       type="fact", domain="infra", tags="nat-gateway,tcp,timeout,aws",
       title="AWS NAT Gateway Idle Timeout Is 600 Seconds and Can Be Raised",
       body="""An idle TCP connection through an AWS NAT gateway is closed after 600 seconds; the timeout can be raised on the
gateway, so long-lived idle connections need no keepalive tuning on our side.
"""),
    _p("b11c4_write_in_place", "blind11", "en", {"contradiction": ["pat_atomic_writes"]},
       related=["pat_atomic_writes"], rel={"pat_atomic_writes": "contradicts"},
       type="pattern", domain="dev", tags="python,files,docker",
       title="Write Files in Place; Don't Use a Temp File and os.replace",
       body="""Open the target file and overwrite it directly (`open(path, "w")`, truncate and write). Do not write a temp file
and `os.replace` it over the target: the rename swaps the inode, and a file bind-mounted into a container keeps
pointing at the old one.
"""),
    _p("b11c5_staging_ahead_ja", "blind11", "ja", {"contradiction": ["dec_staging_pg14_ja"]},
       related=["dec_staging_pg14_ja"], rel={"dec_staging_pg14_ja": "contradicts"},
       type="decision", domain="infra", tags="postgresql,staging,rds",
       title="ステージングの RDS は PostgreSQL 17 で先行して動かす",
       body="""## 決定
ステージングの RDS は本番より新しい PostgreSQL 17 にする。本番のメジャーバージョンには合わせない。

## 理由
次のメジャーアップグレードで壊れるものを、本番より先にステージングで見つけたい。
"""),
    _p("b11c6_logs_never_expire_ja", "blind11", "ja", {"contradiction": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"], rel={"dec_log_retention_ja": "contradicts"},
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="アプリのロググループは保持期間を「失効しない」にする",
       body="""## 決定
CloudWatch Logs のアプリのロググループは期限切れにしない（保持期間: 失効しない）。古いログも消さずに残す。

## 理由
監査で半年以上前のアクセスの記録を求められ、すでに消えていて答えられなかった。
"""),
    _p("b11c7_ci_node20_ja", "blind11", "ja", {"contradiction": ["dec_node_18_ci"]},
       related=["dec_node_18_ci"], rel={"dec_node_18_ci": "contradicts"},
       type="decision", domain="dev", tags="nodejs,ci,github-actions",
       title="CI の Node.js は 20 に固定する",
       body="""## 決定
GitHub Actions の `actions/setup-node` は `node-version: 20` にする。18 はもう使わない。

## 理由
Node 18 はメンテナンス期間が終わり、依存パッケージが 20 以上を要求し始めた。
"""),
    _p("b11s1_hpa_stabilization", "blind11", "en", {"success_after_failure": ["fail_k8s_hpa_flapping"]},
       related=["fail_k8s_hpa_flapping"],
       type="troubleshooting", domain="infra", tags="kubernetes,hpa,autoscaling",
       title="API HPA Stopped Flapping with a Scale-Down Stabilization Window",
       body="""## Problem
The `api` HorizontalPodAutoscaler kept adding pods and removing them a minute later, all day long.

## Fix
Added `behavior.scaleDown.stabilizationWindowSeconds: 300` and a scale-down policy of at most 1 pod per minute. The
replica count now follows the daily traffic curve instead of bouncing every minute.
"""),
    _p("b11s2_export_s3_endpoint_ja", "blind11", "ja", {"success_after_failure": ["fail_nightly_export_s3"]},
       related=["fail_nightly_export_s3"],
       type="troubleshooting", domain="ops", tags="export,s3,lambda,vpc", memory_type="success",
       title="夜間エクスポートの Lambda が S3 アップロードで止まる件は VPC エンドポイントで解決",
       body="""夜間エクスポートの Lambda が CSV を S3 に上げる途中で 15 分の上限まで止まっていた件。Lambda は VPC 内で
動いていて NAT がなく、S3 に出る経路がなかった。VPC に S3 のゲートウェイエンドポイントを追加したら、アップロードは
数秒で終わるようになった。
"""),
    _p("b11s3_pytest_ci_redis_ja", "blind11", "ja", {"success_after_failure": ["ts_pytest_ci_timeout_ja"]},
       related=["ts_pytest_ci_timeout_ja"],
       type="troubleshooting", domain="testing", tags="pytest,ci,redis",
       title="CI でだけ pytest がタイムアウトしていた原因は Redis がないことだった",
       body="""## 症状
ローカルなら 2 分のテストが CI では 10 分で打ち切られていた。タイムアウトを延ばしても直らなかった。

## 原因と対処
キャッシュを使うテストのフィクスチャが Redis に接続しようとして、1 件ごとに 30 秒リトライしていた。CI のジョブに
Redis のサービスコンテナを追加したら、CI でも 3 分で終わるようになった。
"""),
    _p("b11n1_redis_cache_eviction", "blind11", "en", related=["dec_sessions_redis"],
       type="decision", domain="infra", tags="redis,cache,eviction",
       title="The Page-Cache Redis Cluster Evicts with allkeys-lru",
       body="""## Decision
The separate Redis cluster that caches rendered pages runs with `maxmemory-policy allkeys-lru` and `maxmemory` at 75%
of the node's RAM. Any key may be evicted; the pages are rebuilt on a miss.
"""),
    _p("b11n2_ci_python_312", "blind11", "en", related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="python,ci,github-actions",
       title="Pin Python 3.12 in CI",
       body="""## Decision
CI uses `actions/setup-python` with `python-version: "3.12"`, the version the production image is built on.
"""),
    _p("b11n3_staging_redis_ja", "blind11", "ja", related=["dec_staging_pg14_ja"],
       type="decision", domain="infra", tags="redis,staging,elasticache",
       title="ステージングの ElastiCache は Redis 7.1 を使う",
       body="""## 決定
ステージングの ElastiCache は Redis 7.1 で作る。ノードは cache.t4g.small を 1 台。
"""),
    _p("b11n4_celery_acks_late_ja", "blind11", "ja", related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,reliability",
       title="Celery のタスクは acks_late を有効にする",
       body="""## 決定
Celery の `task_acks_late = True` と `task_reject_on_worker_lost = True` を設定する。

## 理由
デプロイでワーカーが止まったとき、実行中だったタスクが失われず、別のワーカーでやり直されるようにするため。
"""),
    _p("b11n5_worker_hpa_queue", "blind11", "en", related=["fail_k8s_hpa_flapping"],
       type="decision", domain="infra", tags="kubernetes,hpa,keda,queue",
       title="Scale the Worker Deployment on Queue Depth with KEDA",
       body="""## Decision
The `worker` deployment scales with a KEDA `ScaledObject` on the RabbitMQ queue length (target 50 messages per pod,
1 to 20 replicas) instead of on CPU.
"""),
    _p("b11n6_next_build_still_oom", "blind11", "en", related=["fail_next_build_oom_ja"],
       type="troubleshooting", domain="dev", tags="nextjs,build,memory", memory_type="failure",
       title="next build Still Runs Out of Heap After Setting NODE_OPTIONS",
       body="""Follow-up on the CI `next build` crash with `JavaScript heap out of memory`. Set
`NODE_OPTIONS=--max-old-space-size=6144` in the workflow: the build gets further but still dies at the same step.
Not solved.
"""),
    _p("b11n7_alb_access_logs_90", "blind11", "en", related=["dec_log_retention_ja"],
       type="decision", domain="infra", tags="alb,access-logs,s3,lifecycle",
       title="ALB Access Logs in S3 Expire After 90 Days",
       body="""## Decision
The ALB writes its access logs to the `acme-alb-logs` bucket; a lifecycle rule moves them to Glacier after 30 days and
deletes them after 90. Application logs are not affected.
"""),
    _p("b11n8_guest_wifi_ja", "blind11", "ja",
       type="fact", domain="general", tags="office,wifi",
       title="オフィスのゲスト用 Wi-Fi のパスワードは毎月 1 日に変わる",
       body="""来客用の SSID `acme-guest` のパスワードは毎月 1 日に総務が変える。新しいパスワードは受付のタブレットに表示される。
"""),
    _p("b11n9_pdf_ghostscript", "blind11", "en",
       type="pattern", domain="general", tags="pdf,ghostscript",
       title="Shrink a Scanned PDF with Ghostscript",
       body="""`gs -sDEVICE=pdfwrite -dPDFSETTINGS=/ebook -dNOPAUSE -dBATCH -sOutputFile=small.pdf scan.pdf` brings a
40 MB scan down to about 3 MB; use `/printer` instead of `/ebook` when the text must stay sharp.
"""),
    # ---------------------------------------------------------------- blind13: written after the blind12 run by
    # someone who has not read the judging rules; expected answers written with each probe, nothing run on it.
    # Reworded duplicates (English, Japanese, three across languages); contradictions by an opposite claim, an
    # opposite choice or the other order (Japanese, English, across languages); success after a recorded failure (a
    # status, rejected feedback, a failure memory_type; two through store_memory); neighbours: a follow-up that still
    # fails, the same tool with another setting, the same attribute of another client, another attribute of the same
    # environment, another service's Gunicorn, and cards about nothing the vault holds.
    _p("b13d1_cloudfront_edge_compress", "blind13", "en", {"duplicate": ["dec_cloudfront_gzip"]},
       related=["dec_cloudfront_gzip"],
       type="decision", domain="infra", tags="cloudfront,cdn,gzip,brotli",
       title="Web CloudFront Distribution Compresses Responses at the Edge",
       body="""## Decision
The cache policy of the web distribution has Gzip and Brotli compression switched on, so CloudFront compresses
objects itself.

## Why
Our JavaScript bundles get about 70% smaller on the wire, and the origin servers never have to compress anything.
"""),
    _p("b13d2_log_retention_en", "blind13", "en", {"duplicate": ["dec_log_retention_ja"]},
       related=["dec_log_retention_ja"],
       type="decision", domain="ops", tags="cloudwatch,logs,retention",
       title="Application Log Groups in CloudWatch Keep 30 Days of Logs",
       body="""## Decision
Retention on the app's CloudWatch Logs log groups is set to 30 days. Nothing older is exported to S3 before it
expires.

## Why
No incident investigation has ever needed logs older than a month, and the storage bill adds up.
"""),
    _p("b13d3_rds_rotation_ja", "blind13", "ja", {"duplicate": ["run_rds_password_rotation"]},
       related=["run_rds_password_rotation"],
       type="runbook", domain="infra", tags="rds,secrets-manager,rotation",
       title="Secrets Manager で RDS のマスターパスワードをローテーションする",
       body="""1. Secrets Manager でシークレット `prod/rds/master` を開き、「すぐにシークレットをローテーションする」を選ぶ。
2. ローテーション用 Lambda が終わるのを CloudWatch のロググループ `/aws/lambda/rds-rotation` で確認する。
3. `psql "$DATABASE_URL" -c 'select 1'` でアプリの接続情報のまま DB につながることを確かめる。
"""),
    _p("b13d4_celery_concurrency_four_ja", "blind13", "ja", {"duplicate": ["dec_worker_concurrency_ja"]},
       related=["dec_worker_concurrency_ja"],
       type="decision", domain="ops", tags="celery,concurrency,workers",
       title="Celery の worker は concurrency=4 で起動する",
       body="""## 決定
Celery ワーカーの起動オプションは `--concurrency 4`。

## 理由
タスクは 2 vCPU で動き、ほとんどの時間を外部 API の応答待ちに使っているので、vCPU 数の倍の 4 にしている。
"""),
    _p("b13d5_gunicorn_sync_workers", "blind13", "en", {"duplicate": ["dec_gunicorn_sync"]},
       related=["dec_gunicorn_sync"],
       type="decision", domain="dev", tags="gunicorn,workers,python",
       title="API Gunicorn: Sync Workers, Twice the CPUs Plus One",
       body="""## Decision
Gunicorn serves the API with the plain sync worker class (`-k sync`) and `--workers` set to twice the CPU count plus
one.

## Why
Requests use little CPU and wait on no slow upstream service; sync workers are the easiest model to reason about.
"""),
    _p("b13d6_ci_node18_ja", "blind13", "ja", {"duplicate": ["dec_node_18_ci"]},
       related=["dec_node_18_ci"],
       type="decision", domain="dev", tags="nodejs,ci,github-actions",
       title="CI の Node.js は本番と同じ 18 系に固定する",
       body="""## 決定
GitHub Actions では `actions/setup-node` に `node-version: 18` を指定する。本番で動いているメジャーバージョンと揃える。
"""),
    _p("b13d7_sg_rule_rename_state_mv", "blind13", "en", {"duplicate": ["ts_terraform_sg_dup"]},
       related=["ts_terraform_sg_dup"],
       type="troubleshooting", domain="infra", tags="terraform,security-group,state",
       title="InvalidPermission.Duplicate on terraform apply After Renaming an SG Rule Resource",
       body="""## Symptoms
Renamed an `aws_security_group_rule` resource in the code; `terraform apply` then stops with
`InvalidPermission.Duplicate`, because it tries to create the rule again while the old one still exists in AWS.

## Fix
Don't let Terraform destroy and recreate it: move it in the state with
`terraform state mv aws_security_group_rule.old aws_security_group_rule.new`.
"""),
    _p("b13c1_ecs_secrets_live_en", "blind13", "en", {"contradiction": ["ts_secrets_ecs_ja"]},
       related=["ts_secrets_ecs_ja"], rel={"ts_secrets_ecs_ja": "contradicts"},
       type="fact", domain="infra", tags="secrets-manager,ecs",
       title="ECS Tasks Pick Up Updated Secrets Manager Values Without a Redeploy",
       body="""Running ECS tasks re-read the secrets referenced in their task definition by themselves: after a value is changed
in Secrets Manager, the containers see the new one within a few minutes. No new deployment or task restart is needed.
"""),
    _p("b13c2_pytest_env_no_monkeypatch_ja", "blind13", "ja", {"contradiction": ["pat_pytest_tmp_path"]},
       related=["pat_pytest_tmp_path"], rel={"pat_pytest_tmp_path": "contradicts"},
       type="pattern", domain="testing", tags="pytest,environment,conftest",
       title="pytest の環境変数は monkeypatch を使わず conftest で os.environ に直接入れる",
       body="""テストで使う環境変数は `conftest.py` の先頭で `os.environ["APP_ENV"] = "test"` のように直接設定し、テストの間ずっと
そのままにする。`monkeypatch.setenv` はテストごとに値が元に戻り、読み込み済みの設定と食い違うので使わない。
"""),
    _p("b13c3_requests_downloads_no_timeout", "blind13", "en", {"contradiction": ["ts_requests_no_timeout"]},
       related=["ts_requests_no_timeout"], rel={"ts_requests_no_timeout": "contradicts"},
       type="decision", domain="dev", tags="python,requests,timeout,downloads",
       title="Don't Set a Timeout on requests Calls That Download Large Files",
       body="""## Decision
The archive downloader calls `requests.get(url, stream=True)` with no `timeout` argument. Some mirrors take many
minutes between chunks of a large file, and every timeout we tried cut off downloads that would have finished.

## Why it is safe
A watchdog thread kills a download that has received no bytes for 30 minutes.
"""),
    _p("b13c4_kb_in_postgres_ja", "blind13", "ja", {"contradiction": ["dec_markdown_kb"]},
       related=["dec_markdown_kb"], rel={"dec_markdown_kb": "contradicts"},
       type="decision", domain="dev", tags="knowledge-base,postgresql",
       title="ナレッジカードは Markdown ファイルをやめて PostgreSQL のテーブルに保存する",
       body="""## 決定
ナレッジカードは git で管理する Markdown ファイルではなく、PostgreSQL の `cards` テーブルに行として保存する。
ファイルへの書き出しはしない。

## 理由
カードが 2 万件を超え、ファイルの走査と git の差分が遅くなった。編集は社内の Web 画面から行う。
"""),
    _p("b13c5_migrations_after_rollout_ja", "blind13", "ja", {"contradiction": ["dec_migrations_before_deploy"]},
       related=["dec_migrations_before_deploy"], rel={"dec_migrations_before_deploy": "contradicts"},
       type="decision", domain="ops", tags="migrations,deploy,database",
       title="DB マイグレーションは新バージョンのロールアウトが終わってから実行する",
       body="""## 決定
`alembic upgrade head` はデプロイの最後、新しいアプリのタスクがすべて入れ替わったあとに流す。アプリより先には実行しない。

## 理由
古いバージョンのコードが新しいテーブル構成の上で落ちるのを避けるため。新バージョンは古いスキーマでも動くように書く。
"""),
    _p("b13c6_repo_tests_sqlite", "blind13", "en", {"contradiction": ["dec_tests_real_db_ja"]},
       related=["dec_tests_real_db_ja"], rel={"dec_tests_real_db_ja": "contradicts"},
       type="decision", domain="testing", tags="testing,database,sqlite",
       title="Repository Tests Run on In-Memory SQLite Instead of a Postgres Container",
       body="""## Decision
The repository-layer tests use an in-memory SQLite database (`sqlite://`) through the same SQLAlchemy models; we no
longer start PostgreSQL in Docker for them.

## Why
Starting the container took most of the test run, and contributors on Windows could not run it at all.
"""),
    _p("b13c7_rds_password_manual_ja", "blind13", "ja", {"contradiction": ["run_rds_password_rotation"]},
       related=["run_rds_password_rotation"], rel={"run_rds_password_rotation": "contradicts"},
       type="decision", domain="infra", tags="rds,secrets-manager,rotation",
       title="RDS のマスターパスワードは Secrets Manager のローテーションを使わず手動で変える",
       body="""## 決定
RDS のマスターパスワードの変更に Secrets Manager のローテーション（Lambda）は使わない。
`aws rds modify-db-instance --master-user-password` で手で変え、その値をシークレットに書き込む。

## 理由
ローテーション用の Lambda が VPC の中から Secrets Manager に届かず、途中で止まったことがあるため。
"""),
    _p("b13s1_tf_force_unlock", "blind13", "en", {"success_after_failure": ["fail_tf_state_lock_ja"]},
       related=["fail_tf_state_lock_ja"],
       type="troubleshooting", domain="infra", tags="terraform,state-lock,dynamodb",
       title="Stuck Terraform State Lock Released with force-unlock",
       body="""## Problem
`terraform plan` kept failing with `Error acquiring the state lock` ever since a CI apply was killed halfway; the job
that held the lock no longer existed and waiting did nothing.

## Fix
Checked in the DynamoDB lock table that no run was alive, then ran `terraform force-unlock <LOCK_ID>` with the ID
from the error message. Plan and apply work again.
"""),
    _p("b13s2_beat_single_replica_ja", "blind13", "ja", {"success_after_failure": ["fail_celery_beat_twice"]},
       related=["fail_celery_beat_twice"],
       type="troubleshooting", domain="ops", tags="celery,beat,deploy", memory_type="success",
       title="デプロイ後に Celery beat が定期タスクを二重に投入する問題を解決",
       body="""ローリングアップデート中に新旧のコンテナが両方とも beat を動かし、定期タスクが 2 回ずつ実行されていた件。
beat を Web とワーカーのコンテナから切り離し、レプリカ 1 の専用 Deployment にして更新戦略を Recreate にした。
それ以降のデプロイでも、各タスクは 1 回だけ実行されている。
"""),
    _p("b13s3_ios_push_type_alert", "blind13", "en", {"success_after_failure": ["fail_ios_push_ja"]},
       related=["fail_ios_push_ja"],
       type="troubleshooting", domain="dev", tags="ios,push-notification,apns",
       title="Release iOS Builds Show Push Notifications Again: Wrong apns-push-type in Production",
       body="""## Problem
Pushes reached development builds but not TestFlight or App Store builds, while APNs answered 200 for every send.

## Cause and fix
The push server's production config sent every message with `apns-push-type: background` and priority 5, so iOS
accepted them and showed nothing; the development config had `alert`. Setting `apns-push-type: alert` and priority
10 in the production config fixed it: release builds show notifications again.
"""),
    _p("b13s4_docker_gha_cache_ja", "blind13", "ja", {"success_after_failure": ["ts_docker_cache_ci"]},
       related=["ts_docker_cache_ci"],
       type="troubleshooting", domain="ops", tags="docker,ci,cache,github-actions",
       title="CI の Docker ビルドを GitHub Actions のキャッシュでレイヤー再利用して短縮した",
       body="""## 問題
CI の Docker ビルドが毎回ゼロからで、9 分かかっていた。ランナーのボリュームを使う方法はうまくいかなかった。

## 対処
`docker/build-push-action` に `cache-from: type=gha` と `cache-to: type=gha,mode=max` を指定した。変更のない
レイヤーはキャッシュから取られ、アプリのコードだけを変えたビルドは 2 分半で終わる。
"""),
    _p("b13s5_expo51_pod_repo_update", "blind13", "en", {"success_after_failure": ["fail_expo_sdk51_ios"]},
       related=["fail_expo_sdk51_ios"],
       type="troubleshooting", domain="dev", tags="expo,ios,cocoapods,upgrade", memory_type="success",
       title="Expo SDK 51 on iOS: pod install Passes After Refreshing the CocoaPods Specs",
       body="""We are on Expo SDK 51 now. After the upgrade from 50 the iOS build had stopped at `pod install` with
`could not find compatible versions for pod "ExpoModulesCore"`. Deleting `ios/Podfile.lock`, running
`pod install --repo-update` and clearing the EAS build cache let the pods resolve; `eas build --platform ios` succeeds.
"""),
    _p("b13n1_websocket_heartbeat_still", "blind13", "en", related=["fail_websocket_alb_drops"],
       type="troubleshooting", domain="infra", tags="websocket,alb,heartbeat", memory_type="failure",
       title="App-Level Heartbeats Every 90 s Did Not Stop the WebSocket Drops",
       body="""Follow-up on WebSocket connections through the ALB dying after about a minute of silence. Added a JSON heartbeat
message from the client every 90 seconds: connections still drop at around 60 s. Not fixed.
"""),
    _p("b13n2_tf_aws_provider_pin_ja", "blind13", "ja", related=["ts_terraform_sg_dup", "fail_tf_state_lock_ja"],
       type="decision", domain="infra", tags="terraform,provider,versions",
       title="Terraform の AWS プロバイダーは ~> 5.40 に固定する",
       body="""## 決定
`required_providers` で `hashicorp/aws` のバージョンを `~> 5.40` に固定し、`.terraform.lock.hcl` もリポジトリに含める。

## 理由
CI とローカルで別のバージョンのプロバイダーが入り、plan の差分が食い違ったため。
"""),
    _p("b13n3_search_client_timeout", "blind13", "en", related=["dec_payments_client_timeout", "pat_timeout_budgets"],
       type="decision", domain="dev", tags="search,timeout,http-client",
       title="Set the Search API Client Timeout to 5 Seconds",
       body="""## Decision
The client for our internal search API (`search-client`) gives up after 5 seconds (`SEARCH_TIMEOUT=5`), and the page
renders without the search-suggestions block.

## Why
Search answers in 300 ms at p99; anything slower is a stuck node, and the page must not wait on it.
"""),
    _p("b13n4_staging_rds_class_ja", "blind13", "ja", related=["dec_staging_pg14_ja"],
       type="fact", domain="infra", tags="rds,staging,instance-class",
       title="ステージングの RDS のインスタンスクラスは db.t4g.medium",
       body="""ステージングの RDS は db.t4g.medium の 1 台構成（マルチ AZ なし）。夜間と週末は停止してコストを抑えている。
"""),
    _p("b13n5_export_gunicorn_timeout", "blind13", "en", related=["dec_gunicorn_sync", "pat_timeout_budgets"],
       type="decision", domain="dev", tags="gunicorn,timeout,exports",
       title="The Export Service's Gunicorn Worker Timeout Is 120 Seconds",
       body="""## Decision
The export service (not the API) starts Gunicorn with `--timeout 120`, because building a large CSV can take over a
minute. The API keeps Gunicorn's default 30 s worker timeout.
"""),
    _p("b13n6_garbage_day_ja", "blind13", "ja",
       type="fact", domain="general", tags="home,garbage",
       title="燃えないごみの収集日は第2・第4水曜日",
       body="""うちの地区の燃えないごみは、第2・第4水曜日の朝8時半までに出す。スプレー缶は穴を開けずに別の袋に入れる。
"""),
    _p("b13n7_prusa_first_layer", "blind13", "en",
       type="pattern", domain="general", tags="3d-printing,prusa",
       title="Dial In the First Layer on a Prusa MK4 with Live Z Adjust",
       body="""Print the first-layer calibration pattern and turn the knob while it prints: lower Z until the lines squish flat
with no gaps between them, then save the offset. Redo it after changing the steel sheet or the nozzle.
"""),
]
