"""The document embedders' defaults: what they compute, and that they beat the baselines.

DirectNCEEmbedder: log(1 + count) x idf bags, a tied linear encoder started at the
spectral solution, an "auto" schedule, early stopping that counts the start as epoch 0
and ignores plateaus, rows of norm 3. LandmarkNCEEmbedder: the same model, its log-odds
against the landmarks standardised by column and scaled to rows of norm 10.
"""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import normalize
from skorch.history import History
from torch import nn

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce._callbacks import ChanceAwareEarlyStopping
from sknce.datasets import make_topic_corpus
from sknce.documents import recover_topic_posterior, split_documents
from sknce.documents._spectral import spectral_projection
from sknce.documents._split import normalize_bags, smooth_idf
from sknce.nn import MLP, BilinearScorer, LinearSkipEncoder


@pytest.fixture(scope="module")
def block():
    """4 topics, each uniform over its own 10 of 40 words."""
    return make_topic_corpus(
        1200, n_topics=4, n_words=40, topics="block", beta=0.1, mean_length=30, random_state=0
    )


@pytest.fixture(scope="module")
def overlapping():
    """5 overlapping topics over 500 words, label = top topic (the Section 7 protocol)."""
    return make_topic_corpus(
        1500, n_topics=5, n_words=500, alpha=0.5, beta=0.2, mean_length=50, random_state=0
    )


def probe(Z, y, n_draws=5, per_class=10) -> float:
    """Mean accuracy of LogisticRegression() on ``per_class`` labels, tested on the rest."""
    rng = np.random.default_rng(0)
    scores = []
    for _ in range(n_draws):
        labelled = np.concatenate(
            [rng.permutation(np.flatnonzero(y == k))[:per_class] for k in np.unique(y)]
        )
        test = np.setdiff1d(np.arange(len(y)), labelled)
        scores.append(LogisticRegression().fit(Z[labelled], y[labelled]).score(Z[test], y[test]))
    return float(np.mean(scores))


# --- the whole default pipeline -------------------------------------------------------
def test_default_pipeline_beats_tfidf_and_svd_on_a_planted_corpus(overlapping):
    """counts -> DirectNCEEmbedder() -> LogisticRegression(), fitted without labels on all."""
    X, y = overlapping.X, overlapping.target
    tfidf = TfidfTransformer().fit_transform(X)
    svd = make_pipeline(TfidfTransformer(), TruncatedSVD(100, random_state=0)).fit_transform(X)
    direct = DirectNCEEmbedder(random_state=0).fit_transform(X)
    baselines = {"tf-idf": probe(tfidf, y), "tf-idf+SVD": probe(svd, y)}
    assert probe(direct, y) > max(baselines.values()) + 0.01, baselines


# --- the spectral start -----------------------------------------------------------------
def test_spectral_projection_equals_the_dense_eigendecomposition(overlapping):
    X = overlapping.X[:600]
    idf = smooth_idf(X)

    def bags(h):
        return normalize_bags(h, "log1p-idf", idf)

    # The same halves (the first draws of the generator), the covariance formed densely.
    A, B = (bags(h).toarray().astype(np.float64) for h in split_documents(X, "both", 0))
    a, b = A.mean(0), B.mean(0)
    C = (A.T @ B + B.T @ A) / X.shape[0] - (np.outer(a, b) + np.outer(b, a))
    w, U = np.linalg.eigh(C)
    w, U = w[::-1][:6], U[:, ::-1][:, :6]
    assert w[0] > 0 and w[3] > 2 * w[4]  # 5 topics: 4 directions above the noise
    expected = U * np.sqrt(np.maximum(w, 0) / w[0])
    scale = np.abs(expected[:, 0]).max()

    def error(P, j):  # column j, up to its sign
        return min(np.abs(P[:, j] - expected[:, j]).max(), np.abs(P[:, j] + expected[:, j]).max())

    P = spectral_projection(X, 6, "both", bags, np.random.default_rng(0))
    assert P.shape == (500, 6) and P.dtype == np.float32
    # The default 4 passes: the topic directions exactly; in the noise, whose eigenvalues
    # nearly coincide, directions of (nearly) the same eigenvalue.
    assert max(error(P, j) for j in range(4)) < 0.01 * scale
    unit = P / np.linalg.norm(P, axis=0)
    rayleigh = np.einsum("ij,ik,kj->j", unit, C, unit)
    np.testing.assert_allclose(rayleigh[:4], w[:4], rtol=1e-3)
    np.testing.assert_allclose(rayleigh[4:], w[4:], rtol=0.03)
    # More passes converge to the dense eigenvectors, column by column.
    P = spectral_projection(X, 6, "both", bags, np.random.default_rng(0), n_iter=30)
    assert max(error(P, j) for j in range(6)) < 1e-3 * scale


def test_spectral_start_spans_the_planted_topics(block):
    X = block.X[:1000]
    idf = smooth_idf(X)
    P = spectral_projection(
        X, 3, "both", lambda h: normalize_bags(h, "log1p-idf", idf), np.random.default_rng(0)
    )
    # K = 4 topics: the K - 1 leading directions lie in the span of the block indicators.
    indicators = (block.topics > 0).T.astype(float)  # (40 words, 4 topics)
    Q = np.linalg.qr(indicators)[0]
    inside = Q @ (Q.T @ P)
    assert np.linalg.norm(P - inside) < 0.1 * np.linalg.norm(P)


def test_the_start_is_informative_and_early_stopping_keeps_it_when_no_epoch_improves(block):
    X = block.X[:600]
    # A weight decay this strong drags every weight to zero: each epoch is worse than the
    # start, so the fit stops after `patience` epochs and restores the start exactly.
    emb = DirectNCEEmbedder(
        n_components=4,
        patience=3,
        lr=0.01,
        optimizer_kwargs={"weight_decay": 100.0},
        random_state=0,
    ).fit(X)
    stopper = dict(emb.net_.callbacks_)["early_stopping"]
    assert stopper.initial_loss_ < 0.97 * np.log(2)  # epoch 0 already beats chance
    assert emb.n_iter_ == 3
    assert min(row["valid_loss"] for row in emb.history_) > stopper.initial_loss_
    seeds = emb.net_.seeds
    start = spectral_projection(X, 4, "both", emb._bags, seeds.numpy("init").spawn(1)[0])
    np.testing.assert_array_equal(emb.net_.module_.f1.linear.weight.detach().numpy(), start)


def test_epoch_0_is_evaluated_on_the_validation_pairs_of_every_epoch(block):
    # A learning rate too small to move the weights: epoch 1's validation loss is epoch 0's.
    emb = DirectNCEEmbedder(n_components=4, lr=1e-30, max_epochs=2, random_state=0)
    emb.fit(block.X[:400])
    stopper = dict(emb.net_.callbacks_)["early_stopping"]
    assert stopper.initial_loss_ == pytest.approx(emb.history_[0]["valid_loss"], rel=1e-6)


def test_an_epoch_improves_only_by_more_than_a_tenth_of_a_percent():
    """From the spectral start, early stopping ignores a plateau's slow drift."""

    class Net:
        verbose = 0
        module_ = nn.Linear(1, 1)

    # 0.04% lower per epoch, 0.08% after two: not an improvement on epoch 2.
    losses = [0.6, 0.59, 0.59 * (1 - 4e-4), 0.59 * (1 - 4e-4) ** 2]

    def run(stopper, patience):
        net = Net()
        net.history = History()
        stopper.on_train_begin(net)
        for epoch, loss in enumerate(losses, start=1):
            net.history.new_epoch()
            net.history.record("epoch", epoch)
            net.history.record("valid_loss", loss)
            try:
                stopper.on_epoch_end(net)
            except KeyboardInterrupt:  # skorch's signal to stop
                return epoch, stopper.best_epoch_
        return None, stopper.best_epoch_

    assert run(DirectNCEEmbedder(patience=2)._early_stopping(), 2) == (4, 2)
    # From a random start, skorch's default threshold (0.01%) takes each drift for progress.
    paper = DirectNCEEmbedder(patience=2, init="random")._early_stopping()
    assert run(paper, 2) == (None, 4)
    assert run(ChanceAwareEarlyStopping(patience=2, chance=np.log(2)), 2) == (None, 4)


# --- input, encoder, output -----------------------------------------------------------
def test_input_bags_linear_tied_encoder_and_output_rows_of_norm_3(block):
    X = block.X[:300]
    emb = DirectNCEEmbedder(n_components=5, max_epochs=2, random_state=0).fit(X)
    np.testing.assert_allclose(emb.idf_, TfidfTransformer().fit(X).idf_)
    scorer = emb.net_.module_
    assert scorer.tied and isinstance(scorer.f1, LinearSkipEncoder) and scorer.f1.branch is None
    W = scorer.f1.linear.weight.detach().numpy().astype(np.float64)
    bags = normalize(np.log1p(X.toarray()) * emb.idf_)
    Z = emb.transform(X)
    np.testing.assert_allclose(Z, 3 * normalize(bags @ W), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 3.0, rtol=1e-5)
    raw = emb.set_params(output="raw").transform(X)
    np.testing.assert_allclose(raw, bags @ W, rtol=1e-4, atol=1e-6)
    assert np.all(emb.transform(sp.csr_matrix((2, 40))) == 0)  # an empty document


@pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
def test_the_paper_setting_builds_two_mlps_on_term_frequencies(block):
    emb = DirectNCEEmbedder(
        n_components=6,
        bag="tf",
        init="random",
        tied=False,
        output="raw",
        hidden_layer_sizes=(16, 16),
        max_epochs=1,
        random_state=0,
    ).fit(block.X[:200])
    f1, f2 = emb.net_.module_.f1, emb.net_.module_.f2
    assert isinstance(f1, MLP) and isinstance(f2, MLP) and f1 is not f2
    assert not torch.equal(f1.input.weight, f2.input.weight)
    assert emb.n_components_ == 6


def test_linear_skip_encoder_starts_at_its_linear_map():
    W = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    x = torch.rand(4, 10)
    for hidden in [(), (8,), (8, 8)]:
        encoder = LinearSkipEncoder(10, 3, hidden, weight=W)
        torch.testing.assert_close(encoder(x), x @ torch.from_numpy(W))
        assert (encoder.branch is None) == (hidden == ())


def test_spectral_width_is_capped_by_the_documents_and_words(block):
    X = block.X[:12]
    assert DirectNCEEmbedder(max_epochs=1, random_state=0).fit(X).transform(X).shape == (12, 11)
    X = block.X[:200, :5]
    X = X[np.asarray(X.sum(1)).ravel() >= 2]
    assert DirectNCEEmbedder(max_epochs=1, random_state=0).fit(X).n_components_ == 5
    wide = DirectNCEEmbedder(n_components=20, init="random", max_epochs=1, random_state=0)
    assert wide.fit(X).n_components_ == 20


@pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
def test_a_user_encoder_gets_the_default_bags_and_two_copies():
    norms = []

    class Recorder(nn.Module):
        def __init__(self, n_features):
            super().__init__()
            self.linear = nn.Linear(n_features, 3)

        def forward(self, x):
            norms.append(torch.linalg.norm(x, dim=1))
            return self.linear(x)

    X = make_topic_corpus(100, n_topics=2, n_words=20, random_state=0).X
    emb = DirectNCEEmbedder(encoder=Recorder, max_epochs=1, random_state=0).fit(X)
    assert not emb.net_.module_.tied
    seen = torch.cat(norms)
    assert torch.all(((seen - 1).abs() < 1e-5) | (seen == 0))  # unit rows (or empty bags)


# --- the "auto" schedule ------------------------------------------------------------------
@pytest.mark.parametrize(
    "n, n_train, expected",
    [
        (1000, 900, (125, 50)),  # 8 steps per epoch
        (100, 90, (16, 67)),  # 6 steps per epoch
        (20, 18, (16, 200)),  # 1 step per epoch: at most 200 epochs
        (100_000, 90_000, (256, 5)),  # 352 steps per epoch: at least 5 epochs
    ],
)
def test_auto_batch_size_and_epochs(n, n_train, expected):
    assert DirectNCEEmbedder()._schedule(n, n_train, continues=False) == expected


def test_a_fit_uses_the_auto_schedule(block):
    emb = DirectNCEEmbedder(n_components=4, random_state=0).fit(block.X[:1000])
    assert (emb.net_.batch_size, emb.net_.max_epochs) == (125, 50)
    assert emb.n_iter_ <= 50
    emb.set_params(warm_start=True, max_epochs=2).fit(block.X[:1000])
    assert emb.net_.batch_size == 125 and emb.n_iter_ <= 52


# --- idf over streams and partial fits ------------------------------------------------------
def test_idf_counts_every_chunk_of_a_stream_and_the_first_partial_fit(block):
    X = block.X[:600]
    streamed = DirectNCEEmbedder(n_components=4, max_epochs=1, random_state=0)
    streamed.fit([X[:200], X[200:400], X[400:]])
    np.testing.assert_allclose(streamed.idf_, smooth_idf(X))
    online = DirectNCEEmbedder(n_components=4, random_state=0).partial_fit(X[:300])
    np.testing.assert_allclose(online.idf_, smooth_idf(X[:300]))
    online.partial_fit(X[300:])
    np.testing.assert_allclose(online.idf_, smooth_idf(X[:300]))


# --- LandmarkNCE: the direct model's scorer against landmarks, normalised log-odds --------
def test_landmark_default_pipeline_beats_tfidf_and_svd_on_a_planted_corpus(overlapping):
    """counts -> LandmarkNCEEmbedder() -> LogisticRegression(), fitted without labels on all."""
    X, y = overlapping.X, overlapping.target
    tfidf = TfidfTransformer().fit_transform(X)
    svd = make_pipeline(TfidfTransformer(), TruncatedSVD(100, random_state=0)).fit_transform(X)
    landmark = LandmarkNCEEmbedder(random_state=0).fit_transform(X)
    baselines = {"tf-idf": probe(tfidf, y), "tf-idf+SVD": probe(svd, y)}
    assert probe(landmark, y) > max(baselines.values()) + 0.01, baselines


def test_landmark_defaults_train_the_direct_model_and_take_its_inner_products(block):
    X = block.X[:600]
    emb = LandmarkNCEEmbedder(n_landmarks=30, random_state=0).fit(X)
    scorer = emb.net_.module_
    assert isinstance(scorer, BilinearScorer) and scorer.tied
    assert isinstance(scorer.f1, LinearSkipEncoder) and scorer.f1.branch is None
    assert (emb.net_.batch_size, emb.net_.max_epochs, emb.n_components_) == (75, 50, 40)
    # The same seed: the same spectral start, pairs and validation split as DirectNCE.
    direct = DirectNCEEmbedder(output="raw", random_state=0).fit(X)
    log_odds = emb.set_params(output="log-odds").transform(X)
    expected = direct.transform(X) @ direct.transform(emb.landmarks_).T
    np.testing.assert_allclose(log_odds, expected, rtol=1e-4, atol=1e-4)


def test_landmark_output_standardises_columns_then_scales_rows_to_norm_10(block):
    X = block.X[:600]
    emb = LandmarkNCEEmbedder(n_landmarks=30, random_state=0).fit(X)
    Z = emb.transform(X)  # fewer than 1000: all are reference rows
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 10.0, rtol=1e-5)
    standardized = copy.copy(emb).set_params(output="standardized").transform(X)
    np.testing.assert_allclose(standardized.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(standardized.std(0), 1.0, rtol=1e-4)
    np.testing.assert_allclose(Z, 10 * normalize(standardized), rtol=1e-5, atol=1e-6)
    log_odds = copy.copy(emb).set_params(output="log-odds").transform(X)
    np.testing.assert_allclose(emb.output_mean_, log_odds.mean(0), rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def word_landmarks(block):
    """The paper's network of the pair, with single-word landmarks (Section 6)."""
    return LandmarkNCEEmbedder(
        n_landmarks=40,
        landmarks="words",
        scorer="pair",
        split="word",
        bag="tf",
        hidden_layer_sizes=(32,),
        lr=3e-3,
        max_epochs=10,
        early_stopping=False,
        random_state=0,
    ).fit(block.X[:800])


def test_recover_topic_posterior_reads_exp_f_whatever_the_output(word_landmarks, block):
    X = block.X[800:]
    args = (X, block.topics, block.word_probs)
    etas = [
        recover_topic_posterior(copy.copy(word_landmarks).set_params(output=output), *args)
        for output in ("normalized", "standardized", "log-odds", "exp")
    ]
    for eta in etas[:3]:
        np.testing.assert_allclose(eta, etas[3])
    assert word_landmarks.output == "normalized"  # the caller's estimator is unchanged
    top = (etas[0].argmax(1) == block.posterior_mean[800:].argmax(1)).mean()
    assert top > 0.85  # chance: 0.25
