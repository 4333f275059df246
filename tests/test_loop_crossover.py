"""scripts/loop_crossover.py, the measurement behind `KERNEL_ROWS`, runs: tiny ESIM, one thread, a batch on
either side of the limit; each line names both loops' times and their ratio."""

import os
import re
import subprocess
import sys

import pytest

from zoo.measurements.machine import cpu, machine_id
from zoo.measurements.record import read_records

pytestmark = pytest.mark.large  # the whole file is the large tier

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_crossover_script_times_both_loops_at_each_batch_size(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "loop_crossover.py"), "--batches", "1,3",
                             "--inter", "1", "--hidden-size", "8", "--record", "--results", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = re.findall(r"inter-op 1, intra-op 1, batch (\d+): kernel ([\d.]+) ms, packed ([\d.]+) ms, "
                       r"packed / kernel ([\d.]+)", result.stdout)
    assert [int(line[0]) for line in lines] == [1, 3], result.stdout
    for _, kernel, packed, ratio in lines:
        assert float(kernel) > 0 and float(packed) > 0
        assert abs(float(ratio) - float(packed) / float(kernel)) < 0.02
    assert re.search(r"L2 a core: (\d+ KiB|unknown)", result.stdout)   # the cache the crossover depends on, beside it
    # --record: the figures as printed, in the machine's record file
    [record] = read_records(tmp_path / "loop-crossover" / f"{machine_id(cpu())}.jsonl")
    for batch, kernel, packed, _ in lines:
        assert abs(record["figures"][f"inter:1/{batch}/kernel_ms"]["median"] - float(kernel)) < 0.006
        assert abs(record["figures"][f"inter:1/{batch}/packed_ms"]["median"] - float(packed)) < 0.006
