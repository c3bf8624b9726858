"""The rate estimates on synthetic data with known answers."""
import math

import numpy as np
import pytest

from tally_experiments import fits


def test_observed_order_exact_power():
    h = np.array([1 / 16, 1 / 32, 1 / 64, 1 / 128])
    p = fits.observed_orders(h, 3.7 * h ** 2)
    assert p == pytest.approx([2.0, 2.0, 2.0], abs=1e-12)


def test_observed_order_with_higher_order_term_tends_to_leading_order():
    h = 0.5 ** np.arange(3, 10)
    e = 0.8 * h ** 2 + 5.0 * h ** 3  # the h^3 term fades on finer grids
    p = fits.observed_orders(h, e)
    # e = 0.8 h^2 (1 + 6.25 h): between h and h/2 the order is 2 + log2((1 + 6.25 h) / (1 + 3.125 h)).
    assert p == pytest.approx(2 + np.log2((1 + 6.25 * h[:-1]) / (1 + 3.125 * h[:-1])), abs=1e-12)
    assert np.all(np.diff(p) < 0) and np.all(p > 2)  # monotone approach from above


def test_observed_order_non_uniform_ratios():
    h = np.array([0.1, 0.07, 0.03, 0.011])
    assert fits.observed_orders(h, h ** 1.5) == pytest.approx([1.5] * 3, abs=1e-12)


def test_observed_order_zero_or_nan_error_gives_nan_not_a_number():
    p = fits.observed_orders([0.1, 0.05, 0.025], [1e-2, 0.0, 1e-4])
    assert np.isnan(p).all()
    p = fits.observed_orders([0.1, 0.05, 0.025], [1e-2, 2.5e-3, float("nan")])
    assert p[0] == pytest.approx(2.0) and np.isnan(p[1])


def test_observed_order_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        fits.observed_orders([0.1, 0.05], [1.0])


def test_power_fit_recovers_slope_and_coefficient():
    x = np.logspace(3, 9, 13)
    f = fits.power_fit(x, 1.64 * x ** -0.5)
    assert f.slope == pytest.approx(-0.5, abs=1e-12)
    assert f.coef == pytest.approx(1.64, rel=1e-10)
    assert f.slope_stderr == pytest.approx(0.0, abs=1e-12)
    assert f(1e4) == pytest.approx(1.64e-2, rel=1e-10)


def test_power_fit_on_noisy_data_is_the_least_squares_slope():
    # y = 1.64 x^-1/2 (1 + eps_i), a fixed pattern |eps_i| <= 0.2. With lx = log x, the least-squares
    # slope is -1/2 + sum_i w_i log(1 + eps_i), w_i = (lx_i - mean lx) / sum (lx - mean lx)^2, and the
    # intercept log 1.64 + mean log(1 + eps) - (slope + 1/2) mean lx: the fit must give exactly these.
    x = np.logspace(3, 7, 9)
    eps = 0.2 * np.array([0.3, -1.0, 0.7, 0.1, -0.6, 1.0, -0.2, 0.5, -0.9])
    f = fits.power_fit(x, 1.64 * x ** -0.5 * (1 + eps))
    lx, noise = np.log(x), np.log1p(eps)
    w = (lx - lx.mean()) / np.sum((lx - lx.mean()) ** 2)
    slope = -0.5 + float(w @ noise)
    assert f.slope == pytest.approx(slope, abs=1e-12)
    assert math.log(f.coef) == pytest.approx(math.log(1.64) + noise.mean() - (slope + 0.5) * lx.mean(), abs=1e-12)
    # The standard error: the residuals' variance over the spread of lx, 9 points less 2 parameters.
    resid = noise - noise.mean() - (slope + 0.5) * (lx - lx.mean())
    assert f.slope_stderr == pytest.approx(math.sqrt(resid @ resid / 7 / np.sum((lx - lx.mean()) ** 2)), rel=1e-9)
    assert f.npoints == 9


def test_power_fit_ignores_non_positive_points_and_needs_two():
    f = fits.power_fit([1, 2, 4, 8], [0.0, 4.0, 16.0, 64.0])
    assert f.slope == pytest.approx(2.0) and f.npoints == 3
    with pytest.raises(ValueError):
        fits.power_fit([1, 2], [0.0, 1.0])
    with pytest.raises(ValueError):
        fits.power_fit([2, 2], [1.0, 3.0])


def test_reference_line_passes_through_anchor():
    x = np.array([16, 32, 64, 128])
    y = fits.reference_line(x, 2.0, 32, 5.0)
    assert y[1] == pytest.approx(5.0) and y[3] == pytest.approx(80.0)
