"""Plots of fitted estimators, as scikit-learn's Display objects.

Each Display is built by ``from_estimator`` (which computes what it shows and plots
it) or from its numbers (then its ``plot`` method), and keeps its matplotlib artists
(``ax_``, ``figure_`` and the lines or images), as
:class:`~sklearn.metrics.ConfusionMatrixDisplay` does. matplotlib is an optional
dependency (the extra ``plot``), imported when a Display plots.

* :class:`TrainingHistoryDisplay`: the training and validation losses per epoch, the
  loss of a constant guess (chance), the monitored score and the restored epoch;
* :class:`SimplexETFDisplay`: the cosine similarities of the class means of a
  :class:`~sknce.LatentClassNCEEmbedder`'s representations beside those of the
  simplex ETF (Awasthi et al., 2022, Section 5);
* :class:`WordProjectionDisplay`: chosen words of an :class:`~sknce.ACEWord2Vec`
  projected on the first two principal components of their vectors.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["SimplexETFDisplay", "TrainingHistoryDisplay", "WordProjectionDisplay"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - the message is the point
        raise ImportError(
            "sknce.display needs matplotlib: pip install 'sknce[plot]' (or matplotlib)."
        ) from error
    return plt


def _axes(ax, ncols: int = 1):
    """``ax``, checked to be ``ncols`` matplotlib Axes, or new ones when it is None."""
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(1, ncols, figsize=(4.5 * ncols, 3.5), layout="constrained")
        return ax
    from matplotlib.axes import Axes

    axes = [ax] if ncols == 1 else list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != ncols or not all(isinstance(a, Axes) for a in axes):
        wanted = "a matplotlib Axes" if ncols == 1 else f"an array of {ncols} matplotlib Axes"
        raise TypeError(
            f"ax must be {wanted} or None, got {ax!r:.60}; e.g. "
            f"fig, ax = plt.subplots(1, {ncols})."
        )
    return ax


class TrainingHistoryDisplay:
    """Losses per epoch of a fit, chance, the monitored score and the restored epoch.

    Parameters
    ----------
    history : list of dict
        One row per epoch, as a fitted estimator's ``history_``: ``epoch``,
        ``train_loss`` and, where recorded, ``valid_loss``, ``chance_loss``, the
        monitored score and ``<monitor>_best``.
    monitor : str or None, default=None
        The key early stopping watched, when it is not ``valid_loss`` (e.g. the
        latent-class embedder's ``"valid_nn_smoothed"``): drawn on a second axis.
    best_epoch : int or None, default=None
        The epoch early stopping restored; ``None``: the last epoch marked best in
        ``history`` (``<monitor>_best``), if any.

    Attributes
    ----------
    best_epoch : int or None
        The last epoch early stopping counted as best: the one whose weights a fit
        with early stopping restores.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    lines_ : dict of str to matplotlib Line2D
        ``"train_loss"``, ``"valid_loss"``, ``"chance_loss"``, ``"best_epoch"`` and
        the monitor, where drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sknce import DirectNCEEmbedder
    >>> from sknce.datasets import make_topic_corpus
    >>> from sknce.display import TrainingHistoryDisplay
    >>> X = make_topic_corpus(n_documents=200, n_words=50, random_state=0).X
    >>> est = DirectNCEEmbedder(max_epochs=5, random_state=0).fit(X)
    >>> display = TrainingHistoryDisplay.from_estimator(est)
    >>> sorted(display.lines_)
    ['best_epoch', 'chance_loss', 'train_loss', 'valid_loss']
    """

    def __init__(
        self, history: list[dict], monitor: str | None = None, best_epoch: int | None = None
    ) -> None:
        if (
            isinstance(history, (str, bytes, dict))
            or not all(isinstance(row, dict) and "epoch" in row for row in history)
            or not len(history)
        ):
            raise ValueError(
                "history must be a non-empty list of rows (dicts) with an 'epoch', as a "
                f"fitted estimator's history_; got {history!r:.80}."
            )
        self.history = list(history)
        self.monitor = monitor
        if best_epoch is None:
            best = [row["epoch"] for row in history if row.get(f"{monitor or 'valid_loss'}_best")]
            best_epoch = best[-1] if best else None
        self.best_epoch = best_epoch

    @classmethod
    def from_estimator(cls, estimator, *, ax=None) -> TrainingHistoryDisplay:
        """Plot the training history of a fitted sknce estimator.

        The monitor and the restored epoch are read from the fit's early-stopping
        callback, when it had one.

        Parameters
        ----------
        estimator : fitted sknce estimator
            Any estimator with a ``history_``.
        ax : matplotlib Axes or None, default=None
            Where to draw; ``None``: a new figure.

        Returns
        -------
        TrainingHistoryDisplay
        """
        check_is_fitted(estimator, "history_")
        callbacks = dict(getattr(getattr(estimator, "net_", None), "callbacks_", []))
        stopping = callbacks.get("early_stopping")
        monitor = best_epoch = None
        if stopping is not None and any(stopping.monitor in row for row in estimator.history_):
            monitor = None if stopping.monitor == "valid_loss" else stopping.monitor
            best_epoch = getattr(stopping, "best_epoch_", None) or None
        return cls(estimator.history_, monitor, best_epoch).plot(ax=ax)

    def _column(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        rows = [row for row in self.history if key in row]
        return np.array([r["epoch"] for r in rows]), np.array([r[key] for r in rows], float)

    def plot(self, *, ax=None) -> TrainingHistoryDisplay:
        """Draw the history.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Where to draw; ``None``: a new figure.

        Returns
        -------
        TrainingHistoryDisplay
            ``self``, with ``ax_``, ``figure_`` and ``lines_`` set.
        """
        ax = _axes(ax)
        self.lines_ = {}
        for key, style in (("train_loss", "-"), ("valid_loss", "-")):
            epochs, values = self._column(key)
            if len(epochs):
                (self.lines_[key],) = ax.plot(epochs, values, style, marker=".", label=key)
        epochs, chance = self._column("chance_loss")
        if len(epochs):
            self.lines_["chance_loss"] = ax.axhline(
                chance[-1], color="grey", ls=":", label=f"chance ({chance[-1]:.4f})"
            )
        if self.best_epoch is not None:
            self.lines_["best_epoch"] = ax.axvline(
                self.best_epoch, color="black", ls="--", lw=1,
                label=f"restored epoch ({self.best_epoch})",
            )  # fmt: skip
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss")
        handles = list(self.lines_.values())
        if self.monitor is not None:
            epochs, values = self._column(self.monitor)
            twin = ax.twinx()
            (self.lines_[self.monitor],) = twin.plot(
                epochs, values, color="tab:green", marker=".", label=self.monitor
            )
            twin.set_ylabel(self.monitor)
            handles.append(self.lines_[self.monitor])
        ax.legend(handles=handles, fontsize="small")
        self.ax_, self.figure_ = ax, ax.figure
        return self


class SimplexETFDisplay:
    """Cosines of class means beside the simplex ETF's, as two heat maps.

    A simplex equiangular tight frame has cosine :math:`-1/(C-1)` between any two of
    its :math:`C` class means (Awasthi et al., 2022, Definition 3.7); the closer the
    left map is to the right one, the closer the representation is to the frame.

    Parameters
    ----------
    cosine : ndarray of shape (n_classes, n_classes)
        Cosine similarities of the class means (``simplex_etf_report(...).cosine``).
    classes : ndarray of shape (n_classes,)
        The class labels, in the order of ``cosine``.
    mean_intra_var : float or None, default=None
        The mean intra-class variance, shown in the title.

    Attributes
    ----------
    etf_cosine : ndarray of shape (n_classes, n_classes)
        The simplex ETF's matrix: 1 on the diagonal, :math:`-1/(C-1)` elsewhere.
    ax_ : ndarray of two matplotlib Axes
    figure_ : matplotlib Figure
    images_ : list of two matplotlib AxesImage
    """

    def __init__(
        self, cosine: np.ndarray, classes: np.ndarray, mean_intra_var: float | None = None
    ) -> None:
        self.cosine = np.asarray(cosine)
        self.classes = np.asarray(classes)
        self.mean_intra_var = mean_intra_var
        n = len(self.classes)
        self.etf_cosine = np.full((n, n), -1.0 / (n - 1))
        np.fill_diagonal(self.etf_cosine, 1.0)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, ax=None) -> SimplexETFDisplay:
        """Plot the class-mean cosines of ``estimator.transform(X)`` grouped by ``y``.

        Parameters
        ----------
        estimator : fitted LatentClassNCEEmbedder
            Or any fitted transformer with unit-norm output.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Points to represent.
        y : array-like of shape (n_samples,)
            Their classes; at least two.
        ax : array of two matplotlib Axes or None, default=None
            Where to draw; ``None``: a new figure.

        Returns
        -------
        SimplexETFDisplay
        """
        from sknce.contrastive import simplex_etf_report

        if not callable(getattr(estimator, "transform", None)):
            raise TypeError(
                f"SimplexETFDisplay needs a fitted transformer (a LatentClassNCEEmbedder), "
                f"got {type(estimator).__name__}, which has no transform."
            )
        report = simplex_etf_report(estimator.transform(X), y)
        return cls(report.cosine, report.classes, report.mean_intra_var).plot(ax=ax)

    def plot(self, *, ax=None) -> SimplexETFDisplay:
        """Draw the two heat maps and a shared colour bar.

        Parameters
        ----------
        ax : array of two matplotlib Axes or None, default=None
            Where to draw; ``None``: a new figure.

        Returns
        -------
        SimplexETFDisplay
            ``self``, with ``ax_``, ``figure_`` and ``images_`` set.
        """
        ax = _axes(ax, ncols=2)
        off = self.cosine[~np.eye(len(self.classes), dtype=bool)]
        titles = [
            f"class means (off-diagonal {off.mean():.2f} ± {off.std():.2f})",
            f"simplex ETF ({self.etf_cosine[0, 1]:.2f})",
        ]
        self.images_ = []
        for axis, matrix, title in zip(ax, (self.cosine, self.etf_cosine), titles):
            self.images_.append(axis.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r"))
            axis.set_title(title, fontsize="small")
            axis.set_xlabel("class")
            axis.set_ylabel("class")
        figure = ax[0].figure
        figure.colorbar(self.images_[0], ax=list(ax), label="cosine", shrink=0.8)
        if self.mean_intra_var is not None:
            figure.suptitle(f"mean intra-class variance {self.mean_intra_var:.3f}")
        self.ax_, self.figure_ = ax, figure
        return self


def _word_vectors(source) -> tuple[dict, np.ndarray]:
    """The word index and matrix of a fitted ACEWord2Vec or of WordVectors.

    An unfitted estimator is a ``NotFittedError``; anything else without word
    vectors a ``TypeError`` saying what is needed.
    """
    from sknce.words import ACEWord2Vec

    if isinstance(source, ACEWord2Vec):
        check_is_fitted(source, "vectors_")
        return source.vocabulary_, source.vectors_
    if hasattr(source, "key_to_index") and hasattr(source, "vectors"):
        return source.key_to_index, source.vectors
    raise TypeError(
        f"WordProjectionDisplay needs a fitted ACEWord2Vec or WordVectors, got "
        f"{type(source).__name__}."
    )


class WordProjectionDisplay:
    """Chosen words placed by the first two principal components of their vectors.

    Parameters
    ----------
    words : list of str
        The words, in the order of ``coordinates``.
    coordinates : ndarray of shape (n_words, 2)
        Their 2-d coordinates.
    explained_variance_ratio : ndarray of shape (2,) or None, default=None
        Share of the words' variance along each axis, shown in the labels.

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    scatter_ : matplotlib PathCollection
    """

    def __init__(
        self,
        words: list[str],
        coordinates: np.ndarray,
        explained_variance_ratio: np.ndarray | None = None,
    ) -> None:
        self.words = list(words)
        self.coordinates = np.asarray(coordinates)
        self.explained_variance_ratio = explained_variance_ratio

    @classmethod
    def from_estimator(cls, estimator, words, *, ax=None) -> WordProjectionDisplay:
        """Project ``words`` of a fitted :class:`~sknce.ACEWord2Vec` (or its vectors).

        Parameters
        ----------
        estimator : fitted ACEWord2Vec, or WordVectors
            What holds the word vectors (``vectors_`` and ``vocabulary_``, or
            ``vectors`` and ``key_to_index``).
        words : list of str
            At least two words of the vocabulary; an unknown word is a KeyError
            naming it.
        ax : matplotlib Axes or None, default=None
            Where to draw; ``None``: a new figure.

        Returns
        -------
        WordProjectionDisplay
        """
        from sklearn.decomposition import PCA

        index, vectors = _word_vectors(estimator)
        if isinstance(words, str) or not all(isinstance(w, str) for w in words):
            raise TypeError(
                f"words must be a list of words (str), got {words!r:.60}; e.g. "
                "['king', 'queen', 'man', 'woman']."
            )
        words = list(words)
        missing = [w for w in words if w not in index]
        if missing:
            raise KeyError(
                f"Words not in the vocabulary: {missing}; choose words the model kept "
                "(see its vocabulary_, or lower min_count)."
            )
        if len(words) < 2:
            raise ValueError(f"Project at least 2 words; got {len(words)}.")
        chosen = np.asarray(vectors, dtype=np.float64)[[index[w] for w in words]]
        if np.ptp(chosen, axis=0).max() == 0:
            raise ValueError(
                f"the vectors of {words[:4]} are all equal: there is no direction to project "
                "them on. Choose words with different vectors (a model trained longer?)."
            )
        pca = PCA(n_components=2).fit(chosen)
        coordinates = pca.transform(chosen)
        return cls(words, coordinates, pca.explained_variance_ratio_).plot(ax=ax)

    def plot(self, *, ax=None) -> WordProjectionDisplay:
        """Draw the words.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Where to draw; ``None``: a new figure.

        Returns
        -------
        WordProjectionDisplay
            ``self``, with ``ax_``, ``figure_`` and ``scatter_`` set.
        """
        ax = _axes(ax)
        x, y = self.coordinates[:, 0], self.coordinates[:, 1]
        self.scatter_ = ax.scatter(x, y, s=12)
        for word, xi, yi in zip(self.words, x, y):
            ax.annotate(word, (xi, yi), xytext=(3, 3), textcoords="offset points", fontsize=8)
        ratio = self.explained_variance_ratio
        for axis, i in ((ax.set_xlabel, 0), (ax.set_ylabel, 1)):
            share = "" if ratio is None else f" ({ratio[i]:.0%} of the variance)"
            axis(f"principal component {i + 1}{share}")
        self.ax_, self.figure_ = ax, ax.figure
        return self
