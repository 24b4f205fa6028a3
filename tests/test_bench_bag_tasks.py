"""benchmarks: the factored bag's smaller tasks (issue 29) and ``screen_bag.py``'s settings.

The task names ``bench_label_count.py`` and ``screen_bag.py`` take (``centre-<n>k``,
``centre-all-<n>k``, ``article-<n>tok``, the smaller planted tables), what they build, and
the screen's bad task names and settings.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(autouse=True)
def _benchmarks_on_path(monkeypatch):
    pytest.importorskip("gensim")  # the benchmarks' corpora
    monkeypatch.syspath_prepend(str(BENCHMARKS))


@pytest.mark.parametrize(
    "task",
    [
        "centre-5k",
        "centre-all-60k",
        "article-10tok",
        "synthetic-1e6-50k",
        "centre-K2000",
        "article",
    ],
)
def test_the_screen_takes_the_bench_tasks(task):
    import screen_bag

    assert screen_bag.task_name(task) == task


@pytest.mark.parametrize("task", ["centre-5", "centre-k5", "synthetic-1e7", "article-tok", ""])
def test_the_screen_names_the_tasks_it_takes_for_an_unknown_one(task):
    import screen_bag

    with pytest.raises(argparse.ArgumentTypeError, match="centre-<n>k, centre-all-<n>k"):
        screen_bag.task_name(task)


def test_the_smaller_tasks_build_what_their_names_say():
    import bench_label_count

    (data,), _ = bench_label_count.task_splits("article-10tok", False, {})
    (full,), _ = bench_label_count.task_splits("article", False, {})
    assert len(data[0]) > 3.5 * len(full[0])  # 10-token chunks: 4 times the 40-token ones
    assert all(len(text.split()) == 10 for text in data[0][:100])
    (quick,), _ = bench_label_count.task_splits("centre-all-60k", True, {})
    assert len(quick[0]) == 40_000  # --quick: 40,000 windows at most
    n_labels, n_train, _, m_x = bench_label_count.PLANTED["synthetic-1e6-50k"][False]
    assert (n_labels, n_train, m_x) == (10**6, 50_000, 40)
    for task in ("centre-100k", "synthetic-1e5-100k"):
        assert bench_label_count.task_systems(task) == [
            "fastText hs",
            "fastText ns",
            "sknce defaults",
        ]


@pytest.mark.parametrize(
    "setting, constants, params",
    [
        ("main", {}, {}),
        ("EPOCH_MAX=4", {"BAG_EPOCH_RANGE": (3, 4)}, {}),
        ("EPOCH_MIN=2,EPOCH_MAX=6", {"BAG_EPOCH_RANGE": (2, 6)}, {}),
        ("WIDE_EPOCHS=25", {"BAG_WIDE_EPOCHS": 25}, {}),
        ("embedding_dim=64", {}, {"embedding_dim": 64}),
    ],
)
def test_the_screen_patches_what_its_settings_name(setting, constants, params):
    import screen_bag

    patched, estimator = screen_bag.patched(setting)
    assert {k: v for k, v in patched.items() if k != "bag_holds_out"} == constants
    assert estimator == params


def test_the_screens_hold_out_patch_holds_out_at_any_size_and_takes_only_1():
    import screen_bag

    constants, _ = screen_bag.patched("HOLD_OUT=1")
    assert constants["bag_holds_out"](10**9, 5) is True
    with pytest.raises(ValueError, match="HOLD_OUT takes 1 only"):
        screen_bag.patched("HOLD_OUT=0")
    with pytest.raises(ValueError, match="unknown setting 'NO_SUCH': one of DIM, "):
        screen_bag.patched("NO_SUCH=1")
