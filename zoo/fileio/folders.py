"""A folder written whole: built under a temporary name beside its target, then renamed into place.

- `staging_folder(target)`: the temporary folder to build in (`.NAME.tmp-PID-RANDOM` beside `target`).
- `publish_folder(staged, target, overwrite)`: renames the finished folder onto `target`. A folder that
  exists is swapped with the new one in one step where the system can (`exchange`: Linux
  `renameat2(RENAME_EXCHANGE)`), then removed; elsewhere it is first renamed aside (`.NAME.old-PID-RANDOM`),
  the new one renamed in, then the old one removed. A kill leaves the old folder or the new one, whole,
  never a mixture of both (and with the exchange, never no folder at all).
- `recover_folder(target)`: what the next writer does first, under the target's lock: an old folder left
  aside by a killed writer is put back where the new one never arrived (removed where it did), and the
  staging folders of dead processes are removed.
"""

import ctypes
import errno
import os
import re
import secrets
import sys

from zoo.fileio.atomic import clean_stale_temporaries, fsync_directory, fsync_tree, pid_alive, remove, temporary_name
from zoo.fileio.faults import fault_point


def _split(target):
    return os.path.split(os.path.abspath(os.fspath(target)).rstrip(os.sep))


def staging_folder(target):
    """A new, empty folder beside `target` to build it in (`.NAME.tmp-PID-RANDOM`)."""
    path = temporary_name(os.path.join(*_split(target)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mkdir(path)
    return path


def exchange(a, b):
    """Swaps the folders `a` and `b` in one step (Linux `renameat2(RENAME_EXCHANGE)`); False where the
    system or the file system cannot (then nothing happened)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28+
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), b)


def publish_folder(staged, target, overwrite=False, fault_step=None):
    """Renames the finished folder `staged` onto `target`, whole.

    Args:
        staged: the finished folder (from `staging_folder`).
        target: where it goes; an empty folder there is simply replaced.
        overwrite: replace a `target` that holds something (else `FileExistsError`).
        fault_step: the name prefix of the kill hooks between the renames (`zoo.fileio.faults`).

    Raises:
        FileExistsError: `target` holds something and `overwrite` is off (`staged` is left to the caller).
    """
    parent, name = _split(target)
    target = os.path.join(parent, name)
    fsync_tree(staged)
    occupied = os.path.isdir(target) and bool(os.listdir(target)) or (os.path.lexists(target)
                                                                       and not os.path.isdir(target))
    if not occupied:
        os.replace(staged, target)
        fsync_directory(parent)
        return target
    if not overwrite:
        raise FileExistsError(f"{target} already exists")
    if exchange(staged, target):  # the new folder in, the old one at `staged`, in one step
        fsync_directory(parent)
        if fault_step:
            fault_point(f"{fault_step}:exchanged")
        remove(staged)
        return target
    old = os.path.join(parent, f".{name}.old-{os.getpid()}-{secrets.token_hex(3)}")
    os.rename(target, old)
    fsync_directory(parent)
    if fault_step:
        fault_point(f"{fault_step}:old-moved-aside")
    os.rename(staged, target)
    fsync_directory(parent)
    if fault_step:
        fault_point(f"{fault_step}:new-moved-in")
    remove(old)
    return target


def recover_folder(target, on_notice=None):
    """Repairs what a killed `publish_folder` left (call it under the target's lock, before writing).

    An old folder set aside by a dead process is renamed back onto `target` when the new one never arrived,
    and removed when it did; the staging folders of dead processes are removed (after an exchange, the old
    folder is the staging folder).

    Args:
        target: the folder.
        on_notice: called with one line per repair (e.g. to print it).

    Returns:
        the number of repairs.
    """
    parent, name = _split(target)
    target = os.path.join(parent, name)
    notice = on_notice or (lambda line: None)
    old = re.compile(re.escape(f".{name}.old-") + r"(\d+)-")
    repairs = 0
    try:
        names = sorted(os.listdir(parent))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in names:
        match = old.match(entry)
        if not match or pid_alive(int(match.group(1))) and int(match.group(1)) != os.getpid():
            continue
        path = os.path.join(parent, entry)
        if not os.path.lexists(target) or (os.path.isdir(target) and not os.listdir(target)):
            os.replace(path, target)
            notice(f"put back {target} from {path}: the export that was replacing it was interrupted")
        else:
            remove(path)
            notice(f"removed {path}, the previous {name} an interrupted export had replaced")
        repairs += 1
    repairs += clean_stale_temporaries(parent, prefix=f".{name}.tmp-", on_remove=lambda p: notice(
        f"removed {p}, left by an interrupted export"))
    return repairs
