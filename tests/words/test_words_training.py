"""ACEWord2Vec in the training engine: vectors seen by callbacks, lr schedules, resuming."""

import warnings

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback, Checkpoint, LoadInitState, LRScheduler
from test_words_ace import FAST, _planted

from sknce import ACEWord2Vec
from sknce.words import _ace, _net


def _cosines(weight: np.ndarray, row: int) -> np.ndarray:
    norms = np.linalg.norm(weight, axis=1)
    return weight @ weight[row] / (norms * norms[row])


class _QueryEachEpoch(Callback):
    """Ask ``net.estimator.wv_`` for every cosine with ``a0`` at each epoch's end."""

    def initialize(self):
        self.errors_ = []
        return self

    def on_epoch_end(self, net, **kwargs):
        wv = net.estimator.wv_
        weight = net.module_.discriminator.input_embeddings.weight.detach().numpy()
        got = wv.most_similar("a0", topn=None)
        self.errors_.append(float(np.abs(got - _cosines(weight, wv.key_to_index["a0"])).max()))
        np.testing.assert_array_equal(net.estimator.vectors_, weight)


@pytest.mark.parametrize("host", ["view", "copy"])
def test_a_callback_queries_the_vectors_of_each_epoch(host, monkeypatch):
    if host == "copy":  # as from a GPU: the vectors are a copy of the weights
        monkeypatch.setattr(_ace, "_on_host", lambda w: (w.detach().numpy().copy(), False))
    query = _QueryEachEpoch()
    docs, _ = _planted()
    ACEWord2Vec(max_epochs=4, adversarial=False, callbacks=[query], **FAST).fit(docs)
    assert len(query.errors_) == 4
    assert max(query.errors_) < 1e-5


@pytest.mark.parametrize("how", ["warm_start", "partial_fit"])
def test_a_held_wv_stays_the_models_across_continued_training(how):
    docs, _ = _planted()
    model = ACEWord2Vec(max_epochs=2, adversarial=False, **FAST).fit(docs)
    wv = model.wv_
    wv.most_similar("a0")  # caches the norms
    if how == "warm_start":
        model.set_params(warm_start=True).fit(docs)
    else:
        model.partial_fit(docs)
    assert model.wv_ is wv
    weight = model.net_.module_.discriminator.input_embeddings.weight.detach().numpy()
    got = wv.most_similar("a0", topn=None)
    np.testing.assert_allclose(got, _cosines(weight, wv.key_to_index["a0"]), atol=1e-5)


def _record_kernel_rates(monkeypatch) -> list:
    """The learning rate of every call of the skip-gram kernel."""
    rates = []
    kernel = _net.sgd_pairs

    def recording(*args):
        rates.append(args[-2])
        return kernel(*args)

    monkeypatch.setattr(_net, "sgd_pairs", recording)
    return rates


class _BatchRates(Callback):
    """The learning rate of each batch per epoch, read when the batch begins."""

    def initialize(self):
        self.rates_ = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self.rates_.append([])

    def on_batch_begin(self, net, training=False, **kwargs):
        if training:
            self.rates_[-1].append(net.optimizer_.param_groups[0]["lr"])


@pytest.mark.parametrize("path", ["kernel", "autograd"])
def test_a_user_lr_scheduler_replaces_the_linear_decay(path, monkeypatch):
    docs, _ = _planted()
    params = {**FAST, "max_epochs": 3, "batch_size": 1000, "lr": 0.02}  # ACE's decay is on
    if path == "autograd":
        params.update(optimizer=torch.optim.Adam, lr=0.01)
    rates = _BatchRates()
    kernel_rates = _record_kernel_rates(monkeypatch)
    scheduler = LRScheduler(policy="StepLR", step_size=1, gamma=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ACEWord2Vec(callbacks=[scheduler, rates], **params).fit(docs)
    assert not [w for w in caught if "lr_scheduler" in str(w.message)]
    assert "lr_decay" not in dict(model.net_.callbacks_)
    assert all(len(epoch) > 2 for epoch in rates.rates_)
    for epoch, epoch_rates in enumerate(rates.rates_):
        assert epoch_rates == [pytest.approx(params["lr"] * 0.5**epoch)] * len(epoch_rates)
    if path == "kernel":
        assert kernel_rates == [r for epoch in rates.rates_ for r in epoch]

    # without a schedule of the user's, the rate decays linearly batch by batch
    rates = _BatchRates()
    ACEWord2Vec(callbacks=[rates], **params).fit(docs)
    flat = [r for epoch in rates.rates_ for r in epoch]
    assert flat[0] == params["lr"] and np.all(np.diff(flat) < 0)


class _Interrupt(Callback):
    """Fail the fit at the end of an epoch (after the checkpoint of that epoch)."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.epoch:
            raise RuntimeError("interrupted")


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
def test_a_fit_resumed_from_a_checkpoint_equals_the_uninterrupted_fit(architecture, tmp_path):
    """At ACE's defaults (linear decay, warm-up, adversarial): 1 epoch, then 7 more = 8."""
    docs, _ = _planted()
    params = {**FAST, "architecture": architecture, "batch_size": 1000}
    checkpoint = Checkpoint(monitor=None, dirname=str(tmp_path))
    with pytest.raises(RuntimeError, match="interrupted"):
        ACEWord2Vec(max_epochs=8, callbacks=[checkpoint, _Interrupt(1)], **params).fit(docs)
    resumed = ACEWord2Vec(max_epochs=7, callbacks=[LoadInitState(checkpoint)], **params)
    resumed.fit(docs)
    whole = ACEWord2Vec(max_epochs=8, **params).fit(docs)
    assert resumed.n_iter_ == 8
    for a, b in zip(resumed.net_.module_.parameters(), whole.net_.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
