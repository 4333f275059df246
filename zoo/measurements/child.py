"""One protocol between a measuring subprocess and its parent: the child prints one line, `RESULT_MARK`
followed by its result as JSON (`emit`); the parent takes the first such line of the child's output
(`parse`, `run`). Every benchmark's children, the PyTorch reference programs included, speak it.

Standard library only: a reference program in an environment with PyTorch and without the zoo's
requirements can import it (with the zoo's folder on its PYTHONPATH).
"""

import json
import subprocess
import sys

RESULT_MARK = "NLI_ZOO_RESULT "


def emit(result):
    """Writes `result` (JSON-serializable) to stdout as the child's result line (data for the parent, not a
    message: not through `logging`)."""
    sys.stdout.write(RESULT_MARK + json.dumps(result) + "\n")
    sys.stdout.flush()


def parse(stdout):
    """The result a child printed (the first result line of `stdout`), or None."""
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    return None


def last_error_line(stderr, limit=300):
    """The last line of a failed child's stderr (what it died of), cut to `limit` characters."""
    return (stderr.strip().splitlines() or ["no output"])[-1][:limit]


def run(command, env=None, cwd=None):
    """Runs a measuring child to its end; returns its result, or `{"error": its last line of stderr}` when it
    printed none (a crash, a missing module, a failed measurement)."""
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    result = parse(done.stdout)
    if result is None or done.returncode:
        return {"error": last_error_line(done.stderr or done.stdout)}
    return result
