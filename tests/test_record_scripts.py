"""The small measuring commands write records that read back: scripts/machine.py (the GEMM peak) and
scripts/suite_time.py (the suite's time, here of a few tests), each with `--record`."""

import os
import subprocess
import sys

import pytest

from zoo.measurements.machine import cpu, machine_id
from zoo.measurements.record import read_records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script(name, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", name), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.large
def test_machine_py_records_its_gemm_peak_beside_the_cpu(tmp_path):
    done = script("machine.py", "--seconds", "0.02", "--threads", "1", "--record", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "L2 a core:" in done.stdout and f"machine id {machine_id(cpu())}" in done.stdout
    [record] = read_records(tmp_path / "machine" / f"{machine_id(cpu())}.jsonl")
    peak = record["figures"]["gemm_peak/1"]
    assert peak["median"] > 0 and peak["median"] == record["machine"]["peak_gflops"]["1"]
    assert peak["median"] == max(v["median"] for k, v in record["figures"].items() if k.startswith("gemm/1/"))


def test_a_bad_flag_is_one_line_and_exit_2():
    done = script("machine.py", "--seconds", "soon")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--seconds" in done.stderr


def test_suite_time_records_wall_and_cpu_seconds_and_the_count(tmp_path):
    done = script("suite_time.py", "--record", "--results", str(tmp_path), "--", "tests/test_architecture.py", "-q",
                  "-n", "0", "-k", "import_circle")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [record] = read_records(tmp_path / "suite" / f"{machine_id(cpu())}.jsonl")
    figures = record["figures"]
    assert figures["tests"]["median"] == 2 and figures["wall_s"]["median"] > 0 and figures["cpu_s"]["median"] > 0
    assert "2 passed" in done.stdout
