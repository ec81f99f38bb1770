"""What the vault knows about itself: `stats` (MCP get_stats) and `analyze` (MCP
analyze_knowledge; docs/compatibility.md), both read from the search index, never by parsing every card.

Promises:
- Both only read (they may refresh the index, like a search).
- Both see what the caller may see: another agent's private cards (`scope: agent`) are neither
  counted nor named.
- `analyze` gives a health score from 0 to 100 and a list of issues, each with a severity, the
  affected card ids (or paths, for cards without an id), the same cards' paths and a suggested
  command that exists (`brain merge` for duplicates; "re-save as UTF-8" for a file that is not
  UTF-8, with each unreadable file's problem). The score is
  100 minus a weighted sum of the share of cards each kind of issue affects (`WEIGHTS`, the
  weights add up to 100), so a vault where every card has every problem scores 0:

      score = 100 - sum(weight[kind] * min(1, affected[kind] / base[kind]))

  where `base` is the number of visible cards, except for broken links (the number of links)
  and unparseable files (cards plus unparseable files).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

from ..vault.valueclass import factory, valueclass
from ..vault.storage import ANYONE, Card, Problem, Vault, now

TOP_TAGS = 20
MAX_AFFECTED = 50  # ids listed per issue; the count is always whole
WEIGHTS = {
    "orphan_memories": 20, "low_connectivity": 15, "stale_memories": 15, "near_duplicates": 15,
    "similar_tags": 10, "contradictions": 10, "broken_links": 10, "unparseable_files": 5,
}
SEVERITY = {
    "unparseable_files": "high", "contradictions": "high", "broken_links": "medium", "near_duplicates": "medium",
    "orphan_memories": "medium", "stale_memories": "low", "low_connectivity": "low", "similar_tags": "low",
}
# Tags people write for the same thing, beyond case, separators and plurals (which are folded).
TAG_SYNONYMS = {
    "k8s": "kubernetes", "kube": "kubernetes", "postgres": "postgresql", "pg": "postgresql", "psql": "postgresql",
    "js": "javascript", "ts": "typescript", "py": "python", "golang": "go", "tf": "terraform", "mongo": "mongodb",
    "es": "elasticsearch", "gh": "github", "aws-ecs": "ecs", "db": "database", "auth": "authentication",
}
# Words that end in `s` without being plurals (`https` is not two `http`s).
NOT_PLURAL = {"https", "redis", "jenkins", "kubernetes", "express", "sass", "status", "process", "alias", "ios",
              "macos", "windows", "news", "series", "analysis", "chaos", "canvas", "atlas", "nexus", "postgres"}
LOW_CONNECTIVITY_SHARE = 0.5  # reported when more than half the cards have no link at all
VECTOR_CARDS = 20_000         # analyze reads at most this many cards' vectors (~30 MB); the rest by keyword


def _open_index(vault: Vault):
    from ..search.index import Index
    from ..search.analysis import card_fields

    return Index.open(vault, card_fields, sweep=vault.settings.search.freshness_sweep)


def _visible(meta: dict[str, Any], agent: str | None) -> bool:
    from ..search.keyword import visible_to

    return visible_to(meta, agent)


@valueclass
class Snapshot:
    """The visible cards and their resolved links, read once from the index."""

    cards: list[dict[str, Any]]
    edges: list[tuple[dict[str, Any], dict[str, Any] | None]]  # (link row, target card or None)
    problems: list[Any]


def snapshot(vault: Vault, agent: str | None, everyone: bool = False) -> Snapshot:
    """`everyone`: every card, private or not (doctor checks files, it shows no content)."""
    index = _open_index(vault)
    try:
        with index.reading():
            cards = [c for c in index.all_cards() if everyone or _visible(c, agent)]
            edges = _edges(index, agent, everyone)
            problems = index.problems()
    finally:
        index.close()
    return Snapshot(cards, edges, problems)


def _edges(index, agent: str | None, everyone: bool = False) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every link the caller may see, with the card it resolves to (None: a broken link)."""
    from ..evolution.graph import resolve_rows

    pairs = resolve_rows(index, index.all_links(), lambda r: ("id", r["to"]) if r["to"] else ("name", r["name"]))
    return [(row, target) for row, target in pairs if everyone or (
        _visible(row["source"], agent) and (target is None or _visible(target, agent)))]


# ---------------------------------------------------------------------------- stats

@valueclass
class Stats:
    total: int
    by_type: dict[str, int]
    by_domain: dict[str, int]
    by_project: dict[str, int]
    by_scope: dict[str, int]
    by_status: dict[str, int]
    total_tags: int
    top_tags: list[dict[str, Any]]
    links: dict[str, Any]
    inbox: int
    working_memory: dict[str, int]
    unparseable: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _counts(values) -> dict[str, int]:
    return _ranked(Counter(v or "(none)" for v in values))


def _ranked(counts: Counter) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def stats(vault: Vault, agent: str | None = None) -> Stats:
    """MCP get_stats (docs/compatibility.md), from the index: counts by type, domain, project, scope and status,
    the top tags, links, the Inbox's open candidates (`open_candidates`, as `audit` counts them:
    the only files it reads) and working memory. The card counts come from SQL groups over
    the narrow `facets` and `card_tags` tables (no card's stored JSON is decoded), so a
    100,000-card vault costs a few passes in C, not a Python step per card."""
    from .. import working_memory
    from ..vault.storage import scope_admits

    index = _open_index(vault)
    try:
        with index.reading():
            groups = index.facet_counts()
            hidden = [docid for docid, scope, owner in index.scoped_cards() if not scope_admits(scope, owner, agent)]
            tags = index.tag_counts(hidden)
            edges = _edges(index, agent)
            unparseable = len(index.problems())
    finally:
        index.close()
    total = 0
    by_type, by_domain, by_project, by_scope, by_status = Counter(), Counter(), Counter(), Counter(), Counter()
    for card_type, domain, project, scope, owner, status, count in groups:
        if not scope_admits(scope, owner, agent):
            continue  # another agent's private cards are not counted
        total += count
        by_type[card_type or "(none)"] += count
        by_domain[domain or "(none)"] += count
        by_project[project or "(none)"] += count
        by_scope[(scope or "global").lower()] += count
        by_status[status or "(none)"] += count
    resolved = [(row, target) for row, target in edges if target is not None]
    linked = {row["source"]["path"] for row, _ in resolved} | {t["path"] for _, t in resolved}
    return Stats(
        total=total, by_type=_ranked(by_type), by_domain=_ranked(by_domain), by_project=_ranked(by_project),
        by_scope=_ranked(by_scope), by_status=_ranked(by_status), total_tags=len(tags),
        top_tags=[{"name": name, "count": n} for name, n in sorted(tags.items(), key=lambda kv: (-kv[1], kv[0]))
                  [:TOP_TAGS]],
        links={"total": len(resolved), "by_rel": _counts(row["rel"] for row, _ in resolved),
               "broken": len(edges) - len(resolved), "linked_cards": len(linked),
               # every linked card is a visible one: the edges were kept only when both ends are
               "unlinked_cards": total - len(linked)},
        inbox=len(open_candidates(vault, agent)[0]),   # the open ones the caller may see, as audit counts
        working_memory=working_memory.counts(vault, agent), unparseable=unparseable,
    )


def open_candidates(vault: Vault, agent: str | None = ANYONE) -> tuple[list[Card], int, list[Problem]]:
    """The Inbox candidates still waiting for a decision (`intake.inbox.is_open`), how many are
    closed, and the files that could not be read: what `audit`, `stats` and MCP get_stats count.
    `agent`: only the candidates that agent may see (an agent's miss is private to it); ANYONE
    (the command line's audit): all of them."""
    from ..intake.inbox import is_open
    from ..vault.storage import load_cards, scope_admits

    candidates, problems = load_cards(vault, ("Inbox",))
    if agent is not ANYONE:
        candidates = [c for c in candidates if scope_admits(c.text_field("scope"), c.text_field("agent"), agent)]
    # Trigger: candidates a person rejected, merged or promoted stay in the Inbox as records
    # (intake/inbox.py). Why: they are decided, not backlog. Outcome: counted apart, as closed.
    closed = sum(1 for c in candidates if not is_open(c))
    return [c for c in candidates if is_open(c)], closed, problems


# ---------------------------------------------------------------------------- analyze

@valueclass
class Analysis:
    total: int
    health_score: float
    issues: list[dict[str, Any]]
    suggestions: list[str]
    stats: dict[str, Any] = factory(dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _key(card: dict[str, Any]) -> str:
    """How analyze names a card: its id, or its path when it has none or shares it (`_analyze`)."""
    return card.get("key") or card.get("id") or card["path"]


def analyze(vault: Vault, agent: str | None = None) -> Analysis:
    """MCP analyze_knowledge (docs/compatibility.md): the health score (module docstring) and the issues."""
    from ..cards import paused_gc

    with paused_gc():  # objects for every card: see paused_gc
        return _analyze(vault, agent)


def _analyze(vault: Vault, agent: str | None) -> Analysis:
    snap = snapshot(vault, agent)
    cards = snap.cards
    # Trigger: two notes a person gave the same `id` (`id: 42`). Why: named by id, each issue
    # listed "42, 42" and a near-duplicate pair of the two read as one card twice. Outcome: a
    # card whose id is shared is named by its path (doctor reports the shared id as an error).
    counted = Counter(c.get("id") for c in cards if c.get("id"))
    for card in cards:
        if counted.get(card.get("id"), 0) > 1:
            card["key"] = card["path"]
    total = len(cards)
    issues: list[dict[str, Any]] = []
    shares: dict[str, float] = {}

    path_of = {_key(c): c["path"] for c in cards}

    def issue(kind: str, message: str, affected: list[str], count: int, base: int, action: str, **extra) -> None:
        shares[kind] = min(1.0, count / base) if base else 0.0
        # `affected_memory_ids` as docs/compatibility.md names them; `affected_paths` the same
        # cards by the path a person opens (an unparseable file has only its path).
        issues.append({"type": kind, "severity": SEVERITY[kind], "message": message, "count": count,
                       "affected_memory_ids": affected[:MAX_AFFECTED],
                       "affected_paths": [path_of.get(k, k) for k in affected[:MAX_AFFECTED]],
                       "suggested_action": action, **extra})

    untagged = [_key(c) for c in cards if not c.get("tags")]
    if untagged:
        issue("orphan_memories", f"{len(untagged)} card(s) have no tags", untagged, len(untagged), total,
              "brain update CARD --add-tag TAG")

    resolved = [(row, t) for row, t in snap.edges if t is not None]
    linked = {row["source"]["path"] for row, _ in resolved} | {t["path"] for _, t in resolved}
    unlinked = [_key(c) for c in cards if c["path"] not in linked]
    if total >= 2 and len(unlinked) / total > LOW_CONNECTIVITY_SHARE:
        issue("low_connectivity", f"{round(100 * len(unlinked) / total)}% of cards have no links",
              unlinked, len(unlinked), total, "brain explore CARD, then brain link CARD OTHER --rel related")

    stale = _stale(vault, cards)
    if stale:
        issue("stale_memories", f"{len(stale)} card(s) unchanged and unreferenced for over "
              f"{vault.settings.stale_after_days} days", stale, len(stale), total,
              "brain get CARD to review it; brain update CARD or brain update CARD --status archived")

    duplicates, conflicts = _judged_pairs(vault, cards, _vector_judge(vault) if vault.settings.embeddings.provider else None)
    if duplicates:
        involved = list(dict.fromkeys(k for pair in duplicates for k in pair["ids"]))
        keep, other = (path_of.get(k, k) for k in duplicates[0]["ids"])
        issue("near_duplicates", f"{len(duplicates)} pair(s) of cards look like duplicates", involved,
              len(involved), total, f"brain get both, then brain merge KEEP OTHER (e.g. brain merge {keep} {other}): "
              "KEEP gets both bodies, tags and links, OTHER is superseded by it (undoable)",
              pairs=duplicates[:MAX_AFFECTED])

    groups = similar_tags(Counter(t for c in cards for t in dict.fromkeys(c.get("tags") or ())))
    if groups:
        minority = {v for g in groups for v in g["variants"] if v != g["keep"]}
        holders = [_key(c) for c in cards if minority & set(c.get("tags") or ())]
        first = groups[0]
        other = next(v for v in first["variants"] if v != first["keep"])
        issue("similar_tags", f"{len(groups)} group(s) of tags name the same thing", holders, len(holders), total,
              f"brain update CARD --remove-tag {other} --add-tag {first['keep']} (for each affected card)",
              groups=groups)

    contradicting = [(row, t) for row, t in resolved if row["rel"] == "contradicts"]
    # A `contradicts` link says so; the contradiction judgement (create's) finds the rest.
    pairs = [[_key(row["source"]), _key(t)] for row, t in contradicting]
    linked = {frozenset(pair) for pair in pairs}
    reasons = [None] * len(pairs) + [c["reason"] for c in conflicts if frozenset(c["ids"]) not in linked]
    pairs += [c["ids"] for c in conflicts if frozenset(c["ids"]) not in linked]
    if pairs:
        involved = list(dict.fromkeys(k for pair in pairs for k in pair))
        issue("contradictions", f"{len(pairs)} pair(s) of cards contradict each other", involved, len(involved),
              total, "brain get both; keep one true: brain update WRONG --status superseded, or brain unlink",
              pairs=pairs[:MAX_AFFECTED], reasons=reasons[:MAX_AFFECTED])

    broken = [(row, t) for row, t in snap.edges if t is None]
    if broken:
        sources = list(dict.fromkeys(_key(row["source"]) for row, _ in broken))
        issue("broken_links", f"{len(broken)} link(s) point to cards that do not exist", sources, len(broken),
              len(snap.edges), "brain unlink SRC TARGET (or create the missing card)",
              links=[{"source": row["source"]["path"], "target": row["to"] or row["name"], "rel": row["rel"]}
                     for row, _ in broken[:MAX_AFFECTED]])

    if snap.problems:
        paths = [p.path for p in snap.problems]
        issue("unparseable_files", f"{len(paths)} file(s) cannot be parsed and are skipped", paths, len(paths),
              total + len(paths), _unparseable_fix(snap.problems),
              problems=[{"path": p.path, "line": p.line, "problem": p.message} for p in snap.problems[:MAX_AFFECTED]])

    score = max(0.0, round(100 - sum(WEIGHTS[k] * share for k, share in shares.items()), 1))
    order = {"high": 0, "medium": 1, "low": 2}
    issues.sort(key=lambda i: (order[i["severity"]], -i["count"]))
    suggestions = ["Address the issues above, high severity first"] if issues else ["The vault is in good shape"]
    types = Counter(c["type"] for c in cards)
    if total and not types.get("troubleshooting") and not types.get("episode"):
        suggestions.append("Record failures too: troubleshooting cards and episodes are what agents search for")
    return Analysis(total, score, issues, suggestions, {
        "unlinked_memories": len(unlinked), "memories_per_project": _counts(c.get("project") for c in cards),
        "links": len(resolved), "broken_links": len(broken)})


def _unparseable_fix(problems: list[Problem]) -> str:
    """What to do about files the tool skips: a file that is not UTF-8 is re-saved as UTF-8 (its
    frontmatter may be fine), the others have their frontmatter fixed at the line doctor shows."""
    encoding = [p.path for p in problems if p.message.startswith("not UTF-8")]
    named = ", ".join(encoding[:3]) + (f" and {len(encoding) - 3} more" if len(encoding) > 3 else "")
    if not encoding:
        return "fix the frontmatter at the line `brain doctor` shows"
    if len(encoding) == len(problems):
        return f"re-save {named} as UTF-8 (the tool never rewrites a file it cannot read)"
    return f"re-save {named} as UTF-8; fix the frontmatter of the others at the line `brain doctor` shows"


def _stale(vault: Vault, cards: list[dict[str, Any]]) -> list[str]:
    """Cards neither referenced nor written for more than `stale_after_days`, by the clock that
    decay and `audit` use (`confidence.decay_since`), read from the dates the index holds."""
    from ..cards import IndexedCard
    from ..vault.confidence import References, days_between, decay_since

    moment, refs, limit = now(), References(vault), vault.settings.stale_after_days
    out = []
    for card in cards:
        since = decay_since(IndexedCard.from_row(vault, card["path"], (card["size"], card["mtime_ns"], card["inode"]),
                                                 card), refs)
        if since is not None and days_between(since, moment) > limit:
            out.append(_key(card))
    return out


_WORD = re.compile(r"[^\W_]+")


@functools.lru_cache(maxsize=65536)  # a vault repeats its tags on many cards
def tag_key(tag: str) -> str:
    """A tag folded so that case, separators, plurals and common synonyms meet:
    `K8s`, `kubernetes` -> `kubernetes`; `Postgres`, `postgresql` -> `postgresql`; `tests` -> `test`."""
    text = tag.strip().lower().lstrip("#")
    text = TAG_SYNONYMS.get(text, text)
    text = re.sub(r"[-_\s./]+", "", text)
    text = TAG_SYNONYMS.get(text, text)
    if len(text) > 4 and text.endswith("ies"):
        text = text[:-3] + "y"
    elif len(text) > 3 and text.endswith("s") and not text.endswith(("ss", "us", "is")) \
            and text not in NOT_PLURAL:
        text = text[:-1]
    return text


def similar_tags(counts: Counter) -> list[dict[str, Any]]:
    """Groups of two or more tags with one `tag_key`; `keep` is the most used (then shortest)."""
    groups: dict[str, list[str]] = {}
    for tag in counts:
        groups.setdefault(tag_key(tag), []).append(tag)
    out = []
    for variants in groups.values():
        if len(variants) > 1:
            ranked = sorted(variants, key=lambda t: (-counts[t], len(t), t))
            out.append({"keep": ranked[0], "variants": ranked, "counts": {t: counts[t] for t in ranked}})
    out.sort(key=lambda g: (-sum(g["counts"].values()), g["keep"]))
    return out


PAIR_OVERLAP = 0.2   # title terms and tags two cards share before their content is compared


def _judged_pairs(vault: Vault, cards: list[dict[str, Any]], vector_judge=None) -> tuple[list[dict[str, Any]],
                                                                                        list[dict[str, Any]]]:
    """(near duplicates, contradictions) among the active cards, judged by create's own
    judgements (`judging.judgements.is_duplicate`, `judging.judgements.contradiction`) on the cards' content.

    Candidate pairs come from each card's two rarest title terms that another card shares (the
    analyser's terms, so Japanese titles meet through their bigrams) and, with a provider, its
    rarest shared tag (buckets of at most 200 cards), so the cost grows with the vault, not with
    its square. A pair whose title
    terms and tags overlap by Jaccard PAIR_OVERLAP is judged on its content: only those cards are
    read. With `vector_judge`, a pair of cards in two languages is judged by cosine."""
    from ..judging.judgements import card_similarity, card_text, contradiction, is_duplicate
    from ..search.analysis import tokens
    from ..vault.storage import load_card

    terms: dict[int, frozenset[str]] = {}
    buckets: dict[str, list[int]] = {}
    for n, card in enumerate(cards):
        if card.get("status") in ("superseded", "archived"):
            continue
        title = set(tokens(str(card.get("title", "")), drop_stop_words=True))
        terms[n] = frozenset(title | {"#" + tag_key(t) for t in card.get("tags") or ()})
        for term in terms[n] if vector_judge is not None else title:
            buckets.setdefault(term, []).append(n)
    pairs: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for n, bag in terms.items():
        # The rarest title terms another card shares too (a term only this card has pairs nothing).
        title = [w for w in bag if not w.startswith("#") and w in buckets and len(buckets[w]) > 1]
        keys = sorted(title, key=lambda w: (len(buckets[w]), w))[:2]
        if vector_judge is not None:  # paraphrases share few words, often a tag
            keys += sorted((w for w in bag if w.startswith("#") and len(buckets[w]) > 1),
                           key=lambda w: (len(buckets[w]), w))[:1]
        for word in keys:
            bucket = buckets[word]
            if len(bucket) > 200:
                continue
            for m in bucket:
                # Either card's rare words may bring the pair together, so pairs are kept in
                # (lower, higher) order, whichever card's bucket found them.
                pair = (min(n, m), max(n, m))
                if m == n or pair in seen or cards[m]["type"] != cards[n]["type"]:
                    continue
                seen.add(pair)
                pairs.append(pair)
    cosines = vector_judge([(cards[n]["path"], cards[m]["path"]) for n, m in pairs]) \
        if vector_judge is not None and pairs else {}
    read: dict[int, Any] = {}

    def text_of(n: int):
        if n not in read:
            try:
                read[n] = card_text(load_card(vault, vault.root / cards[n]["path"]))
            except Exception:  # noqa: BLE001 - changed or gone since indexed: not worth failing analyze for
                read[n] = None
        return read[n]

    duplicates, conflicts = [], []
    for n, m in pairs:
        overlap = len(terms[n] & terms[m]) / len(terms[n] | terms[m]) if terms[n] | terms[m] else 0.0
        cos = cosines.get((cards[n]["path"], cards[m]["path"]))
        if overlap < PAIR_OVERLAP and cos is None:
            continue
        first, second = text_of(n), text_of(m)
        if first is None or second is None:
            continue
        similarity = card_similarity(first, second)
        ids = [_key(cards[n]), _key(cards[m])]
        conflict = contradiction(first, second, similarity)
        if conflict:
            conflicts.append({"ids": ids, "reason": conflict})
            continue
        why = is_duplicate(first, second, similarity, cos, vault.settings.promote.duplicate_similarity,
                           vector_judge.floor if vector_judge is not None else None)
        if why:
            entry = {"ids": ids, "similarity": round(similarity, 3), "reason": why}
            if cos is not None and "language" in why:
                entry.update(similarity=round(cos, 3), by="vector")
            duplicates.append(entry)
    return duplicates, conflicts


class _VectorJudge:
    """Cosines of card pairs from the vector cache, for `analyze` (a provider is configured;
    nothing is embedded here, so an unreachable provider changes nothing). A card whose cached
    vector is missing or older than its file leaves its pairs to the keyword judgement."""

    def __init__(self, vault: Vault) -> None:
        from ..search.semantic import CardVectors

        self.vault = vault
        self.floor = CardVectors([], {}, vault.settings.embeddings.link_similarity).duplicate_floor

    def __call__(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        from operator import mul

        from ..search.semantic import current_vectors

        paths = sorted({p for pair in pairs for p in pair})[:VECTOR_CARDS]
        current = current_vectors(self.vault, paths, as_list=False)
        return {(a, b): sum(map(mul, current[a], current[b])) for a, b in pairs if a in current and b in current}


def _vector_judge(vault: Vault) -> _VectorJudge:
    return _VectorJudge(vault)


def broken_links(vault: Vault) -> list[dict[str, Any]]:
    """Every link (a `links` entry or a `related` wikilink) whose target is no card, for doctor."""
    snap = snapshot(vault, agent=None, everyone=True)
    return [{"source": row["source"]["path"], "target": row["to"] or row["name"], "rel": row["rel"],
             "via": "links" if row["to"] else "wikilink"} for row, target in snap.edges if target is None]
