"""WordVectors: queries against brute force, gensim-equal evaluation, word2vec-format I/O."""

import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest

from sknce.words._vectors import WordVectors, resolve_init_vectors


@pytest.fixture
def wv():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)] + ["Tiger", "tiger", "cat", "love", "sex"]
    return WordVectors(words, rng.normal(size=(len(words), 8)))


def _cosines(vectors, query):
    return vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))


def _keyed_vectors(wv):
    keyedvectors = pytest.importorskip("gensim.models.keyedvectors")
    kv = keyedvectors.KeyedVectors(wv.vector_size)
    kv.add_vectors(wv.words, wv.vectors)
    return kv


# --- construction and lookup ----------------------------------------------------------


def test_lookup_and_unknown_words(wv):
    assert len(wv) == 45 and wv.vector_size == 8 and "cat" in wv and "dog" not in wv
    assert wv.vectors.dtype == np.float32 and wv.index["cat"] == 42
    np.testing.assert_array_equal(wv["cat"], wv.vectors[42])
    with pytest.raises(KeyError, match=r"word 'dog' is not in the vocabulary \(45 words\)"):
        wv["dog"]
    with pytest.raises(KeyError, match="'xyz' is not in the vocabulary"):
        wv.similarity("cat", "xyz")
    with pytest.raises(KeyError, match="'xyz' is not in the vocabulary"):
        wv.most_similar("xyz")


@pytest.mark.parametrize(
    ("words", "vectors", "error", "match"),
    [
        (["a", "b"], np.zeros((3, 2)), ValueError, "2 words for 3 vectors"),
        (["a", "a"], np.zeros((2, 2)), ValueError, "'a' occurs more than once"),
        (["a", "b"], [[0.0, np.nan], [1.0, 1.0]], ValueError, "vector of 'a'.*non-finite"),
        (["a"], np.zeros(2), ValueError, "2-d array"),
        ([1, 2], np.zeros((2, 2)), TypeError, "words must be str"),
        (["a"], np.array([["x"]]), TypeError, "must hold numbers"),
    ],
)
def test_constructor_rejects_bad_input(words, vectors, error, match):
    with pytest.raises(error, match=match):
        WordVectors(words, vectors)


def test_pickles(wv):
    again = pickle.loads(pickle.dumps(wv))
    assert again.words == wv.words and np.array_equal(again.vectors, wv.vectors)
    assert again.most_similar("cat", topn=3) == wv.most_similar("cat", topn=3)


# --- queries --------------------------------------------------------------------------


def test_most_similar_is_cosine_top_n_without_the_query_word(wv):
    cos = _cosines(wv.vectors.astype(np.float64), wv["cat"].astype(np.float64))
    cos[wv.index["cat"]] = -np.inf
    expected = np.argsort(-cos)[:5]
    result = wv.most_similar("cat", topn=5)
    assert [w for w, _ in result] == [wv.words[i] for i in expected]
    np.testing.assert_allclose([s for _, s in result], cos[expected], rtol=1e-5)
    # A vector query excludes nothing: the word itself comes first.
    assert wv.most_similar(wv["cat"], topn=1)[0][0] == "cat"
    assert wv.most_similar(list(map(float, wv["cat"])), topn=1)[0][0] == "cat"
    assert len(wv.most_similar("cat", topn=1000)) == len(wv) - 1


def test_numpy_string_words_are_stored_and_returned_as_str():
    wv = WordVectors(np.array(["ab", "cd", "ef"]), np.eye(3) + 0.1)
    assert all(type(word) is str for word in wv.words)
    assert all(type(word) is str for word, _ in wv.most_similar("ab", topn=2))


def test_most_similar_recovers_planted_neighbours():
    base = np.eye(4)
    words = ["king", "queen", "apple", "pear", "car", "bus", "red", "blue"]
    vectors = np.repeat(base, 2, axis=0) + 0.05 * np.random.default_rng(0).normal(size=(8, 4))
    wv = WordVectors(words, vectors)
    for a, b in zip(words[::2], words[1::2]):
        assert wv.most_similar(a, topn=1)[0][0] == b
        assert wv.similarity(a, b) > 0.9 > abs(wv.similarity(a, "red" if a != "red" else "car"))


def test_most_similar_with_several_words_equals_gensim(wv):
    kv = _keyed_vectors(wv)
    for positive, negative in [(["cat", "love"], None), (["cat", "tiger"], ["sex"])]:
        ours = wv.most_similar(positive, topn=5, negative=negative)
        theirs = kv.most_similar(positive=positive, negative=negative, topn=5)
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-6)
    with pytest.raises(ValueError, match="topn"):
        wv.most_similar("cat", topn=0)
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        wv.most_similar(np.ones(3))


def test_similarity_is_cosine(wv):
    expected = _cosines(wv["cat"][None].astype(np.float64), wv["love"].astype(np.float64))[0]
    assert wv.similarity("cat", "love") == pytest.approx(expected, abs=1e-6)
    assert wv.similarity("love", "cat") == pytest.approx(wv.similarity("cat", "love"))
    assert wv.similarity("cat", "cat") == pytest.approx(1.0, abs=1e-6)


# --- evaluate_word_pairs --------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"dummy4unknown": True},
        {"case_insensitive": False},
        {"restrict_vocab": 200},
    ],
)
def test_evaluate_word_pairs_equals_gensim(options):
    utils = pytest.importorskip("gensim.test.utils")
    path = utils.datapath("wordsim353.tsv")
    words = []
    for line in Path(path).read_text(encoding="utf8").splitlines():
        if not line.startswith("#"):
            words += line.split("\t")[:2]
    # Most of the WordSim353 words (some OOV), and a case variant to exercise the mapping.
    words = list(dict.fromkeys(words))[:300] + ["Tiger", "LOVE"]
    rng = np.random.default_rng(1)
    wv = WordVectors(words, rng.normal(size=(len(words), 16)))
    kv = _keyed_vectors(wv)
    pearson, spearman, oov = wv.evaluate_word_pairs(path, **options)
    g_pearson, g_spearman, g_oov = kv.evaluate_word_pairs(path, **options)
    assert pearson[0] == pytest.approx(g_pearson[0], abs=1e-6)
    assert pearson[1] == pytest.approx(g_pearson[1], rel=1e-4)
    assert spearman[0] == pytest.approx(g_spearman[0], abs=1e-9)
    assert oov == pytest.approx(g_oov) and oov > 0


def test_evaluate_word_pairs_from_triples_on_planted_similarity():
    rng = np.random.default_rng(2)
    words = [f"w{i}" for i in range(30)]
    vectors = rng.normal(size=(30, 5))
    wv = WordVectors(words, vectors)
    pairs = [(words[i], words[j], wv.similarity(words[i], words[j])) for i, j in [(0, 1), (2, 3)]]
    pairs += [(words[i], words[i + 10], wv.similarity(words[i], words[i + 10])) for i in range(10)]
    pearson, spearman, oov = wv.evaluate_word_pairs(pairs + [("W0", "nope", 1.0)])
    assert pearson[0] == pytest.approx(1.0) and spearman[0] == pytest.approx(1.0)
    assert oov == pytest.approx(100 / 13)
    with pytest.raises(ValueError, match="no valid similarity judgements"):
        wv.evaluate_word_pairs([("nope", "none", 1.0)])
    with pytest.raises(ValueError, match=r"pair 0 is \('w0', 'w1'\).*triple"):
        wv.evaluate_word_pairs([("w0", "w1")])


# --- word2vec-format I/O --------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", [".txt", ".gz"])
def test_our_files_load_in_gensim_and_back(wv, tmp_path, binary, suffix):
    keyedvectors = pytest.importorskip("gensim.models.keyedvectors")
    path = tmp_path / f"vectors{suffix}"
    wv.save_word2vec_format(path, binary=binary)
    kv = keyedvectors.KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert kv.index_to_key == wv.words
    np.testing.assert_array_equal(kv.vectors, wv.vectors)
    for detect in (binary, None):
        again = WordVectors.load_word2vec_format(path, binary=detect)
        assert again.words == wv.words and np.array_equal(again.vectors, wv.vectors)


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_files_load_here_and_bytes_match(wv, tmp_path, binary):
    kv = _keyed_vectors(wv)
    theirs, ours = tmp_path / "gensim.w2v", tmp_path / "ours.w2v"
    kv.save_word2vec_format(str(theirs), binary=binary)
    wv.save_word2vec_format(ours, binary=binary)
    assert ours.read_bytes() == theirs.read_bytes()
    loaded = resolve_init_vectors(str(theirs))  # format detected
    assert loaded.words == kv.index_to_key
    np.testing.assert_array_equal(loaded.vectors, kv.vectors)


def test_c_tool_binary_records_and_glove_text(tmp_path):
    vectors = np.array([[0.5, -1.0], [2.0, 0.25]], dtype=np.float32)
    c_tool = tmp_path / "c.bin"
    # The original word2vec.c ends each binary record with a newline.
    c_tool.write_bytes(
        b"2 2\n" + b"".join(w + b" " + v.tobytes() + b"\n" for w, v in zip([b"a", b"b"], vectors))
    )
    loaded = resolve_init_vectors(c_tool)
    assert loaded.words == ["a", "b"] and np.array_equal(loaded.vectors, vectors)
    glove = tmp_path / "glove.txt"
    glove.write_text("the 0.5 -1.0\nof 2.0 0.25\n", encoding="utf8")
    loaded = resolve_init_vectors(glove)
    assert loaded.words == ["the", "of"] and np.array_equal(loaded.vectors, vectors)
    with gzip.open(tmp_path / "glove.txt.gz", "wt") as f:
        f.write("the 0.5 -1.0\nof 2.0 0.25\n")
    assert resolve_init_vectors(tmp_path / "glove.txt.gz").words == ["the", "of"]


@pytest.mark.parametrize(
    ("content", "binary", "match"),
    [
        (b"2 3\na 1 2 3\nb 1 2\n", False, "line 3.*2 values for 'b', expected 3"),
        (b"3 2\na 1 2\nb 1 2\n", False, "announces 3 words.*holds 2"),
        (b"1 2\na 1 x\n", False, "not a number"),
        (b"\xff\xfe\x00\x01 binary junk\n", False, "not UTF-8"),
        (
            b"2 2\na " + np.ones(2, np.float32).tobytes(),
            True,
            "announces 2 words but ends after 1",
        ),
        (b"a 1 2\n", True, "header line"),
        (b"", False, "no word vectors"),
    ],
)
def test_damaged_files_raise_clear_errors(tmp_path, content, binary, match):
    path = tmp_path / "bad.w2v"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        WordVectors.load_word2vec_format(path, binary=binary)


def test_duplicate_words_in_a_file_keep_the_first(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("3 1\na 1\nb 2\na 3\n", encoding="utf8")
    with pytest.warns(UserWarning, match="1 words more than once"):
        loaded = WordVectors.load_word2vec_format(path)
    assert loaded.words == ["a", "b"] and loaded.vectors[:, 0].tolist() == [1.0, 2.0]


def test_words_with_whitespace_cannot_be_saved(tmp_path):
    with pytest.raises(ValueError, match="'new york'.*whitespace"):
        WordVectors(["new york"], np.ones((1, 2))).save_word2vec_format(tmp_path / "x.txt")


# --- init_vectors ---------------------------------------------------------------------


def test_resolve_init_vectors_accepts_every_form(wv, tmp_path):
    assert resolve_init_vectors(wv) is wv
    as_dict = resolve_init_vectors({"a": [1.0, 2.0], "b": np.array([3.0, 4.0])})
    assert as_dict.words == ["a", "b"] and as_dict.vectors.tolist() == [[1, 2], [3, 4]]
    as_pair = resolve_init_vectors((["a", "b"], [[1.0, 2.0], [3.0, 4.0]]))
    assert as_pair.words == ["a", "b"] and np.array_equal(as_pair.vectors, as_dict.vectors)
    for binary in (False, True):
        path = tmp_path / f"v{binary}.w2v"
        wv.save_word2vec_format(path, binary=binary)
        for form in (path, str(path)):
            loaded = resolve_init_vectors(form)
            assert loaded.words == wv.words and np.array_equal(loaded.vectors, wv.vectors)


def test_resolve_init_vectors_accepts_gensim_keyedvectors(wv):
    kv = _keyed_vectors(wv)
    loaded = resolve_init_vectors(kv)
    assert loaded.words == wv.words and np.array_equal(loaded.vectors, wv.vectors)


@pytest.mark.parametrize(
    ("init_vectors", "error", "match"),
    [
        ({"a": [1.0, 2.0], "b": [1.0]}, ValueError, "ragged.*'b' has shape"),
        ({"a": [1.0, np.inf]}, ValueError, "'a'.*non-finite"),
        ({}, ValueError, "empty dict"),
        ((["a", "b"], [[1.0, 2.0], [1.0]]), ValueError, "ragged"),
        ((["a", "b"], [[1.0, 2.0]]), ValueError, "2 words for 1 vectors"),
        (("ab", [[1.0]]), TypeError, "list of words first"),
        ("/no/such/file.w2v", ValueError, "does not exist"),
        (42, TypeError, "dict word -> vector.*got int"),
    ],
)
def test_resolve_init_vectors_rejects_bad_input(init_vectors, error, match):
    with pytest.raises(error, match=match):
        resolve_init_vectors(init_vectors)
