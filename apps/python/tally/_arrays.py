"""The array families of tally's reductions: one adapter per family (NumPy, PyTorch, CuPy) reads the
pointer, dtype, device, shape and strides, allocates results with the family's own allocator on the
same device, and does the little elementwise work on results that the reducers need (casts, NaN
where a result is undefined, gathers) with the family's own operations, on the call's stream.
Other DLPack or CUDA-array-interface arrays are imported into CuPy (or PyTorch) without a copy and
the result is handed back through DLPack. Used by tally.reduce (_reduce.py) and the reducers
(_reducers.py).
"""
import contextlib
import operator
import sys

from . import _tally

_DTYPES = tuple(_tally.DTYPES)  # code -> name: int32, int64, float32, float64
_CODE = {name: i for i, name in enumerate(_DTYPES)}
_ITEMSIZE = (4, 8, 4, 8)


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

    def permuted(self, a, perm):
        return a.transpose(perm)

    def strides(self, a):
        return a.strides

    # A result in another dtype (NumPy turns 0-d results into scalars: asarray keeps arrays).
    def cast(self, a, code):
        return self.np.asarray(a, self.types[code])

    def nan_unless(self, cond, a):
        return self.np.where(cond, a, self.np.nan)

    def divide(self, a, d):
        return a / d

    def take_last(self, a, i):
        """a[..., i[...]]: one element of each row of a's last axis."""
        return self.np.take_along_axis(a, self.np.asarray(i)[..., None], axis=-1)[..., 0]

    def on_stream(self, s, dev):
        return contextlib.nullcontext()


class _ScalarSlab:
    """The 0-d results of full reductions of CUDA tensors, carved from one block of 256 per (device,
    dtype, current stream) with a single torch.empty + unbind: a torch.empty per call costs about
    5 us of host time, more than the whole launch of a small reduction. Each result is its own
    element (a view of the block, like the elements of a slab allocator); the block is freed when
    its last result is. Used only on the caller's current stream, the one the block was allocated
    on, so PyTorch's caching allocator orders its reuse after our kernels. The free lists live in
    the compiled module (torch_binding.cpp), shared with tally.reduce's fast path."""

    N = 256

    def __init__(self, torch, types):
        self.torch, self.types = torch, types

    def block(self, code, like):
        """A new block on like's device (allocated on its current stream): its 0-d views, its pointer."""
        block = self.torch.empty(self.N, dtype=self.types[code], device=like.device)
        return block.unbind(), block.data_ptr()

    def struct_block(self, reducer, code, like):
        """A block of N of a reducer's value_type structs (int64 words) on like's device, allocated on its
        current stream: per struct the 0-d views of its fields (_tally.REDUCER_FIELDS' order), its pointer."""
        words, fields = _tally.REDUCER_FIELDS[_tally.REDUCERS[reducer], _DTYPES[code]]
        block = self.torch.empty((self.N, words), dtype=self.types[1], device=like.device)
        cols = [block.view(self.types[fc])[:, off // _ITEMSIZE[fc]].unbind() for _, fc, off in fields]
        return tuple(zip(*cols)), block.data_ptr()

    def pair_block(self, code, like):
        """A block of N pairs of dtype `code` (var_mean's full results, written by the compiled call's
        kernel): per pair the 0-d views of its elements."""
        # Never an inference tensor (made under torch.inference_mode): the block outlives the call
        # and its later results may be used outside inference mode.
        with self.torch.inference_mode(False):
            block = self.torch.empty((self.N, 2), dtype=self.types[code], device=like.device)
        return tuple(zip(block[:, 0].unbind(), block[:, 1].unbind())), block.data_ptr()

    def take(self, dev, code, stream, like):
        """(a fresh 0-d tensor, its raw description)."""
        v, p = _tally._torch_scalar(dev, code, stream, like)
        return v, (p, code, dev, (), ())


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
        # tally.reduce's fast path (torch_binding.cpp) for torch.Tensor on CUDA; none without the raw getter.
        _tally._torch_setup(torch.Tensor, tuple(self.types[c] for c in range(4)), self._raw_stream, self.empty,
                            self.scalars.block)
        _tally._torch_reducers_setup(self.scalars.struct_block, self.scalars.pair_block, torch.empty)

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

    def current_stream(self, dev, like):
        """The current stream of CUDA device `dev` (like's)."""
        if self._raw_stream is not None:
            return self._raw_stream(dev)
        return self.torch.cuda.current_stream(dev).cuda_stream

    def permuted_copy(self, a, perm):
        return a.permute(perm).contiguous()

    def permuted(self, a, perm):
        return a.permute(perm)

    def strides(self, a):
        return a.stride()

    def cast(self, a, code):
        return a.to(self.types[code])

    def nan_unless(self, cond, a):
        return a.masked_fill(~cond, float("nan"))

    def divide(self, a, d):
        """a / d correctly rounded (the CPU's and the fast path's bits): PyTorch turns division of a
        CUDA tensor by a Python number into a product with its reciprocal, not by a tensor."""
        return a / self.torch.full_like(a, d)

    def take_last(self, a, i):
        return a.gather(-1, i.unsqueeze(-1)).squeeze(-1)

    def on_stream(self, s, dev):
        # Handle 0 is the default stream: torch.cuda.ExternalStream(0) would hand out a new stream of
        # PyTorch's pool instead (a null stream_ptr means "none given"), one that is not ordered
        # after our kernels on the legacy stream (seen on an H200: results read before written).
        if s == 0:
            return self.torch.cuda.stream(self.torch.cuda.default_stream(dev))
        return self.torch.cuda.stream(self.torch.cuda.ExternalStream(s, device=dev))

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

    def current_stream(self, dev, like):
        return self.stream(like)

    def stream(self, like):
        try:
            return self.cupy.cuda.get_current_stream(like.device.id).ptr
        except TypeError:  # CuPy < 12: the current device's stream only
            with like.device:
                return self.cupy.cuda.get_current_stream().ptr

    def permuted_copy(self, a, perm):
        with a.device:
            return self.cupy.ascontiguousarray(a.transpose(perm))

    def permuted(self, a, perm):
        return a.transpose(perm)

    def strides(self, a):
        return a.strides

    def cast(self, a, code):
        return a.astype(self.types[code], copy=False)

    def nan_unless(self, cond, a):
        return self.cupy.where(cond, a, self.cupy.nan)

    def divide(self, a, d):
        return a / d

    def take_last(self, a, i):
        return self.cupy.take_along_axis(a, i[..., None], axis=-1)[..., 0]

    def on_stream(self, s, dev):
        stack = contextlib.ExitStack()
        stack.enter_context(self.cupy.cuda.Device(dev))
        stack.enter_context(self.cupy.cuda.ExternalStream(s))
        return stack

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


def _family(x):
    """x's adapter, x (imported without a copy if of another family), and how to hand results back
    (None: x's own family)."""
    ad = _adapter_for(x)
    if ad is not None:
        return ad, x, None
    imported, back = _foreign(x)
    return _adapter_for(imported), imported, back


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


def _explicit_stream(stream, dev):
    """The handle of a stream given by the caller, checked against x's device (dev, -1: host)."""
    if dev < 0:
        raise ValueError("stream: x is in host memory; a stream applies to CUDA arrays only")
    sdev = getattr(stream, "device", None)
    sdev = getattr(sdev, "index", getattr(sdev, "id", sdev))
    if isinstance(sdev, int) and sdev != dev:
        raise ValueError(f"stream: belongs to cuda:{sdev}, x is on cuda:{dev}")
    return _stream_handle(stream)


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
