"""WordVectors queries and evaluation: against brute force and against gensim's KeyedVectors.

File formats are tested in ``test_words_io.py``.
"""

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sknce.words._vectors import WordVectors, resolve_init_vectors


@pytest.fixture
def wv():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)] + ["Tiger", "tiger", "cat", "love", "sex"]
    return WordVectors(words, rng.normal(size=(len(words), 8)))


@pytest.fixture
def kv(wv):
    return _keyed_vectors(wv)


def _keyed_vectors(wv):
    keyedvectors = pytest.importorskip("gensim.models.keyedvectors")
    kv = keyedvectors.KeyedVectors(wv.vector_size)
    kv.add_vectors(list(wv.index_to_key), wv.vectors.copy())
    return kv


def _cosines(vectors, query):
    vectors, query = np.asarray(vectors, np.float64), np.asarray(query, np.float64)
    return vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))


def _assert_same_neighbours(ours, theirs, atol=1e-6):
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=atol)


# --- construction and lookup ----------------------------------------------------------


def test_lookup_names_and_aliases(wv):
    assert len(wv) == 45 and wv.vector_size == 8 and "cat" in wv and "dog" not in wv
    assert wv.vectors.dtype == np.float32
    assert wv.index is wv.key_to_index and wv.words is wv.index_to_key
    assert wv.key_to_index["cat"] == 42 and wv.index_to_key[42] == "cat"
    np.testing.assert_array_equal(wv["cat"], wv.vectors[42])
    # As gensim, an int is a row position when it is not a key.
    np.testing.assert_array_equal(wv[3], wv.vectors[3])
    assert 44 in wv and 45 not in wv and [1] not in wv and wv.get_index("dog", -1) == -1
    with pytest.raises(KeyError, match=r"word 'dog' is not in the vocabulary \(45 words\)"):
        wv["dog"]
    with pytest.raises(KeyError, match="'xyz' is not in the vocabulary"):
        wv.similarity("cat", "xyz")
    with pytest.raises(KeyError, match="'xyz' is not in the vocabulary"):
        wv.most_similar("xyz")


def test_getitem_on_a_list_gives_the_rows(wv):
    rows = wv[["cat", "love", "cat"]]
    assert rows.shape == (3, 8)
    np.testing.assert_array_equal(rows, wv.vectors[[42, 43, 42]])
    np.testing.assert_array_equal(wv[np.array(["cat", "sex"])], wv.vectors[[42, 44]])
    assert wv[[]].shape == (0, 8)
    with pytest.raises(KeyError, match="'dog' is not in the vocabulary"):
        wv[["cat", "dog"]]


def test_getitem_on_a_list_gives_rows_like_gensim(wv, kv):
    np.testing.assert_array_equal(wv[["cat", "love", "cat"]], kv[["cat", "love", "cat"]])
    np.testing.assert_array_equal(wv[np.array(["cat", "sex"])], kv[["cat", "sex"]])


def test_get_vector_is_read_only_and_normalises(wv):
    with pytest.raises(ValueError, match="read-only"):
        wv.get_vector("cat")[0] = 1.0
    norms = np.linalg.norm(wv.vectors, axis=1)
    np.testing.assert_allclose(wv.norms, norms, rtol=1e-6)
    np.testing.assert_allclose(wv.get_vector("cat", norm=True), wv["cat"] / norms[42], rtol=1e-6)
    np.testing.assert_allclose(wv.get_normed_vectors(), wv.vectors / norms[:, None], atol=1e-7)


def test_get_vector_normalises_like_gensim(wv, kv):
    np.testing.assert_allclose(wv.get_vector("cat", norm=True), kv.get_vector("cat", norm=True))
    np.testing.assert_allclose(wv.get_normed_vectors(), kv.get_normed_vectors(), atol=1e-7)


@pytest.mark.parametrize(
    ("words", "vectors", "kwargs", "error", "match"),
    [
        (["a", "b"], np.zeros((3, 2)), {}, ValueError, "2 words for 3 vectors"),
        (["a", "a"], np.zeros((2, 2)), {}, ValueError, "'a' occurs more than once"),
        (["a", "b"], [[0.0, np.nan], [1.0, 1.0]], {}, ValueError, "vector of 'a'.*non-finite"),
        (["a"], np.zeros(2), {}, ValueError, "2-d array"),
        ([1, 2], np.zeros((2, 2)), {}, TypeError, "words must be str"),
        (["a"], np.array([["x"]]), {}, TypeError, "must hold numbers"),
        (["a", "b"], np.zeros((2, 2)), {"counts": [1]}, ValueError, "one count per word"),
        (["a", "b"], np.zeros((2, 2)), {"counts": [1, -2]}, ValueError, "count of 'b' is -2"),
        (["a", "b"], np.zeros((2, 2)), {"counts": [1, 0.5]}, ValueError, "whole numbers"),
        (["a"], [[1e39]], {}, ValueError, "beyond float32's range"),
    ],
)
def test_constructor_rejects_bad_input(words, vectors, kwargs, error, match):
    with pytest.raises(error, match=match):
        WordVectors(words, vectors, **kwargs)


def test_constructor_keeps_float32_arrays_without_copy_and_honours_dtype():
    matrix = np.ones((2, 3), dtype=np.float32)
    assert WordVectors(["a", "b"], matrix).vectors is matrix  # ACEWord2Vec shares its weights
    assert WordVectors(["a", "b"], matrix, dtype=np.float64).vectors.dtype == np.float64


def test_numpy_string_words_are_stored_and_returned_as_str():
    wv = WordVectors(np.array(["ab", "cd", "ef"]), np.eye(3) + 0.1)
    assert all(type(word) is str for word in wv.words)
    assert all(type(word) is str for word, _ in wv.most_similar("ab", topn=2))


def test_pickles(wv):
    wv.most_similar("cat")  # fills the norm cache, which is not pickled
    again = pickle.loads(pickle.dumps(wv))
    assert again.words == wv.words and np.array_equal(again.vectors, wv.vectors)
    assert again._norms is None
    assert again.most_similar("cat", topn=3) == wv.most_similar("cat", topn=3)


# --- counts and other per-word attributes ---------------------------------------------


def test_counts_and_vecattrs(wv):
    counted = WordVectors(["a", "b", "c"], np.eye(3), counts=np.array([7, 3, 1]))
    assert counted.get_vecattr("b", "count") == 3
    assert counted.expandos["count"].dtype == np.int64
    counted.set_vecattr("c", "count", 2)
    assert counted.get_vecattr("c", "count") == 2
    counted.set_vecattr("a", "tag", "noun")
    assert counted.get_vecattr("a", "tag") == "noun" and counted.get_vecattr("b", "tag") == 0
    with pytest.raises(TypeError, match="can't store a float64 value in the attribute 'count'"):
        counted.set_vecattr("a", "count", 0.5)
    with pytest.raises(KeyError, match="no attribute 'count' is stored"):
        wv.get_vecattr("cat", "count")
    with pytest.raises(KeyError, match="'zzz' is not in the vocabulary"):
        counted.get_vecattr("zzz", "count")


def test_a_set_vecattr_gives_other_words_a_zero(wv):
    wv.set_vecattr("cat", "count", 10)
    wv.set_vecattr("love", "count", 4)
    assert wv.get_vecattr("cat", "count") == 10 and wv.get_vecattr("love", "count") == 4
    assert wv.get_vecattr("sex", "count") == 0


def test_vecattrs_behave_as_gensims(kv):
    wv = WordVectors(list(kv.index_to_key), kv.vectors)
    for model in (wv, kv):
        model.set_vecattr("cat", "count", 10)
        model.set_vecattr("love", "count", 4)
    assert wv.get_vecattr("cat", "count") == kv.get_vecattr("cat", "count") == 10
    assert wv.get_vecattr("sex", "count") == kv.get_vecattr("sex", "count") == 0


# --- the norm cache -------------------------------------------------------------------


def test_norms_are_computed_once_and_renewed_when_the_vectors_change(wv):
    wv.most_similar("cat")
    cached = wv._norms
    wv.most_similar("love", negative=["sex"])
    wv.similar_by_vector(wv["tiger"])
    assert wv._norms is cached  # no recomputation between queries

    # Assigning new vectors renews the cache: answers follow the new vectors.
    rng = np.random.default_rng(5)
    wv.vectors = rng.normal(size=wv.vectors.shape) * rng.uniform(0.1, 10, size=(45, 1))
    assert wv._norms is None
    cos = _cosines(wv.vectors, wv["cat"])
    cos[wv.index["cat"]] = -np.inf
    assert [w for w, _ in wv.most_similar("cat", topn=3)] == [
        wv.words[i] for i in np.argsort(-cos)[:3]
    ]

    # In-place edits need fill_norms(force=True), as in gensim.
    wv.vectors[wv.index["w0"]] *= 1000.0
    stale = wv.most_similar("cat", topn=45)
    wv.fill_norms(force=True)
    fresh = dict(wv.most_similar("cat", topn=45))
    assert dict(stale)["w0"] != pytest.approx(fresh["w0"])
    assert fresh["w0"] == pytest.approx(_cosines(wv.vectors, wv["cat"])[wv.index["w0"]], abs=1e-6)


def test_add_vectors_renews_the_cache_and_keeps_or_replaces(wv):
    wv.most_similar("cat")
    cat = wv["cat"].copy()
    wv.add_vectors(["kitten", "cat"], np.vstack([cat * 3.0, -cat]))  # "cat" is kept
    assert len(wv) == 46 and wv.index["kitten"] == 45
    np.testing.assert_array_equal(wv["cat"], cat)
    cos = _cosines(wv.vectors, wv["kitten"])
    cos[45] = -np.inf
    assert [w for w, _ in wv.most_similar("kitten", topn=5)] == [
        wv.words[i] for i in np.argsort(-cos)[:5]
    ]
    assert wv.most_similar("cat", topn=1) == [("kitten", pytest.approx(1.0, abs=1e-6))]
    wv.add_vectors(["cat"], [-cat], replace=True)
    np.testing.assert_array_equal(wv["cat"], -cat)
    assert wv.similarity("cat", "kitten") == pytest.approx(-1.0, abs=1e-6)
    wv["puppy"] = cat
    assert wv.add_vector("pup", cat) == 47 and wv.similarity("pup", "puppy") == pytest.approx(1)


def test_add_vectors_equals_gensim(wv, kv):
    wv.most_similar("cat")
    cat = wv["cat"].copy()
    for model in (wv, kv):
        model.add_vectors(["kitten", "cat"], np.vstack([cat * 3.0, -cat]))
    _assert_same_neighbours(wv.most_similar("kitten", topn=5), kv.most_similar("kitten", topn=5))


def test_add_vectors_extends_attributes_and_rejects_bad_input():
    wv = WordVectors(["a", "b"], np.eye(2), counts=[5, 3])
    wv.add_vectors(["c", "a"], np.ones((2, 2)), extras={"count": np.array([2, 9])})
    assert wv.expandos["count"].tolist() == [5, 3, 2]
    wv.add_vectors(["a"], [[1.0, 1.0]], extras={"count": np.array([9])}, replace=True)
    assert wv.expandos["count"].tolist() == [9, 3, 2]
    wv.add_vectors(["d"], [[0.0, 1.0]])
    assert wv.get_vecattr("d", "count") == 0
    with pytest.raises(ValueError, match="distinct"):
        wv.add_vectors(["x", "x"], np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"2 vectors of 2 numbers, got shape \(2, 3\)"):
        wv.add_vectors(["x", "y"], np.ones((2, 3)))
    with pytest.raises(ValueError, match="'y'.*non-finite"):
        wv.add_vectors(["x", "y"], [[1.0, 1.0], [np.inf, 0.0]])
    with pytest.raises(TypeError, match="str words"):
        wv.add_vectors([7], [[1.0, 1.0]])


def test_unit_normalize_all(wv):
    wv.most_similar("cat")
    before = wv.most_similar("cat", topn=5)
    wv.unit_normalize_all()
    np.testing.assert_allclose(np.linalg.norm(wv.vectors, axis=1), 1.0, rtol=1e-6)
    _assert_same_neighbours(wv.most_similar("cat", topn=5), before)


# --- most_similar ---------------------------------------------------------------------


def test_most_similar_is_cosine_top_n_without_the_query_word(wv):
    cos = _cosines(wv.vectors, wv["cat"])
    cos[wv.index["cat"]] = -np.inf
    expected = np.argsort(-cos)[:5]
    result = wv.most_similar("cat", topn=5)
    assert [w for w, _ in result] == [wv.words[i] for i in expected]
    np.testing.assert_allclose([s for _, s in result], cos[expected], rtol=1e-5)
    # A vector query excludes nothing: the word itself comes first.
    assert wv.most_similar(wv["cat"], topn=1)[0][0] == "cat"
    assert wv.most_similar(list(map(float, wv["cat"])), topn=1)[0][0] == "cat"
    assert len(wv.most_similar("cat", topn=1000)) == len(wv) - 1


def test_most_similar_recovers_planted_neighbours():
    base = np.eye(4)
    words = ["king", "queen", "apple", "pear", "car", "bus", "red", "blue"]
    vectors = np.repeat(base, 2, axis=0) + 0.05 * np.random.default_rng(0).normal(size=(8, 4))
    wv = WordVectors(words, vectors)
    for a, b in zip(words[::2], words[1::2]):
        assert wv.most_similar(a, topn=1)[0][0] == b
        assert wv.similarity(a, b) > 0.9 > abs(wv.similarity(a, "red" if a != "red" else "car"))


def _query_forms(wv):
    v = wv["w3"].astype(np.float64) * 2.0
    return [
        ({"positive": "cat"}, {}),
        ({"positive": ["cat", "love"]}, {}),
        ({"positive": ["cat", "tiger"], "negative": ["sex"]}, {}),
        ({"positive": ["cat", "tiger"], "negative": "sex", "topn": 3}, {}),
        ({"positive": [("cat", 2.0), "love"], "negative": [("sex", -0.5)]}, {}),
        ({"positive": [v]}, {}),
        ({"positive": v}, {}),
        ({"positive": np.vstack([v, wv["cat"]])}, {}),
        ({"positive": [v, "cat"], "negative": [(wv["love"], -1.0)]}, {}),
        ({"negative": ["sex"]}, {}),
        ({"positive": ["cat"], "restrict_vocab": 20}, {}),
        ({"positive": [3, "love"]}, {}),  # a row position, as gensim reads an int
        ({"positive": ["w1"], "topn": 100}, {}),
    ]


def test_most_similar_equals_gensim_for_every_query_form(wv, kv):
    for query, _ in _query_forms(wv):
        ours = wv.most_similar(**query)
        theirs = kv.most_similar(**query)
        _assert_same_neighbours(ours, theirs)
    ours = wv.most_similar("cat", topn=None)
    np.testing.assert_allclose(ours, kv.most_similar("cat", topn=None), atol=1e-6)
    assert ours.shape == (45,)
    assert wv.most_similar("cat", topn=None, restrict_vocab=10).shape == (10,)
    assert wv.most_similar("cat", topn=0) == kv.most_similar("cat", topn=0) == []
    assert wv.most_similar("nothing", topn=0) == []  # gensim answers before the lookup
    _assert_same_neighbours(wv.similar_by_word("love"), kv.similar_by_word("love"))
    _assert_same_neighbours(wv.similar_by_key("love", 4), kv.similar_by_key("love", 4))
    _assert_same_neighbours(
        wv.similar_by_vector(wv["love"], topn=3, restrict_vocab=30),
        kv.similar_by_vector(wv["love"], topn=3, restrict_vocab=30),
    )


@settings(max_examples=40, deadline=None)
@given(
    vectors=arrays(
        np.float32,
        st.tuples(st.integers(3, 30), st.integers(1, 6)),
        elements=st.floats(-10, 10, width=32),
    ),
    data=st.data(),
)
def test_most_similar_matches_brute_force(vectors, data):
    n = len(vectors)
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    # Keep clear of zero vectors, whose cosines are 0 by convention.
    vectors[norms < 1e-3] = 1.0
    wv = WordVectors([f"x{i}" for i in range(n)], vectors)
    pos = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True))
    neg = data.draw(st.lists(st.integers(0, n - 1).filter(lambda i: i not in pos), max_size=2))
    topn = data.draw(st.integers(1, n))
    unit = vectors.astype(np.float64) / np.linalg.norm(vectors.astype(np.float64), axis=1)[:, None]
    query = unit[pos].sum(axis=0) - unit[neg].sum(axis=0)
    assume(np.linalg.norm(query) > 1e-3)  # exact zeros: test_most_similar_rejects_bad_queries
    result = wv.most_similar([f"x{i}" for i in pos], negative=[f"x{i}" for i in neg], topn=topn)
    cos = unit @ (query / np.linalg.norm(query))
    excluded = set(pos) | set(neg)
    rest = [i for i in range(n) if i not in excluded]
    assert len(result) == min(topn, len(rest))
    sims = [s for _, s in result]
    assert sims == sorted(sims, reverse=True)
    for word, sim in result:
        assert sim == pytest.approx(cos[int(word[1:])], abs=1e-5)
    if result:  # every word left out is no more similar than the last one returned
        returned = {int(w[1:]) for w, _ in result}
        assert all(cos[i] <= sims[-1] + 1e-5 for i in rest if i not in returned)


@pytest.mark.parametrize(
    ("query", "error", "match"),
    [
        ({"positive": np.full(8, np.nan)}, ValueError, "non-finite"),
        ({"positive": [np.zeros(8)]}, ValueError, "query vector is zero"),
        ({"positive": ["cat"], "negative": ["cat"]}, ValueError, "query vector is zero"),
        ({"positive": np.ones(3)}, ValueError, r"vector of 8 numbers, got shape \(3,\)"),
        ({}, ValueError, "at least one positive or negative"),
        ({"positive": "cat", "negative": 5}, TypeError, "pass topn by name"),
        ({"positive": [("cat", "heavy")]}, TypeError, "weight.*must be a number"),
        ({"positive": [{"cat"}]}, TypeError, "a query item must be"),
        ({"positive": "cat", "topn": 2.5}, TypeError, "topn must be an int"),
        ({"positive": "cat", "restrict_vocab": -1}, ValueError, "restrict_vocab must be >= 0"),
    ],
)
def test_most_similar_rejects_bad_queries(wv, query, error, match):
    with pytest.raises(error, match=match):
        wv.most_similar(**query)


def test_a_zero_word_vector_is_never_a_nan_answer():
    wv = WordVectors(["a", "b", "zero"], [[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]])
    assert wv.most_similar("a", topn=2) == [("b", pytest.approx(0.7071, abs=1e-4)), ("zero", 0)]
    assert wv.similarity("a", "zero") == 0.0
    with pytest.raises(ValueError, match="query vector is zero"):
        wv.most_similar("zero")
    with pytest.raises(ValueError, match="vector of 'zero' is zero"):
        wv.distances("zero")


# --- most_similar_cosmul --------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")
def test_most_similar_cosmul_equals_gensim(wv, kv):
    v = wv["w5"].astype(np.float32) * 3
    for query in (
        {"positive": "cat"},
        {"positive": ["cat", "tiger"], "negative": ["sex"]},
        {"positive": ["love", v], "negative": "w2", "topn": 4},
        {"positive": [v]},
    ):
        _assert_same_neighbours(wv.most_similar_cosmul(**query), kv.most_similar_cosmul(**query))
    np.testing.assert_allclose(
        wv.most_similar_cosmul(["cat"], ["sex"], topn=None),
        kv.most_similar_cosmul(["cat"], ["sex"], topn=None),
        rtol=1e-6,
    )


def test_most_similar_cosmul_is_3cosmul(wv):
    # Levy & Goldberg's 3CosMul by hand, within the first 30 words.
    unit = wv.vectors.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    score = (
        (1 + unit @ unit[42]) / 2 * (1 + unit @ unit[41]) / 2 / ((1 + unit @ unit[44]) / 2 + 1e-6)
    )
    score = score[:30]
    result = wv.most_similar_cosmul(["cat", "tiger"], ["sex"], topn=5, restrict_vocab=30)
    assert [w for w, _ in result] == [wv.words[i] for i in np.argsort(-score)[:5]]
    np.testing.assert_allclose([s for _, s in result], np.sort(score)[::-1][:5], rtol=1e-5)
    assert wv.most_similar_cosmul("cat", topn=0) == []
    with pytest.raises(ValueError, match="at least one positive"):
        wv.most_similar_cosmul(negative=["cat"])
    with pytest.raises(ValueError, match="is zero"):
        wv.most_similar_cosmul([np.zeros(8)])
    with pytest.raises(ValueError, match="non-finite"):
        wv.most_similar_cosmul([np.full(8, np.nan)])


# --- similarities and distances -------------------------------------------------------


def test_similarity_and_distance_are_cosines(wv):
    expected = _cosines(wv["cat"][None], wv["love"])[0]
    assert wv.similarity("cat", "love") == pytest.approx(expected, abs=1e-6)
    assert wv.similarity("love", "cat") == pytest.approx(wv.similarity("cat", "love"))
    assert wv.similarity("cat", "cat") == pytest.approx(1.0, abs=1e-6)
    assert wv.distance("cat", "sex") == pytest.approx(1 - wv.similarity("cat", "sex"), abs=1e-6)


def test_similarity_and_distance_equal_gensim(wv, kv):
    assert wv.similarity("cat", "love") == pytest.approx(kv.similarity("cat", "love"), abs=1e-7)
    assert wv.distance("cat", "sex") == pytest.approx(kv.distance("cat", "sex"), abs=1e-6)


def test_distances_closer_than_and_rank_by_brute_force(wv):
    np.testing.assert_allclose(
        wv.distances("tiger"), 1 - _cosines(wv.vectors, wv["tiger"]), atol=1e-6
    )
    others = ["love", "sex", "w7"]
    expected = 1 - _cosines(wv[others], wv["cat"])
    np.testing.assert_allclose(wv.distances("cat", others), expected, atol=1e-6)
    vector = wv["w9"] + 1.0
    np.testing.assert_allclose(wv.distances(vector), 1 - _cosines(wv.vectors, vector), atol=1e-6)
    for a, b in [("cat", "love"), ("w3", "sex"), ("tiger", "Tiger")]:
        dists = 1 - _cosines(wv.vectors, wv[a])
        closer = [w for i, w in enumerate(wv.words) if dists[i] < dists[wv.index[b]] and w != a]
        assert sorted(wv.closer_than(a, b)) == sorted(closer)
        assert wv.rank(a, b) == len(closer) + 1
    best = wv.most_similar("cat", topn=1)[0][0]
    assert wv.rank("cat", best) == 1 and wv.closer_than("cat", best) == []
    given = others[int(np.argmax(_cosines(wv[others], wv["cat"])))]
    assert wv.most_similar_to_given("cat", others) == given
    with pytest.raises(ValueError, match="non-finite"):
        wv.distances(np.full(8, np.inf))


def test_distances_closer_than_and_rank_equal_gensim(wv, kv):
    np.testing.assert_allclose(wv.distances("cat"), kv.distances("cat"), atol=1e-6)
    others = ["love", "sex", "w7"]
    np.testing.assert_allclose(wv.distances("cat", others), kv.distances("cat", others), atol=1e-6)
    vector = wv["w9"] + 1.0
    np.testing.assert_allclose(wv.distances(vector), kv.distances(vector), atol=1e-6)
    for a, b in [("cat", "love"), ("w3", "sex"), ("tiger", "Tiger")]:
        assert wv.closer_than(a, b) == kv.closer_than(a, b)
        assert wv.rank(a, b) == kv.rank(a, b)
    assert wv.most_similar_to_given("cat", others) == kv.most_similar_to_given("cat", others)


def test_n_similarity_and_mean_vectors_by_brute_force(wv):
    unit = wv.vectors / np.linalg.norm(wv.vectors, axis=1)[:, None]
    a, b = wv[["cat", "tiger"]].mean(axis=0), wv[["sex", "w1", "w2"]].mean(axis=0)
    expected = _cosines(a[None], b)[0]
    assert wv.n_similarity(["cat", "tiger"], ["sex", "w1", "w2"]) == pytest.approx(
        expected, abs=1e-6
    )
    # unknown words are skipped, as gensim does
    assert wv.n_similarity(["cat", "dog"], ["love"]) == pytest.approx(
        wv.similarity("cat", "love"), abs=1e-6
    )
    mean = (2.0 * unit[42] - 1.0 * unit[43]) / 3.0
    np.testing.assert_allclose(
        wv.get_mean_vector(["cat", "love", "dog"], weights=[2.0, -1.0, 5.0]), mean, atol=1e-6
    )
    v = np.linspace(-1, 1, 8).astype(np.float32)
    raw = (wv["cat"] + v) / 2
    np.testing.assert_allclose(
        wv.get_mean_vector(["cat", v], pre_normalize=False, post_normalize=True),
        raw / np.linalg.norm(raw),
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="non-empty"):
        wv.n_similarity([], ["cat"])
    with pytest.raises(KeyError, match="none of the words"):
        wv.n_similarity(["dog"], ["cat"])
    with pytest.raises(KeyError, match="'dog'"):
        wv.get_mean_vector(["cat", "dog"], ignore_missing=False)
    with pytest.raises(ValueError, match="same length"):
        wv.get_mean_vector(["cat", "love"], weights=[1.0])
    with pytest.raises(ValueError, match="no keys"):
        wv.get_mean_vector([])


def test_n_similarity_and_mean_vectors_equal_gensim(wv, kv):
    for ws1, ws2 in [(["cat"], ["love"]), (["cat", "tiger"], ["sex", "w1", "w2"])]:
        assert wv.n_similarity(ws1, ws2) == pytest.approx(kv.n_similarity(ws1, ws2), abs=1e-6)
    assert wv.n_similarity(["cat", "dog"], ["love"]) == pytest.approx(
        kv.n_similarity(["cat", "dog"], ["love"]), abs=1e-6
    )
    v = np.linspace(-1, 1, 8).astype(np.float32)
    for args in (
        {"keys": ["cat", "love"]},
        {"keys": ["cat", "love", "dog"], "weights": [2.0, -1.0, 5.0]},
        {"keys": ["cat", v], "pre_normalize": False, "post_normalize": True},
        {"keys": [3, "sex"], "weights": np.array([0.5, 0.25], dtype=np.float32)},
    ):
        np.testing.assert_allclose(wv.get_mean_vector(**args), kv.get_mean_vector(**args), 1e-6)


def test_doesnt_match_and_rank_by_centrality_equal_gensim(wv, kv):
    words = ["cat", "tiger", "love", "w1", "w20"]
    assert wv.doesnt_match(words) == kv.doesnt_match(words)
    ours, theirs = wv.rank_by_centrality(words), kv.rank_by_centrality(words)
    assert [w for _, w in ours] == [w for _, w in theirs]
    np.testing.assert_allclose([s for s, _ in ours], [s for s, _ in theirs], atol=1e-6)
    with pytest.warns(UserWarning, match=r"\['dog'\]"):
        assert wv.doesnt_match(words + ["dog"]) == kv.doesnt_match(words)


def test_doesnt_match_is_the_word_farthest_from_the_mean(wv):
    words = ["cat", "tiger", "love", "w1", "w20"]
    unit = wv[words] / np.linalg.norm(wv[words], axis=1)[:, None]
    centrality = _cosines(unit, unit.mean(axis=0))
    ranked = wv.rank_by_centrality(words)
    assert [w for _, w in ranked] == [words[i] for i in np.argsort(-centrality)]
    np.testing.assert_allclose([s for s, _ in ranked], np.sort(centrality)[::-1], atol=1e-6)
    assert wv.doesnt_match(words) == words[int(np.argmin(centrality))]
    # Planted: three near-identical directions and one outlier.
    planted = WordVectors(["a", "b", "c", "odd"], [[1, 0.1], [1, 0.0], [1, -0.1], [-0.2, 1]])
    assert planted.doesnt_match(["a", "b", "odd", "c"]) == "odd"
    with pytest.warns(UserWarning, match=r"\['dog'\]"):
        assert wv.doesnt_match(words + ["dog"]) == wv.doesnt_match(words)
    with pytest.raises(ValueError, match="empty list"), pytest.warns(UserWarning, match="dog"):
        wv.doesnt_match(["dog"])


# --- evaluate_word_pairs --------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [{}, {"dummy4unknown": True}, {"case_insensitive": False}, {"restrict_vocab": 200}],
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


def test_evaluate_word_pairs_rejects_a_nan_human_score(tmp_path):
    wv = WordVectors(["a", "b", "c"], np.eye(3) + 0.1)
    path = tmp_path / "pairs.tsv"
    path.write_text("# comment\na\tb\t1.5\nb\tc\tnan\n", encoding="utf8")
    with pytest.raises(ValueError, match=r"line 3 of .*pairs.tsv has the human score nan"):
        wv.evaluate_word_pairs(path)
    with pytest.raises(ValueError, match="pair 1 has the human score inf"):
        wv.evaluate_word_pairs([("a", "b", 1.0), ("a", "c", float("inf"))])


# --- evaluate_word_analogies ----------------------------------------------------------


def _analogy_vectors(path, dims=20, seed=0):
    """Vectors for the words of an analogy file, with each section's offset planted."""
    rng = np.random.default_rng(seed)
    lines = Path(path).read_text(encoding="utf8").splitlines()
    words = list(
        dict.fromkeys(w for line in lines if not line.startswith(":") for w in line.split())
    )
    row = {w: i for i, w in enumerate(words)}
    vectors = rng.normal(size=(len(words), dims))
    placed, offset = set(), None
    for line in lines:
        if line.startswith(":"):
            offset = 2 * rng.normal(size=dims)
            continue
        if len(line.split()) != 4:
            continue
        a, b, c, d = line.split()
        for x, y in ((a, b), (c, d)):
            if y not in placed and x != y:
                vectors[row[y]] = vectors[row[x]] + offset + 0.3 * rng.normal(size=dims)
                placed.add(y)
    # Lower-case variants after the originals exercise the case-insensitive mapping.
    extra = [w.lower() for w in words[:60] if w.lower() not in row]
    vectors = np.vstack([vectors, rng.normal(size=(len(extra), dims))])
    return WordVectors(words + extra, vectors)


@pytest.fixture(scope="module")
def analogies_subset(tmp_path_factory):
    """Every fifth question of each section of gensim's questions-words.txt."""
    utils = pytest.importorskip("gensim.test.utils")
    out, kept = [], 0
    for line in Path(utils.datapath("questions-words.txt")).read_text().splitlines():
        if line.startswith(":"):
            out.append(line)
            kept = 0
        elif kept % 5 == 0:
            out.append(line)
            kept += 1
        else:
            kept += 1
    out.insert(3, "not a question")  # gensim skips lines that are not four words
    path = tmp_path_factory.mktemp("analogies") / "questions.txt"
    path.write_text("\n".join(out) + "\n", encoding="utf8")
    return path


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"restrict_vocab": 300},
        {"case_insensitive": False},
        {"dummy4unknown": True, "restrict_vocab": 500},
    ],
)
def test_evaluate_word_analogies_equals_gensim(analogies_subset, options):
    wv = _analogy_vectors(analogies_subset)
    kv = _keyed_vectors(wv)
    score, sections = wv.evaluate_word_analogies(analogies_subset, **options)
    g_score, g_sections = kv.evaluate_word_analogies(str(analogies_subset), **options)
    assert score == pytest.approx(g_score, abs=1e-6)
    assert sections == g_sections
    total = sections[-1]
    assert total["section"] == "Total accuracy" and len(sections) == 15
    assert len(total["correct"]) > 0 and len(total["incorrect"]) > 0


def test_evaluate_word_analogies_equals_gensim_on_the_full_file():
    utils = pytest.importorskip("gensim.test.utils")
    path = utils.datapath("questions-words.txt")
    wv = _analogy_vectors(path, seed=3)
    kv = _keyed_vectors(wv)
    score, sections = wv.evaluate_word_analogies(path)
    g_score, g_sections = kv.evaluate_word_analogies(path)
    assert score == pytest.approx(g_score, abs=1e-6) and 0.3 < score < 1
    assert [len(s["correct"]) for s in sections] == [len(s["correct"]) for s in g_sections]
    assert sections == g_sections


def test_evaluate_word_analogies_on_planted_answers(tmp_path):
    # b - a + c lands exactly on d: every question is right, and the OOV one is skipped.
    wv = WordVectors(
        ["man", "woman", "king", "queen", "x", "y"],
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1], [-1, 0, 0, 1]],
    )
    path = tmp_path / "q.txt"
    path.write_text(": gender\nman woman king queen\nking queen man woman\nman woman x zzz\n")
    score, sections = wv.evaluate_word_analogies(path)
    assert score == 1.0
    assert sections[0]["correct"] == [
        ("MAN", "WOMAN", "KING", "QUEEN"),
        ("KING", "QUEEN", "MAN", "WOMAN"),
    ]
    score, sections = wv.evaluate_word_analogies(path, dummy4unknown=True)
    assert score == pytest.approx(2 / 3) and sections[0]["incorrect"] == [
        ("MAN", "WOMAN", "X", "ZZZ")
    ]
    path.write_text("man woman king queen\n")
    with pytest.raises(ValueError, match="line 1 .*before any ': section name' line"):
        wv.evaluate_word_analogies(path)
    path.write_text(": empty\n")
    with pytest.raises(ValueError, match="holds no analogy question"):
        wv.evaluate_word_analogies(path)


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


def test_resolve_init_vectors_accepts_gensim_keyedvectors(wv, kv):
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
