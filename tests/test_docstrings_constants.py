"""Docstrings that state a schedule constant state the value the estimator uses.

The one schedule rule (``BaseNCE._schedule``) reads per-class constants; the
estimators' docstrings say them in words. This test ties the two, so that a changed
constant cannot leave its description behind.
"""

import re

import pytest
from _registry import REGISTRY

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


def test_each_auto_schedule_is_stated():
    stated = {
        name for name in REGISTRY if re.search(r"clip\(round\(", getattr(sknce, name).__doc__)
    }
    assert stated == {
        "LandmarkNCEEmbedder",
        "DirectNCEEmbedder",
        "ConditionalNCEClassifier",
        "ConditionalNCERegressor",
        "LatentClassNCEEmbedder",
    }


def test_the_rule_gives_what_the_docstrings_say():
    est = sknce.DirectNCEEmbedder()  # about 400 steps in 5..200 epochs, batch n // 8
    assert est._schedule(1000, 900, continues=False) == (125, 50)  # 8 steps an epoch
    assert est._schedule(100, 90, continues=False) == (16, 67)
