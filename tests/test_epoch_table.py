"""The verbose epoch table and the history: the best epoch is the one restored, chance beside
the losses, colour only on a terminal."""

import contextlib
import io
import math
from types import SimpleNamespace

import numpy as np
import pytest
from skorch.history import History

from sknce import DirectNCEEmbedder
from sknce._callbacks import ChanceAwareEarlyStopping, EpochTable
from sknce.datasets import make_topic_corpus


def _run(losses, chance, threshold=1e-2, patience=10):
    """Feed scripted validation losses to the early stopping; return the history."""
    net = SimpleNamespace(history=History(), verbose=0)
    stopping = ChanceAwareEarlyStopping(patience=patience, chance=chance, threshold=threshold)
    stopping.on_train_begin(net)
    for epoch, loss in enumerate(losses, start=1):
        net.history.new_epoch()
        net.history.record("epoch", epoch)
        net.history.record("valid_loss", loss)
        # what skorch's scoring callback records before: the plain running minimum
        net.history.record("valid_loss_best", loss == min(losses[:epoch]))
        stopping.on_epoch_end(net)
    return net.history, stopping


def test_best_epoch_in_history_is_the_one_early_stopping_keeps():
    # epoch 1-2 at chance (not best whatever their value), 3 beats it, 4 improves by more
    # than the threshold, 5 improves by less than the threshold: 4 stays best.
    chance = math.log(2)
    losses = [0.6930, 0.6925, 0.60, 0.50, 0.4999]
    history, stopping = _run(losses, chance)
    assert history[:, "valid_loss_best"] == [False, False, True, True, False]
    assert stopping.best_epoch_ == 4


def test_epoch_table_colours_only_a_terminal(monkeypatch):
    row = {"epoch": 3, "valid_loss": 0.5, "valid_loss_best": True, "train_loss": 0.6}
    table = EpochTable().initialize()
    monkeypatch.setattr("sys.stdout", io.StringIO())  # not a terminal
    plain = table.table(row)
    assert "\033[" not in plain and "0.5000*" in plain

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdout", Terminal())
    assert "\033[" in table.table(row)


def test_a_silent_table_formats_nothing_and_a_verbose_one_or_a_sink_prints(monkeypatch):
    history = History()
    history.new_epoch()
    history.record("epoch", 1)
    history.record("train_loss", 0.5)
    for verbose, sink, printed in ((0, print, False), (1, print, True), (0, "sink", True)):
        lines = []
        table = EpochTable(sink=lines.append if sink == "sink" else print).initialize()
        out = io.StringIO()
        monkeypatch.setattr(
            table, "table", lambda row, real=table.table, seen=lines: seen.append(0) or real(row)
        )
        with contextlib.redirect_stdout(out):
            table.on_epoch_end(SimpleNamespace(history=history, verbose=verbose))
        assert bool(lines) == printed
        assert ("train_loss" in out.getvalue()) == (printed and sink is print)


@pytest.mark.filterwarnings(r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning")
def test_fit_records_chance_and_verbose_table_marks_restored_epoch():
    X = make_topic_corpus(n_documents=300, n_words=60, n_topics=3, random_state=0).X
    est = DirectNCEEmbedder(
        n_components=4,
        hidden_layer_sizes=(),
        max_epochs=12,
        patience=3,
        verbose=1,
        random_state=0,
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        est.fit(X)
    text = out.getvalue()
    assert "\033[" not in text  # redirected output: no colour codes
    chance = est._chance_loss()
    assert all(row["chance_loss"] == pytest.approx(chance) for row in est.history_)
    assert "chance_loss" in text
    best = [row["epoch"] for row in est.history_ if row.get("valid_loss_best")]
    restored = est.net_.callbacks_[[n for n, _ in est.net_.callbacks_].index("early_stopping")]
    assert best and best[-1] == restored[1].best_epoch_
    for row in est.history_:  # the table stars exactly the best epochs' validation losses
        assert (f"{row['valid_loss']:.4f}*" in text) == bool(row["valid_loss_best"])
    assert np.isclose(chance, math.log(2)) or est.n_negatives != 1
