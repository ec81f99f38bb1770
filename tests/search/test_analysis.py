"""The tokeniser `analysis.tokens`: one analyser for cards and queries, so its exact output is
the contract both sides of search rely on.

Identifiers and Japanese are pinned exactly and must never be stemmed. Plain English prose
words are only asserted in `test_prose_words_are_case_folded` and the stop-word tests, with
words a stemmer leaves alone ("deploy", "timeout", "fix", "crash"), so adding stemming touches
one clearly named place.
"""

from __future__ import annotations

import pytest

from external_brain.search.analysis import tokens

TIMEOUT_BIGRAMS = ["タイ", "イム", "ムア", "アウ", "ウト"]  # タイムアウト


# ---------------------------------------------------------------------------- prose and folding

def test_prose_words_are_case_folded():
    # Update here if prose words get stemmed: these four are their own stems.
    assert tokens("Deploy TIMEOUT fix Crash") == ["deploy", "timeout", "fix", "crash"]


def test_full_width_latin_letters_become_ascii():
    assert tokens("ＥＣＳ") == ["ecs"]
    assert tokens("ＥＣＯＮＮＲＥＳＥＴ") == ["econnreset"]


def test_full_width_digits_become_ascii():
    assert tokens("１２３") == ["123"]
    assert tokens("ＥＣＳ　１２３") == ["ecs", "123"]  # the ideographic space separates words


def test_full_width_code_symbols_become_ascii():
    assert tokens("Ｃ＋＋") == ["c++"]
    assert tokens("Ｃ＃") == ["c#"]
    assert tokens("ｖ１．２．３") == tokens("v1.2.3")


def test_half_width_katakana_becomes_full_width():
    assert tokens("ﾀｲﾑｱｳﾄ") == TIMEOUT_BIGRAMS


# ---------------------------------------------------------------------------- code identifiers

def test_a_hyphenated_identifier_yields_the_whole_and_its_parts():
    # The whole identifier stays exact; its word parts are stemmed like prose ("native screens"
    # in a query finds it), see analysis.py.
    assert tokens("react-native-screens") == ["react-native-screens", "react", "nativ", "screen"]


def test_a_snake_case_identifier_yields_the_whole_and_its_parts():
    assert tokens("snake_case") == ["snake_case", "snake", "case"]
    assert tokens("x86_64") == ["x86_64", "x86", "64"]


def test_a_camel_case_identifier_yields_the_folded_whole_and_its_parts():
    assert tokens("CamelCase") == ["camelcase", "camel", "case"]
    assert tokens("getUserName") == ["getusername", "get", "user", "name"]
    assert tokens("getUserName()") == ["getusername", "get", "user", "name"]


def test_an_acronym_run_in_camel_case_stays_together():
    assert tokens("HTTPServer") == ["httpserver", "http", "server"]
    assert tokens("XMLHttpRequest") == ["xmlhttprequest", "xml", "http", "request"]


def test_single_case_words_are_not_camel_split():
    assert tokens("ECONNRESET") == ["econnreset"]
    assert tokens("econnreset") == ["econnreset"]


def test_n_plus_1_stays_whole():
    assert tokens("N+1") == ["n+1"]
    assert tokens("fix N+1") == ["fix", "n+1"]


def test_a_version_keeps_its_whole_form_and_its_dotted_parts():
    assert tokens("v1.2.3") == ["v1.2.3", "v1", "2", "3"]
    assert tokens("python3.11") == ["python3.11", "python3", "11"]


def test_c_plus_plus_and_c_sharp_keep_their_symbols():
    assert tokens("C++") == ["c++"]
    assert tokens("C#") == ["c#"]
    assert tokens("C++17") == ["c++17"]
    assert tokens("C++ or C#") == ["c++", "or", "c#"]


def test_paths_and_dotted_names_yield_the_whole_and_its_parts():
    assert tokens("src/app/main.py") == ["src/app/main.py", "src", "app", "main", "py"]
    assert tokens("os.path.join") == ["os.path.join", "os", "path", "join"]
    assert tokens("utf-8") == ["utf-8", "utf", "8"]


def test_sentence_punctuation_is_not_part_of_an_identifier():
    assert tokens("see os.path.join, then fix.") == ["see", "os.path.join", "os", "path", "join", "then", "fix"]


# ---------------------------------------------------------------------------- Japanese

def test_a_katakana_run_becomes_overlapping_bigrams():
    assert tokens("タイムアウト") == TIMEOUT_BIGRAMS
    assert tokens("サーバー") == ["サー", "ーバ", "バー"]  # the long-vowel mark belongs to the word


def test_a_kanji_run_becomes_overlapping_bigrams():
    assert tokens("設定変更") == ["設定", "定変", "変更"]


def test_a_hiragana_run_becomes_overlapping_bigrams():
    assert tokens("ひらがな") == ["ひら", "らが", "がな"]


def test_mixed_kanji_and_kana_form_one_run():
    assert tokens("日本語の本文です") == ["日本", "本語", "語の", "の本", "本文", "文で", "です"]


def test_a_lone_cjk_character_is_a_unigram():
    assert tokens("本") == ["本"]
    assert tokens("a本b") == ["a", "本", "b"]


def test_a_two_character_run_is_one_bigram():
    assert tokens("ヴァ") == ["ヴァ"]


def test_full_width_japanese_punctuation_separates_runs():
    # No bigram spans 、 or 。 (no "イタ", no "ト設").
    assert tokens("デプロイ、タイムアウト。設定") == ["デプ", "プロ", "ロイ", *TIMEOUT_BIGRAMS, "設定"]
    assert tokens("「設定」を変更") == ["設定", "を変", "変更"]
    assert tokens("設定：タイムアウト") == ["設定", *TIMEOUT_BIGRAMS]
    assert tokens("（注意）") == ["注意"]


def test_the_katakana_middle_dot_separates_runs():
    assert tokens("アクセス・トークン") == ["アク", "クセ", "セス", "トー", "ーク", "クン"]


def test_the_kanji_iteration_mark_stays_in_its_run():
    assert tokens("人々") == ["人々"]


def test_japanese_mixed_with_an_acronym():
    assert tokens("ECSタスクのタイムアウト") == ["ecs", "タス", "スク", "クの", "のタ", *TIMEOUT_BIGRAMS]
    assert tokens("ＡＰＩキー") == ["api", "キー"]
    assert tokens("タイムアウト30秒") == [*TIMEOUT_BIGRAMS, "30", "秒"]


def test_japanese_mixed_with_code_identifiers():
    assert tokens("react-native-screensが落ちる") == [
        "react-native-screens", "react", "nativ", "screen", "が落", "落ち", "ちる"]
    assert tokens("getUserNameを呼ぶ") == ["getusername", "get", "user", "name", "を呼", "呼ぶ"]
    assert tokens("N+1問題") == ["n+1", "問題"]


# ---------------------------------------------------------------------------- stop words and emptiness

def test_stop_words_are_kept_by_default():
    assert tokens("the timeout of a deploy") == ["the", "timeout", "of", "a", "deploy"]


def test_stop_words_are_dropped_when_asked():
    assert tokens("the timeout of a deploy is in the nginx", drop_stop_words=True) == ["timeout", "deploy", "nginx"]
    assert tokens("How to fix the timeout", drop_stop_words=True) == ["fix", "timeout"]


def test_a_text_of_only_stop_words_drops_to_nothing():
    assert tokens("a the of", drop_stop_words=True) == []


def test_dropping_stop_words_leaves_identifiers_and_japanese_alone():
    assert tokens("the C++ and C# of ECSタスク", drop_stop_words=True) == [
        "c++", "c#", "ecs", "タス", "スク"]


@pytest.mark.parametrize("text", ["", "   ", "\t\n", "\u3000"])
def test_empty_and_whitespace_only_text_has_no_tokens(text):
    assert tokens(text) == []
    assert tokens(text, drop_stop_words=True) == []
