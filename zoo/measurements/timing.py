"""Timing one inference engine the same way whatever it is (a SavedModel, Keras, LiteRT, the PyTorch
reference): batch-1 latency (p50, p99, CPU time of a call) and throughput at each batch size (pairs/s and
CPU time per pair), after one warm-up pass; the process's peak resident memory. Standard library only, so
the PyTorch reference program uses it too.
"""

import time


def percentile(values, q):
    """The `q`-th percentile of `values` (the nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def measure(call, latency_inputs, throughput_inputs):
    """Latency of `call` on each batch-1 input and throughput over each list of batches.

    Args:
        call: runs one prepared batch to completion.
        latency_inputs: prepared batch-1 inputs.
        throughput_inputs: `{batch size: [(prepared batch, pairs in it), ...]}`.

    Returns:
        `{"p50_ms", "p99_ms", "b1_cpu_ms", "b{size}_pairs_per_s", "b{size}_cpu_ms_per_pair"}`; CPU time is
        every thread's of the process (on a shared machine, the work done whatever the wait).
    """
    for item in latency_inputs:  # warm-up pass
        call(item)
    for items in throughput_inputs.values():
        for item, _ in items:
            call(item)
    latencies, cpu_times = [], []
    for item in latency_inputs:
        started, cpu = time.perf_counter(), time.process_time()
        call(item)
        latencies.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu)
    result = {"p50_ms": 1e3 * percentile(latencies, 50), "p99_ms": 1e3 * percentile(latencies, 99),
              "b1_cpu_ms": 1e3 * percentile(cpu_times, 50)}
    for size, items in throughput_inputs.items():
        started, cpu = time.perf_counter(), time.process_time()
        for item, _ in items:
            call(item)
        pairs = sum(n for _, n in items)
        result[f"b{size}_pairs_per_s"] = pairs / (time.perf_counter() - started)
        result[f"b{size}_cpu_ms_per_pair"] = 1e3 * (time.process_time() - cpu) / pairs
    return result


def peak_rss_mb():
    """The process's peak resident memory in MB (VmHWM: per process image, unlike ru_maxrss, which Linux
    carries over from the parent across fork and exec); NaN where /proc is missing."""
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
