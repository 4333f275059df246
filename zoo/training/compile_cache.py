"""A persistent compilation cache, so that a rerun of the same training pays XLA's compilations once.

- TensorFlow: XLA executables of `jit_compile` steps go to `--tf_xla_persistent_cache_directory`, a flag
  read from `TF_XLA_FLAGS` when TensorFlow starts: `enable(directory)` must run before TensorFlow is
  imported (`train.py` does it first thing).
- JAX: `jax_compilation_cache_dir`, with the minimum compile time and entry size set to 0 so that every
  step's executable is kept.
Tracing is not cached by either: a new process still traces each batch shape once (seconds), which is
why the batch shapes are few (`zoo.data.batching`).

Nothing is created here: the backend makes the folder when it first keeps an executable, so a run that
compiles nothing (on a CPU without `--jit-compile true`) leaves no cache folder. The folder is checked
first: a `--compile-cache` that cannot be made (`/proc/x`, a read-only disk) is refused in one line before
the run starts; the default folder, when it cannot be made (no home folder, a read-only one), turns the cache
off (`UNAVAILABLE` says why, and training says it in one line when it compiles).
"""

import os

from zoo.errors import ConfigError
from zoo.settings import values

DEFAULT_SUBDIR = "xla"


def default_directory():
    """`$NLI_ZOO_CACHE/xla`, else `$XDG_CACHE_HOME/nli-zoo/xla`, else `~/.cache/nli-zoo/xla`."""
    root = os.environ.get("NLI_ZOO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nli-zoo")
    return os.path.join(root, DEFAULT_SUBDIR)


UNAVAILABLE = {}  # {"directory": ..., "why": ...} when the default folder cannot be made: the cache is off


def enable(directory=None, backend=None):
    """Turns the persistent compilation cache of the backend on (the folder is made when first used).

    Args:
        directory: the cache directory (default `default_directory()`); `"none"` turns nothing on.
        backend: `"tensorflow"`, `"jax"` or None (both: the TensorFlow flag and, if JAX is imported or the
            Keras backend is JAX, JAX's option).

    Returns:
        the directory used, or None.

    Raises:
        ConfigError: a `directory` given that cannot be made or written (one line naming `--compile-cache`;
            `train.py` checks it earlier, with every flag: `zoo.training.config.RunConfig`).
    """
    UNAVAILABLE.clear()
    if directory == "none":
        return None
    given = directory is not None
    directory = os.path.abspath(os.path.expanduser(directory or default_directory()))
    try:
        values.path_to_write(directory, "--compile-cache", want="folder")
    except ConfigError as error:
        if given:
            raise ConfigError(f"{error}: give another --compile-cache, or 'none'") from None
        UNAVAILABLE.update(directory=directory, why=str(error).replace("--compile-cache ", "", 1))
        return None
    if backend in (None, "tensorflow"):
        flag = f"--tf_xla_persistent_cache_directory={directory}"
        flags = os.environ.get("TF_XLA_FLAGS", "")
        if "--tf_xla_persistent_cache_directory" not in flags:
            os.environ["TF_XLA_FLAGS"] = f"{flags} {flag}".strip()
    if backend == "jax" or (backend is None and os.environ.get("KERAS_BACKEND") == "jax"):
        import jax  # deferred: an optional backend, imported only when Keras runs on JAX

        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return directory
