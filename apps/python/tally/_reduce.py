"""tally.reduce: the library's reductions on the caller's arrays, in place, in the caller's type.

The array families' adapters (_arrays.py) describe the arrays and allocate the result on x's device;
the compiled module (_tally) maps the array onto the library's strided (gang, worker, vector) view
and launches.
"""
from . import _tally
from ._arrays import _CODE, _DTYPES, _adapter_for, _adapters, _axis_mask, _dtype_name, _explicit_stream, _foreign

LayoutError = _tally.LayoutError
OPS = tuple(_tally.OPS)
_OP_CODE = {name: i for i, name in enumerate(OPS)}
_INTEGER_ONLY = frozenset(("band", "bor", "bxor", "land", "lor"))
# (op, x dtype) -> the accumulators the library has; the first is the default. int32 sum and prod
# accumulate in int64 as NumPy, PyTorch and CuPy do; everything else in the input's type.
_WIDER = {0: 1, 2: 3}


def _accumulators_of(op, code):
    if op in ("exact_sum", "mean"):  # floats only: float32 -> float32 or float64, float64 -> float64
        return (code, _WIDER[code]) if code == 2 else (code,)
    if op in ("sum", "prod") and code == 0:
        return (1, 0)
    return (code, _WIDER[code]) if code in _WIDER and op not in _INTEGER_ONLY else (code,)


_ACCS = {(op, code): _accumulators_of(op, code) for op in OPS for code in range(4)}
_fast = _tally.reduce_torch


def reduce(x, op="sum", axis=None, out=None, acc_dtype=None, stream=None, copy=False):
    """Reduces x with `op` over `axis`, in place (no copy) on x's own device.

    x: a NumPy, PyTorch or CuPy array (or any DLPack / CUDA-array-interface array), int32, int64,
       float32 or float64, on the CPU or a CUDA device, with any non-negative strides the library's
       strided view takes (an axis with stride 1 innermost, or a strided innermost axis; up to three
       groups of mergeable axes). Another layout raises LayoutError (a ValueError) unless copy=True.
    op: "sum", "prod", "max", "min" (NaN propagates), "exact_sum" (floats: the exact sum rounded
       once to the result dtype, the same bits on every backend and layout), "mean" (floats: the
       sum in the accumulator dtype divided once by the count, at the sum's speed; NaN for an
       empty set), and for integers
       "band", "bor", "bxor", "land", "lor".
    axis: None (all), an int or a tuple of ints (NumPy semantics, keepdims=False).
    out: an array of x's family, on x's device, C-contiguous, of the result's shape and of the
       accumulator dtype; nothing is written into it when an argument is rejected.
    acc_dtype: the accumulator and result dtype: x's dtype, or int32 -> int64, float32 -> float64.
       Default: x's dtype, but int64 for int32 sum and prod (as NumPy and PyTorch).
    stream: CUDA only: an int handle, a torch/cupy Stream or a __cuda_stream__ object; default the
       caller's current stream (PyTorch, CuPy) or the legacy default stream. The call is
       asynchronous on it, as the framework's own reductions are.

    Returns `out` (or a new array of x's family on x's device); results are bitwise reproducible
    run to run, as the library's. The 0-d results of full reductions of CUDA tensors are carved from
    small shared blocks (each result its own element; see _ScalarSlab), which saves a torch.empty.
    """
    # The commonest call (a torch.Tensor on CUDA, no acc_dtype or stream) in one compiled function;
    # None where it does not apply or an argument is bad: the path below then takes it.
    if acc_dtype is None and stream is None:
        r = _fast(x, op, axis, out)
        if r is not None:
            return r
    ad = _adapters.get(type(x))
    if ad is None:
        ad = _adapter_for(x)
    if ad is None:
        imported, back = _foreign(x)
        if out is not None:
            raise TypeError(f"out: not supported for x of type {type(x).__qualname__} (pass arrays of NumPy, PyTorch or CuPy)")
        return back(reduce(imported, op, axis, None, acc_dtype, stream, copy))

    # One description of x serves the checks and the launch (each attribute read of a tensor costs
    # a C call; a small reduction's time is mostly such calls).
    if ad.raw:
        xd = ad.describe(x)
        code, dev, shape = xd[1], xd[2], xd[3]
    else:
        xd, code, dev, shape = None, ad.code(x), -1, x.shape
    if out is not None:
        if _adapter_for(out) is not ad:
            raise TypeError(f"out: a {type(out).__module__}.{type(out).__qualname__} for x of type "
                            f"{type(x).__module__}.{type(x).__qualname__}")
        out_code = ad.code(out)
        if out_code < 0:
            raise TypeError(f"out: unsupported dtype {out.dtype}")
    else:
        out_code = None
    key = (op, code, acc_dtype, out_code)
    try:
        resolved = _RESOLVED.get(key)
    except TypeError:  # an unhashable op or acc_dtype: checked below, with its message
        resolved, key = None, None
    if resolved is None:
        if code < 0:
            raise TypeError(f"x: unsupported dtype {x.dtype} (tally reduces int32, int64, float32, float64)")
        resolved = _resolve(op, code, acc_dtype, out_code)
        if key is not None and len(_RESOLVED) < 4096:  # bounded: acc_dtype may be any hashable object
            _RESOLVED[key] = resolved
    opc, acc = resolved

    ndim = len(shape)
    mask = (1 << ndim) - 1 if axis is None else _axis_mask(axis, ndim)
    if stream is None:
        s = ad.current_stream(dev, x) if dev >= 0 else 0
    else:
        s = _explicit_stream(stream, dev)
    try:
        if not ad.raw:
            if out is None:
                out = ad.empty(() if axis is None else tuple(n for a, n in enumerate(shape) if not mask >> a & 1), acc, x)
            _tally.reduce_nd(x, out, opc, mask, s)
            return out
        if out is None:
            if mask == (1 << ndim) - 1 and stream is None and dev >= 0 and ad.scalars is not None:
                out, od = ad.scalars.take(dev, acc, s, x)
            else:
                out = ad.empty(tuple(n for a, n in enumerate(shape) if not mask >> a & 1), acc, x)
                od = ad.describe(out)
        else:
            od = ad.describe(out)
        _tally.reduce_raw(*xd, *od, ad.bytes_strides, opc, mask, s)
    except LayoutError:
        if not copy:
            raise
        # Kept axes first, reduced axes last: always two groups, and the output keeps its order.
        perm = [a for a in range(ndim) if not mask >> a & 1] + [a for a in range(ndim) if mask >> a & 1]
        nk = ndim - bin(mask).count("1")
        _launch(ad, ad.permuted_copy(x, perm), out, opc, ((1 << ndim) - 1) ^ ((1 << nk) - 1), s)
    return out


# (op, x's code, acc_dtype, out's code) -> (op code, accumulator code): the checks of a call that
# depend only on these, done once (a call's Python time is most of a small reduction's cost).
_RESOLVED = {}


def _resolve(op, code, acc_dtype, out_code):
    opc = _OP_CODE.get(op, -1) if isinstance(op, str) else -1
    if opc < 0:
        raise ValueError(f"op: unknown operator {op!r} (one of {', '.join(OPS)})")
    if op in _INTEGER_ONLY and code >= 2:
        raise TypeError(f"x: op={op!r} needs an integer dtype, got {_DTYPES[code]}")
    if op in ("exact_sum", "mean") and code < 2:
        raise TypeError(f"x: op={op!r} needs a float32 or float64 dtype, got {_DTYPES[code]}")
    accs = _ACCS[op, code]
    if out_code is not None:
        acc = out_code
        if acc_dtype is not None and _CODE.get(_dtype_name(acc_dtype), -2) != acc:
            raise TypeError(f"out: dtype {_DTYPES[acc]} differs from acc_dtype={acc_dtype!r}")
    elif acc_dtype is not None:
        acc = _CODE.get(_dtype_name(acc_dtype), -1)
        if acc < 0:
            raise TypeError(f"acc_dtype: unsupported dtype {acc_dtype!r} (int32, int64, float32, float64)")
    else:
        acc = accs[0]
    if acc not in accs:
        what = "out" if out_code is not None else "acc_dtype"
        raise TypeError(f"{what}: {_DTYPES[acc]} is not an accumulator for op={op!r} on {_DTYPES[code]} "
                        f"(allowed: {', '.join(_DTYPES[a] for a in accs)})")
    return opc, acc


def _launch(ad, x, out, opc, mask, s):
    if ad.raw:
        xp, xc, xd, xs, xst = ad.describe(x)
        op_, oc, od, os_, ost = ad.describe(out)
        _tally.reduce_raw(xp, xc, xd, xs, xst, op_, oc, od, os_, ost, ad.bytes_strides, opc, mask, s)
    else:
        _tally.reduce_nd(x, out, opc, mask, s)


def _tables():
    """_resolve's rules as the fast path's tables (torch_binding.cpp): the default accumulator of
    each (op, dtype code), -1 where it raises, and the bit mask of the out dtypes it accepts."""
    default, allowed = [], []
    for op in OPS:
        d, a = [], []
        for code in range(4):
            try:
                d.append(_resolve(op, code, None, None)[1])
            except TypeError:
                d.append(-1)
            bits = 0
            for out_code in range(4):
                try:
                    _resolve(op, code, None, out_code)
                    bits |= 1 << out_code
                except TypeError:
                    pass
            a.append(bits)
        default.append(d)
        allowed.append(a)
    return default, allowed


_tally._reduce_tables(*_tables())
