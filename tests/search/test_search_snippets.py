"""Which body line a search hit shows (`keyword.snippet_for`): the first prose line that
mentions a query term, else the first prose line; headings, code fences and table rows never."""

from __future__ import annotations

import pytest

from helpers import ok_data


def snippet(title: str, body: str, query: str) -> str:
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", body)
    hits = ok_data("search", query)["hits"]
    assert [hit["title"] for hit in hits] == [title]
    return hits[0]["snippet"]


@pytest.mark.parametrize("body, query, shown", [
    # A later line that mentions a term (stemmed: "retries" is "retri"), past one that does not.
    ("# Steps\n\nCheck the dashboard first.\n- Then the retries were exhausted.\n", "retry",
     "Then the retries were exhausted."),
    # No line mentions it (the title does): the first prose line, past headings, fences, tables.
    ("# Heading\n```python\n```\n| a | b |\nPlain first line.\nSecond line.\n", "zeppelin",
     "Plain first line."),
    # One prose line: that line whatever it mentions.
    ("# Heading\n\nOnly this line.\n", "zeppelin", "Only this line."),
    # A long line whose only mention comes late, and Japanese text (bigrams).
    ("Nothing here yet.\n" + "word " * 60 + "and finally quokka.\n", "quokka",
     ("word " * 60 + "and finally quokka.").strip()[:159].rstrip() + "…"),
    ("最初の行です。\n接続がタイムアウトした。\n", "タイムアウト", "接続がタイムアウトした。"),
])
def test_a_hit_shows_the_first_line_that_mentions_the_query(body: str, query: str, shown: str) -> None:
    title = "Zeppelin note" if query == "zeppelin" else "Snippet note"
    assert snippet(title, body, query) == shown
