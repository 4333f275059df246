"""Atomic writes, JSON with one-line corrupt-file errors, and the clean-up of a killed writer's temporaries.

Temporary names hold `.tmp-PID` (the writer's process id), so that `clean_stale_temporaries` can tell the
leftovers of a killed process (dead PID) from the work in progress of a live one.
"""

import contextlib
import json
import os
import re
import secrets
import shutil
import socket

# `.tmp-PID` followed by the end of the name, a "-" (random part) or a "." (suffix kept for the writer).
_TEMPORARY = re.compile(r"\.tmp-(\d+)(?=$|[-.])")


class CorruptFileError(ValueError):
    """A file the zoo wrote earlier cannot be read back (invalid JSON, not UTF-8); the message is one line
    naming the file, the line at fault and what to do."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


def temporary_name(path, keep_suffix=False):
    """`.NAME.tmp-PID-RANDOM` in the folder of `path`; with `keep_suffix`, the part of the name from its
    first dot is kept at the end (`best.weights.h5` -> `.best.tmp-PID-RANDOM.weights.h5`)."""
    folder, base = os.path.split(os.path.abspath(os.fspath(path)))
    stem, suffix = base, ""
    if keep_suffix:
        cut = base.find(".", 1)  # a leading dot is part of the stem
        if cut > 0:
            stem, suffix = base[:cut], base[cut:]
    return os.path.join(folder, f".{stem.lstrip('.')}.tmp-{os.getpid()}-{secrets.token_hex(3)}{suffix}")


def fsync_directory(folder):
    """Makes a rename in `folder` durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_tree(path):
    """fsyncs a file, or every file of a folder and the folders themselves."""
    if os.path.isdir(path):
        for root, _, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError), open(os.path.join(root, name), "rb") as f:
                    os.fsync(f.fileno())
            fsync_directory(root)
    elif os.path.exists(path):
        with open(path, "rb") as f:
            os.fsync(f.fileno())


def remove(path):
    """Removes a file or a folder; a missing one is fine."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


@contextlib.contextmanager
def atomic_write(path, mode="wb", encoding=None):
    """Writes a file atomically: yields a file object open on a temporary name in the same folder; on
    success the data are flushed, fsync'd and the file renamed onto `path` (`os.replace`); on an exception
    the temporary file is removed and `path` is untouched.

    The new file gets the permissions of the file it replaces, else the usual ones (0666 less the umask),
    never the 0600 of `tempfile`.

    Args:
        path: the file to write.
        mode: `"wb"` (bytes) or `"w"` (text).
        encoding: text mode only (default UTF-8).

    Yields:
        the open file object.

    Raises:
        ValueError: another mode.
        OSError: the folder cannot be written.
    """
    if mode not in ("w", "wb", "wt"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = os.path.abspath(os.fspath(path))
    tmp = temporary_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)  # keep the permissions of the file replaced
        binary = "b" in mode
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": encoding or "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise
    fsync_directory(os.path.dirname(path))


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path in the folder of `path` for a library that writes by path itself; on success
    the file (or folder) written there is fsync'd and renamed onto `path`; on an exception it is removed.

    The temporary name keeps the suffix of `path` from its first dot, for libraries that check it:
    `best.weights.h5` -> `.best.tmp-PID-RANDOM.weights.h5` (Keras `save_weights` needs `.weights.h5`).
    A folder replaces `path` only when `path` does not exist or is an empty folder (e.g. one reserved by
    `allocate_version`).

    Raises:
        FileNotFoundError: nothing was written at the temporary path.
        OSError: `path` is a folder that is not empty.
    """
    path = os.path.abspath(os.fspath(path))
    tmp = temporary_name(path, keep_suffix=True)
    try:
        yield tmp
        if not os.path.lexists(tmp):
            raise FileNotFoundError(f"nothing was written to {tmp} (for {path})")
        fsync_tree(tmp)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise
    fsync_directory(os.path.dirname(path))


# ------------------------------------------------------------------ JSON

def write_json(path, value, indent=2):
    """Writes `value` as JSON to `path` atomically (see `atomic_write`), with a final newline."""
    with atomic_write(path, "w") as f:
        json.dump(value, f, indent=indent, ensure_ascii=False)
        f.write("\n")


def read_json(path, default=None, remedy=None):
    """Reads a JSON file.

    Args:
        path: the file.
        default: returned when the file does not exist.
        remedy: what the error message tells the user to do (default: delete the file or repair it).

    Raises:
        CorruptFileError: the file is not valid JSON or not UTF-8: one line,
            `"FILE: not valid JSON (line 3: Expecting ','): delete it or ..."`.
    """
    path = os.fspath(path)
    remedy = remedy or "delete it or repair it by hand"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return default
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CorruptFileError(f"{path}: not UTF-8 text (byte {e.start}): {remedy}", path) from None
    except json.JSONDecodeError as e:
        what = "empty file" if not data.strip() else f"line {e.lineno}: {e.msg}"
        raise CorruptFileError(f"{path}: not valid JSON ({what}): {remedy}", path) from None


# ------------------------------------------------------------------ processes

def pid_alive(pid):
    """Whether process `pid` runs on this host (True when it cannot be told, e.g. on Windows)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill would terminate the process there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def host():
    return socket.gethostname()


def clean_stale_temporaries(folder, on_remove=None, prefix=""):
    """Removes the temporaries (`*.tmp-PID*` files or folders) of processes that no longer run on this host.

    Temporaries of this process and of live processes are kept. Names are those of `atomic_write`,
    `atomic_path` and the vector cache's conversion folders (`NAME.tmp-PID`). The PID is checked on this
    host: in a folder shared by several hosts, pass a `prefix` that only this process's own work can have
    (e.g. under a lock that covers it).

    Args:
        folder: the folder to look in (not recursive); a missing folder counts 0.
        on_remove: called with each removed path (e.g. to print a notice).
        prefix: only names starting with it are considered.

    Returns:
        the number of temporaries removed.
    """
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    removed = 0
    for name in sorted(names):
        match = _TEMPORARY.search(name) if name.startswith(prefix) else None
        if not match:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or pid_alive(pid):
            continue
        path = os.path.join(folder, name)
        remove(path)
        if not os.path.lexists(path):
            removed += 1
            if on_remove is not None:
                on_remove(path)
    return removed
