"""Docstrings that state a schedule constant state the value the estimator uses.

The one schedule rule (``BaseNCE._schedule``) reads per-class constants; the
estimators' docstrings say them in words. This test ties the two, so that a changed
constant cannot leave its description behind.
"""

import re

import numpy as np
import pytest
from _registry import REGISTRY
from sklearn.utils._param_validation import StrOptions

import sknce


def _number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_stated_schedule_constants_are_the_classes(name):
    cls = getattr(sknce, name)
    doc = cls.__doc__
    for steps in re.findall(r"about ([\d,]+) gradient steps", doc):
        assert _number(steps) == cls._target_steps
    for steps, low, high in re.findall(
        r"clip\(round\(([\d,]+) / steps_per_epoch\), (\d+), (\d+)\)", doc
    ):
        assert (_number(steps), int(low), int(high)) == (cls._target_steps, *cls._epoch_range)
    for divisor in re.findall(r"clip\(n_\w+ // (\d+), 16, 256\)", doc):
        assert int(divisor) == cls._batch_divisor


def _takes_auto(cls, param: str) -> bool:
    return any(
        isinstance(c, StrOptions) and "auto" in c.options
        for c in cls._parameter_constraints.get(param, ())
    )


def test_each_auto_schedule_is_stated():
    """An estimator whose max_epochs takes "auto" states the rule (and only such a one)."""
    stated = {
        name for name in REGISTRY if re.search(r"clip\(round\(", getattr(sknce, name).__doc__)
    }
    auto = {name for name in REGISTRY if _takes_auto(getattr(sknce, name), "max_epochs")}
    assert stated == auto
    assert len(auto) >= 5


def test_the_rule_gives_what_the_docstrings_say():
    est = sknce.DirectNCEEmbedder()  # about 400 steps in 5..200 epochs, batch n // 8
    assert est._schedule(1000, 900, continues=False) == (125, 50)  # 8 steps an epoch
    assert est._schedule(100, 90, continues=False) == (16, 67)


# --- the classifier's plan (``sknce.conditional._plan``) -----------------------------------
#: For each constant of sknce.conditional._plan that the classifier's docstring states:
#: the parameter whose description states it, a pattern whose groups capture the stated
#: numbers, and (where it is not the one number itself) how the constant reads as those
#: numbers.
_PLAN_STATED = {
    "BAG_NEGATIVES": ("n_negatives", r'"auto"``: \d+; ([\d,]+) for the bag encoder'),
    "AUTOGRAD_NEGATIVES": ("n_negatives", r'"auto"``: ([\d,]+); \d+ for the bag encoder'),
    "BAG_DIM": ("embedding_dim", r"([\d,]+) otherwise \(the bag encoder included\)"),
    "BAG_EXAMPLES": (
        "max_epochs",
        r"about ([\d.]+) million example updates, ``clip\(round\(([\d.e]+) /",
        lambda v: (v / 1e6, v),
    ),
    "BAG_EPOCH_RANGE": ("max_epochs", r"8e5 / n_train\), (\d+), (\d+)\)``", lambda v: v),
    "BAG_WIDE_EPOCHS": ("max_epochs", r"25\)``, at most (\d+) epochs\s+where the label space"),
    "LINEAR_EXAMPLES": (
        "max_epochs",
        r"about ([\d,]+) example updates,\s+``clip\(round\(([\d.e]+) /",
        lambda v: (v, v),
    ),
    "LINEAR_EPOCH_RANGE": ("max_epochs", r"2e5 / n_train\), (\d+), (\d+)\)``", lambda v: v),
    "AUTOGRAD_BATCH": ("batch_size", r'"auto"``: ([\d,]+); [\d,]+ for the models'),
    "BAG_BATCH": ("batch_size", r'"auto"``: \d+; ([\d,]+) for the models'),
    "BAG_LR_PER_ENTRY": ("lr", r"SGD, ([\d.]+) times the mean number of stored entries"),
    "BAG_LR_RANGE": ("lr", r"within \[([\d.]+), ([\d.]+)\]", lambda v: v),
    "END_LR": ("lr", r"decaying linearly to\s+([\d.]+)% of it", lambda v: (100 * v,)),
    "LINEAR_LR": ("lr", r"\(or SGD\), ([\d.]+) over the square root"),
    "LINEAR_LR_RANGE": ("lr", r"of that mean, within \[([\d.]+), ([\d.]+)\]", lambda v: v),
    "ADAM_LR": ("lr", r"else ([\d.e-]+)\.$"),
    "LINEAR_COST": ("hidden_layer_sizes", r"costs at most (\d+) times the factored"),
    "LINEAR_MAX_WEIGHTS": (
        "hidden_layer_sizes",
        r"holds at most (\d+)\*\*(\d+) numbers",
        lambda v: (2, round(__import__("math").log2(v))),
    ),
    "LINEAR_FEW_ROWS": ("hidden_layer_sizes", r"times more below (\d+) training rows per"),
    "LINEAR_FEW_ROWS_SCALE": ("hidden_layer_sizes", r"up to (\d+) times more below \d+"),
    "LINEAR_MARGIN": ("hidden_layer_sizes", r"additive margin of ([\d.]+)"),
    "LINEAR_SGD_LR_MANY_ROWS": ("lr", r"the rate falls to ([\d.]+) with many"),
    "LINEAR_SGD_LR_FEWER_ROWS": ("lr", r"rises to ([\d.]+) with fewer than"),
    "LINEAR_IDF_POWER_FEWER_ROWS": ("lr", r"falls to ([\d.]+),\s+``plan_.idf_power``"),
    "LINEAR_FEWER_ROWS": (
        "hidden_layer_sizes",
        r"rising to [\d.]+ below ([\d.]+) rows per class, in full\s+from ([\d.]+),",
        lambda v: (v[1], v[0]),
    ),
    "LINEAR_MARGIN_CLASSES": ("hidden_layer_sizes", r"damping \(from ([\d,]+) classes,"),
    "LINEAR_MARGIN_RAMP": (
        "hidden_layer_sizes",
        r"half way at ([\d.]+) times",
        lambda v: (1 + v,),
    ),
    "LINEAR_SGD_RAMP": (
        "hidden_layer_sizes",
        r"its damping there, ([\d.]+) times with many",
        lambda v: (1 + v,),
    ),
    "LINEAR_MARGIN_ROWS": (
        "hidden_layer_sizes",
        r"fewer than\s+([\d.]+) rows per class",
        lambda v: (v[1],),
    ),
    "LINEAR_WIDE_CLASSES": (
        "hidden_layer_sizes",
        r"twice that rate between ([\d,]+) and ([\d,]+) classes",
        lambda v: v,
    ),
    "LINEAR_WIDER_CLASSES": (
        "hidden_layer_sizes",
        r"\d+/3 times it between ([\d,]+) and ([\d,]+) classes",
        lambda v: v,
    ),
    "LINEAR_WIDE": (
        "hidden_layer_sizes",
        r"to (\d+)/3 times it between",
        lambda v: (3 * (1 + v),),
    ),
    "LINEAR_FEWEST_ROWS": (
        "hidden_layer_sizes",
        r"at ([\d.]+) training rows per class or fewer \(none from ([\d.]+) rows\)",
        lambda v: v,
    ),
    "LINEAR_FEWEST_WIDE": (
        "hidden_layer_sizes",
        r"on to (\d+)/3 times it\s+at",
        lambda v: (3 * (1 + v),),
    ),
    "LINEAR_STEEP_CLASSES": (
        "hidden_layer_sizes",
        r"twice that rate from ([\d,]+) to ([\d,]+) classes",
        lambda v: v,
    ),
    "LINEAR_RIVAL": ("hidden_layer_sizes", r"the loss adds ([\d.]+) times a\s+one-vs-all"),
    "LINEAR_RIVAL_ROWS": (
        "hidden_layer_sizes",
        r"with ([\d.]+) training rows per class or\s+fewer \(none from ([\d.]+)\)",
        lambda v: v,
    ),
    "SPARSE_RATIO": ("sparse_embeddings", r"at least (\d+) times as many rows"),
    "LINEAR_SGD_LR": ("lr", r"plus ([\d.]+) times the damping"),
    "LINEAR_DAMPING_CLASSES": ("lr", r"damping ``\(n_classes / ([\d,]+)\) \*\* \d+``"),
    "LINEAR_DAMPING_POWER": ("lr", r"damping ``\(n_classes / [\d,]+\) \*\* (\d+)``"),
    "LINEAR_THREAD_WORK": ("n_jobs", r"one thread per ([\d,]+) multiply-adds"),
    "LINEAR_REFIT_ROWS": (
        "early_stopping",
        r"from ([\d.]+) to ([\d.]+) training rows per class \(none at ([\d.]+) or fewer or"
        r" from ([\d.]+),",
        lambda v: (v[0][1], v[1][0], v[0][0], v[1][1]),
    ),
    "LINEAR_REFIT_CLASSES": (
        "early_stopping",
        r"from ([\d,]+) classes \(none up to ([\d,]+), linear",
        lambda v: (v[1], v[0]),
    ),
    "LINEAR_REFIT_LONGER": (
        "early_stopping",
        r"it trains ([\d.]+) times those epochs",
        lambda v: (1.0 + v,),
    ),
    "LINEAR_REFIT_MIX": ("early_stopping", r"take ([\d.]+) of those of a second refit"),
}


def _parameter_text(doc: str, name: str) -> str:
    """The description of parameter ``name`` in a numpydoc docstring, on one line."""
    match = re.search(
        rf"\n    {name} : [^\n]*\n(.*?)(?=\n    \w+ : |\n\n    [A-Z]\w+\n)", doc, re.S
    )
    assert match, f"the docstring describes no parameter {name!r}"
    return " ".join(match.group(1).split())


def _plan_constants() -> set:
    from sknce.conditional import _plan

    return {
        name
        for name, value in vars(_plan).items()
        if name.isupper()
        and isinstance(value, (int, float, tuple))
        and all(isinstance(v, (int, float)) for v in np.atleast_1d(value))
    }


def test_every_plan_constant_is_stated_by_the_docstring():
    missing = _plan_constants() - set(_PLAN_STATED)
    assert not missing, (
        f"{sorted(missing)}: state each in the ConditionalNCEClassifier docstring and add "
        "it to _PLAN_STATED here, so that the docstring cannot fall behind its value"
    )


@pytest.mark.parametrize("constant", sorted(_PLAN_STATED))
def test_the_stated_plan_constants_are_the_classifiers(constant):
    from sknce.conditional import _plan

    assert hasattr(_plan, constant), f"{constant} is gone: remove it from _PLAN_STATED"
    parameter, pattern, *reading = _PLAN_STATED[constant]
    as_stated = reading[0] if reading else lambda v: (v,)
    text = _parameter_text(sknce.ConditionalNCEClassifier.__doc__, parameter)
    found = re.search(pattern, text)
    assert found, f"the description of {parameter} no longer states {constant}: {text!r}"
    stated = tuple(float(v.replace(",", "")) for v in found.groups())
    expected = as_stated(getattr(_plan, constant))
    assert stated == pytest.approx(tuple(float(v) for v in expected), rel=1e-12), constant
