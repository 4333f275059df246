"""Writing files so that a kill, a crash or a second process never leaves a half-written or shared one.

The lowest floor of the package: it imports only the standard library and numpy, so every layer (data,
runs, export) can use it.

- `atomic_write(path)`: write a file under a temporary name in the same folder, then rename it onto `path`;
  a kill at any moment leaves either the old file or the new one, never a truncated one.
- `atomic_path(path)`: the same for libraries that write by path themselves (Keras `save_weights`, a
  SavedModel export folder).
- `write_json` / `read_json`: JSON through `atomic_write`; a corrupt file raises `CorruptFileError`, one
  line naming the file and the line at fault.
- `DirectoryLock(directory)`: one writer per folder (a run directory, an export target); a second process
  is refused with one line naming the holder; a lock left by a dead process on this host is taken over.
- `allocate_version(model_dir)`: the next free integer version folder, safe against concurrent exports.
- `clean_stale_temporaries(folder)`: removes the temporaries of processes that no longer run.

Temporary names hold `.tmp-PID` (the writer's process id), so that `clean_stale_temporaries` can tell
the leftovers of a killed process (dead PID) from the work in progress of a live one.

Example:
```python
from zoo.fileio import DirectoryLock, atomic_path, atomic_write, read_json, write_json

with DirectoryLock("runs/esim"):                       # LockedError if another process writes there
    with atomic_path("runs/esim/best.weights.h5") as tmp:
        model.save_weights(tmp)                         # tmp ends in .weights.h5, as Keras requires
    write_json("runs/esim/results.json", {"test": 0.88})
```
"""

import contextlib
import datetime
import errno
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import sys
import time

try:
    import fcntl
except ImportError:  # Windows: the lock relies on the lock file and the holder's PID alone
    fcntl = None

LOCK_NAME = ".lock"
# `.tmp-PID` followed by the end of the name, a "-" (random part) or a "." (suffix kept for the writer).
_TEMPORARY = re.compile(r"\.tmp-(\d+)(?=$|[-.])")


class CorruptFileError(ValueError):
    """A file the zoo wrote earlier cannot be read back (invalid JSON, not UTF-8); the message is one line
    naming the file, the line at fault and what to do."""

    def __init__(self, message, path=None):
        super().__init__(message)
        self.path = path


class LockedError(RuntimeError):
    """Another process holds the lock of a folder; the message names it (PID, host, since when, command)
    and says how to proceed. `holder` is the lock file's content (a dict, possibly empty)."""

    def __init__(self, message, holder=None, lock_path=None):
        super().__init__(message)
        self.holder = dict(holder or {})
        self.lock_path = lock_path


# ------------------------------------------------------------------ atomic writes

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


def _fsync_directory(folder):
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


def _fsync_tree(path):
    """fsyncs a file, or every file of a folder and the folders themselves."""
    if os.path.isdir(path):
        for root, _, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError), open(os.path.join(root, name), "rb") as f:
                    os.fsync(f.fileno())
            _fsync_directory(root)
    elif os.path.exists(path):
        with open(path, "rb") as f:
            os.fsync(f.fileno())


def _remove(path):
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
        _remove(tmp)
        raise
    _fsync_directory(os.path.dirname(path))


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
        _fsync_tree(tmp)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    _fsync_directory(os.path.dirname(path))


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


def _host():
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
        _remove(path)
        if not os.path.lexists(path):
            removed += 1
            if on_remove is not None:
                on_remove(path)
    return removed


def allocate_version(model_dir):
    """Reserves the next integer version folder of `model_dir` (1, 2, ...): creates it, empty, with
    `os.mkdir`, which fails for every process but one, so two exports at once never get the same version.

    Returns:
        the version number; the folder `model_dir/VERSION` exists and is empty (fill it with `atomic_path`,
        which may replace an empty folder).
    """
    model_dir = os.fspath(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    version = 1 + max((int(n) for n in os.listdir(model_dir) if n.isdigit()), default=0)
    while True:
        try:
            os.mkdir(os.path.join(model_dir, str(version)))
            return version
        except FileExistsError:
            version += 1


# ------------------------------------------------------------------ one writer per folder

class DirectoryLock:
    """An exclusive lock for the one process that writes into a folder (a run directory, an export target).

    The lock is the file `DIRECTORY/.lock`, created with `O_CREAT | O_EXCL` (only one process can create
    it) and holding `{"pid", "host", "started", "command"}` of its holder, who also keeps an `flock` on it
    where the platform has one (released by the kernel when the holder dies, even by `kill -9`).

    A second process is refused with `LockedError`, one line naming the holder and how to proceed. A lock
    whose holder no longer runs on this host (its PID is gone, or nobody holds its flock) is taken over,
    with a notice on stderr. A lock held from another host is never taken over: its process cannot be
    checked from here.

    Use it as a context manager, or `acquire()` / `release()`. The folder is created if needed.

    Args:
        directory: the folder.
        what: what the folder is, for messages (`"run directory"`, `"export folder"`).

    Raises (acquire):
        LockedError: another live process holds the lock.
        NotADirectoryError: `directory` is a file.
    """

    def __init__(self, directory, what="run directory"):
        self.directory = os.path.abspath(os.fspath(directory))
        self.what = what
        self.path = os.path.join(self.directory, LOCK_NAME)
        self._fd = None

    @property
    def held(self):
        """Whether this object holds the lock."""
        return self._fd is not None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    def _info(self):
        return {"pid": os.getpid(), "host": _host(),
                "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "command": shlex.join([os.path.basename(sys.executable)] + sys.argv)[:500]}

    def acquire(self):
        """Takes the lock (see the class docstring); returns self."""
        if self._fd is not None:
            return self
        if os.path.exists(self.directory) and not os.path.isdir(self.directory):
            raise NotADirectoryError(f"{self.directory} is a file: the {self.what} must be a folder "
                                     f"(choose another path or move the file away)")
        os.makedirs(self.directory, exist_ok=True)
        for _ in range(50):  # each pass either wins, refuses, or saw the lock change under it
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                if self._take_over_if_stale():
                    return self
                continue
            if self._flock(fd) is False:  # a process taking over a "stale" lock got our fresh file first
                os.close(fd)
                continue
            self._write(fd)
            self._fd = fd
            return self
        raise LockedError(f"cannot take the lock {self.path}: it keeps changing (several processes competing "
                          f"for the {self.what}?); try again", {}, self.path)

    def release(self):
        """Releases the lock (removes the lock file); does nothing when it is not held."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(self.path, fd):
                os.remove(self.path)
        except OSError:
            pass
        finally:
            os.close(fd)  # releases the flock after the file is gone: a waiter then sees no lock at all

    # -- internals

    @staticmethod
    def _flock(fd):
        """Takes the flock of `fd` without waiting: True (taken), False (held by another open file), None
        (no flock here: Windows, or a file system without it)."""
        if fcntl is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            return None  # ENOLCK, EOPNOTSUPP, ...: rely on the lock file and the PID

    def _write(self, fd):
        data = (json.dumps(self._info()) + "\n").encode("utf-8")
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, data)
        os.fsync(fd)

    def _read_holder(self, fd):
        """The holder's record, or None while it is being written (a brand-new lock file)."""
        for _ in range(20):
            os.lseek(fd, 0, os.SEEK_SET)
            data = os.read(fd, 4096)
            try:
                holder = json.loads(data.decode("utf-8"))
                if isinstance(holder, dict) and "pid" in holder:
                    return holder
            except ValueError:
                pass
            time.sleep(0.05)
        return None

    def _take_over_if_stale(self):
        """Opens the existing lock file; takes it when its holder is gone (returns True), raises LockedError
        when it is held, returns False when the file vanished or changed meanwhile (try again)."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return False
        keep = False
        try:
            holder = self._read_holder(fd) or {}
            if not _same_file(self.path, fd):
                return False  # released (and maybe taken again) while we looked
            if holder.get("host") not in (None, _host()):
                raise self._refusal(holder, other_host=True)
            pid = holder.get("pid") if isinstance(holder.get("pid"), int) else None
            # The kernel drops a flock with the process that held it, even after kill -9: a free flock means
            # the holder is gone. (A brand-new lock file gets its flock before its record is written, and
            # _read_holder waited for the record.) Without flock, the holder's PID must be gone.
            taken = self._flock(fd)
            if taken is False or (taken is None and (pid is None or pid == os.getpid() or pid_alive(pid))):
                raise self._refusal(holder)
            if not _same_file(self.path, fd):
                return False
            if taken is None:  # no flock: move the stale file away and compete for a new one (O_EXCL)
                stale = f"{self.path}.stale-{os.getpid()}-{secrets.token_hex(3)}"
                with contextlib.suppress(FileNotFoundError):
                    os.rename(self.path, stale)
                    os.remove(stale)
                return False
            self._write(fd)
            self._fd, keep = fd, True
            print(f"[lock] took over the lock of the {self.what} {self.directory}: its holder "
                  f"{_describe(holder)} no longer runs", file=sys.stderr, flush=True)
            return True
        finally:
            if not keep:
                os.close(fd)

    def _refusal(self, holder, other_host=False):
        if other_host:
            hint = (f"it cannot be checked from {_host()}: wait for it to finish, or, if it no longer runs there, "
                    f"delete {self.path}")
        else:
            hint = (f"wait for it to finish, stop it, or use another {self.what}; if no such process runs, "
                    f"delete {self.path}")
        return LockedError(f"the {self.what} {self.directory} is in use by {_describe(holder)}: {hint}",
                           holder, self.path)


def _describe(holder):
    if not holder:
        return "another process (its lock file is unreadable)"
    text = f"PID {holder.get('pid', '?')} on {holder.get('host', '?')}"
    if holder.get("started"):
        text += f" since {holder['started']}"
    if holder.get("command"):
        text += f" ({holder['command'][:120]})"
    return text


def _same_file(path, fd):
    """Whether `path` still names the file open as `fd`."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(fd))
    except OSError:
        return False
