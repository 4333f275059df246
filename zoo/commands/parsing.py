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

from zoo.errors import ConfigError
from zoo.fileio import describe_fault
from zoo.settings import values

def bounded(maximum, zero=False):
    """A count flag from 1 (0 with `zero`) to `maximum`: a value above it is one line naming the bound, before
    anything runs (not minutes of work, or a MemoryError, later)."""
    return values.flag(values.count, zero=zero, maximum=maximum)


# The bounds of the count flags: far above any use, low enough that a mistyped value stops at once.
MAX_EPOCHS, MAX_EMBEDDING_DIM, MAX_THREADS, MAX_STEPS = 10_000, 10_000, 1_024, 1_000
MAX_RESAMPLES = 100_000       # a bootstrap of SNLI's test set with these takes about a minute on one core
MAX_EXAMPLES_SHOWN = 1_000    # --attention-examples
MAX_SECONDS = 10**7           # --cluster-timeout: about 115 days; above, time.sleep() overflows

COUNT = values.flag(values.count)                                   # examples, ...: 1 to values.MAX_COUNT
COUNT_OR_ZERO = values.flag(values.count, zero=True)                # 0 to values.MAX_COUNT (0: none / off)
EPOCHS = bounded(MAX_EPOCHS)
EMBEDDING_DIM = bounded(MAX_EMBEDDING_DIM)
THREADS = bounded(MAX_THREADS)
TRIALS = bounded(values.MAX_TRIALS)
STEPS = bounded(MAX_STEPS)
RESAMPLES = bounded(MAX_RESAMPLES)
EXAMPLES_SHOWN = bounded(MAX_EXAMPLES_SHOWN, zero=True)
BATCH_SIZE = values.flag(values.batch_size)
BATCH_SIZE_OR_ZERO = values.flag(values.count, zero=True, maximum=values.MAX_BATCH_SIZE)
SEED = values.flag(values.seed)


def _seconds(value, name=None):
    seconds = values.number(value, name, zero=True)
    if seconds > MAX_SECONDS:
        raise ConfigError(f"must be at most {MAX_SECONDS:,} seconds, got {value!r}")
    return seconds


SECONDS = values.flag(_seconds, parse=float)
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
