"""How close a representation is to a simplex ETF: the diagnostics of Awasthi et al., Section 5."""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d

from sknce._validation import check_sortable_labels

__all__ = ["simplex_etf_report"]


def simplex_etf_report(Z, labels) -> Bunch:
    r"""Measure the simplex-ETF structure of representations, Awasthi et al. (2022), Section 5.

    For each class :math:`c` with representations :math:`r_1, \dots, r_{n_c}` and
    mean :math:`\bar r`, the intra-class variance is

    .. math::

        \text{Intra-Var}_c = \frac{1}{n_c} \sum_{i=1}^{n_c} \lVert r_i - \bar r \rVert_2^2
        \qquad \text{(Eq. 4)},

    and :math:`CS(c_1, c_2)` is the cosine similarity of the class means of two
    classes. A simplex equiangular tight frame (Definition 3.7) has
    :math:`\text{Intra-Var}_c = 0` and :math:`CS(c_1, c_2) = -1/(C-1)` for all
    :math:`c_1 \neq c_2`. For unit vectors an Intra-Var of :math:`\alpha` roughly
    corresponds to an angle of :math:`\arccos((2 - \alpha)/2)` between a
    representation and its class mean.

    Read more in the :ref:`User Guide <contrastive>`.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_components)
        Representations, usually unit vectors (e.g. the output of
        :meth:`~sknce.LatentClassNCEEmbedder.transform`).
    labels : array-like of shape (n_samples,)
        Class of each representation; at least two distinct classes.

    Returns
    -------
    report : :class:`~sklearn.utils.Bunch`
        With the fields

        - ``classes``: ndarray of shape (C,), the sorted class labels;
        - ``intra_var``: ndarray of shape (C,), Intra-Var of each class (Eq. 4);
        - ``mean_intra_var``: float, their unweighted mean over classes;
        - ``intra_angle_deg``: ndarray of shape (C,),
          :math:`\arccos((2 - \text{Intra-Var}_c)/2)` in degrees (``nan`` where
          Intra-Var exceeds 4, outside the approximation's range);
        - ``cosine``: ndarray of shape (C, C), the cosine similarities of the
          class means (1 on the diagonal);
        - ``mean_cosine``, ``std_cosine``: float, mean and standard deviation of
          its off-diagonal entries;
        - ``etf_cosine``: float, the simplex-ETF target :math:`-1/(C-1)`.

    Raises
    ------
    ValueError
        If the lengths differ, fewer than two classes are present, or a class
        mean is the zero vector (its cosine similarity is undefined).

    References
    ----------
    .. [1] P. Awasthi, N. Dikkala and P. Kamath, "Do more negative samples necessarily
       hurt in contrastive learning?", ICML 2022. Definition 3.7, Eq. (4), Section 5.

    Examples
    --------
    >>> import numpy as np
    >>> from sknce.contrastive import simplex_etf_report
    >>> Z = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0]])
    >>> report = simplex_etf_report(Z, [0, 0, 1, 1])
    >>> float(report.mean_cosine), float(report.etf_cosine), float(report.mean_intra_var)
    (-1.0, -1.0, 0.0)
    """
    Z = check_array(Z, dtype=[np.float64, np.float32], input_name="Z", ensure_all_finite=False)
    if not np.all(np.isfinite(Z)):
        raise ValueError(
            "Z contains NaN or infinity; simplex_etf_report needs finite representations, "
            "such as a fitted embedder's transform output."
        )
    labels = check_sortable_labels(column_or_1d(labels, warn=True), "labels")
    check_consistent_length(Z, labels)
    if labels.dtype.kind in "fc" and not np.all(np.isfinite(labels)):
        raise ValueError(
            "labels contain NaN or infinity; give every representation a class label."
        )
    classes, inverse = np.unique(labels, return_inverse=True)
    n_classes = len(classes)
    if n_classes < 2:
        raise ValueError(
            f"simplex_etf_report needs representations of at least 2 classes; labels hold "
            f"{n_classes}. Pass the labels of a dataset with several classes."
        )
    Z = Z.astype(np.float64, copy=False)
    counts = np.bincount(inverse, minlength=n_classes)
    means = np.zeros((n_classes, Z.shape[1]))
    np.add.at(means, inverse, Z)
    means /= counts[:, None]
    sq_dev = ((Z - means[inverse]) ** 2).sum(axis=1)
    intra_var = np.bincount(inverse, weights=sq_dev, minlength=n_classes) / counts
    norms = np.linalg.norm(means, axis=1)
    if not (np.all(np.isfinite(intra_var)) and np.all(np.isfinite(norms))):
        raise ValueError(
            f"Z has values as large as {np.max(np.abs(Z)):.3g}, whose squares overflow "
            "float64; simplex_etf_report measures unit-norm representations, such as "
            "LatentClassNCEEmbedder's transform output. Normalise the rows of Z."
        )
    if np.any(norms == 0):
        zero = classes[norms == 0]
        raise ValueError(
            f"The mean representation of class(es) {list(zero)} is the zero vector, so its "
            "cosine similarity with other class means is undefined."
        )
    unit = means / norms[:, None]
    cosine = np.clip(unit @ unit.T, -1.0, 1.0)
    np.fill_diagonal(cosine, 1.0)
    off = cosine[~np.eye(n_classes, dtype=bool)]
    with np.errstate(invalid="ignore"):
        angle = np.degrees(np.arccos((2.0 - intra_var) / 2.0))
    return Bunch(
        classes=classes,
        intra_var=intra_var,
        mean_intra_var=float(intra_var.mean()),
        intra_angle_deg=angle,
        cosine=cosine,
        mean_cosine=float(off.mean()),
        std_cosine=float(off.std()),
        etf_cosine=-1.0 / (n_classes - 1),
    )
