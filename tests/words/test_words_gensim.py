"""A way out to gensim: exact round trips, and gensim's remaining KeyedVectors names.

Each name is checked against gensim's own output on the same vectors.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from sknce.words import _io
from sknce.words._vectors import WordVectors

keyedvectors = pytest.importorskip("gensim.models.keyedvectors")
KeyedVectors = keyedvectors.KeyedVectors

WORDS = ["the", "café", "日本語", "naïve", "new-york", "x" * 30, "a", "b", "c", "d", "e", "f"]


@pytest.fixture
def wv():
    rng = np.random.default_rng(0)
    wv = WordVectors(WORDS, rng.normal(size=(len(WORDS), 7)), counts=np.arange(120, 0, -10))
    wv.set_vecattr("café", "tag", "food")
    return wv


def _assert_equal(a, b):
    assert a.index_to_key == b.index_to_key and a.vectors.dtype == b.vectors.dtype
    assert a.vectors.tobytes() == b.vectors.tobytes()


def _gensim_copy(wv):
    kv = KeyedVectors(wv.vector_size)
    kv.add_vectors(list(wv.index_to_key), wv.vectors.copy())
    return kv


# --- to_gensim / from_gensim ------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_round_trip_through_gensim_is_exact(wv, dtype):
    wv = WordVectors(wv.index_to_key, wv.vectors, counts=wv.expandos["count"], dtype=dtype)
    wv.set_vecattr("a", "tag", "letter")
    kv = wv.to_gensim()
    assert isinstance(kv, KeyedVectors) and kv.vectors.dtype == dtype
    assert kv.index_to_key == wv.index_to_key and kv.vectors.tobytes() == wv.vectors.tobytes()
    assert kv.get_vecattr("café", "count") == 110 and kv.get_vecattr("a", "tag") == "letter"
    back = WordVectors.from_gensim(kv)
    _assert_equal(back, wv)
    assert back.expandos.keys() == wv.expandos.keys()
    for name in wv.expandos:
        np.testing.assert_array_equal(back.expandos[name], wv.expandos[name])
    # Copies both ways: changing one leaves the other.
    kv.vectors[0] += 1
    assert back.vectors.tobytes() == wv.vectors.tobytes()


def test_gensim_answers_queries_on_the_converted_vectors_as_we_do(wv):
    kv = wv.to_gensim()
    for word in ("the", "café", "a"):
        ours, theirs = wv.most_similar(word, topn=5), kv.most_similar(word, topn=5)
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-6)
    assert wv.similarity("a", "b") == float(kv.similarity("a", "b"))


def test_from_gensim_takes_a_trained_word2vec():
    gensim_models = pytest.importorskip("gensim.models")
    utils = pytest.importorskip("gensim.test.utils")
    model = gensim_models.Word2Vec(
        utils.common_texts, vector_size=8, min_count=1, seed=1, workers=1, epochs=2
    )
    wv = WordVectors.from_gensim(model.wv)
    _assert_equal(wv, WordVectors(model.wv.index_to_key, model.wv.vectors))
    assert wv.get_vecattr("system", "count") == model.wv.get_vecattr("system", "count")
    assert wv.most_similar("system", topn=3) == [
        (w, pytest.approx(s, abs=1e-6)) for w, s in model.wv.most_similar("system", topn=3)
    ]


def test_from_gensim_refuses_what_is_not_word_vectors():
    with pytest.raises(TypeError, match="takes a gensim KeyedVectors.*got dict"):
        WordVectors.from_gensim({"a": [1.0]})
    tags = KeyedVectors(3)
    tags.add_vectors([0, 1], np.eye(2, 3))  # Doc2Vec's integer tags
    with pytest.raises(TypeError, match="keys that are not words, e.g. 0 \\(int: Doc2Vec"):
        WordVectors.from_gensim(tags)
    preallocated = KeyedVectors(3, count=4)  # rows not filled yet have the key None
    preallocated.add_vector("a", np.ones(3))
    with pytest.raises(TypeError, match="keys that are not words, e.g. None"):
        WordVectors.from_gensim(preallocated)


def test_without_gensim_the_conversions_say_how_to_get_it(wv, monkeypatch):
    monkeypatch.setitem(sys.modules, "gensim.models", None)  # import fails as if absent
    with pytest.raises(ImportError, match=r"WordVectors.to_gensim needs gensim.*pip install"):
        wv.to_gensim()
    with pytest.raises(ImportError, match=r"WordVectors.from_gensim needs gensim"):
        WordVectors.from_gensim(object())


# --- vectors_for_all, relative_cosine_similarity ----------------------------------------


@pytest.mark.parametrize("copy_vecattrs", [False, True])
def test_vectors_for_all_equals_gensim(wv, copy_vecattrs):
    kv = wv.to_gensim()
    keys = ["b", "zzz", "the", "b", "日本語", "", "a", "the", "unknown"]
    ours = wv.vectors_for_all(keys, copy_vecattrs=copy_vecattrs)
    theirs = kv.vectors_for_all(keys, copy_vecattrs=copy_vecattrs)
    assert ours.index_to_key == theirs.index_to_key == ["b", "the", "日本語", "a"]
    np.testing.assert_array_equal(ours.vectors, theirs.vectors)
    if copy_vecattrs:
        for word in ours.index_to_key:
            assert ours.get_vecattr(word, "count") == theirs.get_vecattr(word, "count")
    else:
        assert ours.expandos == {}
    assert len(wv.vectors_for_all([])) == 0
    assert wv.vectors_for_all(iter(["c", "c"]), allow_inference=False).index_to_key == ["c"]


@pytest.mark.parametrize("topn", [1, 3, 10, 50])
def test_relative_cosine_similarity_equals_gensim(wv, topn):
    kv = _gensim_copy(wv)
    for wa, wb in [("the", "café"), ("a", "b"), ("x" * 30, "new-york"), ("c", "c")]:
        ours = wv.relative_cosine_similarity(wa, wb, topn=topn)
        assert ours == pytest.approx(kv.relative_cosine_similarity(wa, wb, topn=topn), rel=1e-6)


def test_relative_cosine_similarity_on_planted_neighbours():
    # "b" is wa's only neighbour of cosine 1; the others are orthogonal.
    wv = WordVectors(["a", "b", "c", "d"], [[1, 0, 0], [2, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert wv.relative_cosine_similarity("a", "b", topn=3) == pytest.approx(1.0)
    assert wv.relative_cosine_similarity("a", "c", topn=3) == 0.0
    with pytest.raises(ValueError, match="without neighbours of 'a' \\(topn=0"):
        wv.relative_cosine_similarity("a", "b", topn=0)
    with pytest.raises(KeyError, match="'zz' is not in the vocabulary"):
        wv.relative_cosine_similarity("zz", "b")


# --- fvocab -----------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_fvocab_written_here_reads_in_gensim(wv, tmp_path, binary, suffix):
    path, vocab = tmp_path / f"v.w2v{suffix}", tmp_path / f"vocab.txt{suffix}"
    wv.save_word2vec_format(path, binary=binary, fvocab=vocab)
    kv = KeyedVectors.load_word2vec_format(str(path), fvocab=str(vocab), binary=binary)
    for word in wv.index_to_key:
        assert kv.get_vecattr(word, "count") == wv.get_vecattr(word, "count")
    loaded = WordVectors.load_word2vec_format(path, binary=binary, fvocab=vocab)
    _assert_equal(loaded, wv)
    np.testing.assert_array_equal(loaded.expandos["count"], wv.expandos["count"])


@pytest.mark.parametrize("binary", [False, True])
def test_fvocab_written_by_gensim_reads_here(wv, tmp_path, binary):
    kv = _gensim_copy(wv)
    rng = np.random.default_rng(5)
    for word in wv.index_to_key:  # counts in another order than the rows: gensim sorts
        kv.set_vecattr(word, "count", int(rng.integers(1, 1000)))
    path, vocab = tmp_path / "g.w2v", tmp_path / "g.vocab"
    kv.save_word2vec_format(str(path), fvocab=str(vocab), binary=binary)
    loaded = WordVectors.load_word2vec_format(path, binary=binary, fvocab=vocab)
    g_loaded = KeyedVectors.load_word2vec_format(str(path), fvocab=str(vocab), binary=binary)
    assert loaded.index_to_key == g_loaded.index_to_key
    for word in wv.index_to_key:
        assert loaded.get_vecattr(word, "count") == kv.get_vecattr(word, "count")
        np.testing.assert_array_equal(loaded[word], kv[word])


def test_fvocab_needs_counts_and_a_matching_file(wv, tmp_path):
    bare = WordVectors(wv.index_to_key, wv.vectors)
    with pytest.raises(ValueError, match="fvocab needs the words' counts.*counts="):
        bare.save_word2vec_format(tmp_path / "v.txt", fvocab=tmp_path / "vocab.txt")
    assert not os.listdir(tmp_path)  # nothing written
    wv.save_word2vec_format(tmp_path / "v.txt", fvocab=tmp_path / "vocab.txt")
    vocab = tmp_path / "vocab.txt"
    lines = vocab.read_text(encoding="utf8").splitlines()
    for content, match in [
        ("\n".join(lines[1:]), r"vocab\.txt lacks 1 of the 12 words \(e.g. \['the'\]\)"),
        ("\n".join(lines + ["oops"]), r"line 13 of .*vocab\.txt is 'oops'"),
        ("\n".join(lines[:-1] + ["f -3"]), r"line 12 of .*vocab\.txt is 'f -3'"),
        ("\n".join(lines[:-1] + ["f 1.5"]), "whole count >= 0"),
    ]:
        vocab.write_text(content, encoding="utf8")
        with pytest.raises(ValueError, match=match):
            WordVectors.load_word2vec_format(tmp_path / "v.txt", fvocab=vocab)
    vocab.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())  # a BOM is accepted
    loaded = WordVectors.load_word2vec_format(tmp_path / "v.txt", fvocab=vocab)
    assert loaded.get_vecattr("the", "count") == 120


def test_vectors_and_fvocab_are_replaced_together(wv, tmp_path, monkeypatch):
    path, vocab = tmp_path / "v.txt", tmp_path / "vocab.txt"
    wv.save_word2vec_format(path, fvocab=vocab)
    before = path.read_bytes(), vocab.read_bytes()
    other = WordVectors(wv.index_to_key[::-1], wv.vectors, counts=wv.expandos["count"])
    replace, calls = os.replace, []

    def fail_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return replace(src, dst)

    monkeypatch.setattr(_io.os, "replace", fail_second)
    with pytest.raises(KeyboardInterrupt):
        other.save_word2vec_format(path, fvocab=vocab)
    assert (path.read_bytes(), vocab.read_bytes()) == before
    assert sorted(os.listdir(tmp_path)) == ["v.txt", "vocab.txt"]


# --- evaluate_word_analogies(similarity_function=) --------------------------------------


def _gensim_reference(kv, path, function, restrict_vocab=300000, case_insensitive=True):
    """gensim's evaluate_word_analogies loop, ranking with ``function`` (gensim 4.4 always
    uses most_similar, whatever its similarity_function)."""
    ok_keys = kv.index_to_key[:restrict_vocab]
    if case_insensitive:
        ok_vocab = {k.upper(): kv.get_index(k) for k in reversed(ok_keys)}
    else:
        ok_vocab = {k: kv.get_index(k) for k in reversed(ok_keys)}
    correct = []
    for line in Path(path).read_text(encoding="utf8").splitlines():
        if line.startswith(": ") or len(line.split()) != 4:
            continue
        a, b, c, expected = [w.upper() if case_insensitive else w for w in line.split()]
        if not all(w in ok_vocab for w in (a, b, c, expected)):
            continue
        original, kv.key_to_index = kv.key_to_index, ok_vocab
        sims = getattr(kv, function)(positive=[b, c], negative=[a], topn=5)
        kv.key_to_index = original
        predicted = None
        for word, _ in sims:
            predicted = word.upper() if case_insensitive else word
            if predicted in ok_vocab and predicted not in {a, b, c}:
                break
        correct.append(predicted == expected)
    return correct


@pytest.fixture(scope="module")
def analogies(tmp_path_factory):
    utils = pytest.importorskip("gensim.test.utils")
    lines = Path(utils.datapath("questions-words.txt")).read_text().splitlines()
    kept = [line for i, line in enumerate(lines) if line.startswith(":") or i % 7 == 0]
    path = tmp_path_factory.mktemp("analogies") / "questions.txt"
    path.write_text("\n".join(kept) + "\n", encoding="utf8")
    words = list(
        dict.fromkeys(w for line in kept if not line.startswith(":") for w in line.split())
    )
    rng = np.random.default_rng(7)
    base = rng.normal(size=(len(words), 12))
    # A shared offset per half of the words, so that some questions are answered right.
    base[len(words) // 2 :] += base[: len(words) - len(words) // 2] + 0.5
    extra = [w.lower() for w in words[:40] if w.lower() not in words]
    vectors = np.vstack([base, rng.normal(size=(len(extra), 12))])
    return path, WordVectors(words + extra, vectors)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # gensim's cosmul calls init_sims
@pytest.mark.parametrize("function", ["most_similar", "most_similar_cosmul"])
@pytest.mark.parametrize("options", [{}, {"case_insensitive": False}])
def test_analogies_by_either_similarity_equal_gensims_loop(analogies, function, options):
    path, wv = analogies
    kv = _gensim_copy(wv)
    score, sections = wv.evaluate_word_analogies(path, similarity_function=function, **options)
    reference = _gensim_reference(kv, path, function, **options)
    assert len(sections[-1]["correct"]) == sum(reference) > 0
    assert len(sections[-1]["incorrect"]) == len(reference) - sum(reference) > 0
    if function == "most_similar":  # gensim's own evaluation, section by section
        assert (score, sections) == kv.evaluate_word_analogies(str(path), **options)


def test_analogies_by_cosmul_on_planted_answers(tmp_path):
    # 3CosMul and 3CosAdd disagree here: "d2" is nearest b + c - a, "d1" maximises the
    # product of similarities.
    wv = WordVectors(
        ["a", "b", "c", "d1", "d2"],
        [[0, 0.1, -1.5], [1.6, 0.9, 1.1], [0, 0.9, 0.4], [0.6, -0.2, -1.5], [1, -1.9, -0.2]],
    )
    path = tmp_path / "q.txt"
    for expected in ("d1", "d2"):
        path.write_text(f": s\na b c {expected}\n")
        add = wv.evaluate_word_analogies(path, case_insensitive=False)[0]
        mul = wv.evaluate_word_analogies(
            path, case_insensitive=False, similarity_function="most_similar_cosmul"
        )[0]
        add_answer = wv.most_similar(positive=["b", "c"], negative=["a"], topn=1)[0][0]
        mul_answer = wv.most_similar_cosmul(positive=["b", "c"], negative=["a"], topn=1)[0][0]
        assert add_answer != mul_answer
        assert (add, mul) == (float(add_answer == expected), float(mul_answer == expected))
    with pytest.raises(ValueError, match="similarity_function must be 'most_similar'.*got 'cos'"):
        wv.evaluate_word_analogies(path, similarity_function="cos")


def test_loading_a_gensim_save_names_the_way(wv, tmp_path):
    path = tmp_path / "gensim.kv"
    wv.to_gensim().save(str(path))
    with pytest.raises(ValueError, match=r"gensim\.kv is not a file written by.*from_gensim"):
        WordVectors.load(path)
    _assert_equal(WordVectors.from_gensim(KeyedVectors.load(str(path))), wv)
