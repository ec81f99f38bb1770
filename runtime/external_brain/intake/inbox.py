"""The Inbox: candidates that are not knowledge yet, and their promotion to Playbooks.

Candidates arrive three ways: a search that found nothing (`search_miss`, one candidate per
distinct query, bumped on repeats), `learn` (a structured problem/solution, whose evidence grows
when the same lesson is learned again), and later auto-learn and import. `promote` moves one into
Playbooks; `promote --auto` scores every candidate and promotes those over the configured bar;
with `[learn] auto_promote`, auto-learn promotes the candidates it touched that pass a stricter
rule (`promote_learned`). Every promotion is one logged, undoable operation.

Triage (the Memory Gardener's Inbox page, any door): `candidates` lists them with their evidence
and assessment; `reject_candidate` and `merge_candidate` close one. A closed candidate stays in
the Inbox as a record of the decision (`status: rejected` or `status: merged`, with who and why):
`learn` and a search miss find it by its file name as before, so the same transcript or query
adds evidence to it instead of proposing it again, and no automatic promotion takes it
(`assess`). Only a person's explicit `promote` moves it on. Both are one logged, undoable
operation (`undo` restores every file they wrote).

`promote` closes its candidate the same way (`status: promoted`, `promoted_to` naming the card,
which keeps the candidate's id; the record takes an id derived from it), rather than removing the
file: in a vault shared through git a removed candidate is a file git must pair with a copy on
each side of a merge, and the promoted card, written from the same text, competes for that pairing
(docs/decisions.md, "Sharing a vault through git"). A closed file is merged like any other.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cards import MAX_TITLE_CHARS, check_body, check_domain, check_title, check_type, parse_tags
from ..errors import BrainError, CardNotFound, UsageError
from ..vault import frontmatter
from ..vault.events import new_event
from ..vault.journal import Effect, undo_files, writing
from ..vault.merge import CANDIDATE_KEYS  # keys only a candidate has; promotion removes them
from ..writes import commit_operation
from ..vault.storage import (
    MAX_NAME_BYTES, Card, Vault, card_filename, card_from_text, check_text, scan_card_path, inside_vault, iso, load_card,
    load_cards, name_variant, now, private_name_part, private_to, safe_component, stable_id, unique_path, updated_text,
)

# The statuses of a candidate that has been decided on (`reject_candidate`, `merge_candidate`, `promote`).
CLOSED_STATUSES = ("rejected", "merged", "promoted")


def is_open(card: Card) -> bool:
    """Whether an Inbox candidate still waits for a decision (not rejected, merged or promoted)."""
    return str(card.meta.get("status") or "").strip().lower() not in CLOSED_STATUSES
# How much of a missed query is kept (in the candidate's `query` and the logged event): a question
# fits many times over; past it the "query" is a pasted document, and its start identifies it.
MISS_QUERY_CHARS = 2000


def query_key(query: str) -> str:
    """The identity of a query for search misses: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", query).casefold().split())


# ---------------------------------------------------------------------------- search misses

def record_search_miss(vault: Vault, query: str, filters: dict[str, Any], agent: str | None = None) -> str | None:
    """Log `search_miss` and create or bump the Inbox candidate for this query; returns its path.

    An empty query is not a miss (nothing was asked). Only the first `MISS_QUERY_CHARS` of the
    query are kept (two queries that share them are one candidate), and the title is cut to a
    one-line card title, so a 10,000-word query makes a small candidate that `promote` accepts.
    Nobody asked for the query to be kept: its secrets are redacted (README, "Secrets") before anything is
    cut or written — the candidate's name, title and `query`, and the logged event.
    An agent's miss (`agent`) stays in that agent's scope (docs/card-format.md): its candidate is private to
    it (`scope: agent`), one per agent and query, and other agents and shared listings never
    see the query.
    """
    from ..judging.redaction import redact_secrets

    query = redact_secrets(query)
    kept = query.strip()[:MISS_QUERY_CHARS]
    key = query_key(kept)
    if not key:
        return None
    owner = agent or ""
    # Trigger: an agent's miss. Why: named `Search_Miss_<agent>_<query>.md`, agent `dev` searching
    # "bot kestrel" met the file of agent `dev_bot`'s miss of "kestrel" and was numbered (`_2`),
    # which told `dev` what `dev_bot` had searched for. Outcome: named as a private card is
    # (`private_name_part`): `Search_Miss_<query> (<agent>).md`, which no other agent's miss and no
    # shared one can be named. Cut to 100 characters, as always, and in bytes so that a number
    # (`_2`) still fits.
    owned = private_name_part(owner) if owner else ""
    stem = (safe_component(f"Search_Miss_{key}", MAX_NAME_BYTES - len("_99999.md") - len(owned.encode("utf-8")),
                           max_chars=100) or "Search_Miss") + owned
    folder = vault.folder("Inbox")
    moment = iso(now())
    # settle=False: a search is a read, and reads never change a card in Playbooks/ (docs/card-format.md).
    with writing(vault, settle=False) as writer:
        path, existing = _miss_candidate(vault, folder, stem, key, owner)
        if existing is None and owner:
            # An agent's candidate kept under the name misses had before (see above) counts on there.
            earlier = safe_component(f"Search_Miss_{owner}_{key}", MAX_NAME_BYTES - len("_99999.md"), max_chars=100)
            earlier_path, earlier_card = _miss_candidate(vault, folder, earlier, key, owner) if earlier else (path, None)
            if earlier_card is not None:
                path, existing = earlier_path, earlier_card
        if existing is not None:
            misses = existing.meta.get("misses")
            count = misses + 1 if isinstance(misses, int) and not isinstance(misses, bool) else 2
            effect = Effect(path, existing.text, updated_text(
                existing, {"misses": count, "last_seen": moment, "updated": moment}))
        else:
            title = f"Search miss: {_one_line(kept, MAX_TITLE_CHARS)}"
            meta = {
                # The same id in every clone that misses this query, so their candidates merge as one
                # (an agent's miss is its own candidate, so its id is the agent's too).
                "id": stable_id(vault, "search_miss", key, *([owner] if owner else [])), "title": title, "status": "candidate",
                "source": "search_miss", "query": kept, "query_key": key, "misses": 1,
                "first_seen": moment, "last_seen": moment, "created": moment, "updated": moment,
            }
            if owner:
                meta.update(scope="agent", agent=owner)
            if filters:
                meta["filters"] = filters
            body = (f"\n# {title}\n\nNo card answered this query. When you solve it, "
                    "write what worked below and `brain promote` this file.\n\n## Problem\n\n## Solution\n")
            effect = Effect(path, None, frontmatter.render(meta, body))
        rel = vault.rel(path)
        cut = len(query) > MISS_QUERY_CHARS
        commit_operation(writer, [effect], [new_event("search_miss", rel, query=query[:MISS_QUERY_CHARS],
                                           filters=filters or None, query_chars=len(query) if cut else None)])
    return rel


def _miss_candidate(vault: Vault, folder: Path, stem: str, key: str, owner: str) -> tuple[Path, Card | None]:
    """The file of `owner`'s miss of the query `key` among `stem`.md, `stem`_2.md, ... and its card;
    else the first of those names that is free, and None."""
    path = folder / f"{stem}.md"
    number = 2
    while path.exists():
        existing = _try_load(vault, path)
        mine = (existing.text_field("agent") if existing is not None
                and existing.text_field("scope").lower() == "agent" else "")
        if existing is not None and existing.meta.get("query_key") == key and mine == owner:
            return path, existing
        path = folder / f"{stem}_{number}.md"
        number += 1
    return path, None


def _one_line(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, cut to `limit` characters (ending in "…" when cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _try_load(vault: Vault, path) -> Card | None:
    try:
        return load_card(vault, path)
    except Exception:  # noqa: BLE001 - a broken Inbox file must not stop search; doctor reports it
        return None


# ---------------------------------------------------------------------------- learn

def candidate_stem(title: str) -> str:
    """A learned candidate's file stem: the title without the characters that make a file name
    hard to read or to type in a shell (backticks, quotes, `;`, `|`), slashes as spaces, then
    made safe as every card file name is (`storage.safe_component`)."""
    readable = re.sub(r"[`'\"\u2018\u2019\u201c\u201d;|]", "", title)
    return safe_component(" ".join(re.sub(r"[/\\]+", " ", readable).split()), MAX_NAME_BYTES - len("Learned_.md"))


@dataclass
class LearnResult:
    card: Card
    created: bool
    evidence_count: int
    changed: bool = True      # False: this evidence was already there, nothing was written
    revised: bool = False     # the same sighting, read again, changed the lesson (`revise`)


def learn(vault: Vault, *, title: str, card_type: str, domain: str, tags: list[str] | str,
          problem: str, solution: str, evidence: str | None = None, project: str | None = None,
          evidence_key: str | None = None, source: str = "learn", revise: bool = False) -> LearnResult:
    """A structured Inbox candidate (`Inbox/Learned_<Title>.md`). Learning the same title again
    adds the new evidence to the same candidate and counts it, which `promote --auto` rewards.

    `evidence_key` names the sighting (auto-learn: a transcript's session and lesson); a candidate
    whose text already holds it is left as it is, so learning the same transcript twice changes
    nothing. The check is made under the write lock, so two hooks racing on one transcript
    cannot both add it.

    With `revise` (auto-learn), the sighting's evidence line also records a digest of the Problem
    and Solution it wrote (`(lesson <digest>)`), and the same sighting read again with another
    lesson (the session went on: the user turned the fix down after it passed) rewrites them, as
    long as that session is the candidate's only one and its Problem and Solution are still
    exactly what was written (a person's edit is never overwritten)."""
    title = check_title(title)
    card_type = check_type(vault, card_type)
    domain = check_domain(vault, domain)
    tags = parse_tags(tags)
    problem = check_body(problem or "").strip()
    solution = check_body(solution or "").strip()
    if not problem or not solution:
        raise UsageError("learn needs both --problem and --solution; say what went wrong and what fixed it")
    if evidence is not None:
        check_text(evidence, "--evidence")
    if project is not None:
        check_text(project, "--project", one_line=True)
    moment = iso(now())
    # Trigger: --evidence of blanks only. Why: its first line was taken from nothing (IndexError,
    # a traceback). Outcome: blank evidence is no evidence, as an empty one was: the solution's line.
    note = f"- {moment}: {((evidence or '').strip() or solution).splitlines()[0][:300]}"
    if evidence_key and revise:
        note += f" (lesson {_lesson_digest(problem, solution)})"
    if evidence_key:
        note += f" [{evidence_key}]"
    name = f"Learned_{candidate_stem(title)}.md"
    with writing(vault) as writer:
        # A title that differs only in case is the same lesson, and its file the same on macOS.
        path = name_variant(vault.folder("Inbox"), name, name) or vault.folder("Inbox") / name
        if path.exists():
            card = load_card(vault, path)
            if evidence_key and f"[{evidence_key}]" in card.text:
                count = card.meta.get("evidence_count")
                count = count if isinstance(count, int) and not isinstance(count, bool) else 1
                revised = _revised_lesson(card, evidence_key, problem, solution, moment) if revise else None
                if revised is None:
                    return LearnResult(card, False, count, changed=False)
                before, card = card.text, card_from_text(vault, path, revised)
                commit_operation(writer, [Effect(path, before, revised)],
                                 [new_event("learned", card.rel, card.id, title=card.title, evidence_count=count,
                                            revised=True)])
                return LearnResult(card, False, count, revised=True)
            count = card.meta.get("evidence_count")
            count = (count if isinstance(count, int) and not isinstance(count, bool) else 1) + 1
            merged_tags = list(dict.fromkeys([*card.tags, *tags]))
            text = updated_text(card, {"evidence_count": count, "tags": merged_tags, "updated": moment})
            effect = Effect(path, card.text, text.rstrip("\n") + "\n" + note + "\n")
            created = False
        else:
            meta = {
                # The same id in every clone that learns this title, so their candidates merge as one.
                "id": stable_id(vault, "learned", vault.rel(path)), "title": title, "type": card_type, "domain": domain,
                "tags": tags,
                "status": "candidate", "source": source, "evidence_count": 1, "created": moment,
                "updated": moment,
            }
            if project:
                meta["project"] = project
            body = f"\n# {title}\n\n## Problem\n{problem}\n\n## Solution\n{solution}\n\n## Evidence\n{note}\n"
            effect = Effect(path, None, frontmatter.render(meta, body))
            count, created = 1, True
        card = card_from_text(vault, path, effect.after)
        commit_operation(writer, [effect], [new_event("learned", card.rel, card.id, title=title, evidence_count=count)])
    return LearnResult(card, created, count)


def _lesson_digest(problem: str, solution: str) -> str:
    import hashlib

    return hashlib.sha1(f"{problem.strip()}\n\n{solution.strip()}".encode("utf-8")).hexdigest()[:10]


def _revised_lesson(card: Card, evidence_key: str, problem: str, solution: str, moment: str) -> str | None:
    """The candidate's text with its Problem and Solution replaced by a new reading of the same
    sighting, or None: the same lesson, another session's evidence in it, a closed candidate, no
    digest to check, or a Problem or Solution that is not what the sighting wrote (a person edited it)."""
    line = next((l for l in card.body.splitlines() if l.rstrip().endswith(f"[{evidence_key}]")), "")
    mark = re.search(r" \(lesson ([0-9a-f]{10})\) \[", line)
    sessions = set(_EVIDENCE_KEY.findall(_section(card.body, "Evidence")))
    if not mark or sessions != {evidence_key.split(":", 1)[0]} or not is_open(card):
        return None   # another session's evidence, or decided on (promoted, merged, rejected): kept
    if _lesson_digest(_section(card.body, "Problem"), _section(card.body, "Solution")) != mark.group(1):
        return None   # a person's edit: theirs stands
    digest = _lesson_digest(problem, solution)
    if digest == mark.group(1):
        return None
    text = updated_text(card, {"updated": moment})
    for name, content in (("Problem", problem), ("Solution", solution)):
        found = re.search(rf"^##\s+{name}\s*$\n(.*?)(?=^##\s|\Z)", text, re.MULTILINE | re.DOTALL)
        if found is None:
            return None
        text = text[:found.start(1)] + content.strip() + "\n\n" + text[found.end(1):]
    return text.replace(line, line.replace(mark.group(0), f" (lesson {digest}) ["), 1)


# ---------------------------------------------------------------------------- promote

@dataclass
class PromoteResult:
    source: str
    card: Card


def promote(vault: Vault, ref: str, *, card_type: str | None = None, domain: str | None = None,
            title: str | None = None, reason: str | None = None) -> PromoteResult:
    """Make one Inbox candidate a Playbooks card, with its type, domain and title checked.

    The card keeps the candidate's id; the candidate stays in the Inbox, closed as a record of the
    promotion (`status: promoted`, `promoted_to: <the card's id>`, an id of its own derived from
    the card's, the same in every clone): see the module docstring for why it is not removed.
    Both files change in one logged, undoable operation. A record whose card still exists is
    not promoted again (a person changes the card instead); one whose card was deleted since is.
    """
    path = _inbox_candidate(vault, ref)
    source_rel = vault.rel(path)
    with writing(vault) as writer:
        if not path.exists():
            raise CardNotFound(f"{source_rel} was promoted or removed meanwhile")
        card = load_card(vault, path)
        if str(card.meta.get("status") or "").strip().lower() == "promoted":
            made = _promoted_card(vault, card)
            if made is not None:
                raise UsageError(f"{source_rel} was promoted already, to {made} (id {card.meta.get('promoted_to')}): "
                                 "change that card with `brain update`, or `brain undo` the promotion to reopen it")
        missing = [key for value, given, key in ((card_type, card.type, "type"), (domain, card.domain, "domain"))
                   if not (value or given)]
        if missing:
            # Trigger: a candidate with no type or domain (a search miss has neither). Why:
            # "unknown type ''" named no problem the person could see. Outcome: what to pass.
            # Each door names the arguments its own way (`errors.in_door_terms`): no CLI command here.
            example = {"type": "troubleshooting", "domain": "infra"}
            raise UsageError(f"{source_rel} has no {' or '.join(missing)}; give "
                             f"{' and '.join(f'--{key} (e.g. {example[key]})' for key in missing)}", field=missing[0])
        card_type = check_type(vault, card_type or card.type)
        domain = check_domain(vault, domain or card.domain)
        title = check_title(title or _candidate_title(card))
        moment = iso(now())
        changes: dict[str, Any] = {
            "title": title, "type": card_type, "domain": domain,
            "confidence": vault.settings.confidence.initial, "status": "active",
            "promoted": moment, "updated": moment,
        }
        if "created" not in card.meta:
            changes["created"] = moment
        target = unique_path(vault.folder("Playbooks"), card_filename(
            card_type, title, private_to(card.text_field("scope"), card.text_field("agent"))))
        inside_vault(vault, target.parent)
        promoted = card_from_text(vault, target, updated_text(card, changes, CANDIDATE_KEYS))
        record = updated_text(card, {"id": stable_id(vault, "promoted", promoted.id), "status": "promoted",
                                     "closed": moment, "updated": moment, "promoted_to": promoted.id})
        # One operation: the new card and the candidate's record happen together or not at all,
        # so a promotion killed half-way is finished by the next write, never repeated.
        effects = [Effect(target, None, promoted.text), Effect(path, card.text, record)]
        commit_operation(writer, effects, [new_event("promoted", promoted.rel, promoted.id, source=source_rel, reason=reason,
                                          files=undo_files(vault, effects))])
    return PromoteResult(source_rel, promoted)


def _inbox_candidate(vault: Vault, ref: str) -> Path:
    """The Inbox file `ref` names; a card of the Playbooks is refused as what it is."""
    try:
        return scan_card_path(vault, ref, folders=("Inbox",))
    except CardNotFound:
        refusal: BrainError = CardNotFound(f"no Inbox candidate with path, stem or id {ref!r}; `brain list --inbox` "
                                           "lists them")
    except UsageError as exc:
        # Trigger: a path outside Inbox/ (`Playbooks/X.md`). Why: it was refused as "not in
        # Inbox/; only cards can be addressed" about a card, where its stem or id said "a card
        # already". Outcome: a card's path is told the same; any other path as before.
        refusal = exc
    try:
        card = scan_card_path(vault, ref, folders=("Playbooks",))
    except BrainError:
        raise refusal from None
    raise UsageError(f"{vault.rel(card)} is a card already, not an Inbox candidate; promote takes a "
                     "candidate from Inbox/ (`brain list --inbox`), and `brain update` changes a card") from None


def _promoted_card(vault: Vault, record: Card) -> str | None:
    """The path of the card a promotion record names (`promoted_to`), if that card still exists."""
    card_id = record.meta.get("promoted_to")
    if not isinstance(card_id, str) or not card_id:
        return None
    try:
        return vault.rel(scan_card_path(vault, card_id, folders=("Playbooks",)))
    except BrainError:
        return None


def _candidate_title(card: Card) -> str:
    title = card.title
    return re.sub(r"^Search miss:\s*", "", title)


@dataclass
class Assessment:
    path: str
    title: str
    score: float
    parts: dict[str, float]
    reasons: list[str] = field(default_factory=list)
    promoted_to: str | None = None


def _section(body: str, name: str) -> str:
    match = re.search(rf"^##\s+{name}\s*$(.*?)(?=^##\s|\Z)", body, re.MULTILINE | re.DOTALL | re.IGNORECASE)
    return match.group(1).strip() if match else ""


def sightings(card: Card) -> int:
    """How often a candidate was seen: for auto-learn, the distinct sessions its evidence names
    (`sessions_seen`); else learn's `evidence_count`, or a search miss's `misses`."""
    if card.text_field("source") == "auto-learn":
        return sessions_seen(card)
    seen = card.meta.get("evidence_count", card.meta.get("misses", 1))
    return seen if isinstance(seen, int) and not isinstance(seen, bool) else 1


_EVIDENCE_KEY = re.compile(r"\[([^\[\]:\s]+):[^\[\]\s]+\]\s*$", re.MULTILINE)


def sessions_seen(card: Card) -> int:
    """The distinct sessions an auto-learned candidate's evidence lines name (`[session:...]`):
    "seen in 3 sessions" means three sessions, however often one was learned. At least 1."""
    return max(1, len(set(_EVIDENCE_KEY.findall(_section(card.body, "Evidence")))))


def assess(vault: Vault, card: Card, playbooks: list[Card]) -> Assessment:
    """Score a candidate for auto-promotion, 0..1: completeness (0.6) and repeated evidence (0.4).

    Completeness counts six things a usable card needs: a title, a known type and domain, tags,
    a Problem and a Solution section. Evidence is 0 for one sighting, 0.5 for two, 1 for three or
    more (`sightings`). A duplicate of an existing card (`duplicate_of`) is never promoted,
    whatever it scores.
    """
    settings = vault.settings
    problem, solution = _section(card.body, "Problem"), _section(card.body, "Solution")
    checks = {
        "title": bool(card.meta.get("title")),
        "type": card.type in settings.types,
        "domain": card.domain in settings.domains,
        "tags": bool(card.tags),
        "problem": bool(problem),
        "solution": bool(solution),
    }
    completeness = sum(checks.values()) / len(checks)
    seen = sightings(card)
    evidence = min(1.0, (seen - 1) / 2)
    score = round(0.6 * completeness + 0.4 * evidence, 3)
    reasons = [f"missing {name}" for name, ok in checks.items() if not ok]
    if seen < 2:
        reasons.append("seen once: more evidence needed")
    if not is_open(card):
        # Trigger: a candidate a person rejected or merged. Why: their decision outranks any
        # score, and new evidence keeps arriving at its file. Outcome: never auto-promoted.
        return Assessment(card.rel, card.title, 0.0, {"completeness": round(completeness, 3), "evidence": evidence},
                          [*reasons, f"{card.meta.get('status')} by a person"])
    duplicate = duplicate_of(card, playbooks, settings.promote.duplicate_similarity)
    if duplicate:
        reasons.append(duplicate)
        score = 0.0
    return Assessment(card.rel, card.title, score,
                      {"completeness": round(completeness, 3), "evidence": evidence}, reasons)


def duplicate_of(card: Card, playbooks: list[Card], bar: float) -> str | None:
    """"duplicate of PATH (why)" when a Playbooks card already says what the candidate says, by
    create's own judgement (`judging.judgements.is_duplicate`) on the content: title, Problem and
    Solution, never the Evidence section, whose dated sightings would make two copies of one
    lesson look different (an exact duplicate was promoted as `_2.md` that way)."""
    from ..judging.judgements import card_similarity, card_text, is_duplicate

    mine = card_text(card)
    for other in playbooks:
        if other.status in ("superseded", "archived"):
            continue
        theirs = card_text(other)
        why = is_duplicate(mine, theirs, card_similarity(mine, theirs), bar=bar)
        if why:
            return f"duplicate of {other.rel} ({why})"
    return None


def auto_promote(vault: Vault, dry_run: bool = False) -> list[Assessment]:
    """Assess every Inbox candidate; promote (unless `dry_run`) those at or over the bar. The
    records of past promotions are no candidates: they are left out of the list."""
    candidates, _ = load_cards(vault, ("Inbox",))
    candidates = [card for card in candidates if str(card.meta.get("status") or "").strip().lower() != "promoted"]
    return _promote_passing(vault, candidates, dry_run, strict=False)


def promote_learned(vault: Vault, paths: list[str]) -> list[Assessment]:
    """`[learn] auto_promote`: of the candidates a learning run created or added evidence to
    (`paths`), promote those `promote --auto` would that are also complete (every part
    `assess` checks), no near duplicate of a card, and seen at least `[learn] min_evidence`
    times. Off (nothing read, nothing promoted) unless the config turns it on."""
    rule = vault.settings.learn
    if not rule.auto_promote or not paths:
        return []
    candidates = []
    for rel in dict.fromkeys(paths):
        card = _try_load(vault, vault.root / rel)
        # Trigger: too few sightings. Why: cheap to tell from the candidate alone, and most
        # lessons are seen once; Outcome: the Playbooks are not read for a candidate that cannot pass.
        if card is not None and sightings(card) >= rule.min_evidence:
            candidates.append(card)
    if not candidates:
        return []
    return _promote_passing(vault, candidates, False, strict=True)


def _promote_passing(vault: Vault, candidates: list[Card], dry_run: bool, strict: bool) -> list[Assessment]:
    """Assess `candidates` and promote those at or over the bar (`strict`: with no reason
    against them either, i.e. complete, seen more than once and no duplicate)."""
    bar = vault.settings.promote.auto_min_score
    playbooks, _ = load_cards(vault)
    results = []
    for card in candidates:
        result = assess(vault, card, playbooks)
        if result.score >= bar and not (strict and result.reasons) and not dry_run:
            try:
                why = f"auto after learning: score {result.score}, seen {sightings(card)} times" if strict \
                    else f"auto: score {result.score}"
                promoted = promote(vault, card.rel, reason=why)
            except BrainError as exc:   # one candidate that cannot move (edited meanwhile...) stops no other
                result.reasons.append(f"not promoted: {exc.message}")
            else:
                result.promoted_to = promoted.card.rel
                playbooks.append(promoted.card)
        results.append(result)
    results.sort(key=lambda r: -r.score)
    return results


# ---------------------------------------------------------------------------- triage

@dataclass
class Candidate:
    """An Inbox candidate as triage shows it: the card, its evidence, and how `promote --auto`
    judges it."""

    card: Card
    assessment: Assessment
    evidence: list[str]

    def as_dict(self) -> dict[str, Any]:
        card, meta = self.card, self.card.meta
        return {"path": card.rel, "id": card.id, "title": card.title, "type": card.type, "domain": card.domain,
                "tags": card.tags, "status": card.status or "candidate", "open": is_open(card),
                "source": meta.get("source"), "query": meta.get("query"), "seen": sightings(card),
                "created": card.text_field("created") or None, "updated": card.text_field("updated") or None,
                "problem": _section(card.body, "Problem"), "solution": _section(card.body, "Solution"),
                "evidence": self.evidence, "body": card.body, "score": self.assessment.score,
                "parts": self.assessment.parts, "reasons": self.assessment.reasons,
                "merged_into": meta.get("merged_into"), "closed_reason": meta.get("closed_reason")}


@dataclass
class CandidateList:
    candidates: list[Candidate]
    closed: int                    # closed candidates left out (all shown with `include_closed`)
    problems: list[Any]

    def as_dict(self) -> dict[str, Any]:
        return {"candidates": [c.as_dict() for c in self.candidates], "count": len(self.candidates),
                "closed": self.closed, "problems": [{"path": p.path, "line": p.line, "problem": p.message}
                                                    for p in self.problems]}


def evidence_lines(card: Card) -> list[str]:
    """The lines of a candidate's `## Evidence` section (learn's sightings), else, for a search
    miss, what the misses say: the query and how often it was asked."""
    section = _section(card.body, "Evidence")
    lines = [line.strip()[2:] if line.strip().startswith("- ") else line.strip()
             for line in section.splitlines() if line.strip()]
    if not lines and card.meta.get("source") == "search_miss":
        lines = [f"searched {sightings(card)} time(s) with no answer: {card.meta.get('query', '')}"]
    return lines


def candidates(vault: Vault, include_closed: bool = False) -> CandidateList:
    """The Inbox for triage: open candidates (and closed ones with `include_closed`), most
    promising first (`assess`'s score, then most seen, then newest)."""
    cards, problems = load_cards(vault, ("Inbox",))
    playbooks, _ = load_cards(vault)
    shown, closed = [], 0
    for card in cards:
        if not is_open(card):
            closed += 1
            if not include_closed:
                continue
        shown.append(Candidate(card, assess(vault, card, playbooks), evidence_lines(card)))
    shown.sort(key=lambda c: str(c.card.meta.get("updated") or ""), reverse=True)
    shown.sort(key=lambda c: (not is_open(c.card), -c.assessment.score, -sightings(c.card)))
    return CandidateList(shown, closed if not include_closed else 0, problems)


@dataclass
class TriageResult:
    """What `reject_candidate` or `merge_candidate` did: the candidate closed, the card merged
    into (merge), and the event to undo it by."""

    candidate: str
    status: str
    into: Card | None
    event: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "status": self.status,
                "into": None if self.into is None else {"path": self.into.rel, "id": self.into.id,
                                                        "title": self.into.title},
                "event": self.event["eid"]}


def _open_candidate(vault: Vault, ref: str) -> tuple[Any, Card]:
    path = scan_card_path(vault, ref, folders=("Inbox",))
    if not path.exists():
        raise CardNotFound(f"{vault.rel(path)} was promoted or removed meanwhile")
    card = load_card(vault, path)
    if not is_open(card):
        raise UsageError(f"{card.rel} is already {card.status}; `undo` its event (history shows it) to reopen it")
    return path, card


def reject_candidate(vault: Vault, ref: str, reason: str | None = None) -> TriageResult:
    """Close a candidate as not worth keeping: `status: rejected`, when and why, in its own file
    (see the module docstring for why it stays). One logged, undoable event (`rejected_candidate`)."""
    if reason is not None:
        check_text(reason, "reason", one_line=True)
    with writing(vault) as writer:
        path, card = _open_candidate(vault, ref)
        moment = iso(now())
        changes: dict[str, Any] = {"status": "rejected", "closed": moment, "updated": moment}
        if reason and reason.strip():
            changes["closed_reason"] = reason.strip()
        effects = [Effect(path, card.text, updated_text(card, changes))]
        event = new_event("rejected_candidate", card.rel, card.id or card_from_text(vault, path, effects[0].after).id,
                          title=card.title, reason=reason.strip() if reason else None,
                          files=undo_files(vault, effects))
        commit_operation(writer, effects, [event])
    return TriageResult(card.rel, "rejected", None, event)


def merge_candidate(vault: Vault, ref: str, into: str) -> TriageResult:
    """Fold a candidate into an existing Playbooks card: the card gains the candidate's tags and,
    at the end of its body, a section `## From the Inbox: TITLE` holding the candidate's body
    (its own first heading dropped); the candidate is closed as `status: merged` with
    `merged_into` naming the card. Both files change in one logged, undoable operation
    (`merged_candidate`)."""
    from ..cards import load_card_for_write

    with writing(vault) as writer:
        path, card = _open_candidate(vault, ref)
        target = load_card_for_write(vault, into, folders=("Playbooks",))
        moment = iso(now())
        body = re.sub(r"\A\s*#\s[^\n]*\n", "", card.body, count=1).strip("\n")
        newline = "\r\n" if "\r\n" in target.text else "\n"
        section = f"## From the Inbox: {_candidate_title(card)}\n\n{body}".rstrip()
        tags = list(dict.fromkeys([*target.tags, *card.tags]))
        changes: dict[str, Any] = {"updated": moment}
        if tags != target.tags:
            changes["tags"] = tags
        text = updated_text(target, changes)
        text = text.rstrip("\r\n") + newline + newline + section.replace("\n", newline) + newline
        merged = card_from_text(vault, target.path, text)
        closed = updated_text(card, {"status": "merged", "closed": moment, "updated": moment,
                                     "merged_into": merged.id or merged.rel})
        effects = [Effect(target.path, target.text, text), Effect(path, card.text, closed)]
        event = new_event("merged_candidate", merged.rel, merged.id, source=card.rel, title=card.title,
                          files=undo_files(vault, effects))
        commit_operation(writer, effects, [event])
    return TriageResult(card.rel, "merged", merged, event)
