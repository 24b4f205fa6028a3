"""ACEWord2Vec(subwords=True): the subword kernel against autograd, planted morphology, files."""

import pickle

import numpy as np
import pytest
import torch

from sknce import ACEWord2Vec
from sknce.losses import negative_sampling
from sknce.nn import SubwordSkipGram
from sknce.words import SubwordVectors, load_facebook_vectors, save_facebook_model
from sknce.words._kernels import sgd_cbow
from sknce.words._subword_kernels import expand_bags, input_bags, sgd_subword_pairs
from sknce.words._subword_model import SubwordKernelStep
from sknce.words._subwords import (
    AUTO_BUCKET_MAX,
    AUTO_ROWS_PER_NGRAM,
    auto_bucket,
    ft_hash,
    ngrams,
    subword_table,
    word_means,
)

WORDS = ["walk", "walked", "talking", "cat", "dog", "dogs"]
BUCKET, DIM = 23, 5


def _module(seed=0, bucket=BUCKET):
    ptr, rows = subword_table(WORDS, 3, 5, bucket)
    module = SubwordSkipGram(len(WORDS), DIM, ptr, rows, len(WORDS) + bucket)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        module.input_embeddings.weight.normal_(0, 0.5, generator=generator)
        module.output_embeddings.weight.normal_(0, 0.5, generator=generator)
    return module


def test_expand_bags_by_brute_force():
    ptr, rows = subword_table(WORDS, 3, 5, BUCKET)
    words = np.array([2, 0, 5, 5, 1], dtype=np.int64)
    bag_ptr = np.array([0, 1, 4, 5], dtype=np.int64)
    rows_ptr, out = expand_bags(ptr, rows, words, bag_ptr)
    for i in range(3):
        bag = words[bag_ptr[i] : bag_ptr[i + 1]]
        expected = [r for w in bag for r in rows[ptr[w] : ptr[w + 1]]]
        assert out[rows_ptr[i] : rows_ptr[i + 1]].tolist() == expected
    # the torch module's expansion is the same
    torch_rows, offsets = _module().expand(torch.from_numpy(words), torch.tensor([0, 1, 4]))
    assert torch_rows.tolist() == out.tolist() and offsets.tolist() == rows_ptr[:-1].tolist()


def test_word_means_by_brute_force():
    module = _module()
    ptr, rows = (a.numpy() for a in (module.table_ptr, module.table_rows))
    w = module.input_embeddings.weight.detach().numpy()
    out = np.empty((len(WORDS), DIM), dtype=np.float32)
    word_means(w[: len(WORDS)], w[len(WORDS) :], ptr, rows, out)
    for i, word in enumerate(WORDS):
        grams = [len(WORDS) + ft_hash(g) % BUCKET for g in ngrams(word, 3, 5)]
        np.testing.assert_allclose(out[i], w[[i, *grams]].mean(0), rtol=1e-5)


def test_word_means_in_chunks_and_of_words_without_rows(monkeypatch):
    from sknce.words import _subwords

    rng = np.random.default_rng(0)
    w_vocab, w_ngrams = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    ptr = np.array([0, 3, 3, 4, 9], dtype=np.int64)  # word 1 has no rows
    rows = np.array([0, 4, 4, 2, 3, 8, 5, 6, 1], dtype=np.int64)
    table = np.vstack([w_vocab, w_ngrams])
    expected = [table[rows[a:b]].mean(0) if b > a else np.zeros(3) for a, b in zip(ptr, ptr[1:])]
    for words in (1, 3, 1 << 16):  # a word per chunk, three words, all at once
        monkeypatch.setattr(_subwords, "_WORDS_PER_CHUNK", words)
        out = np.full((4, 3), np.nan, dtype=np.float32)
        word_means(w_vocab, w_ngrams, ptr, rows, out)
        np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("cbow", [False, True])
def test_kernel_step_is_minus_lr_times_the_subword_gradient(cbow):
    """One example: the kernel's in-place step is -lr times autograd's gradient."""
    module = _module()
    words = np.array([1, 3] if cbow else [1], dtype=np.int64)
    ptr = np.array([0, 2], dtype=np.int64) if cbow else None
    positive = np.array([4], dtype=np.int64)
    negatives = np.array([[0, 5, 5]], dtype=np.int64)  # a repeated negative counts twice
    w = module.input_embeddings.weight.detach().double().requires_grad_(True)
    v = module.output_embeddings.weight.detach().double().requires_grad_(True)
    rows, row_offsets = module.expand(torch.from_numpy(words), torch.tensor([0]) if cbow else None)
    total = w[rows].sum(0, keepdim=True)
    h = total + (total / len(rows) - total).detach()  # bag_mean's convention, in float64
    pos = (h * v[positive]).sum(-1)
    neg = torch.einsum("bd,bkd->bk", h, v[negatives])
    loss = negative_sampling(pos, neg, reduction="sum")
    loss.backward()
    lr = 0.05
    w_in = module.input_embeddings.weight.detach().numpy()
    w_out = module.output_embeddings.weight.detach().numpy()
    before_in, before_out = w_in.copy(), w_out.copy()
    in_words, in_ptr = input_bags(module, words, ptr)
    kernel_loss = sgd_cbow(
        w_in,
        w_out,
        in_ptr,
        in_words,
        positive,
        negatives,
        np.empty((0, 3), dtype=np.float32),
        np.zeros(len(WORDS), dtype=np.float32),
        lr,
        lr,
    )
    assert kernel_loss == pytest.approx(float(loss.detach()), rel=1e-4)
    np.testing.assert_allclose(w_in - before_in, -lr * w.grad.numpy(), atol=2e-6)
    np.testing.assert_allclose(w_out - before_out, -lr * v.grad.numpy(), atol=2e-6)


def test_runs_of_one_input_word_equal_per_pair_steps():
    """Pairs sharing an input word read its rows once: the same as one step per pair."""
    module = _module(seed=1, bucket=100003)
    ptr, rows = module.subword_table()
    for w in range(len(WORDS)):  # the shortcut is exact for distinct rows
        assert len(set(rows[ptr[w] : ptr[w + 1]])) == ptr[w + 1] - ptr[w]
    inputs = np.array([2, 2, 2, 0, 0, 2], dtype=np.int64)
    outputs = np.array([4, 5, 1, 3, 3, 0], dtype=np.int64)
    negatives = np.random.default_rng(0).integers(0, len(WORDS), size=(6, 3))
    weights = np.empty((0, 3), dtype=np.float32)
    log_kpn = np.random.default_rng(1).normal(size=len(WORDS)).astype(np.float32)
    w_in = module.input_embeddings.weight.detach().numpy()
    w_out = module.output_embeddings.weight.detach().numpy()
    a_in, a_out, b_in, b_out = w_in.copy(), w_out.copy(), w_in.copy(), w_out.copy()
    loss_a = sgd_subword_pairs(
        a_in, a_out, ptr, rows, inputs, outputs, negatives, weights, log_kpn, 0.1, 0.05
    )
    in_words, in_ptr = input_bags(module, inputs, None)
    loss_b = sgd_cbow(
        b_in, b_out, in_ptr, in_words, outputs, negatives, weights, log_kpn, 0.1, 0.05
    )
    assert loss_a == pytest.approx(loss_b, rel=1e-5)
    np.testing.assert_allclose(a_in, b_in, atol=1e-6)
    np.testing.assert_allclose(a_out, b_out, atol=1e-6)


# --- the estimator -----------------------------------------------------------------------
def _planted(seed=0):
    """Stems whose inflections share each stem's own context words, and those contexts.

    Stems and contexts are random strings: a stem shares no n-gram with its
    contexts by construction, only by training.
    """
    rng = np.random.default_rng(seed)
    letters = np.array(list("bcdfghjklmnpqrstvwxz"))
    stems = ["".join(rng.choice(letters, 5, replace=False)) for _ in range(6)]
    contexts = [["".join(rng.choice(letters, 4)) + "o" for _ in range(3)] for _ in stems]
    suffixes = ["", "s", "ed", "ing"]
    docs = []
    for _ in range(300):
        i = rng.integers(len(stems))
        docs.append(
            [
                stems[i] + suffixes[rng.integers(4)]
                if rng.random() < 0.5
                else contexts[i][rng.integers(3)]
                for _ in range(12)
            ]
        )
    return stems, contexts, docs


def _fit(docs, **params):
    settings = dict(
        subwords=True,
        bucket=2000,
        n_components=16,
        min_count=1,
        sample=0,
        max_epochs=5,
        adversarial=False,
        random_state=0,
    )
    return ACEWord2Vec(**{**settings, **params}).fit(docs)


@pytest.mark.parametrize("params", [{}, {"adversarial": True}, {"architecture": "cbow"}])
def test_oov_words_land_near_their_stems_contexts(params):
    """An unseen inflection (stem + "ness") is nearest to its stem's context words.

    It shares n-grams with the stem's inflections only, and the contexts share none
    with it: the answer comes from what training put into the stem's n-gram rows.
    """
    stems, contexts, docs = _planted()
    model = _fit(docs, **params)
    flat = [c for group in contexts for c in group]
    for i, stem in enumerate(stems):
        assert stem + "ness" not in model.vocabulary_
        sims = [model.wv_.similarity(stem + "ness", c) for c in flat]
        assert int(np.argmax(sims)) // 3 == i
        nearest = model.wv_.most_similar(stem + "ness", topn=1)[0][0]
        assert nearest.startswith(stem) or nearest in contexts[i]


def test_fitted_vectors_are_means_of_the_trained_rows():
    _, _, docs = _planted()
    model = _fit(docs, max_epochs=2)
    wv = model.wv_
    assert isinstance(model.net_.step_, SubwordKernelStep)
    assert isinstance(wv, SubwordVectors) and wv.bucket == 2000
    weight = model.net_.module_.discriminator.input_embeddings.weight.detach().numpy()
    n = len(model.vocabulary_)
    assert weight.shape == (n + 2000, 16) and np.shares_memory(wv.vectors_ngrams, weight)
    word = next(iter(model.vocabulary_))
    grams = [n + ft_hash(g) % 2000 for g in ngrams(word, 3, 6)]
    row = model.vocabulary_[word]
    np.testing.assert_allclose(model.vectors_[row], weight[[row, *grams]].mean(0), rtol=1e-5)
    unseen = [n + ft_hash(g) % 2000 for g in ngrams("qqqzzz", 3, 6)]
    np.testing.assert_allclose(wv["qqqzzz"], weight[unseen].mean(0), rtol=1e-5)
    # the vectors follow more training in place
    model.set_params(warm_start=True, max_epochs=1).fit(docs)
    np.testing.assert_allclose(model.vectors_[row], weight[[row, *grams]].mean(0), rtol=1e-5)


def test_bucket_auto_sizes_the_table_from_the_vocabulary(tmp_path):
    stems, _, docs = _planted()
    assert ACEWord2Vec().bucket == "auto"
    model = _fit(docs, bucket="auto", max_epochs=1)
    wv = model.wv_
    bucket = auto_bucket(wv.index_to_key, 3, 6)
    assert wv.bucket == bucket and 0 < bucket < AUTO_BUCKET_MAX
    weight = model.net_.module_.discriminator.input_embeddings.weight
    assert weight.shape == (len(wv) + bucket, 16)
    word = stems[0] + "ness"
    unseen = [len(wv) + ft_hash(g) % bucket for g in ngrams(word, 3, 6)]
    np.testing.assert_allclose(wv[word], weight.detach().numpy()[unseen].mean(0), rtol=1e-5)
    save_facebook_model(tmp_path / "model.bin", wv)
    back = load_facebook_vectors(tmp_path / "model.bin")
    assert back.bucket == bucket
    np.testing.assert_array_equal(back[word], wv[word])
    assert _fit(docs, bucket="auto", max_n=2, max_epochs=1).wv_.bucket == 0  # no n-grams
    with pytest.raises(ValueError, match="bucket"):
        _fit(docs, bucket="Auto")


def test_bucket_docstring_states_the_auto_rule():
    doc = " ".join(ACEWord2Vec.__doc__.split())
    assert f'``"auto"``: {AUTO_ROWS_PER_NGRAM} rows per distinct n-gram' in doc
    assert f"at most {AUTO_BUCKET_MAX:,}" in doc


def test_autograd_path_and_pickle():
    stems, _, docs = _planted()
    model = _fit(docs, max_epochs=2, optimizer=torch.optim.Adam, lr=0.01)
    assert not isinstance(model.net_.step_, SubwordKernelStep)
    assert np.isfinite(model.history_[-1]["train_loss"])
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.wv_[stems[0] + "ness"], model.wv_[stems[0] + "ness"])
    clone.set_params(warm_start=True, max_epochs=1, optimizer=torch.optim.SGD).fit(docs)
    weight = clone.net_.module_.discriminator.input_embeddings.weight.detach().numpy()
    assert np.shares_memory(clone.wv_.vectors_ngrams, weight)


def test_what_subwords_do_not_do_is_an_error():
    _, _, docs = _planted()
    with pytest.raises(ValueError, match="generator_centre='own'"):
        _fit(docs, adversarial=True, generator_centre="discriminator")
    model = _fit(docs[:50], max_epochs=1)
    with pytest.raises(ValueError, match="cannot add words"):
        model.partial_fit([["brandnew", "words", "here"]] * 3, update_vocabulary=True)
    assert len(model.vocabulary_) == len(model.wv_)


def test_fitted_model_written_as_fasttext_bin(tmp_path):
    gensim_fasttext = pytest.importorskip("gensim.models.fasttext")
    stems, _, docs = _planted()
    model = _fit(docs, max_epochs=1)
    path = tmp_path / "model.bin"
    output = model.net_.module_.discriminator.output_embeddings.weight.detach().numpy()
    save_facebook_model(path, model.wv_, output)
    theirs = gensim_fasttext.load_facebook_vectors(str(path))
    ours = load_facebook_vectors(path)
    for word in [stems[0], stems[1] + "ness", "zzz"]:
        np.testing.assert_allclose(theirs[word], model.wv_[word], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ours[word], model.wv_[word], rtol=1e-6, atol=1e-7)
