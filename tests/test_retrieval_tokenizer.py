"""Tokeniser: Latin stemming/stop words, CJK bigrams + unigrams, normalisation."""

from plugins._retrieval import tokenize
from plugins._retrieval.tokenizer import has_cjk, tokenize_query


def test_wang_shen_question_yields_several_tokens():
    toks = tokenize("王沈是哪里人")
    assert len(toks) >= 5
    # the two-character name survives as a bigram and as unigrams
    assert "王沈" in toks and "王" in toks and "沈" in toks
    # question words are not tokens
    assert "哪里" not in toks and "是哪" not in toks


def test_cjk_bigrams_and_unigrams_in_order():
    assert tokenize("知识库") == ["知", "知识", "识", "识库", "库"]
    assert tokenize("库") == ["库"]


def test_cjk_run_split_by_punctuation_and_latin():
    toks = tokenize("技术方案，API网关")
    assert "技术" in toks and "方案" in toks
    assert "案，" not in toks
    assert not any(("案" in t and "a" in t) or ("i" in t and "网" in t) for t in toks)
    assert "api" in toks and "网关" in toks


def test_latin_lowercased_stemmed_stopwords_dropped():
    toks = tokenize("The Running cells were STUDIED in the mice")
    assert "the" not in toks and "in" not in toks
    assert "run" in toks and "cell" in toks and "studi" in toks and "mice" in toks
    assert all(t == t.lower() for t in toks)


def test_single_characters_dropped_but_digits_next_to_cjk_kept():
    assert tokenize("a b 3 x") == []
    toks = tokenize("1984年6月获得第3名")
    assert "1984" in toks and "6" in toks and "3" in toks
    assert "3" not in tokenize("3 号 楼")  # separated by spaces: a lone digit


def test_fullwidth_normalised():
    assert tokenize("ＡＰＩ　Ｇａｔｅｗａｙ") == tokenize("API Gateway") == ["api", "gateway"]


def test_kana_and_hangul_are_segmented():
    assert len(tokenize("ありがとう")) > 1
    assert len(tokenize("한국어")) > 1


def test_empty_and_symbols():
    assert tokenize("") == []
    assert tokenize("!!! ... ---") == []


def test_query_tokens_cached_and_equal():
    q = "王沈是哪里人？"
    assert list(tokenize_query(q)) == tokenize(q)
    assert has_cjk(q) and not has_cjk("hello")
