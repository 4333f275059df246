"""Kills every kind of run at every write step, reruns it, and prints whether the rerun is the uninterrupted run.

    python scripts/fault_sweep.py                        # every kind, every step (about an hour on 2 cores)
    python scripts/fault_sweep.py --kinds extension sweep_trial --jobs 2
        # (two fine-tunings at once meet at their source's lock)
    python scripts/fault_sweep.py --kinds plain --steps state@1 results --markdown
    python scripts/fault_sweep.py --flags --outputs      # bad flag values, outputs onto what the user keeps

For each kind of run:
- `plain`: `train.py` from nothing (2 epochs);
- `init_from`: a run of 2 epochs started from a finished run (`--init-from`);
- `extension`: a finished run of 2 epochs trained further to 3 (`--epochs 3`);
- `sweep_trial`: `nli-zoo sweep` of one trial (the plain run's settings, 2 epochs), its own writes
  (`sweep.json`, KerasTuner's `oracle.json`, `trial.json`) and its run's;

and for each write step that kind reaches (`zoo.runs.faults`, `zoo.comparison.tuner.FAULT_STEPS`), the command
runs in its own process with `NLI_ZOO_FAULT_AT=STEP`, which SIGKILLs it right after that write (as kill -9 or a
power cut would), then runs again:
- `same`: the same command; the outcome is `EQUAL` when `history.json` (epoch by epoch), `results.json` (less
  clock times) and the best weights' SHA-256 are those of the uninterrupted run, else `DIFFERS`, or `one line:
  ...` when it stops with exit status 2 and one line on stderr, or `FAILED` (another status, a traceback);
- `original`: the command the run was first asked with, where it differs: the extension's finished run
  (`--epochs 2`; then `EQUAL` means the finished run as it was, or the finished extension where the kill
  came after the extension's results were written), the fine-tuning without `--init-from` (a
  run of other settings: `EQUAL` to the plain run when nothing was trained, else one line); after it, the
  same command again, which must give the uninterrupted run too (`then same`).

A step the command never reaches (e.g. `publish` in an epoch without a better dev score) reports `not
reached`. With `--flags`, every numeric flag of the eight commands is given -1, 0, 99999999999, nan and abc
(`one line` or `ran`, never a traceback); with `--outputs`, each of `OUTPUT_CASES` must be refused in one line
and leave every file as it was. Every run is tiny (bowman_lstm, hidden size 4, 32 training pairs of the shipped
sample); the table is what docs/resuming.md shows.
"""

import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from zoo.commands.parsing import CommandParser
from zoo.runs.results import read_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY = ["--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "4", "--max-train-examples", "32",
        "--max-eval-examples", "16", "--set", "hidden_size=4", "--batch-size", "16", "--attention-examples", "0",
        "--log-every", "0", "--keras-verbose", "0", "--set", "max_premise_length=14",
        "--set", "max_hypothesis_length=10", "--compile-cache", "none"]
TRAIN = [sys.executable, os.path.join(ROOT, "train.py"), "--model", "bowman_lstm", *TINY]
SWEEP = [sys.executable, "-c", "import sys; from zoo.commands import main; raise SystemExit(main(sys.argv[1:]))",
         "sweep", "--models", "bowman_lstm", "--seeds", "1", "--epochs", "2", "--dataset", "snli_sample",
         "--embeddings", "none", "--embedding-dim", "4", "--max-train-examples", "32", "--max-eval-examples", "16",
         "--set", "hidden_size=4", "--batch-size", "16", "--keras-verbose", "0", "--set", "max_premise_length=14",
         "--set", "max_hypothesis_length=10"]
KINDS = ("plain", "init_from", "extension", "sweep_trial")


def steps_of(kind):
    """The write steps a kind of run reaches, as `NLI_ZOO_FAULT_AT` names them, in the order it writes them."""
    from zoo.comparison.tuner import FAULT_STEPS as SWEEP_STEPS
    from zoo.runs import faults

    epochs = [f"{step}@{epoch}" for epoch in (1, 2) for step in faults.EPOCH_STEPS]
    start = ["config@0", "vocab@0", "started"]
    end = list(faults.END_STEPS)
    if kind == "plain":
        return start + epochs + end
    if kind == "init_from":
        return ["config@0", "vocab@0"] + [f"{s}@0" for s in faults.INIT_STEPS] + ["started"] + epochs + end
    if kind == "extension":
        return ([f"{s}@2" if s in ("state", "prune", "manifest") else s for s in faults.EXTENSION_STEPS]
                + ["config@0", "started"] + [f"{step}@3" for step in faults.EPOCH_STEPS] + end)
    return list(SWEEP_STEPS) + start + epochs + end


def comparable(run_dir):
    """What must not depend on where a run was killed: history (less clock times), results (less timing and
    paths) and the best weights' SHA-256; None when the run did not finish."""
    try:
        with open(os.path.join(run_dir, "history.json"), encoding="utf-8") as f:
            history = json.load(f)
        results = read_results(run_dir)
        with open(os.path.join(run_dir, "best.weights.h5"), "rb") as f:
            weights = hashlib.sha256(f.read()).hexdigest()
    except (OSError, ValueError):
        return None
    if results is None:
        return None
    drop = lambda entries: [{k: v for k, v in e.items() if k != "time"} for e in entries]  # noqa: E731
    kept = {k: getattr(results, k) for k in ("test", "dev", "epochs_run", "best_epoch", "parameters", "labels")}
    kept["history"] = drop(results.history)
    return {"history": drop(history.get("epochs", [])), "finished": history.get("finished"), "results": kept,
            "weights": weights}


def same(a, b):
    """Whether two `comparable` runs agree (floats to float32's last digits)."""
    if a is None or b is None:
        return False

    def close(x, y):
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(close(p, q) for p, q in zip(x, y))
        if isinstance(x, float) or isinstance(y, float):
            return abs(float(x) - float(y)) <= 1e-6 * max(abs(float(x)), abs(float(y)), 1e-1)
        return x == y

    return close({k: v for k, v in a.items() if k != "weights"}, {k: v for k, v in b.items() if k != "weights"}) \
        and a["weights"] == b["weights"]


def run(command, fault=None, timeout=900):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TF_CONFIG", None)
    env.pop("NLI_ZOO_FAULT_AT", None)
    if fault:
        env["NLI_ZOO_FAULT_AT"] = fault
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


class Kind:
    """One kind of run: its command, where its run directory is, and its uninterrupted result."""

    def __init__(self, name, work):
        self.name, self.work = name, work
        self.base = os.path.join(work, "base")      # what the command starts from (a finished run, or nothing)
        self.source = os.path.join(work, "source")  # the --init-from run

    def command(self, folder, original=False):
        run_dir = os.path.join(folder, "run")
        if self.name == "plain":
            return TRAIN + ["--epochs", "2", "--run-dir", run_dir]
        if self.name == "init_from":
            tail = [] if original else ["--init-from", self.source]
            return TRAIN + ["--epochs", "2", "--run-dir", run_dir] + tail
        if self.name == "extension":
            return TRAIN + ["--epochs", "2" if original else "3", "--run-dir", run_dir]
        return SWEEP + ["--dir", os.path.join(folder, "sweep")]

    def run_dir(self, folder):
        if self.name != "sweep_trial":
            return os.path.join(folder, "run")
        runs = os.path.join(folder, "sweep", "runs")
        names = sorted(os.listdir(runs)) if os.path.isdir(runs) else []
        return os.path.join(runs, names[0]) if names else os.path.join(runs, "none")

    def fresh(self, folder):
        """A folder holding what the command starts from."""
        os.makedirs(folder)
        if self.name in ("extension",):
            shutil.copytree(os.path.join(self.base, "run"), os.path.join(folder, "run"))

    def prepare(self):
        """Builds what the kind starts from and its uninterrupted result (and the original command's)."""
        os.makedirs(self.work, exist_ok=True)
        if self.name == "init_from":
            done = run(TRAIN + ["--epochs", "2", "--run-dir", self.source])
            check(done, "the --init-from source run")
        if self.name == "extension":
            os.makedirs(self.base)
            done = run(TRAIN + ["--epochs", "2", "--run-dir", os.path.join(self.base, "run")])
            check(done, "the finished run to train further")
        self.whole = self.finish(os.path.join(self.work, "whole"), original=False)
        self.original = None
        if self.name in ("init_from", "extension"):
            self.original = self.finish(os.path.join(self.work, "whole-original"), original=True)

    def finish(self, folder, original):
        self.fresh(folder)
        check(run(self.command(folder, original)), f"the uninterrupted {self.name} run")
        return comparable(self.run_dir(folder))


def check(done, what):
    if done.returncode != 0:
        raise SystemExit(f"fault_sweep.py: {what} failed (status {done.returncode}):\n{done.stderr[-3000:]}")


def outcome(done, folder, kind, expected):
    """The outcome of a rerun: EQUAL, DIFFERS, `one line: ...` or FAILED."""
    if done.returncode == 0:
        return "EQUAL" if same(comparable(kind.run_dir(folder)), expected) else "DIFFERS"
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith(("[", "I0000", "W0000",
                                                                                                  "E0000", "WARNING"))]
    if done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr:
        line = lines[0].split(": ", 2)[-1].replace(kind.source, "SOURCE").replace(os.path.join(folder, "run"), "RUN")
        return "one line: " + line[:110]
    return f"FAILED (status {done.returncode})"


def case(kind, step, root):
    """Kills `kind`'s command at `step`, reruns it (and the original command), returns the table's row."""
    folder = os.path.join(root, f"{kind.name}-{step.replace('@', '-').replace(':', '-')}")
    kind.fresh(folder)
    killed = run(kind.command(folder), fault=step)
    if killed.returncode != -signal.SIGKILL:
        shutil.rmtree(folder, ignore_errors=True)
        return [kind.name, step, "not reached", "", "", ""]
    row = [kind.name, step, "killed"]
    if kind.original is not None:
        copy = folder + "-original"
        shutil.copytree(folder, copy)
        # An extension killed after its results were written had finished: the original command then finds
        # a finished run of more epochs and prints it, as for any finished run (the uninterrupted extension).
        expected = kind.whole if kind.name == "extension" and same(comparable(kind.run_dir(folder)), kind.whole) \
            else kind.original
        first = outcome(run(kind.command(copy, original=True)), copy, kind, expected)
        then = outcome(run(kind.command(copy)), copy, kind, kind.whole)
        shutil.rmtree(copy, ignore_errors=True)
    else:
        first = then = "-"
    row += [outcome(run(kind.command(folder)), folder, kind, kind.whole), first, then]
    shutil.rmtree(folder, ignore_errors=True)
    return row


def table(rows, markdown):
    head = ["kind", "step", "kill", "same command", "original command", "then same"]
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(f"`{c}`" if i == 1 else c for i, c in enumerate(row)) + " |"
                            for row in rows])
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in [head] + rows)


# Bad values and outputs onto what the user keeps (--flags, --outputs) ---------------------------------------
COMMANDS = ("train", "evaluate", "predict", "export", "sweep", "compare", "reproduce", "demo")
BAD_VALUES = ("-1", "0", "99999999999", "nan", "abc")
NUMERIC_TYPES = {int, float}
NUMERIC_NAMES = {"count", "batch_size", "seed", "number", "port", "_seconds"}  # zoo.settings.values.flag types
TEXT_COUNTS = {"export": ["--allowed-batch-sizes"], "sweep": ["--seeds"], "reproduce": ["--seeds"]}
# Each command's arguments around the flag tried, in the folder `outputs_tree` builds (R: a finished tiny run).
BASE = {
    "train": ["--model", "bowman_lstm", *TINY, "--epochs", "1", "--run-dir", "T"],
    "evaluate": ["--run-dir", "R", "--dataset", "snli_sample", "--max-examples", "8", "--quiet"],
    "predict": ["--run-dir", "R", "--premise", "A man sleeps .", "--hypothesis", "A man is awake ."],
    "export": ["--run-dir", "R", "--format", "saved_model", "--out", "M"],
    "sweep": ["--models", "bowman_lstm", *TINY[:10], "--epochs", "1", "--dir", "S"],
    "compare": ["R", "R2", "--no-tensorboard", "--out", "C"],
    "reproduce": ["rocktaschel2016", "--embeddings", "none", "--dir", "P", "--dry-run"],
    "demo": ["--run-dir", "R"],
}
# Outputs that must be refused in one line (exit 2), nothing changed, --overwrite or not: (command line, words
# the line holds). tests/test_outputs.py runs them in its own process; a new command that writes adds its rows.
OUTPUT_CASES = [
    (["evaluate", "--run-dir", "R", "--dataset", "snli_sample", "--output", "R/results.json"], "a file of"),
    (["predict", "--run-dir", "R", "--input", "F.jsonl", "--output", "R/config.json"], "a file of"),
    (["evaluate", "--run-dir", "R", "--data-dir", "D", "--output", "D/snli_1.0_test.jsonl"], "input"),
    (["predict", "--run-dir", "R", "--input", "F.jsonl", "--output", "F.jsonl"], "input"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "R", "--overwrite"], "input"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "R2", "--overwrite"], "a run directory"),
    (["export", "--run-dir", "R", "--format", "tflite", "--out", "R2", "--overwrite"], "a run directory"),
    (["export", "--run-dir", "R", "--format", "saved_model", "--out", "TFLITE", "--overwrite"], "a TFLite export"),
    (["export", "--run-dir", "R", "--format", "tflite", "--out", "SERVING", "--overwrite"], "a SavedModel"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "R/presets"], "inside"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "D", "--overwrite"], "not a preset"),
    (["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--run-dir", "SWEEP", "--overwrite"], "a sweep"),
    (["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--run-dir", "PRESET"], "a preset"),
    (["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--run-dir", "R2/logs"], "inside"),
    (["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--run-dir", "D", "--overwrite"], "not a run"),
    (["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--run-dir", "R2", "--init-from", "R2",
      "--overwrite"], "input"),
    (["compare", "R", "R2", "--out", "R2"], "input"),
    (["compare", "R", "--out", "SERVING/comparison"], "inside"),
    (["sweep", "--models", "bowman_lstm", "--dir", "R"], "a run directory"),
    (["sweep", "--models", "bowman_lstm", "--dir", "REPRO"], "a reproduction"),
    (["reproduce", "rocktaschel2016", "--dir", "SWEEP", "--embeddings", "none"], "a sweep"),
    (["reproduce", "rocktaschel2016", "--dir", "repro", "--embeddings", "none", "--out", "R"], "a run directory"),
]


def outputs_tree(root, run_dir):
    """The folder the output cases run in: R and R2 (copies of the finished run `run_dir`), D (an SNLI folder),
    F.jsonl (pairs), SWEEP (a sweep with one run), REPRO (a reproduction), TFLITE, SERVING and PRESET (each
    kind of export, as far as its files tell)."""
    from zoo.data import snli

    shutil.copytree(run_dir, os.path.join(root, "R"))
    shutil.copytree(run_dir, os.path.join(root, "R2"))
    shutil.copytree(os.path.join(os.path.dirname(snli.__file__), "sample"), os.path.join(root, "D"))
    files = {"F.jsonl": '{"premise": "A man sleeps .", "hypothesis": "A man is awake ."}\n', "SWEEP/sweep.json": "{}",
             "REPRO/sweeps/p-1/sweep.json": "{}", "TFLITE/model.tflite": "tflite", "TFLITE/tflite.json": "{}",
             "SERVING/1/saved_model.pb": "pb", "PRESET/preprocessor.json": "{}"}
    for name, text in files.items():
        path = os.path.join(root, *name.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    shutil.copytree(run_dir, os.path.join(root, "SWEEP", "runs", "a"))
    return root


def snapshot(root):
    """The SHA-256 of every file under `root` (lock files aside): what must not change."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".lock"):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


def verdict(done, timeout=False):
    """`one line` (exit 2, one line on stderr), `ran` (exit 0), `TRACEBACK`, or `FAILED (status N)`."""
    if timeout:
        return "ran on (timeout)"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if "Traceback" in done.stderr:
        return "TRACEBACK"
    if done.returncode == 2:
        return "one line" if len(lines) == 1 else f"{len(lines)} lines"
    return "ran" if done.returncode == 0 else f"FAILED (status {done.returncode})"


def nli_zoo(argv, cwd, timeout):
    command = [sys.executable, "-c", "import sys; from zoo.commands import main; raise SystemExit(main(sys.argv[1:]))",
               *argv]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout), False
    except subprocess.TimeoutExpired:
        return None, True


def numeric_flags(command):
    """The numeric flags of `command`, from its parser, and those it reads as text and counts itself."""
    import importlib

    parser = importlib.import_module(f"zoo.commands.{command}").build_parser()
    found = [action.option_strings[-1] for action in parser._actions if action.option_strings
             and (action.type in NUMERIC_TYPES or getattr(action.type, "__name__", None) in NUMERIC_NAMES)
             and not action.choices]
    return found + TEXT_COUNTS.get(command, [])


def flag_rows(root, timeout, commands=COMMANDS):
    """Every numeric flag of the eight commands (or of `commands`) with each of `BAD_VALUES`: never a traceback."""
    rows = []
    for command in commands:
        for flag in numeric_flags(command):
            for value in BAD_VALUES:
                done, late = nli_zoo([command, *BASE[command], flag, value], root, timeout)
                rows.append([command, flag, value, verdict(done, late)])
                print("  ".join(rows[-1]), file=sys.stderr, flush=True)
                for leftover in ("T", "M", "S", "C", "P"):
                    shutil.rmtree(os.path.join(root, leftover), ignore_errors=True)
    return rows


def output_rows(root, timeout):
    """`OUTPUT_CASES`: each refused in one line, nothing under `root` changed."""
    rows = []
    for argv, words in OUTPUT_CASES:
        before = snapshot(root)
        done, late = nli_zoo(argv, root, timeout)
        outcome = verdict(done, late)
        if outcome == "one line" and words not in done.stderr:
            outcome = f"one line without {words!r}: {done.stderr.strip()[:100]}"
        kept = "kept" if snapshot(root) == before else "CHANGED"
        rows.append([" ".join(argv), outcome, kept])
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def checks(args, root):
    """`--flags` / `--outputs`: the tables, and the number of bad rows."""
    run_dir = os.path.join(root, "finished")
    check(run(TRAIN + ["--epochs", "1", "--run-dir", run_dir]), "the finished run")
    tree = outputs_tree(os.path.join(root, "tree"), run_dir)
    rows, bad = [], 0
    if args.flags:
        found = flag_rows(tree, args.timeout, args.commands)
        bad += sum(row[3] not in ("one line", "ran") for row in found)
        rows += [[f"{c} {f} {v}", o, "-"] for c, f, v, o in found]
    if args.outputs:
        found = output_rows(tree, args.timeout)
        bad += sum(row[1] != "one line" or row[2] != "kept" for row in found)
        rows += found
    head = ["command", "outcome", "files"]
    print("\n".join(["| " + " | ".join(head) + " |", "|---|---|---|"]
                    + [f"| `{a}` | {b} | {c} |" for a, b, c in rows]))
    print(f"\n{len(rows)} cases, {bad} with a traceback, a crash, more than one line or a changed file")
    return 1 if bad else 0


def main(argv=None):
    parser = CommandParser(prog="fault_sweep.py",
                           description="Kill every kind of run at every write step, rerun, compare.")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--steps", nargs="+", default=None, help="only these steps (as NLI_ZOO_FAULT_AT names them)")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once (each is one process at a time)")
    parser.add_argument("--work-dir", default=None, help="where the runs go (default: a temporary folder, removed)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--flags", action="store_true",
                        help=f"instead: every numeric flag of the eight commands with {', '.join(BAD_VALUES)}")
    parser.add_argument("--outputs", action="store_true",
                        help="instead: outputs onto a run's files, the inputs, and other kinds of folder")
    parser.add_argument("--commands", nargs="+", choices=COMMANDS, default=list(COMMANDS),
                        help="with --flags: only these commands")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per case of --flags / --outputs")
    args = parser.parse_args(argv)
    from zoo.quiet import filter_stderr, quiet_environment

    quiet_environment()
    filter_stderr()  # the table's progress lines without TensorFlow's start-up notices (imported for the steps)
    root = args.work_dir or tempfile.mkdtemp(prefix="fault-sweep-")
    if args.flags or args.outputs:
        try:
            return checks(args, root)
        finally:
            if args.work_dir is None:
                shutil.rmtree(root, ignore_errors=True)
    rows, bad = [], 0
    try:
        for name in args.kinds:
            kind = Kind(name, os.path.join(root, name))
            kind.prepare()
            steps = [s for s in steps_of(name) if args.steps is None or s in args.steps]
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                found = list(pool.map(lambda step: case(kind, step, os.path.join(root, name)), steps))
            for row in found:
                print("  ".join(row), file=sys.stderr, flush=True)
                bad += any(c in ("DIFFERS",) or c.startswith("FAILED") for c in row[3:])
            rows += found
    finally:
        if args.work_dir is None:
            shutil.rmtree(root, ignore_errors=True)
    print(table(rows, args.markdown))
    reached = sum(row[2] == "killed" for row in rows)
    print(f"\n{reached} kills, {sum(row[3] == 'EQUAL' for row in rows)} reruns of the same command EQUAL, "
          f"{bad} case(s) DIFFERS or FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
