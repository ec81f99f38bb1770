"""The judged rules' patterns compiled only when a text can match them (`LazyPattern.needs`,
judging/lazy.py): a text without a rule's words gets the answer the compiled pattern would give,
and a create whose texts lack a rule's words does not compile it (every CLI create pays for each
pattern it compiles: Python's cache of compiled patterns does not outlive the process)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT, create_queue_cards

from external_brain.judging import claims, judgements, subjects
from external_brain.judging.lazy import LazyPattern

SETS = ROOT / "tests" / "bench" / "judgement"


def _rules() -> list[tuple[str, LazyPattern]]:
    """Every judged rule that skips texts by its words."""
    out = []
    for module in (claims, judgements, subjects):
        for name, value in vars(module).items():
            if isinstance(value, LazyPattern) and (value.needs or value.non_ascii):
                out.append((f"{module.__name__.rsplit('.', 1)[-1]}.{name}", value))
    out += [(f"claims.POLE {name} {side}", pattern) for (name, side), pattern in claims._POLE_PATTERNS.items()]
    out += [(f"subjects._CONTRACTIONS {pattern.pattern}", pattern) for pattern, _ in subjects._CONTRACTIONS]
    return out


def _texts() -> list[str]:
    """The labelled sets' lines (cards, probes, statements, prompts, in English and Japanese), and
    each rule's words written in the letters `re.IGNORECASE` matches beyond case folding."""
    lines: set[str] = set()
    for path in SETS.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".py", ".json", ".jsonl", ".txt"):
            lines.update(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    for _, rule in _rules():
        for word in rule.needs:
            for odd in (word.upper().replace("I", "İ"), word.replace("i", "ı"), word.replace("s", "ſ"),
                        word.replace("k", "\u212a"), word.upper()):
                lines.add(f"We {odd} it now")
                lines.add(f"{odd}d the step, not {odd}")
    return sorted(lines)


def test_a_rule_skips_only_texts_its_pattern_cannot_match():
    texts = _texts()
    assert len(texts) > 5000   # the sets are there
    wrong = []
    for name, rule in _rules():
        compiled = re.compile(rule.pattern, rule.flags)
        wrong += [(name, text) for text in texts if rule._cannot(text) and compiled.search(text)]
    assert wrong == []


def test_a_rules_ascii_pattern_finds_what_the_whole_pattern_finds_in_ascii_text():
    texts = [text for text in _texts() if text.isascii()]
    rules = [(name, rule) for module in (claims, judgements, subjects) for name, rule in vars(module).items()
             if isinstance(rule, LazyPattern) and rule.ascii_pattern]
    assert {name for name, _ in rules} >= {"_TOKEN", "_SENTENCE_END"}
    for name, rule in rules:
        whole, ascii_only = re.compile(rule.pattern, rule.flags), re.compile(rule.ascii_pattern, rule.flags)
        for text in texts:
            assert [m.span() for m in ascii_only.finditer(text)] == [m.span() for m in whole.finditer(text)], (name, text)
            assert rule.findall(text) == whole.findall(text) and rule.split(text) == whole.split(text), (name, text)
    assert claims._TOKEN.findall("ECS タスク 3 回") == ["ECS", "タスク", "3", "回"]   # beyond ASCII: the whole pattern


def test_a_word_with_a_dotted_capital_i_is_looked_for_as_ignorecase_matches_it():
    # "İ" folds to "i" and a combining dot, which split the word the rule looks for.
    text = "We ACTİVATED the flag"
    lazy = LazyPattern(r"\bactivat\w*", re.IGNORECASE, needs=("activat",))
    assert re.search(r"\bactivat\w*", text, re.IGNORECASE)
    assert lazy.search(text) is not None
    assert [m.span() for m in lazy.finditer(text)] == [(3, 12)]


@pytest.mark.parametrize("method, args, expected", [
    ("finditer", (), []), ("sub", ("-",), "nothing to see"), ("split", (), ["nothing to see"]),
])
def test_finditer_sub_and_split_on_a_text_without_the_words_compile_nothing(method, args, expected):
    lazy = LazyPattern(r"\bturn(?:s|ed)?\s+off\b", re.IGNORECASE, needs=("turn",))
    result = getattr(lazy, method)(*args, "nothing to see")
    assert (list(result) if method == "finditer" else result) == expected and lazy.compiled is None
    assert [m.group(0) for m in lazy.finditer("Turned  off, then TURN off")] == ["Turned  off", "TURN off"]
    assert lazy.sub("-", "turn off now") == "- now" and lazy.split("a turn off b") == ["a ", " b"]


def test_a_create_whose_texts_lack_a_rules_words_does_not_compile_it(vault):
    # A real CLI create next to cards of its topic, in a process of its own; then which of the
    # judged rules that process compiled.
    create_queue_cards(vault)
    env = {**os.environ, "BRAIN_ACTOR": "test"}
    code = f"""
import json, sys
sys.path.insert(0, {str(ROOT / 'runtime')!r})
from external_brain.doors.cli import main
main(["--vault", {str(vault)!r}, "create", "--type", "pattern", "--domain", "dev", "--tags", "queue,retry",
      "--title", "Queue worker retries with a cap", "--body", "Retry the queue worker three times."])
main(["--vault", {str(vault)!r}, "create", "--type", "fact", "--domain", "dev", "--tags", "queue",
      "--title", "Queue worker memory limit", "--body", "The queue worker has 2 GB."])
from external_brain.judging import claims, judgements, subjects
from external_brain.judging.lazy import LazyPattern
rules = {{f"claims.{{k}}": v for k, v in vars(claims).items()}}
rules.update({{f"judgements.{{k}}": v for k, v in vars(judgements).items()}})
rules.update({{f"subjects.{{k}}": v for k, v in vars(subjects).items()}})
rules.update({{f"claims.POLE {{k[0]}} {{k[1]}}": v for k, v in claims._POLE_PATTERNS.items()}})
import re
compiled = [name for name, rule in rules.items()
            if isinstance(rule, re.Pattern) or isinstance(rule, LazyPattern) and rule.compiled is not None]
compiled += [name + " (ASCII)" for name, rule in rules.items()
             if isinstance(rule, LazyPattern) and rule.ascii_compiled is not None]
if any(key[1] == r"[\\u3040-\\u9fff]" for key in re._cache):   # `cards._short_subject`'s kana and kanji
    compiled.append("cards._short_subject")
print(json.dumps(sorted(compiled)))
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert "claims._TOKEN (ASCII)" in compiled, compiled   # the candidates' claims were judged (else this shows nothing)
    # None of these texts says "still", "evidence", an opposite pole, a prohibition or a contrast,
    # nor holds a kana or kanji.
    for name in ("claims._TOKEN", "claims._SENTENCE_END", "subjects._CJK", "cards._short_subject", "claims._KATAKANA_RUN", "judgements._HIRAGANA",
                 "judgements._LATER_ATTEMPT", "judgements._REPLACES", "judgements._APPLIES", "claims.EVIDENCE_SECTION",
                 "claims._PROHIBITION_EN", "claims._CONTRAST_EN", "claims._JA_NEGATIVE",
                 "claims.POLE switch 0", "claims.POLE switch 1", "claims.POLE permission 0",
                 "claims.POLE permission 1", "claims.POLE order 0", "claims.POLE order 1"):
        assert name not in compiled, (name, compiled)
