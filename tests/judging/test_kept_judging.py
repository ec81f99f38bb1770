"""What judging keeps in a long-lived process (`serve`, MCP) changes no insight: a scripted
sequence of creates and edits, run in one process with everything kept from create to create,
gives the insights the same sequence gives with every kept value dropped before each create; and
an edit of a candidate between two creates is seen by the second (its verdict follows its new text).

What is kept is keyed by the text it is derived from (`functools.lru_cache` on pure functions of
a card's title, body, tags, sentences, words), so an edited card is other text and is derived anew."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from external_brain.cards import create_card
from external_brain.evolution.lifecycle import update_card
from external_brain.vault.storage import Vault

TIMEOUT = "Set the Payments API Client Timeout to {} Seconds"
TIMEOUT_BODY = "The payments API client (payments-sdk) times out requests after {} seconds.\n"


def drop_everything_kept() -> int:
    """Clear every per-process cache of the package (`cache_clear`); how many there were."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if name == "external_brain" or name.startswith("external_brain."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
                    cleared += 1
    return cleared


def without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_ids(v) for k, v in value.items() if k not in ("id", "memory_id")}
    if isinstance(value, list):
        return [without_ids(v) for v in value]
    return value


def run(root: Path, keep: bool) -> list[dict]:
    """The script: cards on one subject, creates that meet them, and edits of a candidate between
    creates. The insights of each create, in order."""
    out = []

    def create(title: str, body: str, card_type: str = "decision", tags: str = "payments,timeout") -> Any:
        if not keep:
            assert drop_everything_kept() > 20
        result = create_card(Vault(root), card_type=card_type, domain="dev", title=title, body=body, tags=tags)
        out.append(without_ids(result.insights))
        return result

    def edit(card, **change) -> None:
        update_card(Vault(root), card.card.id, **change)

    thirty = create(TIMEOUT.format(30), TIMEOUT_BODY.format(30))
    create("Retry Payments API Calls Three Times",
           "The payments API client retries a failed request three times with exponential backoff.\n")
    create("Payments API client note", "Checkout calls the payments provider through payments-sdk from the web "
           "tier. Dashboards live in Grafana.\n", "insight")
    create(TIMEOUT.format(45), TIMEOUT_BODY.format(45))                     # contradicts the 30 s card
    edit(thirty, title="Payments API Client Timeout", body=TIMEOUT_BODY.format(45))   # the 30 s card now says 45 s
    create(TIMEOUT.format(45) + " for Checkout", TIMEOUT_BODY.format(45))
    edit(thirty, title=TIMEOUT.format(60), body=TIMEOUT_BODY.format(60))    # ... and then 60 s everywhere
    create(TIMEOUT.format(45) + " in the Web Tier", TIMEOUT_BODY.format(45))
    create("Do Not Retry Payments API Calls",
           "The payments API client does not retry a failed request; the caller decides.\n")
    create("Fixed: Payments API Calls Time Out Under Load",
           "Fixed by raising the payments API client timeout; requests no longer time out under load.\n",
           "troubleshooting")
    return out


def verdicts_on(insights: dict, title_start: str) -> set[str]:
    """The kinds of insight a create got about the cards whose title starts with `title_start`."""
    return {kind for kind, items in insights.items() if isinstance(items, list)
            for item in items if isinstance(item, dict) and str(item.get("title", "")).startswith(title_start)}


def test_insights_with_everything_kept_are_those_judged_afresh_and_an_edit_is_seen(vault: Path,
                                                                                    tmp_path: Path) -> None:
    afresh_root = tmp_path / "afresh"
    shutil.copytree(vault, afresh_root)
    drop_everything_kept()
    kept = run(vault, keep=True)
    afresh = run(afresh_root, keep=False)
    assert kept == afresh
    # The edited card's verdict followed its text: contradicted at 30 s; not at 45 s; contradicted
    # again, by another value, at 60 s.
    at_30, at_45, at_60 = kept[3], kept[4], kept[5]
    assert [(c["title"], c["reason"]) for c in at_30["contradictions"]] == \
        [(TIMEOUT.format(30), "values differ: 45 Seconds vs 30 Seconds")], at_30
    assert verdicts_on(at_45, "Payments API Client Timeout") == {"suggested_links"}, at_45   # a link only
    assert not at_45["contradictions"], at_45
    assert [(c["title"], c["reason"]) for c in at_60["contradictions"]] == \
        [(TIMEOUT.format(60), "values differ: 45 Seconds vs 60 Seconds")], at_60


def test_the_claims_a_process_keeps_stay_within_their_bound():
    """A long-lived process (an MCP server creating card after card) keeps the claims of at most
    `claims.KEPT_CLAIMS` sentences (2,048, ~4 MB), whatever it judged: at 8,192 the kept claims alone were
    ~17 MB of a create-heavy server's growth (decision 0038, "What a create-heavy MCP server keeps")."""
    from types import SimpleNamespace

    from external_brain.judging import claims

    claims._claim.cache_clear()
    for number in range(120):   # 120 cards of 40 sentences each: 4,800 distinct sentences judged
        body = "\n".join(f"Card {number} sets the pool size of service {number}-{line} to {line} connections."
                         for line in range(40))
        assert len(claims.claims(SimpleNamespace(title=f"Pool sizes {number}", body=body))) == 40
    kept = claims._claim.cache_info()
    assert kept.misses > 4000 and kept.currsize <= claims.KEPT_CLAIMS == 2048, kept


def test_the_caches_keyed_by_a_cards_text_keep_no_long_text_and_are_bounded_in_characters(tmp_path: Path) -> None:
    """A card's body may be 500,000 characters: the caches keyed by a body, a content or a
    sentence (`judging.kept.kept_by_text`) keep none longer than their limit, so what one keeps is
    at most KEPT_TEXT_BUDGET characters; a card over the limit is judged as a short one is, its
    analyses made each time."""
    import ast
    import inspect

    from external_brain.judging import claims, judgements, kept
    from external_brain.vault.storage import init_vault

    cached = []
    for module in (claims, judgements):
        for node in ast.parse(inspect.getsource(module)).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [ast.unparse(d) for d in node.decorator_list]
            if any(a.arg in ("body", "text", "content", "sentence") for a in node.args.args):
                # A function of a text that may be long: never kept by entries alone.
                assert not any(d.startswith("functools.lru_cache") for d in decorators), (module.__name__, node.name)
            if any(d.startswith("kept_by_text") for d in decorators):
                cached.append(getattr(module, node.name))
    assert len(cached) >= 20
    long_text = "The payments API client times out requests after 30 seconds. " * 400   # ~25,000 characters
    for function in cached:
        assert function.limit <= kept.KEPT_TEXT_CHARS
        assert function.limit * function.cache_info().maxsize <= kept.KEPT_TEXT_BUDGET
        arity = function.__wrapped__.__code__.co_argcount
        if arity != 1:
            continue
        function.cache_clear()
        for text, grows in ((long_text, 0), ("A short sentence of 30 seconds.", 1)):
            assert function(text) == function.__wrapped__(text)
            assert function.cache_info().currsize == grows, (function.__name__, len(text))

    root = tmp_path / "vault"
    init_vault(root)
    drop_everything_kept()
    short = create_card(Vault(root), card_type="decision", domain="dev", tags="payments",
                        title="Payments API client timeout", body=long_text[:600])
    made = create_card(Vault(root), card_type="decision", domain="dev", tags="payments",
                       title="Payments API client timeout", body=long_text)
    assert short.card.id in str(made.insights)   # judged against the short card, as a short draft is
