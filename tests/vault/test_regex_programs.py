"""Regular expressions compiled once per interpreter (`vault.regex_programs`): a real CLI process
keeps the programs of the patterns it compiled beside its bytecode, a later process builds its
Patterns from them without compiling, every such Pattern is the one `re.compile` makes (equal:
same pattern, flags and program), and a damaged, foreign or refused file changes no answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, SCRIPT

RUNTIME = ROOT / "runtime"
JAPANESE = ("create", "--type", "troubleshooting", "--domain", "dev", "--tags", "ecs,timeout", "--title",
            "ECS タスクの接続タイムアウト", "--body", "接続がタイムアウトする。SG を確認する。")


def brain(vault: Path, prefix: Path, *argv: str) -> dict:
    """One CLI process with its bytecode (and so its kept programs) under `prefix`."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(prefix), BRAIN_VAULT=str(vault), BRAIN_ACTOR="test")
    done = subprocess.run([sys.executable, str(SCRIPT), "--json", *argv], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["data"]


def store(prefix: Path) -> Path:
    (found,) = prefix.rglob("regex-programs.*.json")
    return found


def in_process(prefix: Path, code: str) -> str:
    """Run `code` in a fresh interpreter whose bytecode prefix is `prefix`; its stdout."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(RUNTIME)!r})\n{code}"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_process_builds_from_the_kept_programs_the_patterns_re_compile_makes(vault: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    brain(vault, prefix, "create", "--type", "fact", "--domain", "dev", "--tags", "redis,cache",
          "--title", "Redis cache node memory limit", "--body", "The redis cache node has 8 GB.")
    brain(vault, prefix, *JAPANESE)
    kept = json.loads(store(prefix).read_text(encoding="utf-8"))["programs"]
    assert len(kept) >= 20
    # The big kana and kanji classes of the analyser are among them.
    assert any(r"\u4e00-\u9fff" in key for key in kept)
    # A new process: every kept pattern is built without compiling, and equals re.compile's.
    out = in_process(prefix, """
import json, re
from re import _compiler
compiled = []
real = _compiler.compile
_compiler.compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)
from external_brain.vault import regex_programs
kept = regex_programs._load()
patterns = {key: regex_programs.compile_pattern(key.split(":", 1)[1], int(key.split(":", 1)[0])) for key in kept}
built = len(compiled)
_compiler.compile = real
unequal = [key for key, pattern in patterns.items() if pattern != re.compile(key.split(":", 1)[1], int(key.split(":", 1)[0]))]
print(json.dumps({"kept": len(kept), "compiled": built, "unequal": unequal}))
""")
    report = json.loads(out)
    assert report["kept"] == len(kept) and report["unequal"] == [] and report["compiled"] == 0, report


def test_a_damaged_or_foreign_file_of_programs_changes_no_answer(vault: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "pycache"
    first = brain(vault, prefix, *JAPANESE)
    brain(vault, prefix, "delete", first["path"])
    path = store(prefix)
    stored = json.loads(path.read_text(encoding="utf-8"))
    key = next(key for key in stored["programs"] if "\u3040" in key or "\\u3040" in key)
    variants = {
        "not json": "{not json",
        "another interpreter": json.dumps({**stored, "interpreter": "3.0.0|0|4|1114111|little|2"}),
        "a program _sre refuses": json.dumps({**stored, "programs": {
            **stored["programs"], key: [stored["programs"][key][0], "ffffffff" * 4, *stored["programs"][key][2:]]}}),
        "a program of the wrong shape": json.dumps({**stored, "programs": {k: 5 for k in stored["programs"]}}),
    }
    for what, text in variants.items():
        path.write_text(text, encoding="utf-8")
        again = brain(vault, prefix, *JAPANESE)
        assert again["insights"] == first["insights"], what
        brain(vault, prefix, "delete", again["path"])
        # The file is whole again (rewritten with the programs compiled anew), or as it was.
        assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict) or what == "not json"
    # Nothing is written when bytecode is not (PYTHONDONTWRITEBYTECODE): the usual compile.
    path.unlink()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix),
           "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--json", *JAPANESE], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["insights"] == first["insights"]
    assert not list(prefix.rglob("regex-programs.*.json"))


def test_every_pattern_of_the_package_kept_in_process_equals_re_compile(tmp_path: Path) -> None:
    """Each LazyPattern of the judged rules (and its ASCII form) and each pattern the modules
    compile through `compile_pattern`, kept and built again from the file, is re.compile's."""
    out = in_process(tmp_path / "pycache", """
import json, re, sys
from external_brain.judging import claims, judgements, subjects, redaction
from external_brain.judging.lazy import LazyPattern
from external_brain.vault import regex_programs
sources = []
for module in (claims, judgements, subjects, redaction):
    for value in vars(module).values():
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            item = item[0] if isinstance(item, tuple) and item else item
            if isinstance(item, LazyPattern):
                sources.append((item.pattern, item.flags))
                if item.ascii_pattern:
                    sources.append((item.ascii_pattern, item.flags))
for source, flags in sources:
    regex_programs.compile_pattern(source, flags)
regex_programs._STATE.clear()          # as a new process: read back from the file
unequal = [source for source, flags in sources
           if regex_programs.compile_pattern(source, flags) != re.compile(source, flags)]
print(json.dumps({"patterns": len(sources), "kept": len(regex_programs._load()), "unequal": unequal}))
""")
    report = json.loads(out)
    assert report["patterns"] >= 50 and report["kept"] >= 50 and report["unequal"] == [], report
