"""Corpus handling for ACEWord2Vec: tokenising, restartability, vocabulary, skip-gram pairs."""

import tracemalloc
from collections import Counter

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from sknce.words import _corpus
from sknce.words._corpus import (
    RULE_DEFAULT,
    RULE_DISCARD,
    RULE_KEEP,
    Vocabulary,
    cbow_batches,
    check_restartable,
    default_tokenizer,
    iter_documents,
    pair_batches,
)


def _all_pairs(corpus, vocab, **kwargs):
    batches = list(pair_batches(corpus, None, vocab, **kwargs))
    centres = np.concatenate([c for c, _ in batches])
    contexts = np.concatenate([x for _, x in batches])
    return centres, contexts


class LazyCorpus:
    """A restartable corpus generated on the fly, never held in memory."""

    def __init__(self, n_documents, length, n_words=50, seed=0):
        self.n_documents, self.length, self.n_words, self.seed = n_documents, length, n_words, seed

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        words = [f"w{i}" for i in range(self.n_words)]
        for _ in range(self.n_documents):
            yield [words[i] for i in rng.integers(0, self.n_words, self.length)]


# --- tokenising and input checks ------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["The cat sat on a mat, didn't it?", "Ünïcödé wörds 42 x y_z", "", "  A  b  CC\nDd\tee "],
)
def test_default_tokenizer_matches_countvectorizer(text):
    analyzer = CountVectorizer().build_analyzer()
    assert default_tokenizer(text) == analyzer(text)


def test_check_restartable_rejects_one_shot_iterators():
    docs = [["a", "b"], ["c"]]
    for one_shot in (iter(docs), (d for d in docs), map(list, docs)):
        with pytest.raises(TypeError, match="one-shot iterator.*LineSentence"):
            check_restartable(one_shot)
    with pytest.raises(TypeError, match="corpus.*one-shot"):
        check_restartable(iter(docs), what="corpus")


def test_check_restartable_accepts_lists_and_restartable_objects():
    check_restartable([["a"]])
    check_restartable((["a"],))
    check_restartable(LazyCorpus(2, 3))


@pytest.mark.parametrize(
    ("X", "match"), [("some text", "single str.*wrap it in a list"), (3, "iterable of documents")]
)
def test_check_restartable_rejects_non_corpora(X, match):
    with pytest.raises(TypeError, match=match):
        check_restartable(X)


def test_iter_documents_tokenises_strings_and_passes_token_lists():
    docs = ["Hello World", ["Keep", "AS", "is"], ("a", "tuple")]
    assert list(iter_documents(docs)) == [["hello", "world"], ["Keep", "AS", "is"], ("a", "tuple")]
    assert list(iter_documents(["a-b c"], tokenizer=str.split)) == [["a-b", "c"]]


@pytest.mark.parametrize(
    ("docs", "tokenizer", "match"),
    [
        ([["ok"], 5], None, "document 1 of X is a int"),
        ([{"a": 1}], None, "document 0 of X is a dict"),
        ([[1, 2, 3]], None, "contains a int token"),
        ([[["nested"]]], None, "contains a list token"),
        (["text"], str.upper, "tokenizer must return a list"),
    ],
)
def test_iter_documents_rejects_bad_documents(docs, tokenizer, match):
    with pytest.raises(TypeError, match=match):
        list(iter_documents(docs, tokenizer))


# --- vocabulary -----------------------------------------------------------------------


def test_vocabulary_counts_order_and_encoding():
    corpus = [["b", "a", "c", "a"], ["c", "a", "d"], ["b", "e", "b"]]
    vocab = Vocabulary.build(corpus, min_count=2)
    # a: 3, b: 3, c: 2 (d, e once); ties: the word counted last first, as gensim.
    assert vocab.words == ["a", "b", "c"]
    assert vocab.counts.tolist() == [3, 3, 2]
    assert vocab.counts.dtype == np.int64
    assert vocab.index == {"a": 0, "b": 1, "c": 2}
    assert (len(vocab), vocab.n_raw_tokens, vocab.n_documents) == (3, 10, 3)
    encoded = vocab.encode(["d", "c", "zz", "a"])
    assert encoded.dtype == np.int32
    assert encoded.tolist() == [2, 0]


def test_vocabulary_from_strings_uses_the_tokenizer():
    # One word survives min_count in both: the one-word warning is expected.
    with pytest.warns(UserWarning, match="single word, 'the'"):
        vocab = Vocabulary.build(["The cat. THE dog!", "the end"], min_count=2)
    assert vocab.words == ["the"] and vocab.counts.tolist() == [3]
    with pytest.warns(UserWarning, match="single word, 'x-y'"):
        vocab = Vocabulary.build(["x-y x-y z"], tokenizer=str.split, min_count=2)
    assert vocab.words == ["x-y"]


def test_vocabulary_max_vocab_size_prunes_while_scanning():
    corpus = [["a", "b", "c", "a"], ["d", "b"], ["c", "e", "a"]]
    # After document 2 there are 4 > 3 types but none below 1; after document 3
    # the threshold is 2 and d, e go (gensim's prune_vocab schedule).
    vocab = Vocabulary.build(corpus, min_count=1, max_vocab_size=3)
    assert dict(zip(vocab.words, vocab.counts.tolist())) == {"a": 3, "b": 2, "c": 2}
    assert vocab.n_raw_tokens == 9


def test_vocabulary_errors_name_the_fix():
    with pytest.raises(ValueError, match="no tokens.*non-empty corpus"):
        Vocabulary.build([[], []])
    with pytest.raises(ValueError, match="no tokens"):
        Vocabulary.build([])
    with pytest.raises(ValueError, match="min_count=5.*'a', occurs 2 times.*lower min_count"):
        Vocabulary.build([["a", "a", "b"]], min_count=5)
    with pytest.raises(ValueError, match="min_count must be >= 0"):
        Vocabulary.build([["a"]], min_count=-1)
    with pytest.raises(ValueError, match="max_vocab_size"):
        Vocabulary.build([["a"]], max_vocab_size=0)
    with pytest.raises(ValueError, match="one entry per word"):
        Vocabulary(["a", "b"], [1], n_raw_tokens=1, n_documents=1)


def test_keep_probs_formula():
    vocab = Vocabulary(["a", "b", "c"], [900, 90, 10], n_raw_tokens=1000, n_documents=1)
    t = 0.01 * 1000
    expected = np.minimum((np.sqrt(np.array([900, 90, 10]) / t) + 1) * t / [900, 90, 10], 1)
    np.testing.assert_allclose(vocab.keep_probs(0.01), expected, rtol=1e-12)
    assert vocab.keep_probs(0.01)[2] == 1.0  # rare words are always kept
    assert vocab.keep_probs(0).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="sample must be"):
        vocab.keep_probs(-1e-3)


def test_vocabulary_and_keep_probs_equal_gensim():
    gensim_word2vec = pytest.importorskip("gensim.models.word2vec")
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    zipf = 1.0 / np.arange(1, 301)
    corpus = [
        [words[i] for i in rng.choice(300, size=rng.integers(1, 60), p=zipf / zipf.sum())]
        for _ in range(200)
    ]
    for max_vocab_size in (None, 60):
        model = gensim_word2vec.Word2Vec(min_count=3, max_vocab_size=max_vocab_size)
        model.build_vocab(corpus)
        vocab = Vocabulary.build(corpus, min_count=3, max_vocab_size=max_vocab_size)
        assert vocab.words == model.wv.index_to_key
        np.testing.assert_array_equal(vocab.counts, model.wv.expandos["count"])
        assert vocab.n_raw_tokens == model.corpus_total_words
        assert vocab.n_documents == model.corpus_count
        for sample in (1e-3, 1e-2, 2.0):
            model = gensim_word2vec.Word2Vec(
                min_count=3, max_vocab_size=max_vocab_size, sample=sample
            )
            model.build_vocab(corpus)
            gensim_keep = model.wv.expandos["sample_int"] / (2**32 - 1)
            np.testing.assert_allclose(vocab.keep_probs(sample), gensim_keep, atol=1e-9)
            assert vocab.keep_probs(sample).min() < 1  # the formula was exercised


def _zipf_corpus(seed=0, n_docs=200, n_words=300):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n_words)]
    zipf = 1.0 / np.arange(1, n_words + 1)
    return [
        [words[i] for i in rng.choice(n_words, size=rng.integers(1, 60), p=zipf / zipf.sum())]
        for _ in range(n_docs)
    ]


def _trim(word, count, min_count):
    """Keep every w1x word, drop every w2x word, the count test for the others."""
    if word.startswith("w1") and len(word) == 3:
        return RULE_KEEP
    if word.startswith("w2") and len(word) == 3:
        return RULE_DISCARD
    return RULE_DEFAULT


@pytest.mark.parametrize(
    "options",
    [
        dict(max_final_vocab=40),
        dict(max_final_vocab=1000),
        dict(trim_rule=_trim),
        dict(trim_rule=_trim, max_vocab_size=60),
        dict(trim_rule=_trim, max_final_vocab=30),
    ],
    ids=["max_final_vocab", "max_final_vocab_above", "trim_rule", "trim_and_prune", "both"],
)
def test_max_final_vocab_and_trim_rule_equal_gensim(options):
    gensim_word2vec = pytest.importorskip("gensim.models.word2vec")
    corpus = _zipf_corpus()
    model = gensim_word2vec.Word2Vec(min_count=3, **{k: v for k, v in options.items()})
    model.build_vocab(corpus, trim_rule=options.get("trim_rule"))
    vocab = Vocabulary.build(corpus, min_count=3, **options)
    assert vocab.words == model.wv.index_to_key
    np.testing.assert_array_equal(vocab.counts, model.wv.expandos["count"])


def test_trim_rule_constants_are_gensims_and_bad_rules_are_named():
    gensim_utils = pytest.importorskip("gensim.utils")
    assert (RULE_DEFAULT, RULE_DISCARD, RULE_KEEP) == (
        gensim_utils.RULE_DEFAULT,
        gensim_utils.RULE_DISCARD,
        gensim_utils.RULE_KEEP,
    )
    with pytest.raises(ValueError, match="trim_rule returned 'yes'"):
        Vocabulary.build([["a", "b"]], min_count=1, trim_rule=lambda w, c, m: "yes")


def test_updated_vocabulary_equals_gensims_build_vocab_update():
    gensim_word2vec = pytest.importorskip("gensim.models.word2vec")
    first, second = _zipf_corpus(0, 100, 150), _zipf_corpus(1, 100, 300)
    model = gensim_word2vec.Word2Vec(min_count=3)
    model.build_vocab(first)
    model.build_vocab(second, update=True)
    vocab = Vocabulary.build(first, min_count=3).updated(second, min_count=3)
    assert vocab.words == model.wv.index_to_key
    np.testing.assert_array_equal(vocab.counts, model.wv.expandos["count"])
    assert vocab.n_documents == 100


def test_unhashable_token_deep_in_a_document_is_a_type_error_naming_it():
    corpus = [["a", "b", "c"]] * 5 + [["a", "b", ["nested"], "c"]]
    with pytest.raises(TypeError, match=r"document 5 of X has a list token at position 2"):
        Vocabulary.build(corpus, min_count=1)
    vocab = Vocabulary.build(corpus[:5], min_count=1)
    with pytest.raises(TypeError, match=r"document 5 of X has a list token"):
        list(pair_batches(corpus, None, vocab, window=2, sample=0, batch_size=4, rng=None))
    with pytest.raises(TypeError, match="contains a int token"):
        Vocabulary.build([["a", "b"], ["a", 3, "b"]], min_count=1)


# --- skip-gram pairs ------------------------------------------------------------------


def test_pairs_with_window_one_are_all_neighbours_in_order():
    corpus = [["a", "b", "c", "a"], ["b"], ["c", "zz", "b"]]
    vocab = Vocabulary.build(corpus, min_count=1)
    centres, contexts = _all_pairs(
        corpus, vocab, window=1, sample=0, batch_size=3, rng=np.random.default_rng(0)
    )
    encoded = [vocab.encode(d).tolist() for d in corpus]
    expected = [
        (doc[i], doc[j])
        for doc in encoded
        for i in range(len(doc))
        for j in (i - 1, i + 1)
        if 0 <= j < len(doc)
    ]
    assert list(zip(centres.tolist(), contexts.tolist())) == expected


def test_out_of_vocabulary_tokens_are_removed_before_windowing():
    corpus = [["a", "rare", "b"], ["a", "b"]]
    vocab = Vocabulary.build(corpus, min_count=2)
    centres, contexts = _all_pairs(
        corpus, vocab, window=1, sample=0, batch_size=10, rng=np.random.default_rng(0)
    )
    a, b = vocab.index["a"], vocab.index["b"]
    assert list(zip(centres.tolist(), contexts.tolist())) == [(a, b), (b, a)] * 2


def test_dynamic_window_is_symmetric_and_uniform():
    window, length = 4, 400
    corpus = [[f"t{i}" for i in range(length)]]  # unique tokens: ids give positions
    vocab = Vocabulary.build(corpus, min_count=1)
    position = np.array([int(w[1:]) for w in vocab.words])
    centres, contexts = _all_pairs(
        corpus * 20, vocab, window=window, sample=0, batch_size=1000, rng=np.random.default_rng(1)
    )
    pos_c, pos_x = position[centres], position[contexts]
    # Pairs come centre by centre: split them into one group per centre occurrence.
    starts = np.flatnonzero(np.r_[True, np.diff(pos_c) != 0])
    reaches = []
    for group_c, group_x in zip(np.split(pos_c, starts[1:]), np.split(pos_x, starts[1:])):
        c = group_c[0]
        offsets = group_x - c
        b = np.abs(offsets).max()
        # Exactly the tokens within b positions on both sides (cut at the document's ends).
        expected = [o for o in range(-b, b + 1) if o and 0 <= c + o < length]
        assert offsets.tolist() == expected
        if window <= c < length - window:
            reaches.append(b)
    assert len(starts) == 20 * length
    freq = np.bincount(reaches, minlength=window + 1)[1:] / len(reaches)
    # 20 * 392 interior centres: each frequency within ~5 standard errors of 1/window.
    assert np.all(np.abs(freq - 1 / window) < 5 * np.sqrt(0.25 * 0.75 / len(reaches)))


def test_subsampling_keeps_words_with_keep_probs_and_windows_after_dropping():
    n = 4000
    corpus = [[f"u{i}", "the", f"v{i}"] for i in range(n)]
    vocab = Vocabulary.build(corpus, min_count=1)
    sample = 0.02
    keep = vocab.keep_probs(sample)
    the = vocab.index["the"]
    assert 0.1 < keep[the] < 0.5 and np.all(np.delete(keep, the) == 1)
    centres, contexts = _all_pairs(
        corpus, vocab, window=1, sample=sample, batch_size=4096, rng=np.random.default_rng(2)
    )
    with_the = np.count_nonzero(centres == the)  # 2 pairs per document where "the" was kept
    kept_fraction = with_the / (2 * n)
    assert abs(kept_fraction - keep[the]) < 5 * np.sqrt(keep[the] * (1 - keep[the]) / n)
    # Where "the" was dropped, u_i and v_i became neighbours (windows after subsampling).
    direct = np.count_nonzero((centres != the) & (contexts != the))
    assert direct == 2 * (n - with_the // 2)


def test_batches_have_batch_size_and_do_not_change_the_pairs():
    corpus = LazyCorpus(30, 40)
    vocab = Vocabulary.build(corpus, min_count=1)
    reference = None
    for batch_size in (1, 7, 256, 10**4):
        batches = list(
            pair_batches(
                corpus,
                None,
                vocab,
                window=3,
                sample=1e-2,
                batch_size=batch_size,
                rng=np.random.default_rng(3),
            )
        )
        sizes = [len(c) for c, _ in batches]
        assert all(s == batch_size for s in sizes[:-1]) and 0 < sizes[-1] <= batch_size
        assert all(c.dtype == np.int64 and x.dtype == np.int64 for c, x in batches)
        pairs = np.concatenate([np.stack(b) for b in batches], axis=1)
        if reference is None:
            reference = pairs
        np.testing.assert_array_equal(pairs, reference)


def test_pair_batches_reproducible_and_seed_dependent():
    corpus = LazyCorpus(20, 30)
    vocab = Vocabulary.build(corpus, min_count=1)

    def run(seed):
        rng = np.random.default_rng(seed)
        batches = pair_batches(corpus, None, vocab, window=5, sample=1e-2, batch_size=64, rng=rng)
        return np.concatenate([np.stack(b) for b in batches], axis=1)

    first, again, other = run(0), run(0), run(1)
    np.testing.assert_array_equal(first, again)
    assert first.shape != other.shape or not np.array_equal(first, other)


def test_pair_batches_rejects_bad_arguments():
    vocab = Vocabulary.build([["a", "b"]], min_count=1)
    rng = np.random.default_rng(0)
    for kwargs, name in (({"window": 0}, "window"), ({"batch_size": 0}, "batch_size")):
        args = {"window": 2, "sample": 0, "batch_size": 4, "rng": rng, **kwargs}
        with pytest.raises(ValueError, match=name):
            next(pair_batches([["a", "b"]], None, vocab, **args))


def test_pair_batches_stream_in_bounded_memory(monkeypatch):
    """A corpus four times longer streams in the same peak memory, far below its pairs."""
    # Small chunks, so that both corpora span many of them and the test stays fast.
    monkeypatch.setattr(_corpus, "_CHUNK_TOKENS", 5000)
    vocab = Vocabulary.build(LazyCorpus(10, 100), min_count=1)

    def stream(n_documents):
        corpus = LazyCorpus(n_documents, 500)
        tracemalloc.start()
        n_pairs = 0
        for centres, _ in pair_batches(
            corpus, None, vocab, window=1, sample=0, batch_size=1000, rng=np.random.default_rng(0)
        ):
            n_pairs += len(centres)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert n_pairs == n_documents * 2 * 499  # window 1: both neighbours of every token
        return peak

    small, large = stream(100), stream(400)
    assert large < 1.1 * small
    # The 400 * 998 pairs would take 6.4 MB as int64 arrays if they were materialised.
    assert large < 1.5e6


def test_one_long_document_is_paired_block_by_block(monkeypatch):
    """Blocks of centres give the same pairs as one pass, in a fraction of the memory."""
    doc = next(iter(LazyCorpus(1, 100_000)))
    vocab = Vocabulary.build([doc], min_count=1)
    assert vocab.keep_probs(1e-3).max() < 1  # subsampling draws are part of the check

    def stream(block_tokens, keep=False):
        monkeypatch.setattr(_corpus, "_BLOCK_TOKENS", block_tokens)
        rng = np.random.default_rng(0)
        batches = pair_batches([doc], None, vocab, window=5, sample=1e-3, batch_size=999, rng=rng)
        if keep:
            return np.concatenate([np.stack(b) for b in batches], axis=1)
        tracemalloc.start()
        n_pairs = sum(len(c) for c, _ in batches)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return n_pairs, peak

    np.testing.assert_array_equal(stream(1000, keep=True), stream(1 << 20, keep=True))
    (n_blocked, blocked), (n_whole, whole) = stream(1000), stream(1 << 20)
    assert n_blocked == n_whole > 0
    # One pass over the ~27k kept tokens holds all their contexts at once (~27k x 6
    # int64 and their trimmed copy); in blocks, the encoding of the document dominates.
    assert blocked < whole * 0.7


def test_streaming_counts_with_an_iterable_class_restart_every_pass():
    corpus = LazyCorpus(5, 20)
    vocab = Vocabulary.build(corpus, min_count=1)
    counts = Counter(w for doc in corpus for w in doc)
    assert dict(zip(vocab.words, vocab.counts.tolist())) == dict(counts)
    kwargs = dict(window=2, sample=0, batch_size=8)
    first, second = (
        sum(len(c) for c, _ in pair_batches(corpus, None, vocab, **kwargs, rng=rng))
        for rng in (np.random.default_rng(0), np.random.default_rng(0))
    )
    assert first == second > 0


def test_without_shrink_windows_every_window_is_full():
    corpus = [[f"t{i}" for i in range(30)]]
    vocab = Vocabulary.build(corpus, min_count=1)
    position = np.array([int(w[1:]) for w in vocab.words])
    centres, contexts = _all_pairs(
        corpus,
        vocab,
        window=3,
        sample=0,
        batch_size=50,
        rng=np.random.default_rng(0),
        shrink_windows=False,
    )
    expected = [(c, x) for c in range(30) for x in range(c - 3, c + 4) if x != c and 0 <= x < 30]
    assert list(zip(position[centres].tolist(), position[contexts].tolist())) == expected


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
def test_cbow_examples_are_the_skip_gram_windows_grouped_by_centre(batch_size):
    corpus = LazyCorpus(20, 30, n_words=40)
    vocab = Vocabulary.build(corpus, min_count=1)
    options = dict(window=3, sample=0.01, rng=np.random.default_rng(4))
    centres, contexts = _all_pairs(corpus, vocab, batch_size=64, **options)
    options["rng"] = np.random.default_rng(4)  # the same windows and subsampling
    batches = list(cbow_batches(corpus, None, vocab, batch_size=batch_size, **options))
    assert all(len(c) == batch_size for _, _, c in batches[:-1])
    assert 0 < len(batches[-1][2]) <= batch_size
    pairs = [
        (centre, word)
        for ptr, words, batch_centres in batches
        for i, centre in enumerate(batch_centres)
        for word in words[ptr[i] : ptr[i + 1]]
    ]
    assert pairs == list(zip(centres.tolist(), contexts.tolist()))
    assert all(np.all(np.diff(ptr) > 0) for ptr, _, _ in batches)  # no empty bag


def test_skip_gram_examples_train_each_context_to_predict_its_centre_as_word2vec():
    """word2vec.c and gensim: a pair's input is the context word, its output the centre."""
    from sknce.noise import UnigramNoise
    from sknce.words._sampler import WordSampler

    corpus = [["a", "b", "c"]]
    vocab = Vocabulary.build(corpus, min_count=1)
    sampler = WordSampler(
        vocab,
        None,
        1,
        0.0,
        UnigramNoise(vocab.counts, 0.75),
        2,
        1.0,
        8,
        "cpu",
        shrink_windows=False,
    )
    (batch,) = sampler.batches(corpus, 10, np.random.default_rng(0))
    a, b, c = (vocab.index[w] for w in "abc")
    # centre by centre (a, b, c), each centre's contexts left to right
    assert batch[0]["words"].tolist() == [b, a, c, b]
    assert batch[0]["positives"].tolist() == [a, b, b, c]
