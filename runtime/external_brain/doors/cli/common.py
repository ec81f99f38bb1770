"""What every command module of the command line shares: the `Output` a command returns, the
`Parser` that reports bad usage as a `UsageError`, `add_command` (a subcommand with the options
every command takes) and the formatting helpers several commands use (names with a leading
underscore are private to `doors.cli`).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from typing import Any

from ...errors import UsageError
from ...vault.valueclass import factory, valueclass

PROG = "brain"   # the product's name: the `brain: error:` label, `--version`, docs/cli.md
EXIT_NOT_CREATED = 3   # `create` ran and made no card: a duplicate (README, exit codes)


def program_name() -> str:
    """The program as the user ran it, for every hint that names a command to type: `brain` (the
    installed command, and `main` called in-process), or the interpreter and script as typed when
    run from a checkout (`python3 runtime/playbook_api.py`), so the hint runs as written in the
    same shell (decision 0002, "The program a hint names")."""
    typed = sys.orig_argv
    if os.path.basename(sys.argv[0] if sys.argv else "") != "playbook_api.py" or len(typed) < len(sys.argv):
        return PROG
    # Trigger: the checkout's script. Why: `brain` is not there without an install, and the
    # interpreter's own options (`-S`, `-X ...`) sit between it and the script. Outcome: everything
    # typed up to the script, quoted for a shell.
    parts = typed[:len(typed) - len(sys.argv) + 1]
    if all(_SHELL_SAFE.fullmatch(part) for part in parts):
        return " ".join(parts)   # what shlex.join gives, without importing it on every command's start-up
    import shlex

    return shlex.join(parts)


_SHELL_SAFE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)   # the characters `shlex.quote` leaves unquoted


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

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # Trigger: arguments no parser took. Why: argparse reports them from the top parser, so
        # the hint named `brain --help`, which lists commands, not the options that were meant.
        # Outcome: the hint names the command's own help.
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(parsed, "command", None)
            where = f"{self.prog} {command}" if command else self.prog
            raise UsageError(f"unrecognized arguments: {_echo(' '.join(extra))} (see `{where} --help`)")
        return parsed


class _VaultAction(argparse.Action):
    """`--vault` may be repeated: `vault` keeps the first (the one every command reads and writes),
    `vaults` all of them in order (search searches them together)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = list(getattr(namespace, "vaults", None) or ())
        if not given:
            setattr(namespace, "vault", values)
        setattr(namespace, "vaults", given + [values])


@functools.cache
def common_options() -> Parser:
    """The options every command takes, as an argparse parent: `--vault`, `--json`, `--persona`
    (built once; argparse copies its actions into each parser that names it as a parent)."""
    common = Parser(add_help=False)
    # SUPPRESS: a flag given before the subcommand is not reset by the subparser's default.
    common.add_argument("--vault", action=_VaultAction, default=argparse.SUPPRESS,
                        help="vault folder (default: $BRAIN_VAULT or nearest); repeated: search searches "
                             "them all, every other command uses the first")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print one JSON object: {ok, command, data} or {ok, error}")
    common.add_argument("--persona", default=argparse.SUPPRESS, metavar="NAME",
                        help="use persona NAME's vault ([personas] in the vault's config)")
    return common


def add_command(sub, name: str, help: str) -> Parser:
    """Subcommand NAME's parser under `sub` (the subparsers of `build_parser`), with the options
    every command takes and its one-line help as its description (`brain NAME --help`, docs/cli.md)."""
    return sub.add_parser(name, parents=[common_options()], help=help, description=help)


# ---------------------------------------------------------------------------- helpers

def _problem_warnings(problems) -> list[str]:
    return [p.warning() for p in problems]


def _filters(args: argparse.Namespace, default_status: str | None = None):
    from ...search.keyword import Filters

    return Filters(domain=args.domain, type=args.type, tags=tuple(args.tag or ()),
                   project=getattr(args, "project", None),
                   status=getattr(args, "status", None) or default_status, agent=getattr(args, "agent", None),
                   as_of=_moment(args))


def _moment(args: argparse.Namespace) -> str | None:
    """`search --as-of` / `list --valid-at`, checked, as ISO text (None when not given)."""
    from ...vault.kinds import check_moment

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


def _undo_hint(event_id: str) -> str:
    """The one line every undoable command ends with: the command that undoes it."""
    return f"undo with `{program_name()} undo {event_id}`"


def _conf(value: float) -> str:
    return f"{value:.2f}"


def _kind(summary: dict[str, Any]) -> str:
    """`type/domain`, either part left out when the card has none ("" when it has neither)."""
    return "/".join(x for x in (summary.get("type"), summary.get("domain")) if x)


def _card_line(summary: dict[str, Any]) -> str:
    return _line(summary["confidence"], summary.get("type"), summary.get("domain"), summary["title"],
                 summary.get("status"), summary["path"], summary.get("age"), summary.get("valid_to"))


# `list` makes a line per card: the padded kind column is made once per (type, domain) and kept here.
_KINDS: dict[tuple, str] = {}


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
