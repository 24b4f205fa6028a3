"""Every constructor parameter of every estimator is declared, and a continued fit
(``warm_start`` or ``partial_fit``) honours or refuses each change as declared (issue 30).

For each registry entry, each of its modes, each parameter and each way of continuing,
the parameter is changed on a fitted estimator (``A``) and the fit continued:

* a parameter the fitted estimator declares :class:`~sknce._checks.Fixed` must be
  refused, with an error naming it and the fix, the estimator left as it was;
* an :data:`~sknce._checks.APPLIED` one must change what the continued fit gives (its
  weights, outputs, history, the network's settings or what it prints), unless the
  same change made from the start (``C``, a new fit with the new value, continued)
  changes nothing either (the parameter plays no part in that mode); or the
  estimator refuses the value with an error naming the parameter.

Every applied parameter must make a difference in some mode, so that no check above
passes vacuously.
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
import sys
from functools import cache
from numbers import Integral, Real
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from _registry import Mode
from skorch.callbacks import Callback
from test_common import ESTIMATORS, N_SAMPLES, REGISTRY
from test_training_contract import _assert_same_state, _state

from sknce._checks import Fixed, _shown
from sknce._compat import Interval, StrOptions
from sknce.optim import LazyAdam

pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning",
        r"ignore:\d+ document\(s\)( of the stream)? with fewer than 2 tokens:UserWarning",
        "ignore:.*:sklearn.exceptions.ConvergenceWarning",
    ),
]

HOWS = ("warm_start", "partial_fit")

#: Fast settings over each entry's: two epochs, reproducible kernels.
FAST = {"max_epochs": 2}


class Marker(Callback):
    """A user callback whose effect shows in the history."""

    def on_epoch_end(self, net, **kwargs):
        net.history.record("marker", True)


class _Accelerator:
    """Has the methods of accelerate.Accelerator (never reached: the change is refused)."""

    def prepare(self, *args):
        return args

    def unwrap_model(self, model):
        return model


#: Values of the parameters whose constraints do not say how to make another value.
OBJECT_VALUES = {
    "optimizer": [torch.optim.SGD, LazyAdam],
    "optimizer_kwargs": [{"weight_decay": 0.01}],
    "callbacks": [[("marker", Marker())]],
    "encoder": [torch.nn.Identity],
    "accelerator": [_Accelerator()],
    "tokenizer": [lambda text: text.split()[1:]],
    "trim_rule": [lambda word, count, min_count: 1],
    "init_vectors": ["__words__"],  # the fitted estimator's own vectors (see _alternative)
    "landmarks": ["words"],
    "classes": [[0, 1, 2, 3]],
    "class_weight": [{0: 3.0}],
    "hidden_layer_sizes": [(5,)],
    "input_bias_layer_sizes": [(7,)],
    "noise_scales": [(0.3,)],
    "random_state": [7],
    "device": ["auto"],
    "verbose": [1],
    "n_jobs": [2],
    "sample": [1e-3],
}


def _interval_values(interval: Interval, value) -> list:
    """In-range values near ``value`` (or near the interval's bounds)."""
    low = interval.left if interval.left is not None else 0
    if isinstance(value, Real) and not isinstance(value, bool):
        if interval.type is Integral:
            candidates = [value + 1, value - 1, low + 1]
        else:
            candidates = [value * 0.5, value * 2, value + 0.5, low + 0.25, low + 1]
    else:
        candidates = [low + 2, low + 1] if interval.type is Integral else [low + 0.25, low + 1]
    return [v for v in candidates if interval.is_satisfied_by(v)]


def _alternative(estimator, name: str):
    """A valid value of parameter ``name`` other than the estimator's."""
    value = estimator.get_params(deep=False)[name]
    candidates = list(OBJECT_VALUES.get(name, []))
    for constraint in type(estimator)._parameter_constraints.get(name, []):
        if constraint == "boolean":
            candidates.append(not value)
        elif isinstance(constraint, StrOptions):
            candidates.extend(sorted(constraint.options - getattr(constraint, "internal", set())))
        elif isinstance(constraint, Interval):
            candidates.extend(_interval_values(constraint, value))
        elif constraint is None:
            candidates.append(None)
    for candidate in candidates:
        if isinstance(candidate, str) and candidate == "__words__":
            candidate = estimator.wv_
        if candidate is value or (
            type(candidate) is type(value) and _same(candidate, value) is True
        ):
            continue
        return candidate
    raise AssertionError(f"no other value of {name} to try: add one to OBJECT_VALUES")


def _same(a, b) -> bool:
    """Whether two observations (nested dicts, lists, arrays, tensors) are equal."""
    if torch.is_tensor(a) or torch.is_tensor(b):
        return (
            torch.is_tensor(a)
            and torch.is_tensor(b)
            and a.shape == b.shape
            and (bool(torch.equal(a, b)))
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or hasattr(a, "toarray"):
        a = a.toarray() if hasattr(a, "toarray") else np.asarray(a)
        b = b.toarray() if hasattr(b, "toarray") else np.asarray(b)
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _settings(obj) -> dict:
    """The public settings of a step, miner or callback (not its fitted state)."""
    return {
        k: v
        for k, v in vars(obj).items()
        if not k.startswith("_") and not k.endswith("_") and not isinstance(v, torch.nn.Module)
    }


def _observe(estimator, X, printed: str) -> dict:
    """What a continued fit gives: weights, outputs, history, the net's settings, output."""
    net = estimator.net_
    outputs = {}
    for method in ("transform", "predict", "predict_proba"):
        if hasattr(estimator, method):
            outputs[method] = getattr(estimator, method)(X)
    return {
        "weights": [t.detach().clone() for t in net.module_.state_dict().values()],
        "outputs": outputs,
        "history": [{k: v for k, v in r.items() if k != "dur"} for r in estimator.history_],
        "net": {
            "batch_size": net.batch_size,
            "lr": net.lr,
            "max_epochs": net.max_epochs,
            "optimizer": type(net.optimizer_),
            "groups": [
                {k: v for k, v in g.items() if k != "params"} for g in net.optimizer_.param_groups
            ],
            "step": (type(net.step_), _settings(net.step_)),
            "miner": None if net.miner is None else _settings(net.miner),
            "config": vars(getattr(net, "config", None) or _Nothing()),
            "callbacks": [(name, _settings(cb)) for name, cb in net.callbacks_],
        },
        "printed": printed,
    }


class _Nothing:
    pass


def _params(name: str, mode) -> dict:
    return {**REGISTRY[name].params, **FAST, **mode.params}


def _sample(name: str, mode) -> tuple:
    """The data of a mode: the mode's kind, else the entry's."""
    return (mode.data or REGISTRY[name].data).make(N_SAMPLES, 0)


def _first_fit(estimator, name: str, mode, how: str):
    entry = REGISTRY[name]
    X, y = _sample(name, mode)
    if how == "warm_start":
        entry.fit(estimator, X, y)
        return estimator.set_params(warm_start=True)
    first = (mode.first_call or entry.first_call)(y)
    return estimator.partial_fit(*entry.args(X, y), **first)


def _continue(estimator, name: str, mode, how: str) -> dict:
    """Continue the fit; its observation."""
    entry = REGISTRY[name]
    X, y = _sample(name, mode)
    out = io.StringIO()
    threads = []  # the torch threads the fit set (n_jobs changes nothing else one can see)
    set_threads = torch.set_num_threads

    def record(n: int) -> None:
        threads.append(n)
        set_threads(n)

    with contextlib.redirect_stdout(out), mock.patch.object(torch, "set_num_threads", record):
        if how == "warm_start":
            entry.fit(estimator, X, y)
        else:
            estimator.partial_fit(*entry.args(X, y))
    return {**_observe(estimator, X, out.getvalue()), "threads": threads}


@cache
def _base(name: str, mode_name: str, how: str):
    mode = REGISTRY[name].all_modes()[mode_name]
    return _first_fit(ESTIMATORS[name](**_params(name, mode)), name, mode, how)


@cache
def _reference(name: str, mode_name: str, how: str) -> dict:
    """The base continued with its parameters unchanged."""
    mode = REGISTRY[name].all_modes()[mode_name]
    return _continue(copy.deepcopy(_base(name, mode_name, how)), name, mode, how)


def _refusal(param: str) -> str:
    return rf"cannot honour the changed parameter\(s\).*\b{param}: .* -> .*refit from scratch"


CASES = [
    (name, param)
    for name, cls in ESTIMATORS.items()
    for param in sorted(cls().get_params(deep=False))
]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_parameter_has_a_declared_role(name):
    cls = ESTIMATORS[name]
    assert set(cls().get_params(deep=False)) == set(cls._param_roles)


def test_a_parameter_without_a_role_is_an_error_when_the_class_is_made():
    from sknce._base import BaseNCE, common_params

    with pytest.raises(TypeError, match=r"_Widened does not declare .* \['width'\].*APPLIED"):

        class _Widened(BaseNCE):
            def __init__(self, *, width=3, **common):
                super().__init__(**common_params(common))
                self.width = width

    with pytest.raises(TypeError, match=r"gives \['width'\] a role that is neither"):

        class _Honoured(BaseNCE):
            _param_roles = {**BaseNCE._param_roles, "width": "honoured"}

            def __init__(self, *, width=3, **common):
                super().__init__(**common_params(common))
                self.width = width


@pytest.mark.parametrize(("name", "param"), CASES)
def test_a_continued_fit_honours_or_refuses_each_change(name, param):
    entry = REGISTRY[name]
    default_roles = _base(name, "default", "warm_start")._continued_roles()
    made_a_difference = False
    for mode_name, mode in entry.all_modes().items():
        for how in HOWS:
            if how == "partial_fit" and param == "warm_start":
                continue  # a setting of fit: partial_fit always continues
            base = _base(name, mode_name, how)
            role = base._continued_roles()[param]
            if mode_name != "default" and isinstance(role, Fixed) and role == default_roles[param]:
                continue  # refused in every mode alike: checked in the default mode
            value = _alternative(base, param)
            changed = copy.deepcopy(base).set_params(**{param: value})
            where = f"{name}({param}={value!r}) in mode {mode_name!r}, continued by {how}"
            if isinstance(role, Fixed):
                before = _state(changed)
                with pytest.raises(ValueError, match=_refusal(param)):
                    _continue(changed, name, mode, how)
                _assert_same_state(changed, before)
                continue
            try:
                observed = _continue(changed, name, mode, how)
            except (ValueError, TypeError) as error:
                assert param in str(error), f"{where}: {error}"
                continue
            if not _same(observed, _reference(name, mode_name, how)):
                made_a_difference = True
                continue
            fresh = _first_fit(
                ESTIMATORS[name](**{**_params(name, mode), param: value}), name, mode, how
            )
            ignored = _same(_continue(fresh, name, mode, how), _reference(name, mode_name, how))
            assert ignored, (
                f"{where}: declared applied, but the continued fit ignored it (the same "
                "change from the start makes a difference)"
            )
    roles = {_base(name, m, "warm_start")._continued_roles()[param] for m in entry.all_modes()}
    if any(not isinstance(role, Fixed) for role in roles):
        assert made_a_difference, f"{name}.{param} made no difference in any mode: add a mode"


# --- the examples of issue 30 -------------------------------------------------------------
def _bag_classifier():
    from sknce import ConditionalNCEClassifier

    mode = REGISTRY["ConditionalNCEClassifier"].modes["bag"]
    X, y = _sample("ConditionalNCEClassifier", mode)
    return ConditionalNCEClassifier(**_params("ConditionalNCEClassifier", mode)).fit(X, y), X, y


def test_an_optimizer_leaving_fasttexts_regime_is_refused_after_a_bag_fit():
    """It trained bit for bit as SGD, silently."""
    clf, X, y = _bag_classifier()
    assert clf.bag_sgd_
    clf.set_params(optimizer=LazyAdam)
    for how in HOWS:
        clf.set_params(warm_start=how == "warm_start")
        before = _state(clf)
        with pytest.raises(
            ValueError,
            match=r"optimizer: <class '.*Adam'> -> <class '.*LazyAdam'> \(it chose the compiled "
            r"step of the bag regime.*torch\.optim\.sgd\.SGD without options: that optimizer "
            r"without optimizer_kwargs continues it.*refit from scratch",
        ) as refused:
            clf.partial_fit(X, y) if how == "partial_fit" else clf.fit(X, y)
        # optimizer_kwargs=None is no options, as the {} the network was built with
        assert "optimizer_kwargs:" not in str(refused.value)
        _assert_same_state(clf, before)
    clf.set_params(optimizer_kwargs={"momentum": 0.5})
    with pytest.raises(ValueError, match=r"optimizer_kwargs: \{\} -> \{'momentum': 0.5\}"):
        clf.partial_fit(X, y)
    clf.set_params(optimizer=torch.optim.SGD, optimizer_kwargs={})  # the regime's own: continues
    clf.partial_fit(X, y)
    clf.set_params(warm_start=False, optimizer=LazyAdam).fit(X, y)  # a refit leaves it
    assert not clf.bag_sgd_ and type(clf.net_.optimizer_) is LazyAdam


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("name", ["ConditionalNCEClassifier", "ACEWord2Vec"])
def test_n_jobs_zero_is_refused_by_a_continued_fit_as_by_fit(name, how):
    """A continued fit accepted it; fit refuses it."""
    mode = REGISTRY[name].all_modes()["bag" if name == "ConditionalNCEClassifier" else "default"]
    estimator = copy.deepcopy(_base(name, "bag" if name != "ACEWord2Vec" else "default", how))
    estimator.set_params(n_jobs=0)
    before = _state(estimator)
    with pytest.raises(ValueError, match=r"n_jobs=0 asks for no thread.*-1 for every core"):
        _continue(estimator, name, mode, how)
    _assert_same_state(estimator, before)
    with pytest.raises(ValueError, match=r"n_jobs=0 asks for no thread"):
        _first_fit(ESTIMATORS[name](**{**_params(name, mode), "n_jobs": 0}), name, mode, how)


def test_changed_subword_settings_are_refused_by_a_continued_fit():
    """partial_fit kept the old min_n and bucket, silently."""
    ace = copy.deepcopy(_base("ACEWord2Vec", "subwords", "partial_fit"))
    ace.set_params(min_n=3, bucket=500)
    before = _state(ace)
    with pytest.raises(ValueError, match=r"bucket: 50 -> 500 .*; min_n: 2 -> 3 .*refit from"):
        _continue(ace, "ACEWord2Vec", REGISTRY["ACEWord2Vec"].modes["subwords"], "partial_fit")
    _assert_same_state(ace, before)


# --- bad changes before a continued fit (attacks) -------------------------------------------
class _Unwrapped:
    """Not a skorch callback."""


#: A change set before a continued fit, the error it must raise and what it must say.
BAD_CHANGES = [
    ({"lr": float("nan")}, ValueError, r"'lr' parameter"),
    ({"lr": float("inf")}, ValueError, r"'lr' parameter"),
    ({"lr": -0.1}, ValueError, r"'lr' parameter"),
    ({"max_epochs": 0}, ValueError, r"'max_epochs' parameter"),
    ({"batch_size": 0}, ValueError, r"'batch_size' parameter"),
    ({"batch_size": 2.5}, ValueError, r"'batch_size' parameter"),
    ({"patience": 0}, ValueError, r"'patience' parameter"),
    ({"validation_fraction": 1.5}, ValueError, r"'validation_fraction' parameter"),
    ({"warm_start": "yes"}, ValueError, r"'warm_start' parameter"),
    ({"optimizer": object}, TypeError, r"optimizer must be a torch optimizer class"),
    ({"optimizer": torch.optim.SparseAdam}, ValueError, r"SparseAdam updates sparse"),
    ({"optimizer_kwargs": {"momentum_typo": 0.9}}, ValueError, r"does not accept"),
    ({"optimizer_kwargs": {"lr": 0.1}}, ValueError, r"must not contain 'lr'"),
    ({"callbacks": [_Unwrapped()]}, TypeError, r"callbacks must be a list of skorch callback"),
    ({"callbacks": "progress"}, ValueError, r"'callbacks' parameter"),
    ({"random_state": 123}, ValueError, _refusal("random_state")),
    ({"device": "cuda"}, ValueError, _refusal("device")),
    ({"early_stopping": "maybe"}, ValueError, r"'early_stopping' parameter"),
]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize(("change", "error", "message"), BAD_CHANGES)
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_bad_change_before_a_continued_fit_is_named_and_changes_nothing(
    name, change, error, message, how
):
    estimator = copy.deepcopy(_base(name, "default", how)).set_params(**change)
    before = _state(estimator)
    with pytest.raises(error, match=message):
        _continue(estimator, name, REGISTRY[name].all_modes()["default"], how)
    _assert_same_state(estimator, before)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_continued_fit_cannot_drop_an_optimizer_option(name, how):
    estimator = ESTIMATORS[name](
        **{
            **_params(name, REGISTRY[name].all_modes()["default"]),
            "optimizer_kwargs": {"eps": 1e-7},
        },
        optimizer=torch.optim.Adam,
    )
    mode = REGISTRY[name].all_modes()["default"]
    _first_fit(estimator, name, mode, how)
    estimator.set_params(optimizer_kwargs={})
    before = _state(estimator)
    with pytest.raises(ValueError, match=r"cannot remove the optimizer option\(s\) \['eps'\]"):
        _continue(estimator, name, mode, how)
    _assert_same_state(estimator, before)
    estimator.set_params(optimizer_kwargs={"eps": 1e-6})  # changed, not removed: applied
    _continue(estimator, name, mode, how)
    assert all(group["eps"] == 1e-6 for group in estimator.net_.optimizer_.param_groups)


class _InterruptFirstBatch(Callback):
    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            raise KeyboardInterrupt


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_interrupted_continued_fit_keeps_its_applied_settings(name):
    """Ctrl-C in the first batch of a continued fit with a new batch size: the fit returns
    (as skorch), the net trained with the new settings and keeps them for the next."""
    mode = REGISTRY[name].all_modes()["default"]
    estimator = copy.deepcopy(_base(name, "default", "partial_fit"))
    estimator.set_params(batch_size=7, callbacks=[_InterruptFirstBatch()])
    _continue(estimator, name, mode, "partial_fit")
    assert estimator.net_.batch_size == 7
    assert estimator.net_.built_params["batch_size"] == 7
    estimator.set_params(callbacks=None)
    _continue(estimator, name, mode, "partial_fit")
    assert estimator.net_.batch_size == 7


# --- n_jobs, the compiled kernels' threads (attacks) ----------------------------------------
#: A value of n_jobs, the error it must raise (None: accepted) and the message, or the
#: threads it gives.
N_JOBS = [
    (0, ValueError, r"n_jobs=0 asks for no thread"),
    (np.int64(0), ValueError, r"n_jobs=0 asks for no thread"),
    (True, TypeError, r"n_jobs must be an int or None, got True"),
    (False, TypeError, r"n_jobs must be an int or None, got False"),
    (2.0, ValueError, r"'n_jobs' parameter"),
    ("2", ValueError, r"'n_jobs' parameter"),
    (float("nan"), ValueError, r"'n_jobs' parameter"),
    ([2], ValueError, r"'n_jobs' parameter"),
    (10**9, ValueError, r"n_jobs=1000000000 asks for more threads than 4 per core"),
    (2**63, ValueError, r"asks for more threads than 4 per core"),
    (np.int64(10**6), ValueError, r"n_jobs=1000000 asks for more threads"),
    (-(10**9), None, 1),  # joblib's meaning: cores + 1 + n_jobs, at least one
    (None, None, 1),
    (np.int32(2), None, 2),
    (-1, None, "cores"),
]


def _threads(expected):
    from joblib import effective_n_jobs

    return effective_n_jobs(-1) if expected == "cores" else expected


@pytest.mark.parametrize("how", ["fit", *HOWS])
@pytest.mark.parametrize(("n_jobs", "error", "expected"), N_JOBS)
@pytest.mark.parametrize("name", ["ConditionalNCEClassifier", "ACEWord2Vec"])
def test_n_jobs_at_fit_and_in_a_continued_fit(name, n_jobs, error, expected, how):
    mode_name = "bag" if name == "ConditionalNCEClassifier" else "default"
    mode = REGISTRY[name].all_modes()[mode_name]
    if how == "fit":
        estimator = ESTIMATORS[name](**{**_params(name, mode), "n_jobs": n_jobs})
        run = lambda: _first_fit(estimator, name, mode, "warm_start")  # noqa: E731
    else:
        estimator = copy.deepcopy(_base(name, mode_name, how)).set_params(n_jobs=n_jobs)
        run = lambda: _continue(estimator, name, mode, how)  # noqa: E731
    if error is not None:
        before = None if how == "fit" else _state(estimator)
        with pytest.raises(error, match=expected):
            run()
        if before is None:
            assert not hasattr(estimator, "net_")
        else:
            _assert_same_state(estimator, before)
        return
    run()
    assert estimator.net_.step_.n_jobs == _threads(expected)


#: Parameters an estimator refuses only after a fit in some regime (its _continued_roles).
REFUSED_BY_REGIME = {
    "ConditionalNCEClassifier": {"optimizer", "optimizer_kwargs"},
    "ACEWord2Vec": {"min_lr_ratio"},
}


def _refusal_rows() -> dict:
    """The rows of the guarantees page's ``sknce-refusals-table`` (docs/_ext/machine.py),
    by estimator name (``""``: every estimator)."""
    pytest.importorskip("docutils")
    sys.path.insert(0, str(Path(__file__).parents[1] / "docs" / "_ext"))
    try:
        from machine import refusal_rows
    finally:
        sys.path.pop(0)
    return {row.estimator: row for row in refusal_rows()}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_the_guarantees_page_lists_the_refused_parameters(name):
    """Each refused parameter once, with its Fixed reason; the regime's from the summary
    of the estimator's own _continued_roles."""
    import sknce
    from sknce._base import BaseNCE

    rows = _refusal_rows()
    assert set(rows) == {"", *sknce._ESTIMATORS}
    cls = ESTIMATORS[name]
    listed = [
        (param, why)
        for row in (rows[""], rows[name])
        for params, why in row.fixed
        for param in params
    ]
    fixed = {p: role.why for p, role in cls._param_roles.items() if isinstance(role, Fixed)}
    assert sorted(listed) == sorted(fixed.items())
    # the common row: BaseNCE's fixed parameters, only those fixed alike by every estimator
    for params, why in rows[""].fixed:
        for param in params:
            assert BaseNCE._param_roles[param] == Fixed(why)
            assert all(other._param_roles[param] == Fixed(why) for other in ESTIMATORS.values())
    regime = rows[name].regime
    assert bool(regime) == (cls._continued_roles is not BaseNCE._continued_roles)
    named = {p for p in re.findall(r"``(\w+)``", regime) if p in cls._param_roles}
    assert named == REFUSED_BY_REGIME.get(name, named), regime
    assert not regime or named, f"{name}._continued_roles' summary names no parameter"


def test_an_equal_new_value_is_no_change():
    """A fixed parameter set again to an equal value (a new array, list or dict) continues."""
    from sknce import ConditionalNCEClassifier

    X, y = _sample("ConditionalNCEClassifier", Mode())
    params = {**REGISTRY["ConditionalNCEClassifier"].params, "max_epochs": 1}
    noise, classes = np.arange(1.0, 7.0) / 21, list(range(6))
    clf = ConditionalNCEClassifier(
        **params, noise=noise, classes=classes, class_weight={0: 2.0}
    ).fit(X, y)
    clf.set_params(noise=noise.copy(), classes=list(classes), hidden_layer_sizes=[8])
    clf.partial_fit(X, y)
    clf.set_params(class_weight={0: 2.0})
    clf.partial_fit(X, y)
    clf.set_params(noise=np.full(6, 1 / 6))
    with pytest.raises(ValueError, match=_refusal("noise")) as refused:
        clf.partial_fit(X, y)
    assert "\n" not in str(refused.value)  # an array's value is shown on one line


def test_a_long_value_is_cut_in_the_refusal():
    shown = _shown(np.arange(1000.0).reshape(100, 10))
    assert len(shown) == 80 and shown.endswith("...") and "\n" not in shown
    assert _shown({"a": [1, 2]}) == "{'a': [1, 2]}"
