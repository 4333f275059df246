"""Where TensorFlow spent its time: a profile of a callable, read back as ops with their name scopes.

Shared by `benchmark_serving.py --profile` and `benchmark_training.py --profile`.
"""

import glob
import os
import shutil
import tempfile
import time


def profile(run):
    """Runs `run()` under the TensorFlow profiler.

    Returns:
        `(wall seconds, [(name scope path, op type, seconds), ...])`: every op executed on TensorFlow's
        compute threads (executor bookkeeping left out).
    """
    start()
    run()
    return stop()


_STARTED = {}


def start():
    """Starts the TensorFlow profiler (`stop()` reads the trace back): for a span no callable wraps, such
    as one epoch of `fit` between two callbacks."""
    import tensorflow as tf

    _STARTED["logdir"] = tempfile.mkdtemp(prefix="nli_zoo_profile_")
    tf.profiler.experimental.start(_STARTED["logdir"])
    _STARTED["at"] = time.perf_counter()


def stop():
    """Stops the profiler `start()` started; returns `(wall seconds, ops)` as `profile`."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    wall = time.perf_counter() - _STARTED["at"]
    tf.profiler.experimental.stop()
    logdir = _STARTED.pop("logdir")
    space = xplane_pb2.XSpace()
    with open(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0], "rb") as f:
        space.ParseFromString(f.read())
    shutil.rmtree(logdir, ignore_errors=True)
    ops = []
    for plane in space.planes:
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" not in name or "::" in name:  # executor bookkeeping, not an op
                    continue
                path, op_type = name.rsplit(":", 1)
                ops.append((path, op_type, event.duration_ps / 1e12))
    return wall, ops
