"""Card operations: get, record, create and list (seed 003), one function each.

Each takes a `Vault` and plain values and returns a result object; the CLI, hooks and MCP all
call these. Writes hold the vault's write lock and commit their files and events as one
operation (`journal.writing`); reads log at most a `referenced` event and never touch a card file.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import frontmatter
from .confidence import (
    SIGNALS, References, action_for, decay_since, decayed, days_between, effective_confidence, ewa,
    stored_or_initial,
)
from .errors import UsageError
from .events import append_event, new_event
from .journal import Effect, fingerprint, undo_files, writing
from . import records  # (not `import record`: `record` is the feedback command below)
from .storage import (
    Card, Problem, Vault, card_filename, card_from_text, card_not_found, check_text, find_card_path, iso,
    load_card, load_cards, new_id, now, parse_time, scope_admits, unique_path, updated_text,
)

if TYPE_CHECKING:
    from .search import Filters

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 500_000
# A suggested link needs this much term-vector similarity besides a good BM25 score: on the
# example vault, suggestions under 0.10 were all unrelated and few under 0.15 were related
# (docs/decisions.md, "Create insights").
SUGGESTED_LINK_MIN_SIMILARITY = 0.15


# ---------------------------------------------------------------------------- validation

def check_setting(value: str, allowed: tuple[str, ...], noun: str, setting: str) -> str:
    """`value` lowercased when the vault's `setting` list allows it, else a usage error that
    lists the allowed values and says where to add one."""
    chosen = (value or "").strip().lower()
    if chosen not in allowed:
        raise UsageError(f"unknown {noun} {value!r}; use one of: {', '.join(allowed)} "
                         f"(or add it to `{setting}` in .brain/config.toml)")
    return chosen


def check_type(vault: Vault, card_type: str) -> str:
    return check_setting(card_type, vault.settings.types, "type", "types")


def check_domain(vault: Vault, domain: str) -> str:
    return check_setting(domain, vault.settings.domains, "domain", "domains")


def check_title(title: str) -> str:
    value = (title or "").strip()
    if not value:
        raise UsageError("empty title; give --title \"what the card is about\"")
    if "\n" in value or len(value) > MAX_TITLE_CHARS:
        raise UsageError(f"title must be one line of at most {MAX_TITLE_CHARS} characters")
    return check_text(value, "title", one_line=True)


def parse_tags(raw: str | list[str] | None) -> list[str]:
    """Tags from `"a, b c"` or a list: lowercase, `#` dropped, duplicates removed, order kept."""
    items = raw if isinstance(raw, list) else re.split(r"[,\s]+", raw or "")
    tags: list[str] = []
    for item in items:
        tag = item.strip().lstrip("#").lower()
        if not tag:
            continue
        check_text(tag, f"tag {tag!r}", name=True)
        if not re.fullmatch(r"[^\s,\[\]{}\"'#]+", tag):
            raise UsageError(f"bad tag {item!r}; tags are single words like ecs or react-native")
        if tag not in tags:
            tags.append(tag)
    return tags


def check_body(body: str) -> str:
    if len(body) > MAX_BODY_CHARS:
        raise UsageError(f"body is {len(body)} characters, over {MAX_BODY_CHARS}; split the card")
    return check_text(body, "body")


# ---------------------------------------------------------------------------- get

@records.record
class CardView:
    """A card as reads show it: the parsed card plus its effective confidence and action."""

    card: Card
    confidence: float
    stored_confidence: float
    last_referenced: str | None

    @property
    def action(self) -> str:
        return action_for(self.confidence)

    def summary(self) -> dict[str, Any]:
        card = self.card
        return {
            "path": card.rel, "id": card.id, "title": card.title, "type": card.type,
            "domain": card.domain, "tags": card.tags, "confidence": round(self.confidence, 4),
            "status": card.status, "updated": card.text_field("updated") or None,
            **_state_fields(card),
        }

    def details(self) -> dict[str, Any]:
        """Everything `get` shows: the summary, the action, and the whole frontmatter and body."""
        return {**self.summary(), "hash": fingerprint(self.card.text),
                "stored_confidence": round(self.stored_confidence, 4),
                "action": self.action, "last_referenced": self.last_referenced,
                "frontmatter": self.card.meta, "body": self.card.body}


def _state_fields(card: Card) -> dict[str, Any]:
    if card.type != "state":
        return {}
    from .kinds import state_fields

    return state_fields(card, now())


def view(card: Card, refs: References, moment=None) -> CardView:
    settings = card.vault.settings.confidence
    last = refs.last_referenced(card)
    return CardView(card, effective_confidence(card, refs, moment or now(), settings),
                    stored_or_initial(card, settings), iso(last) if last else None)


def get_card(vault: Vault, ref: str, agent: str | None = None) -> CardView:
    """The card and its confidence action; logs `referenced` (which also stops its decay).

    Another agent's private card (`scope: agent`) is not found, with the very error a missing
    card gives, so `get` never tells that it exists.
    """
    card = load_card(vault, find_card_path(vault, ref))
    if not scope_admits(card.text_field("scope"), card.text_field("agent"), agent):
        raise card_not_found(ref)
    shown = view(card, References(vault))
    append_event(vault, "referenced", card.rel, card.id)
    return shown


# ---------------------------------------------------------------------------- record

@records.record
class RecordResult:
    card: Card
    outcome: str
    before: float
    decayed: float
    after: float
    event: dict

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.card.rel, "id": self.card.id, "outcome": self.outcome, "before": self.before,
                "decayed": self.decayed, "after": self.after, "event": self.event["eid"]}


def record(vault: Vault, ref: str, outcome: str, note: str | None = None) -> RecordResult:
    """EWA update from feedback: decay the stored value to now, then apply the signal.

    The card is re-read, updated and written under its lock, and the event appended before the
    lock is released, so concurrent records never lose an update and the log replays exactly.
    """
    if outcome not in SIGNALS:
        raise UsageError(f"unknown outcome {outcome!r}; use `used` or `rejected`")
    if note is not None and len(note) > 2000:
        raise UsageError("note is over 2000 characters; keep it to a sentence")
    if note is not None:
        check_text(note, "note")
    path = find_card_path(vault, ref)
    params = vault.settings.confidence
    rel = vault.rel(path)
    from .index import Index  # the rewrite is passed on to the search index, when there is one
    from .search import card_fields

    with writing(vault) as writer:
        card = load_card(vault, path)
        since = decay_since(card, References(vault))  # the clock reads use, so record agrees with them
        stored = stored_or_initial(card, params)
        faded = decayed(stored, days_between(since, now()), params) if since else stored
        after = ewa(faded, SIGNALS[outcome], params.alpha)
        written = card_from_text(vault, path, updated_text(card, {"confidence": after}))
        event = new_event(outcome, rel, written.id, note=note, before=stored,
                          decayed=faded if faded != stored else None, after=after)

        index = Index.existing(vault, card_fields)
        try:
            before = index.stamps(rel) if index else None
            writer.commit([Effect(path, card.text, written.text)], [event])
            if index:
                # Only `confidence` changed, which the index does not hold (unless an id was added).
                index.wrote(rel, before, index.stamps(rel), written.text if written.id == card.id else None)
        finally:
            if index:
                index.close()
    return RecordResult(written, outcome, stored, faded, after, event)


# ---------------------------------------------------------------------------- create

@records.record
class CreateResult:
    card: Card | None
    created: bool
    insights: dict[str, list[dict[str, Any]]] = records.factory(dict)
    skipped_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        card = self.card
        return {"created": self.created, "path": card.rel if card else None, "id": card.id if card else None,
                "insights": self.insights, "skipped_reason": self.skipped_reason}


def content_hash(title: str, body: str) -> str:
    """Hash of the normalised content (case and whitespace folded) for exact-duplicate checks."""
    normal = re.sub(r"\s+", " ", f"{title}\n{body}".casefold()).strip()
    import hashlib  # 1.8 ms of start-up that only create pays

    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def title_from_body(body: str, width: int = 80) -> str:
    """A title for content that came without one (MCP `store_memory`, seed 000): the first `# `
    heading, else the first line with words, Markdown markers dropped, cut at a word near `width`."""
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    heading = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    # A section heading (`## Fix`) names a part, not the whole: prose comes before it.
    prose = [re.sub(r"^(?:[-*+>]|\d+[.)])\s*", "", line) for line in lines if not line.startswith("#")]
    text = heading or next((line for line in prose if re.search(r"\w", line)), "") or \
        next((line.lstrip("#").strip() for line in lines), "")
    text = " ".join(text.split())
    if len(text) > width:
        cut = text[:width]
        text = (cut.rsplit(" ", 1)[0] if " " in cut[width // 2:] else cut).rstrip(" ,.;:-")
    return text


def expand_body(body: str) -> str:
    """Shell callers pass `\\n` literally (seed 003's own example does); turn those into newlines
    when the body has no real newline."""
    if "\n" not in body and "\\n" in body:
        return body.replace("\\n", "\n")
    return body


def create_card(
    vault: Vault, *, card_type: str, domain: str, title: str, body: str = "", tags: list[str] | str = "",
    project: str | None = None, importance: int | None = None, scope: str | None = None,
    agent: str | None = None, no_duplicates: bool = False, extra: dict[str, Any] | None = None,
) -> CreateResult:
    """A new Playbooks card with id, confidence at the initial value and timestamps.

    Before writing, the card is compared with the existing ones: an `episode` that is an exact
    duplicate is skipped; a `fact` or `state` that closely matches an active one of the same
    domain and tags supersedes it (nothing is deleted); any other near duplicate is reported and
    created anyway unless `no_duplicates`.
    """
    card_type = check_type(vault, card_type)
    domain = check_domain(vault, domain)
    title = check_title(title)
    tags = parse_tags(tags)
    body = check_body(expand_body(body or ""))
    if importance is not None and not 1 <= importance <= 5:
        raise UsageError(f"--importance {importance} is out of range; give 1 to 5")
    if scope not in (None, "global", "agent"):
        raise UsageError(f"--scope {scope!r} is not allowed; use global or agent")
    if scope == "agent" and not agent:
        raise UsageError("--scope agent needs --agent NAME")
    if agent and not scope:
        scope = "agent"
    for what, value in (("--project", project), ("--agent", agent)):
        if value is not None:
            check_text(value, what, one_line=True)
    if not body.lstrip().startswith("# "):
        body = f"# {title}\n\n{body}".rstrip("\n") + "\n"
    elif not body.endswith("\n"):
        body += "\n"

    from .index import Index  # only the commands that use the search index import it
    from .search import card_fields, related

    vectors = None
    if vault.settings.embeddings.provider:
        from .semantic import card_vectors

        # Outside the write lock: the provider may take up to its timeout.
        vectors = card_vectors(vault, title, tags, body)
    with writing(vault) as writer:
        index = Index.open(vault, card_fields, sweep=None)
        try:
            # The cards most like the new one, through the search index: an exact duplicate
            # shares the title, so it ranks at the top of this title-and-tags query.
            candidates = related(index, f"{title} {' '.join(tags)}", agent)
            if vectors is not None:
                candidates = _with_vector_candidates(vault, vectors, candidates, agent)
            insights = _insights(vault, candidates, card_type, domain, title, body, tags, vectors)
            if card_type == "episode":
                digest = content_hash(title, body)
                for _, card in candidates:
                    if card.type == "episode" and content_hash(card.title, card.body) == digest:
                        return CreateResult(card, False, insights, f"exact duplicate of {card.rel}")
            if no_duplicates and insights["potential_duplicates"]:
                dup = insights["potential_duplicates"][0]
                return CreateResult(None, False, insights,
                                    f"near duplicate of {dup['path']} (similarity {dup['similarity']}); "
                                    "edit that card instead, or drop --no-duplicates")
            moment = iso(now())
            card_id = new_id()
            meta: dict[str, Any] = {
                "id": card_id, "title": title, "type": card_type, "domain": domain, "tags": tags,
                "confidence": vault.settings.confidence.initial, "created": moment, "updated": moment,
            }
            for key, value in (("project", project), ("importance", importance), ("scope", scope),
                               ("agent", agent)):
                if value is not None:
                    meta[key] = value
            superseded = [load_card(vault, vault.root / old["path"]) for old in insights.get("supersedes", [])]
            if superseded:
                meta["supersedes"] = superseded[0].id
                meta["valid_from"] = moment
            meta.update(extra or {})
            path = unique_path(vault.folder("Playbooks"), card_filename(card_type, title))
            rel = vault.rel(path)
            card = card_from_text(vault, path, frontmatter.render(
                meta, "\n" + body if not body.startswith("\n") else body))
            effects = [Effect(path, None, card.text)]
            events = [new_event("created", rel, card_id, type=card_type, domain=domain, title=title)]
            # Superseding an older fact or state is part of the same operation: both cards and
            # both events, or neither (SPEC 3).
            for old in superseded:
                marked = updated_text(old, {"status": "superseded", "valid_to": moment,
                                            "superseded_by": card_id, "updated": moment})
                effects.append(Effect(old.path, old.text, marked))
                events.append(new_event("superseded", old.rel, card_from_text(vault, old.path, marked).id,
                                        superseded_by=card_id, files=undo_files(vault, effects[-1:])))
            # The whole operation (the new card and what it superseded) is what undoing `created` reverses.
            events[0]["files"] = undo_files(vault, effects)
            before = index.stamps(rel)
            writer.commit(effects, events)
            if not superseded:  # write-through covers one card; with more, the next search relists
                index.wrote(rel, before, index.stamps(rel))
        finally:
            index.close()
    if vectors is not None:
        from .semantic import store_card_vector

        store_card_vector(vault, card, vectors.vector)  # so no catch-up embeds it again
    return CreateResult(card, True, insights)


def _with_vector_candidates(vault: Vault, vectors, candidates: list[tuple[float, Card]],
                            agent: str | None) -> list[tuple[float, Card]]:
    """The keyword candidates plus the cards nearest by vector (keyword score 0 when the
    keyword search did not rank them), each given its cosine in `vectors.near`."""
    from .errors import BrainError
    from .semantic import cosines_with

    known = {card.rel for _, card in candidates}
    out = list(candidates)
    for path in vectors.near:
        if path in known:
            continue
        try:
            card = load_card(vault, vault.root / path)
        except (OSError, BrainError):
            continue  # gone since it was embedded
        if scope_admits(card.text_field("scope"), card.text_field("agent"), agent):
            out.append((0.0, card))
    vectors.near.update(cosines_with(vault, vectors.vector, [c.rel for _, c in out if c.rel not in vectors.near]))
    return out


def _insights(vault: Vault, scored: list[tuple[float, Card]], card_type: str, domain: str, title: str,
              body: str, tags: list[str], vectors=None) -> dict[str, list[dict[str, Any]]]:
    """What a new card relates to: suggested links, duplicates, superseded facts, contradictions,
    and success after failure (a new card on a subject whose last feedback was `rejected`).

    With `vectors` (semantic.CardVectors: a provider is configured and answered), a candidate
    with a cached vector is judged by cosine: a link needs `link_similarity`, a duplicate the
    duplicate floor above it, and a contradiction is a similar title over content less similar
    than a link. Candidates without a vector, and superseding, keep the keyword rules."""
    from .analysis import similarity
    from .search import in_service

    settings = vault.settings
    text = f"{title}\n{' '.join(tags)}\n{body}"
    out: dict[str, list[dict[str, Any]]] = {
        "suggested_links": [], "potential_duplicates": [], "supersedes": [], "contradictions": [],
        "success_after_failure": [],
    }
    refs = None
    for score, card in scored:
        if not in_service(card.status):
            continue
        sim = round(similarity(text, f"{card.title}\n{' '.join(card.tags)}\n{card.body}"), 3)
        title_sim = similarity(title, card.title)
        cos = vectors.near.get(card.rel) if vectors is not None else None
        entry = {"path": card.rel, "id": card.id, "title": card.title, "similarity": sim}
        if cos is not None:
            entry["cosine"] = cos
        same_subject = card.domain == domain and (set(tags) & set(card.tags) or not tags)
        if card_type in ("fact", "state") and card.type == card_type and same_subject and (
                sim >= 0.6 or title_sim >= 0.8):
            out["supersedes"].append(entry)
            continue
        if sim >= settings.promote.duplicate_similarity or (cos is not None and cos >= vectors.duplicate_floor):
            out["potential_duplicates"].append({**entry, "suggestion": f"edit {card.rel} instead"})
            continue
        if title_sim >= 0.7 and (sim < 0.35 if cos is None else cos < vectors.link_floor):
            out["contradictions"].append({**entry, "reason": "same subject, different content: check which is right"})
        if cos is not None:
            # Trigger: the card has a vector. Why: cosine sees related cards that share no
            # word, and `link_similarity` is the documented floor. Outcome: linked by it alone.
            if cos >= vectors.link_floor:
                out["suggested_links"].append({**entry, "rel": "related"})
        elif score >= max(settings.search.min_score, 0.5) and sim >= SUGGESTED_LINK_MIN_SIMILARITY:
            out["suggested_links"].append({**entry, "rel": "related"})
        if sim >= 0.3 or (cos is not None and cos >= vectors.link_floor):
            refs = refs or References(vault)
            if refs.last_outcome(card) == "rejected":
                out["success_after_failure"].append(
                    {**entry, "reason": "its last feedback was `rejected`; this card may be the fix"})
    # The closest first (by cosine when there is one), at most three.
    out["suggested_links"] = sorted(out["suggested_links"], key=lambda e: -e.get("cosine", -2.0))[:3]
    return out


# ---------------------------------------------------------------------------- list

SORTS = ("confidence", "updated", "title")


@records.record
class ListResult:
    cards: list[CardView]
    problems: list[Problem]


def _moment_key(value: Any) -> tuple[int, float]:
    moment = parse_time(value)
    return (1, moment.timestamp()) if moment else (0, 0.0)


def list_cards(vault: Vault, filters: Filters | None = None, sort: str = "title",
               folders: tuple[str, ...] = ("Playbooks",)) -> ListResult:
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}; use one of: {', '.join(SORTS)}")
    from .search import Filters

    filters = filters or Filters(status="any")
    cards, problems = load_cards(vault, folders)
    refs = References(vault)
    moment = now()
    views = [view(c, refs, moment) for c in cards if filters.admits_card(c)]
    if sort == "confidence":
        views.sort(key=lambda v: (-v.confidence, v.card.title.casefold()))
    elif sort == "updated":
        # Trigger: `updated` written with different UTC offsets (clones in several time zones, hand
        # edits). Why: as text, 10:00+09:00 sorts after 05:00+00:00 though it is four hours earlier.
        # Outcome: newest first by the moment itself; a card without a readable `updated` goes last.
        views.sort(key=lambda v: _moment_key(v.card.meta.get("updated")), reverse=True)
    else:
        views.sort(key=lambda v: v.card.title.casefold())
    return ListResult(views, problems)
