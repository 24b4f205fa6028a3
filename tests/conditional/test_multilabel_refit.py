"""The refit of the compiled multi-label regime: the epochs its held-out fit chooses, the
refit continuing that fit's network from a third of its planned epochs, and the one state
the held-out fit keeps for it."""

import numpy as np
import pytest
import torch
from sklearn.feature_extraction.text import CountVectorizer
from test_multilabel_plan import _texts

from sknce import ConditionalNCEClassifier
from sknce._callbacks import LinearDecay
from sknce.conditional import _multilabel
from sknce.conditional._multilabel import chosen_epochs, refit_start, start_epoch
from sknce.conditional._plan import END_LR


def _scripted(monkeypatch, curve):
    """Held-out precision ``curve[e - 1]`` at the end of epoch ``e``."""

    def precision(estimator, dataset):
        return curve[len(estimator.net_.history) - 1]

    monkeypatch.setattr(_multilabel, "held_out_precision", precision)


def _fit(**params):
    texts, Y = _texts(400)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    return ConditionalNCEClassifier(random_state=0, **params).fit(X, Y)


def _state(net) -> tuple[dict, list]:
    weights = {k: v.clone() for k, v in net.module_.state_dict().items()}
    return weights, [s["sum"].clone() for s in net.optimizer_.state.values()]


@pytest.mark.parametrize(
    "epochs, max_epochs, expected",
    [
        (12, 12, 4),  # a third of the planned epochs
        (8, 12, 4),  # every row still trains for half the chosen epochs
        (7, 12, 0),  # it would not: a new network
        (4, 12, 0),
        (13, 14, 4),
        (6, 6, 2),
        (3, 5, 1),
        (1, 5, 0),
        (2, 2, 0),  # under 3 planned epochs: no state kept
    ],
)
def test_the_refit_starts_at_a_third_of_the_planned_epochs_if_half_the_chosen_remain(
    epochs, max_epochs, expected
):
    assert start_epoch(max_epochs) == max_epochs // 3
    assert refit_start(epochs, max_epochs) == expected


@pytest.mark.parametrize(
    "precisions, expected",
    [
        ([0.5, 0.6, 0.7], 3),  # still rising
        ([0.80, 0.88, 0.900, 0.9005, 0.8999, 0.9004, 0.9002], 7),  # a plateau: its end
        ([0.80, 0.95, 0.84, 0.86, 0.88, 0.90, 0.91], 7),  # one lucky epoch is no peak
        ([0.24, 0.27, 0.28, 0.284, 0.281, 0.278, 0.275, 0.277], 4),  # a peak, then a fall
        ([0.5, 0.4, 0.3], 1),  # best at the first
        ([None, 0.6, None, 0.5, 0.4], 2),  # epochs not measured: neither chosen nor averaged
        ([None, None], 0),  # nothing measured: no refit
        ([], 0),
    ],
)
def test_the_refit_takes_the_last_epoch_near_the_best_smoothed_precision(precisions, expected):
    assert chosen_epochs(precisions) == expected


def test_the_chosen_epochs_follow_the_plateau_margin(monkeypatch):
    curve = [0.8, 0.9, 0.9, 0.899, 0.898, 0.897]
    assert chosen_epochs(curve) == 4  # within 0.1% of the best average (epoch 3's)
    monkeypatch.setattr(_multilabel, "PLATEAU", 0.0)
    assert chosen_epochs(curve) == 3


def test_the_refit_continues_the_held_out_fit_from_a_third_of_its_planned_epochs(monkeypatch):
    _scripted(monkeypatch, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])  # rising: 6 epochs chosen
    held = {}
    epoch_end = _multilabel.PrecisionEarlyStopping.on_epoch_end

    def recorded(self, net, **kwargs):
        epoch_end(self, net, **kwargs)
        held[len(net.history)] = _state(net)

    monkeypatch.setattr(_multilabel.PrecisionEarlyStopping, "on_epoch_end", recorded)
    started, rates = [], []
    load = _multilabel.OptimizerStart.on_train_begin

    def at_start(self, net, **kwargs):
        load(self, net, **kwargs)
        started.append(_state(net))

    monkeypatch.setattr(_multilabel.OptimizerStart, "on_train_begin", at_start)
    decay = LinearDecay.on_batch_begin

    def rate(self, net, batch=None, training=False, **kwargs):
        decay(self, net, batch=batch, training=training, **kwargs)
        if training and net.train_split is None:
            rates.append(net.optimizer_.param_groups[0]["lr"])

    monkeypatch.setattr(LinearDecay, "on_batch_begin", rate)
    clf = _fit(max_epochs=6)
    # the held-out fit chose 6 epochs; the refit trained every row for epochs 3 to 6
    assert len(clf.selection_history_) == 6 and clf.n_iter_ == 4
    first = clf.net_.history[0]["batches"]
    assert sum(b["train_batch_size"] for b in first) == 400
    # from the held-out fit's weights and Adagrad sums after its second epoch
    (weights, sums), ((start_weights, start_sums),) = held[2], started
    assert weights.keys() == start_weights.keys()
    for name, value in weights.items():
        torch.testing.assert_close(start_weights[name], value, rtol=0, atol=0)
    for value, start in zip(sums, start_sums, strict=True):
        torch.testing.assert_close(start, value, rtol=0, atol=0)
    labels = "label_embedding.weight"
    assert not torch.equal(held[2][0][labels], held[6][0][labels])  # trained on after
    # the schedule goes on from a third: the rate of its first batch, decaying to the end
    lr = clf.plan_.lr
    assert rates[0] == pytest.approx(lr * (1 - (1 - END_LR) * 2 / 6))
    assert rates == sorted(rates, reverse=True) and rates[-1] > lr * END_LR
    # the fitted net carries no second copy of the optimizer's state
    assert dict(clf.net_.callbacks_)["refit_start"].state is None


def test_a_refit_of_one_epoch_trains_a_new_network(monkeypatch):
    _scripted(monkeypatch, [0.5, 0.4, 0.3, 0.2, 0.1])  # best at the first epoch
    clf = _fit(max_epochs=5, patience=2)
    assert len(clf.selection_history_) == 3 and clf.n_iter_ == 1
    assert "refit_start" not in dict(clf.net_.callbacks_)


def test_the_held_out_fit_keeps_one_state_and_only_for_a_refit_from_it(monkeypatch):
    kept = []
    end = _multilabel.PrecisionEarlyStopping.on_train_end

    def at_end(self, net, **kwargs):
        end(self, net, **kwargs)
        kept.append((self.chosen_epochs_, self.start_ and self.start_.epoch))

    monkeypatch.setattr(_multilabel.PrecisionEarlyStopping, "on_train_end", at_end)
    _scripted(monkeypatch, list(np.linspace(0.1, 0.9, 12)))  # still rising at the last
    assert _fit(max_epochs=12).n_iter_ == 8  # epochs 5 to 12, from the state after 4
    assert kept == [(12, 4)]
    kept.clear()
    # best at the second, the smoothed precision at the third: under twice the kept
    # state's 2 epochs, so a new network trains every row for 3, and the state is dropped
    _scripted(monkeypatch, [0.2, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1])
    clf = _fit(max_epochs=8, patience=3)
    assert clf.n_iter_ == 3 and kept == [(3, None)]
    assert "refit_start" not in dict(clf.net_.callbacks_)


def test_the_held_out_fit_scores_its_rows_for_their_precision_alone():
    clf = _fit(max_epochs=3)
    assert all("valid_precision" in row for row in clf.selection_history_)
    # no validation pass: nothing reads the held-out rows' loss before a refit
    assert not any("valid_loss" in row for row in clf.selection_history_)
    assert all(
        "valid_batch_size" not in batch
        for row in clf.selection_history_
        for batch in row.get("batches", [])
    )


def test_without_a_refit_the_held_out_fit_keeps_its_best_weights_and_its_loss(monkeypatch):
    texts, Y = _texts(400)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts).toarray()  # autograd
    restored = []
    end = _multilabel.PrecisionEarlyStopping.on_train_end

    def at_end(self, net, **kwargs):
        end(self, net, **kwargs)
        restored.append((self.load_best, self.start_))

    monkeypatch.setattr(_multilabel.PrecisionEarlyStopping, "on_train_end", at_end)
    clf = ConditionalNCEClassifier(max_epochs=3, random_state=0).fit(X, Y)
    assert not clf.plan_.refit and "valid_loss" in clf.history_[-1]
    assert restored == [(True, None)]  # no state kept for a refit that will not come
