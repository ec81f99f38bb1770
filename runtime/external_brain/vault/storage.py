"""The vault on disk: where it is, its cards, and how they are written safely.

Promises:
- Every path a user gives is checked to stay inside the vault (no `../`, no absolute path or
  symlink leading out) before anything is read or written; so are the vault's own folders, log
  and cache (`Vault.folder`, `log_path`, `cache_dir` refuse one that leads outside).
- Every card or working-memory file is read by one reader (`load_card`, `read_text`) that never
  blocks and never reads more than MAX_CARD_BYTES + 1 bytes: only a regular file inside the vault
  is a card; a FIFO, device, folder, symlink loop or link out of the vault is refused (NotACard,
  UnsafePath) and skipped by the commands that walk the folders. A search's hits are read through
  `load_kept_card`, which a long-lived process answers from what it read before only while the
  file's device, inode, size, mtime and ctime are unchanged (`_KeptCards`: the bound).
- Text a card cannot hold (NUL, bytes that were not UTF-8; on one line also control characters
  and line separators) is refused by `check_text` before anything is written.
- Every write is atomic: a temporary file in the same folder, fsync, `os.replace`, so a process
  killed at any instant leaves the old file or the new one, never a mix.
- Every read-modify-write happens under an `fcntl` lock held in a `with` block, and a write
  changes only the frontmatter keys the caller names (see `frontmatter.update`).
This module knows nothing about search or the CLI.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat as stat_kind
import re
import time
import unicodedata
from .regex_programs import KeptPattern, compile_pattern   # programs kept across processes
from .valueclass import valueclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import (
    AmbiguousCard, BadFrontmatter, BrainError, CardNotFound, IOProblem, NotACard, UnsafePath, UnsafeVault,
    UsageError, VaultNotFound,
)
from . import frontmatter
from .config import DEFAULT_CONFIG_TOML, Settings, file_stamps, load_settings, settled

CARD_FOLDERS = ("Playbooks", "Inbox")
VAULT_FOLDERS = ("Playbooks", "Inbox", "WorkingMemory", "logs")
MAX_CARD_BYTES = 2_000_000  # a Markdown card larger than this is a mistake (or an attack)
NAME_MAX = 255  # bytes in one file name (ext4, APFS, NTFS): a longer card name cannot exist
# The vault's own entries that a command writes to or reads as a whole (docs/card-format.md, The vault); none of them may
# lead outside the vault (Vault.leads_outside).
LAYOUT = ("Playbooks", "Inbox", "WorkingMemory", "logs", "logs/events.jsonl", ".brain", ".brain/cache")
_LOG = ("logs", "logs/events.jsonl")
# Reading never blocks (a FIFO would wait for a writer forever) and never follows a last
# component that is a symlink unless that was checked first (`_open_card`).
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


# ---------------------------------------------------------------------------- time and ids

CLOCK_ENV = "BRAIN_NOW"


def now() -> datetime:
    """The current local time with its UTC offset, to the second (what cards and logs store).

    `$BRAIN_NOW` (an ISO 8601 time) fixes it: the product's one clock seam, for simulations that
    run agents over months in minutes (tests/simulation/) and for replaying what a command did
    at a given moment. Every date the product writes or compares comes from here."""
    fixed = os.environ.get(CLOCK_ENV)
    if fixed:
        return _fixed_moment(fixed)
    return datetime.now().astimezone().replace(microsecond=0)


_FIXED: dict[str, datetime] = {}


def _fixed_moment(text: str) -> datetime:
    moment = _FIXED.get(text)
    if moment is None:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise UsageError(f"${CLOCK_ENV} {text!r} is not an ISO 8601 time; unset it, or give one like "
                             "2026-11-21T10:30:00+09:00") from None
        moment = (moment if moment.tzinfo else moment.astimezone()).replace(microsecond=0)
        if len(_FIXED) > 64:
            _FIXED.clear()
        _FIXED[text] = moment
    return moment


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


# The dates every command can compute with: Python's years 1..9999 less one year at each end,
# so a moment in the window stays representable in any time zone (offsets reach +-24 h) and
# after adding or taking a year. A date read from a file outside it is clamped to the nearer end
# (docs/decisions.md, "Hostile input, second round"): `updated: 0001-01-01` once failed every
# command with "year 0 is out of range", `9999-12-31T23:59:59` did in Tokyo and New York.
EARLIEST = datetime(2, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9998, 12, 31, tzinfo=timezone.utc)
_EARLIEST_NAIVE, _LATEST_NAIVE = EARLIEST.replace(tzinfo=None), LATEST.replace(tzinfo=None)


def _read_time(value: Any) -> datetime | None:
    """`value` as written (naive or aware), None when absent or not ISO 8601."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(str(value).strip())
    except ValueError:
        return None


def parse_time(value: Any) -> datetime | None:
    """A card or log timestamp as an aware datetime; None when absent or unreadable.

    People write `2026-11-21`, `2026-11-21 10:30` or full ISO 8601 with `Z`; a value without an
    offset is taken as local time. A date outside EARLIEST..LATEST is read as that end, so no
    date a person writes can make a later comparison, zone conversion or sum overflow.
    """
    moment = _read_time(value)
    if moment is None:
        return None
    if 2 < moment.year < 9998:   # inside by a year whatever its offset: no (slower) aware comparison
        return moment if moment.tzinfo is not None else moment.astimezone()
    if moment.tzinfo is None:
        # Compared before the zone is attached: attaching it converts, which overflows at the ends.
        if moment < _EARLIEST_NAIVE:
            return EARLIEST
        if moment > _LATEST_NAIVE:
            return LATEST
        return moment.astimezone()
    if moment < EARLIEST:
        return EARLIEST
    if moment > LATEST:
        return LATEST
    return moment


def outside_window(value: Any) -> bool:
    """Whether `value` reads as a time (ISO 8601) outside EARLIEST..LATEST, so `parse_time`
    clamps it: `doctor` warns about each such date in a file, and a time typed as an argument is
    refused (`kinds.check_moment`)."""
    moment = _read_time(value)
    if moment is None:
        return False
    if moment.tzinfo is None:
        return not _EARLIEST_NAIVE <= moment <= _LATEST_NAIVE
    return not EARLIEST <= moment <= LATEST


def new_id() -> str:
    """A random UUID4 string (built from os.urandom to keep `uuid` off the start-up path)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# ---------------------------------------------------------------------------- input text

# What a card cannot hold anywhere: NUL (readers take a file holding it for binary) and lone
# surrogates (what Python makes of input bytes that are not UTF-8; they cannot be written).
_UNSTORABLE = "[\x00\ud800-\udfff]"
# ... and on one line (a title, a key): control characters, line and paragraph separators.
_NOT_ONE_LINE = "[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"
_UNSTORABLE_RE, _NOT_ONE_LINE_RE = KeptPattern(_UNSTORABLE), KeptPattern(_NOT_ONE_LINE)   # (compiled once per Python)


def check_text(value: str, what: str, one_line: bool = False, name: bool = False, field: str | None = None) -> str:
    """`value` when a card (and the log) can hold it; otherwise UsageError naming `what`, the
    character and where it is (and `field`, the argument it came in, when the caller knows it).
    The one check for every text a command writes: bodies, titles, notes, keys. `name` (a
    working-memory key, a file name) also refuses characters that show nothing (`invisible_char`:
    zero-width, bidi controls, blank letters), which would make two names that look the same."""
    found = (_NOT_ONE_LINE_RE if one_line or name else _UNSTORABLE_RE).search(value)
    if found is None and name and not value.isascii():
        at = invisible_at(value)
        found = None if at is None else re.compile(".", re.DOTALL).match(value, at)
    if found is None:
        return value
    char = found.group()
    if "\ud800" <= char <= "\udfff":
        shown = "bytes that are not UTF-8"
    elif char == "\x00":
        shown = "a NUL character (U+0000)"
    else:
        shown = f"the character U+{ord(char):04X} ({unicodedata.name(char, unicodedata.category(char))})"
    fix = "give one line of plain text" if one_line or name else "a card holds text only: remove it"
    raise UsageError(f"{what} holds {shown} at character {found.start() + 1}; {fix}",
                     **({"field": field} if field else {}))


# A lone surrogate: JSON's `"\ud800"` escape (half of a pair, e.g. an emoji cut in two) decodes
# to one, but it is no Unicode character, so no card, log line or answer can hold it (writing it
# out raised UnicodeEncodeError, which took the MCP server down, dropped HTTP connections and
# failed hooks).
_LONE_SURROGATE = "[\ud800-\udfff]"   # compiled on first use (re's cache), not on every start-up


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a decoded JSON value (keys included) as its escape
    (`\\ud800`), or None. Iterative, so no nesting exhausts the stack. The doors refuse a request
    that holds one (MCP and HTTP arguments) before any operation sees it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found = re.search(_LONE_SURROGATE, item)
            if found:
                return f"\\u{ord(found.group()):04x}"
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def whole_characters(text: str) -> str:
    """`text` with each lone surrogate read as U+FFFD, as a UTF-8 decoder reads a broken
    character (for input that is never refused: a hook's stdin, a transcript's lines)."""
    return re.sub(_LONE_SURROGATE, "\ufffd", text)


def printable(text: str) -> str:
    """`text` with each lone surrogate shown as its escape, for a message that echoes input."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ---------------------------------------------------------------------------- operating-system errors

_CAUSES = {
    errno.EACCES: "permission denied; check the owner and mode of it and its folders",
    errno.EPERM: "operation not permitted; check the owner and mode of it and its folders",
    errno.EROFS: "read-only file system; run the command where the vault is writable",
    errno.ENOSPC: "no space left on device; free some space and run it again",
    errno.EDQUOT: "disk quota exceeded; free some space and run it again",
    errno.ENAMETOOLONG: f"file name too long (over {NAME_MAX} bytes); use a shorter name",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop); fix or delete the link",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.EEXIST: "it exists and is not a folder; move it away",  # what mkdir(exist_ok=True) meets
    errno.ENOENT: "no such file or folder",
    errno.EIO: "input/output error; check the disk",
}


class cached_property:  # noqa: N801 - named as the functools one it replaces
    """`functools.cached_property` without its lock. Before Python 3.12 that lock is one per
    property for every instance of the class (3.12 removed it, cpython #87634), so under the
    HTTP server's threads each request's fresh `Vault` waited for every other request's
    `settings` to be read: ~7 ms a read with 16 clients. Two threads reading one Vault's
    property at once both compute it, which every property here allows (same result)."""

    def __init__(self, func) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


def io_problem(exc: OSError, doing: str | None = None, path: Any = None) -> IOProblem:
    """An operating-system error as one line naming the path and the cause (and the fix where
    there is one): `cannot write /v/Playbooks/X.md: no space left on device; free some space`."""
    if isinstance(exc, IOProblem):
        return exc
    where = str(path if path is not None else exc.filename if exc.filename is not None else "")
    where = os.fsencode(where).decode("utf-8", "backslashreplace")  # printable, whatever the name
    cause = _CAUSES.get(exc.errno) or (exc.strerror or str(exc)).lower()
    head = f"cannot {doing} {where}" if doing else where
    return IOProblem(f"{head}: {cause}" if head else cause, where, cause, exc.errno)


# ---------------------------------------------------------------------------- the vault

@valueclass(frozen=True)
class Vault:
    """A vault on disk. The paths it hands out (`folder`, `brain_dir`, `cache_dir`, `log_path`)
    are where every command reads and writes, so each refuses with UnsafeVault when that entry
    leads outside the vault (a symlinked folder, log or cache): checked once per entry and
    Vault, which is once per command, not once per file."""

    root: Path

    # Each of these paths is checked once and made once per Vault (`check_inside` keeps its
    # answer per Vault, so a second check could not differ): a record asked for the log's path
    # ~10 times and the cache folder's 3 times under the write lock, each a check and two
    # `pathlib` joins (~5 us each). A check that refuses is not kept, and refuses again.
    @cached_property
    def brain_dir(self) -> Path:
        self.check_inside(".brain")
        return self.root / ".brain"

    @cached_property
    def cache_dir(self) -> Path:
        self.check_inside(".brain/cache")
        return self.root / ".brain" / "cache"

    @cached_property
    def log_path(self) -> Path:
        self.check_inside(*_LOG)
        return self.root / "logs" / "events.jsonl"

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.brain_dir / "config.toml")

    @cached_property
    def notices(self) -> list[str]:
        """Warnings from best-effort steps of this call (a read's log append that failed), for
        the door (CLI, MCP) to show beside its answer."""
        return []

    def folder(self, name: str) -> Path:
        """`root/name`; UnsafeVault when that folder, or the event log, leads outside the vault.
        Every write gets its folder here, so none lands outside; and every write is logged, so a
        log that leads outside is refused here too, before the write rather than after it."""
        self.check_inside(name, *_LOG)
        if self._log_in_the_way is not None:
            raise self._log_in_the_way
        return self.root / name

    def leads_outside(self, name: str) -> str | None:
        """Where the vault entry `name` (`Playbooks`, `logs/events.jsonl`, ...) really is when
        that is outside the vault; None when it stays inside or does not exist. A symlinked
        folder or file pointing elsewhere inside the vault is fine."""
        cache = self._outside
        if name not in cache:
            real = self.real_path(name)
            cache[name] = None if _within(real, self.real_root) else real
        return cache[name]

    def real_path(self, name: str) -> str:
        """`os.path.realpath(root/name)` for a vault entry `name` (`logs/events.jsonl`), found
        from `real_root` one component at a time, each `lstat`-ed once per Vault: a server makes
        a Vault per request, and resolving each entry from `/` again cost ~30 `lstat`s a create.
        A component that is a symlink is resolved as `realpath` resolves it; an absolute name, or
        one with `.`, `..` or an empty component, goes the long way."""
        reals = self._reals
        real = reals.get(name)
        if real is None:
            head, _, last = name.rpartition("/")
            if last in ("", ".", "..") or name.startswith("/") or head.endswith("/"):
                real = os.path.realpath(os.path.join(self.root, name))
            else:
                path = os.path.join(self.real_path(head) if head else self.real_root, last)
                try:
                    link = stat_kind.S_ISLNK(os.lstat(path).st_mode)
                except OSError:
                    link = False   # missing (or unreadable): `realpath` keeps the name as it is
                real = os.path.realpath(path) if link else path
            reals[name] = real
        return real

    @cached_property
    def _log_in_the_way(self) -> IOProblem | None:
        """IOProblem when `logs` is not a folder or the log is not a file: every write logs, so
        it is refused before the write instead of leaving a card with no event."""
        for name, kind, is_kind in (("logs", "folder", os.path.isdir), ("logs/events.jsonl", "file", os.path.isfile)):
            path = os.path.join(self.root, name)
            if os.path.lexists(path) and not is_kind(path):
                cause = f"it is not a {kind}; move it away"
                return IOProblem(f"cannot append to the event log {path}: {cause}", path, cause)
        return None

    @cached_property
    def real_root(self) -> str:
        return os.path.realpath(self.root)

    @cached_property
    def _outside(self) -> dict[str, str | None]:
        return {}

    @cached_property
    def _reals(self) -> dict[str, str]:
        return {}

    def check_inside(self, *names: str) -> None:
        """UnsafeVault naming the first of these vault entries that leads outside the vault."""
        for name in names:
            outside = self.leads_outside(name)
            if outside is not None:
                kind = "file" if name.endswith(".jsonl") else "folder"
                shown = name if kind == "file" else name + "/"
                raise UnsafeVault(f"{shown} leads outside the vault (to {outside}); make it a real {kind} "
                                  f"inside {self.root} (or a link to one inside it)", path=shown)

    def rel(self, path: Path) -> str:
        """The vault-relative POSIX path of `path` (what cards, logs and output show)."""
        # A path under the root, as nearly every one is, is its text after the root's: what
        # `relative_to` gives, without pathlib parsing both paths (~8 us; an index build asks
        # twice per card). Anything else (another separator, the root itself) goes the long way.
        text = str(path)
        if text.startswith(self._root_prefix) and os.sep == "/":
            return text[len(self._root_prefix):]
        return path.relative_to(self.root).as_posix()

    @cached_property
    def _root_prefix(self) -> str:
        return str(self.root) + "/"


def _within(real: str, root: str) -> bool:
    return real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)


def is_vault(folder: Path) -> bool:
    return (folder / ".brain").is_dir() or (folder / "Playbooks").is_dir()


def resolve_vault(explicit: str | None = None, cwd: Path | None = None, example: Path | None = None) -> Vault:
    """Find the vault: `--vault`, else `$BRAIN_VAULT`, else the nearest ancestor of the working
    directory holding `.brain/` or `Playbooks/`, else `example`: the checkout's own example vault,
    which only `runtime/playbook_api.py` passes (README, "Install `brain`"). Nothing found is
    VAULT_NOT_FOUND, one line naming the three fixes.

    A vault named by `--vault` or `$BRAIN_VAULT` is taken at its word: it must be a vault, never
    a guess (an empty `--vault ""` is bad usage; an empty `$BRAIN_VAULT` counts as unset, as
    shells write `BRAIN_VAULT= cmd`)."""
    if explicit is not None and not explicit.strip():
        raise UsageError("--vault is empty; give the vault's folder, e.g. --vault ~/notes")
    given = explicit or os.environ.get("BRAIN_VAULT")
    if given:
        root = Path(given).expanduser()
        if not root.is_dir():
            if os.path.lexists(root):
                # Trigger: `--vault notes.md`. Why: "create it with `brain init`" sent the person to
                # a command that refuses a path holding a file. Outcome: what it is, and what to give.
                raise VaultNotFound(f"vault {given} is a file, not a folder; give the vault's folder")
            raise VaultNotFound(f"vault {given} does not exist; create it with `brain init {given}`")
        if not is_vault(root):
            # Trigger: a folder with neither `.brain/` nor `Playbooks/`. Why: taking it as a vault
            # made reads create `.brain/`, `Inbox/` and `logs/` in a random folder. Outcome: refused.
            raise VaultNotFound(f"{given} is not a vault (no .brain/ or Playbooks/ in it); "
                                f"create one with `brain init {given}`")
        return Vault(root.resolve())
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if is_vault(folder):
            return Vault(folder)
    # Trigger: no vault given or found, run as the checkout's script. Why: the README's first
    # command (`python3 runtime/playbook_api.py search ...`) works on a fresh clone from
    # anywhere. The installed `brain` never passes `example`: found through the package's own
    # location, an editable install (`pip install -e`) wrote a user's notes and search misses
    # into the checkout's git-tracked folders. Outcome: the example vault for the script only.
    if example is not None and is_vault(example):
        return Vault(example.resolve())
    raise VaultNotFound(
        f"no vault found in {start} or a parent directory; create one with `brain init PATH`, "
        "or pass --vault PATH or set BRAIN_VAULT")


def init_vault(path: Path) -> tuple[Vault, list[str]]:
    """Create the vault layout at `path`; existing files are kept. Returns what was created."""
    root = path.expanduser()
    if not str(path).strip():
        raise UsageError("init needs a folder; give the new vault's path, e.g. `brain init ~/notes`")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{path} exists and is not a directory; choose another path")
    created: list[str] = []
    for name in (*VAULT_FOLDERS, ".brain"):
        folder = root / name
        if not folder.is_dir():
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise io_problem(exc, "create the vault folder", folder) from exc
            created.append(name + "/")
    vault = Vault(root.resolve())
    vault.check_inside(*LAYOUT)  # an existing vault's links: `init` never writes through one out of it
    files = {
        ".brain/config.toml": DEFAULT_CONFIG_TOML,
        "logs/.gitkeep": "",
        "WorkingMemory/.gitkeep": "",
        # Working memory is per machine: a clone shares cards and the log, not its scratch notes.
        "WorkingMemory/.gitignore": "# working memory is per machine (README: Sharing a vault with git)\n*.md\n",
        "Inbox/.gitkeep": "",
    }
    for rel, content in files.items():
        target = vault.root / rel
        if not target.exists():
            atomic_write(target, content)
            created.append(rel)
    # Trigger: `init` on a vault made by an older version (or a clone). Why: a line added since
    # (`jobs/`: async ingests keep the raw text there until they run) would otherwise show up in
    # `git status`. Outcome: the missing lines are appended; the person's own lines stay as written.
    for rel, lines in ((".brain/.gitignore", BRAIN_GITIGNORE), (".gitattributes", GIT_ATTRIBUTES)):
        target = vault.root / rel
        existing = target.read_text(encoding="utf-8") if target.exists() else ""
        missing = [line for line in lines if line not in existing.splitlines()]
        if missing:
            sep = "" if not existing or existing.endswith("\n") else "\n"
            atomic_write(target, existing + sep + "".join(line + "\n" for line in missing))
            created.append(rel)
    return vault, created


# What git leaves out of `.brain/` (derived or per machine): the search index and vectors, lock
# files, pending journals, and the async ingest jobs (`intake/jobs.py`; a failed one keeps the raw text).
BRAIN_GITIGNORE = ("cache/", "locks/", "journal*.json", "jobs/")


# How git merges what the tool writes (README, "Sharing a vault with git"): the log line by line
# from both sides, cards through `brain merge-driver` (which `brain init` registers as `brain`
# in the clone's git config; a clone without it falls back to git's line merge).
GIT_ATTRIBUTES = (
    "logs/*.jsonl merge=union",
    "Playbooks/**/*.md merge=brain",
    "Inbox/**/*.md merge=brain",
    "WorkingMemory/*.md merge=brain",
    ".brain/deleted/**/*.md merge=brain",
)


# ---------------------------------------------------------------------------- safe files

def atomic_write(path: Path, text: str | bytes, durable: bool = True, sync_dir: bool = True,
                 sync_also: tuple = (), before_replace: Callable[[], None] | None = None) -> None:
    """Replace `path` with `text` atomically: temp file in the same folder, fsync, rename.

    The temporary name is unique per call (O_EXCL + random suffix, what `tempfile.mkstemp`
    does without its import cost), never a fixed `.tmp` that two writers would share.
    `durable=False` skips the fsyncs, for caches: still all-or-nothing, but an OS crash may
    lose the write. `sync_dir=False` skips only the folder's fsync that makes the rename
    durable, for a caller that fsyncs the folder itself later (`fsync_dir`), once for many files.
    `sync_also`: descriptors (or folders) that must be durable before the rename too, fsynced
    together with the temporary file (`fsync_together`): the journal line of the operation.
    `before_replace`: called once the temporary file is durable, just before the rename; what it
    raises leaves `path` untouched (a writer's check that the file still holds what it read).
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    folder = path.parent
    try:
        mode = os.stat(path).st_mode & 0o777
    except (FileNotFoundError, NotADirectoryError):
        mode = 0o644   # a new file (in a folder that may not exist yet: made below)
    # A name a person gave that leaves no room for the temporary name's 18 bytes is cut for it.
    stem = path.name if len(os.fsencode(path.name)) <= MAX_NAME_BYTES else fit_name(path.name, MAX_NAME_BYTES)
    made = False
    for _ in range(100):
        temp = folder / f".{stem}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            break
        except FileExistsError:
            continue
        except OSError:
            # Trigger: the temporary file could not be made, the first time. Why: its folder may
            # not exist yet; making it before every write cost a failing `mkdir` and a `stat`
            # a write (a server's create: two a create). Outcome: the folder made (a file in its
            # way raises as before), then the open tried again; a second failure is raised.
            if made:
                raise
            folder.mkdir(parents=True, exist_ok=True)
            made = True
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise OSError(f"cannot create a temporary file in {folder}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                fsync_together((handle.fileno(), *sync_also))
        if before_replace is not None:
            before_replace()
        os.replace(temp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        if isinstance(exc, OSError):  # a full disk says ENOSPC but not where: name the file
            raise io_problem(exc, "write", path) from exc
        raise
    if durable and sync_dir:
        fsync_dir(folder)


def read_from(path: Path | str, offset: int = 0) -> tuple[os.stat_result, bytes]:
    """The file's stamps (`fstat` of the descriptor read) and its bytes from `offset` to its end,
    read with the system's own calls: Python's `open` adds an `fstat`, an `ioctl` and an `lseek`
    or two to each file it opens, which a write's log checks paid several times over under the
    write lock. Raises what `open` raises (FileNotFoundError, ...)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        parts, at = [], offset
        asked = max(st.st_size - offset, 0) + 1
        while True:
            chunk = os.pread(fd, asked, at)
            if not chunk:
                break
            parts.append(chunk)
            at += len(chunk)
            if len(chunk) < asked and at >= st.st_size:
                break   # read short, past the size `fstat` gave: the end (another read says so again)
            asked = 1 << 16
        return st, b"".join(parts)
    finally:
        os.close(fd)


def fsync_together(items) -> None:
    """fsync each descriptor (an int) or folder (a path) in `items`, all at once: the first ones
    in helper threads, the last in this one. A filesystem with a journal (ext4, XFS, APFS)
    commits fsyncs that arrive together in one commit, so two cost about what one does
    (measured on ext4 under load: 3.4-8.8 ms for a journal line and a card, 11-19 ms one after
    the other). Returns when all are durable; raises the first error (a folder's is ignored,
    as in `fsync_dir`)."""
    items = list(items)
    if len(items) <= 1:
        return _sync(items[0]) if items else None
    jobs = _fsync_helpers(len(items) - 1)
    handed = []
    for item in items[:-1]:
        job = _FsyncJob(item)
        jobs.put(job)
        handed.append(job)
    error = None
    try:
        _sync(items[-1])
    except BaseException as exc:  # noqa: BLE001 - raised below, once the helpers are done
        error = exc
    for job in handed:
        job.done.wait()
        error = error or job.error
    if error is not None:
        raise error


def _sync(item) -> None:
    if isinstance(item, int):
        os.fsync(item)
    else:
        fsync_dir(item)


class _FsyncJob:
    def __init__(self, item) -> None:
        import threading

        self.item = item
        self.error: BaseException | None = None
        self.done = threading.Event()


_HELPERS: tuple[int, Any, list] | None = None   # (pid, queue, threads) of this process's fsync helpers
MAX_FSYNC_HELPERS = 4


def _fsync_helpers(wanted: int):
    """The queue of this process's fsync helper threads, with at least `wanted` of them (up to
    MAX_FSYNC_HELPERS). Started once, not per call: a thread's start waits for the scheduler to
    run it, which on a busy machine cost more than the fsync it saved. Made again in a forked
    child (`serve --workers`), which has none of its parent's threads."""
    global _HELPERS
    import queue
    import threading

    if _HELPERS is None or _HELPERS[0] != os.getpid():
        _HELPERS = (os.getpid(), queue.SimpleQueue(), [])
    _, jobs, threads = _HELPERS
    while len(threads) < min(wanted, MAX_FSYNC_HELPERS):
        thread = threading.Thread(target=_fsync_jobs, args=(jobs,), name="brain-fsync", daemon=True)
        thread.start()
        threads.append(thread)
    return jobs


def _fsync_jobs(jobs) -> None:
    while True:
        job = jobs.get()
        try:
            _sync(job.item)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            job.error = exc
        finally:
            job.done.set()


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries: a rename (or a new or removed file) in it is durable only then."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(vault: Vault, name: str) -> Iterator[None]:
    """Hold the exclusive lock `name` of this vault for the duration of the block.

    Locks are separate files under `.brain/locks/`: locking a card file itself would not work,
    because an atomic write replaces the file (and its inode) that a waiter holds a lock on.
    """
    fd = take_lock(vault, name)
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def take_lock(vault: Vault, name: str) -> int:
    """Wait for the exclusive lock `name` of this vault (`locked`) and return the descriptor
    that holds it: closing it lets the lock go."""
    lock_dir = vault.brain_dir / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_dir / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


# ---------------------------------------------------------------------------- portable names

# What `atomic_write` adds to a name for its temporary file ("." + name + "." + 12 hex + ".tmp"):
# a name the tool writes is bounded so that its temporary name fits NAME_MAX too.
TEMP_NAME_BYTES = 18
MAX_NAME_BYTES = NAME_MAX - TEMP_NAME_BYTES
MAX_STEM_CHARS = 120  # a card name's stem, cut also at this many characters (as it always was)
# Windows refuses these as a name's base (before its first dot), in any case and with any
# extension: `CON`, `nul.md`, `aux.txt` open the device, not a file (Microsoft, "Naming Files,
# Paths, and Namespaces"; the superscript digits included).
_DEVICE_NAME = compile_pattern(r"(?:CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3]|CONIN\$|CONOUT\$)",
                          re.IGNORECASE)
# Letters and marks that show nothing, beside the format characters (category Cf: zero-width
# spaces and joiners, bidi controls, the BOM, the soft hyphen): Hangul fillers, the braille
# blank, the combining grapheme joiner, Khmer's inherent vowels.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5")
_JOINERS = "\u200c\u200d"  # ZWNJ and ZWJ: part of emoji sequences and of Indic and Persian words
# What continues the character before it (a cut between them leaves half a character as a
# person sees it): combining marks, variation selectors, emoji skin tones, a joiner, and the
# character after a joiner.
_EMOJI_MODIFIERS = range(0x1F3FB, 0x1F400)
_REGIONAL_INDICATORS = range(0x1F1E6, 0x1F200)


def name_key(name: str) -> str:
    """The key under which macOS (APFS, HFS+) and Windows (NTFS) take two names for one file:
    case-folded and Unicode-normalised. Two names with one key cannot both exist in a checkout
    there, so the tool never makes a second name with a key already taken. The folding is full
    (`ß` is `ss`, `ſ` is `s`), as APFS's and Linux's case-folding directories fold (decision 0028,
    "`ß`, `ſ` and the ligatures"): a name they take for another is never made."""
    if name.isascii():
        return name.lower()
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


# The characters past ASCII whose `name_key` is ASCII (every one, checked by
# tests/vault/test_portable_names.py): a name holding one is the same file as the name spelling its
# key in ASCII letters (`Straße` and `Strasse`), by the first letter of that key, in code point order.
FOLDS_TO_ASCII: dict[str, tuple[tuple[str, str], ...]] = {
    "s": (("\u00df", "ss"), ("\u017f", "s"), ("\u1e9e", "ss"), ("\ufb05", "st"), ("\ufb06", "st")),
    "k": (("\u212a", "k"),),
    "f": (("\ufb00", "ff"), ("\ufb01", "fi"), ("\ufb02", "fl"), ("\ufb03", "ffi"), ("\ufb04", "ffl")),
    ";": (("\u037e", ";"),),
    "`": (("\u1fef", "`"),),
}


def is_device_name(name: str) -> bool:
    """Whether Windows takes `name` (`CON`, `nul.md`, `aux.txt`, `COM1`) for a device."""
    return _DEVICE_NAME.fullmatch(name.split(".", 1)[0].rstrip(" ")) is not None


def invisible_char(text: str) -> str | None:
    """The first character of `text` that shows nothing or turns text around (a format character:
    zero-width space, bidi control, BOM, soft hyphen; a blank letter such as U+3164), or None.
    A joiner between two characters that are not ASCII (an emoji sequence, an Indic or Persian
    word) is allowed: it is what makes them one."""
    at = invisible_at(text)
    return None if at is None else text[at]


def invisible_at(text: str) -> int | None:
    """Where `invisible_char` is in `text`, or None."""
    if text.isascii():
        return None
    return next((at for at in range(len(text)) if _shows_nothing(text, at)), None)


def _shows_nothing(text: str, at: int) -> bool:
    char = text[at]
    if char in _BLANK_LETTERS:
        return True
    if char.isascii() or unicodedata.category(char) != "Cf":
        return False
    if char in _JOINERS and 0 < at < len(text) - 1:
        before, after = text[at - 1], text[at + 1]
        return before.isascii() or after.isascii() or before.isspace() or after.isspace()
    return True


def _without_invisible(text: str) -> str:
    if text.isascii():
        return text
    return "".join(char for at, char in enumerate(text) if not _shows_nothing(text, at))


def _continues(text: str, at: int) -> bool:
    """Whether the character at `at` belongs to the one before it as a person sees it, so that a
    name must not be cut between them."""
    if at <= 0 or at >= len(text):
        return False
    char, before = text[at], text[at - 1]
    if before in _JOINERS or char in _JOINERS or ord(char) in _EMOJI_MODIFIERS:
        return True
    if unicodedata.category(char) in ("Mn", "Mc", "Me"):  # combining marks, variation selectors, keycaps
        return True
    if ord(char) in _REGIONAL_INDICATORS and ord(before) in _REGIONAL_INDICATORS:
        # Flags are pairs: cutting after an odd run of indicators leaves half a flag.
        run = at
        while run > 0 and ord(text[run - 1]) in _REGIONAL_INDICATORS:
            run -= 1
        return (at - run) % 2 == 1
    return False


def fit_name(text: str, max_bytes: int, max_chars: int | None = None) -> str:
    """`text` cut to at most `max_bytes` bytes of UTF-8 (and `max_chars` characters), between two
    characters as a person sees them: never inside a character, a combining sequence, an emoji
    sequence or a flag (a whole cluster longer than the limit is dropped whole)."""
    limit = len(text) if max_chars is None else min(len(text), max_chars)
    if limit == len(text) and len(text.encode("utf-8", "surrogatepass")) <= max_bytes:
        return text
    used = end = 0
    while end < limit:
        size = len(text[end].encode("utf-8", "surrogatepass"))
        if used + size > max_bytes:
            break
        used += size
        end += 1
    while end > 0 and _continues(text, end):
        end -= 1
    return text[:end]


def safe_component(text: str, max_bytes: int = MAX_NAME_BYTES - len(".md"),
                   max_chars: int = MAX_STEM_CHARS) -> str:
    """`text` as a file-name component that works on every OS: NFC, spaces to `_`, characters
    Windows or Obsidian refuse dropped, invisible and bidi characters dropped, Unicode letters
    (Japanese included) kept, cut to `max_bytes` bytes and `max_chars` characters between
    whole characters (`fit_name`), and never a Windows device name (`CON` becomes `CON_`, `aux.txt` `aux_.txt`)."""
    text = _without_invisible(unicodedata.normalize("NFC", text)).strip()
    text = re.sub(r"[\\/:*?\"<>|#^\[\]\x00-\x1f\x7f]", "", text)
    text = re.sub(r"\s+", "_", text)
    text = re.sub(r"_+", "_", text).strip("._-")
    text = fit_name(text, max_bytes - 1, max_chars).rstrip("._-")  # 1 byte kept for a device name's `_`
    if text and is_device_name(text):
        base, dot, rest = text.partition(".")
        text = f"{base}_{dot}{rest}"
    return text


# An agent's name as keys give it (`brain keys add NAME`), the working-memory folder and a private
# card's file name take it: letters, digits, '.', '_', '-', safe in any file name as it is.
AGENT_NAME = compile_pattern(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def card_filename(card_type: str, title: str, private_agent: str | None = None) -> str:
    """`<Type>_<title as a safe component>.md`, at most MAX_NAME_BYTES bytes. A card private to
    an agent (`private_agent`, as `private_to` reads it) is `<Type>_<title> (<agent>).md`.

    Why the agent's part: a shared card's name was numbered (`_2`) when another agent's private
    card held it, so any agent could test which titles others keep privately. A name
    `card_filename` makes for a shared card never holds a space (`safe_component` turns each
    into `_`), so a shared card's name never meets a private card's, and two agents' private
    names differ by their parts (names of keys, used whole, differ in more than case:
    `keys.add_key`)."""
    prefix = f"{card_type.capitalize()}_"
    owned = "" if private_agent is None else private_name_part(private_agent)
    stem = safe_component(title, MAX_NAME_BYTES - len(prefix.encode("utf-8")) - len(owned.encode("utf-8")) - len(".md"))
    if not stem:
        raise UsageError(f"title {title!r} has no usable characters; give a title with letters or digits")
    return f"{prefix}{stem}{owned}.md"


def private_name_part(agent: str) -> str:
    """What ends the stem of a file private to `agent` (a card, a search miss's candidate): ` (<agent>)`,
    the agent's name whole when it is a name keys give (every agent a server admits), else made
    safe (an agent the CLI or stdio MCP names: the vault's own person's processes, with no one to
    hide from). No name `safe_component` makes holds the space it begins with."""
    return f" ({agent if AGENT_NAME.match(agent) else safe_component(agent, 64) or 'agent'})"


def private_to(scope: str | None, agent: str | None) -> str | None:
    """The agent a card with this `scope` and `agent` is private to (`scope_admits`), or None."""
    return agent if agent and (scope or "").strip().lower() == "agent" else None


def names_taken(folder: Path) -> set[str]:
    """The `name_key` of every entry of `folder` (none when it does not exist). One listing of
    the folder: ~2-5 ms at 10,000 cards, most of it the system's `listdir`."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    # An ASCII name's key is its lower case: 0.1 us a name, not 0.4.
    return {name.lower() if name.isascii() else name_key(name) for name in names}


NUMBER_BYTES = 12   # the longest `_N` `unique_path` is taken to add: `_` and 11 digits (no folder holds that many)


def numbered_forms_start(filename: str) -> str:
    """The start of `filename`'s stem (NFC, as `unique_path` takes it) that the file and every
    numbered form `unique_path` may make of it begin with: so every name sharing a key
    (`name_key`) with one of them begins with its ASCII start in some case (`Index.names_like`
    looks them up by it). The whole stem when it fits MAX_NAME_BYTES with the extension and the
    longest number (NUMBER_BYTES): a numbered form is cut only near the limit. Else the stem as
    the longest number's cut leaves it (`fit_name`, the cut `unique_path` makes), of which every
    shorter number's cut is a longer start."""
    if not filename.isascii():
        filename = unicodedata.normalize("NFC", filename)
    stem, dot, ext = filename.rpartition(".")
    if not dot:
        stem, ext = filename, ""
    ext_size = len((dot + ext).encode("utf-8", "surrogatepass"))
    if len(stem.encode("utf-8", "surrogatepass")) + ext_size + NUMBER_BYTES <= MAX_NAME_BYTES:
        return stem
    # Trigger: a stem within NUMBER_BYTES of the limit. Why: its numbered forms are cut to
    # fit (`unique_path`), so a name colliding with one need not hold the stem's end; and the
    # cut is between whole characters, so a stem ending in a cluster longer than 12 characters
    # (a base letter and its combining marks, emoji joined by ZWJs) loses the whole cluster:
    # "the stem less 12 characters" was then not where the numbered forms began, and a name
    # differing from one only in case was not offered. Outcome: the start the deepest cut leaves.
    return fit_name(stem, MAX_NAME_BYTES - NUMBER_BYTES - ext_size)


def unique_path(folder: Path, filename: str, taken=(), known=None) -> Path:
    """`folder/filename`, or with `_2`, `_3`, ... before the extension when that name is taken:
    on disk (also by a name that differs only in case or Unicode normalisation, which is the same
    file on macOS and Windows), or in `taken` (paths an operation has planned but not yet
    written). A numbered name is cut to fit MAX_NAME_BYTES too.

    `known`: the names in `folder` that may share a key with `filename` or its numbered forms,
    when the caller has them already (`create` asks the search index: `Index.names_like`), so the
    folder is not listed (a listing of 10,000 cards cost 4-36 ms of each `create`). A name that
    exists exactly is found on disk either way."""
    filename = unicodedata.normalize("NFC", filename)
    stem, dot, ext = filename.rpartition(".")
    if not dot:
        stem, ext = filename, ""
    ext = dot + ext
    on_disk = names_taken(folder) if known is None else {name_key(name) for name in known}
    keys = on_disk | {name_key(Path(p).name) for p in taken if Path(p).parent == folder}
    target = folder / filename
    number = 2
    # lexists: a dangling or looping link is taken too, never replaced
    while name_key(target.name) in keys or os.path.lexists(target) or target in taken:
        suffix = f"_{number}"
        room = MAX_NAME_BYTES - len(suffix) - len(ext.encode("utf-8"))
        target = folder / f"{fit_name(stem, room)}{suffix}{ext}"
        number += 1
    return target


def inside_vault(vault: Vault, path: Path) -> Path:
    """`path` with symlinks resolved, or UnsafePath when it lies outside the vault. A symlink
    loop resolves to itself (it is refused when read, as NotACard)."""
    real = os.path.realpath(path)  # not Path.resolve: it raises RuntimeError on a loop
    if not _within(real, vault.real_root):
        raise UnsafePath(f"{path} leads outside the vault {vault.root}; use a path inside it")
    return Path(real)


def check_relative(vault: Vault, ref: str) -> Path:
    """Turn a user-given card path into an absolute path inside the vault, refusing escapes."""
    if "\x00" in ref:
        raise UnsafePath("path contains a NUL byte; give a vault-relative path like Playbooks/X.md")
    given = Path(ref)
    if given.is_absolute():
        return inside_vault(vault, given)
    if ".." in given.parts:
        raise UnsafePath(f"{ref}: '..' is not allowed in card paths; use a vault-relative path like Playbooks/X.md")
    return inside_vault(vault, vault.root / given)


# ---------------------------------------------------------------------------- cards

@valueclass
class Card:
    """One parsed Markdown card. `meta` is the frontmatter exactly as parsed."""

    vault: Vault
    path: Path
    text: str
    meta: dict[str, Any]
    body: str
    mtime_ns: int = 0   # the stamps of the file as read (`fstat` of the open file, before reading)
    size: int = 0
    inode: int = 0
    ctime_ns: int = 0   # when the file arrived or last changed here (0: not read from disk)
    # Where `text`'s frontmatter keys stand (`frontmatter.parse`'s layout), kept by the readers
    # that parsed `text` into this `meta` for a writer (`card_from_text`, `load_card(layout=)`)
    # for `updated_text`; None otherwise (a card built from other parts, from the index, or read
    # among many), which `updated_text` parses again.
    _layout: Any = None

    @property
    def rel(self) -> str:
        return self.vault.rel(self.path)

    @property
    def id(self) -> str | None:
        value = self.meta.get("id")
        return str(value) if value not in (None, "") else None

    @property
    def title(self) -> str:
        value = self.meta.get("title")
        if isinstance(value, (str, int, float)) and str(value).strip():
            return str(value).strip()
        for line in self.body.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        return self.path.stem

    def text_field(self, key: str) -> str:
        value = self.meta.get(key)
        return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""

    @property
    def type(self) -> str:
        return self.text_field("type").lower()

    @property
    def domain(self) -> str:
        return self.text_field("domain").lower()

    @property
    def status(self) -> str:
        return self.text_field("status").lower() or "active"

    @property
    def tags(self) -> list[str]:
        return as_list(self.meta.get("tags"))

    @property
    def aliases(self) -> list[str]:
        """The card's `aliases` (Obsidian's other names for the note), each whole: a list of
        names, or one name."""
        value = self.meta.get("aliases")
        items = value if isinstance(value, list) else [value]
        return [str(item).strip() for item in items
                if isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip()]

    @property
    def stored_confidence(self) -> float | None:
        value = self.meta.get("confidence")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return min(1.0, max(0.0, float(value)))


def as_list(value: Any) -> list[str]:
    """A list-ish frontmatter value (YAML list, or a comma/space separated string) as strings."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip().lstrip("#") for v in value if v is not None and str(v).strip()]
    return [part.strip().lstrip("#") for part in re.split(r"[,\s]+", str(value)) if part.strip()]


def _not_a_card(rel: str, what: str) -> NotACard:
    """NotACard for `rel`, whose message reads `<rel> is <what>`; `.problem` is `what` alone,
    for listings that name the file already (`skipped <rel>: <what>`)."""
    exc = NotACard(f"{rel} is {what}", path=rel)
    exc.problem = what
    return exc


def symlink_alias(vault: Vault, rel: str, other: str) -> tuple[str, str] | None:
    """(link, target) when one of two card paths is a symlink to the other's file (the same card
    under two names: both hold its id), else None.

    Trigger: a duplicate id. Why: the fix for a copy, "delete the `id:` line of the one that is a
    copy", deletes it from the one file both names show. Outcome: callers name the link and say
    to delete it instead."""
    first, second = vault.root / rel, vault.root / other
    try:
        if not os.path.samefile(first, second):
            return None
    except OSError:
        return None
    if os.path.islink(first):
        return rel, other
    if os.path.islink(second):
        return other, rel
    return None


def problem_of(exc: BrainError) -> str:
    """What is wrong with a skipped file, without its path (the listing shows the path once)."""
    if isinstance(exc, BadFrontmatter):
        return f"bad frontmatter: {exc.problem}"
    return getattr(exc, "problem", None) or exc.message


_KINDS = ((stat_kind.S_ISDIR, "a directory, not a card; give the path of a card in it, or rename it so its name "
                              "does not end in .md"),
          (stat_kind.S_ISFIFO, "a named pipe (FIFO), not a regular file: only regular files are cards; "
                               "move it out of the card folders"),
          (stat_kind.S_ISCHR, "a character device, not a regular file: only regular files are cards; "
                              "move it out of the card folders"),
          (stat_kind.S_ISBLK, "a block device, not a regular file: only regular files are cards; "
                              "move it out of the card folders"),
          (stat_kind.S_ISSOCK, "a socket, not a regular file: only regular files are cards; "
                               "move it out of the card folders"))


def _unreadable(exc: OSError, rel: str) -> OSError | BrainError:
    """What an `open` failure means for a card: gone (FileNotFoundError, as it was: callers skip
    a file deleted since it was listed), not a card, or an operating-system problem."""
    if exc.errno == errno.ENOENT:
        return exc
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return _not_a_card(rel, "a symlink loop (too many levels of symbolic links); fix or delete the link")
    if exc.errno == errno.ENXIO:
        return _not_a_card(rel, "a socket or device, not a regular file: only regular files are cards; "
                                "move it out of the card folders")
    return io_problem(exc, "read", rel)


def _open_card(vault: Vault | None, path: Path, rel: str) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file at `path`, and its stamps, without blocking.

    With a vault, a last component that is a symlink is followed only once its target is known
    to be inside the vault. The type is checked on the open file (`fstat`), so a FIFO or device
    swapped in after a check is still refused; a FIFO opened with O_NONBLOCK does not wait.
    """
    try:
        fd = os.open(path, _READ_FLAGS | (os.O_NOFOLLOW if vault is not None else 0))
    except OSError as exc:
        if vault is None or exc.errno not in (errno.ELOOP, errno.EMLINK):
            raise _unreadable(exc, rel) from exc
        # A symlink (O_NOFOLLOW refuses it) or a loop: follow it only to a place in the vault.
        real = os.path.realpath(path)
        if not _within(real, vault.real_root):
            error = UnsafePath(f"{path} leads outside the vault {vault.root}; use a path inside it", path=rel)
            error.problem = f"a symlink leading outside the vault (to {real}); delete it or point it inside the vault"
            raise error from exc
        try:
            fd = os.open(real, _READ_FLAGS | os.O_NOFOLLOW)
        except FileNotFoundError as missing:
            raise _not_a_card(rel, f"a symlink to a missing file ({real}); fix or delete the link") from missing
        except OSError as again:
            raise _unreadable(again, rel) from again
    try:
        st = os.fstat(fd)
        if not stat_kind.S_ISREG(st.st_mode):
            kind = next((what for test, what in _KINDS if test(st.st_mode)), "not a regular file")
            raise _not_a_card(rel, kind)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_open(fd: int, st: os.stat_result, rel: str, limit: int = MAX_CARD_BYTES) -> bytes:
    """At most `limit` + 1 bytes of the open file (it may grow while read, and /proc-like files
    report size 0; a file already over MAX_CARD_BYTES is not read at all), then closes it."""
    try:
        if st.st_size > MAX_CARD_BYTES and limit == MAX_CARD_BYTES:
            raise _not_a_card(rel, f"{st.st_size} bytes, over the {MAX_CARD_BYTES}-byte card limit; split it")
        parts, total = [], 0
        want = min(st.st_size, limit) + 1
        while total <= limit:
            asked = min(want, limit + 1 - total)
            try:
                chunk = os.read(fd, asked)
            except OSError as exc:
                raise _unreadable(exc, rel) from exc
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if len(chunk) < asked and total >= st.st_size > 0:
                # A regular file (`_open_card` checked) read short of what was asked, holding all
                # the bytes `fstat` said it had: its end. Another read would only say so again
                # (a candidate's card, ~12 a server create). A file of size 0 (/proc-like) or one
                # shorter than said (truncated meanwhile) reads on to the empty read.
                break
            want = 1 << 16
        return b"".join(parts)
    finally:
        os.close(fd)


def _read_card_file(vault: Vault | None, path: Path, rel: str) -> tuple[str, os.stat_result]:
    fd, st = _open_card(vault, path, rel)
    data = _read_open(fd, st, rel)
    if len(data) > MAX_CARD_BYTES:
        raise _not_a_card(rel, f"over {MAX_CARD_BYTES} bytes, the card limit; split it")
    if b"\x00" in data:
        raise _not_a_card(rel, "a binary file, not a Markdown card; move it out of the card folders")
    try:
        return data.decode("utf-8"), st
    except UnicodeDecodeError as exc:
        raise _not_a_card(rel, f"not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from exc


def current_bytes(vault: Vault, path: Path) -> bytes | None:
    """The bytes of the regular file at `path` (None when there is none), for a writer about to
    replace it; anything else there (a FIFO, a device, a link out of the vault) is refused as
    NotACard / UnsafePath, never read and never written over."""
    rel = vault.rel(path)
    try:
        fd, st = _open_card(vault, path, rel)
    except FileNotFoundError:
        return None
    return _read_open(fd, st, rel)


def read_text(path: Path, rel: str) -> str:
    """The file's text, or NotACard when it is not a regular file, binary, not UTF-8 or too
    large (never blocks: see `_open_card`). The caller has checked that `path` is in the vault."""
    return _read_card_file(None, path, rel)[0]


def _printable_name(path: Path | str) -> str | None:
    """None when the name is UTF-8 (the usual case); else the name with its odd bytes shown."""
    name = str(path)
    if name.isascii():
        return None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return None


def read_card_text(vault: Vault, path: Path) -> tuple[str, os.stat_result]:
    """The text of the card file at `path` and its stamps, unparsed, through the one safe reader
    (see `load_card`, which parses what this returns): for a reader that also shows a card whose
    frontmatter cannot be parsed (`history`)."""
    return _read_named_card(vault, path, vault.rel(path))


def _read_named_card(vault: Vault, path: Path, rel: str) -> tuple[str, os.stat_result]:
    odd = _printable_name(rel)
    if odd is not None:
        raise _not_a_card(odd, "named with bytes that are not UTF-8; rename it")
    vault.check_inside(rel.partition("/")[0])  # its top folder leads outside the vault: UnsafeVault
    return _read_card_file(vault, path, rel)


def load_card(vault: Vault, path: Path, parsed: Card | None = None, layout: bool = False) -> Card:
    """Read and parse one card; raises BadFrontmatter, NotACard or UnsafePath (never rewrites
    anything, never blocks, never follows a link out of the vault), IOProblem when the system
    refuses the read, FileNotFoundError when it is gone.

    `layout`: the card keeps its parse's layout (`Card._layout`, ~0.8 KB a card: not kept for
    the many cards a read holds), for a writer that rewrites it (`updated_text`).
    `parsed`: the card as this process read it from `path` a moment ago, with its layout.
    Trigger: a write that read the card before the write lock and reads it again under it
    (`record` by id). Why: parsing the same text again held the lock ~0.2 ms. Outcome: when the
    file holds that very text, that parse is taken, with the file's stamps as read now; any
    other text is parsed."""
    rel = vault.rel(path)
    text, st = _read_named_card(vault, path, rel)
    if parsed is not None and parsed._layout is not None and parsed.path == path and parsed.text == text:
        return Card(vault, path, text, parsed.meta, parsed.body, st.st_mtime_ns, st.st_size, st.st_ino,
                    st.st_ctime_ns, parsed._layout)
    doc = frontmatter.parse(text, source=rel)
    return Card(vault, path, text, doc.data, doc.body, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns,
                doc._layout if layout or parsed is not None else None)


def load_compared_card(vault: Vault, path: Path) -> Card:
    """`load_card` for a card read only to be compared with (a create's candidates): served as
    `load_kept_card` serves a search's hits (kept while the file's device, inode, size, mtime and
    ctime are unchanged: `_KeptCards`), its frontmatter parsed once per process for the same text
    and path when it is read (`_parsed_card_text`). A server's create compared ~10 cards, mostly
    the same ones create after create, and read each (an open, an `fstat`, reads, a close, the
    decoding) where a kept one costs an `lstat`. A card a create rewrites is read again under the
    write lock first (`cards._as_it_is_now`); the card's `meta` is its own copy of the mapping."""
    return _load_kept(vault, path, _compared_parse)


def load_kept_card(vault: Vault, path: Path) -> Card:
    """`load_card` for a card read to be shown (a search's hits): the same card, the same
    refusals, with its text and parse kept by this process (`_KeptCards`) while the file is
    unchanged, so a server searching again and again does not read and parse the same hits for
    every request (~0.2 ms a card at 1,000 cards). The file is `lstat`-ed every time; what is kept
    is served only when its device, inode, size, mtime and ctime are all those of the file read,
    and a file is kept only once `config.settled` (which says why that bounds a stale answer).
    The card's `meta` is its own copy of the mapping."""
    return _load_kept(vault, path, lambda text, rel: frontmatter.parse(text, source=rel))


def _load_kept(vault: Vault, path: Path, parse: Callable[[str, str], Any]) -> Card:
    """`load_kept_card` and `load_compared_card`: the kept card while its stamps hold, else the
    file read and parsed by `parse(text, rel)` (and kept once settled)."""
    key = str(path)
    try:
        now_stamp = file_stamps(os.lstat(key))
    except OSError:
        now_stamp = None
    kept = _KEPT.get(key, now_stamp) if now_stamp is not None else None
    if kept is not None:
        rel = vault.rel(path)
        # The refusals `load_card` makes before it opens anything (an odd name, a top folder
        # that leads out of the vault) hold for a kept card too.
        odd = _printable_name(rel)
        if odd is not None:
            raise _not_a_card(odd, "named with bytes that are not UTF-8; rename it")
        vault.check_inside(rel.partition("/")[0])
        text, data, body_chars = kept
        _, inode, size, mtime_ns, ctime_ns = now_stamp
        body = text[len(text) - body_chars:]   # a parse's body is the text's end (not kept twice)
        return Card(vault, path, text, dict(data), body, mtime_ns, size, inode, ctime_ns)
    began = time.time_ns()
    rel = vault.rel(path)
    text, st = _read_named_card(vault, path, rel)
    doc = parse(text, rel)
    if settled(st, began) and text.endswith(doc.body):
        _KEPT.put(key, file_stamps(st), (text, doc.data, len(doc.body)))
    return Card(vault, path, text, dict(doc.data), doc.body, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


KEPT_CARDS = 512                # cards `load_kept_card` keeps in a process, least recently used out first
KEPT_CARD_CHARS = 2_000_000     # ... and the characters of their texts, at most (~2x that in memory)


class _KeptCards:
    """The texts and parses of the cards `load_kept_card` read, for one process, bounded by
    KEPT_CARDS cards and KEPT_CARD_CHARS characters (least recently used out first).

    Why a kept card is never served stale, and the bound: an entry is served only while the
    file's `config.file_stamps` (device, inode, size, mtime, ctime) are those the file had when
    it was opened (`fstat`, before it was read), and a file is kept only once `config.settled`
    (its ctime SETTLED_NS older than the moment its read began), so any later change shows;
    `settled` says what that does not cover. A symlinked card is never kept (its `lstat` is the
    link's, not the file's)."""

    def __init__(self) -> None:
        import threading
        from collections import OrderedDict

        self._entries: OrderedDict[str, tuple[tuple, tuple[str, dict, int]]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: str, stamp: tuple) -> tuple[str, dict, int] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] != stamp:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: str, stamp: tuple, value: tuple[str, dict, int]) -> None:
        size = len(value[0])
        if size > KEPT_CARD_CHARS:
            return
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (stamp, value)
            self._chars += size
            while len(self._entries) > KEPT_CARDS or self._chars > KEPT_CARD_CHARS:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        _, (text, _, _) = self._entries.pop(key)
        self._chars -= len(text)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def chars(self) -> int:
        return self._chars

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def _after_fork(self) -> None:
        import threading

        self._lock = threading.Lock()   # a thread of the parent may have held it at the fork


_KEPT = _KeptCards()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_KEPT._after_fork)


KEPT_PARSE_CHARS = 16_000   # a longer card's parse is made again each time (`_compared_parse`)


def _compared_parse(text: str, rel: str) -> frontmatter.Document:
    """`frontmatter.parse` of a compared card's text: kept by `_parsed_card_text` unless the text
    is longer than KEPT_PARSE_CHARS. Trigger: cards of up to 500,000 characters. Why: kept by the
    whole text, 512 of them could hold ~0.5 GB (the text and its body); a bound in entries is
    no bound in bytes. Outcome: at most 512 texts of KEPT_PARSE_CHARS (~16 MB of ASCII); a
    longer card, rare, pays its parse each time it is compared."""
    if len(text) > KEPT_PARSE_CHARS:
        return frontmatter.parse(text, source=rel)
    return _parsed_card_text(text, rel)


@functools.lru_cache(maxsize=512)
def _parsed_card_text(text: str, rel: str) -> frontmatter.Document:
    # Trigger: a long-lived process (`serve`, MCP) creating card after card. Why: each create
    # reads the ~10-30 cards most like it, the same ones again and again, and parsing their
    # frontmatter was ~1.5 ms of a create at 10,000 cards. Outcome: the parse is kept, keyed by
    # the whole text as read (a pure function of it and the name its errors cite), so what a
    # caller gets is what parsing the file now gives; a file that does not parse is not kept.
    written = _WRITTEN[0]
    if written is not None and written[0] is text:
        return written[1]   # the parse a writer made of this very text (`keep_written_parse`)
    return frontmatter.parse(text, source=rel)


# What `keep_written_parse` hands to `_parsed_card_text`: (the text, its parse). Taken only for
# that very text object, so another thread's read of an equal text, or two writers at once (the
# one slot taken by the other), parses as before: no lock needed.
_WRITTEN: list[tuple[str, frontmatter.Document] | None] = [None]


def keep_written_parse(card: Card) -> None:
    """Keep the parse of a card this process has just written (`card`: its text and the mapping
    and body parsed from it) among the kept parses of compared cards (`_parsed_card_text`), as
    the parse of that text at that path.

    Trigger: a create in a long-lived process (`serve`, MCP). Why: the next creates like it show
    it among their candidates, and the first one parsed the text this create had rendered and
    parsed (~half of `keyword._first_shown`, ~3% of a server's create). Outcome: its parse is
    kept; a reader still reads the file (`_load_kept`) and takes it only when the file holds that
    very text, so a person's save since, a new text, is parsed. A card without frontmatter or
    longer than KEPT_PARSE_CHARS is not kept, as when read."""
    text = card.text
    if not card.meta or len(text) > KEPT_PARSE_CHARS:
        return
    # A mapping parsed from a text is that text's frontmatter: it begins with the fence.
    document = frontmatter.Document(dict(card.meta), card.body, True, card._layout)
    _WRITTEN[0] = (text, document)
    try:
        _parsed_card_text(text, card.rel)
    finally:
        _WRITTEN[0] = None


def card_paths(vault: Vault, folders: tuple[str, ...] = ("Playbooks",)) -> list[Path]:
    """Every `.md` file under the given card folders, sorted, skipping hidden folders, folders
    that lead outside the vault and names that are not UTF-8 (no command can name them: `doctor`
    reports them)."""
    found: list[Path] = []
    for name in folders:
        base = vault.root / name
        if vault.leads_outside(name) is not None or not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and _printable_name(d) is None)
            for filename in filenames:
                if filename.endswith(".md") and not filename.startswith(".") and _printable_name(filename) is None:
                    found.append(Path(dirpath) / filename)
    found.sort()
    return found


@valueclass
class Problem:
    """A file the tool skipped: where, and what is wrong."""

    path: str
    line: int | None
    message: str

    def warning(self) -> str:
        """The one line every door shows for it beside a listing or a search's hits."""
        return f"skipped {self.path}{':' + str(self.line) if self.line else ''}: {self.message}"


def load_cards(vault: Vault, folders: tuple[str, ...] = ("Playbooks",)) -> tuple[list[Card], list[Problem]]:
    """All parseable cards in `folders`, and a Problem for each file that was skipped."""
    cards: list[Card] = []
    problems: list[Problem] = []
    for name in folders:
        outside = vault.leads_outside(name)
        if outside is not None:
            problems.append(Problem(f"{name}/", None, f"leads outside the vault (to {outside}); skipped: make "
                                                      "it a real folder inside the vault"))
    for path in card_paths(vault, folders):
        try:
            cards.append(load_card(vault, path))
        except BadFrontmatter as exc:
            # The consumers print `path:line: message`; exc.message already starts with both.
            problems.append(Problem(exc.source, exc.line, problem_of(exc)))
        except (NotACard, UnsafePath, IOProblem) as exc:
            problems.append(Problem(vault.rel(path), None, problem_of(exc)))
        except FileNotFoundError:
            continue  # deleted between listing and reading
    return cards, problems


def scan_card_path(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS) -> Path:
    """A card addressed by vault-relative path, file stem, or `id` (or a unique id prefix of 8+)."""
    ref = ref.strip()
    if not ref:
        raise UsageError("empty card reference; give a path, file stem or id")
    longest = max(len(os.fsencode(part)) for part in re.split(r"[/\\]", ref if ref.endswith(".md") else ref + ".md"))
    if longest > NAME_MAX:
        # Trigger: e.g. a 5,000-character name. Why: the system refuses such a path outright
        # (ENAMETOOLONG) and no card can have it. Outcome: bad usage, said plainly.
        raise UsageError(f"card reference has a name of {longest} bytes, over the {NAME_MAX}-byte limit "
                         "of file names; give a path, file stem or id")
    if _is_path_ref(ref):
        path = check_relative(vault, ref if ref.endswith(".md") else ref + ".md")
        if not os.path.lexists(path):  # lexists: a FIFO or a looping link is refused as NotACard when read
            variant = name_variant(path.parent, path.name, ref)
            if variant is None:
                raise card_not_found(ref)
            path = inside_vault(vault, variant)
        if not any(vault.folder(f) in path.parents for f in folders):
            raise UsageError(f"{ref} is not in {' or '.join(f + '/' for f in folders)}; only cards can be addressed")
        return path
    for folder in folders:
        candidate = vault.folder(folder) / f"{ref}.md"
        if os.path.lexists(candidate):
            return inside_vault(vault, candidate)
    for folder in folders:
        # Trigger: no file has the stem as typed. Why: `Café` typed in NFC names the note saved
        # in NFD (macOS), and `insight_kafka_lag` the card `Insight_Kafka_Lag` (macOS and
        # Windows open it so; Obsidian links so). Outcome: the one file of that name in any case
        # and normalisation.
        variant = name_variant(vault.folder(folder), f"{ref}.md", ref)
        if variant is not None:
            return inside_vault(vault, variant)
    found = _paths_with_id(vault, ref, folders)
    matches = [path for path, _ in found]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        # Trigger: one of the matches is an agent-private card. Why: the caller may be any
        # agent, and a private card's path (its title) must not reach another agent. Outcome:
        # private matches are counted, never named.
        named = [vault.rel(path) for path, private in found if not private]
        hidden = len(matches) - len(named)
        shown = ", ".join(named[:5]) + (f"{', ' if named else ''}{hidden} private" if hidden else "")
        ids = {_id_of(vault, path) for path in matches}
        if len(ids) == 1:
            # Trigger: one id held by several files (a card copied by hand). Why: "give the full
            # id" cannot help: it names them all. Outcome: the paths, and how to end the clash.
            shared = ref if hidden else ids.pop()   # a private card's whole id is not told either
            raise AmbiguousCard(f"{shared} is the id of {len(matches)} files ({shown}); give the path, and give "
                                "one of them an id of its own (`brain doctor` lists duplicate ids)")
        raise AmbiguousCard(f"{ref} matches {len(matches)} cards ({shown}); give the full id or path")
    raise card_not_found(ref)


def name_variant(folder: Path, name: str, ref: str) -> Path | None:
    """The entry of `folder` whose name differs from `name` only in case or Unicode normalisation
    (`name_key`), or None. Names that differ only so can exist side by side on Linux: then an
    NFC-equal one wins, and several others are AmbiguousCard (without their names: one may be
    another agent's private card)."""
    wanted = name_key(name)
    try:
        names = [entry for entry in os.listdir(folder) if name_key(entry) == wanted]
    except (FileNotFoundError, NotADirectoryError):
        return None
    same_text = [entry for entry in names if unicodedata.normalize("NFC", entry) == unicodedata.normalize("NFC", name)]
    if len(same_text) == 1 or len(names) == 1:
        return folder / (same_text or names)[0]
    if names:
        raise AmbiguousCard(f"{ref} matches {len(names)} file names that differ only in case; give the exact "
                            "stem or path (`brain list` shows them)")
    return None


def _is_path_ref(ref: str) -> bool:
    """Whether `ref` is tried as a path first (it has a `/` or `\\`, ends in `.md` or starts with `.`)."""
    return "/" in ref or "\\" in ref or ref.endswith(".md") or ref.startswith(".")


def surely_a_path(ref: str) -> bool:
    """Whether `ref` can only be a path: it ends in `.md`, starts with `.` or is absolute.
    Trigger: a reference with a `/` that no file answers to (`CI/CD pipeline timeout`). Why: a
    title may hold a slash, and "no card at CI/CD pipeline timeout" refused the card of that
    title. Outcome: such a reference is a path when the file exists, else a title or alias
    (`cards.card_path`); one that can only be a path never is (decision 0004, "A title with a
    slash")."""
    return ref.endswith(".md") or ref.startswith(".") or os.path.isabs(ref)


def card_not_found(ref: str) -> CardNotFound:
    """The error for a reference that names no card. Also raised for a card the caller may not
    see (another agent's private card), so the two cannot be told apart."""
    ref = ref.strip()
    if surely_a_path(ref):
        return CardNotFound(f"no card at {ref}; `brain list` shows the cards")
    return CardNotFound(f"no card with path, stem or id {ref!r}; `brain search` or `brain list` finds it")


def scope_admits(scope: str, owner: str, agent: str | None) -> bool:
    """Whether a card with this `scope` and owning `agent` (`owner`) may be shown to `agent`:
    `scope: agent` makes a card private to its own agent (docs/card-format.md); any other card is shared."""
    if scope.strip().lower() != "agent":
        return True
    return agent is not None and owner == agent


class _Anyone:
    def __repr__(self) -> str:
        return "ANYONE"


# The caller a write checks no scope for: the vault's own person at the command line, who may
# change any card. An agent door passes the agent's name instead (None or "": an anonymous agent).
ANYONE: Any = _Anyone()


def check_scope(card: Card, ref: str, agent: str | None) -> None:
    """Refuse, as if it did not exist, a card `agent` may not see (`ANYONE` may see every card)."""
    if agent is not ANYONE and not scope_admits(card.text_field("scope"), card.text_field("agent"), agent or None):
        raise card_not_found(ref)


_ID_LINE = compile_pattern(r"^id:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


_SCOPE_AGENT_LINE = compile_pattern(r"^scope:[ \t]*['\"]?agent['\"]?[ \t]*(?:#.*)?$", re.MULTILINE | re.IGNORECASE)
_AGENT_LINE = compile_pattern(r"^agent:[ \t]*['\"]?(.*?)['\"]?[ \t]*(?:#.*)?$", re.MULTILINE)


def private_owner_in_text(text: str) -> str | None:
    """The agent a card's text makes it private to, read leniently from its `scope:` and
    `agent:` lines (for cards whose frontmatter cannot be parsed, and for file heads): "" when
    `scope: agent` names no agent, None when the text is not private. A line like that in
    the body counts too: hiding a broken card wrongly is safe, showing it wrongly is not."""
    text = text.replace("\r\n", "\n")
    if not _SCOPE_AGENT_LINE.search(text):
        return None
    owner = _AGENT_LINE.search(text)
    return owner.group(1).strip() if owner else ""


def _id_of(vault: Vault, path: Path) -> str | None:
    """The id in a card file's head (None when it has none or cannot be read)."""
    try:
        fd, st = _open_card(vault, path, vault.rel(path))
        head = _read_open(fd, st, vault.rel(path), limit=4095).decode("utf-8", errors="replace")
    except (OSError, BrainError):
        return None
    match = _ID_LINE.search(head.replace("\r\n", "\n"))
    return match.group(1) if match else None


def looks_like_id(ref: str) -> bool:
    """Whether `ref` could be a card's id (letters and digits, then `.`, `_` or `-` too): the one
    test of every lookup by id."""
    return re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._-]*", ref) is not None


def _paths_with_id(vault: Vault, ref: str, folders: tuple[str, ...]) -> list[tuple[Path, bool]]:
    """The cards whose id is `ref` (or, when none is and `ref` has 8 characters or more, starts
    with it), each with whether its head marks it private. An id a person wrote (`id: 42`,
    `id: kafka-lag`) is found whatever its length; only a prefix needs 8."""
    if not looks_like_id(ref):
        return []
    exact: list[tuple[Path, bool]] = []
    prefixed: list[tuple[Path, bool]] = []
    for path in card_paths(vault, folders):
        try:  # only the head, through the safe reader: a FIFO or device here must not hang `get`
            fd, st = _open_card(vault, path, vault.rel(path))
            head = _read_open(fd, st, vault.rel(path), limit=4095).decode("utf-8", errors="replace")
        except (OSError, BrainError):
            continue
        match = _ID_LINE.search(head.replace("\r\n", "\n"))
        if not match:
            continue
        if match.group(1) == ref:
            exact.append((path, private_owner_in_text(head) is not None))
        elif len(ref) >= 8 and match.group(1).startswith(ref):
            prefixed.append((path, private_owner_in_text(head) is not None))
    return exact or prefixed


def updated_text(card: Card, changes: Mapping[str, Any], remove: tuple[str, ...] = ()) -> str:
    """The card's text with `changes` written into its frontmatter (only the named keys change).
    A card without an `id` gets one on its first write (docs/card-format.md), so hand-written notes become
    addressable by id: `derived_id`, the same in every clone."""
    if card.id is None and "id" not in changes:
        changes = {"id": derived_id(card), **changes}
    # Trigger: a card whose reader kept the layout of the text it parsed (`Card._layout`). Why:
    # `frontmatter.update` parsed that text again to find its keys (~0.2 ms a card; a record did
    # it under the write lock). Outcome: that parse (its `meta`, which nothing changes, and its
    # layout) is the one rewritten.
    parsed = None if card._layout is None else frontmatter.Document(card.meta, card.body, True, card._layout)
    return frontmatter.update(card.text, changes, remove, source=card.rel, parsed=parsed)


DELETED = ".brain/deleted"  # where removed cards are kept, so git sees a rename (see journal.py)


def derived_id(card: Card) -> str:
    """The id a note that has none gets at its first write: the same in every clone of the vault.

    Derived from what every clone shares, the note's vault-relative path and its text as the
    first write finds it (NFC, line endings and a BOM left out, so a Windows checkout agrees);
    so two clones that each first write the same committed note give it one id, and feedback
    from both is feedback on one card. A clone where someone edited the note by hand before
    its first write derives another id (docs/decisions.md, "Sharing a vault through git")."""
    text = unicodedata.normalize("NFC", card.text.lstrip("\ufeff").replace("\r\n", "\n"))
    return stable_id(card.vault, "note", card.rel, text)


def stable_id(vault: Vault, kind: str, *parts: str) -> str:
    """A UUID-shaped id (version 8, RFC 9562) from a hash of `kind` and `parts`, for things every
    clone names alike (a note's path and text, a search miss's query). An id whose earlier
    holder was removed (its copy is in `.brain/deleted/`) is not given again: the next one
    in the same sequence is, which every clone with the same files picks too."""
    import hashlib  # only a first write or a new candidate pays its import

    seed = "\0".join((kind, *(unicodedata.normalize("NFC", part) for part in parts)))
    for generation in range(1, 1000):
        raw = bytearray(hashlib.sha256(f"{seed}\0{generation}".encode("utf-8")).digest()[:16])
        raw[6] = (raw[6] & 0x0F) | 0x80
        raw[8] = (raw[8] & 0x3F) | 0x80
        h = raw.hex()
        made = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        if not any(os.path.lexists(vault.root / DELETED / folder / f"{made}.md") for folder in CARD_FOLDERS):
            return made
    return new_id()  # pragma: no cover - a thousand removed holders of one name


def card_from_text(vault: Vault, path: Path, text: str) -> Card:
    """The card that `text`, written at `path`, is (for a writer that has just written it)."""
    doc = frontmatter.parse(text, source=vault.rel(path))
    return Card(vault, path, text, doc.data, doc.body, _layout=doc._layout)
