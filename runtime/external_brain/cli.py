"""The command line: argparse in, text or the `--json` envelope out. The only module that prints.

Each subcommand is a pair: `add_<cmd>(subparsers)` declares its arguments and
`cmd_<cmd>(args, vault) -> Output` calls one library function and formats its result.
`main(argv) -> int` returns the exit code: 0 success (an empty result too), 1 failure,
2 bad usage (SPEC 4).
"""

from __future__ import annotations

import argparse
import json
import sys
from .records import factory, record
from pathlib import Path
from typing import Any, Callable

from .errors import BadFrontmatter, BrainError, UsageError
from .storage import Vault, resolve_vault

PROG = "brain"


@record
class Output:
    """What a command produced: `data` for `--json`, `text` for people and agents."""

    data: dict[str, Any]
    text: str
    warnings: list[str] = factory(list)


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting, so `--json` can report it."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# ---------------------------------------------------------------------------- helpers

def _problem_warnings(problems) -> list[str]:
    return [f"skipped {p.path}{':' + str(p.line) if p.line else ''}: {p.message}" for p in problems]


def _filters(args: argparse.Namespace, default_status: str = "active"):
    from .search import Filters

    return Filters(domain=args.domain, type=args.type, tags=tuple(args.tag or ()),
                   project=getattr(args, "project", None),
                   status=getattr(args, "status", None) or default_status, agent=getattr(args, "agent", None))


def _read_body(value: str | None) -> str:
    """`--body -` reads standard input; anything else is the body itself."""
    if value == "-":
        return sys.stdin.read()
    return value or ""


def _conf(value: float) -> str:
    return f"{value:.2f}"


def _card_line(summary: dict[str, Any]) -> str:
    kind = "/".join(x for x in (summary.get("type"), summary.get("domain")) if x) or "-"
    return f"{_conf(summary['confidence'])}  {kind:<24} {summary['title']}  ({summary['path']})"


def _filter_flags(parser: argparse.ArgumentParser, status_default: str) -> None:
    parser.add_argument("--domain", help="only cards of this domain")
    parser.add_argument("--type", help="only cards of this type")
    parser.add_argument("--tag", action="append", help="only cards with this tag (repeatable: all must match)")
    parser.add_argument("--project", help="only cards of this project")
    parser.add_argument("--status", help=f"active, superseded, archived or any (default {status_default})")


# ---------------------------------------------------------------------------- init

def add_init(sub) -> None:
    p = sub.add_parser("init", help="create a vault (folders, settings, git attributes)")
    p.add_argument("path", help="folder for the new vault (created if missing)")
    p.set_defaults(func=cmd_init, needs_vault=False)


def cmd_init(args, vault: Vault | None) -> Output:
    from .storage import init_vault

    created_vault, created = init_vault(Path(args.path))
    text = f"vault ready at {created_vault.root}" + (f" (created {', '.join(created)})" if created else " (nothing to create)")
    return Output({"vault": str(created_vault.root), "created": created}, text)


# ---------------------------------------------------------------------------- search

def add_search(sub) -> None:
    p = sub.add_parser("search", help="ranked cards for a query")
    p.add_argument("query", help="what you are looking for, e.g. \"ECS timeout\"")
    _filter_flags(p, "active")
    p.add_argument("--limit", type=int, help="most hits to show (default from config, 5)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.add_argument("--mode", choices=("keyword",), default="keyword", help="ranking mode (keyword)")
    p.add_argument("--explain", action="store_true", help="show matched terms and each part of the score")
    p.set_defaults(func=cmd_search)


def cmd_search(args, vault: Vault) -> Output:
    from .search import search

    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit {args.limit} must be at least 1")
    result = search(vault, args.query, _filters(args), args.limit, args.explain)
    hits = [h.as_dict(args.explain) for h in result.hits]
    data = {"query": args.query, "mode": args.mode, "hits": hits, "cut": result.cut,
            "miss_candidate": result.miss_candidate}
    if not hits:
        text = f'No cards match "{args.query}".'
        if result.miss_candidate:
            text += f" Logged as a search miss: {result.miss_candidate}"
        return Output(data, text, _problem_warnings(result.problems) + result.warnings)
    lines = [f'{len(hits)} card{"s" if len(hits) != 1 else ""} for "{args.query}":']
    for number, (hit, shown) in enumerate(zip(result.hits, hits), start=1):
        from .confidence import action_for

        kind = "/".join(x for x in (shown["type"], shown["domain"]) if x)
        lines.append(f"{number}. {shown['title']}  [{kind}]  confidence {_conf(shown['confidence'])} "
                     f"({action_for(hit.confidence)})  score {shown['score']:.2f}")
        lines.append(f"   {shown['path']}")
        if shown["snippet"]:
            lines.append(f"   {shown['snippet']}")
        if args.explain:
            for term, parts in shown["explain"].items():
                detail = " ".join(f"{k}={v:.2f}" for k, v in parts.items())
                lines.append(f"   why {term!r}: {detail}")
    lines.append("Next: `get PATH` to read one, then `record PATH used|rejected`.")
    return Output(data, "\n".join(lines), _problem_warnings(result.problems) + result.warnings)


# ---------------------------------------------------------------------------- get

def add_get(sub) -> None:
    p = sub.add_parser("get", help="a whole card and what to do with it (logs `referenced`)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.set_defaults(func=cmd_get)


def cmd_get(args, vault: Vault) -> Output:
    from .cards import get_card
    from .events import append_event
    from .storage import find_card_path, read_text

    try:
        shown = get_card(vault, args.card)
    except BadFrontmatter as exc:
        # SPEC 3: a card whose frontmatter cannot be parsed is still readable, as raw text.
        path = find_card_path(vault, args.card)
        raw = read_text(path, vault.rel(path))
        append_event(vault, "referenced", vault.rel(path))
        return Output({"path": vault.rel(path), "raw": raw, "warning": exc.message}, raw.rstrip("\n"),
                      [f"{exc.message}; showing the raw file"])
    card = shown.card
    data = {**shown.summary(), "stored_confidence": round(shown.stored_confidence, 4),
            "action": shown.action, "last_referenced": shown.last_referenced,
            "frontmatter": card.meta, "body": card.body}
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
    from .cards import record

    result = record(vault, args.card, args.outcome, args.note)
    data = {"path": result.card.rel, "id": result.card.id, "outcome": result.outcome,
            "before": result.before, "decayed": result.decayed, "after": result.after,
            "event": result.event["eid"]}
    faded = f" (decayed to {result.decayed:g} first)" if result.decayed != result.before else ""
    return Output(data, f"{result.card.rel}: {result.outcome}, confidence {result.before:g}{faded} "
                        f"-> {result.after:g}")


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
    from .cards import create_card

    result = create_card(vault, card_type=args.type, domain=args.domain, title=args.title,
                         body=_read_body(args.body), tags=args.tags, project=args.project,
                         importance=args.importance, scope=args.scope, agent=args.agent,
                         no_duplicates=args.no_duplicates)
    card = result.card
    data = {"created": result.created, "path": card.rel if card else None, "id": card.id if card else None,
            "insights": result.insights, "skipped_reason": result.skipped_reason}
    if result.created:
        lines = [f"created {card.rel}", f"id: {card.id}"]
    else:
        lines = [f"not created: {result.skipped_reason}"]
    labels = {"suggested_links": "related", "potential_duplicates": "potential duplicate",
              "supersedes": "supersedes", "contradictions": "may contradict",
              "success_after_failure": "success after failure of"}
    for key, label in labels.items():
        for item in result.insights.get(key, []):
            lines.append(f"  {label}: {item['title']} ({item['path']}, similarity {item['similarity']})")
    return Output(data, "\n".join(lines))


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
    from .inbox import auto_promote, promote

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
    from .health import audit

    report = audit(vault)
    lines = [f"{report.total} card{'' if report.total == 1 else 's'}"]
    lines.append("by domain: " + (", ".join(f"{k} {v}" for k, v in report.by_domain.items()) or "-"))
    lines.append("by type:   " + (", ".join(f"{k} {v}" for k, v in report.by_type.items()) or "-"))
    if report.empty_domains:
        lines.append("no cards yet in: " + ", ".join(report.empty_domains))
    lines.append(f"stale (> {vault.settings.stale_after_days} days unreferenced): {len(report.stale)}")
    lines.extend(f"  {s['days_unreferenced']:>4}d  {_card_line(s)}" for s in report.stale[:10])
    lines.append(f"low confidence (< 0.5): {len(report.low_confidence)}")
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
    p.set_defaults(func=cmd_list)


def cmd_list(args, vault: Vault) -> Output:
    from .cards import list_cards

    folders = ("Inbox",) if args.inbox else ("Playbooks",)
    result = list_cards(vault, _filters(args, "any"), args.sort, folders)
    cards = [v.summary() for v in result.cards]
    text = "\n".join(_card_line(c) for c in cards) if cards else "No cards."
    return Output({"cards": cards, "count": len(cards)}, text, _problem_warnings(result.problems))


# ---------------------------------------------------------------------------- learn

def add_learn(sub) -> None:
    p = sub.add_parser("learn", help="a structured Inbox candidate: problem, solution, evidence")
    p.add_argument("--title", required=True)
    p.add_argument("--type", required=True)
    p.add_argument("--domain", required=True)
    p.add_argument("--tags", default="")
    p.add_argument("--problem", required=True, help="what went wrong")
    p.add_argument("--solution", required=True, help="what fixed it")
    p.add_argument("--evidence", help="where it was seen (a log line, a commit, a session)")
    p.add_argument("--project")
    p.set_defaults(func=cmd_learn)


def cmd_learn(args, vault: Vault) -> Output:
    from .inbox import learn

    result = learn(vault, title=args.title, card_type=args.type, domain=args.domain, tags=args.tags,
                   problem=args.problem, solution=args.solution, evidence=args.evidence, project=args.project)
    verb = "learned" if result.created else "added evidence to"
    return Output({"path": result.card.rel, "id": result.card.id, "created": result.created,
                   "evidence_count": result.evidence_count},
                  f"{verb} {result.card.rel} (evidence {result.evidence_count}); "
                  "`promote` it once it is confirmed")


# ---------------------------------------------------------------------------- working memory

def add_remember(sub) -> None:
    p = sub.add_parser("remember", help="store a short-lived note under KEY")
    p.add_argument("key")
    p.add_argument("--body", required=True, help="the note (`-` reads standard input)")
    p.add_argument("--ttl", type=float, help="days to keep it (default from config, 7)")
    p.set_defaults(func=cmd_remember)


def cmd_remember(args, vault: Vault) -> Output:
    from .working_memory import remember

    entry = remember(vault, args.key, _read_body(args.body), args.ttl)
    return Output(entry.as_dict(), f"remembered {entry.key} until {entry.expires}")


def add_recall(sub) -> None:
    p = sub.add_parser("recall", help="read the working-memory note KEY")
    p.add_argument("key")
    p.set_defaults(func=cmd_recall)


def cmd_recall(args, vault: Vault) -> Output:
    from .working_memory import recall

    entry = recall(vault, args.key)
    return Output(entry.as_dict(), entry.body)


def add_forget(sub) -> None:
    p = sub.add_parser("forget", help="delete the working-memory note KEY")
    p.add_argument("key")
    p.set_defaults(func=cmd_forget)


def cmd_forget(args, vault: Vault) -> Output:
    from .working_memory import forget

    entry = forget(vault, args.key)
    return Output({"key": entry.key}, f"forgot {entry.key}")


def add_context(sub) -> None:
    p = sub.add_parser("context", help="every live working-memory note (purges expired ones)")
    p.set_defaults(func=cmd_context)


def cmd_context(args, vault: Vault) -> Output:
    from .working_memory import context

    live, purged = context(vault)
    data = {"entries": [e.as_dict() for e in live], "purged": purged}
    lines = [f"## {e.key} (until {e.expires})\n{e.body}" for e in live] or ["No working memory."]
    if purged:
        lines.append(f"(purged {len(purged)} expired: {', '.join(purged)})")
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- reindex

def add_reindex(sub) -> None:
    p = sub.add_parser("reindex", help="rebuild the search index in .brain/cache/ from the cards")
    p.set_defaults(func=cmd_reindex)


def cmd_reindex(args, vault: Vault) -> Output:
    import time

    from .index import rebuild
    from .search import card_fields

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"\rindexing {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    start = time.perf_counter()
    changes = rebuild(vault, card_fields, progress if sys.stderr.isatty() else None)
    seconds = round(time.perf_counter() - start, 3)
    return Output({"indexed": len(changes.added), "seconds": seconds},
                  f"indexed {len(changes.added)} card file(s) in {seconds:.1f} s")


# ---------------------------------------------------------------------------- doctor

def add_doctor(sub) -> None:
    p = sub.add_parser("doctor", help="check settings, every card and the log; say how to fix problems")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args, vault: Vault) -> Output:
    from .health import doctor

    findings = doctor(vault)
    errors = sum(1 for f in findings if f.level == "error")
    data = {"vault": str(vault.root), "errors": errors, "warnings": len(findings) - errors,
            "findings": [f.as_dict() for f in findings]}
    if not findings:
        return Output(data, f"{vault.root}: all good")
    lines = [f"{f.level}: {f.path}: {f.message} -> {f.fix}" for f in findings]
    lines.append(f"{errors} error(s), {len(findings) - errors} warning(s)")
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- main

COMMANDS: list[Callable] = [
    add_search, add_get, add_record, add_create, add_promote, add_audit, add_list, add_learn,
    add_remember, add_recall, add_forget, add_context, add_init, add_doctor, add_reindex,
]


def build_parser(only: str | None = None) -> Parser:
    """The argument parser; with `only`, just that subcommand's (building all ~20 costs ~2 ms of
    every call's start-up)."""
    common = Parser(add_help=False)
    # SUPPRESS: a flag given before the subcommand is not reset by the subparser's default.
    common.add_argument("--vault", default=argparse.SUPPRESS, help="vault folder (default: $BRAIN_VAULT or nearest)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print one JSON object: {ok, command, data} or {ok, error}")
    parser = Parser(prog=PROG, parents=[common],
                    description="External Brain: a knowledge base of Markdown cards for coding agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    original = sub.add_parser

    def add_parser(name: str, **kwargs):
        return original(name, parents=[common], description=kwargs.get("help"), **kwargs)

    sub.add_parser = add_parser  # every subcommand gets --vault and --json
    for add in COMMANDS:
        if only is None or add.__name__ == f"add_{only}":
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


def _parse(argv: list[str]) -> argparse.Namespace:
    names = {add.__name__[4:] for add in COMMANDS}
    command = next((a for a in argv if a in names), None)
    if command and "-h" not in argv and "--help" not in argv:
        try:
            return build_parser(only=command).parse_args(argv)
        except UsageError:
            pass  # e.g. a vault folder named like a command: let the full parser judge
    return build_parser().parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        args = _parse(argv)
        command = args.command
        want_json = getattr(args, "json", False)
        vault = resolve_vault(getattr(args, "vault", None)) if getattr(args, "needs_vault", True) else None
        output = args.func(args, vault)
    except BrainError as exc:
        if want_json:
            _print(json.dumps(envelope_error(command, exc), ensure_ascii=False), sys.stdout)
        else:
            _print(f"{PROG}: error: {exc.message}", sys.stderr)
        return exc.exit_code
    for warning in output.warnings:
        _print(f"{PROG}: warning: {warning}", sys.stderr)
    if want_json:
        _print(json.dumps(envelope_ok(command, output.data), ensure_ascii=False, default=str), sys.stdout)
    else:
        _print(output.text, sys.stdout)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
