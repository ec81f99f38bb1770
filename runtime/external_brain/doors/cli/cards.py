"""Cards day to day: `search`, `get`, `record`, `create`, `list`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

from ...errors import UsageError
from ...vault.storage import Vault
from .common import EXIT_NOT_CREATED, Output, add_command, _card_line, _conf, _echo, _filter_flags, _filters, _kind, _line, _problem_warnings, _read_body, program_name


# ---------------------------------------------------------------------------- search

def add_search(sub) -> None:
    p = add_command(sub, "search", help="ranked cards for a query")
    p.add_argument("query", help="what you are looking for, e.g. \"ECS timeout\"")
    _filter_flags(p, "all but superseded and archived")
    p.add_argument("--limit", type=int, help="most hits to show (default from config, 5)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.add_argument("--mode", choices=("keyword", "semantic", "hybrid"),
                   help="ranking: keyword, semantic (embeddings) or hybrid (both; the default once "
                        "[embeddings] has a provider)")
    p.add_argument("--explain", action="store_true", help="show matched terms and each part of the score")
    p.add_argument("--as-of", help="what was valid at this time (ISO 8601): superseded cards valid then included")
    p.set_defaults(func=cmd_search)


def cmd_search(args, vault: Vault) -> Output:
    from ...answers.searching import nothing_found, search_cards

    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit {args.limit} must be at least 1")
    extra = (getattr(args, "vaults", None) or [])[1:]
    result = search_cards(vault, args.query, _filters(args), args.limit, args.explain, args.mode, extra)
    hits = [h.as_dict(args.explain) for h in result.hits]
    data = {"query": args.query, "mode": result.mode, "hits": hits, "cut": result.cut,
            "miss_candidate": result.miss_candidate, "unfiltered": result.unfiltered}
    if result.weight is not None:
        data["weight"] = round(result.weight, 4)
    if args.explain and result.query_vector is not None:
        data["query_vector"] = result.query_vector
    if args.explain and result.fusion is not None:
        data["fusion"] = result.fusion
    if result.reranked is not None:
        data["reranked"] = result.reranked
    if result.vaults:
        data["vaults"] = result.vaults
    warnings = result.all_warnings()
    if not hits:
        return Output(data, nothing_found(_echo(args.query), result), warnings)
    lines = [f'{len(hits)} card{"s" if len(hits) != 1 else ""} for "{_echo(args.query)}":']
    if args.explain and result.query_vector is not None:
        lines.append("query vector " + ("from the cache" if result.query_vector == "cache" else "from the provider"))
    if args.explain and result.fusion is not None:
        led = result.fusion["trusted"]
        lines.append(f"fusion: {'both halves' if led == 'both' else led + ' half'} led "
                     f"(keyword share {result.fusion['weight']:.2f}); {result.fusion['why']}")
    if args.explain and result.reranked is not None:
        lines.append(f"order: reranked by {result.reranked}")
    from ...vault.confidence import action_for

    for number, (hit, shown) in enumerate(zip(result.hits, hits), start=1):
        kind = _kind(shown)
        lines.append(f"{number}. {shown['title']}{f'  [{kind}]' if kind else ''}  "
                     f"confidence {_conf(shown['confidence'])} "
                     f"({action_for(hit.confidence)})  score {shown['score']:.2f}")
        lines.append(f"   {shown['vault'] + ': ' if 'vault' in shown else ''}{shown['path']}")
        if shown.get("age"):
            lines.append(f"   state, {shown['age']} old" + (f", valid to {shown['valid_to']}" if shown.get("valid_to") else ""))
        if shown["snippet"]:
            lines.append(f"   {shown['snippet']}")
        if args.explain:
            fusion = shown.get("fusion")
            if fusion and "keyword_likelihood" in fusion:
                z = "-" if fusion["keyword_z"] is None else f"{fusion['keyword_z']:.1f} sd"
                vector = "-" if fusion["vector"] is None else f"{fusion['vector']:.3f}"
                near = "-" if fusion["closeness"] is None else f"{fusion['closeness']:.2f}"
                lines.append(f"   why: (keyword {fusion['keyword_likelihood']:.2f} (bm25f {fusion['keyword']:.2f}, {z}) "
                             f"+ vector {fusion['vector_likelihood']:.2f} (cosine {vector}, closeness {near})) / 2")
            elif fusion:
                lines.append(f"   why: cosine {fusion['vector']:.3f}")
            if hit.rerank is not None:
                lines.append(f"   rerank score {hit.rerank:.3f}")
            relevance = shown["relevance"]
            lift = "" if relevance["lift"] is None else f", vector lift {relevance['lift']:.2f}"
            lines.append(f"   relevance: keyword strength {relevance['keyword']:.2f}{lift}"
                         f"{'' if relevance['context'] else ' (not enough to put into a prompt)'}")
            for word, parts in shown["matched_words"].items():
                detail = " ".join(f"{k}={v:.2f}" for k, v in parts.items() if k != "terms")
                lines.append(f"   why \"{word}\": {detail}")
    if result.miss_candidate:  # vector hits, none close: shown, and kept as a miss
        lines.append(f"None of these is close to the query; logged as a search miss: {result.miss_candidate}")
    lines.append("Next: `get PATH` to read one, then `record PATH used|rejected`.")
    return Output(data, "\n".join(lines), warnings)


# ---------------------------------------------------------------------------- get

def add_get(sub) -> None:
    p = add_command(sub, "get", help="a whole card and what to do with it (logs `referenced`)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--agent", help="agent name: needed to read this agent's private cards")
    p.set_defaults(func=cmd_get)


def cmd_get(args, vault: Vault) -> Output:
    from ...cards import UnparsedCard, get_card

    shown = get_card(vault, args.card, args.agent)
    if isinstance(shown, UnparsedCard):   # its frontmatter does not parse: its text, and the warning
        return Output(shown.details(), shown.raw.rstrip("\n"), [shown.warning])
    card = shown.card
    data = shown.details()
    header = (f"# {card.rel}\n# confidence {_conf(shown.confidence)} -> {shown.action}"
              f" (stored {_conf(shown.stored_confidence)})")
    return Output(data, f"{header}\n{card.text.rstrip()}\n\n"
                        f"# After applying: `record {card.rel} used` (or `rejected` with a note)")


# ---------------------------------------------------------------------------- record

def add_record(sub) -> None:
    p = add_command(sub, "record", help="feedback on a card: used or rejected (moves its confidence)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("outcome", choices=("used", "rejected"), help="did the card help?")
    p.add_argument("note", nargs="?", help="one sentence on why")
    p.set_defaults(func=cmd_record)


def cmd_record(args, vault: Vault) -> Output:
    from ...cards import record

    result = record(vault, args.card, args.outcome, args.note)
    data = result.as_dict()
    faded = f" (decayed to {result.decayed:g} first)" if result.decayed != result.before else ""
    replaced = "".join(f"\nreplaced your {key}: {value} (`{program_name()} undo {result.event['eid']}` puts it back)"
                       for key, value in (result.replaced or {}).items())
    return Output(data, f"{result.card.rel}: {result.outcome}, confidence {result.before:g}{faded} "
                        f"-> {result.after:g}{replaced}")


# ---------------------------------------------------------------------------- create

def add_create(sub) -> None:
    p = add_command(sub, "create", help="a new card in Playbooks/")
    p.add_argument("--type", required=True, help="card type (see `types` in .brain/config.toml)")
    p.add_argument("--domain", required=True, help="domain (see `domains` in .brain/config.toml)")
    p.add_argument("--title", required=True, help="one line naming the problem or decision")
    p.add_argument("--tags", default="", help="comma-separated tags, e.g. \"ecs,timeout,sg\"")
    p.add_argument("--body", default="", help="Markdown body (`-` reads standard input)")
    p.add_argument("--project", help="project the card belongs to")
    p.add_argument("--importance", type=int, help="1 (minor) to 5 (critical)")
    p.add_argument("--scope", choices=("global", "agent"), help="agent: private to --agent")
    p.add_argument("--agent", help="owning agent for --scope agent")
    p.add_argument("--no-duplicates", action="store_true", help="refuse to create a near duplicate")
    p.add_argument("--no-insights", dest="insights", action="store_false",
                   help="compare with no other card unless a fact, state or episode needs it (no links, "
                        "duplicates, contradictions or tags reported): a bulk writer's cheaper create")
    p.set_defaults(func=cmd_create)


def cmd_create(args, vault: Vault) -> Output:
    from ...cards import create_card, paused_gc

    # Paused: judging the candidates and filing the vault's tags make some ten thousand objects,
    # none of them garbage, which the collector walked 20-odd times (2-7 ms of a CLI create).
    with paused_gc():
        result = create_card(vault, card_type=args.type, domain=args.domain, title=args.title,
                             body=_read_body(args.body), tags=args.tags, project=args.project,
                             importance=args.importance, scope=args.scope, agent=args.agent,
                             no_duplicates=args.no_duplicates, insights=args.insights)
    card = result.card
    data = result.as_dict()
    if result.created:
        lines = [f"created {card.rel}", f"id: {card.id}"]
    else:
        lines = [f"not created: {result.skipped_reason}"]
    labels = {"suggested_links": "related", "potential_duplicates": "potential duplicate",
              "supersedes": "supersedes", "contradictions": "may contradict",
              "success_after_failure": "success after failure of"}
    for key, label in labels.items():
        for item in result.insights.get(key, []):
            facts = [item["path"], *([item["rel"]] if key == "suggested_links" else []),
                     *([f"similarity {item['similarity']}"] if "similarity" in item else [])]
            why = f": {item['reason']}" if item.get("reason") and key != "suggested_links" else ""
            lines.append(f"  {label}: {item['title']} ({', '.join(facts)}){why}")
    if result.insights.get("suggested_tags"):
        names = [tag["name"] for tag in result.insights["suggested_tags"]]
        lines.append(f"  suggested tags: {', '.join(names)} (`{program_name()} update {card.rel if card else 'CARD'} "
                     f"--add-tag {names[0]}`)")
    # Trigger: no card made (`--no-duplicates` found a near duplicate, or an exact copy of an
    # episode). Why: a script must tell "refused" from "created" without parsing the text.
    # Outcome: exit 3, the output as usual (it names the duplicate); docs/decisions.md, "Exit codes".
    return Output(data, "\n".join(lines), exit_code=0 if result.created else EXIT_NOT_CREATED)


# ---------------------------------------------------------------------------- list

def add_list(sub) -> None:
    p = add_command(sub, "list", help="one line per card")
    _filter_flags(p, "any")
    p.add_argument("--sort", choices=("confidence", "updated", "title"), default="title")
    p.add_argument("--inbox", action="store_true", help="list Inbox candidates instead of Playbooks")
    p.add_argument("--valid-at", help="only cards valid at this time (ISO 8601): valid_from <= t < valid_to")
    p.add_argument("--agent", help="agent name: also list this agent's private cards")
    p.add_argument("--limit", type=int, help="most cards to show (default: all), a page as MCP's list_memories gives")
    p.add_argument("--offset", type=int, default=0, help="cards to skip before the page (default 0)")
    p.set_defaults(func=cmd_list)


def cmd_list(args, vault: Vault) -> Output:
    from itertools import starmap

    from ...cards import list_cards, list_lines, list_page, paused_gc

    folders = ("Inbox",) if args.inbox else ("Playbooks",)
    if args.limit is not None or args.offset:   # a page: MCP's list_memories, the same function
        with paused_gc():
            page = list_page(vault, _filters(args, "any"), args.sort, args.offset, args.limit, folders)
            cards = [v.summary() for v in page.cards]
        more = page.has_more(args.offset)
        lines = [_card_line(c) for c in cards] or ["No cards."]
        if more:
            lines.append(f"(cards {args.offset + 1}-{args.offset + len(cards)} of {page.total}; "
                         f"`--offset {args.offset + len(cards)}` shows the next)")
        return Output({"cards": cards, "count": len(cards), "total": page.total, "has_more": more},
                      "\n".join(lines), _problem_warnings(page.problems))
    if not getattr(args, "json", False):  # the lines only: `list_lines` reads no more than they show
        with paused_gc():  # a line per card: see paused_gc
            result = list_lines(vault, _filters(args, "any"), args.sort, folders)
            text = "\n".join(starmap(_line, result.rows)) if result.rows else "No cards."
        return Output({"count": len(result.rows)}, text, _problem_warnings(result.problems))
    with paused_gc():  # a line per card: see paused_gc
        result = list_cards(vault, _filters(args, "any"), args.sort, folders)
        cards = [v.summary() for v in result.cards]
        text = "\n".join(_card_line(c) for c in cards) if cards else "No cards."
    return Output({"cards": cards, "count": len(cards)}, text, _problem_warnings(result.problems))
