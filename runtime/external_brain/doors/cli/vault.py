"""The vault as a whole: `init`, `merge-driver`, `reindex`, `stats`, `analyze`, `export`, `import`, `doctor`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...errors import BrainError, UsageError
from ...vault.storage import Vault
from .common import Output, add_command, _undo_hint, program_name


# ---------------------------------------------------------------------------- init

def add_init(sub) -> None:
    p = add_command(sub, "init", help="create a vault (folders, settings, git attributes), or set up a git clone "
                                    "of one (its merge driver); safe to run again")
    p.add_argument("path", help="folder for the new vault (created if missing), or a clone of a vault")
    p.set_defaults(func=cmd_init, needs_vault=False)


def cmd_init(args, vault: Vault | None) -> Output:
    from ...evolution.sharing import setup_git
    from ...vault.storage import init_vault

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
    p = add_command(sub, "merge-driver", help="merge one card file for git (`brain init` registers it): "
                                            "frontmatter key by key, body as text")
    p.add_argument("base", help="the common ancestor's version (git's %%O; empty when both sides added the file)")
    p.add_argument("ours", help="our version (git's %%A): the merged text is written here")
    p.add_argument("theirs", help="their version (git's %%B)")
    p.add_argument("path", help="the file's path in the repository (git's %%P)")
    p.set_defaults(func=cmd_merge_driver, needs_vault=False)


def cmd_merge_driver(args, vault: Vault | None) -> Output:
    from ...evolution.sharing import merge_driver, plain_merge

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


# ---------------------------------------------------------------------------- reindex

def add_reindex(sub) -> None:
    p = add_command(sub, "reindex", help="rebuild the keyword search index in .brain/cache/ from the cards")
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
        from ...search.semantic import sync_vectors

        try:
            sync_vectors(vault, background=True)
        except BrainError:
            pass
        return Output({}, "")
    from ...evolution.sharing import settle_vault

    start = time.perf_counter()
    settled = settle_vault(vault)   # the cards agree with the log before they are indexed or embedded
    data: dict = {"settled": settled.summary()} if settled.changes else {}
    note = f"{settled.summary()}\n" if settled.changes else ""
    if args.embeddings:
        # Trigger: --embeddings. Why: vectors cost minutes to hours of a provider's time and the
        # keyword index a few seconds; a run that resumes vectors must not pay for a keyword
        # rebuild each time. Outcome: vectors only (the keyword index is brought up to date, as a
        # search would, not rebuilt); plain `reindex` rebuilds the keyword index only.
        from ...search.semantic import sync_vectors

        shown = _EmbeddingProgress(start) if sys.stderr.isatty() else None
        try:
            synced = sync_vectors(vault, shown, waiting=shown.waiting if shown is not None else None)
        finally:
            if shown is not None:
                shown.end()   # a run stopped by an error: its message goes on a line of its own
        seconds = round(time.perf_counter() - start, 3)
        text = (f"embedded {synced.embedded} card text(s), reused {synced.reused}, dropped {synced.removed}; "
                f"{synced.total} card(s) have vectors ({seconds:.1f} s)")
        if synced.rebuilt_from:
            text = (f"the provider's vectors no longer have the cached vectors' {synced.rebuilt_from} dimensions "
                    f"(its model changed): every card was embedded again\n{text}")
        if synced.batch < vault.settings.embeddings.batch:
            text += (f"\nrequests were cut to {synced.batch} passage(s) after a slow one; set [embeddings] "
                     f"batch = {synced.batch} to start there")
        return Output({**data, "embeddings": {**synced.__dict__, "seconds": seconds}}, note + text)
    from ...search.index import rebuild
    from ...search.analysis import card_fields

    changes = rebuild(vault, card_fields, progress if sys.stderr.isatty() else None)
    seconds = round(time.perf_counter() - start, 3)
    return Output({"indexed": len(changes.added), "seconds": seconds, **data},
                  f"{note}indexed {len(changes.added)} card file(s) in {seconds:.1f} s")


class _EmbeddingProgress:
    """`reindex --embeddings` progress on a terminal: cards done of this run's, their rate so far
    and the time left at that rate. The rate is counted from the call with 0 done (the run's
    start, once it holds the lock: a wait for another process must not make it look slow)."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.open = False   # a line is shown and not ended

    def __call__(self, done: int, total: int) -> None:
        import time

        if done == 0:
            self.start = time.perf_counter()
        elapsed = time.perf_counter() - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f", ETA {_duration((total - done) / rate)}" if rate > 0 and done < total else ""
        sys.stderr.write(f"\rembedding {done:,}/{total:,} cards, {rate:.2f} cards/s{eta}\x1b[K")
        self.open = done != total
        if not self.open:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def waiting(self) -> None:
        sys.stderr.write("another process is embedding this vault's cards (a search's background catch-up, or "
                         "another reindex): waiting for it to finish\n")
        sys.stderr.flush()

    def end(self) -> None:
        """End the line shown, if it is not ended."""
        if self.open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.open = False


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


# ---------------------------------------------------------------------------- stats / analyze

def add_stats(sub) -> None:
    p = add_command(sub, "stats", help="counts by type, domain, project, scope and status; top tags; links; "
                                     "Inbox; working memory (from the index)")
    p.add_argument("--agent", help="also count this agent's private cards")
    p.set_defaults(func=cmd_stats)


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def cmd_stats(args, vault: Vault) -> Output:
    from ...answers.insights import stats
    from ...working_memory import counts_text

    result = stats(vault, args.agent)
    links = result.links
    lines = [f"{result.total} card(s)", f"by type:    {_counted(result.by_type)}",
             f"by domain:  {_counted(result.by_domain)}", f"by project: {_counted(result.by_project)}",
             f"by scope:   {_counted(result.by_scope)}", f"by status:  {_counted(result.by_status)}",
             f"tags: {result.total_tags} distinct; top: " + (", ".join(f"{t['name']} {t['count']}"
                                                                      for t in result.top_tags[:10]) or "-"),
             f"links: {links['total']}" + (f" ({_counted(links['by_rel'])})" if links["by_rel"] else "") +
             f"; {links['linked_cards']} linked card(s), "
             f"{links['unlinked_cards']} unlinked, {links['broken']} broken",
             f"inbox: {result.inbox} candidate(s)",
             f"working memory: {counts_text(result.working_memory)}"]
    if result.unparseable:
        lines.append(f"unparseable files: {result.unparseable} (`{program_name()} doctor` shows them)")
    return Output(result.as_dict(), "\n".join(lines))


def add_analyze(sub) -> None:
    p = add_command(sub, "analyze", help="health score 0-100 and issues with the cards affected and a command to fix each")
    p.add_argument("--agent", help="also analyse this agent's private cards")
    p.set_defaults(func=cmd_analyze)


def cmd_analyze(args, vault: Vault) -> Output:
    from ...answers.insights import analyze

    result = analyze(vault, args.agent)
    lines = [f"health score {result.health_score:g}/100 over {result.total} card(s)"]
    for item in result.issues:
        shown = ", ".join(item["affected_paths"][:5]) + (" ..." if item["count"] > 5 else "")
        lines.append(f"[{item['severity']}] {item['type']}: {item['message']}")
        lines.append(f"    affected: {shown}")
        lines.append(f"    fix: {item['suggested_action']}")
    lines.extend(f"- {s}" for s in result.suggestions)
    return Output(result.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- export / import

def add_export(sub) -> None:
    p = add_command(sub, "export", help="the whole vault as JSONL: every card (frontmatter, body, path, text), "
                                      "working memory, and with --events the log")
    p.add_argument("--output", "-o", help="write the JSONL to this file (default: standard output)")
    p.add_argument("--format", choices=("jsonl",), default="jsonl", help="file format (jsonl)")
    p.add_argument("--events", action="store_true", help="also export every logged event")
    p.add_argument("--agent", help="also export this agent's private cards")
    p.add_argument("--include-private", action="store_true",
                   help="export every agent's private cards too (a full backup)")
    p.set_defaults(func=cmd_export)


def cmd_export(args, vault: Vault) -> Output:
    from ...evolution.portability import export_vault, save_export

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
    save_export(vault, result, Path(args.output))
    text = (f"exported {result.cards} card(s), {result.memories} working-memory note(s)"
            + (f", {result.events} event(s)" if args.events else "") + f" to {args.output}")
    return Output(data, text, warnings)


def add_import(sub) -> None:
    p = add_command(sub, "import", help="bring an export file into the vault (checked whole first; "
                                      "never overwrites a newer card silently)")
    p.add_argument("file", help="a JSONL file written by `brain export`")
    p.add_argument("--dry-run", action="store_true", help="say what would happen; write nothing")
    p.add_argument("--on-conflict", choices=("skip", "newer", "overwrite"), default="skip",
                   help="when a card exists: keep it (skip, default), replace it when the file's is newer "
                        "by updated/created (newer), or replace it (overwrite)")
    p.set_defaults(func=cmd_import)


def cmd_import(args, vault: Vault) -> Output:
    from ...evolution.portability import import_vault

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
    if len(result.event_ids) == 1:
        lines.append(_undo_hint(result.event_ids[0]))
    elif result.event_ids:
        lines.append(f"{_undo_hint('EVENT_ID')} (one per batch: {', '.join(result.event_ids[:5])}"
                     + (" ..." if len(result.event_ids) > 5 else "") + ")")
    return Output(result.as_dict(), "\n".join(lines))


# ---------------------------------------------------------------------------- doctor

def add_doctor(sub) -> None:
    p = add_command(sub, "doctor", help="check settings, every card and the log; say how to fix problems")
    p.add_argument("--fix", action="store_true", help="first make every card agree with the log (after a git "
                                                      "merge: confidence replayed, merged cards split, links to "
                                                      "deleted cards removed), as one logged, undoable operation")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args, vault: Vault) -> Output:
    from ...answers.health import doctor

    fixed = []
    if args.fix:
        from ...evolution.sharing import settle_vault

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
    lines = [*fixed, *(f"{f.level}: {f.path + ': ' if f.path else ''}{f.message} -> {f.fix}" for f in findings)]
    lines.append(f"{errors} error(s), {len(findings) - errors} warning(s)")
    # Exit 1 when there are errors (warnings alone: 0), with the whole report as usual, as a
    # linter does: scripts and CI can use `brain doctor` as a check.
    return Output(data, "\n".join(lines), exit_code=1 if errors else 0)
