"""The parts of the exported inference modules against what the estimators compute:
the Student-t distribution function against scipy, the bags against
``sknce._bags.normalize_bags``, the standard scaling against ``scale_input``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.stats import t as student_t

from sknce._bags import normalize_bags, smooth_idf
from sknce.contrastive._scaling import fit_scaling, scale_input
from sknce.nn._conditional import student_t_cdf
from sknce.nn._inference import BagInput, StandardInput

Z = np.concatenate([-np.logspace(-6, 3, 120), [0.0], np.logspace(-6, 3, 120)])


@pytest.mark.parametrize("df", [1.0, 1.5, 2.5, 4.0, 7.3, 30.0, 200.0, 1e4, 1e6])
@pytest.mark.parametrize(("dtype", "rtol"), [(torch.float64, 5e-8), (torch.float32, 2e-7)])
def test_student_t_cdf_equals_scipys(df, dtype, rtol):
    z = torch.tensor(Z, dtype=dtype)
    got = student_t_cdf(z, df)
    assert got.dtype == dtype and bool(torch.isfinite(got).all())
    expected = student_t.cdf(z.double().numpy(), df)
    tail = expected > 1e-30  # relative error, in the tails too
    np.testing.assert_allclose(got.double().numpy()[tail], expected[tail], rtol=rtol)
    np.testing.assert_allclose(got.double().numpy(), expected, atol=1e-7)


@pytest.mark.parametrize("bag", ["log1p-idf", "tf", "log1p", "counts"])
def test_bag_input_equals_normalize_bags(bag):
    rng = np.random.default_rng(0)
    X = rng.poisson(0.7, size=(20, 12)).astype(np.float64)
    X[[3, 7]] = 0  # empty documents stay zero
    idf = smooth_idf(sp.csr_matrix(X))
    expected = normalize_bags(sp.csr_matrix(X), bag, idf).toarray()
    got = BagInput(bag, idf if bag == "log1p-idf" else None)(
        torch.as_tensor(X, dtype=torch.float32)
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("sparse_fit", [False, True])
def test_standard_input_equals_scale_input(sparse_fit):
    rng = np.random.default_rng(1)
    X = (rng.normal(size=(30, 6)) * [1, 10, 100, 1, 0.1, 0] + 5).astype(np.float32)
    statistics = fit_scaling(sp.csr_matrix(X) if sparse_fit else X, "standard")
    expected = scale_input(X, "standard", statistics)
    got = StandardInput(statistics["mean"], statistics["scale"])(torch.as_tensor(X))
    np.testing.assert_allclose(got.numpy(), np.asarray(expected), rtol=1e-5, atol=1e-5)
    # a sparse X scaled by a model fitted on dense points is centred as a dense one
    np.testing.assert_allclose(
        np.asarray(scale_input(sp.csr_matrix(X), "standard", statistics).todense())
        if sparse_fit
        else scale_input(sp.csr_matrix(X), "standard", statistics),
        expected,
        rtol=1e-6,
    )
