"""A module must not import inside a function what its top already imports (issue 26, "Speed
tricks that cost readers"): the inner import costs nothing at start-up (the module is loaded
already) and tells a reader the wrong thing, that the name is deferred. Nor may an import sit
inside a loop's body, where it is looked up again on every turn.

Today's offenders are listed by name below so the suite passes now and fails on a new one; the
list only shrinks (a listed offender that is gone fails too, so the list stays true).
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT, parsed_module

PACKAGE = ROOT / "runtime" / "external_brain"

# "path:function: import" for each function-level import of what the module's top imports.
REPEATED_ALLOWED: set[str] = set()
# "path:function: import" for each import inside a `for` or `while` body.
IN_LOOP_ALLOWED: set[str] = set()


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """Each name an import statement binds, as written: `.vault.storage:now`, `os`."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    source = "." * node.level + (node.module or "")
    return [f"{source}:{alias.name}" for alias in node.names]


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _inner_imports(function: ast.AST):
    """Imports in this function's own body (not in the functions nested in it)."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _top_imports(tree: ast.Module) -> set[str]:
    """What the module imports when it loads: its top level, its top-level `try` and `if` blocks,
    but not `if TYPE_CHECKING:` (names a function must still import to use at run time)."""
    found: set[str] = set()
    for node in tree.body:
        if _type_checking(node):
            continue
        for inner in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                found.update(_imported(inner))
    return found


def repeated_imports(path: Path, root: Path = ROOT) -> set[str]:
    tree = parsed_module(path)
    top = _top_imports(tree)
    rel = path.relative_to(root).as_posix()
    return {f"{rel}:{function.name}: {name}"
            for function in _functions(tree) for node in _inner_imports(function)
            for name in _imported(node) if name in top}


def imports_in_loops(path: Path, root: Path = ROOT) -> set[str]:
    tree = parsed_module(path)
    rel = path.relative_to(root).as_posix()
    found = set()
    for function in _functions(tree):
        for loop in ast.walk(function):
            if isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
                for statement in loop.body + loop.orelse:
                    for node in ast.walk(statement):
                        if isinstance(node, (ast.Import, ast.ImportFrom)):
                            found.update(f"{rel}:{function.name}: {name}" for name in _imported(node))
    return found


def all_of(finder) -> set[str]:
    return set().union(*(finder(path) for path in sorted(PACKAGE.rglob("*.py"))))


def test_no_new_function_level_import_of_what_the_module_top_imports():
    found = all_of(repeated_imports)
    assert not found - REPEATED_ALLOWED, f"imported again inside a function: {sorted(found - REPEATED_ALLOWED)}"
    assert not REPEATED_ALLOWED - found, f"fixed: remove from REPEATED_ALLOWED: {sorted(REPEATED_ALLOWED - found)}"


def test_no_new_import_inside_a_loop():
    found = all_of(imports_in_loops)
    assert not found - IN_LOOP_ALLOWED, f"import inside a loop: {sorted(found - IN_LOOP_ALLOWED)}"
    assert not IN_LOOP_ALLOWED - found, f"fixed: remove from IN_LOOP_ALLOWED: {sorted(IN_LOOP_ALLOWED - found)}"


def test_the_scanner_sees_a_repeated_import_and_one_in_a_loop(tmp_path):
    module = tmp_path / "runtime" / "external_brain" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text("from typing import TYPE_CHECKING\nfrom .vault.storage import now\nimport os\n"
                      "if TYPE_CHECKING:\n    from .search.keyword import Filters\n\n"
                      "def f():\n    from .vault.storage import now, Vault\n    import os\n    import re\n"
                      "    from .search.keyword import Filters\n\n"
                      "def g(items):\n    for item in items:\n        from .x import y\n", encoding="utf-8")
    assert repeated_imports(module, tmp_path) == {"runtime/external_brain/m.py:f: .vault.storage:now",
                                                  "runtime/external_brain/m.py:f: os"}
    assert imports_in_loops(module, tmp_path) == {"runtime/external_brain/m.py:g: .x:y"}
