"""
A bimodal target: the regressor's density and its 90% interval
===============================================================

:class:`~sknce.ConditionalNCERegressor` learns a density :math:`p(y \\mid x)`, not just
a mean: an energy network :math:`s(x, y)` trained by NCE against noise targets drawn
around each observed :math:`y` (Gustafsson et al., 2020; Ma & Collins, 2018). Here the
target has two branches, :math:`y = \\sin x \\pm 1.5` plus noise, where a least-squares
regressor would predict the empty middle. At its defaults the regressor starts from a
ridge regression's Student-t density (here a wide bump over both branches) and its energy
learns the two branches; early stopping on held-out data decides how long. We read the
learned density with ``score_samples``, its 90% central interval with ``predict_interval``
and, with ``predict_method="mode"``, its mode with ``predict`` (the default prediction,
the density's mean, would fall in the empty middle).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm

from sknce import ConditionalNCERegressor


def sample(n, rng):
    """x uniform on [-3, 3]; y on one of the two branches sin(x) +/- 1.5, noise 0.25."""
    x = rng.uniform(-3, 3, n)
    y = np.sin(x) + rng.choice([-1.5, 1.5], n) + 0.25 * rng.normal(size=n)
    return x[:, None], y


def true_log_density(x, y):
    """log p(y | x) of the generating model: an even mixture of the two branches."""
    up = norm.pdf(y, np.sin(x) + 1.5, 0.25)
    down = norm.pdf(y, np.sin(x) - 1.5, 0.25)
    return np.log(0.5 * up + 0.5 * down)


rng = np.random.default_rng(0)
X, y = sample(3000, rng)
X_test, y_test = sample(2000, rng)

reg = ConditionalNCERegressor(predict_method="mode", random_state=0).fit(X, y)

# %%
# The mean test log-likelihood of the learned density beside the true model's, and the
# share of test targets inside the 90% interval.
interval = reg.predict_interval(X_test, coverage=0.9)
covered = np.mean((y_test >= interval[:, 0]) & (y_test <= interval[:, 1]))
print(f"test log-likelihood: {reg.score_samples(X_test, y_test).mean():.3f}")
print(
    f"true model:          {true_log_density(X_test[:, 0], y_test).mean():.3f}"
)
print(f"90% interval coverage on the test set: {covered:.3f}")

# %%
# Left: the learned density on a grid of (x, y), with the training points, the 90%
# central interval and the predicted mode. A central interval of a bimodal density spans
# both branches, the empty middle included. Right: the density at x = 1 against the
# true one.
grid_x = np.linspace(-3, 3, 61)
grid_y = np.linspace(-3.5, 3.5, 141)
xx, yy = np.meshgrid(grid_x, grid_y)
density = np.exp(reg.score_samples(xx.reshape(-1, 1), yy.ravel())).reshape(
    xx.shape
)
bounds = reg.predict_interval(grid_x[:, None], coverage=0.9)

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), width_ratios=[3, 2])
left.pcolormesh(grid_x, grid_y, density, cmap="Blues", shading="auto")
left.scatter(
    X[::10, 0], y[::10], s=2, color="black", alpha=0.4, label="training data"
)
left.plot(grid_x, bounds[:, 0], "r--", label="90% interval")
left.plot(grid_x, bounds[:, 1], "r--")
left.plot(
    grid_x,
    reg.predict(grid_x[:, None]),
    "o",
    color="orange",
    ms=3,
    label="mode",
)
left.set(xlabel="x", ylabel="y", title="learned density p(y | x)")
left.legend(loc="lower right", fontsize="small")

x0 = np.full(grid_y.shape, 1.0)
right.plot(
    grid_y, np.exp(reg.score_samples(x0[:, None], grid_y)), label="learned"
)
right.plot(grid_y, np.exp(true_log_density(x0, grid_y)), "k:", label="true")
right.set(xlabel="y", ylabel="density", title="p(y | x = 1)")
right.legend()
fig.tight_layout()
plt.show()
