"""fastText's n-grams and hashes, SubwordVectors and fastText's .bin files, against gensim."""

import numpy as np
import pytest
from scipy import stats

from sknce.words import (
    SubwordVectors,
    WordVectors,
    load_facebook_model,
    load_facebook_vectors,
    save_facebook_model,
)
from sknce.words._subwords import (
    AUTO_BUCKET_MAX,
    AUTO_ROWS_PER_NGRAM,
    auto_bucket,
    ft_hash,
    ngram_buckets,
    ngrams,
    subword_table,
)

gensim_fasttext = pytest.importorskip("gensim.models.fasttext")
from gensim.models.fasttext_inner import compute_ngrams_bytes, ft_hash_bytes  # noqa: E402
from gensim.test.utils import datapath  # noqa: E402

WORDS = ["hello", "a", "", "naïve", "日本語", "</s>", "héllo wörld", "x" * 20, "emoji😀s", "ab"]


def test_fnv1a_reference_values():
    # 32-bit FNV-1a's published test vectors (ASCII bytes: fastText's hash agrees)
    assert ft_hash(b"") == 0x811C9DC5
    assert ft_hash(b"a") == 0xE40C292C
    assert ft_hash(b"foobar") == 0xBF9CF968
    # a byte >= 0x80 is sign-extended first (fastText's int8_t), unlike the textbook hash
    textbook = ((0x811C9DC5 ^ 0xC3) * 16777619) & 0xFFFFFFFF
    fasttext = ((0x811C9DC5 ^ 0xFFFFFFC3) * 16777619) & 0xFFFFFFFF
    assert ft_hash(b"\xc3") == fasttext != textbook


@pytest.mark.parametrize("word", WORDS)
def test_hash_matches_gensim(word):
    for gram in ngrams(word, 1, 6):
        assert ft_hash(gram) == ft_hash_bytes(gram)


@pytest.mark.parametrize("min_n, max_n", [(3, 6), (1, 3), (2, 2), (4, 8), (5, 3)])
def test_ngrams_match_gensim(min_n, max_n):
    for word in WORDS:
        assert ngrams(word, min_n, max_n) == compute_ngrams_bytes(word, min_n, max_n)


def test_ngrams_by_hand():
    assert ngrams("where", 3, 3) == [b"<wh", b"whe", b"her", b"ere", b"re>"]
    # characters, not bytes: "ï" is two bytes but one character
    assert ngrams("aï", 2, 2) == [b"<a", "aï".encode(), "ï>".encode()]
    # "<" and ">" alone are never n-grams
    assert ngrams("ab", 1, 1) == [b"a", b"b"]


@pytest.mark.parametrize("min_n, max_n, bucket", [(3, 6, 2000000), (1, 4, 97), (2, 3, 1)])
def test_buckets_match_gensim(min_n, max_n, bucket):
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghijklmnopqrstuvwxyzéü日")
    words = WORDS + ["".join(rng.choice(alphabet, rng.integers(1, 14))) for _ in range(300)]
    ptr, buckets = ngram_buckets(words, min_n, max_n, bucket)
    for i, word in enumerate(words):
        expected = gensim_fasttext.ft_ngram_hashes(word, min_n, max_n, bucket)
        assert buckets[ptr[i] : ptr[i + 1]].tolist() == expected


def test_buckets_in_chunks_of_words_are_the_same(monkeypatch):
    from sknce.words import _subwords

    words = WORDS + ["日本語", "é", "", "ab"] * 3
    whole = ngram_buckets(words, 1, 6, 97)
    monkeypatch.setattr(_subwords, "_WORDS_PER_CHUNK", 4)
    chunked = ngram_buckets(words, 1, 6, 97)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))
    ptr, buckets = ngram_buckets(words, 1, 0, 97)  # no lengths: no n-grams
    assert ptr.tolist() == [0] * (len(words) + 1) and buckets.shape == (0,)
    ptr, buckets = ngram_buckets([], 3, 6, 97)
    assert ptr.tolist() == [0] and buckets.shape == (0,) and buckets.dtype == np.int64


def test_auto_bucket_gives_rows_per_distinct_ngram_up_to_fasttexts():
    distinct = {gram for word in WORDS for gram in ngrams(word, 3, 6)}
    assert auto_bucket(WORDS, 3, 6) == AUTO_ROWS_PER_NGRAM * len(distinct)
    assert auto_bucket(WORDS * 3, 3, 6) == auto_bucket(WORDS, 3, 6)  # each n-gram once
    assert auto_bucket(["ab"], 1, 1) == AUTO_ROWS_PER_NGRAM * 2  # "<" and ">" are not n-grams
    assert auto_bucket(WORDS, 4, 3) == 0 and auto_bucket([], 3, 6) == 0  # no n-grams
    many = [f"w{i:07d}" for i in range(100_000)]  # over 250,000 distinct n-grams
    assert auto_bucket(many, 3, 6) == AUTO_BUCKET_MAX == 2_000_000


def test_subword_table_rows():
    words = ["ab", "c"]
    ptr, rows = subword_table(words, 3, 4, 10)
    for i, word in enumerate(words):
        expected = [i] + [2 + ft_hash(g) % 10 for g in ngrams(word, 3, 4)]
        assert rows[ptr[i] : ptr[i + 1]].tolist() == expected
    ptr, rows = subword_table(words, 3, 6, 0)  # no buckets: each word its own row
    assert ptr.tolist() == [0, 1, 2] and rows.tolist() == [0, 1]


# --- SubwordVectors ----------------------------------------------------------------------
def _vectors(seed=0, bucket=50, words=("walk", "walked", "talk", "cat", "dog")):
    rng = np.random.default_rng(seed)
    vocab = rng.normal(size=(len(words), 4)).astype(np.float32)
    grams = rng.normal(size=(bucket, 4)).astype(np.float32)
    return SubwordVectors(list(words), vocab, grams, min_n=3, max_n=5, counts=[5, 4, 3, 2, 1])


def _brute(wv, word):
    rows = [ft_hash(g) % wv.bucket for g in ngrams(word, wv.min_n, wv.max_n)]
    if word in wv.key_to_index:
        own = wv.vectors_vocab[wv.key_to_index[word]]
        return (own + wv.vectors_ngrams[rows].sum(0)) / (len(rows) + 1)
    return wv.vectors_ngrams[rows].mean(0)


def test_vectors_are_means_of_rows():
    wv = _vectors()
    for word in ["walk", "dog", "walking", "unseen", "ü"]:
        np.testing.assert_allclose(wv[word], _brute(wv, word), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wv.vectors[0], _brute(wv, "walk"), rtol=1e-5)
    assert "walking" in wv and not wv.has_index_for("walking")
    with pytest.raises(KeyError):
        wv.get_index("walking")
    assert not wv[""].any()  # "<>" has no 3-gram: the zero vector, as gensim


def test_adjust_vectors_follows_rows_in_place():
    wv = _vectors()
    before = wv.vectors
    wv.vectors_ngrams[:] += 1.0
    wv.adjust_vectors()
    assert wv.vectors is before
    np.testing.assert_allclose(wv["walk"], _brute(wv, "walk"), rtol=1e-5)


def test_queries_with_oov_words():
    wv = _vectors()
    unit = wv.get_vector("walking", norm=True)
    assert wv.most_similar("walking") == wv.most_similar(unit)
    assert wv.most_similar(positive=[("walking", 2.0)], negative=["cat"], topn=3) == (
        wv.most_similar(positive=[(unit, 2.0)], negative=["cat"], topn=3)
    )
    a, b = wv["walking"], wv["dog"]
    expected = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    assert wv.similarity("walking", "dog") == pytest.approx(expected, rel=1e-5)


def test_evaluate_word_pairs_scores_oov_pairs():
    wv = _vectors()
    pairs = [("walk", "talk", 8.0), ("walking", "walked", 9.0), ("cat", "dog", 5.0)]
    pairs += [("Cat", "talking", 1.0), ("dog", "zebra", 2.0)]
    pearson, spearman, oov = wv.evaluate_word_pairs(pairs)
    sims = [wv.similarity(a.lower(), b.lower()) for a, b, _ in pairs]
    assert spearman[0] == pytest.approx(stats.spearmanr([p[2] for p in pairs], sims)[0])
    assert oov == pytest.approx(300 / 5)
    # subwords=False: WordVectors' (gensim's) evaluation of the vocabulary's words
    plain = WordVectors(wv.index_to_key, wv.vectors)
    assert wv.evaluate_word_pairs(pairs, subwords=False, dummy4unknown=True)[1][0] == (
        pytest.approx(plain.evaluate_word_pairs(pairs, dummy4unknown=True)[1][0])
    )


def test_same_vectors_as_gensim_fasttext():
    from gensim.models import FastText

    docs = [["walking", "talking", "walked", "cats", "dog"], ["dogs", "cat", "talk"]] * 20
    model = FastText(docs, vector_size=8, min_count=1, bucket=100, epochs=2, workers=1, seed=0)
    g = model.wv
    wv = SubwordVectors(g.index_to_key, g.vectors_vocab, g.vectors_ngrams, min_n=3, max_n=6)
    for word in ["walking", "dog", "walker", "running", "zz"]:
        np.testing.assert_allclose(wv[word], g[word], rtol=1e-4, atol=1e-6)
    assert [w for w, _ in wv.most_similar("walker", topn=4)] == [
        w for w, _ in g.most_similar("walker", topn=4)
    ]


# --- fastText files ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lee_fasttext.bin", "lee_fasttext_new.bin"])
def test_load_facebook_vectors_as_gensim(name):
    ours = load_facebook_vectors(datapath(name))
    theirs = gensim_fasttext.load_facebook_vectors(datapath(name))
    assert ours.index_to_key == theirs.index_to_key
    assert (ours.bucket, ours.min_n, ours.max_n) == (theirs.bucket, theirs.min_n, theirs.max_n)
    np.testing.assert_allclose(ours.vectors, theirs.vectors, rtol=1e-5, atol=1e-6)
    for word in ["night", "nightfall", "xyzzy", "überall", "a"]:
        np.testing.assert_allclose(ours[word], theirs[word], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(
        ours.get_vecattr("night", "count"), theirs.get_vecattr("night", "count")
    )


def test_load_facebook_model_header():
    old = load_facebook_model(datapath("lee_fasttext.bin"))
    new = load_facebook_model(datapath("lee_fasttext_new.bin"))
    assert old.version == 0 and new.version == 11
    for model in (old, new):
        assert model.args["dim"] == model.input.shape[1]
        assert model.args["model"] in (1, 2) and model.args["minn"] == 3
        assert model.output.shape == (len(model.words), model.args["dim"])


def test_supervised_and_truncated_files_are_errors(tmp_path):
    with pytest.raises(ValueError, match="supervised"):
        load_facebook_vectors(datapath("pang_lee_polarity_fasttext.bin"))
    with open(datapath("lee_fasttext_new.bin"), "rb") as f:
        data = f.read()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        load_facebook_vectors(cut)


def test_save_facebook_model_round_trip(tmp_path):
    wv = _vectors(bucket=30, words=("walk", "walked", "naïve", "日本", "dog"))
    out = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    path = tmp_path / "model.bin"
    save_facebook_model(path, wv, out, args={"epoch": 7, "model": 1})
    back = load_facebook_model(path)
    assert back.words == wv.index_to_key and back.args["epoch"] == 7
    assert back.args["model"] == 1 and back.args["bucket"] == 30
    np.testing.assert_array_equal(back.input, np.vstack([wv.vectors_vocab, wv.vectors_ngrams]))
    np.testing.assert_array_equal(back.output, out)
    np.testing.assert_array_equal(back.counts, [5, 4, 3, 2, 1])
    theirs = gensim_fasttext.load_facebook_vectors(str(path))
    for word in ["walk", "naïve", "walking", "日本語"]:
        np.testing.assert_allclose(theirs[word], wv[word], rtol=1e-5, atol=1e-6)


def test_save_facebook_vec_is_word2vec_text(tmp_path):
    wv = _vectors()
    wv.save_facebook_vec(tmp_path / "v.vec")
    back = WordVectors.load_word2vec_format(tmp_path / "v.vec")
    assert back.index_to_key == wv.index_to_key
    np.testing.assert_allclose(back.vectors, wv.vectors)


def test_save_load_and_what_subword_vectors_refuse(tmp_path):
    wv = _vectors()
    wv.save(tmp_path / "wv.bin")
    back = SubwordVectors.load(tmp_path / "wv.bin")
    assert back.index_to_key == wv.index_to_key
    np.testing.assert_array_equal(back.vectors_ngrams, wv.vectors_ngrams)
    np.testing.assert_allclose(back["walking"], wv["walking"])
    with pytest.raises(TypeError, match="cannot add words"):
        wv["new"] = np.zeros(4)
    wv.save_word2vec_format(tmp_path / "w.txt")
    assert type(SubwordVectors.load_word2vec_format(tmp_path / "w.txt")) is WordVectors
