"""Export a fitted estimator's inference path as one torch module, for deployment.

:func:`to_torch_module` gives a plain :class:`torch.nn.Module` (CPU, float32, eval
mode, no reference to the estimator) that maps a dense float tensor of inputs to what
``transform``, ``predict_proba`` or ``predict`` returns. The estimator builds it: each
estimator provides the inference module of each method it exports (the hook
``BaseNCE._inference_module``, with the methods listed in ``_exported_methods``), from
its own fitted network and statistics, so a new estimator or mode exports without any
change here, and a mode that cannot be exported is refused by the estimator, which
says why. :func:`to_torch_export` traces the module with :func:`torch.export.export` (a
batch dimension of any size) and :func:`to_onnx` writes it as an ONNX model (the
optional extra ``export``: ``onnx`` and ``onnxscript``).

:class:`~sknce.ACEWord2Vec` documents are token lists: its module takes word ids,
padded with ``-1``, which :func:`word_ids` builds from the estimator's vocabulary.
"""

from __future__ import annotations

import copy
import os
import re
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted
from torch import nn

from sknce.nn._inference import InferenceModule as _InferenceModule

__all__ = ["to_onnx", "to_torch_export", "to_torch_module", "word_ids"]


def _frozen(module: nn.Module) -> nn.Module:
    module = module.cpu().float().eval()
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


def _exported_methods(estimator) -> tuple[str, ...]:
    """The methods ``estimator`` exports; a TypeError when it is not an sknce estimator."""
    methods = getattr(type(estimator), "_exported_methods", None)
    if not methods:
        from sknce._base import BaseNCE

        what = (
            f"a {type(estimator).__name__}, which exports no method"
            if isinstance(estimator, BaseNCE)
            else f"{type(estimator).__name__!r}, not an sknce estimator"
        )
        raise TypeError(f"to_torch_module exports a fitted sknce estimator; got {what}.")
    return methods


def to_torch_module(estimator, method: str | None = None) -> nn.Module:
    """The inference path of a fitted estimator as one torch module.

    The estimator builds the module (see the module's docstring); it holds copies of
    the fitted network and statistics (on the CPU, in float32, in eval mode,
    gradients off), so it keeps working when the estimator changes or is gone, and can
    be scripted, exported or saved with :func:`torch.save`. Its ``forward`` takes a
    dense float32 tensor of shape ``(n_samples, n_features_in_)``, the values one passes
    to the method, and returns the method's output (up to float32 rounding). For
    :class:`~sknce.ACEWord2Vec` it takes word ids of shape ``(n_documents, length)``
    padded with ``-1`` (:func:`word_ids`). The module states its input:
    ``n_features`` (``None`` for word ids), ``input_dtype`` and ``example()``.

    Parameters
    ----------
    estimator : fitted sknce estimator
        :class:`~sknce.LatentClassNCEEmbedder`, :class:`~sknce.DirectNCEEmbedder`,
        :class:`~sknce.LandmarkNCEEmbedder`, :class:`~sknce.ACEWord2Vec` (method
        ``"transform"``), :class:`~sknce.ConditionalNCEClassifier`
        (``"predict_proba"``, ``"predict_log_proba"``; multi-label: each label's own
        probability, as the estimator's) or :class:`~sknce.ConditionalNCERegressor`
        (``"predict"`` with ``predict_method="mean"``).
    method : str or None, default=None
        The method whose output the module computes; ``None``: the estimator's
        first (``transform``, ``predict_proba`` for the classifier, ``predict`` for
        the regressor).

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    TypeError
        If ``estimator`` is not an sknce estimator that exports a method, or
        ``method`` is not a string.
    ValueError
        If the estimator does not export ``method``, or its fitted mode cannot be
        exported (the message says why).
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.

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
    methods = _exported_methods(estimator)
    name = type(estimator).__name__
    if method is None:
        method = methods[0]
    elif not isinstance(method, str):
        raise TypeError(f"method must be a str such as {methods[0]!r}, got {method!r}.")
    if method not in methods:
        raise ValueError(
            f"A {name} exports method {' or '.join(map(repr, methods))}; got {method!r}."
        )
    check_is_fitted(estimator)
    module = estimator._inference_module(method)
    if not isinstance(module, _InferenceModule):
        raise TypeError(
            f"{name}._inference_module({method!r}) returned a {type(module).__name__}; it "
            "must return an sknce.nn._inference.InferenceModule."
        )
    return _frozen(copy.deepcopy(module))


#: Most columns :func:`word_ids` pads a document to.
_MAX_LENGTH = 2**24


def _check_length(length) -> int | None:
    if length is None:
        return None
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise TypeError(f"length must be an int or None, got {length!r}.")
    if length < 0:
        raise ValueError(f"length must be an int from 0, or None; got {length}.")
    if length > _MAX_LENGTH:
        raise ValueError(
            f"length={length} pads each document to more than {_MAX_LENGTH:,} word ids (the "
            "tensor would not fit in memory); pass the longest document's length, or None."
        )
    return int(length)


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

    Raises
    ------
    TypeError
        If ``estimator`` is not an ACEWord2Vec, ``documents`` is a single string or
        not an iterable, a token is not hashable (naming the document), or ``length``
        is not an int.
    ValueError
        If ``length`` is negative, larger than 2**24, or shorter than a document's
        in-vocabulary words.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    """
    from sknce.words import ACEWord2Vec
    from sknce.words._weighting import encoded

    if not isinstance(estimator, ACEWord2Vec):
        raise TypeError(
            f"word_ids takes a fitted ACEWord2Vec (its vocabulary gives the ids); got a "
            f"{type(estimator).__name__}."
        )
    width = _check_length(length)
    if isinstance(documents, (str, bytes)):
        raise TypeError(
            "documents is a single string; pass an iterable of documents, e.g. [text]."
        )
    if not isinstance(documents, Iterable):
        raise TypeError(
            "documents must be an iterable of documents (token lists or strings), got "
            f"{type(documents).__name__}."
        )
    check_is_fitted(estimator)
    rows = list(encoded(estimator, documents))
    if width is None:
        width = max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), width), -1, dtype=torch.long)
    for i, ids in enumerate(rows):
        if len(ids) > width:
            raise ValueError(
                f"Document {i} has {len(ids)} in-vocabulary words, more than length={width}; "
                "pass a larger length, or None."
            )
        out[i, : len(ids)] = torch.from_numpy(ids)
    return out


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
    example = module.example()
    dims = {0: torch.export.Dim.DYNAMIC}
    if module.n_features is None:  # word ids of any length
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
    TypeError, ValueError, IsADirectoryError, FileNotFoundError
        For a ``path`` that is not a string or path, is empty or holds a null
        character, is a directory, or lies in a directory that does not exist
        (checked before the model is traced); and as :func:`to_torch_module`.
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
    path = _onnx_path(path)
    program = to_torch_export(estimator, method)
    with warnings.catch_warnings():
        # torch's exporter calls its own deprecated pytree API (torch 2.13); not ours to fix.
        warnings.filterwarnings(
            "ignore", re.escape("`isinstance(treespec, LeafSpec)`"), FutureWarning
        )
        torch.onnx.export(
            program, (), str(path), input_names=["x"], output_names=["out"], dynamo=True
        )
    return path


def _onnx_path(path) -> Path:
    """``path`` as a Path to write, or the error naming what is wrong with it."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise TypeError(f"path must be a str or a path-like object, got {path!r}.")
    if not str(path):
        raise ValueError("path is empty; give the .onnx file to write.")
    if "\x00" in str(path):
        raise ValueError(f"path {str(path)!r} holds a null character, which no file name can.")
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"path {str(path)!r} is a directory; name the .onnx file in it.")
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"the directory {str(path.parent)!r} of path {str(path)!r} does not exist; "
            "create it first."
        )
    return path
