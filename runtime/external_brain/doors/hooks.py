"""`brain hook EVENT`: the Claude Code hooks door (README, "Wiring it into your agent").

Claude Code runs the hook with its JSON on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, and per event `source`, `prompt`, `stop_hook_active`, `trigger`, `reason`).

Promises:
- `run_hook` never raises and the CLI exits 0 whatever happens (a broken vault, garbage on stdin,
  a missing transcript): a hook must never block or break the agent. What went wrong is one line
  on stderr, which Claude Code shows only in verbose mode.
- Input is never refused: bytes that are not UTF-8 and lone surrogates (`"\ud800"`) are read as
  U+FFFD, so the output is valid UTF-8.
- The output is nothing or one JSON object. `session-start` and `prompt` inject through
  `hookSpecificOutput.additionalContext` (with `hookEventName`): plain facts, never instructions
  (text that reads like commands trips prompt-injection defences), under `MAX_CONTEXT_CHARS`,
  with every secret redacted (README, "Secrets": the vault may hold one a person stored on purpose; the
  session is not where it goes), and nothing at all when nothing is relevant. `session-start`: fresh working memory and a short
  brief for the project named by `cwd`'s folder. `prompt`: only the few cards relevant to the
  prompt, under a tight budget, recording no search miss.
- `stop` never prints (on Stop, additionalContext would make the agent go on): it learns from
  the transcript, in the hook when the transcript is small, else in a detached process.
- `session-end` has about 1.5 s in all, so it always hands learning to a detached process.
- `pre-compact` keeps the session's working state (recent requests, files changed, commands
  still failing, the last message) in working memory under `session-<id>`, which the
  `session-start` after the compaction injects again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..vault.valueclass import valueclass

EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop",
          "session-end": "SessionEnd", "pre-compact": "PreCompact"}
MAX_CONTEXT_CHARS = 8000          # Claude Code caps injected context at 10,000 characters
SESSION_BUDGET = 1200             # tokens for session start
PROMPT_BUDGET = 400               # tokens for one prompt: a few cards, not a search page
PROMPT_CARDS = 3
MAX_PROMPT_CHARS = 2000           # the start of a long prompt says what it is about (search.MAX_QUERY_CHARS)
INLINE_LEARN_BYTES = 2_000_000    # `stop` learns in the hook below this transcript size
STATE_TTL_DAYS = 2.0


@valueclass
class HookResult:
    output: dict[str, Any] | None = None   # the one JSON object to print, or None
    note: str | None = None                # one line for stderr


def run_hook(event: str, stdin_text: str, vault_ref: str | None = None,
             example_vault: Path | None = None, persona: str | None = None) -> HookResult:
    """Handle one hook call; never raises (see the module docstring). The vault is found as for
    every command (`example_vault` only when run as the checkout's script), then `persona`'s
    vault in it when one is named (an unknown one is a note: nothing is injected)."""
    if event not in EVENTS:
        return HookResult(note=f"unknown hook event {event!r}; use one of: {', '.join(EVENTS)}")
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else {}
    except (ValueError, RecursionError):
        return HookResult(note=f"hook {event}: stdin is not hook JSON; nothing done")
    if not isinstance(payload, dict):
        return HookResult(note=f"hook {event}: stdin is not a JSON object; nothing done")
    # Trigger: a `"\ud800"` escape in a field (a client that cut an emoji in half). Why: a lone
    # surrogate is no character; echoed into the output it made the hook fail with a traceback.
    # Outcome: read as U+FFFD, as a UTF-8 decoder reads a broken character; the hook goes on.
    from ..vault.storage import resolve_vault, whole_characters

    payload = {key: whole_characters(value) if isinstance(value, str) else value for key, value in payload.items()}
    try:
        cwd = _directory(payload.get("cwd"))
        vault = resolve_vault(vault_ref, cwd=cwd, example=example_vault)
        if persona:
            from ..agents.personas import persona_vault

            vault = persona_vault(vault, persona)
        handler = {"session-start": _session_start, "prompt": _prompt, "stop": _stop,
                   "session-end": _session_end, "pre-compact": _pre_compact}[event]
        result = handler(vault, payload, cwd)
        if result.output is not None:
            json.dumps(result.output, ensure_ascii=False).encode("utf-8")   # printable, or a note below
        return result
    except Exception as exc:  # noqa: BLE001 - the agent must go on whatever broke here
        from ..errors import BrainError

        message = exc.message if isinstance(exc, BrainError) else f"{type(exc).__name__}: {exc}"
        return HookResult(note=f"hook {event}: {message}")


def _directory(value: Any) -> Path | None:
    if isinstance(value, str) and value and os.path.isdir(value):
        return Path(value)
    return None


def _inject(event: str, text: str) -> HookResult:
    from ..judging.redaction import redact_secrets

    text = redact_secrets(text)   # before the cut, which could halve a secret
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS - 1].rstrip() + "…"
    return HookResult({"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}})


def _session_start(vault, payload: dict[str, Any], cwd: Path | None) -> HookResult:
    from ..answers.brief import brief

    project = cwd.name if cwd else None
    shown = brief(vault, None, budget=SESSION_BUDGET, project=project, limit=5, session=_session_id(payload))
    if shown.empty:
        return HookResult()   # nothing relevant: inject nothing (the brief's line is for readers)
    where = f" for project {project}" if project else ""
    return _inject("session-start", f"External Brain knowledge base{where} (working memory and cards):\n\n"
                                    + shown.markdown)


def _prompt(vault, payload: dict[str, Any], cwd: Path | None) -> HookResult:
    from ..search.analysis import tokens
    from ..answers.brief import brief

    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return HookResult()
    if len(prompt) > MAX_PROMPT_CHARS:
        # Cut at a space: a word cut in half is a term no card has, and such a term weighs most
        # in the query, so it would push every real match under the coverage floor.
        prompt = prompt[:MAX_PROMPT_CHARS].rsplit(None, 1)[0]
    if not tokens(prompt):
        return HookResult()
    shown = brief(vault, prompt, budget=PROMPT_BUDGET, project=cwd.name if cwd else None,
                  limit=PROMPT_CARDS, working_memory=False)
    if not shown.items:
        return HookResult()
    return _inject("prompt", "External Brain cards related to this prompt:\n\n" + shown.markdown)


def _transcript(payload: dict[str, Any]) -> Path | None:
    value = payload.get("transcript_path")
    if not isinstance(value, str) or not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_file() else None


def _stop(vault, payload: dict[str, Any], cwd: Path | None) -> HookResult:
    path = _transcript(payload)
    if path is None:
        return HookResult(note="hook stop: no transcript to learn from")
    if path.stat().st_size > INLINE_LEARN_BYTES:
        learn_detached(vault, path)
        return HookResult()
    from ..intake.transcripts import learn_from_transcript

    learn_from_transcript(vault, path)
    return HookResult()   # never an output: on Stop it would make the agent continue


def _session_end(vault, payload: dict[str, Any], cwd: Path | None) -> HookResult:
    path = _transcript(payload)
    if path is None:
        return HookResult(note="hook session-end: no transcript to learn from")
    learn_detached(vault, path)
    return HookResult()


def _pre_compact(vault, payload: dict[str, Any], cwd: Path | None) -> HookResult:
    from ..intake.transcripts import session_state
    from ..working_memory import remember

    path = _transcript(payload)
    if path is None:
        return HookResult(note="hook pre-compact: no transcript to save the state of")
    trigger = payload.get("trigger") if isinstance(payload.get("trigger"), str) else None
    state = session_state(path, trigger)
    if state:
        session = _session_id(payload)
        key = "session-" + (session or "".join(c for c in path.stem if c.isalnum() or c in "-_")[:36])
        remember(vault, key if key != "session-" else "session", state, STATE_TTL_DAYS, session=session)
    return HookResult()


def _session_id(payload: dict[str, Any]) -> str | None:
    """The payload's `session_id` as a working-memory key may hold it (letters, digits, - and _)."""
    value = payload.get("session_id")
    if not isinstance(value, str):
        return None
    return "".join(c for c in value if c.isalnum() or c in "-_")[:36] or None


def learn_detached(vault, path: Path) -> None:
    """`brain learn --from-transcript PATH` in a process of its own session, not waited for:
    the hook returns at once and the learning outlives it (SessionEnd allows ~1.5 s)."""
    runtime = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [runtime, os.environ.get("PYTHONPATH")]))}
    subprocess.Popen([sys.executable, "-m", "external_brain.doors.cli", "--vault", str(vault.root), "learn",
                      "--from-transcript", str(path)], env=env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
