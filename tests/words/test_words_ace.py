"""ACEWord2Vec: learning planted structure, the sklearn API, input errors and options."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)
from skorch.callbacks import Callback

from sknce import ACEWord2Vec
from sknce.words import WordVectors

GROUPS = [[f"{g}{i}" for i in range(6)] for g in "abc"]


def _planted(n_docs=90, length=15, seed=0):
    """Documents each drawn from one group of words: words of a group co-occur."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(GROUPS), size=n_docs)
    docs = [list(rng.choice(GROUPS[g], size=length)) for g in labels]
    return docs, labels


FAST = dict(n_components=10, min_count=1, sample=0, n_jobs=1, random_state=0)


def _group_purity(model):
    """Share of each word's 5 nearest neighbours that are in its own group."""
    hits = []
    for group in GROUPS:
        for word in group:
            hits += [n[0] in group for n in model.wv_.most_similar(word, topn=5)]
    return np.mean(hits)


@pytest.mark.parametrize(
    "params",
    [
        dict(adversarial=False),
        dict(adversarial=False, objective="nce"),
        dict(adversarial=True),
        dict(adversarial=False, optimizer=torch.optim.Adam, lr=0.05, batch_size=256),
    ],
    ids=["negative_sampling", "nce", "ace", "torch_adam"],
)
def test_words_of_a_planted_group_are_each_others_neighbours(params):
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=15, **{**FAST, **params}).fit(docs)
    assert _group_purity(model) > 0.9
    assert model.history_[-1]["train_loss"] < model.history_[0]["train_loss"]


def test_pipeline_with_a_classifier_on_token_lists():
    docs, labels = _planted(seed=1)
    pipe = Pipeline(
        [
            ("embed", ACEWord2Vec(max_epochs=10, adversarial=False, **FAST)),
            ("clf", LogisticRegression(max_iter=500)),
        ]
    )
    assert cross_val_score(pipe, docs, labels, cv=3).mean() > 0.9


def test_fit_is_reproducible_with_random_state():
    docs, _ = _planted()
    for adversarial in (False, True):
        model = ACEWord2Vec(max_epochs=2, adversarial=adversarial, **FAST)
        first = model.fit(docs).vectors_.copy()
        np.testing.assert_array_equal(clone(model).fit(docs).vectors_, first)
    other = ACEWord2Vec(max_epochs=2, **{**FAST, "random_state": 1}).fit(docs)
    assert not np.allclose(other.vectors_, first)


def test_two_threads_train_as_well_as_one():
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=15, adversarial=False, **{**FAST, "n_jobs": 2}).fit(docs)
    assert _group_purity(model) > 0.9


def test_transform_is_the_mean_word_vector():
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(docs)
    out = model.transform([["a0", "b1", "unknown"], ["unknown"], []])
    assert out.shape == (3, 10) and out.dtype == np.float32
    np.testing.assert_allclose(out[0], (model.wv_["a0"] + model.wv_["b1"]) / 2, rtol=1e-6)
    np.testing.assert_array_equal(out[1:], 0.0)
    # transform of one document does not depend on the others
    np.testing.assert_array_equal(model.transform([docs[3]])[0], model.transform(docs)[3])
    assert list(model.get_feature_names_out()[:2]) == ["aceword2vec0", "aceword2vec1"]


def test_strings_are_tokenised_like_count_vectorizer_and_a_tokenizer_is_used():
    texts = ["The Cat sat; the cat ran.", "A dog, the dog!"] * 10
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(texts)
    assert {"the", "cat", "dog", "sat"} <= set(model.vocabulary_) and "a" not in model.vocabulary_
    by_chars = ACEWord2Vec(max_epochs=1, tokenizer=list, **FAST).fit(["abc", "cab"])
    assert set(by_chars.vocabulary_) == {"a", "b", "c"}


def test_one_shot_generator_is_a_type_error():
    docs, _ = _planted()
    with pytest.raises(TypeError, match="restart"):
        ACEWord2Vec(**FAST).fit(doc for doc in docs)


def test_restartable_corpus_object_streams():
    docs, _ = _planted()

    class Corpus:
        passes = 0

        def __iter__(self):
            Corpus.passes += 1
            yield from docs

    model = ACEWord2Vec(max_epochs=3, **FAST).fit(Corpus())
    assert Corpus.passes == 1 + 3  # the vocabulary, then one pass per epoch
    assert len(model.vocabulary_) == 18


def test_empty_corpus_or_vocabulary_is_a_value_error():
    with pytest.raises(ValueError, match="empty|no document"):
        ACEWord2Vec(**FAST).fit([])
    with pytest.raises(ValueError, match="min_count"):
        ACEWord2Vec(**{**FAST, "min_count": 100}).fit([["a", "b"]] * 3)
    with pytest.raises(ValueError, match="no \\(centre, context\\) pair"):
        ACEWord2Vec(**FAST).fit([["a"], ["b"]])


@pytest.mark.parametrize("adversarial", [False, True])
def test_divergence_is_a_clear_value_error(adversarial):
    """A learning rate that blows the vectors up stops the fit with the fix, not a NaN model."""
    model = ACEWord2Vec(max_epochs=2, lr=1e4, adversarial=adversarial, **FAST)
    with pytest.raises(ValueError, match="training diverged in epoch 1.*Lower lr"):
        model.fit(_planted()[0])


def test_unknown_word_is_a_key_error():
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(_planted()[0])
    with pytest.raises(KeyError, match="zebra"):
        model.wv_.most_similar("zebra")
    with pytest.raises(KeyError, match="zebra"):
        model.wv_.similarity("a0", "zebra")


def test_pickle_round_trip_keeps_queries():
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(_planted()[0])
    again = pickle.loads(pickle.dumps(model))
    assert again.wv_.most_similar("a0", topn=3) == model.wv_.most_similar("a0", topn=3)
    np.testing.assert_array_equal(again.vectors_, model.vectors_)


def _pretrained():
    rng = np.random.default_rng(5)
    words = [w for g in GROUPS for w in g][:10] + ["absent"]
    return words, rng.normal(size=(len(words), 10)).astype(np.float32)


@pytest.mark.parametrize("form", ["dict", "pair", "path", "binary_path"])
def test_init_vectors_are_the_starting_point(form, tmp_path):
    words, matrix = _pretrained()
    if form == "dict":
        init = dict(zip(words, matrix))
    elif form == "pair":
        init = (words, matrix)
    else:
        init = tmp_path / "vectors.bin"
        WordVectors(words, matrix).save_word2vec_format(init, binary=form == "binary_path")
    # a vanishing learning rate: the fitted vectors are the starting point
    model = ACEWord2Vec(max_epochs=1, lr=1e-9, init_vectors=init, **FAST).fit(_planted()[0])
    assert model.n_init_vectors_ == 10
    for word, row in zip(words[:10], matrix):
        np.testing.assert_allclose(model.wv_[word], row, atol=1e-5)
    untouched = [w for w in model.vocabulary_ if w not in words]
    assert np.abs(model.wv_[untouched[0]]).max() <= 0.5 / 10


def test_init_vectors_of_another_dimension_is_a_value_error():
    words, matrix = _pretrained()
    with pytest.raises(ValueError, match="n_components"):
        ACEWord2Vec(**{**FAST, "n_components": 4}, init_vectors=(words, matrix)).fit(_planted()[0])


def test_saved_vectors_load_in_gensim(tmp_path):
    gensim = pytest.importorskip("gensim")
    model = ACEWord2Vec(max_epochs=1, **FAST).fit(_planted()[0])
    for binary in (False, True):
        path = tmp_path / f"v{binary}"
        model.wv_.save_word2vec_format(path, binary=binary)
        kv = gensim.models.KeyedVectors.load_word2vec_format(path, binary=binary)
        np.testing.assert_allclose(kv["b3"], model.wv_["b3"], rtol=1e-5)


def test_evaluate_word_pairs_scores_planted_similarity():
    model = ACEWord2Vec(max_epochs=15, adversarial=False, **FAST).fit(_planted()[0])
    pairs = [
        ("a0", "a1", 9.0),
        ("b2", "b3", 9.0),
        ("c0", "c4", 9.0),
        ("a0", "b1", 1.0),
        ("b2", "c3", 1.0),
        ("c1", "a5", 1.0),
        ("b0", "zebra", 5.0),
    ]
    _, spearman, oov = model.wv_.evaluate_word_pairs(pairs)
    # within-group pairs score 9, across groups 1: a perfect ranking has rho = 0.88
    assert spearman[0] > 0.85
    assert oov == pytest.approx(100 / 7)


def test_early_stopping_monitors_held_out_documents():
    docs, _ = _planted(n_docs=120)
    model = ACEWord2Vec(
        max_epochs=30, early_stopping=True, patience=2, validation_fraction=0.2, **FAST
    ).fit(docs)
    losses = [row["valid_loss"] for row in model.history_]
    assert all(np.isfinite(losses))
    assert model.n_iter_ < 30  # the planted structure is learnt well before 30 epochs
    # At least one document is held out; a corpus of one leaves none to train on.
    small = ACEWord2Vec(early_stopping=True, validation_fraction=0.01, **FAST).fit(docs[:3])
    assert all("valid_loss" in row for row in small.history_)
    with pytest.warns(UserWarning, match="early stopping is off for this fit"):
        ACEWord2Vec(early_stopping=True, **FAST).fit(docs[:1])


@pytest.mark.parametrize(
    "check",
    [
        check_parameters_default_constructible,
        check_no_attributes_set_in_init,
        check_get_params_invariance,
        check_set_params,
    ],
)
def test_api_checks_that_need_no_numeric_data(check):
    check("ACEWord2Vec", ACEWord2Vec())


def test_tags_declare_token_input():
    tags = ACEWord2Vec().__sklearn_tags__()
    assert tags.input_tags.string and not tags.input_tags.two_d_array


def test_set_output_pandas():
    pd = pytest.importorskip("pandas")
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=1, **FAST).set_output(transform="pandas").fit(docs)
    frame = model.transform(docs[:4])
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(model.get_feature_names_out())
    np.testing.assert_allclose(
        frame.to_numpy(), model.set_output(transform="default").transform(docs[:4])
    )


def _own_group_mass(model):
    """Mean probability the generator gives to the centre word's own group."""
    gen = model.net_.module_.generator
    words = [w for g in GROUPS for w in g]
    ids = torch.tensor([model.vocabulary_[w] for w in words])
    with torch.no_grad():
        probs = torch.softmax(gen.logits(ids, torch.arange(len(words))), dim=1).numpy()
    mass = []
    for row, word in zip(probs, words):
        group = next(g for g in GROUPS if word in g)
        mass.append(sum(row[model.vocabulary_[w]] for w in group))
    return float(np.mean(mass))


def test_generator_learns_the_hard_negatives_of_a_planted_corpus():
    """The discriminator scores a word's own group high: the generator moves there.

    The own group holds a third of the noise's mass. With false-negative masking,
    those words (true contexts within the batch) earn the generator nothing, and
    its mass moves to the other groups' words instead. The generator collapses onto
    a few words in each fit, so the masses are averaged over four seeds.
    """
    docs, _ = _planted()
    # The former defaults (no warm-up, λ = 0.5): after the default warm-up (3 of 15
    # epochs) the generator has not left the noise's proposal by the end on this
    # corpus (own-group mass 1/3 with and without masking).
    params = dict(max_epochs=15, generator_lr=0.01, adversarial_warmup=0.0, noise_mixture=0.5)
    params.update({key: value for key, value in FAST.items() if key != "random_state"})
    mass = {}
    for masked in (False, True):
        mass[masked] = np.mean(
            [
                _own_group_mass(
                    ACEWord2Vec(mask_false_negatives=masked, random_state=seed, **params).fit(docs)
                )
                for seed in range(4)
            ]
        )
    assert mass[False] > 0.55
    assert mass[True] < 0.2


def test_warmup_epochs_train_exactly_as_nce():
    """During the ``adversarial_warmup`` epochs the negatives come from the noise alone."""
    docs, _ = _planted()
    nce = ACEWord2Vec(max_epochs=3, adversarial=False, **FAST).fit(docs)
    warm = ACEWord2Vec(max_epochs=3, adversarial_warmup=0.7, **FAST).fit(docs)  # 2 epochs
    ace = ACEWord2Vec(max_epochs=3, **FAST).fit(docs)
    losses = [[row["train_loss"] for row in m.history_] for m in (nce, warm, ace)]
    assert losses[1][:2] == losses[0][:2]
    assert losses[1][2] != losses[0][2] and losses[2][0] != losses[0][0]
    assert warm.net_.module_.generator.output_embeddings.weight.any()  # trained in epoch 3


def test_generator_on_discriminator_vectors_gives_a_rare_word_its_hard_negatives():
    """A word seen once is proposed its group's words, as the group's frequent words are.

    Without false-negative masking a word's own group is where the discriminator is
    wrong; with ``generator_centre="discriminator"`` the rare word's proposal is
    conditioned on its (trained) discriminator vector, not on a centre vector of
    its own that REINFORCE has rarely updated.
    """
    docs, labels = _planted()
    first_a = int(np.flatnonzero(labels == 0)[0])
    docs[first_a] = docs[first_a] + ["arare"]
    model = ACEWord2Vec(
        max_epochs=15,
        generator_centre="discriminator",
        mask_false_negatives=False,
        adversarial_warmup=0.0,
        noise_mixture=0.5,
        **FAST,
    ).fit(docs)
    generator = model.net_.module_.generator
    assert not hasattr(generator, "input_embeddings")
    ids = torch.tensor([model.vocabulary_[w] for w in ("arare", "a0")])
    with torch.no_grad():
        probs = torch.softmax(generator.logits(ids, torch.arange(len(model.vocabulary_))), 1)
    own_group = [model.vocabulary_[w] for w in GROUPS[0]]
    assert probs[:, own_group].sum(dim=1).min() > 0.8  # noise share: 1/3


class _BatchLog(Callback):
    """Order of the batch events, the learning rate of each batch and its loss."""

    def initialize(self):
        self.events_, self.lrs_, self.losses_ = [], [], []
        return self

    def on_batch_begin(self, net, batch=None, training=False, **kwargs):
        if training:
            self.events_.append(("begin", id(batch)))
            self.lrs_.append(net.optimizer_.param_groups[0]["lr"])

    def on_batch_end(self, net, batch=None, training=False, loss=None, **kwargs):
        if training:
            self.events_.append(("end", id(batch)))
            self.losses_.append(float(loss))


@pytest.mark.parametrize("adversarial", [False, True])
def test_pipelined_threads_keep_each_batch_its_rate_loss_and_history_row(adversarial):
    """With two kernel threads batch b + 1 begins before b ends; nothing else changes."""
    docs, _ = _planted(n_docs=200)
    logs = {}
    for n_jobs in (1, 2):
        log = _BatchLog()
        model = ACEWord2Vec(
            max_epochs=3,
            batch_size=500,
            adversarial=adversarial,
            adversarial_warmup=0.0,
            callbacks=[log],
            **{**FAST, "n_jobs": n_jobs},
        ).fit(docs)
        logs[n_jobs] = log
        rows = [
            b for row in model.history_ for b in model.net_.history[row["epoch"] - 1]["batches"]
        ]
        assert len(rows) == len(log.losses_) > 6
        np.testing.assert_allclose([b["train_loss"] for b in rows], log.losses_, rtol=1e-6)
        assert all(np.isfinite(log.losses_))
    begins = [i for i, (kind, _) in enumerate(logs[2].events_) if kind == "begin"]
    ends = [i for i, (kind, _) in enumerate(logs[2].events_) if kind == "end"]
    assert [logs[2].events_[i][1] for i in begins] == [logs[2].events_[i][1] for i in ends]
    assert all(b < e for b, e in zip(begins, ends))
    assert any(begins[k + 1] < ends[k] for k in range(len(ends) - 1))  # overlapped
    assert logs[2].lrs_ == pytest.approx(logs[1].lrs_)  # the same schedule, batch by batch
    # Hogwild changes the numbers a little, not the training
    assert np.mean(logs[2].losses_[-5:]) == pytest.approx(np.mean(logs[1].losses_[-5:]), rel=0.1)
