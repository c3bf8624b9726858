"""tally.argmax/argmin, aminmax, var_mean, mean, segment_reduce and exact_dot on the GPU from PyTorch and
CuPy: against the frameworks, zero copy, the stream semantics, the same bits as the CPU where the
library promises them. Skipped (with the reason) without a GPU or a CUDA build."""
import numpy as np
import pytest

from test_python_reduce_gpu import AXES3, SEED, cupy, torch  # noqa: F401 (the fixtures)


def dims_of(axis):
    return tuple(range(3)) if axis is None else ((axis,) if isinstance(axis, int) else axis)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_torch_arg_against_torch(tally, torch, dtype):
    dt = getattr(torch, dtype)
    x = torch.randint(-3, 3, (5, 70, 300), device="cuda").to(dt)  # many ties: the first index wins
    for axis in (None, 0, 1, 2):
        for which in ("argmax", "argmin"):
            got = getattr(tally, which)(x, axis=axis)
            want = getattr(torch, which)(x, dim=axis)
            assert got.dtype == torch.int64 and got.device == x.device and torch.equal(got, want), (which, axis)
        values, index = tally.argmax(x, axis=2, return_values=True)
        ref = torch.max(x, dim=2)
        assert torch.equal(values, ref.values) and torch.equal(index, ref.indices)
    b3 = torch.randint(-2, 2, (20, 30, 40), device="cuda").to(dt)
    for perm in ((2, 1, 0), (1, 2, 0), (0, 2, 1)):  # transposed views: in stages, no copy
        p3 = b3.permute(perm)
        assert tally.argmax(p3).item() == torch.argmax(p3).item(), perm
        for d in range(3):
            assert torch.equal(tally.argmin(p3, axis=d), torch.argmin(p3, dim=d)), (perm, d)
    t = torch.randint(-3, 3, (300, 500), device="cuda").to(dt).T  # in stages: PyTorch's first index still
    assert tally.argmax(t).item() == torch.argmax(t).item() and tally.argmin(t).item() == torch.argmin(t).item()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        t.fill_(1)
        t[77, 123] = 2  # flat index 77 * 300 + 123 of the transposed view
    i = tally.argmax(t, stream=side)  # every stage and the index arithmetic on side
    side.synchronize()
    assert i.item() == 77 * 300 + 123


def test_torch_arg_nan_first_and_same_as_cpu(tally, torch):
    x = torch.randn(8, 64, 1000, device="cuda")
    x[3, 5, 7] = float("nan")
    x[3, 9, 2] = float("nan")
    x[7, 0, 999] = float("nan")
    for axis in AXES3:
        for which in ("argmax", "argmin"):
            v, i = getattr(tally, which)(x, axis=axis, return_values=True)
            vc, ic = getattr(tally, which)(x.cpu(), axis=axis, return_values=True)
            assert torch.equal(i.cpu(), ic), (which, axis)  # a selection: the same on both backends
            assert v.cpu().numpy().tobytes() == vc.numpy().tobytes()
    y = torch.randn(4, 64, 1000, device="cuda")
    y[1, 2, 3] = float("nan")  # one NaN: PyTorch's argmax promises no order among several
    assert tally.argmax(y).item() == torch.argmax(y).item() == (1 * 64 + 2) * 1000 + 3


def test_torch_aminmax_and_var_mean(tally, torch):
    x = torch.randn(6, 50, 400, device="cuda", dtype=torch.float64) + 3
    for axis in AXES3:
        dims = dims_of(axis)
        lo, hi = tally.aminmax(x, axis=axis)
        assert torch.equal(lo, torch.amin(x, dim=dims)) and torch.equal(hi, torch.amax(x, dim=dims))
        lc, hc = tally.aminmax(x.cpu(), axis=axis)
        assert torch.equal(lo.cpu(), lc) and torch.equal(hi.cpu(), hc)
        for correction in (0, 1):
            v, m = tally.var_mean(x, axis=axis, correction=correction)
            wv, wm = torch.var_mean(x, dim=dims, correction=correction)
            n = x.numel() // wm.numel()
            eps = torch.finfo(torch.float64).eps
            scale = (x * x).mean(dim=dims)
            assert ((m - wm).abs() <= 4 * n * eps * scale.sqrt()).all(), axis
            assert ((v - wv).abs() <= 4 * n * eps * scale).all(), axis
    x32 = torch.randn(4, 8, 4096, device="cuda")
    v, m = tally.var_mean(x32, axis=2, correction=1)
    wv, wm = torch.var_mean(x32.double(), dim=2, correction=1)
    assert v.dtype == torch.float32 and torch.allclose(v.double(), wv, rtol=2e-7, atol=0)
    assert torch.allclose(m.double(), wm, rtol=0, atol=2e-7 * float(x32.abs().max()))


@pytest.mark.parametrize("acc", [None, "float64"])
def test_torch_mean_is_the_sum_over_the_count(tally, torch, acc):
    """tally.mean of a CUDA tensor: bitwise tally's sum over the count (the division rides in the sum
    kernels' store), within the sum's bound of float64's mean; NaN for an empty set."""
    x = torch.rand(6, 50, 400, device="cuda") + 1
    want_dtype = torch.float64 if acc else torch.float32
    for axis in AXES3:
        dims = dims_of(axis)
        m = tally.mean(x, axis=axis, acc_dtype=acc)
        s = tally.reduce(x, "sum", axis=axis, acc_dtype=acc)
        n = x.numel() // max(s.numel(), 1)
        # A tensor divisor: torch turns division by a scalar into a product with its reciprocal.
        assert m.dtype == want_dtype and torch.equal(m, s / torch.full_like(s, n)), axis
        ref = x.double().mean(dim=dims)
        eps = torch.finfo(want_dtype).eps
        bound = (n + 1) * eps * x.double().abs().mean(dim=dims) + eps * ref.abs()
        assert ((m.double() - ref).abs() <= bound).all(), axis
    assert torch.isnan(tally.mean(torch.empty(3, 0, device="cuda"), axis=1)).all()


def test_torch_zero_copy_and_explicit_stream(tally, torch):
    base = torch.randn(16, 64, 1024, device="cuda")
    x = base[2:, ::2, 8:1000]
    tally.argmax(x, axis=2)
    assert tally._tally._last_input_pointer() == x.data_ptr()
    y = torch.ones(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        y.fill_(3.0)
        y[12345] = 5.0
    # Not current, yet ordered after the fill; the variance's division runs on side as well.
    v, m = tally.var_mean(y, stream=side)
    i = tally.argmax(y, stream=side)
    side.synchronize()
    n = y.numel()
    assert i.item() == 12345
    assert abs(m.item() - (3.0 * (n - 1) + 5.0) / n) <= 1e-6
    assert abs(v.item() - ((n - 1) * (3.0 - m.item()) ** 2 + (5.0 - m.item()) ** 2) / n) <= 1e-6


def test_torch_segments_and_exact_dot(tally, torch):
    g = np.random.default_rng(SEED)
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    cuts = np.sort(g.integers(0, n + 1, 999))
    offsets = torch.tensor(np.concatenate(([0], cuts, [n])), device="cuda")
    for op in ("sum", "max", "min"):
        got = tally.segment_reduce(x, offsets, op)
        ref = tally.segment_reduce(x.cpu(), offsets.cpu(), op)
        if op == "sum":  # both within len eps sum|x| of the exact sum (Higham 2.4)
            lens = torch.diff(offsets.cpu()).double().clamp(min=1)
            mag = tally.segment_reduce(x.cpu().abs().double(), offsets.cpu())
            assert ((got.cpu().double() - ref.double()).abs() <= 2 * lens * torch.finfo(torch.float32).eps * mag).all()
        else:  # max and min: the same bits on both backends
            assert torch.equal(got.cpu(), ref)
    for op in ("argmax", "argmin"):  # selections: the same on both backends
        assert torch.equal(tally.segment_reduce(x, offsets, op).cpu(), tally.segment_reduce(x.cpu(), offsets.cpu(), op))
    lo, hi = tally.segment_reduce(x, offsets, "aminmax")
    lc, hc = tally.segment_reduce(x.cpu(), offsets.cpu(), "aminmax")
    assert torch.equal(lo.cpu(), lc) and torch.equal(hi.cpu(), hc)
    v, m = tally.segment_reduce(x.double(), offsets, "var_mean", correction=1)
    vc, mc = tally.segment_reduce(x.cpu().double(), offsets.cpu(), "var_mean", correction=1)
    tol = 8 * int(torch.diff(offsets).max()) * torch.finfo(torch.float64).eps  # two merge orders, each within n eps
    assert torch.allclose(v.cpu(), vc, rtol=tol, atol=tol, equal_nan=True)
    assert torch.allclose(m.cpu(), mc, rtol=tol, atol=tol, equal_nan=True)
    fixed = tally.segment_reduce(x, segment_size=1024, op="max")
    assert torch.equal(fixed, x.view(-1, 1024).amax(dim=1))
    out = torch.full((3,), 7.0, device="cuda")
    with pytest.raises(ValueError, match=r"^offsets: offsets\[1\] = 50 > offsets\[2\] = 40"):
        tally.segment_reduce(x, torch.tensor([0, 50, 40, 100], device="cuda"), out=out)
    assert (out == 7.0).all()
    with pytest.raises(ValueError, match=r"^offsets: on cpu, x on cuda:0"):
        tally.segment_reduce(x, torch.tensor([0, 50, 60, 100]), out=out)
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    d = tally.exact_dot(a, b, acc_dtype="float64")
    assert d.device == a.device and d.cpu().numpy().tobytes() == tally.exact_dot(a.cpu(), b.cpu(), acc_dtype="float64").numpy().tobytes()


def test_cupy_reducers(tally, cupy):
    rng = cupy.random.default_rng(SEED)
    x = rng.integers(-3, 3, (6, 50, 400)).astype(cupy.float32)  # ties: NumPy's first index
    xh = cupy.asnumpy(x)
    for axis in (None, 0, 1, 2):
        got = tally.argmax(x, axis=axis)
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(got), np.argmax(xh, axis=axis))
        assert tally._tally._last_input_pointer() == x.data.ptr
    for axis in AXES3:
        lo, hi = tally.aminmax(x, axis=axis)
        assert bool((lo == x.min(axis=axis)).all()) and bool((hi == x.max(axis=axis)).all())
        v, m = tally.var_mean(x, axis=axis)
        assert bool(cupy.allclose(v, x.astype(cupy.float64).var(axis=axis), rtol=1e-6))
        assert bool(cupy.allclose(m, x.astype(cupy.float64).mean(axis=axis), rtol=1e-6, atol=1e-6))
    offsets = cupy.asarray([0, 100, 100, 5000, x.size], dtype=cupy.int32)
    got = tally.segment_reduce(x.ravel(), offsets, "max")
    f = xh.ravel()
    want = np.array([f[0:100].max(), -np.inf, f[100:5000].max(), f[5000:].max()], np.float32)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_torch_full_reductions_fast_path(tally, torch, dtype):
    """Full reductions on the current stream take one compiled call (_tally.reducer_torch): the same
    results, dtypes, device and bits as the general path (forced by naming the stream), each result
    its own tensor (more calls than a block holds), ordered after the current stream's work."""
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    dt = getattr(torch, dtype)
    cur = torch.cuda.current_stream()
    xs = [torch.from_numpy(rng.integers(-50, 50, size=int(rng.integers(2, 5000)))).to("cuda", dt) for _ in range(300)]
    if dt.is_floating_point:
        xs = [x / 7 for x in xs]
    assert tally._tally.reducer_torch(xs[0], 0, None) is not None  # the fast path takes these calls
    results = [(tally.argmax(x, return_values=True), tally.argmin(x), tally.aminmax(x), tally.var_mean(x, correction=1),
                tally.mean(x) if not dt.is_floating_point else None) for x in xs]
    out_dt = torch.float32 if dt == torch.float32 else torch.float64
    for x, ((v, i), j, (lo, hi), (var, m), im) in zip(xs, results):
        assert i.shape == () and i.dtype == torch.int64 and i.device == x.device and v.dtype == dt
        assert torch.equal(i, torch.argmax(x)) and torch.equal(v, x.max()) and torch.equal(j, torch.argmin(x))
        assert torch.equal(lo, x.min()) and torch.equal(hi, x.max()) and lo.dtype == dt
        assert var.dtype == out_dt and m.dtype == out_dt and var.shape == () and var.device == x.device
        gv, gm = tally.var_mean(x, correction=1, stream=cur)  # the general path: the same bits
        assert gv.cpu().numpy().tobytes() == var.cpu().numpy().tobytes()
        assert gm.cpu().numpy().tobytes() == m.cpu().numpy().tobytes()
        ga = tally.argmax(x, return_values=True, stream=cur)
        assert torch.equal(ga[0], v) and torch.equal(ga[1], i)
        if im is not None:
            assert im.dtype == torch.float64 and torch.equal(im, tally.mean(x, stream=cur))
        wv, wm = torch.var_mean(x.double(), correction=1)
        assert abs(float(m) - float(wm)) <= 1e-6 * (1 + abs(float(wm))) and abs(float(var) - float(wv)) <= 1e-5 * float(wv) + 1e-12
    # The undefined cases: a divisor <= 0 gives a NaN variance (the mean is the element).
    one = torch.full((1,), 3, device="cuda", dtype=dt)
    v1, m1 = tally.var_mean(one, correction=1)
    assert torch.isnan(v1) and float(m1) == 3.0 and not torch.isnan(tally.var(one))
    assert torch.isnan(tally.var(torch.ones(3, device="cuda", dtype=dt), correction=5))
    # Zero copy through a strided view; the current stream (not the legacy default) orders the call.
    base = torch.zeros(4, 1 << 18, device="cuda", dtype=dt)
    y = base[1, ::2]
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        y.fill_(2)
        y[4321] = 9
        i = tally.argmax(y)
        lo, hi = tally.aminmax(y)
        var, m = tally.var_mean(y)
    assert tally._tally._last_input_pointer() == y.data_ptr()
    side.synchronize()
    n = y.numel()
    assert i.item() == 4321 and float(hi) == 9 and float(lo) == 2
    assert abs(float(m) - (2 * (n - 1) + 9) / n) <= 1e-6 * 3
    # Not taken: an empty x (argmax raises ValueError, aminmax gives the identities), a transposed
    # view whose ties need stages, and bad arguments (the general path names them, writes nothing).
    e = torch.empty(0, device="cuda", dtype=dt)
    assert tally._tally.reducer_torch(e, 0, None) is None
    with pytest.raises(ValueError, match="x: argmax of an empty set"):
        tally.argmax(e)
    t = torch.zeros(30, 40, device="cuda", dtype=dt).T
    assert tally._tally.reducer_torch(t, 0, None) is None and tally.argmax(t).item() == 0
    with pytest.raises(ValueError, match="axis"):
        tally.argmin(xs[0], axis=1)
    with pytest.raises(ValueError, match="correction"):
        tally.var_mean(xs[0], correction=-1)
    s2 = torch.cuda.Stream()  # a new stream: new blocks, made under inference mode, used outside it too
    with torch.cuda.stream(s2):
        with torch.inference_mode():
            var_i, m_i = tally.var_mean(xs[1] + 0)
        var_o, m_o = tally.var_mean(xs[1])
    s2.synchronize()
    assert torch.equal(var_i, var_o) and torch.equal(m_i, m_o)


def test_torch_kept_axes_fast_path(tally, torch):
    """Reductions that keep axes of CUDA tensors take the compiled call as well: the general path's
    results (forced by naming the stream), bit for bit, in its dtypes, shapes and device."""
    cur = torch.cuda.current_stream()
    for dt in (torch.float32, torch.float64, torch.int32, torch.int64):
        x = torch.randint(-4, 4, (6, 33, 257), device="cuda").to(dt)  # ties: the first index wins
        for axis in (0, 1, 2, (0, 1), (1, 2), (0, 2), -1, ()):
            dims = dims_of(axis)
            for r in range(4):
                assert tally._tally.reducer_torch(x, r, axis, 1) is not None, (dt, axis, r)
            fast = [tally.argmax(x, axis, return_values=True), tally.argmin(x, axis, return_values=True),
                    tally.aminmax(x, axis), tally.var_mean(x, axis, correction=1)]
            slow = [tally.argmax(x, axis, return_values=True, stream=cur), tally.argmin(x, axis, return_values=True, stream=cur),
                    tally.aminmax(x, axis, stream=cur), tally.var_mean(x, axis, correction=1, stream=cur)]
            for f, s in zip(fast, slow):
                for a, b in zip(f, s):
                    assert a.dtype == b.dtype and a.shape == b.shape and a.device == x.device, (dt, axis)
                    na, nb = a.cpu().numpy(), b.cpu().numpy()  # NaN where undefined: their payloads aside
                    nan = np.isnan(na) if na.dtype.kind == "f" else np.zeros(na.shape, bool)
                    assert np.array_equal(nan, np.isnan(nb) if nb.dtype.kind == "f" else nan), (dt, axis)
                    assert na[~nan].tobytes() == nb[~nan].tobytes(), (dt, axis)
            if isinstance(axis, int):
                assert torch.equal(fast[0][1], torch.argmax(x, dim=axis)) and torch.equal(fast[1][1], torch.argmin(x, dim=axis))
            if axis != ():
                lo, hi = fast[2]
                assert torch.equal(lo, torch.amin(x, dim=dims)) and torch.equal(hi, torch.amax(x, dim=dims))
    y = torch.randn(3, 4, device="cuda")
    v, m = tally.var_mean(y[:, :1], axis=1, correction=1)  # one element per result: NaN variances
    assert torch.isnan(v).all() and torch.equal(m, y[:, 0])


def test_torch_kept_axes_results_are_new_tensors(tally, torch):
    """The kept-axes fast path's results are new contiguous tensors of their own (as torch.argmax's),
    only those asked for, written on the current stream after its earlier work: through the (device,
    stream) scratch (grown at 300 rows) and, above 1 MiB of structs (70000 rows), a buffer per call.
    Against NumPy on the same values: indices and extremes exact, variances and means within float32
    rounding of float64 (one rounding of a float64 result: 2^-24 relative, 1e-6 with the Welford error)."""
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    side = torch.cuda.Stream()
    for rows in (3, 300, 70000):
        xh = rng.standard_normal((rows, 40)).astype(np.float32)
        src = torch.from_numpy(xh).cuda()
        x = torch.empty(rows, 40, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(side):  # x is written after a sleep: every result must wait for it
            torch.cuda._sleep(50_000_000)
            x.copy_(src)
            i = tally.argmax(x, 1)
            v, j = tally.argmin(x, 1, return_values=True)
            lo, hi = tally.aminmax(x, 1)
            var, m = tally.var_mean(x, 1, correction=1)
            mean_only = tally._tally.reducer_torch(x, 3, 1, 1, 2)
            var_only = tally.var(x, 1, correction=1)
        side.synchronize()
        res = (i, v, j, lo, hi, var, m, mean_only, var_only)
        for r in res:
            assert isinstance(r, torch.Tensor) and r.shape == (rows,) and r.device == x.device, rows
            assert r.is_contiguous() and r._base is None and r.untyped_storage().nbytes() == r.numel() * r.element_size()
        assert len({r.data_ptr() for r in res}) == len(res)  # nine arrays of their own
        assert i.dtype == torch.int64 and j.dtype == torch.int64 and v.dtype == torch.float32 and var.dtype == torch.float32
        assert np.array_equal(i.cpu().numpy(), xh.argmax(1)) and np.array_equal(j.cpu().numpy(), xh.argmin(1))
        assert np.array_equal(v.cpu().numpy(), xh.min(1)) and np.array_equal(lo.cpu().numpy(), xh.min(1))
        assert np.array_equal(hi.cpu().numpy(), xh.max(1))
        wv, wm = xh.astype(np.float64).var(1, ddof=1), xh.astype(np.float64).mean(1)
        np.testing.assert_allclose(var.cpu().numpy(), wv, rtol=1e-6)
        np.testing.assert_allclose(m.cpu().numpy(), wm, rtol=1e-6, atol=1e-6 * np.abs(xh).max())
        assert torch.equal(mean_only, m) and torch.equal(var_only, var)
    y = tally.argmax(x, 1)
    y.view(-1, 2)  # contiguous: views of any shape, as torch.argmax's


def test_torch_explicit_default_stream_orders_the_finishing(tally, torch):
    """stream= the default stream (handle 0) sends the call through the general path: its results'
    buffers and finishing (var_mean's division and cast) run on that stream, after the kernel and
    after earlier work on it (torch.cuda.ExternalStream(0) would be a new pool stream instead)."""
    x = torch.zeros(4096, 4096, device="cuda")
    default = torch.cuda.default_stream()
    assert default.cuda_stream == 0
    torch.cuda.synchronize()
    with torch.cuda.stream(default):
        torch.cuda._sleep(100_000_000)
        x.fill_(2.0)
        x[:, 7] = 4.0
    v, m = tally.var_mean(x, axis=1, correction=0, stream=default)
    lo, hi = tally.aminmax(x, axis=1, stream=default)
    i = tally.argmax(x, axis=1, stream=default)
    torch.cuda.synchronize()
    n = x.shape[1]
    mean = (2.0 * (n - 1) + 4.0) / n
    assert torch.equal(i, torch.full_like(i, 7)) and bool((lo == 2).all()) and bool((hi == 4).all())
    assert torch.allclose(m, torch.full_like(m, mean), rtol=1e-6)
    var = ((n - 1) * (2.0 - mean) ** 2 + (4.0 - mean) ** 2) / n
    assert torch.allclose(v, torch.full_like(v, var), rtol=1e-5)
