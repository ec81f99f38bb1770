#!/usr/bin/env python3
"""Split docs/decisions.md into one numbered record per topic, keeping every word.

    python3 docs/split_decisions.py --dry-run   # show the records it would write, change nothing
    python3 docs/split_decisions.py             # write docs/decisions/ and turn decisions.md into its index

What it does, deterministically (the same input always gives the same files):
- Every `## Topic` section of docs/decisions.md (a `## ` line outside a fenced code block)
  becomes `docs/decisions/NNNN-topic.md`, numbered from 0001 in the order of the file. The
  record is `# NNNN. Topic`, a blank line, then the section's text exactly as it was (its `###`
  subsections included). Two sections with the same heading (a merge may leave them) keep
  both, with their own numbers.
- `docs/decisions/README.md` is the index: the page's opening text (what it was before the
  first section), then one line per record.
- `docs/decisions.md` is replaced by a short page that points at the index and lists the same
  records, so citations of the form `docs/decisions.md, "Topic"` still lead to the topic.
- It refuses to run when docs/decisions/ already holds records (run it once), and checks before
  writing anything that the records put back together are the original text, byte for byte.
- It prints the code comments that cite docs/decisions.md, for whoever runs it to re-point.

Run it after the branches that append to docs/decisions.md are merged. New decisions then go in
a new record with the next number, and a line in the index.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
SOURCE = DOCS / "decisions.md"
FOLDER = DOCS / "decisions"


def sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(the text before the first section, [(heading, the section's text after its heading line)])."""
    preamble, found = [], []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```") or line.startswith("~~~"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            found.append((line[3:].rstrip("\n").rstrip("\r"), []))
            continue
        (found[-1][1] if found else preamble).append(line)
    return "".join(preamble), [(heading, "".join(lines)) for heading, lines in found]


def joined(preamble: str, parts: list[tuple[str, str]]) -> str:
    """The page the sections came from (the inverse of `sections` for a page ending in a newline)."""
    return preamble + "".join(f"## {heading}\n{body}" for heading, body in parts)


def slug(heading: str) -> str:
    """`Many agents: MCP over HTTP, keys, personas, jobs` -> `many-agents-mcp-over-http-keys-personas-jobs`."""
    ascii_text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    return "-".join(words)[:60].rstrip("-") or "decision"


def records(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """(the page's opening text, [(file name, heading, record text)]) for `text`."""
    preamble, parts = sections(text)
    out = []
    for number, (heading, body) in enumerate(parts, start=1):
        name = f"{number:04d}-{slug(heading)}.md"
        out.append((name, heading, f"# {number:04d}. {heading}\n\n{body}"))
    return preamble, out


def body_of(record_text: str) -> tuple[str, str]:
    """(heading, section text) of a record as `records` wrote it."""
    first, _, rest = record_text.partition("\n\n")
    return first.split(". ", 1)[1], rest


def index_page(preamble: str, written: list[tuple[str, str, str]], link_prefix: str) -> str:
    lines = [f"- [{name[:4]}. {heading}]({link_prefix}{name})" for name, heading, _ in written]
    return preamble.rstrip("\n") + "\n\nOne record per topic, numbered in the order they were decided.\n\n" + \
        "\n".join(lines) + "\n"


def citing_comments() -> list[str]:
    found = []
    for path in sorted((ROOT / "runtime").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "decisions.md" in line:
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def main(argv: list[str] | None = None, source: Path = SOURCE, folder: Path = FOLDER) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="list the records; write nothing")
    args = parser.parse_args(argv)
    text = source.read_text(encoding="utf-8")
    preamble, written = records(text)
    rebuilt = joined(preamble, [body_of(record) for _, _, record in written])
    if rebuilt != text:
        print("split_decisions: the records would not put the page back together; nothing written", file=sys.stderr)
        return 1
    for name, heading, record in written:
        print(f"{folder.name}/{name}  ({len(record.splitlines())} lines)  {heading}")
    if args.dry_run:
        return 0
    if folder.exists() and any(folder.glob("[0-9][0-9][0-9][0-9]-*.md")):
        print(f"split_decisions: {folder} already holds records; run it once", file=sys.stderr)
        return 1
    folder.mkdir(exist_ok=True)
    for name, _, record in written:
        (folder / name).write_text(record, encoding="utf-8")
    (folder / "README.md").write_text(index_page(preamble, written, ""), encoding="utf-8")
    pointer = ("# Design decisions\n\nThe decisions are now one record per topic in "
               f"[{folder.name}/]({folder.name}/README.md). A citation `docs/decisions.md, \"Topic\"` "
               "names the record of that topic:\n\n")
    source.write_text(pointer + "\n".join(f"- [{name[:4]}. {heading}]({folder.name}/{name})"
                                          for name, heading, _ in written) + "\n", encoding="utf-8")
    comments = citing_comments()
    if comments:
        print(f"\n{len(comments)} lines cite docs/decisions.md (their topics are still listed there):")
        print("\n".join(comments))
    return 0


if __name__ == "__main__":
    sys.exit(main())
