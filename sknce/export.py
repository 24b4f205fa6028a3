"""Export a fitted estimator's inference path as one torch module, for deployment.

:func:`to_torch_module` gives a plain :class:`torch.nn.Module` (CPU, float32, eval
mode, no reference to the estimator) that maps a dense float tensor of inputs to what
``transform`` or ``predict_proba`` returns: the input scaling, the network and the
output normalisation of the estimator, in torch. :func:`to_torch_export` traces it
with :func:`torch.export.export` (a batch dimension of any size) and :func:`to_onnx`
writes it as an ONNX model (the optional extra ``export``: ``onnx`` and
``onnxscript``).

:class:`~sknce.ACEWord2Vec` documents are token lists: its module takes word ids,
padded with ``-1``, which :func:`word_ids` builds from the estimator's vocabulary.
"""

from __future__ import annotations

import copy
import errno
import math
import re
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.utils.validation import check_is_fitted
from torch import nn

from sknce import _files

__all__ = ["to_onnx", "to_torch_export", "to_torch_module", "word_ids"]


def _buffer(values) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, dtype=np.float32))


class _BagInput(nn.Module):
    """The network's input from counts: ``sknce._bags.normalize_bags`` in torch.

    Parameters
    ----------
    bag : {"log1p-idf", "tf", "log1p", "counts"}
        The representation (see ``sknce._bags.normalize_bags``).
    idf : ndarray of shape (n_words,) or None
        The fitted inverse document frequencies (``"log1p-idf"`` only).
    """

    def __init__(self, bag: str, idf: np.ndarray | None) -> None:
        super().__init__()
        self.bag = bag
        self.register_buffer("idf", None if idf is None else _buffer(idf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bag == "tf":
            total = x.sum(dim=1, keepdim=True)
            return torch.where(total > 0, x / torch.where(total > 0, total, 1.0), 0.0)
        if self.bag == "log1p":
            return torch.log1p(x)
        if self.bag == "log1p-idf":
            # sklearn's normalize: an empty row stays zero
            return F.normalize(torch.log1p(x) * self.idf, dim=1, eps=1e-30)
        return x


class _StandardInput(nn.Module):
    """``(x - mean) / scale``, as ``sknce.contrastive._scaling.scale_input`` computes it."""

    def __init__(self, mean: np.ndarray | None, scale: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("mean", None if mean is None else _buffer(mean))
        self.register_buffer("inverse", _buffer(1.0 / np.asarray(scale)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x if self.mean is None else x - self.mean) * self.inverse


class _EncoderTransform(nn.Module):
    """Input scaling, then an encoder, then an optional row norm: ``transform``."""

    def __init__(self, scaling: nn.Module, encoder: nn.Module, row_norm: float | None) -> None:
        super().__init__()
        self.scaling = scaling
        self.encoder = encoder
        self.row_norm = row_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.encoder(self.scaling(x))
        if self.row_norm is not None:
            z = F.normalize(z, dim=1) * self.row_norm
        return z


class _LandmarkTransform(nn.Module):
    """Log-odds against the cached landmark encodings, capped, then the output form."""

    def __init__(self, estimator, bags: _BagInput) -> None:
        from sknce.documents._embedders import _LANDMARK_NORM, _MAX_LOG_ODDS
        from sknce.nn import BilinearScorer

        super().__init__()
        self.bags = bags
        self.scorer = copy.deepcopy(estimator._scorer).cpu().float()
        self.bilinear = isinstance(self.scorer, BilinearScorer)
        with torch.no_grad():
            right = self.scorer.encode_right(bags(_dense(estimator.landmarks_)))
        self.register_buffer("right", right)
        self.cap = _MAX_LOG_ODDS if estimator.clip is None else math.log(estimator.clip)
        self.output = estimator.output
        self.norm = _LANDMARK_NORM
        standardized = self.output in ("standardized", "normalized")
        self.register_buffer("mean", _buffer(estimator.output_mean_) if standardized else None)
        self.register_buffer("scale", _buffer(estimator.output_scale_) if standardized else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left = self.scorer.encode_left(self.bags(x))
        if self.bilinear:
            f = left @ self.right.T
        else:
            f = self.scorer.combine(left.unsqueeze(1), self.right.unsqueeze(0))
        f = f.clamp(max=self.cap)
        if self.output == "exp":
            return f.exp()
        if self.output == "log-odds":
            return f
        f = (f - self.mean) / self.scale
        if self.output == "normalized":
            f = F.normalize(f, dim=1, eps=1e-12) * self.norm
        return f


class _ClassProbabilities(nn.Module):
    """Scores of every class, normalised: ``predict_proba`` or ``predict_log_proba``."""

    def __init__(self, scorer: nn.Module, log: bool) -> None:
        super().__init__()
        self.scorer = scorer
        self.log = log

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, b = self.scorer.encode(x)
        log_proba = torch.log_softmax(self.scorer.score_range(h, b), dim=1)
        return log_proba if self.log else log_proba.exp()


class _WordMeanTransform(nn.Module):
    """Weighted mean of word vectors of padded word ids (``-1``: no word), as ACEWord2Vec's."""

    def __init__(self, estimator) -> None:
        super().__init__()
        self.register_buffer("vectors", _buffer(estimator.vectors_))
        from sknce.words._weighting import word_weights

        weights = word_weights(estimator)
        self.register_buffer("weights", None if weights is None else _buffer(weights))
        self.weighting = estimator.weighting
        sif = self.weighting == "sif"
        self.register_buffer("component", _buffer(estimator.sif_component_) if sif else None)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        present = ids >= 0
        safe = ids.clamp(min=0)
        count = present.sum(dim=1, keepdim=True).to(self.vectors.dtype)
        w = present.to(self.vectors.dtype)
        if self.weights is not None:
            w = w * self.weights[safe]
        total = (w.unsqueeze(2) * self.vectors[safe]).sum(dim=1)
        denominator = w.sum(dim=1, keepdim=True) if self.weighting == "tfidf" else count
        out = torch.where(count > 0, total / torch.where(count > 0, denominator, 1.0), 0.0)
        if self.component is not None:
            out = out - (out * self.component).sum(dim=1, keepdim=True) * self.component
        return out


def _dense(X) -> torch.Tensor:
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    return torch.as_tensor(np.asarray(X, dtype=np.float32))


def _frozen(module: nn.Module) -> nn.Module:
    module = module.cpu().float().eval()
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


_METHODS = {
    "LatentClassNCEEmbedder": ("transform",),
    "DirectNCEEmbedder": ("transform",),
    "LandmarkNCEEmbedder": ("transform",),
    "ACEWord2Vec": ("transform",),
    "ConditionalNCEClassifier": ("predict_proba", "predict_log_proba"),
}


def to_torch_module(estimator, method: str | None = None) -> nn.Module:
    """The inference path of a fitted estimator as one torch module.

    The module holds copies of the fitted network and statistics (on the CPU, in
    float32, in eval mode, gradients off), so it keeps working when the estimator
    changes or is gone, and can be scripted, exported or saved with
    :func:`torch.save`. Its ``forward`` takes a dense float32 tensor of shape
    ``(n_samples, n_features_in_)``, the values one passes to the method, and returns
    the method's output (up to float32 rounding). For
    :class:`~sknce.ACEWord2Vec` it takes word ids of shape ``(n_documents, length)``
    padded with ``-1`` (:func:`word_ids`).

    Parameters
    ----------
    estimator : fitted sknce estimator
        :class:`~sknce.LatentClassNCEEmbedder`, :class:`~sknce.DirectNCEEmbedder`,
        :class:`~sknce.LandmarkNCEEmbedder`, :class:`~sknce.ACEWord2Vec` (method
        ``"transform"``) or :class:`~sknce.ConditionalNCEClassifier`
        (``"predict_proba"``, ``"predict_log_proba"``).
    method : str or None, default=None
        The method whose output the module computes; ``None``: the estimator's
        first (``transform``, or ``predict_proba`` for the classifier).

    Returns
    -------
    torch.nn.Module

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sknce import LatentClassNCEEmbedder
    >>> from sknce.export import to_torch_module
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 4)), np.repeat(np.arange(6), 10)
    >>> est = LatentClassNCEEmbedder(n_components=3, max_epochs=2, random_state=0).fit(X, y)
    >>> module = to_torch_module(est)
    >>> Z = module(torch.as_tensor(X, dtype=torch.float32)).numpy()
    >>> bool(np.allclose(Z, est.transform(X), atol=1e-5))
    True
    """
    name = type(estimator).__name__
    methods = _METHODS.get(name)
    if methods is None:
        supported = ", ".join(_METHODS)
        raise TypeError(
            f"to_torch_module exports {supported}; got a {name}. The "
            "ConditionalNCERegressor's density needs scipy's Student-t functions and is "
            "not exported; call its predict from Python."
        )
    method = methods[0] if method is None else method
    if method not in methods:
        raise ValueError(
            f"A {name} exports method {' or '.join(map(repr, methods))}; got {method!r}."
        )
    check_is_fitted(estimator)
    if name == "ACEWord2Vec":
        return _frozen(_WordMeanTransform(estimator))
    if name == "ConditionalNCEClassifier":
        scorer = copy.deepcopy(estimator.net_.module_)
        return _frozen(_ClassProbabilities(scorer, log=method == "predict_log_proba"))
    if name == "LatentClassNCEEmbedder":
        return _frozen(
            _EncoderTransform(
                _latent_scaling(estimator), copy.deepcopy(estimator.net_.module_.encoder), None
            )
        )
    bags = _BagInput(estimator.bag, getattr(estimator, "idf_", None))
    if name == "LandmarkNCEEmbedder":
        return _frozen(_LandmarkTransform(estimator, bags))
    from sknce.documents._embedders import _OUTPUT_NORM

    encoder = _LeftEncoder(copy.deepcopy(estimator._scorer))
    norm = _OUTPUT_NORM if estimator.output == "normalized" else None
    return _frozen(_EncoderTransform(bags, encoder, norm))


class _LeftEncoder(nn.Module):
    """``scorer.encode_left`` as a module's forward."""

    def __init__(self, scorer: nn.Module) -> None:
        super().__init__()
        self.scorer = scorer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scorer.encode_left(x)


def _latent_scaling(estimator) -> nn.Module:
    if estimator.scaling_ == "standard":
        return _StandardInput(estimator.input_mean_, estimator.input_scale_)
    if estimator.scaling_ == "log1p-idf":
        return _BagInput("log1p-idf", estimator.idf_)
    return nn.Identity()


def word_ids(estimator, documents, length: int | None = None) -> torch.Tensor:
    """Word ids of token lists under a fitted :class:`~sknce.ACEWord2Vec`'s vocabulary.

    Parameters
    ----------
    estimator : fitted ACEWord2Vec
        Its ``vocabulary_`` (and ``tokenizer`` for string documents) give the ids.
    documents : iterable of token lists, or of str
        As for ``transform``; out-of-vocabulary words are dropped.
    length : int or None, default=None
        Columns of the result; ``None``: the longest document's in-vocabulary words.

    Returns
    -------
    LongTensor of shape (n_documents, length)
        Ids, padded with ``-1``.
    """
    check_is_fitted(estimator)
    from sknce.words._weighting import encoded

    rows = list(encoded(estimator, documents))
    width = max((len(r) for r in rows), default=0) if length is None else int(length)
    out = torch.full((len(rows), width), -1, dtype=torch.long)
    for i, ids in enumerate(rows):
        if len(ids) > width:
            raise ValueError(
                f"Document {i} has {len(ids)} in-vocabulary words, more than length={width}; "
                "pass a larger length, or None."
            )
        out[i, : len(ids)] = torch.from_numpy(ids)
    return out


def _example(estimator) -> torch.Tensor:
    if type(estimator).__name__ == "ACEWord2Vec":
        return torch.zeros((2, 3), dtype=torch.long)
    return torch.zeros((2, estimator.n_features_in_), dtype=torch.float32)


def to_torch_export(estimator, method: str | None = None):
    """:func:`to_torch_module`, traced by :func:`torch.export.export`.

    The batch dimension (and the length of :class:`~sknce.ACEWord2Vec`'s word ids)
    is dynamic: the program takes any number of rows.

    Parameters
    ----------
    estimator : fitted sknce estimator
        As for :func:`to_torch_module`.
    method : str or None, default=None
        As for :func:`to_torch_module`.

    Returns
    -------
    torch.export.ExportedProgram
        Call ``program.module()(x)``; save it with :func:`torch.export.save`.
    """
    module = to_torch_module(estimator, method)
    example = _example(estimator)
    dims = {0: torch.export.Dim.DYNAMIC}
    if example.dtype == torch.long:
        dims[1] = torch.export.Dim.DYNAMIC
    return torch.export.export(module, (example,), dynamic_shapes=({**dims},), strict=False)


def to_onnx(estimator, path: str | Path, method: str | None = None) -> Path:
    """Write :func:`to_torch_module` as an ONNX model (input ``x``, output ``out``).

    Needs the optional extra ``export`` (``pip install "sknce[export]"``: ``onnx`` and
    ``onnxscript``, torch's ONNX exporter). The batch dimension is dynamic.

    Parameters
    ----------
    estimator : fitted sknce estimator
        As for :func:`to_torch_module`.
    path : str or Path
        The ``.onnx`` file to write.
    method : str or None, default=None
        As for :func:`to_torch_module`.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OSError
        If the model cannot be written or does not read back whole (a full disk:
        the message names the file and the cause); an existing file is unchanged.
    """
    for requirement in ("onnx", "onnxscript"):
        try:
            __import__(requirement)
        except ImportError as error:
            raise ImportError(
                f"to_onnx needs {requirement}: pip install 'sknce[export]' (onnx and onnxscript)."
            ) from error
    # The exported program (dynamic shapes already resolved) converts where the module
    # with dynamic_axes fails to decompose.
    program = to_torch_export(estimator, method)
    path = Path(path)
    # Written beside path and verified, then renamed over it (with its .data file).
    with warnings.catch_warnings(), _files.staged_files(path, verify=_check_onnx_file) as staged:
        # torch's exporter calls its own deprecated pytree API (torch 2.13); not ours to fix.
        warnings.filterwarnings(
            "ignore", re.escape("`isinstance(treespec, LeafSpec)`"), FutureWarning
        )
        torch.onnx.export(
            program, (), str(staged), input_names=["x"], output_names=["out"], dynamo=True
        )
    return path


def _check_onnx_file(path: Path) -> None:
    """Raise an OSError unless ``path`` parses as ONNX and its external data is whole."""
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # protobuf's DecodeError and others
        raise OSError(errno.EIO, f"the ONNX model written does not parse ({error})") from None
    for tensor in model.graph.initializer:
        if uses_external_data(tensor):
            info = ExternalDataInfo(tensor)
            data = path.parent / info.location
            end = (info.offset or 0) + (info.length or 0)
            if not data.is_file() or data.stat().st_size < end:
                raise OSError(errno.EIO, f"the ONNX model's data file {data.name} is incomplete")
