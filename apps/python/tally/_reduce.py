"""tally.reduce: the library's reductions on the caller's arrays, in place, in the caller's type.

One adapter per array family (NumPy, PyTorch, CuPy) reads the pointer, dtype, device, shape and
strides and allocates the result with the family's own allocator on the same device; the compiled
module (_tally) maps the array onto the library's strided (gang, worker, vector) view and launches.
Other DLPack or CUDA-array-interface arrays are imported into CuPy (or PyTorch) without a copy and
the result is handed back through DLPack.
"""
import operator
import sys

from . import _tally

LayoutError = _tally.LayoutError
OPS = tuple(_tally.OPS)
_OP_CODE = {name: i for i, name in enumerate(OPS)}
_DTYPES = tuple(_tally.DTYPES)  # code -> name: int32, int64, float32, float64
_CODE = {name: i for i, name in enumerate(_DTYPES)}
_INTEGER_ONLY = frozenset(("band", "bor", "bxor", "land", "lor"))
# (op, x dtype) -> the accumulators the library has; the first is the default. int32 sum and prod
# accumulate in int64 as NumPy, PyTorch and CuPy do; everything else in the input's type.
_WIDER = {0: 1, 2: 3}


def _accumulators_of(op, code):
    if op == "exact_sum":  # floats only: float32 -> float32 or float64, float64 -> float64
        return (code, _WIDER[code]) if code == 2 else (code,)
    if op in ("sum", "prod") and code == 0:
        return (1, 0)
    return (code, _WIDER[code]) if code in _WIDER and op not in _INTEGER_ONLY else (code,)


_ACCS = {(op, code): _accumulators_of(op, code) for op in OPS for code in range(4)}


def _dtype_name(dt):
    """A dtype given as a string, a NumPy/CuPy dtype or type, or a torch.dtype -> its name."""
    if isinstance(dt, str):
        return dt
    name = str(dt)
    if name.startswith("torch."):
        return name[6:]
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            return np.dtype(dt).name
        except TypeError:
            pass
    return name


# ---- adapters ---------------------------------------------------------------------------------------
class _NumPy:
    """Host arrays through nanobind's ndarray (buffer protocol / DLPack)."""

    raw = False
    scalars = None

    def __init__(self):
        import numpy as np
        self.np = np
        self.codes = {np.dtype(n): c for n, c in _CODE.items()}
        self.types = {c: np.dtype(n) for n, c in _CODE.items()}

    def code(self, a):
        return self.codes.get(a.dtype, -1)

    def device(self, a):
        return -1

    def empty(self, shape, code, like):
        return self.np.empty(shape, self.types[code])

    def stream(self, like):
        return 0

    def permuted_copy(self, a, perm):
        return self.np.ascontiguousarray(a.transpose(perm))


class _ScalarSlab:
    """The 0-d results of full reductions of CUDA tensors, carved from one block of 256 per (device,
    dtype, current stream) with a single torch.empty + unbind: a torch.empty per call costs about
    5 us of host time, more than the whole launch of a small reduction. Each result is its own
    element (a view of the block, like the elements of a slab allocator); the block is freed when
    its last result is. Used only on the caller's current stream, the one the block was allocated
    on, so PyTorch's caching allocator orders its reuse after our kernels."""

    N = 256

    def __init__(self, torch, types):
        self.torch, self.types, self.free = torch, types, {}

    def take(self, dev, code, stream, like):
        """(a fresh 0-d tensor, its raw description)."""
        key = (dev, code, stream)
        free = self.free.get(key)
        if not free:
            block = self.torch.empty(self.N, dtype=self.types[code], device=like.device)
            base, size = block.data_ptr(), block.element_size()
            free = self.free[key] = [(v, (base + i * size, code, dev, (), ()))
                                     for i, v in reversed(list(enumerate(block.unbind())))]
        return free.pop()


class _Torch:
    raw = True
    bytes_strides = False

    def __init__(self):
        import torch
        self.torch = torch
        self.codes = {torch.int32: 0, torch.int64: 1, torch.float32: 2, torch.float64: 3}
        self.types = {c: t for t, c in self.codes.items()}
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.scalars = _ScalarSlab(torch, self.types)

    def code(self, a):
        return self.codes.get(a.dtype, -1)

    def device(self, a):
        return a.get_device()  # -1 on the CPU

    def empty(self, shape, code, like):
        return self.torch.empty(shape, dtype=self.types[code], device=like.device)

    def stream(self, like):
        dev = like.get_device()
        if dev < 0:
            return 0
        if self._raw_stream is not None:
            return self._raw_stream(dev)
        return self.torch.cuda.current_stream(dev).cuda_stream

    def permuted_copy(self, a, perm):
        return a.permute(perm).contiguous()

    def describe(self, a):
        dev = a.get_device()
        if dev < 0 and a.device.type != "cpu":
            raise TypeError(f"x/out: a tensor on {a.device}; tally reduces host and CUDA memory")
        return a.data_ptr(), self.codes.get(a.dtype, -1), dev, a.shape, a.stride()


class _CuPy:
    raw = True
    bytes_strides = True
    scalars = None

    def __init__(self):
        import cupy
        import numpy as np
        self.cupy = cupy
        self.codes = {np.dtype(n): c for n, c in _CODE.items()}
        self.types = {c: np.dtype(n) for n, c in _CODE.items()}

    def code(self, a):
        return self.codes.get(a.dtype, -1)

    def device(self, a):
        return a.device.id

    def empty(self, shape, code, like):
        if like.device.id == self.cupy.cuda.runtime.getDevice():
            return self.cupy.empty(shape, self.types[code])
        with like.device:
            return self.cupy.empty(shape, self.types[code])

    def stream(self, like):
        try:
            return self.cupy.cuda.get_current_stream(like.device.id).ptr
        except TypeError:  # CuPy < 12: the current device's stream only
            with like.device:
                return self.cupy.cuda.get_current_stream().ptr

    def permuted_copy(self, a, perm):
        with a.device:
            return self.cupy.ascontiguousarray(a.transpose(perm))

    def describe(self, a):
        return a.data.ptr, self.codes.get(a.dtype, -1), a.device.id, a.shape, a.strides


_ADAPTER_CLASSES = {"numpy": _NumPy, "torch": _Torch, "cupy": _CuPy}
_adapters = {}  # type(x) -> adapter instance


def _adapter_for(x):
    t = type(x)
    ad = _adapters.get(t)
    if ad is None:
        root = t.__module__.split(".")[0]
        cls = _ADAPTER_CLASSES.get(root)
        if cls is None or not _is_array(x, root):
            return None
        ad = _adapters[t] = cls()
    return ad


def _is_array(x, root):
    if root == "numpy":
        return isinstance(x, sys.modules["numpy"].ndarray)
    if root == "torch":
        return hasattr(x, "data_ptr") and hasattr(x, "stride")
    return hasattr(x, "data") and hasattr(x, "strides") and hasattr(x, "device")


def _foreign(x):
    """An array of another family, imported without a copy, and how to hand a result back."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.generic):  # a NumPy scalar: a 0-d array
        return np.asarray(x), lambda out: out
    # DLPack first: its producer's family gets the result back (a JAX array on the GPU also offers the
    # CUDA array interface, which would hand back a CuPy array).
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev_type = int(x.__dlpack_device__()[0])
        if dev_type == 1:  # kDLCPU
            import numpy as np
            imported = np.from_dlpack(x)
        elif dev_type in (2, 13):  # kDLCUDA, kDLCUDAManaged
            imported = _import_cuda(x, lambda m: m.from_dlpack(x), lambda t: t.from_dlpack(x))
        else:
            raise TypeError(f"x: a DLPack array on device type {dev_type}; tally reduces host and CUDA memory")
        return imported, _back_to(x)
    if hasattr(x, "__cuda_array_interface__"):
        imported = _import_cuda(x, lambda m: m.asarray(x), lambda t: t.as_tensor(x, device="cuda"))
        return imported, lambda out: out  # no DLPack producer to give back to: the importing family's array
    raise TypeError(
        f"x: expected an array (NumPy, PyTorch, CuPy, or an object with __dlpack__ or "
        f"__cuda_array_interface__), got {type(x).__module__}.{type(x).__qualname__}")


def _import_cuda(x, via_cupy, via_torch):
    try:
        import cupy
        return via_cupy(cupy)
    except ImportError:
        pass
    try:
        import torch
        return via_torch(torch)
    except ImportError:
        raise TypeError(f"x: a CUDA array of type {type(x).__qualname__} needs CuPy or PyTorch to be imported") from None


def _back_to(x):
    """The from_dlpack of x's own family (jax.numpy, ...), or identity when there is none."""
    root = type(x).__module__.split(".")[0]
    if root in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return jnp.from_dlpack
    mod = sys.modules.get(root)
    f = getattr(mod, "from_dlpack", None) if mod is not None else None
    return f if f is not None else (lambda out: out)


def _stream_handle(stream):
    if stream is None or isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    proto = getattr(stream, "__cuda_stream__", None)  # the CUDA stream protocol: (version, handle)
    if proto is not None:
        return int(proto()[1])
    raise TypeError(f"stream: expected an int handle, a torch/cupy Stream or an object with __cuda_stream__, "
                    f"got {type(stream).__qualname__}")


def _axis_mask(axis, ndim):
    full = (1 << ndim) - 1
    if axis is None:
        return full
    try:
        axes = (operator.index(axis),)
    except TypeError:
        try:
            axes = tuple(operator.index(a) for a in axis)
        except TypeError:
            raise TypeError(f"axis: expected None, an int or a tuple of ints, got {axis!r}") from None
    mask = 0
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis: {a} is out of range for an array of {ndim} dimensions")
        a %= ndim
        if mask >> a & 1:
            raise ValueError(f"axis: axis {a} is repeated in {axis!r}")
        mask |= 1 << a
    return mask


def reduce(x, op="sum", axis=None, out=None, acc_dtype=None, stream=None, copy=False):
    """Reduces x with `op` over `axis`, in place (no copy) on x's own device.

    x: a NumPy, PyTorch or CuPy array (or any DLPack / CUDA-array-interface array), int32, int64,
       float32 or float64, on the CPU or a CUDA device, with any non-negative strides the library's
       strided view takes (an axis with stride 1 innermost, or a strided innermost axis; up to three
       groups of mergeable axes). Another layout raises LayoutError (a ValueError) unless copy=True.
    op: "sum", "prod", "max", "min" (NaN propagates), "exact_sum" (floats: the exact sum rounded
       once to the result dtype, the same bits on every backend and layout), and for integers
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
    ad = _adapters.get(type(x))
    if ad is None:
        ad = _adapter_for(x)
    if ad is None:
        imported, back = _foreign(x)
        if out is not None:
            raise TypeError(f"out: not supported for x of type {type(x).__qualname__} (pass arrays of NumPy, PyTorch or CuPy)")
        return back(reduce(imported, op, axis, None, acc_dtype, stream, copy))

    code = ad.code(x)
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

    shape = x.shape
    ndim = len(shape)
    mask = (1 << ndim) - 1 if axis is None else _axis_mask(axis, ndim)
    dev = ad.device(x)
    if stream is None:
        s = ad.stream(x) if dev >= 0 else 0
    else:
        if dev < 0:
            raise ValueError("stream: x is in host memory; a stream applies to CUDA arrays only")
        sdev = getattr(stream, "device", None)
        sdev = getattr(sdev, "index", getattr(sdev, "id", sdev))
        if isinstance(sdev, int) and sdev != dev:
            raise ValueError(f"stream: belongs to cuda:{sdev}, x is on cuda:{dev}")
        s = _stream_handle(stream)
    try:
        if not ad.raw:
            if out is None:
                out = ad.empty(() if axis is None else tuple(n for a, n in enumerate(shape) if not mask >> a & 1), acc, x)
            _tally.reduce_nd(x, out, opc, mask, s)
            return out
        xd = ad.describe(x)
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
    if op == "exact_sum" and code < 2:
        raise TypeError(f"x: op='exact_sum' needs a float32 or float64 dtype, got {_DTYPES[code]}")
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
