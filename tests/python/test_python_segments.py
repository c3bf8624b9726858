"""tally.segment_reduce (CSR offsets and fixed-size segments, by the operators and by the library's
reducers) and tally.exact_dot from NumPy (CPU), against NumPy and exact references: empty segments,
one long segment next to short ones, ties and NaN, bad offsets (ValueError naming offsets, nothing
written)."""
import numpy as np
import pytest

from test_python_reducers import DTYPES, data, rng  # noqa: F401 (rng: the seeded fixture)


def segment_reference(x, offsets, op, acc):
    f = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op]
    ident = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}[op]
    if np.issubdtype(acc, np.integer) and op in ("max", "min"):
        ident = np.iinfo(acc).min if op == "max" else np.iinfo(acc).max
    return np.array([f(x[a:b].astype(acc)) if b > a else ident for a, b in zip(offsets[:-1], offsets[1:])], acc)


def check_segment_sums(got, x, offsets):
    """Each segment's float sum within twice the bound of a sum of its len terms in any order,
    len eps sum|x| (Higham 2.4), of NumPy's: both are within it of the exact sum."""
    want = segment_reference(x, offsets, "sum", x.dtype)
    lens = np.maximum(np.diff(offsets), 1).astype(np.float64)
    mag = segment_reference(np.abs(x).astype(np.float64), offsets, "sum", np.float64)
    assert np.all(np.abs(got - want) <= 2 * lens * np.finfo(x.dtype).eps * mag)


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
    check_segment_sums(out, x, offsets)
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
    check_segment_sums(got, x[::2], np.array([0, 10, 50]))
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


def test_raw_entries_of_pytorch_and_cupy(tally, rng):
    # The entries the PyTorch (strides in elements) and CuPy (strides in bytes) adapters use, driven
    # with NumPy's memory: the same bits as the NumPy path.
    def desc(a, code, in_bytes):
        st = a.strides if in_bytes else tuple(s // a.itemsize for s in a.strides)
        return a.__array_interface__["data"][0], code, -1, a.shape, st

    x = rng.standard_normal(1000)
    offsets = np.array([0, 10, 10, 700, 1000], np.int64)
    for in_bytes in (True, False):
        out = np.empty(4)
        tally._tally.segment_raw(*desc(x, 3, in_bytes), *desc(offsets, 1, in_bytes), *desc(out, 3, in_bytes), in_bytes,
                                 2, -1, 0, 0, False)  # op 2: max
        assert out.tobytes() == tally.segment_reduce(x, offsets, "max").tobytes()
        buf = np.empty((10, 2), np.int64)  # reducer 0 (argmax) over fixed segments of 100: (value, index) structs
        tally._tally.segment_raw(*desc(x, 3, in_bytes), 0, -1, -1, (), (), *desc(buf, 1, in_bytes), in_bytes, -1, 0,
                                 100, 0, False)
        np.testing.assert_array_equal(buf[:, 1], np.argmax(x.reshape(10, 100), axis=1))
        np.testing.assert_array_equal(buf.view(np.float64)[:, 0], np.max(x.reshape(10, 100), axis=1))
    short = np.full((4, 2), 7, np.int64)
    with pytest.raises(ValueError, match=r"^out: 4 segments of 100 elements do not cover in \(1000 elements\)"):
        tally._tally.segment_raw(*desc(x, 3, True), 0, -1, -1, (), (), *desc(short, 1, True), True, -1, 0, 100, 0, False)
    assert np.all(short == 7)
    a, b = x[:500].copy(), x[500:].copy()
    for in_bytes in (True, False):
        d = np.empty((), np.float64)
        tally._tally.exact_dot_raw(*desc(a, 3, in_bytes), *desc(b, 3, in_bytes), *desc(d, 3, in_bytes), in_bytes, 0)
        assert d.tobytes() == tally.exact_dot(a, b).tobytes()
