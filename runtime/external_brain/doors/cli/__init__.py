"""The command line: argparse in, text or the `--json` envelope out. The only door that prints.

Each subcommand is a pair in its group's module: `add_<cmd>(subparsers)` declares its arguments
and `cmd_<cmd>(args, vault) -> Output` calls one library function and formats its result.
`COMMANDS` names each command's group module; a call imports only the module of the command it
runs. `main(argv) -> int` returns the exit code: 0 success (an empty result too), 1 failure,
2 bad usage, 3 `create` made no card (docs/cli.md); `hook` always 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

from ...errors import BrainError, UsageError
from ...vault import strict_json
from ...vault.storage import resolve_vault
from .common import PROG, Output, Parser, add_command, common_options, program_name

__all__ = ["COMMANDS", "PROG", "Output", "Parser", "add_command", "build_parser", "main"]

# Every command -> the module of `doors.cli` that holds its `add_<cmd>` / `cmd_<cmd>` pair (`-` in a
# command's name is `_` in its functions' names). The order is the order of `brain --help` and docs/cli.md.
COMMANDS: dict[str, str] = {
    "search": "cards", "get": "cards", "record": "cards", "create": "cards",
    "update": "lifecycle", "delete": "lifecycle", "history": "lifecycle", "undo": "lifecycle",
    "link": "links", "unlink": "links", "links": "links", "explore": "links", "graph": "links",
    "promote": "inbox", "audit": "inbox", "list": "cards", "learn": "inbox",
    "remember": "memory", "recall": "memory", "forget": "memory", "context": "memory",
    "init": "vault", "merge-driver": "vault", "doctor": "vault", "reindex": "vault",
    "export": "vault", "import": "vault", "stats": "vault", "analyze": "vault",
    "brief": "memory", "mcp": "servers", "serve": "servers", "hook": "servers", "ingest": "inbox",
    "keys": "servers", "merge": "lifecycle", "persona": "memory",
}


def build_parser(only: str | None = None) -> Parser:
    """The argument parser; with `only`, just that subcommand's, so a call imports only that
    command's group module (building all of them costs every call's start-up)."""
    parser = Parser(prog=program_name(), parents=[common_options()],
                    description="External Brain: a knowledge base of Markdown cards for coding agents.")
    from ... import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, group in COMMANDS.items():
        if only is None or name == only:
            module = importlib.import_module(f"{__name__}.{group}")
            getattr(module, "add_" + name.replace("-", "_"))(sub)
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
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--vault", "--persona"):   # the options every command takes that have a value
            skip = True
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _parse(argv: list[str]) -> argparse.Namespace:
    command = next((a for a in argv if a in COMMANDS), None)
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
    if command == "hook" and "-h" not in argv and "--help" not in argv:
        # Trigger: `brain hook ...`, whatever its arguments. Why: Claude Code reads exit 2 as
        # "block" (on UserPromptSubmit it erases the user's prompt, on Stop it keeps the agent
        # running on our stderr), and reads stdout as the hook's answer. Outcome: exit 0 always,
        # stdout only the hook's own JSON, every problem one warning line (docs/decisions.md, hooks).
        from .servers import hook_call

        output = hook_call(lambda: _check_argv(argv) or build_parser(only="hook").parse_known_args(argv),
                           example_vault)
        for warning in output.warnings:
            _print(f"{PROG}: warning: {warning}", sys.stderr)
        if output.text:
            _print(output.text, sys.stdout)
        return 0
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
            # `--persona ""` (a variable unset) names no persona: refused as unknown, where it
            # used to fall silently to the vault itself.
            if getattr(args, "persona", None) is not None:
                if vault is None:
                    raise UsageError(f"{command} takes no --persona")
                from ...agents.personas import persona_vault

                vault = persona_vault(vault, args.persona)   # docs/compatibility.md, Personas: each is a vault of its own
            output = args.func(args, vault)
        except OSError as exc:
            # Trigger: an operating-system error no layer below turned into a BrainError (a lock
            # file on a read-only vault, a full disk under a write). Why: that is the world, not a
            # bug, and the atomic writes below have already left every file whole. Outcome: the
            # same one line (path and cause) as any other error, exit 1.
            from ...vault.storage import io_problem

            raise io_problem(exc) from exc
    except BrainError as exc:
        if vault is not None and _writes(args):
            from ...vault.events import log_failure

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

