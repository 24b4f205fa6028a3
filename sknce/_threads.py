"""The threads of a fit and of inference: one rule, resolved once per call from ``n_jobs``.

On a machine that other work shares (a laptop with a browser, a CI runner, the
workers of a ``GridSearchCV``), torch's and the BLAS libraries' thread teams
turn the small tensors of most sknce steps into waiting: each operation over
two threads is a parallel region, its threads spin while they wait for each
other between regions, and a thread the system has given to another process
holds the whole step until it runs again. So a fit of small steps runs its
torch operations on one thread, and takes more only for large steps. The price
is an idle machine's: a ``DirectNCEEmbedder`` fit of the demo's corpus on 2 cores
took 29 s on one thread against 52 s on two beside two busy processes, and 13.9 s
against 8.3 s alone (``benchmarks/README.md``, "Threads on a shared machine").

``n_jobs`` is the one setting (sklearn's name, joblib's values):

* ``None``: torch and BLAS run one thread while a training step is smaller than
  :data:`PARALLEL_WORK` multiply-adds (:func:`step_work`, measured on the first
  step of the fit), else as many as the caller allows, ``torch.get_num_threads()``
  when the call begins (``OMP_NUM_THREADS``, a joblib worker's share of the cores,
  the user's ``torch.set_num_threads``); a compiled kernel runs one thread;
* ``k > 0``: ``k`` threads for each; ``k < 0``: ``cores + 1 + k`` (``-1``: every core).

:func:`thread_scope` sets the threads for a fit or an inference call and puts
the caller's settings back when it ends, also when it raises; the plan of the
outermost call rules the calls nested in it (a ``transform`` in a callback).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import torch
from threadpoolctl import ThreadpoolController

from sknce._checks import check_n_jobs

__all__ = [
    "PARALLEL_WORK",
    "ThreadPlan",
    "active_plan",
    "inference_work",
    "raise_threads",
    "step_work",
    "thread_scope",
]

#: Multiply-adds of a training step (or an inference batch) from which ``n_jobs=None``
#: runs torch and BLAS on more than one thread (benchmarks/README.md, issue 34).
PARALLEL_WORK = 1 << 30

_ACTIVE: contextvars.ContextVar[ThreadPlan | None] = contextvars.ContextVar(
    "sknce_thread_plan", default=None
)


@dataclass(frozen=True)
class ThreadPlan:
    """The threads a call may use, resolved once from ``n_jobs``.

    Parameters
    ----------
    limit : int
        Most threads of torch and BLAS: ``n_jobs`` resolved, or the caller's
        ``torch.get_num_threads()`` for ``n_jobs=None``.
    auto : bool
        ``n_jobs=None``: one thread below :data:`PARALLEL_WORK`, ``limit`` above.
    """

    limit: int
    auto: bool

    @classmethod
    def from_n_jobs(cls, n_jobs: int | None) -> ThreadPlan:
        """The plan of ``n_jobs`` in the calling thread (checked by ``check_n_jobs``)."""
        if n_jobs is None:
            return cls(limit=max(1, torch.get_num_threads()), auto=True)
        return cls(limit=check_n_jobs(n_jobs), auto=False)

    def threads_for(self, work: float) -> int:
        """Threads of torch and BLAS for a step (or batch) of ``work`` multiply-adds."""
        if self.auto and work < PARALLEL_WORK:
            return 1
        return self.limit

    @property
    def start(self) -> int:
        """Threads before any step is measured: one with ``n_jobs=None``."""
        return 1 if self.auto else self.limit


def active_plan() -> ThreadPlan | None:
    """The plan of the fit or inference call running in this thread, if any."""
    return _ACTIVE.get()


@functools.cache
def _controller() -> ThreadpoolController:
    # Scanning the loaded libraries takes ~20 ms: once per process. numpy's, scipy's
    # and torch's libraries are loaded before an estimator runs (sklearn loads scipy).
    return ThreadpoolController()


def _set_threads(n: int) -> None:
    torch.set_num_threads(n)
    _controller().limit(limits=n)


@contextlib.contextmanager
def thread_scope(plan: ThreadPlan, work: float | None = None) -> Iterator[ThreadPlan]:
    """Run a call under ``plan``; put the caller's threads back when it ends.

    Parameters
    ----------
    plan : ThreadPlan
    work : float or None, default=None
        Multiply-adds of the call's batches, when known before it runs
        (inference); ``None``: :attr:`ThreadPlan.start` (a fit, whose first step
        is measured by :func:`raise_threads`).

    Yields
    ------
    ThreadPlan
        The plan in force: the outermost call's when calls nest.
    """
    outer = _ACTIVE.get()
    if outer is not None:
        yield outer
        return
    threads = plan.start if work is None else plan.threads_for(work)
    torch_threads = torch.get_num_threads()
    limits = _controller().limit(limits=threads)
    torch.set_num_threads(threads)
    token = _ACTIVE.set(plan)
    try:
        yield plan
    finally:
        _ACTIVE.reset(token)
        limits.restore_original_limits()
        torch.set_num_threads(torch_threads)


def raise_threads(work: float) -> None:
    """Give a fit whose steps are ``work`` multiply-adds the threads of its plan.

    Called once per fit, after its first step; only an ``n_jobs=None`` plan
    changes (a given ``n_jobs`` was set when the fit began, and a compiled step
    keeps torch on one thread beside its own). The scope puts the caller's
    threads back when the fit ends.
    """
    plan = _ACTIVE.get()
    if plan is None or not plan.auto:
        return
    threads = plan.threads_for(work)
    if threads != plan.start:
        _set_threads(threads)


def step_work(parameters: Iterable[torch.Tensor], batch_size: int) -> int:
    """Multiply-adds of a training step, bounded from the gradients a step left.

    A parameter with a dense gradient counts ``batch_size`` times its size (each
    example may meet each of its weights once, forward and back); one with a
    sparse gradient (an embedding table, the rows of the batch's words) counts
    the values of that gradient. Parameters without a gradient count nothing.
    """
    work = 0
    for parameter in parameters:
        grad = parameter.grad
        if grad is None:
            continue
        if grad.is_sparse:
            work += grad._values().numel()
        elif grad.layout == torch.sparse_csr:
            work += grad.values().numel()
        else:
            work += batch_size * parameter.numel()
    return work


def inference_work(
    parameters: Iterable[torch.Tensor], rows: int, looked_up: int | None = None
) -> int:
    """Multiply-adds of an inference batch of ``rows`` examples, bounded.

    Each example may meet each weight once, except that a sparse row meets only the
    input layer's weights of its stored entries: with ``looked_up`` (the number of
    input features of a sparse ``X``), parameters with a dimension of that size
    (the rows of an input layer or an embedding table) count nothing.
    """
    return rows * sum(
        p.numel() for p in parameters if looked_up is None or looked_up not in p.shape
    )
