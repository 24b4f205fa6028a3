"""Docstrings that state a schedule constant state the value the estimator uses.

The one schedule rule (``BaseNCE._schedule``) reads per-class constants; the
estimators' docstrings say them in words. This test ties the two, so that a changed
constant cannot leave its description behind.
"""

import re

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


# --- the classifier's fastText regime (``_BAG_*``) ------------------------------------
#: For each ``_BAG_*`` constant of sknce.conditional._classifier that the classifier's
#: docstring states: the parameter whose description states it, a pattern whose groups
#: capture the stated numbers, and (where it is not the one number itself) how the
#: constant reads as those numbers.
_BAG_STATED = {
    "_BAG_NEGATIVES": ("n_negatives", r'"auto"``: \d+; ([\d,]+) for the bag encoder'),
    "_BAG_EXHAUSTIVE": ("n_negatives", r"where with at most ([\d,]+) classes"),
    "_BAG_EXHAUSTIVE_EPOCHS": ("max_epochs", r"and at most (\d+)\s+where every class is scored"),
    "_BAG_DIM": ("embedding_dim", r"([\d,]+) otherwise \(the bag encoder included\)"),
    "_BAG_EXHAUSTIVE_DIM": (
        "embedding_dim",
        r"and ([\d,]+) for the bag\s+encoder trained by SGD where every class is scored",
    ),
    "_BAG_EXAMPLES": (
        "max_epochs",
        r"about ([\d.]+) million example updates, ``clip\(round\(([\d.e]+) /",
        lambda v: (v / 1e6, v),
    ),
    "_BAG_EPOCH_RANGE": ("max_epochs", r"/ n_train\), (\d+), (\d+)\)``", lambda v: v),
    "_BAG_BATCH": ("batch_size", r'"auto"``: \d+; ([\d,]+) for the bag encoder'),
    "_BAG_LR_PER_ENTRY": ("lr", r"SGD, ([\d.]+) times the mean number of stored entries"),
    "_BAG_LR_RANGE": ("lr", r"within \[([\d.]+), ([\d.]+)\]", lambda v: v),
    "_BAG_END_LR": ("lr", r"decaying linearly to ([\d.]+)% of it", lambda v: (100 * v,)),
}


def _parameter_text(doc: str, name: str) -> str:
    """The description of parameter ``name`` in a numpydoc docstring, on one line."""
    match = re.search(
        rf"\n    {name} : [^\n]*\n(.*?)(?=\n    \w+ : |\n\n    [A-Z]\w+\n)", doc, re.S
    )
    assert match, f"the docstring describes no parameter {name!r}"
    return " ".join(match.group(1).split())


def test_every_bag_constant_is_stated_by_the_docstring():
    from sknce.conditional import _classifier

    constants = {name for name in vars(_classifier) if name.startswith("_BAG_")}
    missing = constants - set(_BAG_STATED)
    assert not missing, (
        f"{sorted(missing)}: state each in the ConditionalNCEClassifier docstring and add "
        "it to _BAG_STATED here, so that the docstring cannot fall behind its value"
    )


@pytest.mark.parametrize("constant", sorted(_BAG_STATED))
def test_the_stated_bag_constants_are_the_classifiers(constant):
    from sknce.conditional import _classifier

    assert hasattr(_classifier, constant), f"{constant} is gone: remove it from _BAG_STATED"
    parameter, pattern, *reading = _BAG_STATED[constant]
    as_stated = reading[0] if reading else lambda v: (v,)
    text = _parameter_text(sknce.ConditionalNCEClassifier.__doc__, parameter)
    found = re.search(pattern, text)
    assert found, f"the description of {parameter} no longer states {constant}: {text!r}"
    stated = tuple(float(v.replace(",", "")) for v in found.groups())
    expected = as_stated(getattr(_classifier, constant))
    assert stated == pytest.approx(tuple(float(v) for v in expected), rel=1e-12), constant
