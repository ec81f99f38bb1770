"""Labelled set for one judgement of store-time insights: "potential duplicate" when the new card
names or links an existing card, or sits next to it (same topic, same error), without saying
what it says. Pairs of a new card and an existing card of a small vault, English and Japanese,
written (with the expected answer of each) before the product was run on them.

Why a set of its own: `create` called a short card whose body links another card by its title
("See [[Kafka consumer lag]] for the fix; this one is about the producer side.") a potential
duplicate of that card (similarity 0.82, the link's words doing the work). A card that names or
links another card, or is about a neighbouring problem that shares its vocabulary, is not a
duplicate of it; a rewording of the same lesson is, links or no links.

BASE: the small vault each probe is created in (a fresh copy each time); the same shape as
`insight_cases.BASE`. PROBES: one new card each (`insight_cases._p`'s shape); `expect["duplicate"]`
lists the base cards it duplicates (empty: none), `pair` the base card it was written against
(its duplicate, or the card it names, links or sits next to), `kind` what sort of pair it is:

- `dup`: the same lesson reworded, reordered, shortened or said more plainly, in one language;
- `dup_link`: the same, and its body also links or names another card;
- `link`: a short card that links the pair's card with [[its title]] and says something else;
- `see`: names the pair's card in prose ("see ...", "as in ...") and says something else;
- `quoted`: a longer card that quotes the pair's card's title on its way to another lesson;
- `topic`: the same topic, another problem;
- `cause`: the same error message, another cause and fix;
- `short`: a short card on the pair's subject that says something else.

`split` is "dev" (the rules may be tuned on it) or "held" (reported, never tuned on): 35 dev (15
duplicates), 32 held (12 duplicates); 67 pairs, 44 English and 23 Japanese, 27 duplicates.
Measured by `python3 tests/bench/eval_judgement.py --parts named --split held` (precision and
recall of "potential duplicate"; every base card a probe is called a duplicate of counts).
"""

from __future__ import annotations

from insight_cases import _p as _probe

BASE = [
    # ---------------------------------------------------------------- English
    dict(key="kafka_consumer_lag", type="troubleshooting", domain="infra", tags="kafka,consumer,lag",
         title="Kafka consumer lag",
         body="""## Symptoms
Consumer group lag on the `orders` topic grows for hours; the consumers keep rebalancing and the same
offsets are processed again.

## Cause
Each poll returns 500 records and processing one takes ~1 s, so a batch takes longer than
`max.poll.interval.ms` (300 s). The broker drops the consumer from the group and rebalances.

## Fix
Lower `max.poll.records` to 50 and raise `max.poll.interval.ms` to 600000; lag drains within the hour.
"""),
    dict(key="pg_pool_exhausted", type="troubleshooting", domain="dev", tags="postgres,connection-pool,gunicorn",
         title="Postgres Connection Pool Exhausted: too many clients already",
         body="""## Symptoms
Requests fail with `FATAL: sorry, too many clients already` at peak traffic.

## Cause
Each Gunicorn worker opens its own SQLAlchemy pool (`pool_size=20`); 12 workers on 4 hosts ask for
960 connections and Postgres allows `max_connections = 200`.

## Fix
Put PgBouncer in transaction mode in front of Postgres and lower `pool_size` to 5 per worker.
"""),
    dict(key="npm_ci_lockfile", type="troubleshooting", domain="dev", tags="npm,ci,lockfile",
         title="npm ci Fails: package.json and package-lock.json Are Not in Sync",
         body="""## Symptoms
CI stops at `npm ci` with `npm ERR! package.json and package-lock.json are not in sync`.

## Cause
A dependency was added to `package.json` by hand and the lockfile was not updated.

## Fix
Run `npm install` locally, commit the updated `package-lock.json`, and never edit dependencies by hand.
"""),
    dict(key="container_exit_137", type="troubleshooting", domain="ops", tags="docker,oom,memory",
         title="Container Exits with Code 137",
         body="""## Symptoms
The worker container stops with exit code 137 a few minutes into the nightly import; no stack trace.

## Cause
137 is 128 + 9: the kernel's OOM killer sent SIGKILL because the container went over its 512 MiB limit
while the import loaded the whole CSV into memory.

## Fix
Stream the CSV row by row with `csv.reader` instead of `f.read()`, and raise the limit to 1 GiB.
"""),
    dict(key="certbot_renewal", type="runbook", domain="infra", tags="tls,letsencrypt,certbot",
         title="Renew Let's Encrypt Certificates with the certbot Timer",
         body="""1. Check the timer is enabled: `systemctl list-timers | grep certbot`.
2. Dry run: `sudo certbot renew --dry-run`.
3. Add a deploy hook so nginx picks up the new files: `--deploy-hook "systemctl reload nginx"`.
4. Check the expiry date: `openssl x509 -enddate -noout -in /etc/letsencrypt/live/example.com/cert.pem`.
"""),
    dict(key="redis_evicts_sessions", type="troubleshooting", domain="dev", tags="redis,sessions,eviction",
         title="Redis Evicts Session Keys Under Memory Pressure",
         body="""## Symptoms
Users are logged out at random during the evening peak.

## Cause
The shared Redis runs `maxmemory-policy allkeys-lru`; when the page cache fills memory, Redis evicts
session keys, which have no TTL, along with cache entries.

## Fix
Use `volatile-lru`, give every cache key a TTL and leave session keys without one, so only cache entries
are evicted.
"""),
    dict(key="git_lfs_pointers", type="troubleshooting", domain="ops", tags="git-lfs,ci,github-actions",
         title="CI Checkout Has Git LFS Pointer Files Instead of Images",
         body="""## Symptoms
Image tests fail on CI with `cannot identify image file`; the PNGs in the checkout are 130-byte text files
starting with `version https://git-lfs.github.com/spec/v1`.

## Fix
`actions/checkout` does not fetch LFS objects by default: set `with: lfs: true` on the checkout step.
"""),
    dict(key="s3_presigned_403", type="troubleshooting", domain="dev", tags="s3,presigned-url,upload",
         title="S3 Presigned PUT Returns 403 SignatureDoesNotMatch",
         body="""## Symptoms
Browser uploads to a presigned URL fail with 403 `SignatureDoesNotMatch`; the same URL works with curl.

## Cause
The URL was signed with `ContentType='application/octet-stream'` and the browser sends the file's own
type (`image/png`), which is part of the signature.

## Fix
Sign with the `Content-Type` the client will send (pass it from the browser), or sign without one and send none.
"""),
    dict(key="pytest_session_fixture", type="pattern", domain="testing", tags="pytest,fixtures,isolation",
         title="Session-Scoped Fixtures Must Not Hold Mutable State",
         body="""A `scope="session"` fixture is built once and shared by every test. If it returns a mutable object
(a dict of settings, an in-memory database, a list), one test's changes leak into the next and the
result depends on test order. Keep session fixtures read-only, or return a fresh copy from a
function-scoped fixture built on top of them.
"""),
    dict(key="k8s_cronjob_utc", type="fact", domain="infra", tags="kubernetes,cronjob,timezone",
         title="Kubernetes CronJob Schedules Run in UTC",
         body="""A CronJob's `schedule` is read in the kube-controller-manager's time zone, which is UTC on managed
clusters: `0 9 * * *` runs at 09:00 UTC (18:00 JST). Since Kubernetes 1.27 set `spec.timeZone:
"Asia/Tokyo"` to schedule in local time.
"""),
    # ---------------------------------------------------------------- Japanese
    dict(key="ja_mysql_deadlock", type="troubleshooting", domain="dev", tags="mysql,deadlock,batch",
         title="MySQL のデッドロックで夜間バッチが失敗する",
         body="""## 症状
夜間バッチが `Deadlock found when trying to get lock` (エラー 1213) で時々失敗する。

## 原因
在庫更新バッチと注文集計バッチが同じ行を逆の順番で更新していて、お互いのロックを待っていた。

## 対処
どちらのバッチも主キーの昇順で更新するように揃え、1213 が返ったらトランザクションを 3 回まで再試行する。
"""),
    dict(key="ja_nginx_413", type="troubleshooting", domain="infra", tags="nginx,upload,413",
         title="nginx で 413 Request Entity Too Large が出る",
         body="""## 症状
画像のアップロードで 2MB を超えるファイルだけが `413 Request Entity Too Large` になる。アプリのログには何も出ない。

## 原因
nginx の `client_max_body_size` の既定値は 1m で、それを超えるリクエストはアプリに届く前に nginx が拒否する。

## 対処
`server` ブロックに `client_max_body_size 20m;` を書き、`nginx -s reload` する。
"""),
    dict(key="ja_ci_git_publickey", type="troubleshooting", domain="ops", tags="git,ssh,ci",
         title="CI で git clone が Permission denied (publickey) で失敗する",
         body="""## 症状
CI のジョブで private リポジトリのサブモジュールを取得するときに `Permission denied (publickey)` で止まる。

## 原因
CI のコンテナには SSH 鍵がなく、サブモジュールの URL が `git@github.com:` の SSH 形式になっている。

## 対処
サブモジュール側のリポジトリに読み取り専用のデプロイキーを登録し、その秘密鍵を CI のシークレットに入れて
`ssh-agent` に読み込ませる。
"""),
    dict(key="ja_container_tz", type="troubleshooting", domain="dev", tags="python,timezone,docker",
         title="コンテナの中で datetime.now() が UTC の時刻になる",
         body="""## 症状
ローカルでは日本時間なのに、コンテナで動かすとログやファイル名の日付が 9 時間ずれる。

## 原因
コンテナに `TZ` が設定されておらず、`datetime.now()` はシステムの時刻帯である UTC を返す。

## 対処
`datetime.now(ZoneInfo("Asia/Tokyo"))` のように時刻帯を明示する。イメージに `tzdata` を入れておく。
"""),
    dict(key="ja_es_read_only", type="troubleshooting", domain="infra", tags="elasticsearch,disk,index",
         title="Elasticsearch のインデックスが読み取り専用になり書き込めない",
         body="""## 症状
インデックスへの書き込みが `cluster_block_exception ... read-only-allow-delete` で失敗する。

## 原因
ノードのディスク使用率が flood stage のウォーターマーク（既定 95%）を超え、Elasticsearch がインデックスに
`index.blocks.read_only_allow_delete` を付けた。

## 対処
古いインデックスを消してディスクを空ける。7.4 以降は使用率が下がれば自動で外れるが、古い版では
`PUT */_settings {"index.blocks.read_only_allow_delete": null}` で外す。
"""),
    dict(key="ja_node_heap", type="troubleshooting", domain="dev", tags="nodejs,memory,build",
         title="Node.js のビルドが JavaScript heap out of memory で落ちる",
         body="""## 症状
`npm run build` が `FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory` で止まる。

## 原因
バンドルが大きくなり、Node.js の既定のヒープ上限（約 2GB）を超えた。

## 対処
`NODE_OPTIONS=--max-old-space-size=4096 npm run build` のようにヒープの上限を上げる。
"""),
]


def _p(key, split, kind, pair, duplicate, **card):
    """A probe: `pair` is the base card it was written against; `duplicate` whether it is one of it."""
    probe = _probe(key, split, "ja" if key.startswith("ja") else "en",
                   {"duplicate": [pair] if duplicate else []}, related=[pair], **card)
    probe.update(kind=kind, pair=pair)
    return probe


PROBES = [
    # ================================================================ Kafka consumer lag
    _p("kafka_dup_reworded", "dev", "dup", "kafka_consumer_lag", True,
       type="troubleshooting", domain="infra", tags="kafka,consumer,rebalance",
       title="Kafka Consumers Keep Rebalancing and Lag Grows",
       body="""The `orders` consumers fall further behind for hours and keep rejoining the group, so offsets get
reprocessed. A poll hands back 500 records at about a second each, which overruns `max.poll.interval.ms`
(300 s), and the broker kicks the consumer out and rebalances. Setting `max.poll.records=50` and
`max.poll.interval.ms=600000` fixed it: the lag was gone within an hour.
"""),
    _p("kafka_dup_links_pg", "held", "dup_link", "kafka_consumer_lag", True,
       type="troubleshooting", domain="infra", tags="kafka,consumer,lag",
       title="Orders Consumer Group Lag Keeps Growing",
       body="""## Problem
Lag on the `orders` topic climbs all day and the consumer group rebalances again and again, reprocessing offsets.

## Why
500 records per poll at ~1 s each is longer than `max.poll.interval.ms` (300 s); the consumer is removed from
the group.

## Fix
`max.poll.records: 50`, `max.poll.interval.ms: 600000`. (The slow step was the DB write; see
[[Postgres Connection Pool Exhausted: too many clients already]] for why we did not just add consumers.)
"""),
    _p("kafka_link_producer", "dev", "link", "kafka_consumer_lag", False,
       type="troubleshooting", domain="infra", tags="kafka,producer",
       title="Kafka producer timeouts",
       body="""See [[Kafka consumer lag]] for the fix; this one is about the producer side.
"""),
    _p("kafka_link_producer_batch", "held", "link", "kafka_consumer_lag", False,
       type="troubleshooting", domain="infra", tags="kafka,producer,batching",
       title="Kafka Producer Drops Messages on Shutdown",
       body="""Not the same as [[Kafka consumer lag]]. The API's producer lost the last batch on every deploy: it was
killed before `linger.ms` sent the buffer. Call `producer.flush()` in the SIGTERM handler.
"""),
    _p("kafka_topic_partitions", "dev", "topic", "kafka_consumer_lag", False,
       type="troubleshooting", domain="infra", tags="kafka,consumer,partitions",
       title="Adding Kafka Consumers Does Not Reduce Lag Beyond the Partition Count",
       body="""## Symptoms
We scaled the `orders` consumer group from 6 to 12 pods and consumer lag did not move; 6 pods sat idle.

## Cause
A partition is read by one consumer of a group at a time; the topic has 6 partitions, so at most 6
consumers get work.

## Fix
Raise the topic's partition count (`kafka-topics --alter --partitions 24`) before scaling the group.
"""),
    _p("kafka_quoted_runbook", "held", "quoted", "kafka_consumer_lag", False,
       type="runbook", domain="infra", tags="kafka,alerting,grafana",
       title="Alert on Kafka Lag in Grafana",
       body="""1. Export lag with `kafka-lag-exporter` (one series per group and partition).
2. Add the panel "Kafka consumer lag" to the Orders dashboard, summed by consumer group.
3. Alert when lag stays above 10,000 for 15 minutes; route it to #orders-oncall.
4. The alert's runbook link points at the card "Kafka consumer lag", which has the known causes.
"""),
    # ================================================================ Postgres pool
    _p("pg_dup_reworded", "dev", "dup", "pg_pool_exhausted", True,
       type="troubleshooting", domain="dev", tags="postgres,sqlalchemy,pgbouncer",
       title="FATAL: sorry, too many clients already at Peak Traffic",
       body="""At peak, requests error out with `FATAL: sorry, too many clients already`. Every Gunicorn worker had its
own SQLAlchemy pool of 20, so 12 workers x 4 hosts wanted 960 connections against `max_connections = 200`.
We put PgBouncer (transaction pooling) in front of Postgres and cut `pool_size` to 5 per worker.
"""),
    _p("pg_dup_reordered", "held", "dup", "pg_pool_exhausted", True,
       type="troubleshooting", domain="dev", tags="postgres,connection-pool",
       title="Too Many Postgres Connections from Gunicorn Workers",
       body="""## Fix
PgBouncer in transaction mode between the app and Postgres; `pool_size=5` per worker.

## Cause
With `pool_size=20` per Gunicorn worker, 12 workers on each of 4 hosts need 960 connections;
`max_connections` is 200.

## Symptoms
`FATAL: sorry, too many clients already` under peak load.
"""),
    _p("pg_see_idle_tx", "dev", "see", "pg_pool_exhausted", False,
       type="troubleshooting", domain="dev", tags="postgres,transactions",
       title="Idle in Transaction Sessions Hold Locks",
       body="""Sessions stuck `idle in transaction` held row locks for hours after a worker crashed mid-request. Set
`idle_in_transaction_session_timeout = '60s'`. This is not the pool problem (see "Postgres Connection Pool
Exhausted: too many clients already"); the pool size was fine.
"""),
    _p("pg_cause_leak", "held", "cause", "pg_pool_exhausted", False,
       type="troubleshooting", domain="dev", tags="postgres,connection-pool,celery",
       title="too many clients already from Celery Tasks That Never Close Connections",
       body="""## Symptoms
`FATAL: sorry, too many clients already` a few hours after each Celery deploy, even at night with no traffic.

## Cause
A task opened `psycopg2.connect()` directly and never closed it on the error path, so connections piled up
until Postgres refused new ones.

## Fix
Use `with psycopg2.connect(...) as conn:` and a `finally: conn.close()`; the count stays flat now.
"""),
    _p("pg_short_pgbouncer", "dev", "short", "pg_pool_exhausted", False,
       type="fact", domain="dev", tags="postgres,pgbouncer",
       title="PgBouncer transaction mode breaks prepared statements",
       body="""With PgBouncer in transaction mode, server-side prepared statements fail; turn them off in the driver.
"""),
    # ================================================================ npm ci lockfile
    _p("npm_dup_short", "dev", "dup", "npm_ci_lockfile", True,
       type="troubleshooting", domain="dev", tags="npm,lockfile",
       title="npm ci: package.json and package-lock.json Not in Sync",
       body="""`npm ci` on CI fails with `package.json and package-lock.json are not in sync` after someone added a
dependency to `package.json` by hand. Fix: `npm install` locally and commit the regenerated `package-lock.json`.
"""),
    _p("npm_link_cache", "held", "link", "npm_ci_lockfile", False,
       type="pattern", domain="dev", tags="npm,ci,cache",
       title="Cache ~/.npm on CI, Not node_modules",
       body="""Cache the npm download cache (`~/.npm`) keyed on the lockfile's hash, not `node_modules`: `npm ci`
deletes `node_modules` first anyway. If `npm ci` itself fails, that is [[npm ci Fails: package.json and
package-lock.json Are Not in Sync]].
"""),
    _p("npm_cause_version", "dev", "cause", "npm_ci_lockfile", False,
       type="troubleshooting", domain="dev", tags="npm,ci,nodejs",
       title="npm ci Says package.json and package-lock.json Are Not in Sync Although Both Were Committed",
       body="""## Symptoms
`npm ci` fails on CI with `package.json and package-lock.json are not in sync`, but `npm ci` passes locally
and both files are committed together.

## Cause
CI runs npm 6, which cannot read the `lockfileVersion: 3` written by our local npm 9.

## Fix
Use the same Node.js and npm on CI (`actions/setup-node` with `node-version-file: .nvmrc`).
"""),
    # ================================================================ exit 137
    _p("oom_dup_reworded", "held", "dup", "container_exit_137", True,
       type="troubleshooting", domain="ops", tags="docker,oom,csv",
       title="Nightly Import Worker Killed with Exit Code 137",
       body="""The import container dies with code 137 and no traceback a few minutes in. 137 = 128 + SIGKILL (9): the
OOM killer stepped in because reading the whole CSV with `f.read()` pushed it past its 512 MiB limit.
Reading it row by row with `csv.reader` fixed it; we also raised the limit to 1 GiB.
"""),
    _p("oom_dup_links", "dev", "dup_link", "container_exit_137", True,
       type="troubleshooting", domain="ops", tags="docker,oom,memory",
       title="Exit Code 137 During the Nightly CSV Import",
       body="""## Symptoms
Exit code 137, no stack trace, a few minutes into the nightly import.

## Cause
The kernel's OOM killer: loading the whole CSV into memory took the container over its 512 MiB limit
(137 is 128 + 9, SIGKILL).

## Fix
Stream the rows with `csv.reader` instead of `f.read()`, and give it 1 GiB. The same import once failed for
another reason: [[MySQL のデッドロックで夜間バッチが失敗する]].
"""),
    _p("oom_cause_sigkill_stop", "dev", "cause", "container_exit_137", False,
       type="troubleshooting", domain="ops", tags="docker,signals,shutdown",
       title="Container Exits with Code 137 on Every docker stop",
       body="""## Symptoms
Every `docker stop` takes 10 seconds and the container exits with code 137; memory is nowhere near the limit.

## Cause
The app runs as a child of `sh -c`, so SIGTERM goes to the shell, which does not pass it on; after the
10-second grace period Docker sends SIGKILL.

## Fix
Use the exec form `CMD ["python", "worker.py"]` (or `exec` in the entrypoint script) so the app is PID 1 and
gets SIGTERM.
"""),
    _p("oom_short_link", "held", "link", "container_exit_137", False,
       type="fact", domain="ops", tags="docker,exit-codes",
       title="Exit code 143 is SIGTERM",
       body="""143 = 128 + 15: the container stopped on SIGTERM, a clean stop. For 137 see [[Container Exits with Code 137]].
"""),
    # ================================================================ certbot
    _p("cert_dup_reworded", "dev", "dup", "certbot_renewal", True,
       type="runbook", domain="infra", tags="tls,certbot,nginx",
       title="certbot Renewal with the systemd Timer",
       body="""1. `systemctl list-timers | grep certbot` to see the timer is on.
2. `sudo certbot renew --dry-run` to try a renewal.
3. Reload nginx after each renewal with `--deploy-hook "systemctl reload nginx"`.
4. `openssl x509 -enddate -noout -in /etc/letsencrypt/live/example.com/cert.pem` shows the new expiry.
"""),
    _p("cert_quoted_expired", "held", "quoted", "certbot_renewal", False,
       type="episode", domain="infra", tags="tls,incident,nginx",
       title="Certificate Expired on api.example.com Although certbot Renewed It",
       body="""2026-10-14: browsers showed an expired certificate for api.example.com at 09:00. certbot had renewed it
three weeks earlier, and the runbook "Renew Let's Encrypt Certificates with the certbot Timer" was followed
when the host was set up, but this host's nginx was installed from source and the deploy hook reloaded the
distro's nginx service, which was not running. nginx kept the old certificate in memory. Fixed by pointing
the hook at `/usr/local/nginx/sbin/nginx -s reload`.
"""),
    _p("cert_topic_dns01", "dev", "topic", "certbot_renewal", False,
       type="runbook", domain="infra", tags="tls,letsencrypt,dns",
       title="Issue a Wildcard Let's Encrypt Certificate with the DNS-01 Challenge",
       body="""1. Install the plugin: `sudo apt install python3-certbot-dns-route53`.
2. Give the host an IAM role that may change the `example.com` hosted zone.
3. `sudo certbot certonly --dns-route53 -d '*.example.com' -d example.com`.
4. Renewals then run from the same certbot timer without further steps.
"""),
    # ================================================================ Redis sessions
    _p("redis_dup_reworded", "held", "dup", "redis_evicts_sessions", True,
       type="troubleshooting", domain="dev", tags="redis,sessions,maxmemory",
       title="Users Logged Out at Peak: Redis allkeys-lru Evicts Sessions",
       body="""## Symptoms
Random logouts in the evening peak.

## Cause
With `maxmemory-policy allkeys-lru` on the Redis we share with the page cache, a full memory means Redis drops
any key, session keys (no TTL) included.

## Fix
Switch to `volatile-lru`, set a TTL on every cache key and none on sessions: only the cache gets evicted.
"""),
    _p("redis_link_separate", "dev", "link", "redis_evicts_sessions", False,
       type="decision", domain="dev", tags="redis,sessions,architecture",
       title="Sessions Get Their Own Redis",
       body="""## Decision
Sessions move to a Redis of their own, separate from the cache Redis.

## Why
After [[Redis Evicts Session Keys Under Memory Pressure]] we no longer want a cache to compete with
sessions for memory at all.
"""),
    _p("redis_cause_ttl", "held", "cause", "redis_evicts_sessions", False,
       type="troubleshooting", domain="dev", tags="redis,sessions,ttl",
       title="Users Logged Out After Exactly 30 Minutes",
       body="""## Symptoms
Users are logged out 30 minutes after signing in, even while they are active.

## Cause
The session middleware sets the Redis key's TTL once at login (`SETEX ... 1800`) and never refreshes it on
later requests.

## Fix
Refresh the TTL on every request (`EXPIRE key 1800`), i.e. a sliding expiry.
"""),
    # ================================================================ Git LFS
    _p("lfs_dup_short", "dev", "dup", "git_lfs_pointers", True,
       type="troubleshooting", domain="ops", tags="git-lfs,github-actions",
       title="Git LFS Images Are Pointer Files in the CI Checkout",
       body="""On CI the PNGs are tiny text files (`version https://git-lfs.github.com/spec/v1`) and image tests fail with
`cannot identify image file`. `actions/checkout` skips LFS objects unless told: add `lfs: true` to its `with:`.
"""),
    _p("lfs_see_quota", "held", "see", "git_lfs_pointers", False,
       type="troubleshooting", domain="ops", tags="git-lfs,github,quota",
       title="Git LFS Bandwidth Quota Used Up by CI",
       body="""After we turned on `lfs: true` for the checkout (as in "CI Checkout Has Git LFS Pointer Files Instead of
Images"), every CI run downloaded 800 MB of images and the organisation's LFS bandwidth ran out in a week.
Cache `.git/lfs` with `actions/cache` keyed on `git lfs ls-files -l` so runs fetch only new objects.
"""),
    _p("lfs_short_track", "dev", "short", "git_lfs_pointers", False,
       type="fact", domain="ops", tags="git-lfs",
       title="git lfs track only affects new commits",
       body="""`git lfs track "*.png"` changes `.gitattributes` only; PNGs already committed stay in git until you run
`git lfs migrate import --include="*.png"`.
"""),
    # ================================================================ S3 presigned
    _p("s3_dup_reworded", "dev", "dup", "s3_presigned_403", True,
       type="troubleshooting", domain="dev", tags="s3,presigned-url,browser",
       title="SignatureDoesNotMatch on Browser Uploads to a Presigned S3 URL",
       body="""Uploading from the browser to a presigned URL gives 403 `SignatureDoesNotMatch`, though curl works with the
same URL. The Content-Type is part of the signature: we signed `application/octet-stream` and the browser sent
`image/png`. Pass the file's type from the browser and sign with it.
"""),
    _p("s3_dup_links_cors", "held", "dup_link", "s3_presigned_403", True,
       type="troubleshooting", domain="dev", tags="s3,presigned-url,upload",
       title="Presigned S3 Upload Fails with 403 SignatureDoesNotMatch",
       body="""## Symptoms
403 `SignatureDoesNotMatch` when the browser PUTs to a presigned URL; curl with the same URL succeeds.

## Cause
The signature covers `Content-Type`. The server signed with `application/octet-stream`, the browser sends the
file's type (`image/png`).

## Fix
Send the file's type to the server and sign with exactly that `Content-Type`. (If the browser shows a CORS
error instead, that is the bucket's CORS rules, not the signature; see [[S3 CORS rules for uploads]].)
"""),
    _p("s3_cause_clock", "dev", "cause", "s3_presigned_403", False,
       type="troubleshooting", domain="dev", tags="s3,presigned-url,time",
       title="Presigned URLs Fail with 403 from One Server Only",
       body="""## Symptoms
Presigned S3 URLs made on `batch-02` fail with 403 (`SignatureDoesNotMatch` or `Request has expired`); those
made on the other hosts work.

## Cause
`batch-02`'s clock was 20 minutes behind: chrony had stopped, and the signature's timestamp was outside S3's
window.

## Fix
Restart chrony and alert on clock offset above 1 s.
"""),
    _p("s3_link_short", "held", "link", "s3_presigned_403", False,
       type="fact", domain="dev", tags="s3,presigned-url",
       title="Presigned URL expiry limit",
       body="""A presigned URL signed with an IAM role's temporary credentials dies when the credentials do, whatever
`ExpiresIn` says (at most 7 days otherwise). Signature errors: [[S3 Presigned PUT Returns 403 SignatureDoesNotMatch]].
"""),
    # ================================================================ pytest session fixture
    _p("fixture_dup_reworded", "held", "dup", "pytest_session_fixture", True,
       type="pattern", domain="testing", tags="pytest,fixtures",
       title="Keep Session-Scoped pytest Fixtures Read-Only",
       body="""A fixture with `scope="session"` is made once for the whole run and every test gets the same object. When
it is mutable (a settings dict, an in-memory DB, a list), changes made by one test show up in later ones and
results depend on the order. Make session fixtures read-only, or hand each test a fresh copy through a
function-scoped fixture that wraps them.
"""),
    _p("fixture_see_xdist", "dev", "see", "pytest_session_fixture", False,
       type="pattern", domain="testing", tags="pytest,xdist,fixtures",
       title="Session Fixtures Run Once per xdist Worker",
       body="""With pytest-xdist, a `scope="session"` fixture runs once in each worker process, not once per run. A
fixture that creates a shared database must name it after `worker_id`, or workers overwrite each other's.
(Mutable state inside one worker is a separate issue: "Session-Scoped Fixtures Must Not Hold Mutable State".)
"""),
    _p("fixture_topic_autouse", "held", "topic", "pytest_session_fixture", False,
       type="pattern", domain="testing", tags="pytest,fixtures,autouse",
       title="Avoid autouse Fixtures in conftest.py at the Repository Root",
       body="""An `autouse=True` fixture in the root `conftest.py` runs for every test in the repository, including ones
that do not need it, and nothing in the test says so. Put autouse fixtures in the `conftest.py` of the one
folder that needs them, or request the fixture by name.
"""),
    # ================================================================ CronJob UTC
    _p("cron_dup_reworded", "dev", "dup", "k8s_cronjob_utc", True,
       type="fact", domain="infra", tags="kubernetes,cronjob,timezone",
       title="CronJob Schedules Are in UTC, Not Local Time",
       body="""Kubernetes reads a CronJob's `schedule` in the controller manager's time zone, UTC on managed clusters, so
`0 9 * * *` fires at 09:00 UTC, 18:00 in Tokyo. From 1.27 on, `spec.timeZone: "Asia/Tokyo"` schedules it in
local time.
"""),
    _p("cron_link_concurrency", "held", "link", "k8s_cronjob_utc", False,
       type="pattern", domain="infra", tags="kubernetes,cronjob",
       title="Set concurrencyPolicy: Forbid on Long CronJobs",
       body="""A CronJob whose run can outlast its interval starts a second copy by default. Set `concurrencyPolicy:
Forbid` and `startingDeadlineSeconds`. (For when it runs at all: [[Kubernetes CronJob Schedules Run in UTC]].)
"""),
    _p("cron_short_quoted", "dev", "short", "k8s_cronjob_utc", False,
       type="fact", domain="infra", tags="kubernetes,cronjob",
       title="CronJob history limits",
       body="""Kubernetes keeps 3 successful and 1 failed Job of a CronJob by default (`successfulJobsHistoryLimit`,
`failedJobsHistoryLimit`).
"""),
    # ================================================================ Japanese: MySQL deadlock
    _p("ja_deadlock_dup", "dev", "dup", "ja_mysql_deadlock", True,
       type="troubleshooting", domain="dev", tags="mysql,deadlock",
       title="夜間バッチが MySQL のデッドロック（1213）で落ちる",
       body="""在庫更新と注文集計の 2 つのバッチが、同じ行を逆順で更新してお互いのロックを待つことがあり、
`Deadlock found when trying to get lock`（1213）で失敗していた。更新の順番を両方とも主キーの昇順にそろえ、
1213 のときはトランザクションを最大 3 回やり直すようにした。
"""),
    _p("ja_deadlock_dup_reordered", "held", "dup", "ja_mysql_deadlock", True,
       type="troubleshooting", domain="dev", tags="mysql,deadlock,batch",
       title="在庫更新バッチと注文集計バッチのデッドロック",
       body="""## 対処
両方のバッチで、行の更新を主キーの昇順に揃える。エラー 1213 のときはトランザクションを 3 回まで再試行する。

## 原因
2 つのバッチが同じ行を逆の順番で更新し、互いのロックを待っていた。

## 症状
夜間バッチがときどき `Deadlock found when trying to get lock` で失敗する。
"""),
    _p("ja_deadlock_link", "dev", "link", "ja_mysql_deadlock", False,
       type="troubleshooting", domain="dev", tags="mysql,lock,batch",
       title="夜間バッチのロック待ちタイムアウト",
       body="""[[MySQL のデッドロックで夜間バッチが失敗する]] とは別件。こちらは `Lock wait timeout exceeded` で、長いトランザクションが
終わるのを 50 秒待って諦めていた。バッチを 1000 行ごとにコミットするようにした。
"""),
    _p("ja_deadlock_topic", "held", "topic", "ja_mysql_deadlock", False,
       type="troubleshooting", domain="dev", tags="mysql,deadlock,gap-lock",
       title="MySQL の INSERT 同士がギャップロックでデッドロックする",
       body="""## 症状
注文の登録 API が同時に来ると、`INSERT` 同士で `Deadlock found when trying to get lock` になる。

## 原因
REPEATABLE READ で `SELECT ... FOR UPDATE` してから `INSERT` しており、存在しない行の範囲に取ったギャップロックが
ぶつかっていた。

## 対処
トランザクション分離レベルを READ COMMITTED にし、一意キーの重複は `INSERT ... ON DUPLICATE KEY UPDATE` で扱う。
"""),
    # ================================================================ Japanese: nginx 413
    _p("ja_413_dup", "held", "dup", "ja_nginx_413", True,
       type="troubleshooting", domain="infra", tags="nginx,upload",
       title="2MB を超える画像のアップロードが nginx の 413 になる",
       body="""2MB より大きいファイルだけアップロードで `413 Request Entity Too Large` が返り、アプリ側にはログが残らない。
nginx の `client_max_body_size` が既定の 1m のままで、アプリに渡る前に nginx が断っていた。`server` ブロックで
`client_max_body_size 20m;` にして `nginx -s reload` した。
"""),
    _p("ja_413_dup_links", "dev", "dup_link", "ja_nginx_413", True,
       type="troubleshooting", domain="infra", tags="nginx,upload,413",
       title="nginx が大きいアップロードを 413 で拒否する",
       body="""## 症状
2MB 超の画像だけ `413 Request Entity Too Large`。アプリのログには出ない。

## 原因
`client_max_body_size` が既定値 1m のまま。nginx がアプリの手前で拒否している。

## 対処
`client_max_body_size 20m;` を `server` ブロックに足して `nginx -s reload`。アップロード先の S3 の署名エラーは
[[S3 Presigned PUT Returns 403 SignatureDoesNotMatch]] を参照。
"""),
    _p("ja_413_cause_alb", "dev", "cause", "ja_nginx_413", False,
       type="troubleshooting", domain="infra", tags="nginx,upload,413,ingress",
       title="client_max_body_size を上げたのに 413 Request Entity Too Large が消えない",
       body="""## 症状
nginx の `client_max_body_size` を 20m にしたのに、Kubernetes 上のステージングでは 2MB 超のアップロードが 413 のまま。

## 原因
手前に ingress-nginx があり、そちらの既定の上限（1m）で止まっていた。アプリの nginx の設定は関係なかった。

## 対処
Ingress に `nginx.ingress.kubernetes.io/proxy-body-size: 20m` のアノテーションを付ける。
"""),
    _p("ja_413_short_link", "held", "link", "ja_nginx_413", False,
       type="fact", domain="infra", tags="nginx,timeout",
       title="nginx の proxy_read_timeout は既定 60 秒",
       body="""アップストリームの応答を待つ時間は `proxy_read_timeout` で既定 60 秒。サイズの上限の話は [[nginx で 413 Request Entity Too Large が出る]]。
"""),
    # ================================================================ Japanese: CI git publickey
    _p("ja_publickey_dup", "dev", "dup", "ja_ci_git_publickey", True,
       type="troubleshooting", domain="ops", tags="git,ssh,ci,submodule",
       title="CI のサブモジュール取得が Permission denied (publickey) になる",
       body="""CI で private なサブモジュールを取ってくるところで `Permission denied (publickey)` が出て止まっていた。
サブモジュールの URL が `git@github.com:` の SSH 形式なのに、CI のコンテナには SSH 鍵がない。サブモジュールの
リポジトリに読み取り専用のデプロイキーを登録し、秘密鍵を CI のシークレットに置いて `ssh-agent` に入れた。
"""),
    _p("ja_publickey_cause_known_hosts", "held", "cause", "ja_ci_git_publickey", False,
       type="troubleshooting", domain="ops", tags="git,ssh,ci",
       title="CI で git clone が Host key verification failed で止まる",
       body="""## 症状
デプロイキーを入れたあとも、CI の `git clone` が `Host key verification failed` で失敗する。

## 原因
コンテナの `~/.ssh/known_hosts` に github.com のホスト鍵がなく、ssh が確認のプロンプトを出せずに終了していた。

## 対処
`ssh-keyscan github.com >> ~/.ssh/known_hosts` ではなく、GitHub が公開しているホスト鍵を known_hosts に書いて固定する。
"""),
    _p("ja_publickey_see", "dev", "see", "ja_ci_git_publickey", False,
       type="pattern", domain="ops", tags="git,ci,submodule",
       title="サブモジュールの URL は HTTPS の相対パスで書く",
       body="""`.gitmodules` のサブモジュールの URL は `../shared-lib.git` のような相対パスにする。親リポジトリと同じ方式（HTTPS か SSH）で
取得されるので、CI ではトークンで取れる。「CI で git clone が Permission denied (publickey) で失敗する」の件も、
これで鍵の準備そのものが要らなくなる。
"""),
    # ================================================================ Japanese: container TZ
    _p("ja_tz_dup", "held", "dup", "ja_container_tz", True,
       type="troubleshooting", domain="dev", tags="python,timezone",
       title="Docker で動かすと datetime.now() が 9 時間ずれる",
       body="""## 症状
コンテナで動かしたときだけ、ログやファイル名の日付が日本時間から 9 時間ずれる。

## 原因
コンテナには `TZ` がなく、`datetime.now()` はシステムの時刻帯の UTC で返している。

## 対処
`datetime.now(ZoneInfo("Asia/Tokyo"))` と時刻帯を指定する。イメージには `tzdata` を入れる。
"""),
    _p("ja_tz_link_db", "dev", "link", "ja_container_tz", False,
       type="troubleshooting", domain="dev", tags="mysql,timezone",
       title="MySQL の DATETIME 列に UTC と日本時間が混ざる",
       body="""アプリが [[コンテナの中で datetime.now() が UTC の時刻になる]] の状態で書いた行と、手元から書いた行とで時刻帯が違っていた。
DATETIME には時刻帯が残らないので、保存は常に UTC と決め、過去の行は作成元のホストで見分けて 9 時間戻した。
"""),
    _p("ja_tz_topic_cron", "held", "topic", "ja_container_tz", False,
       type="troubleshooting", domain="dev", tags="docker,timezone,cron",
       title="コンテナ内の cron が日本時間の指定どおりに動かない",
       body="""## 症状
コンテナ内の crontab に `0 3 * * *` と書いたのに、ジョブが日本時間の昼の 12 時に動く。

## 原因
cron デーモンはコンテナの時刻帯（UTC）で時刻を読む。

## 対処
Dockerfile で `ENV TZ=Asia/Tokyo` を設定し、`tzdata` を入れてから cron を起動する。
"""),
    # ================================================================ Japanese: Elasticsearch read-only
    _p("ja_es_dup", "dev", "dup", "ja_es_read_only", True,
       type="troubleshooting", domain="infra", tags="elasticsearch,disk",
       title="ディスクの flood stage で Elasticsearch のインデックスが書き込み禁止になる",
       body="""書き込みが `cluster_block_exception` の `read-only-allow-delete` で失敗していた。ディスク使用率が flood stage
（既定 95%）を超えたので Elasticsearch がインデックスに `index.blocks.read_only_allow_delete` を付けたのが原因。
古いインデックスを削除して空きを作った。7.4 より前の版では、そのあと設定を null にしてブロックを外す必要がある。
"""),
    _p("ja_es_quoted", "held", "quoted", "ja_es_read_only", False,
       type="runbook", domain="infra", tags="elasticsearch,ilm,disk",
       title="Elasticsearch のログインデックスを ILM で 14 日後に削除する",
       body="""1. `PUT _ilm/policy/logs-14d` で、ロールオーバーは 1 日または 50GB、削除は 14 日後のポリシーを作る。
2. インデックステンプレート `logs-*` にポリシーを付ける。
3. 「Elasticsearch のインデックスが読み取り専用になり書き込めない」が二度と起きないよう、ディスク使用率 80% でアラートを出す。
4. `GET _cat/indices/logs-*?v&s=index` で古いインデックスが消えていくのを確認する。
"""),
    _p("ja_es_short", "dev", "short", "ja_es_read_only", False,
       type="fact", domain="infra", tags="elasticsearch,disk",
       title="Elasticsearch のディスクの low ウォーターマークは 85%",
       body="""low ウォーターマーク（既定 85%）を超えたノードには新しいシャードが割り当てられない。書き込みは止まらない。
"""),
    # ================================================================ Japanese: Node heap
    _p("ja_heap_dup", "held", "dup", "ja_node_heap", True,
       type="troubleshooting", domain="dev", tags="nodejs,memory",
       title="npm run build が JavaScript heap out of memory になる",
       body="""`npm run build` が `Reached heap limit Allocation failed - JavaScript heap out of memory` で落ちていた。
バンドルが大きくなって Node.js の既定のヒープ上限（2GB ほど）を超えたため。`NODE_OPTIONS=--max-old-space-size=4096`
を付けて上限を上げた。
"""),
    _p("ja_heap_dup_links", "dev", "dup_link", "ja_node_heap", True,
       type="troubleshooting", domain="dev", tags="nodejs,memory,build",
       title="Node.js のビルドがヒープ不足で落ちる",
       body="""## 症状
`npm run build` が `JavaScript heap out of memory` で止まる。

## 原因
大きくなったバンドルが、Node.js の既定のヒープ上限（約 2GB）を超えた。

## 対処
`NODE_OPTIONS=--max-old-space-size=4096` でヒープの上限を上げてビルドする。CI の `npm ci` のほうで落ちるときは
[[npm ci Fails: package.json and package-lock.json Are Not in Sync]] を見る。
"""),
    _p("ja_heap_link_jest", "dev", "link", "ja_node_heap", False,
       type="troubleshooting", domain="dev", tags="nodejs,jest,memory",
       title="Jest のテストがメモリを使い切る",
       body="""[[Node.js のビルドが JavaScript heap out of memory で落ちる]] と同じエラーがテストで出たが、原因はヒープの上限ではなかった。
Jest のワーカーがテストファイルごとにモジュールを読み込み直してメモリが増え続けていたので、`--workerIdleMemoryLimit=512MB` を付けた。
"""),
    _p("ja_heap_cause_leak", "held", "cause", "ja_node_heap", False,
       type="troubleshooting", domain="dev", tags="nodejs,memory,server",
       title="本番の Node.js サーバーが数日おきに JavaScript heap out of memory で落ちる",
       body="""## 症状
API サーバーのプロセスが 3 日ほどで `JavaScript heap out of memory` になって再起動する。

## 原因
リクエストごとにイベントリスナーを登録して外していなかった。ヒープスナップショットで `EventEmitter` が増え続けていた。

## 対処
リスナーを `once` で登録し、リクエストの終わりに外す。ヒープの上限を上げても先延ばしになるだけだった。
"""),
    # ================================================================ more links and neighbours, English
    _p("kafka_short_see", "dev", "see", "kafka_consumer_lag", False,
       type="fact", domain="infra", tags="kafka,consumer",
       title="Kafka consumer lag metric",
       body="""The lag of a consumer group is `kafka-consumer-groups --describe --group orders` (column LAG). For why it grows,
see Kafka consumer lag.
"""),
    _p("pg_link_migration", "held", "link", "pg_pool_exhausted", False,
       type="runbook", domain="dev", tags="postgres,pgbouncer,deploy",
       title="Roll Out PgBouncer Without Downtime",
       body="""1. Start PgBouncer beside the app on each host, pointed at the primary.
2. Switch `DATABASE_URL` to `localhost:6432` host by host.
3. Watch `SHOW POOLS;` on PgBouncer: `cl_waiting` should stay at 0.
Background: [[Postgres Connection Pool Exhausted: too many clients already]].
"""),
    _p("redis_dup_links_sessions", "dev", "dup_link", "redis_evicts_sessions", True,
       type="troubleshooting", domain="dev", tags="redis,sessions,eviction",
       title="Session Keys Evicted by Redis When Memory Is Full",
       body="""## Symptoms
Random logouts during the evening peak.

## Cause
`maxmemory-policy allkeys-lru` on the Redis shared with the page cache: when memory fills up, session keys (no
TTL) are evicted together with cache keys.

## Fix
`volatile-lru`, a TTL on every cache key and none on session keys, so only the cache is evicted. Later we gave
sessions a Redis of their own anyway: [[Sessions Get Their Own Redis]].
"""),
    _p("npm_dup_links_heap", "held", "dup_link", "npm_ci_lockfile", True,
       type="troubleshooting", domain="dev", tags="npm,ci,lockfile",
       title="CI Fails at npm ci Because the Lockfile Is Out of Date",
       body="""## Symptoms
`npm ci` on CI: `npm ERR! package.json and package-lock.json are not in sync`.

## Cause
Someone added a dependency straight into `package.json` without updating the lockfile.

## Fix
`npm install` on your machine, commit the new `package-lock.json`; add dependencies with `npm install <pkg>`
only. (If the build after it runs out of memory, see [[Node.js のビルドが JavaScript heap out of memory で落ちる]].)
"""),
    _p("lfs_dup_links", "held", "dup_link", "git_lfs_pointers", True,
       type="troubleshooting", domain="ops", tags="git-lfs,ci,github-actions",
       title="Image Tests Fail on CI: LFS Files Not Fetched",
       body="""## Symptoms
`cannot identify image file` in CI image tests; the checked-out PNGs are 130-byte text files beginning
`version https://git-lfs.github.com/spec/v1`.

## Fix
`actions/checkout` leaves LFS objects out unless asked: `with: lfs: true`. Mind the bandwidth quota
afterwards: [[Git LFS Bandwidth Quota Used Up by CI]].
"""),
    _p("cert_link_short", "held", "link", "certbot_renewal", False,
       type="fact", domain="infra", tags="tls,letsencrypt",
       title="Let's Encrypt certificates last 90 days",
       body="""Let's Encrypt certificates are valid for 90 days; certbot renews them when 30 days are left. How we renew:
[[Renew Let's Encrypt Certificates with the certbot Timer]].
"""),
    _p("oom_quoted_postmortem", "dev", "quoted", "container_exit_137", False,
       type="episode", domain="ops", tags="incident,kubernetes,memory",
       title="Postmortem: API Pods Restarting During the Sale",
       body="""2026-11-11, 20:00-20:40 JST. During the sale the API pods restarted 40 times. The on-call first followed
"Container Exits with Code 137" and raised the memory limit, which did not help: the pods were not OOM-killed
but failed their liveness probe, because the probe hit `/health`, which queried the database, and the database
was saturated. We made `/health` answer without the database and moved the database check to readiness.
"""),
    _p("ja_publickey_link_short", "held", "link", "ja_ci_git_publickey", False,
       type="fact", domain="ops", tags="github,deploy-key",
       title="GitHub のデプロイキーは 1 つのリポジトリにしか登録できない",
       body="""同じ公開鍵を 2 つのリポジトリのデプロイキーには登録できない（key is already in use）。サブモジュールごとに鍵を分ける。
経緯は [[CI で git clone が Permission denied (publickey) で失敗する]]。
"""),
    _p("ja_tz_dup_links", "dev", "dup_link", "ja_container_tz", True,
       type="troubleshooting", domain="dev", tags="python,timezone,docker",
       title="コンテナでは datetime.now() が日本時間にならない",
       body="""## 症状
手元では日本時間なのに、コンテナではログとファイル名の日付が 9 時間ずれる。

## 原因
`TZ` のないコンテナでは、`datetime.now()` がシステムの時刻帯の UTC を返す。

## 対処
`datetime.now(ZoneInfo("Asia/Tokyo"))` と時刻帯を明示し、イメージに `tzdata` を入れる。DB に保存した時刻が
ずれた件は [[MySQL の DATETIME 列に UTC と日本時間が混ざる]]。
"""),
]
