"""Cases found by trying sknce as a hostile or unlucky user would (issue 15), one test each."""

import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from _registry import CLASSIFICATION, GROUPS, REGRESSION
from test_common import ESTIMATORS, REGISTRY, _data

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder, LatentClassNCEEmbedder
from sknce.contrastive import simplex_etf_report
from sknce.datasets import make_topic_corpus, save_npz_chunks
from sknce.documents import project_simplex, recover_topic_posterior, split_documents

SMALL = dict(hidden_layer_sizes=(8,), max_epochs=1, random_state=0)

#: The warning of a one- or two-epoch fit whose validation loss stays at chance.
AT_CHANCE = "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"


@pytest.fixture(scope="module")
def corpus():
    """286 documents: with the default batch size, the last training batch has one."""
    return make_topic_corpus(286, n_topics=3, n_words=40, mean_length=30, random_state=0)


@pytest.fixture(scope="module")
def small_corpus():
    """64 documents, trained on in full batches of 16 (no batch of one document)."""
    return make_topic_corpus(64, n_topics=3, n_words=40, mean_length=30, random_state=0)


#: Settings that train on every document of ``small_corpus`` in batches of 16.
FULL_BATCHES = dict(SMALL, batch_size=16, early_stopping=False)


@pytest.mark.filterwarnings(AT_CHANCE)
@pytest.mark.parametrize("cls", [DirectNCEEmbedder, LandmarkNCEEmbedder])
@pytest.mark.parametrize("batch_size", [256, 1])
def test_a_last_training_batch_of_one_document_trains(corpus, cls, batch_size):
    """286 documents: 29 held out, 257 = 256 + 1 train; batch_size=1 is all batches of one."""
    params = dict(n_landmarks=5) if cls is LandmarkNCEEmbedder else dict(n_components=4)
    emb = cls(batch_size=batch_size, **params, **SMALL).fit(corpus.X)
    assert np.all(np.isfinite(emb.transform(corpus.X)))


def _stored_twice(X) -> sp.csr_matrix:
    """The counts of ``X`` with every count stored as two parts: a non-canonical CSR."""
    coo = sp.csr_matrix(X).tocoo()
    halves = np.floor(coo.data / 2)
    split = sp.csr_matrix(
        (
            np.concatenate([halves, coo.data - halves]),
            (np.concatenate([coo.row, coo.row]), np.concatenate([coo.col, coo.col])),
        ),
        shape=X.shape,
    )
    split.has_canonical_format = False
    return split


def _document_params(cls) -> dict:
    return dict(n_landmarks=5) if cls is LandmarkNCEEmbedder else dict(n_components=4)


@pytest.mark.parametrize("cls", [DirectNCEEmbedder, LandmarkNCEEmbedder])
@pytest.mark.parametrize("bag", ["log1p", "log1p-idf", "tf", "counts"])
def test_duplicate_stored_entries_embed_as_their_sum(small_corpus, cls, bag):
    emb = cls(bag=bag, **_document_params(cls), **FULL_BATCHES).fit(small_corpus.X)
    X = sp.csr_matrix(small_corpus.X[:5])
    np.testing.assert_allclose(emb.transform(_stored_twice(X)), emb.transform(X), rtol=1e-5)


@pytest.mark.parametrize("cls", [DirectNCEEmbedder, LandmarkNCEEmbedder])
def test_fitting_on_duplicate_stored_entries_fits_their_sum(small_corpus, cls):
    X = sp.csr_matrix(small_corpus.X)
    canonical = cls(**_document_params(cls), **FULL_BATCHES).fit(X)
    split = cls(**_document_params(cls), **FULL_BATCHES).fit(_stored_twice(X))
    np.testing.assert_array_equal(split.transform(X), canonical.transform(X))


@pytest.mark.parametrize("cls", [DirectNCEEmbedder, LandmarkNCEEmbedder])
def test_document_embedders_reject_counts_that_are_not_integers(small_corpus, cls):
    with pytest.raises(ValueError, match="non-integer values.*integer word counts"):
        cls(**_document_params(cls), **FULL_BATCHES).fit(small_corpus.X.toarray() + 0.5)


def test_split_documents_rejects_counts_that_are_not_counts():
    with pytest.raises(ValueError, match="non-negative integer word counts"):
        split_documents(sp.csr_matrix([[1.5, 2.0]]), "partition", 0)
    with pytest.raises(ValueError, match="not word counts"):
        split_documents(sp.csr_matrix([[1e12, 2.0]]), "partition", 0)


def test_project_simplex_rejects_nan_and_empty_rows():
    with pytest.raises(ValueError, match="NaN or infinity"):
        project_simplex([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="at least one column"):
        project_simplex(np.zeros((2, 0)))
    np.testing.assert_allclose(project_simplex([[2.0, 0.0]]), [[1.0, 0.0]])


def test_simplex_etf_report_rejects_nan_labels_and_representations():
    Z = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="labels contain NaN"):
        simplex_etf_report(Z, [0, np.nan, 1])
    for bad in (np.nan, np.inf):
        Z_bad = Z.copy()
        Z_bad[1, 0] = bad
        with pytest.raises(ValueError, match="Z contains NaN or infinity") as error:
            simplex_etf_report(Z_bad, [0, 1, 1])
        assert "/sknce/" in error.traceback[-1].path.as_posix()


@pytest.mark.filterwarnings("ignore:recover_topic_posterior reads exp f:UserWarning")
def test_recover_topic_posterior_names_the_estimator_it_needs(small_corpus):
    corpus = small_corpus
    direct = DirectNCEEmbedder(n_components=4, **FULL_BATCHES).fit(corpus.X)
    with pytest.raises(TypeError, match="needs a LandmarkNCEEmbedder.*DirectNCEEmbedder"):
        recover_topic_posterior(direct, corpus.X, corpus.topics, corpus.word_probs)
    landmark = LandmarkNCEEmbedder(n_landmarks=5, landmarks="words", **FULL_BATCHES)
    landmark.fit(corpus.X)
    topics = corpus.topics.copy()
    topics[0, 0] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        recover_topic_posterior(landmark, corpus.X, topics, corpus.word_probs)
    word_probs = corpus.word_probs.copy()
    word_probs[1] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        recover_topic_posterior(landmark, corpus.X, corpus.topics, word_probs)


def test_exclude_collisions_with_a_single_class_is_an_error():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="no negative is left"):
        LatentClassNCEEmbedder(exclude_collisions=True, **SMALL).fit(X, np.zeros(20))


# --- the estimators' shared checks -----------------------------------------------------
ARRAY_ESTIMATORS = [name for name in ESTIMATORS if REGISTRY[name].data.array]
HIDDEN_ESTIMATORS = [n for n in ARRAY_ESTIMATORS if "hidden_layer_sizes" in REGISTRY[n].params]


def _make(name, **params):
    return ESTIMATORS[name](**{**REGISTRY[name].params, **params})


def _fit_on(estimator, name, X, y):
    return REGISTRY[name].fit(estimator, X, y)


def _is_unfitted(estimator) -> bool:
    return not [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]


@pytest.mark.parametrize("name", HIDDEN_ESTIMATORS)
@pytest.mark.parametrize("sizes", [(-1,), (2.5,), (0,), (True,)])
def test_layer_sizes_that_are_not_positive_ints_are_a_clear_error(name, sizes):
    estimator = _make(name, hidden_layer_sizes=sizes)
    X, y = _data(REGISTRY[name].data)
    with pytest.raises(ValueError, match=r"hidden_layer_sizes must be a tuple of positive ints"):
        _fit_on(estimator, name, X, y)
    assert _is_unfitted(estimator)


@pytest.mark.parametrize("sizes", [(-1,), (2.5,), (0,)])
@pytest.mark.parametrize("objective", ["ranking", "binary"])
def test_input_bias_layer_sizes_that_are_not_positive_ints_are_a_clear_error(sizes, objective):
    name = "ConditionalNCEClassifier"
    estimator = _make(name, input_bias=True, input_bias_layer_sizes=sizes, objective=objective)
    X, y = _data(CLASSIFICATION)
    with pytest.raises(ValueError, match=r"input_bias_layer_sizes must be a tuple of positive"):
        estimator.fit(X, y)
    assert _is_unfitted(estimator)


@pytest.mark.parametrize("name", ARRAY_ESTIMATORS)
@pytest.mark.parametrize("scale", [1e20, 1e30, 1e300])
def test_inputs_beyond_float32_arithmetic_are_rejected_at_fit_naming_float32(name, scale):
    X, y = _data(REGISTRY[name].data)
    estimator = _make(name)
    with pytest.raises(ValueError, match=r"as large as .* float32.*Scale X"):
        _fit_on(estimator, name, X * scale, y)
    assert _is_unfitted(estimator)


def _inference(estimator) -> list[str]:
    """The inference methods of ``estimator`` that take X alone: the usual ones, and the
    output its registry entry compares (e.g. a density's ``score_samples``)."""
    methods = ["transform", "predict", "predict_log_proba"]
    methods.append(REGISTRY[type(estimator).__name__].output)
    return [m for m in dict.fromkeys(methods) if hasattr(estimator, m)]


@pytest.mark.filterwarnings(AT_CHANCE)
@pytest.mark.parametrize("name", ARRAY_ESTIMATORS)
def test_inputs_beyond_float32_arithmetic_are_rejected_at_inference(name):
    X, y = _data(REGISTRY[name].data)
    estimator = _fit_on(_make(name), name, X, y)
    bad = [X * 1e30]
    if estimator.__sklearn_tags__().input_tags.sparse:
        bad.append(sp.csr_matrix(X * 1e30))
    for method in _inference(estimator):
        for bad_X in bad:
            with pytest.raises(ValueError, match=r"as large as .* float32.*Scale X"):
                getattr(estimator, method)(bad_X)


@pytest.mark.filterwarnings(AT_CHANCE)
@pytest.mark.parametrize("name", ARRAY_ESTIMATORS)
def test_an_output_that_overflows_is_an_error_not_nan(name):
    """Inputs within float32's range can still overflow inside a network: no NaN output."""
    X, y = _data(REGISTRY[name].data)
    estimator = _fit_on(_make(name), name, X, y)
    with torch.no_grad():
        for param in estimator.net_.module_.parameters():
            param.fill_(1e30)
    # The classifier's predict (an argmax) is checked in tests/conditional.
    methods = [
        m
        for m in _inference(estimator)
        if not (m == "predict" and "predict_log_proba" in _inference(estimator))
    ]
    for method in methods:
        with pytest.raises(ValueError, match="gave non-finite values for .* Scale X"):
            getattr(estimator, method)(X)


def test_save_npz_chunks_writes_whole_files_or_nothing(tmp_path):
    """A chunk that fails to write leaves neither a partial file nor a damaged old one."""
    first = save_npz_chunks([np.eye(3), np.ones((2, 3))], tmp_path)
    before = (tmp_path / "chunk-00001.npz").read_bytes()

    def chunks():
        yield np.zeros((2, 3))
        yield np.array([[lambda: 0]], dtype=object)  # fails while its file is written

    with pytest.raises((pickle.PicklingError, AttributeError)):
        save_npz_chunks(chunks(), tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["chunk-00000.npz", "chunk-00001.npz"]
    assert (tmp_path / "chunk-00001.npz").read_bytes() == before
    np.testing.assert_array_equal(next(iter(first)), np.zeros((2, 3)))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_option_value_the_optimizer_rejects_is_named_before_training(name):
    estimator = _make(name, optimizer_kwargs={"weight_decay": -1.0})
    X, y = _data(REGISTRY[name].data)
    with pytest.raises(ValueError, match=r"optimizer_kwargs=.*not valid options of \w+:.*weight"):
        REGISTRY[name].fit(estimator, X, y)
    assert _is_unfitted(estimator)


def test_labels_of_types_that_cannot_be_sorted_are_a_clear_type_error():
    X, y = _data(GROUPS)
    mixed = np.array([1, "a"] * (len(y) // 2), dtype=object)
    with_none = y.astype(object)
    with_none[0] = None
    for bad in (mixed, with_none):
        with pytest.raises(TypeError, match=r"y mixes labels of types .* cannot be sorted"):
            _make("LatentClassNCEEmbedder").fit(X, bad)
    classifier = _make("ConditionalNCEClassifier").fit(X, y)
    with pytest.raises(TypeError, match=r"y mixes labels of types"):
        classifier.score(X, mixed)


def test_regressor_scores_targets_of_any_finite_scale_and_rejects_missing_ones():
    X, y = _data(REGRESSION)
    regressor = _make("ConditionalNCERegressor").fit(X, y)
    assert np.isfinite(regressor.score(X, y * 1e300))
    missing = y.astype(object)
    missing[0] = None
    for method in (regressor.score, regressor.score_samples):
        with pytest.raises(ValueError, match="y contains NaN or infinity"):
            method(X, missing)
