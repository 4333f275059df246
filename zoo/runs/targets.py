"""Where a command may write: one check for every `--output`, `--out`, `--dir` and `--run-dir` that a command
writes, so that no command asked to do one thing destroys what the user keeps.

A target is refused (`OutputError`, one line naming what the path holds, exit 2, `--overwrite` or not) when

- it is one of the command's inputs (a data file, `--input`, the run a model is started from), is an
  existing file inside an input folder (a corpus folder given as `--data-dir`), or, for a command that
  writes a folder whole (a run, a sweep, an export), holds one;
- it is, or lies inside, a folder of another kind than the command writes: a run directory, a sweep, a
  reproduction, a SavedModel (or TF Serving model folder), a TFLite export or a preset. The exceptions are
  the places each kind keeps what other commands write into it: a report in `evaluations/` of a model
  folder (evaluate's default), a run in `runs/` of a sweep or a reproduction, a sweep in a reproduction's
  `sweeps/`, a report in a reproduction's `reports/`.

A target of the same kind as the command writes is the command's own business (a rerun of train resumes
its run; `--overwrite` replaces an export of the same format); `replacing` says what `--overwrite` is about
to replace, so the command can say it.

```python
check_output("runs/esim/results.json", "report", "--output")   # OutputError: it is a file of the run ...
check_output("models/esim", "tflite", "--out", overwrite=True)  # OutputError: it holds a SavedModel ...
```
"""

import logging
import os

from zoo.errors import UserError
from zoo.runs.kinds import kind_of
from zoo.runs.layout import KEPT, lost_config
from zoo.runs.record import CONFIG_FILE

logger = logging.getLogger(__name__)

# The files that make a folder a sweep (zoo.comparison.tuner: SPEC_FILE, TUNER_DIR) or a reproduction
# (zoo.reproduction.plan: SWEEPS_DIR, REPORTS_DIR); this floor cannot import those, tests/test_outputs.py
# checks the names agree.
SWEEP_FILE, TUNER_DIR = "sweep.json", "tuner"
SWEEPS_DIR, REPORTS_DIR, REPORT_FILE = "sweeps", "reports", "reproduction.json"
RUNS_DIR, EVALUATIONS_DIR = "runs", "evaluations"

# What each kind of folder holds that a command of another kind may write into: {folder kind: {its entry:
# the kinds written there}} ("*": any other entry; a comparison of a sweep's runs goes in SWEEP/comparison).
HOMES = {
    "run": {EVALUATIONS_DIR: {"report"}},
    "saved_model": {EVALUATIONS_DIR: {"report"}},
    "tflite": {EVALUATIONS_DIR: {"report"}},
    "preset": {EVALUATIONS_DIR: {"report"}},
    "sweep": {RUNS_DIR: {"run", "report"}, SWEEP_FILE: (), TUNER_DIR: (), "*": {"report"}},
    "reproduction": {RUNS_DIR: {"run", "report"}, SWEEPS_DIR: {"sweep"}, REPORTS_DIR: {"report"}, "*": {"report"}},
}

DESCRIBED = {"run": "a run directory", "sweep": "a sweep (nli-zoo sweep)", "reproduction":
             "a reproduction (nli-zoo reproduce)", "saved_model": "a SavedModel export",
             "tflite": "a TFLite export", "preset": "a preset export", "report": "a report"}


class OutputError(UserError):
    """A target the command must not write: one line naming it and what it holds."""


def folder_kind(path):
    """What the folder `path` holds, of `DESCRIBED`'s kinds (a run missing its config.json is still a run),
    or None."""
    if not os.path.isdir(path):
        return "tflite" if kind_of(path) == "tflite" else None
    has = lambda name: os.path.exists(os.path.join(path, name))  # noqa: E731
    if has(SWEEP_FILE) or has(os.path.join(TUNER_DIR, "oracle.json")):
        return "sweep"
    model = kind_of(path)
    if model in ("saved_model", "tflite", "preset"):
        return model
    if model == "run" or _run_config(os.path.join(path, CONFIG_FILE)) or lost_config(path):
        return "run"  # a run stopped after its first write, or one that lost its config.json, included
    if not set(_entries(path)) <= {RUNS_DIR, SWEEPS_DIR, REPORTS_DIR}:
        return None  # a reproduction holds nothing else (zoo.reproduction.plan.check_directory): a project folder
        #              with a sweep in its sweeps/ and other files is not one
    for name in _entries(os.path.join(path, SWEEPS_DIR)):
        if os.path.exists(os.path.join(path, SWEEPS_DIR, name, SWEEP_FILE)):
            return "reproduction"
    for name in _entries(os.path.join(path, REPORTS_DIR)):
        if os.path.exists(os.path.join(path, REPORTS_DIR, name, REPORT_FILE)):
            return "reproduction"
    return None


def _run_config(path):
    """Whether `path` is a run's config.json (a model and a preset), damaged or not: not another tool's."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return False
    return '"model"' in text and '"preset"' in text


def _entries(folder):
    try:
        return os.listdir(folder)
    except OSError:
        return []


def contents(path, limit=4):
    """What a path holds, in a few words: `a run directory (config.json, vocab.txt, ...)`, `the file F`, or
    `5 entries: a, b, c, d, ...`."""
    kind = folder_kind(path)
    if not os.path.isdir(path):
        return f"{DESCRIBED[kind]}" if kind else "a file"
    names = sorted(os.listdir(path))
    listed = ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")
    if kind:
        return f"{DESCRIBED[kind]} ({listed})"
    return f"{len(names)} entr{'y' if len(names) == 1 else 'ies'}: {listed}" if names else "nothing"


def _real(path):
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output(target, writes, option, inputs=(), overwrite=False):
    """Checks that the command may write `target`.

    Args:
        target: the file or folder the command writes (it may not exist yet).
        writes: what the command writes there: `"report"` (a file or a folder of reports: evaluate,
            predict, compare), `"run"`, `"sweep"`, `"reproduction"`, `"saved_model"`, `"tflite"`, `"preset"`.
        option: the flag that named it (for the message).
        inputs: the paths the command reads (data files or folders, `--input`, a model it starts from).
        overwrite: `--overwrite` was given.

    Returns:
        what `--overwrite` replaces (a `contents` text) when `target` holds a thing of the kind written, else None.

    Raises:
        OutputError: one line naming the target and what it holds.
    """
    real = _real(target)
    shown = os.fspath(target)
    for given in inputs:
        if given is None or "://" in os.fspath(given) or not os.path.exists(given):
            continue
        source = _real(given)
        if real == source:
            raise OutputError(f"{option} {shown} is an input of this command ({contents(source)}): it would be "
                              "overwritten; choose another path")
        if _inside(source, real) and writes != "report":  # a folder written whole would take it with it
            raise OutputError(f"{option} {shown} holds {given}, an input of this command: choose another path")
        if _inside(real, source) and os.path.isfile(real):
            raise OutputError(f"{option} {shown} is a file of {given}, an input of this command: choose another path")
    if overwrite and writes != "report" and os.path.isdir(real) and set(os.listdir(real)) - KEPT \
            and folder_kind(real) is None:  # a folder of other things is never replaced whole
        raise OutputError(f"{option} {shown} holds {contents(real)}, not {DESCRIBED[writes]}: --overwrite replaces "
                          "only a thing of the kind written; choose another path")
    # the innermost folder of a known kind that holds the target (or is it)
    folder, below = real, []
    while True:
        kind = folder_kind(folder) if os.path.exists(folder) else None
        if kind is not None:
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        below.insert(0, os.path.basename(folder))
        folder = parent
    if not below:  # the target itself
        if kind == writes:
            replaced = contents(real)
            if overwrite and writes != "run" and os.path.isdir(real) and os.listdir(real):  # train says it itself
                logger.warning("%s %s holds %s: --overwrite replaces it", option, shown, replaced)
            return replaced
        raise OutputError(f"{option} {shown} holds {contents(real)}, not {DESCRIBED[writes]}: it is never replaced "
                          f"by one{' (--overwrite or not)' if overwrite else ''}; choose another path")
    homes = HOMES.get(kind, {})
    if writes in homes.get(below[0], homes.get("*", ())):
        return None
    what = "a file of" if os.path.isfile(real) else "inside"
    raise OutputError(f"{option} {shown} is {what} {folder}, which holds {contents(folder)}: "
                      f"{DESCRIBED[writes]} is never written there{' (--overwrite or not)' if overwrite else ''}; "
                      "choose a path outside it")
