"""Tokeniser: Latin stemming/stop words, CJK bigrams + unigrams, normalisation."""

from kbwatch.plugins.retrieval import tokenize
from kbwatch.plugins.retrieval.tokenizer import has_cjk, tokenize_query


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


def test_question_words_break_cjk_runs():
    from kbwatch.plugins.retrieval.tokenizer import TOKENIZER_VERSION

    assert TOKENIZER_VERSION != "1"  # rule change: old indexes are rebuilt
    toks = tokenize("纽西兰鸡毛松有什么用途？")
    # no bigram spans the question word, and it leaves no unigram
    assert not any(t in toks for t in ("有什", "什么", "么用", "什", "么"))
    assert "鸡毛" in toks and "用途" in toks and "松有" in toks
    assert tokenize("该漫画是由谁创作的") == tokenize("该漫画是由") + tokenize("创作")
    assert "为" not in tokenize("为什么下雨") and "下雨" in tokenize("为什么下雨")
    assert tokenize("面积有多少") == tokenize("面积有")


def test_particle_de_breaks_runs_without_unigram():
    toks = tokenize("松的树叶")
    assert toks == ["松", "树", "树叶", "叶"]
    assert "的" not in tokenize("目的")
    # a query and its answer sentence still share the content bigrams
    assert {"树叶", "形状"} <= set(tokenize("纽西兰鸡毛松的树叶是什么形状的？"))


def test_what_is_x_and_x_is_what_tokenise_alike():
    # "什么是棱柱" and "棱柱是什么" ask the same question; both match a definition "棱柱是…"
    assert tokenize("什么是棱柱") == tokenize("棱柱是什么")
    assert "柱是" in tokenize("棱柱是一种多面体")


def test_which_words_break_runs_whole():
    # 哪些 / 哪里 leave no stray 些 / 里 behind (those would match 一些, 这些, 里面)
    toks = tokenize("哪些城市")
    assert "些" not in toks and "些城" not in toks
    assert toks == ["城", "城市", "市"]
