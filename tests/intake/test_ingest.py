"""`ingest`: raw text to atomic fact / state / episode cards, upserted by kind (docs/compatibility.md, Ingest), as
one logged, undoable, crash-safe operation; idempotency keys; the optional chat model."""

from __future__ import annotations

import json

import pytest

from helpers import (
    LoopbackServer, card_meta, events, file_hashes, log_lines, ok_data, pending_journal, reply_json, run_cli, run_json,
    temp_files,
)
from test_crash_safety import STEPS, killed_at

MOMENT = "2026-11-23T10:00:00+09:00"   # a Monday

ENGLISH = """Yesterday I deployed the payments API to production. The staging DB is at version 14.
ok. Thanks!
- I am currently working on the billing migration; the CI pipeline is failing.
My name is Taro. Postgres is a relational database. Is the cache warm?
Dr. Smith reviewed the Python 3.11 upgrade 2 days ago."""

JAPANESE = """昨日、本番環境にAPIをデプロイした。ステージングDBは現在バージョン14になっている。はい。
今は光工学の実験に熱中している。腰が痛い。
ＰｏｓｔｇｒｅＳＱＬはリレーショナルデータベースである。先週の月曜日にZ氏と会った、そして論文Xを読んだ。"""


def ingest(vault, text: str, *args: str) -> dict:
    path = vault.parent / "input.txt"
    path.write_text(text, encoding="utf-8")
    return ok_data("ingest", str(path), "--event-time", MOMENT, *args)


def pairs(data: dict) -> list[tuple[str, str | None, str]]:
    return [(i["statement"], i["kind"], i["action"]) for i in data["items"]]


def test_english_diary_paragraph_gives_atomic_cards_of_the_right_kinds(vault):
    data = ingest(vault, ENGLISH, "--source", "diary")
    assert pairs(data) == [
        ("On 2026-11-22 I deployed the payments API to production", "episode", "created"),
        ("The staging DB is at version 14", "state", "created"),
        ("ok", None, "skipped"),
        ("Thanks!", None, "skipped"),
        ("I am currently working on the billing migration", "state", "created"),
        ("the CI pipeline is failing", "state", "created"),
        ("My name is Taro", "fact", "created"),
        ("Postgres is a relational database", "fact", "created"),
        ("Is the cache warm?", None, "skipped"),
        ("Dr. Smith reviewed the Python 3.11 upgrade on 2026-11-21", "episode", "created"),
    ]
    assert (data["created"], data["updated"], data["skipped"]) == (7, 0, 3)
    assert len(data["ids"]) == 7 and data["warnings"] == []
    cards = {card_meta(p)["title"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    assert len(cards) == 7
    state = cards["The staging DB is at version 14"]
    assert state["type"] == "state" and state["source"] == "diary" and state["subject"] == "staging db|is|version"
    # an episode happened when it says it did ("Yesterday"), not when it was ingested
    assert cards["On 2026-11-22 I deployed the payments API to production"]["event_time"] == "2026-11-22T00:00:00+09:00"


def test_japanese_diary_paragraph_gives_atomic_cards_of_the_right_kinds(vault):
    data = ingest(vault, JAPANESE)
    assert pairs(data) == [
        ("2026-11-22、本番環境にAPIをデプロイした", "episode", "created"),
        ("ステージングDBは現在バージョン14になっている", "state", "created"),
        ("はい", None, "skipped"),
        ("今は光工学の実験に熱中している", "state", "created"),
        ("腰が痛い", "state", "created"),
        ("PostgreSQLはリレーショナルデータベースである", "fact", "created"),   # full width made half width
        ("2026-11-16にZ氏と会った", "episode", "created"),
        ("論文Xを読んだ", "episode", "created"),
    ]
    titles = sorted(card_meta(p)["title"] for p in (vault / "Playbooks").glob("*.md"))
    assert "腰が痛い" in titles and len(titles) == 7


def test_a_japanese_failure_told_with_its_time_is_an_episode_as_in_english(vault):
    # A reviewer's report: 昨日、注文APIが失敗した was a state (a condition now, for a later
    # statement to replace) while "Yesterday the billing batch failed." is an episode.
    data = ingest(vault, "昨日、注文APIが失敗した。先週、本番DBが落ちた。昨日、CIランナーがクラッシュした。"
                         "Yesterday the billing batch failed. 昨日、エアコンが壊れた。昨日、腰が治った。")
    assert [kind for _, kind, _ in pairs(data)] == ["episode", "episode", "episode", "episode", "state", "state"]


def test_a_second_ingest_updates_the_state_instead_of_adding_one(vault):
    first = ingest(vault, "The staging DB is at version 14. ステージングDBは現在バージョン14になっている。")
    old_en, old_ja = first["ids"]
    second = ingest(vault, "The staging DB is at version 15 now. ステージングDBはバージョン15です。")
    assert [(i["kind"], i["action"]) for i in second["items"]] == [("state", "updated"), ("state", "updated")]
    assert (second["created"], second["updated"]) == (0, 2)
    assert old_en in second["items"][0]["reason"] and old_ja in second["items"][1]["reason"]
    by_id = {card_meta(p)["id"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    assert by_id[old_en]["status"] == "superseded" and by_id[old_en]["superseded_by"] == second["ids"][0]
    assert by_id[second["ids"][0]]["supersedes"] == old_en and "status" not in by_id[second["ids"][0]]
    hits = ok_data("search", "staging DB version")["hits"]
    assert [h["id"] for h in hits] == [second["ids"][0]]
    # a state about something else stands beside it; a fact is never replaced by a state
    third = ingest(vault, "The staging DB is down.")
    assert third["items"][0]["action"] == "created"


def test_the_text_output_says_what_an_update_superseded(vault):
    # review6: "updated  state  The staging DB is at version 15 now  (Playbooks/State_...)" named a
    # new file and not the card it replaced, so "updated" read as an edit of that new file.
    old = ingest(vault, "The staging DB is at version 14.")["items"][0]
    code, out, err = run_cli("ingest", "-", "--event-time", MOMENT, stdin="The staging DB is at version 15 now.")
    assert (code, err) == (0, "")
    line = out.splitlines()[1]
    assert line.startswith("  updated  state    The staging DB is at version 15 now  (Playbooks/"), line
    assert line.endswith(f"[supersedes {old['id']} (The staging DB is at version 14): same subject "
                         "'staging db|is|version']"), line


def test_event_times_place_each_state_in_time_even_when_they_arrive_late(vault):
    def at(moment: str, text: str) -> dict:
        path = vault.parent / "input.txt"
        path.write_text(text, encoding="utf-8")
        return ok_data("ingest", str(path), "--event-time", moment)

    def shown(*args: str) -> list[str]:
        return [hit["title"] for hit in ok_data("search", "staging DB version", *args)["hits"]]

    v14 = at("2026-11-01T09:00:00+00:00", "The staging DB is at version 14.")["ids"][0]
    v15 = at("2026-11-10T09:00:00+00:00", "The staging DB is at version 15.")["ids"][0]
    by_id = {card_meta(p)["id"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    # The change happened at the event time, not when it was ingested.
    assert str(by_id[v14]["valid_to"]) == str(by_id[v15]["valid_from"]) == "2026-11-10T09:00:00+00:00"
    assert shown("--as-of", "2026-11-05") == ["The staging DB is at version 14"]
    assert shown() == shown("--as-of", "2026-11-12") == ["The staging DB is at version 15"]
    # Two statements arrive late: 13 from before 14, and 14.5 from between 14 and 15.
    v13 = at("2026-10-20T09:00:00+00:00", "The staging DB is at version 13.")["items"][0]
    assert v13["action"] == "created" and v13["reason"].startswith(f"kept as history: older than {v14}")
    v145 = at("2026-11-07T09:00:00+00:00", "The staging DB is at version 14.5.")["items"][0]
    assert v145["action"] == "created" and v145["reason"].startswith(f"kept as history: older than {v15}")
    assert shown() == ["The staging DB is at version 15"]          # the current state is left alone
    for moment, title in [("2026-10-25", "13"), ("2026-11-05", "14"), ("2026-11-08", "14.5"), ("2026-11-11", "15")]:
        assert shown("--as-of", moment) == [f"The staging DB is at version {title}"], moment
    by_id = {card_meta(p)["id"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    assert str(by_id[v14]["valid_to"]) == "2026-11-07T09:00:00+00:00"   # cut where 14.5 began
    assert by_id[v145["id"]]["status"] == "superseded" and by_id[v145["id"]]["superseded_by"] == v15
    # The whole late ingest is one undoable operation: 14 ends at 15's start again.
    ingested = [e for e in events(vault) if e["event"] == "ingested"][-1]
    ok_data("undo", ingested["eid"])
    assert str(card_meta(next((vault / "Playbooks").glob("*version_14.md")))["valid_to"]) == "2026-11-10T09:00:00+00:00"


def test_an_exact_duplicate_is_skipped_and_named(vault):
    first = ingest(vault, "Postgres is a relational database. I deployed the API on 2026-11-20.")
    again = ingest(vault, "Postgres is a relational database.\nI deployed the API on 2026-11-20.\n"
                          "Postgres is a relational database.")
    assert [i["action"] for i in again["items"]] == ["skipped"] * 3
    assert [i["id"] for i in again["items"][:2]] == first["ids"]
    assert "exact duplicate" in again["items"][0]["reason"]
    assert len(list((vault / "Playbooks").glob("*.md"))) == 2


def test_idempotency_key_replay_writes_nothing_and_returns_the_first_result(vault):
    first = ingest(vault, ENGLISH, "--idempotency-key", "req-1")
    files, log = file_hashes(vault), events(vault)
    again = ingest(vault, ENGLISH, "--idempotency-key", "req-1")
    assert again["replayed"] is True and again["ingest_id"] == first["ingest_id"]
    assert {k: again[k] for k in ("created", "updated", "skipped", "ids", "items")} == \
        {k: first[k] for k in ("created", "updated", "skipped", "ids", "items")}
    assert file_hashes(vault) == files and events(vault) == log
    path = vault.parent / "other.txt"
    path.write_text("Something else entirely is true now.", encoding="utf-8")
    code, envelope, _ = run_json("ingest", str(path), "--idempotency-key", "req-1")
    assert code == 1 and envelope["error"]["code"] == "CONFLICT" and "req-1" in envelope["error"]["message"]
    assert file_hashes(vault) == files and events(vault) == log


def test_concurrent_ingests_with_one_idempotency_key_write_once(vault):
    import os
    import subprocess
    import sys

    from helpers import SCRIPT

    path = vault.parent / "same.txt"
    path.write_text(ENGLISH, encoding="utf-8")
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    workers = [subprocess.Popen([sys.executable, str(SCRIPT), "ingest", str(path), "--idempotency-key", "k-1",
                                 "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for _ in range(3)]
    answers = [json.loads(w.communicate(timeout=60)[0])["data"] for w in workers]
    assert all(w.returncode == 0 for w in workers)
    assert sorted(a["replayed"] for a in answers) == [False, True, True]
    assert len({tuple(a["ids"]) for a in answers}) == 1
    assert len([e for e in events(vault) if e["event"] == "ingested"]) == 1
    assert len(list((vault / "Playbooks").glob("*.md"))) == 7


def test_trivial_text_creates_nothing(vault):
    data = ingest(vault, "ok.\nはい。\nThanks!\nおはようございます\nlol\nIs it?\n- \n")
    assert data["created"] == data["updated"] == 0 and data["ids"] == []
    assert all(i["action"] == "skipped" and i["kind"] is None for i in data["items"])
    assert not list((vault / "Playbooks").glob("*.md"))


def test_relative_dates_are_made_absolute_from_the_event_time(vault):
    data = ingest(vault, "Last Monday we met the vendor. 3日前にリリースした。\nThe migration finished today.\n"
                         "昨日のデプロイは失敗した。Two weeks ago we hired Ana. The audit was on 2026-10-01.")
    assert [i["statement"] for i in data["items"]] == [
        "On 2026-11-16 we met the vendor", "2026-11-20にリリースした", "The migration finished on 2026-11-23",
        "2026-11-22のデプロイは失敗した", "On 2026-11-09 we hired Ana", "The audit was on 2026-10-01"]


def test_agent_scope_is_respected(vault):
    ingest(vault, "The staging DB is at version 14.")
    private = ingest(vault, "The staging DB is at version 15. The budget is at 80%.", "--scope", "agent",
                     "--agent", "finance")
    # an agent's memory never replaces a global one: it is created beside it
    assert [i["action"] for i in private["items"]] == ["created", "created"]
    assert all(card_meta(p).get("status") != "superseded" for p in (vault / "Playbooks").glob("*.md"))
    assert ok_data("search", "budget")["hits"] == []
    assert [h["id"] for h in ok_data("search", "budget", "--agent", "finance")["hits"]] == [private["ids"][1]]
    assert ok_data("search", "budget", "--agent", "ops")["hits"] == []
    # docs/compatibility.md, Ingest: scope defaults to global; --agent alone names the sender, it does not make a card private
    shared = ingest(vault, "The deploy freeze is in effect until Friday now.", "--agent", "finance")
    assert [h["id"] for h in ok_data("search", "deploy freeze", "--agent", "ops")["hits"]] == shared["ids"]
    assert [e for e in events(vault) if e["event"] == "ingested"][-1]["agent"] == "finance"
    code, out, err = run_cli("ingest", "-", "--scope", "agent", stdin="The budget is at 90%.")
    assert (code, out) == (2, "") and err == "brain: error: scope agent needs an agent (agent_id / --agent NAME)\n"


def test_undo_of_an_ingest_takes_all_of_it_back(vault):
    ingest(vault, "The staging DB is at version 14. Postgres is a relational database.")
    before = file_hashes(vault)
    data = ingest(vault, ENGLISH.replace("version 14", "version 15"))
    assert data["updated"] == 1 and data["created"] == 5
    ok_data("undo", data["ingest_id"])
    assert file_hashes(vault) == before


def test_two_statements_that_each_replace_one_card_write_it_once_and_undo(vault):
    """Two statements of one ingest, each judged to replace the same card (a fact and a state of
    one service): each planned its rewrite from the card's text on disk. The second rewrite was
    compared with that text and found the first: CONFLICT, every time the text was sent (and
    before the check, an event naming the file twice that `undo` refused)."""
    old = ingest(vault, "The api-gateway service runs on Node 18.")["ids"][0]
    before = file_hashes(vault)
    data = ingest(vault, "The api-gateway service runs on Node 20.\napi-gateway is on Node 22 now.\n")
    assert [(i["kind"], i["action"]) for i in data["items"]] == [("fact", "updated"), ("state", "updated")]
    by_id = {card_meta(p)["id"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    assert by_id[old]["status"] == "superseded" and by_id[old]["superseded_by"] == data["ids"][1]
    [ingested] = [e for e in events(vault) if e["event"] == "ingested"][-1:]
    paths = [item["path"] for item in ingested["files"]]
    assert len(paths) == len(set(paths)) == 3
    ok_data("undo", data["ingest_id"])
    assert file_hashes(vault) == before


def test_dry_run_and_bad_input_write_nothing(vault):
    before, log = file_hashes(vault), events(vault)
    data = ingest(vault, ENGLISH, "--dry-run")
    assert data["dry_run"] is True and data["created"] == 7 and data["ingest_id"] is None
    empty = vault.parent / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    for argv, message in (
            ((str(empty),), "brain: error: text is empty; give the raw text to ingest\n"),
            ((str(empty) + ".missing",), None),
            (("-", "--event-time", "last tuesday"), None)):
        code, out, err = run_cli("ingest", *argv, stdin="The DB is down.")
        assert code == 2 and out == "", err
        if message:
            assert err == message
    assert file_hashes(vault) == before and events(vault) == log


@pytest.mark.parametrize("step", STEPS)
def test_an_ingest_killed_at_each_step_is_finished_by_the_next_write_and_undoable(vault, step):
    ingest(vault, "The staging DB is at version 14.")
    before = file_hashes(vault)
    path = vault.parent / "kill.txt"
    path.write_text(ENGLISH.replace("version 14", "version 15"), encoding="utf-8")
    killed_at(step, "ingest", str(path), vault=vault)
    ok_data("remember", "next-write", "--body", "rolls the journal forward")
    assert pending_journal(vault) == [] and temp_files(vault) == []
    ingested = [e for e in events(vault) if e["event"] == "ingested"]
    assert len(ingested) == 2 and len({e["eid"] for e in ingested}) == 2   # finished once, not repeated
    last = ingested[-1]
    cards = {p.relative_to(vault).as_posix(): card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    assert sorted(f["path"] for f in last["files"]) == sorted(cards)   # the log names every card written
    assert sum(1 for c in cards.values() if c.get("status") == "superseded") == 1
    ok_data("undo", last["eid"])
    assert {k: v for k, v in file_hashes(vault).items() if k.startswith("Playbooks/")} == \
        {k: v for k, v in before.items() if k.startswith("Playbooks/")}


# ---------------------------------------------------------------------------- the chat model

class ChatModel(LoopbackServer):
    """A real Ollama / OpenAI-compatible chat server on 127.0.0.1 whose answer a test sets."""

    def __init__(self) -> None:
        import time
        from http.server import BaseHTTPRequestHandler

        self.mode = "ok"
        self.statements = [{"text": "The staging DB is at version 15", "kind": "state", "subject": "staging db|version"},
                           {"text": "We moved the office to Osaka yesterday", "kind": "episode", "subject": ""}]
        self.requests: list[tuple[str, dict, dict]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append((self.path, body, dict(self.headers)))
                if model.mode == "500":
                    return reply_json(self, 500, b'{"error": "boom"}')
                if model.mode == "slow":
                    time.sleep(2)
                content = {"ok": json.dumps({"statements": model.statements}), "badjson": "{not json",
                           "shape": json.dumps({"statements": [{"text": "x", "kind": "opinion"}]}),
                           "slow": "{}"}[model.mode]
                if self.path.endswith("/api/chat"):
                    payload = {"model": body["model"], "message": {"role": "assistant", "content": content},
                               "done": True}
                else:
                    payload = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
                reply_json(self, 200, json.dumps(payload).encode())

        super().__init__(Handler)


@pytest.fixture
def chat_model():
    server = ChatModel()
    yield server
    server.stop()


def configure_model(vault, provider: str, port: int, timeout: float = 20.0, **extra: str) -> None:
    url = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    lines = ["[ingest]", f'provider = "{provider}"', 'model = "toy"', f'url = "{url}"', f"timeout = {timeout}",
             *(f'{k} = "{v}"' for k, v in extra.items())]
    (vault / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("provider", ("ollama", "openai"))
def test_a_configured_chat_model_extracts_and_classifies(vault, chat_model, provider, monkeypatch):
    monkeypatch.setenv("TEST_CHAT_KEY", "sk-chat")
    configure_model(vault, provider, chat_model.port,
                    **({"api_key_env": "TEST_CHAT_KEY"} if provider == "openai" else {}))
    data = ingest(vault, "staging db went from 14 to 15; also we moved the office yesterday, lol",
                  "--idempotency-key", "chat-1")
    assert [(i["statement"], i["kind"], i["action"], i["reason"]) for i in data["items"]] == [
        ("The staging DB is at version 15", "state", "created", "model toy"),
        ("We moved the office to Osaka on 2026-11-22", "episode", "created", "model toy")]
    assert data["warnings"] == []
    state = next(card_meta(p) for p in (vault / "Playbooks").glob("State_*.md"))
    assert state["subject"] == "staging db|version"
    path, body, headers = chat_model.requests[-1]
    assert body["model"] == "toy" and body["messages"][-1]["content"].startswith("staging db went")
    if provider == "ollama":
        assert path == "/api/chat" and body["format"] == "json" and body["stream"] is False
    else:
        assert path == "/v1/chat/completions" and body["response_format"] == {"type": "json_object"}
        assert headers["Authorization"] == "Bearer sk-chat"
    # a replay answers from the log without asking the model again
    again = ingest(vault, "staging db went from 14 to 15; also we moved the office yesterday, lol",
                   "--idempotency-key", "chat-1")
    assert again["replayed"] is True and again["ids"] == data["ids"] and len(chat_model.requests) == 1


@pytest.mark.parametrize("mode, message", (
    ("500", "answered HTTP 500"), ("badjson", "not JSON"), ("shape", "a statement that is not"),
    ("slow", "did not answer within 0.3 s ([ingest] timeout)"), ("refused", "is unreachable")))
def test_every_chat_model_failure_falls_back_to_the_rules_with_one_warning(vault, chat_model, mode, message):
    rules = ingest(vault, ENGLISH, "--dry-run")
    # Generous except where the test is the timeout: a loaded machine must not turn a fast bad
    # answer into a timeout.
    configure_model(vault, "ollama", chat_model.port, timeout=0.3 if mode == "slow" else 20.0)
    if mode == "refused":
        chat_model.stop()
    chat_model.mode = mode
    path = vault.parent / "input.txt"
    code, out, err = run_cli("ingest", str(path), "--event-time", MOMENT, "--json")
    data = json.loads(out)["data"]
    assert code == 0 and pairs(data) == pairs(rules) and data["created"] == 7
    assert len(data["warnings"]) == 1 and message in data["warnings"][0] and "used the rules" in data["warnings"][0]
    assert err.count("brain: warning:") == 1
    if mode == "refused":
        chat_model.__init__()  # the fixture stops it again


# ---------------------------------------------------------------------------- the rules, piece by piece

@pytest.mark.parametrize("text, expected", (
    ("We use Python 3.11 and v1.2.3 of the SDK, e.g. for the CLI. Dr. Smith approved it.",
     ["We use Python 3.11 and v1.2.3 of the SDK, e.g. for the CLI", "Dr. Smith approved it"]),
    ("The API runs at 2.5 req/s in the U.S. region. it is slow.", ["The API runs at 2.5 req/s in the U.S. region",
                                                                   "it is slow"]),
    ("I fixed the login bug; the dashboard is loading slowly.", ["I fixed the login bug", "the dashboard is loading slowly"]),
    ("Use a; b", ["Use a; b"]),                                    # halves too short to stand alone: kept whole
    ("ログインのバグを直した、そして管理画面の表示を確認した。", ["ログインのバグを直した", "管理画面の表示を確認した"]),
    ("* ＡＰＩサーバーは　ｶﾞｰﾄﾞ付きで動いている！\n1. Note to self: the backup job runs nightly",
     ["APIサーバーは ガード付きで動いている!", "The backup job runs nightly"]),
))
def test_splitting_and_normalising(text, expected):
    from datetime import datetime

    from external_brain.intake.statements import extract

    assert [s.text for s in extract(text, datetime.fromisoformat(MOMENT))] == expected


def test_a_statement_told_later_replaces_one_told_earlier_though_it_names_an_earlier_time(vault):
    def at(moment: str, text: str) -> dict:
        path = vault.parent / "input.txt"
        path.write_text(text, encoding="utf-8")
        return ok_data("ingest", str(path), "--event-time", moment)

    fukuoka = at("2026-11-04T21:00:00+09:00", "福岡に住んでいる。")["ids"][0]
    sapporo = at("2026-11-21T21:00:00+09:00", "先月、札幌に引っ越した。")["items"][0]
    assert sapporo["action"] == "updated"
    by_id = {card_meta(p)["id"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    assert by_id[fukuoka]["status"] == "superseded" and by_id[fukuoka]["superseded_by"] == sapporo["id"]
    assert by_id[sapporo["id"]].get("status", "active") != "superseded"
    # the replaced card ends where it began, never before
    assert str(by_id[fukuoka]["valid_to"]) == str(by_id[fukuoka]["valid_from"]) == "2026-11-04T21:00:00+09:00"


def test_a_condition_told_in_the_perfect_and_a_new_habit_are_states_that_update(vault):
    def at(moment: str, text: str) -> dict:
        path = vault.parent / "input.txt"
        path.write_text(text, encoding="utf-8")
        return ok_data("ingest", str(path), "--event-time", moment)

    first = at("2026-11-12T21:00:00+09:00", "The wildcard certificate has already expired. 最近は朝8時に起きている。")
    assert [item["kind"] for item in first["items"]] == ["state", "state"]
    second = at("2026-11-13T21:00:00+09:00",
                "The wildcard certificate is valid again after this morning's renewal. 最近は朝6時に起きるようになった。")
    assert [(item["kind"], item["action"]) for item in second["items"]] == [("state", "updated"), ("state", "updated")]
    assert second["items"][0]["statement"] == \
        "The wildcard certificate is valid again after the 2026-11-13 (this morning) renewal"
    by_id = {card_meta(p)["id"]: card_meta(p) for p in (vault / "Playbooks").glob("*.md")}
    for old, new in zip(first["ids"], second["ids"]):
        assert by_id[old]["status"] == "superseded" and by_id[old]["superseded_by"] == new
