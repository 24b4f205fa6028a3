"""WordVectors queries at the edges of float range, with bad weights, and gensim's exact ties."""

from pathlib import Path

import numpy as np
import pytest

from sknce.words._vectors import WordVectors

WORDS = [f"w{i}" for i in range(12)]


@pytest.fixture
def reference():
    rng = np.random.default_rng(0)
    return WordVectors(WORDS, rng.normal(size=(len(WORDS), 6)))


def _scaled(reference, scale, rows=(1, 3, 4), dtype=np.float32):
    vectors = reference.vectors.astype(np.float64)
    vectors[list(rows)] *= scale
    return WordVectors(WORDS, vectors, dtype=dtype)


def _neighbours(result):
    return [w for w, _ in result], np.array([s for _, s in result])


# float32 keeps about 6 digits down to 1e-38; at 1e-40 a value is subnormal and keeps
# about 5, which bounds how close the cosines of the stored vectors can come.
SCALES = [(1e20, 1e-6), (1e30, 1e-6), (1e36, 1e-6), (1e-20, 1e-6), (1e-30, 1e-6), (1e-40, 2e-5)]


@pytest.mark.parametrize(("scale", "atol"), SCALES)
def test_cosines_of_huge_and_tiny_vectors_are_those_of_the_unscaled(reference, scale, atol):
    wv = _scaled(reference, scale)
    for a, b in [("w1", "w3"), ("w0", "w1"), ("w3", "w5"), ("w4", "w4")]:
        assert wv.similarity(a, b) == pytest.approx(reference.similarity(a, b), abs=atol)
        assert wv.distance(a, b) == pytest.approx(reference.distance(a, b), abs=atol)
    for query in ("w1", "w0", ["w1", "w2"], {"positive": ["w1", "w4"], "negative": ["w3"]}):
        args = query if isinstance(query, dict) else {"positive": query}
        words, sims = _neighbours(wv.most_similar(**args, topn=5))
        ref_words, ref_sims = _neighbours(reference.most_similar(**args, topn=5))
        assert words == ref_words
        np.testing.assert_allclose(sims, ref_sims, atol=atol)
        np.testing.assert_allclose(
            wv.most_similar_cosmul(**args, topn=None),
            reference.most_similar_cosmul(**args, topn=None),
            atol=atol,
        )
    np.testing.assert_allclose(wv.distances("w1"), reference.distances("w1"), atol=atol)
    np.testing.assert_allclose(
        wv.distances(wv["w3"], ["w0", "w4"]), reference.distances("w3", ["w0", "w4"]), atol=atol
    )
    np.testing.assert_allclose(
        wv.similar_by_vector(wv["w4"], topn=None),
        reference.similar_by_vector(reference["w4"], topn=None),
        atol=atol,
    )
    np.testing.assert_allclose(wv.get_normed_vectors(), reference.get_normed_vectors(), atol=atol)
    np.testing.assert_allclose(
        wv.get_vector("w3", norm=True), reference.get_vector("w3", norm=True), atol=atol
    )
    assert wv.n_similarity(["w1", "w3"], ["w4"]) == pytest.approx(
        reference.n_similarity(["w1", "w3"], ["w4"]), abs=atol
    )
    assert wv.doesnt_match(["w1", "w3", "w4", "w0"]) == reference.doesnt_match(
        ["w1", "w3", "w4", "w0"]
    )
    norms = np.linalg.norm(reference.vectors.astype(np.float64), axis=1) * np.where(
        np.isin(np.arange(len(WORDS)), [1, 3, 4]), scale, 1.0
    )
    np.testing.assert_allclose(wv.norms, norms.astype(np.float32), rtol=atol)


def test_huge_and_tiny_vectors_answer_analogies_as_unscaled(reference, tmp_path):
    path = tmp_path / "analogies.txt"
    path.write_text(": s\nw1 w3 w4 w5\nw0 w1 w3 w2\nw4 w2 w3 w1\nw5 w6 w7 w8\n")
    expected = reference.evaluate_word_analogies(path, case_insensitive=False)
    for scale, _ in SCALES:
        wv = _scaled(reference, scale, rows=(1, 3, 4, 6))
        assert wv.evaluate_word_analogies(path, case_insensitive=False) == expected


def test_float64_vectors_near_the_ends_of_their_range(reference):
    for scale in (1e200, 1e-200, 1e-310):
        wv = _scaled(reference, scale, dtype=np.float64)
        assert wv.similarity("w1", "w3") == pytest.approx(reference.similarity("w1", "w3"), 1e-5)
        words, _ = _neighbours(wv.most_similar("w1", topn=4))
        assert words == _neighbours(reference.most_similar("w1", topn=4))[0]


def test_the_cached_norms_follow_unit_normalize_all(reference):
    wv = _scaled(reference, 1e25)
    wv.unit_normalize_all()
    np.testing.assert_allclose(wv.norms, 1.0, rtol=1e-6)
    np.testing.assert_allclose(wv.vectors, reference.get_normed_vectors(), atol=1e-6)


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_query_weight_is_an_error(reference, weight):
    with pytest.raises(ValueError, match=r"weight in \('w1', (nan|inf|-inf)\) is not finite"):
        reference.most_similar(positive=[("w1", weight), "w2"])
    with pytest.raises(ValueError, match="is not finite"):
        reference.most_similar(positive=["w2"], negative=[("w1", weight)])
    with pytest.raises(ValueError, match="is not finite"):
        reference.most_similar(positive=[(reference["w3"], weight)])
    with pytest.raises(ValueError, match="weights must be finite numbers"):
        reference.get_mean_vector(["w1", "w2"], weights=[1.0, weight])
    with pytest.raises(ValueError, match="weights must be finite numbers"):
        reference.get_mean_vector(["w1", "w2"], weights=np.array([weight, 1.0]))


def _keyed_vectors(wv):
    keyedvectors = pytest.importorskip("gensim.models.keyedvectors")
    kv = keyedvectors.KeyedVectors(wv.vector_size)
    kv.add_vectors(list(wv.index_to_key), wv.vectors.copy())
    return kv


def test_similarities_are_gensims_bit_for_bit():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(300)]
    wv = WordVectors(words, rng.normal(size=(300, 50)))
    kv = _keyed_vectors(wv)
    pairs = rng.integers(0, 300, size=(3000, 2))
    ours = [wv.similarity(words[a], words[b]) for a, b in pairs]
    theirs = [float(kv.similarity(words[a], words[b])) for a, b in pairs]
    assert ours == theirs
    sets = [([words[a], words[b]], [words[c]]) for a, b, c in pairs[:200, [0, 1, 0]]]
    ours = [wv.n_similarity(x, y) for x, y in sets]
    assert ours == [float(kv.n_similarity(x, y)) for x, y in sets]


def test_evaluate_word_pairs_keeps_gensims_exact_ties(tmp_path):
    utils = pytest.importorskip("gensim.test.utils")
    path = utils.datapath("wordsim353.tsv")
    words = []
    for line in Path(path).read_text(encoding="utf8").splitlines():
        if not line.startswith("#"):
            words += line.split("\t")[:2]
    words = list(dict.fromkeys(words))
    rng = np.random.default_rng(4)
    vectors = rng.normal(size=(len(words), 32)).astype(np.float32)
    # Planted ties: groups of words share one vector, so many pairs tie exactly.
    vectors = vectors[np.arange(len(words)) // 4 * 4]
    wv = WordVectors(words, vectors)
    kv = _keyed_vectors(wv)
    pearson, spearman, oov = wv.evaluate_word_pairs(path)
    g_pearson, g_spearman, g_oov = kv.evaluate_word_pairs(path)
    assert spearman[0] == g_spearman[0] and spearman[1] == g_spearman[1]
    assert pearson[0] == pytest.approx(g_pearson[0], abs=1e-12) and oov == g_oov


@pytest.mark.parametrize(("scale", "atol"), SCALES)
def test_cosine_similarities_of_huge_and_tiny_vectors(reference, scale, atol):
    wv = _scaled(reference, scale)
    expected = WordVectors.cosine_similarities(reference["w1"], reference.vectors)
    np.testing.assert_allclose(
        WordVectors.cosine_similarities(wv["w1"], wv.vectors), expected, atol=atol
    )
    np.testing.assert_allclose(
        WordVectors.cosine_similarities(reference["w1"], wv.vectors), expected, atol=atol
    )


def test_cosine_similarities_equal_gensims():
    rng = np.random.default_rng(6)
    vectors = rng.normal(size=(50, 9)).astype(np.float32)
    ours = WordVectors.cosine_similarities(vectors[3], vectors)
    theirs = pytest.importorskip("gensim.models.keyedvectors").KeyedVectors.cosine_similarities(
        vectors[3], vectors
    )
    assert ours.tobytes() == theirs.tobytes()
