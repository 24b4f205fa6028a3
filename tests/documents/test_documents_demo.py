"""The demo runs end to end (tiny settings), prints its steps, its table and what they mean."""

import sys

import numpy as np
import pytest

import sknce.datasets._wiki
from sknce.datasets import load_wiki_chunks
from sknce.demo import main, run_demo

NAMES = [
    "tf-idf",
    "tf-idf + SVD-100",
    "LDA-20",
    "LDA-50",
    "DirectNCE",
    "LandmarkNCE",
]


def test_the_wiki_corpus_is_chunks_of_articles():
    pytest.importorskip("gensim")
    texts, labels = load_wiki_chunks()
    assert len(texts) == 4074 and len(np.unique(labels)) == 106
    assert all(len(text.split()) == 40 for text in texts)
    assert np.all(np.diff(labels) >= 0) and np.bincount(labels).min() == 30
    few, few_labels = load_wiki_chunks(n_articles=3)
    assert few == texts[: len(few)] and list(np.unique(few_labels)) == [0, 1, 2]


def test_the_old_import_path_warns_and_gives_the_loader():
    with pytest.warns(DeprecationWarning, match="sknce.datasets.load_wiki_chunks"):
        from sknce.demo import load_wiki_chunks as old
    assert old is load_wiki_chunks


def test_the_demo_prints_every_step_and_representation(capsys):
    pytest.importorskip("gensim")
    rows = run_demo(n_articles=4, labels_per_class=(3,), n_repeats=2, n_landmarks=10)
    assert [row["representation"] for row in rows] == NAMES
    for row in rows:
        mean, half = row["3/class"]
        assert 0.0 <= mean <= 1.0 and np.isfinite(half) and row["fit s"] >= 0
    out = capsys.readouterr().out
    assert "[1/9] load the corpus" in out and "[9/9] LogisticRegression()" in out
    assert "chunks of 40 words from 4 stemmed Wikipedia articles" in out
    # not a terminal: one line per epoch and per representation, none rewritten
    assert "\n      epoch   1/" in out and "\r" not in out
    assert "       10/12  DirectNCE, 3/class, draw 2/2: accuracy" in out
    assert "without labels, on the network DirectNCE trained" in out
    assert "k/class: accuracy" in out and "Best at 3/class" in out


def test_on_a_terminal_the_demo_rewrites_a_live_line(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    run_demo(
        corpus="synthetic", n_documents=300, labels_per_class=(3,), n_repeats=2, n_landmarks=10
    )
    out = capsys.readouterr().out
    assert "\r      epoch   1/" in out and "\r      epoch   2/" in out
    assert "\r        1/12  tf-idf, 3/class, draw 1/2" in out
    assert "\r       12/12  LandmarkNCE, 3/class, draw 2/2" in out


def test_without_gensim_the_demo_says_so_and_runs_on_synthetic_documents(capsys, monkeypatch):
    def missing(**kwargs):
        raise ImportError("no module named 'gensim'")

    monkeypatch.setattr(sknce.datasets._wiki, "load_wiki_chunks", missing)
    rows = run_demo(n_documents=300, labels_per_class=(3,), n_repeats=1, n_landmarks=10)
    assert len(rows) == len(NAMES)
    out = capsys.readouterr().out
    assert "gensim is missing" in out and "SYNTHETIC topic corpus" in out
    assert "synthetic topic corpus: 300 documents" in out and "top topic" in out


def test_demo_cli_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--corpus" in out
