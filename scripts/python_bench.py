#!/usr/bin/env python3
"""tally.reduce from PyTorch on the GPU: the per-call overhead over the C++ API, a speed table of
every axis set against torch.sum / torch.amax, and the reducers' table (full reductions of 2^28 and
2^16 floats: tally.argmax / argmin / aminmax / var_mean / mean against torch's, results checked).
Run on the GPU machine:

    TALLY_BUILD_DIR=build/default python3 scripts/python_bench.py [--quick] [--reducers] [--json results/python_bench.json]

Overhead: N back-to-back calls on 2^16 floats (a launch-bound size), host time per call with one
synchronisation at the end, for (a) tally.reduce, (b) the same library call from one C++ loop
(_tally._reduce_view, repeats=N: no Python in between), (c) torch.sum. Table: median of CUDA-event
timed repeats after a warm-up; GB/s = bytes read / time.
"""
import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
build = Path(os.environ.get("TALLY_BUILD_DIR", ROOT / "build" / "default"))
if (build / "python" / "tally").is_dir():
    sys.path.insert(0, str(build / "python"))

import torch  # noqa: E402

import tally  # noqa: E402

SHAPES = [(64, 1024, 4096), (4096, 4096, 16), (16, 4096, 4096), (1024, 1024, 256)]
AXES = [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), (0, 1, 2)]


def host_per_call(fn, n):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def overhead(n_calls):
    x = torch.randn(1 << 16, device="cuda")
    out = torch.empty((), device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    reps = []
    for _ in range(5):
        py_new = host_per_call(lambda: tally.reduce(x), n_calls)
        py_out = host_per_call(lambda: tally.reduce(x, out=out), n_calls)
        # The general path (an explicit acc_dtype keeps the call off the compiled fast path).
        gen_new = host_per_call(lambda: tally.reduce(x, acc_dtype=torch.float32), n_calls)
        gen_out = host_per_call(lambda: tally.reduce(x, out=out, acc_dtype=torch.float32), n_calls)
        for _ in range(3):
            tally._tally._reduce_view(x.data_ptr(), 2, 0, 1, 1, x.numel(), x.numel(), x.numel(), 7, out.data_ptr(), 2, 1, 0,
                                      stream, 20)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tally._tally._reduce_view(x.data_ptr(), 2, 0, 1, 1, x.numel(), x.numel(), x.numel(), 7, out.data_ptr(), 2, 1, 0,
                                  stream, n_calls)
        torch.cuda.synchronize()
        cxx = (time.perf_counter() - t0) / n_calls
        ts = host_per_call(lambda: torch.sum(x), n_calls)
        reps.append((py_new, py_out, cxx, ts, gen_new, gen_out))
    med = [statistics.median(r[i] for r in reps) for i in range(6)]
    return dict(zip(("tally_reduce_s", "tally_reduce_out_s", "cxx_call_s", "torch_sum_s", "general_path_s",
                     "general_path_out_s"), med))


def probe(n_calls):
    """Where a call's host time goes: each step of tally.reduce's path timed alone (median of 5)."""
    x = torch.randn(1 << 16, device="cuda")
    out = torch.empty((), device="cuda")
    dev, f32 = x.device, torch.float32
    ad = tally._reduce._adapter_for(x)
    xd, od = ad.describe(x), ad.describe(out)
    s = ad.stream(x)
    raw = tally._tally.reduce_raw
    fast = tally._tally.reduce_torch
    raw_stream = torch._C._cuda_getCurrentRawStream
    block = torch.empty(256, device="cuda")
    n = x.numel()
    steps = {
        "torch.empty(device=x.device)": lambda: torch.empty((), dtype=f32, device=x.device),
        "torch.empty(device=cached)": lambda: torch.empty((), dtype=f32, device=dev),
        "x.new_empty": lambda: x.new_empty((), dtype=f32),
        "slab view, taken and dropped": lambda: tally._tally._torch_scalar(0, 2, s, x),
        "256 views made, dropped (unbind)": lambda: block.unbind(),
        "x.data_ptr()": lambda: x.data_ptr(),
        "x.shape": lambda: x.shape,
        "x.stride()": lambda: x.stride(),
        "x.dtype": lambda: x.dtype,
        "x.is_cuda": lambda: x.is_cuda,
        "x.get_device()": lambda: x.get_device(),
        "raw current stream": lambda: raw_stream(0),
        "adapter.describe(x)": lambda: ad.describe(x),
        "adapter.stream(x)": lambda: ad.stream(x),
        "_tally.reduce_raw": lambda: raw(*xd, *od, False, 0, 1, s),
        "_tally._reduce_view (C++ call, 1)": lambda: tally._tally._reduce_view(x.data_ptr(), 2, 0, 1, 1, n, n, n, 7,
                                                                              out.data_ptr(), 2, 1, 0, s, 1),
        "_tally.reduce_torch(x, out=out)": lambda: fast(x, "sum", None, out),
        "_tally.reduce_torch(x)": lambda: fast(x, "sum", None, None),
        "tally.reduce(x, out=out)": lambda: tally.reduce(x, out=out),
        "tally.reduce(x)": lambda: tally.reduce(x),
        "tally.reduce(x, axis=0)": lambda: tally.reduce(x, axis=0),
        "general path (x, out=out)": lambda: tally.reduce(x, out=out, acc_dtype=f32),
        "general path (x)": lambda: tally.reduce(x, acc_dtype=f32),
        "torch.sum(x)": lambda: torch.sum(x),
    }
    return {k: statistics.median(host_per_call(f, n_calls) for _ in range(5)) for k, f in steps.items()}


def gpu_time(fn, repeats):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(times)


def table(repeats, shapes):
    rows = []
    for shape in shapes:
        x = torch.randn(shape, device="cuda")
        nbytes = x.numel() * x.element_size()
        for axis, (op, ref) in itertools.product(AXES, (("sum", torch.sum), ("max", torch.amax))):
            out = tally.reduce(x, op, axis=axis)
            want = ref(x, dim=axis)
            if op == "max":
                assert torch.equal(out, want), (shape, axis)
            t_tally = gpu_time(lambda: tally.reduce(x, op, axis=axis, out=out), repeats)
            t_torch = gpu_time(lambda: ref(x, dim=axis), repeats)
            rows.append(dict(shape="x".join(map(str, shape)), axis=",".join(map(str, axis)), op=op,
                             tally_us=t_tally * 1e6, torch_us=t_torch * 1e6, tally_gbs=nbytes / t_tally * 1e-9,
                             torch_gbs=nbytes / t_torch * 1e-9, speedup=t_torch / t_tally))
        del x
        torch.cuda.empty_cache()
    return rows


def _fail(t, w):
    raise AssertionError((t, w))


def _close(a, b, tol):
    return abs(float(a) - float(b)) <= tol


def reducers_table(repeats, logs):
    """Full reductions of 2^k float32 values (standard normal) by tally's reducers and by torch's,
    each result checked against torch's: indices and (min, max) exactly (first index on ties both),
    means and variances within a float32 sum's error of each other (both sum in float32 or better;
    1e-4 relative to mean|x| or var: a wrong count or pass shows, summation order does not)."""
    rows = []
    for lg in logs:
        n = 1 << lg
        torch.manual_seed(lg)
        x = torch.randn(n, device="cuda")
        scale = float(x.abs().mean())
        nbytes = n * x.element_size()

        def check_arg(t, w):
            assert int(t) == int(w), (int(t), int(w))

        def check_minmax(t, w):
            assert torch.equal(t[0], w[0]) and torch.equal(t[1], w[1]), (t, w)

        def check_var_mean(t, w):
            assert _close(t[0], w[0], 1e-4 * float(w[0])) and _close(t[1], w[1], 1e-4 * scale), (t, w)

        def check_sum(t, w):
            assert _close(t, w, 1e-4 * scale * n), (float(t), float(w))

        def check_mean(t, w):
            assert _close(t, w, 1e-4 * scale), (float(t), float(w))

        # The general path (tally's Python around the library), forced by naming the current stream:
        # what the compiled fast paths (tally.reduce's, the reducers') save per call.
        cur = torch.cuda.current_stream()
        x2 = x.view(1 << (lg // 2), -1)
        cases = [
            ("sum", lambda s=None: tally.reduce(x, stream=s), lambda: torch.sum(x), check_sum),
            ("argmax", lambda s=None: tally.argmax(x, stream=s), lambda: torch.argmax(x), check_arg),
            ("argmin", lambda s=None: tally.argmin(x, stream=s), lambda: torch.argmin(x), check_arg),
            ("aminmax", lambda s=None: tally.aminmax(x, stream=s), lambda: torch.aminmax(x), check_minmax),
            ("var_mean", lambda s=None: tally.var_mean(x, correction=1, stream=s), lambda: torch.var_mean(x), check_var_mean),
            ("mean", lambda s=None: tally.mean(x, stream=s), lambda: torch.mean(x), check_mean),
            ("argmax dim 1", lambda s=None: tally.argmax(x2, 1, stream=s), lambda: torch.argmax(x2, 1),
             lambda t, w: torch.equal(t, w) or _fail(t, w)),
            ("aminmax dim 1", lambda s=None: tally.aminmax(x2, 1, stream=s), lambda: torch.aminmax(x2, dim=1),
             lambda t, w: torch.equal(t[0], w[0]) and torch.equal(t[1], w[1]) or _fail(t, w)),
            ("var_mean dim 1", lambda s=None: tally.var_mean(x2, 1, correction=1, stream=s), lambda: torch.var_mean(x2, 1),
             lambda t, w: torch.allclose(t[0], w[0], rtol=1e-4) and torch.allclose(t[1], w[1], atol=1e-4 * scale) or _fail(t, w)),
        ]
        for op, ours, ref, check in cases:
            check(ours(), ref())
            check(ours(cur), ref())
            t_tally = gpu_time(ours, repeats)
            t_general = gpu_time(lambda: ours(cur), repeats)
            t_torch = gpu_time(ref, repeats)
            rows.append(dict(n=f"2^{lg}", op=op, tally_us=t_tally * 1e6, general_us=t_general * 1e6, torch_us=t_torch * 1e6,
                             tally_gbs=nbytes / t_tally * 1e-9, torch_gbs=nbytes / t_torch * 1e-9,
                             speedup=t_torch / t_tally))
        del x
        torch.cuda.empty_cache()
    return rows


def print_reducers(rows):
    print("\nreducers, full reductions of float32 (CUDA-event time per call, results checked against torch's):")
    print("(general: the same call with stream= the current stream, which skips the compiled fast paths)")
    print("| n | op | tally us | general us | torch us | tally GB/s | torch GB/s | torch/tally time |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['n']} | {r['op']} | {r['tally_us']:.1f} | {r['general_us']:.1f} | {r['torch_us']:.1f} | {r['tally_gbs']:.0f} | "
              f"{r['torch_gbs']:.0f} | {r['speedup']:.2f}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls and repeats, one shape")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    ap.add_argument("--probe", action="store_true", help="only time each step of a call's path")
    ap.add_argument("--overhead-only", action="store_true", help="only the per-call overhead, no speed table")
    ap.add_argument("--reducers", action="store_true", help="only the reducers' table")
    a = ap.parse_args()
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}; torch {torch.__version__}; tally CUDA backend: {tally.cuda_built()}")
    if a.probe:
        for k, v in probe(2000 if a.quick else 20000).items():
            print(f"  {k:32s} {v * 1e6:8.2f} us")
        return
    if a.reducers:
        red = reducers_table(5 if a.quick else 20, (16, 28))
        print_reducers(red)
        if a.json:
            a.json.parent.mkdir(parents=True, exist_ok=True)
            a.json.write_text(json.dumps({"device": dev, "reducers": red}, indent=1))
        return
    ov = overhead(2000 if a.quick else 20000)
    print("\nper-call host time, 2^16 float32, full sum (median of 5 x N calls, one sync at the end):")
    for k, v in ov.items():
        print(f"  {k:20s} {v * 1e6:8.2f} us")
    print(f"  python overhead over the C++ call: {(ov['tally_reduce_s'] - ov['cxx_call_s']) * 1e6:.2f} us "
          f"(with out=: {(ov['tally_reduce_out_s'] - ov['cxx_call_s']) * 1e6:.2f} us; general path "
          f"{(ov['general_path_s'] - ov['cxx_call_s']) * 1e6:.2f} / {(ov['general_path_out_s'] - ov['cxx_call_s']) * 1e6:.2f} us)")
    if a.overhead_only:
        return
    rows = table(5 if a.quick else 20, SHAPES[1:2] if a.quick else SHAPES)
    print("\n| shape | axes | op | tally us | torch us | tally GB/s | torch GB/s | speed-up |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['shape']} | {r['axis']} | {r['op']} | {r['tally_us']:.1f} | {r['torch_us']:.1f} | "
              f"{r['tally_gbs']:.0f} | {r['torch_gbs']:.0f} | {r['speedup']:.2f}x |")
    red = reducers_table(5 if a.quick else 20, (16, 28))
    print_reducers(red)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"device": dev, "overhead": ov, "table": rows, "reducers": red}, indent=1))


if __name__ == "__main__":
    main()
