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

from zoo.commands import messages
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


def bounded(maximum, zero=False):
    """A count flag from 1 (0 with `zero`) to `maximum`: a value above it is one line naming the bound, before
    anything runs (not minutes of work, or a MemoryError, later)."""
    return flag(values.count, zero=zero, maximum=maximum)


# The bounds of the count flags: far above any use, low enough that a mistyped value stops at once.
MAX_EPOCHS, MAX_EMBEDDING_DIM, MAX_THREADS, MAX_STEPS = 10_000, 10_000, 1_024, 1_000
MAX_RESAMPLES = 100_000       # a bootstrap of SNLI's test set with these takes about a minute on one core
MAX_EXAMPLES_SHOWN = 1_000    # --attention-examples
MAX_SECONDS = 10**7           # --cluster-timeout: about 115 days; above, time.sleep() overflows

COUNT = flag(values.count)                                   # examples, ...: 1 to values.MAX_COUNT
COUNT_OR_ZERO = flag(values.count, zero=True)                # 0 to values.MAX_COUNT (0: none / off)
EPOCHS = bounded(MAX_EPOCHS)
EMBEDDING_DIM = bounded(MAX_EMBEDDING_DIM)
THREADS = bounded(MAX_THREADS)
TRIALS = bounded(values.MAX_TRIALS)
STEPS = bounded(MAX_STEPS)
RESAMPLES = bounded(MAX_RESAMPLES)
EXAMPLES_SHOWN = bounded(MAX_EXAMPLES_SHOWN, zero=True)
BATCH_SIZE = flag(values.batch_size)
BATCH_SIZE_OR_ZERO = flag(values.count, zero=True, maximum=values.MAX_BATCH_SIZE)
SEED = flag(values.seed)


def _seconds(value, name=None):
    seconds = values.number(value, name, zero=True)
    if seconds > MAX_SECONDS:
        raise ConfigError(f"must be at most {MAX_SECONDS:,} seconds, got {value!r}")
    return seconds


SECONDS = flag(_seconds, parse=float)
PORT = flag(values.port)
PATH_TO_READ = flag(values.path_to_read, parse=str)          # a file or a folder that exists
FILE_TO_READ = flag(values.path_to_read, parse=str, want="file")
FOLDER_TO_READ = flag(values.path_to_read, parse=str, want="folder")
FILE_TO_WRITE = flag(values.path_to_write, parse=str, want="file")
FOLDER_TO_WRITE = flag(values.path_to_write, parse=str, want="folder")
REPORT = flag(values.report_path, parse=str)                 # a file, or a folder for the default name


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose usage errors are one line, `PROG: error: MESSAGE`, exit status 2
    (`--help` shows the usage), with the flags every command has: `--quiet` (the zoo's warnings and errors
    and the command's own output only, and no progress bar) and `--verbose` (the zoo's details too), neither
    of which takes a value, so that neither reads the next word. Parsing a command line sets the level of
    the zoo's messages and prints them from then on (`zoo.commands.messages.show_messages`).

    Args:
        fit_verbosity: the command trains (train, sweep, reproduce): `--keras-verbose 0|1|2` sets Keras's
            `fit` verbosity (`args.verbose`, default None); `--quiet` then means `--keras-verbose 0` where no
            level is given.
        messages_on_stderr: the command's stdout is its data (predict): every message goes to stderr.
    """

    def __init__(self, *args, fit_verbosity=False, messages_on_stderr=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fit_verbosity = fit_verbosity
        self.messages_on_stderr = messages_on_stderr
        said = self.add_argument_group("messages", "what the command prints besides its own output")
        self.set_defaults(messages=None)
        said.add_argument("--quiet", action="store_true",
                          help="print only the command's own output (scores, predictions, reports) and the zoo's "
                               "warnings and errors: no progress, no notes, no progress bar")
        said.add_argument("--verbose", dest="messages", action="store_const", const="verbose",
                          help="print the zoo's details too")
        if fit_verbosity:
            said.add_argument("--keras-verbose", dest="verbose", type=int, choices=KERAS_VERBOSITY, default=None,
                              metavar="0|1|2",
                              help="Keras's fit output: 0 silent, 1 progress bar, 2 one line per epoch (default: 1 on "
                                   "a terminal, 2 when the output goes to a file or pipe; 0 with --quiet)")

    def parse_args(self, args=None, namespace=None):
        """Parses as argparse does, then sets what the zoo's messages show (`show_messages`)."""
        from zoo.commands.messages import LEVELS, show_messages

        args = list(sys.argv[1:] if args is None else args)
        if self.fit_verbosity:
            self._refuse_a_level_after_verbose(args)
        parsed = super().parse_args(args, namespace)
        if parsed.quiet and parsed.messages == "verbose":
            self.error("argument --verbose: not allowed with argument --quiet")
        if parsed.quiet:
            parsed.messages = "quiet"
            if self.fit_verbosity and parsed.verbose is None:
                parsed.verbose = 0
        show_messages(LEVELS[parsed.messages], on_stderr=self.messages_on_stderr)
        return parsed

    def _refuse_a_level_after_verbose(self, args):
        """`--verbose 2` (Keras's level, as older versions took it) is one line naming `--keras-verbose`, not a
        positional `2` or an unrecognized argument; `--verbose=2` the same."""
        for word, after in zip(args, args[1:] + [None]):
            if word == "--":
                return
            level = word.partition("=")[2] if word.startswith("--verbose=") else after if word == "--verbose" else None
            if level in {str(v) for v in KERAS_VERBOSITY}:
                self.error(f"argument --verbose: takes no value (the zoo's details); Keras's fit output is "
                           f"--keras-verbose {level}")

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help shows the options)\n")


# Keras's `fit` verbosity: silent, a progress bar, one line per epoch (`--keras-verbose`).
KERAS_VERBOSITY = (0, 1, 2)


# What `CommandParser` adds to every command line's namespace (not a setting of what the command does).
MESSAGE_OPTIONS = ("quiet", "messages")


def fail(prog, error, status=2):
    """Prints `PROG: error: ERROR` as one line on stderr (`zoo.commands.messages.error`) and exits with
    `status`; the one way a command reports a user error."""
    text = " ".join(str(error).split("\n")).strip()
    messages.error(f"{prog}: error: {text}")
    raise SystemExit(status) from None


def stop(prog, error, status):
    """Prints `PROG: ERROR` (no `error:`: a stop the user asked for, or a run's failures already listed) as one
    line on stderr and exits with `status`; with status 2 it is an error (`fail`)."""
    if status == 2:
        fail(prog, error)
    if status == 130:
        messages.end_progress_line()  # Ctrl-C during a progress bar: the line stands on its own
    text = " ".join(str(error).split("\n")).strip()
    messages.error(f"{prog}: {text}")
    raise SystemExit(status) from None


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
        messages.error(f"{prog}: {interrupted}")
        raise SystemExit(130) from None
    except Exception as error:  # OSError, and the errors of libraries that write by path (h5py, TensorFlow)
        line = describe_fault(error, hint=_cache_hint(error) or hint, target=target)
        if line is None:
            raise
        fail(prog, line)


def _cache_hint(error):
    """Where the zoo's cache can go instead, when the fault is in it ($NLI_ZOO_CACHE)."""
    from zoo.data.vectors.download import resolve_cache_dir
    from zoo.fileio.disk import fault_path

    path = fault_path(error)
    if path and os.path.abspath(path).startswith(resolve_cache_dir() + os.sep):
        return "set NLI_ZOO_CACHE to a folder with room that this user can write (the cache goes there)"
    return None
