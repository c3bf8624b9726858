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
    assert np.all(np.diff(p) < 0)          # monotone approach from above
    assert p[-1] == pytest.approx(2.0, abs=0.02)
    assert p[0] > 2.2


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


def test_power_fit_on_noisy_monte_carlo_like_data():
    # |error| of an unbiased estimator with sigma ~ N^-1/2: mean over replicates of |normal| draws.
    rng = np.random.default_rng(7)
    n = np.logspace(3, 7, 9)
    sigma = 1.64 / np.sqrt(n)
    mean_abs = np.abs(rng.normal(0.0, sigma[:, None], size=(n.size, 64))).mean(axis=1)
    f = fits.power_fit(n, mean_abs)
    assert f.slope == pytest.approx(-0.5, abs=3 * f.slope_stderr + 0.02)
    assert 0 < f.slope_stderr < 0.05
    # mean |N(0, s)| = s sqrt(2/pi)
    assert f(1e5) == pytest.approx(math.sqrt(2 / math.pi) * 1.64 / math.sqrt(1e5), rel=0.15)


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
