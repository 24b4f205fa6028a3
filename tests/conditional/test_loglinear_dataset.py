"""make_loglinear_conditional: the planted model of Ma & Collins, Section 5.1."""

import numpy as np
import pytest

from sknce.datasets import make_loglinear_conditional


def test_shapes_table_and_reproducibility():
    X, y, truth = make_loglinear_conditional(500, m_x=30, m_y=12, d=3, random_state=0)
    assert X.shape == (500, 3) and y.shape == (500,)
    assert truth.support.shape == (30, 3) and truth.theta.shape == (12, 3)
    np.testing.assert_allclose(truth.table.sum(axis=1), 1.0)
    logits = truth.support @ truth.theta.T
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(truth.table, expected)
    np.testing.assert_array_equal(X, truth.support[truth.x_index])
    X2, y2, _ = make_loglinear_conditional(500, m_x=30, m_y=12, d=3, random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_labels_follow_the_table():
    _, y, truth = make_loglinear_conditional(60_000, m_x=3, m_y=5, random_state=1)
    for i in range(3):
        rows = truth.x_index == i
        freq = np.bincount(y[rows], minlength=5) / rows.sum()
        np.testing.assert_allclose(freq, truth.table[i], atol=0.02)


def test_bad_parameters():
    with pytest.raises(ValueError, match="m_y"):
        make_loglinear_conditional(10, m_y=1)
