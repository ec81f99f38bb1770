"""The judgement of relevance (search/relevance.py) through the real doors: the prompt hook and
search say "nothing" for chit-chat and for what the vault does not hold and still find a
paraphrased question; katakana words do not match through shared bigrams; --explain and the
hooks' "why" show the words as typed; the memory types filter (docs/compatibility.md); an agent's miss stays its own.
(Measured on a labelled set by tests/bench/eval_hook.py; these are the cases the issue named.)"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from helpers import ROOT, ok_data, run_cli, run_json, write_card
from test_hooks import context_of, hook, payload


@pytest.fixture
def example_vault(vault):
    """The repository's own example cards, copied into the test vault."""
    for card in (ROOT / "Playbooks").glob("*.md"):
        shutil.copy(card, vault / "Playbooks" / card.name)
    return vault


# ---------------------------------------------------------------------------- the prompt hook

@pytest.mark.parametrize("prompt", ["thanks, that works", "can you make the button blue",
                                    "write a haiku about autumn", "写真を外付けドライブにバックアップしたい",
                                    "add a dark mode toggle to the settings page"])
def test_chit_chat_and_topics_the_vault_lacks_inject_nothing(example_vault, prompt):
    output, _ = hook(example_vault, "prompt", payload("UserPromptSubmit", prompt=prompt))
    assert output is None


def test_a_paraphrased_prompt_still_gets_the_right_card_with_the_words_as_typed(example_vault):
    output, _ = hook(example_vault, "prompt", payload(
        "UserPromptSubmit", prompt="our fargate task can't reach the partner's HTTPS endpoint, every call times out"))
    text = context_of(output, "UserPromptSubmit")
    first = text.split("\n2. ")[0]
    assert "**ECS External API Timeout via SG Egress**" in first
    assert "why: matches fargate, task, reach" in first           # words, not stems or fragments
    output, _ = hook(example_vault, "prompt", payload(
        "UserPromptSubmit", prompt="本番の ECS にデプロイする前に何を確認すればいい？"))
    text = context_of(output, "UserPromptSubmit")
    assert "**ECS デプロイ前チェックリスト**" in text
    assert "why: matches 本番, ECS, デプロイ, 前, 確認" in text and "デプ," not in text


def injected(output) -> list[str]:
    """The card titles a prompt hook injected, in order."""
    if output is None:
        return []
    return re.findall(r"^\d+\. \*\*(.+?)\*\*", context_of(output, "UserPromptSubmit"), re.M)


def test_a_long_prompt_with_words_the_vault_lacks_still_gets_its_card(example_vault):
    # Many words no card has (froze, vendor, recv_into, idle, kills, pod): each says little
    # against a card that holds the distinctive ones (requests, py-spy, dump, thread); a share
    # of the prompt's weight counted each of them at full weight and injected nothing.
    prompt = ("my worker script calling a vendor api with requests froze again; py-spy dump shows the thread "
              "waiting in recv_into, no exception, cpu idle, and it sits there until someone kills the pod by hand")
    assert "Python requests Hangs Forever Without a Timeout" in \
        injected(hook(example_vault, "prompt", payload("UserPromptSubmit", prompt=prompt))[0])


@pytest.mark.parametrize("prompt, title", [
    ("Expo で react-native-screens を入れたら画面遷移でアプリが落ちる",
     "Expo Fabric Crash Fixed by Pinning react-native-screens"),
    ("Python 3.11 の tomllib で設定ファイルを書き出したい", "Python 3.11 Ships tomllib but No TOML Writer")])
def test_a_japanese_prompt_gets_an_english_card_through_the_words_it_can_hold(example_vault, prompt, title):
    # A card written in English cannot hold the prompt's Japanese words: they count neither for
    # nor against it, and the words it could hold decide.
    assert injected(hook(example_vault, "prompt", payload("UserPromptSubmit", prompt=prompt))[0]) == [title]


def test_japanese_chit_chat_still_gets_nothing(example_vault):
    assert hook(example_vault, "prompt", payload("UserPromptSubmit", prompt="今日の昼ごはんは何にしよう"))[0] is None


def test_a_card_far_less_likely_than_the_best_is_left_out(example_vault):
    # The Japanese ECS checklist ranks first on ECR, イメージ, push, 認証, 失敗; the WSL2 runbook
    # holds WSL2, Ubuntu, ECR and push, and is far likelier: only it is injected.
    prompt = "WSL2 の Ubuntu から ECR にイメージを push しようとすると認証で失敗する"
    assert injected(hook(example_vault, "prompt", payload("UserPromptSubmit", prompt=prompt))[0]) == \
        ["ECR Push from WSL2"]


def test_closed_class_words_are_general():
    import sys

    sys.path.insert(0, str(ROOT / "runtime"))
    from external_brain.search.analysis import query_words
    from external_brain.search.relevance import is_general

    words = {w.text: is_general(w) for w in query_words("all clients must only retry those calls")}
    assert words == {"all": True, "clients": False, "must": True, "only": True, "retry": False,
                     "those": True, "calls": True}


def test_the_odds_worked_out_by_hand():
    import math
    import sys

    sys.path.insert(0, str(ROOT / "runtime"))
    from external_brain.search.relevance import CONTEXT, SEARCH, is_relevant, keyword_odds, odds

    # 5 nats matched, two words unmatched at 0.5 each, one card in 100: 5 - 1 - ln 100.
    assert keyword_odds(5.0, 2.0, 100) == 5.0 - 1.0 - math.log(100)
    assert keyword_odds(0.0, 0.0, 0) == 0.0                      # an empty vault: no prior to beat
    assert odds(-0.5) == odds(-0.5, 3.0) == odds(-0.5, 1.0) == -0.5   # a low lift takes nothing away
    assert odds(-0.5, 5.0) == 0.5                                # two spreads over 3 add one nat
    # Context: the share's bar (0.5, two words held) or the odds' (-1); a card 2 nats under the
    # best is left out.
    assert is_relevant(0.51, use=CONTEXT, held=2) and not is_relevant(0.49, use=CONTEXT, support=-1.01, held=2)
    assert is_relevant(0.1, use=CONTEXT, support=-0.99)
    assert not is_relevant(0.9, use=CONTEXT, support=1.0, best=3.01) and is_relevant(0.9, use=CONTEXT, support=1.0,
                                                                                    best=2.99)
    # The search floor judges the share alone.
    assert is_relevant(0.1, use=SEARCH) and not is_relevant(0.09, use=SEARCH, support=9.0)


@pytest.mark.parametrize("prompt", ["great job, let's call it a day", "thanks, great job"])
def test_chit_chat_sharing_one_common_word_with_cards_injects_nothing(example_vault, prompt):
    # "job" is the only word left once the general ones are set aside, and three cards hold it
    # (pytest ... the Job Timeout, Nightly Export, the Orders DB state): most of the prompt by
    # share, yet one word is one piece of evidence, and it is too common to carry the odds.
    assert hook(example_vault, "prompt", payload("UserPromptSubmit", prompt=prompt))[0] is None
    # A real paraphrase that shares "job" and more with a card still gets it.
    assert injected(hook(example_vault, "prompt", payload(
        "UserPromptSubmit", prompt="the partner export has been stuck since 1am waiting on the http response"))[0]) \
        == ["2026-10-07 Nightly Export Stuck 9 Hours on a Hung HTTP Call"]


@pytest.mark.parametrize("prompt", ["write a sql query that counts orders per customer",
                                    "convert 350 seconds to minutes", "sort this list of names alphabetically"])
def test_a_general_request_to_produce_something_injects_nothing(example_vault, prompt):
    # Each shares words with a card (SQL, queries, orders; 350 seconds; sort, list, names), and
    # a request to make something is general work far more often than it is about a card.
    assert hook(example_vault, "prompt", payload("UserPromptSubmit", prompt=prompt))[0] is None
    # One that names what the vault holds still gets it.
    assert "Python requests Hangs Forever Without a Timeout" in injected(hook(example_vault, "prompt", payload(
        "UserPromptSubmit", prompt="add a timeout to the requests.get call in fetch_report so it cannot hang forever"))[0])


def test_the_share_needs_two_words_and_a_request_lowers_the_prior():
    import math
    import sys

    sys.path.insert(0, str(ROOT / "runtime"))
    from external_brain.search.relevance import (CONTEXT, SEARCH, TASK_SHAPE, is_relevant, keyword_odds, odds,
                                                 prompt_shape)

    # Most of the query by share, but one word held: judged by its odds alone.
    assert not is_relevant(0.84, use=CONTEXT, support=-2.8, held=1)
    assert is_relevant(0.84, use=CONTEXT, support=-2.8, held=2)
    assert is_relevant(0.84, use=CONTEXT, support=-0.9, held=1)          # a rare word carries itself
    assert is_relevant(0.84, use=SEARCH, held=1)                          # a search was asked for
    # The share's bar is more than half of the query.
    assert not is_relevant(0.45, use=CONTEXT, support=-1.5, held=3) and is_relevant(0.5, use=CONTEXT, held=2)
    # A request to produce something takes TASK_SHAPE nats off every card's odds.
    assert keyword_odds(5.0, 2.0, 100, TASK_SHAPE) == 5.0 - 1.0 - math.log(100) - TASK_SHAPE
    for text in ("write a sql query that counts orders per customer", "Can you please convert 350 seconds to minutes",
                 "let's sort this list", "この関数に型ヒントを付けて", "Python で素数を判定する関数を書いてください"):
        assert prompt_shape(text) == TASK_SHAPE, text
    for text in ("how do I write a toml file from python", "fix the flaky test", "explain the outbox pattern",
                 "バックアップから復元する手順を教えて", "ECS のタスクが外部 API に繋がらない", "thanks, great job"):
        assert prompt_shape(text) == 0.0, text
    # A vector adds odds only for a card that clears ODDS_LIFT_ORIGIN (3 spreads).
    assert odds(-0.5, 2.9) == odds(-0.5, 3.0) == -0.5 and odds(-0.5, 5.0) == 0.5


# ---------------------------------------------------------------------------- the search floor

def test_a_search_for_chit_chat_finds_nothing_and_keeps_the_miss(example_vault):
    data = ok_data("search", "thanks, that works")
    assert data["hits"] == [] and data["miss_candidate"].startswith("Inbox/Search_Miss_")
    assert ok_data("search", "make the button blue")["hits"] == []
    assert ok_data("search", "write a haiku about autumn")["hits"] == []
    # A real question still finds its card.
    assert ok_data("search", "requests hangs without timeout")["hits"][0]["title"] == \
        "Python requests Hangs Forever Without a Timeout"


# ---------------------------------------------------------------------------- Japanese

def test_a_katakana_word_does_not_match_another_through_shared_bigrams(vault):
    write_card(vault, "Playbooks/Runbook_本番の切り戻し.md",
               "---\ntitle: 本番の切り戻し\ntype: runbook\ndomain: ops\ntags: [ロールバック]\n---\n"
               "ロールバックは直前のタスク定義に戻す。\n")
    write_card(vault, "Playbooks/Runbook_サーバー停止.md",
               "---\ntitle: サーバー停止\ntype: runbook\ndomain: ops\ntags: [server]\n---\nサーバーを止める手順。\n")
    # バックアップ shares バッ and ック with ロールバック, and nothing else.
    assert ok_data("search", "バックアップ")["hits"] == []
    assert [h["title"] for h in ok_data("search", "ロールバック")["hits"]] == ["本番の切り戻し"]
    # A word spelled without its final long-vowel mark is the same word.
    assert [h["title"] for h in ok_data("search", "サーバ")["hits"]] == ["サーバー停止"]


def test_explain_shows_the_words_as_typed(vault):
    ok_data("create", "--type", "runbook", "--domain", "ops", "--tags", "billing",
            "--title", "Resend failed invoices", "--body", "Invoices that failed are sent again by the job.")
    ok_data("create", "--type", "checklist", "--domain", "ops", "--tags", "ecs",
            "--title", "ECS デプロイ前の確認", "--body", "デプロイの前にタスク定義を確認する。")
    code, out, _ = run_cli("search", "invoices failed", "--explain")
    assert code == 0 and 'why "invoices":' in out and 'why "failed":' in out
    assert "invoic'" not in out and "'invoic" not in out
    [hit] = ok_data("search", "invoices failed", "--explain")["hits"]
    assert list(hit["matched_words"]) == ["invoices", "failed"]
    assert hit["matched_words"]["invoices"]["terms"] == ["invoic"]
    code, out, _ = run_cli("search", "デプロイ前の確認", "--explain")
    assert 'why "デプロイ":' in out and 'why "確認":' in out
    assert "'デプ'" not in out and "'プロ'" not in out


def test_a_lone_hiragana_particle_is_grammar_not_a_word(vault):
    # "の" between two Latin words is a particle: a card holding it is no likelier to be about
    # the query, and "why" does not show it.
    write_card(vault, "Playbooks/Runbook_ECS_の_タスク.md",
               "---\ntitle: ECS の タスク定義\ntype: runbook\ndomain: ops\n---\nECS の タスク定義を S3 の バケットから読む。\n")
    [hit] = ok_data("search", "ECS の タスク定義", "--explain")["hits"]
    assert list(hit["matched_words"]) == ["ECS", "タスク", "定義"]


# ---------------------------------------------------------------------------- memory types

def test_seed_000_types_filter_the_cli_and_an_unknown_type_or_domain_is_a_usage_error(vault):
    write_card(vault, "Playbooks/Troubleshooting_Celery_worker_stuck.md",
               "---\ntitle: Celery worker stuck\ntype: troubleshooting\ndomain: dev\ntags: [celery]\n"
               "memory_type: success\n---\nRestart the worker with -Q reports.\n")
    write_card(vault, "Playbooks/Troubleshooting_Celery_retry_storm.md",
               "---\ntitle: Celery retry storm\ntype: troubleshooting\ndomain: dev\ntags: [celery]\n"
               "memory_type: failure\n---\nRaising the retry count made the celery backlog worse.\n")
    assert [c["title"] for c in ok_data("list", "--type", "success")["cards"]] == ["Celery worker stuck"]
    assert [c["title"] for c in ok_data("list", "--type", "failure")["cards"]] == ["Celery retry storm"]
    assert [h["title"] for h in ok_data("search", "celery", "--type", "failure")["hits"]] == ["Celery retry storm"]
    assert len(ok_data("search", "celery", "--type", "troubleshooting")["hits"]) == 2
    for argv in (["search", "celery", "--type", "bogus"], ["list", "--type", "bogus"], ["list", "--domain", "nope"]):
        code, out, err = run_cli(*argv)
        assert code == 2 and out == "", argv
        assert err.startswith("brain: error: unknown "), err
    code, envelope, _ = run_json("search", "celery", "--type", "bogus")
    assert code == 2 and envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert not list((vault / "Inbox").glob("Search_Miss_*.md"))     # a typo is no miss to keep
    # A type some card uses, though the settings do not list it, filters as any other.
    write_card(vault, "Playbooks/Howto_Celery_beat.md",
               "---\ntitle: Celery beat\ntype: howto\ndomain: dev\n---\nRun beat once.\n")
    assert [c["title"] for c in ok_data("list", "--type", "howto")["cards"]] == ["Celery beat"]


# ---------------------------------------------------------------------------- an agent's miss

def test_an_agents_miss_stays_in_that_agents_scope(vault):
    data = ok_data("search", "kafka consumer lag on the orders topic", "--agent", "alice")
    candidate = data["miss_candidate"]
    assert candidate
    text = (vault / candidate).read_text(encoding="utf-8")
    assert "\nscope: agent\n" in text and "\nagent: alice\n" in text
    # Not in the shared Inbox listing, nor another agent's; alice sees it.
    assert ok_data("list", "--inbox")["cards"] == []
    assert ok_data("list", "--inbox", "--agent", "bob")["cards"] == []
    assert [c["path"] for c in ok_data("list", "--inbox", "--agent", "alice")["cards"]] == [candidate]
    # The same query by bob is his own candidate; by alice again, hers is bumped.
    bob = ok_data("search", "kafka consumer lag on the orders topic", "--agent", "bob")["miss_candidate"]
    assert bob != candidate
    assert ok_data("search", "kafka consumer lag on the orders topic", "--agent", "alice")["miss_candidate"] == candidate
    assert "\nmisses: 2\n" in (vault / candidate).read_text(encoding="utf-8")
    exported = [json.loads(line) for line in run_cli("export")[1].splitlines()]
    assert not any("kafka" in json.dumps(row) for row in exported)   # nor in a shared export


def test_the_search_floor_and_the_context_decision_are_two_functions():
    # docs/decisions/0031, "The search floor with vectors": the search floor (someone asked) is
    # `answers_search`; a vector may lower its bar (both halves point at the card) but never
    # raise it, so hybrid never says "nothing" where the words alone answer. Context keeps its
    # own judgement (`is_relevant`, CONTEXT), where a low lift still raises the bar.
    from external_brain.search.relevance import CONTEXT, SEARCH, answers_search, is_relevant

    assert answers_search(0.12) and answers_search(0.12, lift=0.5) and answers_search(0.12, lift=-2.0)
    assert not answers_search(0.09) and not answers_search(0.09, lift=1.0) and not answers_search(0.0, lift=2.4)
    assert answers_search(0.04, lift=3.0) and answers_search(0.0, lift=3.6)   # far above the vault: lowered
    assert answers_search(0.0, lift=1.0, close=True)                          # as close as a link
    assert is_relevant(0.12, 0.5, SEARCH) == answers_search(0.12, 0.5)        # one rule, either name
    assert not is_relevant(0.52, 0.5, CONTEXT, held=2)   # context: a low lift still raises its bar
    assert is_relevant(0.52, 2.5, CONTEXT, held=2)
