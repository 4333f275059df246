"""What the vector cache tells the user on stderr: `say` (one `[vectors]` line) and `Progress` (a bar)."""

import sys
import time


def say(message):
    print(f"[vectors] {message}", file=sys.stderr, flush=True)


class Progress:
    """A progress bar on stderr: redrawn in place on a terminal, a line per 10% otherwise."""

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
                sys.stderr.write("\r" + self._line(now, fraction))
                sys.stderr.flush()
        elif fraction is not None and int(fraction * 10) > self.step:
            self.step = int(fraction * 10)
            print(self._line(now, fraction), file=sys.stderr, flush=True)

    def close(self):
        if self.enabled:
            now = time.monotonic()
            fraction = self.done / self.total if self.total else None
            print(("\r" if self.tty else "") + self._line(now, fraction) + " done", file=sys.stderr, flush=True)

    def _line(self, now, fraction):
        rate = self.done / self.scale / max(now - self.start, 1e-6)
        text = f"[vectors] {self.label}: {self.done / self.scale:,.1f}"
        if self.total:
            text += f"/{self.total / self.scale:,.1f}"
        text += f" {self.unit}"
        if fraction is not None:
            width = 30
            filled = min(width, int(fraction * width))
            text += f" [{'#' * filled}{'.' * (width - filled)}] {min(fraction, 1.0):.0%}"
        return text + f" {rate:,.1f} {self.unit}/s"
