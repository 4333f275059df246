"""TensorFlow's start-up lines, quieted from the zoo's side.

`import tensorflow` prints, before its logging is configured, a few informational lines from C++
("All log messages before absl::InitializeLog() is called are written to STDERR", oneDNN's notice, "Could not
find cuda drivers", the CPU instruction notice), twice on TensorFlow 2.21 because two of its shared libraries
each carry a copy of the logging code. `TF_CPP_MIN_LOG_LEVEL` does not reach them: absl writes them straight
to file descriptor 2 before anything reads the variable. `import_tensorflow` imports TensorFlow with that
descriptor captured and writes back every line but those informational ones (`I....` lines and the absl
notice), so warnings and errors still show. With `TF_CPP_MIN_LOG_LEVEL=0` nothing is filtered.

What remains: lines TensorFlow prints later, when it creates its devices (e.g. a GPU's "Created device"
lines at level I, which `TF_CPP_MIN_LOG_LEVEL` does silence, and warnings).
"""

import os
import re
import sys
import tempfile

# Informational lines printed during `import tensorflow`: absl's notice, `I` lines and their continuations.
_START_UP_NOISE = re.compile(r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to "
                             r"STDERR|I\d{4} .*|To enable the following instructions:.*)$")


def quiet_environment():
    """The environment that quiets what it can: TensorFlow's C++ logging (level 2: warnings are hidden,
    errors shown, unless the user set it). gRPC's verbosity is left alone: `GRPC_VERBOSITY=ERROR` makes gRPC
    print the coordination service's errors (several lines for one failed cluster start) that TensorFlow
    already reports as the one error the zoo turns into its message."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # absl/glog's own level follows TensorFlow's, so that a user's TF_CPP_MIN_LOG_LEVEL=3 still hides errors
    os.environ.setdefault("GLOG_minloglevel", os.environ["TF_CPP_MIN_LOG_LEVEL"])


def import_tensorflow():
    """Imports TensorFlow (once) with its informational start-up lines filtered out of stderr."""
    quiet_environment()
    if "tensorflow" in sys.modules or os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
        import tensorflow  # noqa: F401

        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real descriptor 2 (embedded interpreters)
        import tensorflow  # noqa: F401

        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: F401
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not _START_UP_NOISE.match(line.rstrip("\n")))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()
