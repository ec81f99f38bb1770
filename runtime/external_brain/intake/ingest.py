"""Ingest (docs/compatibility.md, Ingest): raw text in, atomic fact / state / episode cards out,
upserted by kind. One operation behind `brain ingest` and `POST /v1/ingest`.

What it promises:
- `ingest_text(vault, text, ...)` splits the text into statements (`intake.statements.extract`, the
  documented rules; or a configured chat model, falling back to the rules with one warning;
  with a chat model configured, the text is redacted first and so is what the model returns),
  and upserts each as a card of its kind through create's own planning (`cards.plan_card`):
  a `fact` or `state` with the subject key of an active card of the same kind and scope
  supersedes it (the old card gets `status: superseded`, `valid_to`, `superseded_by`); an
  `episode` appends; an exact duplicate of an active card (or of an earlier statement of the
  same text) is skipped; trivial pieces are skipped with their reason.
- All cards of one ingest are written by one `Writer.commit`: an `ingested` event carrying
  every file's earlier text (`files`, what `undo` reverses) and the result, plus the per-card
  `created` / `superseded` events create logs. A kill at any instant is rolled forward by the
  next write; `undo` of the `ingested` event takes the whole ingest back.
- Scope defaults to global (docs/compatibility.md); `agent` alone names the sender, and only `scope="agent"`
  makes the cards private to it.
- An `idempotency_key` is kept in the `ingested` event and is the caller's own: the same key from
  the same actor (the event's `actor`: `agent:NAME` for an agent's key) with the same request writes
  nothing and returns the first result; with a different request it is a `Conflict`. Another
  caller's use of the key is no use of it: their request is a new one, told nothing of the other's.
- Bad input (empty or huge text, a bad scope, an unreadable `event_time`, metadata that is not
  a JSON object) is a `UsageError` and nothing is written. `dry_run` plans and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from ..cards import check_domain, check_new_card, load_card_for_write, plan_card
from ..errors import BrainError, Conflict, UsageError
from .statements import Statement, extract
from ..vault.events import actor, new_event
from ..vault.journal import Effect, undo_files, writing
from ..vault.valueclass import factory, valueclass
from ..vault.kinds import check_moment
from ..vault.storage import Vault, check_text, iso, now, parse_time, updated_text
from ..writes import commit_operation

MAX_TEXT_CHARS = 100_000
HISTORY_STEPS = 100      # how far back a late statement is placed along `supersedes`
MAX_FIELD_CHARS = 200
MAX_METADATA_CHARS = 10_000
INGEST_TAG = "ingested"
BULK_FILES = 16
CANDIDATES = 12   # cards compared with each statement
PREFERRED_DOMAIN = "general"


@valueclass
class IngestItem:
    statement: str
    kind: str | None
    action: str            # created | updated | skipped
    id: str | None
    reason: str
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"statement": self.statement, "kind": self.kind, "action": self.action, "id": self.id,
                "reason": self.reason}


@valueclass
class IngestResult:
    """What one ingest did (or, with `dry_run`, would do). `event_id` is the `ingested` event
    (None for a dry run); `replayed` is true when an idempotency key returned an earlier result."""

    items: list[IngestItem] = factory(list)
    warnings: list[str] = factory(list)
    event_id: str | None = None
    replayed: bool = False
    dry_run: bool = False

    def count(self, action: str) -> int:
        return sum(1 for item in self.items if item.action == action)

    @property
    def ids(self) -> list[str]:
        return [item.id for item in self.items if item.action in ("created", "updated") and item.id]

    def to_dict(self) -> dict[str, Any]:
        return {"created": self.count("created"), "updated": self.count("updated"),
                "skipped": self.count("skipped"), "ids": self.ids, "warnings": list(self.warnings),
                "items": [item.to_dict() for item in self.items]}

    @classmethod
    def from_logged(cls, event: dict[str, Any]) -> "IngestResult":
        logged = event.get("result") or {}
        items = [IngestItem(i.get("statement", ""), i.get("kind"), i.get("action", "skipped"), i.get("id"),
                            i.get("reason", ""), i.get("path")) for i in logged.get("items", [])]
        return cls(items, list(logged.get("warnings", [])), event.get("eid"), True)


def check_request(text: str, *, source: str | None = None, agent: str | None = None, scope: str | None = None,
                  event_time: str | datetime | None = None, metadata: dict[str, Any] | None = None,
                  idempotency_key: str | None = None) -> tuple:
    """The checks of an ingest's input, UsageError for the first that fails, with no vault and
    nothing written (an async ingest is refused at once, not later in its job): (text, scope,
    owner, moment, metadata) as `ingest_text` uses them."""
    text = _check_text(text)
    scope, owner = _check_scope(scope, agent)
    moment = _check_moment(event_time)
    for what, value in (("source", source), ("idempotency key", idempotency_key)):
        if value is not None:
            field = what.replace(" ", "_")
            if not isinstance(value, str) or not value.strip() or len(value) > MAX_FIELD_CHARS:
                raise UsageError(f"{what} must be one line of 1 to {MAX_FIELD_CHARS} characters", field=field)
            check_text(value, what, one_line=True, field=field)
    return text, scope, owner, moment, _check_metadata(metadata)


def ingest_text(vault: Vault, text: str, *, source: str | None = None, agent: str | None = None,
                scope: str | None = None, event_time: str | datetime | None = None,
                metadata: dict[str, Any] | None = None, idempotency_key: str | None = None,
                dry_run: bool = False) -> IngestResult:
    """Turn `text` into cards; see the module docstring."""
    text, scope, owner, moment, metadata = check_request(text, source=source, agent=agent, scope=scope,
                                                         event_time=event_time, metadata=metadata,
                                                         idempotency_key=idempotency_key)
    stated = moment if event_time is not None else None   # an event time the sender gave
    request = _request_hash(text, scope, owner)

    # A replay answers before the (possibly slow, remote) model is asked; the check is made again
    # under the write lock, where a concurrent request with the same key may have just finished.
    replay = _replay(vault, idempotency_key, request) if idempotency_key is not None and not dry_run else None
    if replay is not None:
        return replay
    warnings: list[str] = []
    statements = _statements(vault, text, moment, warnings)
    if dry_run:
        return _plan(vault, statements, scope, owner, source, moment, stated, warnings, dry_run=True)[0]
    with writing(vault) as writer:
        replay = _replay(vault, idempotency_key, request) if idempotency_key is not None else None
        if replay is not None:
            return replay
        result, effects, events = _plan(vault, statements, scope, owner, source, moment, stated, warnings)
        ingested = new_event(
            "ingested", None, None, source=source, scope=scope, agent=agent,
            event_time=iso(moment) if event_time is not None else None, metadata=metadata or None,
            idempotency_key=idempotency_key, request=request, chars=len(text),
            created=[i.id for i in result.items if i.action == "created"] or None,
            updated=[i.id for i in result.items if i.action == "updated"] or None,
            result={**result.to_dict(), "items": [{**i.to_dict(), "path": i.path} for i in result.items]},
            files=undo_files(vault, effects) or None)
        # A long text writes hundreds of cards: one os.sync() instead of two fsyncs per file (as
        # import does); each file is still replaced atomically and the journal holds the intent.
        commit_operation(writer, effects, [ingested, *events], sync_once=len(effects) > BULK_FILES)
        result.event_id = ingested["eid"]
    return result


# ---------------------------------------------------------------------------- checks

def _check_text(text: Any) -> str:
    if not isinstance(text, str):
        raise UsageError("text must be a string of the raw text to ingest", field="text")
    if len(text) > MAX_TEXT_CHARS:
        raise UsageError(f"text is {len(text)} characters, over {MAX_TEXT_CHARS}; ingest it in parts", field="text")
    check_text(text, "text", field="text")
    if not text.strip():
        raise UsageError("text is empty; give the raw text to ingest", field="text")
    return text


def _check_scope(scope: str | None, agent: str | None) -> tuple[str | None, str | None]:
    """The cards' scope and owning agent. docs/compatibility.md: scope defaults to global, and `agent` alone
    names the sender (logged in the event); only `scope="agent"` makes the memories private to it."""
    if scope not in (None, "global", "agent"):
        raise UsageError(f"scope {scope!r} is not allowed; use global or agent", field="scope")
    if agent is not None:
        if not isinstance(agent, str) or not agent.strip() or len(agent) > MAX_FIELD_CHARS:
            raise UsageError(f"agent must be one line of 1 to {MAX_FIELD_CHARS} characters", field="agent")
        check_text(agent, "agent", one_line=True, field="agent")
    if scope == "agent":
        if not agent:
            raise UsageError("scope agent needs an agent (agent_id / --agent NAME)", field="agent")
        return "agent", agent
    return scope, None


def _check_moment(value: str | datetime | None) -> datetime:
    if value is None:
        return now()
    if isinstance(value, datetime):
        return value if value.tzinfo else value.astimezone()
    if not isinstance(value, str):
        raise UsageError(f"event time {value!r} is not a time; give ISO 8601 like 2026-11-21 or 2026-11-21T10:30",
                         field="event_time")
    check_moment(value, "event time")   # readable, and inside the window every command computes with
    return parse_time(value)


def _check_metadata(metadata: Any) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise UsageError("metadata must be a JSON object, e.g. {\"conversation\": \"c-42\"}")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise UsageError("metadata must hold only JSON values (strings, numbers, lists, objects)") from None
    if len(encoded) > MAX_METADATA_CHARS:
        raise UsageError(f"metadata is {len(encoded)} characters as JSON, over {MAX_METADATA_CHARS}")
    return metadata


def _request_hash(text: str, scope: str | None, agent: str | None) -> str:
    """What makes two requests with one idempotency key the same: the text and where it goes."""
    data = json.dumps([text, scope, agent], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:32]


def _replay(vault: Vault, key: str, request: str) -> IngestResult | None:
    """The first result of an ingest with this key and request; Conflict for another request."""
    earlier = _earlier_ingest(vault, key)
    if earlier is None:
        return None
    if earlier.get("request") != request:
        raise Conflict(f"idempotency key {key!r} was used for a different request (event {earlier.get('eid')}); "
                       "send a new key for new text", idempotency_key=key, event=earlier.get("eid"))
    return IngestResult.from_logged(earlier)


def _earlier_ingest(vault: Vault, key: str) -> dict[str, Any] | None:
    """The logged `ingested` event with this idempotency key sent by this caller (`actor`), if
    any. Reads the log only when a key is given, and parses only the lines that hold it."""
    from ..vault.events import parse_lines

    try:
        data = vault.log_path.read_bytes()
    except FileNotFoundError:
        return None
    needle = b'"idempotency_key":' + json.dumps(key, ensure_ascii=False).encode("utf-8")
    if needle not in data:
        return None
    lines = b"\n".join(line for line in data.split(b"\n") if needle in line)
    caller = actor()
    for event in parse_lines(lines):
        # Trigger: the key was sent before, perhaps by another caller (agents choose their keys,
        # and an async job's `job:<id>` is in any agent's dump). Why: matched across callers, bob
        # reusing alice's key got her result, or a CONFLICT naming her event. Outcome: only the
        # caller's own ingests count (every event has carried its `actor` from the first version,
        # so keys logged before keep answering the caller that sent them).
        if event.get("event") == "ingested" and event.get("idempotency_key") == key and event.get("actor") == caller:
            return event
    return None


# ---------------------------------------------------------------------------- statements

def _statements(vault: Vault, text: str, moment: datetime, warnings: list[str]) -> list[Statement]:
    """The statements of `text`: from the configured chat model when there is one and it
    answers well, else (and then with one warning) from the rules."""
    settings = vault.settings.ingest
    if settings.provider:
        from .chat import extract_with_model
        from ..errors import ModelUnavailable
        from ..judging.redaction import redact_secrets

        # Trigger: a chat model is configured. Why: the text then leaves the machine, and what
        # comes back is the model's rewording, which nobody asked to keep as it is (README, "Secrets").
        # Outcome: the model is sent the text redacted, whatever it answers is redacted again,
        # and the rules' fallback works from the redacted text too.
        text = redact_secrets(text)
        try:
            return [Statement(redact_secrets(s.text), s.kind, redact_secrets(s.subject), s.reason)
                    for s in extract_with_model(settings, text, moment)]
        except ModelUnavailable as exc:
            warnings.append(f"{exc.message}; used the rules instead")
    return extract(text, moment)


# ---------------------------------------------------------------------------- upsert

def _plan(vault: Vault, statements: list[Statement], scope: str | None, agent: str | None, source: str | None,
          moment: datetime, stated: datetime | None, warnings: list[str], dry_run: bool = False):
    """Decide each statement's action and gather the effects and events of all of them.
    `stated`: the event time the sender gave, when the statements came to hold (else None)."""
    from ..search.index import Index
    from ..search.analysis import card_fields

    domain = _domain(vault)
    result = IngestResult(warnings=warnings, dry_run=dry_run)
    effects, events = [], []
    taken: set = set()
    # Trigger: two statements of one text on the same subject ("is at 14 ... is at 15 now").
    # Why: both would supersede the same card, or the first would stand beside the second.
    # Outcome: the last one is kept; the earlier ones are reported as skipped.
    # A statement repeated word for word is the same statement (skipped below), not a later one.
    first_of_text: dict[str, int] = {}
    for n, s in enumerate(statements):
        first_of_text.setdefault(f"{s.kind}\n{' '.join(s.text.casefold().split())}", n)
    last_of_subject = {(s.kind, s.subject): n for n, s in enumerate(statements) if s.kind and s.subject
                       and first_of_text[f"{s.kind}\n{' '.join(s.text.casefold().split())}"] == n}
    seen: dict[str, int] = {}
    index = Index.open(vault, card_fields, sweep=None)
    try:
        for number, statement in enumerate(statements):
            if statement.kind is None:
                result.items.append(IngestItem(statement.text, None, "skipped", None, statement.reason))
                continue
            key = f"{statement.kind}\n{' '.join(statement.text.casefold().split())}"
            if key in seen:
                result.items.append(IngestItem(statement.text, statement.kind, "skipped", None,
                                               f"repeats statement {seen[key] + 1} of this text"))
                continue
            seen[key] = number
            if statement.subject and last_of_subject[(statement.kind, statement.subject)] != number:
                result.items.append(IngestItem(statement.text, statement.kind, "skipped", None,
                                               "a later statement of this text sets the same subject"))
                continue
            item, planned = _upsert(vault, index, statement, domain, scope, agent, source, moment, stated, taken)
            result.items.append(item)
            if planned is not None:
                effects = _one_change_a_file(effects, planned.effects)
                # The `ingested` event carries every file's earlier text once, for `undo`;
                # the per-card events keep only what they say, not a second and third copy.
                events += [{k: v for k, v in event.items() if k != "files"} for event in planned.events]
                taken.add(planned.result.card.path)
    finally:
        index.close()
    return result, effects, events


def _one_change_a_file(effects: list[Effect], more: list[Effect]) -> list[Effect]:
    """`effects` followed by `more`, with one change of each file.

    Trigger: two statements of one ingest that each rewrite the same card (both judged to replace
    it: "The api-gateway service runs on Node 20." and "api-gateway is on Node 22 now."), each
    planned from the card's text on disk. Why: the operation named the file twice; the second
    change was compared with the text read (`journal._still_as_read`) and found the first one's:
    CONFLICT every time the text was sent (before that check: an event naming the file twice,
    which `undo` refused). Outcome: one change of the file, from its text before the ingest to the
    later statement's rewrite (the later statement wins, as it did when the second wrote over the
    first)."""
    at = {effect.path: n for n, effect in enumerate(effects)}
    out = list(effects)
    for effect in more:
        n = at.get(effect.path)
        if n is None:
            at[effect.path] = len(out)
            out.append(effect)
        else:
            out[n] = Effect(effect.path, out[n].before, effect.after)
    return out


def _upsert(vault: Vault, index, statement: Statement, domain: str, scope: str | None, agent: str | None,
            source: str | None, moment: datetime, stated: datetime | None, taken: set):
    from ..cards import SUBJECT_KINDS, same_subject_cards
    from ..search.keyword import related
    from ..judging.subjects import search_words

    title, body = _title_and_body(statement.text)
    tags = [INGEST_TAG]
    draft = check_new_card(vault, card_type=statement.kind, domain=domain, title=title, body=body, tags=tags,
                           scope=scope, agent=agent)
    # The cards most like this statement (the index, not a scan of every card): the exact
    # duplicate, if any, and the cards of the same subject are among them. Only a card of the
    # very same scope and owner is replaced: an agent's memory never hides a global one, nor the
    # reverse (`cards.same_subject_cards`, create's own judgement).
    candidates = related(index, f"{title} {search_words(statement.subject)}", agent, limit=CANDIDATES)
    replaced = same_subject_cards(vault, index, draft, statement.subject, candidates) \
        if statement.subject and statement.kind in SUBJECT_KINDS else []
    # When the statement came to hold: the date it names ("last week", 昨日), else the event
    # time the sender gave, else (None) now.
    told = stated or now()   # when it was told: the sender's event time, else now
    stated = statement.when or stated
    if replaced and statement.when is not None:
        began = parse_time(replaced[0].text_field("valid_from") or replaced[0].text_field("created"))
        if began is not None and stated < began <= told:
            # Trigger: a statement told after the card it replaces began, naming a time before it
            # ("I moved to Sapporo last month", told on the 21st, after "I live in Fukuoka", told
            # on the 4th). Why: the later telling is the person's latest word; kept as history, the
            # older telling would stay current and the move would be hidden. Outcome: it replaces
            # the card, from the moment that card began (a card never ends before it begins).
            stated = began
    extra: dict[str, Any] = {}
    if statement.subject:
        extra["subject"] = statement.subject
    if source:
        extra["source"] = source
    if statement.kind == "episode":
        extra["event_time"] = iso(stated or moment)
    # Trigger: an event time older than the start of the card it would replace (a statement that
    # arrives late: a backfill, a queue drained out of order). Why: superseding would end the
    # newer card at a moment before it began, and `--as-of` would show the older statement as
    # current. Outcome: the statement is kept as history, valid until the next card of its
    # subject began (found back along `supersedes`); an older card still valid at its moment
    # now ends there. The current card is left alone. At an equal moment the later ingest wins.
    late, cut = None, None
    if replaced and stated is not None:
        late, began, cut = _place_in_history(vault, replaced[0], stated)
        if late is not None:
            replaced = []
            extra.update(status="superseded", valid_to=began, superseded_by=late.id)
    plan = plan_card(vault, index, draft, extra=extra, supersede=replaced, skip_exact=True, taken=taken,
                     candidates=candidates, report=False, valid_from=stated)
    card = plan.result.card
    if not plan.result.created:
        return IngestItem(statement.text, statement.kind, "skipped", card.id if card else None,
                          plan.result.skipped_reason or "skipped", card.rel if card else None), None
    if cut is not None:
        plan.effects.append(Effect(cut.path, cut.text, updated_text(cut, {"valid_to": iso(stated), "updated": iso(now())})))
    if late is not None:
        return IngestItem(statement.text, statement.kind, "created", card.id,
                          f"kept as history: older than {late.id} ({late.title}), which supersedes it",
                          card.rel), plan
    if replaced:
        old = replaced[0]
        return IngestItem(statement.text, statement.kind, "updated", card.id,
                          f"supersedes {old.id} ({old.title}): same subject {statement.subject!r}", card.rel), plan
    return IngestItem(statement.text, statement.kind, "created", card.id, statement.reason, card.rel), plan


def _place_in_history(vault: Vault, current, stated: datetime):
    """Where a statement that came to hold at `stated` goes among `current` and the cards it
    superseded: (the earliest of them that began after `stated`, its start as written, the
    card before it when that one was still valid at `stated`), or (None, None, None) when
    `stated` is not before `current` began."""
    later, began = None, None
    card = current
    for _ in range(HISTORY_STEPS):   # bounded: a `supersedes` loop made by hand ends here
        start_text = card.text_field("valid_from") or card.text_field("created")
        start = parse_time(start_text)
        if start is None or stated >= start:
            end = parse_time(card.text_field("valid_to"))
            return later, began, card if later is not None and (end is None or end > stated) else None
        later, began = card, start_text
        previous = card.text_field("supersedes")
        try:
            card = load_card_for_write(vault, previous) if previous else None
        except BrainError:
            card = None
        if card is None:
            break
    return later, began, None


def _title_and_body(text: str) -> tuple[str, str]:
    """The statement is the title; a statement too long for a title is cut at a word for the
    title and kept whole in the body."""
    from ..cards import MAX_TITLE_CHARS

    if len(text) <= MAX_TITLE_CHARS:
        return text, ""
    cut = text[:MAX_TITLE_CHARS - 1]
    cut = cut.rsplit(" ", 1)[0] if " " in cut[MAX_TITLE_CHARS // 2:] else cut
    return cut.rstrip(" ,.;:、。") + "…", text


def _domain(vault: Vault) -> str:
    """`general` when the vault allows it, else its first domain."""
    domains = vault.settings.domains
    return check_domain(vault, PREFERRED_DOMAIN if PREFERRED_DOMAIN in domains else domains[0])

