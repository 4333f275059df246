"""`DirectoryLock`: one writer per folder (a run directory, an export target), and `LockedError`.

A second process is refused with one line naming the holder; a lock left by a dead process on this host is
taken over.
"""

import contextlib
import datetime
import errno
import json
import logging
import os
import secrets
import shlex
import sys
import time

from zoo.fileio.atomic import host, pid_alive

logger = logging.getLogger(__name__)

try:
    import fcntl
except ImportError:  # Windows: the lock relies on the lock file and the holder's PID alone
    fcntl = None

LOCK_NAME = ".lock"


class LockedError(RuntimeError):
    """Another process holds the lock of a folder; the message names it (PID, host, since when, command)
    and says how to proceed. `holder` is the lock file's content (a dict, possibly empty)."""

    def __init__(self, message, holder=None, lock_path=None):
        super().__init__(message)
        self.holder = dict(holder or {})
        self.lock_path = lock_path


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

    A folder that is replaced whole (a TFLite export, renamed into place) cannot hold its own lock: give
    `lock_file` beside it (`sibling_lock_file(folder)`); the folder itself is then neither needed nor created.

    Args:
        directory: the folder.
        what: what the folder is, for messages (`"run directory"`, `"export folder"`).
        lock_file: where the lock file lives (default `DIRECTORY/.lock`).

    Raises (acquire):
        LockedError: another live process holds the lock.
        NotADirectoryError: `directory` is a file.
    """

    def __init__(self, directory, what="run directory", lock_file=None):
        self.directory = os.path.abspath(os.fspath(directory))
        self.what = what
        self.path = os.path.abspath(os.fspath(lock_file)) if lock_file else os.path.join(self.directory, LOCK_NAME)
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
        return {"pid": os.getpid(), "host": host(),
                "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "command": shlex.join([os.path.basename(sys.executable)] + sys.argv)[:500]}

    def acquire(self):
        """Takes the lock (see the class docstring); returns self."""
        if self._fd is not None:
            return self
        if os.path.exists(self.directory) and not os.path.isdir(self.directory):
            raise NotADirectoryError(f"{self.directory} is a file: the {self.what} must be a folder "
                                     f"(choose another path or move the file away)")
        for _ in range(50):  # each pass either wins, refuses, or saw the lock change under it
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileNotFoundError:  # the folder was removed meanwhile (an emptied export folder): again
                continue
            except FileExistsError:
                if self._take_over_if_stale():
                    return self
                continue
            if self._flock(fd) is False:  # a process taking over a "stale" lock got our fresh file first
                os.close(fd)
                continue
            self._write(fd)
            self._fd = fd
            logger.debug(f"holding the lock of the {self.what} {self.directory} ({self.path})")
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
            logger.debug(f"released the lock of the {self.what} {self.directory}")

    def live_holder(self):
        """The record of the live process holding this lock now, or None: looked at without taking the lock (a
        shared flock tried and released at once). This process is never the holder it reports (another of its
        own `DirectoryLock`s on the folder, e.g. an export reading a run under that run's lock): a file that
        does not match while it holds the lock is damaged, not being written."""
        if self._fd is not None:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            holder = self._read_holder(fd, tries=2) or {}
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError as e:
                    if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        return None if _ours(holder) else holder
                else:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    return None
            pid = holder.get("pid")
            same_host = holder.get("host") in (None, host())
            return holder if isinstance(pid, int) and (not same_host or pid_alive(pid)) and not _ours(holder) else None
        finally:
            os.close(fd)

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

    def _read_holder(self, fd, tries=20):
        """The holder's record, or None while it is being written (a brand-new lock file)."""
        for _ in range(tries):
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
            if holder.get("host") not in (None, host()):
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
            logger.warning(f"took over the lock of the {self.what} {self.directory}: its holder "
                           f"{describe_holder(holder)} no longer runs")
            return True
        finally:
            if not keep:
                os.close(fd)

    def _refusal(self, holder, other_host=False):
        if other_host:
            hint = (f"it cannot be checked from {host()}: wait for it to finish, or, if it no longer runs there, "
                    f"delete {self.path}")
        else:
            hint = (f"wait for it to finish, stop it, or use another {self.what}; if no such process runs, "
                    f"delete {self.path}")
        return LockedError(f"the {self.what} {self.directory} is in use by {describe_holder(holder)}: {hint}",
                           holder, self.path)


def _ours(holder):
    """Whether a lock's holder is this process."""
    return holder.get("pid") == os.getpid() and holder.get("host") in (None, host())


def describe_holder(holder):
    """`PID 12 on HOST since TIME (python export.py ...)` of a lock's holder (`LockedError.holder`)."""
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


def sibling_lock_file(folder):
    """The lock file of a folder that is replaced whole: `.NAME.lock` beside it (`DirectoryLock(lock_file=...)`)."""
    folder = os.path.abspath(os.fspath(folder))
    parent, name = os.path.split(folder.rstrip(os.sep))
    return os.path.join(parent, f".{name}.lock")
