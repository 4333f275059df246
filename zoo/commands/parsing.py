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


def flag(validator, parse=int, **options):
    """An argparse `type=` for a `zoo.settings.values` validator: the text parsed by `parse` (int, float or
    str), then checked; argparse then reports `argument --batch-size: must be ...` (one line, by
    `CommandParser`, exit status 2).

    Example: `parser.add_argument("--batch-size", type=flag(values.batch_size))`.
    """

    def convert(text):
        try:
            value = parse(text)
        except ValueError:
            kind = {int: "a whole number", float: "a number"}.get(parse, "a value")
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None
        try:
            return validator(value, None, **options)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = validator.__name__  # argparse names the type in its messages
    return convert


COUNT = flag(values.count)                                   # examples, epochs, threads, trials: >= 1
COUNT_OR_ZERO = flag(values.count, zero=True)                # >= 0 (0: none / off)
BATCH_SIZE = flag(values.batch_size)
SEED = flag(values.seed)
SECONDS = flag(values.number, parse=float, zero=True)
PORT = flag(values.port)
PATH_TO_READ = flag(values.path_to_read, parse=str)          # a file or a folder that exists
FILE_TO_READ = flag(values.path_to_read, parse=str, want="file")
FOLDER_TO_READ = flag(values.path_to_read, parse=str, want="folder")
FILE_TO_WRITE = flag(values.path_to_write, parse=str, want="file")
FOLDER_TO_WRITE = flag(values.path_to_write, parse=str, want="folder")
REPORT = flag(values.report_path, parse=str)                 # a file, or a folder for the default name


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
    (`--help` shows the usage), with the flags every command has: `--quiet` (the zoo's warnings and errors
    only, and no progress bar) and `--verbose` (its details too). Parsing a command line sets the level of
    the zoo's messages and prints them from then on (`zoo.commands.messages.show_messages`).

    Args:
        fit_verbosity: the command trains (train, sweep, reproduce): `--verbose 0|1|2` also takes Keras's
            `fit` verbosity (`args.verbose`, default None), a bare `--verbose` the details; `--quiet` then
            means `--verbose 0` where no number is given.
    """

    def __init__(self, *args, fit_verbosity=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fit_verbosity = fit_verbosity
        self.set_defaults(messages=None)
        said = self.add_argument_group("messages", "what the command prints besides its results")
        said.add_argument("--quiet", action="store_true",
                          help="print only the zoo's warnings and errors, and no progress bar")
        if fit_verbosity:
            said.add_argument("--verbose", nargs="?", type=int, choices=(0, 1, 2), default=None, metavar="0|1|2",
                              action=_VerboseOrFit,
                              help="alone: print the zoo's details too; with 0|1|2: Keras fit verbosity, 0 silent, "
                                   "1 progress bar, 2 one line per epoch (default: 1 on a terminal, 2 when the "
                                   "output goes to a file or pipe)")
        else:
            said.add_argument("--verbose", dest="messages", action="store_const", const="verbose",
                              help="print the zoo's details too")

    def parse_args(self, args=None, namespace=None):
        """Parses as argparse does, then sets what the zoo's messages show (`show_messages`)."""
        from zoo.commands.messages import LEVELS, show_messages

        parsed = super().parse_args(args, namespace)
        if parsed.quiet and parsed.messages == "verbose":
            self.error("argument --verbose: not allowed with argument --quiet")
        if parsed.quiet:
            parsed.messages = "quiet"
            if self.fit_verbosity and parsed.verbose is None:
                parsed.verbose = 0
        show_messages(LEVELS[parsed.messages])
        return parsed

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help shows the options)\n")


class _VerboseOrFit(argparse.Action):
    """`--verbose` alone: the zoo's details (`messages`); `--verbose N`: Keras's fit verbosity."""

    def __call__(self, parser, namespace, values, option_string=None):
        if values is None:
            namespace.messages = "verbose"
        else:
            setattr(namespace, self.dest, values)


# What `CommandParser` adds to every command line's namespace (not a setting of what the command does).
MESSAGE_OPTIONS = ("quiet", "messages")


def fail(prog, error, status=2):
    """Prints `PROG: error: ERROR` as one line on stderr and exits with `status`."""
    text = " ".join(str(error).split("\n")).strip()
    print(f"{prog}: error: {text}", file=sys.stderr)
    raise SystemExit(status)


INTERRUPTED = "interrupted: nothing it was writing was left half-written; rerun the same command"


def guarded(prog, body, interrupted=INTERRUPTED, hint=None):
    """Runs `body()` so that Ctrl-C and the machine's own faults end the command in one line: Ctrl-C prints
    `PROG: INTERRUPTED` and exits with status 130; a full or read-only disk, or a folder without permission,
    prints `PROG: error: ...` naming the path and what to free or change (`zoo.fileio.describe_fault`) and
    exits with status 2. Other errors pass through.

    Args:
        prog: the command's name.
        body: the command's work.
        interrupted: the line after Ctrl-C (what was kept, how to go on).
        hint: where else the command can write (e.g. "choose another --out"), said after the remedy.

    Returns:
        what `body()` returns.
    """
    try:
        return body()
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr, flush=True)
        raise SystemExit(130) from None
    except Exception as error:  # OSError, and the errors of libraries that write by path (h5py, TensorFlow)
        line = describe_fault(error, hint=_cache_hint(error) or hint)
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
