"""The engine's seam: typed targets, the sampler check, the step strategy and the miner."""

import threading

import numpy as np
import pytest
import test_base
import torch
from test_base import ToyNCEClassifier

from sknce._data import Batch, Targets, check_batch
from sknce._steps import AutogradStep, KernelStep, Miner
from sknce.datasets import make_latent_classes
from sknce.losses import BinaryNCELoss, RankingNCELoss, binary_nce


@pytest.fixture
def blobs():
    data = make_latent_classes(120, n_classes=4, n_features=6, separation=4.0, random_state=0)
    return data.X.astype(np.float32), data.y


# --- typed targets ------------------------------------------------------------------------
def test_a_misspelt_target_fails_loudly_instead_of_turning_a_correction_off():
    scores = {"pos": torch.zeros(3), "neg": torch.zeros(3, 2)}
    with pytest.raises(TypeError, match=r"\['neg_log_nosie'\].*neg_log_noise"):
        RankingNCELoss()(scores, {"neg_log_nosie": torch.zeros(3, 2)})
    with pytest.raises(TypeError, match="not fields of sknce._data.Targets"):
        Batch({}, {"pos_lognoise": torch.zeros(3)}, size=3)


def test_objectives_read_the_targets_by_attribute_as_given():
    pos, neg = torch.tensor([1.0, -0.5]), torch.tensor([[0.2, 3.0], [0.1, -1.0]])
    log_pos, log_neg = torch.tensor([-1.0, -2.0]), torch.tensor([[-0.5, -3.0], [-1.0, -1.0]])
    mask = torch.tensor([[True, False], [True, True]])
    targets = Targets(pos_log_noise=log_pos, neg_log_noise=log_neg, neg_mask=mask)
    got = BinaryNCELoss(learn_gamma=False)({"pos": pos, "neg": neg}, targets)
    expected = binary_nce(pos, neg.masked_fill(~mask, float("-inf")), log_pos, log_neg)
    torch.testing.assert_close(got, expected)
    assert got != BinaryNCELoss(learn_gamma=False)({"pos": pos, "neg": neg}, None)
    assert targets["neg_mask"] is mask
    assert dict(targets) == {"pos_log_noise": log_pos, "neg_log_noise": log_neg, "neg_mask": mask}
    with pytest.raises(KeyError):
        targets["neg_weights"]  # absent


def test_the_first_batch_of_a_fit_is_checked(blobs, monkeypatch):
    X, y = blobs

    def as_tuple(self, rows, rng):
        return tuple(sampler_call(self, rows, rng))

    sampler_call = test_base._ToySampler.__call__
    monkeypatch.setattr(test_base._ToySampler, "__call__", as_tuple)
    with pytest.raises(TypeError, match=r"returned a tuple.*Batch\(inputs, targets"):
        ToyNCEClassifier(max_epochs=1).fit(X, y)


def test_check_batch_names_targets_that_disagree():
    inputs = {"x": torch.zeros(2, 3)}
    check_batch(Batch(inputs, None, size=2), "s")
    bad = Batch(
        inputs, {"neg_log_noise": torch.zeros(2, 3), "neg_mask": torch.ones(2, 4) > 0}, size=2
    )
    with pytest.raises(ValueError, match="disagree in shape"):
        check_batch(bad, "s")
    with pytest.raises(ValueError, match="bool"):
        check_batch(Batch(inputs, {"neg_mask": torch.ones(2, 3)}, size=2), "s")
    with pytest.raises(ValueError, match="1 or more"):
        check_batch(Batch(inputs, None, size=0), "s")


# --- the step strategy --------------------------------------------------------------------
class _AutogradSGDByHand(KernelStep):
    """A 'kernel' doing by hand what autograd + SGD do: the seam's reference test.

    Examples ``lo:hi`` contribute their share of the batch's mean-loss gradient;
    threads take turns (autograd is not Hogwild).
    """

    def __init__(self, n_jobs=1):
        super().__init__(n_jobs)
        self.calls = 0
        self.lock = threading.Lock()

    def prepare(self, net, inputs, targets):
        self.calls += 1
        return inputs, targets

    def kernel(self, net, state, lo, hi, lr):
        inputs, targets = state
        n = len(inputs["labels"])
        part = {k: v[lo:hi] for k, v in inputs.items()}
        part_targets = Targets(**{k: v[lo:hi] for k, v in targets.items()})
        with self.lock, torch.enable_grad():
            loss = net.get_loss(net.infer(part), part_targets) * (hi - lo)
            params = [p for _, p in net.get_all_learnable_params()]
            grads = torch.autograd.grad(loss / n, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.sub_(lr * g)
        return float(loss.detach())


class _ToyWithStep(ToyNCEClassifier):
    def _make_step(self):
        return _AutogradSGDByHand()


def test_a_kernel_step_trains_as_the_autograd_step_it_implements(blobs):
    X, y = blobs
    params = dict(optimizer=torch.optim.SGD, lr=0.1, max_epochs=3, random_state=0)
    by_autograd = ToyNCEClassifier(**params).fit(X, y)
    by_kernel = _ToyWithStep(**params).fit(X, y)
    assert isinstance(by_kernel.net_.step_, _AutogradSGDByHand)
    assert by_kernel.net_.step_.calls == 3 * int(np.ceil(len(y) / 32))
    for a, b in zip(by_autograd.net_.module_.parameters(), by_kernel.net_.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert [r["train_loss"] for r in by_kernel.history_] == pytest.approx(
        [r["train_loss"] for r in by_autograd.history_], rel=1e-5
    )


@pytest.mark.parametrize(
    "options", [{"optimizer": torch.optim.Adam}, {"optimizer_kwargs": {"momentum": 0.9}}]
)
def test_a_kernel_step_falls_back_to_autograd_where_it_does_not_apply(blobs, options):
    X, y = blobs
    est = _ToyWithStep(max_epochs=1, **{"optimizer": torch.optim.SGD, **options}).fit(X, y)
    assert type(est.net_.step_) is AutogradStep
    assert est.net_.step.calls == 0


def test_kernel_threads_live_for_the_fit_call_only(blobs):
    X, y = blobs
    step = _AutogradSGDByHand(n_jobs=2)

    class Threaded(ToyNCEClassifier):
        def _make_step(self):
            return step

    torch_threads = torch.get_num_threads()
    est = Threaded(optimizer=torch.optim.SGD, max_epochs=2).fit(X, y)
    assert step._pool is None and torch.get_num_threads() == torch_threads
    assert len(est.history_) == 2 and np.isfinite(est.history_[-1]["train_loss"])


# --- the miner ----------------------------------------------------------------------------
class _HardestLabelMiner(Miner):
    """Replace each example's negatives by its highest-scoring wrong label, k times.

    Its one parameter, a score offset, is trained towards the mean mined score by SGD.
    """

    def __init__(self):
        super().__init__(lr=0.5)
        self.offset = torch.nn.Parameter(torch.zeros(()))
        self.mined = 0

    def mine(self, net, inputs, targets):
        scorer = net.module_
        with torch.no_grad():
            scores = scorer.scores(inputs["x"])
            scores[torch.arange(len(scores)), inputs["labels"]] = -float("inf")
            hardest = scores.argmax(1, keepdim=True)
        k = inputs["negatives"].shape[1]
        self.mined += 1
        self._last = scores.max(1).values
        return {**inputs, "negatives": hardest.expand(-1, k)}, targets.replace(neg_mask=None)

    def update(self, net, inputs, targets):
        net.optimizer_miner_.zero_grad()
        ((self.offset - self._last.mean()) ** 2).backward()
        net.optimizer_miner_.step()


class _ToyWithMiner(ToyNCEClassifier):
    def _make_miner(self):
        return _HardestLabelMiner()


def test_a_miner_has_its_own_optimizer_and_mines_every_training_batch(blobs):
    X, y = blobs
    est = _ToyWithMiner(max_epochs=2, random_state=0).fit(X, y)
    net = est.net_
    miner = net.miner
    scorer_params = {id(p) for group in net.optimizer_.param_groups for p in group["params"]}
    assert id(miner.offset) not in scorer_params
    assert [p for g in net.optimizer_miner_.param_groups for p in g["params"]] == [miner.offset]
    assert miner.mined == 2 * int(np.ceil(len(y) / 32))
    assert float(miner.offset.detach()) != 0.0
    assert (est.predict(X) == y).mean() > 0.8
