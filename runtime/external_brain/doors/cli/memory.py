"""Agents' context: working memory (`remember`, `recall`, `forget`, `context`), `brief`, `persona`.

Each command is a pair: `add_<cmd>(subparsers)` declares its arguments, `cmd_<cmd>(args, vault) -> Output`
calls one library function and formats its result (registered by name in `doors.cli.COMMANDS`).
"""

from __future__ import annotations

from typing import Any

from ...errors import UsageError
from ...vault.storage import Vault
from .common import Output, add_command, _read_body


# ---------------------------------------------------------------------------- working memory

def add_remember(sub) -> None:
    p = add_command(sub, "remember", help="store a short-lived note under KEY")
    p.add_argument("key")
    p.add_argument("--body", required=True, help="the note (`-` reads standard input)")
    p.add_argument("--ttl", type=float, help="days to keep it (default from config, 7)")
    p.add_argument("--agent", help="the agent's own note (WorkingMemory/agents/AGENT/), not a shared one")
    p.set_defaults(func=cmd_remember)


def cmd_remember(args, vault: Vault) -> Output:
    from ...working_memory import remember

    entry = remember(vault, args.key, _read_body(args.body), args.ttl, args.agent)
    return Output(entry.as_dict(), f"remembered {entry.key} until {entry.expires}")


def add_recall(sub) -> None:
    p = add_command(sub, "recall", help="read the working-memory note KEY")
    p.add_argument("key")
    p.add_argument("--agent", help="the agent's own note first, else the shared one")
    p.set_defaults(func=cmd_recall)


def cmd_recall(args, vault: Vault) -> Output:
    from ...working_memory import recall

    entry = recall(vault, args.key, args.agent)
    return Output(entry.as_dict(), entry.body)


def add_forget(sub) -> None:
    p = add_command(sub, "forget", help="delete the working-memory note KEY")
    p.add_argument("key")
    p.add_argument("--agent", help="the agent's own note")
    p.set_defaults(func=cmd_forget)


def cmd_forget(args, vault: Vault) -> Output:
    from ...working_memory import forget

    entry = forget(vault, args.key, args.agent)
    return Output({"key": entry.key}, f"forgot {entry.key}")


def add_context(sub) -> None:
    p = add_command(sub, "context", help="every live working-memory note (purges expired ones)")
    p.add_argument("--agent", help="also the agent's own notes")
    p.add_argument("--session", help="the Claude Code session asking: its saved state is its working memory "
                                     "(without it, every session's saved state is listed apart, as another's)")
    p.set_defaults(func=cmd_context)


def cmd_context(args, vault: Vault) -> Output:
    from ...working_memory import context

    live, others, purged = context(vault, args.agent, args.session)
    data = {"entries": [e.as_dict() for e in live], "other_sessions": [e.as_dict() for e in others], "purged": purged}
    lines = [f"## {e.key}{' (' + e.agent + ')' if e.agent else ''} (until {e.expires})\n{e.body}"
             for e in live] or ["No working memory."]
    lines += [f"## {e.key} (saved state of session {e.session}, not this one) (until {e.expires})\n{e.body}"
              for e in others]
    if purged:
        lines.append(f"(purged {len(purged)} expired: {', '.join(purged)})")
    return Output(data, "\n".join(lines))


# ---------------------------------------------------------------------------- brief

def add_brief(sub) -> None:
    p = add_command(sub, "brief", help="a Markdown context block for an agent prompt, within a token budget")
    p.add_argument("query", nargs="?", help="what the agent is about to work on (optional)")
    p.add_argument("--budget", type=int, default=800,
                   help="most tokens to use (default 800; CJK ~1 token a character, other text ~4 characters)")
    p.add_argument("--agent", help="agent name: also see this agent's private cards")
    p.add_argument("--project", help="project at hand: its cards (without a query) or a boost (with one)")
    p.add_argument("--limit", type=int, default=5, help="most cards to consider (default 5)")
    p.add_argument("--session", help="the Claude Code session asking: its saved state (pre-compact) is shown as "
                                     "working memory; other sessions' never are")
    p.set_defaults(func=cmd_brief)


def cmd_brief(args, vault: Vault) -> Output:
    from ...answers.brief import brief

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit} must be at least 1")
    result = brief(vault, args.query, budget=args.budget, agent=args.agent, project=args.project,
                   limit=args.limit, session=args.session)
    # Nothing relevant prints nothing: the output is meant to be pasted into a prompt as it is.
    return Output(result.as_dict(), result.markdown)


# ---------------------------------------------------------------------------- persona

def add_persona(sub) -> None:
    p = add_command(sub, "persona", help="the persona context of the vault: show it, or --set FIELD=VALUE "
                                       "(user_info.name=..., current_emotion=..., last_conversation_time=...)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="change a field (repeatable)")
    p.set_defaults(func=cmd_persona)


def cmd_persona(args, vault: Vault) -> Output:
    from ...agents.personas import read_context, update_context

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
