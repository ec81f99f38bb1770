"""The command line: argparse in, text or the `--json` envelope out. The only module that prints.

Each subcommand is a pair: `add_<cmd>(subparsers)` declares its arguments and
`cmd_<cmd>(args, vault) -> Output` calls one library function and formats its result.
`main(argv) -> int` returns the exit code: 0 success (an empty result too), 1 failure,
2 bad usage (docs/cli.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from ..vault.valueclass import factory, valueclass
from pathlib import Path
from typing import Any, Callable

from ..errors import BadFrontmatter, BrainError, UsageError
from ..vault import strict_json
from ..vault.storage import Vault, resolve_vault

PROG = "brain"


@valueclass
class Output:
    """What a command produced: `data` for `--json`, `text` for people and agents."""

    data: dict[str, Any]
    text: str
    warnings: list[str] = factory(list)
    exit_code: int = 0   # 1 for a command that ran and found failures (doctor's errors)


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting, so `--json` can report it."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# ---------------------------------------------------------------------------- helpers

def _problem_warnings(problems) -> list[str]:
    return [f"skipped {p.path}{':' + str(p.line) if p.line else ''}: {p.message}" for p in problems]


def _filters(args: argparse.Namespace, default_status: str | None = None):
    from ..search.keyword import Filters

    return Filters(domain=args.domain, type=args.type, tags=tuple(args.tag or ()),
                   project=getattr(args, "project", None),
                   status=getattr(args, "status", None) or default_status, agent=getattr(args, "agent", None),
                   as_of=_moment(args))


def _moment(args: argparse.Namespace) -> str | None:
    """`search --as-of` / `list --valid-at`, checked, as ISO text (None when not given)."""
    from ..vault.kinds import check_moment

    for flag in ("as_of", "valid_at"):
        value = getattr(args, flag, None)
        if value is not None:
            return check_moment(value, "--" + flag.replace("_", "-"))
    return None


def _read_body(value: str | None) -> str:
    """`--body -` reads standard input (as UTF-8, refused otherwise before anything is written);
    anything else is the body itself."""
    if value != "-":
        return value or ""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream handed in by a library caller or a test
        return sys.stdin.read()
    data = raw.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"standard input is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r}); "
                         "pipe the body as UTF-8") from exc


def _conf(value: float) -> str:
    return f"{value:.2f}"


def _kind(summary: dict[str, Any]) -> str:
    """`type/domain`, either part left out when the card has none ("" when it has neither)."""
    return "/".join(x for x in (summary.get("type"), summary.get("domain")) if x)


def _card_line(summary: dict[str, Any]) -> str:
    return _line(summary["confidence"], summary.get("type"), summary.get("domain"), summary["title"],
                 summary.get("status"), summary["path"], summary.get("age"), summary.get("valid_to"))


def _line(confidence: float, card_type: str | None, domain: str | None, title: str, status: str | None, path: str,
          age: str | None = None, valid_to: str | None = None) -> str:
    """One card's line in `list`, `audit` and the like, from the summary fields it shows, in
    `cards.LINE_KEYS` order (a `list_lines` row)."""
    # A non-active status is shown, so a superseded card and its replacement do not read as two
    # identical lines (and a note's own Obsidian status is visible too).
    marker = ""
    if status and status != "active":
        marker = f"  [{status}]"
    if age:  # a state card: how old it is and until when it held
        marker += f"  (state, {age} old" + (f", valid to {valid_to})" if valid_to else ")")
    # `list` makes a line per card: the padded kind column is made once per type and domain.
    kind = _KINDS.get((card_type, domain))
    if kind is None:
        kind = _KINDS[card_type, domain] = \
            f"{f'{card_type}/{domain}' if card_type and domain else card_type or domain or '-':<24}"
    return f"{confidence:.2f}  {kind} {title}{marker}  ({path})"


_KINDS: dict[tuple, str] = {}


# A query is echoed in text output cut to this many characters: the caller has it already, and a
# pasted 10,000-word query must not fill an agent's context window (the JSON keeps it whole).
QUERY_ECHO_CHARS = 200


def _echo(query: str) -> str:
    text = " ".join(query.split())
    return text if len(text) <= QUERY_ECHO_CHARS else text[: QUERY_ECHO_CHARS - 1].rstrip() + "…"


def _filter_flags(parser: argparse.ArgumentParser, status_default: str) -> None:
    parser.add_argument("--domain", help="only cards of this domain")
    parser.add_argument("--type", help="only cards of this type")
    parser.add_argument("--tag", action="append", help="only cards with this tag (repeatable: all must match)")
    parser.add_argument("--project", help="only cards of this project")
    parser.add_argument("--status", help="exactly this status (active, superseded, archived, or a note's own, "
                                          f"e.g. in-progress), or any (default: {status_default})")


# ---------------------------------------------------------------------------- init

def add_init(sub) -> None:
    p = sub.add_parser("init", help="create a vault (folders, settings, git attributes), or set up a git clone "
                                    "of one (its merge driver); safe to run again")
    p.add_argument("path", help="folder for the new vault (created if missing), or a clone of a vault")
    p.set_defaults(func=cmd_init, needs_vault=False)


def cmd_init(args, vault: Vault | None) -> Output:
    from ..evolution.sharing import setup_git
    from ..vault.storage import init_vault

    created_vault, created = init_vault(Path(args.path))
    git = setup_git(created_vault)
    text = f"vault ready at {created_vault.root}" + (f" (created {', '.join(created)})" if created else " (nothing to create)")
    if git.work_tree is not None:
        text += (f"\ngit: merge driver `brain` {'registered' if git.changed else 'already registered'} in the clone's "
                 f"git config (cards merge key by key; the log line by line; working memory stays per machine)")
    data = {"vault": str(created_vault.root), "created": created,
            "git": {"work_tree": git.work_tree, "merge_driver": git.command, "changed": git.changed, "notes": git.notes}}
    return Output(data, text, [f"git: {note}" for note in git.notes])


def add_merge_driver(sub) -> None:
    p = sub.add_parser("merge-driver", help="merge one card file for git (`brain init` registers it): "
                                            "frontmatter key by key, body as text")
    p.add_argument("base", help="the common ancestor's version (git's %%O; empty when both sides added the file)")
    p.add_argument("ours", help="our version (git's %%A): the merged text is written here")
    p.add_argument("theirs", help="their version (git's %%B)")
    p.add_argument("path", help="the file's path in the repository (git's %%P)")
    p.set_defaults(func=cmd_merge_driver, needs_vault=False)


def cmd_merge_driver(args, vault: Vault | None) -> Output:
    from ..evolution.sharing import merge_driver, plain_merge

    files = [Path(args.base), Path(args.ours), Path(args.theirs)]
    try:
        result = merge_driver(*files, args.path)
    except BrainError:   # MergeConflict: a real conflict, reported to git by the exit code
        raise
    except Exception:  # noqa: BLE001 - a bug of ours must not stop or spoil a merge
        # Trigger: an error in the driver itself. Why: git is mid-merge and waits for this file;
        # failing it would leave the merge half done for a bug of ours. Outcome: the traceback is
        # shown, and the file gets git's own line merge, as a clone without the driver would.
        import traceback

        traceback.print_exc()
        result = plain_merge(*files, args.path)
    return Output({"path": result.path, "notes": result.notes}, "", [f"{args.path}: {note}" for note in result.notes])


# ---------------------------------------------------------------------------- search

def add_search(sub) -> None:
    p = sub.add_parser("search", help="ranked cards for a query")
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
    from ..answers.searching import search_cards

    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit {args.limit} must be at least 1")
    extra = (getattr(args, "vaults", None) or [])[1:]
    result = search_cards(vault, args.query, _filters(args), args.limit, args.explain, args.mode, extra)
    hits = [h.as_dict(args.explain) for h in result.hits]
    data = {"query": args.query, "mode": result.mode, "hits": hits, "cut": result.cut,
            "miss_candidate": result.miss_candidate}
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
    warnings = result.warnings + _problem_warnings(result.problems)
    if not hits:
        text = f'No cards match "{_echo(args.query)}".'
        if result.miss_candidate:
            text += f" Logged as a search miss: {result.miss_candidate}"
        return Output(data, text, warnings)
    lines = [f'{len(hits)} card{"s" if len(hits) != 1 else ""} for "{_echo(args.query)}":']
    if args.explain and result.query_vector is not None:
        lines.append("query vector " + ("from the cache" if result.query_vector == "cache" else "from the provider"))
    if args.explain and result.fusion is not None:
        led = result.fusion["trusted"]
        lines.append(f"fusion: {'both halves' if led == 'both' else led + ' half'} led "
                     f"(keyword share {result.fusion['weight']:.2f}); {result.fusion['why']}")
    if args.explain and result.reranked is not None:
        lines.append(f"order: reranked by {result.reranked}")
    from ..vault.confidence import action_for

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
    p = sub.add_parser("get", help="a whole card and what to do with it (logs `referenced`)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--agent", help="agent name: needed to read this agent's private cards")
    p.set_defaults(func=cmd_get)


def cmd_get(args, vault: Vault) -> Output:
    from ..cards import get_card, raw_card

    try:
        shown = get_card(vault, args.card, args.agent)
    except BadFrontmatter as exc:
        # docs/card-format.md: a card whose frontmatter cannot be parsed is still readable, as raw text.
        path, raw = raw_card(vault, args.card, args.agent)
        return Output({"path": path, "raw": raw, "warning": exc.message}, raw.rstrip("\n"),
                      [f"{exc.message}; showing the raw file"])
    card = shown.card
    data = shown.details()
    header = (f"# {card.rel}\n# confidence {_conf(shown.confidence)} -> {shown.action}"
              f" (stored {_conf(shown.stored_confidence)})")
    return Output(data, f"{header}\n{card.text.rstrip()}\n\n"
                        f"# After applying: `record {card.rel} used` (or `rejected` with a note)")


# ---------------------------------------------------------------------------- record

def add_record(sub) -> None:
    p = sub.add_parser("record", help="feedback on a card: used or rejected (moves its confidence)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("outcome", choices=("used", "rejected"), help="did the card help?")
    p.add_argument("note", nargs="?", help="one sentence on why")
    p.set_defaults(func=cmd_record)


def cmd_record(args, vault: Vault) -> Output:
    from ..cards import record

    result = record(vault, args.card, args.outcome, args.note)
    data = result.as_dict()
    faded = f" (decayed to {result.decayed:g} first)" if result.decayed != result.before else ""
    replaced = "".join(f"\nreplaced your {key}: {value} (`brain undo {result.event['eid']}` puts it back)"
                       for key, value in (result.replaced or {}).items())
    return Output(data, f"{result.card.rel}: {result.outcome}, confidence {result.before:g}{faded} "
                        f"-> {result.after:g}{replaced}")


# ---------------------------------------------------------------------------- create

def add_create(sub) -> None:
    p = sub.add_parser("create", help="a new card in Playbooks/")
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
    p.set_defaults(func=cmd_create)


def cmd_create(args, vault: Vault) -> Output:
    from ..cards import create_card

    result = create_card(vault, card_type=args.type, domain=args.domain, title=args.title,
                         body=_read_body(args.body), tags=args.tags, project=args.project,
                         importance=args.importance, scope=args.scope, agent=args.agent,
                         no_duplicates=args.no_duplicates)
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
        lines.append(f"  suggested tags: {', '.join(names)} (`brain update {card.rel if card else 'CARD'} "
                     f"--add-tag {names[0]}`)")
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- update / delete

def add_update(sub) -> None:
    p = sub.add_parser("update", help="edit a card: only the named keys and the body change")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--title", help="new title (renames the file; the id stays)")
    p.add_argument("--body", help="new Markdown body (`-` reads standard input)")
    p.add_argument("--append", help="text added at the end of the body (`-` reads standard input)")
    p.add_argument("--tags", help="replace the tags, e.g. \"ecs,timeout\"")
    p.add_argument("--add-tag", action="append", default=[], help="add a tag (repeatable)")
    p.add_argument("--remove-tag", action="append", default=[], help="remove a tag (repeatable)")
    p.add_argument("--type", help="new card type")
    p.add_argument("--domain", help="new domain")
    p.add_argument("--project", help="project (empty string clears it)")
    p.add_argument("--importance", type=int, help="1 (minor) to 5 (critical)")
    p.add_argument("--status", help="active, archived, superseded or a status of your own")
    p.add_argument("--expect-hash", help="refuse with CONFLICT unless the card still has this hash (get --json)")
    p.set_defaults(func=cmd_update)


def cmd_update(args, vault: Vault) -> Output:
    from ..evolution.lifecycle import update_card

    if args.body == "-" and args.append == "-":
        raise UsageError("only one of --body and --append can read standard input")
    result = update_card(
        vault, args.card, title=args.title, body=None if args.body is None else _read_body(args.body),
        append=None if args.append is None else _read_body(args.append), tags=args.tags,
        add_tags=args.add_tag, remove_tags=args.remove_tag, card_type=args.type, domain=args.domain,
        project=args.project, importance=args.importance, status=args.status, expect_hash=args.expect_hash)
    card = result.card
    data = result.as_dict()
    if not result.changed:
        return Output(data, f"{card.rel}: nothing changed")
    text = f"updated {card.rel}: {', '.join(result.changed)}"
    if result.renamed:
        text += f" (renamed from {result.previous_path})"
    if result.relinked:
        text += f"; wikilinks followed in {len(result.relinked)} card(s)"
    return Output(data, text + f"\nundo with `undo {data['event']}`")


def add_delete(sub) -> None:
    p = sub.add_parser("delete", help="remove a card and every link pointing to it (undoable)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--dry-run", action="store_true", help="show what would be removed; change nothing")
    p.add_argument("--expect-hash", help="refuse with CONFLICT unless the card still has this hash (get --json)")
    p.set_defaults(func=cmd_delete)


def cmd_delete(args, vault: Vault) -> Output:
    from ..evolution.lifecycle import delete_card

    result = delete_card(vault, args.card, args.dry_run, args.expect_hash)
    data = result.as_dict()
    verb = "would delete" if result.dry_run else "deleted"
    lines = [f"{verb} {result.path}" + (f" (id {result.id})" if result.id else "")
             + (f"; links to it removed from {len(result.cascaded)} card(s)" if result.cascaded else "")]
    lines.extend(f"  {rel}" for rel in result.cascaded)
    if result.event:
        lines.append(f"undo with `undo {result.event['eid']}`; its events: `history {result.id or result.path}`")
    return Output(data, "\n".join(lines))


def add_history(sub) -> None:
    p = sub.add_parser("history", help="every event about a card, newest first, with what changed")
    p.add_argument("card", help="vault-relative path, file stem or id (a deleted card: its id)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_history)


def cmd_history(args, vault: Vault) -> Output:
    from ..evolution.history import history

    result = history(vault, args.card, args.agent)
    card = result.card
    data = {"card": card, "entries": result.entries}
    name = card["path"] or f"deleted card {card['id']}"
    lines = [f"{len(result.entries)} event(s) for {name}" + (f" ({card['title']})" if card["title"] else "")]
    for entry in result.entries:
        details = entry["details"]
        shown = ", ".join(f"{k}={v}" for k, v in details.items()
                          if k in ("changed", "rel", "target_path", "weight", "version", "before", "after",
                                   "renamed_from", "cascaded", "undoes", "superseded_by", "source", "note"))
        undoable = "  (undo " + entry["eid"] + ")" if entry["files"] else ""
        lines.append(f"{entry['ts']}  {entry['event']:<10} {entry['card'] or ''}{'  ' + shown if shown else ''}"
                     f"{undoable}")
        if entry["diff"]:
            lines.extend("    " + line for line in entry["diff"].rstrip("\n").split("\n"))
    return Output(data, "\n".join(lines))


def add_undo(sub) -> None:
    p = sub.add_parser("undo", help="restore the files an event changed to their earlier text (logged, undoable)")
    p.add_argument("event", help="the event id (`eid`, or its first 8+ characters) from `history CARD`")
    p.add_argument("--force", action="store_true", help="overwrite files changed since that event")
    p.set_defaults(func=cmd_undo)


def cmd_undo(args, vault: Vault) -> Output:
    from ..evolution.history import undo

    result = undo(vault, args.event, args.force)
    data = {"undone": result.undone["eid"], "undone_event": result.undone.get("event"), "files": result.files,
            "forced": result.forced, "event": result.event["eid"] if result.event else None}
    if result.event is None:
        data["already_undone_by"] = result.already_undone_by or None
        by = f" (by undo {result.already_undone_by})" if result.already_undone_by else " (its files are as before it)"
        return Output(data, f"event {result.undone['eid']} ({result.undone.get('event')}) is already undone{by}; "
                            "nothing changed")
    lines = [f"undid {result.undone.get('event')} {result.undone['eid']}: restored {len(result.files)} file(s)"]
    lines.extend(f"  {rel}" for rel in result.files)
    lines.append(f"undo this with `undo {result.event['eid']}`")
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- relations

def add_link(sub) -> None:
    p = sub.add_parser("link", help="link two cards with a typed, weighted relation (upsert)")
    p.add_argument("source", help="the card that holds the link: path, stem or id")
    p.add_argument("target", help="the card it points to")
    p.add_argument("--rel", required=True, help="relation: related, supersedes, contradicts, extends, depends_on "
                                                "(see `relations` in .brain/config.toml)")
    p.add_argument("--weight", type=float, help="0 to 1 (default 1 for a new link; unchanged on re-link)")
    p.add_argument("--reason", help="why the cards are linked")
    p.set_defaults(func=cmd_link)


def cmd_link(args, vault: Vault) -> Output:
    from ..evolution.relations import link

    result = link(vault, args.source, args.target, args.rel, args.weight, args.reason)
    entry = result.link
    data = result.as_dict()
    if not result.changed:
        return Output(data, f"{result.source.rel} -{entry['rel']}-> {result.target.rel}: already so, nothing changed")
    return Output(data, f"linked {result.source.rel} -{entry['rel']} {entry['weight']:g}-> {result.target.rel} "
                        f"(version {entry.get('version')})")


def add_unlink(sub) -> None:
    p = sub.add_parser("unlink", help="remove the links from one card to another")
    p.add_argument("source", help="the card that holds the link")
    p.add_argument("target", help="the card it points to")
    p.add_argument("--rel", help="only this relation (default: every link to the target)")
    p.set_defaults(func=cmd_unlink)


def cmd_unlink(args, vault: Vault) -> Output:
    from ..evolution.relations import unlink

    result = unlink(vault, args.source, args.target, args.rel)
    data = result.as_dict()
    return Output(data, f"unlinked {result.source.rel} -> {result.target_label} ({len(result.removed)} removed)")


def add_links(sub) -> None:
    p = sub.add_parser("links", help="a card's links: outgoing, incoming or both")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--direction", choices=("out", "in", "both"), default="both")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_links)


def _link_line(arrow: str, item: dict[str, Any]) -> str:
    where = item["path"] or f"missing card {item.get('id') or item.get('wikilink')}"
    extra = f" - {item['reason']}" if item.get("reason") else ""
    via = " (wikilink)" if item["via"] == "wikilink" else ""
    return f"  {arrow} {item['rel']} {item['weight']:g}  {item['title'] or '?'}  ({where}){via}{extra}"


def cmd_links(args, vault: Vault) -> Output:
    from ..evolution.graph import links

    result = links(vault, args.card, args.direction, args.agent)
    data = result.as_dict()
    lines = [f"{result.card['title']} ({result.card['path']})"]
    if args.direction in ("out", "both"):
        lines.append(f"outgoing: {len(result.outgoing)}")
        lines.extend(_link_line("->", item) for item in result.outgoing)
    if args.direction in ("in", "both"):
        lines.append(f"incoming: {len(result.incoming)}")
        lines.extend(_link_line("<-", item) for item in result.incoming)
    return Output(data, "\n".join(lines))


def add_explore(sub) -> None:
    p = sub.add_parser("explore", help="cards related to one: linked (up to --depth hops), sharing tags, same project")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--depth", type=int, default=1, help="link hops to follow, 1 to 5 (default 1)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_explore)


def cmd_explore(args, vault: Vault) -> Output:
    from ..evolution.graph import explore

    result = explore(vault, args.card, args.depth, args.agent)
    data = result.as_dict()
    lines = [f"{result.card['title']} ({result.card['path']})", f"linked: {len(result.linked)}"]
    for item in result.linked:
        arrow = "->" if item["direction"] == "out" else "<-"
        reason = f" - {item['reason']}" if item.get("reason") else ""
        lines.append(f"  {'  ' * (item['depth'] - 1)}{arrow} {item['rel']} {item['weight']:g}  {item['title']}  "
                     f"({item['path']}){reason}")
    lines.append(f"sharing tags: {len(result.by_tag)}")
    lines.extend(f"  {item['title']}  ({item['path']})  [{', '.join(item['shared_tags'])}]" for item in result.by_tag)
    if result.by_project:
        lines.append(f"same project: {len(result.by_project)}")
        lines.extend(f"  {item['title']}  ({item['path']})" for item in result.by_project)
    return Output(data, "\n".join(lines))


def add_graph(sub) -> None:
    p = sub.add_parser("graph", help="every visible card and link as {nodes, edges} JSON")
    p.add_argument("--since", help="only links created or changed since this time (ISO 8601)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_graph)


def cmd_graph(args, vault: Vault) -> Output:
    from ..evolution.graph import graph

    result = graph(vault, args.since, args.agent)
    data = {"nodes": result.nodes, "edges": result.edges}
    return Output(data, strict_json.dumps(data, indent=1))


# ---------------------------------------------------------------------------- promote

def add_promote(sub) -> None:
    p = sub.add_parser("promote", help="move an Inbox candidate to Playbooks (or --auto)")
    p.add_argument("card", nargs="?", help="Inbox card: path, stem or id")
    p.add_argument("--type", help="card type (default: the candidate's)")
    p.add_argument("--domain", help="domain (default: the candidate's)")
    p.add_argument("--title", help="title (default: the candidate's)")
    p.add_argument("--auto", action="store_true", help="score every candidate, promote those over the bar")
    p.add_argument("--dry-run", action="store_true", help="with --auto: only show the scores")
    p.set_defaults(func=cmd_promote)


def cmd_promote(args, vault: Vault) -> Output:
    from ..intake.inbox import auto_promote, promote

    if args.auto:
        if args.card or args.type or args.domain or args.title:
            raise UsageError("promote --auto takes no card, --type, --domain or --title")
        results = auto_promote(vault, args.dry_run)
        data = {"dry_run": args.dry_run, "bar": vault.settings.promote.auto_min_score,
                "candidates": [r.__dict__ for r in results]}
        if not results:
            return Output(data, "Inbox is empty.")
        lines = [f"{len(results)} candidate(s), bar {vault.settings.promote.auto_min_score}"
                 + (" (dry run)" if args.dry_run else "") + ":"]
        for r in results:
            verdict = f"promoted -> {r.promoted_to}" if r.promoted_to else "; ".join(r.reasons) or "over the bar"
            lines.append(f"{r.score:.2f}  {r.path}  {verdict}")
        return Output(data, "\n".join(lines))
    if args.dry_run:
        raise UsageError("--dry-run only goes with --auto")
    if not args.card:
        raise UsageError("promote needs an Inbox card (or --auto)")
    result = promote(vault, args.card, card_type=args.type, domain=args.domain, title=args.title)
    return Output({"source": result.source, "path": result.card.rel, "id": result.card.id},
                  f"promoted {result.source} -> {result.card.rel}")


# ---------------------------------------------------------------------------- audit / list

def add_audit(sub) -> None:
    p = sub.add_parser("audit", help="coverage, stale and weak cards, Inbox backlog, working memory, problems")
    p.set_defaults(func=cmd_audit)


def cmd_audit(args, vault: Vault) -> Output:
    from ..cards import paused_gc
    from ..answers.health import audit

    # The text shows the ten lowest cards: only they are described (JSON gives every one).
    with paused_gc():  # a row per card: see paused_gc
        report = audit(vault, None if getattr(args, "json", False) else 10)
    lines = [f"{report.total} card{'' if report.total == 1 else 's'}"]
    lines.append("by domain: " + (", ".join(f"{k} {v}" for k, v in report.by_domain.items()) or "-"))
    lines.append("by type:   " + (", ".join(f"{k} {v}" for k, v in report.by_type.items()) or "-"))
    if report.empty_domains:
        lines.append("no cards yet in: " + ", ".join(report.empty_domains))
    lines.append(f"stale (> {vault.settings.stale_after_days} days unreferenced): {len(report.stale)}")
    lines.extend(f"  {s['days_unreferenced']:>4}d  {_card_line(s)}" for s in report.stale[:10])
    lines.append(f"low confidence (< 0.5): {report.low_total}")
    lines.extend(f"  {_card_line(s)}" for s in report.low_confidence[:10])
    inbox = report.inbox
    lines.append(f"inbox: {inbox['candidates']} candidate(s) ({inbox['search_misses']} search misses, "
                 f"{inbox['learned']} learned)" + (f", oldest {inbox['oldest']}" if inbox["oldest"] else ""))
    wm = report.working_memory
    lines.append(f"working memory: {wm['entries']} live, {wm['expired']} expired (purged by `context`)")
    lines.append(f"health issues: {len(report.health)}")
    lines.extend(f"  {h['path']}{':' + str(h['line']) if h['line'] else ''}: {h['problem']}" for h in report.health)
    return Output(report.as_dict(), "\n".join(lines))


def add_list(sub) -> None:
    p = sub.add_parser("list", help="one line per card")
    _filter_flags(p, "any")
    p.add_argument("--sort", choices=("confidence", "updated", "title"), default="title")
    p.add_argument("--inbox", action="store_true", help="list Inbox candidates instead of Playbooks")
    p.add_argument("--valid-at", help="only cards valid at this time (ISO 8601): valid_from <= t < valid_to")
    p.add_argument("--agent", help="agent name: also list this agent's private cards")
    p.set_defaults(func=cmd_list)


def cmd_list(args, vault: Vault) -> Output:
    from itertools import starmap

    from ..cards import list_cards, list_lines, paused_gc

    folders = ("Inbox",) if args.inbox else ("Playbooks",)
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


# ---------------------------------------------------------------------------- learn

def add_learn(sub) -> None:
    p = sub.add_parser("learn", help="a structured Inbox candidate: problem, solution, evidence "
                                     "(or every lesson in a Claude Code transcript)")
    p.add_argument("--title", help="required unless --from-transcript")
    p.add_argument("--type", help="required unless --from-transcript")
    p.add_argument("--domain", help="required unless --from-transcript")
    p.add_argument("--tags", default="")
    p.add_argument("--problem", help="what went wrong (required unless --from-transcript)")
    p.add_argument("--solution", help="what fixed it (required unless --from-transcript)")
    p.add_argument("--evidence", help="where it was seen (a log line, a commit, a session)")
    p.add_argument("--project")
    p.add_argument("--from-transcript", metavar="FILE",
                   help="a Claude Code session transcript (.jsonl): learn its error-then-fix sequences "
                        "and user corrections")
    p.set_defaults(func=cmd_learn)


_LEARN_FIELDS = ("title", "type", "domain", "problem", "solution")


def cmd_learn(args, vault: Vault) -> Output:
    from ..intake.inbox import learn

    if args.from_transcript:
        given = [f"--{name}" for name in (*_LEARN_FIELDS, "evidence", "project") if getattr(args, name)]
        if given or args.tags:
            raise UsageError(f"--from-transcript takes no {', '.join(given or ['--tags'])}: "
                             "the lessons come from the transcript")
        return _learn_transcript(args, vault)
    missing = [f"--{name}" for name in _LEARN_FIELDS if getattr(args, name) is None]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)} (see `brain learn --help`)")
    result = learn(vault, title=args.title, card_type=args.type, domain=args.domain, tags=args.tags,
                   problem=args.problem, solution=args.solution, evidence=args.evidence, project=args.project)
    verb = "learned" if result.created else "added evidence to"
    return Output({"path": result.card.rel, "id": result.card.id, "created": result.created,
                   "evidence_count": result.evidence_count},
                  f"{verb} {result.card.rel} (evidence {result.evidence_count}); "
                  "`promote` it once it is confirmed")


def _learn_transcript(args, vault: Vault) -> Output:
    from ..intake.transcripts import learn_from_transcript

    result = learn_from_transcript(vault, args.from_transcript)
    lines = [f"{args.from_transcript}: {result.lines} line(s), {len(result.lessons)} lesson(s)"
             + (f", {result.skipped_lines} unreadable line(s) skipped" if result.skipped_lines else "")]
    lines += [f"  learned {rel}" for rel in result.learned]
    lines += [f"  added evidence to {rel}" for rel in result.more_evidence]
    lines += [f"  already learned: {rel}" for rel in result.unchanged]
    lines += [f"  not proposed: {item['title']} ({item['reason']})" for item in result.not_proposed]
    lines += [f"  promoted {item['source']} -> {item['path']}" for item in result.promoted]
    return Output(result.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- working memory

def add_remember(sub) -> None:
    p = sub.add_parser("remember", help="store a short-lived note under KEY")
    p.add_argument("key")
    p.add_argument("--body", required=True, help="the note (`-` reads standard input)")
    p.add_argument("--ttl", type=float, help="days to keep it (default from config, 7)")
    p.add_argument("--agent", help="the agent's own note (WorkingMemory/agents/AGENT/), not a shared one")
    p.set_defaults(func=cmd_remember)


def cmd_remember(args, vault: Vault) -> Output:
    from ..working_memory import remember

    entry = remember(vault, args.key, _read_body(args.body), args.ttl, args.agent)
    return Output(entry.as_dict(), f"remembered {entry.key} until {entry.expires}")


def add_recall(sub) -> None:
    p = sub.add_parser("recall", help="read the working-memory note KEY")
    p.add_argument("key")
    p.add_argument("--agent", help="the agent's own note first, else the shared one")
    p.set_defaults(func=cmd_recall)


def cmd_recall(args, vault: Vault) -> Output:
    from ..working_memory import recall

    entry = recall(vault, args.key, args.agent)
    return Output(entry.as_dict(), entry.body)


def add_forget(sub) -> None:
    p = sub.add_parser("forget", help="delete the working-memory note KEY")
    p.add_argument("key")
    p.add_argument("--agent", help="the agent's own note")
    p.set_defaults(func=cmd_forget)


def cmd_forget(args, vault: Vault) -> Output:
    from ..working_memory import forget

    entry = forget(vault, args.key, args.agent)
    return Output({"key": entry.key}, f"forgot {entry.key}")


def add_context(sub) -> None:
    p = sub.add_parser("context", help="every live working-memory note (purges expired ones)")
    p.add_argument("--agent", help="also the agent's own notes")
    p.set_defaults(func=cmd_context)


def cmd_context(args, vault: Vault) -> Output:
    from ..working_memory import context

    live, purged = context(vault, args.agent)
    data = {"entries": [e.as_dict() for e in live], "purged": purged}
    lines = [f"## {e.key}{' (' + e.agent + ')' if e.agent else ''} (until {e.expires})\n{e.body}"
             for e in live] or ["No working memory."]
    if purged:
        lines.append(f"(purged {len(purged)} expired: {', '.join(purged)})")
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- brief

def add_brief(sub) -> None:
    p = sub.add_parser("brief", help="a Markdown context block for an agent prompt, within a token budget")
    p.add_argument("query", nargs="?", help="what the agent is about to work on (optional)")
    p.add_argument("--budget", type=int, default=800,
                   help="most tokens to use (default 800; CJK ~1 token a character, other text ~4 characters)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.add_argument("--project", help="project at hand: its cards (without a query) or a boost (with one)")
    p.add_argument("--limit", type=int, default=5, help="most cards to consider (default 5)")
    p.set_defaults(func=cmd_brief)


def cmd_brief(args, vault: Vault) -> Output:
    from ..answers.brief import brief

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit} must be at least 1")
    result = brief(vault, args.query, budget=args.budget, agent=args.agent, project=args.project,
                   limit=args.limit)
    # Nothing relevant prints nothing: the output is meant to be pasted into a prompt as it is.
    return Output(result.as_dict(), result.markdown)


# ---------------------------------------------------------------------------- mcp

def add_mcp(sub) -> None:
    p = sub.add_parser("mcp", help="MCP server on stdio (JSON-RPC 2.0, one message per line)")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args, vault: Vault) -> Output:
    from .mcp import serve

    serve(vault, sys.stdin.buffer, sys.stdout.buffer)
    return Output({}, "")


# ---------------------------------------------------------------------------- serve

def add_serve(sub) -> None:
    p = sub.add_parser("serve", help="HTTP JSON API of seed 002 (X-API-KEY from $BRAIN_API_KEY or "
                                     "[http] api_key_file); stops on SIGTERM or Ctrl-C")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one, printed on stderr)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes sharing the port (default: one per core, at most 8; Python uses one core "
                        "per process)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args, vault: Vault) -> Output:
    from .http_api import serve  # only `serve` pays for http.server
    from .web import Page        # the Memory Gardener, served at / beside the API

    serve(vault, args.host, args.port, args.workers, page=Page)
    return Output({}, "")


# ---------------------------------------------------------------------------- merge

def add_merge(sub) -> None:
    p = sub.add_parser("merge", help="merge OTHER into KEEP: both bodies, the union of tags and links; OTHER is "
                                     "superseded by KEEP (undoable)")
    p.add_argument("keep", metavar="KEEP")
    p.add_argument("other", metavar="OTHER")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args, vault: Vault) -> Output:
    from ..evolution.relations import merge

    result = merge(vault, args.keep, args.other)
    added = f"; tags added: {', '.join(result.tags_added)}" if result.tags_added else ""
    return Output(result.as_dict(), f"merged {result.merged.rel} into {result.card.rel}{added}; "
                                    f"{result.merged.rel} is superseded\nundo with `brain undo {result.event['eid']}`")


# ---------------------------------------------------------------------------- persona

def add_persona(sub) -> None:
    p = sub.add_parser("persona", help="the persona context of the vault (seed 001): show it, or --set FIELD=VALUE "
                                       "(user_info.name=..., current_emotion=..., last_conversation_time=...)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="change a field (repeatable)")
    p.set_defaults(func=cmd_persona)


def cmd_persona(args, vault: Vault) -> Output:
    from ..agents.personas import read_context, update_context

    changed: list[str] = []
    if args.set:
        changes: dict[str, Any] = {}
        for item in args.set:
            field, equals, value = item.partition("=")
            if not equals or not field.strip():
                raise UsageError(f"--set {item!r} is not FIELD=VALUE, e.g. --set current_emotion=calm")
            outer, dot, inner = field.strip().partition(".")
            if dot:
                changes.setdefault(outer, {})[inner] = value
            else:
                changes[outer] = value
        context, changed = update_context(vault, changes)
    else:
        context = read_context(vault)
    lines = []
    for key, value in context.items():
        if isinstance(value, dict):
            lines.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            lines.append(f"{key}: {value}")
    if args.set:
        lines.append(f"(changed: {', '.join(changed) or 'nothing'})")
    return Output({"persona_context": context, "changed": changed}, "\n".join(lines))


# ---------------------------------------------------------------------------- keys

def add_keys(sub) -> None:
    p = sub.add_parser("keys", help="agents' keys for `brain serve`: add NAME (prints the key once), list, "
                                    "revoke NAME; a key named NAME acts as agent NAME")
    p.add_argument("action", choices=("add", "list", "revoke"))
    p.add_argument("name", nargs="?", help="the agent's name (add, revoke)")
    p.set_defaults(func=cmd_keys, needs_vault=False)


def cmd_keys(args, vault: Vault | None) -> Output:
    from ..errors import VaultNotFound
    from ..agents.keys import add_key, keys_path, list_keys, revoke_key

    try:   # the vault's config may name the keys file; with no vault, the default path
        vault = resolve_vault(getattr(args, "vault", None), example=args.example_vault)
    except VaultNotFound:
        vault = None
    path = keys_path(vault)
    if args.action != "list" and not args.name:
        raise UsageError(f"keys {args.action} needs the agent's NAME, e.g. `brain keys {args.action} deployer`")
    if args.action == "add":
        info, token = add_key(path, args.name)
        return Output({**info.as_dict(), "token": token, "file": str(path)},
                      f"{token}\n\nkey of agent {info.name} (fingerprint {info.fingerprint}), stored as a hash in {path}.\n"
                      "It is shown this once: give it to the agent as its X-API-KEY. "
                      f"`brain keys revoke {info.name}` withdraws it.")
    if args.action == "revoke":
        info = revoke_key(path, args.name)
        return Output({**info.as_dict(), "file": str(path), "revoked": True},
                      f"revoked the key of agent {info.name} ({info.fingerprint}); a running server refuses it now")
    keys = list_keys(path)
    lines = [f"{k.name}  {k.fingerprint}  created {k.created}" for k in keys] or [f"No agent keys in {path}."]
    return Output({"file": str(path), "keys": [k.as_dict() for k in keys]}, "\n".join(lines))


# ---------------------------------------------------------------------------- hook

def add_hook(sub) -> None:
    p = sub.add_parser("hook", help="Claude Code hook: session-start, prompt, stop, session-end or pre-compact "
                                    "(reads the hook JSON on stdin; always exits 0)")
    # Not `choices`: a usage error exits 2, which Claude Code treats as "block" for some events.
    p.add_argument("event", help="session-start | prompt | stop | session-end | pre-compact")
    p.set_defaults(func=cmd_hook, needs_vault=False)


def cmd_hook(args, vault: Vault | None) -> Output:
    from .hooks import run_hook

    stdin_text = ""
    if sys.stdin is not None and not sys.stdin.isatty():
        raw = getattr(sys.stdin, "buffer", None)
        # Bytes that are not UTF-8 become U+FFFD: a hook never refuses its input (it must not
        # block the agent), and they must not reach stdout as they came (no longer UTF-8 JSON).
        stdin_text = raw.read().decode("utf-8", "replace") if raw is not None else sys.stdin.read()
    result = run_hook(args.event, stdin_text, getattr(args, "vault", None), args.example_vault)
    text = strict_json.dumps(result.output) if result.output else ""
    return Output(result.output or {}, text, [result.note] if result.note else [])


# ---------------------------------------------------------------------------- reindex

def add_reindex(sub) -> None:
    p = sub.add_parser("reindex", help="rebuild the keyword search index in .brain/cache/ from the cards")
    p.add_argument("--embeddings", action="store_true",
                   help="instead, embed every card without a current vector, and nothing else (resumes "
                        "where an interrupted run stopped)")
    p.add_argument("--background", action="store_true", help=argparse.SUPPRESS)  # the search's catch-up
    p.set_defaults(func=cmd_reindex)


def cmd_reindex(args, vault: Vault) -> Output:
    import time

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"\rindexing {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    if args.background:
        # Started by a search (semantic.start_catch_up): vectors only, quietly, and only when
        # no other process is embedding. A failure is recorded in the cache, not reported.
        from ..search.semantic import sync_vectors

        try:
            sync_vectors(vault, background=True)
        except BrainError:
            pass
        return Output({}, "")
    from ..evolution.sharing import settle_vault

    start = time.perf_counter()
    settled = settle_vault(vault)   # the cards agree with the log before they are indexed or embedded
    data: dict = {"settled": settled.summary()} if settled.changes else {}
    note = f"{settled.summary()}\n" if settled.changes else ""
    if args.embeddings:
        # Trigger: --embeddings. Why: vectors cost minutes to hours of a provider's time and the
        # keyword index a few seconds; a run that resumes vectors must not pay for a keyword
        # rebuild each time. Outcome: vectors only (the keyword index is brought up to date, as a
        # search would, not rebuilt); plain `reindex` rebuilds the keyword index only.
        from ..search.semantic import sync_vectors

        synced = sync_vectors(vault, _EmbeddingProgress(start) if sys.stderr.isatty() else None)
        seconds = round(time.perf_counter() - start, 3)
        text = (f"embedded {synced.embedded} card text(s), reused {synced.reused}, dropped {synced.removed}; "
                f"{synced.total} card(s) have vectors ({seconds:.1f} s)")
        if synced.batch < vault.settings.embeddings.batch:
            text += (f"\nrequests were cut to {synced.batch} passage(s) after a slow one; set [embeddings] "
                     f"batch = {synced.batch} to start there")
        return Output({**data, "embeddings": {**synced.__dict__, "seconds": seconds}}, note + text)
    from ..search.index import rebuild
    from ..search.analysis import card_fields

    changes = rebuild(vault, card_fields, progress if sys.stderr.isatty() else None)
    seconds = round(time.perf_counter() - start, 3)
    return Output({"indexed": len(changes.added), "seconds": seconds, **data},
                  f"{note}indexed {len(changes.added)} card file(s) in {seconds:.1f} s")


class _EmbeddingProgress:
    """`reindex --embeddings` progress on a terminal: cards done of this run's, their rate so far
    and the time left at that rate."""

    def __init__(self, start: float) -> None:
        self.start = start

    def __call__(self, done: int, total: int) -> None:
        import time

        elapsed = time.perf_counter() - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f", ETA {_duration((total - done) / rate)}" if rate > 0 and done < total else ""
        sys.stderr.write(f"\rembedding {done:,}/{total:,} cards, {rate:.2f} cards/s{eta}\x1b[K")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


# ---------------------------------------------------------------------------- stats / analyze

def add_stats(sub) -> None:
    p = sub.add_parser("stats", help="counts by type, domain, project, scope and status; top tags; links; "
                                     "Inbox; working memory (from the index)")
    p.add_argument("--agent", help="also count this agent's private cards")
    p.set_defaults(func=cmd_stats)


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def cmd_stats(args, vault: Vault) -> Output:
    from ..answers.insights import stats

    result = stats(vault, args.agent)
    links = result.links
    lines = [f"{result.total} card(s)", f"by type:    {_counted(result.by_type)}",
             f"by domain:  {_counted(result.by_domain)}", f"by project: {_counted(result.by_project)}",
             f"by scope:   {_counted(result.by_scope)}", f"by status:  {_counted(result.by_status)}",
             f"tags: {result.total_tags} distinct; top: " + (", ".join(f"{t['name']} {t['count']}"
                                                                      for t in result.top_tags[:10]) or "-"),
             f"links: {links['total']} ({_counted(links['by_rel'])}); {links['linked_cards']} linked card(s), "
             f"{links['unlinked_cards']} unlinked, {links['broken']} broken",
             f"inbox: {result.inbox} candidate(s)",
             f"working memory: {result.working_memory['entries']} live, {result.working_memory['expired']} expired"]
    if result.unparseable:
        lines.append(f"unparseable files: {result.unparseable} (`brain doctor` shows them)")
    return Output(result.as_dict(), "\n".join(lines))


def add_analyze(sub) -> None:
    p = sub.add_parser("analyze", help="health score 0-100 and issues with the cards affected and a command to fix each")
    p.add_argument("--agent", help="also analyse this agent's private cards")
    p.set_defaults(func=cmd_analyze)


def cmd_analyze(args, vault: Vault) -> Output:
    from ..answers.insights import analyze

    result = analyze(vault, args.agent)
    lines = [f"health score {result.health_score:g}/100 over {result.total} card(s)"]
    for item in result.issues:
        shown = ", ".join(item["affected_memory_ids"][:5]) + (" ..." if item["count"] > 5 else "")
        lines.append(f"[{item['severity']}] {item['type']}: {item['message']}")
        lines.append(f"    affected: {shown}")
        lines.append(f"    fix: {item['suggested_action']}")
    lines.extend(f"- {s}" for s in result.suggestions)
    return Output(result.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- export / import

def add_export(sub) -> None:
    p = sub.add_parser("export", help="the whole vault as JSONL: every card (frontmatter, body, path, text), "
                                      "working memory, and with --events the log")
    p.add_argument("--output", "-o", help="write the JSONL to this file (default: standard output)")
    p.add_argument("--format", choices=("jsonl",), default="jsonl", help="file format (jsonl)")
    p.add_argument("--events", action="store_true", help="also export every logged event")
    p.add_argument("--agent", help="also export this agent's private cards")
    p.add_argument("--include-private", action="store_true",
                   help="export every agent's private cards too (a full backup)")
    p.set_defaults(func=cmd_export)


def cmd_export(args, vault: Vault) -> Output:
    from ..evolution.portability import export_vault, save_export

    if args.output is None and getattr(args, "json", False):
        raise UsageError("export --json needs --output FILE: the JSONL goes to the file, the summary to stdout")
    result = export_vault(vault, events=args.events, agent=args.agent, include_private=args.include_private)
    data = {"output": args.output, "cards": result.cards, "memories": result.memories, "events": result.events,
            "hidden_private": result.hidden, "skipped": result.skipped}
    warnings = [f"skipped {s}" for s in result.skipped]
    if result.hidden:
        # A backup that silently lacks cards is worse than none: say how many and how to get them.
        warnings.append(f"left out {result.hidden} agent-private card(s)"
                        + (" of other agents; add --include-private for a full backup" if args.agent else
                           "; add --include-private for a full backup, or --agent NAME for one agent's own"))
    if args.output is None:
        return Output(data, result.jsonl().rstrip("\n"), warnings)
    save_export(result, Path(args.output))
    text = (f"exported {result.cards} card(s), {result.memories} working-memory note(s)"
            + (f", {result.events} event(s)" if args.events else "") + f" to {args.output}")
    return Output(data, text, warnings)


def add_import(sub) -> None:
    p = sub.add_parser("import", help="bring an export file into the vault (checked whole first; "
                                      "never overwrites a newer card silently)")
    p.add_argument("file", help="a JSONL file written by `brain export`")
    p.add_argument("--dry-run", action="store_true", help="say what would happen; write nothing")
    p.add_argument("--on-conflict", choices=("skip", "newer", "overwrite"), default="skip",
                   help="when a card exists: keep it (skip, default), replace it when the file's is newer "
                        "by updated/created (newer), or replace it (overwrite)")
    p.set_defaults(func=cmd_import)


def cmd_import(args, vault: Vault) -> Output:
    from ..evolution.portability import import_vault

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"\rimporting {done}/{total}" + ("\n" if done == total else ""))
        sys.stderr.flush()

    result = import_vault(vault, Path(args.file), on_conflict=args.on_conflict, dry_run=args.dry_run,
                          progress=progress if sys.stderr.isatty() else None)
    verb = "would import" if args.dry_run else "imported"
    lines = [f"{verb} from {args.file}: {len(result.created)} new, {len(result.overwritten)} overwritten, "
             f"{len(result.unchanged)} unchanged, {len(result.skipped)} skipped, {result.events_added} event(s)"]
    lines += [f"  skipped {s['path']}: {s['reason']}" for s in result.skipped[:20]]
    if len(result.skipped) > 20:
        lines.append(f"  ... and {len(result.skipped) - 20} more skipped (see --json)")
    lines += [f"  replaced {p} although the vault's card was newer" for p in result.replaced_newer]
    if result.event_ids:
        lines.append(f"undo with: brain undo EVENT_ID (one per batch: {', '.join(result.event_ids[:5])}"
                     + (" ..." if len(result.event_ids) > 5 else "") + ")")
    return Output(result.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- ingest

def add_ingest(sub) -> None:
    p = sub.add_parser("ingest", help="raw text to atomic fact/state/episode cards, upserted by kind (seed 002)")
    p.add_argument("file", metavar="FILE", help="a UTF-8 text file, or - for standard input")
    p.add_argument("--source", help="where the text came from, e.g. chat, diary, manual")
    p.add_argument("--agent", help="the agent sending it (with --scope agent: private to it)")
    p.add_argument("--scope", choices=("global", "agent"), help="global (default) or agent (needs --agent)")
    p.add_argument("--event-time", help="when it happened (ISO 8601); relative dates count from it (default: now)")
    p.add_argument("--idempotency-key", help="a second ingest with the same key writes nothing")
    p.add_argument("--dry-run", action="store_true", help="say what would happen; write nothing")
    p.set_defaults(func=cmd_ingest)


def cmd_ingest(args, vault: Vault) -> Output:
    from ..intake.ingest import ingest_text

    if args.file == "-":
        text = _read_body("-")
    else:
        try:
            text = Path(args.file).read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{args.file} is not UTF-8 text (byte {exc.start}); convert it to UTF-8") from exc
        except OSError as exc:
            raise UsageError(f"cannot read {args.file}: {exc.strerror or exc}; give a readable text file or -") from exc
    result = ingest_text(vault, text, source=args.source, agent=args.agent, scope=args.scope,
                         event_time=args.event_time, idempotency_key=args.idempotency_key, dry_run=args.dry_run)
    data = {**result.to_dict(), "ingest_id": result.event_id, "replayed": result.replayed,
            "dry_run": result.dry_run}
    verb = "would ingest" if result.dry_run else ("already ingested" if result.replayed else "ingested")
    lines = [f"{verb}: {data['created']} created, {data['updated']} updated, {data['skipped']} skipped"
             + (f" (event {result.event_id})" if result.event_id else "")]
    for item in result.items:
        kind = item.kind or "-"
        lines.append(f"  {item.action:<8} {kind:<8} {_echo(item.statement)}"
                     + (f"  ({item.path})" if item.path and item.action != "skipped" else f"  [{item.reason}]"
                        if item.action == "skipped" else ""))
    if result.event_id and not result.replayed and (data["created"] or data["updated"]):
        lines.append(f"undo with: brain undo {result.event_id}")
    return Output(data, "\n".join(lines), warnings=list(result.warnings))


# ---------------------------------------------------------------------------- doctor

def add_doctor(sub) -> None:
    p = sub.add_parser("doctor", help="check settings, every card and the log; say how to fix problems")
    p.add_argument("--fix", action="store_true", help="first make every card agree with the log (after a git "
                                                      "merge: confidence replayed, merged cards split, links to "
                                                      "deleted cards removed), as one logged, undoable operation")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args, vault: Vault) -> Output:
    from ..answers.health import doctor

    fixed = []
    if args.fix:
        from ..evolution.sharing import settle_vault

        plan = settle_vault(vault)
        if plan.changes:
            fixed.append(f"fixed: {plan.summary()}")
    findings = doctor(vault)
    errors = sum(1 for f in findings if f.level == "error")
    data = {"vault": str(vault.root), "errors": errors, "warnings": len(findings) - errors,
            "findings": [f.as_dict() for f in findings]}
    if args.fix:
        data["fixed"] = fixed
    if not findings:
        return Output(data, "\n".join([*fixed, f"{vault.root}: all good"]))
    lines = [*fixed, *(f"{f.level}: {f.path}: {f.message} -> {f.fix}" for f in findings)]
    lines.append(f"{errors} error(s), {len(findings) - errors} warning(s)")
    # Exit 1 when there are errors (warnings alone: 0), with the whole report as usual, as a
    # linter does: scripts and CI can use `brain doctor` as a check.
    return Output(data, "\n".join(lines), exit_code=1 if errors else 0)


# ---------------------------------------------------------------------------- main

COMMANDS: list[Callable] = [
    add_search, add_get, add_record, add_create, add_update, add_delete, add_history, add_undo, add_link, add_unlink, add_links, add_explore, add_graph,
    add_promote, add_audit, add_list, add_learn,
    add_remember, add_recall, add_forget, add_context, add_init, add_merge_driver, add_doctor, add_reindex,
    add_export, add_import, add_stats, add_analyze,
    add_brief, add_mcp, add_serve, add_hook, add_ingest, add_keys, add_merge, add_persona,
]


class _VaultAction(argparse.Action):
    """`--vault` may be repeated: `vault` keeps the first (the one every command reads and writes),
    `vaults` all of them in order (search searches them together)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = list(getattr(namespace, "vaults", None) or ())
        if not given:
            setattr(namespace, "vault", values)
        setattr(namespace, "vaults", given + [values])


def build_parser(only: str | None = None) -> Parser:
    """The argument parser; with `only`, just that subcommand's (building all ~20 costs ~2 ms of
    every call's start-up)."""
    common = Parser(add_help=False)
    # SUPPRESS: a flag given before the subcommand is not reset by the subparser's default.
    common.add_argument("--vault", action=_VaultAction, default=argparse.SUPPRESS,
                        help="vault folder (default: $BRAIN_VAULT or nearest); repeated: search searches "
                             "them all, every other command uses the first")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print one JSON object: {ok, command, data} or {ok, error}")
    common.add_argument("--persona", default=argparse.SUPPRESS, metavar="NAME",
                        help="use persona NAME's vault ([personas] in the vault's config; seed 001)")
    parser = Parser(prog=PROG, parents=[common],
                    description="External Brain: a knowledge base of Markdown cards for coding agents.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    original = sub.add_parser

    def add_parser(name: str, **kwargs):
        return original(name, parents=[common], description=kwargs.get("help"), **kwargs)

    sub.add_parser = add_parser  # every subcommand gets --vault and --json
    for add in COMMANDS:
        if only is None or add.__name__ == f"add_{only.replace('-', '_')}":
            add(sub)
    return parser


def envelope_ok(command: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "command": command, "data": data}


def envelope_error(command: str | None, exc: BrainError) -> dict[str, Any]:
    return {"ok": False, "command": command,
            "error": {"code": exc.code, "message": exc.message, "details": exc.details}}


def _print(text: str, stream) -> None:
    try:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()
    except BrokenPipeError:  # `brain list | head`: the reader left, nothing is wrong
        pass


def _check_argv(argv: list[str]) -> None:
    """Refuse arguments that were not UTF-8 before anything runs. Python hands undecodable argv
    bytes over as lone surrogates (U+DC80..U+DCFF), which no card, log line or output can hold:
    `record` once wrote the card, then failed to log it."""
    for number, arg in enumerate(argv, start=1):
        if not arg.isascii() and any("\ud800" <= char <= "\udfff" for char in arg):
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            raise UsageError(f"argument {number} ({shown}) is not valid UTF-8; pass arguments as UTF-8 text")


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in argv, for the error envelope when parsing fails: the first
    argument that is not an option or an option's value (`--vault PATH`), if it is a command."""
    names = {add.__name__[4:].replace("_", "-") for add in COMMANDS}
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--vault":
            skip = True
        elif not arg.startswith("-"):
            return arg if arg in names else None
    return None


def _parse(argv: list[str]) -> argparse.Namespace:
    names = {add.__name__[4:].replace("_", "-") for add in COMMANDS}
    command = next((a for a in argv if a in names), None)
    if command and "-h" not in argv and "--help" not in argv:
        try:
            return build_parser(only=command).parse_args(argv)
        except UsageError:
            pass  # e.g. a vault folder named like a command: let the full parser judge
    return build_parser().parse_args(argv)


# Commands that change the vault: when one fails after its vault is known, the failure is logged
# (`failed`), as the persona service's operations log did (docs/compatibility.md, The operations log) (docs/decisions.md, "Many agents").
WRITE_COMMANDS = frozenset({"create", "update", "delete", "record", "link", "unlink", "merge", "promote", "learn",
                            "remember", "forget", "undo", "import", "ingest"})


def _writes(args) -> bool:
    return args is not None and (args.command in WRITE_COMMANDS or (args.command == "persona" and args.set))


def _named(args) -> str | None:
    """The card, key or event a failed command named (its first such argument), for the log."""
    for name in ("card", "keep", "source", "key", "event", "file"):
        value = getattr(args, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def main(argv: list[str] | None = None, example_vault: Path | None = None) -> int:
    """Run one command; return its exit code. `example_vault` is the checkout's own vault, used
    when no vault is given or found: only `runtime/playbook_api.py` passes it, never the installed
    `brain` (`[project.scripts]` calls `main()`), so an install never writes into a checkout."""
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    command = _command_of(argv)
    vault = args = None
    try:
        try:
            _check_argv(argv)
            args = _parse(argv)
            command = args.command
            want_json = getattr(args, "json", False)
            args.example_vault = example_vault
            vault = (resolve_vault(getattr(args, "vault", None), example=example_vault)
                     if getattr(args, "needs_vault", True) else None)
            if getattr(args, "persona", None):
                if vault is None:
                    raise UsageError(f"{command} takes no --persona")
                from ..agents.personas import persona_vault

                vault = persona_vault(vault, args.persona)   # docs/compatibility.md, Personas: each is a vault of its own
            output = args.func(args, vault)
        except OSError as exc:
            # Trigger: an operating-system error no layer below turned into a BrainError (a lock
            # file on a read-only vault, a full disk under a write). Why: that is the world, not a
            # bug, and the atomic writes below have already left every file whole. Outcome: the
            # same one line (path and cause) as any other error, exit 1.
            from ..vault.storage import io_problem

            raise io_problem(exc) from exc
    except BrainError as exc:
        if vault is not None and _writes(args):
            from ..vault.events import log_failure

            log_failure(vault, command, exc.code, exc.message, _named(args), via="cli")
        if want_json:
            _print(strict_json.dumps(envelope_error(command, exc)), sys.stdout)
        else:
            _print(f"{PROG}: error: {exc.message}", sys.stderr)
        return exc.exit_code
    for warning in [*output.warnings, *(vault.notices if vault is not None else ())]:
        _print(f"{PROG}: warning: {warning}", sys.stderr)
    if want_json:
        _print(strict_json.dumps(envelope_ok(command, output.data), default=str), sys.stdout)
    elif output.text:  # an empty result with nothing to say (an empty brief, a quiet hook) prints nothing
        _print(output.text, sys.stdout)
    return output.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
