"""scripts/benchmark_serving.py's thread settings: what `--threads` asks for is what each measuring process
sets (TensorFlow's two pools, or one pool for LiteRT and PyTorch), and the GEMM peak it is compared with;
and a tiny run end to end, its figures recorded with `--record`."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))

from benchmark_serving import thread_setting  # noqa: E402  (a script, not a package)


@pytest.mark.parametrize("text, expected", [
    ("1", {"label": "1", "threads": 1, "intra": 1}),
    ("all", {"label": "16", "threads": 16, "intra": 16}),
    ("4", {"label": "4", "threads": 4, "intra": 4}),
    ("inter:all", {"label": "inter:16", "threads": 16, "intra": 1}),   # TF Serving's intra 1, inter 16
    ("inter:2", {"label": "inter:2", "threads": 2, "intra": 1}),
])
def test_thread_settings_name_both_of_tensorflows_pools(text, expected):
    assert thread_setting(text, cores=16) == expected


def test_a_bad_thread_setting_is_refused():
    with pytest.raises(ValueError):
        thread_setting("inter:some", cores=2)


@pytest.mark.large
def test_the_benchmark_serves_a_tiny_model_and_records_what_it_measured(tmp_path):
    """A tiny end-to-end run (Keras's inference alone: no export to wait for) with `--record`: the record file
    is the machine's, under results/serving/, and holds each figure with its spread and the command."""
    import subprocess

    from zoo.measurements.machine import cpu, machine_id
    from zoo.measurements.record import read_records

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "scripts/benchmark_serving.py", "--models", "bowman_lstm", "--variants",
                           "keras", "--threads", "1", "--pairs", "8", "--latency-pairs", "2", "--gemm-seconds", "0",
                           "--vocabulary", "300", "--embedding-dim", "8", "--work-dir", str(tmp_path / "work"),
                           "--record", "--results", str(results)], cwd=root, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [record] = read_records(results / "serving" / f"{machine_id(cpu())}.jsonl")
    assert record["benchmark"] == "serving" and "--record" in record["command"]
    assert record["versions"]["tensorflow"] and record["machine"]["l2_per_core_kib"] != 0
    p50 = record["figures"]["bowman_lstm/keras/1/p50_ms"]
    assert p50["rounds"] == 1 and 0 < p50["min"] == p50["median"] == p50["max"]
    assert record["figures"]["bowman_lstm/keras/1/b32_pairs_per_s"]["median"] > 0
