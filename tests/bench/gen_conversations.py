#!/usr/bin/env python3
"""Generate `conversations`, a retrieval set of long multi-session chat logs, in BEIR layout.

    python3 tests/bench/gen_conversations.py tests/bench/data/conversations

Its shape is the one hybrid fusion found hardest (issue 25): each document is one long working
session between a developer and an assistant (24-36 turns, most of it small talk and routine
checks that mention the same services as every other session), and each question asks about ONE
turn of it: "Which port did we move the billing-api Redis cache to?". A model reading the first
512 tokens of a session sees mostly filler, and every session is about the same few services,
so the vector side is weak; the words of the one turn (its service, its subject) are what
finds it. About a third of the sessions and questions are Japanese.

Everything is written here: the templates, the names and the filler are this file's own text,
nothing is taken from another data set. The answers (qrels) come from the generator's own
record of which session holds which turn, written before any search runs. Deterministic (seed
25): the same command writes the same files. Facts are unique per (template, service), so each
question has exactly one answering session.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from eval_retrieval import write_dataset

SEED = 25
SESSIONS_EN = 80
SESSIONS_JA = 40
FACTS_PER_SESSION = 3

SERVICES = ["billing-api", "auth-gateway", "search-indexer", "report-worker", "notification-service",
            "image-resizer", "payments-ledger", "mobile-backend", "user-profile", "audit-trail",
            "feature-flags", "email-sender", "order-router", "inventory-sync", "chat-relay",
            "metrics-collector", "pdf-renderer", "geo-lookup", "session-store", "webhook-dispatcher"]
PEOPLE = ["Alice", "Bruno", "Chen", "Dmitri", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kenji",
          "Lena", "Marta", "Nadia", "Omar", "Priya"]
TECH = ["Redis", "Postgres", "Kafka", "S3", "nginx", "Terraform", "Celery", "RabbitMQ", "Elasticsearch",
        "DynamoDB", "gRPC", "Envoy"]
REGIONS = ["us-east-1", "eu-west-1", "ap-northeast-1", "eu-central-1", "us-west-2"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
DAYS_JA = ["月曜", "火曜", "水曜", "木曜", "金曜"]

# (statement, literal question, paraphrased question). Slots: {svc} a service, {person}, {tech},
# {n} a small number, {port}, {pct}, {ver} a version, {region}, {day}, {hour}, {ticket}.
FACTS_EN = [
    ("We moved the {svc} Redis cache to port {port} because the old port clashed with the metrics agent.",
     "Which port did we move the {svc} Redis cache to?",
     "what port does the cache of {svc} listen on now after the clash?"),
    ("{person} raised the {svc} database connection pool from 10 to {n} connections; requests were queueing at peak.",
     "What did {person} raise the {svc} connection pool to?",
     "how many database connections can {svc} hold open at once now?"),
    ("The {svc} health check now times out after {n} seconds instead of 2, the cold start was failing it.",
     "What is the {svc} health check timeout now?",
     "why did {svc} fail its liveness probe on cold start, and what limit did we set?"),
    ("Decision: {svc} stays on {tech} for now; {person} will revisit the migration next quarter.",
     "Did we decide to keep {svc} on {tech}?",
     "who is going to look at moving {svc} off its current {tech} setup later?"),
    ("Rollback of {svc} version {ver} was needed because it dropped the retry header on outbound calls.",
     "Why did we roll back {svc} {ver}?",
     "which {svc} release lost the retry header and had to be reverted?"),
    ("The {svc} error rate went to {pct} percent after the deploy; the culprit was a missing index on the events table.",
     "What caused the {svc} error rate spike after the deploy?",
     "a missing table index made {svc} fail a lot of requests, when was that?"),
    ("{person} owns the on-call runbook for {svc}; page them before restarting anything in {region}.",
     "Who owns the {svc} on-call runbook?",
     "whom should I page before I restart {svc} in {region}?"),
    ("We pinned {tech} to {ver} in {svc} because the newer client leaks file descriptors.",
     "Which {tech} version is pinned in {svc}?",
     "{svc} was leaking file descriptors with a newer {tech} client, what did we pin?"),
    ("The nightly export of {svc} now starts at {hour}:30 UTC so it no longer overlaps the backup window.",
     "When does the {svc} nightly export start now?",
     "what time was the {svc} overnight dump moved to, to avoid the backups?"),
    ("Ticket {ticket}: {svc} returns 502 when the upstream {tech} node is restarted; workaround is to drain first.",
     "What ticket tracks {svc} returning 502 on {tech} restarts?",
     "{svc} gives bad gateway errors while {tech} restarts, is there a workaround?"),
    ("For {svc} we agreed on a {n} day log retention; anything older goes to cold storage in S3 Glacier.",
     "How many days of logs do we keep for {svc}?",
     "when do the {svc} logs get moved to cold storage?"),
    ("{svc} batch size was cut to {n} items per message after the consumer kept hitting the memory limit.",
     "What batch size did we set for {svc}?",
     "the {svc} consumer ran out of memory, how much did we shrink each message?"),
    ("Feature flag rollout for {svc}: {pct} percent of traffic on {day}, full rollout if the p99 stays flat.",
     "What percentage of traffic gets the {svc} rollout first?",
     "on which day does {svc} start its partial rollout, and how big is it?"),
    ("The {svc} staging environment lives in {region} now, production stays where it is.",
     "Which region is the {svc} staging environment in?",
     "where did we move the {svc} test environment?"),
    ("{person} found that {svc} hashes passwords with a cost of 8; we bump it to {n} in the next release.",
     "What bcrypt cost will {svc} use after the next release?",
     "{person} noticed weak password hashing in {svc}, what is the new work factor?"),
    ("The {svc} rate limit is {n} requests per second per API key, enforced in {tech}.",
     "What is the {svc} rate limit per API key?",
     "how fast may one client call {svc} before it gets throttled?"),
    ("We replaced the cron job in {svc} with a {tech} scheduled task because the host kept drifting its clock.",
     "Why did we replace the {svc} cron job?",
     "{svc} periodic job ran at the wrong times because of clock drift, what did we switch to?"),
    ("The {svc} disk filled up on {day} because debug logging was left on; {person} added an alert at {pct} percent.",
     "Why did the {svc} disk fill up?",
     "at what usage does the new {svc} storage alert fire?"),
    ("{svc} keeps idempotency keys for {n} hours in {tech} so retried payments are not charged twice.",
     "How long does {svc} keep idempotency keys?",
     "how does {svc} avoid charging a retried request twice?"),
    ("Code review note on {svc}: {person} asked to split the 900-line handler before merging {ticket}.",
     "What did {person} ask for in the {svc} review of {ticket}?",
     "which {svc} change was held back until a very long handler is broken up?"),
    ("The {svc} canary runs in {region} for {n} minutes before the rest of the fleet gets the build.",
     "How long does the {svc} canary run?",
     "before the whole fleet gets a {svc} build, where is it tried first?"),
    ("TLS certificates for {svc} are now renewed by {tech} {n} days before expiry, no more manual renewals.",
     "How early are the {svc} certificates renewed?",
     "who renews the {svc} certificates now that we stopped doing it by hand?"),
]

FACTS_JA = [
    ("{svc}のRedisキャッシュをポート{port}に移しました。メトリクスエージェントと衝突していたためです。",
     "{svc}のRedisキャッシュは何番ポートに移した?",
     "{svc}のキャッシュが今使っているポートは?"),
    ("{person}さんが{svc}のDB接続プールを10から{n}に増やしました。ピーク時にリクエストが詰まっていました。",
     "{svc}の接続プールはいくつに増やした?",
     "{svc}は同時にいくつデータベース接続を持てる?"),
    ("{svc}のヘルスチェックのタイムアウトを2秒から{n}秒に延ばしました。コールドスタートで落ちていたためです。",
     "{svc}のヘルスチェックのタイムアウトは何秒?",
     "{svc}が起動直後に死活監視で落ちる件、どう直した?"),
    ("{svc}のバージョン{ver}はロールバックしました。外部呼び出しのリトライヘッダが消えていたためです。",
     "{svc} {ver}をロールバックした理由は?",
     "{svc}のどのリリースでリトライヘッダが消えた?"),
    ("{svc}のオンコール手順書の担当は{person}さんです。{region}で再起動する前に連絡してください。",
     "{svc}の手順書の担当者は誰?",
     "{svc}を{region}で再起動する前に誰に連絡する?"),
    ("{svc}の夜間エクスポートはUTC {hour}:30開始に変更しました。バックアップと重ならないようにするためです。",
     "{svc}の夜間エクスポートは何時に始まる?",
     "{svc}の夜のダンプはバックアップを避けて何時にずらした?"),
    ("{svc}のログ保持期間は{n}日に決めました。それより古いものはS3 Glacierに移します。",
     "{svc}のログは何日保持する?",
     "{svc}の古いログはいつアーカイブに移る?"),
    ("{svc}のレート制限はAPIキーごとに毎秒{n}リクエストで、{tech}で制御しています。",
     "{svc}のAPIキーごとのレート制限は?",
     "{svc}を一つのクライアントがどれくらいの速さで呼べる?"),
    ("{svc}のステージング環境は{region}に移しました。本番はそのままです。",
     "{svc}のステージング環境はどのリージョン?",
     "{svc}のテスト環境はどこに移した?"),
    ("{svc}のディスクが{day}に一杯になりました。デバッグログが有効のままでした。{person}さんが{pct}%でアラートを追加しました。",
     "{svc}のディスクが一杯になった原因は?",
     "{svc}のストレージのアラートは何%で鳴る?"),
    ("{svc}では{tech}のバージョンを{ver}に固定しました。新しいクライアントはファイルディスクリプタをリークします。",
     "{svc}で固定した{tech}のバージョンは?",
     "{svc}の{tech}クライアントがリークする件、どうした?"),
    ("{svc}のカナリアは{region}で{n}分間動かしてから全体に配布します。",
     "{svc}のカナリアは何分動かす?",
     "{svc}のビルドを全体に出す前にどこで試す?"),
    ("{svc}のバッチサイズを1メッセージ{n}件に減らしました。コンシューマがメモリ上限に当たっていました。",
     "{svc}のバッチサイズはいくつにした?",
     "{svc}のコンシューマがメモリ不足になった件の対策は?"),
    ("{svc}のTLS証明書は{tech}が期限の{n}日前に自動更新します。手動更新はもうしません。",
     "{svc}の証明書は何日前に更新される?",
     "{svc}の証明書の更新は誰がやっている?"),
]

FILLER_EN = [
    ("Morning. Can we pick up where we left off on {svc}?", "Sure. Last time we were looking at the {svc} logs."),
    ("Can you check the {svc} logs for anything odd?", "Nothing unusual in the {svc} logs, just the usual health checks."),
    ("Let's run the test suite before we touch {svc} again.", "All green locally, {n} tests passed."),
    ("Is {tech} still the bottleneck?", "Not really, the latency graph looks flat since yesterday."),
    ("Can you open a pull request for this?", "Done, it is up for review now."),
    ("I'll grab a coffee, back in five.", "Sounds good, I'll keep the dashboards open."),
    ("What does the {svc} dashboard say?", "Traffic is normal for a {day}, nothing alarming."),
    ("Let's also bump the {tech} client library while we are here.", "Noted, I'll add it to the list for next sprint."),
    ("Did the deploy of {svc} finish?", "Yes, the pipeline finished a few minutes ago without errors."),
    ("Remind me what we said about {tech} upgrades.", "We said we'd do them one service at a time, starting with the quiet ones."),
    ("Can you summarise the open items?", "Three things: the {svc} alerts, the {tech} upgrade, and the docs."),
    ("Any news from {person}?", "{person} is out today, we can ask tomorrow."),
    ("Let's write this down somewhere.", "I'll add it to the team notes after we're done."),
    ("OK, what is next?", "We could look at the {svc} queue depth, it was a bit high this morning."),
    ("Did anyone complain about {svc} today?", "One support ticket, but it was a user typo."),
    ("Please double check the config before merging.", "Checked, the only change is the one we discussed."),
    ("How long will the migration take?", "Roughly {n} minutes if nothing goes wrong."),
    ("Let's pause here and continue after lunch.", "Sure, I'll keep the branch as it is."),
    ("Can you look at the flaky test in {svc}?", "It fails about one run in twenty, probably a timing issue; I'll mark it."),
    ("Is the {region} region healthy?", "Yes, all green there."),
]

FILLER_JA = [
    ("おはようございます。{svc}の続きをやりましょう。", "はい。前回は{svc}のログを見ていました。"),
    ("{svc}のログに何かおかしな点はありますか?", "特にありません。いつものヘルスチェックだけです。"),
    ("{svc}を触る前にテストを流しましょう。", "ローカルでは全部通りました。{n}件成功です。"),
    ("{tech}はまだボトルネックですか?", "昨日からレイテンシのグラフは落ち着いています。"),
    ("プルリクエストを作ってもらえますか?", "作成しました。レビュー待ちです。"),
    ("少し休憩します。", "了解です。ダッシュボードは開いたままにしておきます。"),
    ("{svc}のダッシュボードはどうですか?", "{day}としては普通のトラフィックです。"),
    ("ついでに{tech}のクライアントも上げましょう。", "次のスプリントのリストに入れておきます。"),
    ("{svc}のデプロイは終わりましたか?", "はい、数分前にパイプラインがエラーなく終わりました。"),
    ("残っている作業をまとめてください。", "{svc}のアラート、{tech}の更新、ドキュメントの三つです。"),
    ("{person}さんから連絡はありましたか?", "今日はお休みなので明日聞きましょう。"),
    ("次は何をしますか?", "{svc}のキューの深さを見ましょう。朝は少し高めでした。"),
    ("マージ前に設定をもう一度確認してください。", "確認しました。話した変更だけです。"),
    ("移行にはどれくらいかかりますか?", "問題がなければ{n}分ほどです。"),
    ("{svc}の不安定なテストを見てもらえますか?", "20回に1回くらい落ちます。タイミングの問題だと思います。"),
]

ACKS_EN = ["Got it, noting that.", "OK, I'll add that to the notes.", "Makes sense.", "Understood.",
           "Good to know, thanks."]
ACKS_JA = ["了解です、メモしておきます。", "わかりました。", "なるほど、記録しておきます。", "承知しました。"]


def slots(rng: random.Random, svc: str, japanese: bool) -> dict:
    return {"svc": svc, "person": rng.choice(PEOPLE), "tech": rng.choice(TECH), "n": rng.choice(range(3, 120)),
            "port": rng.choice(range(6380, 6480)), "pct": rng.choice(range(2, 96)),
            "ver": f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}", "region": rng.choice(REGIONS),
            "day": rng.choice(DAYS_JA if japanese else DAYS), "hour": f"{rng.randint(0, 5):02d}", "ticket": f"OPS-{rng.randint(1000, 9999)}"}


def session(rng: random.Random, number: int, japanese: bool, used: set) -> tuple[dict, list]:
    """One session document and its (question, doc id) pairs."""
    templates, filler = (FACTS_JA, FILLER_JA) if japanese else (FACTS_EN, FILLER_EN)
    doc_id = f"{'ja' if japanese else 'en'}-{number:03d}"
    turns: list[str] = []
    for number_of_pair in range(rng.randint(16, 26)):
        # The greeting opens the session; the rest is drawn from the routine turns.
        user, assistant = filler[0] if number_of_pair == 0 else rng.choice(filler[1:])
        values = slots(rng, rng.choice(SERVICES), japanese)
        turns += [user.format(**values), assistant.format(**values)]
    questions = []
    for _ in range(FACTS_PER_SESSION):
        while True:
            template = rng.randrange(len(templates))
            svc = rng.choice(SERVICES)
            if (japanese, template, svc) not in used:
                used.add((japanese, template, svc))
                break
        statement, literal, paraphrase = templates[template]
        values = slots(rng, svc, japanese)
        # The fact is said by the user and acknowledged, anywhere after the greeting: past the
        # first ~512 tokens (all a small model reads) as often as not.
        at = 2 * rng.randint(1, len(turns) // 2)
        turns[at:at] = [statement.format(**values), rng.choice(ACKS_JA if japanese else ACKS_EN)]
        question = (literal if rng.random() < 0.5 else paraphrase).format(**values)
        questions.append((question, doc_id))
    speaker = ("ユーザー", "アシスタント") if japanese else ("User", "Assistant")
    text = "\n".join(f"{speaker[i % 2]}: {turn}" for i, turn in enumerate(turns))
    date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    title = f"会話ログ {date} #{number}" if japanese else f"Chat log {date} #{number}"
    return {"_id": doc_id, "title": title, "text": text}, questions


def generate() -> tuple[list[dict], list[dict], list[tuple[str, str]]]:
    rng = random.Random(SEED)
    used: set = set()
    docs, queries, qrels = [], [], []
    plan = [(False, i) for i in range(1, SESSIONS_EN + 1)] + [(True, i) for i in range(1, SESSIONS_JA + 1)]
    for japanese, number in plan:
        doc, questions = session(rng, number, japanese, used)
        docs.append(doc)
        for question, doc_id in questions:
            qid = f"q{len(queries) + 1:04d}"
            queries.append({"_id": qid, "text": question})
            qrels.append((qid, doc_id))
    # Interleave the order of the queries so an evenly spaced subset has both languages.
    order = list(range(len(queries)))
    rng.shuffle(order)
    return docs, [queries[i] for i in order], [qrels[i] for i in order]


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: gen_conversations.py OUTPUT_FOLDER")
    out = Path(sys.argv[1])
    docs, queries, qrels = generate()
    write_dataset(out, docs, queries, qrels,
                  "Generated by tests/bench/gen_conversations.py from its own templates (no outside data); "
                  "same license as the project.\n")
    print(f"{out}: {len(docs)} sessions, {len(queries)} questions")


if __name__ == "__main__":
    main()
