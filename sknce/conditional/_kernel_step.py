"""The compiled training steps of ConditionalNCEClassifier on sparse bags of features.

Each is the engine's :class:`~sknce._steps.KernelStep` for the classifier's scorer
when its encoder is the :class:`~sknce.nn.BagEncoder`; each hands a sampler's batch
(the inputs as a sparse tensor, the labels, the noise labels and their ``log p_N``)
to a kernel of :mod:`sknce.conditional._kernels` over the engine's Hogwild threads:

* :class:`BagRankingStep`: the ranking loss of single-label ``y``
  (:class:`~sknce.conditional._sampler.LabelSampler`), fastText's per-example SGD
  update, :func:`~sknce.conditional._kernels.sgd_bag_ranking`;
* :class:`BagOneVsAllStep`: the sampled one-vs-all loss of a label indicator
  (:class:`~sknce.conditional._sampler.LabelSetSampler`), a per-row Adagrad update,
  :func:`~sknce.conditional._kernels.adagrad_bag_one_vs_all`;
* :class:`LinearSoftmaxStep`: the full-rank linear model
  (:class:`~sknce.nn.LinearLabelScorer`), the exact softmax of every class with
  :class:`~sknce.optim.RowAdagrad` (or plain SGD), whose accumulators it updates in
  place in the optimizer's state, :func:`~sknce.conditional._kernels.sgd_linear_softmax`.

Where they do not apply (a GPU, another optimizer, another encoder or objective, an
input bias, dropout, the self-normalisation penalty) the engine trains by autograd.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from sknce._data import Targets
from sknce._steps import KernelStep
from sknce.conditional._kernels import (
    BAG_CODES,
    adagrad_bag_one_vs_all,
    sgd_bag_ranking,
    sgd_linear_softmax,
    weighted_csr,
)
from sknce.losses import MarginSoftmaxLoss, MultilabelOneVsAllLoss, RankingNCELoss
from sknce.nn import BagEncoder, LabelScorer, LinearLabelScorer
from sknce.optim import RowAdagrad

__all__ = ["BagOneVsAllStep", "BagRankingStep", "LinearSoftmaxStep"]


def _bag_step_applies(net, objective: type) -> bool:
    """A label scorer over a (mean) bag encoder without input bias or dropout,
    trained by ``objective``."""
    scorer = net.module_
    return (
        isinstance(scorer, LabelScorer)
        and isinstance(scorer.encoder, BagEncoder)
        and scorer.encoder.normalize
        and scorer.input_bias is None
        and scorer.dropout.p == 0
        and type(net.criterion_) is objective
    )


def _weighted_csr(encoder: BagEncoder, x) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``indptr``, ``indices``, ``data`` of a sparse COO batch as the encoder reads it
    (its ``weighting``, :func:`~sknce.conditional._kernels.weighted_csr`), row-major."""
    x = x.coalesce()
    rows, cols = x.indices().numpy()
    values = x.values().numpy()
    weighting = encoder.weighting
    bag = BAG_CODES["counts" if weighting is None else weighting.bag]
    idf = values[:0] if weighting is None or weighting.idf is None else weighting.idf.numpy()
    indptr, data = weighted_csr(rows, cols, values, x.shape[0], bag, idf.astype(values.dtype))
    if weighting is not None and weighting.n_buckets is not None:
        # the features folded into the table's rows, a row's colliding entries summed, as
        # BagWeighting folds them
        folded = sp.csr_matrix(
            (data, cols % weighting.n_buckets, indptr), shape=(x.shape[0], weighting.n_buckets)
        )
        folded.sum_duplicates()
        return folded.indptr.astype(np.int64), folded.indices.astype(np.int64), folded.data
    return indptr, cols, data


def _views(tables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numpy views (sharing memory) of a feature table, a label table and the label
    biases, or of their optimizer state; absent biases as an empty array."""
    w_in, w_label, bias = (t if t is None else t.detach().numpy() for t in tables)
    return w_in, w_label, np.empty(0, w_in.dtype) if bias is None else bias.reshape(-1)


def _tables(scorer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The scorer's feature rows, label embeddings and label biases (or None)."""
    return scorer.encoder.weight, scorer.label_embedding.weight, scorer.label_bias


def _sample_weights(targets: Targets) -> np.ndarray:
    """The batch's example weights as float32, or an empty array for none."""
    if targets.sample_weight is None:
        return np.empty(0, np.float32)
    return np.ascontiguousarray(targets.sample_weight.numpy(), dtype=np.float32)


class BagRankingStep(KernelStep):
    """Ranking-NCE SGD of a bag encoder and label tables, compiled, over ``n_jobs`` threads.

    Parameters
    ----------
    n_jobs : int, default=1
        Threads of the kernel (Hogwild with more than one: not bit-reproducible).
    """

    def applies(self, net) -> bool:
        """The engine's conditions, and a scorer and objective the kernel implements."""
        return super().applies(net) and _bag_step_applies(net, RankingNCELoss)

    def prepare(self, net, inputs: dict, targets: Targets) -> tuple:
        """The batch as the kernel's arrays, and numpy views of the parameters."""
        scorer = net.module_
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
        batch = (
            *_weighted_csr(scorer.encoder, inputs["x"]),
            labels,
            np.ascontiguousarray(negatives),
            targets.pos_log_noise.numpy(),
            np.ascontiguousarray(neg_log_noise),
            _sample_weights(targets),
        )
        remove_hits = targets.neg_mask is not None
        # Distinct only once the example's own label is removed from the shared set.
        params = _views(_tables(scorer))
        return params, batch, remove_hits, distinct and remove_hits

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        params, batch, remove_hits, distinct = state
        return sgd_bag_ranking(*params, *batch, lo, hi, lr, remove_hits, distinct)


class BagOneVsAllStep(KernelStep):
    """Sampled one-vs-all Adagrad of a bag encoder and label tables, compiled, over
    ``n_jobs`` threads.

    The update of each row is that of ``torch.optim.Adagrad`` (without options) on
    the gradient of the row's :func:`~sknce.losses.multilabel_one_vs_all` loss; the
    sums of squared gradients are the optimizer's own state, so a continued fit, a
    checkpoint or the autograd step carry on from them.

    Parameters
    ----------
    n_jobs : int, default=1
        Threads of the kernel (Hogwild with more than one: not bit-reproducible).
    """

    optimizer = torch.optim.Adagrad

    def applies(self, net) -> bool:
        """The engine's conditions, and a scorer and objective the kernel implements."""
        return super().applies(net) and _bag_step_applies(net, MultilabelOneVsAllLoss)

    def prepare(self, net, inputs: dict, targets: Targets) -> tuple:
        """The batch as the kernel's arrays, numpy views of the parameters and of
        Adagrad's sums."""
        scorer = net.module_
        tables = _tables(scorer)
        state = net.optimizer_.state
        sums = tuple(None if t is None else state[t]["sum"] for t in tables)
        negatives = inputs["negatives"].numpy()
        neg_log_noise = targets.neg_log_noise.numpy()
        if negatives.ndim == 1:  # one set shared by the batch, passed once as (1, K)
            negatives, neg_log_noise = negatives.reshape(1, -1), neg_log_noise[:1]
        # the importance weight 1 / (K p_N(y)) of each drawn label's term
        neg_coef = np.exp(-neg_log_noise.astype(np.float64)) / negatives.shape[1]
        batch = (
            *_weighted_csr(scorer.encoder, inputs["x"]),
            inputs["labels"].numpy(),
            targets.pos_mask.numpy(),
            np.ascontiguousarray(negatives),
            np.ascontiguousarray(targets.neg_mask.numpy()),
            np.ascontiguousarray(neg_coef),
            _sample_weights(targets),
        )
        eps = float(net.optimizer_.param_groups[0]["eps"])
        return _views(tables), _views(sums), batch, eps

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        params, sums, batch, eps = state
        return adagrad_bag_one_vs_all(*params, *sums, *batch, lo, hi, lr, eps)


class LinearSoftmaxStep(KernelStep):
    """The exact softmax of a sparse linear model, compiled, over ``n_jobs`` threads.

    Parameters
    ----------
    n_jobs : int, default=1
        Threads of the kernel (Hogwild with more than one: not bit-reproducible).
    optimizer : {RowAdagrad, torch.optim.SGD}, default=RowAdagrad
        The update the kernel implements; the step applies when the net trains
        with this optimizer (RowAdagrad at any ``eps``, its only option).
    margin : float, default=0.0
        The training margin of the objective (``MarginSoftmaxLoss``'s).
    rival : float, default=0.0
        The weight of the objective's one-vs-all term of the label and its best rival
        (``MarginSoftmaxLoss``'s ``rival``).
    rival_threshold : float, default=0.0
        That term's score of even odds (``MarginSoftmaxLoss``'s ``rival_threshold``).
    """

    def __init__(
        self,
        n_jobs: int = 1,
        optimizer: type = RowAdagrad,
        margin: float = 0.0,
        rival: float = 0.0,
        rival_threshold: float = 0.0,
    ) -> None:
        super().__init__(n_jobs)
        self.optimizer = optimizer
        self.margin = float(margin)
        self.rival = float(rival)
        self.rival_threshold = float(rival_threshold)

    def runs(self, device, optimizer: type, options: dict) -> bool:
        """The engine's conditions; RowAdagrad's ``eps`` is the kernel's too."""
        if optimizer is RowAdagrad:
            options = {k: v for k, v in options.items() if k != "eps"}
        return super().runs(device, optimizer, options)

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
            and criterion.rival == self.rival
            and criterion.rival_threshold == self.rival_threshold
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
            *_weighted_csr(scorer.encoder, inputs["x"]),
            targets.labels.numpy(),
            empty if weights is None else np.ascontiguousarray(weights.numpy(), np.float32),
        )
        eps = net.optimizer_.param_groups[0].get("eps", 0.0)
        return params, batch, eps

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        params, batch, eps = state
        return sgd_linear_softmax(
            *params, *batch, lo, hi, lr, self.margin, eps, self.rival, self.rival_threshold
        )
