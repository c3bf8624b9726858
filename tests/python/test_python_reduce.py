"""tally.reduce from NumPy (CPU), against NumPy itself: every operator and axis set of 1-D to 4-D
arrays, the NaN rule, strided inputs, empty arrays, out= and the errors for bad input."""
import itertools
import os

import numpy as np
import pytest

SEED = int(os.environ.get("TALLY_TEST_SEED", np.random.SeedSequence().entropy % 2**32))


@pytest.fixture(scope="module")
def rng():
    print(f"seed {SEED} (TALLY_TEST_SEED={SEED} reproduces)")
    return np.random.default_rng(SEED)


DTYPES = (np.int32, np.int64, np.float32, np.float64)
SHAPES = ((37,), (5, 33), (3, 4, 17), (2, 3, 5, 7))


def axis_sets(ndim):
    yield None
    for r in range(1, ndim + 1):
        yield from itertools.combinations(range(ndim), r)


def data(rng, shape, dtype, op):
    if op == "prod":  # keep products finite and, for integers, exact
        if np.issubdtype(dtype, np.integer):
            return rng.choice(np.array([-1, 1], dtype=dtype), size=shape)
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, shape, dtype=dtype)
    return rng.standard_normal(shape).astype(dtype)


def reference(x, op, axis, acc):
    xa = x.astype(acc)
    if op == "sum":
        return np.sum(xa, axis=axis)
    if op == "prod":
        return np.prod(xa, axis=axis)
    return (np.max if op == "max" else np.min)(x, axis=axis).astype(acc)


def count(shape, axis):
    axes = range(len(shape)) if axis is None else axis
    return int(np.prod([shape[a] for a in axes]))


def check_close(got, x, op, axis, acc):
    want = reference(x, op, axis, acc)
    assert got.shape == np.shape(want) and got.dtype == np.dtype(acc)
    if np.issubdtype(acc, np.integer) or op in ("max", "min"):
        np.testing.assert_array_equal(got, want)
        return
    # Any summation order is within (n - 1) eps sum|x| of the exact sum (Higham 2.4), and so is NumPy's.
    n = count(x.shape, axis)
    eps = np.finfo(acc).eps
    if op == "sum":
        bound = 2 * max(n - 1, 1) * eps * np.sum(np.abs(x.astype(np.float64)), axis=axis)
    else:
        bound = 2 * max(n - 1, 1) * eps * np.abs(want.astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= bound)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", ("sum", "prod", "max", "min"))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_axis_set_against_numpy(tally, rng, shape, op, dtype):
    x = data(rng, shape, dtype, op)
    for axis in axis_sets(len(shape)):
        acc = np.int64 if dtype == np.int32 and op in ("sum", "prod") else dtype
        try:
            got = tally.reduce(x, op, axis=axis)
        except tally.LayoutError:
            # Only a 4-D axis set that alternates (reduced, kept, reduced, kept) has no 3-level view.
            assert len(shape) == 4 and axis in ((0, 2), (1, 3)), axis
            got = tally.reduce(x, op, axis=axis, copy=True)
        check_close(got, x, op, axis, acc)


@pytest.mark.parametrize("op,acc", [("sum", np.float64), ("max", np.float64), ("sum", np.int64), ("prod", np.int32)])
def test_accumulator_dtypes(tally, rng, op, acc):
    src = np.float32 if acc == np.float64 else np.int32
    x = data(rng, (6, 50), src, op)
    for axis in axis_sets(2):
        check_close(tally.reduce(x, op, axis=axis, acc_dtype=acc), x, op, axis, acc)
    # The wider accumulator is the one used: a float64 sum of float32 data is within float64 bounds.


@pytest.mark.parametrize("op", ("band", "bor", "bxor", "land", "lor"))
@pytest.mark.parametrize("dtype", (np.int32, np.int64), ids=lambda d: np.dtype(d).name)
def test_bit_and_logical_ops(tally, rng, op, dtype):
    x = rng.integers(0, 1 << 20, (4, 6, 9), dtype=dtype)
    x[rng.random(x.shape) < 0.2] = 0
    ufunc = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor,
             "land": np.logical_and, "lor": np.logical_or}[op]
    for axis in axis_sets(3):
        want = ufunc.reduce(x, axis=axis if axis is not None else tuple(range(3))).astype(dtype)
        np.testing.assert_array_equal(tally.reduce(x, op, axis=axis), want)


@pytest.mark.parametrize("op", ("sum", "prod", "max", "min"))
def test_nan_propagates(tally, rng, op):
    x = rng.standard_normal((8, 9, 10))
    x[3, 4, 5] = np.nan
    x[6, 0, 9] = np.nan
    for axis in axis_sets(3):
        got = tally.reduce(x, op, axis=axis)
        want_nan = np.isnan(np.sum(x, axis=axis))  # where a reduced slice holds a NaN
        np.testing.assert_array_equal(np.isnan(got), want_nan)
        if op in ("max", "min"):  # NumPy's max/min propagate NaN too: equal, NaN for NaN
            np.testing.assert_array_equal(got, (np.max if op == "max" else np.min)(x, axis=axis))


def test_inf_and_nan_in_max(tally):
    x = np.array([1.0, np.inf, -np.inf, 3.0])
    assert tally.reduce(x, "max") == np.inf and tally.reduce(x, "min") == -np.inf
    x[0] = np.nan
    assert np.isnan(tally.reduce(x, "max")) and np.isnan(tally.reduce(x, "min"))


STRIDED = [
    (lambda a: a[::2], "every other gang slab"),
    (lambda a: a[:, 1:-1], "a worker window"),
    (lambda a: a[1:, :, 2:9], "an inner window (rows of a larger row)"),
    (lambda a: a[..., ::3], "a strided innermost axis"),
    (lambda a: a[:, ::2, ::4], "strided worker and vector"),
    (lambda a: np.moveaxis(a, 2, 0), "the innermost axis moved out"),
    (lambda a: a.transpose(2, 1, 0), "a transpose"),
    (lambda a: a[::-1], "negative strides"),
    (lambda a: np.broadcast_to(a[:1], a.shape), "a broadcast (stride 0)"),
]


@pytest.mark.parametrize("view,what", STRIDED, ids=[w for _, w in STRIDED])
def test_strided_inputs(tally, rng, view, what):
    base = rng.standard_normal((6, 8, 12))
    x = view(base)
    for axis in axis_sets(3):
        want = np.sum(x, axis=axis)
        try:
            got = tally.reduce(x, "sum", axis=axis)
        except tally.LayoutError as e:
            assert "copy=True" in str(e) and str(e).startswith("x:")
            got = tally.reduce(x, "sum", axis=axis, copy=True)
        n = count(x.shape, axis)
        bound = 2 * n * np.finfo(np.float64).eps * np.sum(np.abs(x), axis=axis)
        assert np.all(np.abs(got - want) <= bound), (what, axis)
        np.testing.assert_array_equal(tally.reduce(x, "max", axis=axis, copy=True), np.max(x, axis=axis))


def test_views_that_need_no_copy(tally, rng):
    # Layouts the strided view takes in place: they must not raise without copy=True.
    base = rng.standard_normal((6, 8, 12))
    for x in (base[::2], base[:, 1:-1], base[1:, :, 2:9], base[..., ::3][:, :, :1], base.transpose(2, 1, 0)):
        tally.reduce(x, "sum")  # a full reduction of any non-overlapping layout
    tally.reduce(base[..., ::3], "sum", axis=2)
    tally.reduce(base[:, :, 2:9], "max", axis=(0, 2))
    tally.reduce(np.moveaxis(base, 2, 0), "sum", axis=0)


def test_4d_merges_contiguous_axes(tally, rng):
    x = rng.standard_normal((3, 4, 5, 6))
    # (0, 1) and (2, 3) merge: 2 groups; (0, 2) cannot (4 groups) and needs a copy.
    tally.reduce(x, "sum", axis=(2, 3))
    with pytest.raises(tally.LayoutError):
        tally.reduce(x, "sum", axis=(0, 2))
    got = tally.reduce(x, "sum", axis=(0, 2), copy=True)
    check_close(got, x, "sum", (0, 2), np.float64)


@pytest.mark.parametrize("op,identity", [("sum", 0), ("prod", 1), ("max", -np.inf), ("min", np.inf)])
def test_empty_arrays(tally, op, identity):
    for shape, axis, out_shape in [((0,), None, ()), ((0, 3), 0, (3,)), ((3, 0), 1, (3,)), ((0, 3), 1, (0,)),
                                   ((2, 0, 4), (1,), (2, 4)), ((2, 0, 4), (0, 2), (0,))]:
        got = tally.reduce(np.zeros(shape), op, axis=axis)
        assert got.shape == out_shape
        assert np.all(got == identity)
    ints = tally.reduce(np.zeros((0, 2), np.int32), "max", axis=0)
    np.testing.assert_array_equal(ints, np.full(2, np.iinfo(np.int32).min, np.int32))


def test_zero_d_and_scalars(tally):
    assert tally.reduce(np.array(2.5), "sum") == 2.5
    assert tally.reduce(np.float32(3), "max") == 3


def test_out_argument(tally, rng):
    x = rng.standard_normal((4, 5))
    out = np.empty(5)
    assert tally.reduce(x, "sum", axis=0, out=out) is out
    check_close(out, x, "sum", (0,), np.float64)
    out32 = np.empty(4, np.float64)
    tally.reduce(x.astype(np.float32), "sum", axis=1, out=out32)  # float32 -> float64 accumulator
    check_close(out32, x.astype(np.float32), "sum", (1,), np.float64)


def test_deterministic(tally, rng):
    x = rng.standard_normal((16, 64, 1000)).astype(np.float32)
    for axis in axis_sets(3):
        a = tally.reduce(x, "sum", axis=axis)
        b = tally.reduce(x, "sum", axis=axis)
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("bad", [np.float16, np.complex64, np.bool_, np.uint32, np.int8, ">f4"], ids=str)
def test_unsupported_dtypes(tally, bad):
    with pytest.raises(TypeError, match=r"^x: unsupported dtype"):
        tally.reduce(np.zeros(4, dtype=bad))


@pytest.mark.parametrize("obj", [[1.0, 2.0], 3.0, "abc", None, {"a": 1}], ids=repr)
def test_non_arrays(tally, obj):
    with pytest.raises(TypeError, match=r"^x: expected an array"):
        tally.reduce(obj)


def test_bad_arguments_write_nothing(tally):
    x = np.ones((4, 5), np.float32)
    cases = [
        (dict(axis=0, out=np.full(4, 7.0, np.float32)), ValueError, r"^out: has shape \(4,\).*gives \(5,\)"),
        (dict(axis=1, out=np.full(4, 7, np.int32)), TypeError, r"^out: int32 is not an accumulator"),
        (dict(axis=1, out=np.full(4, 7, np.float16)), TypeError, r"^out: unsupported dtype"),
        (dict(axis=1, out=np.full((4, 2), 7.0, np.float32)[:, 0]), ValueError, r"^out: must be C-contiguous"),
        (dict(axis=1, out=np.full(4, 7.0), acc_dtype="float32"), TypeError, r"^out: dtype float64 differs"),
        (dict(axis=1, out=[7.0] * 4), TypeError, r"^out: a builtins.list"),
    ]
    for kwargs, exc, msg in cases:
        before = np.array(kwargs["out"], copy=True)
        with pytest.raises(exc, match=msg):
            tally.reduce(x, "sum", **kwargs)
        np.testing.assert_array_equal(np.asarray(kwargs["out"]), before)
    with pytest.raises(ValueError, match=r"^op: unknown operator 'average'"):
        tally.reduce(x, "average")
    with pytest.raises(TypeError, match=r"^x: op='band' needs an integer dtype"):
        tally.reduce(x, "band")
    with pytest.raises(TypeError, match=r"^acc_dtype: int32 is not an accumulator"):
        tally.reduce(x, "sum", acc_dtype=np.int32)
    with pytest.raises(TypeError, match=r"^acc_dtype: unsupported dtype"):
        tally.reduce(x, "sum", acc_dtype="float16")
    with pytest.raises(ValueError, match=r"^axis: 2 is out of range"):
        tally.reduce(x, axis=2)
    with pytest.raises(ValueError, match=r"^axis: axis 1 is repeated"):
        tally.reduce(x, axis=(1, -1))
    with pytest.raises(TypeError, match=r"^axis: expected None"):
        tally.reduce(x, axis="0")
    with pytest.raises(ValueError, match=r"^stream: x is in host memory"):
        tally.reduce(x, stream=0)


def test_zero_copy_on_the_host(tally, rng):
    x = rng.standard_normal((8, 16, 32))
    v = x[1:, ::2]
    tally.reduce(v, "sum", axis=2)
    assert tally._tally._last_input_pointer() == v.__array_interface__["data"][0]


def test_mapping_matches_the_cxx_view(tally, rng):
    # The same bits as the C++ API called on the explicit (gang, worker, vector) view.
    x = rng.standard_normal((7, 9, 130)).astype(np.float32)
    bits = {(0,): 1, (1,): 2, (2,): 4, (0, 1): 3, (1, 2): 6, (0, 2): 5, (0, 1, 2): 7}
    for axis, level_bits in bits.items():
        got = tally.reduce(x, "sum", axis=axis)
        ref = np.empty(got.size, np.float32)
        tally._tally._reduce_view(x.ctypes.data, 2, -1, 7, 9, 130, 130, 9 * 130, level_bits, ref.ctypes.data, 2,
                                  ref.size, 0)
        assert got.tobytes() == ref.tobytes(), axis


def test_raw_entry_of_pytorch_and_cupy(tally, rng):
    # The entry the PyTorch (strides in elements) and CuPy (strides in bytes) adapters use, driven
    # here with NumPy's memory: the same bits as the NumPy path.
    raw = tally._tally.reduce_raw
    x = rng.standard_normal((5, 12, 40))[:, ::3, 4:]
    for axis, mask in ((None, 7), (2, 4), ((0, 2), 5), (1, 2)):
        want = tally.reduce(x, "sum", axis=axis)
        got = np.empty_like(want)
        xp, op_ = x.__array_interface__["data"][0], got.__array_interface__["data"][0]
        raw(xp, 3, -1, x.shape, x.strides, op_, 3, -1, got.shape, got.strides, True, 0, mask, 0)
        assert got.tobytes() == want.tobytes()
        got[...] = 0
        elems = tuple(s // 8 for s in x.strides)
        raw(xp, 3, -1, x.shape, elems, op_, 3, -1, got.shape, tuple(s // 8 for s in got.strides), False, 0, mask, 0)
        assert got.tobytes() == want.tobytes()
    with pytest.raises(tally.LayoutError, match=r"^x: a stride of 12 bytes"):
        raw(xp, 3, -1, (4,), (12,), op_, 3, -1, (), (), True, 0, 1, 0)
    with pytest.raises(TypeError, match=r"^x: unsupported dtype"):
        raw(xp, 7, -1, (4,), (1,), op_, 3, -1, (), (), False, 0, 1, 0)


def test_exact_sum(tally, rng):
    # Against an exact reference: math.fsum of each slice (exact, rounded once) in float64; float32
    # outputs are the float64-exact value rounded once more, which equals rounding the exact sum
    # except in double-rounding ties; compare float32 within half an ulp of fsum's float32 instead.
    import math
    x = rng.standard_normal((6, 7, 300)) * np.exp2(rng.integers(-30, 30, (6, 7, 300)))
    for axis in axis_sets(3):
        got = tally.reduce(x, "exact_sum", axis=axis)
        axes = tuple(range(3)) if axis is None else axis
        moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
        flat = moved.reshape(moved.shape[:moved.ndim - len(axes)] + (-1,))
        want = np.array([math.fsum(r) for r in flat.reshape(-1, flat.shape[-1])]).reshape(flat.shape[:-1])
        assert got.tobytes() == want.tobytes(), axis
    x32 = x.astype(np.float32)
    a = tally.reduce(x32, "exact_sum", axis=2)
    b = tally.reduce(np.ascontiguousarray(x32[:, ::-1].transpose(1, 0, 2)), "exact_sum", axis=2)
    assert a.dtype == np.float32 and a.tobytes() == np.ascontiguousarray(b[::-1].transpose(1, 0)).tobytes()
    wide = tally.reduce(x32, "exact_sum", axis=2, acc_dtype="float64")
    want = np.array([math.fsum(r) for r in x32.astype(np.float64).reshape(-1, 300)]).reshape(6, 7)
    assert wide.tobytes() == want.tobytes()
    with pytest.raises(TypeError, match=r"^x: op='exact_sum' needs a float32 or float64"):
        tally.reduce(np.ones(3, np.int32), "exact_sum")
