"""scripts/benchmark_training.py times the `nli-zoo train` path: a tiny run end to end, through the trainer."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_benchmark_trains_through_the_trainer_and_times_every_step(tmp_path):
    report = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "scripts/benchmark_training.py", "--models", "bowman_lstm", "--pairs", "64",
                           "--epochs", "0", "--hidden-size", "8", "--embedding-dim", "8", "--eval-pairs", "8",
                           "--threads", "1", "--gemm-seconds", "0", "--json", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(report.read_text())
    assert data["machine"]["cpu"]["model_name"] and data["machine"]["threads"]  # every figure names its CPU
    [result] = data["results"]
    [run] = result["runs"]
    assert result["pairs"] == run["pairs"] == 64 and run["threads"] == 1 and run["hidden_size"] == 8
    [epoch] = run["epochs"]
    assert epoch["steps"] >= 64 // 32                               # the run's own batches (batch 32)
    assert 0 < epoch["median_step_ms"] <= epoch["max_step_ms"]
    assert 0 < epoch["steps_s"] <= epoch["epoch_s"]
    assert epoch["validation_s"] > 0                                # the trainer's epoch: validation included
    assert {"BestCheckpoint", "Backup"} <= set(epoch["callbacks_s"])  # the run's own callbacks, each timed
    assert run["fit_tail_s"] < 5                                    # no wait after the last epoch (autotune off)
    assert run["vocabulary_size"] > 3                               # the run's vocabulary, built by the trainer
    assert "| `bowman_lstm` | 64 | 1 | off |" in proc.stdout
