"""Auto-learn: lessons found in a Claude Code session transcript become Inbox candidates (SPEC 7).

A transcript is JSONL: lines of `type` user / assistant / system / summary whose
`message.content` is a string or a list of blocks (`text`, `thinking`, `tool_use{id,name,input}`,
`tool_result{tool_use_id,content,is_error}`). Two kinds of lesson are found:
- error then fix: a command whose tool result failed, then changes (files edited, other
  commands run), then the same command passing. Problem: the command and its error; solution:
  the changes and the agent's last explanation; evidence: the transcript lines.
- a user correction: a user message that rejects what the agent just did ("no, use X", "that's
  wrong", "違います", "ではなく"...). Problem: what the agent did; solution: what the user said.

Promises:
- Streaming: one line is read at a time and the state kept is bounded (open tool calls and
  failures are capped), so a 50 MB transcript costs time in proportion, not memory.
- Lenient: a line that is not JSON (the torn last line of a live session) or has an unexpected
  shape is skipped and counted; a missing file is an error naming it.
- With `[learn] auto_promote`, the candidates this run created or added evidence to are then
  promoted when they pass `inbox.promote_learned`'s rule (logged and undoable like `promote`).
- Lessons go through `inbox.learn` with an `evidence_key` (session and line), so learning the
  same transcript twice changes nothing, a lesson seen again elsewhere adds evidence to its
  candidate, and a lesson that duplicates an existing Playbooks card is not proposed.
- No secret is kept (SPEC 8): every lesson and the pre-compact state are redacted
  (`redaction.redact_secrets`), and a text is redacted before it is cut, so a cut never keeps
  the first half of a key.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .errors import BrainError, CardNotFound, UsageError
from .redaction import redact_secrets
from .vault.storage import Vault, whole_characters

MAX_OPEN_TOOL_CALLS = 1000     # tool calls waiting for their result
MAX_OPEN_FAILURES = 50         # failing commands waiting for a fix
MAX_CHANGES = 10               # changes kept per failure
MAX_CORRECTION_CHARS = 1000    # longer user messages are pasted material, not a correction
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
# Commands that only look: running them between a failure and its fix is not part of the fix.
_READ_ONLY = re.compile(r"^(?:ls|cat|head|tail|less|grep|rg|find|pwd|echo|which|type|wc|tree|"
                        r"git (?:status|diff|log|show|branch))\b")
_ERROR_LINE = re.compile(r"error|exception|failed|failure|fatal|cannot|can't|not found|denied|refused|"
                         r"traceback|エラー|失敗", re.IGNORECASE)
_NAMED_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception):|^\s*(?:error|fatal|ERR!)\b[:\[ ]|エラー[:：]")
_EXIT_CODE = re.compile(r"^exit code \d+$", re.IGNORECASE)
# Corrections: the message opens with a rejection, or says "don't / use X instead" outright.
_CORRECTION_EN = re.compile(
    r"^(?:no|nope|wrong|incorrect|not (?:that|this|like that)|stop)\b[\s,.!:;]"
    r"|^(?:that'?s|that is|this is|it'?s) (?:wrong|not (?:right|correct|what i))"
    r"|^(?:actually|instead)\b[\s,]"
    r"|^i (?:said|meant|told you)\b"
    r"|\b(?:don'?t|do not|never) (?:use|do|run|add|change|edit|touch|call|modify|delete|remove|create|write)\b"
    r"|\buse \S+ instead\b|\binstead of\b", re.IGNORECASE)
_CORRECTION_JA = re.compile(r"違う|違います|ちがう|ちがいます|そうじゃな|ではなく|じゃなくて|じゃなく|やめて|"
                            r"しないで|使わないで|間違|まちが|ではありません")


@dataclass
class Lesson:
    """One candidate found in a transcript."""

    kind: str                 # "error_fix" or "correction"
    title: str
    problem: str
    solution: str
    tags: list[str]
    evidence: str             # where: file and lines
    key: str                  # identity of the sighting: session and line

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "problem": self.problem, "solution": self.solution,
                "tags": self.tags, "evidence": self.evidence, "key": self.key}


@dataclass
class TranscriptLearning:
    path: str
    lines: int = 0
    skipped_lines: int = 0                                  # not JSON (a torn last line) or odd shapes
    lessons: list[Lesson] = field(default_factory=list)     # each distinct lesson at its first sighting
    sightings: dict[str, int] = field(default_factory=dict)  # title -> times the transcript shows it
    learned: list[str] = field(default_factory=list)       # candidates created
    more_evidence: list[str] = field(default_factory=list)  # candidates that gained evidence
    unchanged: list[str] = field(default_factory=list)     # already learned from this transcript
    not_proposed: list[dict[str, str]] = field(default_factory=list)   # title and why
    promoted: list[dict[str, str]] = field(default_factory=list)       # [learn] auto_promote: from, to

    def as_dict(self) -> dict[str, Any]:
        return {"transcript": self.path, "lines": self.lines, "skipped_lines": self.skipped_lines,
                "lessons": [lesson.as_dict() for lesson in self.lessons], "sightings": self.sightings,
                "learned": self.learned,
                "more_evidence": self.more_evidence, "unchanged": self.unchanged,
                "not_proposed": self.not_proposed, "promoted": self.promoted}


# ---------------------------------------------------------------------------- reading

def transcript_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, object) for each line, None for a line that is not a JSON object."""
    try:
        handle = path.open("rb")
    except FileNotFoundError as exc:
        raise CardNotFound(f"no transcript at {path}; give the path of a session's .jsonl file") from exc
    except OSError as exc:
        raise UsageError(f"cannot read transcript {path}: {exc.strerror}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = json_line(raw)
            except ValueError:
                yield number, None
                continue
            yield number, value if isinstance(value, dict) else None


def json_line(raw: bytes) -> Any:
    """One transcript line, decoded; ValueError for a line that is not JSON in UTF-8 (torn, foreign,
    nested thousands deep). A lone surrogate in it (`"\\ud83d"`: a tool's output cut inside an emoji)
    is read as U+FFFD, as a UTF-8 decoder reads a broken character: kept, it made every lesson of
    the session fail to be written and `learn` print a traceback."""
    try:
        text = raw.decode("utf-8")
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if "\\ud" in text or "\\uD" in text:   # only an escape can make one in text that was UTF-8
        value = _whole_characters_in(value)
    return value


def _whole_characters_in(value: Any) -> Any:
    """`value` with every string in it (keys too) passed through `whole_characters`; nested
    lists and objects are fixed in place, without recursion."""
    if isinstance(value, str):
        return whole_characters(value)
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = list(item.items()) if isinstance(item, dict) else list(enumerate(item)) \
            if isinstance(item, list) else ()
        for key, child in pairs:
            if isinstance(child, str):
                item[key] = whole_characters(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
            if isinstance(key, str) and whole_characters(key) != key:
                item[whole_characters(key)] = item.pop(key)
    return value


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _text_of(content: Any) -> str:
    """A tool result's content: a string or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    if len(text) <= width:
        return text   # redacted whole with the lesson it goes into
    text = " ".join(redact_secrets(text).split())   # before the cut, which could halve a secret
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def command_key(command: str) -> str:
    """The identity of a command for "the same command passed": whitespace collapsed and output
    plumbing (`2>&1`, `| tail -n 20`, `| head`) dropped, since agents add and remove those."""
    key = " ".join(command.split())
    key = re.sub(r"\s*2>&1", "", key)
    key = re.sub(r"\s*\|\s*(?:tail|head)(?:\s+-n)?(?:\s+-?\d+)?\s*$", "", key)
    return key.strip()


def _error_excerpt(output: str, lines: int = 12, chars: int = 1200) -> tuple[str, str]:
    """(the most telling error line, the output's last lines) of a failed command."""
    kept = [line for line in output.splitlines() if line.strip() and not _EXIT_CODE.match(line.strip())]
    # An exception or `error:` line names the cause; a summary line ("1 error in 0.1s") only counts.
    telling = next((line for line in kept if _NAMED_ERROR.search(line)), None) or \
        next((line for line in reversed(kept) if _ERROR_LINE.search(line)), kept[0] if kept else "")
    tail = redact_secrets("\n".join(kept[-lines:]))   # before the cut, which could halve a secret
    return re.sub(r"^E\s+", "", telling.strip()), tail[-chars:]


def _program(command: str) -> str | None:
    words = [w for w in command.split() if "=" not in w and w not in ("sudo", "env", "time", "cd")]
    if not words:
        return None
    name = words[0].rsplit("/", 1)[-1].lower()
    if name in ("python", "python3", "uv", "npx", "poetry", "pipenv") and len(words) > 1:
        second = words[2] if words[1] in ("-m", "run") and len(words) > 2 else words[1]
        name = second.rsplit("/", 1)[-1].lower()
    return name if re.fullmatch(r"[a-z0-9][a-z0-9._+-]{0,40}", name) else None


@dataclass
class _Failure:
    line: int
    command: str
    telling: str
    output: str
    changes: list[str] = field(default_factory=list)
    explanation: str = ""


# ---------------------------------------------------------------------------- finding lessons

def find_lessons(path: Path, result: TranscriptLearning | None = None) -> list[Lesson]:
    """The lessons in the transcript at `path`, in the order they completed."""
    result = result or TranscriptLearning(str(path))
    name = path.name
    calls: OrderedDict[str, tuple[int, str, dict[str, Any]]] = OrderedDict()   # id -> line, tool, input
    failures: OrderedDict[str, _Failure] = OrderedDict()                       # command key -> failure
    last_action = ""      # what the agent last said or did, for corrections
    seen_user_text = False

    def found(lesson: Lesson) -> None:
        title = redact_secrets(lesson.title)
        # A loop that hits the same error fifty times is one lesson (and one evidence line), so
        # the state kept grows with distinct lessons, not with the transcript.
        if title not in result.sightings:
            result.lessons.append(_redacted(lesson, title))
        result.sightings[title] = result.sightings.get(title, 0) + 1

    for number, entry in transcript_lines(path):
        result.lines = number
        if entry is None:
            result.skipped_lines += 1
            continue
        kind = entry.get("type")
        session = str(entry.get("sessionId") or path.stem)
        blocks = _blocks(entry.get("message"))
        if kind == "assistant":
            for block in blocks:
                if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                    last_action = block["text"].strip()
                    for failure in failures.values():
                        failure.explanation = last_action
                elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    tool = str(block.get("name") or "")
                    args = block.get("input") if isinstance(block.get("input"), dict) else {}
                    calls[block["id"]] = (number, tool, args)
                    if len(calls) > MAX_OPEN_TOOL_CALLS:
                        calls.popitem(last=False)
                    last_action = _describe_call(tool, args)
                    if tool in EDIT_TOOLS and isinstance(args.get("file_path"), str):
                        _note_change(failures, f"edited `{args['file_path']}`")
        elif kind == "user":
            if entry.get("isMeta"):
                continue
            for block in blocks:
                if block.get("type") == "tool_result":
                    call = calls.pop(block.get("tool_use_id"), None) if isinstance(block.get("tool_use_id"), str) else None
                    if call:
                        lesson = _tool_result(failures, call, block, number, name, session)
                        if lesson:
                            found(lesson)
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    text = block["text"].strip()
                    if not text or text.startswith("<"):   # command output, reminders, interruptions
                        continue
                    if seen_user_text and last_action and _is_correction(text):
                        found(_correction(text, last_action, number, name, session, entry))
                    seen_user_text = True
    return result.lessons


def _redacted(lesson: Lesson, title: str) -> Lesson:
    """The lesson, titled `title` (its title redacted), with every secret in it replaced by a
    marker (SPEC 8)."""
    return Lesson(lesson.kind, title, redact_secrets(lesson.problem),
                  redact_secrets(lesson.solution), lesson.tags, redact_secrets(lesson.evidence),
                  redact_secrets(lesson.key))


def _describe_call(tool: str, args: dict[str, Any]) -> str:
    if tool == "Bash" and isinstance(args.get("command"), str):
        return f"ran `{_one_line(args['command'], 200)}`"
    if isinstance(args.get("file_path"), str):
        return f"{tool.lower()} `{args['file_path']}`"
    return f"used {tool}"


def _note_change(failures: OrderedDict[str, _Failure], change: str) -> None:
    for failure in failures.values():
        if change not in failure.changes and len(failure.changes) < MAX_CHANGES:
            failure.changes.append(change)


def _tool_result(failures: OrderedDict[str, _Failure], call: tuple[int, str, dict[str, Any]],
                 block: dict[str, Any], number: int, name: str, session: str) -> Lesson | None:
    _, tool, args = call
    command = args.get("command") if tool == "Bash" else None
    if not isinstance(command, str) or not command.strip():
        return None
    key = command_key(command)
    if block.get("is_error") is True:
        if key not in failures:
            telling, output = _error_excerpt(_text_of(block.get("content")))
            failures[key] = _Failure(number, command.strip(), telling, output)
            if len(failures) > MAX_OPEN_FAILURES:
                failures.popitem(last=False)
        return None
    failure = failures.pop(key, None)
    if failure is None:
        if not _READ_ONLY.match(key):
            _note_change(failures, f"ran `{_one_line(command, 200)}`")
        return None
    if not failure.changes:
        return None   # passed on a plain re-run: flaky, nothing was learned
    program = _program(failure.command)
    subject = _one_line(failure.telling or "command failed", 110)
    title = f"{program}: {subject}" if program else subject
    problem = f"`{_one_line(failure.command, 300)}` failed:\n```\n{failure.output}\n```"
    solution = "Changes before it passed: " + "; ".join(failure.changes) + "."
    if failure.explanation:
        solution += f"\n\n{_one_line(failure.explanation, 600)}"
    return Lesson("error_fix", title, problem, solution, ["auto-learn", *([program] if program else [])],
                  f"transcript {name} lines {failure.line}-{number}", f"{session}:{failure.line}")


def _is_correction(text: str) -> bool:
    if len(text) > MAX_CORRECTION_CHARS:
        return False
    return bool(_CORRECTION_EN.search(text) or _CORRECTION_JA.search(text))


def _correction(text: str, last_action: str, number: int, name: str, session: str,
                entry: dict[str, Any]) -> Lesson:
    return Lesson("correction", f"Correction: {_one_line(text, 110)}",
                  f"The agent {_one_line(last_action, 500)}" if last_action.startswith(("ran ", "edit", "write", "used"))
                  else f"The agent said: {_one_line(last_action, 500)}",
                  f"The user corrected it: {text}", ["auto-learn", "correction"],
                  f"transcript {name} line {number}", f"{session}:{entry.get('uuid') or number}")


# ---------------------------------------------------------------------------- learning

def learn_from_transcript(vault: Vault, path: str | Path) -> TranscriptLearning:
    """Find the lessons in a transcript and learn each as an Inbox candidate (see module)."""
    from .search.analysis import similarity
    from .inbox import learn, promote_learned
    from .search import search
    from .search.keyword import Filters

    path = Path(path)
    result = TranscriptLearning(str(path))
    find_lessons(path, result)
    settings = vault.settings
    domain = next((d for d in ("dev", "general") if d in settings.domains), settings.domains[0])
    for lesson in result.lessons:
        sightings = result.sightings[lesson.title]
        if sightings > 1:
            lesson.evidence += f" (and {sightings - 1} more sighting{'s' if sightings > 2 else ''})"
        wanted = "troubleshooting" if lesson.kind == "error_fix" else "insight"
        card_type = wanted if wanted in settings.types else settings.types[0]
        text = f"{lesson.title}\n{lesson.problem}\n{lesson.solution}"
        try:
            duplicate = _known_card(vault, text, search, Filters, similarity)
            if duplicate:
                result.not_proposed.append({"title": lesson.title, "reason": f"duplicate of {duplicate}"})
                continue
            learned = learn(vault, title=lesson.title[:200], card_type=card_type, domain=domain, tags=lesson.tags,
                            problem=lesson.problem, solution=lesson.solution, evidence=lesson.evidence,
                            evidence_key=lesson.key, source="auto-learn")
        except BrainError as exc:   # one odd lesson (a broken candidate file...) must not stop the rest
            result.not_proposed.append({"title": lesson.title, "reason": exc.message})
            continue
        target = learned.card.rel
        if not learned.changed:
            result.unchanged.append(target)
        elif learned.created:
            result.learned.append(target)
        else:
            result.more_evidence.append(target)
    result.promoted = [{"source": a.path, "path": a.promoted_to}
                       for a in promote_learned(vault, [*result.learned, *result.more_evidence]) if a.promoted_to]
    return result


def _known_card(vault: Vault, text: str, search, Filters, similarity) -> str | None:
    """The Playbooks card this lesson duplicates (similarity at the promote bar), if any."""
    from .search.analysis import tokens

    query = text.split("\n", 1)[0]
    if not tokens(query):
        return None
    hits = search(vault, query, Filters(status="any"), limit=3).hits
    bar = vault.settings.promote.duplicate_similarity
    from .inbox import _section

    for hit in hits:
        # Problem and solution are what a lesson is; a promoted candidate's evidence lines (dates,
        # sessions) are not, and would make the match depend on when it was learned.
        body = hit.card.body
        core = "\n".join(filter(None, (_section(body, "Problem"), _section(body, "Solution")))) or body
        if similarity(text, f"{hit.card.title}\n{core}") >= bar:
            return hit.card.rel
    return None


# ---------------------------------------------------------------------------- working state

STATE_TAIL_BYTES = 2_000_000   # the working state is in the recent part of a session


def session_state(path: Path, trigger: str | None = None) -> str:
    """A short plain-text account of where a session stands (recent requests, files changed,
    a command still failing, the agent's last message), from the transcript's last 2 MB: what
    `pre-compact` keeps in working memory before the transcript is compacted. Empty when the
    transcript holds nothing of the kind."""
    requests: list[str] = []
    files: list[str] = []
    calls: dict[str, str] = {}
    failing: dict[str, str] = {}
    last_message = ""
    try:
        size = path.stat().st_size
    except FileNotFoundError as exc:
        raise CardNotFound(f"no transcript at {path}; give the path of a session's .jsonl file") from exc
    with path.open("rb") as handle:
        if size > STATE_TAIL_BYTES:
            handle.seek(size - STATE_TAIL_BYTES)
            handle.readline()   # the rest of a line cut in the middle
        for raw in handle:
            try:
                entry = json_line(raw)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("isMeta"):
                continue
            for block in _blocks(entry.get("message")):
                kind = block.get("type")
                if entry.get("type") == "user" and kind == "text" and isinstance(block.get("text"), str):
                    text = block["text"].strip()
                    if text and not text.startswith("<"):
                        requests = [*requests[-2:], _one_line(text, 300)]
                elif entry.get("type") == "assistant" and kind == "text" and isinstance(block.get("text"), str):
                    last_message = block["text"].strip() or last_message
                elif kind == "tool_use" and isinstance(block.get("input"), dict):
                    args = block["input"]
                    if block.get("name") in EDIT_TOOLS and isinstance(args.get("file_path"), str):
                        files = [f for f in files if f != args["file_path"]][-9:] + [args["file_path"]]
                    if block.get("name") == "Bash" and isinstance(args.get("command"), str) and \
                            isinstance(block.get("id"), str) and len(calls) < MAX_OPEN_TOOL_CALLS:
                        calls[block["id"]] = args["command"]
                elif kind == "tool_result" and block.get("tool_use_id") in calls:
                    command = calls.pop(block["tool_use_id"])
                    key = command_key(command)
                    if block.get("is_error") is True:
                        failing[key] = f"`{_one_line(command, 200)}`: " \
                                       f"{_one_line(_error_excerpt(_text_of(block.get('content')))[0], 200)}"
                    else:
                        failing.pop(key, None)
    parts = []
    if requests:
        parts.append("Recent requests:\n" + "\n".join(f"- {r}" for r in requests))
    if files:
        parts.append("Files changed: " + ", ".join(f"`{f}`" for f in files))
    if failing:
        parts.append("Still failing:\n" + "\n".join(f"- {f}" for f in list(failing.values())[-3:]))
    if last_message:
        parts.append(f"Last agent message: {_one_line(last_message, 500)}")
    if not parts:
        return ""
    head = f"Session state before compaction{f' ({trigger})' if trigger else ''}, transcript {path.name}."
    return redact_secrets("\n".join([head, *parts]))
