"""scripts/loop_crossover.py, the measurement behind `KERNEL_ROWS`, runs: tiny ESIM, one thread, a batch on
either side of the limit; each line names both loops' times and their ratio."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_crossover_script_times_both_loops_at_each_batch_size():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "loop_crossover.py"), "--batches", "1,3",
                             "--inter", "1", "--hidden-size", "8"], capture_output=True, text=True, timeout=300,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = re.findall(r"inter-op 1, intra-op 1, batch (\d+): kernel ([\d.]+) ms, packed ([\d.]+) ms, "
                       r"packed / kernel ([\d.]+)", result.stdout)
    assert [int(line[0]) for line in lines] == [1, 3], result.stdout
    for _, kernel, packed, ratio in lines:
        assert float(kernel) > 0 and float(packed) > 0
        assert abs(float(ratio) - float(packed) / float(kernel)) < 0.02
