"""ACEWord2Vec's gensim-style options: CBOW, score, weighted transform, partial_fit, threads."""

import threading
import warnings

import numpy as np
import pytest
import torch
from joblib import parallel_config
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import Callback
from test_words_ace import FAST, _group_purity, _planted

from sknce import ACEWord2Vec
from sknce.words import RULE_DISCARD, RULE_KEEP


# --- CBOW ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params",
    [
        dict(adversarial=False),
        dict(adversarial=True, adversarial_warmup=0.0),
        dict(adversarial=True, optimizer=torch.optim.Adam, lr=0.05, batch_size=128),
        dict(adversarial=False, objective="nce", n_jobs=2),
    ],
    ids=["nce", "ace", "ace_autograd", "nce_objective_two_threads"],
)
def test_cbow_learns_the_planted_groups(params):
    docs, _ = _planted()
    model = ACEWord2Vec(architecture="cbow", max_epochs=15, **{**FAST, **params}).fit(docs)
    assert _group_purity(model) > 0.9
    assert model.history_[-1]["train_loss"] < model.history_[0]["train_loss"]


@pytest.mark.parametrize("architecture, width", [("cbow", 1.0), ("skipgram", 0.5)])
def test_input_vectors_start_uniform_in_gensims_range_for_cbow(architecture, width):
    # A word alone in its document is never a context word (nor a skip-gram centre with
    # a pair): its input vector keeps its start. CBOW starts in gensim 4's [-1/d, 1/d),
    # skip-gram in word2vec's [-0.5/d, 0.5/d], new words of a vocabulary update alike.
    dim = 50
    docs = _planted()[0]
    model = ACEWord2Vec(architecture=architecture, max_epochs=1, **{**FAST, "n_components": dim})
    model.fit(docs + [["lonely"]])
    model.partial_fit(docs + [["newcomer"]], update_vocabulary=True)
    for word in ("lonely", "newcomer"):
        start = np.abs(model.wv_[word])
        # 50 uniform draws reach above 3/4 of the half-width (all below: 0.75^50)
        assert 0.75 * width / dim < start.max() <= width / dim


def test_cbow_batches_count_centre_words_and_differ_from_skip_gram():
    docs, _ = _planted()
    cbow = ACEWord2Vec(architecture="cbow", max_epochs=1, **FAST).fit(docs)
    skipgram = ACEWord2Vec(max_epochs=1, **FAST).fit(docs)
    examples = [
        sum(b["train_batch_size"] for b in m.net_.history[0]["batches"]) for m in (cbow, skipgram)
    ]
    n_tokens = sum(len(d) for d in docs)
    assert examples[0] == n_tokens  # every centre word has a context in these documents
    assert examples[1] > 5 * n_tokens  # about (window + 1) pairs per centre word
    assert not np.allclose(cbow.vectors_, skipgram.vectors_)


# --- score and grid search without labels -----------------------------------------------
def test_score_is_minus_the_held_out_loss_and_repeats():
    docs, _ = _planted(n_docs=120)
    train, held_out = docs[:90], docs[90:]
    untrained = ACEWord2Vec(max_epochs=1, lr=1e-6, adversarial=False, **FAST).fit(train)
    trained = ACEWord2Vec(max_epochs=10, adversarial=False, **FAST).fit(train)
    assert trained.score(held_out) > untrained.score(held_out)
    # D = 1/2 everywhere: log 2 per target, the context and the K = 5 negatives that are
    # not accidental hits (about 1 in 10 on 18 words)
    assert -6 * np.log(2) < untrained.score(held_out) < -5 * np.log(2)
    assert trained.score(iter(held_out)) == trained.score(held_out)  # read once
    results = [None] * 4

    def run(i):
        results[i] = trained.score(held_out)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(results) == {trained.score(held_out)}
    with pytest.raises(ValueError, match=r"no \(centre, context\) pair"):
        trained.score([["a0"], ["zebra", "b1"]])


def test_grid_search_selects_by_score_without_labels():
    docs, _ = _planted(n_docs=120)
    search = GridSearchCV(
        ACEWord2Vec(adversarial=False, **FAST), {"max_epochs": [1, 10], "lr": [1e-6, 0.025]}, cv=3
    ).fit(docs)
    assert search.best_params_ == {"max_epochs": 10, "lr": 0.025}
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


# --- most_similar ------------------------------------------------------------------------
def test_most_similar_takes_gensims_positive_negative_and_restrict_vocab():
    model = ACEWord2Vec(max_epochs=10, adversarial=False, **FAST).fit(_planted()[0])
    assert model.wv_.most_similar("a0", topn=3) == model.wv_.most_similar(positive=["a0"], topn=3)
    analogy = model.wv_.most_similar(positive=["a0", "b1"], negative=["a2"], topn=5)
    assert analogy == model.wv_.most_similar(positive=["a0", "b1"], negative=["a2"], topn=5)
    assert analogy != model.wv_.most_similar(positive=["a0", "b1"], topn=5)
    top = set(model.vocabulary_) - {w for w, i in model.vocabulary_.items() if i >= 4}
    assert {w for w, _ in model.wv_.most_similar("a0", topn=3, restrict_vocab=4)} <= top
    assert model.wv_.most_similar("a0", topn=None).shape == (len(model.vocabulary_),)


# --- weighted transform ---------------------------------------------------------------
def test_tfidf_transform_is_the_idf_weighted_mean():
    docs, _ = _planted()
    docs[0] = docs[0] + ["rare"]
    model = ACEWord2Vec(max_epochs=1, weighting="tfidf", **FAST).fit(docs)
    n = len(docs)
    df = {w: sum(w in set(d) for d in docs) for w in model.vocabulary_}
    idf = {w: np.log((1 + n) / (1 + f)) + 1 for w, f in df.items()}
    doc = ["rare", "a0", "a0", "zebra"]
    weights = np.array([idf[w] for w in doc[:3]])
    expected = weights @ model.wv_[doc[:3]] / weights.sum()
    np.testing.assert_allclose(model.transform([doc])[0], expected, rtol=1e-5)
    assert idf["rare"] > idf["a0"]
    np.testing.assert_allclose(model.idf_[model.vocabulary_["rare"]], idf["rare"], rtol=1e-6)


def test_sif_transform_weights_words_and_removes_the_first_component():
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=3, weighting="sif", sif_a=0.01, **FAST).fit(docs)
    p = model.counts_ / model.counts_.sum()
    weights = 0.01 / (0.01 + p)

    def weighted(doc):
        ids = [model.vocabulary_[w] for w in doc if w in model.vocabulary_]
        return weights[ids] @ model.vectors_[ids] / len(ids)

    matrix = np.vstack([weighted(d) for d in docs])
    u = np.linalg.svd(matrix.astype(np.float64), full_matrices=False)[2][0]
    assert abs(abs(u @ model.sif_component_) - 1) < 1e-4
    doc = ["a0", "b2", "zebra", "a0"]
    v = weighted(doc)
    np.testing.assert_allclose(model.transform([doc])[0], v - (v @ u) * u, atol=1e-6)
    out = model.transform(docs[:5])
    np.testing.assert_allclose(out @ model.sif_component_, 0, atol=1e-6)
    np.testing.assert_array_equal(model.transform([docs[3]])[0], out[3])


def test_changing_weighting_without_refitting_is_a_clear_error():
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(_planted()[0])
    model.set_params(weighting="sif")
    with pytest.raises(ValueError, match="Fit again"):
        model.transform([["a0"]])


# --- vocabulary options through the estimator -----------------------------------------
def test_max_final_vocab_and_trim_rule_reach_the_vocabulary():
    docs, _ = _planted()
    docs = docs + [["once"]]

    def rule(word, count, min_count):
        return RULE_KEEP if word == "once" else RULE_DISCARD if word == "a0" else 0

    model = ACEWord2Vec(max_epochs=1, trim_rule=rule, **FAST).fit(docs)
    assert "once" in model.vocabulary_ and "a0" not in model.vocabulary_
    small = ACEWord2Vec(max_epochs=1, max_final_vocab=6, **FAST).fit(docs)
    assert len(small.vocabulary_) <= 6


def test_shrink_windows_false_trains_on_full_windows():
    docs, _ = _planted()
    pairs = {}
    for shrink in (True, False):
        model = ACEWord2Vec(max_epochs=1, window=3, shrink_windows=shrink, **FAST).fit(docs)
        pairs[shrink] = sum(b["train_batch_size"] for b in model.net_.history[0]["batches"])
    per_doc = sum(2 * 3 * 15 - 2 * (3 + 2 + 1) for _ in docs)  # full windows, cut at the ends
    assert pairs[False] == per_doc > pairs[True]


# --- threads ------------------------------------------------------------------------
def test_n_jobs_none_is_one_thread_unless_joblib_says_otherwise():
    docs, _ = _planted()
    params = {key: value for key, value in FAST.items() if key != "n_jobs"}
    model = ACEWord2Vec(max_epochs=1, **params)
    assert model.n_jobs is None
    assert model.fit(docs).net_.n_jobs == 1
    with parallel_config(n_jobs=2):
        assert model.fit(docs).net_.n_jobs == 2
    assert model.set_params(n_jobs=-1).fit(docs).net_.n_jobs >= 1


# --- partial_fit ------------------------------------------------------------------------
@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
@pytest.mark.parametrize("adversarial", [False, True])
def test_max_epochs_partial_fits_equal_a_fit(architecture, adversarial):
    """The n-th pass takes fit's n-th epoch: rate, warm-up and random draws."""
    docs, _ = _planted()
    params = dict(max_epochs=3, architecture=architecture, adversarial=adversarial, **FAST)
    params["adversarial_warmup"] = 0.4  # one epoch
    whole = ACEWord2Vec(**params).fit(docs)
    partial = ACEWord2Vec(**params)
    for _ in range(3):
        partial.partial_fit(docs)
    assert partial.n_iter_ == 3
    np.testing.assert_array_equal(partial.vectors_, whole.vectors_)
    for a, b in zip(partial.net_.module_.parameters(), whole.net_.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_partial_fit_streams_a_generator_and_ignores_new_words():
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=5, adversarial=False, **FAST).partial_fit(docs)
    before = dict(model.vocabulary_)
    model.partial_fit(doc + ["newword"] for doc in docs)
    assert model.vocabulary_ == before and model.n_iter_ == 2
    with pytest.raises(TypeError, match="one-shot"):
        model.partial_fit((d for d in docs), update_vocabulary=True)


def _new_group_docs(n_docs=60, seed=3):
    rng = np.random.default_rng(seed)
    new = [f"d{i}" for i in range(6)]
    return [list(rng.choice(new, size=15)) for _ in range(n_docs)], new


@pytest.mark.parametrize("optimizer", [torch.optim.SGD, torch.optim.Adam])
def test_update_vocabulary_appends_new_words_and_trains_them(optimizer):
    docs, _ = _planted()
    params = dict(max_epochs=10, adversarial=True, adversarial_warmup=0.0, **FAST)
    if optimizer is torch.optim.Adam:
        params.update(optimizer=torch.optim.Adam, lr=0.05, batch_size=256)
    model = ACEWord2Vec(**params)
    for _ in range(8):
        model.partial_fit(docs)
    known = model.vectors_.copy()
    counts = model.counts_.copy()
    new_docs, new_words = _new_group_docs()
    mixed = new_docs + docs[:10]
    model.partial_fit(mixed, update_vocabulary=True)
    n_known = len(known)
    assert list(model.vocabulary_)[n_known:] == list(
        dict.fromkeys(w for d in mixed for w in d if w in new_words)
    )
    assert model.vectors_.shape == (n_known + 6, 10)
    added = {w: sum(d.count(w) for d in docs[:10]) for w in model.wv_.index_to_key[:n_known]}
    np.testing.assert_array_equal(model.counts_[:n_known], counts + np.array(list(added.values())))
    assert model.noise_.n_categories == n_known + 6
    assert model.net_.module_.generator.output_embeddings.weight.shape[0] == n_known + 6
    if optimizer is torch.optim.Adam:
        state = model.net_.optimizer_.state[
            model.net_.module_.discriminator.input_embeddings.weight
        ]
        assert state["exp_avg"].shape == (n_known + 6, 10)
    # the known words moved only by this pass's training
    assert np.abs(model.vectors_[:n_known] - known).max() < np.abs(known).max()
    for _ in range(6):
        model.partial_fit(mixed)
    hits = [n[0] in new_words for w in new_words for n in model.wv_.most_similar(w, topn=4)]
    assert np.mean(hits) > 0.9
    assert _group_purity(model) > 0.9


class _FailOnSecondTrain(Callback):
    def initialize(self):
        self.calls_ = 0
        return self

    def on_train_begin(self, net, **kwargs):
        self.calls_ += 1
        if self.calls_ == 2:
            raise RuntimeError("interrupted")


def test_a_failed_vocabulary_update_leaves_the_model_as_it_was():
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=3, callbacks=[_FailOnSecondTrain()], **FAST).partial_fit(docs)
    vectors, vocabulary = model.vectors_.copy(), dict(model.vocabulary_)
    with pytest.raises(RuntimeError, match="interrupted"):
        model.partial_fit(_new_group_docs()[0], update_vocabulary=True)
    assert model.vocabulary_ == vocabulary
    np.testing.assert_array_equal(model.vectors_, vectors)
    for embedding in (
        model.net_.module_.discriminator.input_embeddings,
        model.net_.module_.generator.output_embeddings,
    ):
        assert embedding.weight.shape[0] == len(vocabulary)
    assert model.net_.noise.n_categories == len(vocabulary)
    model.partial_fit(docs)  # and it still trains
    assert model.n_iter_ == 2


# --- issue 15: words --------------------------------------------------------------------
def test_unhashable_token_deep_in_a_document_names_the_document():
    docs, _ = _planted()
    bad = docs[:5] + [docs[5][:7] + [["nested"]] + docs[5][7:]]
    with pytest.raises(TypeError, match="document 5 of X has a list token at position 7"):
        ACEWord2Vec(max_epochs=1, **FAST).fit(bad)
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(docs)
    with pytest.raises(TypeError, match="document 5 of X has a list token"):
        model.transform(bad)


def test_init_vectors_without_a_common_word_warn():
    docs, _ = _planted()
    init = {"zebra": np.ones(10), "yak": np.zeros(10)}
    with pytest.warns(UserWarning, match="none of the 18 vocabulary words is in init_vectors"):
        model = ACEWord2Vec(max_epochs=1, init_vectors=init, **FAST).fit(docs)
    assert model.n_init_vectors_ == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ACEWord2Vec(max_epochs=1, init_vectors={"a0": np.ones(10)}, **FAST).fit(docs)


def test_a_wrapper_over_an_exhausted_generator_is_diagnosed():
    docs, _ = _planted()

    class Wrapper:
        def __init__(self, generator):
            self.generator = generator

        def __iter__(self):
            return iter(self.generator)

    for params in ({}, {"early_stopping": True}):
        with pytest.raises(ValueError, match="the second pass over X yielded nothing"):
            ACEWord2Vec(max_epochs=1, **FAST, **params).fit(Wrapper(d for d in docs))
