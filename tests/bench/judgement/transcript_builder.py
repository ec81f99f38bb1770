"""Writes Claude Code session transcripts in the shape Claude Code itself writes them
(~/.claude/projects/<project>/<session>.jsonl): one JSON object per line; `summary` lines first;
user and assistant lines carrying `parentUuid`, `uuid`, `sessionId`, `cwd`, `version`,
`gitBranch`, `timestamp`; each assistant content block on a line of its own sharing the API
message id; tool results as user lines with `toolUseResult`; slash-command and reminder lines
marked `isMeta`; a tool call the user refused answered by Claude Code's own refusal text.

`python3 transcript_builder.py` rewrites the committed files in transcripts/ from the scripts in
transcript_cases.py (deterministic: uuids and times come from the session name and line number).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

VERSION = "1.0.98"
MODEL = "claude-sonnet-4-20250514"
REFUSED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
           "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
           "tell you how to proceed.")


def _uuid(*parts: Any) -> str:
    digest = hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


class Session:
    """Builds one transcript. Steps are method calls; `lines` is the JSONL objects."""

    def __init__(self, name: str, cwd: str = "/home/dev/work/shop-api", branch: str = "main",
                 start: str = "2026-11-20T09:00:00", session_id: str | None = None) -> None:
        self.name = name
        self.session_id = session_id or _uuid("session", name)
        self.cwd, self.branch = cwd, branch
        self.clock = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.calls = 0

    # ------------------------------------------------------------------ plumbing
    def _tick(self, seconds: float = 7.0) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _base(self, kind: str) -> dict[str, Any]:
        uuid = _uuid(self.session_id, len(self.lines))
        line = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                "sessionId": self.session_id, "version": VERSION, "gitBranch": self.branch, "type": kind,
                "uuid": uuid, "timestamp": self._tick()}
        self.parent = uuid
        return line

    def summary(self, text: str) -> "Session":
        self.lines.append({"type": "summary", "summary": text, "leafUuid": _uuid(self.session_id, "leaf")})
        return self

    def user(self, text: str) -> "Session":
        line = self._base("user")
        line["message"] = {"role": "user", "content": text}
        self.lines.append(line)
        return self

    def meta(self, text: str) -> "Session":
        line = self._base("user")
        line["isMeta"] = True
        line["message"] = {"role": "user", "content": text}
        self.lines.append(line)
        return self

    def _assistant_block(self, block: dict[str, Any], message_id: str) -> None:
        line = self._base("assistant")
        line["message"] = {"id": message_id, "type": "message", "role": "assistant", "model": MODEL,
                           "content": [block], "stop_reason": None, "stop_sequence": None,
                           "usage": {"input_tokens": 4, "cache_creation_input_tokens": 812,
                                     "cache_read_input_tokens": 15230, "output_tokens": 96,
                                     "service_tier": "standard"}}
        line["requestId"] = "req_" + _uuid("req", message_id).replace("-", "")[:24]
        self.lines.append(line)

    def say(self, text: str, think: str | None = None) -> "Session":
        message_id = "msg_" + _uuid(self.session_id, "m", len(self.lines)).replace("-", "")[:24]
        if think:
            self._assistant_block({"type": "thinking", "thinking": think, "signature": "EqQBCkYIBRgCKkB"}, message_id)
        self._assistant_block({"type": "text", "text": text}, message_id)
        return self

    def _tool(self, name: str, args: dict[str, Any], text: str | None) -> str:
        self.calls += 1
        call_id = "toolu_" + _uuid(self.session_id, "t", self.calls).replace("-", "")[:24]
        message_id = "msg_" + _uuid(self.session_id, "m", len(self.lines)).replace("-", "")[:24]
        if text:
            self._assistant_block({"type": "text", "text": text}, message_id)
        self._assistant_block({"type": "tool_use", "id": call_id, "name": name, "input": args}, message_id)
        return call_id

    def _result(self, call_id: str, content: str, error: bool, extra: Any) -> None:
        line = self._base("user")
        block = {"tool_use_id": call_id, "type": "tool_result", "content": content}
        if error:
            block["is_error"] = True
        line["message"] = {"role": "user", "content": [block]}
        line["toolUseResult"] = extra
        self.lines.append(line)

    # ------------------------------------------------------------------ tools
    def bash(self, command: str, output: str, error: bool = False, text: str | None = None,
             description: str = "") -> "Session":
        call_id = self._tool("Bash", {"command": command, "description": description or command[:40]}, text)
        if error:
            self._result(call_id, output, True, f"Error: {output}")
        else:
            self._result(call_id, output, False, {"stdout": output, "stderr": "", "interrupted": False,
                                                  "isImage": False})
        return self

    def edit(self, path: str, old: str, new: str, text: str | None = None) -> "Session":
        call_id = self._tool("Edit", {"file_path": path, "old_string": old, "new_string": new}, text)
        self._result(call_id, f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                              f"snippet of the edited file:\n     1\t{new.splitlines()[0] if new else ''}", False,
                     {"filePath": path, "oldString": old, "newString": new, "replaceAll": False})
        return self

    def write(self, path: str, content: str, text: str | None = None) -> "Session":
        call_id = self._tool("Write", {"file_path": path, "content": content}, text)
        self._result(call_id, f"File created successfully at: {path}", False,
                     {"type": "create", "filePath": path, "content": content})
        return self

    def read(self, path: str, content: str, text: str | None = None) -> "Session":
        call_id = self._tool("Read", {"file_path": path}, text)
        numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(content.splitlines(), 1))
        self._result(call_id, numbered, False, {"type": "text", "file": {"filePath": path, "content": content}})
        return self

    def refused(self, name: str, args: dict[str, Any], text: str | None = None) -> "Session":
        """A tool call the user refused at the permission prompt (it never ran)."""
        call_id = self._tool(name, args, text)
        self._result(call_id, REFUSED, True, "Error: " + REFUSED)
        self.user("[Request interrupted by user for tool use]")
        return self

    def write_to(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for line in self.lines:
                handle.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        return path


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from transcript_cases import build_all

    for path in build_all(Path(__file__).parent / "transcripts"):
        print(path)
