"""The test suite's time: the README's test command run under /usr/bin/time, its wall and CPU seconds and
how many tests passed, printed and, with `--record`, appended to `results/suite/<machine id>.jsonl`; with
`--schedule`, each test file's seconds written to `tests/durations.json`, from which tests/conftest.py
starts the longest files first (so that the two xdist workers end together).

    python scripts/suite_time.py --record --schedule             # python -m pytest -q, the whole suite
    python scripts/suite_time.py -- -m "not large"               # the fast tier
    python scripts/suite_time.py -- tests/test_settings.py -n 0  # other pytest arguments after --

CPU seconds are the user and system time of the command and every process it waited for (the pytest
workers): on a machine shared with other jobs, the work done whatever the wait.
"""

import collections
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

from recording import add_record_options, save
from zoo.commands.parsing import CommandParser
from zoo.measurements import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEDULE = os.path.join(ROOT, "tests", "durations.json")  # read by tests/conftest.py
TIME = "/usr/bin/time"
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def counts(output):
    """`{"passed": n, "failed": n, ...}` from pytest's last summary line."""
    summary = [line for line in output.splitlines() if COUNTS.search(line) and " in " in line]
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in COUNTS.findall(summary[-1] if summary else "")}


def file_seconds(junit_xml):
    """`{test file name: seconds}` of a pytest JUnit XML report: each test's setup, call and teardown, summed by
    the file that holds it (a module fixture's setup counts in its file's first test)."""
    seconds = collections.Counter()
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").split(".")
        name = next((part for part in reversed(module) if part.startswith("test_")), None)
        if name is not None:
            seconds[f"{name}.py"] += float(case.get("time") or 0)
    return {name: round(value, 1) for name, value in seconds.most_common()}


def write_schedule(seconds, info, pytest_args, path=SCHEDULE):
    """Writes tests/durations.json: every file's seconds, longest first, and where they were measured."""
    content = {"measured": {"command": " ".join(["python -m pytest"] + pytest_args), "machine": info["id"],
                            "date": datetime.date.today().isoformat()},
               "seconds": seconds}
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(content, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print(f"wrote the seconds of {len(seconds)} test files to {os.path.relpath(path, ROOT)}", flush=True)


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
    parser.add_argument("--schedule", action="store_true",
                        help="write each test file's seconds to tests/durations.json (the order conftest.py runs "
                             "the files in); for the whole suite's run")
    args = parser.parse_args(ours)
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "junit.xml")
        command = [sys.executable, "-m", "pytest"] + pytest_args + [f"--junitxml={report}"]
        wall, cpu, output, status = timed(command)
        seconds = file_seconds(report) if os.path.exists(report) else {}
    found = counts(output)
    print(output.rstrip().splitlines()[-1] if output.strip() else "(no output)")
    print(f"suite: {found.get('passed', 0):,} passed in {wall // 60:.0f} min {wall % 60:.0f} s, "
          f"{cpu:,.0f} s of CPU ({' '.join(['python -m pytest'] + pytest_args)})")
    if status and not found:
        print(f"suite_time.py: error: the tests did not run (exit status {status})", file=sys.stderr)
        return status
    figures = {"wall_s": [wall], "cpu_s": [cpu], "tests": [found.get("passed", 0)]}
    figures.update({kind: [n] for kind, n in found.items() if kind != "passed"})
    info = machine.describe(seconds=0)
    save(args, "suite", figures, info, notes="pytest " + " ".join(pytest_args))
    if args.schedule:
        if status or not seconds:
            print("suite_time.py: error: no schedule written: the suite did not pass", file=sys.stderr)
            return status or 1
        write_schedule(seconds, info, pytest_args)
    return status


if __name__ == "__main__":
    sys.exit(main())
