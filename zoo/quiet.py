"""TensorFlow, Keras and LiteRT started without their notices on the terminal.

TensorFlow 2.21 writes informational lines straight to file descriptor 2 from C++, where Python's logging
cannot reach them: while it is imported (absl's "All log messages before absl::InitializeLog()" notice,
oneDNN's and the CPU instructions' notices, "Could not find cuda drivers", twice, since two of its libraries
carry the logging code) and later, once per process, two lines at error level that are not errors:
"failed call to cuInit" when it looks for a GPU on a machine without one, and "oneDNN supports DT_BOOL only
on platforms with AVX-512" the first time a graph holds a boolean op (the masks; Eigen's kernel runs
instead, with the same results). LiteRT adds "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.".
`TF_CPP_MIN_LOG_LEVEL=3` would hide the error-level ones, and real errors with them, so instead exactly those
lines (`noise_pattern`) are dropped where they are printed:

- `import_tensorflow()` / `import_backend()` (the library: `zoo.load`, `zoo.create_model`,
  `zoo.from_preset`, `zoo.predictors`) import TensorFlow and look for its devices (where cuInit is called)
  with descriptor 2 captured, then write back every other line;
- `quieted()` does the same around any block (the first LiteRT interpreter);
- `filter_stderr()` (the command lines, `zoo.commands`) passes the process's whole stderr through a small
  filter process for the rest of its life, so that the lines printed later, from a running step, are
  dropped too. A terminal stays a terminal (a pseudo-terminal in between); where stdout goes to the same
  terminal or file it takes the same way, so the two keep their order; the filter outlives a crash of the
  command, so nothing else is lost or held back.

The cuInit line is dropped only where no NVIDIA device node exists (`/dev/nvidiactl`, `/dev/nvidia0`,
`/dev/dxg` under WSL): on a machine with a GPU it reports a broken driver. `TF_CPP_MIN_LOG_LEVEL=0`
turns every filter off.

Where it starts TensorFlow (`import_tensorflow`) it also sets its thread layout on a CPU (`apply_thread_layout`,
below). Floor 0: nothing of the zoo is imported here.
"""

import atexit
import contextlib
import os
import re
import signal
import sys
import tempfile
import time

_INFO = r"I\d{4} \S+ +\d+ \S+:\d+\] .*"
_STARTUP = (r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR",
            r"To enable the following instructions:.*")
_CPU_ONLY = r"E\d{4} \S+ +\d+ cuda_platform\.cc:\d+\] failed call to cuInit: .*"
_NOT_ERRORS = (r"E\d{4} \S+ +\d+ util\.cc:\d+\] oneDNN supports DT_\w+ only on platforms with AVX-512\..*",
               r"INFO: Created TensorFlow Lite XNNPACK delegate for CPU\.")
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg")


def has_gpu_device():
    """Whether this machine shows an NVIDIA device node (a GPU TensorFlow could use)."""
    return any(os.path.exists(path) for path in GPU_DEVICE_NODES)


def noise_pattern(gpu=None, also=()):
    """The compiled pattern of the lines dropped (whole lines, without their newline): TensorFlow's, CUDA's
    and LiteRT's notices (none with `TF_CPP_MIN_LOG_LEVEL=0`), and the regular expressions `also`."""
    gpu = has_gpu_device() if gpu is None else gpu
    lines = ([_INFO, *_STARTUP, *_NOT_ERRORS] + ([] if gpu else [_CPU_ONLY]) if filtering() else []) + list(also)
    return re.compile("^(?:" + "|".join(lines or ["(?!)"]) + ")$")


# What a line being written may turn out to be: held back until its newline only then (else passed at once,
# so that a progress bar redrawn with "\r" shows as it is drawn).
_MAYBE_NOISE = re.compile(r"^(?:[IE]\d{0,4}(?: .*)?|[WT]|WA.*|To.*|IN.*)$", re.S)


def filtering():
    """Whether lines are filtered at all (not with `TF_CPP_MIN_LOG_LEVEL=0`, which asks to see everything)."""
    return os.environ.get("TF_CPP_MIN_LOG_LEVEL") != "0"


def quiet_environment():
    """TensorFlow's C++ logging at level 2 (warnings hidden, errors shown) unless the user set a level;
    absl's own level follows it, so that a user's `TF_CPP_MIN_LOG_LEVEL=3` still hides errors. gRPC's
    verbosity is left alone: `GRPC_VERBOSITY=ERROR` makes gRPC print the coordination service's errors
    (several lines for one failed cluster start) that TensorFlow already reports as one error."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("GLOG_minloglevel", os.environ["TF_CPP_MIN_LOG_LEVEL"])


@contextlib.contextmanager
def quieted(also=()):
    """Runs the block with descriptor 2 captured, then writes back every line but the notices
    (`noise_pattern`) and those of the regular expressions `also` (a line a caller says in its own words)."""
    if not filtering() and not also:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real descriptor 2 (embedded interpreters)
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            noise = noise_pattern(also=also)
            lines = captured.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not noise.match(line.rstrip("\r\n")))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


def import_tensorflow():
    """Imports TensorFlow (once) and lets it look for its devices, its notices filtered out of stderr, then
    sets its thread layout on a CPU (`apply_thread_layout`).

    Listing the physical devices runs TensorFlow's one search for a GPU (the cuInit call) inside the filter;
    it does not start the runtime, so logical devices, thread pools and distribution strategies can still
    be set up."""
    quiet_environment()
    if _LAID_OUT:
        return
    with quieted():  # TensorFlow may be imported already (a module of the caller's), its runtime not started
        import tensorflow as tf

        gpu = bool(tf.config.list_physical_devices("GPU"))
    apply_thread_layout(tf, gpu)
    _LAID_OUT.append(True)


_LAID_OUT = []  # import_tensorflow ran in this process


def start_runtime():
    """Runs one tiny graph with a boolean op inside the filter, so that TensorFlow's once-per-process notice
    about such ops (oneDNN's "DT_BOOL only on platforms with AVX-512") is printed, and dropped, here rather
    than at a model's first step. For the library's entry points that are about to run a model
    (`zoo.load`, `zoo.from_preset`, `open_predictor`): it starts TensorFlow's runtime, after which
    logical devices and distribution strategies can no longer be configured, so training does not call it
    (the command lines' filter drops the notice there)."""
    import_tensorflow()
    if _STARTED or _FILTER:  # a command line's filter drops the notice wherever it comes
        return
    import tensorflow as tf

    with quieted():
        tf.function(tf.transpose)(tf.constant([[True, False]]))
    _STARTED.append(True)


_STARTED = []


def import_backend():
    """Imports Keras and its backend with their notices filtered (TensorFlow first, where it is the backend)."""
    quiet_environment()
    if "keras" in sys.modules:
        return
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend == "tensorflow":
        import_tensorflow()
    with quieted():
        import keras  # noqa: F401


# TensorFlow's thread layout on a CPU ------------------------------------------------------------------------
# TensorFlow splits each op over a pool of intra-op threads and runs independent ops side by side on its
# inter-op threads, one of each per core by default. The zoo's recurrent loops are many small products, step
# by step: splitting each one over every core costs about what the extra cores bring, while independent work
# (the premises' and the hypotheses' loops of a batch, a bi-LSTM's two directions, the forward products of
# the two sentences) can run side by side. So on a CPU the zoo gives the intra-op pool half the cores
# (`intra_op_threads`) and leaves the inter-op pool at TensorFlow's default (every core): on 2 cores, one
# intra-op thread and two inter-op threads. `scripts/benchmark_training.py` and `benchmark_serving.py` measure
# it against TensorFlow's own layout (`TF_NUM_INTRAOP_THREADS` set to every core); the records under results/
# and docs/speed.md, "Threads", say on which machines it paid.
#
# The user's setting wins: `TF_NUM_INTRAOP_THREADS` in the environment, or
# `tf.config.threading.set_intra_op_parallelism_threads` called before the zoo starts TensorFlow; with a GPU
# nothing is changed.


def cpu_cores():
    """The cores this process may run on (its affinity, where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def intra_op_threads(cores):
    """The zoo's intra-op pool on `cores` cores: half of them, at least one."""
    return max(1, cores // 2)


def apply_thread_layout(tf, gpu):
    """Sets TensorFlow's (`tf`, imported, its runtime not started) intra-op pool to `intra_op_threads`, unless
    `gpu` or the user chose a pool size. Returns the size set, or None where nothing was changed."""
    if gpu or os.environ.get("TF_NUM_INTRAOP_THREADS") or tf.config.threading.get_intra_op_parallelism_threads():
        return None
    threads = intra_op_threads(cpu_cores())
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime started already (the caller ran TensorFlow first): its pools stay
        return None
    return threads


def describe_thread_layout(tf):
    """TensorFlow's pools as this process sets them, e.g. `1 intra-op, 2 inter-op` (a size left to TensorFlow
    is its environment variable's, else one per core)."""
    cores = cpu_cores()
    sizes = []
    for kind, configured, variable in (("intra-op", tf.config.threading.get_intra_op_parallelism_threads(),
                                        "TF_NUM_INTRAOP_THREADS"),
                                       ("inter-op", tf.config.threading.get_inter_op_parallelism_threads(),
                                        "TF_NUM_INTEROP_THREADS")):
        chosen = os.environ.get(variable, "")
        sizes.append(f"{configured or (int(chosen) if chosen.isdigit() and int(chosen) > 0 else cores)} {kind}")
    return ", ".join(sizes)


# The command lines' filter ---------------------------------------------------------------------------------
_FILTER = {}


def filter_stderr():
    """Passes this process's stderr (descriptor 2, and so `sys.stderr`) through a filter process that drops
    the notices (`noise_pattern`), until the process ends. For a command-line process, called before TensorFlow starts;
    a second call does nothing. Not on a platform without `fork` or with `TF_CPP_MIN_LOG_LEVEL=0`."""
    if _FILTER or not filtering() or not hasattr(os, "fork"):
        return
    try:
        sys.stderr.flush()
        target = os.dup(2)
    except (OSError, ValueError, AttributeError):
        return
    terminal = os.isatty(target)
    if terminal:  # the command keeps writing to a terminal: progress bars redraw, widths are read
        import pty
        import tty

        reader, writer = pty.openpty()
        tty.setraw(writer)
        _copy_window_size(target, writer)
    else:
        reader, writer = os.pipe()
    # The command's end, however it comes (exit, crash, kill), closes this pipe: the filter then writes
    # what is left and stops. (It keeps a terminal's writer open itself: a pseudo-terminal whose writers
    # have all closed drops what was not read yet.)
    alive, alive_writer = os.pipe()
    noise = noise_pattern()
    pid = os.fork()
    if pid == 0:
        try:
            # Ctrl-C, Ctrl-\, a closed terminal, a kill of the process group are for the command: the filter
            # stops when the command has gone, after passing its last lines
            for name in ("SIGINT", "SIGQUIT", "SIGHUP", "SIGTERM"):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
            keep = sorted({reader, target, alive} | ({writer} if terminal else set()))
            for low, high in zip([-1] + keep, keep + [1 << 16]):
                os.closerange(low + 1, high)
            _pump(reader, alive, target, noise)
        finally:
            os._exit(0)
    os.close(reader)
    os.close(alive)
    if _same_file(1, target):  # stdout and stderr on one terminal or file: one channel keeps their order
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        _FILTER["stdout"] = os.dup(1)
        os.dup2(writer, 1)
    os.dup2(writer, 2)
    os.close(writer)
    _FILTER.update(pid=pid, target=target, alive=alive_writer)
    atexit.register(_stop_filter)


def _same_file(a, b):
    try:
        return os.path.sameopenfile(a, b)
    except OSError:
        return False


def _copy_window_size(source, target):
    import fcntl
    import termios

    try:
        size = fcntl.ioctl(source, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(target, termios.TIOCSWINSZ, size)
    except OSError:
        pass


def _stop_filter(timeout=2.0):
    """At exit: descriptors 1 and 2 back to where they were, then waits for the filter to write what it
    holds, so that the command's last lines come before the shell's prompt."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    if "stdout" in _FILTER:
        os.dup2(_FILTER["stdout"], 1)
    os.dup2(_FILTER["target"], 2)
    os.close(_FILTER["alive"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(_FILTER["pid"], os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.005)


def _pump(reader, alive, target, noise):
    """Copies `reader` to `target` until `alive` closes, dropping whole lines that `noise` matches; a line
    that cannot be noise is passed as its bytes arrive."""
    import select

    state = {"held": b"", "passing": False}
    poller = select.poll()
    poller.register(reader, select.POLLIN)
    poller.register(alive, select.POLLIN)
    reading = True
    while True:
        ready = {fd for fd, _ in poller.poll()}
        if reading and reader in ready:
            if _copy(reader, target, noise, state):
                continue
            # Every writer has closed (descriptor 2 was pointed elsewhere): nothing more can come, and the
            # reader would now be ready at every poll, a loop at full speed; wait for the command's end alone.
            poller.unregister(reader)
            reading = False
        if alive in ready:  # the command has ended: what it wrote is all in the buffer now
            os.set_blocking(reader, False)
            while _copy(reader, target, noise, state):
                pass
            _write(target, state["held"])
            return


def _copy(reader, target, noise, state):
    """Reads what is there and writes what passes; False at the end of the input (or nothing left)."""
    try:
        chunk = os.read(reader, 65536)
    except (BlockingIOError, OSError):  # nothing left; or a pseudo-terminal without writers
        return False
    if not chunk:
        return False
    held, out = state["held"] + chunk, []
    while held:
        end = held.find(b"\n")
        if state["passing"]:
            cut = len(held) if end < 0 else end + 1
            out.append(held[:cut])
            held, state["passing"] = held[cut:], end < 0
            continue
        if end < 0:
            if not _MAYBE_NOISE.match(held.decode("utf-8", errors="replace")):
                out.append(held)
                held, state["passing"] = b"", True
            break
        line, held = held[:end + 1], held[end + 1:]
        if not noise.match(line.decode("utf-8", errors="replace").rstrip("\r\n")):
            out.append(line)
    state["held"] = held
    _write(target, b"".join(out))
    return True


def _write(fd, data):
    while data:
        try:
            data = data[os.write(fd, data):]
        except OSError:  # the terminal went away: nothing left to write to
            return
