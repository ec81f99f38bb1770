"""`LazyPattern`: a regular expression compiled when first used.

The judged rules hold many patterns, and most texts never reach most rules; short processes (a
`create`, a hook that redacts what it injects) would otherwise pay for compiling all of them at
import (~20 ms for the claims, ~4 ms for the secrets)."""

from __future__ import annotations

import re

from ..vault.regex_programs import compile_pattern   # the program kept by an earlier process


class LazyPattern:
    """Behaves as the compiled `re.Pattern` (its methods and attributes), compiled on first use.
    `needs`: words of which every match holds one (compared case-folded); `match`, `search` and
    `fullmatch` on a text that holds none of them answer None, `finditer` no match, `sub` the
    text and `split` [the text], without compiling the pattern, so a statement pays only for the
    rules whose words it has. `non_ascii`: every match holds a character beyond ASCII (a kana or
    kanji class), so an ASCII text is answered the same way, uncompiled. `ascii_pattern`: the
    pattern without its alternatives that need a character beyond ASCII, run on an ASCII text
    (it finds the same matches there, and compiles in a tenth of the time when those are big
    kana and kanji classes)."""

    __slots__ = ("pattern", "flags", "compiled", "needs", "non_ascii", "ascii_pattern", "ascii_compiled")
    _last_folded: tuple[str, str] = ("", "")   # the last text `_cannot` folded, and its folding

    def __init__(self, pattern: str, flags: int = 0, needs: tuple[str, ...] = (), non_ascii: bool = False,
                 ascii_pattern: str | None = None) -> None:
        self.pattern, self.flags, self.compiled, self.needs, self.non_ascii = pattern, flags, None, needs, non_ascii
        self.ascii_pattern, self.ascii_compiled = ascii_pattern, None

    def _cannot(self, text: str) -> bool:
        if self.non_ascii and text.isascii():
            return True
        if not self.needs:
            return False
        # `re.IGNORECASE` matches "i" against the dotless "ı", which case folding keeps, and
        # against "İ", which it folds to "i" and a combining dot (U+0307) that would split the
        # word: fold both to "i", so a text the pattern would match is never answered None.
        last = LazyPattern._last_folded
        if last[0] is text:
            folded = last[1]
        else:
            folded = text.casefold()
            if "ı" in folded:
                folded = folded.replace("ı", "i")
            if "\u0307" in folded:
                folded = folded.replace("\u0307", "")
            # Trigger: the next rule asked of the same text (a sentence's eight poles, its
            # negations and contrasts). Why: each folded it again. Outcome: the last text's
            # folding is kept, one text for the whole process (a tuple, replaced whole: a
            # thread reads the pair of another, or its own).
            LazyPattern._last_folded = (text, folded)
        for word in self.needs:   # (a loop: half the time of `any` over a generator)
            if word in folded:
                return False
        return True

    def _for(self, text: str) -> re.Pattern:
        """The compiled pattern to run on `text`: `ascii_pattern`'s for an ASCII text, if given."""
        if self.ascii_pattern is not None and text.isascii():
            if self.ascii_compiled is None:
                self.ascii_compiled = compile_pattern(self.ascii_pattern, self.flags)
            return self.ascii_compiled
        if self.compiled is None:
            self.compiled = compile_pattern(self.pattern, self.flags)
        return self.compiled

    def match(self, text: str, *args):
        return None if self._cannot(text) else self._for(text).match(text, *args)

    def search(self, text: str, *args):
        return None if self._cannot(text) else self._for(text).search(text, *args)

    def fullmatch(self, text: str, *args):
        return None if self._cannot(text) else self._for(text).fullmatch(text, *args)

    def finditer(self, text: str, *args):
        return iter(()) if self._cannot(text) else self._for(text).finditer(text, *args)

    def findall(self, text: str, *args):
        return [] if self._cannot(text) else self._for(text).findall(text, *args)

    def sub(self, repl, text: str, *args):
        return text if self._cannot(text) else self._for(text).sub(repl, text, *args)

    def split(self, text: str, *args):
        return [text] if self._cannot(text) else self._for(text).split(text, *args)

    def __getattr__(self, name: str):
        if self.compiled is None:
            self.compiled = compile_pattern(self.pattern, self.flags)
        return getattr(self.compiled, name)
