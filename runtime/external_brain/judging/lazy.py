"""`LazyPattern`: a regular expression compiled when first used.

The judged rules hold many patterns, and most texts never reach most rules; short processes (a
`create`, a hook that redacts what it injects) would otherwise pay for compiling all of them at
import (~20 ms for the claims, ~4 ms for the secrets)."""

from __future__ import annotations

import re


class LazyPattern:
    """Behaves as the compiled `re.Pattern` (its methods and attributes), compiled on first use."""

    __slots__ = ("pattern", "flags", "compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags, self.compiled = pattern, flags, None

    def __getattr__(self, name: str):
        if self.compiled is None:
            self.compiled = re.compile(self.pattern, self.flags)
        return getattr(self.compiled, name)
