"""The planted table's systems scored on a large fresh sample (``bench_label_count --test-rows``).

On ``synthetic-1e5`` every row's text is one of ``m_x`` inputs, so a fitted system's
prediction and its log-probability of every label are those of its input: each
system is scored once on the distinct inputs, and any number of rows drawn from the
planted table is scored from that, with no predict time per row. Per system and
repeat this gives, on ``n`` fresh rows (labels no training row has are dropped, as
in the task's own test rows):

- accuracy with its standard error, mean log-likelihood with its standard error;
- the expected accuracy and log-likelihood over the planted distribution itself
  (no test sample at all: the inputs are uniform, the labels follow the table,
  restricted to the training labels);
- against every other system of the same repeat, the paired difference on the same
  rows: ``a_only`` / ``b_only`` rows where one is right and the other wrong
  (McNemar's counts), the accuracy difference and its standard error, and the
  log-likelihood difference and its standard error;

and once per task the Bayes classifier's (the table's most probable training label of
each input; log-likelihood of the table renormalised over the training labels).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _label_ids(names) -> np.ndarray:
    """``y123`` -> 123."""
    return np.array([int(name[1:]) for name in names], dtype=np.int64)


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


@dataclass
class PlantedSample:
    """``n_rows`` fresh rows of a planted task and the scores of the systems on them.

    Build it with :func:`planted_sample`; :meth:`score` adds a system's figures,
    :meth:`paired` compares two systems scored in the same repeat.
    """

    inputs: list  # the distinct input texts, input i written as inputs[i]
    x: np.ndarray  # each fresh row's input
    y: np.ndarray  # each fresh row's label
    weights: np.ndarray  # inputs x labels: p(x, y) over the training labels, summing to 1
    scored: dict = field(default_factory=dict)  # (repeat, system) -> (hits, log-liks)

    def _full(self, names, log_proba: np.ndarray) -> np.ndarray:
        """A system's log-probabilities on every label of the table (-inf where it has none)."""
        full = np.full(self.weights.shape, -np.inf)
        full[:, _label_ids(names)] = log_proba
        return full

    def _figures(self, pred: np.ndarray, full: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
        """The hits and log-likelihoods of the fresh rows, and the figures, of a classifier
        that predicts ``pred`` and gives ``full`` (inputs x every label, log-probabilities)."""
        hits = pred[self.x] == self.y
        log_lik = full[self.x, self.y]
        accuracy, accuracy_se = _mean_se(hits.astype(float))
        mean_ll, ll_se = _mean_se(log_lik)
        positive = self.weights > 0
        return (
            hits,
            log_lik,
            {
                "planted_rows": int(self.x.size),
                "planted_accuracy": accuracy,
                "planted_accuracy_se": accuracy_se,
                "planted_log_lik": mean_ll,
                "planted_log_lik_se": ll_se,
                "expected_accuracy": float(self.weights[np.arange(len(pred)), pred].sum()),
                "expected_log_lik": float(np.sum(self.weights[positive] * full[positive])),
            },
        )

    def score(self, repeat: int, system: str, names, log_proba, top1) -> dict:
        """A system's figures from its ``log_proba`` (inputs x ``names``) and its
        predicted label ``top1`` of each input, both in the order of :attr:`inputs`."""
        full, pred = self._full(names, log_proba), _label_ids(top1)
        hits, log_lik, figures = self._figures(pred, full)
        self.scored[(repeat, system)] = hits, log_lik
        # how often the system's prediction is its most probable label (a check)
        figures["top1_is_argmax"] = float(np.mean(pred == np.argmax(full, axis=1)))
        return figures

    def paired(self, repeat: int, a: str, b: str) -> dict:
        """``a`` less ``b`` on the same fresh rows of ``repeat``."""
        (hits_a, ll_a), (hits_b, ll_b) = self.scored[(repeat, a)], self.scored[(repeat, b)]
        a_only, b_only = int(np.sum(hits_a & ~hits_b)), int(np.sum(hits_b & ~hits_a))
        diff, diff_se = _mean_se(hits_a.astype(float) - hits_b.astype(float))
        ll_diff, ll_diff_se = _mean_se(ll_a - ll_b)
        return {
            "repeat": repeat,
            "a": a,
            "b": b,
            "rows": int(hits_a.size),
            "a_only": a_only,
            "b_only": b_only,
            "accuracy_diff": diff,
            "accuracy_diff_se": diff_se,
            "log_lik_diff": ll_diff,
            "log_lik_diff_se": ll_diff_se,
        }

    def bayes(self) -> dict:
        """The Bayes classifier's figures on the fresh rows and in expectation: the table's
        most probable training label, and the table renormalised over those labels."""
        conditional = self.weights / self.weights.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            log_table = np.log(conditional)
        return self._figures(np.argmax(conditional, axis=1), log_table)[2]


def planted_sample(
    n_labels: int, m_x: int, n_rows: int, train_labels, repeat: int, seed: int = 0
) -> PlantedSample:
    """``n_rows`` rows drawn afresh from the planted table of
    ``synthetic_task(n_labels, ..., m_x=m_x, seed=seed)``, less those whose label is not
    in ``train_labels``: a random stream of their own for each ``repeat``, which the
    task's draws do not use (so the repeats' samples are independent)."""
    from bench_vs_fasttext import planted_draws, planted_truth

    truth, tokens = planted_truth(n_labels, m_x, seed)
    x, y = planted_draws(truth, n_rows, np.random.default_rng((seed, 7, repeat)))
    seen = np.zeros(n_labels, dtype=bool)
    seen[_label_ids(set(train_labels))] = True
    keep = seen[y]
    weights = truth.table / truth.table.sum(axis=1, keepdims=True) * seen
    return PlantedSample(tokens, x[keep], y[keep], weights / weights.sum())
