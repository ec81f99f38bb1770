"""Working memory: short-lived key/value notes with a TTL (docs/card-format.md, Working memory).

Each entry is `WorkingMemory/<key>.md`, a Markdown file with `key`, `created`, `updated`,
`expires` and `ttl_days` in its frontmatter and the value as its body, so people can read it in
Obsidian too. `recall` and `context` purge expired entries as they read them (docs/card-format.md, Working memory); an
entry's expiry is decided by its `expires` timestamp alone.

An agent's own notes (`agent=NAME`: an agent's key on the served doors, or `--agent`) are
`WorkingMemory/agents/<NAME>/<key>.md`, with `agent: NAME` in their frontmatter: what one agent
is doing now is not another's business (docs/compatibility.md, Agents and scope). An agent writes and forgets
only its own notes; it reads its own and the shared ones (its own first under one key), never
another agent's. Without an agent, every call sees the shared notes only, as before.

A note saved for one Claude Code session (`session=ID`: the state `hook pre-compact` keeps) has
`session: ID` in its frontmatter, and is that session's working memory only (`split_by_session`,
decision 0022): `brief` and `context` for a session (the session-start hook, `--session`, MCP
`session`, HTTP `session_id`) show it to that session alone; asked without a session, they show
people's notes as working memory and every saved state apart, as another session's.
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
from .vault.valueclass import valueclass
from .writes import commit_operation
from .vault.storage import (
    AGENT_NAME, MAX_NAME_BYTES, Vault, check_text, current_bytes, is_device_name, iso, load_card, name_key, now,
    parse_time,
)

FOLDER = "WorkingMemory"
AGENTS = "agents"      # WorkingMemory/agents/<agent>/: each agent's own notes
MAX_KEY_CHARS = 100
_KEY = re.compile(r"^[^\s/\\:*?\"<>|#^\[\]\x00-\x1f.][^/\\:*?\"<>|#^\[\]\x00-\x1f]{0,%d}$" % (MAX_KEY_CHARS - 1))
MAX_BODY_CHARS = 100_000
MIN_TTL_DAYS = 1 / 1440  # one minute: a shorter TTL expires before anyone can recall it
MAX_TTL_DAYS = 36500


@valueclass
class Entry:
    key: str
    body: str
    created: str
    updated: str
    expires: str
    agent: str | None = None     # the agent whose own note it is; None: shared
    session: str | None = None   # the session it was saved for (`hook pre-compact`); None: anyone's

    def as_dict(self) -> dict:
        data = {"key": self.key, "body": self.body, "created": self.created,
                "updated": self.updated, "expires": self.expires}
        if self.agent:
            data["agent"] = self.agent
        if self.session:
            data["session"] = self.session
        return data


def check_key(key: str) -> str:
    """`key` in NFC when it can name an entry's file on every OS (docs/card-format.md, A card), else UsageError.
    `Café` typed in NFC or NFD is one key (they are the same text), and so are `Key` and `key`
    (see `_path`); a Windows device name, a character that shows nothing and a file name too
    long for the temporary name of a write are refused."""
    check_text(key, "working-memory key", name=True)
    if key != key.strip():
        # Trigger: `k\u3000` or ` k`. Why: stripping it silently stored the note under another
        # key than the one given. Outcome: refused, like every other character a key cannot hold.
        raise UsageError(f"working-memory key {key!r} starts or ends with a space; give the key without it")
    if len(key) > MAX_KEY_CHARS:
        # Trigger: a key of plain letters, only too long. Why: `_KEY` refused it with "use letters,
        # digits, ..." (and echoed all of it), naming everything but the problem. Outcome: its length.
        raise UsageError(f"working-memory key is {len(key)} characters, over {MAX_KEY_CHARS}; use a shorter key")
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


def _folder(vault: Vault, agent: str | None):
    """`WorkingMemory/`, or the agent's own folder in it."""
    folder = vault.folder(FOLDER)
    if not agent:
        return folder
    if not AGENT_NAME.match(agent):
        raise UsageError(f"agent {agent!r} cannot own working memory: an agent's name there is 1 to 64 letters, "
                         "digits, '.', '_' or '-' (it names a folder)")
    return folder / AGENTS / agent


def _path(vault: Vault, key: str, agent: str | None = None):
    """The file of entry `key`: `WorkingMemory/<key>.md` (or the agent's folder), or the existing
    file whose name differs from that only in case or Unicode normalisation (macOS and Windows take
    both for one file, so they are one key everywhere; the entry keeps the spelling it was first
    stored under)."""
    folder = _folder(vault, agent)
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
    # Whose note it is follows from its folder, the one thing every reader sees alike.
    owner = path.parent.name if path.parent.parent.name == AGENTS else None
    session = meta.get("session")
    return Entry(key, body.rstrip("\n"), str(meta.get("created", "")), str(meta.get("updated", "")),
                 str(meta.get("expires", "")), owner, str(session) if session else None)


def _expired(entry: Entry) -> bool:
    expires = parse_time(entry.expires)
    return expires is not None and expires <= now()


def remember(vault: Vault, key: str, body: str, ttl_days: float | None = None, agent: str | None = None,
             session: str | None = None) -> Entry:
    key = check_key(key)
    if len(body) > MAX_BODY_CHARS:
        raise UsageError(f"body is {len(body)} characters, over {MAX_BODY_CHARS}; store a summary")
    check_text(body, "body")
    ttl = vault.settings.working_memory_ttl_days if ttl_days is None else ttl_days
    if not MIN_TTL_DAYS <= ttl <= MAX_TTL_DAYS:  # also refuses NaN
        raise UsageError(f"--ttl {ttl_days} is out of range; give a number of days from 0.0007 (one minute) "
                         f"to {MAX_TTL_DAYS}")
    moment = now()
    folder = _folder(vault, agent)
    with writing(vault) as writer:
        path = _path(vault, key, agent)  # under the lock: two writers of `Key` and `key` find one file
        key = unicodedata.normalize("NFC", path.stem)  # the spelling the entry was first stored under
        previous = _read(vault, path)
        created = previous.created if previous and not _expired(previous) and previous.created else iso(moment)
        entry = Entry(key, body, created, iso(moment), iso(moment + timedelta(days=ttl)), agent or None,
                      session or None)
        meta = {"key": key, "created": entry.created, "updated": entry.updated,
                "expires": entry.expires, "ttl_days": ttl}
        if session:
            meta["session"] = session
        if agent:
            meta["agent"] = agent
            folder.mkdir(parents=True, exist_ok=True)
        commit_operation(writer, [Effect(path, current_bytes(vault, path), frontmatter.render(meta, f"\n{body}\n"))],
                      [new_event("remembered", key=key, expires=entry.expires, agent=agent or None)])
    return entry


def recall(vault: Vault, key: str, agent: str | None = None) -> Entry:
    """The note under `key`: the agent's own when it has one, else the shared one."""
    key = check_key(key)
    entry = None
    for owner in ((agent, None) if agent and AGENT_NAME.match(agent) else (None,)):
        path = _path(vault, key, owner)
        entry = _read(vault, path, strict=True)
        if entry is not None and _expired(entry):
            _purge(vault, path)
            entry = None
        if entry is not None:
            break
    if entry is None:
        raise CardNotFound(f"no working memory {key!r} (never set, forgotten or expired); `brain context` lists them")
    return entry


def forget(vault: Vault, key: str, agent: str | None = None) -> Entry:
    """Remove the note under `key`: an agent's own (an agent never removes a shared note)."""
    key = check_key(key)
    with writing(vault) as writer:
        path = _path(vault, key, agent)
        entry = _read(vault, path)
        if entry is None:
            raise CardNotFound(f"no working memory {key!r}{' of agent ' + repr(agent) if agent else ''}; "
                               "`brain context` lists them")
        commit_operation(writer, [Effect(path, current_bytes(vault, path), None)],
                      [new_event("forgotten", key=entry.key, agent=agent or None)])
    return entry


def _files(vault: Vault, agent: str | None) -> list:
    """The note files `agent` reads: the shared ones, and its own."""
    files = []
    # An agent whose name cannot name a folder has no notes of its own (only `remember` says why).
    for owner in ((None, agent) if agent and AGENT_NAME.match(agent) else (None,)):
        folder = _folder(vault, owner)
        files += sorted(folder.glob("*.md")) if folder.is_dir() else []
    return files


def split_by_session(entries: list[Entry], session: str | None) -> tuple[list[Entry], list[Entry]]:
    """(the asker's working memory, the saved states of other sessions), each in the order given.
    A note saved for no session (what people and agents `remember`) is everyone's; one saved for
    a session is that session's alone, so without a session (a CLI call, an MCP client or HTTP
    caller that names none) every saved state is another session's."""
    mine = [entry for entry in entries if entry.session in (None, session or None)]
    return mine, [entry for entry in entries if entry.session not in (None, session or None)]


def context(vault: Vault, agent: str | None = None,
            session: str | None = None) -> tuple[list[Entry], list[Entry], list[str]]:
    """Live entries newest first, split by `split_by_session` (the asker's working memory, other
    sessions' saved states), and the keys of expired entries purged by this call (the shared
    ones, and `agent`'s own)."""
    live: list[Entry] = []
    purged: list[str] = []
    for path in _files(vault, agent):
        entry = _read(vault, path)
        if entry is None:
            continue
        if _expired(entry):
            _purge(vault, path)
            purged.append(entry.key)
        else:
            live.append(entry)
    live.sort(key=lambda e: e.updated, reverse=True)
    return (*split_by_session(live, session), purged)


def live(vault: Vault, agent: str | None = None) -> list[Entry]:
    """Live entries, newest first, without purging the expired ones: for reads that must not
    change `WorkingMemory/` (`brief`, the hooks; docs/card-format.md). The shared ones, and `agent`'s own."""
    entries = [e for e in map(lambda p: _read(vault, p), _files(vault, agent)) if e and not _expired(e)]
    entries.sort(key=lambda e: e.updated, reverse=True)
    return entries


def _purge(vault: Vault, path) -> None:
    # Not logged (docs/compatibility.md, Working memory), but under the write lock: a concurrent
    # `remember` may have renewed the entry, so it is re-checked there.
    with writing(vault, settle=False):   # a read's purge: it settles nothing (docs/card-format.md)
        entry = _read(vault, path)
        if entry is not None and _expired(entry):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def counts(vault: Vault, agent: str | None = None) -> dict[str, int]:
    """What `stats`, `audit` and the web page say of working memory, without purging (they only
    read): `entries`, the live notes of all sessions; of them, as `split_by_session` tells them
    apart, `notes` (saved for no session: every session's working memory) and `saved_states`
    (each one session's, `hook pre-compact`), of `sessions` sessions; and `expired`, not yet purged.
    Trigger: saved states became session-scoped (decision 0022). Why: one number mixed a session's
    saved state with the notes every session sees. Outcome: the total named as all sessions',
    split (decision 0011, "Working memory counted by session").

    With `agent`, the notes that agent reads are counted: the shared ones and its own (`own`, of
    the live ones), as `context` and `brief` show them to it; never another agent's."""
    folder = vault.root / FOLDER  # one leading outside the vault is skipped (`doctor` says so)
    live: list[Entry] = []
    expired = 0
    skip = vault.leads_outside(FOLDER) is not None or not folder.is_dir()
    for path in _files(vault, agent) if not skip else ():
        entry = _read(vault, path)
        if entry is None:
            continue
        if _expired(entry):
            expired += 1
        else:
            live.append(entry)
    notes, saved = split_by_session(live, None)
    counted = {"entries": len(live), "expired": expired, "notes": len(notes), "saved_states": len(saved),
               "sessions": len({entry.session for entry in saved})}
    if agent:
        counted["own"] = sum(1 for entry in live if entry.agent == agent)
    return counted


def counts_text(counted: dict[str, int]) -> str:
    """`counts` in words, as `stats` and `audit` print it."""
    saved, sessions = counted["saved_states"], counted["sessions"]
    states = f"{saved} saved state{'' if saved == 1 else 's'}" + (
        f" of {sessions} session{'' if sessions == 1 else 's'}" if saved else "")
    own = f", {counted['own']} of the live ones the agent's own" if "own" in counted else ""
    return (f"{counted['entries']} live in all sessions ({counted['notes']} note{'' if counted['notes'] == 1 else 's'} "
            f"for every session, {states}), {counted['expired']} expired{own}")
