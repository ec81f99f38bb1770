"""Working memory: short-lived key/value notes with a TTL (seed 003).

Each entry is `WorkingMemory/<key>.md`, a Markdown file with `key`, `created`, `updated`,
`expires` and `ttl_days` in its frontmatter and the value as its body, so people can read it in
Obsidian too. `recall` and `context` purge expired entries as they read them (seed 003); an
entry's expiry is decided by its `expires` timestamp alone.
"""

from __future__ import annotations

import os
import re
import unicodedata
from datetime import timedelta

from .errors import BadFrontmatter, CardNotFound, IOProblem, NotACard, UnsafePath, UsageError
from .vault import frontmatter
from .vault.events import new_event
from .vault.journal import Effect, writing
from .vault.records import record
from .vault.storage import (
    MAX_NAME_BYTES, Vault, check_text, current_bytes, is_device_name, iso, load_card, name_key, now, parse_time,
)

FOLDER = "WorkingMemory"
_KEY = re.compile(r"^[^\s/\\:*?\"<>|#^\[\]\x00-\x1f.][^/\\:*?\"<>|#^\[\]\x00-\x1f]{0,99}$")
MAX_BODY_CHARS = 100_000
MIN_TTL_DAYS = 1 / 1440  # one minute: a shorter TTL expires before anyone can recall it
MAX_TTL_DAYS = 36500


@record
class Entry:
    key: str
    body: str
    created: str
    updated: str
    expires: str

    def as_dict(self) -> dict:
        return {"key": self.key, "body": self.body, "created": self.created,
                "updated": self.updated, "expires": self.expires}


def check_key(key: str) -> str:
    """`key` in NFC when it can name an entry's file on every OS (SPEC 7), else UsageError.
    `Café` typed in NFC or NFD is one key (they are the same text), and so are `Key` and `key`
    (see `_path`); a Windows device name, a character that shows nothing and a file name too
    long for the temporary name of a write are refused."""
    check_text(key, "working-memory key", name=True)
    if key != key.strip():
        # Trigger: `k\u3000` or ` k`. Why: stripping it silently stored the note under another
        # key than the one given. Outcome: refused, like every other character a key cannot hold.
        raise UsageError(f"working-memory key {key!r} starts or ends with a space; give the key without it")
    if not _KEY.match(key) or key.endswith("."):
        raise UsageError(
            f"bad working-memory key {key!r}; use letters, digits, '-' or '_' (no '/', no leading '.')")
    if is_device_name(key):
        # Trigger: `CON`, `nul`, `aux.txt`, `COM1`. Why: on Windows `CON.md` opens the console,
        # not a file, so a clone there cannot check the entry out. Outcome: refused.
        raise UsageError(f"working-memory key {key!r} is a device name on Windows (CON, PRN, AUX, NUL, COM1-9, "
                         "LPT1-9), which no file there can have; choose another key, e.g. "
                         f"{key.split('.')[0]}-notes")
    key = unicodedata.normalize("NFC", key)
    size = len(key.encode("utf-8")) + len(".md")
    if size > MAX_NAME_BYTES:
        raise UsageError(f"working-memory key {key!r} makes a file name of {size} bytes, over the "
                         f"{MAX_NAME_BYTES}-byte limit of names the vault writes; use a shorter key")
    return key


def _path(vault: Vault, key: str):
    """The file of entry `key`: `WorkingMemory/<key>.md`, or the existing file whose name differs
    from that only in case or Unicode normalisation (macOS and Windows take both for one file,
    so they are one key everywhere; the entry keeps the spelling it was first stored under)."""
    folder = vault.folder(FOLDER)
    exact = folder / f"{key}.md"
    if os.path.lexists(exact):
        return exact
    wanted = name_key(exact.name)
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return exact
    return next((folder / name for name in names if name_key(name) == wanted), exact)


def _read(vault: Vault, path, strict: bool = False) -> Entry | None:
    """The entry at `path`, or None when the file is missing. An entry that cannot be read (not a
    regular file, a link out of the vault, bad frontmatter) is None too, so listings skip it; with
    `strict` (one key asked for by name) its error is raised instead. Read by `load_card`, the
    one safe reader: it never blocks and never follows a link out of the vault."""
    try:
        card = load_card(vault, path)
    except FileNotFoundError:
        return None
    except (NotACard, BadFrontmatter, UnsafePath, IOProblem):
        if strict:
            raise
        return None
    meta = card.meta
    key = str(meta.get("key") or path.stem)
    body = card.body[1:] if card.body.startswith("\n") else card.body
    return Entry(key, body.rstrip("\n"), str(meta.get("created", "")), str(meta.get("updated", "")),
                 str(meta.get("expires", "")))


def _expired(entry: Entry) -> bool:
    expires = parse_time(entry.expires)
    return expires is not None and expires <= now()


def remember(vault: Vault, key: str, body: str, ttl_days: float | None = None) -> Entry:
    key = check_key(key)
    if len(body) > MAX_BODY_CHARS:
        raise UsageError(f"body is {len(body)} characters, over {MAX_BODY_CHARS}; store a summary")
    check_text(body, "body")
    ttl = vault.settings.working_memory_ttl_days if ttl_days is None else ttl_days
    if not MIN_TTL_DAYS <= ttl <= MAX_TTL_DAYS:  # also refuses NaN
        raise UsageError(f"--ttl {ttl_days} is out of range; give a number of days from 0.0007 (one minute) "
                         f"to {MAX_TTL_DAYS}")
    moment = now()
    with writing(vault) as writer:
        path = _path(vault, key)  # under the lock: two writers of `Key` and `key` find one file
        key = unicodedata.normalize("NFC", path.stem)  # the spelling the entry was first stored under
        previous = _read(vault, path)
        created = previous.created if previous and not _expired(previous) and previous.created else iso(moment)
        entry = Entry(key, body, created, iso(moment), iso(moment + timedelta(days=ttl)))
        meta = {"key": key, "created": entry.created, "updated": entry.updated,
                "expires": entry.expires, "ttl_days": ttl}
        writer.commit([Effect(path, current_bytes(vault, path), frontmatter.render(meta, f"\n{body}\n"))],
                      [new_event("remembered", key=key, expires=entry.expires)])
    return entry


def recall(vault: Vault, key: str) -> Entry:
    key = check_key(key)
    path = _path(vault, key)
    entry = _read(vault, path, strict=True)
    if entry is not None and _expired(entry):
        _purge(vault, path)
        entry = None
    if entry is None:
        raise CardNotFound(f"no working memory {key!r} (never set, forgotten or expired); `brain context` lists them")
    return entry


def forget(vault: Vault, key: str) -> Entry:
    key = check_key(key)
    with writing(vault) as writer:
        path = _path(vault, key)
        entry = _read(vault, path)
        if entry is None:
            raise CardNotFound(f"no working memory {key!r}; `brain context` lists them")
        writer.commit([Effect(path, current_bytes(vault, path), None)], [new_event("forgotten", key=entry.key)])
    return entry


def context(vault: Vault) -> tuple[list[Entry], list[str]]:
    """Live entries, newest first, and the keys of expired entries purged by this call."""
    folder = vault.folder(FOLDER)
    live: list[Entry] = []
    purged: list[str] = []
    if not folder.is_dir():
        return live, purged
    for path in sorted(folder.glob("*.md")):
        entry = _read(vault, path)
        if entry is None:
            continue
        if _expired(entry):
            _purge(vault, path)
            purged.append(entry.key)
        else:
            live.append(entry)
    live.sort(key=lambda e: e.updated, reverse=True)
    return live, purged


def live(vault: Vault) -> list[Entry]:
    """Live entries, newest first, without purging the expired ones: for reads that must not
    change `WorkingMemory/` (`brief`, the hooks; SPEC 3)."""
    folder = vault.folder(FOLDER)
    if not folder.is_dir():
        return []
    entries = [e for e in map(lambda p: _read(vault, p), sorted(folder.glob("*.md"))) if e and not _expired(e)]
    entries.sort(key=lambda e: e.updated, reverse=True)
    return entries


def _purge(vault: Vault, path) -> None:
    # Not logged (seed 003 lists no event for it), but under the write lock: a concurrent
    # `remember` may have renewed the entry, so it is re-checked there.
    with writing(vault, settle=False):   # a read's purge: it settles nothing (SPEC 3)
        entry = _read(vault, path)
        if entry is not None and _expired(entry):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def counts(vault: Vault) -> tuple[int, int]:
    """Live and expired entry counts, without purging (audit, doctor and stats only read)."""
    folder = vault.root / FOLDER  # one leading outside the vault is skipped (`doctor` says so)
    live = expired = 0
    skip = vault.leads_outside(FOLDER) is not None or not folder.is_dir()
    for path in sorted(folder.glob("*.md")) if not skip else ():
        entry = _read(vault, path)
        if entry is None:
            continue
        if _expired(entry):
            expired += 1
        else:
            live += 1
    return live, expired
