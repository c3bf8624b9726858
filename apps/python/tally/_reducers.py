"""tally.argmax, argmin, aminmax, var_mean, mean, var: the library's generic reducers (ArgMax, ArgMin,
MinMax, MeanVar in tally/reduce/reducers.hpp) on the caller's arrays, in one pass over x; tally.mean
of floats is the library's Mean operator instead (tally.reduce(x, "mean"): the sum's speed).

The library writes one struct per result (value and index, min and max, count/mean/M2). The
commonest calls take all of it in one compiled call (a call's host time is otherwise most of a
small reduction's cost), making only the results the call returns: NumPy arrays (reducer_host in
reducers_binding.cpp: the structs in host memory, each field copied into its own new array,
var_mean's m2 / d and cast in C++), and PyTorch CUDA tensors on the current stream (reducer_torch
in torch_binding.cpp: full reductions' results are 0-d views of structs carved from shared blocks
whose views are made once per block, as tally.reduce's scalars; reductions that keep axes write
their structs into a scratch buffer of the (device, stream), and one small kernel of ours
(fields.cu) writes each returned field into a new contiguous tensor of the result dtype, var_mean's
m2 / (count - correction) in float64 rounded once, as the full var_mean's pair). Both give the
general path's bits.

Anything else (an explicit stream, an empty x, a layout or an arg-order the view refuses, a bad
argument, CuPy and other families) runs the general path below, which reports errors: the structs
in a buffer of int64 words that the caller's family allocates on x's device, the results views of
its fields (dtype and byte offset from _tally.REDUCER_FIELDS), or, where a field needs finishing (a
variance divided by its count, a cast to float32), new arrays made by the family's own elementwise
operations on the results only, on the call's stream.

Arg-reductions' indices are the library's flat index within the reduced axes, which is NumPy's (C
order over x's reduced axes) wherever the strided view keeps the reduced axes in x's order. Where it
would sort them into memory order (e.g. a full reduction of a transposed array), the library's
first-index rule would pick memory's first of equal values, not NumPy's, and no renumbering after
the fact can repair ties: the reduction then runs in stages (_values_indices).
"""
import contextlib

from . import _tally
from ._arrays import _DTYPES, _ITEMSIZE, _axis_mask, _dtype_name, _explicit_stream, _family
from ._reduce import reduce

LayoutError = _tally.LayoutError
_CODE_OF = {"argmax": 0, "argmin": 1, "minmax": 2, "meanvar": 3}  # _tally.REDUCERS' order
assert tuple(_CODE_OF) == tuple(_tally.REDUCERS)
_FIELDS = {key: (words, {name: (code, offset) for name, code, offset in fields})
           for key, (words, fields) in _tally.REDUCER_FIELDS.items()}
# CUDA tensors on the current stream, in one compiled call (torch_binding.cpp):
# None where the general path below must take the call (it then reports any error).
_fast = _tally.reducer_torch
try:  # NumPy arrays, the same way (reducer_host in reducers_binding.cpp: new arrays, no views)
    from numpy import ndarray as _ndarray
except ImportError:
    _ndarray = None


def _compiled(x, code, axis, corr=0, want=3):
    """The compiled call for a CUDA tensor on the current stream or a NumPy array; None otherwise.
    want: the results made (bit 0 the first, bit 1 the second); one alone is returned as itself."""
    if type(x) is _ndarray:
        return _tally.reducer_host(x, code, _axis_mask(axis, x.ndim), corr, want)
    return _fast(x, code, axis, corr, want)


class _Structs:
    """A buffer of the library's value_type structs for x's results, in x's family on x's device,
    with the call's stream and the results' fields as views."""

    def __init__(self, ad, x, back, reducer, kept, stream):
        code = ad.code(x)
        if code < 0:
            raise TypeError(f"x: unsupported dtype {x.dtype} (tally reduces int32, int64, float32, float64)")
        dev = ad.device(x)
        self.ad, self.x, self.back, self.reducer, self.code, self.dev = ad, x, back, reducer, code, dev
        self.explicit = stream is not None
        self.s = (ad.stream(x) if dev >= 0 else 0) if stream is None else _explicit_stream(stream, dev)
        words, self.fields = _FIELDS[reducer, _DTYPES[code]]
        # Allocated on the call's stream: the frameworks' caching allocators then reuse the block
        # only after that stream's work (the stages' buffers are freed while it may still run).
        with self.stream_context():
            self.buf = ad.empty(tuple(kept) + (words,), 1, x)

    def field(self, name):
        """A field of every result: a strided view of the buffer with the field's dtype."""
        code, offset = self.fields[name]
        return self.buf.view(self.ad.types[code])[..., offset // _ITEMSIZE[code]]

    def stream_context(self):
        """Where elementwise work on results runs: the call's stream when the caller named one (the
        family's current stream otherwise, which is the call's)."""
        return self.ad.on_stream(self.s, self.dev) if self.explicit and self.dev >= 0 else contextlib.nullcontext()

    def result(self, a):
        return a if self.back is None else self.back(a)

    @staticmethod
    def context_of(ad, x, stream):
        """stream_context() for work on x's device before any struct buffer exists."""
        dev = ad.device(x)
        if stream is None or dev < 0:
            return contextlib.nullcontext()
        return ad.on_stream(_explicit_stream(stream, dev), dev)


class _Call(_Structs):
    """One reducer call over axes of x."""

    def __init__(self, x, reducer, axis, stream, copy):
        ad, x, back = _family(x)
        shape = tuple(x.shape)
        ndim = len(shape)
        self.mask = mask = _axis_mask(axis, ndim)
        kept = [a for a in range(ndim) if not mask >> a & 1]
        reduced = [a for a in range(ndim) if mask >> a & 1]
        # Kept axes in reverse memory order leave the view no layout (its output is C order in x's
        # axes): a view of x with them in memory order is reduced instead, and the results' fields
        # are handed back as views in x's order.
        st = ad.strides(x)
        order = sorted(kept, key=lambda a: -st[a])
        self.unperm = None if order == kept else [order.index(a) for a in kept]
        super().__init__(ad, x, back, reducer, [shape[a] for a in order], stream)
        inner = ((1 << ndim) - 1) ^ ((1 << len(kept)) - 1)  # the reduced axes last
        try:
            if self.unperm is None:
                self._launch(x, mask)
            else:
                self._launch(ad.permuted(x, order + reduced), inner)
        except LayoutError:
            if not copy:
                raise
            # Kept axes first, reduced axes last (C order): two groups, numbered as NumPy numbers them.
            self._launch(ad.permuted_copy(x, order + reduced), inner)

    def field(self, name):
        v = super().field(name)
        return v if self.unperm is None else self.ad.permuted(v, self.unperm)

    def _launch(self, x, mask):
        ad, rc = self.ad, _CODE_OF[self.reducer]
        if ad.raw:
            _tally.reducer_raw(*ad.describe(x), *ad.describe(self.buf), ad.bytes_strides, rc, mask, self.s)
        else:
            _tally.reducer_nd(x, self.buf, rc, mask, self.s)


def _correction(correction):
    try:
        corr = int(correction)
        ok = corr == correction and corr >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"correction: expected a non-negative integer (0: population, 1: sample), got {correction!r}")
    return corr


def _arg(reducer, x, axis, return_values, stream, copy):
    if stream is None:
        r = _compiled(x, _CODE_OF[reducer], axis, 0, 3 if return_values else 2)
        if r is not None:
            return r
    ad, x, back = _family(x)
    try:
        values, index = _values_indices(reducer, ad, x, _axis_mask(axis, len(x.shape)), stream)
    except LayoutError:
        if not copy:
            raise
        call = _Call(x, reducer, axis, stream, True)
        values, index = call.field("value"), call.field("index")
    if back is not None:
        values, index = back(values), back(index)
    return (values, index) if return_values else index


def _values_indices(reducer, ad, x, mask, stream):
    """An arg-reduction's (values, indices) over the axes in `mask`, with NumPy's first index.

    Where the view would number the reduced axes in memory order (ArgOrderError), in stages: the
    outermost reduced axis a0 is kept while the others are reduced (first index within each a0
    slice, recursively so), then a0 is reduced over those winners (the first a0 among equal values,
    NaN first), and the two indices are joined: C order's first, with x still read once. The
    later stages read only the first one's results (contiguous copies of them, a0 innermost).
    Layouts that no stage can map raise LayoutError (tally.argmax then copies if copy=True)."""
    ndim = len(x.shape)
    axes = tuple(a for a in range(ndim) if mask >> a & 1)
    try:
        call = _Call(x, reducer, axes, stream, False)
        return call.field("value"), call.field("index")
    except _tally.ArgOrderError as e:
        refused = e
    try:
        a0, rest = axes[0], axes[1:]
        v1, i1 = _values_indices(reducer, ad, x, mask & ~(1 << a0), stream)
        p = a0  # a0's position among the kept axes of stage 1: every axis before it is kept
        perm = [a for a in range(ndim - len(rest)) if a != p] + [p]
        with _Call.context_of(ad, x, stream):
            v1, i1 = ad.permuted_copy(v1, perm), ad.permuted_copy(i1, perm)
        s2 = _Call(v1, reducer, len(perm) - 1, stream, False)
    except LayoutError:
        raise refused from None
    inner = 1
    for a in rest:
        inner *= x.shape[a]
    i0 = s2.field("index")
    with s2.stream_context():
        index = ad.cast(i0 * inner + ad.take_last(i1, i0), 1)
    return s2.field("value"), index


def argmax(x, axis=None, *, return_values=False, stream=None, copy=False):
    """The index of the largest element of x over `axis`, as numpy.argmax / torch.argmax, in one pass.

    x, stream, copy: as tally.reduce (any layout its strided view takes, no copy unless copy=True).
       Where the view would number the reduced axes in memory order rather than x's (a transposed
       view reduced over several axes), ties would go to memory's first: the reduction then runs in
       stages (the outer reduced axis last, over the first stage's winners), still one read of x.
    axis: None (the index into x's C-order flattening), an int, or a tuple of ints (the index into
       the C-order flattening of the reduced axes, in x's axis order: numpy.unravel_index with
       their extents gives the coordinates).
    Returns an int64 array of x's family on x's device (shape: x's without the reduced axes), or
    with return_values=True the pair (values, indices), as torch.max(x, dim) (values of x's dtype).
    Ties: the first index wins. NaN: the first NaN wins (NumPy's and PyTorch's rule). The same
    (value, index) on every backend, layout and launch shape. An empty reduced set raises
    ValueError (there is no identity). NumPy arrays and PyTorch CUDA tensors (stream=None): new
    contiguous arrays of their own (full reductions of tensors: 0-d tensors carved from shared
    blocks, as tally.reduce's). Otherwise (an explicit stream, CuPy) values and indices are strided
    views of one buffer of (value, index) structs (the indices a new array where the reduction ran
    in stages).
    """
    return _arg("argmax", x, axis, return_values, stream, copy)


def argmin(x, axis=None, *, return_values=False, stream=None, copy=False):
    """The index of the smallest element of x over `axis`: as tally.argmax (first index, first NaN)."""
    return _arg("argmin", x, axis, return_values, stream, copy)


def aminmax(x, axis=None, *, stream=None, copy=False):
    """(min, max) of x over `axis` in one read of x, as torch.aminmax (axis: None, int or tuple).

    NaN anywhere in a reduced set gives NaN in both; -0.0 < +0.0. An empty reduced set gives the
    library's identities (+inf, -inf) (integers: (max, lowest) of the dtype), as tally.reduce's max
    and min do. Both results are of x's dtype: arrays of their own as tally.argmax's (with an
    explicit stream or from CuPy, views of one buffer of (min, max) pairs).
    """
    if stream is None:
        r = _compiled(x, 2, axis)
        if r is not None:
            return r
    call = _Call(x, "minmax", axis, stream, copy)
    return call.result(call.field("min")), call.result(call.field("max"))


def _moments(x, axis, correction, stream, copy, want_var, want_mean):
    corr = _correction(correction)
    if stream is None and corr < 1 << 62:
        r = _compiled(x, 3, axis, corr, want_var | want_mean << 1)
        if r is not None:
            return r
    call = _Call(x, "meanvar", axis, stream, copy)
    ad = call.ad
    out = 2 if call.code == 2 else 3  # float32 -> float32, others -> float64 (as NumPy and PyTorch)
    # Every result has the same count, the number of reduced elements: the rules for the undefined
    # cases (Moments::mean_or_nan, Moments::variance) are decided here, once, on the host.
    n = 1
    for a, e in enumerate(call.x.shape):
        if call.mask >> a & 1:
            n *= e
    res = []
    with call.stream_context():
        if want_var:
            m2, d = call.field("m2"), n - corr
            res.append(ad.cast(ad.divide(m2, d) if d > 0 else m2 * float("nan"), out))
        if want_mean:
            m = call.field("mean")
            res.append(ad.cast(m if n > 0 else m * float("nan"), out))
    res = [call.result(r) for r in res]
    return tuple(res) if len(res) > 1 else res[0]


def var_mean(x, axis=None, correction=0, *, stream=None, copy=False):
    """(variance, mean) of x over `axis` in one pass, as torch.var_mean (axis: None, int or tuple).

    correction: the divisor is count - correction: 0 the population variance (numpy.var's default,
       ddof=0), 1 the sample variance (torch.var_mean's default is 1: pass it explicitly).
    Welford/Chan in float64 for every input dtype (values near 1e8 with spread 1 keep their
    variance); results float32 for float32 x, float64 otherwise. Deterministic run to run. Mean of
    an empty set, and a variance whose divisor is <= 0, are NaN.
    """
    return _moments(x, axis, correction, stream, copy, True, True)


def mean(x, axis=None, *, acc_dtype=None, stream=None, copy=False):
    """The mean of x over `axis`, as torch.mean / numpy.mean (axis: None, int or tuple).

    float32 / float64 x: the library's Mean (tally.reduce(x, "mean")): the sum in the accumulator
       dtype (acc_dtype: x's dtype by default, or float64 for float32 x), divided once by the
       count; one read of x at the sum's speed, the sum's bits (bitwise reproducible, on the CPU
       whatever the thread count). NaN propagates; an empty set gives NaN.
    Integer x: float64, as numpy.mean, by var_mean's Welford/Chan in float64 (acc_dtype None or
       float64): an integer sum could wrap.
    """
    ad, xx, back = _family(x)
    if ad.code(xx) in (0, 1):
        if acc_dtype is not None and _dtype_name(acc_dtype) != "float64":
            raise TypeError(f"acc_dtype: the mean of {xx.dtype} is float64, got acc_dtype={acc_dtype!r}")
        return _moments(x, axis, 0, stream, copy, False, True)
    m = reduce(xx, "mean", axis, acc_dtype=acc_dtype, stream=stream, copy=copy)
    return m if back is None else back(m)


def var(x, axis=None, correction=0, *, stream=None, copy=False):
    """The variance of x over `axis` (var_mean's; correction=0 population, 1 sample)."""
    return _moments(x, axis, correction, stream, copy, True, False)
