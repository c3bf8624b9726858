"""tally.reduce on the GPU from PyTorch and CuPy: zero copy, stream semantics, the same bits as the
C++ API, results against the frameworks. Skipped (with the reason) without a GPU or a CUDA build."""
import os

import numpy as np
import pytest

SEED = int(os.environ.get("TALLY_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
AXES3 = (None, 0, 1, 2, (0, 1), (1, 2), (0, 2))
LEVEL_BITS = {0: 1, 1: 2, 2: 4, (0, 1): 3, (1, 2): 6, (0, 2): 5, None: 7}


@pytest.fixture(scope="module")
def torch(tally):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not tally.cuda_built():
        pytest.skip("tally was built without the CUDA backend")
    if not torch.cuda.is_available() or tally.cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    print(f"seed {SEED} (TALLY_TEST_SEED={SEED} reproduces)")
    torch.manual_seed(SEED)
    return torch


@pytest.fixture(scope="module")
def cupy(tally):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not tally.cuda_built() or tally.cuda_device_count() == 0:
        pytest.skip("no CUDA device or no CUDA backend in this build")
    return cupy


def check_sum(got, x, dims):
    """got, a sum of x over dims: within twice the bound of a sum of n terms in got's precision in any
    order, (n - 1) eps sum|x| (Higham 2.4), of the float64 sum, both being within it of the exact sum
    (integer sums are exact)."""
    import torch as th
    want = x.double().sum(dim=dims)
    n = x.numel() // max(got.numel(), 1)
    eps = th.finfo(got.dtype if got.dtype.is_floating_point else th.float64).eps
    bound = 2 * n * eps * x.double().abs().sum(dim=dims)
    assert ((got.double() - want).abs() <= bound).all(), dims


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_torch_every_axis_set(tally, torch, dtype):
    dt = getattr(torch, dtype)
    x = (torch.randn(5, 70, 300, device="cuda") * 100).to(dt)
    for axis in AXES3:
        dims = tuple(range(3)) if axis is None else axis
        got = tally.reduce(x, "sum", axis=axis)
        assert got.device == x.device and isinstance(got, torch.Tensor)
        check_sum(got, x, dims)
        assert torch.equal(tally.reduce(x, "max", axis=axis), torch.amax(x, dim=dims))
        assert torch.equal(tally.reduce(x, "min", axis=axis), torch.amin(x, dim=dims))


def test_torch_nan_rule(tally, torch):
    x = torch.randn(4, 8, 64, device="cuda")
    x[2, 3, 7] = float("nan")
    for axis in AXES3:
        dims = tuple(range(3)) if axis is None else axis
        for op in ("max", "min", "sum"):
            got = tally.reduce(x, op, axis=axis)
            assert torch.equal(torch.isnan(got), torch.isnan(x.sum(dim=dims))), (op, axis)


def test_torch_zero_copy(tally, torch):
    base = torch.randn(16, 64, 1024, device="cuda")
    x = base[2:, ::2, 8:1000]  # a strided view: reduced in place
    out = torch.empty(14, 32, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    tally.reduce(x, "sum", axis=2, out=out)
    torch.cuda.synchronize()
    assert tally._tally._last_input_pointer() == x.data_ptr()
    assert torch.cuda.max_memory_allocated() == before  # no copy through PyTorch's allocator
    check_sum(out, x, 2)


def test_torch_current_stream_is_used_without_a_device_sync(tally, torch):
    x = torch.ones(1 << 22, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        tally.reduce(x, "sum")  # the workspace of (device, side) is allocated once, here, not below
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time ahead of the write on this stream
        x.fill_(2.0)
        r = tally.reduce(x, "sum")      # the current stream (side) by default: after the fill
        pending = not side.query()      # the call returned with the work still queued: no sync
    side.synchronize()
    assert pending
    assert r.item() == 2.0 * x.numel()


def test_torch_explicit_stream(tally, torch):
    x = torch.ones(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        x.fill_(3.0)
    r = tally.reduce(x, "sum", stream=side)  # ordered after the fill although side is not current
    side.synchronize()
    assert r.item() == 3.0 * x.numel()
    r2 = tally.reduce(x, "max", stream=side.cuda_stream)  # a raw handle works as well
    side.synchronize()
    assert r2.item() == 3.0


def test_torch_scalar_results_are_independent(tally, torch):
    # Full reductions' 0-d results share small blocks (tally/_reduce.py, _ScalarSlab): more results
    # than one block holds, on two streams and two dtypes, each its own value and element.
    xs = [torch.randn(1000 + 37 * i, device="cuda") for i in range(300)]
    side = torch.cuda.Stream()
    got = []
    for i, x in enumerate(xs):
        if i % 3 == 2:
            with torch.cuda.stream(side):
                got.append(tally.reduce(x, "max"))
            side.synchronize()
        else:
            got.append(tally.reduce(x.double() if i % 2 else x, "max"))
    torch.cuda.synchronize()
    want = [x.max() for x in xs]
    assert all(g.shape == () and g.device == xs[0].device for g in got)
    assert all(g.item() == w.item() for g, w in zip(got, want))
    assert len({g.data_ptr() for g in got}) == len(got)  # no two results in one element
    got[5].fill_(12345.0)  # writing one result leaves the others alone
    assert all(g.item() == w.item() for i, (g, w) in enumerate(zip(got, want)) if i != 5)


def test_torch_same_bits_as_the_cxx_api(tally, torch):
    x = torch.randn(33, 257, 1031, device="cuda")
    ng, nw, nv = x.shape
    for axis, bits in LEVEL_BITS.items():
        got = tally.reduce(x, "sum", axis=axis)
        ref = torch.empty(got.numel(), device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        tally._tally._reduce_view(x.data_ptr(), 2, x.get_device(), ng, nw, nv, nv, nw * nv, bits, ref.data_ptr(), 2,
                                  ref.numel(), 0, stream)
        assert torch.equal(got.flatten().view(torch.int32), ref.view(torch.int32)), axis
    # And run to run.
    assert torch.equal(tally.reduce(x, "sum", axis=1).view(torch.int32), tally.reduce(x, "sum", axis=1).view(torch.int32))


def test_torch_bad_input(tally, torch):
    x = torch.randn(4, 5, device="cuda")
    with pytest.raises(TypeError, match="^x: unsupported dtype"):
        tally.reduce(x.half())
    with pytest.raises(TypeError, match="^x: unsupported dtype"):
        tally.reduce(torch.randn(4, dtype=torch.complex64, device="cuda"))
    out = torch.full((4,), 7.0)  # on the CPU, x on the GPU
    with pytest.raises(ValueError, match="^out: on cpu, x on cuda:0"):
        tally.reduce(x, axis=1, out=out)
    assert (out == 7).all()
    out = torch.full((5,), 7.0, device="cuda")
    with pytest.raises(ValueError, match="^out: has shape"):
        tally.reduce(x, axis=1, out=out)
    assert (out == 7).all()
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="^stream: belongs to cuda:1"):
            tally.reduce(x, stream=torch.cuda.Stream(device=1))


def test_torch_fast_path_is_the_general_path(tally, torch):
    # tally.reduce's compiled fast path (torch_binding.cpp) takes CUDA tensors with no acc_dtype or
    # stream; an explicit acc_dtype sends the same call through the general path. The same bits,
    # dtype and shape on every operator and axis set, with and without out.
    fast = tally._tally.reduce_torch
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        x = (torch.randn(6, 33, 130, device="cuda") * 100).to(dtype)
        ops = ("sum", "prod", "max", "min") + (("exact_sum",) if dtype.is_floating_point else ("band", "bxor", "lor"))
        for op in ops:
            for axis in AXES3 + (-1, (2, 0)):
                got = fast(x, op, axis, None)
                assert got is not None, (dtype, op, axis)
                ref = tally.reduce(x, op, axis=axis, acc_dtype=got.dtype)
                out = torch.empty_like(ref)
                assert fast(x, op, axis, out) is out
                torch.cuda.synchronize()
                assert got.dtype == ref.dtype and got.shape == ref.shape and got.device == x.device, (dtype, op, axis)
                assert got.cpu().numpy().tobytes() == ref.cpu().numpy().tobytes(), (dtype, op, axis)
                assert out.cpu().numpy().tobytes() == ref.cpu().numpy().tobytes(), (dtype, op, axis)


def test_torch_fast_path_declines_what_the_general_path_rejects(tally, torch):
    # Where the fast path returns None the general path takes the call: its messages, nothing written.
    fast = tally._tally.reduce_torch
    x = torch.randn(4, 5, device="cuda")
    cases = [
        ((x, "sum", 2, None), ValueError, "^axis: 2 is out of range"),
        ((x, "sum", (1, -1), None), ValueError, "^axis: axis 1 is repeated"),
        ((x, "sum", 1.0, None), TypeError, "^axis: expected None"),
        ((x, "nope", None, None), ValueError, "^op: unknown operator"),
        ((x, None, None, None), ValueError, "^op: unknown operator"),
        ((x, "band", None, None), TypeError, "^x: op='band' needs an integer dtype"),
        ((x.half(), "sum", None, None), TypeError, "^x: unsupported dtype"),
        ((x, "sum", 1, torch.full((4,), 7, dtype=torch.int32, device="cuda")), TypeError, "^out: int32 is not an accumulator"),
        ((x, "sum", 1, torch.full((5,), 7.0, device="cuda")), ValueError, "^out: has shape"),
        ((x, "sum", 1, torch.full((4, 2), 7.0, device="cuda")[:, 0]), ValueError, "^out: must be C-contiguous"),
        ((x, "sum", 1, torch.full((4,), 7.0)), ValueError, "^out: on cpu, x on cuda:0"),
        ((torch.randn(4, 1, device="cuda").expand(4, 5), "sum", 0, None), tally.LayoutError, "^x: "),
    ]
    for args, err, match in cases:
        assert fast(*args) is None, match
        with pytest.raises(err, match=match):
            tally.reduce(args[0], args[1], axis=args[2], out=args[3])
        if args[3] is not None:
            assert (args[3] == 7).all(), match
    b = torch.randn(4, 1, device="cuda").expand(4, 5)
    check_sum(tally.reduce(b, axis=0, copy=True), b, 0)
    assert fast(torch.randn(3), "sum", None, None) is None  # host tensors: the general path


def test_torch_cpu_tensors(tally, torch):
    x = torch.randn(6, 7, 8, dtype=torch.float64)
    for axis in AXES3:
        dims = tuple(range(3)) if axis is None else axis
        got = tally.reduce(x, "sum", axis=axis)
        assert isinstance(got, torch.Tensor) and got.device.type == "cpu"
        check_sum(got, x, dims)


def test_cupy_every_axis_set_zero_copy_and_stream(tally, cupy):
    rng = cupy.random.default_rng(SEED)
    x = rng.standard_normal((6, 50, 400), dtype=cupy.float32)
    for axis in AXES3:
        got = tally.reduce(x, "max", axis=axis)
        assert isinstance(got, cupy.ndarray)
        assert bool((got == x.max(axis=axis)).all())
        assert tally._tally._last_input_pointer() == x.data.ptr
    v = x[1:, ::2, 3:]
    tally.reduce(v, "sum", axis=2)
    assert tally._tally._last_input_pointer() == v.data.ptr
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = cupy.ones(1 << 20, dtype=cupy.float64)
        y *= 5
        r = tally.reduce(y, "sum")  # CuPy's current stream: after the multiply
    s.synchronize()
    assert float(r) == 5.0 * y.size


def test_cupy_same_bits_as_torch(tally, torch, cupy):
    x = torch.randn(9, 100, 1000, device="cuda")
    c = cupy.from_dlpack(x)
    for axis in AXES3:
        a = tally.reduce(x, "sum", axis=axis)
        b = tally.reduce(c, "sum", axis=axis)
        torch.cuda.synchronize()
        assert a.cpu().numpy().tobytes() == cupy.asnumpy(b).tobytes(), axis


def test_jax_through_dlpack(tally, torch):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    import jax.numpy as jnp
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU backend")
    x = jax.device_put(jnp.arange(4 * 1000, dtype=jnp.float32).reshape(4, 1000), gpu)
    got = tally.reduce(x, "max", axis=1)
    assert isinstance(got, jax.Array)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(x).max(axis=1))
