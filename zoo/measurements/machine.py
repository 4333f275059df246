"""The machine a figure was taken on: its CPU (model name, vendor, family / model / stepping, the flags
that decide the matrix kernels, L2 cache a core, usable cores), its thread settings, and its own fp32 GEMM
rate on the LSTM's matrix shapes, so that every benchmark figure names its CPU and can be read as a share
of that CPU's limit.

- `cpu()`: `lscpu` (or /proc/cpuinfo) and sysfs; `machine_id(cpu())`: `amd-epyc-25-17`, the name of the
  machine's record files under `results/` and of its tuning record (`nli-zoo tune`); both live in
  `zoo.fileio.cpu`, on the floor every other floor reads.
- `describe(seconds)`: the CPU, the thread settings, the software, and the fp32 GEMM rate of TensorFlow's
  `MatMul` (the op the models run, in a `tf.function`) on a 300-unit LSTM's products at batch 32 (the
  recurrent `[32, 300] x [300, 1200]` of one step, the input projection `[1024, 300] x [300, 1200]` of 32
  steps) and on `[1024, 1024] x [1024, 1024]`, on one thread and on every core, each in a fresh process
  (TensorFlow fixes its pools at start). `peak_gflops` is the best rate at each thread count: the figure a
  benchmark's useful FLOPs are divided by.
- `esim_flops(premise_tokens, hypothesis_tokens)`: the multiply-adds of one ESIM forward pass on the real
  tokens, so `pairs/s x flops / peak` is the share of the GEMM limit that went into useful work (training
  counts 3x the forward pass: the backward pass is two products per product).
"""

import logging
import os
import sys
import time

from zoo.fileio.cpu import FLAGS, cpu, l2_per_core_kib, machine_id, size_kib, software  # noqa: F401 (their home)
from zoo.measurements import child

logger = logging.getLogger(__name__)

THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS", "TF_ENABLE_ONEDNN_OPTS")
# (name, m, k, n): the LSTM's products at batch 32, hidden 300 (4 gates: 1200 columns), 32 time steps
SHAPES = (("recurrent [32,300]x[300,1200]", 32, 300, 1200),
          ("input projection [1024,300]x[300,1200]", 1024, 300, 1200),
          ("square [1024,1024]x[1024,1024]", 1024, 1024, 1024))


def threads_settings():
    """The thread and oneDNN environment variables as this process sees them ("unset" when not set)."""
    return {name: os.environ.get(name, "unset") for name in THREAD_VARIABLES}


def gemm_child(threads, seconds):
    """In a fresh process: TensorFlow's fp32 MatMul rate (GFLOP/s) on each of `SHAPES` at `threads` threads,
    emitted as the child's result."""
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
    child.emit(rates)


def gemm_rates(threads, seconds=1.0):
    """`{shape name: GFLOP/s}` at `threads` threads, measured in a fresh process (None where it failed)."""
    code = f"from zoo.measurements.machine import gemm_child; gemm_child({int(threads)}, {float(seconds)})"
    result = child.run([sys.executable, "-c", code])
    if "error" in result:
        logger.warning("the GEMM measurement at %s thread(s) failed: %s", threads, result["error"])
        return None
    return result


def describe(seconds=1.0, thread_counts=None):
    """This machine: `{"cpu", "id", "threads", "software", "gemm": {threads: {shape: GFLOP/s}},
    "peak_gflops": {threads: best rate}}`; `seconds` per shape (0: no GEMM measurement, no peak)."""
    facts = cpu()
    info = {"cpu": facts, "id": machine_id(facts), "threads": threads_settings(), "software": software(),
            "gemm": {}, "peak_gflops": {}}
    if seconds:
        for threads in thread_counts or sorted({1, facts["cores"] or 1}):
            rates = gemm_rates(threads, seconds)
            if rates:
                info["gemm"][str(threads)] = rates
                info["peak_gflops"][str(threads)] = max(rates.values())
    return info


def peak_for(info, threads):
    """The measured GEMM peak (GFLOP/s) for a figure taken on `threads` threads (0 or None: every core)."""
    return (info.get("peak_gflops") or {}).get(str(threads or info["cpu"]["cores"]))


def cpu_label(facts):
    """A CPU in a few words: "AMD EPYC (family 25 model 17, avx512_bf16), 2 cores, L2 1024 KiB a core"."""
    flags = [f for f in facts.get("flags", []) if f.startswith(("avx512_bf16", "avx512_fp16", "amx"))] \
        or facts.get("flags", [])[-1:]
    cores = f", {facts['cores']} cores" if facts.get("cores") else ""
    l2 = f", L2 {facts['l2_per_core_kib']:g} KiB a core" if facts.get("l2_per_core_kib") else ""
    return (f"{facts.get('model_name', '')} (family {facts.get('family', '')} model {facts.get('model', '')}"
            + (f", {'/'.join(flags)}" if flags else "") + f"){cores}{l2}")


def lines(info):
    """The machine's description as printable lines."""
    c = info["cpu"]
    l2 = c.get("l2_per_core_kib")
    out = [f"CPU: {c['model_name']}; vendor {c['vendor']}, family {c['family']}, model {c['model']}, stepping "
           f"{c['stepping']}; {c['cores']} cores usable" + (f" ({c['hypervisor']} guest)" if c["hypervisor"] else "")
           + f"; machine id {info.get('id') or machine_id(c)}",
           f"CPU flags: {', '.join(c['flags']) or 'none of ' + ', '.join(FLAGS)}; "
           f"L2 a core: {'unknown' if l2 is None else f'{l2:g} KiB'}",
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
    (Chen et al. 2017): the input bi-LSTM (eq. 1-2), the alignment (eq. 11-13: scores and both soft
    alignments), F (eq. 14-16), the composition bi-LSTM (eq. 17-18) and the tanh layer over the pooled 8h;
    the softmax, the classifier and the element-wise work are left out (a few per cent). F is counted as
    computed: 6h -> h on the zoo's m' (`folded`, `zoo.layers.alignment.fold_enhanced_kernel`), 8h -> h on
    the paper's m (the reference)."""
    tokens = premise_tokens + hypothesis_tokens
    h = hidden
    f_width = 6 * h if folded else 8 * h
    return (lstm_flops(tokens, embedding_dim, h) + 3 * 2 * premise_tokens * hypothesis_tokens * 2 * h
            + tokens * 2 * f_width * h + lstm_flops(tokens, h, h) + 2 * 8 * h * h)
