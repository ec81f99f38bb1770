#!/usr/bin/env python3
"""Generate `paraphrases`, a retrieval set of troubleshooting cards asked about in people's own
words, in BEIR layout.

    python3 tests/bench/gen_paraphrases.py tests/bench/data/paraphrases

Its shape is the README's own example of why vectors are there: a card titled "RDS connection
pool exhausted" that a person looks for with "my deploy hangs waiting for the database". Each
card is a short note in the vocabulary of the fix (the component, the error, the setting); each
question describes what the person saw, in plain words, mostly without the card's terms, the
way an agent or a colleague asks before they know the cause. So the keyword side finds little
and the vector side has to understand; the opposite shape of `conversations`. English cards and
questions, and a Japanese part (Japanese questions about Japanese cards).

Every card, question and answer is written here (no outside data); the answers (qrels) are the
card each question was written for, fixed before any search runs. Deterministic: the same
command writes the same files.
"""

from __future__ import annotations

import sys
from pathlib import Path

from eval_retrieval import write_dataset

# (title, body, [questions in the asker's words])
CARDS_EN = [
    ("RDS connection pool exhausted",
     "Symptom: requests queue, then time out; Postgres logs 'remaining connection slots are reserved'. Cause: each "
     "worker opens its own pool of 20. Fix: lower the per-worker pool or put PgBouncer in front.",
     ["my deploy hangs waiting for the database", "the app freezes at peak and the db refuses new clients"]),
    ("ECS task stopped: essential container exited",
     "The task definition marks the sidecar as essential; when it crashes ECS stops the whole task. Mark only the "
     "app container essential and give the sidecar a restart loop.",
     ["the whole service restarts whenever the log shipper dies", "why does one helper process crashing kill my app"]),
    ("Lambda cold start over 3 s",
     "Large deployment package and VPC attachment. Trim dependencies, move heavy imports inside the handler, use "
     "provisioned concurrency for the hot path.",
     ["the first request after a quiet period is really slow on our serverless function",
      "functions take ages to wake up in the morning"]),
    ("S3 403 AccessDenied on presigned URL",
     "The URL was signed with a role session that expired before the client used it. Sign with a longer-lived "
     "credential or shorten the gap between signing and the download.",
     ["download links we email to customers stop working after a while", "file links say forbidden an hour later"]),
    ("DNS resolution fails inside containers",
     "The container uses the host's resolv.conf pointing at 127.0.0.53 (systemd-resolved), unreachable from the "
     "container network. Set explicit nameservers in the daemon config.",
     ["inside docker I can't reach any hostname but IPs work", "names don't resolve in the build image"]),
    ("TLS handshake fails: certificate chain incomplete",
     "The server sends only the leaf certificate; browsers fill the gap, curl and Java do not. Serve the "
     "intermediate certificate in the chain file.",
     ["the site opens in chrome but our java client says it can't verify it",
      "curl complains about the issuer but the browser is fine"]),
    ("Kafka consumer lag grows after deploy",
     "A rebalance storm: max.poll.interval.ms is lower than the time one batch takes, so consumers are kicked out "
     "and rejoin. Raise the interval or shrink max.poll.records.",
     ["messages pile up and the readers keep leaving and rejoining the group",
      "after we shipped, the event backlog keeps climbing"]),
    ("Redis evicting keys under memory pressure",
     "maxmemory-policy allkeys-lru removes session keys when the cache fills. Give sessions their own instance or "
     "set volatile-lru and TTLs on cache keys only.",
     ["users get logged out randomly when traffic is high", "sessions vanish when the cache gets full"]),
    ("Nginx 413 Request Entity Too Large",
     "client_max_body_size defaults to 1m. Raise it in the server block for the upload route only.",
     ["uploading a big photo fails right away with an error page", "large file uploads are rejected by the proxy"]),
    ("Git LFS files checked out as pointers",
     "The CI runner clones without git-lfs installed, so the files are small text pointers. Install git-lfs in "
     "the image and run git lfs pull after checkout.",
     ["in the pipeline our model files are tiny text files instead of the real thing",
      "the binary assets in CI are just a few lines of text"]),
    ("Terraform state lock not released",
     "A cancelled apply left the DynamoDB lock item behind. Check nobody is running, then force-unlock with the "
     "lock id from the error.",
     ["infra changes refuse to run because someone is supposedly still applying",
      "our infrastructure tool says it's locked but no one is using it"]),
    ("Pod OOMKilled at startup",
     "The JVM sizes its heap from the node's memory, not the container limit, on old Java versions. Set "
     "-XX:MaxRAMPercentage or upgrade to a container-aware JVM.",
     ["the java service dies immediately on kubernetes with exit 137", "the app gets killed for memory as it boots"]),
    ("Cron job runs twice after daylight saving change",
     "The schedule is in local time; the repeated hour in autumn fires it twice. Schedule in UTC.",
     ["the nightly report was sent two times in one night in october", "a scheduled task ran double once a year"]),
    ("Webhook deliveries rejected: signature mismatch",
     "The receiver verifies the HMAC over the parsed and re-serialised JSON, not the raw body. Verify over the raw "
     "request bytes.",
     ["the partner says our endpoint refuses their callbacks as not authentic",
      "incoming notifications fail the authenticity check though the secret is right"]),
    ("Disk full from Docker build cache",
     "Dangling images and build cache fill /var/lib/docker on CI hosts. Add a scheduled docker system prune with "
     "a filter on age.",
     ["the build machines run out of space every few weeks", "ci agents fill up their drive and jobs start failing"]),
    ("CORS preflight fails for PUT",
     "The API allows GET and POST in Access-Control-Allow-Methods only; the browser's OPTIONS request is refused. "
     "Add PUT and the custom headers to the allowed lists.",
     ["the browser blocks our update call but the same request works from postman",
      "editing from the web page fails with a cross origin error"]),
    ("Flaky test: time zone dependent assertion",
     "The test builds a date at local midnight and compares with a UTC string; it fails on runners in other zones. "
     "Freeze the clock and the zone in the fixture.",
     ["a test only fails on the build server in another country", "one check passes on my laptop and fails in ci"]),
    ("Elasticsearch cluster red: unassigned shards",
     "A node left and replicas were 0, so primaries are gone. Bring the node back or restore from snapshot; set "
     "replicas to 1.",
     ["search is down and the health page shows red after we lost a machine", "the index stopped answering after a node died"]),
    ("npm install fails: integrity checksum mismatch",
     "The lockfile was generated against a private registry mirror that repacked the tarball. Regenerate the "
     "lockfile against the registry CI uses.",
     ["installing packages on ci says the downloaded file doesn't match", "dependency install breaks with a hash error"]),
    ("Gunicorn workers timeout on slow uploads",
     "Sync workers are held for the whole upload; the 30 s worker timeout kills them. Use async workers or let "
     "nginx buffer the request body.",
     ["python web server restarts its processes when people upload over slow connections",
      "the backend kills requests from users on bad wifi"]),
    ("Memory leak from unbounded LRU cache",
     "functools.lru_cache(maxsize=None) on a method keeps every argument and self alive. Bound the size or cache "
     "on a module function.",
     ["the service's ram keeps growing over days until it restarts", "process memory climbs slowly and never comes down"]),
    ("SSH host key changed warning after rebuild",
     "The bastion was rebuilt with new host keys. Verify the new fingerprint out of band, then remove the old "
     "entry from known_hosts.",
     ["connecting to the jump box warns about a possible attack after the rebuild",
      "my terminal says remote identification has changed"]),
    ("Load balancer health check marks targets unhealthy",
     "The health check path redirects to the login page (302) and the target group expects 200. Point it at "
     "/healthz that skips auth.",
     ["all servers are taken out of rotation though the site works", "the balancer thinks every instance is down"]),
    ("Celery tasks stuck in PENDING",
     "The worker listens on the default queue while tasks are routed to 'reports'. Start a worker with -Q reports "
     "or fix task_routes.",
     ["background jobs are queued but nothing ever picks them up", "report generation never starts, it just waits"]),
    ("GraphQL N+1 queries on list page",
     "Each item resolver fetches its author separately: 200 queries per page. Batch with a DataLoader per request.",
     ["the listing page hits the database hundreds of times", "our api gets slower the more items a page shows"]),
    ("Timezone-naive datetimes stored in UTC column",
     "The ORM writes naive local times into a timestamptz column, shifting every value by the server offset. Use "
     "aware datetimes everywhere.",
     ["all times in the database are off by a few hours", "events show up at the wrong hour in reports"]),
    ("IAM role trust policy missing service principal",
     "The role cannot be assumed by ecs-tasks.amazonaws.com, so the task gets no credentials. Add the service to "
     "the trust relationship.",
     ["the container can't get cloud permissions even though the policy allows everything",
      "our job has no credentials at runtime"]),
    ("Prometheus scrape target down: wrong port",
     "The service moved metrics to 9102 but the scrape config still targets 9100. Use service discovery labels for "
     "the port.",
     ["the graphs for one service went blank after a deploy", "monitoring stopped collecting numbers from the app"]),
    ("Docker image too large: build tools in final stage",
     "Compilers and caches end up in the runtime image. Use a multi-stage build and copy only the artefacts.",
     ["our container images are several gigabytes and slow to pull", "deploys spend minutes downloading the image"]),
    ("HTTP 429 from third-party API",
     "Bursts from the retry loop exceed the partner's rate limit. Add exponential backoff with jitter and honour "
     "Retry-After.",
     ["the vendor keeps telling us to slow down", "calls to the payment provider fail with too many requests"]),
    ("Postgres query slow: missing index on foreign key",
     "Deleting a customer scans the orders table because orders.customer_id has no index. Add the index "
     "concurrently.",
     ["removing a user takes a minute", "deleting records is very slow and locks things"]),
    ("Service worker serves stale JavaScript",
     "The cache-first strategy keeps the old bundle until every tab is closed. Version the cache and call "
     "skipWaiting with a reload prompt.",
     ["users keep seeing the old version of the site after we release", "the web app doesn't update for some people"]),
    ("Clock skew breaks JWT validation",
     "The issuer's clock is ahead; tokens are 'not yet valid' on servers with correct time. Run NTP and allow "
     "30 s of leeway.",
     ["freshly issued login tokens are rejected for a few seconds", "sign in fails right after getting a token"]),
    ("Android build fails: duplicate class",
     "Two libraries bundle different versions of the same support package. Exclude the transitive dependency in "
     "Gradle.",
     ["the mobile app won't compile after adding a library", "gradle says a class is defined twice"]),
    ("iOS push notifications not delivered in production",
     "The app was signed with the development APNs environment; production tokens are rejected. Use the "
     "production certificate for release builds.",
     ["phone notifications work in testing but never arrive for real users", "our iphone alerts are silent after release"]),
    ("Websocket connections drop every 60 seconds",
     "The load balancer's idle timeout closes quiet connections. Send ping frames every 30 s or raise the idle "
     "timeout.",
     ["the live chat disconnects once a minute", "realtime updates stop unless something happens regularly"]),
    ("Unicode filenames mangled in zip downloads",
     "The archive writes names in CP437 without the UTF-8 flag. Set the language encoding flag when zipping.",
     ["japanese file names turn into garbage when people unzip the export", "accented names break in downloaded archives"]),
    ("Rate of 5xx spikes during deploy",
     "Old instances are killed before the balancer stops routing to them. Add a pre-stop delay and drain "
     "connections.",
     ["every release causes a short burst of errors for users", "customers see server errors for a minute when we ship"]),
    ("Secrets leaked in build logs",
     "The deploy script echoes the environment with set -x. Mask secrets in the CI settings and drop set -x "
     "around credential use.",
     ["our passwords appeared in the pipeline output", "tokens are printed in plain text in the ci log"]),
    ("Background job duplicates after worker crash",
     "Visibility timeout is shorter than the job, so the message reappears and a second worker runs it. Make jobs "
     "idempotent and extend visibility while working.",
     ["some emails are sent twice when a worker restarts", "the same job runs two times occasionally"]),
]

CARDS_JA = [
    ("RDSの接続プールが枯渇する",
     "ワーカーごとに20本の接続プールを持つため、ピーク時にPostgresの接続上限に達する。プールを小さくするかPgBouncerを置く。",
     ["デプロイするとデータベース待ちで止まる", "混んでくるとDBにつながらなくなる"]),
    ("コンテナ内で名前解決に失敗する",
     "コンテナがホストのresolv.confの127.0.0.53を参照しており到達できない。デーモン設定でDNSサーバーを明示する。",
     ["dockerの中からホスト名で通信できない", "ビルド用イメージでドメインが引けない"]),
    ("証明書チェーンが不完全でTLSが失敗する",
     "サーバーが中間証明書を送っていないため、ブラウザ以外のクライアントが検証に失敗する。チェーンファイルに中間証明書を含める。",
     ["ブラウザでは開けるのにJavaのクライアントだけ検証エラーになる", "curlだと発行元がわからないと言われる"]),
    ("Redisがメモリ不足でキーを追い出す",
     "allkeys-lruのためキャッシュが満杯になるとセッションのキーも消える。セッション用に別インスタンスを用意する。",
     ["アクセスが多いとユーザーが勝手にログアウトされる", "キャッシュが一杯になるとセッションが消える"]),
    ("Nginxで413エラーになる",
     "client_max_body_sizeの既定値は1m。アップロードのパスだけ上限を上げる。",
     ["大きい画像をアップロードするとすぐエラー画面になる", "大きなファイルの送信がプロキシで弾かれる"]),
    ("Terraformのstateロックが解除されない",
     "中断したapplyがDynamoDBのロックを残した。誰も実行していないことを確認してからforce-unlockする。",
     ["誰も使っていないのにインフラ変更がロック中と言われる", "構成変更ツールが他の人が作業中だと言って止まる"]),
    ("Podが起動時にOOMKilledになる",
     "古いJVMはコンテナの制限ではなくノードのメモリからヒープを決める。MaxRAMPercentageを設定する。",
     ["Javaのサービスがkubernetesで起動した直後に終了コード137で死ぬ", "起動中にメモリ不足で強制終了される"]),
    ("夏時間の切り替えでcronが二回動く",
     "スケジュールがローカル時刻のため、秋の重複する時間帯に二回実行される。UTCで登録する。",
     ["夜間レポートが一晩に二回送られた", "年に一度だけ定期処理が二重に動く"]),
    ("Dockerのビルドキャッシュでディスクが一杯",
     "CIホストの/var/lib/dockerに不要なイメージとキャッシュが溜まる。古いものを定期的にpruneする。",
     ["ビルド用のマシンが数週間ごとに容量不足になる", "CIのエージェントのディスクが埋まってジョブが落ちる"]),
    ("PUTのCORSプリフライトが失敗する",
     "Access-Control-Allow-MethodsにGETとPOSTしかないため、ブラウザのOPTIONSが拒否される。PUTとカスタムヘッダを許可する。",
     ["Postmanでは通る更新APIがブラウザからだとブロックされる", "画面から編集するとクロスオリジンのエラーが出る"]),
    ("ロードバランサのヘルスチェックで全台がunhealthy",
     "ヘルスチェックのパスがログイン画面に302でリダイレクトする。認証なしで200を返す/healthzに向ける。",
     ["サイトは動いているのに全サーバーが切り離される", "ロードバランサが全部のインスタンスを停止扱いにする"]),
    ("Celeryのタスクが PENDING のまま",
     "タスクはreportsキューに送られるが、ワーカーはdefaultキューしか見ていない。-Q reportsで起動する。",
     ["バックグラウンドジョブが積まれるだけで誰も処理しない", "レポート作成がいつまでも始まらない"]),
    ("一覧画面でN+1クエリが発生する",
     "各要素のリゾルバが作成者を個別に取得し、1ページで200回クエリが走る。リクエストごとにDataLoaderでまとめる。",
     ["一覧ページでデータベースに何百回も問い合わせている", "表示件数が多いほどAPIが遅くなる"]),
    ("時差のない日時がUTCの列に保存される",
     "ORMがタイムゾーンなしのローカル時刻をtimestamptz列に書き、サーバーの時差だけずれる。常にタイムゾーン付きの日時を使う。",
     ["データベースの時刻が全部数時間ずれている", "レポートでイベントの時間がおかしい"]),
    ("外部APIから429が返る",
     "リトライのループが連続して呼び出し、相手のレート制限を超える。ジッター付きの指数バックオフとRetry-Afterを守る。",
     ["取引先のAPIにもっとゆっくり呼べと言われる", "決済サービスへの呼び出しが回数超過で失敗する"]),
    ("外部キーにインデックスがなく削除が遅い",
     "顧客を削除するとordersを全件走査する。orders.customer_idにインデックスをCONCURRENTLYで追加する。",
     ["ユーザーを消すのに一分かかる", "レコードの削除がとても遅くて他の処理も止まる"]),
    ("Service Workerが古いJavaScriptを返す",
     "キャッシュ優先の戦略で、全タブを閉じるまで古いバンドルが使われる。キャッシュにバージョンを付けて更新を促す。",
     ["リリースしても古い画面のままの人がいる", "Webアプリが一部のユーザーで更新されない"]),
    ("時計のずれでJWTの検証に失敗する",
     "発行側の時計が進んでいて、発行直後のトークンがまだ有効でないと判定される。NTPを動かし30秒の猶予を設ける。",
     ["発行したばかりのログイントークンが数秒間拒否される", "トークンを取った直後のサインインが失敗する"]),
    ("WebSocketが60秒ごとに切れる",
     "ロードバランサのアイドルタイムアウトが無通信の接続を閉じる。30秒ごとにpingを送るか設定を延ばす。",
     ["ライブチャットが一分おきに切断される", "何も起きないとリアルタイム更新が止まる"]),
    ("ZIPのダウンロードで日本語のファイル名が化ける",
     "アーカイブがUTF-8フラグなしでCP437の名前を書いている。圧縮時に言語エンコーディングのフラグを立てる。",
     ["エクスポートを解凍すると日本語の名前が文字化けする", "ダウンロードしたアーカイブのファイル名が壊れる"]),
    ("デプロイ中に5xxが増える",
     "ロードバランサが振り分けをやめる前に古いインスタンスを止めている。停止前に待ち時間を入れて接続を抜く。",
     ["リリースのたびに少しの間エラーが出る", "出荷するとお客さんに一分ほどサーバーエラーが見える"]),
    ("ビルドログに秘密情報が出る",
     "デプロイスクリプトがset -xで環境変数を表示している。CIでマスクし、認証情報の前後でset -xを外す。",
     ["パイプラインの出力にパスワードが出ていた", "CIのログにトークンがそのまま表示される"]),
    ("ワーカーが落ちるとジョブが重複する",
     "可視性タイムアウトがジョブより短く、メッセージが再表示されて別のワーカーも実行する。冪等にし、処理中は延長する。",
     ["ワーカーが再起動するとメールが二通送られることがある", "同じジョブがたまに二回動く"]),
    ("S3の署名付きURLで403になる",
     "署名に使ったロールのセッションが、利用前に期限切れになっている。長めの認証情報で署名する。",
     ["お客さんに送ったダウンロードリンクがしばらくすると使えなくなる", "ファイルのリンクが一時間後に禁止と表示される"]),
    ("Lambdaのコールドスタートが3秒を超える",
     "デプロイパッケージが大きく、VPCにも接続している。依存を減らし、重いimportをハンドラ内に移す。",
     ["しばらく使わないとサーバーレス関数の最初の応答がとても遅い", "朝一番の関数の起動に時間がかかる"]),
]


def generate() -> tuple[list[dict], list[dict], list[tuple[str, str]]]:
    docs, queries, qrels = [], [], []
    for prefix, cards in (("en", CARDS_EN), ("ja", CARDS_JA)):
        for number, (title, body, questions) in enumerate(cards, start=1):
            doc_id = f"{prefix}-{number:03d}"
            docs.append({"_id": doc_id, "title": title, "text": body})
            for question in questions:
                qid = f"q{len(queries) + 1:04d}"
                queries.append({"_id": qid, "text": question})
                qrels.append((qid, doc_id))
    return docs, queries, qrels


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: gen_paraphrases.py OUTPUT_FOLDER")
    out = Path(sys.argv[1])
    docs, queries, qrels = generate()
    write_dataset(out, docs, queries, qrels,
                  "Written for this project in tests/bench/gen_paraphrases.py (no outside data); same license as "
                  "the project.\n")
    print(f"{out}: {len(docs)} cards, {len(queries)} questions")


if __name__ == "__main__":
    main()
