"""Checks of skorch's ``Checkpoint`` and ``LoadInitState`` callbacks, before training.

skorch's :class:`~skorch.callbacks.Checkpoint` reports a failed save only in its
log (silent at ``verbose=0``), and :class:`~skorch.callbacks.LoadInitState` loads
any checkpoint whose tensors fit: weights trained on another vocabulary of the same
size load without a word. :class:`CheckpointGuard`, placed before the user's
callbacks, checks before the first epoch that each checkpoint directory can be
written, and that a checkpoint about to be loaded is whole and was written by a
network like this one: the same parameter names and shapes, and the same
*fingerprints* (buffers named ``*_fingerprint``, such as the vocabulary hash that
:func:`stamp_fingerprint` gives :class:`~sknce.ACEWord2Vec`'s network).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import hashlib
import io
import json
import os
import pathlib
import pickletools
import sys
import tempfile
import weakref
from collections.abc import Iterable, Sequence

import torch
from skorch.callbacks import Callback, Checkpoint, LoadInitState, TrainEndCheckpoint

from sknce._files import Transaction, recover

__all__ = [
    "CheckpointGuard",
    "checkpoint_guards",
    "checkpoint_saves",
    "save_params_atomically",
    "stamp_fingerprint",
]

_SUFFIX = "_fingerprint"
# The transaction of the checkpoint files saved by one notify, by net: kept beside the
# net, not in it, since Checkpoint(f_pickle=...) pickles the net during that notify.
_PENDING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# The callbacks of these events save checkpoints (Checkpoint, TrainEndCheckpoint).
_SAVING_EVENTS = ("on_epoch_end", "on_train_end")


def save_params_atomically(save_params, net, files: dict, use_safetensors: bool) -> None:
    """skorch's ``save_params``, each file written whole or not at all.

    Each file named by a path is written to a verified temporary file that then
    replaces it (``sknce._files``): a full disk or a killed process leaves the
    previous file as it was, where skorch's own save leaves it truncated or empty.
    While the callbacks of an epoch's end run (:func:`checkpoint_saves`), the files
    join that event's transaction and replace their targets together when the
    callbacks are done; otherwise each is replaced at once. A failure raises an
    ``OSError`` naming the file and the cause (or the writer's own error).

    Parameters
    ----------
    save_params : callable
        skorch's ``NeuralNet.save_params`` (bound).
    net : NeuralNet
    files : dict
        The ``f_*`` arguments (paths, file objects or None).
    use_safetensors : bool
    """
    direct = {k: v for k, v in files.items() if not isinstance(v, (str, os.PathLike))}
    if any(v is not None for v in direct.values()):
        save_params(**direct, use_safetensors=use_safetensors)
    paths = {k: v for k, v in files.items() if isinstance(v, (str, os.PathLike))}
    if not paths:
        return
    pending = _PENDING.get(net)
    with contextlib.ExitStack() as stack:
        transaction = pending if pending is not None else stack.enter_context(Transaction())
        for key, path in paths.items():
            with transaction.stream(path, compress=False) as stream:
                # skorch writes the history as text, and closes the file it is given.
                text = key == "f_history"
                target = io.TextIOWrapper(stream, encoding="utf8") if text else stream
                save_params(**{key: target}, use_safetensors=use_safetensors)
                if not target.closed:
                    target.flush()


@contextlib.contextmanager
def checkpoint_saves(net, method_name: str):
    """Around a ``notify``: the checkpoint files its callbacks save switch in together.

    At the end of an epoch (and of training) skorch's ``Checkpoint`` saves each file
    by a separate call and catches the errors, logging them (silent at
    ``verbose=0``) and training on. Here the files join one transaction
    (``sknce._files.Transaction``), committed when the callbacks have run: all
    of the epoch's files replace the previous checkpoint together, or, if one failed
    (a full disk), none does and the fit stops with an ``OSError`` naming the file
    and the cause. A callback that stops the fit (``KeyboardInterrupt``, an error)
    after the checkpoint saved keeps the files saved, as skorch does.

    Parameters
    ----------
    net : NeuralNet
    method_name : str
        The event notified.
    """
    if method_name not in _SAVING_EVENTS:
        yield
        return
    transaction = _PENDING[net] = Transaction()
    try:
        with _pickles_through(net, transaction):
            yield
    except BaseException as stop:
        if stop is transaction.error:  # the net's pickle could not be written
            _commit(transaction)
        # A later callback stopped the fit (a KeyboardInterrupt ends it gracefully):
        # the files saved before it are whole, and are kept as skorch keeps them.
        try:
            _commit(transaction)
        except Exception as error:
            stop.add_note(str(error))
        raise
    finally:
        _PENDING.pop(net, None)
    _commit(transaction)


def _checkpoints_of(net) -> list[Checkpoint]:
    """The ``Checkpoint`` callbacks of ``net``, those inside a ``TrainEndCheckpoint`` too."""
    found = []
    for _, callback in getattr(net, "callbacks_", ()):
        if isinstance(callback, TrainEndCheckpoint):
            callback = getattr(callback, "checkpoint_", None)
        if isinstance(callback, Checkpoint):
            found.append(callback)
    return found


@contextlib.contextmanager
def _pickles_through(net, transaction: Transaction):
    """For one event, ``Checkpoint(f_pickle=...)`` pickles the net into ``transaction``.

    skorch's ``Checkpoint.save_model`` opens the ``f_pickle`` path itself (a full disk
    leaves the pickle truncated and the previous one lost) unless ``f_pickle`` is a
    file object, which it writes to as it is. So each path is replaced, for the event,
    by a :class:`_PickleFile` writing to the event's transaction (in checkpoints that
    save as skorch's ``Checkpoint`` does, not in subclasses with a ``save_model`` of
    their own).
    """
    swapped = []
    for checkpoint in _checkpoints_of(net):
        target = checkpoint.f_pickle
        # A subclass with its own save_model may read f_pickle as a path: left as it is.
        ours = type(checkpoint).save_model is Checkpoint.save_model
        if ours and target and isinstance(target, (str, pathlib.Path)):
            checkpoint.f_pickle = _PickleFile(target, checkpoint, net, transaction)
            swapped.append((checkpoint, target))
    try:
        yield
    finally:
        for checkpoint, target in swapped:
            checkpoint.f_pickle = target


def _whole_pickle(path) -> None:
    """Raise an OSError unless ``path`` holds one pickle, ended by its STOP opcode.

    Reads the opcodes without running them: a pickling that failed half way (an
    object that cannot be pickled) leaves a pickle without its end.
    """
    last = None
    with open(path, "rb") as f:
        try:
            for opcode, _, _ in pickletools.genops(f):
                last = opcode.name
        except ValueError:  # cut short inside an opcode
            last = None
        if last != "STOP" or f.read(1):
            raise OSError(
                errno.EIO, "it does not hold a whole pickle (the pickling stopped before its end)"
            )


class _PickleFile:
    """The file object skorch's ``Checkpoint`` pickles the net into, for one event.

    Its bytes go to a verified temporary file of the event's transaction, which
    replaces the pickle together with the epoch's other files (or, if anything
    failed, leaves the previous ones). Pickled itself (the net holds its
    checkpoints), it is the user's ``f_pickle`` again.
    """

    def __init__(self, target, checkpoint, net, transaction: Transaction) -> None:
        self.target = target
        self._checkpoint = checkpoint
        self._net = net
        self._transaction = transaction
        self._stack: contextlib.ExitStack | None = None
        self._stream = None

    def __reduce__(self):
        return copy.copy, (self.target,)

    def _open(self) -> None:
        path = self._checkpoint._format_target(self._net, self.target, -1)
        self._stack = contextlib.ExitStack()
        self._stream = self._stack.enter_context(
            self._transaction.stream(path, compress=False, verify=_whole_pickle)
        )

    def write(self, data) -> int:
        if self._stream is None:
            self._open()
        try:
            return self._stream.write(data)
        except BaseException:
            # The transaction's stream names the file and marks the save failed.
            stack, self._stack = self._stack, None
            stack.__exit__(*sys.exc_info())
            raise

    def close(self) -> None:
        """End the file: whole or not, :func:`_whole_pickle` decides at the commit."""
        if self._stream is None:
            self._open()  # nothing pickled yet: an empty file, refused at the commit
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()


def _commit(transaction: Transaction) -> None:
    """Switch in an event's checkpoint files; an error that says the fit stops."""
    stops = "The fit stops rather than train on without its checkpoint."
    try:
        transaction.commit()
    except OSError as error:
        message = f"a checkpoint could not be saved: {error.strerror or error} {stops}"
        raise OSError(error.errno, message) from error
    except Exception as error:
        raise RuntimeError(
            f"a checkpoint could not be saved ({type(error).__name__}: {error}). {stops}"
        ) from error


def stamp_fingerprint(module: torch.nn.Module, name: str, items: Sequence[str]) -> None:
    """Record a hash of ``items`` in ``module``'s state as the buffer ``<name>_fingerprint``.

    The buffer travels with the weights in every checkpoint, so that a
    :class:`CheckpointGuard` can refuse a checkpoint of other items (e.g. another
    vocabulary of the same size).

    Parameters
    ----------
    module : torch.nn.Module
    name : str
        What the items are, e.g. ``"vocabulary"``.
    items : sequence of str
        In order: a reordering is another fingerprint.
    """
    digest = hashlib.sha256()
    for item in items:
        digest.update(item.encode("utf8", "surrogatepass") + b"\0")
    value = int.from_bytes(digest.digest()[:8], "little", signed=True)
    tensor = torch.tensor([value, len(items)], dtype=torch.int64)
    key = name + _SUFFIX
    if key in module._buffers:
        module._buffers[key] = tensor.to(module._buffers[key].device)
    else:
        module.register_buffer(key, tensor)


def checkpoint_guards(callbacks: Iterable | None, estimator: str) -> list:
    """``[("checkpoint_guard", CheckpointGuard(...))]`` if ``callbacks`` hold a checkpoint.

    Parameters
    ----------
    callbacks : iterable of Callback or (name, Callback), or None
        The user's callbacks.
    estimator : str
        The estimator's class name, for the messages.

    Returns
    -------
    list of (str, Callback)
    """
    found = [c[1] if isinstance(c, tuple) else c for c in callbacks or ()]
    if any(isinstance(c, (Checkpoint, LoadInitState, TrainEndCheckpoint)) for c in found):
        return [("checkpoint_guard", CheckpointGuard(found, estimator))]
    return []


def _target_dirs(callback) -> list[str]:
    """Directories a ``Checkpoint`` or ``TrainEndCheckpoint`` writes its files into."""
    dirs = set()
    for key, value in callback._f_kwargs().items():
        if key != "f_history_" and isinstance(value, (str, os.PathLike)) and value:
            path = os.path.join(callback.dirname, callback.fn_prefix + str(value))
            dirs.add(os.path.dirname(path) or ".")
    return sorted(dirs)


def _check_writable(directory: str) -> None:
    """Raise a ValueError unless files can be created in ``directory`` (or where it will be)."""
    existing = os.path.abspath(directory)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    problem = None
    if not os.path.isdir(existing):
        problem = f"{existing} is a file, not a directory"
    else:
        try:
            with tempfile.TemporaryFile(dir=existing):
                pass
        except OSError as exc:
            problem = f"{type(exc).__name__}: {exc}"
    if problem:
        raise ValueError(
            f"Checkpoint cannot write into {directory!r} ({problem}); skorch would skip "
            "every save and train without a checkpoint. Pass a writable dirname."
        )


@contextlib.contextmanager
def _history_swapped(net, history):
    saved = net.history
    net.history = history
    try:
        yield
    finally:
        net.history = saved


class CheckpointGuard(Callback):
    """Check the user's checkpoint callbacks before training (see the module docstring).

    Parameters
    ----------
    callbacks : list of Callback
        The user's callbacks, among them the ``Checkpoint``, ``TrainEndCheckpoint``
        and ``LoadInitState`` to check.
    estimator : str
        The estimator's class name, for the messages.
    """

    def __init__(self, callbacks: list, estimator: str) -> None:
        self.callbacks = callbacks
        self.estimator = estimator

    def initialize(self):
        # Before the checkpoints' own initialize, which creates their directories.
        self._check_directories()
        return self

    def on_train_begin(self, net, **kwargs) -> None:
        self._check_directories()
        for callback in self.callbacks:
            if isinstance(callback, LoadInitState) and not getattr(callback, "did_load_", True):
                self._check_loadable(net, callback)

    def _check_directories(self) -> None:
        for callback in self.callbacks:
            if isinstance(callback, (Checkpoint, TrainEndCheckpoint)):
                for directory in _target_dirs(callback):
                    _check_writable(directory)

    # --- the checkpoint a LoadInitState is about to load --------------------------------
    def _check_loadable(self, net, load_state: LoadInitState) -> None:
        checkpoint = load_state.checkpoint
        if isinstance(checkpoint, TrainEndCheckpoint):
            checkpoint = checkpoint.checkpoint_
        history = net.history
        if checkpoint.f_history is not None:
            path = checkpoint.f_history_
            if not os.path.exists(path):
                return  # nothing saved yet: LoadInitState loads nothing either
            history = self._read_history(net, path)
        with _history_swapped(net, history):
            files = checkpoint.get_formatted_files(net)
        for path in files.values():
            if isinstance(path, (str, os.PathLike)):
                recover(path)  # the temporary files of a killed save
        safetensors = load_state.use_safetensors
        for key, attribute in (("f_params", "module_"), ("f_criterion", "criterion_")):
            path = files.get(key)
            if isinstance(path, (str, os.PathLike)) and os.path.exists(path):
                state = self._read_state(path, safetensors)
                self._compare(path, getattr(net, attribute).state_dict(), state)
        path = files.get("f_optimizer")
        if isinstance(path, (str, os.PathLike)) and os.path.exists(path) and not safetensors:
            self._compare_optimizer(path, net.optimizer_.state_dict())

    def _read_history(self, net, path: str):
        try:
            with open(path, encoding="utf8") as f:
                rows = json.load(f)
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ValueError("not a list of epochs")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"the checkpoint's history file {path} is truncated or damaged ({exc}), so "
                "LoadInitState cannot resume from it. Delete the checkpoint's files (or "
                "point Checkpoint to another dirname) to start afresh."
            ) from None
        return type(net.history)(rows)

    def _read_state(self, path: str, safetensors: bool) -> dict:
        try:
            if safetensors:
                from safetensors.torch import load_file

                return load_file(path, device="cpu")
            return torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch and safetensors raise many types for bad files
            raise ValueError(
                f"the checkpoint file {path} cannot be read ({type(exc).__name__}: "
                f"{str(exc)[:200]}): it is truncated or damaged, or was saved "
                f"{'without' if safetensors else 'with'} safetensors. Delete the "
                "checkpoint's files to start afresh."
            ) from None

    def _compare(self, path: str, ours: dict, theirs) -> None:
        fix = (
            "Point Checkpoint and LoadInitState to another dirname (or fn_prefix) for "
            "this model, or delete the checkpoint's files to start afresh."
        )
        if not isinstance(theirs, dict):
            raise ValueError(f"the checkpoint file {path} holds no state dict. {fix}")
        missing = sorted(set(ours) - set(theirs))
        extra = sorted(set(theirs) - set(ours))
        shapes = [
            f"{k}: {tuple(theirs[k].shape)} instead of {tuple(ours[k].shape)}"
            for k in sorted(set(ours) & set(theirs))
            if torch.is_tensor(theirs[k]) and theirs[k].shape != ours[k].shape
        ]
        if missing or extra or shapes:
            details = "; ".join(
                part
                for part in (
                    f"missing {missing[:4]}" if missing else "",
                    f"unexpected {extra[:4]}" if extra else "",
                    f"shapes {shapes[:4]}" if shapes else "",
                )
                if part
            )
            raise ValueError(
                f"the checkpoint file {path} was written by another network than this "
                f"{self.estimator}'s ({details}): another estimator, or other parameters "
                f"(n_components, vocabulary, classes, hidden_layer_sizes). {fix}"
            )
        for key in ours:
            if key.endswith(_SUFFIX) and not torch.equal(ours[key].cpu(), theirs[key].cpu()):
                what = key[: -len(_SUFFIX)]
                raise ValueError(
                    f"the checkpoint file {path} was trained on another {what} than this "
                    f"{self.estimator}'s ({int(theirs[key][1])} and {int(ours[key][1])} "
                    "items, not the same ones in the same order): its weights belong to "
                    f"other items. {fix}"
                )

    def _compare_optimizer(self, path: str, ours: dict) -> None:
        theirs = self._read_state(path, safetensors=False)
        groups = theirs.get("param_groups") if isinstance(theirs, dict) else None
        sizes = [len(g.get("params", ())) for g in groups] if isinstance(groups, list) else None
        if sizes != [len(g["params"]) for g in ours["param_groups"]]:
            raise ValueError(
                f"the checkpoint file {path} holds the state of another optimizer (parameter "
                f"groups of sizes {sizes}, this {self.estimator}'s has "
                f"{[len(g['params']) for g in ours['param_groups']]}). Point Checkpoint and "
                "LoadInitState to another dirname, or delete the checkpoint's files."
            )
