"""Writing files so that a kill, a crash or a second process never leaves a half-written or shared one.

The lowest floor of the package: it imports only the standard library, so every layer (data, runs,
export) can use it. The modules, each re-exported here:

- `atomic`: `atomic_write(path)` writes a file under a temporary name in the same folder, then renames it
  onto `path` (a kill leaves the old file or the new one); `atomic_path(path)` the same for libraries that
  write by path themselves (Keras `save_weights`); `write_json` / `read_json` (a corrupt file raises
  `CorruptFileError`, one line naming the file and the line at fault); `clean_stale_temporaries(folder)`
  removes the temporaries of processes that no longer run (their names hold `.tmp-PID`).
- `lock`: `DirectoryLock(directory)`, one writer per folder (a run directory, an export target); a second
  process is refused with `LockedError`, one line naming the holder; a lock left by a dead process on this
  host is taken over.
- `versions`: TF Serving's numbered version folders, listed, picked and allocated in one place
  (`version_numbers`, `latest_version`, `allocate_version`, `remove_empty_versions`).
- `folders`: a folder written whole (`staging_folder`, `publish_folder`, `recover_folder`, `exchange`: two
  folders swapped in one step).
- `checksums`: a folder whose files belong together: their SHA-256 in a manifest written with each commit
  (`write_manifest`), checked when the folder is opened (`verify_files`: `ManifestError`, one line).
- `disk`: the machine's own faults (a full or read-only disk, a folder without permission) as one line
  naming the path and what to free or change (`describe_fault`).
- `faults`: `fault_point(step)`, the kill hook of the fault tests (`NLI_ZOO_FAULT_AT=STEP`).
- `cpu`: this machine's CPU and its id (`cpu()`, `machine_id()`), the key of the figures of record and of the
  tuning record (`nli-zoo tune`); not re-exported here (import `zoo.fileio.cpu`).

Example:
```python
from zoo.fileio import DirectoryLock, atomic_path, atomic_write, read_json, write_json

with DirectoryLock("runs/esim"):                       # LockedError if another process writes there
    with atomic_path("runs/esim/best.weights.h5") as tmp:
        model.save_weights(tmp)                         # tmp ends in .weights.h5, as Keras requires
    write_json("runs/esim/results.json", {"test": 0.88})
```
"""

from zoo.fileio.atomic import (
                               CorruptFileError,
                               atomic_path,
                               atomic_write,
                               clean_stale_temporaries,
                               pid_alive,
                               read_json,
                               temporary_name,
                               write_json,
)
from zoo.fileio.checksums import Hasher, ManifestError, read_manifest, sha256_file, verify_files, write_manifest
from zoo.fileio.disk import describe_fault, fault_errno
from zoo.fileio.faults import FAULT_VARIABLE, fault_point
from zoo.fileio.folders import exchange, publish_folder, recover_folder, staging_folder
from zoo.fileio.lock import LOCK_NAME, DirectoryLock, LockedError, describe_holder, sibling_lock_file
from zoo.fileio.versions import (
                               VersionExistsError,
                               allocate_version,
                               latest_version,
                               remove_empty_versions,
                               version_numbers,
)

__all__ = ["CorruptFileError", "DirectoryLock", "FAULT_VARIABLE", "Hasher", "LOCK_NAME", "LockedError", "ManifestError",
           "VersionExistsError", "allocate_version", "atomic_path", "atomic_write", "clean_stale_temporaries",
           "describe_fault", "describe_holder", "exchange", "fault_errno", "fault_point", "latest_version", "pid_alive",
           "publish_folder", "read_json", "read_manifest", "recover_folder", "remove_empty_versions", "sha256_file",
           "sibling_lock_file", "staging_folder", "temporary_name", "verify_files", "version_numbers", "write_json",
           "write_manifest"]
