"""The command-line reference, `docs/cli.md`, written from the argument parser itself.

    PYTHONPATH=runtime python3 -m external_brain.doors.cli_docs --write   # regenerate docs/cli.md
    PYTHONPATH=runtime python3 -m external_brain.doors.cli_docs --check   # exit 1 if it is out of date

Promises:
- The page is a pure function of `cli.build_parser()`: every command in the order `cli.COMMANDS`
  declares them, every argument and option each one takes (hidden ones, `help=SUPPRESS`, left
  out), with its help text, choices and default. `tests/test_docs.py` fails when the page on
  disk differs from what this writes, so a new command or option cannot go undocumented.
- The rendering is our own Markdown, not argparse's `--help` text, so the page does not change
  with the Python version's help formatter or the terminal's width.
- Nothing on the start-up path imports this module; only the command above and the test do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli import PROG, build_parser

PAGE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
HEADER = f"""# Command-line reference

Generated from the argument parser by `runtime/external_brain/doors/cli_docs.py`; do not edit by
hand. After changing a command's arguments, run

    PYTHONPATH=runtime python3 -m external_brain.doors.cli_docs --write

(`tests/test_docs.py` fails until the page matches the parser). What each command does, with
examples, is in the README; how the parts fit together is in `docs/architecture.md`.

`{PROG}` is the installed command; from a checkout, `python3 runtime/playbook_api.py` takes the same
arguments. Exit codes: 0 success (an empty result too), 1 failure (`{PROG}: error: ...` on stderr, or
the `--json` error envelope), 2 bad usage, 3 `create` made no card (a duplicate); `hook` always exits 0.
"""


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Command name -> its parser, in the order the commands were declared."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def documented_actions(parser: argparse.ArgumentParser, skip: set[str] = frozenset()) -> list[argparse.Action]:
    """The arguments a page shows: not the hidden ones, not `-h`, not those in `skip` (by dest)."""
    return [a for a in parser._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
            and a.dest not in skip]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _name(action: argparse.Action) -> str:
    """`QUERY`, `NOTE (optional)`, `--limit N`, `-n, --dry-run`, `--mode MODE`."""
    shown = str(action.metavar or action.dest.upper())
    if not action.option_strings:
        return shown + ("..." if action.nargs in ("*", "+", argparse.REMAINDER) else "") + \
            (" (optional)" if action.nargs in ("?", "*") else "")
    flags = ", ".join(action.option_strings)
    if action.nargs == 0:
        return flags
    return flags + (f" [{shown}]" if action.nargs == "?" else f" {shown}") + \
        (" ..." if action.nargs in ("*", "+") else "")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    notes = []
    if action.choices is not None:
        notes.append("one of: " + ", ".join(f"`{choice}`" for choice in action.choices))
    if action.required and action.option_strings:
        notes.append("required")
    if isinstance(action, argparse._AppendAction):
        notes.append("may be repeated")
    default = action.default
    if (action.option_strings and action.nargs != 0 and default not in (None, "", argparse.SUPPRESS, [], ())
            and "default" not in text):
        notes.append(f"default: `{default}`")
    return _cell(" ".join(filter(None, [text, f"({'; '.join(notes)})" if notes else ""])))


def _table(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[str]:
    if not actions:
        return ["No arguments of its own."]
    lines = ["| argument | meaning |", "|---|---|"]
    lines += [f"| `{_cell(_name(a))}` | {_help(parser, a)} |" for a in actions]
    return lines


def reference() -> str:
    """The whole page, as `--write` saves it."""
    parser = build_parser()
    commands = subcommands(parser)
    common = {a.dest for a in documented_actions(parser)}
    out = [HEADER, "## Options every command takes", ""]
    out += _table(parser, documented_actions(parser))
    out += ["", "## Commands", ""]
    out += [f"- [`{name}`](#{PROG}-{name}): {_cell(sub.description or '')}" for name, sub in commands.items()]
    for name, sub in commands.items():
        out += ["", f"## {PROG} {name}", "", _cell(sub.description or ""), ""]
        out += _table(sub, documented_actions(sub, skip=common))
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None, page: Path = PAGE) -> int:
    ap = argparse.ArgumentParser(prog="cli_docs", description="write or check docs/cli.md")
    ap.add_argument("--write", action="store_true", help=f"write {page}")
    ap.add_argument("--check", action="store_true", help="exit 1 when the page differs from the parser")
    args = ap.parse_args(argv)
    text = reference()
    if args.write:
        page.write_text(text, encoding="utf-8")
        return 0
    if args.check:
        current = page.read_text(encoding="utf-8") if page.is_file() else ""
        if current != text:
            print(f"{page} is out of date; run: PYTHONPATH=runtime python3 -m external_brain.doors.cli_docs --write",
                  file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
