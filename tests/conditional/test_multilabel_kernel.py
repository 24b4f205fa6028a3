"""The compiled one-vs-all step of a multi-label ConditionalNCEClassifier, against autograd."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sknce import ConditionalNCEClassifier
from sknce._bags import smooth_idf
from sknce._data import Targets, csr_to_tensor
from sknce.conditional._kernel_step import BagOneVsAllStep
from sknce.losses import MultilabelOneVsAllLoss, multilabel_one_vs_all
from sknce.nn import BagEncoder, BagWeighting, LabelScorer

N_FEATURES, DIM, N_LABELS, K = 9, 5, 7, 4


def _problem(n, seed=0, idf=True, bias=True):
    """A float64 scorer, a CSR batch of counts, padded positives, negatives and noise.

    Row 0 has an empty bag, row 1 no label, row 2 a negative drawn twice and row 3
    negatives that are its positives (masked); every row shares tables with others.
    """
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    X = sp.random(n, N_FEATURES, density=0.5, random_state=seed, format="lil") * 3
    X[0] = 0
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    X.data = np.ceil(X.data)  # counts
    weights = smooth_idf(X) if idf else None
    weighting = None if weights is None else BagWeighting("log1p-idf", weights)
    encoder = BagEncoder(N_FEATURES, DIM, weighting=weighting)
    scorer = LabelScorer(encoder, DIM, N_LABELS, label_bias=bias).double()
    with torch.no_grad():
        for p in scorer.parameters():
            p.copy_(torch.randn_like(p) * 0.7)
    Y = (rng.random((n, N_LABELS)) < 0.35).astype(np.int64)
    Y[1] = 0
    Y[3, :3] = 1
    width = max(int(Y.sum(axis=1).max()), 1)
    positives = np.zeros((n, width), dtype=np.int64)
    pos_mask = np.zeros((n, width), dtype=bool)
    for i, row in enumerate(Y):
        labels = np.flatnonzero(row)
        positives[i, : len(labels)] = labels
        pos_mask[i, : len(labels)] = True
    negatives = rng.integers(0, N_LABELS, size=(n, K))
    negatives[2, 1] = negatives[2, 0]
    negatives[3, :2] = [0, 2]
    neg_mask = ~(negatives[:, :, None] == np.where(pos_mask, positives, -1)[:, None, :]).any(2)
    log_noise = np.log(rng.dirichlet(np.ones(N_LABELS)))
    batch = {
        "X": X,
        "positives": positives,
        "pos_mask": pos_mask,
        "negatives": negatives,
        "neg_mask": neg_mask,
        "neg_log_noise": log_noise[negatives],
    }
    return scorer, batch


def _adagrad(scorer, lr):
    return torch.optim.Adagrad(scorer.parameters(), lr=lr)


def _autograd_steps(scorer, batch, lr, weights=None):
    """Adagrad of each row's loss in turn, by autograd; the summed loss."""
    optimizer = _adagrad(scorer, lr)
    total = 0.0
    for i in range(batch["X"].shape[0]):
        optimizer.zero_grad()
        x = csr_to_tensor(batch["X"][i : i + 1]).double()
        pos = torch.as_tensor(batch["positives"][i : i + 1])
        neg = torch.as_tensor(batch["negatives"][i : i + 1])
        scores = scorer(x, labels=pos, negatives=neg)
        neg_scores = scores["neg"].masked_fill(
            ~torch.as_tensor(batch["neg_mask"][i : i + 1]), -torch.inf
        )
        loss = multilabel_one_vs_all(
            scores["pos"],
            neg_scores,
            torch.as_tensor(batch["neg_log_noise"][i : i + 1]),
            pos_mask=torch.as_tensor(batch["pos_mask"][i : i + 1]),
            reduction="sum",
        )
        if weights is not None:
            loss = loss * weights[i]
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
    return total, optimizer


class _Net:
    """What the step reads of a net: the module, criterion and optimizer."""

    def __init__(self, scorer, lr):
        self.module_ = scorer
        self.criterion_ = MultilabelOneVsAllLoss()
        self.optimizer_ = _adagrad(scorer, lr)


def _kernel_steps(scorer, batch, lr, weights=None, shared=False):
    """The compiled step on the whole batch (its prepare and one kernel call)."""
    net = _Net(scorer, lr)
    negatives = torch.as_tensor(batch["negatives"])
    neg_log_noise = torch.as_tensor(batch["neg_log_noise"])
    if shared:
        negatives, neg_log_noise = negatives[0], neg_log_noise[:1].expand_as(neg_log_noise)
    inputs = {
        "x": csr_to_tensor(batch["X"]).double(),
        "labels": torch.as_tensor(batch["positives"]),
        "negatives": negatives,
    }
    targets = Targets(
        pos_mask=torch.as_tensor(batch["pos_mask"]),
        neg_log_noise=neg_log_noise,
        neg_mask=torch.as_tensor(batch["neg_mask"]),
        sample_weight=None if weights is None else torch.as_tensor(weights),
    )
    step = BagOneVsAllStep()
    state = step.prepare(net, inputs, targets)
    return step.kernel(net, state, 0, batch["X"].shape[0], lr), net.optimizer_


def _assert_kernel_is_autograd(scorer, batch, lr, weights=None, shared=False) -> dict:
    """The compiled step on ``batch`` leaves the loss, parameters and Adagrad sums of
    autograd's per-row Adagrad; returns the parameters before it."""
    reference = {k: v.clone() for k, v in scorer.state_dict().items()}
    expected_loss, expected_optimizer = _autograd_steps(scorer, batch, lr, weights)
    expected = {k: v.clone() for k, v in scorer.state_dict().items()}
    scorer.load_state_dict(reference)
    loss, optimizer = _kernel_steps(scorer, batch, lr, weights, shared)
    assert loss == pytest.approx(expected_loss, rel=1e-10)
    _assert_same_state(scorer, optimizer, expected, expected_optimizer)
    return reference


def _assert_same_state(scorer, optimizer, expected, expected_optimizer):
    for name, value in scorer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), expected[name].numpy(), rtol=1e-10, atol=1e-12)
    for p, q in zip(
        optimizer.param_groups[0]["params"], expected_optimizer.param_groups[0]["params"]
    ):
        np.testing.assert_allclose(
            optimizer.state[p]["sum"].numpy(),
            expected_optimizer.state[q]["sum"].numpy(),
            rtol=1e-10,
            atol=1e-12,
        )


@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("rows", [slice(2, 3), slice(3, 4), slice(0, 6)])
def test_the_kernel_step_is_autograd_adagrad_row_by_row(rows, weighted, idf):
    """Same loss, parameters and Adagrad sums (float64) as autograd's per-row Adagrad.

    Row 0 has an empty bag, row 1 no label, row 2 a negative drawn twice (its row
    moves once, by the summed gradient), row 3 negatives that are its positives.
    """
    scorer, batch = _problem(6, idf=idf)
    batch = {k: v[rows] for k, v in batch.items()}
    n = batch["X"].shape[0]
    # exact in float32, as the step passes them
    weights = np.array([0.5, 0.75, 1.0, 1.25, 1.5, 2.0])[:n] if weighted else None
    reference = _assert_kernel_is_autograd(scorer, batch, 0.3, weights)
    moved = [not torch.equal(p, reference[k]) for k, p in scorer.named_parameters()]
    assert all(moved) if n > 1 else any(moved)


def test_a_shared_set_of_negatives_is_the_same_as_each_row_drawing_it():
    scorer, batch = _problem(6, seed=2)
    batch["negatives"][:] = batch["negatives"][0]
    batch["neg_log_noise"][:] = batch["neg_log_noise"][0]
    positives = np.where(batch["pos_mask"], batch["positives"], -1)
    batch["neg_mask"] = ~(batch["negatives"][:, :, None] == positives[:, None, :]).any(2)
    _assert_kernel_is_autograd(scorer, batch, 0.2, shared=True)


def test_a_masked_negative_changes_nothing():
    """A drawn label that is a positive of its row adds no term: the step is that of
    the row without it."""
    scorer, batch = _problem(6, seed=1)
    row = batch["X"][3:4], batch["positives"][3:4], batch["pos_mask"][3:4]
    assert not batch["neg_mask"][3, :2].any() and batch["neg_mask"][3, 2:].all()
    full = dict(zip(("X", "positives", "pos_mask"), row))
    full.update(
        negatives=batch["negatives"][3:4],
        neg_mask=batch["neg_mask"][3:4],
        neg_log_noise=batch["neg_log_noise"][3:4],
    )
    without = dict(full)
    without.update(
        negatives=full["negatives"][:, 2:],
        neg_mask=full["neg_mask"][:, 2:],
        # the same importance weights 1 / (K p_N) as with the K drawn labels
        neg_log_noise=full["neg_log_noise"][:, 2:] + np.log(K / (K - 2)),
    )
    reference = {k: v.clone() for k, v in scorer.state_dict().items()}
    loss_full, _ = _kernel_steps(scorer, full, 0.3)
    after_full = {k: v.clone() for k, v in scorer.state_dict().items()}
    scorer.load_state_dict(reference)
    loss_without, _ = _kernel_steps(scorer, without, 0.3)
    assert loss_full == pytest.approx(loss_without, rel=1e-12)
    for name, value in scorer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), after_full[name].numpy(), rtol=1e-12)


# --- the classifier's compiled regime ----------------------------------------------------
def _tags(n, n_labels=40, n_words=400, seed=0):
    """Bags of 12 words; each row's 3 labels are those of its topic, and each word comes
    from the topic's 6 signature words with probability 0.5."""
    rng = np.random.default_rng(seed)
    n_topics = 15
    topic = rng.integers(0, n_topics, size=n)
    labels = rng.integers(0, n_labels, size=(n_topics, 3))
    signature = rng.integers(0, n_words, size=(n_topics, 6))
    own = rng.random((n, 12)) < 0.5
    words = np.where(
        own,
        signature[topic[:, None], rng.integers(0, 6, (n, 12))],
        rng.integers(0, n_words, (n, 12)),
    )
    texts = [" ".join(f"w{w}" for w in row) for row in words]
    Y = np.zeros((n, n_labels), dtype=np.int64)
    np.put_along_axis(Y, labels[topic], 1, axis=1)
    return texts, sp.csr_matrix(Y)


def _pipeline(seed=0, **params):
    return make_pipeline(
        CountVectorizer(token_pattern=r"\S+"),
        ConditionalNCEClassifier(random_state=seed, **params),
    )


def test_the_default_pipeline_trains_by_the_compiled_step_and_ranks_the_tags():
    texts, Y = _tags(1500)
    model = _pipeline().fit(texts[:1000], Y[:1000])
    clf = model[-1]
    assert isinstance(clf.net_.step_, BagOneVsAllStep)
    assert isinstance(clf.net_.optimizer_, torch.optim.Adagrad)
    assert clf.net_.module_.encoder.weighting.bag == "log1p-idf"  # counts: sublinear tf-idf
    assert "valid_precision" in clf.selection_history_[-1]  # then a refit on every row
    top, _ = clf.predict_topk(model[0].transform(texts[1000:]), 1)
    hits = Y[1000:].toarray()[np.arange(500), top[:, 0]]
    assert hits.mean() > 0.9  # chance is 3 / 40


def test_a_fit_on_one_thread_is_reproducible():
    texts, Y = _tags(600)
    first, again, other = (
        _pipeline(seed, max_epochs=3).fit(texts, Y).predict_proba(texts[:50]) for seed in (0, 0, 1)
    )
    np.testing.assert_array_equal(first, again)
    assert np.abs(other - first).max() > 1e-4


def test_two_threads_rank_as_well():
    texts, Y = _tags(1500)
    X_test, Y_test = texts[1000:], Y[1000:].toarray()

    def precision(model):
        top, _ = model[-1].predict_topk(model[0].transform(X_test), 1)
        return Y_test[np.arange(500), top[:, 0]].mean()

    one = precision(_pipeline().fit(texts[:1000], Y[:1000]))
    two = _pipeline(n_jobs=2).fit(texts[:1000], Y[:1000])
    assert two[-1].net_.step_.n_jobs == 2
    assert precision(two) > one - 0.05
