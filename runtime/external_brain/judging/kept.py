"""`kept_by_text`: a per-process cache of a pure function of texts, bounded in characters.

Judging keeps each card's analyses (content, terms, sentences, names) by the texts they are made
of, since a server meets the same candidates create after create. `functools.lru_cache` bounds a
cache in entries, and a card's body may be 500,000 characters: 2,048 kept bodies could hold a
gigabyte. A text longer than a cache's limit is analysed each time and never kept: the limit is
KEPT_TEXT_CHARS, or less for a cache of many entries (a sentence's tokens: 65,536), so that the
texts one cache keeps come to at most KEPT_TEXT_BUDGET characters (and what was made of them is
of the same order)."""

from __future__ import annotations

import functools
from typing import Any, Callable

KEPT_TEXT_CHARS = 16_000        # a text longer than this is never kept (a rare card: analysed each time)
KEPT_TEXT_BUDGET = 32_000_000   # characters of text one cache may keep, at most


def kept_by_text(maxsize: int, text: int = -1) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`functools.lru_cache(maxsize)`, but a call whose argument at position `text` (the body,
    the sentence: the one that may be long; the last by default) is longer than the cache's limit
    (KEPT_TEXT_CHARS, or KEPT_TEXT_BUDGET / `maxsize` when smaller) calls the function itself
    (nothing kept). The result has the cache's `cache_info` and `cache_clear`, `limit`, and
    `__wrapped__` (the function, uncached). The other arguments are short (a title, tags)."""
    limit = min(KEPT_TEXT_CHARS, KEPT_TEXT_BUDGET // maxsize)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        kept = functools.lru_cache(maxsize=maxsize)(function)
        if function.__code__.co_argcount == 1:
            # One argument (most of them, and the ones called most: a sentence's): no tuple made.
            def call(arg: Any) -> Any:
                return function(arg) if len(arg) > limit else kept(arg)
        else:
            def call(*args: Any) -> Any:   # type: ignore[misc]
                return function(*args) if len(args[text]) > limit else kept(*args)

        functools.update_wrapper(call, function)
        call.cache_info, call.cache_clear = kept.cache_info, kept.cache_clear   # type: ignore[attr-defined]
        call.limit = limit   # type: ignore[attr-defined]
        return call

    return decorate
