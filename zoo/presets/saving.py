"""Writing a classifier as a preset folder, whole: `write_preset(classifier, out_dir)` (what
`NLIClassifier.save_to_preset` and `export_preset` call).

The preset is built in a temporary sibling folder (`.NAME.tmp-PID-RANDOM`) and moved onto `out_dir` at
the end, under the lock of `out_dir` (`.NAME.lock`, beside it: the folder itself is replaced), so a kill
at any moment leaves the old preset or the new one, never half of one, and two writers never share a
folder. An existing preset is swapped out in one step where the system can (Linux `renameat2` with
`RENAME_EXCHANGE`); elsewhere it is renamed aside (`.NAME.old-PID-RANDOM`) just before the new one is
renamed in, and a kill between the two renames is repaired by the next write into `out_dir`, which puts
the old preset back. The next write also removes the temporary folders of killed writers.

metadata.json is written last, with the SHA-256 of every other file.

Kill hook for tests: `NLI_ZOO_FAULT_AT=STEP` kills the process (SIGKILL) right after STEP, one of
`FAULT_STEPS` (and `preset:moved-aside` where there is no atomic exchange).
"""

import contextlib
import datetime
import importlib.metadata
import logging
import os
import re
import secrets
import shutil

import keras

from zoo.fileio import (
    FAULT_VARIABLE,
    DirectoryLock,
    LockedError,
    atomic_write,
    clean_stale_temporaries,
    describe_holder,
    fault_point,
    pid_alive,
    temporary_name,
    write_json,
)
from zoo.fileio.atomic import fsync_directory as _fsync_directory  # durability of the renames
from zoo.fileio.atomic import fsync_tree as _fsync_tree
from zoo.fileio.folders import exchange as _exchange  # the one atomic swap of two folders (Linux renameat2)
from zoo.presets import files
from zoo.presets.card import model_card
from zoo.presets.files import PresetError

logger = logging.getLogger(__name__)

FAULT_ENV = FAULT_VARIABLE
# The steps of a preset write a kill can follow, in order (for the fault tests).
FAULT_STEPS = ("preset:weights", "preset:files", "preset:metadata", "preset:swapped")


# ----------------------------------------------------------------------------------------------- the folder

def check_target(out_dir, overwrite):
    """Refuses a file, or a folder that is not empty without `overwrite` (one line)."""
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise PresetError(f"{out_dir} is a file: a preset is a folder; choose another path")
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not overwrite:
        raise PresetError(f"{out_dir} exists and is not empty: choose another folder, or pass overwrite=True "
                          "(export.py --overwrite) to replace it")


@contextlib.contextmanager
def target_lock(out_dir):
    """Holds the lock of a preset folder: `.NAME.lock/` beside it (removed afterwards), since the folder
    itself is replaced by the write.

    Raises:
        PresetError: another live process writes the same preset folder (one line naming it).
    """
    parent, base = os.path.split(os.path.abspath(os.fspath(out_dir)))
    lock = DirectoryLock(os.path.join(parent, f".{base}.lock"), what="preset folder's lock")
    for attempt in range(3):
        try:
            lock.acquire()
            break
        except FileNotFoundError:  # the previous holder removed the lock folder between our two steps
            if attempt == 2:
                raise
        except LockedError as error:
            raise PresetError(f"{out_dir}: another process writes this preset folder "
                              f"({describe_holder(error.holder)}); "
                              f"wait for it to finish, or choose another folder; if no such process runs, delete "
                              f"{error.lock_path}") from None
    try:
        yield
    finally:
        lock.release()
        with contextlib.suppress(OSError):
            os.rmdir(lock.directory)  # only when empty


def _aside_pattern(base):
    return re.compile(rf"^\.{re.escape(base)}\.old-(\d+)-[0-9a-f]+$")


def repair_leftovers(out_dir, log=None):
    """What a killed write into `out_dir` left (call it under `target_lock`): the old preset renamed aside
    goes back when no preset took its place (else it is removed), and temporary folders go.

    Returns:
        the number of leftovers handled.
    """
    parent, base = os.path.split(os.path.abspath(os.fspath(out_dir)))
    log = log or logger.info
    handled = 0
    aside = _aside_pattern(base)
    for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
        match = aside.match(name)
        if not match or (pid_alive(int(match.group(1))) and int(match.group(1)) != os.getpid()):
            continue
        path = os.path.join(parent, name)
        if not os.path.exists(out_dir):
            os.rename(path, out_dir)
            log(f"put back the preset {out_dir}, which an interrupted write had moved aside")
        else:
            shutil.rmtree(path, ignore_errors=True)
        handled += 1
    return handled + clean_stale_temporaries(
        parent, prefix=f".{base.lstrip('.')}.tmp-",
        on_remove=lambda path: log(f"removed {path}, left by an interrupted write"))


def move_into_place(new, out_dir):
    """Moves the finished folder `new` onto `out_dir`, replacing what is there.

    Returns:
        where the old folder now is (to be removed), or None.
    """
    if not os.path.isdir(out_dir) or not os.listdir(out_dir):
        os.replace(new, out_dir)  # onto nothing or an empty folder: one rename
        return None
    if _exchange(new, out_dir):
        return new
    parent, base = os.path.split(os.path.abspath(out_dir))
    aside = os.path.join(parent, f".{base}.old-{os.getpid()}-{secrets.token_hex(3)}")
    os.rename(out_dir, aside)
    fault_point("preset:moved-aside")
    try:
        os.rename(new, out_dir)
    except BaseException:
        os.rename(aside, out_dir)
        raise
    return aside


# ----------------------------------------------------------------------------------------------- the files

def _strip(config, keys=("compile_config",)):
    """A serialized object without the given entries (at any depth), like KerasHub's preset saver."""
    if isinstance(config, dict):
        return {k: _strip(v, keys) for k, v in config.items() if k not in keys}
    if isinstance(config, list):
        return [_strip(v, keys) for v in config]
    return config


def _zoo_version():
    try:
        return importlib.metadata.version("nli-zoo")
    except importlib.metadata.PackageNotFoundError:
        return None


def preset_metadata(classifier, checksums):
    """metadata.json: KerasHub's keys (keras_version, parameter_count, date_saved, tasks), the format,
    |θ|_M, the vocabulary, the provenance carried by the classifier, and the checksums."""
    backbone = classifier.backbone
    provenance = dict(classifier.preset_metadata)
    if classifier.fine_tuned:
        # The results were measured before fine-tuning: keep them, under a name that says so.
        if provenance.get("results"):
            provenance["results_before_fine_tuning"] = provenance.pop("results")
        provenance["results"] = None
        provenance["fine_tuned"] = True
    return {
        "keras_version": keras.version(),
        "parameter_count": int(backbone.count_params()),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "tasks": [type(classifier).__name__],
        "format": files.FORMAT,
        "format_version": files.FORMAT_VERSION,
        "zoo_version": _zoo_version(),
        "class_name": type(backbone).__name__,
        "parameters_without_embeddings": int(backbone.count_params_without_embeddings()),
        "vocabulary_size": classifier.preprocessor.tokenizer.vocabulary_size,
        "labels": list(classifier.labels),
        **provenance,
        "checksum_algorithm": "sha256",
        "checksums": checksums,
    }


def write_files(classifier, directory):
    """Writes the preset's files into an empty `directory` (see `zoo.presets.files`), metadata.json last."""
    def path(name):
        return os.path.join(directory, *name.split("/"))

    asset_dir = path(files.TOKENIZER_ASSET_DIR)
    os.makedirs(asset_dir)
    backbone, preprocessor = classifier.backbone, classifier.preprocessor
    write_json(path(files.CONFIG_FILE), _strip(keras.saving.serialize_keras_object(backbone)))
    backbone.save_weights(path(files.MODEL_WEIGHTS_FILE))
    fault_point("preset:weights")
    write_json(path(files.TOKENIZER_CONFIG_FILE), keras.saving.serialize_keras_object(preprocessor.tokenizer))
    write_json(path(files.PREPROCESSOR_CONFIG_FILE), keras.saving.serialize_keras_object(preprocessor))
    preprocessor.tokenizer.save_assets(asset_dir)
    task = keras.saving.serialize_keras_object(classifier)
    # The backbone and the preprocessor are config.json and preprocessor.json; task.json keeps the rest.
    # metadata.json holds the provenance.
    task["config"] = {k: v for k, v in task["config"].items()
                      if k not in ("backbone", "preprocessor", "preset_metadata", "fine_tuned")}
    write_json(path(files.TASK_CONFIG_FILE), _strip(task, ("compile_config", "build_config")))
    metadata = preset_metadata(classifier, {})
    with atomic_write(path(files.README_FILE), "w") as f:
        f.write(model_card(metadata))
    fault_point("preset:files")
    metadata["checksums"] = files.checksums(directory)  # every file but metadata.json, README.md included
    write_json(path(files.METADATA_FILE), metadata)
    fault_point("preset:metadata")


def write_preset(classifier, out_dir, overwrite=False):
    """Writes an `NLIClassifier` as a preset folder, whole (see the module's docstring).

    Args:
        classifier: the classifier (with its preprocessor and vocabulary).
        out_dir: the preset folder.
        overwrite: replace an existing non-empty folder.

    Returns:
        `out_dir`.

    Raises:
        PresetError: `out_dir` is a file, exists and is not empty (without `overwrite`), is being written by
            another process, or the classifier has no preprocessor.
    """
    out_dir = os.fspath(out_dir)
    if classifier.preprocessor is None or classifier.preprocessor.tokenizer.vocabulary is None:
        raise PresetError("a preset needs the classifier's preprocessor and vocabulary")
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    with target_lock(out_dir):
        repair_leftovers(out_dir)
        check_target(out_dir, overwrite)
        tmp = temporary_name(out_dir)
        try:
            os.mkdir(tmp)
            write_files(classifier, tmp)
            _fsync_tree(tmp)
            old = move_into_place(tmp, out_dir)
            _fsync_directory(os.path.dirname(os.path.abspath(out_dir)))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fault_point("preset:swapped")
        if old:
            shutil.rmtree(old, ignore_errors=True)
    return out_dir
