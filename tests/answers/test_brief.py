"""`brief`: working memory first, ranked cards with why and action, states by age, the budget."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest

from helpers import events, ok_data, run_cli, vault_hashes, write_card


def create(*extra: str) -> dict:
    return ok_data("create", *extra)


def ecs_card(importance: str = "4") -> dict:
    return create("--type", "troubleshooting", "--domain", "infra", "--tags", "ecs,timeout",
                  "--title", "ECS External API Timeout via SG Egress", "--importance", importance,
                  "--body", "## Symptoms\nCalls time out after 30 s.\n\n## Fix\nAllow egress 443 in the SG.")


def test_working_memory_comes_first_then_cards_with_why_and_action(vault):
    ecs_card()
    run_cli("remember", "current-task", "--body", "ECS deploy of api in progress")
    code, out, err = run_cli("brief", "ecs timeout")
    assert code == 0, err
    assert out.index("## Working memory") < out.index('## Cards for "ecs timeout"')
    assert "- current-task (updated just now): ECS deploy of api in progress" in out
    assert "1. **ECS External API Timeout via SG Egress** (troubleshooting/infra)" in out
    assert "why: matches ecs, timeout; importance 4; updated just now" in out
    assert "confidence 0.50: apply and verify" in out
    assert "   Allow egress 443 in the SG.\n" in out     # what the card says: its fix, not its title alone


def test_nothing_relevant_says_so_in_one_line_and_changes_nothing(vault):
    ecs_card()
    before = vault_hashes(vault)
    logged = len(events(vault))
    code, out, err = run_cli("brief", "kafka consumer lag")
    assert (code, out, err) == (0, 'Nothing in the vault is relevant to "kafka consumer lag".\n', "")
    data = ok_data("brief", "kafka consumer lag")
    assert data["cards"] == [] and data["working_memory"] == [] and data["left_out"] == 0
    assert data["markdown"] == 'Nothing in the vault is relevant to "kafka consumer lag".\n'
    code, out, err = run_cli("brief", "--project", "nosuchproject")
    assert out == "Nothing in the vault for project nosuchproject: no live working memory and no cards of it.\n"
    # A read: no search-miss candidate, no event, no file touched.
    assert vault_hashes(vault) == before
    assert len(events(vault)) == logged


def test_the_budget_is_never_exceeded_and_cjk_counts_per_character(vault):
    from external_brain.answers.brief import estimate_tokens

    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("日本語のテキスト") == 8
    assert estimate_tokens("ECS タイムアウト") == 6 + 1   # 6 kana, then "ECS " is 4 characters
    for number in range(12):
        create("--type", "pattern", "--domain", "dev", "--tags", "retry",
               "--title", f"Retry pattern number {number}", "--body", f"Retry with backoff, variant {number}. " * 5)
    run_cli("remember", "note", "--body", "retry work " * 30)
    for budget in (5, 40, 120, 400):
        data = ok_data("brief", "retry backoff", "--budget", str(budget), "--limit", "12")
        assert data["tokens"] <= budget, (budget, data["markdown"])
        assert estimate_tokens(data["markdown"]) == data["tokens"]
    small, large = (ok_data("brief", "retry backoff", "--budget", b, "--limit", "12") for b in ("120", "2000"))
    assert len(small["cards"]) < len(large["cards"]) == 12
    assert small["left_out"] == 12 - len(small["cards"])


def test_ranking_uses_confidence_and_importance_between_equal_matches(vault):
    low = create("--type", "pattern", "--domain", "dev", "--tags", "cache", "--title", "Cache warmup A",
                 "--body", "Warm the cache.", "--importance", "1")
    high = create("--type", "pattern", "--domain", "dev", "--tags", "cache", "--title", "Cache warmup B",
                  "--body", "Warm the cache.", "--importance", "5")
    for _ in range(3):
        run_cli("record", high["path"], "used")
    cards = ok_data("brief", "cache warmup")["cards"]
    assert [c["path"] for c in cards] == [high["path"], low["path"]]
    assert cards[0]["rank"] > cards[1]["rank"]
    assert cards[0]["action"] == "apply and verify" and cards[0]["confidence"] > cards[1]["confidence"]


def test_current_states_show_their_age_past_ones_are_labelled_and_superseded_ones_left_out(vault):
    old = (datetime.now().astimezone() - timedelta(days=2)).isoformat(timespec="seconds")
    write_card(vault, "Playbooks/State_Orders_DB_upgrade_status.md",
               f"---\ntitle: Orders DB upgrade status\ntype: state\ndomain: data\ntags: [postgres]\n"
               f"updated: {old}\nproject: shop\n---\nStaging runs PostgreSQL 16; production still 13.\n")
    create("--type", "fact", "--domain", "ops", "--tags", "deploy", "--title", "Deploy window is Tuesday",
           "--body", "The deploy window is Tuesday.")
    create("--type", "fact", "--domain", "ops", "--tags", "deploy", "--title", "Deploy window is Thursday",
           "--body", "The deploy window is Thursday.")
    create("--type", "state", "--domain", "ops", "--tags", "deploy", "--title", "Current deploy status",
           "--body", "Deploy status is green.", "--project", "shop")
    cards = ok_data("brief", "deploy status window")["cards"]
    titles = [c["title"] for c in cards]
    assert "Deploy window is Tuesday" not in titles               # superseded by Thursday
    assert "Deploy window is Thursday" in titles
    state = next(c for c in cards if c["title"] == "Current deploy status")
    assert (state["age"], state["past"]) == ("just now", False)
    code, out, _ = run_cli("brief", "deploy status window")
    assert "(state/ops, state as of just now)" in out
    # docs/compatibility.md, Agents and scope: a state older than [brief] state_fresh_hours (24) is a past state: for a
    # question it answers it is shown, told apart.
    [past] = ok_data("brief", "orders db upgrade status")["cards"]
    assert (past["title"], past["age"], past["past"]) == ("Orders DB upgrade status", "2 days ago", True)
    code, out, _ = run_cli("brief", "orders db upgrade status")
    assert "(state/data, past state as of 2 days ago: may no longer hold)" in out
    # Without a query (session start), only current states.
    assert [c["title"] for c in ok_data("brief", "--project", "shop")["cards"]] == ["Current deploy status"]
    # The window is a setting.
    (vault / ".brain" / "config.toml").write_text("[brief]\nstate_fresh_hours = 72\n")
    assert ok_data("brief", "orders db upgrade status")["cards"][0]["past"] is False


def test_the_agents_own_cards_come_before_shared_ones_whatever_their_scores(vault):
    create("--type", "runbook", "--domain", "ops", "--tags", "deploy,rollback", "--title", "Deploy rollback",
           "--body", "Roll the deploy back to the previous task definition.", "--importance", "5")
    create("--type", "runbook", "--domain", "ops", "--tags", "notes", "--title", "My deploy rollback notes",
           "--body", "I do the rollback with the script in ops/.", "--scope", "agent", "--agent", "alice",
           "--importance", "1")
    cards = ok_data("brief", "deploy rollback", "--agent", "alice")["cards"]
    assert cards[0]["rank"] < cards[1]["rank"]                   # ranked lower, shown first
    assert [(c["title"], c["own"]) for c in cards] == [("My deploy rollback notes", True), ("Deploy rollback", False)]
    assert "your own" in cards[0]["why"]
    assert [c["title"] for c in ok_data("brief", "deploy rollback")["cards"]] == ["Deploy rollback"]


def test_cards_cut_by_the_budget_are_counted_in_a_last_line(vault):
    for number in range(6):
        create("--type", "pattern", "--domain", "dev", "--tags", "retry", "--title", f"Retry pattern number {number}",
               "--body", f"Retry with backoff and jitter, variant {number}. " * 3)
    data = ok_data("brief", "retry backoff jitter", "--budget", "150", "--limit", "6")
    assert 0 < len(data["cards"]) < 6 and data["left_out"] == 6 - len(data["cards"])
    assert data["markdown"].endswith(f"+{data['left_out']} more relevant cards left out for the token budget\n")
    assert data["tokens"] <= 150


def test_each_card_is_shown_by_what_it_says(vault):
    create("--type", "decision", "--domain", "dev", "--tags", "uuid", "--title", "UUIDv7 keys",
           "--body", "## Context\nIds leak volume.\n\n## Decision\nNew tables use **UUIDv7** keys. Old ones keep bigint.")
    create("--type", "troubleshooting", "--domain", "infra", "--tags", "nginx", "--title", "アップロードで 413",
           "--body", "## 症状\n大きな CSV で 413 が返る。\n\n## 対処\n`client_max_body_size 20m;` を設定する。reload も忘れない。")
    create("--type", "fact", "--domain", "infra", "--tags", "nat", "--title", "NAT idle timeout",
           "--body", "## Fact\n- The NAT gateway drops idle connections after 350 seconds.\n- It cannot be changed.")
    said = {query: [c["snippet"] for c in ok_data("brief", query)["cards"]]
            for query in ("uuidv7 keys", "アップロードで 413", "nat idle timeout")}
    assert said == {"uuidv7 keys": ["New tables use UUIDv7 keys."],                 # the decision
                    "アップロードで 413": ["client_max_body_size 20m; を設定する。"],   # the fix (対処)
                    "nat idle timeout": ["The NAT gateway drops idle connections after 350 seconds."]}


def test_without_a_query_the_project_cards_and_without_a_project_only_important_ones(vault):
    ecs_card("5")
    create("--type", "pattern", "--domain", "dev", "--tags", "pytest", "--title", "Fixture isolation",
           "--body", "Use tmp_path.", "--project", "api")
    assert [c["title"] for c in ok_data("brief", "--project", "api")["cards"]] == ["Fixture isolation"]
    assert [c["title"] for c in ok_data("brief")["cards"]] == ["ECS External API Timeout via SG Egress"]


@pytest.mark.parametrize("budget", ["0", "-3", "100001"])
def test_a_bad_budget_is_a_usage_error(vault, budget):
    code, out, err = run_cli("brief", "x", "--budget", budget)
    assert code == 2 and out == ""
    assert err == f"brain: error: --budget {budget} is out of range; give 1 to 100000 tokens\n"


# ---------------------------------------------------------------------------- the budget, small ones too

def alb_cards() -> None:
    create("--type", "troubleshooting", "--domain", "infra", "--tags", "alb,timeout",
           "--title", "ALB 504 and 502 from Idle Timeout vs Backend Keep-Alive",
           "--body", "## Fix\nKeep the backend keep-alive longer than the ALB idle timeout (65 s for 60 s).")
    create("--type", "runbook", "--domain", "infra", "--tags", "alb,timeout,504",
           "--title", "Raise the ALB idle timeout for slow exports",
           "--body", "When exports get a 504 at 60 s, raise the ALB idle timeout to 300 s and the app's to 310 s.")


def test_cards_about_the_query_come_before_unrelated_working_memory_and_the_cut_is_always_counted(vault):
    from helpers import subprocess_cli

    alb_cards()
    run_cli("remember", "current-task", "--body", "Refactoring the billing export job; next is the CSV writer. " * 4)
    query = "ALB 504 idle timeout"
    whole = ok_data("brief", query, "--budget", "2000")
    assert len(whole["cards"]) == 2 and len(whole["working_memory"]) == 1
    for budget in (1, 2, 3, 5, 10, 20, 40, 60, 80, 120, 200):
        data = ok_data("brief", query, "--budget", str(budget))
        assert data["markdown"] and data["tokens"] <= budget, (budget, data)
        assert len(data["cards"]) + data["left_out"] == 2, (budget, data)
        cut = data["left_out"] + data["notes_left_out"]
        if cut:   # the last line counts what the budget left out, whatever the budget
            last = data["markdown"].splitlines()[-1]
            assert last.startswith("+") and sum(map(int, re.findall(r"\d+", last))) == cut, (budget, last)
        # A card about the query is paid for before a working-memory note it says nothing of.
        assert data["cards"] or not data["working_memory"], (budget, data)
    data = ok_data("brief", query, "--budget", "120")
    assert [c["title"] for c in data["cards"]] == ["ALB 504 and 502 from Idle Timeout vs Backend Keep-Alive"]
    assert data["working_memory"] == [] and (data["left_out"], data["notes_left_out"]) == (1, 1)
    assert data["markdown"].endswith("+1 more relevant card and 1 working-memory note left out for the token budget\n")
    done = subprocess_cli("brief", query, "--budget", "10", vault=vault)
    assert done.returncode == 0 and done.stdout.strip() and done.stdout.startswith("+"), (done.stdout, done.stderr)
    # Without a query (session start) working memory comes first, as before.
    ok_data("update", whole["cards"][0]["path"], "--importance", "5")
    start = ok_data("brief", "--budget", "100")
    assert start["working_memory"] and start["markdown"].endswith("+1 more relevant card left out for the token budget\n")


def test_a_brief_too_small_for_its_sentence_still_says_something(vault):
    from helpers import subprocess_cli

    for budget in ("1", "2", "4"):
        done = subprocess_cli("brief", "kafka consumer lag", "--budget", budget, vault=vault)
        assert done.returncode == 0 and done.stdout.strip(), (budget, done.stdout)
        assert ok_data("brief", "kafka consumer lag", "--budget", budget)["tokens"] <= int(budget)


def test_no_card_clearly_about_the_query_points_at_the_search_that_lists_weaker_matches(vault):
    alb_cards()
    create("--type", "pattern", "--domain", "dev", "--tags", "http", "--title", "HTTP client timeout defaults",
           "--body", "Set a connect and a read timeout on every HTTP client.")
    data = ok_data("brief", "timeout")
    assert data["cards"] == [], data   # one word shared by every card: none is clearly about it
    found = len(ok_data("search", "timeout")["hits"])
    assert found == 3
    assert data["markdown"] == ('No card is clearly about "timeout"; `brain search "timeout"` lists 3 weaker '
                                "matches.\n")
    assert ok_data("brief", "kafka consumer lag")["markdown"] == \
        'Nothing in the vault is relevant to "kafka consumer lag".\n'
    assert ok_data("brief", "the")["markdown"] == 'The query "the" has no words to search for.\n'


def test_a_project_with_only_past_states_says_so_and_how_to_see_them(vault):
    old = (datetime.now().astimezone() - timedelta(days=3)).isoformat(timespec="seconds")
    write_card(vault, "Playbooks/State_Orders_DB_upgrade.md",
               f"---\ntitle: Orders DB upgrade status\ntype: state\ndomain: data\ntags: [postgres]\n"
               f"updated: {old}\nvalid_from: {old}\nproject: orders\n---\nStaging runs PostgreSQL 16.\n")
    data = ok_data("brief", "--project", "orders")
    assert data["cards"] == [] and data["working_memory"] == []
    assert data["markdown"] == ("Nothing current for project orders: no live working memory, and its 1 card is a "
                                "past state (ended, or older than 24 h); `brain list --project orders` lists it, "
                                "and a brief that asks about it shows it labelled past.\n"), data["markdown"]
    assert [c["title"] for c in ok_data("brief", "orders db upgrade status", "--project", "orders")["cards"]] == \
        ["Orders DB upgrade status"]


def test_a_lead_in_ending_in_a_colon_takes_what_follows_or_ends_as_a_sentence(vault):
    from test_http import start, stop

    create("--type", "troubleshooting", "--domain", "infra", "--tags", "alb,keepalive", "--title", "ALB 502 keep-alive",
           "--body", "## Fix\n1. For the 502s, keep backend connections open longer than the ALB does:\n"
                     "```js\nserver.keepAliveTimeout = 65_000;\n```\n2. For the 504s, move long work to a job.")
    create("--type", "decision", "--domain", "infra", "--tags", "cloudfront", "--title", "CloudFront origin lock-down",
           "--body", "## Decision\nLock the origin down to CloudFront:\n\n"
                     "1. Inbound 80 only from the CloudFront prefix list. Nothing else.\n2. A secret origin header.")
    create("--type", "troubleshooting", "--domain", "infra", "--tags", "rds", "--title", "RDS 接続エラー",
           "--body", "## 対処\n次のコマンドで SG を直す：\n```bash\naws ec2 authorize-security-group-ingress\n```\n")
    said = {query: [c["snippet"] for c in ok_data("brief", query)["cards"]]
            for query in ("alb 502 keep-alive", "cloudfront origin lock-down", "RDS 接続エラー")}
    assert said == {
        "alb 502 keep-alive": ["For the 502s, keep backend connections open longer than the ALB does."],
        "cloudfront origin lock-down": ["Lock the origin down to CloudFront: Inbound 80 only from the CloudFront "
                                        "prefix list."],
        "RDS 接続エラー": ["次のコマンドで SG を直す。"]}
    api = start(vault)
    try:
        status, _, data = api.call("POST", "/v1/context", {"query": "alb 502 keep-alive"})
        assert status == 200 and data["context"]["bullets"] == [
            "ALB 502 keep-alive: For the 502s, keep backend connections open longer than the ALB does."], data
        assert "does:." not in data["context"]["summary"] and "does:" not in data["context"]["summary"]
    finally:
        stop(api.process)
