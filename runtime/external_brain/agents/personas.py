"""Personas (docs/compatibility.md, Personas): named vaults, each fully isolated, and each persona's context document.

Promises:
- `[personas]` in a vault's `.brain/config.toml` maps a name to a vault path (relative to that
  vault's folder, `~` expanded). `persona_vault(vault, name)` is that vault; a name the table does
  not hold is UNKNOWN_PERSONA naming the known ones, never a silent fall back to another vault
  (a memory written under the wrong persona would be in the wrong life). A persona whose folder
  is not a vault is VAULT_NOT_FOUND naming `brain init` and the path (a door that serves others,
  HTTP, tells its client the persona, not the path: `http_api.told_to_client`).
- Each persona is a whole vault: its own cards, log, index, jobs and context. Nothing is shared.
- The persona context (the persona service's `persona_context.json`: user_info, persona_info,
  current_emotion, physical_state, mental_state, environment, relationship_status,
  last_conversation_time) is `.brain/persona.json` of the persona's vault: read with the seed's
  defaults for what it does not hold; updated by merging the fields given (an object field
  merges its own keys), under the vault's write lock, atomically, logged as `persona_updated`
  with each changed field's value before and after. Unknown fields and values of the wrong
  type are refused and change nothing.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from ..errors import BadFrontmatter, ConfigError, UnknownPersona, UsageError, VaultNotFound
from ..vault.events import new_event
from ..vault.journal import Effect, writing
from ..vault.kinds import check_moment
from ..vault.storage import Vault, check_text, current_bytes, is_vault
from ..writes import commit_operation

CONTEXT_FILE = "persona.json"
PERSON_FIELDS = ("name", "nickname", "preferred_address")
STATE_FIELDS = ("current_emotion", "physical_state", "mental_state", "environment", "relationship_status")
DEFAULT_CONTEXT: dict[str, Any] = {
    "user_info": {"name": "User", "nickname": "User", "preferred_address": "User"},
    "persona_info": {"name": "Assistant", "nickname": "AI", "preferred_address": "Assistant"},
    "current_emotion": "neutral",
    "physical_state": "normal",
    "mental_state": "calm",
    "environment": "unknown",
    "relationship_status": "normal",
    "last_conversation_time": None,
}
MAX_VALUE_CHARS = 2000


def persona_names(vault: Vault) -> list[str]:
    return [name for name, _ in vault.settings.personas]


def persona_vault(vault: Vault, name: str) -> Vault:
    """The vault of persona `name` in `vault`'s `[personas]`."""
    table = dict(vault.settings.personas)
    if name not in table:
        known = ", ".join(sorted(table)) or "none: add a [personas] section (name = \"vault path\")"
        # The config is named relative to the vault: this reaches HTTP callers, who have no business
        # knowing where the server keeps its vault.
        raise UnknownPersona(f"no persona {name!r} in .brain/config.toml [personas] "
                             f"(known: {known}); without one, the vault itself is used", persona=name)
    root = Path(os.path.expanduser(table[name]))
    if not root.is_absolute():
        root = vault.root / root
    root = Path(os.path.abspath(root))
    if not root.is_dir() or not is_vault(root):
        raise VaultNotFound(f"the vault of persona {name!r}, {root}, is not a vault; create it with "
                            f"`brain init {root}` or fix its path in .brain/config.toml [personas]", persona=name)
    return Vault(root)


def _path(vault: Vault) -> Path:
    return vault.brain_dir / CONTEXT_FILE


def _stored(vault: Vault) -> tuple[dict[str, Any], str | None]:
    path = _path(vault)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except UnicodeDecodeError:
        raise BadFrontmatter(str(path), 1, "not UTF-8 text; fix or delete the file") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadFrontmatter(str(path), getattr(exc, "lineno", 1), f"not JSON ({exc}); fix or delete the file") \
            from None
    if not isinstance(data, dict):
        raise BadFrontmatter(str(path), 1, "not a JSON object; fix or delete the file")
    return data, text


def read_context(vault: Vault) -> dict[str, Any]:
    """The persona context: the seed's defaults overlaid with what `.brain/persona.json` holds
    (fields of its own that a person added are kept and shown)."""
    stored, _ = _stored(vault)
    context = copy.deepcopy(DEFAULT_CONTEXT)
    for key, value in stored.items():
        if key in ("user_info", "persona_info") and isinstance(value, dict):
            context[key].update(value)
        else:
            context[key] = value
    return context


def _check_changes(changes: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(changes, dict) or not changes:
        raise UsageError("give at least one persona field to change: " + ", ".join(DEFAULT_CONTEXT))
    checked: dict[str, Any] = {}
    for key, value in changes.items():
        if key in ("user_info", "persona_info"):
            if not isinstance(value, dict) or not value:
                raise UsageError(f"{key} must be an object of {', '.join(PERSON_FIELDS)}", field=key)
            for inner, text in value.items():
                if inner not in PERSON_FIELDS:
                    raise UsageError(f"unknown field {key}.{inner}; known: {', '.join(PERSON_FIELDS)}",
                                     field=f"{key}.{inner}")
                checked.setdefault(key, {})[inner] = _text(text, f"{key}.{inner}")
        elif key in STATE_FIELDS:
            checked[key] = _text(value, key)
        elif key == "last_conversation_time":
            checked[key] = check_moment(_text(value, key), key)
        else:
            raise UsageError(f"unknown persona field {key!r}; known: {', '.join(DEFAULT_CONTEXT)}", field=key)
    return checked


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{field} must be a non-empty string", field=field)
    if len(value) > MAX_VALUE_CHARS:
        raise UsageError(f"{field} is {len(value)} characters, over {MAX_VALUE_CHARS}", field=field)
    check_text(value, field)
    return value


def update_context(vault: Vault, changes: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Merge `changes` into the persona context; (the context now, the fields that changed).
    Equal values write and log nothing."""
    checked = _check_changes(changes)
    with writing(vault) as writer:
        stored, text = _stored(vault)
        updated = copy.deepcopy(stored)
        changed: list[str] = []
        before: dict[str, Any] = {}
        after: dict[str, Any] = {}
        current = read_context(vault)
        for key, value in checked.items():
            if isinstance(value, dict):
                for inner, text_value in value.items():
                    if current[key].get(inner) != text_value:
                        name = f"{key}.{inner}"
                        changed.append(name)
                        before[name], after[name] = current[key].get(inner), text_value
                        slot = updated.get(key) if isinstance(updated.get(key), dict) else {}
                        updated[key] = {**slot, inner: text_value}
            elif current.get(key) != value:
                changed.append(key)
                before[key], after[key] = current.get(key), value
                updated[key] = value
        if changed:
            path = _path(vault)
            new_text = json.dumps(updated, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
            commit_operation(writer, [Effect(path, current_bytes(vault, path), new_text)],
                          [new_event("persona_updated", changed=changed, before=before, after=after)])
    return read_context(vault), changed


def check_persona_file(vault: Vault) -> None:
    """For `doctor`-like callers: ConfigError when the context file cannot be read."""
    try:
        _stored(vault)
    except BadFrontmatter as exc:
        raise ConfigError(exc.message) from None
