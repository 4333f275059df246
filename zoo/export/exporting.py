"""What every export holds while it writes: the run's lock and the target's lock (`exporting`), and `ExportError`.

The run's lock is the one training holds (`zoo.runs.layout.lock`): an export refuses, in one line, a run that
is training (its weights are mid-training) or being exported elsewhere, and training refuses to start while
the run is exported. The target's lock makes a second export into the same folder wait for nothing: it is
refused in one line. A folder the export created and left empty (refused, failed) is removed on the way out.

Example:
```python
with exporting(run.run_dir, "models/esim", what="export folder"):
    ...  # build in a temporary folder beside the target, then rename it into place (zoo.fileio.folders)
```
"""

import contextlib
import os

from zoo import fileio
from zoo.runs import layout

# The kill hooks between an export's writes (`zoo.fileio.fault_point`, `NLI_ZOO_FAULT_AT=STEP`), in order;
# the TFLite swap steps are met only when an export replaces another (`--overwrite`): `exchanged` where the two
# folders swap in one step (Linux), `old-moved-aside` and `new-moved-in` elsewhere.
FAULT_STEPS = {
    "saved_model": ("export:saved_model:graph-written", "export:saved_model:staged",
                    "export:saved_model:version-reserved", "export:saved_model:version-in-place",
                    "export:saved_model:batching-written"),
    "tflite": ("export:tflite:vocab-written", "export:tflite:tflite-json-written", "export:tflite:model-written",
               "export:tflite:staged", "export:tflite:exchanged", "export:tflite:old-moved-aside",
               "export:tflite:new-moved-in"),
}


class ExportError(ValueError):
    """A user-facing export error (existing version, bad path, failed conversion, a run in use)."""


@contextlib.contextmanager
def exporting(run_dir, target, what="export folder", lock_file=None):
    """Holds the lock of `run_dir` and that of `target` while the body writes the export.

    Args:
        run_dir: the run exported.
        target: the export folder (a TF Serving model folder, a TFLite folder).
        what: what the target is, for messages.
        lock_file: the target's lock file when the target is replaced whole (`zoo.fileio.sibling_lock_file`).

    Raises:
        ExportError: the run or the target is in use by another process (one line naming it), or the
            target is a file.
    """
    target = os.path.abspath(os.fspath(target))
    created = not os.path.exists(target)
    run_lock = layout.lock(run_dir)
    try:
        run_lock.acquire()
    except fileio.LockedError as error:
        raise ExportError(f"cannot export {run_dir}: {error}") from None
    try:
        target_lock = fileio.DirectoryLock(target, what=what, lock_file=lock_file)
        try:
            target_lock.acquire()
        except (fileio.LockedError, NotADirectoryError) as error:
            raise ExportError(str(error)) from None
        try:
            yield
        finally:
            target_lock.release()
            if created:
                with contextlib.suppress(OSError):
                    os.rmdir(target)  # only succeeds on the empty folder of a refused or failed export
    finally:
        run_lock.release()
