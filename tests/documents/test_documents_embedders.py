"""LandmarkNCEEmbedder and DirectNCEEmbedder: planted topics, scoring, input handling.

Tests of what the paper claims run the paper's setting explicitly (``PAPER``);
the defaults' own behaviour is pinned in ``test_documents_defaults.py``.
"""

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce.datasets import make_topic_corpus
from sknce.documents import project_simplex, recover_topic_posterior
from sknce.documents._split import normalize_bags
from sknce.nn import InputLinear
from sknce.optim import LazyAdam

FAST = dict(hidden_layer_sizes=(32,), batch_size=64, lr=3e-3, random_state=0)

#: DirectNCE as Tosh et al. train it: two MLPs on term frequencies from a random start,
#: raw f1(x) as the embedding (with FAST's smaller network).
PAPER = dict(bag="tf", init="random", tied=False, output="raw")

#: LandmarkNCE as Tosh et al. train it: a network of the pair on term frequencies from a
#: random start (with FAST's smaller network).
LANDMARK_PAPER = dict(scorer="pair", bag="tf")

#: (estimator, extra parameters): both embedders at their defaults and in the paper's setting.
VARIANTS = [
    pytest.param(LandmarkNCEEmbedder, {"n_landmarks": 50}, id="landmark"),
    pytest.param(LandmarkNCEEmbedder, {"n_landmarks": 50, **LANDMARK_PAPER}, id="landmark-paper"),
    pytest.param(DirectNCEEmbedder, {"n_components": 8}, id="direct"),
    pytest.param(DirectNCEEmbedder, {"n_components": 8, **PAPER}, id="direct-paper"),
]


@pytest.fixture(scope="module")
def corpus():
    return make_topic_corpus(
        1200, n_topics=4, n_words=40, topics="block", beta=0.1, mean_length=30, random_state=0
    )


@pytest.fixture(scope="module")
def word_landmarks(corpus):
    return LandmarkNCEEmbedder(
        n_landmarks=80,
        landmarks="words",
        split="word",
        max_epochs=25,
        early_stopping=False,
        **LANDMARK_PAPER,
        **FAST,
    ).fit(corpus.X)


def test_recover_planted_topics_from_word_landmarks(corpus, word_landmarks):
    eta = recover_topic_posterior(word_landmarks, corpus.X, corpus.topics, corpus.word_probs)
    np.testing.assert_allclose(eta.sum(1), 1.0)
    top = (eta.argmax(1) == corpus.posterior_mean.argmax(1)).mean()
    l2 = np.linalg.norm(eta - corpus.posterior_mean, axis=1).mean()
    uniform = np.linalg.norm(0.25 - corpus.posterior_mean, axis=1).mean()
    assert top > 0.85  # chance: 0.25
    assert l2 < 0.5 * uniform


def probe_accuracy(emb, corpus) -> float:
    """Held-out accuracy of a logistic regression on 10 labelled documents per topic."""
    Z = emb.transform(corpus.X)
    labelled = np.concatenate([np.flatnonzero(corpus.target[:1000] == k)[:10] for k in range(4)])
    clf = LogisticRegression(max_iter=2000).fit(Z[labelled], corpus.target[labelled])
    return clf.score(Z[1000:], corpus.target[1000:])


@pytest.mark.parametrize("cls, params", VARIANTS)
def test_linear_probe_on_few_labels_finds_the_topic(corpus, cls, params):
    emb = cls(max_epochs=15, early_stopping=False, **params, **FAST).fit(corpus.X[:1000])
    assert probe_accuracy(emb, corpus) > 0.75  # chance: 0.25


@pytest.mark.parametrize("cls, params", VARIANTS)
def test_sparse_embeddings_train_only_the_words_present_and_learn(corpus, cls, params):
    X = corpus.X[:1000].tolil()
    X[:, 0] = 0  # a word no training document contains
    emb = cls(
        max_epochs=15,
        early_stopping=False,
        sparse_embeddings=True,
        optimizer=LazyAdam,
        **params,
        **FAST,
    ).fit(X.tocsr())
    # Two word-weight layers: the pair network's two sides (landmark-paper); f1's and f2's
    # first layers (direct-paper); the tied encoder's linear map and its residual branch
    # (the defaults of both).
    first = [m for m in emb.net_.module_.modules() if isinstance(m, InputLinear)]
    assert len(first) == 2 and all(m.sparse_grad for m in first)
    for layer in first:  # the last step's gradient: rows of the words present only
        grad = layer.weight.grad.coalesce()
        assert grad.is_sparse and 0 not in grad.indices()[0]
    assert probe_accuracy(emb, corpus) > 0.75  # chance: 0.25


@pytest.mark.parametrize("cls", [LandmarkNCEEmbedder, DirectNCEEmbedder])
def test_sparse_embeddings_with_a_dense_optimizer_name_the_fix(corpus, cls):
    with pytest.raises(ValueError, match="sparse_embeddings=True needs an optimizer.*LazyAdam"):
        cls(sparse_embeddings=True, max_epochs=1).fit(corpus.X[:50])


@pytest.mark.parametrize(
    "cls, params",
    [
        pytest.param(LandmarkNCEEmbedder, LANDMARK_PAPER, id="landmark-paper"),
        pytest.param(DirectNCEEmbedder, PAPER, id="direct-paper"),
    ],
)
def test_score_improves_with_training(corpus, cls, params):
    # From a random start (the spectral start is tested in test_documents_defaults.py).
    X = corpus.X[:600]
    short = cls(max_epochs=1, early_stopping=False, **params, **FAST).fit(X)
    long = cls(max_epochs=12, early_stopping=False, **params, **FAST).fit(X)
    assert long.score(X) > short.score(X) + 0.05
    assert long.score(X) > -np.log(2)  # better than a constant classifier
    assert long.score(X) == long.score(X)  # fixed pairs: deterministic
    assert long.history_[-1]["train_loss"] < long.history_[0]["train_loss"]


def test_early_stopping_on_held_out_contrastive_loss(corpus):
    emb = DirectNCEEmbedder(
        max_epochs=40, patience=2, validation_fraction=0.2, n_components=4, **{**FAST, "lr": 0.05}
    ).fit(corpus.X[:400])
    valid = [row["valid_loss"] for row in emb.history_]
    assert all(np.isfinite(valid)) and emb.n_iter_ <= 40


@pytest.mark.parametrize("n_negatives", [1, 3])
def test_fit_at_chance_keeps_training_and_warns(n_negatives):
    # i.i.d. uniform tokens and equal lengths: the two halves of a partitioned document
    # are independent, so no pair can beat a constant guess, whose loss is the binary
    # entropy of 1 / (1 + k). Plain early stopping would end this fit after ``patience``
    # epochs and return the uninformative model silently.
    X = sp.csr_matrix(np.random.default_rng(0).multinomial(20, np.full(30, 1 / 30), size=300))
    p = 1 / (1 + n_negatives)
    chance = -(p * np.log(p) + (1 - p) * np.log(1 - p))
    with pytest.warns(ConvergenceWarning, match=f"constant guess \\({chance:.4f}\\)"):
        emb = DirectNCEEmbedder(
            n_components=4,
            split="partition",
            n_negatives=n_negatives,
            max_epochs=6,
            patience=1,
            **FAST,
        ).fit(X)
    assert emb.n_iter_ == 6
    assert min(row["valid_loss"] for row in emb.history_) > 0.99 * chance


@pytest.mark.parametrize("output", ["exp", "log-odds", "standardized"])
def test_landmark_transform_matches_naive_pair_evaluation(word_landmarks, corpus, output):
    X = corpus.X[:7]
    emb = copy.copy(word_landmarks).set_params(output=output)  # the fit, another output
    fast = emb.transform(X)
    scorer = emb.net_.module_
    x = torch.as_tensor(normalize_bags(X, "tf").toarray())
    lm = torch.as_tensor(normalize_bags(emb.landmarks_, "tf").toarray())
    with torch.no_grad():
        log_odds = np.stack(
            [
                [
                    float(scorer.combine(scorer.left(x[i : i + 1]), scorer.right(lm[j : j + 1])))
                    for j in range(lm.shape[0])
                ]
                for i in range(x.shape[0])
            ]
        )
    expected = {
        "exp": np.exp(log_odds),
        "log-odds": log_odds,
        "standardized": (log_odds - emb.output_mean_) / emb.output_scale_,
    }[output]
    np.testing.assert_allclose(fast, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cls, params", VARIANTS)
def test_transform_is_batch_independent_and_sparse_equals_dense(corpus, cls, params, monkeypatch):
    emb = cls(max_epochs=2, early_stopping=False, **params, **FAST).fit(corpus.X[:200])
    X = corpus.X[:50]
    full = emb.transform(X)
    rows = np.vstack([emb.transform(X[i]) for i in range(50)])
    np.testing.assert_allclose(rows, full, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(emb.transform(X.toarray()), full, rtol=1e-5, atol=1e-6)
    monkeypatch.setattr("sknce.documents._embedders._PAIR_BLOCK", 100)
    monkeypatch.setattr("sknce.documents._embedders._DOCUMENT_BLOCK", 16)
    np.testing.assert_allclose(emb.transform(X), full, rtol=1e-5, atol=1e-6)
    assert emb.transform(X.astype(np.float32)).dtype == np.float32


def test_short_documents_are_skipped_with_a_warning_and_empty_ones_embed(corpus):
    X = sp.vstack(
        [corpus.X[:100], sp.csr_matrix((3, 40)), sp.csr_matrix(([1.0], ([0], [5])), shape=(1, 40))]
    ).tocsr()
    with pytest.warns(UserWarning, match="4 document"):
        emb = DirectNCEEmbedder(max_epochs=1, early_stopping=False, **FAST).fit(X)
    Z = emb.transform(X)
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z[100], Z[101])  # empty documents share the empty-bag embedding
    with pytest.raises(ValueError, match="at least 2 documents"):
        DirectNCEEmbedder(**FAST).fit(X[99:])


@pytest.mark.parametrize("cls", [LandmarkNCEEmbedder, DirectNCEEmbedder])
def test_bad_counts_name_the_fix(corpus, cls):
    X = corpus.X[:50].toarray()
    with pytest.raises(ValueError, match="CountVectorizer"):
        cls(**FAST).fit(X * 0.5 + 0.25)
    with pytest.raises(ValueError, match="Negative values"):
        cls(**FAST).fit(X - 1)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        cls(**FAST).fit(X_nan)
    emb = cls(max_epochs=1, early_stopping=False, **FAST).fit(X)
    with pytest.raises(ValueError, match="features"):
        emb.transform(X[:, :10])
    assert emb.transform(X * 0.5).shape[0] == 50  # transform takes any non-negative bag


def test_landmark_options(corpus):
    X = corpus.X[:300]
    emb = LandmarkNCEEmbedder(
        n_landmarks=12, max_epochs=1, clip=2.0, output="exp", early_stopping=False, **FAST
    ).fit(X)
    assert emb.landmarks_.shape == (12, 40)
    assert emb.transform(X).max() <= 2.0 + 1e-6
    assert emb.set_params(output="log-odds").transform(X).max() <= np.log(2.0) + 1e-6
    names = emb.get_feature_names_out()
    assert names[0] == "landmarknceembedder0" and len(names) == 12
    explicit = X[:5].toarray()
    emb = LandmarkNCEEmbedder(landmarks=explicit, max_epochs=1, early_stopping=False, **FAST).fit(
        X
    )
    np.testing.assert_array_equal(emb.landmarks_.toarray(), explicit)
    assert emb.transform(X).shape == (300, 5)
    with pytest.raises(ValueError, match="landmarks given as a matrix"):
        LandmarkNCEEmbedder(landmarks=explicit[:, :3], **FAST).fit(X)
    with pytest.raises(ValueError, match="at least one hidden layer"):
        LandmarkNCEEmbedder(**{**FAST, **LANDMARK_PAPER, "hidden_layer_sizes": ()}).fit(X)
    with pytest.raises(ValueError, match="single-word landmarks"):
        recover_topic_posterior(emb, X, corpus.topics, corpus.word_probs)


def test_words_landmarks_are_single_frequent_words(word_landmarks, corpus):
    L = word_landmarks.landmarks_
    np.testing.assert_array_equal(np.asarray(L.sum(1)).ravel(), 1.0)
    assert L.nnz == L.shape[0]


def test_pickle_keeps_the_embedding(word_landmarks, corpus):
    again = pickle.loads(pickle.dumps(word_landmarks))
    np.testing.assert_allclose(
        again.transform(corpus.X[:20]), word_landmarks.transform(corpus.X[:20])
    )


def test_project_simplex():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(200, 5))
    P = project_simplex(V)
    np.testing.assert_allclose(P.sum(1), 1.0)
    assert P.min() >= 0
    on = rng.dirichlet(np.ones(5), size=10)
    np.testing.assert_allclose(project_simplex(on), on, atol=1e-12)
    # Optimality: no random simplex point is closer than the projection.
    for v, p in zip(V[:20], P[:20]):
        others = rng.dirichlet(np.ones(5), size=500)
        assert np.linalg.norm(v - p) <= np.linalg.norm(v - others, axis=1).min() + 1e-12


def test_grid_search_chooses_by_contrastive_score_without_labels(corpus):
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(
        DirectNCEEmbedder(n_components=8, early_stopping=False, **FAST),
        {"max_epochs": [1, 10]},
        cv=2,
    ).fit(corpus.X[:600])
    assert search.best_params_ == {"max_epochs": 10}
    assert search.best_score_ > -np.log(2)


@pytest.mark.parametrize("cls, params", VARIANTS)
def test_a_transform_that_overflows_is_an_error_not_nan(corpus, cls, params):
    emb = cls(max_epochs=1, early_stopping=False, **params, **FAST).fit(corpus.X[:200])
    with torch.no_grad():
        for param in emb.net_.module_.parameters():
            param.fill_(float("nan"))
    with pytest.raises(ValueError, match="gave non-finite values for 7 of 7 sample"):
        emb.transform(corpus.X[:7])
