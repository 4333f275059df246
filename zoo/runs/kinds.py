"""The kinds of trained model a path can hold, told from their files alone (no TensorFlow): a run directory
(train.py), a SavedModel or a TF Serving model folder of numbered versions, a TFLite export, a preset folder
(or a hub address). The file names are defined here, for the modules that write and read each kind, so that
a command can check the path it is given before TensorFlow starts (`zoo.predictors.open_predictor` opens it).
"""

import os

from zoo import fileio
from zoo.errors import UserError
from zoo.runs.layout import VOCAB_FILE as RUN_VOCAB_FILE
from zoo.runs.layout import lost_config
from zoo.runs.record import CONFIG_FILE as RUN_CONFIG_FILE
from zoo.runs.record import load_record

KINDS = ("run", "saved_model", "tflite", "preset")
URI_SCHEMES = ("hf://", "kaggle://")
SAVED_MODEL_FILE = "saved_model.pb"
TFLITE_MODEL_FILE = "model.tflite"
TFLITE_METADATA_FILE = "tflite.json"
PREPROCESSOR_CONFIG_FILE = "preprocessor.json"  # KerasHub's name (keras_hub/src/utils/preset_utils.py)


def kind_of(path):
    """The kind of model at `path` (`"run"`, `"saved_model"`, `"tflite"`, `"preset"`), or None."""
    path = os.fspath(path)
    if path.startswith(URI_SCHEMES):
        return "preset"
    if path.endswith(".tflite") and os.path.isfile(path):
        return "tflite"
    if not os.path.isdir(path):
        return None
    has = lambda name: os.path.exists(os.path.join(path, name))  # noqa: E731
    if has(TFLITE_MODEL_FILE) and has(TFLITE_METADATA_FILE):
        return "tflite"
    if has(SAVED_MODEL_FILE) or fileio.latest_version(path, holding=SAVED_MODEL_FILE) is not None:
        return "saved_model"
    if has(PREPROCESSOR_CONFIG_FILE):
        return "preset"
    if has(RUN_CONFIG_FILE) and has(RUN_VOCAB_FILE):
        return "run"
    return None


def not_a_model(path):
    """The one line for a path that holds no model of any kind."""
    what = "does not exist" if not os.path.exists(os.fspath(path)) else "is not a model the zoo can open"
    return (f"{os.fspath(path)!r} {what}: give a run directory (train.py), a SavedModel or TF Serving model folder, "
            "a TFLite export, or a preset (folder, hf://, kaggle://)")


_DESCRIBED = {"run": "a run directory (train.py)", "saved_model": "a SavedModel or TF Serving model folder",
              "tflite": "a TFLite export (export.py --format tflite)", "preset": "a preset folder"}


def check_kind(path, kind, option):
    """`path` if it holds a model of `kind` (a hub address counts as a preset: it is fetched when opened); a
    run's `config.json` is read, so that a damaged one is reported now.

    Raises:
        UserError: one line naming `option` and saying what the path is instead.
        zoo.fileio.CorruptFileError: a run's damaged `config.json` (one line naming the file and field).
    """
    found = kind_of(path)
    if kind == "run" and found is None and lost_config(path):
        raise UserError(f"{option} {path}: {os.path.join(os.fspath(path), RUN_CONFIG_FILE)} is missing, and the run's "
                        "settings are in it: put the run's config.json back (from a copy of the run)")
    if found != kind:
        what = ("does not exist" if not os.path.exists(os.fspath(path))
                else f"is {_DESCRIBED[found]}, not {_DESCRIBED[kind]}" if found else f"is not {_DESCRIBED[kind]}")
        raise UserError(f"{option} {path}: {what}")
    if kind == "run":
        load_record(path)
    return path


# The flags (and the request fields) that name a model, by the kind of model each names.
MODEL_FLAGS = {"run": "--run-dir", "saved_model": "--saved-model", "tflite": "--tflite", "preset": "--preset"}


def check_model(kind, path):
    """`path`, given to the flag of `kind`, holds that kind of model (`check_kind`; a hub address is fetched
    when opened, so it is not checked here): told from its files, before TensorFlow starts."""
    if kind != "preset" or "://" not in path:
        check_kind(path, kind, MODEL_FLAGS[kind])
    return path
