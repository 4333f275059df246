"""The test suite's time: the README's test command run under /usr/bin/time, its wall and CPU seconds and
how many tests passed, printed and, with `--record`, appended to `results/suite/<machine id>.jsonl`.

    python scripts/suite_time.py --record                       # python -m pytest -q, the whole suite
    python scripts/suite_time.py -- tests/test_settings.py -n 0  # other pytest arguments after --

CPU seconds are the user and system time of the command and every process it waited for (the pytest
workers): on a machine shared with other jobs, the work done whatever the wait.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

from recording import add_record_options, save
from zoo.commands.parsing import CommandParser
from zoo.measurements import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIME = "/usr/bin/time"
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def counts(output):
    """`{"passed": n, "failed": n, ...}` from pytest's last summary line."""
    summary = [line for line in output.splitlines() if COUNTS.search(line) and " in " in line]
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in COUNTS.findall(summary[-1] if summary else "")}


def timed(command):
    """Runs `command` in the checkout under /usr/bin/time; returns `(wall s, CPU s, its output)`."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "time")
        started = time.perf_counter()
        if os.access(TIME, os.X_OK):
            done = subprocess.run([TIME, "-f", "%e %U %S", "-o", report] + command, cwd=ROOT, capture_output=True,
                                  text=True)
            with open(report, encoding="utf-8") as f:
                wall, user, system = (float(x) for x in f.read().split()[-3:])
        else:  # no /usr/bin/time (macOS, a bare container): this process's own account of its children
            import resource

            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall, user, system = time.perf_counter() - started, usage.ru_utime, usage.ru_stime
    return wall, user + system, done.stdout + done.stderr, done.returncode


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ours, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, ["-q"])
    parser = CommandParser(prog="suite_time.py", description=__doc__.splitlines()[0])
    add_record_options(parser)
    args = parser.parse_args(ours)
    command = [sys.executable, "-m", "pytest"] + pytest_args
    wall, cpu, output, status = timed(command)
    found = counts(output)
    print(output.rstrip().splitlines()[-1] if output.strip() else "(no output)")
    print(f"suite: {found.get('passed', 0):,} passed in {wall // 60:.0f} min {wall % 60:.0f} s, "
          f"{cpu:,.0f} s of CPU ({' '.join(['python -m pytest'] + pytest_args)})")
    if status and not found:
        print(f"suite_time.py: error: the tests did not run (exit status {status})", file=sys.stderr)
        return status
    figures = {"wall_s": [wall], "cpu_s": [cpu], "tests": [found.get("passed", 0)]}
    figures.update({kind: [n] for kind, n in found.items() if kind != "passed"})
    save(args, "suite", figures, machine.describe(seconds=0), notes="pytest " + " ".join(pytest_args))
    return status


if __name__ == "__main__":
    sys.exit(main())
