"""What the vector cache tells the user: `say` and `warn` (one `[vectors]` line) and `Progress` (a bar), through this
module's logger (the commands print it on stderr, `zoo.commands.messages`)."""

import logging
import sys
import time

logger = logging.getLogger(__name__)


def say(message):
    """One `[vectors]` line: what the cache does (INFO)."""
    logger.info(f"{message}")


def warn(message):
    """One `[vectors]` line about the data itself (a repeated word, a misnamed file; WARNING)."""
    logger.warning(f"{message}")


class Progress:
    """A progress bar: redrawn in place when stderr is a terminal (records that say how their line starts
    and ends, `extra={"start": "\\r", "end": ""}`, for the commands' handler), a line per 10% otherwise."""

    def __init__(self, label, total=None, unit="MB", scale=1e6, enabled=True):
        self.label, self.total, self.unit, self.scale, self.enabled = label, total, unit, scale, enabled
        self.start = self.last = time.monotonic()
        self.done, self.step = 0, -1
        self.tty = enabled and sys.stderr.isatty()

    def update(self, done):
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        fraction = done / self.total if self.total else None
        if self.tty:
            if now - self.last >= 0.25:
                self.last = now
                logger.info(self._line(now, fraction), extra={"start": "\r", "end": ""})
        elif fraction is not None and int(fraction * 10) > self.step:
            self.step = int(fraction * 10)
            logger.info(self._line(now, fraction))

    def close(self):
        if self.enabled:
            now = time.monotonic()
            fraction = self.done / self.total if self.total else None
            logger.info(self._line(now, fraction) + " done", extra={"start": "\r" if self.tty else ""})

    def _line(self, now, fraction):
        rate = self.done / self.scale / max(now - self.start, 1e-6)
        text = f"{self.label}: {self.done / self.scale:,.1f}"
        if self.total:
            text += f"/{self.total / self.scale:,.1f}"
        text += f" {self.unit}"
        if fraction is not None:
            width = 30
            filled = min(width, int(fraction * width))
            text += f" [{'#' * filled}{'.' * (width - filled)}] {min(fraction, 1.0):.0%}"
        return text + f" {rate:,.1f} {self.unit}/s"
