"""How long the commands take to answer: to `--help`, to a usage error, to `nli-zoo models`, and to the first
line of real work, for this checkout and, to compare, another one (`--before DIR`).

Each case runs as a fresh process with the checkout on `PYTHONPATH` (`python -c "from zoo.commands import
main; ..." COMMAND ARGS`, what the `nli-zoo` console script runs), timed from its start to its exit or, for
the work cases, to the first line it prints (it is then stopped). The checkouts are measured in turn within
every round, several rounds, and the medians printed: on a shared machine the load changes from minute to
minute, so interleaving keeps it the same for both, and the median keeps one busy moment from counting.

    python scripts/startup_times.py --rounds 5
    git archive COMMIT | tar -x -C /tmp/before && python scripts/startup_times.py --before /tmp/before --rounds 7

The work cases need a finished run: one tiny run (bowman_lstm, one epoch on 64 pairs of the shipped sample)
is trained first, with this checkout, in a temporary folder. The machine (`lscpu`) and its load averages
before and after are printed with the table.
"""

import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

from zoo.commands.parsing import CommandParser
from zoo.measurements.machine import cpu, cpu_label

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAUNCH = "import sys; from zoo.commands import main; raise SystemExit(main(sys.argv[1:]))"
PAIR = ["--premise", "A man plays a guitar.", "--hypothesis", "A person makes music."]
TINY = ["--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "8", "--set", "hidden_size=8",
        "--max-train-examples", "64", "--max-eval-examples", "32", "--batch-size", "16", "--epochs", "1",
        "--keras-verbose", "2", "--attention-examples", "0"]
# (name, argv, what is timed: "exit" or "first line"); RUN is the tiny run, FRESH a folder new in each case
CASES = [
    ("nli-zoo models", ["models"], "exit"),
    ("nli-zoo models esim", ["models", "esim"], "exit"),
    ("train --help", ["train", "--help"], "exit"),
    ("evaluate --help", ["evaluate", "--help"], "exit"),
    ("predict --help", ["predict", "--help"], "exit"),
    ("export --help", ["export", "--help"], "exit"),
    ("sweep --help", ["sweep", "--help"], "exit"),
    ("compare --help", ["compare", "--help"], "exit"),
    ("reproduce --help", ["reproduce", "--help"], "exit"),
    ("demo --help", ["demo", "--help"], "exit"),
    ("train --model nosuch", ["train", "--model", "nosuch"], "exit"),
    ("train --set hiden_size=8", ["train", "--model", "esim", "--set", "hiden_size=8"], "exit"),
    ("train --batch-size 0", ["train", "--model", "esim", "--batch-size", "0"], "exit"),
    ("evaluate --run-dir (not a run)", ["evaluate", "--run-dir", "."], "exit"),
    ("train: first line", ["train", "--model", "bowman_lstm", *TINY, "--run-dir", "FRESH"], "first line"),
    ("evaluate: first line", ["evaluate", "--run-dir", "RUN", "--dataset", "snli_sample", "--quiet"], "first line"),
    ("predict: first line", ["predict", "--run-dir", "RUN", *PAIR], "first line"),
    ("export: first line", ["export", "--run-dir", "RUN", "--format", "preset", "--out", "FRESH"], "first line"),
]


def environment(checkout):
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel")}
    env["PYTHONPATH"] = checkout
    return env


def measure(checkout, argv, until, workdir):
    """Seconds from the process's start to its exit (`until="exit"`) or to its first line of output."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", LAUNCH, *argv], cwd=workdir, env=environment(checkout),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if until == "exit":
        process.communicate()
        return time.perf_counter() - started
    seen = b""
    while b"\n" not in seen:
        ready, _, _ = select.select([process.stdout], [], [], 600)
        chunk = os.read(process.stdout.fileno(), 4096) if ready else b""
        if not chunk:
            break
        seen += chunk
    elapsed = time.perf_counter() - started
    process.kill()
    process.communicate()
    return elapsed


def main(argv=None):
    parser = CommandParser(prog="startup_times.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="another checkout to measure in the same rounds (e.g. git archive COMMIT | tar -x)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5); the medians are printed")
    args = parser.parse_args(argv)
    checkouts = [("this checkout", ROOT)] + ([("--before", os.path.abspath(args.before))] if args.before else [])
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as workdir:
        print("[startup_times] training the tiny run the work cases read ...", flush=True)
        subprocess.run([sys.executable, "-c", LAUNCH, "train", "--model", "bowman_lstm", *TINY, "--run-dir", "RUN"],
                       cwd=workdir, env=environment(ROOT), check=True, capture_output=True)
        times = {(name, label): [] for name, _, _ in CASES for label, _ in checkouts}
        fresh = 0
        for _ in range(args.rounds):
            for name, case, until in CASES:
                for label, checkout in checkouts:
                    fresh += 1
                    argv = [f"fresh-{fresh}" if a == "FRESH" else a for a in case]
                    times[(name, label)].append(measure(checkout, argv, until, workdir))
    load_after = os.getloadavg()
    print(f"\nmachine: {cpu_label(cpu())}; load averages (1, 5, 15 min) "
          f"{' '.join(f'{x:.2f}' for x in load_before)} before, {' '.join(f'{x:.2f}' for x in load_after)} after")
    print(f"medians of {args.rounds} round(s), seconds (each round runs every case in each checkout in turn)\n")
    print("| case | " + " | ".join(label for label, _ in checkouts) + " |")
    print("|---|" + "---:|" * len(checkouts))
    for name, _, _ in CASES:
        print(f"| {name} | " + " | ".join(f"{statistics.median(times[(name, label)]):.2f}" for label, _ in checkouts)
              + " |")


if __name__ == "__main__":
    main()
