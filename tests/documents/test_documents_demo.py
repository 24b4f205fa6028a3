"""The README demo runs end to end (tiny settings) and prints its table."""

from sknce.demo import main, run_demo


def test_demo_prints_every_representation(capsys):
    rows = run_demo(
        n_documents=600, n_test=200, n_words=200, labels_per_class=(5,), max_epochs=2, n_repeats=1
    )
    names = [row["representation"] for row in rows]
    assert names == ["BOW (tf-idf)", "BOW + SVD-100", "LDA", "DirectNCE", "LandmarkNCE"]
    assert all(0.0 <= row["5/class"] <= 1.0 for row in rows)
    out = capsys.readouterr().out
    assert "[7/7]" in out and "LandmarkNCE" in out and "held-out" in out


def test_demo_cli_help(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    assert "--quick" in capsys.readouterr().out
