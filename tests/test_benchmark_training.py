"""scripts/benchmark_training.py times the `nli-zoo train` path: a tiny run end to end, through the trainer,
under JAX (`KERAS_BACKEND=jax python scripts/benchmark_training.py` as docs/speed.md shows it): one test of the
benchmark and of the trainer under JAX at once."""

import json
import os
import subprocess
import sys

import pytest

from zoo.measurements.machine import cpu, machine_id
from zoo.measurements.record import read_records

pytestmark = pytest.mark.large  # the whole file is the large tier

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_benchmark_trains_through_the_trainer_under_jax_and_times_every_step(tmp_path):
    report = tmp_path / "bench.json"
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "scripts/benchmark_training.py", "--models", "bowman_lstm", "--pairs", "64",
                           "--epochs", "0", "--hidden-size", "8", "--embedding-dim", "8", "--eval-pairs", "8",
                           "--threads", "1", "--gemm-seconds", "0", "--images-every", "0", "--json", str(report),
                           "--record", "--results", str(tmp_path / "results")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
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
    assert epoch["callbacks_s"] > 0                                 # the run's own callbacks (the clock comes last)
    assert run["backend"] == "jax" and run["images_every"] == 0     # trained by JAX through the trainer
    assert run["fit_tail_s"] < 5                                    # no wait after the last epoch (autotune off)
    assert run["vocabulary_size"] > 3                               # the run's vocabulary, built by the trainer
    assert "| `bowman_lstm` | 64 | 1 | off |" in proc.stdout
    # --record: the run appended to the machine's training record, which reads back with each figure's spread
    [record] = read_records(tmp_path / "results" / "training" / f"{machine_id(cpu())}.jsonl")
    assert record["machine"]["id"] == machine_id(cpu()) and record["versions"]["keras"]
    steps = record["figures"]["bowman_lstm/1/64/steps_pairs_per_s"]
    assert steps["rounds"] == 1 and steps["median"] == steps["min"] == steps["max"]
    assert abs(steps["median"] - run["pairs"] / run["steps_s"]) < 1e-6
