"""What the command lines print, all of it through this module: the zoo's messages, the command's own output and
its errors.

- **Messages.** The library below `zoo.commands` says what it does through `logging`, one logger per module under
  the `zoo` logger (`logging.getLogger(__name__)`), and prints nothing itself; a command's own notes go through
  its module's logger too (`zoo.commands.evaluate`, ...). Progress and notes of what is done are INFO, what the
  user should act on (a cut sentence, a model near chance, a backup that cannot be read) WARNING, details
  DEBUG. A message's `[prefix]` is its logger's, added here (`prefix_of`: `zoo.comparison.tuner` -> `[sweep]`,
  a command's logger -> the command's name), not written into its text. `show_messages` gives the `zoo` logger
  one `TerminalHandler`, which writes each message alone, without level or time, to the stream the zoo has
  always used for it: stderr for the word-vector cache, presets, the demo and the locks, and for every message
  of a command whose stdout is its data (`predict`), stdout for everything else. The level is the commands'
  `--quiet` (WARNING) or `--verbose` (DEBUG), else INFO (`zoo.commands.parsing.CommandParser`).
- **Output**: what the command exists to print (the scores, the predictions, the report, a table), through
  `output`; `--quiet` keeps it.
- **Errors**: one line on stderr through `error` (`zoo.commands.parsing.fail` and `guarded` write theirs here).

So `--quiet` means the same on every command: no progress and no notes, the warnings, the errors and the
command's own output kept.
"""

import logging
import sys

# The loggers whose messages go to stderr (each with the modules below it).
STDERR_LOGGERS = ("zoo.data.vectors", "zoo.presets", "zoo.demo", "zoo.fileio.lock")
LEVELS = {"quiet": logging.WARNING, None: logging.INFO, "verbose": logging.DEBUG}

# The prefix of each logger's messages (with the loggers below it; the longest name that matches wins). A logger
# of `zoo.commands` takes its command's name. Loggers not named here print their messages as they are (a
# manifest's note).
PREFIXES = {
    "zoo.comparison.tuner": "sweep",
    "zoo.data.vectors": "vectors",
    "zoo.demo": "demo",
    "zoo.diagnostics": "diagnostics",
    "zoo.export": "export",
    "zoo.export.loop_timing": "tune",
    "zoo.export.loop_tuning": "loop",
    "zoo.fileio.lock": "lock",
    "zoo.inference.evaluate": "evaluate",
    "zoo.inference.evaluate.data": "data",
    "zoo.inference.predict": "predict",
    "zoo.presets": "preset",
    "zoo.reproduction": "reproduce",
    "zoo.reproduction.estimate": "dry-run",
    "zoo.runs.alignment.note": "note",
    "zoo.runs.datasets": "data",
    "zoo.runs.directory": "train",
    "zoo.runs.layout": "train",
    "zoo.runs.restore": "train",
    "zoo.runs.state": "train",
    "zoo.runs.datasets.trees": "trees",
    "zoo.runs.evaluation.note": "note",
    "zoo.training.callbacks": "train",
    "zoo.training.ensemble": "train",
    "zoo.training.inputs": "data",
    "zoo.training.inputs.embeddings": "embeddings",
    "zoo.training.inputs.vocabulary": "vocabulary",
    "zoo.training.trainer": "train",
}
COMMANDS_LOGGER = "zoo.commands"
def _under(name, parent):
    return name == parent or name.startswith(parent + ".")


def prefix_of(name):
    """The prefix (without brackets) of the messages of the logger `name`, or None (printed as they are)."""
    if _under(name, COMMANDS_LOGGER) and name != COMMANDS_LOGGER:
        return name[len(COMMANDS_LOGGER) + 1:].split(".")[0]
    matches = [parent for parent in PREFIXES if _under(name, parent)]
    return PREFIXES[max(matches, key=len)] if matches else None


class PrefixFormatter(logging.Formatter):
    """A record's message (and its traceback, if it has one) with its logger's prefix: `[sweep] trial 0 ...`."""

    def format(self, record):
        text = super().format(record)
        prefix = prefix_of(record.name)
        return f"[{prefix}] {text}" if prefix else text


def stream_of(name):
    """`sys.stdout` or `sys.stderr` (as they are now) for the messages of the logger `name`."""
    to_stderr = _messages_on_stderr or any(_under(name, prefix) for prefix in STDERR_LOGGERS)
    return sys.stderr if to_stderr else sys.stdout


_messages_on_stderr = False


class TerminalHandler(logging.Handler):
    """Writes each record as the line the commands print: its prefix and message (`PrefixFormatter`).

    A record may say how its line starts and ends (`extra={"start": "\\r", "end": ""}`: a progress line
    redrawn in place on a terminal); by default it starts as it is and ends with a newline. The streams are
    looked up at each record, so that a test's captured or a caller's replaced `sys.stdout` gets the lines.
    """

    def __init__(self):
        super().__init__()
        self.setFormatter(PrefixFormatter())

    def emit(self, record):
        try:
            stream = stream_of(record.name)
            stream.write(getattr(record, "start", "") + self.format(record) + getattr(record, "end", "\n"))
            stream.flush()
        except Exception:  # noqa: BLE001 (logging's convention: a failing handler reports, never raises)
            self.handleError(record)


def show_messages(level=logging.INFO, on_stderr=False):
    """Prints the zoo's messages at `level` and above from now on: the `zoo` logger gets one
    `TerminalHandler` (a second call replaces it) and `level`; with `on_stderr`, every message goes to stderr
    (a command whose stdout is its data)."""
    global _messages_on_stderr
    _messages_on_stderr = on_stderr
    logger = logging.getLogger("zoo")
    for handler in [h for h in logger.handlers if isinstance(h, TerminalHandler)]:
        logger.removeHandler(handler)
    logger.addHandler(TerminalHandler())
    logger.setLevel(level)


def output(text="", end="\n", stream=None):
    """Prints what the command exists to print (`--quiet` keeps it): `text` and `end` on stdout (or `stream`,
    looked up now), flushed at once."""
    stream = stream or sys.stdout
    stream.write(text + end)
    stream.flush()


def error(line):
    """Prints one line on stderr (an error, the line after Ctrl-C), flushed at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def end_progress_line():
    """Ends a progress bar's line on a terminal, so that the next line stands on its own."""
    if sys.stdout.isatty():
        output()
