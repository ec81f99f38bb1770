"""How a Japanese query's bigrams are weighted (issue 10): a bigram that joins a word to the
grammar around it (crossing into or out of hiragana: 雨が, は北) or is hiragana alone (のは,
ない) counts half; content bigrams (kanji, katakana) count fully; other terms are untouched."""

from __future__ import annotations

from pathlib import Path

from external_brain.search.analysis import GRAMMAR_WEIGHT, query_weight, tokens
from helpers import ok_data, write_card


def test_bigrams_that_carry_grammar_count_half_and_content_counts_fully() -> None:
    weights = {term: query_weight(term) for term in tokens("梅雨がないのは北海道、タイムアウト", True)}
    assert weights == {
        "梅雨": 1.0, "雨が": 0.5, "がな": 0.5, "ない": 0.5, "いの": 0.5, "のは": 0.5, "は北": 0.5,
        "北海": 1.0, "海道": 1.0, "タイ": 1.0, "イム": 1.0, "ムア": 1.0, "アウ": 1.0, "ウト": 1.0,
    }
    assert GRAMMAR_WEIGHT == 0.5
    # English words, identifiers, hangul, a lone hiragana character: unchanged.
    for term in ("ok", "timeout", "n+1", "서울", "の", "é"):
        assert query_weight(term) == 1.0, term


def test_a_card_with_the_questions_content_outranks_one_that_shares_only_its_grammar(vault: Path) -> None:
    cards = {
        "Fact_Rainy_season.md": ("梅雨の地域", "梅雨は北海道を除く日本の各地で見られる。"),
        "Fact_Questions.md": ("よくある質問", "それがないのはなぜですか。どこかで聞いたことがないのは残念です。"),
        "Fact_Typhoons.md": ("台風", "台風は夏から秋に日本へ来る。"),
        "Fact_Hokkaido.md": ("北海道の気候", "北海道は冷涼な気候である。"),
    }
    for name, (title, body) in cards.items():
        write_card(vault, f"Playbooks/{name}", f"---\ntitle: {title}\ntype: fact\ndomain: general\n---\n{body}\n")
    hits = ok_data("search", "梅雨がないのは北海道")["hits"]
    # Before, the five shared grammar bigrams (がな ない いの のは, and 雨が) put the questions
    # card first, over the card holding both content words (梅雨, 北海道).
    assert [hit["path"] for hit in hits][:2] == ["Playbooks/Fact_Rainy_season.md", "Playbooks/Fact_Questions.md"]
