"""The machine's own faults while writing, as one line: a full disk, a read-only one, a folder this user may
not write, a path through a file. Each is named with the path and what to free or change.

Every command line turns such an error (an `OSError`, or the error of a library that writes by path: h5py,
TensorFlow) into one line with `describe_fault` and exits with status 2; nothing written before is lost,
since every file of the zoo is written under a temporary name and renamed (`zoo.fileio.atomic`).

```python
try:
    write_json("runs/esim/results.json", results)
except OSError as error:
    line = describe_fault(error, hint="train in another --run-dir")  # None: not a fault of the machine
```
"""

import errno
import os
import re
import shutil

# The faults of the machine, by errno, and the words libraries that do not keep the errno put in messages.
FAULTS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
          errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "permission denied",
          errno.ENOTDIR: "a part of the path is a file"}
_WORDS = {"no space left on device": errno.ENOSPC, "disk quota exceeded": errno.EDQUOT,
          "read-only file system": errno.EROFS, "permission denied": errno.EACCES}
_PATH_IN_TEXT = (re.compile(r"name = '([^']+)'"), re.compile(r"[Ee]rrno \d+\][^:]*: '([^']+)'"),
                 re.compile(r"(?:file|directory|path)[: ]+'?(/[^\s',;)]+)"))


def fault_errno(error):
    """The errno of a machine fault behind `error` (see `FAULTS`), or None.

    An `OSError` carries it; h5py's and TensorFlow's errors say it in their text (`errno = 28`, "No space
    left on device"). A write into a folder that does not exist and cannot be made there (`/proc/x`)
    is not among them: the paths to write are checked before work starts (`zoo.settings.values`).
    """
    code = getattr(error, "errno", None)
    if code in FAULTS:
        return code
    text = str(error).lower()
    for words, code in _WORDS.items():
        if words in text:
            return code
    match = re.search(r"errno = (\d+)", text)
    if match and int(match.group(1)) in FAULTS:
        return int(match.group(1))
    return None


def fault_path(error):
    """The path a failed write names (an `OSError`'s `filename`, or the first path in a library's message)."""
    for name in (getattr(error, "filename", None), getattr(error, "filename2", None)):
        if name:
            return os.fspath(name)
    text = str(error)
    for pattern in _PATH_IN_TEXT:
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


def _existing_folder(path):
    folder = os.path.abspath(path)
    while folder and not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def _size(count):
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if count < 1000 or unit == "TB":
            return f"{count:,.0f} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1000
    return f"{count} bytes"


def describe_fault(error, path=None, hint=None, target=None):
    """One line for a machine fault behind `error`, or None when it is not one.

    Args:
        error: the exception.
        path: the file or folder being written (default: the one the error names).
        hint: where else the command can write (e.g. "train in another --run-dir"), said after the remedy.
        target: what the command writes (its --out, --output, --run-dir), named when the error names no path
            (a full disk fails `write()`, whose error carries no file name): its device is the full one, not
            the working folder's.

    Returns:
        e.g. "cannot write runs/esim/backup/epoch-3.weights.h5: no space left on the device of /data (12.0 MB
        free): free space there and rerun the same command (nothing written before is lost); or HINT".
    """
    code = fault_errno(error)
    if code is None:
        return None
    path = path or fault_path(error) or (os.fspath(target) if target else None) or "a file"
    folder = _existing_folder(os.path.dirname(os.path.abspath(path)) if path != "a file" else os.getcwd())
    rerun = "and rerun the same command (nothing written before is lost)"
    elsewhere = f"; or {hint}" if hint else ""
    if code in (errno.ENOSPC, errno.EDQUOT):
        try:
            free = f" ({_size(shutil.disk_usage(folder).free)} free)"
        except OSError:
            free = ""
        what = "no space left on the device of" if code == errno.ENOSPC else "the disk quota is used up in"
        return f"cannot write {path}: {what} {folder}{free}: free space there {rerun}{elsewhere}"
    if code == errno.EROFS:
        return f"cannot write {path}: {folder} is on a read-only file system: remount it writable {rerun}{elsewhere}"
    if code == errno.ENOTDIR:
        return f"{path}: a part of that path is a file, not a folder: move it away {rerun}{elsewhere}"
    if os.path.isdir(folder) and not os.access(folder, os.W_OK):
        return (f"cannot write {path}: {folder} is read-only for this user: make it writable (chmod u+w) "
                f"{rerun}{elsewhere}")
    return f"{path}: permission denied (in {folder}): give this user access there {rerun}{elsewhere}"
