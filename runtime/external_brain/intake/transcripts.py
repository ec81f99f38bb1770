"""Auto-learn: lessons found in a Claude Code session transcript become Inbox candidates (README, "Wiring it into your agent").

A transcript is JSONL: lines of `type` user / assistant / system / summary whose
`message.content` is a string or a list of blocks (`text`, `thinking`, `tool_use{id,name,input}`,
`tool_result{tool_use_id,content,is_error}`). Two kinds of lesson are found, one candidate per
problem:
- error then fix: a command whose tool result failed, then changes (files edited, other
  commands run), then the same command passing, or failing with another error (it got past the
  first: the changes fixed that one, and the new error is a problem of its own). The rerun may
  be part of a compound (`docker compose up -d db && pytest`): the commands before it there are
  part of the fix. "The same command" is what it runs however it is spelled (`command_runs`):
  `python3 -m pytest -v` is `pytest`, `cd x &&` in front is left aside, `sudo` / `VAR=value`
  in front is how it ran (a rerun that adds them has them as its fix); its other arguments count,
  so a narrower run (`pytest tests/a.py`) neither closes the failure nor is a change, and neither
  is a check (tests, linters) that passes. Only a rerun whose exit status the compound's is
  closes it: `fix; pytest` and `fix && pytest` do, `pytest; echo done` does not. Problem: the
  command and its error, and what the user rejected on the way; solution: the changes that
  stood, attributed to the failure they belong to (the one whose error names the file changed,
  else the command that failed last), and the agent's last explanation.
- a user correction that no failing command is waiting on: a user message that rejects what the
  agent just did ("no, use X", "that's wrong", "違います", "ではなく"...), or, as the user's next
  words after a failed or refused call, says what to use and what not to ("use pnpm, never npm"),
  but not an answer to the agent's question nor "no worries" / "No, that's all" (`is_correction`).
A correction rejects the agent's changes since the user last spoke (they never appear as the
solution) and belongs to the problem they were the fix of, even one whose rerun has passed since:
a lesson waits for the user's next words before it stands, and "No, don't use X, use Y" after
the rerun passed, naming a step of its fix (`_names_the_fix`), opens it again, to be learned
when it passes again, or, if it is not run again, with what the user said to do
(`what_to_do_instead`: Y, never X) as its solution. A correction belongs to a failure only when it
turns down a step surely taken for it (a command run for it, a step of its rerun's compound, an
edit of a file its error names) or is about it (`_is_about`: it shares a word with the failing
command or its error); else it is a lesson of its own; none is dropped. A change goes to the
command that failed last only while that failure is what the agent works on (it failed, or the
user spoke about it, since the user last spoke). A tool call the user refused at the permission prompt never ran: it is no change.

Promises:
- Streaming: one line is read at a time and the state kept is bounded (open tool calls and
  failures are capped), so a 50 MB transcript costs time in proportion, not memory.
- Lenient: a line that is not JSON (the torn last line of a live session) or has an unexpected
  shape is skipped and counted; a missing file is an error naming it.
- Evidence is counted per distinct session: a lesson's `evidence_key` is its session and the
  lesson itself (not a line number), so learning the same session again, however its lines
  shifted, changes nothing, and another session adds one sighting (`intake.inbox.sessions_seen`).
  A session that went on (the Stop hook learns after every turn) revises the candidate it alone
  wrote, unless a person has edited it (`intake.inbox.learn`'s `revise`).
- A lesson a Playbooks card already holds (`card_holds_lesson`: its error and its fix, or the
  same content) is not proposed.
- Titles are the program and the telling error line, without backticks or quotes, cut between
  words and never inside a URL, so candidate file names read well and stay stable across sessions.
- With `[learn] auto_promote`, the candidates this run created or added evidence to are then
  promoted when they pass `intake.inbox.promote_learned`'s rule (logged and undoable like `promote`).
- No secret is kept (README, "Secrets"): every lesson and the pre-compact state are redacted
  (`judging.redaction.redact_secrets`), and a text is redacted before it is cut or reshaped, so a cut
  never keeps the first half of a key, a title that drops quotes never keeps the password they
  held, and the lines kept of an output or an edit are judged with the text around them
  (`redacted_part`: the BEGIN line of a key whose body lines are kept).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, Iterator

from ..errors import BrainError, UsageError
from ..judging.redaction import MARKER_PATTERN, PEM_SEARCH_CHARS, redact_secrets, redacted_part
from ..vault.storage import Vault, whole_characters

MAX_OPEN_TOOL_CALLS = 1000     # tool calls waiting for their result
MAX_OPEN_FAILURES = 50         # failing commands waiting for a fix
MAX_CHANGES = 10               # changes kept per failure
MAX_CORRECTION_CHARS = 1000    # longer user messages are pasted material, not a correction
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
# Commands that only look: running them between a failure and its fix is not part of the fix.
_READ_ONLY = re.compile(r"^(?:ls|cat|head|tail|less|grep|rg|find|pwd|echo|true|which|type|wc|tree|"
                        r"git (?:status|diff|log|show|branch))\b")
_ERROR_LINE = re.compile(r"error|exception|failed|failure|fatal|cannot|can't|not found|denied|refused|unable|"
                         r"problem|traceback|エラー|失敗", re.IGNORECASE)
_NAMED_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception):|^\s*(?:error|fatal|ERR!)\b[:\[ ]|エラー[:：]")
# Next best: a line that says "Error: ..." somewhere ("Module not found: Error: Can't resolve").
_SAID_ERROR = re.compile(r"(?:^|\s)(?:Error|ERROR|error|fatal|FATAL):\s")
_EXIT_CODE = re.compile(r"^exit code \d+$", re.IGNORECASE)
# How a process was stopped from outside (the kernel's OOM killer, a signal, a crash): no error word
# says it, and the line that does is what tells one such failure from another ("worker: OOMKilled",
# "Killed" after `kill -9`), where the lines around it ("worker exited with code 137") are the same.
_STOPPED = re.compile(r"(?:\boom[-_ ]?|\b)killed\b|\bout of memory\b|\bterminated\b|\baborted\b|"
                      r"\bsegmentation fault\b|\bcore dumped\b|\bSIG(?:KILL|TERM|SEGV|ABRT|BUS)\b", re.IGNORECASE)
# Corrections: the message opens with a rejection, or says "don't / use X instead" outright.
_CORRECTION_EN = re.compile(
    r"^(?:no|nope|wrong|incorrect|not (?:that|this|like that)|stop)\b[\s,.!:;]"
    r"|^(?:that'?s|that is|this is|it'?s) (?:wrong|not (?:right|correct|what i))"
    r"|^(?:actually|instead)\b[\s,]"
    r"|^i (?:said|meant|told you)\b"
    r"|\b(?:don'?t|do not|never) (?:use|do|run|add|change|edit|touch|call|modify|delete|remove|create|write)\b"
    r"|\buse \S+ instead\b|\binstead of\b", re.IGNORECASE)
_CORRECTION_JA = re.compile(r"違う|違います|ちがう|ちがいます|そうじゃな|ではなく|じゃなくて|じゃなく|やめて|"
                            r"しないで|使わないで|間違|まちが|ではありません|^(?:いいえ|いや)[、,]|ないでください|ないで下さい")
# An instruction that says what to use and what not to (`_says_use_and_not`): a correction only
# just after the agent's call failed or was refused.
_USE_EN = re.compile(r"\b(?:use|using|run|try|switch to|stick (?:to|with)|go with)\b", re.IGNORECASE)
_NOT_EN = re.compile(r"\b(?:never|not|no|don'?t|instead of|rather than|avoid)\b", re.IGNORECASE)
_USE_JA = re.compile(r"使って|使う|使用して|使いましょう|にして|でお願い|で実行|を実行|でやって")
_NOT_JA = re.compile(r"禁止|使わない|使いません|使用しない|NG|ダメ|だめ|やめ|ではなく|じゃなく|でなく")
_ASKS = re.compile(r"[?？]\s*$|\bnot sure\b|\bno idea\b", re.IGNORECASE)
MAX_INSTRUCTION_CHARS = 300    # a longer message after a failure is a new request or pasted material
# "No" that answers or thanks, not corrects: "No worries", "No, that's all", "No need".
_NOT_A_CORRECTION = re.compile(
    r"^(?:no|nope|nah)[\s,.!]*(?:worries|problem|prob|thanks|thank\s+you|need|rush|pressure|biggie|"
    r"that'?s\s+(?:all|it|fine|ok(?:ay)?|good|everything)|it'?s\s+(?:fine|ok(?:ay)?|all\s+good)|"
    r"all\s+good|looks?\s+good|go\s+ahead|nothing\s+else|not\s+(?:now|yet|for\s+now))\b"
    r"|^(?:いいえ|いや)[、,\s]*(?:大丈夫|結構|ありがとう|それで(?:いい|大丈夫|十分)|以上)"
    r"|^[^。！？!?]{0,20}(?:心配|気に|遠慮)しないで", re.IGNORECASE)
_REFUSED = "The user doesn't want to proceed with this tool use"
# How long a title may be: past this a long error line keeps its last clauses, cut between words.
TITLE_CHARS = 90


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
    revised: list[str] = field(default_factory=list)       # this session's lesson, changed as it went on
    not_proposed: list[dict[str, str]] = field(default_factory=list)   # title and why
    promoted: list[dict[str, str]] = field(default_factory=list)       # [learn] auto_promote: from, to

    def as_dict(self) -> dict[str, Any]:
        return {"transcript": self.path, "lines": self.lines, "skipped_lines": self.skipped_lines,
                "lessons": [lesson.as_dict() for lesson in self.lessons], "sightings": self.sightings,
                "learned": self.learned,
                "more_evidence": self.more_evidence, "unchanged": self.unchanged, "revised": self.revised,
                "not_proposed": self.not_proposed, "promoted": self.promoted}


# ---------------------------------------------------------------------------- reading

def transcript_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, object) for each line, None for a line that is not a JSON object."""
    try:
        handle = path.open("rb")
    except FileNotFoundError as exc:
        raise UsageError(f"no transcript at {path}; give the path of a session's .jsonl file") from exc
    except OSError as exc:
        raise UsageError(f"cannot read transcript {path}: {exc.strerror}; give the path of a session's .jsonl file") \
            from exc
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


# Words before a program that say how it ran, not what: `sudo`, `env`, `VAR=value` (kept as "how"),
# `time`, `command`, `nohup`, `exec` (dropped).
_HOW_WORD = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*|sudo|env)$")
_NOISE_WORD = frozenset({"time", "command", "nohup", "exec"})
# Runners in front of the program they run: `python3 -m pytest` is `pytest`, as are `uv run pytest`, `npx jest`.
_RUNNERS = (("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run"))
# Commands that only check (tests, linters, type checkers): running them is no change, so between a
# failure and its fix they are not part of the fix. One that rewrites files (`--fix`, `--write`) is.
_CHECK = re.compile(r"^(?:pytest|py\.test|tox|nox|mypy|pyright|ruff(?: check)?|flake8|pylint|jest|vitest|mocha|eslint|"
                    r"tsc|go (?:test|vet)|cargo (?:test|check|clippy)|(?:npm|pnpm|yarn|bun)(?: run)? "
                    r"(?:test|lint|typecheck|type-check|check)|make (?:test|lint|check))(?:\s|$)")
# Flags that change only how much a command prints: `pytest -q` and `pytest -v` run the same tests.
_OUTPUT_FLAG = re.compile(r"^(?:-q+|-v+|--quiet|--verbose|--tb=\S+|--colou?r=\S+|--no-colou?r|--no-header)$")
_REWRITES = re.compile(r"\s--(?:fix|write)\b")


@dataclass(frozen=True)
class _Run:
    """One command of a compound (`A && B; C`): its text, what it runs (`run`: the same command
    however it is spelled, see `_run_of`) and how (`how`: `sudo`, `VAR=value` in front)."""

    text: str
    run: str
    how: str
    decides: bool = True   # whether the compound's exit status says how it went: only `&&` after it

    @property
    def is_cd(self) -> bool:
        return self.run == "cd" or self.run.startswith("cd ")

    @property
    def only_looks(self) -> bool:
        return bool(_READ_ONLY.match(self.run))

    @property
    def only_checks(self) -> bool:
        return bool(_CHECK.match(self.run)) and not _REWRITES.search(self.run)


# Pieces of a shell command: quoted strings and escapes (kept whole), `&&`, `;`, new lines, parentheses.
_SHELL_PIECE = re.compile(r"'[^']*'?|\"(?:\\.|[^\"\\])*\"?|`[^`]*`?|\\.|&&|[;\n()]|[^'\"`\\&;\n()]+|&", re.DOTALL)
MAX_COMPOUND_CHARS = 2000   # a longer command is a script, read as one command
MAX_COMPOUND_RUNS = 12      # so is one of more commands than this


def command_runs(command: str) -> list[_Run]:
    """The commands of a compound, in order: `command` split at `&&`, `;` and new lines outside
    quotes, `$(...)` and backticks (`A || B` stays one: B runs only when A fails, so it is no rerun).
    A script (a heredoc, more than `MAX_COMPOUND_CHARS` or `MAX_COMPOUND_RUNS`) is one command."""
    if len(command) > MAX_COMPOUND_CHARS or "<<" in command:
        return [_run_of(command)]
    runs, joins, part, depth = [], [], [], 0
    for piece in _SHELL_PIECE.findall(command):
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and piece in ("&&", ";", "\n"):
            runs.append("".join(part))
            joins.append(piece)
            part = []
            continue
        part.append(piece)
        if len(runs) > MAX_COMPOUND_RUNS:
            return [_run_of(command)]
    runs.append("".join(part))
    # `A; B` passes when B does, whatever A did: A's exit status is lost unless `&&` follows it to the end.
    return [replace(_run_of(text), decides=all(j == "&&" for j in joins[n:]))
            for n, text in enumerate(runs) if text.strip()]


def _run_of(text: str) -> _Run:
    """What one command runs, the same however it is spelled (decision 0032, "Fix and rerun in one
    command"): whitespace and output plumbing aside (`command_key`), `sudo` / `env` / `VAR=value`
    in front set apart as how it ran, `time` dropped, a program's path dropped (`.venv/bin/pytest`),
    `python3 -m X` / `uv run X` / `npx X` read as `X`, flags that only change how much it prints
    (`-q`, `-v`, `--tb=short`) left out. Its other arguments count: `pytest tests/a.py` is another
    command than `pytest`. The folder it runs in is not read (`cd` is left aside by the caller)."""
    words = [w for w in command_key(text).split(" ") if not _OUTPUT_FLAG.match(w)]
    how = []
    while words and (_HOW_WORD.match(words[0]) or words[0] in _NOISE_WORD):
        word = words.pop(0)
        if word not in _NOISE_WORD:
            how.append(word)
    if words:
        words[0] = words[0].rsplit("/", 1)[-1]
        if re.fullmatch(r"python\d*(?:\.\d+)?", words[0]):
            words[0] = "python"
            if len(words) > 2 and words[1] == "-m":
                words = words[2:]
        elif tuple(words[:2]) in _RUNNERS and len(words) > 2:
            words = words[2:]
        elif words[0] in ("npx", "bunx", "pnpx") and len(words) > 1 and not words[1].startswith("-"):
            words = words[1:]
    return _Run(text.strip(), " ".join(words), " ".join(how))


def _error_excerpt(output: str, lines: int = 12, chars: int = 1200) -> tuple[str, str]:
    """(the most telling error line, the output's last lines) of a failed command."""
    kept = [line for line in output.splitlines() if line.strip() and not _EXIT_CODE.match(line.strip())]
    # An exception or `error:` line names the cause; a summary line ("1 error in 0.1s") only counts.
    # Else a line that says how the process was stopped (`_STOPPED`: "OOMKilled", "Killed").
    # Else the first line that says something failed: the cause comes first, the count last.
    telling = next((line for line in kept if _NAMED_ERROR.search(line)), None) or \
        next((line for line in kept if _SAID_ERROR.search(line)), None) or \
        next((line for line in kept if _STOPPED.search(line)), None) or \
        next((line for line in kept if _ERROR_LINE.search(line)), kept[0] if kept else "")
    # Trigger: the last lines are cut from a longer output. Why: what makes a secret one may be
    # above them (the BEGIN line of a key whose last body lines are kept, the output ending
    # inside the key). Outcome: the secrets are judged with the lines before (`redacted_part`),
    # and redacted before the cut, which could halve one.
    context = max(0, len(kept) - lines)
    above = 0
    while context > 0 and above < PEM_SEARCH_CHARS:
        context -= 1
        above += len(kept[context]) + 1
    text = "\n".join(kept[context:])
    tail = redacted_part(text, above, len(text))
    return re.sub(r"^E\s+", "", telling.strip()), tail[-chars:]


def _program(command: str) -> str | None:
    """What the command runs (`pytest`, `npm`), lower-cased, for the lesson's title and tag; None
    when no word reads as a program's name."""
    # Trigger: a secret where the program goes (a key pasted as a command). Why: the name is lower-
    # cased into a tag, which is never redacted, and into the title, where `akia...` no longer has
    # the key's shape. Outcome: judged as written, the same redaction as the rest of the lesson:
    # its marker, one word here, is no program's name (`PGPASSWORD=[redacted] psql` runs psql).
    command = MARKER_PATTERN.sub("[redacted]", redact_secrets(command))
    command = re.sub(r"^\s*cd\s+\S+\s*&&\s*", "", command)   # `cd web && npm run build` runs npm
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
    key: str
    telling: str
    output: str
    changes: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)   # the agent's changes the user turned down
    said: list[str] = field(default_factory=list)       # what the user said about it
    heard: int = 0                                      # line of the user's last words about it
    explanation: str = ""
    attempted: int = 0                                  # line of the last failing run
    how: str = ""                                       # `sudo`, `VAR=value` it ran with
    steps: frozenset[str] = frozenset()                 # the commands of the compound that failed
    program: str | None = None                          # what failed (`pytest`), for the title
    closed: int = 0                                     # line of the run that passed or got past it
    passed: bool = False


@dataclass
class _Session:
    """What `find_lessons` keeps while it reads: open tool calls, open failures, failures closed
    since the user last spoke (their lessons wait for the user's next words, which may reject the
    fix) and the agent's changes since the user last spoke."""

    calls: OrderedDict = field(default_factory=OrderedDict)      # id -> line, tool, input
    failures: OrderedDict = field(default_factory=OrderedDict)   # what runs (`_Run.run`) -> _Failure
    closed: list[_Failure] = field(default_factory=list)         # closed since the user last spoke
    # change, where it went, and whether it is surely that failure's (a command run for it, a step of
    # its rerun's compound, an edit of a file its error names) rather than the agent's next edit
    since_user: list[tuple[str, _Failure | None, bool]] = field(default_factory=list)
    last_action: str = ""          # what the agent last said or did, for corrections
    last_text: str = ""            # what the agent last said
    seen_user_text: bool = False
    user_spoke: int = 0            # line of the user's last words
    trouble: bool = False          # the agent's last tool call failed or was refused


# ---------------------------------------------------------------------------- finding lessons

def find_lessons(path: Path, result: TranscriptLearning | None = None) -> list[Lesson]:
    """The lessons in the transcript at `path`, in the order they completed."""
    result = result or TranscriptLearning(str(path))
    name = path.name
    state = _Session()

    def found(lesson: Lesson | None) -> None:
        # A loop that hits the same error fifty times is one lesson (and one evidence line), so
        # the state kept grows with distinct lessons, not with the transcript.
        if lesson is None:
            return
        title = redact_secrets(lesson.title)
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
                    state.last_action = state.last_text = block["text"].strip()
                    for failure in state.failures.values():
                        failure.explanation = state.last_text
                elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    tool = str(block.get("name") or "")
                    args = block.get("input") if isinstance(block.get("input"), dict) else {}
                    state.calls[block["id"]] = (number, tool, args)
                    if len(state.calls) > MAX_OPEN_TOOL_CALLS:
                        state.calls.popitem(last=False)
                    state.last_action = _describe_call(tool, args)
        elif kind == "user":
            if entry.get("isMeta"):
                continue
            for block in blocks:
                if block.get("type") == "tool_result":
                    call = state.calls.pop(block.get("tool_use_id"), None) \
                        if isinstance(block.get("tool_use_id"), str) else None
                    if call:
                        state.trouble = block.get("is_error") is True   # failed, or refused at the prompt
                        _tool_result(state, call, block, number)
                        while len(state.closed) > MAX_OPEN_FAILURES:   # bounded: the oldest stands
                            found(_lesson(state.closed.pop(0), name, session))
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    text = block["text"].strip()
                    if not text or text.startswith(("<", "[Request interrupted")):
                        continue   # command output, reminders, interruptions: not the user's words
                    if state.seen_user_text and state.last_action and is_correction(text, state.last_text, state.trouble):
                        for lesson in _corrected(state, text, number, name, session):
                            found(lesson)
                    # Trigger: the user spoke, and did not reject the fixes that closed failures since.
                    # Why: until then a "No, don't use X" may still turn a fix down. Outcome: they stand.
                    for failure in state.closed:
                        found(_lesson(failure, name, session))
                    state.closed = []
                    state.seen_user_text = True
                    state.user_spoke = number
                    state.trouble = False   # "just after" a failed or refused call is the user's next words only
                    state.since_user = []
    # The end of what is written: fixes nobody turned down stand, and a failure the user said how to
    # fix, which was not run again yet, is learned from the user's words rather than dropped.
    for failure in state.closed:
        found(_lesson(failure, name, session))
    for failure in state.failures.values():
        if failure.said:
            failure.closed = result.lines
            found(_lesson(failure, name, session))
    return result.lessons


def _redacted(lesson: Lesson, title: str) -> Lesson:
    """The lesson, titled `title` (its title redacted), with every secret in it replaced by a
    marker (README, "Secrets")."""
    return Lesson(lesson.kind, title, redact_secrets(lesson.problem),
                  redact_secrets(lesson.solution), lesson.tags, redact_secrets(lesson.evidence),
                  redact_secrets(lesson.key))


def _edited_file(tool: str, args: dict[str, Any]) -> str | None:
    """The file an edit tool changed: `file_path`, or NotebookEdit's `notebook_path`."""
    if tool not in EDIT_TOOLS:
        return None
    path = args.get("notebook_path" if tool == "NotebookEdit" else "file_path")
    return path if isinstance(path, str) else None


def _describe_call(tool: str, args: dict[str, Any]) -> str:
    if tool == "Bash" and isinstance(args.get("command"), str):
        return f"ran `{_one_line(args['command'], 200)}`"
    path = _edited_file(tool, args) or args.get("file_path")
    if isinstance(path, str):
        return f"{tool.lower()} `{path}`"
    return f"used {tool}"


def _owner(state: _Session, names: list[str]) -> tuple[_Failure | None, bool]:
    """The open failure a change belongs to, and whether by name: the one whose error output names
    the file changed, else the command that failed last, if it is still what the agent works on
    (it failed, or the user spoke about it, since the user last spoke)."""
    if not state.failures:
        return None, False
    for failure in reversed(state.failures.values()):
        if any(name and name in failure.output for name in names):
            return failure, True
    last = max(state.failures.values(), key=lambda f: f.attempted)
    # Trigger: the user spoke since the failure and not about it ("Leave that for now. Rename
    # utils.py"). Why: what the agent does next is the user's new request, not that failure's fix;
    # a correction of it was filed under the failure (review7). Outcome: no failure owns the change.
    return (last if max(last.attempted, last.heard) >= state.user_spoke else None), False


def _note_change(state: _Session, change: str, names: list[str], command: bool = False) -> None:
    failure, by_name = _owner(state, names)
    if failure is not None and change not in failure.changes and len(failure.changes) < MAX_CHANGES:
        failure.changes.append(change)
    state.since_user.append((change, failure, by_name or command))


def _tool_result(state: _Session, call: tuple[int, str, dict[str, Any]], block: dict[str, Any],
                 number: int) -> None:
    """A tool's result: an edit is a change; a command fails, or passes (a change, or the rerun
    that closes a failure: its lesson joins `state.closed`)."""
    _, tool, args = call
    content = _text_of(block.get("content"))
    if block.get("is_error") is True and _REFUSED in content:
        return   # refused at the permission prompt: it never ran, it changed nothing
    path = _edited_file(tool, args)
    if path is not None:
        if block.get("is_error") is not True:
            _note_change(state, f"edited `{path}`" + _added(args), [path, path.rsplit("/", 1)[-1]])
        return
    command = args.get("command") if tool == "Bash" else None
    if not isinstance(command, str) or not command.strip():
        return
    runs = [run for run in command_runs(command) if not run.is_cd]   # the folder is not read (decision)
    if not runs:
        return
    if block.get("is_error") is True:
        _failed(state, command.strip(), runs, content, number)
        return
    reruns = [(n, state.failures[run.run]) for n, run in enumerate(runs) if run.run in state.failures and run.decides]
    if not reruns:
        # Trigger: a command that passed runs no failing command. Why: only a rerun shows a fix
        # worked; a check (tests, a linter) or a narrower run of a failing command changes nothing.
        # Outcome: a change, held for the failure it belongs to, unless it only looks or checks.
        if not all(run.only_looks or run.only_checks or _varies(state, run) for run in runs):
            _note_change(state, f"ran `{_one_line(command, 200)}`", _names_in(command), command=True)
        return
    for n, failure in reruns:
        # Trigger: the failing command ran again as part of this one, and passed. Why: the commands
        # before it in the compound ("docker compose up -d db && pytest") are the fix. Outcome:
        # they join the fix, the failure closes, and its lesson waits for the user's next words.
        _fixed_by(state, failure, runs[:n], runs[n])
        del state.failures[failure.key]
        failure.closed, failure.passed = number, True
        _close(state, failure)


def _failed(state: _Session, command: str, runs: list[_Run], content: str, number: int) -> None:
    """A command failed: a failure to watch, or a failing command run again (the commands before
    it in a compound join its fix; another error means it got past the first)."""
    telling, output = _error_excerpt(content)
    # What failed: a failing command it runs again, else its last command that does more than look.
    at = next((n for n in range(len(runs) - 1, -1, -1) if runs[n].run in state.failures), None)
    if at is None:
        at = next((n for n in range(len(runs) - 1, -1, -1) if not runs[n].only_looks), len(runs) - 1)
    target = runs[at]
    failure = state.failures.get(target.run)
    if failure is None:
        state.failures[target.run] = _new_failure(number, command, runs, target, telling, output)
        if len(state.failures) > MAX_OPEN_FAILURES:
            state.failures.popitem(last=False)
        return
    _fixed_by(state, failure, runs[:at], None)
    failure.attempted = number
    if _signature(telling) == _signature(failure.telling):
        return
    # Trigger: the same command fails again, with another error. Why: it got past the first
    # one, so the changes since fixed that, and what fails now is a problem of its own (an
    # unrelated bug must not be merged into the first lesson). Outcome: the first is learned,
    # the second is watched from here.
    failure.closed, failure.passed = number, False
    _close(state, failure)
    state.failures[target.run] = _new_failure(number, command, runs, target, telling, output)


def _new_failure(number: int, command: str, runs: list[_Run], target: _Run, telling: str, output: str) -> _Failure:
    return _Failure(number, command, target.run, telling, output, attempted=number, how=target.how,
                    steps=frozenset(run.run for run in runs), program=_program(target.text))


def _varies(state: _Session, run: _Run) -> bool:
    """Whether `run` is a failing command, or one with more arguments (`pytest tests/a.py` for
    `pytest`, `npm run build || true`): another run of it, not a change."""
    return run.run in state.failures or any(run.run.startswith(key + " ") for key in state.failures)


def _fixed_by(state: _Session, failure: _Failure, before: list[_Run], rerun: _Run | None) -> None:
    """The commands that ran before `failure`'s command in one compound join its fix, unless they
    only look or check, ran in the compound that failed, or run another failing command; so does
    running it another way (`sudo`, `VAR=value` in front)."""
    changes = [f"ran `{_one_line(run.text, 200)}`" for run in before
               if not (run.only_looks or run.only_checks or run.run in failure.steps or run.run in state.failures)]
    if rerun is not None and rerun.how != failure.how:
        changes.append(f"ran it as `{_one_line(rerun.text, 200)}`")
    for change in changes:
        if change not in failure.changes and len(failure.changes) < MAX_CHANGES:
            failure.changes.append(change)
        state.since_user.append((change, failure, True))


def _close(state: _Session, failure: _Failure) -> None:
    state.closed.append(failure)


_LINE_ENDS = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"   # where `str.splitlines` ends a line


def _added(args: dict[str, Any]) -> str:
    """What an edit added, in short: its first new lines (` (+ psycopg[binary]==3.2.3)`)."""
    old, new = args.get("old_string"), args.get("new_string", args.get("content"))
    if not isinstance(new, str):
        return ""
    before = set(old.splitlines()) if isinstance(old, str) else set()
    lines = new.splitlines(keepends=True)   # each ends in one of `_LINE_ENDS` (the last may not)
    picked = list(islice((n for n, line in enumerate(lines) if line.strip() and line.rstrip(_LINE_ENDS) not in before), 2))
    if not picked:
        return ""
    # Their spans in `new`, without their line ends.
    added = [(at, at + len(lines[n].rstrip(_LINE_ENDS))) for n in picked for at in (sum(map(len, lines[:n])),)]
    # Trigger: an edit's added lines, shown without the lines around them. Why: a key's body
    # lines are a secret only next to its BEGIN line (an edit that rotates a key adds body lines
    # alone), a value only in its quotes (which are dropped here). Outcome: judged in the edit's
    # text (`redacted_part`), then cut and reshaped.
    parts = [_one_line(redacted_part(new, start, end).strip(), 80) for start, end in added]
    if len(parts) == 2 and parts[0] == parts[1] and parts[0].startswith("[redacted: ") and parts[0].endswith("]"):
        parts = parts[:1]   # a key's BEGIN and first body lines: one secret, one marker
    shown = "; ".join(parts)
    return f" (+ `{shown.replace('`', '')}`)"


def _names_in(command: str) -> list[str]:
    """The file names a command mentions (for attributing it to the failure that names them)."""
    return [word.rsplit("/", 1)[-1] for word in re.findall(r"[\w./-]+\.[A-Za-z]{1,5}\b", command)]


# A number that says which error it is, kept in a signature: an exit status, a signal, an errno
# ("exit code 137" is the OOM killer, "exit code 1" the program's own failure).
_KIND_NUMBER = re.compile(r"\b(?:exit|exited|status|code|signal|sig|errno|returncode)\b[\s:=]*(?:with\s+)?"
                          r"(?:code\s+|status\s+)?-?\d+\b")


def _signature(telling: str) -> str:
    """What identifies an error line across runs: its words and the numbers that name the kind
    of error (`_KIND_NUMBER`); other numbers (lines, durations, ports, ids) and addresses left out."""
    text = telling.casefold()
    kept = [match.span() for match in _KIND_NUMBER.finditer(text)]
    masked = re.sub(r"0x[0-9a-f]+|\d+(?:\.\d+)*",
                    lambda match: match.group() if any(a <= match.start() < b for a, b in kept) else "#", text)
    return " ".join(masked.split())


def _lesson(failure: _Failure, name: str, session: str) -> Lesson | None:
    """The lesson of a closed failure: the changes that stood are the solution; when the user
    turned the fix down, what the user said to do instead."""
    # What the user said, redacted before it is taken apart: a clause kept alone ("'x' is the new
    # one") no longer says that its quoted word is a password.
    instead = next((what for said in reversed(failure.said) if (what := what_to_do_instead(redact_secrets(said)))), "")
    if not failure.changes and not instead:
        if failure.said:   # the user turned the fix down without saying what to do: a correction
            return _correction(failure.said[-1], f"ran `{_one_line(failure.command, 200)}`, which failed "
                               f"({_one_line(failure.telling, 200)}), then {failure.rejected[-1]}"
                               if failure.rejected else f"ran `{_one_line(failure.command, 200)}`",
                               failure.closed, name, session)
        return None   # passed on a plain re-run (flaky), or only rejected steps: nothing was learned
    number, passed = failure.closed, failure.passed
    program = failure.program if failure.program is not None else _program(failure.command)
    subject = _title_text(failure.telling or "command failed")
    if program and subject.casefold().startswith(f"{program}:"):
        subject = subject[len(program) + 1:].strip()   # "curl: curl: (60) ..." says it twice
    title = _cut_title(f"{program}: {subject}" if program else subject)
    problem = f"`{_one_line(failure.command, 300)}` failed:\n```\n{failure.output}\n```"
    if failure.rejected:
        problem += "\n\nTried and rejected by the user: " + "; ".join(failure.rejected) + "."
    if failure.said:
        problem += "\n\nThe user said: " + " / ".join(f"\"{_one_line(s, 300)}\"" for s in failure.said)
    if failure.changes:
        solution = ("Changes before it passed: " if passed else "Changes before it got past this error: "
                    if failure.closed == failure.attempted else "Changes since, not run again in this session: ") + \
            "; ".join(failure.changes) + "."
        if instead and not passed and failure.closed != failure.attempted:
            solution += f"\n\nThe user said to do instead: {_one_line(instead, 600)}"
    else:
        # Trigger: the user turned the fix down and said what to do, and nothing that stood ran
        # again. Why: the user's words are the lesson; the rejected fix never is. Outcome: the
        # solution is what the user said to do, the rejected steps stay in the Problem.
        solution = f"What the user said to do instead (not run again in this session): {_one_line(instead, 600)}"
    if failure.explanation and passed:
        solution += f"\n\n{_one_line(failure.explanation, 600)}"
    return Lesson("error_fix", title, problem, solution, ["auto-learn", *([program] if program else [])],
                  f"transcript {name} lines {failure.line}-{number}", evidence_key(session, title))


def evidence_key(session: str, title: str) -> str:
    """The identity of one sighting: the session and the lesson, not a line (which shifts when
    a session's file is rewritten or resumed), so a session counts once however often learned."""
    import hashlib

    return f"{session}:{hashlib.sha1(title.casefold().encode('utf-8')).hexdigest()[:10]}"


def is_correction(text: str, agent_said: str = "", after_trouble: bool = False) -> bool:
    """Whether a user message corrects what the agent just did or said: it opens with a rejection
    or says "don't / use X instead" (English), or 違う, ではなく, やめて... (Japanese); or, just
    after the agent's tool call failed or was refused (`after_trouble`), it says what to use and
    what not to ("Use pnpm, never npm", "Not rm -rf, use npm run clean", "pnpm を使って。npm は
    禁止"): `_SAYS_USE_AND_NOT`. Not when it is long (pasted material), says "no" kindly ("No
    worries", "No, that's all", "No need"), or answers the agent's own question with a plain no
    ("Should I ...?" "No, leave it")."""
    if len(text) > MAX_CORRECTION_CHARS or _NOT_A_CORRECTION.search(text.strip()):
        return False
    if not (_CORRECTION_EN.search(text) or _CORRECTION_JA.search(text)):
        # Trigger: "use X, never Y" right after a call failed or was refused. Why: it names no
        # rejection word the rule knows ("never npm" is no "never use"), yet it is the user saying
        # how to do what just went wrong (review7). Outcome: a correction; after a call that
        # worked, the same words are a request ("from now on use ruff, not black"), not one.
        return after_trouble and len(text) <= MAX_INSTRUCTION_CHARS and _says_use_and_not(text)
    # Trigger: the agent asked ("...?") and the user answers "No, ...". Why: that declines an
    # offer, it does not correct a step. Outcome: a correction only when it says what not to do.
    if agent_said.rstrip().endswith(("?", "？")) and re.match(r"^(?:no|nope|nah|いいえ)\b", text, re.IGNORECASE) \
            and not re.search(r"\b(?:don'?t|do not|never|instead|wrong|incorrect)\b|ではなく|じゃなく|違|ないで", text,
                              re.IGNORECASE):
        return False
    return True


def _says_use_and_not(text: str) -> bool:
    """Whether `text` says what to use and what not to: "Use uv, not pip", "Use pnpm in this
    repo, never npm", "Not rm -rf, use npm run clean", "yarn を使ってください。npm は使わない方針です"."""
    if _ASKS.search(text):
        return False   # "Not sure why this fails. Can you run it again?": a question, not an instruction
    return bool(_USE_EN.search(text) and _NOT_EN.search(text) or _USE_JA.search(text) and _NOT_JA.search(text))


def _corrected(state: _Session, text: str, number: int, name: str, session: str) -> list[Lesson]:
    """The user corrected the agent: the agent's changes since the user last spoke are rejected
    (taken out of the solution of every failure still open or closed since). The failure whose
    fix that was owns the correction (one problem, one candidate): one closed since opens again,
    to be learned when it passes again, or from the user's words; else a failing command the
    agent worked on since the user last spoke owns it; else it is a lesson of its own."""
    owners = []
    # Trigger: a failure whose rerun passed since the user last spoke. Why: the user's next words
    # may turn its fix down ("No, don't use docker compose up, use make db"), or be about something
    # else ("no, don't use pip, use uv"). Outcome: it is reopened only when the correction names
    # its fix (a word of what it turns down is a word of the fix's steps).
    live = {id(failure) for failure in state.failures.values()} | \
        {id(failure) for failure in state.closed if _names_the_fix(text, failure.changes)}
    for change, failure, surely in state.since_user:
        # A failure learned before the user last spoke is written: a correction now is about
        # something else, and must not vanish into a lesson already written.
        if failure is not None and id(failure) in live and change in failure.changes:
            failure.changes.remove(change)   # turned down: never a solution
            # Trigger: the change went to the failure only as the agent's next edit (its error does
            # not name the file), and the correction says nothing of the failure. Why: "違います、
            # README の見出しは英語のままに" after a curl failure is about the README, not curl
            # (review7). Outcome: the correction is not that failure's; it is a lesson of its own.
            if surely or _is_about(text, failure):
                failure.rejected.append(change)
                owners.append(failure)
    for failure in state.failures.values():
        failure.explanation = ""   # what the agent said before it was corrected
    # A failing command the agent worked on since the user last spoke owns a correction that
    # rejects no step of it only when the correction is about it (names its command or error).
    worked_on = [f for f in state.failures.values() if f.attempted > state.user_spoke and _is_about(text, f)]
    owner = owners[-1] if owners else max(worked_on, key=lambda f: f.attempted) if worked_on else None
    if owner is None:
        return [_correction(text, state.last_action, number, name, session)]
    owner.said.append(text)
    owner.heard = number
    if owner in state.closed and state.failures.get(owner.key) is None:
        # Trigger: the fix that made it pass was turned down. Why: the lesson is not that fix;
        # the user's way is, once it runs (or, if it never does here, the user's words).
        # Outcome: the failure is open again, without the rejected fix.
        state.closed.remove(owner)
        owner.passed, owner.explanation = False, ""
        state.failures[owner.key] = owner
    return []


# Words too common to say what a correction turns down.
_COMMON_WORDS = frozenset("""no not don never use using the for that this with and instead please just run ran edited
edit again also here there its it's you your but yes yet now then from into onto way repo project file files code
test tests dir folder directory""".split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9_.+-]*", text.casefold()) if len(w) > 2} - _COMMON_WORDS


def _about_words(text: str) -> set[str]:
    """The words that say what a text is about, to compare a correction with a failure: names
    and words split at every sign (`psycopg2-binary` is `psycopg2` and `binary`), and runs of
    kanji or katakana (a Japanese error or correction)."""
    lowered = text.casefold()
    # A version's digits at the end of a name are left out: `sqlite3`, `psycopg2`, `python3` are sqlite, psycopg, python.
    words = {re.sub(r"(?<=[a-z])\d+$", "", w) for w in re.findall(r"[a-z0-9]+", lowered)}
    return {w for w in words if len(w) > 2 and not w.isdigit()} - _COMMON_WORDS | \
        set(re.findall(r"[\u4e00-\u9fff]{2,}|[\u30a1-\u30ff]{2,}", text))


def _is_about(text: str, failure: _Failure) -> bool:
    """Whether a correction is about `failure`: it shares a word with the command that failed or
    its error output (`_about_words`)."""
    return bool(_about_words(text) & _about_words(f"{failure.command}\n{failure.telling}\n{failure.output}"))


def _names_the_fix(text: str, changes: list[str]) -> bool:
    """Whether a correction names one of `changes`: a word of what it turns down (its words less
    those of what it says to do instead) is a word of a change (`docker` in "ran `docker compose
    up -d db`")."""
    return bool((_words(text) - _words(what_to_do_instead(text))) & _words(" ".join(changes)))


# A clause that turns something down: what the user said not to do is never the solution.
_TURNS_DOWN = re.compile(r"^(?:no|nope|nah|wrong|incorrect|stop|actually|instead|いいえ|いや)$"
                         r"|\b(?:don'?t|do not|never|not|no longer|avoid|stop|shouldn'?t|mustn'?t)\b"
                         r"|違|ないで|ません|やめ|ダメ|だめ|禁止", re.IGNORECASE)
# A clause that goes on about the one before it ("it seeds the schema", "because ...").
_GOES_ON = re.compile(r"^(?:it|that|this|which|because|since|as|so|so that|it'?s|that'?s)\b|^(?:から|ので)",
                      re.IGNORECASE)


def what_to_do_instead(text: str) -> str:
    """What a correction says to do, without what it says not to do: "No, don't use docker
    compose up for that, use `make db` instead, it seeds the schema." -> "use `make db` instead,
    it seeds the schema."; "X ではなく Y を使ってください" -> "Y を使ってください". Empty when it
    only turns something down ("No, never chmod the socket.")."""
    said = ""
    for sentence in re.split(r"(?<=[.!?])\s+|(?<=[。！？])\s*", text.strip()):
        # "X ではなく Y", "Y instead of X", "Y rather than X": the part that is not X.
        sentence = re.sub(r"^.*?(?:ではなく|じゃなくて|じゃなく|でなく)[、,\s]*", "", sentence)
        sentence = re.sub(r"\s+(?:instead of|rather than)\s+[^,;、。]*?(?=[,;、。]|[.!?]?$)", "", sentence,
                          flags=re.IGNORECASE)
        kept: list[str] = []
        keep = True
        for clause in re.split(r"(?<=[,;、:])\s*", sentence):
            bare = clause.strip(" ,;、:.。!！")
            if not bare:
                continue
            if not _GOES_ON.match(bare):
                keep = not _TURNS_DOWN.search(bare)
            if keep:
                kept.append(clause)
        if kept:
            part = " ".join(" ".join(kept).split()).rstrip(" ,;、:")
            end = sentence.rstrip()[-1:]
            part += end if end in ".!?。！？" and not part.endswith(end) else ""
            said += part if said.endswith(("。", "！", "？")) or not said else " " + part
    return said


def _correction(text: str, last_action: str, number: int, name: str, session: str) -> Lesson:
    said = re.sub(r"^(?:no|nope|wrong|actually)[\s,.!:;]+", "", text.strip(), flags=re.IGNORECASE)
    sentences = re.split(r"(?<=[.!?。！？])\s", said, maxsplit=2)
    title = "Correction: " + _title_text(sentences[0])
    if len(sentences) > 1 and not what_to_do_instead(sentences[0]) and \
            len(longer := f"{title} {_title_text(sentences[1])}") <= TITLE_CHARS:
        # Trigger: the first sentence only turns something down ("No, don't call it helpers.
        # Name it text_utils.py."). Why: the title is what a person triages by, and what to do
        # is the lesson. Outcome: the next sentence too, when both fit.
        title = longer
    title = _cut_title(title)
    return Lesson("correction", title,
                  f"The agent {_one_line(last_action, 500)}" if last_action.startswith(("ran ", "edit", "write", "used"))
                  else f"The agent said: {_one_line(last_action, 500)}",
                  f"The user corrected it: {text}", ["auto-learn", "correction"],
                  f"transcript {name} line {number}", evidence_key(session, title))


def _title_text(text: str) -> str:
    """A line made fit for a title and a file name: no backticks or quotes around names, no URL,
    no trailing clause after a semicolon ("...; see https://..."), whitespace collapsed; its secrets
    redacted first, while the quotes and words around them still say what they are (a word in
    quotes given to a password is one; unquoted, a word may be a setting), so neither the title,
    the file name nor the sighting's key (a digest of the title) holds one."""
    text = re.sub(r"^E\s+", "", redact_secrets(text).strip())
    text = re.sub(r"^\d+:\d+\s+", "", text)          # a linter's line:column
    text = re.sub(r"https?://\S+", "", text)
    text = text.split("; ")[0]
    text = re.sub(r"[`\"]|(?<![A-Za-z])'|'(?![A-Za-z])", "", text)
    text = re.sub(r"[;|]", ",", text)
    return " ".join(text.split()).strip(" ,:-")


# Where an error line's clauses meet ("daemon: driver failed: Bind ..."); not the one inside a
# redaction marker (`[redacted: password]`), which is one word of the title.
_CLAUSE_BREAK = re.compile(r"(?<!\[redacted): ")


def _cut_title(text: str, width: int = TITLE_CHARS) -> str:
    """`text` within `width` characters: a long error line keeps its last clauses (the cause is
    at the end of "daemon: driver failed ...: Bind for 0.0.0.0:5432 failed: port is already
    allocated"), then is cut between words, never inside one or inside a URL."""
    if len(text) <= width:
        return text
    head, *parts = _CLAUSE_BREAK.split(text)
    while len(parts) > 1 and len(f"{head}: {': '.join(parts)}") > width:
        parts = parts[1:]
    text = f"{head}: {': '.join(parts)}" if ": ".join(parts) else text
    if len(text) <= width:
        return text
    cut = text[:width - 1]
    # A sentence that ends within the width is a whole title: the next one is left out
    # ("...port 5432? export PGPASSWORD=..." keeps "...port 5432?").
    ends = [m.end() for m in re.finditer(r"[.?!](?=\s)", cut) if m.end() > width // 2]
    if ends:
        return cut[:ends[-1]]
    if " " in cut[width // 3:]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,.;:-") + "…"


# ---------------------------------------------------------------------------- learning

def learn_from_transcript(vault: Vault, path: str | Path) -> TranscriptLearning:
    """Find the lessons in a transcript and learn each as an Inbox candidate (see module)."""
    from .inbox import learn, promote_learned

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
        try:
            known = known_card(vault, lesson)
            if known:
                result.not_proposed.append({"title": lesson.title, "reason": f"duplicate of {known}"})
                continue
            learned = learn(vault, title=lesson.title[:200], card_type=card_type, domain=domain, tags=lesson.tags,
                            problem=lesson.problem, solution=lesson.solution, evidence=lesson.evidence,
                            evidence_key=lesson.key, source="auto-learn", revise=True)
        except BrainError as exc:   # one odd lesson (a broken candidate file...) must not stop the rest
            result.not_proposed.append({"title": lesson.title, "reason": exc.message})
            continue
        target = learned.card.rel
        if learned.revised:
            result.revised.append(target)
        elif not learned.changed:
            result.unchanged.append(target)
        elif learned.created:
            result.learned.append(target)
        else:
            result.more_evidence.append(target)
    result.promoted = [{"source": a.path, "path": a.promoted_to}
                       for a in promote_learned(vault, [*result.learned, *result.more_evidence]) if a.promoted_to]
    return result


def known_card(vault: Vault, lesson: Lesson) -> str | None:
    """The Playbooks card that already holds `lesson` (`card_holds_lesson`), if any, among the
    cards most like its title and error (the index, as create finds its candidates)."""
    from ..search.analysis import card_fields, tokens
    from ..search.index import Index
    from ..search.keyword import related

    query = f"{lesson.title} {_telling_of(lesson)}"
    if not tokens(query):
        return None
    index = Index.open(vault, card_fields, sweep=vault.settings.search.freshness_sweep)
    try:
        with index.reading():
            candidates = related(index, query, None, limit=8)
    finally:
        index.close()
    for _, card in candidates:
        if card_holds_lesson(card, lesson, vault.settings.promote.duplicate_similarity):
            return card.rel
    return None


def _telling_of(lesson: Lesson) -> str:
    return lesson.title.split(": ", 1)[1] if lesson.kind == "error_fix" and ": " in lesson.title else lesson.title


def card_holds_lesson(card, lesson: Lesson, bar: float) -> bool:
    """Whether `card` already holds `lesson`: the same content (`judging.judgements.is_duplicate`, the
    Evidence sections aside), or, for an error-then-fix, the card names the same error (the
    telling line's words) and the fix (a file or package the solution names). A card that
    names the error but another fix does not hold it: the new fix is worth proposing."""
    from ..judging.judgements import CardText, card_similarity, card_text, is_duplicate

    mine = CardText(lesson.title, f"## Problem\n{lesson.problem}\n\n## Solution\n{lesson.solution}\n", lesson.tags)
    theirs = card_text(card)
    if is_duplicate(mine, theirs, card_similarity(mine, theirs), bar=bar):
        return True
    if lesson.kind != "error_fix":
        return False
    held = " ".join(f"{card.title} {card.body}".casefold().replace("`", "").replace("'", "").split())
    error = _title_text(_telling_of(lesson)).casefold().replace("'", "")
    if len(error.split()) < 3 or not re.search(rf"(?<![\w.]){re.escape(error)}(?![\w])", held):
        return False   # the error's words as words: "no module named yaml" is not "... yamlfix"
    fixes = {word.casefold() for word in re.findall(r"`([^`]+)`", lesson.solution)
             for word in re.findall(r"[\w.+-]+", word) if len(word) > 3 and not word.startswith("-")}
    fixes |= {name.rsplit("/", 1)[-1] for name in fixes}
    return any(re.search(rf"(?<![\w.]){re.escape(fix)}(?![\w])", held) for fix in fixes
               if fix not in ("install", "python", "pytest", "run", "edited", "sudo"))


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
        raise UsageError(f"no transcript at {path}; give the path of a session's .jsonl file") from exc
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
                    edited = _edited_file(block.get("name"), args)
                    if edited is not None:
                        files = [f for f in files if f != edited][-9:] + [edited]
                    if block.get("name") == "Bash" and isinstance(args.get("command"), str) and \
                            isinstance(block.get("id"), str) and len(calls) < MAX_OPEN_TOOL_CALLS:
                        calls[block["id"]] = args["command"]
                elif kind == "tool_result" and block.get("tool_use_id") in calls:
                    command = calls.pop(block["tool_use_id"])
                    # Trigger: the rerun that passed was spelled another way (`VAR=value pytest`,
                    # `python3 -m pytest -q`, `.venv/bin/pytest`). Why: keyed by its text, the failure
                    # stayed "still failing" while auto-learn read that very rerun as its fix. Outcome:
                    # the same identity auto-learn uses (`_run_of`), how it ran set apart.
                    key = _run_of(command).run
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
