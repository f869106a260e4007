"""Tests for mole_dag.text: tokens, stopwords, the light stemmer and the sentence splitter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mole_dag.text import STOPWORDS, sentence_spans, stem, terms, words


def test_words_lowercase_and_keep_stopwords() -> None:
    assert words("The Risk of Stroke is NOT higher.") == [
        "the", "risk", "of", "stroke", "is", "not", "higher"
    ]


def test_words_keep_decimals_and_apostrophes_inside() -> None:
    assert words("It rose 3.5 percent, don't panic.") == [
        "it", "rose", "3.5", "percent", "don't", "panic"
    ]


def test_words_nfkc_normalises_fullwidth() -> None:
    assert words("ＧＲＥＥＮ　ＴＥＡ １２") == ["green", "tea", "12"]


def test_terms_drop_stopwords() -> None:
    got = terms("What are the effects of drinking green tea on the health of adults?")
    assert got == ["effect", "drink", "green", "tea", "health", "adult"]
    assert not set(got) & STOPWORDS


@pytest.mark.parametrize("text", ["the of and", "a an the is was were", "Der die das und"])
def test_terms_all_stopwords_gives_nothing(text: str) -> None:
    assert terms(text) == []


def test_terms_keep_digits_including_single_digit() -> None:
    got = terms("Risk fell by 5 points in 2021 and 3.5 percent overall")
    assert "5" in got
    assert "2021" in got
    assert "3.5" in got


def test_terms_drop_single_latin_letters() -> None:
    assert terms("x y z vitamin d") == ["vitamin"]


def test_cjk_bigrams() -> None:
    assert words("绿茶研究") == ["绿茶", "茶研", "研究"]
    assert terms("绿茶研究") == ["绿茶", "茶研", "研究"]


def test_cjk_single_character_kept() -> None:
    assert terms("茶") == ["茶"]


def test_cjk_mixed_with_latin() -> None:
    got = words("绿茶abc研究")
    assert "绿茶" in got and "研究" in got and "abc" in got
    assert "茶a" not in "".join(got)


def test_kana_and_hangul_bigrams() -> None:
    assert words("カタカナ") == ["カタ", "タカ", "カナ"]
    assert words("한국어") == ["한국", "국어"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("drinking", "drink"),
        ("effects", "effect"),
        ("healthy", "healthy"),
        ("health", "health"),
        ("studies", "study"),
        ("glasses", "glass"),
        ("boxes", "box"),
        ("stress", "stress"),
        ("virus", "virus"),
        ("analysis", "analysis"),
        ("tea", "tea"),
        ("cats", "cats"),  # four letters or fewer: untouched
        ("lies", "lies"),
        ("café", "café"),  # not ASCII: untouched
        ("covid19", "covid19"),  # not alphabetic: untouched
        ("reported", "report"),
    ],
)
def test_stem_examples(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(
    ("base", "inflected"),
    [("increase", "increases"), ("increase", "increased"), ("raise", "raises"),
     ("cause", "causes"), ("decrease", "decreasing")],
)
def test_stem_inflections_of_se_verbs_meet_base_form(base: str, inflected: str) -> None:
    assert stem(inflected) == stem(base)


def test_stem_keeps_health_and_healthy_apart() -> None:
    assert stem("healthy") != stem("health")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_stem_never_lengthens_and_is_a_prefix_or_y_form(word: str) -> None:
    s = stem(word)
    assert len(s) <= len(word)
    assert word.startswith(s) or (word.endswith("ies") and s.endswith("y"))


def test_sentences_split_before_capital_and_digit() -> None:
    text = "Tea is popular. It contains caffeine. 40 mg is typical! Really? Yes."
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["Tea is popular.", "It contains caffeine.", "40 mg is typical!", "Really?",
                   "Yes."]


def test_sentences_not_split_before_lowercase_or_inside_numbers() -> None:
    text = "Doses of 3.5 mg, e.g. in tablets, are common. Fine."
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["Doses of 3.5 mg, e.g. in tablets, are common.", "Fine."]


def test_sentences_split_after_closing_quote_splits() -> None:
    text = 'He said "tea is good." Then he left.'
    spans = sentence_spans(text)
    assert len(spans) == 2
    assert text[spans[1][0] : spans[1][1]] == "Then he left."


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ('He said "tea is good." Then he left.', 'He said "tea is good."'),
        ("Risk rose (see Table 2.) The rest followed.", "Risk rose (see Table 2.)"),
        ("She wrote \u201cit works.\u201d Then nothing.", "She wrote \u201cit works.\u201d"),
    ],
)
def test_sentences_keep_closing_quote_after_terminator(text: str, first: str) -> None:
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got[0] == first


def test_sentences_cjk_terminators() -> None:
    text = "绿茶很受欢迎。它含有咖啡因！真的吗？是的"
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["绿茶很受欢迎。", "它含有咖啡因！", "真的吗？", "是的"]


def test_sentences_blank_line_splits_without_terminator() -> None:
    text = "A heading without a stop\n\n  body text continues here\n \t\nlast part"
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["A heading without a stop", "body text continues here", "last part"]


def test_sentences_trimmed() -> None:
    text = "   \n Leading space. Trailing space.   \n"
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == ["Leading space.", "Trailing space."]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\n", "\t \n"])
def test_sentences_of_blank_text(text: str) -> None:
    assert sentence_spans(text) == []


# Closing quotes/brackets right after a terminator are left out of the random alphabet: they
# are dropped (see the xfail test above), which would make this property fail on them.
_sent_text = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_characters="\"')]\u201d\u2019",
                              blacklist_categories=("Cs",)), max_size=10),
        st.sampled_from([". ", "! ", "? ", "。", "！", "？", "\n\n", " \n \n", "A", "9", "é",
                         "The", "\u201d ", "  ", "\t"]),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_sent_text)
def test_sentence_spans_are_trimmed_ordered_and_nonempty(text: str) -> None:
    spans = sentence_spans(text)
    prev_end = 0
    for a, b in spans:
        assert 0 <= prev_end <= a < b <= len(text)
        seg = text[a:b]
        assert seg
        assert seg == seg.strip()
        prev_end = b
    # Nothing but whitespace is lost between or around the spans.
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    assert all(text[k].isspace() for k in range(len(text)) if k not in covered)
