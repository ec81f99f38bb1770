"""The optional chat model of `ingest` (`[ingest]` in .brain/config.toml; docs/compatibility.md, Ingest): it splits
raw text into statements and classifies them. Imported only when a provider is configured.

What it promises:
- Two providers, standard library only, over the embeddings module's HTTP helper (one request,
  bounded as a whole by `timeout`): `ollama` (POST {url}/api/chat, `format: json`) and `openai`
  (POST {url}/chat/completions on any OpenAI-compatible server, `response_format: json_object`,
  key from the environment variable `api_key_env` names).
- The model is asked for `{"statements": [{"text", "kind", "subject"}]}`; every way the answer
  can fail — refused, timed out, HTTP error, not JSON, the wrong shape, an unknown kind, too many
  statements — is one `ModelUnavailable` with a one-line message. The caller (ingest) then uses
  the rules and reports that message as a warning. Nothing here retries.
- What the model returns is normalised like the rules' statements (`intake.statements.from_model`).
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime

from ..errors import EmbeddingUnavailable, ModelUnavailable
from .statements import KINDS, Statement, from_model
from ..vault.config import IngestSettings

MAX_STATEMENTS = 500

PROMPT = """You turn a user's raw notes into atomic memories. Split the text into short, self-contained
statements (one subject, one predicate each), in the language they were written in. Leave out
greetings, fillers and questions. Classify each statement:
- "episode": a past event (something happened, was done, was met; usually with a time),
- "state": a current condition of a subject that can change (is down, is at version N, is busy, 〜中, 〜ている),
- "fact": a timeless statement (a name, a preference, a property).
For facts and states give "subject": a short lowercase key for the subject and the attribute set, the same
for statements that replace each other (e.g. "staging db|version"); "" when unsure. Today is {today}.
Answer with JSON only: {{"statements": [{{"text": "...", "kind": "fact|state|episode", "subject": "..."}}]}}"""


def model_name(settings: IngestSettings) -> str:
    return f"ingest model {settings.model} ({settings.provider} at {settings.default_url()})"


def extract_with_model(settings: IngestSettings, text: str, moment: datetime) -> list[Statement]:
    """The statements the model finds in `text`, or ModelUnavailable."""
    messages = [{"role": "system", "content": PROMPT.format(today=moment.date().isoformat())},
                {"role": "user", "content": text}]
    deadline = time.monotonic() + settings.timeout
    base = settings.default_url().rstrip("/")
    try:
        if settings.provider == "ollama":
            reply = _post(settings, base + "/api/chat", {"model": settings.model, "messages": messages,
                                                          "stream": False, "format": "json",
                                                          "options": {"temperature": 0}}, {}, deadline)
            message = reply.get("message") if isinstance(reply, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
        else:
            reply = _post(settings, base + "/chat/completions",
                          {"model": settings.model, "messages": messages, "temperature": 0,
                           "response_format": {"type": "json_object"}}, _auth(settings), deadline)
            choices = reply.get("choices") if isinstance(reply, dict) else None
            first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
            message = first.get("message")
            content = message.get("content") if isinstance(message, dict) else None
    except EmbeddingUnavailable as exc:
        raise ModelUnavailable(exc.message) from None
    if not isinstance(content, str):
        raise ModelUnavailable(f"{model_name(settings)} replied without a message to read")
    return _statements(settings, content, moment)


def _post(settings: IngestSettings, url: str, payload: dict, headers: dict, deadline: float):
    from ..search.embeddings import _post as post_json

    return post_json(settings, url, payload, headers, deadline, name=model_name(settings))


def _auth(settings: IngestSettings) -> dict[str, str]:
    if not settings.api_key_env:
        return {}
    key = os.environ.get(settings.api_key_env)
    if not key:
        raise ModelUnavailable(f"the environment variable {settings.api_key_env} ([ingest] api_key_env) is not "
                               "set; export the API key there")
    return {"Authorization": f"Bearer {key}"}


def _statements(settings: IngestSettings, content: str, moment: datetime) -> list[Statement]:
    name = model_name(settings)
    try:
        answer = json.loads(content)
    except (ValueError, RecursionError):
        raise ModelUnavailable(f"{name} answered with something that is not JSON") from None
    items = answer.get("statements") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ModelUnavailable(f"{name} answered without a `statements` list")
    if len(items) > MAX_STATEMENTS:
        raise ModelUnavailable(f"{name} answered with {len(items)} statements, over {MAX_STATEMENTS}")
    out = []
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip()
                and item.get("kind") in KINDS and isinstance(item.get("subject", ""), str)):
            raise ModelUnavailable(f"{name} answered with a statement that is not "
                                   '{"text": "...", "kind": "fact|state|episode", "subject": "..."}')
        out.append(from_model(item["text"], item["kind"], item.get("subject", ""), moment,
                              f"model {settings.model}"))
    return out
