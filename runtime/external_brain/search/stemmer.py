"""English stemming: the Porter2 ("Snowball English") algorithm.

Written from the published description: Martin Porter, "The English (Porter2) stemming
algorithm", snowballstem.org/algorithms/english/stemmer.html, the revised successor of
M. F. Porter, "An algorithm for suffix stripping", Program 14(3):130-137, 1980. The step
names below (prelude, R1/R2, Step 1a, 1b, 1c, 2, 3, 4, 5, exceptional forms) follow that page.
It is the current revision (Snowball 3): R1 also starts after the prefixes emerg, inter, later,
organ, past and univers (so organ/organization and intern/interval stay apart), Step 2 maps
-ogist to -og, and Step 1b keeps add/egg/odd whole, turns dying into die, and leaves evening,
inning, proceed and the like alone. tests/search/test_stemmer.py pins it on the published examples.

`stem(word)` expects one lowercase ASCII word; the analyser decides which words are prose
(see analysis.py) and never hands it identifiers or CJK text. Results are memoised: a
vocabulary repeats far more than it grows.
"""

from __future__ import annotations

_VOWELS = frozenset("aeiouy")  # a consonant y is marked "Y" by the prelude: not a vowel
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDINGS = frozenset("cdeghkmnrt")
_R1_PREFIXES = ("arsen", "commun", "emerg", "gener", "inter", "later", "organ", "past", "univers")

# Exceptional forms, looked up (whole word) before any step.
_EXCEPTIONS = {
    "skis": "ski", "skies": "sky", "idly": "idl", "gently": "gentl", "ugly": "ugli",
    "early": "earli", "only": "onli", "singly": "singl",
    # invariant
    "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos",
    "bias": "bias", "andes": "andes",
}
# Step 1b: -eed(ly) is kept after these whole stems (proceed, exceeded), -ing after these
# (evening, canning, inning, earring, herring, outing).
_EED_KEPT = frozenset(("succ", "proc", "exc"))
_ING_KEPT = frozenset(("even", "cann", "inn", "earr", "herr", "out"))

# (suffix, replacement), longest first: a step acts on the longest suffix it finds, and if that
# suffix's condition fails the step does nothing (it does not fall back to a shorter one).
_STEP2 = (
    ("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"),
    ("iveness", "ive"), ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"),
    ("entli", "ent"), ("ation", "ate"), ("alism", "al"), ("aliti", "al"), ("ousli", "ous"),
    ("iviti", "ive"), ("fulli", "ful"), ("ogist", "og"), ("enci", "ence"), ("anci", "ance"),
    ("abli", "able"), ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"),
    ("ogi", "og"), ("li", ""),
)
_STEP3 = (
    ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
    ("ative", ""), ("ical", "ic"), ("ness", ""), ("ful", ""),
)
_STEP4 = (
    "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous",
    "ive", "ize", "ion", "al", "er", "ic",
)

# Every suffix of each step at once: one C-level `endswith` tells most words that a step has
# nothing to do, before the loop that finds which suffix (the longest) a word ends with.
_STEP2_ANY = tuple(suffix for suffix, _ in _STEP2)
_STEP3_ANY = tuple(suffix for suffix, _ in _STEP3)

_CACHE: dict[str, str] = {}
_CACHE_LIMIT = 200_000


def stem(word: str) -> str:
    """The Porter2 stem of a lowercase English word."""
    cached = _CACHE.get(word)
    if cached is None:
        cached = _stem(word)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[word] = cached
    return cached


def _stem(word: str) -> str:
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    if len(word) < 3:
        return word
    w = _prelude(word)
    r1, r2 = _regions(w)
    w = _step1a(w)
    w = _step1b(w, r1)
    w = _step1c(w)
    w = _step2(w, r1)
    w = _step3(w, r1, r2)
    w = _step4(w, r2)
    w = _step5(w, r1, r2)
    return w.replace("Y", "y")


def _prelude(w: str) -> str:
    """Drop a leading apostrophe; mark a consonant y (initial, or after a vowel) as Y."""
    if w.startswith("'"):
        w = w[1:]
    if "y" not in w:
        return w
    chars = list(w)
    if chars[0] == "y":
        chars[0] = "Y"
    for i in range(1, len(chars)):
        if chars[i] == "y" and chars[i - 1] in _VOWELS:
            chars[i] = "Y"
    return "".join(chars)


def _region_after(w: str, start: int) -> int:
    """Where the region after the first non-vowel following a vowel (from `start`) begins."""
    for i in range(start + 1, len(w)):
        if w[i] not in _VOWELS and w[i - 1] in _VOWELS:
            return i + 1
    return len(w)


def _regions(w: str) -> tuple[int, int]:
    """R1 and R2 as start offsets (len(w) when a region is empty)."""
    r1 = next((len(p) for p in _R1_PREFIXES if w.startswith(p)), None) if w.startswith(_R1_PREFIXES) else None
    if r1 is None:
        r1 = _region_after(w, 0)
    return r1, _region_after(w, r1)


def _ends_short_syllable(w: str) -> bool:
    """A vowel followed by a non-vowel other than w, x or Y and preceded by a non-vowel; or a
    vowel at the start of the word followed by a non-vowel; or (current revision) "past"."""
    if len(w) == 2:
        return w[0] in _VOWELS and w[1] not in _VOWELS
    return (len(w) >= 3 and w[-3] not in _VOWELS and w[-2] in _VOWELS
            and w[-1] not in _VOWELS and w[-1] not in "wxY") or w.endswith("past")


def _has_vowel(part: str) -> bool:
    return any(c in _VOWELS for c in part)


def _step1a(w: str) -> str:
    for suffix in ("'s'", "'s", "'"):  # possessives (Step 0 on the page)
        if w.endswith(suffix):
            w = w[:-len(suffix)]
            break
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(("ied", "ies")):
        return w[:-2] if len(w) > 4 else w[:-1]  # cries -> cri, ties -> tie
    if w.endswith(("us", "ss")):
        return w
    if w.endswith("s") and _has_vowel(w[:-2]):  # a vowel not immediately before the s
        return w[:-1]
    return w


def _step1b(w: str, r1: int) -> str:
    for suffix in ("eedly", "eed"):
        if w.endswith(suffix):
            base = w[:-len(suffix)]
            if len(base) < r1 or base in _EED_KEPT:
                return w
            return base + "ee"
    for suffix in ("ingly", "edly", "ing", "ed"):
        if w.endswith(suffix):
            base = w[:-len(suffix)]
            if suffix == "ing":
                if len(base) == 2 and base[1] == "y" and base[0] not in _VOWELS:
                    return base[0] + "ie"  # dying -> die, lying -> lie
                if base in _ING_KEPT:
                    return w
            if not _has_vowel(base):
                return w
            if base.endswith(("at", "bl", "iz")):
                return base + "e"  # luxuriat -> luxuriate
            if base.endswith(_DOUBLES):
                if len(base) == 3 and base[0] in "aeo":
                    return base  # add, egg, odd
                return base[:-1]  # hopp -> hop
            if len(base) == r1 and _ends_short_syllable(base):
                return base + "e"  # a short word: hop -> hope
            return base
    return w


def _step1c(w: str) -> str:
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _VOWELS:
        return w[:-1] + "i"
    return w


def _step2(w: str, r1: int) -> str:
    if not w.endswith(_STEP2_ANY):
        return w
    for suffix, replacement in _STEP2:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < r1:
                return w
            if suffix == "ogi" and not (start > 0 and w[start - 1] == "l"):
                return w
            if suffix == "li" and not (start > 0 and w[start - 1] in _LI_ENDINGS):
                return w
            return w[:start] + replacement
    return w


def _step3(w: str, r1: int, r2: int) -> str:
    if not w.endswith(_STEP3_ANY):
        return w
    for suffix, replacement in _STEP3:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < r1 or (suffix == "ative" and start < r2):
                return w
            return w[:start] + replacement
    return w


def _step4(w: str, r2: int) -> str:
    if not w.endswith(_STEP4):
        return w
    for suffix in _STEP4:
        if w.endswith(suffix):
            start = len(w) - len(suffix)
            if start < r2:
                return w
            if suffix == "ion" and not (start > 0 and w[start - 1] in "st"):
                return w
            return w[:start]
    return w


def _step5(w: str, r1: int, r2: int) -> str:
    start = len(w) - 1
    if w.endswith("e"):
        if start >= r2 or (start >= r1 and not _ends_short_syllable(w[:-1])):
            return w[:-1]
    elif w.endswith("l"):
        if start >= r2 and start > 0 and w[start - 1] == "l":
            return w[:-1]
    return w
