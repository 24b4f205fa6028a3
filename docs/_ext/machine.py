"""The NCE machine of "The NCE core" page, drawn and tabulated from the code at build time.

* :func:`draw` draws the machine (matplotlib's ``plot`` directive calls it): the parts
  of a training step in their order, each with the hook of the fit skeleton that makes
  it. The hooks are read from :class:`sknce._base.BaseNCE`, so a renamed hook fails
  the build instead of leaving a stale picture.
* The ``sknce-machine-table`` directive fits every estimator of ``sknce._ESTIMATORS``
  at its defaults on small data of the kind its tags declare, and reads the parts
  that trained it from its network: the sampler (the dataset's), the miner, the
  scorer, the objective and the step that ran. A new estimator appears with no edit
  here; a part that changes changes the table.
* The ``sknce-refusals-table`` directive lists, for every estimator, the parameters a
  continued fit refuses (its ``_param_roles``' :class:`~sknce._checks.Fixed` roles,
  with their reasons) and, where an estimator's ``_continued_roles`` fixes more after
  a fit in some regime, that method's summary. The parameters every estimator refuses
  alike come first, in a row of their own. A new estimator needs no row anywhere.
"""

from __future__ import annotations

import inspect
import warnings
from typing import NamedTuple

import numpy as np
from docutils import nodes
from docutils.parsers.rst import Directive
from skorch.callbacks import Callback

import sknce
from sknce._base import BaseNCE
from sknce._checks import Fixed


class Part(NamedTuple):
    """One part of the machine: its name, the hook that makes it, what it does."""

    name: str
    hook: str
    does: str


#: The parts of a training step, in the order a batch passes them.
PARTS = (
    Part("sampler", "_make_dataset", "draws a batch:\npositives and noise"),
    Part("miner", "_make_miner", "optional: negatives\nthat depend on the model"),
    Part("scorer", "_make_module", "scores each\n(example, candidate) pair"),
    Part("objective", "_make_objective", "turns the scores\ninto a loss"),
    Part("step", "_make_step", "updates the\nparameters"),
)

#: What the skeleton does before and after the parts run, with its hooks.
BEFORE = ("_validate_fit_data", "_start_fit / _continue_fit")
AFTER = ("_after_fit",)


def _hooks_exist() -> None:
    hooks = [part.hook for part in PARTS]
    hooks += [hook for step in (*BEFORE, *AFTER) for hook in step.split(" / ")]
    missing = [hook for hook in hooks if not hasattr(BaseNCE, hook)]
    if missing:
        raise AttributeError(f"BaseNCE has no hook {missing}: update docs/_ext/machine.py")


def draw():
    """Draw the machine: the skeleton's steps, then the parts a batch passes through."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    _hooks_exist()
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3.6)
    ax.axis("off")
    width, gap = 1.62, 0.42
    left = (10 - len(PARTS) * width - (len(PARTS) - 1) * gap) / 2
    centres = []
    for i, part in enumerate(PARTS):
        x = left + i * (width + gap)
        optional = part.name == "miner"
        box = FancyBboxPatch(
            (x, 1.15),
            width,
            1.25,
            boxstyle="round,pad=0.04,rounding_size=0.12",
            facecolor="#f4f4f4" if optional else "#dcebf7",
            edgecolor="#5a7fa8",
            linestyle="--" if optional else "-",
        )
        ax.add_patch(box)
        ax.text(x + width / 2, 2.12, part.name, ha="center", va="center", weight="bold")
        ax.text(x + width / 2, 1.66, part.does, ha="center", va="center", fontsize=7.5)
        ax.text(
            x + width / 2, 0.9, part.hook + "()", ha="center", va="center", fontsize=7.5,
            family="monospace", color="#34495e",
        )  # fmt: skip
        centres.append(x + width / 2)
    for i in range(len(PARTS) - 1):
        start, end = left + i * (width + gap) + width, left + (i + 1) * (width + gap)
        ax.add_patch(
            FancyArrowPatch((start, 1.78), (end, 1.78), arrowstyle="-|>", mutation_scale=12)
        )
    # the step updates the scorer's parameters: once per batch, in skorch's epoch loop
    ax.add_patch(
        FancyArrowPatch(
            (centres[-1], 2.42),
            (centres[2], 2.42),
            connectionstyle="arc3,rad=0.22",
            arrowstyle="-|>",
            mutation_scale=12,
            color="#a85a5a",
        )
    )
    ax.text(
        (centres[2] + centres[-1]) / 2, 3.3,
        "the scorer's new parameters: every batch of every epoch (skorch's loop)",
        ha="center", fontsize=8, color="#a85a5a",
    )  # fmt: skip
    ax.text(
        0.1, 0.3, "fit / partial_fit:  " + "  ->  ".join(f"{h}()" for h in BEFORE)
        + "  ->  the parts above train  ->  " + "  ->  ".join(f"{h}()" for h in AFTER),
        fontsize=7.5, family="monospace", color="#34495e",
    )  # fmt: skip
    fig.tight_layout()
    return fig


# --- the per-estimator table -------------------------------------------------------------
class _Parts(Callback):
    """Records the dataset's sampler when training begins (skorch hands it the dataset)."""

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        self.sampler_ = type(getattr(X, "sampler", X)).__name__


def _small_data(estimator, sparse: bool):
    """Small training data of the kind ``estimator``'s tags declare: ``(X, y)``."""
    from sknce.datasets import make_topic_corpus

    tags = estimator.__sklearn_tags__()
    rng = np.random.default_rng(0)
    if tags.input_tags.string:  # token lists
        words = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
        return [list(rng.choice(words[k % 2], size=15)) for k in range(200)], None
    corpus = make_topic_corpus(200, n_topics=3, n_words=60, mean_length=40, random_state=0)
    if tags.input_tags.positive_only or sparse:  # counts
        X, labels = corpus.X, corpus.target
        if not sparse:
            X = X.toarray()
    else:
        labels = rng.integers(0, 3, size=200)
        X = rng.normal(scale=3, size=(3, 5))[labels] + rng.normal(size=(200, 5))
    if tags.estimator_type == "regressor":
        return X, np.asarray(X[:, 0].todense()).ravel() if sparse else X[:, 0] - X[:, 1]
    return X, (labels if tags.target_tags.required else None)


def parts_of(name: str) -> dict[str, str]:
    """The parts that train estimator ``name`` at its defaults, per kind of input.

    The estimator is fitted for one epoch on dense data of its kind and, when its tags
    accept sparse input, on sparse counts; a part that differs between the two is
    given for each.
    """
    cls = getattr(sknce, name)
    forms = ["dense"]
    if cls().__sklearn_tags__().input_tags.sparse:
        forms.append("sparse")
    found: dict[str, dict[str, str]] = {}
    for form in forms:
        recorder = _Parts()
        estimator = cls(callbacks=[recorder])
        if "max_epochs" in estimator.get_params():
            estimator.set_params(max_epochs=1)
        X, y = _small_data(estimator, sparse=form == "sparse")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one epoch on small data: a fit, not a model
            estimator.fit(*([X] if y is None else [X, y]))
        net = estimator.net_
        criterion = net.criterion_
        objective = type(criterion).__name__
        if hasattr(criterion, "objective"):  # a wrapper adding a penalty
            objective = f"{objective}({type(criterion.objective).__name__})"
        found[form] = {
            "sampler": recorder.sampler_,
            "miner": type(net.miner).__name__ if net.miner is not None else "none",
            "scorer": type(net.module_).__name__,
            "objective": objective,
            "step": type(net.step_).__name__,
        }
    merged = {}
    for part in found["dense"]:
        values = {form: parts[part] for form, parts in found.items()}
        if len(set(values.values())) == 1:
            merged[part] = values["dense"]
        else:
            merged[part] = "; ".join(f"{value} ({form} X)" for form, value in values.items())
    return merged


class MachineTable(Directive):
    """``.. sknce-machine-table::``: the parts of every estimator, read from fits."""

    def run(self):
        _hooks_exist()
        header = ["estimator", *(part.name for part in PARTS)]
        rows = [[name, *(parts_of(name)[p.name] for p in PARTS)] for name in sknce._ESTIMATORS]
        table = nodes.table()
        group = nodes.tgroup(cols=len(header))
        table += group
        for _ in header:
            group += nodes.colspec(colwidth=1)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        for cells, section in [(header, head)] + [(row, body) for row in rows]:
            row_node = nodes.row()
            for text in cells:
                entry = nodes.entry()
                shown = nodes.Text(text) if section is head else nodes.literal(text, text)
                entry += nodes.paragraph("", "", shown)
                row_node += entry
            section += row_node
        return [table]


# --- the parameters a continued fit refuses ----------------------------------------------
class Refusals(NamedTuple):
    """One row of the refusals table.

    ``estimator`` is a name of ``sknce._ESTIMATORS``, or ``""`` for the parameters every
    estimator refuses alike; ``fixed`` holds ``(parameters, why)`` groups, one per
    reason, in the order of ``_param_roles``; ``regime`` is the summary (reST) of the
    estimator's own ``_continued_roles``, or ``""`` when it has none.
    """

    estimator: str
    fixed: tuple[tuple[tuple[str, ...], str], ...]
    regime: str


def _fixed(roles: dict) -> dict[str, str]:
    """``{parameter: why}`` of the :class:`Fixed` roles of ``roles``."""
    return {name: role.why for name, role in roles.items() if isinstance(role, Fixed)}


def _grouped(fixed: dict[str, str]) -> tuple[tuple[tuple[str, ...], str], ...]:
    groups: dict[str, list[str]] = {}
    for name, why in fixed.items():
        groups.setdefault(why, []).append(name)
    return tuple((tuple(names), why) for why, names in groups.items())


def _regime(cls: type) -> str:
    """The first paragraph of ``cls``'s own ``_continued_roles`` docstring, or ``""``."""
    method = cls._continued_roles
    if method is BaseNCE._continued_roles:
        return ""
    if not method.__doc__:
        raise ValueError(
            f"{cls.__name__}._continued_roles has no docstring: its summary states, for "
            "the guarantees page, which parameters a fit in which regime fixes"
        )
    return " ".join(inspect.cleandoc(method.__doc__).split("\n\n")[0].split())


def refusal_rows() -> list[Refusals]:
    """The rows of ``sknce-refusals-table``: every estimator's refused parameters.

    The first row holds the :class:`Fixed` parameters of :class:`BaseNCE` that every
    estimator of ``sknce._ESTIMATORS`` fixes for the same reason; each estimator's row
    holds its other :class:`Fixed` parameters and its regime's refusals.
    """
    classes = [getattr(sknce, name) for name in sknce._ESTIMATORS]
    fixed = [_fixed(cls._param_roles) for cls in classes]
    common = {
        name: why
        for name, why in _fixed(BaseNCE._param_roles).items()
        if all(own.get(name) == why for own in fixed)
    }
    rows = [Refusals("", _grouped(common), "")]
    for cls, own in zip(classes, fixed):
        rest = {name: why for name, why in own.items() if name not in common}
        rows.append(Refusals(cls.__name__, _grouped(rest), _regime(cls)))
    return rows


class RefusalsTable(Directive):
    """``.. sknce-refusals-table::``: the parameters each estimator refuses in a continued
    fit, read from its ``_param_roles`` and ``_continued_roles``."""

    def _inline(self, text: str) -> list:
        found, messages = self.state.inline_text(text, self.lineno)
        return found + messages

    def _cell(self, row: Refusals) -> list:
        items = nodes.bullet_list(bullet="*")
        for params, why in row.fixed:
            shown = []
            for i, name in enumerate(params):
                shown += [nodes.Text(", ")] if i else []
                shown.append(nodes.literal(name, name))
            items += nodes.list_item("", nodes.paragraph("", "", *shown, nodes.Text(f": {why}")))
        if row.regime:
            items += nodes.list_item("", nodes.paragraph("", "", *self._inline(row.regime)))
        if not items.children:
            return [nodes.paragraph(text="only those of every estimator")]
        return [items]

    def run(self):
        table = nodes.table()
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=30)
        group += nodes.colspec(colwidth=70)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        cells = [
            [nodes.paragraph(text="Estimator")],
            [nodes.paragraph(text="Refused in a continued fit, and why")],
        ]
        rows = [(head, cells)]
        for row in refusal_rows():
            label = f":class:`~sknce.{row.estimator}`" if row.estimator else "every estimator"
            rows.append((body, [[nodes.paragraph("", "", *self._inline(label))], self._cell(row)]))
        for section, entries in rows:
            row_node = nodes.row()
            for content in entries:
                row_node += nodes.entry("", *content)
            section += row_node
        return [table]


def setup(app):
    app.add_directive("sknce-machine-table", MachineTable)
    app.add_directive("sknce-refusals-table", RefusalsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
