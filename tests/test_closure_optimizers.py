"""Closure optimizers (``torch.optim.LBFGS``) train every estimator, in every mode of
its registry entry, through the step strategy: the autograd step hands skorch's closure
to the optimizer (issue 30: the regressor failed with "missing closure" before its first
step)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback
from test_common import ESTIMATORS, N_SAMPLES, REGISTRY, _output

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)


class _Evaluations(Callback):
    """Counts the training batches, the closure's evaluations and the weights' change."""

    def initialize(self):
        self.batches_, self.evaluations_, self.start_ = 0, 0, None
        return self

    def on_train_begin(self, net, **kwargs):
        self.start_ = [p.detach().clone() for p in net.module_.parameters()]

    def on_grad_computed(self, net, named_parameters, **kwargs):
        self.evaluations_ += 1

    def on_batch_end(self, net, training=False, **kwargs):
        self.batches_ += training

    def moved(self, net) -> bool:
        now = list(net.module_.parameters())
        return any(not torch.equal(a, b) for a, b in zip(self.start_, now, strict=True))


#: Every mode of every registry entry (fastText's regime, subwords, multi-label...).
MODES = [(name, mode) for name in ESTIMATORS for mode in REGISTRY[name].all_modes()]


@pytest.mark.parametrize(("name", "mode_name"), MODES)
def test_lbfgs_trains_every_estimator_by_its_closure(name, mode_name):
    entry = REGISTRY[name]
    mode = entry.all_modes()[mode_name]
    counter = _Evaluations()
    estimator = ESTIMATORS[name](
        **{
            **entry.params,
            **mode.params,
            "optimizer": torch.optim.LBFGS,
            "optimizer_kwargs": {"max_iter": 3},
            "lr": 0.01,
            "max_epochs": 1,
            "early_stopping": False,  # which may restore the start (the regressor's base)
            "callbacks": [counter],
        }
    )
    X, y = (mode.data or entry.data).make(N_SAMPLES, 0)
    entry.fit(estimator, X, y)
    assert type(estimator.net_.optimizer_) is torch.optim.LBFGS
    assert counter.batches_ >= 1
    assert counter.evaluations_ > counter.batches_  # the closure ran more than once a step
    assert counter.moved(estimator.net_)
    assert np.all(np.isfinite(_output(estimator, X)))
    entry.partial_fit(estimator, X, y)  # continued fits too


@pytest.mark.parametrize("sparse", [False, True])
def test_the_optimizer_check_steps_with_a_closure(sparse):
    from sknce._checks import check_optimizer_step

    check_optimizer_step(torch.optim.LBFGS, {}, 0.1, sparse=sparse)  # it densifies
    with pytest.raises(ValueError, match="LBFGS.*bogus.*first step: only 'strong_wolfe'"):
        check_optimizer_step(torch.optim.LBFGS, {"line_search_fn": "bogus"}, 0.1, sparse=sparse)
