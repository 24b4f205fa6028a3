"""The compiled training steps of ConditionalNCEClassifier on sparse bags of features.

:class:`BagRankingStep` is the engine's :class:`~sknce._steps.KernelStep` for the
classifier's scorer when its encoder is the :class:`~sknce.nn.BagEncoder` and its
objective the ranking loss: each batch of the :class:`~sknce.conditional._sampler.LabelSampler`
(the inputs as a sparse tensor, the labels, the noise labels and their
``log p_N``) is handed to :func:`~sknce.conditional._kernels.sgd_bag_ranking`,
fastText's per-example SGD update, over the engine's Hogwild threads. Where it
does not apply (a GPU, another optimizer, another encoder or objective, an input
bias, dropout, the self-normalisation penalty) the engine trains by autograd.

:class:`LinearSoftmaxStep` is the step of the full-rank linear model
(:class:`~sknce.nn.LinearLabelScorer` over a :class:`~sknce.nn.BagEncoder`):
:func:`~sknce.conditional._kernels.sgd_linear_softmax`, the exact softmax of every
class with :class:`~sknce.optim.RowAdagrad` (or plain SGD), whose accumulators it
updates in place in the optimizer's state.
"""

from __future__ import annotations

import numpy as np

from sknce._data import Targets
from sknce._steps import KernelStep
from sknce.conditional._kernels import sgd_bag_ranking, sgd_linear_softmax
from sknce.losses import MarginSoftmaxLoss, RankingNCELoss
from sknce.nn import BagEncoder, LabelScorer, LinearLabelScorer
from sknce.optim import RowAdagrad

__all__ = ["BagRankingStep", "LinearSoftmaxStep"]


class BagRankingStep(KernelStep):
    """Ranking-NCE SGD of a bag encoder and label tables, compiled, over ``n_jobs`` threads.

    Parameters
    ----------
    n_jobs : int, default=1
        Threads of the kernel (Hogwild with more than one: not bit-reproducible).
    """

    def applies(self, net) -> bool:
        """The engine's conditions, and a scorer and objective the kernel implements."""
        if not super().applies(net):
            return False
        scorer = net.module_
        return (
            isinstance(scorer, LabelScorer)
            and isinstance(scorer.encoder, BagEncoder)
            and scorer.encoder.normalize
            and scorer.input_bias is None
            and scorer.dropout.p == 0
            and type(net.criterion_) is RankingNCELoss
        )

    def prepare(self, net, inputs: dict, targets: Targets) -> tuple:
        """The batch as the kernel's arrays, and numpy views of the parameters."""
        x = _weighted(net.module_.encoder, inputs["x"])  # coalesced: rows contiguous
        rows, cols = x.indices().numpy()
        indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
        labels = inputs["labels"].numpy()
        negatives = inputs["negatives"].numpy()
        neg_log_noise = targets.neg_log_noise.numpy()
        # One set shared by the batch, passed once as (1, K); an example's labels are then
        # distinct when the set is (every class once, for the exact softmax).
        distinct = negatives.ndim == 1 and np.unique(negatives).size == negatives.size
        if negatives.ndim == 1:
            negatives = negatives.reshape(1, -1)
            # the same K corrections for every example (the sampler's expanded view)
            neg_log_noise = neg_log_noise[:1]
        scorer = net.module_
        bias = scorer.label_bias
        params = (
            scorer.encoder.weight.detach().numpy(),
            scorer.label_embedding.weight.detach().numpy(),
            np.empty(0, np.float32) if bias is None else bias.detach().numpy().reshape(-1),
        )
        batch = (
            indptr,
            cols,
            x.values().numpy(),
            labels,
            np.ascontiguousarray(negatives),
            targets.pos_log_noise.numpy(),
            np.ascontiguousarray(neg_log_noise),
            np.empty(0, np.float32)
            if targets.sample_weight is None
            else np.ascontiguousarray(targets.sample_weight.numpy(), dtype=np.float32),
        )
        remove_hits = targets.neg_mask is not None
        # Distinct only once the example's own label is removed from the shared set.
        return params, batch, remove_hits, distinct and remove_hits

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        params, batch, remove_hits, distinct = state
        return sgd_bag_ranking(*params, *batch, lo, hi, lr, remove_hits, distinct)


def _weighted(encoder: BagEncoder, x):
    """A sparse COO batch as the encoder reads it (its ``weighting``), coalesced."""
    x = x.coalesce()
    return x if encoder.weighting is None else encoder.weighting(x)


def _csr_of(x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``indptr``, ``indices``, ``data`` of a coalesced sparse COO batch (row-major)."""
    rows, cols = x.indices().numpy()
    indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
    return indptr, cols, x.values().numpy()


class LinearSoftmaxStep(KernelStep):
    """The exact softmax of a sparse linear model, compiled, over ``n_jobs`` threads.

    Parameters
    ----------
    n_jobs : int, default=1
        Threads of the kernel (Hogwild with more than one: not bit-reproducible).
    optimizer : {RowAdagrad, torch.optim.SGD}, default=RowAdagrad
        The update the kernel implements; the step applies when the net trains
        with this optimizer, at its default ``eps``.
    margin : float, default=0.0
        The training margin of the objective (``MarginSoftmaxLoss``'s).
    """

    def __init__(self, n_jobs: int = 1, optimizer: type = RowAdagrad, margin: float = 0.0) -> None:
        super().__init__(n_jobs)
        self.optimizer = optimizer
        self.margin = float(margin)

    def applies(self, net) -> bool:
        """The engine's conditions, and a scorer and objective the kernel implements."""
        if not super().applies(net):
            return False
        scorer = net.module_
        criterion = net.criterion_
        return (
            isinstance(scorer, LinearLabelScorer)
            and isinstance(scorer.encoder, BagEncoder)
            and not scorer.encoder.normalize
            and type(criterion) is MarginSoftmaxLoss
            and criterion.margin == self.margin
        )

    def prepare(self, net, inputs: dict, targets: Targets) -> tuple:
        """The batch as the kernel's arrays, and numpy views of the parameters and state."""
        scorer = net.module_
        weight, bias = scorer.encoder.weight, scorer.label_bias
        state = net.optimizer_.state
        adagrad = self.optimizer is RowAdagrad
        empty = np.empty(0, np.float32)

        def view(tensor):
            return tensor.detach().numpy().reshape(-1) if tensor is not None else empty

        params = (
            weight.detach().numpy(),
            view(bias),
            view(state[weight]["sum"]) if adagrad else empty,
            view(state[bias]["sum"]) if adagrad and bias is not None else empty,
        )
        weights = targets.sample_weight
        batch = (
            *_csr_of(_weighted(scorer.encoder, inputs["x"])),
            targets.labels.numpy(),
            empty if weights is None else np.ascontiguousarray(weights.numpy(), np.float32),
        )
        eps = net.optimizer_.param_groups[0].get("eps", 0.0)
        return params, batch, eps

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        params, batch, eps = state
        return sgd_linear_softmax(*params, *batch, lo, hi, lr, self.margin, eps)
