"""The repository's own docs stay true to the code: the CLI reference is what the parser
generates and names every command and option; every function the API page lists exists with the
parameters it shows; every page the README links to exists.

Regenerate the CLI page with:
    PYTHONPATH=runtime python3 -m external_brain.doors.cli_docs --write
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys

import pytest

from helpers import ROOT, bytecode_settings

DOCS = ROOT / "docs"


def cli_parsers():
    from external_brain.doors.cli import build_parser
    from external_brain.doors.cli_docs import subcommands

    return subcommands(build_parser())


def cli_sections() -> dict[str, str]:
    """`## brain NAME` heading -> the text under it, from docs/cli.md."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    parts = re.split(r"^## brain ([a-z-]+)\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


# ---------------------------------------------------------------------------- docs/cli.md

def test_the_cli_page_is_what_the_parser_generates():
    from external_brain.doors.cli_docs import reference

    on_disk = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert on_disk == reference(), ("docs/cli.md differs from the parser; run: "
                                    "PYTHONPATH=runtime python3 -m external_brain.doors.cli_docs --write")


@pytest.mark.parametrize("command", sorted(cli_parsers()))
def test_every_command_and_option_is_on_the_cli_page(command):
    import argparse

    sections = cli_sections()
    assert command in sections, f"docs/cli.md has no `## brain {command}` section"
    section = sections[command]
    for action in cli_parsers()[command]._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if action.dest in ("vault", "json", "persona"):   # every command's, documented once at the top
            continue
        names = action.option_strings or [str(action.metavar or action.dest.upper())]
        for name in names:
            assert f"`{name}" in section or f", {name}" in section, f"docs/cli.md: `brain {command}` lacks {name}"


def test_the_common_options_are_on_the_cli_page():
    top = (DOCS / "cli.md").read_text(encoding="utf-8").split("## Commands", 1)[0]
    for option in ("--vault", "--json", "--persona", "--version"):
        assert f"`{option}" in top


def test_the_check_command_fails_on_a_stale_page(tmp_path):
    from external_brain.doors import cli_docs

    stale = tmp_path / "cli.md"
    stale.write_text(cli_docs.reference().replace("## brain search\n", ""), encoding="utf-8")
    assert cli_docs.main(["--check"], page=stale) == 1
    assert cli_docs.main(["--write"], page=stale) == 0 and cli_docs.main(["--check"], page=stale) == 0


def test_the_cli_docs_generator_is_not_imported_by_a_command(vault):
    code = ("import sys; from external_brain.doors.cli import main; main(['--vault', sys.argv[1], 'list']);"
            "print('external_brain.doors.cli_docs' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(vault)], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT / "runtime"), "PATH": "/usr/bin:/bin", **bytecode_settings()})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


# ---------------------------------------------------------------------------- docs/api.md

def split_parameters(text: str) -> list[str]:
    """`a, b=('x', 'y'), *, c=None` -> ["a", "b", "c"]: commas inside brackets or quotes do not split."""
    names, depth, quote, current = [], 0, "", ""
    for char in text + ",":
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            name = current.split("=")[0].strip().lstrip("*").strip()
            if name:
                names.append(name)
            current = ""
            continue
        current += char
    return names


def api_entries() -> list[tuple[str, str, list[str]]]:
    """(module, function, parameter names) for every `### `module.function(params)`` heading."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    return [(module, function, split_parameters(params))
            for module, function, params in re.findall(r"^### `([\w.]+)\.(\w+)\((.*)\)(?: -> [^`]*)?`$", text,
                                                       flags=re.MULTILINE)]


def test_the_api_page_lists_the_operations():
    listed = {f"{m}.{f}" for m, f, _ in api_entries()}
    assert len(listed) >= 30, listed
    for must in ("answers.searching.search_cards", "cards.get_card", "cards.record", "cards.create_card",
                 "evolution.lifecycle.update_card", "evolution.lifecycle.delete_card", "evolution.relations.link",
                 "intake.inbox.promote", "answers.brief.brief", "intake.ingest.ingest_text"):
        assert must in listed, f"docs/api.md does not document {must}"


@pytest.mark.parametrize("module, function, params", api_entries(), ids=[f"{m}.{f}" for m, f, _ in api_entries()])
def test_every_function_on_the_api_page_exists_with_those_parameters(module, function, params):
    target = getattr(importlib.import_module(f"external_brain.{module}"), function, None)
    assert target is not None, f"docs/api.md lists external_brain.{module}.{function}, which does not exist"
    actual = [name for name in inspect.signature(target).parameters]
    assert actual == params, f"docs/api.md shows {module}.{function}({', '.join(params)}); the code has {actual}"


# ---------------------------------------------------------------------------- links between pages

def test_every_docs_page_the_readme_links_to_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"\]\((docs/[^)#\s]+)", readme)
    for page in ("docs/architecture.md", "docs/card-format.md", "docs/cli.md", "docs/api.md",
                 "docs/compatibility.md", "docs/decisions.md", "docs/http-api.md"):
        assert page in linked, f"README.md does not link {page}"
    for page in linked:
        assert (ROOT / page).exists(), f"README.md links {page}, which does not exist"


def cited_names(page: str) -> set[str]:
    """Every `a.b.c` in backticks that names code: not a file (`x.py`, `cli.md`), not a URL."""
    text = (DOCS / page).read_text(encoding="utf-8")
    names = set(re.findall(r"`([a-z_]+(?:\.[A-Za-z_]\w*)+)`", text))
    return {n for n in names if n.rsplit(".", 1)[1] not in ("py", "md", "json", "jsonl", "toml", "sqlite", "lock")}


def resolve(dotted: str):
    """The object `dotted` names under external_brain: the longest importable module, then
    attributes (`doors.access.Gate.admit`)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module("external_brain." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("page", ["architecture.md", "api.md", "card-format.md", "compatibility.md"])
def test_the_code_names_a_page_cites_exist(page):
    cited = cited_names(page)
    assert cited
    missing = []
    for name in sorted(cited):
        try:
            resolve(name)
        except (ModuleNotFoundError, AttributeError):
            missing.append(name)
    assert not missing, f"docs/{page} cites code that does not exist: {missing}"


# ---------------------------------------------------------------------------- the README's tour

def readme_tour() -> tuple[str, list[str]]:
    """(the paragraph above the tour's block, the block's commands, continuation lines joined)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## A tour\n", 1)[1].split("\n## ", 1)[0]
    intro, rest = section.split("```bash\n", 1)
    block = rest.split("\n```", 1)[0]
    commands, pending = [], ""
    for line in block.splitlines():
        line = pending + line
        if line.rstrip().endswith(("\\", "|")):
            pending = line.rstrip().rstrip("\\") + " "
            continue
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line)
    return intro, commands


def test_the_readme_tour_runs_as_pasted_and_its_intro_names_only_what_it_holds(tmp_path):
    # review6: the intro said to "drop `--vault /tmp/brain-demo`", which no line of the tour has.
    intro, commands = readme_tour()
    block = "\n".join(commands)
    for span in re.findall(r"`([^`]+)`", intro):
        assert span in block, f"the tour's intro names `{span}`, which is not in the tour"
    demo = str(tmp_path / "brain-demo")
    setup = [c for c in commands if c.startswith(("BRAIN=", "export "))]
    assert setup == ['BRAIN="python3 runtime/playbook_api.py"', "export BRAIN_VAULT=/tmp/brain-demo"]
    preamble = "\n".join(setup).replace("/tmp/brain-demo", demo) + "\n"
    undo_id = None
    for command in commands[len(setup):]:
        command = command.replace("/tmp/brain-demo", demo)
        if "EVENT_ID" in command:
            assert undo_id, "the tour undoes EVENT_ID before any command printed one"
            command = command.replace("EVENT_ID", undo_id)
        done = subprocess.run(["bash", "-c", preamble + command], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "error" not in done.stderr, (command, done.stderr)
        if " delete " in command:
            undo_id = re.search(r"undo with `python3 runtime/playbook_api.py undo ([0-9a-f-]+)`", done.stdout).group(1)
    assert undo_id
