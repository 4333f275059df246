"""What every command line shares: `CommandParser` (argparse, with the zoo's one-line errors) and the argparse
types of each kind of value, built on `zoo.settings.values` (the one validator per kind that the settings
use too), so that one value is refused or taken alike by every command, before anything is written and
before TensorFlow is imported.

```python
parser = CommandParser(prog="evaluate.py", description="...")
parser.add_argument("--batch-size", type=BATCH_SIZE)          # evaluate.py: error: argument --batch-size: ...
```
"""

import argparse
import os
import sys

from zoo.fileio import describe_fault
from zoo.settings import values

COUNT = values.flag(values.count)                                   # examples, epochs, threads, trials: >= 1
COUNT_OR_ZERO = values.flag(values.count, zero=True)                # >= 0 (0: none / off)
BATCH_SIZE = values.flag(values.batch_size)
SEED = values.flag(values.seed)
SECONDS = values.flag(values.number, parse=float, zero=True)
PORT = values.flag(values.port)
PATH_TO_READ = values.flag(values.path_to_read, parse=str)          # a file or a folder that exists
FILE_TO_READ = values.flag(values.path_to_read, parse=str, want="file")
FOLDER_TO_READ = values.flag(values.path_to_read, parse=str, want="folder")
FILE_TO_WRITE = values.flag(values.path_to_write, parse=str, want="file")
FOLDER_TO_WRITE = values.flag(values.path_to_write, parse=str, want="folder")
REPORT = values.flag(values.report_path, parse=str)                 # a file, or a folder for the default name


# The flags that name a model, by the kind of model each names (`zoo.runs.kinds`).
MODEL_FLAGS = {"run": "--run-dir", "saved_model": "--saved-model", "tflite": "--tflite", "preset": "--preset"}


def check_model(kind, path):
    """`path` given to the flag of `kind` holds that kind of model (a hub address is fetched when opened):
    checked from its files, before TensorFlow starts (`zoo.runs.kinds.check_kind`)."""
    from zoo.runs.kinds import check_kind

    if kind != "preset" or "://" not in path:
        check_kind(path, kind, MODEL_FLAGS[kind])
    return path


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose usage errors are one line, `PROG: error: MESSAGE`, exit status 2
    (`--help` shows the usage)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help shows the options)\n")


def fail(prog, error, status=2):
    """Prints `PROG: error: ERROR` as one line on stderr and exits with `status`."""
    text = " ".join(str(error).split("\n")).strip()
    print(f"{prog}: error: {text}", file=sys.stderr)
    raise SystemExit(status)


INTERRUPTED = "interrupted: nothing it was writing was left half-written; rerun the same command"


def guarded(prog, body, interrupted=INTERRUPTED, hint=None, target=None):
    """Runs `body()` so that Ctrl-C and the machine's own faults end the command in one line: Ctrl-C prints
    `PROG: INTERRUPTED` and exits with status 130; a full or read-only disk, or a folder without permission,
    prints `PROG: error: ...` naming the path and what to free or change (`zoo.fileio.describe_fault`) and
    exits with status 2. Other errors pass through.

    Args:
        prog: the command's name.
        body: the command's work.
        interrupted: the line after Ctrl-C (what was kept, how to go on).
        hint: where else the command can write (e.g. "choose another --out"), said after the remedy.
        target: what the command writes, named (with its device's free space) when a fault names no path.

    Returns:
        what `body()` returns.
    """
    try:
        return body()
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr, flush=True)
        raise SystemExit(130) from None
    except Exception as error:  # OSError, and the errors of libraries that write by path (h5py, TensorFlow)
        line = describe_fault(error, hint=_cache_hint(error) or hint, target=target)
        if line is None:
            raise
        print(f"{prog}: error: {line}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def _cache_hint(error):
    """Where the zoo's cache can go instead, when the fault is in it ($NLI_ZOO_CACHE)."""
    from zoo.fileio.disk import fault_path
    from zoo.data.vectors.download import resolve_cache_dir

    path = fault_path(error)
    if path and os.path.abspath(path).startswith(resolve_cache_dir() + os.sep):
        return "set NLI_ZOO_CACHE to a folder with room that this user can write (the cache goes there)"
    return None
