"""TF Serving's numbered version folders (`MODELS/NAME/1`, `2`, ...): the one place that lists, allocates and
picks them, for every export path and every predictor.

- `version_numbers(model_dir, holding=None)`: the numeric folders, increasing (only those holding the file
  `holding`, e.g. `saved_model.pb`, when given).
- `latest_version(model_dir, holding)`: the highest of them, or None.
- `allocate_version(model_dir, version=None)`: reserves the next free version (or `version`) with `os.mkdir`,
  which fails for every process but one.
- `remove_empty_versions(model_dir)`: the empty folders a killed or refused export reserved (call it under
  the model folder's lock, where no other export can be between its reservation and its rename).
"""

import os


class VersionExistsError(FileExistsError):
    """The asked version folder exists already; the message says so in one line."""


def version_numbers(model_dir, holding=None):
    """The integer version folders of `model_dir`, increasing (a missing folder has none).

    Args:
        model_dir: `MODELS/NAME`.
        holding: a file name (`saved_model.pb`): only the versions holding it (complete exports).
    """
    try:
        names = os.listdir(model_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(name) for name in names if name.isdigit() and os.path.isdir(os.path.join(model_dir, name))
                  and (holding is None or os.path.exists(os.path.join(model_dir, name, holding))))


def latest_version(model_dir, holding=None):
    """The highest version of `model_dir` (holding `holding` when given), or None."""
    versions = version_numbers(model_dir, holding)
    return versions[-1] if versions else None


def allocate_version(model_dir, version=None):
    """Reserves a version folder of `model_dir`: creates it, empty, with `os.mkdir`, which fails for every
    process but one, so two exports at once never get the same version.

    Args:
        model_dir: `MODELS/NAME` (created if needed).
        version: the version to reserve; None: the next free one (one more than the highest).

    Returns:
        the version number; the folder `model_dir/VERSION` exists and is empty (fill it with
        `zoo.fileio.atomic_path`, or rename a finished folder onto it with `os.replace`).

    Raises:
        ValueError: `version` is not a positive integer.
        VersionExistsError: `version` exists already.
    """
    model_dir = os.fspath(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    if version is not None:
        if int(version) < 1:
            raise ValueError(f"--version must be a positive integer, got {version}")
        path = os.path.join(model_dir, str(int(version)))
        try:
            os.mkdir(path)
        except FileExistsError:
            raise VersionExistsError(f"{path} already exists; choose another --version or leave it out for the "
                                     "next free one") from None
        return int(version)
    version = 1 + max((int(n) for n in os.listdir(model_dir) if n.isdigit()), default=0)
    while True:
        try:
            os.mkdir(os.path.join(model_dir, str(version)))
            return version
        except FileExistsError:
            version += 1


def remove_empty_versions(model_dir):
    """Removes the empty version folders of `model_dir` (reserved by an export that was killed or refused
    before its rename); returns their paths. Call it under the model folder's lock."""
    removed = []
    try:
        names = os.listdir(model_dir)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for name in sorted(names):
        path = os.path.join(model_dir, name)
        if name.isdigit() and os.path.isdir(path) and not os.listdir(path):
            try:
                os.rmdir(path)
            except OSError:
                continue
            removed.append(path)
    return removed
