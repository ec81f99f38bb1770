"""Agents' keys: identities for the doors that serve many agents (`brain serve`, its /mcp).

Promises:
- The keys file lives outside the vault (a vault is shared through git; a key is not): the path
  is `$BRAIN_KEYS_FILE`, else `[http] keys_file` of the vault's config, else
  `$XDG_CONFIG_HOME/external-brain/keys.toml` (`~/.config/...`). A keys file inside the vault is
  refused with the fix named.
- Only a hash of each token is stored (SHA-256 of a 256-bit random token: the token cannot be
  guessed, so a slow password hash would buy nothing and cost every request tens of
  milliseconds). `add_key` returns the token once; nothing can show it again.
- The file is TOML (`[keys."NAME"]` with `sha256` and `created`), written whole, atomically, with
  mode 0600, under a lock beside it, so two `brain keys` runs never lose each other's change.
- An agent's name is its identity: a key named `alice` acts as agent `alice` (sees global
  memories and alice's own, writes as alice). One key per name; `revoke` then `add` rotates it.
  `owner` is no agent's name: it is the identity of the server's own key.
- Two agents' names never differ only in case (`Alice`, `alice`): on a case-blind file system (macOS,
  Windows) they would share one working-memory folder and one private file name. `add` refuses such a
  name; of such names already in a file (written by hand or by an earlier version), the key added first
  admits its agent and the others admit nobody (`refused_keys`), as a key named `owner` does.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import secrets
from pathlib import Path

from ..errors import Conflict, CardNotFound, ConfigError, UsageError
from ..vault.valueclass import valueclass
from ..vault.storage import AGENT_NAME, Vault, atomic_write, iso, now

KEYS_ENV = "BRAIN_KEYS_FILE"
TOKEN_PREFIX = "ebk_"
# The identity name of the server's own key (`access.Identity.name`): sessions and jobs are matched
# by it, so an agent of that name would be taken for the owner there. No agent may be called so.
OWNER_NAME = "owner"
HEADER = ("# External Brain agent keys: the SHA-256 of each token, never the token itself.\n"
          "# Managed by `brain keys add NAME | list | revoke NAME`; a key named NAME acts as agent NAME.\n")


@valueclass(frozen=True)
class KeyInfo:
    name: str
    created: str
    fingerprint: str     # the first 12 hex digits of the hash: tells keys apart in `list`, reveals nothing

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "created": self.created, "fingerprint": self.fingerprint}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def keys_path(vault: Vault | None) -> Path:
    """Where the keys file is (see the module docstring); refused inside `vault`."""
    given = os.environ.get(KEYS_ENV, "").strip()
    source = f"${KEYS_ENV}"
    if not given and vault is not None and vault.settings.http.keys_file:
        given, source = vault.settings.http.keys_file, "[http] keys_file"
    if given:
        path = Path(os.path.expanduser(given))
        if not path.is_absolute():
            path = (vault.root if vault is not None and source != f"${KEYS_ENV}" else Path.cwd()) / path
    else:
        base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
        path = Path(base) / "external-brain" / "keys.toml"
    path = Path(os.path.abspath(path))
    if vault is not None:
        root = Path(os.path.realpath(vault.root))
        real = Path(os.path.realpath(path))
        if real == root or root in real.parents:
            raise ConfigError(f"the keys file {path} ({source}) is inside the vault, which is shared through git; "
                              "put it outside, e.g. ~/.config/external-brain/keys.toml")
    return path


def check_agent_name(name: str) -> str:
    if not AGENT_NAME.match(name):
        raise UsageError(f"bad agent name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', starting "
                         "with a letter or digit")
    if name == OWNER_NAME:
        raise UsageError(f"agent name {name!r} is the server's own key's identity; give the agent another name")
    return name


def read_keys(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (sha256 hex, created) of every key in the file; a missing file has none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the keys file {path}: {exc.strerror}") from None
    import tomllib

    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not a keys file: {exc}; fix it or move it away and add the keys again") from None
    table = raw.get("keys", {})
    keys: dict[str, tuple[str, str]] = {}
    for name, entry in table.items() if isinstance(table, dict) else ():
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not AGENT_NAME.match(name) or not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ConfigError(f"{path}: key {name!r} is not a name with a `sha256` of 64 hex digits; fix it or "
                              "revoke it with `brain keys revoke`")
        keys[name] = (digest, str(entry.get("created", "")))
    return keys


def _render(keys: dict[str, tuple[str, str]]) -> str:
    lines = [HEADER]
    for name in sorted(keys):
        digest, created = keys[name]
        lines.append(f'\n[keys."{name}"]\nsha256 = "{digest}"\ncreated = "{created}"\n')
    return "".join(lines)


class _Locked:
    """The keys file's lock (`agents.keys.toml.lock` beside it), held while it is read and rewritten."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def _write(path: Path, keys: dict[str, tuple[str, str]]) -> None:
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))   # atomic_write keeps the mode it finds
    atomic_write(path, _render(keys).encode("utf-8"))
    os.chmod(path, 0o600)


def add_key(path: Path, name: str) -> tuple[KeyInfo, str]:
    """A new key for agent `name`: (what is stored, the token). The token is shown once."""
    check_agent_name(name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    digest = token_hash(token)
    with _Locked(path):
        keys = read_keys(path)
        if name in keys:
            raise Conflict(f"agent {name!r} already has a key; `brain keys revoke {name}` first to replace it")
        same = next((held for held in keys if held.lower() == name.lower()), None)
        if same is not None:
            raise Conflict(f"agent name {name!r} differs from agent {same!r} only in case: on a case-blind file "
                           "system both would share one working-memory folder; give the agent another name")
        keys[name] = (digest, iso(now()))
        _write(path, keys)
    return KeyInfo(name, keys[name][1], digest[:12]), token


def refused_keys(keys: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The keys of `keys` (as `read_keys` gives them) that admit nobody, each with why: one named
    `owner`, and of names that differ only in case every one but the first added (by `created`,
    then name). Such keys were written before `add` refused them; `revoke` still removes them."""
    refused = {}
    if OWNER_NAME in keys:
        refused[OWNER_NAME] = "`owner` is the server's own key's identity"
    first: dict[str, str] = {}
    for name in sorted(keys, key=lambda n: (keys[n][1], n)):
        kept = first.setdefault(name.lower(), name)
        if kept != name:
            refused[name] = (f"it differs from agent {kept!r}, added first, only in case, and both would "
                             "share one working-memory folder on a case-blind file system")
    return refused


def list_keys(path: Path) -> list[KeyInfo]:
    return [KeyInfo(name, created, digest[:12]) for name, (digest, created) in sorted(read_keys(path).items())]


def revoke_key(path: Path, name: str) -> KeyInfo:
    with _Locked(path):
        keys = read_keys(path)
        if name not in keys:
            raise CardNotFound(f"no key named {name!r} in {path}; `brain keys list` names them")
        digest, created = keys.pop(name)
        _write(path, keys)
    return KeyInfo(name, created, digest[:12])


class KeyRing:
    """The keys a running server accepts: the file re-read whenever it changes (a `revoke` takes
    effect on the next request, no restart), looked up by the hash of the token given."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._by_hash: dict[str, str] = {}
        import threading

        self._lock = threading.Lock()

    def agent_for(self, token: str) -> str | None:
        """The agent whose key `token` is, or None."""
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                # Trigger: a key `add` would refuse now, written before it did (named `owner`, or
                # a name differing from another only in case). Why: an `owner` agent is matched as
                # the owner by sessions and jobs; case-twins share a working-memory folder on a
                # case-blind file system. Outcome: it admits nobody (401); `revoke` removes it.
                keys = read_keys(self.path) if stamp is not None else {}
                refused = refused_keys(keys)
                self._by_hash = {digest: name for name, (digest, _) in keys.items() if name not in refused}
                self._stamp = stamp
            return self._by_hash.get(token_hash(token))
