"""Secrets are never captured automatically (README, "Secrets"): what auto-learn, pre-compact notes, search
misses, ingest through a chat model and the hooks' injected context write or show is redacted
(`[redacted: KIND]`); what a person or agent stores on purpose is kept as written; `doctor`
says where secrets already are (path and line), never what they are.

Every write path runs through the real CLI, hook, MCP or HTTP process, and then every file under
the vault (cards, logs, the cache, file names) is searched for each secret.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SCRIPT, card_meta, events, ok_data, write_card
from test_hooks import SESSION, assistant, bash, context_of, hook, payload, result, user, write_transcript

ALNUM = string.ascii_letters + string.digits


def fake(seed: int, length: int, alphabet: str = ALNUM, prefix: str = "") -> str:
    rng = random.Random(seed)
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def _jwt() -> str:
    def part(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return ".".join([part(b'{"alg":"HS256","typ":"JWT"}'), part(b'{"sub":"42","name":"Deploy Bot"}'),
                     fake(9, 43, ALNUM + "-_")])


# Fake credentials of every kind the issue names; prefixes are assembled so that no scanner
# takes this file for a leak.
SECRETS = {
    "AWS access key id": fake(1, 16, string.ascii_uppercase + string.digits, "AK" + "IA"),
    "AWS secret access key": fake(2, 40, ALNUM + "+/"),
    "OpenAI API key": fake(3, 120, ALNUM + "-_", "s" + "k-proj-"),
    "Anthropic API key": fake(4, 93, ALNUM + "-_", "s" + "k-ant-api03-"),
    "GitHub token": fake(5, 36, ALNUM, "gh" + "p_"),
    "Slack token": "xo" + "xb-" + fake(6, 12, string.digits) + "-" + fake(7, 13, string.digits) + "-" + fake(8, 24),
    "Google API key": fake(10, 35, ALNUM + "-_", "AI" + "za"),
    "JWT": _jwt(),
    "bearer token": fake(11, 32),
    "password": "Tr0ub4dor&3x",
    "password in URL": "s3cr3tPW9",
    "private key": "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(fake(20 + n, 64, ALNUM + "+/") for n in range(4))
                   + "\n-----END RSA PRIVATE KEY-----",
}
KEY_LINES = SECRETS["private key"].splitlines()[1:-1]   # the body lines of the key: none may survive


def leaks(vault: Path) -> list[str]:
    """Each place under the vault (a file's content or a path) that holds any secret, or any
    line of the private key's body."""
    needles = [v for k, v in SECRETS.items() if k != "private key"] + KEY_LINES
    found = []
    for path in sorted(vault.rglob("*")):
        rel = path.relative_to(vault).as_posix()
        for needle in needles:
            if needle in rel:
                found.append(f"name {rel}")
        if path.is_file():
            data = path.read_bytes()
            for needle in needles:
                if needle.encode() in data:
                    found.append(f"{rel} holds {needle[:12]}...")
    return found


def cli(vault: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    return subprocess.run([sys.executable, str(SCRIPT), *argv], input=stdin, env=env, capture_output=True,
                          text=True, timeout=120)


def secret_transcript(path: Path) -> Path:
    """A session that leaks every kind of secret into what auto-learn keeps: the failing command,
    its error output, the agent's explanation, and a user correction (which becomes a title and
    so a file name)."""
    s = SECRETS
    command = (f"AWS_ACCESS_KEY_ID={s['AWS access key id']} AWS_SECRET_ACCESS_KEY={s['AWS secret access key']} "
               f"curl -H 'Authorization: Bearer {s['bearer token']}' "
               f"'https://maps.googleapis.com/api?key={s['Google API key']}'")
    output = (f"Error: token {s['GitHub token']} was rejected (401)\n"
              f"OPENAI_API_KEY={s['OpenAI API key']}\n"
              f"ANTHROPIC_API_KEY={s['Anthropic API key']}\n"
              f"loaded key:\n{s['private key']}\n"
              f"DATABASE_URL=postgres://app:{s['password in URL']}@db.internal:5432/orders")
    return write_transcript(path, [
        user("Deploy the maps service", "u1"),
        assistant(bash("t1", command)),
        result("t1", output, error=True),
        assistant({"type": "text", "text": f"The session token {s['JWT']} had expired; refreshing the config."},
                  {"type": "tool_use", "id": "t2", "name": "Edit",
                   "input": {"file_path": "/repo/.env", "old_string": "a", "new_string": "b"}}),
        result("t2", "The file has been updated."),
        assistant(bash("t3", command)),
        result("t3", "200 OK"),
        assistant({"type": "text", "text": "I'll keep the old Slack token."}, uuid="a9"),
        user(f"No, use {s['Slack token']} and password={s['password']} instead", "u9"),
    ])


MARKERS = ["[redacted: AWS access key id]", "[redacted: AWS secret access key]", "[redacted: GitHub token]",
           "[redacted: OpenAI API key]", "[redacted: Anthropic API key]", "[redacted: private key]",
           "[redacted: password in URL]", "[redacted: JWT]", "[redacted: Slack token]", "[redacted: password]"]


def inbox_text(vault: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((vault / "Inbox").glob("*.md")))


# ---------------------------------------------------------------------------- auto-learn

def test_learn_from_a_transcript_full_of_secrets_writes_none_of_them_anywhere(vault, tmp_path):
    transcript = secret_transcript(tmp_path / "session.jsonl")
    done = cli(vault, "learn", "--from-transcript", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert len(data["learned"]) == 2, data     # the error-then-fix and the correction
    assert leaks(vault) == []
    text = inbox_text(vault)
    for marker in MARKERS:
        assert marker in text, marker
    assert [e["title"] for e in events(vault) if e["event"] == "learned"] == \
        [card_meta(vault / rel)["title"] for rel in data["learned"]]
    for secret in SECRETS.values():   # nor in what the command prints
        assert secret not in done.stdout


def test_the_stop_hook_learns_a_transcript_full_of_secrets_without_writing_them(vault, tmp_path):
    transcript = secret_transcript(tmp_path / "session.jsonl")
    output, err = hook(vault, "stop", payload("Stop", transcript, stop_hook_active=False))
    assert output is None, err
    assert len(list((vault / "Inbox").glob("Learned_*.md"))) == 2
    assert leaks(vault) == []
    assert "[redacted: GitHub token]" in inbox_text(vault)
    # Learning it again changes nothing: the redacted lesson is recognised as already learned.
    before = {p.name: p.read_bytes() for p in (vault / "Inbox").iterdir()}
    hook(vault, "stop", payload("Stop", transcript, stop_hook_active=False))
    assert {p.name: p.read_bytes() for p in (vault / "Inbox").iterdir()} == before


def test_a_secret_cut_by_a_title_or_an_excerpt_does_not_leave_its_first_half(vault, tmp_path):
    # The correction's title is cut at 110 characters, right inside the GitHub token.
    token = SECRETS["GitHub token"]
    text = "No, " + "x" * 90 + " use " + token + " instead"
    transcript = write_transcript(tmp_path / "t.jsonl", [
        user("Set it up", "u0"), assistant({"type": "text", "text": "I'll use the default token."}, uuid="a1"),
        user(text, "u1")])
    assert cli(vault, "learn", "--from-transcript", str(transcript)).returncode == 0
    names = " ".join(p.name for p in (vault / "Inbox").iterdir())
    assert token[:8] not in names and token[:8] not in inbox_text(vault)
    assert "[redacted: GitHub token]" in inbox_text(vault)


def test_the_tail_of_a_long_private_key_in_a_failed_command_is_not_kept(vault, tmp_path):
    # Only the last lines of a failed command's output are kept: here the key's BEGIN line is
    # cut off and its last 11 lines and END line remain.
    key = "\n".join(fake(100 + n, 64, ALNUM + "+/") for n in range(30))
    output = f"loading the deploy key\n-----BEGIN OPENSSH PRIVATE KEY-----\n{key}\n-----END OPENSSH PRIVATE KEY-----\n" \
             "Error: the key was rejected"
    transcript = write_transcript(tmp_path / "t.jsonl", [
        user("Deploy", "u0"), assistant(bash("t1", "ssh-add deploy_key")), result("t1", output, error=True),
        assistant({"type": "tool_use", "id": "t2", "name": "Edit",
                   "input": {"file_path": "/repo/deploy_key", "old_string": "a", "new_string": "b"}}),
        result("t2", "ok"), assistant(bash("t3", "ssh-add deploy_key")), result("t3", "Identity added")])
    assert cli(vault, "learn", "--from-transcript", str(transcript)).returncode == 0
    text = inbox_text(vault)
    assert "[redacted: private key]" in text and "Error: the key was rejected" in text
    assert not [line for line in key.splitlines() if line[:16] in text]


# ---------------------------------------------------------------------------- pre-compact and what hooks inject

def test_pre_compact_keeps_the_session_state_without_its_secrets_and_session_start_injects_none(vault, tmp_path):
    s = SECRETS
    transcript = write_transcript(tmp_path / "s.jsonl", [
        user(f"Connect with postgres://app:{s['password in URL']}@db:5432/x and token {s['GitHub token']}", "u1"),
        assistant(bash("t1", f"AWS_ACCESS_KEY_ID={s['AWS access key id']} aws s3 ls")),
        result("t1", f"An error occurred: key {s['AWS access key id']} / {s['AWS secret access key']} denied",
               error=True),
        assistant({"type": "text", "text": f"Here is the key I found:\n{s['private key']}"}),
    ])
    output, err = hook(vault, "pre-compact", payload("PreCompact", transcript, trigger="auto"))
    assert output is None, err
    saved = (vault / "WorkingMemory" / f"session-{SESSION}.md").read_text(encoding="utf-8")
    for marker in ("[redacted: password in URL]", "[redacted: GitHub token]", "[redacted: AWS access key id]",
                   "[redacted: private key]"):
        assert marker in saved, (marker, saved)
    assert leaks(vault) == []
    output, _ = hook(vault, "session-start", payload("SessionStart", source="compact"))
    context = context_of(output, "SessionStart")
    assert "[redacted: GitHub token]" in context
    assert not any(secret in context for secret in SECRETS.values())


def test_what_hooks_inject_is_redacted_though_the_vault_keeps_what_was_stored_on_purpose(vault, tmp_path):
    token, password = SECRETS["GitHub token"], SECRETS["password"]
    ok_data("remember", "deploy-notes", "--body", f"CI uses {token} for the release job")
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "deploy,release",
            "--title", "Release job credentials", "--project", "shop",
            "--body", f"The release job logs in with DB_PASSWORD={password} and the token {token}.")
    output, _ = hook(vault, "session-start", payload("SessionStart", cwd=tmp_path, source="startup"))
    context = context_of(output, "SessionStart")
    assert "deploy-notes" in context and "[redacted: GitHub token]" in context and token not in context
    output, _ = hook(vault, "prompt", payload("UserPromptSubmit", prompt=f"release job credentials, token {token}"))
    context = context_of(output, "UserPromptSubmit")
    assert "Release job credentials" in context
    assert token not in context and password not in context and "[redacted: GitHub token]" in context


# ---------------------------------------------------------------------------- search misses

def test_a_search_miss_with_a_token_in_the_query_keeps_no_token(vault):
    token = SECRETS["GitHub token"]
    done = cli(vault, "search", f"push rejected for {token} on acme/shop", "--json")
    assert done.returncode == 0, done.stderr
    candidates = list((vault / "Inbox").glob("Search_Miss_*.md"))
    assert len(candidates) == 1 and token not in candidates[0].name
    meta = card_meta(candidates[0])
    assert meta["query"] == "push rejected for [redacted: GitHub token] on acme/shop"
    assert meta["title"] == "Search miss: push rejected for [redacted: GitHub token] on acme/shop"
    assert [e["query"] for e in events(vault) if e["event"] == "search_miss"] == [meta["query"]]
    assert leaks(vault) == []
    # The same query again bumps the same candidate.
    cli(vault, "search", f"push rejected for {token} on acme/shop")
    assert card_meta(candidates[0])["misses"] == 2 and len(list((vault / "Inbox").glob("Search_Miss_*.md"))) == 1


# ---------------------------------------------------------------------------- ingest through a chat model

def test_ingest_through_a_chat_model_sends_and_keeps_no_secret_but_the_rules_keep_the_text(vault):
    from test_ingest import ChatModel, configure_model

    token, password = SECRETS["GitHub token"], SECRETS["password"]
    text = f"The deploy bot token is {token}. The staging DB password={password} was rotated yesterday."
    (vault.parent / "in.txt").write_text(text, encoding="utf-8")
    model = ChatModel()
    try:
        # The model echoes a secret it was given (or makes one up): the cards still get none.
        model.statements = [{"text": f"The deploy bot token is {token}", "kind": "fact", "subject": "deploy bot|token"}]
        configure_model(vault, "ollama", model.port)
        data = ok_data("ingest", str(vault.parent / "in.txt"))
        sent = json.dumps([body for _, body, _ in model.requests])
    finally:
        model.stop()
    assert token not in sent and password not in sent and "[redacted: GitHub token]" in sent
    assert [i["statement"] for i in data["items"]] == ["The deploy bot token is [redacted: GitHub token]"]
    assert leaks(vault) == []
    # Without a chat model, ingest keeps the text as written: the user sent it to be stored.
    (vault / ".brain" / "config.toml").write_text("", encoding="utf-8")
    data = ok_data("ingest", str(vault.parent / "in.txt"))
    assert any(token in i["statement"] for i in data["items"])


# ---------------------------------------------------------------------------- kept as written

def test_what_is_stored_on_purpose_is_kept_as_written(vault):
    token, key = SECRETS["GitHub token"], SECRETS["OpenAI API key"]
    created = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "ci", "--title", f"CI token {token}",
                      "--body", f"The CI token is {token}.")
    assert token in (vault / created["path"]).read_text(encoding="utf-8")
    assert token in created["path"]   # the title the user chose names the file
    ok_data("update", created["id"], "--body", f"The CI token is {token}; the model key is {key}.")
    assert key in (vault / created["path"]).read_text(encoding="utf-8")
    ok_data("remember", "ci", "--body", f"token {token}")
    assert token in (vault / "WorkingMemory" / "ci.md").read_text(encoding="utf-8")
    learned = ok_data("learn", "--title", "CI token rotation", "--type", "runbook", "--domain", "infra",
                      "--tags", "ci", "--problem", f"{token} expired", "--solution", "rotate it")
    assert token in (vault / learned["path"]).read_text(encoding="utf-8")


def test_mcp_store_memory_and_http_post_memories_keep_the_content_as_written(vault):
    from test_http import start, stop
    from test_mcp import Server, data_of

    token = SECRETS["GitHub token"]
    server = Server(vault)
    try:
        server.initialize()
        stored = data_of(server.call("store_memory", {"content": f"CI token {token}", "context_name": "ci", "tags": ["ci"]}),
                         "store_memory")
    finally:
        server.close()
    assert token in (vault / stored["path"]).read_text(encoding="utf-8")
    api = start(vault)
    try:
        status, _, data = api.call("POST", "/v1/memories", {"content": f"Deploy key {token}", "memory_type": "fact"})
    finally:
        stop(api.process)
    assert status == 201, data
    assert any(token in p.read_text(encoding="utf-8") and "Deploy key" in p.read_text(encoding="utf-8")
               for p in (vault / "Playbooks").glob("*.md"))


# ---------------------------------------------------------------------------- doctor

def test_doctor_says_where_secrets_are_and_never_what_they_are(vault):
    token, password = SECRETS["GitHub token"], SECRETS["password"]
    write_card(vault, "Playbooks/Runbook_Release.md",
               "---\ntitle: Release\ntype: runbook\ndomain: infra\n---\n# Release\n\n1. Log in.\n"
               f"2. Export GITHUB_TOKEN={token}\n3. Push.\n")
    ok_data("remember", "db", "--body", f"staging\npassword: {password}")
    doomed = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "x", "--title", "Old key",
                     "--body", f"key {SECRETS['AWS access key id']}")
    ok_data("delete", doomed["id"])   # the log keeps the deleted file, secret and all
    (vault / "Inbox" / f"Search_Miss_{token}.md").write_text("---\ntitle: old miss\n---\n", encoding="utf-8")
    log_line = next(n for n, line in enumerate((vault / "logs" / "events.jsonl").read_text().splitlines(), 1)
                    if '"deleted"' in line)
    done = cli(vault, "doctor", "--json")
    assert token not in done.stdout + done.stderr and password not in done.stdout + done.stderr
    assert SECRETS["AWS access key id"] not in done.stdout + done.stderr
    findings = {f["path"]: f for f in json.loads(done.stdout)["data"]["findings"]
                if "(not shown here)" in f["message"]}
    assert findings["Playbooks/Runbook_Release.md:9"]["message"] == "looks like a GitHub token (not shown here)"
    assert findings["Playbooks/Runbook_Release.md:9"]["level"] == "warning"
    memory_line = next(n for n, line in enumerate((vault / "WorkingMemory" / "db.md").read_text().splitlines(), 1)
                       if line.startswith("password:"))
    assert findings[f"WorkingMemory/db.md:{memory_line}"]["message"] == "looks like a password (not shown here)"
    assert f"logs/events.jsonl:{log_line}" in findings
    assert "Inbox/Search_Miss_[redacted: GitHub token].md" in findings
    text = cli(vault, "doctor")
    assert "warning: Playbooks/Runbook_Release.md:9: looks like a GitHub token (not shown here) -> " in text.stdout
    assert token not in text.stdout + text.stderr


# ---------------------------------------------------------------------------- tokens typed in order (review7)
# A GitHub token whose body runs through the alphabet, and a bearer token of token length that does: the
# made-up-key check (meant for `AKIAXXXX...` examples) let both through auto-learn as written.
ORDERED_GITHUB = "gh" + "p_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
ORDERED_BEARER = "abcdefghijklmnopqrstuvwxyz012345"


def ordered_token_transcript(path: Path) -> Path:
    return write_transcript(path, [
        user("Check the release API", "u1"),
        assistant(bash("t1", f"curl -fsS -H 'Authorization: Bearer {ORDERED_GITHUB}' https://api.github.com/repos/acme/x")),
        result("t1", "curl: (22) The requested URL returned error: 404", error=True),
        assistant(bash("t2", f"curl -fsS -H 'Authorization: Bearer {ORDERED_BEARER}' https://api.example.com/v2/ping")),
        result("t2", f"Error: Authorization: Bearer {ORDERED_BEARER} rejected (401)\n"
                     f"hint: the deploy key is Authorization: Bearer {ORDERED_GITHUB}", error=True),
        assistant({"type": "tool_use", "id": "t3", "name": "Edit",
                   "input": {"file_path": "/repo/.env", "old_string": "a", "new_string": "b"}}),
        result("t3", "The file has been updated."),
        assistant(bash("t4", f"curl -fsS -H 'Authorization: Bearer {ORDERED_GITHUB}' https://api.github.com/repos/acme/x")),
        result("t4", '{"id": 1}'),
        assistant(bash("t5", f"curl -fsS -H 'Authorization: Bearer {ORDERED_BEARER}' https://api.example.com/v2/ping")),
        result("t5", "pong"),
    ])


def _holds(vault: Path, needle: str) -> list[str]:
    return [p.relative_to(vault).as_posix() for p in sorted(vault.rglob("*"))
            if needle in p.relative_to(vault).as_posix() or (p.is_file() and needle.encode() in p.read_bytes())]


def test_auto_learn_redacts_a_github_token_and_a_bearer_token_typed_in_alphabet_order(vault, tmp_path):
    transcript = ordered_token_transcript(tmp_path / "ordered.jsonl")
    done = cli(vault, "learn", "--from-transcript", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["learned"], done.stdout
    assert _holds(vault, ORDERED_GITHUB) == [] and _holds(vault, ORDERED_BEARER) == []
    text = inbox_text(vault)
    assert "Authorization: Bearer [redacted: GitHub token]" in text
    assert "Authorization: Bearer [redacted: bearer token]" in text
    assert ORDERED_GITHUB not in done.stdout and ORDERED_BEARER not in done.stdout


def test_pre_compact_redacts_tokens_typed_in_alphabet_order(vault, tmp_path):
    transcript = write_transcript(tmp_path / "ordered.jsonl", [   # the command is still failing: it is kept
        user("Check the release API", "u1"),
        assistant(bash("t1", f"curl -fsS -H 'Authorization: Bearer {ORDERED_GITHUB}' https://api.github.com/x")),
        result("t1", f"Error: Authorization: Bearer {ORDERED_BEARER} rejected (401)", error=True)])
    output, err = hook(vault, "pre-compact", payload("PreCompact", transcript, trigger="auto"))
    assert output is None, err
    assert (vault / "WorkingMemory" / f"session-{SESSION}.md").is_file()
    assert _holds(vault, ORDERED_GITHUB) == [] and _holds(vault, ORDERED_BEARER) == []


def test_create_keeps_an_ordered_token_as_written_and_doctor_says_where_it_is(vault):
    # `create` stores what it is given (decision 0029); doctor, the same judgement, finds it.
    made = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "x", "--title", "Release token",
                   "--body", f"Authorization: Bearer {ORDERED_GITHUB}")
    assert ORDERED_GITHUB in (vault / made["path"]).read_text(encoding="utf-8")
    done = cli(vault, "doctor", "--json")
    assert ORDERED_GITHUB not in done.stdout + done.stderr
    messages = [f["message"] for f in json.loads(done.stdout)["data"]["findings"] if f["path"].startswith(made["path"])]
    assert "looks like a GitHub token (not shown here)" in messages, messages


# ---------------------------------------------------------------------------- reshaped before it was judged (secrets review)
# Auto-learn reshapes what it keeps: titles lose their quotes, an edit shows only the lines it
# added, a failed command only its last lines. Each secret below was found in the text as written
# and leaked once the text was reshaped (decision 0029, "Secrets review").

def fix_cycle(command: str, output: str, edit: dict | None = None, tool: str = "Edit") -> list[dict]:
    """A command fails with `output`, an edit, the command passes, the user moves on."""
    edit = edit or {"file_path": "/repo/app.py", "old_string": "a", "new_string": "b"}
    return [user("Deploy it", "u0"), assistant(bash("t1", command)), result("t1", output, error=True),
            assistant({"type": "tool_use", "id": "t2", "name": tool, "input": edit}), result("t2", "ok"),
            assistant(bash("t3", command)), result("t3", "done"), user("Thanks, next task.", "u9")]


def learned_from(vault: Path, tmp_path: Path, lines: list[dict]) -> subprocess.CompletedProcess:
    done = cli(vault, "learn", "--from-transcript", str(write_transcript(tmp_path / "t.jsonl", lines)), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["learned"], done.stdout
    return done


def test_a_quoted_password_in_an_error_line_or_a_correction_is_not_in_the_title_file_name_or_log(vault, tmp_path):
    # Quoted, a word given to a password is one; the title drops the quotes, and unquoted it read
    # as a setting (`PGPASSWORD=postgres`): the file name, the title and the `learned` event held it.
    done = learned_from(vault, tmp_path, [
        *fix_cycle("./deploy.sh", 'Error: the server rejected DB_PASSWORD="sunflower" for user app'),
        assistant({"type": "text", "text": "I'll keep the default password."}, uuid="a9"),
        user("No, set ADMIN_PASSWORD='bluebird' instead.", "u10")])
    assert _holds(vault, "sunflower") == [] and _holds(vault, "bluebird") == []
    assert "sunflower" not in done.stdout and "bluebird" not in done.stdout
    titles = [e["title"] for e in events(vault) if e["event"] == "learned"]
    assert titles == ["deploy.sh: Error: the server rejected DB_PASSWORD=[redacted: password] for user app",
                      "Correction: set ADMIN_PASSWORD=[redacted: password] instead."], titles


def test_an_edit_that_rotates_a_private_key_shows_no_line_of_the_new_key(vault, tmp_path):
    # Only the lines an edit adds are shown: here the new key's body lines, without the BEGIN
    # and END lines they share with the old key (an EC key's first body line holds its secret).
    def key(seed: int) -> str:
        body = "\n".join(fake(seed + n, 64, ALNUM + "+/") for n in range(3))
        return f"-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----"
    new = key(300)
    done = learned_from(vault, tmp_path, fix_cycle(
        "ssh-add deploy_key", "Error: the key was rejected",
        {"file_path": "/repo/deploy_key", "old_string": key(200), "new_string": new}))
    body = new.splitlines()[1:-1]
    assert [line for line in body if _holds(vault, line[:16]) or line[:16] in done.stdout] == []
    assert "edited `/repo/deploy_key` (+ `[redacted: private key]`)" in inbox_text(vault)


def test_a_private_key_written_by_the_write_tool_shows_no_line_of_its_body(vault, tmp_path):
    new = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(fake(400 + n, 64, ALNUM + "+/") for n in range(4)) + \
        "\n-----END PRIVATE KEY-----\n"
    learned_from(vault, tmp_path, fix_cycle("ssh-add deploy_key", "Error: the key was rejected",
                                            {"file_path": "/repo/deploy_key", "content": new}, tool="Write"))
    assert [line for line in new.splitlines()[1:-1] if _holds(vault, line[:16])] == []
    assert "edited `/repo/deploy_key` (+ `[redacted: private key]`)" in inbox_text(vault)


def test_a_failed_output_that_ends_inside_a_private_key_keeps_none_of_it(vault, tmp_path):
    # The last 12 lines are kept: all body lines of a key whose BEGIN line is above them and whose
    # END line never came (the command failed while printing it).
    body = [fake(500 + n, 64, ALNUM + "+/") for n in range(30)]
    output = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body[:25])
    learned_from(vault, tmp_path, fix_cycle("./print-key.sh deploy", output))
    assert [line for line in body if _holds(vault, line[:16])] == []
    assert "[redacted: private key]" in inbox_text(vault)


def test_a_password_in_json_held_in_a_json_string_is_redacted(vault, tmp_path):
    # `aws secretsmanager get-secret-value` prints the secret as JSON inside a JSON string.
    output = ('{\n    "Name": "prod/db",\n    "SecretString": "{\\"username\\":\\"admin\\",\\"password\\":\\"Kq7#mZ2pLx\\"}"\n}\n'
              "Error: could not connect to db.internal:5432")
    learned_from(vault, tmp_path, fix_cycle("aws secretsmanager get-secret-value --secret-id prod/db && ./migrate",
                                            output))
    assert _holds(vault, "Kq7#mZ2pLx") == []
    assert '\\"password\\":\\"[redacted: password]\\"' in inbox_text(vault)


def test_passwords_given_to_commands_cookies_and_japanese_quotes_are_redacted_by_auto_learn(vault, tmp_path):
    # Shapes the labelled set's second held-out part found missing (decision 0029, "Secrets review").
    telegram = fake(600, 9, string.digits) + ":AA" + fake(601, 33, ALNUM + "-_")
    cookie = fake(602, 48)
    secrets = ["Xk9$mQ2wLp7", "S3cr3tPass!", "Wq4!nZ8r", "Vq3#nT8w", "Mz8!qR4t", cookie, telegram]
    output = (f"+ docker login -u ci -p {secrets[0]} registry.example.com\n"
              f"+ mysql -uroot -p{secrets[1]} -h 127.0.0.1 shop\n"
              f"+ sshpass -p '{secrets[2]}' ssh deploy@10.0.4.7 true\n"
              f"+ echo 'db.internal:5432:orders:app:{secrets[3]}' >> ~/.pgpass\n"
              f"本番環境のパスワードは「{secrets[4]}」です\n"
              f"> Cookie: sessionid={cookie}\n"
              f"+ curl https://api.telegram.org/bot{telegram}/getMe\n"
              "Error: deploy failed (exit 1)")
    done = learned_from(vault, tmp_path, fix_cycle("./deploy.sh", output))
    assert [secret for secret in secrets if _holds(vault, secret) or secret in done.stdout] == []
    text = inbox_text(vault)
    for shown in ("-p [redacted: password] registry.example.com", "-p[redacted: password] -h", "パスワードは「[redacted: password]」",
                  "sessionid=[redacted: token]", "bot[redacted: Telegram bot token]/getMe"):
        assert shown in text, shown


def test_what_the_user_said_to_do_instead_keeps_no_password_its_clauses_were_cut_from(vault, tmp_path):
    # The solution keeps the clauses of a correction that say what to do; cut from "password:",
    # a quoted word alone read as no secret.
    learned_from(vault, tmp_path, [
        user("Connect the app to the database", "u0"), assistant(bash("t1", "./migrate")),
        result("t1", "FATAL: password authentication failed for user app", error=True),
        assistant(bash("t2", "export PGPASSWORD=postgres")), result("t2", ""),
        user("No, never the old password: 'sunflower7' is the new one.", "u1")])
    assert _holds(vault, "sunflower7") == []
    assert "'[redacted: password]' is the new one." in inbox_text(vault)


# ---------------------------------------------------------------------------- every labelled secret, every place

def _labelled_secrets():
    from helpers import ROOT

    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from redaction_cases import CASES

    from test_redaction import KNOWN_MISSES

    return [case for case in CASES if case.secrets and case.id not in KNOWN_MISSES]


def _needles(case) -> list[str]:
    """What must not be kept of a case's secrets: each value, or each body line of a key."""
    out = []
    for _, value in case.secrets:
        lines = value.replace("\\n", "\n").splitlines()
        out += [line.strip()[:16] for line in lines[1:-1] if len(line.strip()) >= 16] if len(lines) > 1 else [value]
    return out


def _round(place: str, n: int, text: str) -> list[dict]:
    """One session step that puts `text` where auto-learn keeps it: a failed command's output or its
    telling line, a file the fix wrote, the command itself, or a user's correction."""
    command = f"./step{n}.sh" + (" " + " ".join(text.split()) if place == "command" else "")
    output = {"output": f"running\n{text}\nError: step {n} failed",
              "telling line": "Error: " + " ".join(text.split())}.get(place, f"Error: step {n} failed")
    if place == "correction":
        return [user(f"Step {n}", f"u{n}"), assistant({"type": "text", "text": f"I'll use the default for step {n}."}, uuid=f"x{n}"),
                user(f"No, use this instead: {text}", f"v{n}")]
    fix = {"type": "tool_use", "id": f"e{n}", "name": "Write",
           "input": {"file_path": f"/repo/step{n}.cfg", "content": text if place == "written file" else f"fix {n}"}}
    return [user(f"Step {n}", f"u{n}"), assistant(bash(f"a{n}", command)), result(f"a{n}", output, error=True),
            assistant(fix), result(f"e{n}", "ok"), assistant(bash(f"b{n}", command)), result(f"b{n}", "ok"),
            user("Thanks.", f"v{n}")]


@pytest.mark.parametrize("place", ["output", "telling line", "written file", "command", "correction"])
def test_no_labelled_secret_survives_auto_learn_wherever_the_session_holds_it(vault, tmp_path, place):
    # Every secret of the labelled set (tests/bench/redaction_cases.py), each in one step of a session,
    # learned by the real `learn` process: nothing of it in any file, file name or the output.
    cases = _labelled_secrets()
    transcript = write_transcript(tmp_path / "t.jsonl", [line for n, case in enumerate(cases)
                                                          for line in _round(place, n, case.text)])
    done = cli(vault, "learn", "--from-transcript", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["data"]["learned"]) > len(cases) // 2
    kept = b"\n".join([done.stdout.encode()] + [p.relative_to(vault).as_posix().encode() for p in vault.rglob("*")]
                      + [p.read_bytes() for p in vault.rglob("*") if p.is_file()])
    assert [case.id for case in cases if any(needle.encode() in kept for needle in _needles(case))] == []


def test_a_program_name_that_is_a_secret_is_no_tag_and_not_in_the_title(vault, tmp_path):
    # A key pasted where a command goes: its first word was the lesson's program, lower-cased
    # (`akia...`, which the key's shape no longer matches) into the title, the file name and a tag.
    key = SECRETS["AWS access key id"]
    done = learned_from(vault, tmp_path, fix_cycle(f"{key} s3 ls", f"bash: line 1: {key}: command not found"))
    assert _holds(vault, key) == [] and _holds(vault, key.lower()) == []
    assert key.lower() not in done.stdout.lower()
    (lesson,) = json.loads(done.stdout)["data"]["lessons"]
    assert lesson["tags"] == ["auto-learn"], lesson


def test_a_secret_given_to_a_variable_before_the_program_leaves_the_program_its_tag(vault, tmp_path):
    # The marker `[redacted: password]` holds a space: split into words, its second half was
    # taken for the program, and `psql` lost its tag.
    done = learned_from(vault, tmp_path, fix_cycle("PGPASSWORD=Tr0ub4dor psql -h db -U app orders",
                                                   "psql: error: FATAL: database orders does not exist"))
    (lesson,) = json.loads(done.stdout)["data"]["lessons"]
    assert lesson["tags"] == ["auto-learn", "psql"] and "Tr0ub4dor" not in done.stdout, lesson


def test_a_plain_word_given_to_a_name_that_says_password_is_redacted_and_its_look_alikes_kept(vault, tmp_path):
    # Before, only a quoted word or one with a digit or a symbol counted: `PGPASSWORD=orchard` and
    # compose's `POSTGRES_PASSWORD: sandcastle` were kept as written. The name judges a plain word
    # (decision 0029, "A plain word given to a name that says secret"); a name whose last part says
    # something else of a secret, a placeholder and code that names a variable stay as written.
    compose = ("services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: sandcastle\n"
               "      PASSWORD_MIN_LENGTH: 12\n      TOKEN_TTL: 3600\n      MYSQL_ROOT_PASSWORD: changeme\n")
    code = "    return psycopg.connect(host=HOST, password=hashed)"
    done = learned_from(vault, tmp_path, [
        *fix_cycle("PGPASSWORD=orchard psql -h db -U app orders", "psql: error: FATAL: database orders does not exist"),
        *fix_cycle("docker compose up db", compose + "Error: service db exited with code 1")[1:],
        *fix_cycle("./migrate", f"  File \"db.py\", line 9, in connect\n{code}\nError: wrong password")[1:]])
    assert _holds(vault, "orchard") == [] and _holds(vault, "sandcastle") == []
    assert "orchard" not in done.stdout and "sandcastle" not in done.stdout
    text = inbox_text(vault)
    assert "PGPASSWORD=[redacted: password]" in text and "POSTGRES_PASSWORD: [redacted: password]" in text
    for kept in ("PASSWORD_MIN_LENGTH: 12", "TOKEN_TTL: 3600", "MYSQL_ROOT_PASSWORD: changeme", "password=hashed)"):
        assert kept in text, kept
