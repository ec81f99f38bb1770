"""Changing and restoring cards: `update`, `delete`, `history`, `undo`, `merge`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

from ...errors import UsageError
from ...vault.storage import Vault
from .common import Output, add_command, _read_body, _undo_hint, program_name


# ---------------------------------------------------------------------------- update / delete

def add_update(sub) -> None:
    p = add_command(sub, "update", help="edit a card: only the named keys and the body change")
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
    from ...evolution.lifecycle import update_card

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
    return Output(data, text + "\n" + _undo_hint(data["event"]))


def add_delete(sub) -> None:
    p = add_command(sub, "delete", help="remove a card and every link pointing to it (undoable)")
    p.add_argument("card", help="vault-relative path, file stem or id")
    p.add_argument("--dry-run", action="store_true", help="show what would be removed; change nothing")
    p.add_argument("--expect-hash", help="refuse with CONFLICT unless the card still has this hash (get --json)")
    p.set_defaults(func=cmd_delete)


def cmd_delete(args, vault: Vault) -> Output:
    from ...evolution.lifecycle import delete_card

    result = delete_card(vault, args.card, args.dry_run, args.expect_hash)
    data = result.as_dict()
    verb = "would delete" if result.dry_run else "deleted"
    lines = [f"{verb} {result.path}" + (f" (id {result.id})" if result.id else "")
             + (f"; links to it removed from {len(result.cascaded)} card(s)" if result.cascaded else "")]
    lines.extend(f"  {rel}" for rel in result.cascaded)
    if result.event:
        lines.append(f"{_undo_hint(result.event['eid'])}; its events: `{program_name()} history {result.id or result.path}`")
    return Output(data, "\n".join(lines))


def add_history(sub) -> None:
    p = add_command(sub, "history", help="every event about a card, newest first, with what changed")
    p.add_argument("card", help="vault-relative path, file stem or id (a deleted card: its id)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.set_defaults(func=cmd_history)


def cmd_history(args, vault: Vault) -> Output:
    from ...evolution.history import history

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
        # (An event without an id, from an older log or a hand edit, names no event to undo.)
        undoable = "  (undo " + entry["eid"] + ")" if entry["files"] and entry["eid"] else ""
        lines.append(f"{entry['ts']}  {entry['event']:<10} {entry['card'] or ''}{'  ' + shown if shown else ''}"
                     f"{undoable}")
        if entry["diff"]:
            lines.extend("    " + line for line in entry["diff"].rstrip("\n").split("\n"))
    return Output(data, "\n".join(lines))


def add_undo(sub) -> None:
    p = add_command(sub, "undo", help="restore the files an event changed to their earlier text (logged, undoable)")
    p.add_argument("event", help="the event id (`eid`, or its first 8+ characters) from `history CARD`")
    p.add_argument("--force", action="store_true", help="overwrite files changed since that event")
    p.set_defaults(func=cmd_undo)


def cmd_undo(args, vault: Vault) -> Output:
    from ...evolution.history import undo

    result = undo(vault, args.event, args.force)
    data = {"undone": result.undone["eid"], "undone_event": result.undone.get("event"), "files": result.files,
            "forced": result.forced, "removed": result.removed, "relinked": result.relinked,
            "event": result.event["eid"] if result.event else None}
    if result.event is None:
        data["already_undone_by"] = result.already_undone_by or None
        by = f" (by undo {result.already_undone_by})" if result.already_undone_by else " (its files are as before it)"
        return Output(data, f"event {result.undone['eid']} ({result.undone.get('event')}) is already undone{by}; "
                            "nothing changed")
    put_back = len(result.files) - len(result.removed) - len(result.relinked)
    lines = [f"undid {result.undone.get('event')} {result.undone['eid']}: put back {put_back} file(s)"
             + (f", removed {len(result.removed)}" if result.removed else "")
             + (f", relinked {len(result.relinked)}" if result.relinked else "")]
    lines.extend(f"  {rel}" + (" (removed)" if rel in result.removed else " (links followed)"
                               if rel in result.relinked else "") for rel in result.files)
    lines.append(_undo_hint(result.event["eid"]))
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- merge

def add_merge(sub) -> None:
    p = add_command(sub, "merge", help="merge OTHER into KEEP: both bodies, the union of tags and links; OTHER is "
                                     "superseded by KEEP (undoable)")
    p.add_argument("keep", metavar="KEEP")
    p.add_argument("other", metavar="OTHER")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args, vault: Vault) -> Output:
    from ...evolution.relations import merge

    result = merge(vault, args.keep, args.other)
    added = f"; tags added: {', '.join(result.tags_added)}" if result.tags_added else ""
    return Output(result.as_dict(), f"merged {result.merged.rel} into {result.card.rel}{added}; "
                                    f"{result.merged.rel} is superseded\n" + _undo_hint(result.event["eid"]))
