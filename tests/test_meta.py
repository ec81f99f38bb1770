"""Meta-tests that guard the structure: help and README for every subcommand, the layering of
the modules, standard library only, and the checkout entrypoint."""

from __future__ import annotations

import argparse
import ast
import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, SCRIPT, bytecode_settings, parsed_module, run_cli

PACKAGE = ROOT / "runtime" / "external_brain"
# The layers, bottom up (STYLE.md, docs/decisions.md "Layout"): a module imports only from its own
# layer or the ones below. The operations are the package's own top-level modules.
LAYERS = ("errors", "vault", "search", "operations", "doors")


def subcommands() -> list[str]:
    from external_brain.doors.cli import build_parser

    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    return sorted(actions[0].choices)


def test_the_core_commands_of_seed_003_exist():
    names = set(subcommands())
    core = {"search", "get", "record", "create", "promote", "audit", "list", "learn",
            "remember", "recall", "forget", "context", "init"}
    assert core <= names, core - names


@pytest.mark.parametrize("command", subcommands())
def test_every_subcommand_has_help(command):
    code, out, err = run_cli(command, "--help")
    assert code == 0, err
    assert out.startswith(f"usage: brain {command}"), out
    assert "--json" in out and "--vault" in out
    assert err == ""


@pytest.mark.parametrize("command", subcommands())
def test_every_subcommand_appears_in_the_readme(command):
    readme = ROOT / "README.md"
    assert readme.is_file(), "README.md is missing"
    text = readme.read_text(encoding="utf-8")
    # Shown being run (`brain X`, `$BRAIN X`, `playbook_api.py X`) or as a row of the command table.
    run = re.search(rf"(?:\bbrain|\$BRAIN|playbook_api\.py)[ \t]+{command}\b", text)
    row = re.search(rf"^\|[^|\n]*`{command}\b", text, re.MULTILINE)
    assert run or row, f"README.md never shows `brain {command}` (in use or in the command table)"


def imported_modules(path: Path) -> list[tuple[int, str, bool]]:
    """(level, dotted name, optional) for every import in the file; `optional` marks an import
    inside a `try` that catches ImportError (an accelerator such as NumPy, used when present).
    Found once per tree (`parsed_module` gives the same tree for the same text): three tests walk
    every module of the package, twice each (~1 s CPU a pass over the package)."""
    return list(_imports_in(parsed_module(path)))


@functools.lru_cache(maxsize=None)
def _imports_in(tree: ast.Module) -> tuple[tuple[int, str, bool], ...]:
    optional_nodes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            caught = set()
            for handler in node.handlers:
                kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                caught.update(k.id for k in kinds if isinstance(k, ast.Name))
            if caught & {"ImportError", "ModuleNotFoundError"}:
                for inner in node.body:
                    optional_nodes.update(id(n) for n in ast.walk(inner))
    found = []
    for node in ast.walk(tree):
        optional = id(node) in optional_nodes
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, optional) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and not node.module:  # from . import x, y
                found.extend((node.level, alias.name, optional) for alias in node.names)
            else:
                found.append((node.level, node.module or "", optional))
                if node.level:  # from .pkg import sub: sub may itself be a module
                    found.extend((node.level, f"{node.module}.{alias.name}", optional) for alias in node.names)
    return tuple(found)


def module_name(path: Path) -> str:
    """`vault.storage` for runtime/external_brain/vault/storage.py; a package by its folder."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports, at any level (a function-level import is still
    a dependency), relative imports resolved."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        here = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
        deps = set()
        for level, imported, _ in imported_modules(path):
            if level == 0:
                if not imported.startswith("external_brain."):
                    continue
                dotted = imported.removeprefix("external_brain.")
            else:
                base = here[: len(here) - (level - 1)] if level > 1 else here
                dotted = ".".join(base + ([imported] if imported else []))
            while dotted and dotted not in modules:  # `from .x import name`: the module is x
                dotted = dotted.rpartition(".")[0]
            if dotted and dotted != name:
                deps.add(dotted)
        graph[name] = deps
    return graph


def layer_of(module: str) -> str:
    head = module.split(".")[0]
    return head if head in LAYERS else "operations"


def test_each_layer_imports_only_its_own_and_the_ones_below():
    upward = [f"{module} ({layer_of(module)}) imports {dep} ({layer_of(dep)})"
              for module, deps in package_graph().items() for dep in deps
              if LAYERS.index(layer_of(dep)) > LAYERS.index(layer_of(module))]
    assert upward == []


def test_no_module_imports_itself_back_through_others():
    graph = package_graph()
    cycles = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_layer_check_sees_an_upward_import(tmp_path, monkeypatch):
    # Guard for the guard: a vault module importing search must be caught.
    package = tmp_path / "external_brain"
    (package / "vault").mkdir(parents=True)
    (package / "search").mkdir()
    for init in (package / "__init__.py", package / "vault" / "__init__.py", package / "search" / "__init__.py"):
        init.write_text("")
    (package / "vault" / "storage.py").write_text("def f():\n    from ..search.index import Index\n")
    (package / "search" / "index.py").write_text("from ..vault import storage\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    graph = package_graph()
    assert graph["vault.storage"] == {"search.index"}
    assert graph["search.index"] == {"vault", "vault.storage"}  # the package, then the module
    with pytest.raises(AssertionError):
        test_each_layer_imports_only_its_own_and_the_ones_below()
    with pytest.raises(AssertionError):
        test_no_module_imports_itself_back_through_others()


def test_the_import_scanner_sees_function_level_and_package_imports(tmp_path):
    # Guard for the guard: the layering test must catch every spelling of the forbidden import.
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from .search import rank\n    from . import cli\n"
                      "import external_brain.search.keyword\ntry:\n    import numpy\nexcept ImportError:\n    numpy = None\n")
    names = {(level, name.split(".")[0], optional) for level, name, optional in imported_modules(sample)}
    assert (1, "search", False) in names
    assert (1, "cli", False) in names
    assert (0, "external_brain", False) in names
    assert (0, "numpy", True) in names


def test_the_product_imports_only_the_standard_library():
    outside = []
    files = sorted((ROOT / "runtime").rglob("*.py"))
    assert PACKAGE / "doors" / "cli" / "__init__.py" in files
    for path in files:
        for level, name, optional in imported_modules(path):
            top = name.split(".")[0]
            if level or top == "external_brain" or optional:
                continue
            if top not in sys.stdlib_module_names:
                outside.append(f"{path.relative_to(ROOT)}: import {name}")
    assert outside == []


def test_the_checkout_entrypoint_runs_with_nothing_installed(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    # the usage names the program as it was run, as every hint does (decision 0002)
    assert result.stdout.startswith(f"usage: {shlex.join([sys.executable, str(SCRIPT)])}"), result.stdout
    for command in ("search", "get", "record"):
        assert command in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("command, group", [(["search", "x"], "cards"), (["hook", "prompt"], "servers"),
                                            (["context"], "memory")])
def test_a_command_imports_only_its_own_group_of_the_command_line(vault, command, group):
    # Start-up: a call builds and imports only the parser of the command it runs (docs/decisions.md,
    # "Maintainability"), not the 37 commands' modules.
    code = ("import sys; from external_brain.doors.cli import main; main(['--vault', sys.argv[1], *sys.argv[2:]]); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('external_brain.doors.cli.'))))")
    done = subprocess.run([sys.executable, "-c", code, str(vault), *command], capture_output=True, text=True,
                          timeout=60, input="{}", env={"PYTHONPATH": str(ROOT / "runtime"), "PATH": "/usr/bin:/bin", **bytecode_settings()})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].split() == [f"external_brain.doors.cli.{name}"
                                                           for name in sorted(("common", group))]


def test_the_command_line_runs_as_a_module(vault):
    # `python -m external_brain.doors.cli` is how the product runs itself in a child process (the
    # detached `learn` of a session-end hook, git's merge driver of an installed `brain`).
    done = subprocess.run([sys.executable, "-m", "external_brain.doors.cli", "--vault", str(vault), "list"],
                          capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT / "runtime"), "PATH": "/usr/bin:/bin", **bytecode_settings()})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_every_registered_command_has_its_pair_in_its_group():
    import importlib

    from external_brain.doors.cli import COMMANDS

    for name, group in COMMANDS.items():
        module = importlib.import_module(f"external_brain.doors.cli.{group}")
        function = name.replace("-", "_")
        assert callable(getattr(module, f"add_{function}", None)), f"doors.cli.{group} lacks add_{function}"
        assert callable(getattr(module, f"cmd_{function}", None)), f"doors.cli.{group} lacks cmd_{function}"
