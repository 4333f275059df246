"""What the command lines print of the zoo's messages.

The library below `zoo.commands` says what it does through `logging`, one logger per module under the
`zoo` logger (`logging.getLogger(__name__)`), and prints nothing itself: progress and results at INFO,
notes and warnings at WARNING, details at DEBUG. Each message carries its own prefix (`[train] ...`,
`[data] ...`), so the command lines print it as it is: `show_messages` gives the `zoo` logger one
`TerminalHandler`, which writes each message alone, without level or time, to the stream the zoo has always
used for it: stderr for the word-vector cache, presets and the demo (whose commands keep stdout for what
they produce), stdout for everything else. The level is the commands' `--quiet` (WARNING) or `--verbose`
(DEBUG), else INFO (`zoo.commands.parsing.CommandParser`).
"""

import logging
import sys

# The loggers whose messages go to stderr (each with the modules below it).
STDERR_LOGGERS = ("zoo.data.vectors", "zoo.presets", "zoo.demo", "zoo.fileio.lock")
LEVELS = {"quiet": logging.WARNING, None: logging.INFO, "verbose": logging.DEBUG}


def stream_of(name):
    """`sys.stdout` or `sys.stderr` (as they are now) for the messages of the logger `name`."""
    to_stderr = any(name == prefix or name.startswith(prefix + ".") for prefix in STDERR_LOGGERS)
    return sys.stderr if to_stderr else sys.stdout


class TerminalHandler(logging.Handler):
    """Writes each record's message (and its traceback, if it has one) as the line the commands print.

    A record may say how its line starts and ends (`extra={"start": "\\r", "end": ""}`: a progress line
    redrawn in place on a terminal); by default it starts as it is and ends with a newline. The streams are
    looked up at each record, so that a test's captured or a caller's replaced `sys.stdout` gets the lines.
    """

    def emit(self, record):
        try:
            stream = stream_of(record.name)
            stream.write(getattr(record, "start", "") + self.format(record) + getattr(record, "end", "\n"))
            stream.flush()
        except Exception:  # noqa: BLE001 (logging's convention: a failing handler reports, never raises)
            self.handleError(record)


def show_messages(level=logging.INFO):
    """Prints the zoo's messages at `level` and above from now on: the `zoo` logger gets one
    `TerminalHandler` (a second call replaces it) and `level`."""
    logger = logging.getLogger("zoo")
    for handler in [h for h in logger.handlers if isinstance(h, TerminalHandler)]:
        logger.removeHandler(handler)
    logger.addHandler(TerminalHandler())
    logger.setLevel(level)
