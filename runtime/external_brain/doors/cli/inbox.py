"""What arrives through the Inbox and its review: `promote`, `audit`, `learn`, `ingest`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import UsageError
from ...vault.storage import Vault
from .common import Output, add_command, _card_line, _echo, _read_body, _undo_hint, program_name


# ---------------------------------------------------------------------------- promote

def add_promote(sub) -> None:
    p = add_command(sub, "promote", help="move an Inbox candidate to Playbooks (or --auto)")
    p.add_argument("card", nargs="?", help="Inbox card: path, stem or id")
    p.add_argument("--type", help="card type (default: the candidate's)")
    p.add_argument("--domain", help="domain (default: the candidate's)")
    p.add_argument("--title", help="title (default: the candidate's)")
    p.add_argument("--auto", action="store_true", help="score every candidate, promote those over the bar")
    p.add_argument("--dry-run", action="store_true", help="with --auto: only show the scores")
    p.set_defaults(func=cmd_promote)


def cmd_promote(args, vault: Vault) -> Output:
    from ...intake.inbox import auto_promote, promote

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


# ---------------------------------------------------------------------------- audit

def add_audit(sub) -> None:
    p = add_command(sub, "audit", help="coverage, stale and weak cards, Inbox backlog, working memory, problems")
    p.set_defaults(func=cmd_audit)


def cmd_audit(args, vault: Vault) -> Output:
    from ...cards import paused_gc
    from ...answers.health import audit
    from ...working_memory import counts_text

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
    lines.append(f"working memory: {counts_text(report.working_memory)} (purged by `context`)")
    lines.append(f"health issues: {len(report.health)}")
    lines.extend(f"  {h['path']}{':' + str(h['line']) if h['line'] else ''}: {h['problem']}" for h in report.health)
    return Output(report.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- learn

def add_learn(sub) -> None:
    p = add_command(sub, "learn", help="a structured Inbox candidate: problem, solution, evidence "
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
    from ...intake.inbox import learn

    if args.from_transcript:
        given = [f"--{name}" for name in (*_LEARN_FIELDS, "evidence", "project") if getattr(args, name)]
        if given or args.tags:
            raise UsageError(f"--from-transcript takes no {', '.join(given or ['--tags'])}: "
                             "the lessons come from the transcript")
        return _learn_transcript(args, vault)
    missing = [f"--{name}" for name in _LEARN_FIELDS if getattr(args, name) is None]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)} (see `{program_name()} learn --help`)")
    result = learn(vault, title=args.title, card_type=args.type, domain=args.domain, tags=args.tags,
                   problem=args.problem, solution=args.solution, evidence=args.evidence, project=args.project)
    verb = "learned" if result.created else "added evidence to"
    return Output({"path": result.card.rel, "id": result.card.id, "created": result.created,
                   "evidence_count": result.evidence_count},
                  f"{verb} {result.card.rel} (evidence {result.evidence_count}); "
                  "`promote` it once it is confirmed")


def _learn_transcript(args, vault: Vault) -> Output:
    from ...intake.transcripts import learn_from_transcript

    result = learn_from_transcript(vault, args.from_transcript)
    lines = [f"{args.from_transcript}: {result.lines} line(s), {len(result.lessons)} lesson(s)"
             + (f", {result.skipped_lines} unreadable line(s) skipped" if result.skipped_lines else "")]
    lines += [f"  learned {rel}" for rel in result.learned]
    lines += [f"  added evidence to {rel}" for rel in result.more_evidence]
    lines += [f"  revised {rel} (the session went on since it was learned)" for rel in result.revised]
    lines += [f"  already learned: {rel}" for rel in result.unchanged]
    lines += [f"  not proposed: {item['title']} ({item['reason']})" for item in result.not_proposed]
    lines += [f"  promoted {item['source']} -> {item['path']}" for item in result.promoted]
    return Output(result.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- ingest

def add_ingest(sub) -> None:
    p = add_command(sub, "ingest", help="raw text to atomic fact/state/episode cards, upserted by kind")
    p.add_argument("file", metavar="FILE", help="a UTF-8 text file, or - for standard input")
    p.add_argument("--source", help="where the text came from, e.g. chat, diary, manual")
    p.add_argument("--agent", help="the agent sending it (with --scope agent: private to it)")
    p.add_argument("--scope", choices=("global", "agent"), help="global (default) or agent (needs --agent)")
    p.add_argument("--event-time", help="when it happened (ISO 8601); relative dates count from it (default: now)")
    p.add_argument("--idempotency-key", help="a second ingest with the same key writes nothing")
    p.add_argument("--dry-run", action="store_true", help="say what would happen; write nothing")
    p.set_defaults(func=cmd_ingest)


def cmd_ingest(args, vault: Vault) -> Output:
    from ...intake.ingest import ingest_text

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
                        if item.action == "skipped" else "")
                     # An update is a new card superseding another: say which, as --json's `reason` does.
                     + (f"  [{_echo(item.reason)}]" if item.action == "updated" and item.reason else ""))
    if result.event_id and not result.replayed and (data["created"] or data["updated"]):
        lines.append(_undo_hint(result.event_id))
    return Output(data, "\n".join(lines), warnings=list(result.warnings))
