"""A folder whose files belong together: their SHA-256 kept in a manifest written with each commit, and
checked when the folder is opened.

A run directory (`RUN/manifest.json`, `zoo.runs.manifest`) and a SavedModel export
(`N/assets.extra/manifest.json`) keep one, as presets (`metadata.json`) and TFLite exports do. The manifest
lists each covered file and its SHA-256; `verify_files` checks the files a reader is about to use and
raises `ManifestError`, one line naming the file, what is wrong (changed, missing, not listed) and the
remedy the caller gives.

```python
write_manifest("runs/esim", ["config.json", "vocab.txt", "best.weights.h5"], "runs/esim/manifest.json")
recorded = read_manifest("runs/esim/manifest.json", remedy="...")     # {"config.json": "ab12...", ...}
verify_files("runs/esim", recorded, ["vocab.txt"], remedy=lambda name: "delete it and rerun train.py")
```
"""

import hashlib
import mmap
import os

from zoo.fileio.atomic import CorruptFileError, read_json, write_json

MANIFEST_FORMAT = 1
ALGORITHM = "sha256"


class ManifestError(CorruptFileError):
    """A file of a folder is not the one its manifest records (changed, missing, or not listed), or the
    manifest itself is missing or damaged: one line naming the file and the remedy. `name` is the file's
    name relative to the folder."""

    def __init__(self, message, path=None, name=None):
        super().__init__(message, path)
        self.name = name


def sha256_file(path):
    """The SHA-256 (hex) of a file, hashed through a memory map (no copy of the file into Python's memory)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:  # an empty file cannot be mapped
            return hashlib.sha256().hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return hashlib.sha256(view).hexdigest()


class Hasher:
    """SHA-256 of files, remembered by (inode, size, modification time) in this process: a writer that
    rewrites its manifest after every commit hashes only the files that changed since (every zoo write
    renames a new file into place, so a changed file has a new inode)."""

    def __init__(self):
        self._known = {}

    @staticmethod
    def _key(path):
        info = os.stat(path)
        return os.path.abspath(path), info.st_ino, info.st_size, info.st_mtime_ns

    def __call__(self, path):
        key = self._key(path)
        if key not in self._known:
            self._known[key] = sha256_file(path)
        return self._known[key]

    def remember(self, path, digest):
        """Records the SHA-256 of a file this process just wrote with known content (e.g. a copy)."""
        self._known[self._key(path)] = digest


HASHER = Hasher()  # this process's checksums, shared by every writer of manifests and run states


def manifest_of(folder, names, hasher=sha256_file):
    """`{name: sha256}` of the files of `names` (relative POSIX paths) that exist in `folder`."""
    found = {}
    for name in names:
        path = os.path.join(folder, *name.split("/"))
        if os.path.isfile(path):
            found[name] = hasher(path)
    return found


def write_manifest(folder, names, manifest_path, hasher=sha256_file):
    """Writes the manifest of the files of `names` present in `folder` to `manifest_path`, atomically.

    Returns:
        the recorded `{name: sha256}`.
    """
    files = manifest_of(folder, names, hasher)
    write_json(manifest_path, {"format": MANIFEST_FORMAT, "algorithm": ALGORITHM, "files": files})
    return files


def read_manifest(manifest_path, remedy):
    """The `{name: sha256}` a manifest records, or None when there is none.

    Raises:
        ManifestError: a manifest that is not JSON or not what `write_manifest` writes (one line with `remedy`).
    """
    try:
        value = read_json(manifest_path, remedy=remedy)
    except CorruptFileError as error:
        raise ManifestError(str(error), manifest_path, os.path.basename(manifest_path)) from None
    if value is None:
        return None
    files = value.get("files") if isinstance(value, dict) else None
    if not (isinstance(value, dict) and value.get("algorithm") == ALGORITHM and isinstance(files, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        raise ManifestError(f"{manifest_path}: not a manifest of SHA-256 checksums: {remedy}", manifest_path,
                            os.path.basename(manifest_path))
    return files


def verify_files(folder, recorded, names, remedy, manifest_name="manifest.json", hasher=sha256_file):
    """Checks the files of `names` in `folder` against the manifest's `recorded` checksums.

    A listed file must exist and have its recorded SHA-256; an unlisted one must not exist (a file the
    folder's writer did not commit, e.g. another run's results copied in).

    Args:
        folder: the folder.
        recorded: `read_manifest`'s `{name: sha256}`.
        names: the files to check (relative POSIX paths).
        remedy: `remedy(name)`: what to do about that file (the end of the message).
        manifest_name: how to name the manifest in messages.

    Raises:
        ManifestError: the first file at fault, one line.
    """
    for name in names:
        path = os.path.join(folder, *name.split("/"))
        exists = os.path.isfile(path)
        if name not in recorded:
            if exists:
                raise ManifestError(f"{path} is not listed in {manifest_name} (it was not written with the rest of "
                                    f"{folder}): {remedy(name)}", path, name)
            continue
        if not exists:
            raise ManifestError(f"{path} is missing ({manifest_name} lists it): {remedy(name)}", path, name)
        actual = hasher(path)
        if actual != recorded[name]:
            raise ManifestError(f"{path} does not match its SHA-256 in {manifest_name} (recorded "
                                f"{recorded[name][:12]}..., found {actual[:12]}...: changed or damaged since it was "
                                f"written): {remedy(name)}", path, name)
