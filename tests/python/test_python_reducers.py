"""tally.argmax/argmin, aminmax, var_mean/mean/var from NumPy (CPU), against NumPy itself: every axis
set of 1-D to 4-D arrays and every dtype, ties, NaN first/last, +-0, empty sets, strided and
transposed inputs (the index NumPy's C order; reduced axes in another memory order refused), the
variance of values near 1e8, and the errors for bad input."""
import itertools
import math
import os

import numpy as np
import pytest

SEED = int(os.environ.get("TALLY_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
DTYPES = (np.int32, np.int64, np.float32, np.float64)
SHAPES = ((37,), (5, 33), (3, 4, 17), (2, 3, 5, 7))


@pytest.fixture(scope="module")
def rng():
    print(f"seed {SEED} (TALLY_TEST_SEED={SEED} reproduces)")
    return np.random.default_rng(SEED)


def axis_sets(ndim):
    yield None
    for r in range(1, ndim + 1):
        yield from itertools.combinations(range(ndim), r)


def data(rng, shape, dtype, ties=False):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 3, shape, dtype=dtype) if ties else rng.integers(-1000, 1000, shape, dtype=dtype)
    if ties:  # few distinct values: many ties, which the first index must win
        return rng.integers(-3, 3, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def moved(x, axis):
    """x with the reduced axes last, flattened into one (in x's order): NumPy's reference layout."""
    axes = tuple(range(x.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    m = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    return m.reshape(m.shape[:x.ndim - len(axes)] + (-1,))


def reduce_or_copy(f, x, axis, **kw):
    try:
        return f(x, axis=axis, **kw)
    except Exception as e:  # noqa: BLE001 - only the layout error may lead to copy=True
        import tally
        if not isinstance(e, tally.LayoutError):
            raise
        assert str(e).startswith("x:") and "copy=True" in str(e)
        return f(x, axis=axis, copy=True, **kw)


def check_arg(tally, x, axis, which):
    ref = moved(x, axis)
    want = (np.argmax if which == "argmax" else np.argmin)(ref, axis=-1)
    f = getattr(tally, which)
    got = reduce_or_copy(f, x, axis)
    assert got.dtype == np.int64 and got.shape == want.shape, (axis, got.shape, want.shape)
    np.testing.assert_array_equal(got, want, err_msg=f"{which} axis={axis}")
    values, index = reduce_or_copy(f, x, axis, return_values=True)
    np.testing.assert_array_equal(index, want)
    assert values.dtype == x.dtype
    np.testing.assert_array_equal(values, np.take_along_axis(ref, want[..., None], axis=-1)[..., 0])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("which", ("argmax", "argmin"))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("ties", (False, True), ids=("distinct", "ties"))
def test_arg_every_axis_set_against_numpy(tally, rng, shape, which, dtype, ties):
    x = data(rng, shape, dtype, ties)
    for axis in axis_sets(len(shape)):
        check_arg(tally, x, axis, which)


def test_arg_ties_all_equal(tally):
    x = np.full((4, 6, 8), 2.5)
    assert tally.argmax(x) == 0 and tally.argmin(x) == 0
    np.testing.assert_array_equal(tally.argmax(x, axis=(0, 2)), np.zeros(6, np.int64))
    x = np.zeros(10)
    x[0] = -0.0  # +0 and -0 are equal: the first still wins
    x[3] = -0.0
    assert tally.argmax(x) == 0 and tally.argmin(x) == 0


def test_arg_nan_first(tally, rng):
    x = rng.standard_normal((6, 7, 40))
    x[2, 3, 11] = np.nan
    x[4, 0, 2] = np.nan
    x[5, 6, 39] = np.nan  # the very last element
    x[0, 0, 0] = np.inf
    for axis in axis_sets(3):
        for which in ("argmax", "argmin"):  # NumPy's rule too: the first NaN
            check_arg(tally, x, axis, which)
    last = np.arange(20.0)
    last[-1] = np.nan
    assert tally.argmax(last) == 19 and tally.argmin(last) == 19
    assert tally.argmax(np.full(5, np.nan)) == 0


STRIDED = [
    (lambda a: a[::2], "every other gang slab"),
    (lambda a: a[:, 1:-1], "a worker window"),
    (lambda a: a[1:, :, 2:9], "an inner window"),
    (lambda a: a[..., ::3], "a strided innermost axis"),
    (lambda a: np.moveaxis(a, 2, 0), "the innermost axis moved out"),
    (lambda a: a.transpose(2, 1, 0), "a transpose"),
    (lambda a: a.transpose(1, 0, 2), "the outer two swapped"),
    (lambda a: a.transpose(0, 2, 1)[:, ::2], "swapped and strided"),
    (lambda a: a[::-1], "negative strides"),
]


@pytest.mark.parametrize("view,what", STRIDED, ids=[w for _, w in STRIDED])
def test_strided_and_transposed(tally, rng, view, what):
    # The library numbers the reduced elements in its own (stride-sorted) order; the indices must
    # be NumPy's C order over x's reduced axes all the same.
    base = data(rng, (6, 8, 12), np.float64, ties=True)
    x = view(base)
    for axis in axis_sets(3):
        for which in ("argmax", "argmin"):
            check_arg(tally, x, axis, which)
        lo, hi = reduce_or_copy(tally.aminmax, x, axis)
        np.testing.assert_array_equal(lo, np.min(x, axis=axis))
        np.testing.assert_array_equal(hi, np.max(x, axis=axis))
        v, m = reduce_or_copy(tally.var_mean, x, axis)
        check_moments(v, m, x, axis, 0)


def test_transposed_arg_reductions(tally, rng):
    # Ties go to the first index in the library's numbering, which is memory order over the reduced
    # axes: where that is not x's order, tally reduces in stages (the outermost reduced axis over
    # the others' winners): NumPy's first index all the same, without copying x.
    base = rng.integers(-2, 2, (3, 4, 5, 6)).astype(np.float64)
    x = base.transpose(3, 1, 0, 2)  # (6, 4, 3, 5): axis 0 has stride 1
    x[0, 0, 0, 0] = x[5, 3, 2, 4] = np.nan  # NaN: the first too
    for axis in axis_sets(4):
        try:
            got = tally.argmax(x, axis=axis)
        except tally.LayoutError as e:  # a mapping no stage can take: copy=True
            assert "copy=True" in str(e)
            got = tally.argmax(x, axis=axis, copy=True)
        np.testing.assert_array_equal(got, np.argmax(moved(x, axis), axis=-1), err_msg=str(axis))
        check_arg(tally, x, axis, "argmin")
    for w in (x[1:], x.transpose(1, 0, 2, 3)):  # ties everywhere, no NaN in these
        w = np.where(np.isnan(w), 0.0, w)
        t = w.transpose(3, 2, 1, 0)
        for axis in (None, (0, 1), (1, 2, 3), (0, 2, 3)):
            try:
                v, i = tally.argmin(t, axis=axis, return_values=True)
            except tally.LayoutError:
                continue
            ref = moved(t, axis)
            want = np.argmin(ref, axis=-1)
            np.testing.assert_array_equal(i, want, err_msg=str(axis))
            np.testing.assert_array_equal(v, np.take_along_axis(ref, want[..., None], -1)[..., 0])
    assert tally.argmax(x, copy=True) == np.argmax(x) == 0  # the first NaN
    y = rng.integers(-2, 2, (50, 70)).astype(np.float32).T  # the common case: a transposed matrix
    assert tally.argmax(y) == np.argmax(y) and tally.argmin(y) == np.argmin(y)  # staged, no copy needed
    z = rng.integers(-2, 2, (7, 50, 70)).astype(np.float64).transpose(0, 2, 1)
    np.testing.assert_array_equal(tally.argmax(z, axis=(1, 2)), np.argmax(moved(z, (1, 2)), axis=-1))
    # Every transpose of a 3-D array, every axis set, without a copy (kept axes in reverse memory
    # order are reduced through a view that puts them in memory order).
    b3 = rng.integers(-2, 2, (4, 5, 6)).astype(np.float32)
    for perm in itertools.permutations(range(3)):
        t = b3.transpose(perm)
        for axis in axis_sets(3):
            for which, f in (("argmax", np.argmax), ("argmin", np.argmin)):
                v, i = getattr(tally, which)(t, axis=axis, return_values=True)
                ref = moved(t, axis)
                want = f(ref, axis=-1)
                np.testing.assert_array_equal(i, want, err_msg=f"{which} {perm} {axis}")
                np.testing.assert_array_equal(v, np.take_along_axis(ref, want[..., None], -1)[..., 0])
            lo, hi = tally.aminmax(t, axis=axis)
            np.testing.assert_array_equal(lo, np.min(t, axis=axis))
            np.testing.assert_array_equal(hi, np.max(t, axis=axis))
            var, mean = tally.var_mean(t, axis=axis, correction=1)
            check_moments(var, mean, t, axis, 1)
    lo, hi = tally.aminmax(y)  # order-free: one stage
    assert lo == y.min() and hi == y.max()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_aminmax_every_axis_set(tally, rng, shape, dtype):
    x = data(rng, shape, dtype)
    for axis in axis_sets(len(shape)):
        lo, hi = reduce_or_copy(tally.aminmax, x, axis)
        assert lo.dtype == x.dtype and hi.dtype == x.dtype
        np.testing.assert_array_equal(lo, np.min(x, axis=axis))
        np.testing.assert_array_equal(hi, np.max(x, axis=axis))


def test_aminmax_nan_zeros_and_empty(tally, rng):
    x = rng.standard_normal((5, 6, 7))
    x[1, 2, 3] = np.nan
    for axis in axis_sets(3):
        lo, hi = tally.aminmax(x, axis=axis)
        np.testing.assert_array_equal(lo, np.min(x, axis=axis))  # NaN where a NaN was met
        np.testing.assert_array_equal(hi, np.max(x, axis=axis))
    lo, hi = tally.aminmax(np.array([0.0, -0.0, 0.0]))  # -0 < +0: min -0, max +0, in any order
    assert lo == 0 and np.signbit(lo) and hi == 0 and not np.signbit(hi)
    lo, hi = tally.aminmax(np.array([-0.0, 0.0, -0.0], np.float32))
    assert np.signbit(lo) and not np.signbit(hi)
    # Empty reduced sets: the library's identities, as tally.reduce's max/min.
    lo, hi = tally.aminmax(np.zeros((0, 3)), axis=0)
    np.testing.assert_array_equal(lo, np.full(3, np.inf))
    np.testing.assert_array_equal(hi, np.full(3, -np.inf))
    lo, hi = tally.aminmax(np.zeros((2, 0), np.int32), axis=1)
    np.testing.assert_array_equal(lo, np.full(2, np.iinfo(np.int32).max))
    np.testing.assert_array_equal(hi, np.full(2, np.iinfo(np.int32).min))
    lo, hi = tally.aminmax(np.zeros((0, 3)), axis=1)
    assert lo.shape == (0,) and hi.shape == (0,)


def check_moments(v, m, x, axis, correction):
    """Against NumPy's two-pass var and mean in float64. Both are within a few n eps of the exact
    values relative to mean(x^2) (Chan's pairwise merge and NumPy's pairwise sums); float32 results
    add one rounding."""
    xd = x.astype(np.float64)
    out = np.float32 if x.dtype == np.float32 else np.float64
    assert v.dtype == out and m.dtype == out
    want_m = np.mean(xd, axis=axis)
    want_v = np.var(xd, axis=axis, ddof=correction)
    n = xd.size // max(want_m.size, 1)
    eps = np.finfo(np.float64).eps
    scale = np.mean(xd * xd, axis=axis)
    round_once = np.finfo(out).eps if out == np.float32 else 0
    assert np.all(np.abs(m - want_m) <= 4 * n * eps * np.sqrt(scale) + round_once * np.abs(want_m)), axis
    assert np.all(np.abs(v - want_v) <= 4 * n * eps * scale + round_once * np.abs(want_v)), axis


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_var_mean_every_axis_set(tally, rng, shape, dtype):
    x = data(rng, shape, dtype)
    if np.issubdtype(dtype, np.floating):
        x += dtype(3)  # a mean away from 0
    for axis in axis_sets(len(shape)):
        for correction in (0, 1):
            v, m = reduce_or_copy(tally.var_mean, x, axis, correction=correction)
            check_moments(v, m, x, axis, correction)
            np.testing.assert_array_equal(reduce_or_copy(tally.var, x, axis, correction=correction), v)
        if np.issubdtype(dtype, np.integer):
            np.testing.assert_array_equal(reduce_or_copy(tally.mean, x, axis), m)  # var_mean's, in float64
        else:
            check_mean(tally, x, axis)


def check_mean(tally, x, axis, acc_dtype=None):
    """tally.mean of floats: the sum in the accumulator dtype divided once by the count. Bitwise
    tally.reduce's sum over the count, and within the sum's error bound, (n + 1) eps sum|x| / n
    plus the division's eps |mean|, of float64's two-pass mean."""
    got = reduce_or_copy(tally.mean, x, axis, acc_dtype=acc_dtype)
    acc = np.dtype(acc_dtype or x.dtype)
    assert got.dtype == acc
    s = reduce_or_copy(tally.reduce, x, axis, op="sum", acc_dtype=acc_dtype)
    n = x.size // max(np.asarray(s).size, 1)
    np.testing.assert_array_equal(got, np.asarray(s / acc.type(n), dtype=acc), err_msg=f"axis={axis}")
    xd = x.astype(np.float64)
    eps = np.finfo(acc).eps
    want = np.mean(xd, axis=axis)
    bound = (n + 1) * eps * np.mean(np.abs(xd), axis=axis) + eps * np.abs(want)
    assert np.all(np.abs(got - want) <= bound), axis


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_mean_float32_to_float64(tally, rng, shape):
    x = data(rng, shape, np.float32) + np.float32(3)
    for axis in axis_sets(len(shape)):
        check_mean(tally, x, axis, acc_dtype="float64")


def test_mean_nan_inf_and_errors(tally):
    x = np.ones((3, 4), np.float32)
    x[0, 1], x[1, 2], x[2, 0], x[2, 3] = np.nan, np.inf, np.inf, -np.inf
    m = tally.mean(x, axis=1)
    assert np.isnan(m[0]) and m[1] == np.inf and np.isnan(m[2])
    assert np.all(np.isnan(tally.mean(np.zeros((2, 0)), axis=1)))
    np.testing.assert_array_equal(tally.reduce(x[:, 3:], "mean", axis=1), x[:, 3])  # one element: itself
    with pytest.raises(TypeError, match=r"^acc_dtype: the mean of int32 is float64"):
        tally.mean(np.ones(3, np.int32), acc_dtype="float32")
    with pytest.raises(TypeError, match=r"^x: op='mean' needs a float32 or float64"):
        tally.reduce(np.ones(3, np.int64), "mean")
    with pytest.raises(TypeError, match=r"^acc_dtype: float32 is not an accumulator"):
        tally.mean(np.ones(3), acc_dtype="float32")


def chan_rounding_bounds(n, lo, hi, block=64):
    """Bounds on the rounding of var_mean's CPU path for n values in [lo, hi], 0 < lo: (on the mean,
    on M2 / n). Leaves are blocks of at most `block` values (reduce's run_block) by the two-pass
    formula, merged by Chan's formula in any tree; a root path has at most n / block + one tail block
    per thread merges (at most 1024 threads assumed). A node's mean is off by its children's error
    plus one rounding, u hi (a block's sum: gamma_block hi), so by E <= (block + depth) u hi. A merge
    adds d^2 na nb / n with d off by at most 2E: |d'^2 - d^2| <= 4E (w + E), w = hi - lo, and
    sum na nb / n <= sum min(na, nb) <= n log2 n (an element is on the smaller side at most log2 n
    times). The sums of non-negative terms add a relative gamma of their roundings."""
    u, w = 2.0 ** -53, hi - lo
    depth = n // block + max(1024, os.cpu_count() or 1)
    e = (block + depth) * u * hi * (1 + 1e-9)
    rel = (block + 6 + 5 * depth) * u / (1 - (block + 6 + 5 * depth) * u)
    return e, (4 * e * (w + e) * n * math.log2(n) + n * e * e) / n, rel


def test_variance_near_1e8(tally, rng):
    # Values near 1e8 with spread 1: the naive E[x^2] - E[x]^2 in float64 is a difference of two
    # numbers in [2^53, 2^54), whose spacing is 2, so it is a multiple of 2: off by at least the
    # variance itself (about 1/12). The library's blocks and merges keep it to the bound derived above.
    x = 1e8 + rng.uniform(0.0, 1.0, 100_000)
    # The shift is exact (Sterbenz); NumPy's two pairwise passes on values in [0, 1) are within
    # gamma_300 (its pairwise sums' bound) times the condition number 1 + mean^2/var < 4: under 1e-10.
    want = np.var(x - 1e8)
    v, m = tally.var_mean(x)
    naive = np.mean(x * x) - np.mean(x) ** 2
    print(f"variance {want!r}: tally {float(v)!r}, naive sum of squares {naive!r}")
    e_mean, e_var, rel = chan_rounding_bounds(x.size, float(x.min()), float(x.max()))
    assert abs(float(v) - want) <= e_var + (rel + 1e-10) * want
    assert e_var + (rel + 1e-10) * want < 0.05 * want  # the bound is far from the naive formula's loss
    assert abs(naive - want) >= min(want, 2 - want)  # what the library's algorithm avoids
    assert abs(float(m) - math.fsum(x) / x.size) <= e_mean + 2 * 2.0 ** -53 * float(x.max())  # fsum: exact, then /n


def test_moments_of_nothing_and_of_one(tally):
    v, m = tally.var_mean(np.zeros((0, 4)), axis=0)
    assert np.all(np.isnan(v)) and np.all(np.isnan(m)) and v.shape == (4,)
    assert np.isnan(tally.mean(np.zeros(0, np.float32)))
    one = np.array([[5.0], [7.0]])
    np.testing.assert_array_equal(tally.var(one, axis=1), [0.0, 0.0])
    assert np.all(np.isnan(tally.var(one, axis=1, correction=1)))  # divisor count - 1 = 0
    assert np.isnan(tally.var(np.ones(3), correction=3)) and tally.var(np.ones(3), correction=2) == 0
    x = np.array([1.0, np.nan, 2.0])
    v, m = tally.var_mean(x)
    assert np.isnan(v) and np.isnan(m)
    ints = np.array([1, 2, 3, 4], np.int32)
    v, m = tally.var_mean(ints, correction=1)
    assert v.dtype == np.float64 and v == np.var(ints, ddof=1) and m == 2.5


def test_arg_of_nothing_raises(tally):
    for which in ("argmax", "argmin"):
        f = getattr(tally, which)
        with pytest.raises(ValueError, match=rf"^x: {which} of an empty set"):
            f(np.zeros((3, 0)), axis=1)
        with pytest.raises(ValueError, match=rf"^x: {which} of an empty set"):
            f(np.zeros(0, np.int32))
        assert f(np.zeros((0, 3)), axis=1).shape == (0,)  # no output: nothing to reduce, no error


def test_zero_d_scalars_and_results(tally):
    assert tally.argmax(np.array(2.5)) == 0
    idx = tally.argmax(np.float32(3))
    assert isinstance(idx, np.ndarray) and idx.shape == () and idx.dtype == np.int64
    v, m = tally.var_mean(np.arange(10.0))
    assert isinstance(v, np.ndarray) and v.shape == () and m == 4.5
    lo, hi = tally.aminmax(np.arange(10, dtype=np.int64).reshape(2, 5))
    assert lo.shape == () and lo == 0 and hi == 9


def test_deterministic_and_layout_independent(tally, rng):
    x = rng.standard_normal((16, 64, 1000)).astype(np.float32)
    for axis in axis_sets(3):
        a = tally.var_mean(x, axis=axis)
        b = tally.var_mean(x, axis=axis)
        assert all(p.tobytes() == q.tobytes() for p, q in zip(a, b))
    # Selections are exact: a transposed copy of the same data gives the same values and indices.
    t = np.ascontiguousarray(x.transpose(2, 0, 1)).transpose(1, 2, 0)
    for axis in axis_sets(3):
        assert tally.argmax(x, axis=axis).tobytes() == tally.argmax(t, axis=axis, copy=True).tobytes()
        tt = reduce_or_copy(tally.aminmax, t, axis)
        assert all(p.tobytes() == q.tobytes() for p, q in zip(tally.aminmax(x, axis=axis), tt))


def test_zero_copy_on_the_host(tally, rng):
    x = rng.standard_normal((8, 16, 32))
    v = x[1:, ::2].transpose(2, 0, 1)
    tally.argmax(v, axis=(1, 2))
    assert tally._tally._last_input_pointer() == v.__array_interface__["data"][0]


def test_raw_entry_of_pytorch_and_cupy(tally, rng):
    # The entry the PyTorch (strides in elements) and CuPy (strides in bytes) adapters use, driven
    # with NumPy's memory: the same bits as the NumPy path.
    raw = tally._tally.reducer_raw
    x = rng.standard_normal((5, 12, 40))[:, ::3, 4:]
    words, fields = tally._tally.REDUCER_FIELDS["argmax", "float64"]
    for axis, mask in ((None, 7), (2, 4), ((0, 2), 5), (1, 2)):
        kept = tuple(n for a, n in enumerate(x.shape) if not mask >> a & 1)
        want = tally.argmax(x, axis=axis, return_values=True)
        buf = np.zeros(kept + (words,), np.int64)
        bp = buf.__array_interface__["data"][0]
        raw(x.__array_interface__["data"][0], 3, -1, x.shape, x.strides, bp, 1, -1, buf.shape, buf.strides, True, 0,
            mask, 0)
        assert buf.view(np.float64)[..., 0].tobytes() == np.ascontiguousarray(want[0]).tobytes()
        assert buf[..., 1].tobytes() == np.ascontiguousarray(want[1]).tobytes()
    with pytest.raises(ValueError, match=r"^out: must be an int64 buffer of shape \(2,\)"):
        raw(x.__array_interface__["data"][0], 3, -1, x.shape, x.strides, bp, 1, -1, (3,), (8,), True, 0, 7, 0)


@pytest.mark.parametrize("bad", [np.float16, np.complex64, np.bool_, np.uint32, ">f4"], ids=str)
def test_unsupported_dtypes(tally, bad):
    for f in (tally.argmax, tally.argmin, tally.aminmax, tally.var_mean, tally.mean, tally.var):
        with pytest.raises(TypeError, match=r"^x: unsupported dtype"):
            f(np.zeros(4, dtype=bad))


def test_bad_arguments(tally):
    x = np.ones((4, 5), np.float32)
    for f in (tally.argmax, tally.aminmax, tally.var_mean):
        with pytest.raises(TypeError, match=r"^x: expected an array"):
            f([1.0, 2.0])
        with pytest.raises(ValueError, match=r"^axis: 2 is out of range"):
            f(x, axis=2)
        with pytest.raises(ValueError, match=r"^axis: axis 1 is repeated"):
            f(x, axis=(1, -1))
        with pytest.raises(TypeError, match=r"^axis: expected None"):
            f(x, axis="0")
        with pytest.raises(ValueError, match=r"^stream: x is in host memory"):
            f(x, stream=0)
    for bad in (-1, 0.5, "1", None):
        with pytest.raises(ValueError, match=r"^correction: expected a non-negative integer"):
            tally.var_mean(x, correction=bad)
    with pytest.raises(tally.LayoutError, match=r"^x: .*copy=True"):
        tally.argmax(np.broadcast_to(x[:1], x.shape), axis=0)
    np.testing.assert_array_equal(tally.argmax(np.broadcast_to(x[:1], x.shape), axis=0, copy=True), np.zeros(5))


class _Foreign:
    """A host array offered through DLPack only: tally imports it into NumPy and takes the general
    (Python) path, which the compiled call for NumPy arrays (reducer_host) must match."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_call_matches_the_general_path(tally, rng, dtype):
    """NumPy arrays take one compiled call (new arrays, no views of a struct buffer; var_mean's
    division in C++): the general path's results bit for bit, with its dtypes and shapes, x unchanged."""
    for shape in SHAPES:
        x = data(rng, shape, dtype, ties=True)
        if np.issubdtype(dtype, np.floating):
            x.flat[rng.integers(0, x.size, 2)] = np.nan
            x.flat[rng.integers(0, x.size)] = -0.0
        before = x.tobytes()
        for axis in axis_sets(x.ndim):
            for f, kw in ((tally.argmax, dict(return_values=True)), (tally.argmin, dict(return_values=True)),
                          (tally.aminmax, {}), (tally.var_mean, dict(correction=0)), (tally.var_mean, dict(correction=1)),
                          (tally.var, dict(correction=3)), (tally.mean, {})):
                if f is tally.mean and np.issubdtype(dtype, np.floating):
                    continue  # floats: tally.reduce's Mean, not a reducer
                try:
                    want = f(_Foreign(x), axis, **kw)
                except ValueError:  # arg-reductions whose order the view refuses: both paths raise
                    with pytest.raises(ValueError):
                        f(x, axis, **kw)
                    continue
                got = f(x, axis, **kw)
                got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
                for g, w in zip(got, want):
                    assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.shape == w.shape, (f, shape, axis)
                    assert g.tobytes() == np.ascontiguousarray(w).tobytes(), (f.__name__, shape, axis, kw)
        assert x.tobytes() == before
    # want: only the results asked for (bit 0 the first, bit 1 the second), each the pair's own bits.
    x = data(rng, (5, 33), dtype, ties=True)
    for code in range(4):
        for mask in (1, 2, 3):
            both = tally._tally.reducer_host(x, code, mask, 1, 3)
            first, second = (tally._tally.reducer_host(x, code, mask, 1, w) for w in (1, 2))
            assert isinstance(both, tuple) and len(both) == 2, (code, mask)
            for got, w in ((first, both[0]), (second, both[1])):
                assert got.dtype == w.dtype and got.shape == w.shape and got.tobytes() == w.tobytes(), (code, mask)
    for w in (0, 4):
        assert tally._tally.reducer_host(x, 0, 1, 0, w) is None
    # The compiled call declines what the general path must report or stage, writing nothing.
    assert tally._tally.reducer_host(np.zeros(0, dtype), 0, 1) is None
    assert tally._tally.reducer_host(np.zeros((3, 4), dtype).T, 0, 3) is None  # ties need stages
    assert tally._tally.reducer_host(np.zeros(3, np.float16), 0, 1) is None
    assert tally._tally.reducer_host(np.zeros(3, dtype), 0, 2) is None  # an axis out of range
    assert tally._tally.reducer_host(np.arange(5, dtype=dtype)[::-1], 0, 1) is None  # a negative stride
    with pytest.raises(ValueError, match="x: negative stride"):
        tally.argmax(np.arange(5, dtype=dtype)[::-1])
    assert tally.argmax(np.arange(5, dtype=dtype)[::-1], copy=True) == 0
