"""benchmarks/bench_label_count.py --test-rows: its figures against brute force, its bad input.

The planted table's scoring (``benchmarks/_planted_eval.py``) on a table small enough to
sum by hand, fastText's every-label log-probabilities against its one-label ones, and
the option's errors (non-positive, non-integer, no planted task, with ``--from``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(autouse=True)
def _benchmarks_on_path(monkeypatch):
    pytest.importorskip("gensim")  # the benchmarks' corpora
    monkeypatch.syspath_prepend(str(BENCHMARKS))


def _sample():
    from _planted_eval import PlantedSample

    # 2 inputs, 4 labels; label 3 has no training row (weight 0)
    table = np.array([[0.5, 0.3, 0.1, 0.1], [0.1, 0.2, 0.6, 0.1]])
    weights = table * np.array([1, 1, 1, 0]) / 2
    weights /= weights.sum()
    x = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    y = np.array([0, 1, 0, 2, 2, 1, 0, 2])
    return PlantedSample(["x0 a", "x1 b"], x, y, weights)


def test_a_systems_figures_are_the_brute_force_ones():
    sample = _sample()
    names = ["y0", "y1", "y2"]
    log_proba = np.log([[0.2, 0.7, 0.1], [0.3, 0.3, 0.4]])
    out = sample.score(0, "a", names, log_proba, ["y1", "y2"])
    pred = {0: 1, 1: 2}
    hits = np.array([pred[x] == y for x, y in zip(sample.x, sample.y)], dtype=float)
    assert out["planted_rows"] == 8
    assert out["planted_accuracy"] == pytest.approx(hits.mean())
    assert out["planted_accuracy_se"] == pytest.approx(hits.std(ddof=1) / np.sqrt(8))
    ll = np.array([log_proba[x, y] for x, y in zip(sample.x, sample.y)])
    assert out["planted_log_lik"] == pytest.approx(ll.mean())
    # over the table restricted to the training labels: p(x, y) / the kept mass
    w = sample.weights
    assert out["expected_accuracy"] == pytest.approx(w[0, 1] + w[1, 2])
    expected_ll = sum(w[i, j] * log_proba[i, j] for i in range(2) for j in range(3))
    assert out["expected_log_lik"] == pytest.approx(expected_ll)
    assert out["top1_is_argmax"] == 1.0


def test_the_paired_difference_counts_the_rows_one_gets_right_and_the_other_wrong():
    sample = _sample()
    names = ["y0", "y1", "y2"]
    sample.score(3, "a", names, np.log([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]), ["y0", "y2"])
    sample.score(3, "b", names, np.log([[0.3, 0.6, 0.1], [0.6, 0.2, 0.2]]), ["y1", "y0"])
    pred_a, pred_b = {0: 0, 1: 2}, {0: 1, 1: 0}
    hits_a = np.array([pred_a[x] == y for x, y in zip(sample.x, sample.y)])
    hits_b = np.array([pred_b[x] == y for x, y in zip(sample.x, sample.y)])
    out = sample.paired(3, "a", "b")
    assert out["a_only"] == int(np.sum(hits_a & ~hits_b))
    assert out["b_only"] == int(np.sum(hits_b & ~hits_a))
    diff = hits_a.astype(float) - hits_b
    assert out["accuracy_diff"] == pytest.approx(diff.mean())
    assert out["accuracy_diff_se"] == pytest.approx(diff.std(ddof=1) / np.sqrt(diff.size))


def test_the_bayes_classifier_takes_the_most_probable_training_label():
    out = _sample().bayes()
    w = _sample().weights
    assert out["expected_accuracy"] == pytest.approx(w[0, 0] + w[1, 2])
    # its log-likelihood is the table's, renormalised over the training labels
    conditional = w / w.sum(axis=1, keepdims=True)
    assert conditional[0, 0] == pytest.approx(0.5 / 0.9)


def test_a_fresh_sample_has_the_training_labels_only_and_its_own_stream():
    from _planted_eval import planted_sample
    from bench_vs_fasttext import synthetic_task

    X_train, y_train, _, _ = synthetic_task(500, 2000, 200, m_x=5)
    a = planted_sample(500, 5, 3000, y_train, repeat=0)
    b = planted_sample(500, 5, 3000, y_train, repeat=1)
    seen = {int(label[1:]) for label in y_train}
    assert set(a.y.tolist()) <= seen and 0 < a.x.size <= 3000
    assert sorted(a.inputs) == sorted(set(X_train))
    assert not np.array_equal(a.y[:100], b.y[:100])  # the repeats draw apart
    assert a.weights.sum() == pytest.approx(1.0) and np.all(a.weights[:, sorted(seen)] > 0)


@pytest.mark.parametrize("loss", ["hs", "ns", "softmax"])
def test_fasttexts_every_label_log_probabilities_are_its_one_label_ones(tmp_path, loss):
    fasttext = pytest.importorskip("fasttext")
    from bench_vs_fasttext import fasttext_log_likelihood, fasttext_log_proba

    rng = np.random.default_rng(0)
    path = tmp_path / "train.txt"
    words = rng.integers(30, size=(400, 2))
    lines = [f"__label__l{rng.integers(12)} w{a} w{b}" for a, b in words]
    path.write_text("\n".join(lines) + "\n")
    model = fasttext.train_supervised(input=str(path), loss=loss, dim=8, epoch=2, verbose=0)
    texts = ["w1 w2", "w3", "w29 w0 w7"]
    labels, log_proba = fasttext_log_proba(model, texts, loss)
    assert np.allclose(np.exp(log_proba).sum(axis=1), 1.0)
    for j, label in enumerate(labels):
        one = fasttext_log_likelihood(model, texts, np.array([label] * 3, dtype=object), loss)
        assert np.allclose(log_proba[:, j], one)


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "0 is not positive"),
        ("-5", "-5 is not positive"),
        ("1.5", "'1.5' is not an integer"),
        ("many", "'many' is not an integer"),
    ],
)
def test_test_rows_must_be_a_positive_integer(capsys, value, message):
    import bench_label_count

    with pytest.raises(SystemExit) as raised:
        bench_label_count.main(["--tasks", "synthetic-1e5", "--test-rows", value])
    assert raised.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--tasks", "article"],
            "--test-rows needs a planted task in --tasks (synthetic-1e5, synthetic-1e5-100k, "
            "synthetic-1e6-50k, synthetic-1e6-100k)",
        ),
        (["--from", "x.json", "--tag", "t"], "cannot summarise --from files or run --trees"),
        (["--trees", "/tmp/a=a"], "cannot summarise --from files or run --trees"),
    ],
)
def test_test_rows_needs_a_planted_task_and_fits_of_its_own(capsys, argv, message):
    import bench_label_count

    with pytest.raises(SystemExit) as raised:
        bench_label_count.main([*argv, "--test-rows", "100"])
    assert raised.value.code == 2 and message in capsys.readouterr().err
