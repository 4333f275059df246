"""One validator per kind of value a user gives: every command and every settings section checks a value of
one kind the same way, before anything is written and before TensorFlow is imported.

Each validator takes the value and the name to blame (a flag such as `--batch-size`, or a setting such as
`batch_size`) and returns the value, converted, or raises `zoo.errors.ConfigError` with one line naming it:

| kind | validator | accepts |
|---|---|---|
| a count of things (examples, epochs, trials) | `count` | a whole number >= 1 (>= 0 with `zero=True`) |
| a batch size | `batch_size` | a whole number from 1 to `MAX_BATCH_SIZE` |
| a seed | `seed` | a whole number from 0 to `MAX_SEED` |
| a real number (rates, norms) | `number` | a finite number > 0 (>= 0 with `zero=True`) |
| a fraction (dropout, betas) | `fraction` | a number in [0, 1) |
| one of a few words | `choice` | one of `choices` |
| a path to read | `path_to_read` | an existing file or folder (`want="file"` / `"folder"`) |
| a path to write | `path_to_write` | a file or folder that can be created or replaced here |
| a report's path | `report_path` | a file, or a folder to write the report's default name into |
| a port | `port` | a whole number from 1 to 65535 |

The command lines turn one into an argparse `type=` that reads the text first (`"3"` -> 3):
`zoo.commands.parsing.flag` (argparse stays in `zoo/commands/`).
"""

import errno
import math
import os
import tempfile

from zoo.errors import ConfigError

MAX_SEED = 2**32 - 1          # numpy's and TensorFlow's seeds
MAX_BATCH_SIZE = 2**16        # larger than any paper or accelerator uses; beyond it the tensors of one batch of
                              # long pairs exceed a machine's memory and TensorFlow aborts the process


def _fail(name, text):
    raise ConfigError(f"{name} {text}" if name else text)


def is_number(value):
    """A finite int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def whole(value, name=None, minimum=1, maximum=None):
    """A whole number in [minimum, maximum] (a float with no fraction is taken: JSON's `3.0`), as an int."""
    ok = is_number(value) and float(value).is_integer() and value >= minimum and (maximum is None or value <= maximum)
    if not ok:
        bounds = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum:,}"
        _fail(name, f"must be a whole number {bounds}, got {value!r}")
    return int(value)


def count(value, name=None, zero=False):
    """A count of things: a whole number >= 1 (>= 0 with `zero`)."""
    return whole(value, name, minimum=0 if zero else 1)


def batch_size(value, name=None):
    """A batch size: a whole number from 1 to `MAX_BATCH_SIZE` (checked before TensorFlow allocates)."""
    return whole(value, name, minimum=1, maximum=MAX_BATCH_SIZE)


def seed(value, name=None):
    """A random seed: a whole number from 0 to `MAX_SEED`."""
    return whole(value, name, minimum=0, maximum=MAX_SEED)


def number(value, name=None, zero=False):
    """A finite number > 0 (>= 0 with `zero`)."""
    if not (is_number(value) and (value >= 0 if zero else value > 0)):
        _fail(name, f"must be a number {'>= 0' if zero else '> 0'}, got {value!r}")
    return value


def fraction(value, name=None):
    """A number in [0, 1) (dropout, Adam's betas)."""
    if not (is_number(value) and 0 <= value < 1):
        _fail(name, f"must be a number in [0, 1), got {value!r}")
    return value


def choice(value, name=None, choices=()):
    """One of `choices` (strings compared as given)."""
    if value not in choices:
        _fail(name, f"must be one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def path_to_read(value, name=None, want=None):
    """An existing path: any (`want=None`), a file (`"file"`) or a folder (`"folder"`)."""
    path = os.fspath(value)
    if not os.path.exists(path):
        _fail(name, f"{path}: no such {want or 'file or folder'}")
    if want == "file" and os.path.isdir(path):
        _fail(name, f"{path} is a folder; name a file")
    if want == "folder" and not os.path.isdir(path):
        _fail(name, f"{path} is a file; name a folder")
    if not os.access(path, os.R_OK):
        _fail(name, f"{path} cannot be read (permission denied)")
    return path


def path_to_write(value, name=None, want="file"):
    """A path this process can create or replace: a file (`want="file"`) or a folder (`"folder"`).

    Nothing is left behind: where the path does not exist, its nearest existing folder is tried with a
    temporary folder, removed at once (so a read-only disk, a full one or a system folder such as `/proc`
    is named now, not after the work is done).
    """
    path = os.fspath(value)
    if not path:
        _fail(name, "must name a path")
    if os.path.exists(path):
        if want == "file" and os.path.isdir(path):
            _fail(name, f"{path} is a folder; name a file")
        if want == "folder" and not os.path.isdir(path):
            _fail(name, f"{path} is a file; name a folder")
        target = path if want == "folder" else (os.path.dirname(os.path.abspath(path)))
        if not os.access(target, os.W_OK) or (want == "file" and not os.access(path, os.W_OK)):
            _fail(name, f"{path} cannot be written (permission denied)")
        return path
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        _fail(name, f"{path}: {parent} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".nli-zoo-probe-", dir=parent))
    except OSError as error:
        why = {errno.EROFS: "is on a read-only file system", errno.ENOSPC: "is on a full disk",
               errno.EACCES: "cannot be written (permission denied)",
               errno.EPERM: "cannot be written (permission denied)"}.get(error.errno, "does not take new files")
        _fail(name, f"{path} cannot be created: {parent} {why}")
    return path


def report_path(value, name=None):
    """A report's path: a file, or a folder (existing, or named with a trailing `/`) to write the report into
    under its default name (`report_file`). Returns the path as given."""
    path = os.fspath(value)
    folder = os.path.isdir(path) or path.endswith(("/", os.sep))
    path_to_write(path, name, want="folder" if folder else "file")
    return path


def report_file(path, default_name):
    """The file a report named `path` (by `report_path`) is written to: `path`, or `path/default_name` when
    `path` is a folder."""
    path = os.fspath(path)
    return os.path.join(path, default_name) if os.path.isdir(path) or path.endswith(("/", os.sep)) else path


def port(value, name=None):
    """A TCP port: a whole number from 1 to 65535."""
    return whole(value, name, minimum=1, maximum=65535)
