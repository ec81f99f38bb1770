"""The judgements a new card gets (judgements.py), rule by rule, and through `create`, MCP
`store_memory`, `analyze` and `promote --auto` on real vaults."""

from __future__ import annotations

import pytest

from helpers import ok_data, run_cli, run_json, write_card

from external_brain.judging.claims import sentence_conflict
from external_brain.judging.judgements import (
    CardText, another_choice_or_later_attempt, card_similarity, failure_record, is_duplicate, judge, link_relation,
    records_success,
)


# ---------------------------------------------------------------------------- contradictions, sentence by sentence

@pytest.mark.parametrize("first, second, kind", [
    ("Set the Payments API Client Timeout to 60 Seconds", "Set the Payments API Client Timeout to 30 Seconds", "values"),
    ("Retry a failed delivery up to five times with backoff", "Retry Failed Deliveries Three Times with Backoff", "values"),
    ("Pin Node.js 20 in CI", "Pin Node.js 18 in CI", "values"),
    ("アプリのログは CloudWatch Logs に 90 日間保存する", "アプリのログは CloudWatch Logs に 30 日間保存する", "values"),
    ("Use Memcached for Web Session Storage", "Use Redis for Web Session Storage", "choices"),
    ("Disable Compression on the CloudFront Distribution", "Enable Compression on the CloudFront Distribution",
     "opposite"),
    ("本番環境では HTTP keep-alive を無効にする", "本番環境では HTTP keep-alive を有効にする", "opposite"),
    ("Set Gunicorn's keep-alive below the ALB idle timeout of 60 s", "Set the backend keep-alive above the ALB idle "
     "timeout: gunicorn --keep-alive 75", "opposite"),
    ("Do Not Retry Failed Webhook Deliveries", "Retry Failed Webhook Deliveries Three Times with Exponential Backoff",
     "denies"),
    ("リポジトリ層のテストでは本物の DB を使わない", "本物の DB を使う", "denies"),
    ("Web sessions are stored in the primary database, not in Redis",
     "Web sessions are stored in Redis, not in the database", "affirms what the other denies"),
])
def test_a_conflicting_value_choice_opposite_or_denial_is_a_contradiction(first, second, kind):
    reason = sentence_conflict(first, second, {"redis", "memcached"})
    assert reason is not None and kind in reason, reason


@pytest.mark.parametrize("first, second", [
    ("Set the Payments API Server Request Timeout to 60 Seconds", "Set the Payments API Client Timeout to 30 Seconds"),
    ("Python 3.12 ships tomllib but no TOML writer", "Python 3.11 Ships tomllib but No TOML Writer"),  # the subject's number
    ("Use Redis for API Rate Limiting", "Use Redis for Web Session Storage"),
    ("`GET /orgs/acme/hooks` returns 404 Not Found with a fine-grained token",
     "Calling GET /orgs/acme/hooks with a fine-grained token returns 404"),                       # a name, not a denial
    ("Most Flaky Tests Come from Shared State, Not Timing",
     "Flaky Tests Are Usually Caused by Shared State Between Tests, Rarely by Timing"),          # a contrast
    ("Run migrations before the deploy", "Restart the workers after the deploy"),                   # too little shared
    ("ステージング環境では Redis 7 を使う", "ステージング環境では PostgreSQL 14 を使う"),              # two things, both true
])
def test_different_subjects_names_and_contrasts_are_no_contradiction(first, second):
    assert sentence_conflict(first, second, {"redis"}) is None


# ---------------------------------------------------------------------------- duplicates and similarity

def card(title: str, body: str = "", tags=(), **extra) -> CardText:
    return CardText(title, f"# {title}\n\n{body}", list(tags), **extra)


ECS_JA = card("ECS タスクから外部 API への接続がタイムアウトする（SG のエグレス）",
              "ECS タスクから外部の決済 API を呼ぶと、30 秒待ったあと `ConnectTimeout` になる。DNS の名前解決はできている。"
              "タスクに付けたセキュリティグループのアウトバウンドルールで 443 番ポートが許可されていない。SG のエグレスに TCP 443 を"
              "追加する。", ["ecs", "timeout", "security-group"])
ECS_JA_REWORDED = card("ECS で外部 API 呼び出しがタイムアウトする原因は SG のアウトバウンド",
                       "ECS のタスクから外部 API を呼び出すと `ConnectTimeout` で失敗する。名前解決は成功している。セキュリティグループ"
                       "のアウトバウンドで HTTPS (443) が許可されていなかった。エグレスに 443 を追加して解決。", ["ecs", "security-group"])
RDS_JA = card("RDS への接続がタイムアウトする（セキュリティグループ）",
              "アプリから RDS への接続が、しばらく待たされたあと `Connection timed out` で失敗する。RDS のセキュリティグループの"
              "インバウンドに、アプリの SG からの 5432 番ポートの許可がない。", ["rds", "timeout", "security-group"])


def test_a_japanese_rewording_is_a_duplicate_and_a_neighbour_is_not():
    # Japanese grammar bigrams do not count, so a rewording meets its original (plain term
    # cosine put such pairs under 0.8, and every Japanese rewording was missed).
    assert is_duplicate(ECS_JA_REWORDED, ECS_JA, card_similarity(ECS_JA_REWORDED, ECS_JA))
    assert is_duplicate(ECS_JA_REWORDED, RDS_JA, card_similarity(ECS_JA_REWORDED, RDS_JA)) is None


def test_an_exact_copy_or_the_same_title_is_a_duplicate_whatever_the_evidence_section_says():
    body = "## Problem\nThe pool is exhausted.\n\n## Solution\nRaise max_connections.\n\n## Evidence\n"
    first = card("DB pool exhausted", body + "- 2026-11-01: session a [a:1]\n")
    second = card("DB pool exhausted", body + "- 2026-11-20: session b [b:1]\n- 2026-11-21: session c [c:2]\n")
    assert is_duplicate(second, first, card_similarity(second, first)) == "an exact copy"
    other = card("DB Pool Exhausted!", "Something else entirely.")
    assert is_duplicate(other, first, card_similarity(other, first)) == "the same title"


def test_titles_one_slot_apart_name_two_things_not_one():
    ci = card("Pin Node.js 18 in CI", "## Decision\nCI uses node-version 18, the same major version as production.")
    docker = card("Pin Node.js 18 in the Docker Base Image",
                  "## Decision\nThe Dockerfile uses node 18, the same major version as production.")
    assert card_similarity(docker, ci) >= 0.6          # alike in words ...
    assert is_duplicate(docker, ci, card_similarity(docker, ci)) is None   # ... about two things


# ---------------------------------------------------------------------------- success after failure

@pytest.mark.parametrize("extra, expected", [
    (dict(type="failure"), "type: failure"),
    (dict(memory_type="failure"), "memory_type: failure"),
    (dict(status="unresolved"), "status: unresolved"),
    (dict(status="未解決"), "status: 未解決"),
    (dict(last_feedback="rejected"), "feedback: rejected"),
    (dict(status="in-progress", last_feedback="used"), None),
])
def test_a_failure_is_recorded_by_type_memory_type_status_or_rejected_feedback_and_named(extra, expected):
    assert failure_record(card("Celery beat runs tasks twice", "Tried max_interval; no luck.", **extra)) == expected


def test_a_success_records_a_fix_and_a_still_failing_attempt_does_not():
    assert records_success(card("Fixed it", "x", memory_type="success"))
    assert records_success(card("Beat runs twice", "## Fix\nRun one beat with a Redis lock."))
    assert records_success(card("Terraform の state lock", "force-unlock で解除できた。"))
    assert not records_success(card("Drops persist", "Raised the idle timeout to 300 s. Still disconnects. Not fixed."))
    assert not records_success(card("Beat runs twice", "## Fix\nA lock.", memory_type="failure"))


FAILED_BEAT = card("Celery Beat Schedules Every Task Twice After a Deploy",
                   "After each deploy every periodic task runs twice. Both containers run celery beat during the rolling "
                   "update. Tried: lower max_interval. Did not help.", ["celery", "beat"], memory_type="failure")
FIXED_BEAT = card("Celery Beat No Longer Runs Tasks Twice: One Beat Instance with a Redis Lock",
                  "Periodic tasks ran twice after deploys because old and new containers both ran celery beat during "
                  "the rolling update. Fixed with celery-redbeat's lock.", ["celery", "beat"], memory_type="success")
FIXED_WORKER = card("Celery Worker Memory Leak Contained with --max-tasks-per-child",
                    "Worker memory kept growing per task; --max-tasks-per-child 100 recycles children. Fixed.",
                    ["celery", "memory"], memory_type="success")


def test_judge_names_the_failure_a_success_fixes_and_not_an_unrelated_failure():
    entry = {"path": "Playbooks/beat.md", "id": "b", "title": FAILED_BEAT.title}
    out = judge(FIXED_BEAT, [(entry, FAILED_BEAT, None)])
    assert [(i["path"], i["failure"]) for i in out["success_after_failure"]] == [("Playbooks/beat.md",
                                                                                  "memory_type: failure")]
    # A fix differs from the attempt that failed: that is no contradiction, and no duplicate.
    assert out["contradictions"] == [] and out["potential_duplicates"] == []
    assert judge(FIXED_WORKER, [(entry, FAILED_BEAT, None)])["success_after_failure"] == []


# ---------------------------------------------------------------------------- typed links

def test_links_are_typed_when_the_text_says_so_and_left_out_when_evidence_is_thin():
    rotation = card("Rotate the RDS Master Password with Secrets Manager",
                    "1. Rotate the secret prod/rds/master.\n2. Check the app connects.", type="runbook")
    app = card("Rotate the App's Database Credentials",
               "Requires the RDS master password rotation (Rotate the RDS Master Password with Secrets Manager) to have "
               "run first.\n1. Run scripts/rotate_app_user.sh.", type="runbook")
    assert link_relation(app, rotation, card_similarity(app, rotation))[0] == "depends_on"
    budgets = card("Timeout Budgets Shrink Inward", "Each layer's timeout is shorter than its caller's: load balancer > "
                   "app server > HTTP client > database.", type="pattern")
    orders = card("Timeout Budget for the Orders Service", "Applies the timeout budgets shrink inward rule: ALB 60 s, "
                  "app server 55 s, HTTP client 20 s, database 10 s.", type="runbook")
    assert link_relation(orders, budgets, card_similarity(orders, budgets))[0] == "extends"
    unrelated = card("Feature Flags Need an Owner", "Every flag gets an owner and an expiry date.", type="pattern")
    assert link_relation(unrelated, budgets, card_similarity(unrelated, budgets)) is None


# ---------------------------------------------------------------------------- through the real doors

def create(title: str, body: str, card_type: str = "decision", tags: str = "x", *extra: str) -> dict:
    return ok_data("create", "--type", card_type, "--domain", "dev", "--tags", tags, "--title", title, "--body", body,
                   *extra)


def test_create_reports_a_contradiction_with_a_contradicts_link_not_a_duplicate(vault):
    old = create("Set the Payments API Client Timeout to 30 Seconds",
                 "The payments API client times out requests after 30 seconds.", "decision", "payments,timeout")
    data = create("Set the Payments API Client Timeout to 60 Seconds",
                  "The payments API client times out requests after 60 seconds.", "decision", "payments,timeout")
    insights = data["insights"]
    assert [c["id"] for c in insights["contradictions"]] == [old["id"]]
    assert "values differ: 60 Seconds vs 30 Seconds" in insights["contradictions"][0]["reason"]
    assert insights["potential_duplicates"] == []
    assert [(link["id"], link["rel"]) for link in insights["suggested_links"]] == [(old["id"], "contradicts")]
    code, out, _ = run_cli("create", "--type", "decision", "--domain", "dev", "--tags", "payments",
                           "--title", "Set the Payments API Client Timeout to 90 Seconds", "--body", "90 s.")
    assert code == 0 and "may contradict: Set the Payments API Client Timeout" in out and "values differ" in out


def test_create_with_an_identical_title_reports_a_duplicate_not_a_related_card(vault):
    first = create("Push an Image to ECR", "1. docker login\n2. docker push 123.dkr.ecr.aws/app:sha", "runbook")
    data = create("Push an Image to ECR", "Log in with aws ecr get-login-password, then docker push.", "runbook")
    assert [(d["id"], d["reason"]) for d in data["insights"]["potential_duplicates"]] == [(first["id"], "the same title")]
    assert data["insights"]["suggested_links"] == []
    code, envelope, _ = run_json("create", "--type", "runbook", "--domain", "dev", "--title", "Push an Image to ECR",
                                 "--body", "again", "--no-duplicates")
    refused = envelope["data"]
    assert code == 3 and envelope["ok"] is True and refused["created"] is False and refused["skipped_reason"].startswith(
        "near duplicate of Playbooks/Runbook_Push_an_Image_to_ECR") and "(the same title)" in refused["skipped_reason"]


def test_store_memory_success_names_the_failure_it_fixes_by_its_source(vault):
    from external_brain.doors.mcp import call_tool

    failed = ok_data("create", "--type", "troubleshooting", "--domain", "ops", "--tags", "celery,beat",
                     "--title", FAILED_BEAT.title, "--body", FAILED_BEAT.body)
    ok_data("update", failed["id"], "--status", "unresolved")
    unrelated = ok_data("create", "--type", "troubleshooting", "--domain", "ops", "--tags", "celery,memory",
                        "--title", "Celery Worker Memory Grows Until the OOM Kill",
                        "--body", "Workers are OOM-killed. Tried bigger containers: did not help.")
    ok_data("record", unrelated["id"], "rejected", "did not work")
    result = call_tool(vault, {"name": "store_memory", "arguments": {
        "content": FIXED_BEAT.body, "title": FIXED_BEAT.title, "context_name": "ops", "tags": ["celery", "beat"],
        "memory_type": "success", "domain": "ops"}})["structuredContent"]
    found = result["create_insights"]["success_after_failure"]   # (the compatible `insights` is its own list, docs/compatibility.md)
    assert [(f["id"], f["failure"]) for f in found] == [(failed["id"], "status: unresolved")]


def test_analyze_reports_judged_contradictions_and_japanese_rewordings(vault):
    first = create("ステージング環境では PostgreSQL 14 を使う", "ステージングの RDS は PostgreSQL 14 で作る。", "decision",
                   "postgresql,staging")
    second = create("ステージング環境では PostgreSQL 16 を使う", "ステージングの RDS は PostgreSQL 16 で作る。", "decision",
                    "postgresql,staging")
    third = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ecs,timeout,security-group",
                    "--title", ECS_JA.title, "--body", ECS_JA.body)
    write_card(vault, "Playbooks/ECS_reworded.md", f"---\nid: 11111111-2222-4333-8444-555555555555\ntitle: "
               f"{ECS_JA_REWORDED.title}\ntype: troubleshooting\ndomain: infra\ntags: [ecs, security-group]\n---\n"
               f"{ECS_JA_REWORDED.body}\n")
    issues = {i["type"]: i for i in ok_data("analyze")["issues"]}
    assert issues["contradictions"]["pairs"] == [[first["id"], second["id"]]]
    assert "values differ" in issues["contradictions"]["reasons"][0]
    assert [sorted(p["ids"]) for p in issues["near_duplicates"]["pairs"]] == [
        sorted([third["id"], "11111111-2222-4333-8444-555555555555"])]


def test_promote_auto_refuses_an_exact_duplicate_whose_evidence_differs(vault):
    args = ("--title", "pytest: ModuleNotFoundError: No module named httpx", "--type", "troubleshooting",
            "--domain", "dev", "--tags", "pytest", "--problem", "`python -m pytest` failed: No module named 'httpx'",
            "--solution", "Changes before it passed: ran `pip install httpx==0.27.2`.")
    for n in range(3):
        ok_data("learn", *args, "--evidence", f"transcript 0f{n}e-session.jsonl lines {n}-{n + 5} [0f{n}e-a1b2:{n:04x}]")
    first = ok_data("promote", "--auto")
    assert [c["promoted_to"] for c in first["candidates"]] == [
        "Playbooks/Troubleshooting_pytest_ModuleNotFoundError_No_module_named_httpx.md"]
    for n in range(3, 6):   # the same lesson again, other sessions: only the Evidence lines differ
        ok_data("learn", *args, "--evidence", f"transcript 9c{n}d-other.jsonl lines {n * 7}-{n * 9} [9c{n}d-ffee:{n:04x}]")
    # The promoted candidate stays in the Inbox as the record of its promotion (inbox.promote):
    # the same lesson again adds to that record, and nothing is proposed or promoted twice.
    second = ok_data("promote", "--auto")["candidates"]
    assert second == []
    inbox = sorted((vault / "Inbox").glob("Learned_*.md"))
    assert len(inbox) == 1
    record = inbox[0].read_text(encoding="utf-8")
    assert "status: promoted" in record and "9c5d-other.jsonl" in record
    assert len([p for p in (vault / "Playbooks").glob("*.md") if "No module named httpx" in p.read_text(encoding="utf-8")]) == 1


# ---------------------------------------------------------------------------- narrower subjects, wrapped sentences, numerals

def test_a_title_with_a_qualifier_the_other_card_never_mentions_is_no_duplicate():
    sync = card("Gunicorn Uses the Sync Worker Class",
                "## Decision\nThe API runs Gunicorn with `--worker-class sync` and 2 x CPU + 1 workers.")
    admin = card("The Admin App's Gunicorn Uses the Sync Worker Class",
                 "## Decision\nThe internal admin app also runs Gunicorn with `--worker-class sync`, with 2 workers.")
    assert card_similarity(admin, sync) >= 0.6          # alike in words ...
    assert is_duplicate(admin, sync, card_similarity(admin, sync)) is None   # ... about a narrower thing
    # a qualifier the older card mentions, or a preposition, is a rewording
    api = card("The API's Gunicorn Uses the Sync Worker Class", "## Decision\nThe API runs Gunicorn with sync workers.")
    assert is_duplicate(api, sync, card_similarity(api, sync))
    again = card("Gunicorn Uses the Sync Worker Class Again", "## Decision\nThe API runs Gunicorn with sync workers.")
    assert is_duplicate(again, sync, card_similarity(again, sync))   # a trailing adverb qualifies nothing
    via = card("RDS Master Password Rotation via Secrets Manager", "Rotate the RDS master password in Secrets Manager.")
    with_ = card("RDS Master Password Rotation Secrets Manager", "Rotate the RDS master password in Secrets Manager.")
    assert is_duplicate(via, with_, card_similarity(via, with_))


def test_a_sentence_wrapped_over_two_lines_is_one_claim(vault):
    old = create("Run Database Migrations Before Deploying the New App Version",
                 "## Decision\nThe deploy pipeline runs `alembic upgrade head` as a one-off task before the new app\n"
                 "version starts.", "decision", "migrations,deploy")
    data = create("Run Migrations When the App Container Starts, Not Before the Deploy",
                  "## Decision\nEach app container runs `alembic upgrade head` when it starts. Migrations are not run as "
                  "a separate step before\nthe new app version is deployed.", "decision", "migrations,deploy")
    assert [c["id"] for c in data["insights"]["contradictions"]] == [old["id"]]
    assert data["insights"]["potential_duplicates"] == []


def test_japanese_multiplied_numbers_are_values_that_differ():
    reason = sentence_conflict("開発チームのクラウド予算は毎月8万5千円です", "開発チームのクラウド予算は毎月8万円です")
    assert reason is not None and "values differ" in reason, reason


def test_near_duplicates_whose_titles_conflict_are_contradictions(vault):
    old = create("NAT Gateway Drops Idle TCP Connections After 350 Seconds",
                 "An AWS NAT gateway times out a connection after 350 seconds of inactivity; the value cannot be\n"
                 "changed. Use TCP keepalive under 350 s on connections that may sit idle.", "fact", "nat-gateway,tcp")
    data = create("NAT Gateway Closes Idle TCP Connections After 120 Seconds",
                  "The AWS NAT gateway drops a TCP connection that has been idle for 120 seconds.", "fact",
                  "nat-gateway,timeout")
    assert [c["id"] for c in data["insights"]["contradictions"]] == [old["id"]]
    assert "values differ: 120 vs 350" in data["insights"]["contradictions"][0]["reason"]
    assert data["insights"]["potential_duplicates"] == []


@pytest.mark.parametrize("first, second, expected", [
    (card("CI Uses Node.js 22", "setup-node installs node-version 22."),
     card("Pin Node.js 18 in CI", "CI uses setup-node with node-version 18."), "values differ: 22 vs 18"),
    (card("Do Not Compress at CloudFront; the Origin Serves Pre-Compressed Bundles", "Compression stays off."),
     card("Enable Compression on the CloudFront Distribution", "Turn on compression."), "one denies"),
    # another thing named (a batch job's logs, not the app's): two subjects, no conflict
    (card("バッチジョブのログは CloudWatch Logs に 7 日間保存する", "夜間バッチのロググループは 7 日。"),
     card("アプリのログは CloudWatch Logs に 30 日間保存する", "アプリのロググループは 30 日。"), None),
    # "504s" is a plural, not 504 seconds
    (card("ALB Returns 504 Because the App's Keep-Alive Is Shorter Than 60 s", "Keep-alive 2 s."),
     card("ALB 504s from Backend Keep-Alive Shorter Than the Idle Timeout", "Keep-alive 2 s."), None),
])
def test_title_conflicts(first, second, expected):
    from external_brain.judging.claims import title_conflict

    reason = title_conflict(first, second)
    assert (reason is None) if expected is None else (reason is not None and expected in reason), reason


# ---------------------------------------------------------------------------- fourth pass: opposites, qualifiers, clauses

@pytest.mark.parametrize("first, second", [
    ("Turn Off Gzip in the Nginx Server Block", "Turn on gzip in the nginx server block for text responses"),
    ("Retention jobs should run longer than the backup window", "Retention jobs should run shorter than the backup window"),
    ("Connection Pools Grow With Load", "Connection pools shrink with load"),
    ("Allow SSH from the bastion subnet", "Deny SSH from the bastion subnet"),
    ("Warm the cache before the traffic switch", "Warm the cache after the traffic switch"),
    ("ワーカーのメモリ上限を上げる", "ワーカーのメモリ上限を下げる"),
])
def test_opposite_poles_of_one_frame_are_a_contradiction(first, second):
    reason = sentence_conflict(first, second)
    assert reason is not None and "opposite" in reason, reason


@pytest.mark.parametrize("first, second", [
    ("Turn off gzip in the Nginx server block", "Turn on request logging for the admin API"),   # other frames
    ("Allow SSH from the bastion subnet", "Block outbound SMTP from the app subnet"),
    ("Celery Beat Schedules Every Task Twice After a Deploy", "Celery Beat Schedules Every Task Twice After a Deploy"),
])
def test_poles_on_other_frames_or_on_the_same_side_are_no_contradiction(first, second):
    reason = sentence_conflict(first, second)
    assert reason is None or "opposite" not in reason, reason


def test_a_differing_leading_qualifier_is_neither_a_duplicate_nor_a_contradiction():
    from external_brain.judging.judgements import different_qualifier

    app = card("アプリのログは CloudWatch Logs に 30 日間保存する", "## 決定\nアプリのロググループの保持期間は 30 日にする。",
               ("logs",))
    batch = card("集計バッチのログは CloudWatch Logs に 7 日間保存する",
                 "## 決定\n集計バッチのロググループの保持期間は 7 日にする。アプリのログとは別に管理する。", ("logs",))
    assert different_qualifier(batch, app)
    out = judge(batch, [({"path": "app.md"}, app, None)])
    assert out["potential_duplicates"] == [] and out["contradictions"] == []
    # the same head with the same qualifier, or a choice after "Use", is no other subject
    app_7 = card("アプリのログの保持期間は 7 日にする", "## 決定\nアプリのロググループは 7 日で消す。", ("logs",))
    assert not different_qualifier(app_7, app)
    redis = card("Use Redis for Web Session Storage", "Sessions are stored in Redis.")
    memcached = card("Use Memcached for Web Session Storage", "Sessions are stored in Memcached.")
    assert not different_qualifier(memcached, redis)


def test_create_keeps_another_clients_timeout_apart_through_the_cli(vault):
    payments = create("Set the Payments API Client Timeout to 30 Seconds",
                      "## Decision\nThe payments API client times out requests after 30 seconds.", "decision",
                      "payments,timeout")
    billing = create("Set the Billing API Client Timeout to 20 Seconds",
                     "## Decision\nThe billing API client times out requests after 20 seconds.", "decision",
                     "billing,timeout")
    assert billing["insights"]["potential_duplicates"] == [] and billing["insights"]["contradictions"] == []
    off = create("Turn Off Compression on the Payments API Client",
                 "## Decision\nCompression is turned off on the payments API client.", "decision", "payments")
    on = create("Turn On Compression on the Payments API Client",
                "## Decision\nCompression is turned on on the payments API client.", "decision", "payments")
    assert [c["id"] for c in on["insights"]["contradictions"]] == [off["id"]]
    assert on["insights"]["potential_duplicates"] == []
    assert payments["id"] not in [c["id"] for c in on["insights"]["contradictions"]]


def test_a_japanese_clause_ending_in_a_connective_is_no_claim_alone():
    old = card("Parameter Store の値を更新しても Lambda に反映されない",
               "## 原因\nLambda は起動時に値を読み込む。", ("lambda",))
    new = card("パラメータを更新したのに Lambda が古い値のまま",
               "Parameter Store の値を更新しても、起動中の Lambda は古い値を使い続ける。", ("lambda",))
    from external_brain.judging.judgements import contradiction

    assert contradiction(new, old, card_similarity(new, old)) is None


@pytest.mark.parametrize("first, second", [
    ("Check table names against an allow-list", "Table names cannot be bound: check table names against an allow-list"),
    ("The proxy closes a connection after 90 s without traffic, and this cannot be changed",
     "The Proxy Closes Idle Connections After 90 Seconds"),                        # the denial governs another verb
])
def test_a_pole_in_a_compound_or_outside_a_denial_is_not_flipped(first, second):
    reason = sentence_conflict(first, second)
    assert reason is None or "opposite" not in reason, reason


def test_a_fault_and_its_reversal_in_troubleshooting_cards_are_no_opposites():
    from external_brain.judging.judgements import contradiction

    fault = card("Nginx 502s from an Upstream Keep-Alive Shorter Than the Proxy Timeout",
                 "## Cause\nThe upstream keep-alive is shorter than the proxy timeout.", ("nginx",),
                 type="troubleshooting")
    fix = card("Nginx 502s: Raise the Upstream Keep-Alive Above the Proxy Timeout",
               "## Fix\nThe proxy timeout is 60 s; raise the upstream keep-alive: `keepalive_timeout 75s;`.",
               ("nginx",),
               type="troubleshooting")
    assert contradiction(fix, fault, card_similarity(fix, fault)) is None
    # the same sentences as two decisions do conflict
    shorter = card("Keep the Upstream Keep-Alive Shorter Than the Proxy Timeout",
                   "## Decision\nThe upstream keep-alive is shorter than the proxy timeout.", ("nginx",), type="decision")
    longer = card("Keep the Upstream Keep-Alive Longer Than the Proxy Timeout",
                  "## Decision\nThe upstream keep-alive is longer than the proxy timeout.", ("nginx",), type="decision")
    assert contradiction(longer, shorter, card_similarity(longer, shorter))


# ---------------------------------------------------------------------------- another choice, a later attempt

SYNC = card("Gunicorn Uses the Sync Worker Class",
            "## Decision\nThe API runs Gunicorn with `--worker-class sync` and 2 x CPU + 1 workers.\n\n## Why\n"
            "The endpoints are CPU-light but call no slow upstreams; sync workers are the simplest to reason about.",
            ["gunicorn", "python", "workers"], type="decision")
GEVENT = card("Run Gunicorn with the gevent Worker Class",
              "## Decision\nThe API's Gunicorn uses `--worker-class gevent`; most endpoints wait on upstream calls.",
              ["gunicorn", "workers"], type="decision")
EXPO = card("Expo SDK 51 Upgrade Broke the iOS Build",
            "After upgrading to Expo SDK 51, `eas build --platform ios` fails: `pod install` cannot find a compatible "
            "`ExpoModulesCore`. Tried clearing the build cache; still failing.", ["expo", "ios"],
            type="troubleshooting", status="failed")
EXPO_STILL = card("Expo SDK 51 iOS Build Still Fails After Clearing the Pods Cache",
                  "Cleared `~/Library/Caches/CocoaPods` and reran `eas build --platform ios`: `pod install` still "
                  "cannot find a compatible `ExpoModulesCore`.", ["expo", "ios"], type="troubleshooting",
                  memory_type="failure")


def test_another_choice_for_the_same_slot_is_no_duplicate():
    # blind5 b5c3: the titles do not align as one sentence, but each names a worker class the
    # other card never mentions, at the same place in the frame (gevent / sync).
    assert card_similarity(GEVENT, SYNC) >= 0.6
    assert another_choice_or_later_attempt(GEVENT, SYNC) == "another choice for the same slot (gevent / Sync)"
    assert is_duplicate(GEVENT, SYNC, card_similarity(GEVENT, SYNC)) is None
    # A rewording that names the same class stays a duplicate.
    reworded = card("The API's Gunicorn Runs Sync Workers",
                    "## Decision\nGunicorn runs with `--worker-class sync`, 2 x CPU + 1 workers: the endpoints call no "
                    "slow upstreams and sync workers are the simplest to reason about.", ["gunicorn", "workers"],
                    type="decision")
    assert another_choice_or_later_attempt(reworded, SYNC) is None


def test_a_later_attempt_at_a_recorded_problem_is_no_duplicate():
    assert another_choice_or_later_attempt(EXPO_STILL, EXPO) == "a later attempt at the same problem"
    assert is_duplicate(EXPO_STILL, EXPO, 0.9) is None
    ja_old = card("Terraform の state lock が解除できない", "`terraform plan` が `Error acquiring the state lock` で止まる。",
                  ["terraform"], type="troubleshooting", status="失敗")
    ja_again = card("terraform force-unlock を試しても state lock がまだ解除できない",
                    "`terraform force-unlock` を実行したが `plan` はまだ `Error acquiring the state lock` で止まる。",
                    ["terraform"], type="troubleshooting", memory_type="failure")
    assert another_choice_or_later_attempt(ja_again, ja_old) == "a later attempt at the same problem"
    # "again" in a pattern is no follow-up of a problem: a reworded pattern stays a duplicate.
    retries = card("Retry Failed Webhook Deliveries Three Times with Exponential Backoff",
                   "Retry a 5xx or timed-out delivery up to 3 times with exponential backoff and jitter.",
                   ["webhooks"], type="pattern")
    again = card("Webhook Deliveries: Try Again Three Times with Exponential Backoff",
                 "A 5xx or timed-out delivery is tried again up to 3 times with exponential backoff and jitter.",
                 ["webhooks"], type="pattern")
    assert another_choice_or_later_attempt(again, retries) is None


def test_create_links_a_later_failure_and_another_choice_instead_of_refusing_them(vault):
    first = create(EXPO.title, EXPO.body.split("\n\n", 1)[1], "troubleshooting", "expo,ios")
    still = create(EXPO_STILL.title, EXPO_STILL.body.split("\n\n", 1)[1], "troubleshooting", "expo,ios",
                   "--no-duplicates")
    assert still["created"] is True and still["insights"]["potential_duplicates"] == []
    assert [link["id"] for link in still["insights"]["suggested_links"]] == [first["id"]]
    sync = create(SYNC.title, SYNC.body.split("\n\n", 1)[1], "decision", "gunicorn,python,workers")
    gevent = create(GEVENT.title, GEVENT.body.split("\n\n", 1)[1], "decision", "gunicorn,workers", "--no-duplicates")
    assert gevent["created"] is True and gevent["insights"]["potential_duplicates"] == []
    assert sync["id"] in [link["id"] for link in gevent["insights"]["suggested_links"]]


# ---------------------------------------------------------------------------- a prohibition reworded, another system

@pytest.mark.parametrize("first, second", [
    ("Always avoid formatting user input into SQL strings", "Never format user input into SQL strings"),
    ("Avoid building SQL by string formatting with user input", "Never build SQL by string formatting with user input"),
    ("Refrain from retrying failed webhook deliveries", "Do not retry failed webhook deliveries"),
    ("ユーザー入力を SQL に埋め込むのは避ける", "ユーザー入力を SQL に埋め込まない"),
])
def test_two_prohibitions_of_the_same_thing_agree(first, second):
    # "avoid" / "refrain from" / 避ける deny what they govern, as "never" / "do not" / ない do.
    assert sentence_conflict(first, second) is None


@pytest.mark.parametrize("first, second", [
    ("Avoid retrying failed webhook deliveries", "Retry failed webhook deliveries three times"),
    ("ユーザー入力を SQL に埋め込むのは避ける", "ユーザー入力を SQL に埋め込む"),
])
def test_a_prohibition_denies_what_the_other_says(first, second):
    reason = sentence_conflict(first, second)
    assert reason is not None and "denies" in reason, reason


@pytest.mark.parametrize("first, second", [
    ("Check table names against an allow-list", "Table names cannot be bound: check table names against an allow-list"),
    ("Table and column names cannot be bound, so check those against an allow-list",
     "Check table and column names against an allow-list"),
])
def test_a_denial_governs_only_its_own_clause(first, second):
    # blind6 b6d1: "cannot be parameters: check them against an allow-list" denies the first clause only.
    assert sentence_conflict(first, second) is None
    reason = sentence_conflict("Table and column names can be bound as parameters",
                               "Table and column names cannot be bound as parameters: check them against an allow-list")
    assert reason is not None and "denies" in reason, reason


RDS_ROTATION = card("Rotate the RDS Master Password with Secrets Manager",
                    "1. Open the secret `prod/rds/master` in Secrets Manager and choose **Rotate secret immediately**.\n"
                    "2. Wait for the rotation Lambda to finish (CloudWatch log group `/aws/lambda/rds-rotation`).\n"
                    "3. Check the app still connects: `psql \"$DATABASE_URL\" -c 'select 1'`.",
                    ["rds", "secrets-manager", "rotation"], type="runbook")
DOCDB_ROTATION = card("Rotate the DocumentDB Master Password with Secrets Manager",
                      "1. Open the secret `prod/docdb/master` in Secrets Manager and choose **Rotate secret "
                      "immediately**.\n2. Wait for the rotation Lambda to finish (CloudWatch log group "
                      "`/aws/lambda/docdb-rotation`).\n3. Check the app still connects: `mongosh \"$DOCDB_URL\" --eval "
                      "'db.runCommand({ping: 1})'`.", ["documentdb", "secrets-manager", "rotation"], type="runbook")


def test_the_same_procedure_for_another_system_is_no_contradiction():
    from external_brain.judging.judgements import about_another_system, contradiction

    # blind6 b6n10: the titles name two systems (DocumentDB / RDS), each card silent on the other's.
    assert about_another_system(DOCDB_ROTATION, RDS_ROTATION) == "DocumentDB"
    assert contradiction(DOCDB_ROTATION, RDS_ROTATION, card_similarity(DOCDB_ROTATION, RDS_ROTATION)) is None
    logs = card("アプリのログは CloudWatch Logs に 30 日間保存する", "## 決定\nアプリのロググループの保持期間は 30 日にする。",
                ["logs"], type="decision")
    gateway = card("ゲートウェイのログは CloudWatch Logs に 7 日間保存する", "## 決定\nロググループの保持期間は 7 日にする。",
                   ["logs"], type="decision")
    assert about_another_system(gateway, logs) == "ゲートウェイ"
    # A name that is the choice itself (what is used, not whose thing it is) stays a choice.
    redis = card("Use Redis for Web Session Storage", "## Decision\nWeb sessions are stored in Redis.", ["sessions"],
                 type="decision")
    dynamo = card("Use DynamoDB for Web Session Storage", "## Decision\nWeb sessions are stored in DynamoDB.",
                  ["sessions"], type="decision")
    assert about_another_system(dynamo, redis) is None
    assert contradiction(dynamo, redis, card_similarity(dynamo, redis))


def test_create_flags_neither_another_systems_runbook_nor_a_reworded_prohibition_through_the_cli(vault):
    rds = create(RDS_ROTATION.title, RDS_ROTATION.body.split("\n\n", 1)[1], "runbook", "rds,secrets-manager,rotation")
    docdb = create(DOCDB_ROTATION.title, DOCDB_ROTATION.body.split("\n\n", 1)[1], "runbook",
                   "documentdb,secrets-manager,rotation")
    assert docdb["insights"]["contradictions"] == [] and docdb["insights"]["potential_duplicates"] == []
    assert rds["id"] in [link["id"] for link in docdb["insights"]["suggested_links"]]
    sql = create("Prevent SQL Injection with Parameterized Queries",
                 "Never build SQL by string formatting with user input. Pass values as parameters and let the driver "
                 "quote them: `cur.execute(\"SELECT * FROM users WHERE email = %s\", (email,))`. Identifiers (table or "
                 "column names) cannot be parameters: check them against an allow-list.", "pattern",
                 "sql-injection,database")
    reworded = create("Never Format User Input into SQL: Use Query Parameters",
                      "Bind values as query parameters (`cur.execute(\"... WHERE email = %s\", (email,))`); the driver "
                      "quotes them. Table and column names cannot be bound, so check those against an allow-list.",
                      "pattern", "sql,security")
    assert reworded["insights"]["contradictions"] == []
    assert [d["id"] for d in reworded["insights"]["potential_duplicates"]] == [sql["id"]]


def test_the_kept_tokenisations_and_alignments_are_new_lists_for_each_caller():
    """`claims.sentence_tokens` and `claims.word_diff` are kept per process by their arguments:
    a caller that changes the lists it got changes nothing another caller gets."""
    from external_brain.judging.claims import sentence_tokens, word_diff

    folded, written = sentence_tokens("Set the worker timeout to 30 seconds")
    expected = (list(folded), list(written))
    folded.append("changed"), written.clear()
    assert sentence_tokens("Set the worker timeout to 30 seconds") == expected
    a, b = expected[0], sentence_tokens("Set the worker timeout to 60 seconds")[0]
    shared, spans = word_diff(a, b)
    assert spans == [([5], [5])] and shared > 0
    spans[0][0].append(99), spans.append(([], []))
    assert word_diff(a, b) == (shared, [([5], [5])])



def test_a_cards_kept_names_and_content_tokens_are_the_same_whatever_a_caller_does_with_them():
    """`claims.names_in_card` and `judgements.content_tokens` are kept per process by the card's
    text (h22-create5): a caller that changes the set it got changes nothing another caller
    gets, and an edited card is analysed afresh."""
    from external_brain.judging.claims import is_name_like, names_in_card
    from external_brain.judging.judgements import CardText, content_tokens

    redis = CardText("Use Redis for sessions", "Run `redis-server --port 6380` behind the `HAProxy` check.", ["cache"])
    names = names_in_card(redis)
    assert names == {"redis-server", "port", "haproxy", "cache"}
    names.add("changed"), names.discard("cache")
    assert names_in_card(redis) == {"redis-server", "port", "haproxy", "cache"}
    edited = CardText(redis.title, redis.body.replace("HAProxy", "Envoy"), ["cache"])
    assert names_in_card(edited) == {"redis-server", "port", "envoy", "cache"}
    tokens = content_tokens(redis)
    assert isinstance(tokens, frozenset) and {"redi", "session", "haproxi"} <= tokens
    assert "envoy" in content_tokens(edited) and "envoy" not in content_tokens(redis)
    # The shape of a word is kept per word; whether it is one of the cards' names is asked each time.
    assert is_name_like("gthread", {"gthread"}) and not is_name_like("gthread", set())
    assert is_name_like("PostgreSQL", set()) and is_name_like("v2.1", set()) and not is_name_like("worker", set())


# ---------------------------------------------------------------------------- fifth pass (h20-judge5)

def test_a_title_that_says_x_not_y_contradicts_a_title_that_affirms_y():
    from external_brain.judging.claims import title_conflict

    # blind7 b7c5: "..., Not as Markdown Files" against a card whose title keeps them as Markdown files.
    files = card("Keep Runbooks as Markdown Files in the Repository",
                 "## Decision\nRunbooks are Markdown files in the ops repository, reviewed in pull requests.",
                 ["runbooks", "markdown"], type="decision")
    wiki = card("Keep Runbooks as Pages in Confluence, Not as Markdown Files",
                "## Decision\nRunbooks are Confluence pages in the Ops space; no Markdown files in the repository.",
                ["runbooks", "confluence"], type="decision")
    assert title_conflict(wiki, files)
    assert not is_duplicate(wiki, files, card_similarity(wiki, files)) or title_conflict(wiki, files)
    # A contrast whose affirmed part the other title says too is an agreement ("shared state, not timing").
    agree = card("Most Slow Pages Come from N+1 Queries, Not Slow Disks",
                 "Most slow pages we profiled were N+1 queries.", ["performance"], type="insight")
    other = card("Slow Pages Are Mostly Caused by N+1 Queries, Rarely by Slow Disks",
                 "Profiling showed N+1 queries behind most slow pages.", ["performance"], type="insight")
    assert title_conflict(agree, other) is None


def test_the_same_procedure_for_a_system_named_by_a_tag_is_no_contradiction():
    from external_brain.judging.judgements import about_another_system, contradiction

    # blind7 b7n5: "Redshift" is a plain capitalised word, but the card's tag says it is a system;
    # a word may sit between it and the shared noun ("Redshift Admin Password" / "RDS Master Password").
    redshift = card("Rotate the Redshift Admin Password with Secrets Manager",
                    "1. Open the secret `prod/redshift/admin` in Secrets Manager and choose **Rotate secret "
                    "immediately**.\n2. Check the loader still connects: `psql \"$REDSHIFT_URL\" -c 'select 1'`.",
                    ["redshift", "secrets-manager", "rotation"], type="runbook")
    assert about_another_system(redshift, RDS_ROTATION)
    assert contradiction(redshift, RDS_ROTATION, card_similarity(redshift, RDS_ROTATION)) is None


def test_a_title_value_the_other_card_never_states_is_a_new_claim_not_a_duplicate():
    # blind7 b7n10: a follow-up that sets a value (a TTL) for what the other card decided.
    queue = card("Use SQS for the Order Events Queue", "## Decision\nOrder events go through an SQS standard queue.",
                 ["sqs", "orders", "queue"], type="decision")
    retention = card("Order Events in SQS Are Kept for 4 Days",
                     "## Decision\nThe order events SQS queue keeps messages for 4 days.", ["sqs", "orders", "queue"],
                     type="decision")
    assert is_duplicate(retention, queue, 0.7) is None
    # A rewording that repeats a value the other card states stays a duplicate.
    reworded = card("Order Events Go Through an SQS Queue", "## Decision\nWe send order events to an SQS standard queue.",
                    ["sqs", "orders"], type="decision")
    assert is_duplicate(reworded, queue, 0.7)


def test_a_coordinated_clause_and_without_a_noun_deny_nothing_of_the_claim():
    from external_brain.judging.claims import sentence_conflict

    # blind7 b7n3: "..., and there is no setting to change that" and "without traffic" reword the fact.
    assert sentence_conflict("An ALB closes a connection after 60 seconds of inactivity",
                             "ALBs close a connection after 60 seconds without traffic, and there is no way to "
                             "turn that off") is None
    # "without" before a doing still denies it.
    assert sentence_conflict("Deploy the new version after running the migrations",
                             "Deploy the new version without running the migrations")


PG_STAGING_JA = card("検証環境の RDS は MySQL 8.0 を使う", "## 決定\n検証環境の RDS は MySQL 8.0 で作る。", ["mysql", "staging"],
                     type="decision")
RETENTION_JA = card("監査ログは S3 に 90 日間保存する", "## 決定\n監査ログのバケットのライフサイクルは 90 日で削除にする。",
                    ["s3", "audit-logs", "retention"], type="decision")
TLS_JA = card("社内 API では HTTP/2 を有効にする", "## 決定\n社内 API の ALB では HTTP/2 を有効にする。", ["http2", "alb"],
              type="decision")


@pytest.mark.parametrize("new, old", [
    (card("Staging Uses MySQL 8.4", "## Decision\nThe staging RDS runs MySQL 8.4.", ["mysql", "staging"],
          type="decision"), PG_STAGING_JA),
    (card("Keep Audit Logs in S3 for 365 Days", "## Decision\nThe audit log bucket expires objects after 365 days.",
          ["s3", "audit-logs", "retention"], type="decision"), RETENTION_JA),
    (card("Disable HTTP/2 on the Internal API", "## Decision\nThe internal API's ALB serves HTTP/1.1 only.",
          ["http2", "alb"], type="decision"), TLS_JA),
    (card("Web ジョブのキューは SQS ではなく Redis に置く", "## 決定\nジョブのキューは SQS を使わず Redis に置く。",
          ["jobs", "sqs", "redis"], type="decision"),
     card("Use SQS for the Web Job Queue", "## Decision\nWeb jobs are queued in SQS.", ["jobs", "sqs", "queue"],
          type="decision")),
])
def test_a_contradiction_across_languages_is_found_from_names_values_and_poles(new, old):
    from external_brain.judging.judgements import contradiction

    # blind7 b7c11, blind4 b4c5, blind5 b5c9, blind3 b3c6: no words meet across languages, but the
    # tags, the names (MySQL, S3, HTTP/2), the numbers and the poles (有効 / disable) do.
    assert contradiction(new, old, card_similarity(new, old))


def test_another_thing_across_languages_is_no_contradiction():
    from external_brain.judging.judgements import contradiction

    lambda_ja = card("検証環境の Lambda は MySQL 8.4 のクライアントを使う", "## 決定\nLambda のクライアントは MySQL 8.4 にする。",
                     ["lambda", "mysql"], type="decision")
    assert contradiction(lambda_ja, card("Staging Uses MySQL 8.0", "## Decision\nThe staging RDS runs MySQL 8.0.",
                                         ["mysql", "staging"], type="decision"), 0.4) is None
    kept = card("Staging Keeps Nightly RDS Snapshots for 7 Days", "## Decision\nAutomated snapshots are kept 7 days.",
                ["mysql", "staging"], type="decision")
    assert contradiction(kept, PG_STAGING_JA, card_similarity(kept, PG_STAGING_JA)) is None


def test_a_rewording_across_languages_is_a_duplicate_from_its_names_and_code_without_embeddings():
    # blind bd6/bd7, blind3 b3d5: the code, the names and the numbers are the words both languages share.
    ja = card("ECS のタスクに Secrets Manager の新しい値が入らない",
              "## 症状\nSecrets Manager でパスワードを変えたのに、アプリは古い値で DB に繋ごうとする。\n\n## 原因\n"
              "ECS はタスクの起動時にだけシークレットを環境変数として渡す。\n\n## 対処\n"
              "`aws ecs update-service --force-new-deployment` でタスクを入れ替える。",
              ["ecs", "secrets-manager"], type="troubleshooting")
    en = card("Running ECS Tasks Keep the Old Secrets Manager Value",
              "## Symptoms\nAfter a password change in Secrets Manager the app still connects to the DB with the old "
              "one.\n\n## Cause\nECS passes secrets as environment variables only when a task starts.\n\n## Fix\n"
              "Replace the tasks with `aws ecs update-service --force-new-deployment`.", ["ecs", "secrets-manager"],
              type="troubleshooting")
    assert card_similarity(en, ja) < 0.6
    assert is_duplicate(en, ja, card_similarity(en, ja))
    # Another fault of the same service shares the service's names but not the rest.
    other = card("ECS Tasks Cannot Read the Secret: Missing secretsmanager:GetSecretValue",
                 "## Fix\nAdd `secretsmanager:GetSecretValue` to the task execution role.", ["ecs", "secrets-manager"],
                 type="troubleshooting")
    assert not is_duplicate(other, ja, card_similarity(other, ja))


def test_two_decisions_that_choose_different_named_things_after_a_preposition_contradict():
    from external_brain.judging.judgements import contradiction

    # blind5 b5c3 / b5c7: "... with the gevent Worker Class" / "... the Sync Worker Class"; "... in Notion" /
    # "... as Markdown Files": what a shared thing is done with, or kept in, is one choice.
    uwsgi = card("Serve the Admin App with the uWSGI Emperor Mode", "## Decision\nThe admin app runs under uWSGI.",
                 ["admin", "uwsgi"], type="decision")
    single = card("Serve the Admin App with the Single-Process Mode", "## Decision\nThe admin app runs one process.",
                  ["admin"], type="decision")
    assert contradiction(uwsgi, single, card_similarity(uwsgi, single))
    notion = card("Keep the Incident Log in Notion", "## Decision\nIncidents are logged on a Notion page.",
                  ["incidents", "notion"], type="decision")
    sheet = card("Keep the Incident Log as Markdown Files", "## Decision\nIncidents are Markdown files in the ops repo.",
                 ["incidents", "markdown"], type="decision")
    assert contradiction(notion, sheet, card_similarity(notion, sheet))
    # Two things that are each the object of the same instruction coexist ("Pin Python ... in CI" / "Pin Node.js ...").
    python = card("Pin Python 3.12 in CI", "## Decision\nCI uses `actions/setup-python` with 3.12.", ["python", "ci"],
                  type="decision")
    node = card("Pin Node.js 18 in CI", "## Decision\nCI uses `actions/setup-node` with 18.", ["nodejs", "ci"],
                type="decision")
    assert contradiction(python, node, card_similarity(python, node)) is None


def test_create_reports_a_contradiction_and_a_duplicate_across_languages_without_embeddings(vault):
    ja = create("検証環境の RDS は MySQL 8.0 を使う", "## 決定\n検証環境の RDS は MySQL 8.0 で作る。", "decision", "mysql,staging")
    en = create("Staging Uses MySQL 8.4", "## Decision\nThe staging RDS runs MySQL 8.4.", "decision", "mysql,staging")
    assert [c["id"] for c in en["insights"]["contradictions"]] == [ja["id"]]
    assert en["insights"]["potential_duplicates"] == []
    secrets = create("ECS のタスクに Secrets Manager の新しい値が入らない",
                     "## 症状\nSecrets Manager でパスワードを変えたのに、アプリは古い値で DB に繋ごうとする。\n\n## 原因\n"
                     "ECS はタスクの起動時にだけシークレットを環境変数として渡す。\n\n## 対処\n"
                     "`aws ecs update-service --force-new-deployment` でタスクを入れ替える。", "troubleshooting",
                     "ecs,secrets-manager")
    reworded = create("Running ECS Tasks Keep the Old Secrets Manager Value",
                      "## Symptoms\nAfter a password change in Secrets Manager the app still connects to the DB with the "
                      "old one.\n\n## Cause\nECS passes secrets as environment variables only when a task starts.\n\n"
                      "## Fix\nReplace the tasks with `aws ecs update-service --force-new-deployment`.",
                      "troubleshooting", "ecs,secrets-manager")
    assert [d["id"] for d in reworded["insights"]["potential_duplicates"]] == [secrets["id"]]


def test_a_numbered_copy_is_still_a_duplicate():
    # tests/simulation: a flood of copies titled "<title> (note 3)": a counter, not a measure.
    queue = card("Use SQS for the Order Events Queue", "## Decision\nOrder events go through an SQS standard queue.",
                 ["sqs", "orders", "queue"], type="decision")
    copy = card("Use SQS for the Order Events Queue (note 3)",
                "## Decision\nOrder events go through an SQS standard queue.", ["sqs", "orders", "queue"],
                type="decision")
    from external_brain.judging.judgements import value_never_stated

    assert not value_never_stated(copy, queue)
    assert value_never_stated(card("Order Events in SQS Are Kept for 4 Days", tags=["sqs"]), queue)


def test_an_attribute_named_in_japanese_and_in_english_anchors_one_value_across_languages():
    from external_brain.judging.judgements import contradiction

    # blind9 b9c3: 同時実行数 is "concurrency"; its last kanji (数) met no English word, so 8 and 4 were never compared.
    ja = card("Celery ワーカーの同時実行数は 4 に設定する", "## 決定\nCelery ワーカーは `--concurrency 4` で起動する。",
              ["celery", "concurrency"], type="decision")
    en = card("Start Celery Workers with a Concurrency of 8", "## Decision\nCelery workers run with `--concurrency 8`.",
              ["celery", "concurrency"], type="decision")
    assert "values differ: 8 vs 4" in (contradiction(en, ja, card_similarity(en, ja)) or "")
    replicas_ja = card("API のレプリカ数は 3 にする", "## 決定\nAPI の Deployment は `replicas: 3`。", ["kubernetes", "api"],
                       type="decision")
    replicas_en = card("Run the API with Replicas: 5", "## Decision\nThe API Deployment sets `replicas: 5`.",
                       ["kubernetes", "api"], type="decision")
    assert contradiction(replicas_en, replicas_ja, card_similarity(replicas_en, replicas_ja))
    same = card("Start Celery Workers with a Concurrency of 4", "## Decision\nCelery workers run with `--concurrency 4`.",
                ["celery", "concurrency"], type="decision")
    assert contradiction(same, ja, card_similarity(same, ja)) is None


def test_a_rewording_that_swaps_ahead_of_and_rolling_out_for_before_and_deploying_is_a_duplicate():
    # blind9 b9d2: "ahead of" is "before", "rolling out a release" is "deploying"; the words alone sat at 0.50.
    old = card("Run Database Migrations Before Deploying the New App Version",
               "## Decision\nThe deploy pipeline runs `alembic upgrade head` as a one-off task before the new app version "
               "starts.\n\n## Why\nMigrations are written to be backward compatible, so the old version keeps working on "
               "the new schema while the new version rolls out.", ["migrations", "deploy", "database"], type="decision")
    new = card("Apply Alembic Migrations Ahead of Rolling Out a Release",
               "## Decision\nBefore any new release starts, the pipeline runs `alembic upgrade head` once as a separate "
               "task.\n\n## Why\nEvery migration stays compatible with the previous release, which keeps serving during "
               "the rollout.", ["migrations", "deploy"], type="decision")
    assert is_duplicate(new, old, card_similarity(new, old))
    after = card("Run Database Migrations After the New App Version Is Live",
                 "## Decision\nDo not run migrations before the deploy. The pipeline runs `alembic upgrade head` after "
                 "the new app version is healthy.", ["migrations", "deploy"], type="decision")
    from external_brain.judging.judgements import contradiction
    assert contradiction(after, old, card_similarity(after, old))
