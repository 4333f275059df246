"""The machine a speed figure was taken on: its CPU, its thread settings, and its own fp32 GEMM rate on the
LSTM's matrix shapes, so that every figure of `benchmark_training.py` and `benchmark_serving.py` names its
CPU and can be read as a fraction of that CPU's limit.

    python scripts/machine.py                    # describe this machine and measure its GEMM rates
    python scripts/machine.py --json machine.json

What it reports:
- `lscpu`'s model name, vendor, family / model / stepping and the flags that decide the matrix kernels
  (avx2, fma, avx512f, avx512_vnni, avx512_bf16, avx512_fp16, amx_*): two machines "of the same kind" with
  other families run other kernels (issue 27: an Intel family 6 model 207 and an AMD family 25 model 17);
- the thread settings: cores this process may use, `TF_NUM_INTRAOP_THREADS`, `TF_NUM_INTEROP_THREADS`,
  `OMP_NUM_THREADS`, and `TF_ENABLE_ONEDNN_OPTS` (unset: TensorFlow's default, oneDNN on for x86);
- the fp32 GEMM rate, in GFLOP/s, of TensorFlow's `MatMul` (`tf.linalg.matmul`, the op the models run,
  inside a `tf.function`; oneDNN or Eigen as TensorFlow picks) on the shapes of a 300-unit LSTM at batch
  32: the recurrent product `[32, 300] x [300, 1200]` (one per time step), the time-batched input
  projection `[32*32, 300] x [300, 1200]` and, for the machine's ceiling, `[1024, 1024] x [1024, 1024]`;
  each on one thread and on every core, each in a fresh process (TensorFlow fixes its pools at start).
  `peak_gflops` is the best of those rates: the figure a benchmark's useful FLOPs are divided by.

`esim_flops(premise_tokens, hypothesis_tokens)` counts the multiply-adds of one ESIM forward pass on the
real (unpadded) tokens, so `pairs/s x flops / peak` is the share of the machine's GEMM limit that went
into useful work; training counts 3x the forward pass (the backward pass is two products per product).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8")
THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS", "TF_ENABLE_ONEDNN_OPTS")
# (name, m, k, n): the LSTM's products at batch 32, hidden 300 (4 gates: 1200 columns), 32 time steps
SHAPES = (("recurrent [32,300]x[300,1200]", 32, 300, 1200),
          ("input projection [1024,300]x[300,1200]", 1024, 300, 1200),
          ("square [1024,1024]x[1024,1024]", 1024, 1024, 1024))
CHILD_MARK = "GEMM_RESULT "


def cpu():
    """`lscpu`'s description of the CPU: model name, vendor, family, model, stepping and the kernel flags."""
    fields = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except (OSError, subprocess.CalledProcessError):  # no lscpu (macOS, a bare container): /proc/cpuinfo
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    fields.setdefault({"model name": "Model name", "vendor_id": "Vendor ID", "cpu family": "CPU family",
                                       "model": "Model", "stepping": "Stepping", "flags": "Flags"}.get(
                                           key.strip(), key.strip()), value.strip())
        except OSError:
            pass
    flags = set(fields.get("Flags", "").split())
    return {"model_name": fields.get("Model name") or platform.processor() or platform.machine(),
            "vendor": fields.get("Vendor ID", ""), "family": fields.get("CPU family", ""),
            "model": fields.get("Model", ""), "stepping": fields.get("Stepping", ""),
            "flags": [flag for flag in FLAGS if flag in flags],
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "hypervisor": fields.get("Hypervisor vendor", "")}


def threads_settings():
    """The thread and oneDNN environment variables as this process sees them ("unset" when not set)."""
    return {name: os.environ.get(name, "unset") for name in THREAD_VARIABLES}


def gemm_child(threads, seconds):
    """In a fresh process: TensorFlow's fp32 MatMul rate (GFLOP/s) on each of `SHAPES` at `threads` threads."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf  # here, not at the head: only this fresh process loads it (its pools fixed first)

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    rates = {}
    for name, m, k, n in SHAPES:
        copies = 8  # distinct operands: no product is a repeat of the one before
        a = tf.random.normal([copies, m, k])
        b = tf.random.normal([k, n])

        @tf.function
        def products(a=a, b=b):
            return [tf.linalg.matmul(a[i], b) for i in range(copies)]

        products()  # trace and warm up
        calls, started = 0, time.perf_counter()
        while True:
            outputs = products()
            calls += 1
            elapsed = time.perf_counter() - started
            if elapsed >= seconds and calls >= 3:
                break
        outputs[-1].numpy()
        rates[name] = 2.0 * m * k * n * copies * calls / elapsed / 1e9
    print(CHILD_MARK + json.dumps(rates), flush=True)


def gemm_rates(threads, seconds=1.0):
    """`{shape name: GFLOP/s}` at `threads` threads, measured in a fresh process (None where it failed)."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--gemm-child", str(threads),
                           "--seconds", str(seconds)], capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(CHILD_MARK):
            return json.loads(line[len(CHILD_MARK):])
    print(f"machine.py: the GEMM measurement at {threads} thread(s) failed: "
          f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}", file=sys.stderr, flush=True)
    return None


def describe(seconds=1.0, thread_counts=None):
    """This machine: `{"cpu", "threads", "software", "gemm": {threads: {shape: GFLOP/s}}, "peak_gflops":
    {threads: best rate}}`; `seconds` per shape (0: no GEMM measurement, no peak)."""
    info = {"cpu": cpu(), "threads": threads_settings(),
            "software": {"python": platform.python_version(), "platform": platform.platform()}}
    try:
        import importlib.metadata as metadata

        info["software"]["tensorflow"] = metadata.version("tensorflow")
    except Exception:  # TensorFlow not installed (a JAX-only benchmark): nothing to name
        pass
    info["gemm"], info["peak_gflops"] = {}, {}
    if seconds:
        cores = info["cpu"]["cores"] or 1
        for threads in thread_counts or sorted({1, cores}):
            rates = gemm_rates(threads, seconds)
            if rates:
                info["gemm"][str(threads)] = rates
                info["peak_gflops"][str(threads)] = max(rates.values())
    return info


def peak_for(info, threads):
    """The measured GEMM peak (GFLOP/s) for a figure taken on `threads` threads (0 or None: every core)."""
    peaks = info.get("peak_gflops") or {}
    key = str(threads or info["cpu"]["cores"])
    return peaks.get(key)


def cpu_label(info):
    """One short name of the CPU for a table row: "AMD EPYC (family 25 model 17, avx512_bf16), 2 cores"."""
    c = info["cpu"]
    flags = [f for f in c["flags"] if f.startswith(("avx512_bf16", "avx512_fp16", "amx"))] or c["flags"][-1:]
    return (f"{c['model_name']} (family {c['family']} model {c['model']}"
            + (f", {'/'.join(flags)}" if flags else "") + f"), {c['cores']} cores")


def lines(info):
    """The machine's description as printable lines."""
    c = info["cpu"]
    out = [f"CPU: {c['model_name']}; vendor {c['vendor']}, family {c['family']}, model {c['model']}, stepping "
           f"{c['stepping']}; {c['cores']} cores usable" + (f" ({c['hypervisor']} guest)" if c["hypervisor"] else ""),
           f"CPU flags: {', '.join(c['flags']) or 'none of ' + ', '.join(FLAGS)}",
           "threads: " + ", ".join(f"{k}={v}" for k, v in info["threads"].items()),
           "software: " + ", ".join(f"{k} {v}" for k, v in info["software"].items())]
    for threads, rates in info.get("gemm", {}).items():
        out.append(f"fp32 GEMM, TensorFlow MatMul, {threads} thread(s): " +
                   "; ".join(f"{name} {rate:.1f} GFLOP/s" for name, rate in rates.items()))
    return out


def lstm_flops(tokens, input_size, hidden):
    """Multiply-add FLOPs of a bi-LSTM over `tokens` steps: per direction and step, the four gates' input
    and recurrent products (`2 * 4h * (input + h)`)."""
    return tokens * 2 * 2 * 4 * hidden * (input_size + hidden)


def esim_flops(premise_tokens, hypothesis_tokens, hidden=300, embedding_dim=300, folded=True):
    """FLOPs of ESIM's forward pass on one pair of `premise_tokens` and `hypothesis_tokens` real tokens
    (Chen et al. 2017): the input bi-LSTM, the alignment (scores and both soft alignments), F, the
    composition bi-LSTM and the tanh layer over the pooled 8h; the softmax, the classifier and the
    element-wise work are left out (a few per cent). F is counted as computed: 6h -> h on the zoo's m'
    (`folded`, `zoo.layers.alignment.fold_enhanced_kernel`), 8h -> h on the paper's m (the reference)."""
    tokens = premise_tokens + hypothesis_tokens
    h = hidden
    f_width = 6 * h if folded else 8 * h
    return (lstm_flops(tokens, embedding_dim, h) + 3 * 2 * premise_tokens * hypothesis_tokens * 2 * h
            + tokens * 2 * f_width * h + lstm_flops(tokens, h, h) + 2 * 8 * h * h)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per GEMM shape (0: do not measure)")
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="thread counts to measure (default: 1 and every core)")
    parser.add_argument("--json", default=None, help="also write the description to this JSON file")
    parser.add_argument("--gemm-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.gemm_child is not None:
        gemm_child(args.gemm_child, args.seconds)
        return 0
    info = describe(args.seconds, args.threads)
    print("\n".join(lines(info)))
    if args.json:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from zoo.fileio import write_json

        write_json(args.json, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
