"""tally.argmax/argmin, aminmax, var_mean/mean/var from NumPy (CPU), against NumPy itself: every axis
set of 1-D to 4-D arrays and every dtype, ties, NaN first/last, +-0, empty sets, strided and
transposed inputs (the index renumbered to NumPy's C order), the variance of values near 1e8, and
the errors for bad input."""
import itertools
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
    # axes: where that is not x's order, the layout is refused (no silent copy), copy=True gives
    # NumPy's answer; one reduced axis, or reduced axes in x's order, need no copy.
    x = rng.integers(-2, 2, (3, 4, 5, 6)).astype(np.float64).transpose(3, 1, 0, 2)  # (6, 4, 3, 5)
    for axis in axis_sets(4):
        check_arg(tally, x, axis, "argmax")  # through copy=True where refused
    m = np.moveaxis(rng.integers(-2, 2, (4, 5, 6)), 2, 0)  # (6, 4, 5), strides (1, 30, 6)
    np.testing.assert_array_equal(tally.argmax(m, axis=0), np.argmax(m, axis=0))  # maps without a copy
    np.testing.assert_array_equal(tally.argmin(m, axis=0), np.argmin(m, axis=0))
    for axis in (None, (0, 1, 2, 3)):  # axis 0 (stride 1) before outer ones
        with pytest.raises(tally.LayoutError, match=r"^x: argmax over axes that lie in memory in another order"):
            tally.argmax(x, axis=axis)
    idx = tally.argmax(x, copy=True)
    assert idx == np.argmax(x) and x[np.unravel_index(int(idx), x.shape)] == x.max()
    lo, hi = tally.aminmax(x)  # order-free: no copy needed
    assert lo == x.min() and hi == x.max()


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
        np.testing.assert_array_equal(reduce_or_copy(tally.mean, x, axis), m)


def test_variance_near_1e8(tally, rng):
    # Values near 1e8 with spread 1: the naive E[x^2] - E[x]^2 in float64 is a difference of two
    # numbers near 1e16 whose spacing is 2, so it is a multiple of 2 (the variance is about 1/12);
    # Welford/Chan keeps it to ~1e-9 relative (n eps 1e8 / spread, with n = 1e5 merged pairwise).
    x = 1e8 + rng.uniform(0.0, 1.0, 100_000)
    want = np.var(x - 1e8)  # exact shift: the reference loses nothing
    v, m = tally.var_mean(x)
    naive = np.mean(x * x) - np.mean(x) ** 2
    print(f"variance {want!r}: tally {float(v)!r}, naive sum of squares {naive!r}")
    assert abs(float(v) - want) <= 1e-6 * want
    assert abs(naive - want) > 0.05  # what the library's algorithm avoids
    assert abs(float(m) - np.mean(x)) <= 1e-7


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


# ---- segments and the exact dot product ----------------------------------------------------------
def segment_reference(x, offsets, op, acc):
    f = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
    ident = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}[op]
    if np.issubdtype(acc, np.integer) and op in ("max", "min"):
        ident = np.iinfo(acc).min if op == "max" else np.iinfo(acc).max
    return np.array([f(x[a:b].astype(acc)) if b > a else ident for a, b in zip(offsets[:-1], offsets[1:])], acc)


def random_offsets(rng, n, n_seg, off_dtype):
    cuts = np.sort(rng.integers(0, n + 1, n_seg - 1))
    return np.concatenate(([0], cuts, [n])).astype(off_dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ("sum", "prod", "max", "min"))
@pytest.mark.parametrize("off_dtype", (np.int32, np.int64), ids=("int32", "int64"))
def test_segment_reduce_against_numpy(tally, rng, dtype, op, off_dtype):
    n = 5000
    x = rng.integers(-1000, 1000, n).astype(dtype) if op != "prod" else rng.choice(np.array([-1, 1], dtype), n)
    if op == "prod" and np.issubdtype(dtype, np.floating):
        x = rng.uniform(0.9, 1.1, n).astype(dtype)
    offsets = random_offsets(rng, n, 300, off_dtype)
    offsets[5] = offsets[6] = offsets[4]  # empty segments: the identity
    offsets[:4] = 0
    acc = np.int64 if dtype == np.int32 and op in ("sum", "prod") else dtype
    got = tally.segment_reduce(x, offsets, op)
    want = segment_reference(x, offsets, op, acc)
    assert got.dtype == acc and got.shape == (300,)
    if op in ("sum", "prod") and np.issubdtype(dtype, np.floating):
        lens = np.diff(offsets).astype(np.float64)
        mag = segment_reference(np.abs(x).astype(np.float64), offsets, "sum", np.float64) if op == "sum" else np.abs(want)
        assert np.all(np.abs(got - want) <= 2 * np.maximum(lens, 1) * np.finfo(dtype).eps * mag)
    else:
        np.testing.assert_array_equal(got, want)


def test_segment_reduce_uneven_fixed_and_out(tally, rng):
    x = rng.standard_normal(300_000)
    offsets = np.array([0, 0, 1, 2, 250_000, 250_001, 300_000], np.int64)  # one long, several of 0 and 1
    got = tally.segment_reduce(x, offsets, "max")
    np.testing.assert_array_equal(got, segment_reference(x, offsets, "max", np.float64))
    fixed = tally.segment_reduce(x, segment_size=1000, op="min")
    np.testing.assert_array_equal(fixed, x.reshape(300, 1000).min(axis=1))
    out = np.full(6, 7.0)
    assert tally.segment_reduce(x, offsets, out=out) is out
    np.testing.assert_allclose(out, segment_reference(x, offsets, "sum", np.float64), rtol=1e-10, atol=1e-10)
    wide = tally.segment_reduce(x.astype(np.float32), offsets, acc_dtype="float64")
    assert wide.dtype == np.float64
    a = tally.segment_reduce(x, offsets)
    assert a.tobytes() == tally.segment_reduce(x, offsets).tobytes()  # run to run
    ints = rng.integers(0, 1 << 20, 1000, dtype=np.int64)
    np.testing.assert_array_equal(tally.segment_reduce(ints, segment_size=10, op="bxor"),
                                  np.bitwise_xor.reduce(ints.reshape(100, 10), axis=1))


def test_segment_reduce_bad_input_writes_nothing(tally, rng):
    x = rng.standard_normal(100)
    out = np.full(3, 7.0)
    cases = [
        (dict(offsets=np.array([0, 50, 40, 100])), ValueError, r"^offsets: offsets\[1\] = 50 > offsets\[2\] = 40"),
        (dict(offsets=np.array([0, 50, 60, 101])), ValueError, r"^offsets: offsets\[3\] = 101 runs past"),
        (dict(offsets=np.array([-1, 50, 60, 100])), ValueError, r"^offsets: offsets\[0\] = -1 is negative"),
        (dict(offsets=np.array([0, 50, 100])), ValueError, r"^out: has shape \(3,\), 2 segments"),
        (dict(offsets=np.array([0, 50, 60, 100], np.float64)), TypeError, r"^offsets: must be int32 or int64"),
        (dict(offsets=np.array([0, 10, 20, 30, 40, 50, 60, 100])[::2]), tally.LayoutError, r"^offsets: must be contiguous"),
        (dict(offsets=[0, 50, 60, 100]), TypeError, r"^offsets: a builtins.list"),
        (dict(segment_size=30), ValueError, r"^segment_size: 30 does not divide"),
        (dict(offsets=np.array([0, 50, 60, 100]), segment_size=10), TypeError, r"^offsets: give either"),
        (dict(offsets=np.array([0, 50, 60, 100]), op="exact_sum"), ValueError, r"^op: 'exact_sum' has no segmented"),
        (dict(offsets=np.array([0, 50, 60, 100]), op="band"), TypeError, r"^x: op='band' needs an integer"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            tally.segment_reduce(x, out=out, **kwargs)
        assert np.all(out == 7.0), kwargs
    with pytest.raises(ValueError, match=r"^x: must be 1-D"):
        tally.segment_reduce(x.reshape(10, 10), np.array([0, 10]))
    with pytest.raises(tally.LayoutError, match=r"^x: must be contiguous"):
        tally.segment_reduce(x[::2], np.array([0, 10, 50]))
    got = tally.segment_reduce(x[::2], np.array([0, 10, 50]), copy=True)
    np.testing.assert_allclose(got, [x[::2][:10].sum(), x[::2][10:].sum()], rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match=r"^x: unsupported dtype"):
        tally.segment_reduce(np.zeros(4, np.float16), np.array([0, 4]))


def test_exact_dot(tally, rng):
    # Against an exact reference: math.fsum of the products, each exact in float64 for float32
    # inputs (24 + 24 bits); for float64 inputs the products are split exactly by hand (Dekker).
    import math
    a = (rng.standard_normal(10_000) * np.exp2(rng.integers(-20, 20, 10_000))).astype(np.float32)
    b = (rng.standard_normal(10_000) * np.exp2(rng.integers(-20, 20, 10_000))).astype(np.float32)
    exact64 = math.fsum((a.astype(np.float64) * b.astype(np.float64)).tolist())
    got = tally.exact_dot(a, b, acc_dtype="float64")
    assert got.dtype == np.float64 and float(got) == exact64
    got32 = tally.exact_dot(a, b)
    assert got32.dtype == np.float32 and got32.shape == ()
    # The exact sum rounded once to float32: within half an ulp of the float64-exact value.
    assert abs(float(got32) - exact64) <= 0.5 * float(np.spacing(np.float32(abs(exact64)))) + 1e-300
    x = rng.standard_normal(2000)
    y = rng.standard_normal(2000)
    split = 134217729.0  # Dekker: 2^27 + 1

    def parts(v):
        c = split * v
        hi = c - (c - v)
        return hi, v - hi
    terms = []
    for u, v in zip(x.tolist(), y.tolist()):
        uh, ul = parts(u)
        vh, vl = parts(v)
        terms += [uh * vh, uh * vl, ul * vh, ul * vl]  # each exact; their sum is u v exactly
    assert float(tally.exact_dot(x, y)) == math.fsum(terms)
    with pytest.raises(TypeError, match=r"^a: exact_dot needs float32 or float64"):
        tally.exact_dot(np.ones(3, np.int32), np.ones(3, np.int32))
    with pytest.raises(TypeError, match=r"^b: dtype float32, a has float64"):
        tally.exact_dot(np.ones(3), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"^b: 4 elements, a has 3"):
        tally.exact_dot(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"^acc_dtype: 'float32' is not a result dtype"):
        tally.exact_dot(np.ones(3), np.ones(3), acc_dtype="float32")
    with pytest.raises(tally.LayoutError, match=r"^a: must be contiguous"):
        tally.exact_dot(x[::2], y[::2])
    assert float(tally.exact_dot(x[::2], y[::2], copy=True)) == float(tally.exact_dot(x[::2].copy(), y[::2].copy()))
    assert float(tally.exact_dot(np.zeros(0), np.zeros(0))) == 0.0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_segment_reducers_against_numpy(tally, rng, dtype):
    n = 4000
    x = data(rng, n, dtype, ties=True)
    if np.issubdtype(dtype, np.floating):
        x[rng.integers(0, n, 5)] = np.nan
    offsets = random_offsets(rng, n, 200, np.int64)
    offsets[10:14] = offsets[10]  # empty segments
    segs = [x[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    for which, f in (("argmax", np.argmax), ("argmin", np.argmin)):
        got = tally.segment_reduce(x, offsets, which)
        want = np.array([f(s) if s.size else -1 for s in segs])  # NumPy: the first index, the first NaN
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want, err_msg=which)
    lo, hi = tally.segment_reduce(x, offsets.astype(np.int32), "aminmax")
    big = np.iinfo(dtype).max if np.issubdtype(dtype, np.integer) else np.inf
    small = np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf
    np.testing.assert_array_equal(lo, [s.min() if s.size else big for s in segs])
    np.testing.assert_array_equal(hi, [s.max() if s.size else small for s in segs])
    out = np.float32 if dtype == np.float32 else np.float64
    for correction in (0, 1):
        v, m = tally.segment_reduce(x, offsets, "var_mean", correction=correction)
        assert v.dtype == out and m.dtype == out
        for s, vs, ms in zip(segs, v, m):
            sd = s.astype(np.float64)
            if s.size == 0 or np.isnan(sd).any():
                assert np.isnan(ms) == (s.size == 0 or np.isnan(sd).any()) and np.isnan(vs)
                continue
            eps = np.finfo(out).eps if out == np.float32 else 4 * s.size * np.finfo(np.float64).eps
            scale = np.mean(sd * sd)
            assert abs(ms - sd.mean()) <= eps * np.sqrt(scale) + 4 * s.size * np.finfo(np.float64).eps * np.sqrt(scale)
            if s.size - correction <= 0:
                assert np.isnan(vs)
            else:
                assert abs(vs - sd.var(ddof=correction)) <= eps * scale + 4 * s.size * np.finfo(np.float64).eps * scale
    np.testing.assert_array_equal(tally.segment_reduce(x, offsets, "mean"), m)
    np.testing.assert_array_equal(tally.segment_reduce(x, offsets, "var", correction=1), v)
    fixed = tally.segment_reduce(x, segment_size=40, op="argmax")
    np.testing.assert_array_equal(fixed, np.argmax(x.reshape(100, 40), axis=1))


def test_segment_reducers_bad_input(tally):
    x = np.arange(10.0)
    with pytest.raises(TypeError, match=r"^out: not supported for op='argmax'"):
        tally.segment_reduce(x, np.array([0, 10]), "argmax", out=np.zeros(1, np.int64))
    with pytest.raises(TypeError, match=r"^acc_dtype: not supported for op='mean'"):
        tally.segment_reduce(x, np.array([0, 10]), "mean", acc_dtype="float64")
    with pytest.raises(ValueError, match=r"^correction: expected a non-negative integer"):
        tally.segment_reduce(x, np.array([0, 10]), "var", correction=-1)
    with pytest.raises(ValueError, match=r"^offsets: offsets\[1\] = 7 > offsets\[2\] = 3"):
        tally.segment_reduce(x, np.array([0, 7, 3, 10]), "argmin")
    with pytest.raises(ValueError, match=r"^op: unknown operator 'median' \(one of sum, .*, argmax, argmin, aminmax"):
        tally.segment_reduce(x, np.array([0, 10]), "median")
