"""The vault on disk: where it is, its cards, and how they are written safely.

Promises:
- Every path a user gives is checked to stay inside the vault (no `../`, no absolute path or
  symlink leading out) before anything is read or written.
- Every write is atomic: a temporary file in the same folder, fsync, `os.replace`, so a process
  killed at any instant leaves the old file or the new one, never a mix.
- Every read-modify-write happens under an `fcntl` lock held in a `with` block, and a write
  changes only the frontmatter keys the caller names (see `frontmatter.update`).
This module knows nothing about search or the CLI.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import unicodedata
import zlib
from .records import record
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from . import frontmatter
from .config import DEFAULT_CONFIG_TOML, Settings, load_settings
from .errors import (
    AmbiguousCard, BadFrontmatter, CardNotFound, NotACard, UnsafePath, UsageError, VaultNotFound,
)

CARD_FOLDERS = ("Playbooks", "Inbox")
VAULT_FOLDERS = ("Playbooks", "Inbox", "WorkingMemory", "logs")
MAX_CARD_BYTES = 2_000_000  # a Markdown card larger than this is a mistake (or an attack)


# ---------------------------------------------------------------------------- time and ids

def now() -> datetime:
    """The current local time with its UTC offset, to the second (what cards and logs store)."""
    return datetime.now().astimezone().replace(microsecond=0)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def parse_time(value: Any) -> datetime | None:
    """A card or log timestamp as an aware datetime; None when absent or unreadable.

    People write `2026-11-21`, `2026-11-21 10:30` or full ISO 8601 with `Z`; a value without an
    offset is taken as local time.
    """
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(str(value).strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment


def new_id() -> str:
    """A random UUID4 string (built from os.urandom to keep `uuid` off the start-up path)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# ---------------------------------------------------------------------------- the vault

@record(frozen=True)
class Vault:
    root: Path

    @property
    def brain_dir(self) -> Path:
        return self.root / ".brain"

    @property
    def cache_dir(self) -> Path:
        return self.root / ".brain" / "cache"

    @property
    def log_path(self) -> Path:
        return self.root / "logs" / "events.jsonl"

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.brain_dir / "config.toml")

    def folder(self, name: str) -> Path:
        return self.root / name

    def rel(self, path: Path) -> str:
        """The vault-relative POSIX path of `path` (what cards, logs and output show)."""
        return path.relative_to(self.root).as_posix()


def resolve_vault(explicit: str | None = None, cwd: Path | None = None) -> Vault:
    """Find the vault: `--vault`, else `$BRAIN_VAULT`, else the nearest ancestor of the working
    directory holding `.brain/` or `Playbooks/`, else this checkout's own example vault."""
    given = explicit or os.environ.get("BRAIN_VAULT")
    if given:
        root = Path(given).expanduser()
        if not root.is_dir():
            raise VaultNotFound(f"vault {given} is not a directory; create it with `brain init {given}`")
        return Vault(root.resolve())
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".brain").is_dir() or (folder / "Playbooks").is_dir():
            return Vault(folder)
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "runtime" / "playbook_api.py").is_file() and (checkout / "Playbooks").is_dir():
        return Vault(checkout)
    raise VaultNotFound(
        f"no vault found in {start} or a parent directory; create one with `brain init PATH` "
        "or pass --vault PATH")


def init_vault(path: Path) -> tuple[Vault, list[str]]:
    """Create the vault layout at `path`; existing files are kept. Returns what was created."""
    root = path.expanduser()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{path} exists and is not a directory; choose another path")
    created: list[str] = []
    for name in (*VAULT_FOLDERS, ".brain"):
        folder = root / name
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            created.append(name + "/")
    vault = Vault(root.resolve())
    files = {
        ".brain/config.toml": DEFAULT_CONFIG_TOML,
        ".brain/.gitignore": "cache/\nlocks/\njournal*.json\n",
        "logs/.gitkeep": "",
        "WorkingMemory/.gitkeep": "",
        "Inbox/.gitkeep": "",
    }
    for rel, content in files.items():
        target = vault.root / rel
        if not target.exists():
            atomic_write(target, content)
            created.append(rel)
    attributes = vault.root / ".gitattributes"
    line = "logs/*.jsonl merge=union"
    existing = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    if line not in existing.splitlines():
        sep = "" if not existing or existing.endswith("\n") else "\n"
        atomic_write(attributes, f"{existing}{sep}{line}\n")
        created.append(".gitattributes")
    return vault, created


# ---------------------------------------------------------------------------- safe files

def atomic_write(path: Path, text: str | bytes, durable: bool = True) -> None:
    """Replace `path` with `text` atomically: temp file in the same folder, fsync, rename.

    The temporary name is unique per call (O_EXCL + random suffix, what `tempfile.mkstemp`
    does without its import cost), never a fixed `.tmp` that two writers would share.
    `durable=False` skips the fsyncs, for caches: still all-or-nothing, but an OS crash may
    lose the write.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    for _ in range(100):
        temp = folder / f".{path.name}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise OSError(f"cannot create a temporary file in {folder}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    if durable:
        _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the directory entry is flushed too.
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
    lock_dir = vault.brain_dir / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_dir / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def card_lock_name(rel: str) -> str:
    """The lock guarding one card, named by a checksum of its vault-relative path."""
    return f"card-{zlib.crc32(rel.encode('utf-8')):08x}"


def safe_component(text: str) -> str:
    """`text` as a file-name component: spaces to `_`, unsafe characters dropped, Unicode
    letters (Japanese included) kept."""
    text = unicodedata.normalize("NFC", text).strip()
    text = re.sub(r"[\\/:*?\"<>|#^\[\]\x00-\x1f\x7f]", "", text)
    text = re.sub(r"\s+", "_", text)
    text = re.sub(r"_+", "_", text).strip("._-")
    return text[:120].rstrip("._-")


def card_filename(card_type: str, title: str) -> str:
    stem = safe_component(title)
    if not stem:
        raise UsageError(f"title {title!r} has no usable characters; give a title with letters or digits")
    return f"{card_type.capitalize()}_{stem}.md"


def unique_path(folder: Path, filename: str) -> Path:
    """`folder/filename`, or with `_2`, `_3`, ... before `.md` when that name is taken."""
    target = folder / filename
    stem = filename[:-3]
    number = 2
    while target.exists():
        target = folder / f"{stem}_{number}.md"
        number += 1
    return target


def inside_vault(vault: Vault, path: Path) -> Path:
    """`path` with symlinks resolved, or UnsafePath when it lies outside the vault."""
    real = path.resolve()
    if real != vault.root and vault.root not in real.parents:
        raise UnsafePath(f"{path} leads outside the vault {vault.root}; use a path inside it")
    return real


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

@record
class Card:
    """One parsed Markdown card. `meta` is the frontmatter exactly as parsed."""

    vault: Vault
    path: Path
    text: str
    meta: dict[str, Any]
    body: str
    mtime_ns: int = 0
    ctime_ns: int = 0   # when the file arrived or last changed here (0: not read from disk)

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


def read_text(path: Path, rel: str) -> str:
    """The file's text, or NotACard when it is binary, not UTF-8 or too large."""
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise NotACard(f"{rel} is a directory, not a card") from exc
    if len(data) > MAX_CARD_BYTES:
        raise NotACard(f"{rel} is {len(data)} bytes, over the {MAX_CARD_BYTES}-byte card limit; split it")
    if b"\x00" in data:
        raise NotACard(f"{rel} is a binary file, not a Markdown card; move it out of the card folders")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotACard(f"{rel} is not UTF-8 text (byte {exc.start}); re-save it as UTF-8") from exc


def load_card(vault: Vault, path: Path) -> Card:
    """Read and parse one card; raises BadFrontmatter or NotACard (never rewrites anything)."""
    rel = vault.rel(path)
    stat = path.stat()
    text = read_text(path, rel)
    doc = frontmatter.parse(text, source=rel)
    return Card(vault, path, text, doc.data, doc.body, stat.st_mtime_ns, stat.st_ctime_ns)


def card_paths(vault: Vault, folders: tuple[str, ...] = ("Playbooks",)) -> list[Path]:
    """Every `.md` file under the given card folders, sorted, skipping hidden folders."""
    found: list[Path] = []
    for name in folders:
        base = vault.folder(name)
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for filename in filenames:
                if filename.endswith(".md") and not filename.startswith("."):
                    found.append(Path(dirpath) / filename)
    found.sort()
    return found


@record
class Problem:
    """A file the tool skipped: where, and what is wrong."""

    path: str
    line: int | None
    message: str


def load_cards(vault: Vault, folders: tuple[str, ...] = ("Playbooks",)) -> tuple[list[Card], list[Problem]]:
    """All parseable cards in `folders`, and a Problem for each file that was skipped."""
    cards: list[Card] = []
    problems: list[Problem] = []
    for path in card_paths(vault, folders):
        try:
            if path.is_symlink():
                inside_vault(vault, path)
            cards.append(load_card(vault, path))
        except BadFrontmatter as exc:
            # The consumers print `path:line: message`; exc.message already starts with both.
            problems.append(Problem(exc.source, exc.line, f"bad frontmatter: {exc.problem}"))
        except (NotACard, UnsafePath) as exc:
            problems.append(Problem(vault.rel(path) if not path.is_symlink() else str(path), None, exc.message))
        except FileNotFoundError:
            continue  # deleted between listing and reading
    return cards, problems


def find_card_path(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS) -> Path:
    """A card addressed by vault-relative path, file stem, or `id` (or a unique id prefix of 8+)."""
    ref = ref.strip()
    if not ref:
        raise UsageError("empty card reference; give a path, file stem or id")
    if _is_path_ref(ref):
        path = check_relative(vault, ref if ref.endswith(".md") else ref + ".md")
        if not path.is_file():
            raise card_not_found(ref)
        if not any(vault.folder(f) in path.parents for f in folders):
            raise UsageError(f"{ref} is not in {' or '.join(f + '/' for f in folders)}; only cards can be addressed")
        return path
    for folder in folders:
        candidate = vault.folder(folder) / f"{ref}.md"
        if candidate.is_file():
            return inside_vault(vault, candidate)
    matches = _paths_with_id(vault, ref, folders)
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(vault.rel(p) for p in matches[:5])
        raise AmbiguousCard(f"{ref} matches {len(matches)} cards ({shown}); give the full id or path")
    raise card_not_found(ref)


def _is_path_ref(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith(".md") or ref.startswith(".")


def card_not_found(ref: str) -> CardNotFound:
    """The error for a reference that names no card. Also raised for a card the caller may not
    see (another agent's private card), so the two cannot be told apart."""
    ref = ref.strip()
    if _is_path_ref(ref):
        return CardNotFound(f"no card at {ref}; `brain list` shows the cards")
    return CardNotFound(f"no card with path, stem or id {ref!r}; `brain search` or `brain list` finds it")


def scope_admits(scope: str, owner: str, agent: str | None) -> bool:
    """Whether a card with this `scope` and owning `agent` (`owner`) may be shown to `agent`:
    `scope: agent` makes a card private to its own agent (SPEC 3); any other card is shared."""
    if scope.strip().lower() != "agent":
        return True
    return agent is not None and owner == agent


_ID_LINE = re.compile(r"^id:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


def _paths_with_id(vault: Vault, ref: str, folders: tuple[str, ...]) -> list[Path]:
    if len(ref) < 8 or not re.fullmatch(r"[0-9A-Za-z-]+", ref):
        return []
    exact: list[Path] = []
    prefixed: list[Path] = []
    for path in card_paths(vault, folders):
        try:
            head = path.read_bytes()[:4096].decode("utf-8", errors="replace")
        except OSError:
            continue
        match = _ID_LINE.search(head.replace("\r\n", "\n"))
        if not match:
            continue
        if match.group(1) == ref:
            exact.append(path)
        elif match.group(1).startswith(ref):
            prefixed.append(path)
    return exact or prefixed


def resolve_card(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS) -> Card:
    return load_card(vault, find_card_path(vault, ref, folders))


def updated_text(card: Card, changes: Mapping[str, Any], remove: tuple[str, ...] = ()) -> str:
    """The card's text with `changes` written into its frontmatter (only the named keys change).
    A card without an `id` gets one on its first write (SPEC 3), so hand-written notes become
    addressable by id."""
    if card.id is None and "id" not in changes:
        changes = {"id": new_id(), **changes}
    return frontmatter.update(card.text, changes, remove, source=card.rel)


def card_from_text(vault: Vault, path: Path, text: str) -> Card:
    """The card that `text`, written at `path`, is (for a writer that has just written it)."""
    doc = frontmatter.parse(text, source=vault.rel(path))
    return Card(vault, path, text, doc.data, doc.body)


def rewrite_card(card: Card, changes: Mapping[str, Any], remove: tuple[str, ...] = ()) -> Card:
    """Write `changes` into the card's frontmatter atomically and return the card as written.
    The caller holds the card's lock and has just read `card` (unlogged writes only: logged
    ones go through `journal.Writer.commit`)."""
    new_text = updated_text(card, changes, remove)
    if new_text != card.text:
        atomic_write(card.path, new_text)
    return card_from_text(card.vault, card.path, new_text)


def modify_card(
    vault: Vault, path: Path, change: Callable[[Card], Mapping[str, Any]],
) -> tuple[Card, Card]:
    """Read-modify-write one card under its lock: `change(card)` returns the keys to set.
    Returns the card before and after."""
    with locked(vault, card_lock_name(vault.rel(path))):
        before = load_card(vault, path)
        return before, rewrite_card(before, change(before))
