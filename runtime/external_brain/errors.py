"""The one error hierarchy of External Brain.

Every condition a user can cause or fix is a `BrainError` subclass with a stable `code`
(used in the `--json` envelope) and an exit status (1 for a failure, 2 for bad usage).
Anything that is not a `BrainError` is a bug and keeps its traceback.

A message names an argument the way the CLI takes it (`--type`, `--body`, `--force`): the
CLI prints it as it is; a door whose callers name arguments otherwise (HTTP's JSON fields and
query parameters, MCP's tool arguments) words it in its own names with `in_door_terms`, from
the library's name for the argument (`option_name`). The library says what is wrong once.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Iterable


# The longest error message shown whole, in characters; one that echoes a longer value (a 100 KB
# `--domain`) keeps its start (the problem) and its end (the fix) around the count left out.
MAX_MESSAGE = 1000


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line_message(message: str) -> str:
    """`message` with the characters that break or hide a line shown as escapes: control
    characters, line and paragraph separators, format characters (bidi overrides, zero widths)
    and lone surrogates; Japanese, emoji and spaces of any width stay as they are.

    Trigger: a message echoing input as typed (`no event line1<newline>line2`, a carriage return
    that sent the terminal back over the message, an RTL override). Why: the promise is one line
    that says the problem; the input shown must be the input given. Outcome: escapes, as `repr`
    shows them."""
    if message.isprintable():
        return message
    import unicodedata   # only a message that needs escapes pays for it

    return "".join(_ESCAPES.get(char) or (char if char.isprintable() or unicodedata.category(char) == "Zs"
                                          else _escape(char)) for char in message)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clipped_message(message: str) -> str:
    """`message`, or its first and last characters around the count left out when it is over
    `MAX_MESSAGE`.

    Trigger: a message echoing a huge value (`unknown domain 'xxx...'`, 100 KB). Why: it was
    one line of 100 KB on stderr or in the `--json` envelope, in the context window of the agent
    that made the call. Outcome: at most ~`MAX_MESSAGE` characters, the problem and the fix kept."""
    if len(message) <= MAX_MESSAGE:
        return message
    keep = (MAX_MESSAGE - 40) // 2
    return f"{message[:keep]}…[{len(message) - 2 * keep} characters left out]…{message[-keep:]}"


class BrainError(Exception):
    """Base class: a condition the user can understand and fix."""

    code = "ERROR"
    exit_code = 1

    def __init__(self, message: str, **details: Any) -> None:
        message = clipped_message(one_line_message(message))
        super().__init__(message)
        self.message = message
        self.details = details


class UsageError(BrainError):
    """The command was called with an invalid argument value. `field=` (kept in `details`) names
    the argument at fault by the library's name for it (`type`, `body`, `agent`); a door whose
    name differs (HTTP `memory_type`, `content`, `agent_id`) says it in its own."""

    code = "INVALID_ARGUMENT"
    exit_code = 2


class UnsafePath(UsageError):
    """A path leaves the vault (``../``, an absolute path or a symlink pointing outside)."""

    code = "UNSAFE_PATH"


class VaultNotFound(BrainError):
    """No vault was given and none was found from the working directory."""

    code = "VAULT_NOT_FOUND"


class CardNotFound(BrainError):
    """No card matches the given path, stem or id."""

    code = "NOT_FOUND"


class AmbiguousCard(BrainError):
    """A stem or id prefix matches more than one card."""

    code = "AMBIGUOUS"


class BadFrontmatter(BrainError):
    """A file's YAML frontmatter cannot be parsed; carries the file and line."""

    code = "BAD_FRONTMATTER"

    def __init__(self, source: str, line: int, problem: str) -> None:
        super().__init__(
            f"{source}:{line}: bad frontmatter: {problem}", path=source, line=line
        )
        self.source = source
        self.line = line
        self.problem = problem


class NotACard(BrainError):
    """A file in the vault is not a UTF-8 Markdown text file (binary, unreadable)."""

    code = "NOT_A_CARD"


class ConfigError(BrainError):
    """`.brain/config.toml` has an unknown key or a bad value."""

    code = "CONFIG_ERROR"


class Conflict(BrainError):
    """The target changed since the caller last read it, or already exists."""

    code = "CONFLICT"


class EmbeddingUnavailable(BrainError):
    """The embedding provider could not give usable vectors (down, slow, refused, bad reply)."""

    code = "EMBEDDINGS_UNAVAILABLE"


class RerankUnavailable(BrainError):
    """The `[rerank]` provider gave no usable scores (down, slow, refused, bad reply)."""

    code = "RERANK_UNAVAILABLE"


class ModelUnavailable(BrainError):
    """The `[ingest]` chat model gave no usable answer (down, slow, refused, bad JSON, wrong shape)."""

    code = "MODEL_UNAVAILABLE"


class LinkNotFound(BrainError):
    """`unlink` names a link the source card does not have."""

    code = "NOT_FOUND"


class BadLinks(BrainError):
    """A card's `links` or `related` frontmatter is not in a shape the tool can rewrite safely."""

    code = "BAD_LINKS"


class PrivateLink(BrainError):
    """`link` would write an agent-private card's id and name into a card others can read."""

    code = "PRIVATE_LINK"


class NotUndoable(BrainError):
    """`undo` names an event that changed no file the log kept (feedback, a read, a search miss)."""

    code = "NOT_UNDOABLE"


class BadImport(BrainError):
    """An `import` file has a line that cannot be imported; nothing was written."""

    code = "BAD_IMPORT"


class IOProblem(BrainError, OSError):
    """The operating system refused a read or write (permission, read-only, disk full, name
    too long, symlink loop): the world, not a bug. Carries the path and the cause; it is also an
    `OSError`, so code that treats a failed cache write as harmless still does."""

    code = "IO_ERROR"

    def __init__(self, message: str, path: str, cause: str, errno: int | None = None) -> None:
        BrainError.__init__(self, message, path=path, cause=cause)
        self.errno = errno
        self.filename = path
        self.strerror = cause

    def __str__(self) -> str:
        return self.message


class UnsafeVault(UnsafePath):
    """One of the vault's own folders, its log or its cache leads outside the vault (a symlink):
    the vault, not the arguments, must be fixed, so this is a failure (exit 1), not bad usage."""

    exit_code = 1


class IndexUnavailable(BrainError):
    """The search index file cannot be written or rebuilt (read-only cache, full disk, in use)."""

    code = "INDEX_UNAVAILABLE"


class NoApiKey(BrainError):
    """`serve` was started without an API key (`$BRAIN_API_KEY` or `[http] api_key_file`)."""

    code = "NO_API_KEY"


class CannotListen(BrainError):
    """`serve` could not bind its address (port in use, address not on this machine)."""

    code = "CANNOT_LISTEN"


class MergeConflict(BrainError):
    """A git merge left a real conflict in a card's body (two clones changed the same lines)."""

    code = "MERGE_CONFLICT"


class Unauthenticated(BrainError):
    """A request to a door carries no key, or one that is neither the owner's nor an agent's."""

    code = "UNAUTHENTICATED"


class Forbidden(BrainError):
    """The caller's key may not do this: an agent key naming another agent, or asking for every
    agent's private memories."""

    code = "FORBIDDEN"


class HostNotAllowed(BrainError):
    """A request's `Host` names neither the address the server is bound to nor a configured name
    (DNS rebinding)."""

    code = "HOST_NOT_ALLOWED"


class OriginNotAllowed(BrainError):
    """A request's `Origin` is neither the server's own nor one of `[http] allowed_origins`."""

    code = "ORIGIN_NOT_ALLOWED"


class UnknownPersona(UsageError):
    """`X-Persona` or `--persona` names no persona of `[personas]` in the config."""

    code = "UNKNOWN_PERSONA"


# `--name` in a message: an argument named as the CLI takes it.
_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\b")
# "`brain search`", "`brain reindex --embeddings`": a CLI command a message names.
_COMMAND = re.compile(r"`brain ([a-z]+(?:-[a-z]+)*)([^`]*)`")
# CLI options whose library name is not the option's (`--add-tag` may be given again and again).
_LIBRARY_NAMES = {"add_tag": "add_tags", "remove_tag": "remove_tags"}
# An option listed among others ("give --title, --body or --status"): one a door lacks leaves the list.
_LISTED_BEFORE = re.compile(r"(?:, | or )$")
_LISTED_AFTER = re.compile(r"(?:, | or )")
_GONE = "\0"


def option_name(option: str) -> str:
    """The library's name for a CLI option (`add-tag` -> `add_tags`, `type` -> `type`)."""
    name = option.replace("-", "_")
    return _LIBRARY_NAMES.get(name, name)


def in_door_terms(message: str, name_of: Callable[[str], str | None],
                  command_of: Callable[[str], str | None] | None = None) -> str:
    """`message` worded by a door whose callers name arguments otherwise than the CLI:
    - each `--option` becomes `name_of(library name)`, the door's name for that argument; None
      keeps it as written; "" (the door has no such argument) leaves it out of a list of options
      ("give --title, --add-tag or --status", with its comma or "or"), and keeps it elsewhere;
    - a CLI command named alone (`brain search`) becomes `command_of(command)`, the door's way to
      do the same (MCP's `recall_memories`), or stays (None: the owner's job, `brain init`);
      a command given with arguments (`brain reindex --embeddings`) is the owner's to run, and
      stays whole, options and all."""
    def door_name(match: re.Match) -> str:
        named = name_of(option_name(match.group(1)))
        if named is None:
            return match.group(0)
        if named:
            return named
        before, after = match.string[:match.start()], match.string[match.end():]
        listed = _LISTED_BEFORE.search(before) or _LISTED_AFTER.match(after)
        return _GONE if listed else match.group(0)

    def door_command(match: re.Match) -> str:
        named = command_of(match.group(1)) if command_of is not None and not match.group(2) else None
        return match.group(0) if named is None else f"`{named}`"

    parts, at = [], 0
    for match in _COMMAND.finditer(message):   # outside the commands a message names, options are the door's
        parts += [_OPTION.sub(door_name, message[at:match.start()]), door_command(match)]
        at = match.end()
    worded = "".join([*parts, _OPTION.sub(door_name, message[at:])])
    if _GONE in worded:
        worded = re.sub(f", {_GONE}|{_GONE}, | or {_GONE}|{_GONE} or |{_GONE}", "", worded)
    return worded


def within_vaults(text: str, roots: Iterable[Any]) -> str:
    """`text` with each path inside one of the vault folders `roots` named relative to it
    (".brain/config.toml:5: ..."): what a door that serves others (HTTP, /mcp) tells a client,
    to whom the server's file system is no business."""
    for root in sorted({str(r) for r in roots}, key=len, reverse=True):
        if root in text:
            text = text.replace(root + os.sep, "").replace(root, ".")
    return text
