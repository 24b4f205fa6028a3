"""Fits on streams of chunks larger than memory, the chunk files that hold them, and
``partial_fit`` over chunks.

``DirectNCEEmbedder``, ``LandmarkNCEEmbedder`` and ``ConditionalNCEClassifier``
accept a restartable iterable of chunks in ``fit``; ``NpzChunks`` reads chunk
files lazily. A stream of one chunk trains exactly as the chunk in memory; a
stream of several reaches the quality of the in-memory fit. ``partial_fit`` over
chunks, pass after pass, reaches the quality of ``fit`` on the whole data.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from _registry import CLASSIFICATION, COUNTS, REGISTRY
from sklearn.linear_model import LogisticRegression

import sknce
from sknce import ConditionalNCEClassifier, DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce._data import ChunkedDataset, SampledDataset, is_chunk_stream, shard_rows
from sknce.datasets import NpzChunks, save_npz_chunks

FAST = dict(hidden_layer_sizes=(16,), batch_size=64, random_state=0)


def _corpus(n=800, seed=0):
    return COUNTS.make(n, seed)


def _blobs(n=800, seed=0):
    return CLASSIFICATION.make(n, seed)


def _chunks(X, n_chunks, y=None):
    bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(int)
    return [X[lo:hi] if y is None else (X[lo:hi], y[lo:hi]) for lo, hi in zip(bounds, bounds[1:])]


def _same_weights(a, b):
    for wa, wb in zip(a.net_.module_.parameters(), b.net_.module_.parameters(), strict=True):
        torch.testing.assert_close(wa, wb, rtol=0, atol=0)


class _Recording(list):
    """A list of chunks that records which chunk is read, and when."""

    def __init__(self, chunks):
        super().__init__(chunks)
        self.reads: list[int] = []

    def __getitem__(self, index):
        self.reads.append(index)
        return super().__getitem__(index)


# --- chunk files ---------------------------------------------------------------------
def test_npz_chunks_round_trip_sparse_dense_and_labels(tmp_path):
    X, y = _blobs(30)
    counts = sp.random(20, 7, density=0.3, format="csr", random_state=0)
    written = save_npz_chunks([counts, X[:10], (X[10:], y[10:])], tmp_path)
    again = NpzChunks(sorted(tmp_path.glob("*.npz")))
    assert len(again) == len(written) == 3
    assert sp.issparse(again[0]) and (again[0] != counts).nnz == 0
    np.testing.assert_array_equal(again[1], X[:10])
    X_chunk, y_chunk = again[2]
    np.testing.assert_array_equal(X_chunk, X[10:])
    np.testing.assert_array_equal(y_chunk, y[10:])
    assert len(again[1:]) == 2


def test_npz_chunks_read_scipy_save_npz_files(tmp_path):
    counts = sp.random(5, 4, density=0.5, format="csr", random_state=1)
    sp.save_npz(tmp_path / "a.npz", counts)
    assert (NpzChunks([tmp_path / "a.npz"])[0] != counts).nnz == 0
    sp.save_npz(tmp_path / "b.npz", counts.tocsc())
    with pytest.raises(ValueError, match="save CSR matrices"):
        NpzChunks([tmp_path / "b.npz"])[0]
    with pytest.raises(FileNotFoundError):
        NpzChunks([tmp_path / "missing.npz"])


def test_what_counts_as_a_stream():
    X, _ = _corpus(20)
    assert is_chunk_stream([X[:10], X[10:]])
    assert is_chunk_stream([(X[:10].toarray(), np.zeros(10))])
    assert is_chunk_stream(iter([X]))  # one-shot: rejected later with a clear error
    assert not is_chunk_stream(X)
    assert not is_chunk_stream(X.toarray())
    assert not is_chunk_stream([[1, 2], [3, 4]])  # a 2-D array-like


# --- sharding of an epoch (data-parallel training) -----------------------------------
@pytest.mark.parametrize("n_rows", [10, 11, 12, 13])
def test_shards_cover_every_row_in_equal_counts(n_rows):
    rows = np.random.default_rng(0).permutation(n_rows)
    shards = [shard_rows(rows, np.random.default_rng(1), rank, 3) for rank in range(3)]
    sizes = {len(part) for part, _ in shards}
    assert sizes == {int(np.ceil(n_rows / 3))}  # the same number of steps in every process
    assert set(np.concatenate([part for part, _ in shards])) == set(rows)
    draws = [rng.integers(1 << 30) for _, rng in shards]
    assert len(set(draws)) == 3  # each process draws its negatives from its own stream


# --- fitting on streams ----------------------------------------------------------------
@pytest.mark.parametrize("Estimator", [DirectNCEEmbedder, LandmarkNCEEmbedder])
def test_a_one_chunk_stream_fits_as_the_chunk_in_memory(Estimator):
    X, _ = _corpus(200)
    params = dict(FAST, max_epochs=2, early_stopping=False)
    if Estimator is LandmarkNCEEmbedder:
        params["n_landmarks"] = 7
    streamed = Estimator(**params).fit([X])
    whole = Estimator(**params).fit(X)
    _same_weights(streamed, whole)
    np.testing.assert_allclose(streamed.transform(X), whole.transform(X), rtol=1e-6)


def test_a_one_chunk_stream_fits_the_classifier_as_in_memory():
    X, y = _blobs(300)
    params = dict(FAST, n_negatives=4, max_epochs=2, early_stopping=False)
    streamed = ConditionalNCEClassifier(**params).fit([(X, y)])
    _same_weights(streamed, ConditionalNCEClassifier(**params).fit(X, y))


def test_each_epoch_reads_every_chunk_once_in_a_new_order():
    X, _ = _corpus(600)
    chunks = _Recording(_chunks(X, 6))
    emb = DirectNCEEmbedder(**FAST, n_components=4, max_epochs=3, early_stopping=False)
    emb.fit(chunks)  # the validation pass iterates; chunk 0 is then read for set-up
    assert chunks.reads[0] == 0
    orders = [chunks.reads[1 + 6 * e : 7 + 6 * e] for e in range(3)]
    assert len(chunks.reads) == 19
    assert all(sorted(order) == list(range(6)) for order in orders)
    assert len({tuple(order) for order in orders}) > 1  # shuffled per epoch


class _Passes:
    """A restartable iterable that is not a sequence: read in its own order."""

    def __init__(self, chunks):
        self.chunks, self.passes = chunks, 0

    def __iter__(self):
        self.passes += 1  # counted when the pass starts reading
        yield from self.chunks


def test_a_restartable_iterable_is_read_once_per_epoch():
    X, _ = _corpus(300)
    stream = _Passes(_chunks(X, 3))
    emb = DirectNCEEmbedder(**FAST, n_components=4, max_epochs=2, early_stopping=False)
    emb.fit(stream)
    # the first chunk read to recognise a stream, the validation pass, the first chunk
    # for set-up, then one pass per epoch
    assert stream.passes == 3 + 2 and emb.n_iter_ == 2


def test_a_stream_reaches_the_quality_of_the_in_memory_fit(tmp_path):
    X_all, target_all = _corpus(1600, seed=1)  # one topic model: train and test split
    X, target, X_test, target_test = (
        X_all[:1200],
        target_all[:1200],
        X_all[1200:],
        target_all[1200:],
    )
    params = dict(FAST, n_components=8, max_epochs=6, early_stopping=False)
    accuracies = []
    for data in (X, save_npz_chunks(_chunks(X, 4), tmp_path)):
        emb = DirectNCEEmbedder(**params).fit(data)
        probe = LogisticRegression(max_iter=500).fit(emb.transform(X), target)
        accuracies.append(probe.score(emb.transform(X_test), target_test))
    in_memory, streamed = accuracies
    assert streamed > 0.9  # three topics: chance is about 1/3
    assert streamed >= in_memory - 0.03


def test_the_classifier_streams_pairs_and_counts_labels_over_all_chunks():
    X, y = _blobs(1200)
    y = np.asarray(["abcdef"[label] for label in y])
    pairs = _chunks(X, 4, y)
    params = dict(FAST, n_negatives=4, max_epochs=10, lr=0.02, early_stopping=True)
    streamed = ConditionalNCEClassifier(**params).fit(pairs)
    whole = ConditionalNCEClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(streamed.classes_, whole.classes_)
    # The unigram noise is the label marginal of the whole stream, as in memory.
    np.testing.assert_allclose(streamed.noise_.probs, whole.noise_.probs)
    assert "valid_loss" in streamed.history_[-1]  # early stopping on the last chunk
    assert streamed.score(X, y) >= whole.score(X, y) - 0.05 > 0.85


def test_declared_classes_smooth_the_counts_and_reject_unknown_labels():
    X, y = _blobs(400)
    pairs = _chunks(X, 2, y)
    clf = ConditionalNCEClassifier(**FAST, max_epochs=1, classes=np.arange(8)).fit(pairs)
    assert len(clf.classes_) == 8 and np.all(clf.noise_.probs > 0)
    with pytest.raises(ValueError, match="not in classes_"):
        ConditionalNCEClassifier(**FAST, max_epochs=1, classes=np.arange(3)).fit(pairs)


def test_early_stopping_holds_out_the_last_chunk():
    X, _ = _corpus(400)
    chunks = _chunks(X, 4)
    emb = DirectNCEEmbedder(**FAST, n_components=4, max_epochs=2, early_stopping=True).fit(chunks)
    batches = emb.net_.history[0]["batches"]
    train = sum(b.get("train_batch_size", 0) for b in batches)
    valid = sum(b.get("valid_batch_size", 0) for b in batches)
    assert valid == chunks[-1].shape[0] and train == X.shape[0] - valid
    with pytest.warns(UserWarning, match="the last chunk of the stream .* early stopping is off"):
        DirectNCEEmbedder(**FAST, max_epochs=1, early_stopping=True).fit([X])


def test_warm_start_continues_on_a_stream():
    X, _ = _corpus(300)
    emb = DirectNCEEmbedder(**FAST, n_components=4, max_epochs=2, early_stopping=False)
    emb.fit(_chunks(X, 3)).set_params(warm_start=True).fit(_chunks(X, 3))
    assert emb.n_iter_ == 4


# --- partial_fit over chunks ------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n, entry in REGISTRY.items() if entry.streaming])
def test_partial_fit_over_chunks_reaches_the_quality_of_a_whole_fit(name):
    """4 chunks, P passes of ``partial_fit`` over them, against ``fit`` for P epochs.

    The estimator's settings, its data, P and how its quality is judged on held-out
    data are its registry entry's (tests/_registry.py). Tolerance: every measure is at
    least that of the whole fit minus 0.03, and above its floor, far from chance.
    """
    entry = REGISTRY[name]

    def make():
        return getattr(sknce, name)(**FAST, **entry.streaming)

    X_all, y_all = entry.data.make(1600, 1)
    X, y, X_test, y_test = X_all[:1200], y_all[:1200], X_all[1200:], y_all[1200:]
    whole = entry.fit(make().set_params(max_epochs=entry.passes, early_stopping=False), X, y)
    online = make()
    declared = entry.first_call(y_all)  # e.g. the classes of all the data, at every call
    for _ in range(entry.passes):
        for X_chunk, y_chunk in _chunks(X, 4, y):
            entry.partial_fit(online, X_chunk, y_chunk, **declared)
    assert online.n_iter_ == 4 * entry.passes
    entry.assert_as_good(online, whole, X_test, y_test)


def test_the_classifier_partial_fit_needs_classes_on_the_first_call():
    X, y = _blobs(200)
    clf = ConditionalNCEClassifier(**FAST, n_negatives=4)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        clf.partial_fit(X[:100], y[:100])
    assert not hasattr(clf, "net_")
    clf.partial_fit(X[:100], y[:100], classes=np.arange(6))
    clf.partial_fit(X[100:], y[100:])  # later calls need no classes
    with pytest.raises(ValueError, match="not in classes_"):
        clf.partial_fit(X[:10], np.full(10, 7))


# --- errors that name the fix ------------------------------------------------------------
def test_a_chunk_with_another_vocabulary_is_named():
    X, _ = _corpus(300)
    bad = [X[:100], X[100:200, :50], X[200:]]
    with pytest.raises(ValueError, match="chunk 1 of the stream: X has 50 features"):
        DirectNCEEmbedder(**FAST, max_epochs=1).fit(bad)
    with pytest.raises(ValueError, match="chunk 2 of the stream: Negative values"):
        DirectNCEEmbedder(**FAST, max_epochs=1).fit([X[:100], X[100:200], -X[200:]])


def test_a_one_shot_generator_of_chunks_is_rejected():
    X, _ = _corpus(200)
    with pytest.raises(TypeError, match="one-shot iterator.*NpzChunks"):
        DirectNCEEmbedder(**FAST, max_epochs=1).fit(chunk for chunk in _chunks(X, 2))


def test_classifier_streams_need_pairs_and_no_separate_y():
    X, y = _blobs(200)
    with pytest.raises(TypeError, match=r"\(X_chunk, y_chunk\) pairs"):
        ConditionalNCEClassifier(**FAST, max_epochs=1).fit(_chunks(X, 2))
    with pytest.raises(ValueError, match="y must be None"):
        ConditionalNCEClassifier(**FAST, max_epochs=1).fit(_chunks(X, 2, y), y)


def test_a_chunk_too_small_to_draw_negatives_is_named():
    X, _ = _corpus(100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="chunk 1 of the stream: it has 1 document"):
            DirectNCEEmbedder(**FAST, max_epochs=1).fit([X[:50], X[50:51], X[51:]])


def test_chunked_dataset_holds_one_chunk_while_training_on_it():
    """Chunk i+1 is read only after the batches of chunk i are all drawn."""
    X, _ = _corpus(300)
    events = []

    def make_dataset(chunk, index):
        events.append(("read", index))
        return SampledDataset(_Sampler(chunk, index, events))

    dataset = ChunkedDataset(_chunks(X, 3), make_dataset, [100, 100, 100])
    list(dataset.batches(40, np.random.default_rng(0), shuffle=True))
    reads = [i for i, (kind, _) in enumerate(events) if kind == "read"]
    for position, next_read in zip(reads, reads[1:]):
        index = events[position][1]
        drawn = [e for e in events[position:next_read] if e == ("batch", index)]
        assert len(drawn) == 3  # ceil(100 / 40) batches, all before the next read


class _Sampler:
    def __init__(self, chunk, index, events):
        self.n, self.index, self.events = chunk.shape[0], index, events

    def __len__(self):
        return self.n

    def __call__(self, rows, rng):
        self.events.append(("batch", self.index))
        return rows
