"""Regular expressions compiled once per interpreter, not once per process.

Every CLI call is a process of its own, and CPython's `re` compiles a pattern in Python (parse,
then `re._compiler._code`): 0.05-12 ms a pattern, most of it for the big kana and kanji classes
(`re` walks their ranges character by character). A `create` compiled ~55-75 of them, a fifth
to a quarter of its instructions. The program `re` makes of a pattern (a list of integers) is a
pure function of the pattern, its flags and the interpreter, like the bytecode of a module, so
it is kept as bytecode is: in the `__pycache__` beside this module (`sys.pycache_prefix`
honoured; nothing written under `sys.dont_write_bytecode`), in a file named for the
interpreter and headed with its exact version and `_sre.MAGIC`, and a later process hands it to
`_sre.compile`, which checks it (malformed code is refused).

Promise: `compile_pattern(p, f) == re.compile(p, f)` (a Pattern's equality compares its
pattern, flags and program), checked before a program is kept. A file of another interpreter,
damaged, or written by a newer version of this module, a program `_sre` refuses, or a Python
without these private parts (`_sre.compile`, `re._parser`, `re._compiler._code`): the pattern
is compiled the usual way, with the same result. A derived file: safe to delete at any time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading

_FORMAT = 2


def _code_array(data=b""):
    """The program's words as `_sre` holds them (`_sre.CODESIZE` bytes each, native order)."""
    from array import array
    import _sre

    return array("I" if _sre.CODESIZE == 4 else "H", data)

_LOCK = threading.Lock()
_STATE: dict = {}   # "path", "interpreter", "programs" (key -> program), "loaded"


def _interpreter() -> str:
    import _sre

    return f"{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}|{sys.maxunicode}|{sys.byteorder}|{_FORMAT}"


def _store_path() -> str | None:
    """The file beside this module's bytecode (`importlib.util.cache_from_source`), or None."""
    try:
        from importlib.util import cache_from_source

        return os.path.join(os.path.dirname(cache_from_source(__file__)),
                            f"regex-programs.{sys.implementation.cache_tag}.json")
    except (NotImplementedError, ValueError, TypeError, AttributeError):
        return None


def _load() -> dict:
    """This interpreter's kept programs (key -> program); empty when there is no usable file."""
    if not _STATE.get("loaded"):
        programs: dict = {}
        try:
            _STATE["interpreter"] = _interpreter()
            _STATE["path"] = _store_path()
            if _STATE["path"]:
                with open(_STATE["path"], "rb") as handle:
                    stored = json.loads(handle.read())
                if isinstance(stored, dict) and stored.get("interpreter") == _STATE["interpreter"] \
                        and isinstance(stored.get("programs"), dict):
                    programs = stored["programs"]
        except (OSError, ValueError, ImportError, AttributeError):
            pass
        _STATE["programs"] = programs
        _STATE["loaded"] = True
    return _STATE["programs"]


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern:
    """`re.compile(pattern, flags)`, from the program a process kept before when there is one."""
    flags = int(flags)
    key = f"{flags}:{pattern}"
    program = _load().get(key)
    if program is not None:
        try:
            import _sre

            out_flags, code, groups, groupindex, indexgroup = program
            return _sre.compile(pattern, out_flags, _code_array(bytes.fromhex(code)).tolist(), groups, groupindex,
                                tuple(indexgroup))
        except Exception:  # noqa: BLE001 - any doubt: the usual compile below, the same Pattern
            pass
    compiled = re.compile(pattern, flags)
    program = _program(pattern, flags, compiled)
    if program is not None:
        _keep(key, program)
    return compiled


def _program(pattern: str, flags: int, compiled: re.Pattern) -> list | None:
    """The program `re` makes of `pattern`, as `re._compiler.compile` makes it, when `_sre`
    builds from it a Pattern equal to `compiled` (so the same matches); else None."""
    if sys.dont_write_bytecode or not _STATE.get("path"):
        return None
    if "writable" not in _STATE:   # once a process: a folder it may not write is not tried
        folder = os.path.dirname(_STATE["path"])
        _STATE["writable"] = os.access(folder, os.W_OK) if os.path.isdir(folder) else True
    if not _STATE["writable"]:
        return None
    try:
        import _sre
        from re import _compiler, _parser

        parsed = _parser.parse(pattern, flags)
        code = _compiler._code(parsed, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup = [None] * parsed.state.groups
        for name, number in groupindex.items():
            indexgroup[number] = name
        stored = _code_array(code).tobytes().hex()   # (a string: ~10x faster to read back than a list of numbers)
        program = [flags | parsed.state.flags, stored, parsed.state.groups - 1, groupindex, indexgroup]
        again = _sre.compile(pattern, program[0], _code_array(bytes.fromhex(stored)).tolist(), program[2], groupindex,
                             tuple(indexgroup))
    except Exception:  # noqa: BLE001 - not this interpreter's private parts: nothing kept
        return None
    return program if again == compiled else None


def _keep(key: str, program: list) -> None:
    """Add the program to the file (merged with what other processes kept since it was read),
    all or nothing (a temporary file renamed over it); a file that cannot be written only costs
    later processes the compile. (Written here, not with `storage.atomic_write`: the modules
    that compile at import include `storage` itself.)"""
    with _LOCK:
        _STATE["programs"][key] = program
        path = _STATE["path"]
        try:
            with open(path, "rb") as handle:
                stored = json.loads(handle.read())
            if isinstance(stored, dict) and stored.get("interpreter") == _STATE["interpreter"] \
                    and isinstance(stored.get("programs"), dict):
                for other, kept in stored["programs"].items():
                    _STATE["programs"].setdefault(other, kept)
        except (OSError, ValueError):
            pass
        temp = f"{path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"interpreter": _STATE["interpreter"], "programs": _STATE["programs"]},
                                        separators=(",", ":")))
            os.replace(temp, path)
        except OSError:
            # Trigger: the folder cannot be written (an installation read-only to this user).
            # Why: each later compile would pay for the program and a failed write again.
            # Outcome: this process keeps no more programs; it compiles as `re` does.
            _STATE["writable"] = False
            try:
                os.unlink(temp)
            except OSError:
                pass


class KeptPattern:
    """A pattern compiled by `compile_pattern` on its first use, for a module that compiled it
    lazily (through `re`'s own cache) so that commands that never use it do not pay for it:
    `KEPT.search(text)` and every other attribute are the compiled Pattern's."""

    __slots__ = ("source", "flags", "compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source, self.flags, self.compiled = source, flags, None

    def __call__(self) -> re.Pattern:
        if self.compiled is None:
            self.compiled = compile_pattern(self.source, self.flags)
        return self.compiled

    def __getattr__(self, name: str):
        return getattr(self(), name)
