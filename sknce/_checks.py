"""Checks of input and settings that would otherwise fail deep inside numpy, scipy or torch.

Pure functions: each takes what it checks and raises a ``ValueError`` or
``TypeError`` naming the problem and the fix, or returns nothing. They are
called from the few places every estimator goes through (input validation in
:func:`sknce._compat.validate_data`, the parameter checks of
:class:`~sknce._base.BaseNCE`, chunk loading), so each fault is caught once for
every estimator.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from joblib import effective_n_jobs

from sknce._untraced import built_class

__all__ = [
    "APPLIED",
    "FIXED",
    "Fixed",
    "apply_common_params",
    "built_params",
    "check_accelerator",
    "check_not_a_chunk_list",
    "check_optimizer_step",
    "check_same_classes",
    "check_not_text",
    "check_sparse_structure",
    "check_continued_params",
    "check_n_jobs",
    "changed_params",
    "undeclared_params",
]


def check_not_text(X) -> None:
    """A TypeError naming ``CountVectorizer`` when ``X`` is raw text rather than numbers.

    Parameters
    ----------
    X : object
        The input of an estimator that takes a numeric matrix.

    Raises
    ------
    TypeError
        If ``X`` is a string, or a 1-D sequence or array whose first item is a string.
    """
    if isinstance(X, (str, bytes)):
        first = X
    else:
        one_d = isinstance(X, np.ndarray) and X.ndim == 1
        if not (one_d or (isinstance(X, Sequence) and not hasattr(X, "shape"))) or not len(X):
            return
        first = X[0]
    if not isinstance(first, (str, bytes)):
        return
    raise TypeError(
        f"X holds raw text (e.g. {str(first)[:40]!r}), but this estimator takes a numeric "
        "matrix (rows of word counts or features). Turn the text into counts first, e.g. "
        "make_pipeline(sklearn.feature_extraction.text.CountVectorizer(), estimator); "
        "sknce.ACEWord2Vec learns from text directly."
    )


def check_not_a_chunk_list(X, streams: bool = True) -> None:
    """A ValueError naming the loop to write when ``X`` is a list of chunks, not one array.

    Parameters
    ----------
    X : object
        The input of a method that takes one array (``partial_fit``, ``transform``, ...).
    streams : bool, default=True
        Whether the estimator's ``fit`` takes a stream of chunks (then it is named as
        a way out).

    Raises
    ------
    ValueError
        If ``X`` is a list or tuple whose first item is a 2-D block (a sparse matrix or
        an array with ``ndim == 2``) or an ``(X_chunk, y_chunk)`` pair.
    """
    if not isinstance(X, (list, tuple)) or not X:
        return
    first = X[0]
    if isinstance(first, tuple) and len(first) == 2:
        first = first[0]
    if not (sp.issparse(first) or getattr(first, "ndim", None) == 2):
        return
    way_out = (
        "pass the list to fit, which trains on a stream of chunks"
        if streams
        else "this estimator's fit takes one array, not a stream of chunks"
    )
    raise ValueError(
        f"X is a list of {len(X)} chunks (2-D blocks of rows), but this method takes one "
        "array. Pass the chunks one at a time (for chunk in chunks: "
        "estimator.partial_fit(chunk)), stack them (numpy.vstack, scipy.sparse.vstack), "
        f"or {way_out}."
    )


def check_sparse_structure(X, name: str = "X") -> None:
    """A ValueError when a CSR or CSC matrix's index arrays are not a valid matrix.

    scipy builds such a matrix without complaint, and it fails later in C++ code
    (``vector::_M_default_append``) or gives wrong sums. Checked here: ``indptr``
    starts at 0, never decreases and ends within ``indices``; every index lies
    within the matrix.

    Parameters
    ----------
    X : object
        Checked if it is a sparse matrix or array in CSR or CSC format.
    name : str, default="X"
        The input's name in the message.

    Raises
    ------
    ValueError
        Naming what is wrong and how to rebuild the matrix.
    """
    if not sp.issparse(X) or X.format not in ("csr", "csc"):
        return
    indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
    n_major, n_minor = X.shape if X.format == "csr" else X.shape[::-1]
    line = "row" if X.format == "csr" else "column"
    other = "column" if X.format == "csr" else "row"
    problem = None
    if indptr.ndim != 1 or len(indptr) != n_major + 1:
        problem = (
            f"indptr has {indptr.size} entries where {n_major + 1} (one per {line} + 1) are needed"
        )
    elif indptr[0] != 0:
        problem = f"indptr starts at {indptr[0]} instead of 0"
    elif len(indptr) > 1 and np.any(np.diff(indptr) < 0):
        at = int(np.argmax(np.diff(indptr) < 0))
        problem = f"indptr decreases at {line} {at} ({indptr[at]} then {indptr[at + 1]})"
    elif indptr[-1] > len(indices) or len(indices) != len(X.data):
        problem = (
            f"indptr ends at {indptr[-1]} with {len(indices)} indices and {len(X.data)} "
            "values (they must agree)"
        )
    elif indices.size:
        used = indices[: indptr[-1]]
        if used.size and (used.min() < 0 or used.max() >= n_minor):
            bad = int(used.min()) if used.min() < 0 else int(used.max())
            problem = f"it holds {other} index {bad}, outside 0..{n_minor - 1}"
    if problem is not None:
        raise ValueError(
            f"{name} is a malformed {X.format.upper()} matrix of shape {X.shape}: {problem}. "
            "Rebuild it from valid arrays (scipy.sparse.csr_matrix((data, indices, indptr), "
            "shape=...) with 0 <= indices < n_columns and a non-decreasing indptr), or "
            "rewrite the file it came from."
        )


# --- continued fits (warm_start, partial_fit) after set_params ---------------------------
#
# Each estimator declares, for every parameter of its constructor, what a fit that
# continues the fitted network does with a changed value (``BaseNCE._param_roles``,
# merged from the base's as ``_parameter_constraints`` are): it applies it, or the
# network was built with it and the change is refused.

#: A parameter a continued fit applies: every fit (or inference) reads it afresh, or
#: the estimator brings the fitted network up to date with it (:func:`apply_common_params`,
#: ``BaseNCE._update_net``).
APPLIED = "applied"


@dataclass(frozen=True)
class Fixed:
    """A parameter the fitted network or state was built with: a continued fit refuses
    a change of it.

    Parameters
    ----------
    why : str
        What the parameter fixed, completing "cannot honour the changed parameter(s)
        ... (it ...)".
    """

    why: str = "fixes the network when it is built"


#: The usual :class:`Fixed` role.
FIXED = Fixed()


def undeclared_params(estimator_class: type, roles: dict) -> list[str]:
    """The constructor parameters of ``estimator_class`` without a role in ``roles``.

    Parameters
    ----------
    estimator_class : type
        A :class:`~sknce._base.BaseNCE` subclass.
    roles : dict
        Its ``_param_roles``.

    Returns
    -------
    list of str
        Sorted; roles must be :data:`APPLIED` or a :class:`Fixed`.
    """
    names = estimator_class._get_param_names()
    bad = [n for n, r in roles.items() if r != APPLIED and not isinstance(r, Fixed)]
    if bad:
        raise TypeError(
            f"{estimator_class.__name__}._param_roles gives {bad} a role that is neither "
            "APPLIED nor a Fixed(...) (sknce._checks)."
        )
    return sorted(set(names) - set(roles))


def built_params(estimator) -> dict:
    """The parameters a network is built with (copies of lists, tuples and dicts).

    Parameters
    ----------
    estimator : BaseNCE

    Returns
    -------
    dict
        Stored on the network (``net.built_params``) to compare a continued fit's
        parameters with.
    """
    params = estimator.get_params(deep=False)
    for name, value in params.items():
        if isinstance(value, (list, tuple, dict, set)):
            params[name] = copy.copy(value)
    params["callbacks"] = tuple(estimator.callbacks or ())
    params["optimizer_kwargs"] = dict(estimator.optimizer_kwargs or {})
    return params


def _differs(old, new) -> bool:
    if old is new:
        return False
    if isinstance(old, (tuple, list)) and isinstance(new, (tuple, list)):
        return len(old) != len(new) or any(_differs(a, b) for a, b in zip(old, new))
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() != new.keys() or any(_differs(old[k], new[k]) for k in old)
    if isinstance(old, np.ndarray) and isinstance(new, np.ndarray):
        return not np.array_equal(old, new)
    try:
        return bool(old != new)
    except Exception:  # objects without a usable == (sparse matrices, modules): by identity
        return True


def _shown(value, limit: int = 80) -> str:
    """``repr(value)`` on one line, cut to ``limit`` characters (a message's value)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def changed_params(built: dict, current: dict) -> list[str]:
    """The names whose value in ``current`` differs from ``built`` (present in both)."""
    return [n for n in current if n in built and _differs(built[n], current[n])]


def check_continued_params(estimator, built: dict | None, roles: dict, how: str) -> None:
    """Refuse a continued fit whose :class:`Fixed` parameters changed since the network was built.

    Parameters
    ----------
    estimator : BaseNCE
        Its current parameters.
    built : dict or None
        The parameters the network was built with (``net.built_params``; nets of
        older versions lack them: nothing is checked).
    roles : dict
        The role of each parameter in this continued fit
        (``estimator._continued_roles()``).
    how : str
        ``"partial_fit"`` or ``"fit"`` (with ``warm_start=True``), for the message.

    Raises
    ------
    ValueError
        Naming each changed parameter, what it fixed, and how to refit.
    """
    if built is None:
        return
    # compared as stored (optimizer_kwargs=None as {}, callbacks as a tuple), shown as set
    current = built_params(estimator)
    changed = [n for n in changed_params(built, current) if isinstance(roles.get(n), Fixed)]
    if not changed:
        return
    shown = estimator.get_params(deep=False)
    detail = "; ".join(
        f"{n}: {_shown(built[n])} -> {_shown(shown[n])} (it {roles[n].why})" for n in changed
    )
    raise ValueError(
        f"{type(estimator).__name__}.{how} continues the fitted network, which cannot "
        f"honour the changed parameter(s) {detail}. To train with them, refit from "
        "scratch: fit with warm_start=False (or on clone(estimator)); partial_fit "
        "continues with the settings of its first call. Or set them back."
    )


def apply_common_params(estimator, net) -> None:
    """Apply the changed common training settings to a continued fit's net.

    Applied: a changed ``batch_size`` (an int; a change to ``"auto"`` keeps the
    network's), ``optimizer`` and its options (a new optimizer, whose state starts
    afresh), ``callbacks`` (sknce's own ones, then the new user callbacks) and the
    early stopping's ``patience`` (``lr``, ``max_epochs`` and ``verbose`` are set on
    the net by every fit). Call it after the net's snapshot: a failed fit puts the
    net's settings back.

    Parameters
    ----------
    estimator : BaseNCE
        Its current parameters.
    net : NCENet
        The fitted network, with ``built_params`` (nets of older versions lack them:
        nothing is applied).

    Raises
    ------
    ValueError
        When the new ``optimizer_kwargs`` drop an option of the fitted optimizer.
    """
    built = getattr(net, "built_params", None)
    if built is None:
        return
    current = built_params(estimator)
    updates: dict = {}
    if _differs(built["batch_size"], current["batch_size"]) and not isinstance(
        current["batch_size"], str
    ):
        updates["batch_size"] = current["batch_size"]
    old_kwargs, new_kwargs = built["optimizer_kwargs"], current["optimizer_kwargs"]
    if _differs(built["optimizer"], current["optimizer"]) or _differs(old_kwargs, new_kwargs):
        dropped = sorted(set(old_kwargs) - set(new_kwargs))
        if dropped:
            raise ValueError(
                f"{type(estimator).__name__} cannot remove the optimizer option(s) "
                f"{dropped} from the fitted network's optimizer in a continued fit; set "
                "them to the value you want instead, or refit from scratch "
                "(warm_start=False)."
            )
        net.optimizer = estimator._optimizer_class()
        for key, value in estimator._optimizer_options().items():
            setattr(net, f"optimizer__{key}", value)
        net.initialize_optimizer()
    if _differs(built["callbacks"], current["callbacks"]):
        own = list(net.callbacks)[: len(net.callbacks) - len(built["callbacks"])]
        updates["callbacks"] = own + list(current["callbacks"])
    if updates:
        net.set_params(**updates)
    if "callbacks" in updates:
        net.initialize_callbacks()  # skorch's set_params initialises the previous list
    stopping = dict(net.callbacks_).get("early_stopping")
    if stopping is not None:
        stopping.patience = estimator.patience
    net.built_params = current


#: ``n_jobs`` may ask for up to this many threads per core of the machine.
MAX_THREADS_PER_CORE = 4


def check_n_jobs(n_jobs) -> int:
    """The threads of a compiled step for ``n_jobs`` (joblib's meaning), or an error.

    ``None`` means 1 (unless a ``joblib.parallel_config`` says otherwise) and ``-1``
    every core (``-2`` all but one, ...), as in joblib.

    Parameters
    ----------
    n_jobs : int or None
        The estimator's parameter.

    Returns
    -------
    int
        The number of threads, at least 1.

    Raises
    ------
    TypeError
        If ``n_jobs`` is not an int or None (a bool, a float, a string).
    ValueError
        If ``n_jobs`` is 0, or asks for more than :data:`MAX_THREADS_PER_CORE`
        threads per core of the machine.
    """
    if n_jobs is None:
        return effective_n_jobs(None)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise TypeError(
            f"n_jobs must be an int or None, got {n_jobs!r} ({type(n_jobs).__name__}); "
            "None or 1 for one thread, -1 for every core."
        )
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError(
            "n_jobs=0 asks for no thread; use None or 1 for one thread, -1 for every core."
        )
    cores = effective_n_jobs(-1)
    if n_jobs > MAX_THREADS_PER_CORE * cores:
        raise ValueError(
            f"n_jobs={n_jobs} asks for more threads than {MAX_THREADS_PER_CORE} per core of "
            f"this machine ({cores} cores): the compiled step's threads share the cores and "
            "gain nothing beyond them. Use -1 for every core."
        )
    return effective_n_jobs(n_jobs)


def check_same_classes(classes, classes_) -> None:
    """A ValueError when a later ``partial_fit`` declares other classes than the first.

    Parameters
    ----------
    classes : array-like or None
        The ``classes`` argument of this call (``None``: nothing to check).
    classes_ : ndarray
        The classes fixed by the first call.
    """
    if classes is None:
        return
    given = np.unique(np.asarray(classes))
    if given.shape == classes_.shape and np.array_equal(given, classes_):
        return
    added = np.setdiff1d(given, classes_)
    missing = np.setdiff1d(classes_, given)
    raise ValueError(
        "classes differ from those of the first partial_fit call: "
        f"{added.tolist()[:5]} added, {missing.tolist()[:5]} missing (as scikit-learn, "
        "classes are fixed by the first call; later calls may omit them). To change the "
        "classes, refit from scratch: a new estimator's partial_fit, or fit."
    )


# --- settings that cannot train together ------------------------------------------------


def check_accelerator(accelerator) -> None:
    """A TypeError when ``accelerator`` is a class rather than an instance."""
    if isinstance(accelerator, type):
        raise TypeError(
            f"accelerator must be an instance, e.g. accelerate.Accelerator(), not the class "
            f"{accelerator.__name__}: create it once per process (with its options, such "
            "as mixed_precision) and pass it."
        )


def check_optimizer_step(optimizer: type, kwargs: dict, lr: float, sparse: bool) -> None:
    """Take one step of ``optimizer`` on a stand-in CPU parameter; name what fails.

    Options that torch accepts when the optimizer is built but rejects at its first
    step (``capturable=True`` on the CPU, sparse gradients for an optimizer without
    sparse support, weight decay with sparse gradients) are found here, before
    training starts, instead of in its first batch.

    Parameters
    ----------
    optimizer : type
        A torch optimizer class.
    kwargs : dict
        ``optimizer_kwargs``.
    lr : float
    sparse : bool
        Whether the network's embedding tables have sparse gradients
        (``sparse_embeddings=True``).

    Raises
    ------
    ValueError
        Naming the combination and what to use instead.
    """
    error = _first_step_error(optimizer, kwargs, lr, sparse)
    if error is not None:
        if kwargs.get("capturable") or kwargs.get("fused"):
            option = "capturable=True" if kwargs.get("capturable") else "fused=True"
            raise ValueError(
                f"optimizer_kwargs has {option}, which {optimizer.__name__} supports only "
                f"for parameters on a GPU; this fit trains on the CPU ({error}). Remove "
                f"{option.split('=')[0]} from optimizer_kwargs, or set device='cuda'."
            ) from None
        if sparse and _first_step_error(optimizer, kwargs, lr, sparse=False) is None:
            raise ValueError(
                f"sparse_embeddings=True gives sparse gradients, which {optimizer.__name__} "
                f"with optimizer_kwargs={kwargs!r} cannot take ({error}). Use "
                "optimizer=sknce.optim.LazyAdam, torch.optim.SGD or torch.optim.Adagrad "
                "without weight_decay, or set sparse_embeddings=False."
            ) from None
        raise ValueError(
            f"optimizer={optimizer.__name__} with optimizer_kwargs={kwargs!r} and lr={lr} "
            f"fails on its first step: {error}"
        ) from None


def _first_step_error(optimizer: type, kwargs: dict, lr: float, sparse: bool) -> Exception | None:
    """What one step of ``optimizer`` on a stand-in CPU parameter raises, or None."""
    # from zeros: a random initialisation would draw from torch's global generator
    table = torch.nn.Embedding.from_pretrained(torch.zeros(3, 2), freeze=False, sparse=sparse)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # what the stand-in's step says is not the fit's
            step = built_class(optimizer)(table.parameters(), lr=lr, **kwargs)

            def closure() -> torch.Tensor:  # as skorch steps: closure optimizers need it
                step.zero_grad()
                loss = table(torch.tensor([0, 1])).sum()
                loss.backward()
                return loss

            step.step(closure)
    except (RuntimeError, ValueError, TypeError, AssertionError) as error:
        return error
    return None
