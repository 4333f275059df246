"""Writing a preset: `export_preset(run, out_dir)` for a finished run, `write_preset(classifier, out_dir)`
for any `NLIClassifier` (`classifier.save_to_preset`).

The preset is built in a temporary sibling folder (`.NAME.tmp-PID-...`, see `zoo.fileio.atomic_path`)
and renamed onto `out_dir` at the end: a kill leaves the old preset or the new one, never half of one.
metadata.json is written last, with the SHA-256 of every other file.
"""

import datetime
import os
import shutil

import keras

from zoo.fileio import atomic_path, write_json
from zoo.presets import files
from zoo.presets.card import model_card
from zoo.presets.classifier import NLIClassifier, NLIPreprocessor, NLITokenizer
from zoo.presets.files import PresetError


def classifier_from_run(run):
    """The `NLIClassifier` of a loaded run (`zoo.runs.Run`): its model, tokenizer, vocabulary, the
    truncation of its data, its labels, and its optimiser settings for fine-tuning.

    Args:
        run: a `zoo.runs.Run`.

    Returns:
        an `NLIClassifier` sharing the run's model.
    """
    config = run.config
    data = config["preset"]["data"]
    model = run.model
    tokenizer = NLITokenizer(run.vocab, lowercase=run.tokenizer.lowercase)
    preprocessor = NLIPreprocessor(tokenizer, max_premise_length=data.get("max_premise_length"),
                                   max_hypothesis_length=data.get("max_hypothesis_length"), labels=run.labels,
                                   parse_trees=model.reads_parse_trees,
                                   max_depth=getattr(model, "max_depth", None) if model.reads_parse_trees else None)
    train = config["preset"].get("train", {})
    optimizer_settings = {key: train[key] for key in ("learning_rate", "beta_1", "beta_2", "epsilon", "global_clipnorm")
                          if key in train}
    return NLIClassifier(model, preprocessor, optimizer_settings=optimizer_settings, name=f"{config['model']}_classifier")


def run_metadata(run):
    """What a preset records of the run it comes from: the model's name and paper, the data, the vectors,
    the training settings, and the results the run measured.

    Raises:
        PresetError: the run has no results yet (training unfinished, or not evaluated).
    """
    from zoo.registry import get_spec

    config = run.config
    results = run.results
    if not results:
        raise PresetError(f"{run.run_dir}: the run has no results.json (training unfinished?): finish it "
                          "(rerun train.py with the same settings) before exporting a preset")
    spec = get_spec(config["model"])

    def scores(split):
        entry = results.get(split) or {}
        accuracy = results.get(f"{split}_accuracy", entry.get("accuracy"))
        return {"accuracy": accuracy, "examples": entry.get("examples"),
                "per_class_accuracy": entry.get("per_class_accuracy")}

    return {
        "model": config["model"],
        "paper": spec.paper,
        "paper_parameters_without_embeddings": spec.paper_params,
        "data": config.get("data"),
        "embeddings": {"source": config.get("embeddings"), "dim": config.get("embedding_dim"),
                       "tunable_words": config.get("tunable_words"), "num_tunable": config.get("num_tunable"),
                       "coverage": (results.get("embeddings") or {}).get("coverage")},
        "training": {"preset": config.get("preset"), "overrides": config.get("overrides", {}),
                     "seed": config.get("seed"), "epochs_run": results.get("epochs_run"),
                     "best_epoch": results.get("best_epoch"), "mixed_precision": config.get("mixed_precision"),
                     "init_from": config.get("init_from")},
        "results": {"dev": scores("dev"), "test": scores("test")},
        "run": os.path.basename(os.path.normpath(run.run_dir)),
    }


def export_preset(run, out_dir, overwrite=False):
    """Exports a finished run as a preset directory in KerasHub's layout (see `zoo.presets.files`).

    Args:
        run: a `zoo.runs.Run` (`zoo.load(run_dir)`), or a run directory.
        out_dir: the preset directory to write.
        overwrite: replace an existing non-empty folder.

    Returns:
        `out_dir`.

    Raises:
        PresetError: `out_dir` exists and is not empty (without `overwrite`), or the run has no results.
    """
    if isinstance(run, (str, os.PathLike)):
        from zoo.runs import load_run

        run = load_run(os.fspath(run))
    metadata = run_metadata(run)
    _check_target(out_dir, overwrite)
    classifier = classifier_from_run(run)
    classifier.preset_metadata = metadata
    return write_preset(classifier, out_dir, overwrite=overwrite)


def _check_target(out_dir, overwrite):
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise PresetError(f"{out_dir} is a file: a preset is a folder; choose another path")
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not overwrite:
        raise PresetError(f"{out_dir} exists and is not empty: choose another folder, or pass overwrite=True "
                          "(export.py --overwrite) to replace it")


def _strip(config, keys=("compile_config",)):
    """A serialized object without the given entries (at any depth), like KerasHub's preset saver."""
    if isinstance(config, dict):
        return {k: _strip(v, keys) for k, v in config.items() if k not in keys}
    if isinstance(config, list):
        return [_strip(v, keys) for v in config]
    return config


def _without_vocabulary(serialized_tokenizer):
    serialized = dict(serialized_tokenizer)
    serialized["config"] = {k: v for k, v in serialized["config"].items() if k != "vocabulary"}
    return serialized


def preset_metadata(classifier, checksums):
    """metadata.json: KerasHub's keys (keras_version, parameter_count, date_saved, tasks), the format,
    |θ|_M, the vocabulary, the provenance carried by the classifier, and the checksums."""
    from zoo.presets.files import FORMAT, FORMAT_VERSION

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
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "zoo_version": _zoo_version(),
        "class_name": type(backbone).__name__,
        "parameters_without_embeddings": int(backbone.count_params_without_embeddings()),
        "vocabulary_size": classifier.preprocessor.tokenizer.vocabulary_size,
        "labels": list(classifier.labels),
        **provenance,
        "checksum_algorithm": "sha256",
        "checksums": checksums,
    }


def _zoo_version():
    from importlib import metadata

    try:
        return metadata.version("nli-zoo")
    except metadata.PackageNotFoundError:
        return None


def write_preset(classifier, out_dir, overwrite=False):
    """Writes an `NLIClassifier` as a preset directory, atomically.

    Args:
        classifier: the classifier (with its preprocessor and vocabulary).
        out_dir: the preset directory.
        overwrite: replace an existing non-empty folder.

    Returns:
        `out_dir`.

    Raises:
        PresetError: `out_dir` exists and is not empty (without `overwrite`), or no preprocessor.
    """
    out_dir = os.fspath(out_dir)
    _check_target(out_dir, overwrite)
    if classifier.preprocessor is None or classifier.preprocessor.tokenizer.vocabulary is None:
        raise PresetError("a preset needs the classifier's preprocessor and vocabulary")
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    old = None
    try:
        with atomic_path(out_dir) as tmp:
            _write_files(classifier, tmp)
            if os.path.isdir(out_dir) and os.listdir(out_dir):  # overwrite: move the old preset aside last
                old = tmp + ".old"
                os.rename(out_dir, old)
    except BaseException:
        if old and os.path.isdir(old) and not os.path.exists(out_dir):
            os.rename(old, out_dir)
        raise
    if old:
        shutil.rmtree(old, ignore_errors=True)
    return out_dir


def _write_files(classifier, directory):
    from zoo.presets.files import (CONFIG_FILE, METADATA_FILE, MODEL_WEIGHTS_FILE,
                                   PREPROCESSOR_CONFIG_FILE, README_FILE, TASK_CONFIG_FILE, TOKENIZER_ASSET_DIR,
                                   TOKENIZER_CONFIG_FILE)

    os.makedirs(os.path.join(directory, *TOKENIZER_ASSET_DIR.split("/")))
    backbone = classifier.backbone
    preprocessor = classifier.preprocessor
    write_json(os.path.join(directory, CONFIG_FILE), _strip(keras.saving.serialize_keras_object(backbone)))
    backbone.save_weights(os.path.join(directory, MODEL_WEIGHTS_FILE))
    tokenizer = _without_vocabulary(keras.saving.serialize_keras_object(preprocessor.tokenizer))
    write_json(os.path.join(directory, TOKENIZER_CONFIG_FILE), tokenizer)
    preprocessor_config = keras.saving.serialize_keras_object(preprocessor)
    preprocessor_config["config"]["tokenizer"] = tokenizer
    write_json(os.path.join(directory, PREPROCESSOR_CONFIG_FILE), preprocessor_config)
    preprocessor.tokenizer.save_assets(os.path.join(directory, *TOKENIZER_ASSET_DIR.split("/")))
    task = keras.saving.serialize_keras_object(classifier)
    # The backbone and the preprocessor are config.json and preprocessor.json; task.json keeps the rest.
    # metadata.json holds the provenance.
    task["config"] = {k: v for k, v in task["config"].items()
                      if k not in ("backbone", "preprocessor", "preset_metadata", "fine_tuned")}
    write_json(os.path.join(directory, TASK_CONFIG_FILE), _strip(task, ("compile_config", "build_config")))
    metadata = preset_metadata(classifier, {})
    with open(os.path.join(directory, README_FILE), "w", encoding="utf-8") as f:
        f.write(model_card(metadata))
    metadata["checksums"] = files.checksums(directory)  # every file but metadata.json, README.md included
    write_json(os.path.join(directory, METADATA_FILE), metadata)
