"""Streams of chunks attacked as a red team would (issue 22): each case ends in a correct
fit or a ValueError/TypeError that names the chunk or file, the problem and the fix.

The streaming estimators are ``DirectNCEEmbedder``, ``LandmarkNCEEmbedder`` and
``ConditionalNCEClassifier``; a fault in the stream's plumbing (``sknce._data``,
``sknce.datasets.NpzChunks``) is checked on the first and on the classifier.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sknce import (
    ConditionalNCEClassifier,
    ConditionalNCERegressor,
    DirectNCEEmbedder,
    LandmarkNCEEmbedder,
    LatentClassNCEEmbedder,
)
from sknce.datasets import make_topic_corpus, save_npz_chunks

FAST = dict(hidden_layer_sizes=(8,), batch_size=32, max_epochs=2, random_state=0)
EMBEDDERS = [
    pytest.param(lambda **kw: DirectNCEEmbedder(n_components=4, **FAST, **kw), id="direct"),
    pytest.param(lambda **kw: LandmarkNCEEmbedder(n_landmarks=5, **FAST, **kw), id="landmark"),
]
pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)


@pytest.fixture(scope="module")
def X():
    corpus = make_topic_corpus(120, n_topics=3, n_words=30, mean_length=30, random_state=0)
    return sp.csr_matrix(corpus.X)


def _blocks(X, n=3):
    bounds = np.linspace(0, X.shape[0], n + 1).astype(int)
    return [X[lo:hi] for lo, hi in zip(bounds, bounds[1:])]


def _pairs(X, n=3):
    y = np.arange(X.shape[0]) % 3
    return [
        (block, y[i * (X.shape[0] // n) : (i + 1) * (X.shape[0] // n)])
        for i, block in enumerate(_blocks(X, n))
    ]


class _Changing:
    """A restartable stream whose passes after the first yield ``later`` chunks."""

    def __init__(self, chunks, later):
        self.chunks, self.later, self.passes = chunks, later, 0

    def __iter__(self):
        n = len(self.chunks) if self.passes == 0 else self.later
        for index in range(n):
            yield self.chunks[index % len(self.chunks)]
        self.passes += 1


# --- passes that differ from the first ----------------------------------------------------
@pytest.mark.parametrize("make", EMBEDDERS)
@pytest.mark.parametrize(("later", "word"), [(1, "fewer"), (2, "fewer"), (4, "more")])
def test_a_stream_that_yields_other_chunks_on_a_later_pass_is_named(X, make, later, word):
    stream = _Changing(_blocks(X), later)
    with pytest.raises(ValueError, match=f"yielded {word} chunks on a later pass"):
        make(early_stopping=False).fit(stream)


@pytest.mark.parametrize("later", [1, 5])
def test_a_classifier_stream_that_changes_length_is_named(X, later):
    stream = _Changing(_pairs(X), later)
    with pytest.raises(ValueError, match="chunks on a later pass"):
        ConditionalNCEClassifier(n_negatives=2, **FAST, early_stopping=False).fit(stream)


def test_a_chunk_that_changes_size_between_passes_is_named(X):
    class Growing:
        passes = 0

        def __iter__(self):
            yield X[:40]
            yield X[40 : 80 if self.passes == 0 else 100]
            self.passes += 1

    with pytest.raises(ValueError, match="chunk 1 of the stream: it holds 60 example"):
        DirectNCEEmbedder(n_components=4, **FAST, early_stopping=False).fit(Growing())


def test_a_list_of_chunks_shrunk_during_the_fit_is_named(X):
    from skorch.callbacks import Callback

    chunks = _blocks(X)

    class Shrink(Callback):
        def on_epoch_end(self, net, **kwargs):
            del chunks[1:]

    with pytest.raises(ValueError, match="fewer chunks on a later pass"):
        DirectNCEEmbedder(n_components=4, **FAST, early_stopping=False, callbacks=[Shrink()]).fit(
            chunks
        )


# --- one-shot streams in disguise --------------------------------------------------------
def test_an_object_handing_out_one_generator_is_a_one_shot_stream(X):
    generator = iter(_blocks(X))

    class Wrapped:
        def __iter__(self):
            return generator

    with pytest.raises(TypeError, match="one-shot iterator.*same generator"):
        DirectNCEEmbedder(n_components=4, **FAST).fit(Wrapped())


def test_an_exhausted_wrapped_generator_is_a_one_shot_stream(X):
    generator = iter(_blocks(X))
    list(generator)

    class Wrapped:
        def __iter__(self):
            return generator

    with pytest.raises(TypeError, match="one-shot iterator"):
        ConditionalNCEClassifier(**FAST).fit(Wrapped())


# --- a list of chunks where one array is expected ------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda X: (DirectNCEEmbedder(n_components=4, **FAST).partial_fit, _blocks(X), ()),
        lambda X: (LandmarkNCEEmbedder(n_landmarks=5, **FAST).partial_fit, _blocks(X), ()),
        lambda X: (
            ConditionalNCEClassifier(**FAST).partial_fit,
            _blocks(X.toarray()),
            (np.zeros(40), [0.0]),
        ),
        lambda X: (
            ConditionalNCERegressor(**FAST).partial_fit,
            _blocks(X.toarray()),
            (np.zeros(40),),
        ),
        lambda X: (
            LatentClassNCEEmbedder(**FAST).partial_fit,
            _blocks(X.toarray()),
            (np.zeros(40),),
        ),
        lambda X: (ConditionalNCEClassifier(**FAST).partial_fit, _pairs(X), (None, [0, 1, 2])),
    ],
    ids=["direct", "landmark", "classifier", "regressor", "latent", "classifier-pairs"],
)
def test_a_list_of_chunks_given_to_partial_fit_names_the_loop(X, make):
    method, chunks, args = make(X)
    with pytest.raises(ValueError, match=r"list of 3 chunks.*for chunk in chunks"):
        method(chunks, *args)


# --- chunk files -------------------------------------------------------------------------
def _damage(path, how, X):
    if how == "truncated":
        raw = path.read_bytes()
        path.write_bytes(raw[: len(raw) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "pickled":
        np.savez(path, X=np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif how == "npy":
        with open(path, "wb") as stream:
            np.save(stream, X.toarray())
    elif how == "text":
        path.write_text("1 2 3\n4 5 6\n")
    elif how in ("indices", "indptr", "indptr-start", "missing"):
        Y = X.copy()
        if how == "indices":
            Y.indices[3] = 1000
        elif how == "indptr":
            Y.indptr[5] = Y.indptr[7] + 1
        arrays = dict(data=Y.data, indices=Y.indices, indptr=Y.indptr, shape=np.array(Y.shape))
        if how == "indptr-start":
            arrays["indptr"] = Y.indptr + 1
        if how == "missing":
            del arrays["indices"]
        np.savez(path, format=np.array("csr"), **arrays)


DAMAGE = {
    "truncated": "is not a readable .npz file",
    "empty": "it is an empty file",
    "pickled": "Object arrays cannot be loaded",
    "npy": "single .npy array",
    "text": "is not a readable .npz file .*it is a text file",
    "indices": "column index 1000, outside 0..29",
    "indptr": "indptr decreases at row 5",
    "indptr-start": "index pointer should start with 0",
    "missing": r"lacks the CSR array\(s\) \['indices'\]",
}


@pytest.mark.parametrize("how", list(DAMAGE))
@pytest.mark.parametrize("position", [0, 2])
def test_a_damaged_chunk_file_is_named_with_the_fault(X, tmp_path, how, position):
    chunks = save_npz_chunks(_blocks(X), tmp_path)
    _damage(chunks.files[position], how, _blocks(X)[position])
    name = chunks.files[position].name
    with pytest.raises(ValueError, match=f"chunk file .*{name}.*{DAMAGE[how]}"):
        DirectNCEEmbedder(n_components=4, **FAST).fit(chunks)


def test_a_damaged_chunk_file_read_directly_names_the_file(X, tmp_path):
    chunks = save_npz_chunks(_blocks(X), tmp_path)
    _damage(chunks.files[1], "truncated", _blocks(X)[1])
    with pytest.raises(ValueError, match=r"chunk-00001\.npz.*save_npz_chunks"):
        chunks[1]


def test_a_classifier_stream_with_a_damaged_file_names_it(X, tmp_path):
    y = np.arange(X.shape[0]) % 3
    chunks = save_npz_chunks([(b, y[: b.shape[0]]) for b in _blocks(X)], tmp_path)
    _damage(chunks.files[1], "empty", None)
    with pytest.raises(ValueError, match="chunk 1 of the stream: chunk file .*an empty file"):
        ConditionalNCEClassifier(**FAST).fit(chunks)


# --- malformed sparse matrices in memory ---------------------------------------------------
def _malformed(X, how):
    Y = X.copy()
    if how == "indices":
        Y.indices[3] = X.shape[1] + 7
    elif how == "negative":
        Y.indices[3] = -1
    else:
        Y.indptr[5] = Y.indptr[7] + 1
    return Y


@pytest.mark.parametrize("how", ["indices", "negative", "indptr"])
def test_a_malformed_csr_chunk_in_a_list_is_named_with_its_index(X, how):
    chunks = _blocks(X)
    chunks[1] = _malformed(chunks[1], how)
    with pytest.raises(ValueError, match="chunk 1 of the stream: X is a malformed CSR"):
        DirectNCEEmbedder(n_components=4, **FAST).fit(chunks)


@pytest.mark.parametrize("how", ["indices", "negative", "indptr"])
@pytest.mark.parametrize("method", ["fit", "partial_fit", "transform"])
def test_a_malformed_csr_matrix_is_named_in_every_method(X, how, method):
    emb = DirectNCEEmbedder(n_components=4, **FAST)
    if method == "transform":
        emb.fit(X)
    with pytest.raises(ValueError, match="malformed CSR matrix"):
        getattr(emb, method)(_malformed(X, how))


def test_a_malformed_csr_matrix_is_named_by_the_classifier(X):
    y = np.arange(X.shape[0]) % 3
    with pytest.raises(ValueError, match="malformed CSR matrix"):
        ConditionalNCEClassifier(**FAST).fit(_malformed(X, "indices"), y)


# --- raw text -------------------------------------------------------------------------------
TEXT = ["the cat sat on the mat", "a dog ran far away"] * 10


@pytest.mark.parametrize("make", EMBEDDERS)
@pytest.mark.parametrize("form", [list, np.array, tuple])
def test_raw_text_given_to_a_document_embedder_names_count_vectorizer(make, form):
    with pytest.raises(TypeError, match="raw text.*CountVectorizer"):
        make().fit(form(TEXT))


def test_raw_text_at_transform_names_count_vectorizer(X):
    emb = DirectNCEEmbedder(n_components=4, **FAST).fit(X)
    with pytest.raises(TypeError, match="raw text.*CountVectorizer"):
        emb.transform(TEXT)


def test_raw_text_given_to_the_classifier_names_count_vectorizer():
    with pytest.raises(TypeError, match="raw text.*CountVectorizer"):
        ConditionalNCEClassifier(**FAST).fit(TEXT, np.arange(20) % 2)


@pytest.mark.parametrize(
    ("cls", "streams"),
    [(ConditionalNCERegressor, False), (LatentClassNCEEmbedder, False), (DirectNCEEmbedder, True)],
)
def test_a_list_of_chunks_given_to_fit_says_whether_fit_streams(X, cls, streams):
    chunks = _blocks(X.toarray())
    y = np.arange(X.shape[0]) % 3
    if streams:
        cls(n_components=4, **FAST).fit(chunks)  # a stream: fits
        return
    with pytest.raises(ValueError, match="list of 3 chunks.*fit takes one array, not a stream"):
        cls(**FAST).fit(chunks, y)
