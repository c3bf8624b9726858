"""tally.segment_reduce and tally.exact_dot: the library's segmented reductions (CSR offsets or
fixed-size segments of a 1-D array) and its exact dot product, on the caller's arrays (the adapters
of _arrays.py), results in the caller's family on x's device."""
import operator

from . import _tally
from ._arrays import _CODE, _DTYPES, _adapter_for, _dtype_name, _explicit_stream, _family
from ._reduce import OPS as _OPS, _resolve
from ._reducers import _CODE_OF, _Structs, _correction

LayoutError = _tally.LayoutError


def _same_family(ad, a, arg, x):
    if _adapter_for(a) is not ad:
        raise TypeError(f"{arg}: a {type(a).__module__}.{type(a).__qualname__} for x of type "
                        f"{type(x).__module__}.{type(x).__qualname__} (pass arrays of one family)")


def _stream(ad, x, stream):
    dev = ad.device(x)
    return (ad.stream(x) if dev >= 0 else 0) if stream is None else _explicit_stream(stream, dev)


# op -> the library reducer behind it (tally/reduce/reducers.hpp)
_SEGMENT_REDUCERS = {"argmax": "argmax", "argmin": "argmin", "aminmax": "minmax", "mean": "meanvar",
                     "var": "meanvar", "var_mean": "meanvar"}


def segment_reduce(x, offsets=None, op="sum", *, segment_size=None, out=None, acc_dtype=None, correction=0,
                   stream=None, copy=False, check=True):
    """One reduction per segment of the 1-D x, as torch.segment_reduce(offsets=...) / CUB's
    DeviceSegmentedReduce: out[s] = op over x[offsets[s]:offsets[s + 1]].

    x: a contiguous 1-D array of tally.reduce's families and dtypes (a strided one raises
       LayoutError unless copy=True).
    offsets: CSR row offsets, int32 or int64, 1-D, in x's family on x's device: one more entry than
       segments, non-decreasing, from >= 0 to <= len(x). Or segment_size=k instead: len(x) // k
       segments of k elements (len(x) a multiple of k).
    op: "sum", "prod", "max", "min" (NaN propagates), and for integers "band", "bor", "bxor",
       "land", "lor": an empty segment gives op's identity; out and acc_dtype as tally.reduce's
       (out: 1-D, one element per segment). Or the library's reducers, one pass each:
       "argmax" / "argmin" (int64 index within the segment, the first on ties and the first NaN;
       -1 for an empty segment, as CUB), "aminmax" (a (min, max) pair of arrays; an empty segment
       gives the identities), "mean", "var", "var_mean" (float32 for float32 x, else float64;
       `correction` as tally.var_mean; NaN for an empty segment or a divisor <= 0).
    stream: as tally.reduce.
    check: validate the offsets first (on CUDA the library reads them on the device and waits for
       the verdict, the call's one synchronisation). check=False trusts them: the call stays
       asynchronous, and bad offsets give unspecified results (never a write outside out).
    Bad offsets (decreasing, negative, past x, a count that does not match out) raise ValueError
    naming offsets, with nothing written. Bitwise the same run to run; max, min, the integer
    operators, argmax, argmin and aminmax bitwise the same on CPU and CUDA.
    """
    ad, x, back = _family(x)
    if back is not None and out is not None:
        raise TypeError(f"out: not supported for x of type {type(x).__qualname__} (pass arrays of NumPy, PyTorch or CuPy)")
    code = ad.code(x)
    if code < 0:
        raise TypeError(f"x: unsupported dtype {x.dtype} (tally reduces int32, int64, float32, float64)")
    if op == "exact_sum":
        raise ValueError("op: 'exact_sum' has no segmented form (tally.reduce it per segment)")
    if len(x.shape) != 1:
        raise ValueError(f"x: must be 1-D, got shape {tuple(x.shape)}")
    n = x.shape[0]
    if (offsets is None) == (segment_size is None):
        raise TypeError("offsets: give either offsets or segment_size, not both or neither")
    if offsets is not None:
        _same_family(ad, offsets, "offsets", x)
        if ad.code(offsets) not in (0, 1):
            raise TypeError(f"offsets: must be int32 or int64, got {offsets.dtype}")
        if len(offsets.shape) != 1 or offsets.shape[0] < 1:
            raise ValueError(f"offsets: must be 1-D with at least one entry, got shape {tuple(offsets.shape)}")
        n_seg, size = offsets.shape[0] - 1, 0
    else:
        try:
            size = operator.index(segment_size)
        except TypeError:
            raise TypeError(f"segment_size: expected an int, got {segment_size!r}") from None
        if size <= 0 or n % size:
            raise ValueError(f"segment_size: {size} does not divide x's {n} elements into whole segments")
        n_seg = n // size
    reducer = _SEGMENT_REDUCERS.get(op) if isinstance(op, str) else None
    if reducer is None and op not in _OPS:
        raise ValueError(f"op: unknown operator {op!r} (one of {', '.join(o for o in _OPS if o not in ('exact_sum', 'mean'))}, "
                         f"{', '.join(_SEGMENT_REDUCERS)})")
    if reducer is not None:
        for arg, v in (("out", out), ("acc_dtype", acc_dtype)):
            if v is not None:
                raise TypeError(f"{arg}: not supported for op={op!r} (results are views of the library's structs)")
        corr = _correction(correction)
        st = _Structs(ad, x, back, reducer, (n_seg,), stream)
        _with_copy(copy, ad, x, lambda v: _segment(ad, v, offsets, st.buf, -1, _CODE_OF[reducer], size, st.s, check))
        return _segment_results(st, op, corr)
    out_code = None
    if out is not None:
        _same_family(ad, out, "out", x)
        out_code = ad.code(out)
        if out_code < 0:
            raise TypeError(f"out: unsupported dtype {out.dtype}")
    opc, acc = _resolve(op, code, acc_dtype, out_code)
    s = _stream(ad, x, stream)
    if out is None:
        out = ad.empty((n_seg,), acc, x)
    elif tuple(out.shape) != (n_seg,):
        raise ValueError(f"out: has shape {tuple(out.shape)}, {n_seg} segments need ({n_seg},)")
    _with_copy(copy, ad, x, lambda v: _segment(ad, v, offsets, out, opc, -1, size, s, check))
    return out if back is None else back(out)


def _with_copy(copy, ad, x, launch):
    try:
        launch(x)
    except LayoutError:
        if not copy:
            raise
        launch(ad.permuted_copy(x, (0,)))


def _segment(ad, x, offsets, out, opc, reducer, size, s, check):
    if not ad.raw:
        _tally.segment_nd(x, offsets, out, opc, reducer, size, s, not check)
        return
    off = ad.describe(offsets) if offsets is not None else (0, -1, -1, (), ())
    _tally.segment_raw(*ad.describe(x), *off, *ad.describe(out), ad.bytes_strides, opc, reducer, size, s, not check)


def _segment_results(st, op, corr):
    if op in ("argmax", "argmin"):
        return st.result(st.field("index"))
    if op == "aminmax":
        return st.result(st.field("min")), st.result(st.field("max"))
    ad, out = st.ad, 2 if st.code == 2 else 3
    count = st.field("count")  # per segment: the undefined cases differ from segment to segment
    res = []
    with st.stream_context():
        if op in ("var", "var_mean"):
            d = count - corr if corr else count
            res.append(ad.cast(st.field("m2") / ad.nan_unless(d > 0, d), out))
        if op in ("mean", "var_mean"):
            res.append(ad.cast(ad.nan_unless(count > 0, st.field("mean")), out))
    res = [st.result(r) for r in res]
    return tuple(res) if len(res) > 1 else res[0]


def exact_dot(a, b, *, acc_dtype=None, stream=None, copy=False):
    """sum(a * b) of two contiguous 1-D float arrays, computed exactly and rounded once (to nearest
    even) to the result dtype: float32 (default for float32), or float64 (acc_dtype="float64", the
    default for float64). The same bits on every backend and thread count; IEEE's rules for NaN and
    Inf. Returns a 0-d array of a's family on a's device; asynchronous on CUDA as tally.reduce."""
    ad, a, back = _family(a)
    if back is None:
        _same_family(ad, b, "b", a)
    else:
        _, b, _ = _family(b)
    code = ad.code(a)
    if code not in (2, 3):
        raise TypeError(f"a: exact_dot needs float32 or float64, got {a.dtype}")
    if ad.code(b) != code:
        raise TypeError(f"b: dtype {b.dtype}, a has {a.dtype}")
    for arg, v in (("a", a), ("b", b)):
        if len(v.shape) != 1:
            raise ValueError(f"{arg}: must be 1-D, got shape {tuple(v.shape)}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"b: {b.shape[0]} elements, a has {a.shape[0]}")
    acc = code
    if acc_dtype is not None:
        acc = _CODE.get(_dtype_name(acc_dtype), -1)
        if acc not in (code, 3):
            raise TypeError(f"acc_dtype: {acc_dtype!r} is not a result dtype of exact_dot on {_DTYPES[code]} "
                            f"(allowed: {_DTYPES[code]}{', float64' if code == 2 else ''})")
    s = _stream(ad, a, stream)
    out = ad.empty((), acc, a)
    pair = (a, b)
    for attempt in (0, 1):
        try:
            if ad.raw:
                _tally.exact_dot_raw(*ad.describe(pair[0]), *ad.describe(pair[1]), *ad.describe(out), ad.bytes_strides, s)
            else:
                _tally.exact_dot_nd(pair[0], pair[1], out, s)
            break
        except LayoutError:
            if not copy or attempt:
                raise
            pair = tuple(ad.permuted_copy(v, (0,)) for v in pair)
    return out if back is None else back(out)
