"""SubwordVectors and ACEWord2Vec's subword options attacked: values, types, sizes, tokens.

Non-finite rows, wrong shapes and types are errors naming the argument; numpy integers
are integers; gensim's FastTextKeyedVectors carries the n-grams both ways; a bucket
the machine cannot hold and a token whose repeated n-grams would make the fit diverge
are errors naming them, before training.
"""

import numpy as np
import pytest

from sknce import ACEWord2Vec
from sknce.words import RULE_DEFAULT, RULE_DISCARD, SubwordVectors, WordVectors
from sknce.words._subword_model import MAX_AMPLIFICATION, amplification

pytestmark = pytest.mark.attack("SubwordVectors and the subword options of ACEWord2Vec")

WORDS = ["walk", "talk", "naïve", "日本", ""]
RNG = np.random.default_rng(0)
VOCAB = RNG.normal(size=(5, 4))
NGRAMS = RNG.normal(size=(30, 4))


def _with_row(value, row=1):
    rows = NGRAMS.copy()
    rows[row, 2] = value
    return rows


# --- SubwordVectors: the rows ----------------------------------------------------------


@pytest.mark.parametrize(
    ("ngrams", "error", "match"),
    [
        (_with_row(np.nan), ValueError, "n-gram row 1 of vectors_ngrams has non-finite"),
        (_with_row(np.inf), ValueError, "n-gram row 1 of vectors_ngrams has non-finite"),
        (_with_row(-np.inf, row=29), ValueError, "n-gram row 29 "),
        (_with_row(1e39), ValueError, "beyond float32's range"),
        (np.full((30, 4), np.nan), ValueError, "row 0 and 29 more rows"),
        (np.array([["a"] * 4] * 30), TypeError, "vectors_ngrams must hold numbers"),
        (NGRAMS[:, 0], ValueError, r"must be a 2-d array .*\(30,\)"),
        (NGRAMS[None], ValueError, r"must be a 2-d array .*\(1, 30, 4\)"),
        (NGRAMS[:, :3], ValueError, r"vectors_ngrams has shape \(30, 3\) but the word vect"),
        (np.zeros((30, 4), dtype=complex), TypeError, "hold numbers"),
    ],
)
def test_bad_ngram_rows_are_named(ngrams, error, match):
    with pytest.raises(error, match=match):
        SubwordVectors(WORDS, VOCAB, ngrams)


@pytest.mark.parametrize(
    ("vocab", "error", "match"),
    [
        (np.where(np.arange(20).reshape(5, 4) == 5, np.nan, VOCAB), ValueError, "'talk'"),
        (VOCAB[:4], ValueError, "got 5 words for 4 vectors"),
        (np.array([["1"] * 4] * 5), TypeError, "vectors_vocab must hold numbers"),
    ],
)
def test_bad_word_rows_are_named(vocab, error, match):
    with pytest.raises(error, match=match):
        SubwordVectors(WORDS, vocab, NGRAMS)


def test_integer_and_float64_rows_become_float32():
    wv = SubwordVectors(WORDS, VOCAB.astype(int), NGRAMS.astype(np.int16))
    assert wv.vectors_ngrams.dtype == np.float32 and wv.vectors.dtype == np.float32


def test_no_ngram_rows_gives_words_alone():
    wv = SubwordVectors(WORDS, VOCAB, np.empty((0, 4)))
    np.testing.assert_allclose(wv.vectors, VOCAB.astype(np.float32))
    with pytest.raises(KeyError):
        wv["unseen"]


# --- SubwordVectors: min_n and max_n ---------------------------------------------------


def test_numpy_integers_are_integers():
    plain = SubwordVectors(WORDS, VOCAB, NGRAMS, min_n=2, max_n=4)
    for kind in (np.int64, np.int32, np.uint8):
        wv = SubwordVectors(WORDS, VOCAB, NGRAMS, min_n=kind(2), max_n=kind(4))
        assert type(wv.min_n) is int and type(wv.max_n) is int
        np.testing.assert_array_equal(wv["walking"], plain["walking"])


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"min_n": True}, TypeError, "min_n must be an int, got True"),
        ({"min_n": 2.0}, TypeError, "min_n must be an int, got 2.0"),
        ({"min_n": "3"}, TypeError, "min_n must be an int"),
        ({"min_n": None}, TypeError, "min_n must be an int"),
        ({"min_n": 0}, ValueError, r"min_n must be in 1\.\.2147483647, got 0"),
        ({"max_n": -1}, ValueError, r"max_n must be in 0\.\.2147483647, got -1"),
        ({"max_n": 2**40}, ValueError, "max_n must be in"),
        ({"max_n": np.float64(4)}, TypeError, "max_n must be an int"),
    ],
)
def test_bad_ngram_lengths_are_named(options, error, match):
    with pytest.raises(error, match=match):
        SubwordVectors(WORDS, VOCAB, NGRAMS, **options)


def test_max_n_below_min_n_is_words_alone():
    wv = SubwordVectors(WORDS, VOCAB, NGRAMS, min_n=5, max_n=2)
    np.testing.assert_allclose(wv.vectors, VOCAB.astype(np.float32))
    np.testing.assert_array_equal(wv["unseen"], np.zeros(4, np.float32))


# --- gensim: both ways, n-grams included -------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [{}, {"min_n": 1, "max_n": 2}, {"min_n": 5, "max_n": 2}, {"counts": [5, 4, 3, 2, 1]}],
)
def test_to_gensim_carries_the_ngrams(options):
    pytest.importorskip("gensim")
    wv = SubwordVectors(WORDS, VOCAB, NGRAMS, **options)
    kv = wv.to_gensim()
    assert type(kv).__name__ == "FastTextKeyedVectors" and kv.bucket == 30
    for word in ["walk", "walking", "naïveté", "日本語", "zz"]:
        np.testing.assert_allclose(kv[word], wv[word], rtol=1e-5, atol=1e-6)
    back = SubwordVectors.from_gensim(kv)
    assert back.index_to_key == wv.index_to_key and back.min_n == wv.min_n
    np.testing.assert_array_equal(back.vectors_ngrams, wv.vectors_ngrams)
    assert back.expandos.keys() == wv.expandos.keys()


def test_to_gensim_of_no_ngram_rows():
    pytest.importorskip("gensim")
    kv = SubwordVectors(WORDS, VOCAB, np.empty((0, 4))).to_gensim()
    np.testing.assert_allclose(kv["walk"], VOCAB[0], rtol=1e-6)


def test_from_gensim_takes_a_fasttext_models_vectors():
    gensim = pytest.importorskip("gensim")
    corpus = [["walk", "talk", "walking"], ["talk", "walked"]] * 20
    model = gensim.models.FastText(corpus, vector_size=4, min_count=1, bucket=50, epochs=1)
    wv = SubwordVectors.from_gensim(model.wv)
    for word in ["walk", "walkers", "zzz"]:
        np.testing.assert_allclose(wv[word], model.wv[word], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", ["model.wv", None, WordVectors(["a"], np.ones((1, 2)))])
def test_from_gensim_refuses_what_holds_no_ngrams(bad):
    pytest.importorskip("gensim")
    from gensim.models import KeyedVectors

    plain = KeyedVectors(2)
    plain.add_vectors(["a"], np.ones((1, 2)))
    for value in (bad, plain):
        with pytest.raises(TypeError, match="takes a gensim FastTextKeyedVectors"):
            SubwordVectors.from_gensim(value)


# --- ACEWord2Vec(subwords=True): bucket, min_n, max_n, long tokens -----------------------

CORPUS = [["the", "cat", "walked", "home"], ["a", "dog", "talked", "home"]] * 30
ACE = dict(subwords=True, n_components=8, min_count=1, sample=0, max_epochs=1, n_jobs=1)


class _Unreadable:
    """A corpus that fails if it is read: the error must come before."""

    def __iter__(self):
        raise AssertionError("the corpus was read")


@pytest.mark.parametrize("bucket", [2**31, 2**40])
def test_a_bucket_beyond_memory_is_named_before_the_corpus_is_read(bucket):
    with pytest.raises(ValueError, match=rf"bucket={bucket} n-gram rows of n_components=8 .*"
                       r"GiB, more than this machine's"):  # fmt: skip
        ACEWord2Vec(**{**ACE, "bucket": bucket}).fit(_Unreadable())


@pytest.mark.parametrize(
    "params",
    [{"bucket": -1}, {"bucket": 1.5}, {"bucket": "2000"}, {"min_n": 0}, {"max_n": -1},
     {"min_n": 2.0}],
)  # fmt: skip
def test_bad_subword_options_are_named(params):
    with pytest.raises(ValueError, match=f"'{next(iter(params))}' parameter"):
        ACEWord2Vec(**{**ACE, **params}).fit(CORPUS)


def test_numpy_integer_options_fit():
    model = ACEWord2Vec(**ACE, min_n=np.int64(2), max_n=np.int32(4), bucket=np.int64(500))
    model.fit(CORPUS)
    assert model.wv_.min_n == 2 and model.wv_.max_n == 4 and model.wv_.bucket == 500


@pytest.mark.parametrize("token", ["x" * 3000, "ab" * 1500, "ha" * 400])
def test_a_token_whose_ngrams_repeat_is_named(token):
    corpus = [doc + [token] for doc in CORPUS]
    with pytest.raises(ValueError, match=rf"token '{token[:20]}'\.\.\. \({len(token)} char"):
        ACEWord2Vec(**ACE).fit(corpus)


def test_long_tokens_of_distinct_ngrams_and_trimmed_ones_fit():
    rng = np.random.default_rng(0)
    long_word = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 3000))
    assert amplification(np.arange(10)) == 1.0
    ACEWord2Vec(**ACE).fit([doc + [long_word, "x" * 80] for doc in CORPUS])

    def trim(word, count, min_count):
        return RULE_DISCARD if len(word) > 100 else RULE_DEFAULT

    model = ACEWord2Vec(**ACE, trim_rule=trim).fit([doc + ["x" * 3000] for doc in CORPUS])
    assert "x" * 3000 not in model.vocabulary_
    assert MAX_AMPLIFICATION == 100.0
