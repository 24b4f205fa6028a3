"""
Ten thousand classes: ranking NCE against the full softmax
==========================================================

A softmax classifier normalises over every label at every training step, so its cost per
example grows with the number of classes. :class:`~sknce.ConditionalNCEClassifier` with
``objective="ranking"`` contrasts each example with ``n_negatives`` labels drawn from the
label marginal instead (Ma & Collins, 2018), and is consistent: with enough data it finds
the same model. ``objective="mle"`` is the full softmax, the reference.

Data: the planted log-linear model of Ma & Collins' Section 5.1
(:func:`~sknce.datasets.make_loglinear_conditional`) over 10,000 labels, so that the
true :math:`p(y \\mid x)` is known and the expected test log-likelihood of a model,
:math:`\\mathbb{E}_x \\sum_y p(y \\mid x) \\log \\hat p(y \\mid x)`, can be computed
exactly. Both objectives fit the same log-linear model
:math:`s(x, y) = x^\\top \\theta_y + b_y` (``hidden_layer_sizes=()``).
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from sknce import ConditionalNCEClassifier
from sknce.datasets import make_loglinear_conditional

torch.set_num_threads(1)  # one thread for both, so that their times compare

n_classes = 10_000
X, y, truth = make_loglinear_conditional(
    30_000, m_x=500, m_y=n_classes, d=16, random_state=0
)
print(
    f"{X.shape[0]} examples, {len(np.unique(y))} of the {n_classes} labels seen"
)

# The best achievable expected log-likelihood: that of the true model.
best = np.mean(
    np.sum(truth.table * np.log(np.clip(truth.table, 1e-300, None)), axis=1)
)


def expected_log_likelihood(clf):
    """E_x sum_y p(y|x) log p_hat(y|x) over the model's inputs, exactly normalised."""
    return np.mean(
        np.sum(truth.table * clf.predict_log_proba(truth.support), axis=1)
    )


# %%
# A learning curve: for each objective, fits of 1, 2 and 4 epochs from the same
# seed, timed in CPU seconds of this process (unlike wall time, not inflated by
# other programs on a shared machine). Early stopping is off, so that each fit runs
# the epochs it is given.
epochs = [1, 2, 4]
# A first small fit, untimed: torch's first call sets up its kernels. (Most labels
# occur once in 512 examples: the intended use, about which nothing is warned.)
ConditionalNCEClassifier(max_epochs=1).fit(X[:512], y[:512])
curves, fitted = {}, {}
for objective in ["ranking", "mle"]:
    curves[objective] = []
    for max_epochs in epochs:
        clf = ConditionalNCEClassifier(
            objective=objective,
            n_negatives=32,
            hidden_layer_sizes=(),
            classes=np.arange(n_classes),
            max_epochs=max_epochs,
            lr=0.01,
            early_stopping=False,
            random_state=0,
        )
        start = time.process_time()
        clf.fit(X, y)
        seconds = time.process_time() - start
        fitted[objective] = clf
        curves[objective].append((seconds, expected_log_likelihood(clf)))
        print(
            f"{objective:8s} {max_epochs} epochs: {seconds:5.1f} CPU s, "
            f"expected test log-likelihood {curves[objective][-1][1]:.3f}"
        )
print(f"true model: {best:.3f}")

# %%
# Per epoch the two reach about the same log-likelihood; per CPU second, ranking
# NCE gets there several times sooner, because its step costs ``n_negatives`` label
# scores per example instead of 10,000.
labels = {"ranking": "ranking NCE (K=32)", "mle": "full softmax"}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
for objective, points in curves.items():
    seconds, ll = np.array(points).T
    axes[0].plot(epochs, ll, "o-", label=labels[objective])
    axes[1].plot(seconds, ll, "o-", label=labels[objective])
for ax in axes:
    ax.axhline(best, color="grey", linestyle="--", label="true model")
axes[0].set(xlabel="epochs", ylabel="expected test log-likelihood")
axes[1].set(xlabel="training CPU time (s, one thread)")
axes[1].legend()
fig.tight_layout()
plt.show()

# %%
# For many labels, ask for the best few rather than all of them:
# :meth:`~sknce.ConditionalNCEClassifier.predict_topk` returns the ``k`` most probable
# labels and their exact log-probabilities, with memory for ``k`` columns instead of
# 10,000. Recall@10 of the last ranking NCE fit on inputs of the model: how often the
# label drawn from the true model is among its 10 best.
rng = np.random.default_rng(1)
rows = rng.integers(0, len(truth.support), size=2000)
drawn = np.array([rng.choice(n_classes, p=truth.table[r]) for r in rows])
top_labels, top_log_proba = fitted["ranking"].predict_topk(
    truth.support[rows], k=10
)
print(
    f"recall@10: {np.mean(np.any(top_labels == drawn[:, None], axis=1)):.3f}"
)
print(
    f"probability mass of the 10 best labels: {np.exp(top_log_proba).sum(1).mean():.3f}"
)
