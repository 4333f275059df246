"""Loading a preset: `from_preset(path_or_uri)` gives an `NLIClassifier`.

Every file is checked against the SHA-256 that metadata.json records before anything is read, then the
vocabulary against the embedding table; each failure is one line naming the file.
"""

import os

import keras

import zoo.models  # noqa: F401  (registers every model and layer class with Keras, for config.json)
from zoo.fileio import CorruptFileError, read_json
from zoo.presets import files, hub
from zoo.presets.classifier import NLIClassifier
from zoo.presets.files import PresetError, PresetIntegrityError, PresetMismatchError

# metadata.json entries written anew by every save; the others (paper, data, results...) are the preset's
# provenance, which a classifier carries to the presets it saves.
COMPUTED_KEYS = ("keras_version", "keras_hub_version", "parameter_count", "date_saved", "tasks", "format",
                 "format_version", "zoo_version", "class_name", "parameters_without_embeddings", "vocabulary_size",
                 "labels", "checksum_algorithm", "checksums")


def _first_line(error, limit=200):
    text = str(error).strip().splitlines()
    text = text[0] if text else type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


# What to do about a damaged preset file: the folder is written whole, so the remedy is the whole preset again
# (deleting a file would leave a folder that is no longer a preset).
REMEDY = "export the preset again from its run (export.py --format preset --overwrite), or download it again"


def _read(directory, name, where):
    try:
        value = read_json(os.path.join(directory, *name.split("/")), remedy=REMEDY)
    except CorruptFileError as error:
        detail = str(error).split(": ", 1)[-1].rsplit(f": {REMEDY}", 1)[0]  # "not valid JSON (line 3: ...)"
        raise PresetIntegrityError(f"{where}: {name} is {detail}: {REMEDY}") from None
    if value is None:
        raise PresetIntegrityError(f"{where}: {name} is missing: {REMEDY}")
    return value


def _deserialize(config, name, where):
    try:
        return keras.saving.deserialize_keras_object(config)
    except Exception as error:  # Keras raises TypeError, ValueError... with long messages
        raise PresetError(f"{where}: {name} does not describe an object this version of nli-zoo can build "
                          f"({type(error).__name__}: {_first_line(error)})") from None


def read_metadata(directory, where=None):
    """A preset folder's metadata.json, checked to be an nli-zoo preset.

    Raises:
        PresetError: no metadata.json, or another kind of preset.
        PresetIntegrityError: metadata.json is not valid JSON.
    """
    where = where or directory
    if not os.path.isfile(os.path.join(directory, files.METADATA_FILE)):
        raise PresetError(f"{where} is not an nli-zoo preset (no {files.METADATA_FILE})")
    metadata = _read(directory, files.METADATA_FILE, where)
    if not isinstance(metadata, dict) or metadata.get("format") != files.FORMAT:
        raise PresetError(f"{where}: {files.METADATA_FILE} is not an nli-zoo preset's (format "
                          f"{metadata.get('format') if isinstance(metadata, dict) else None!r})")
    if metadata.get("format_version", 0) > files.FORMAT_VERSION:
        raise PresetError(f"{where} is a preset of format {metadata['format_version']}, newer than this nli-zoo "
                          f"reads ({files.FORMAT_VERSION}): upgrade nli-zoo")
    return metadata


def verify_preset(directory, where=None):
    """Checks a local preset folder (metadata.json and every file's SHA-256) without loading it.

    Returns:
        the metadata.

    Raises:
        PresetError, PresetIntegrityError: one line naming the file.
    """
    where = where or directory
    metadata = read_metadata(directory, where)
    files.verify_checksums(directory, metadata.get("checksums"), where)
    return metadata


def resolve(preset):
    """The local folder of a preset (a folder, or a hub URI downloaded through the hub's client) and the
    name to give it in messages."""
    if hub.is_hub_uri(preset):
        return hub.download(preset), preset
    directory = os.fspath(preset)
    if not os.path.isdir(directory):
        raise PresetError(f"{directory}: no such preset folder (a preset is a folder, hf://OWNER/NAME or "
                          "kaggle://OWNER/MODEL/keras/VARIANT)")
    return directory, directory


def from_preset(preset, compile=True):
    """Loads a preset as an `NLIClassifier` with its preprocessor attached.

    Args:
        preset: a local preset folder, `hf://OWNER/NAME` or `kaggle://OWNER/MODEL/keras/VARIANT[/VERSION]`
            (downloaded through `huggingface_hub` / `kagglehub` into their caches).
        compile: compile with the fine-tuning defaults (`NLIClassifier.compile`).

    Returns:
        the `NLIClassifier`.

    Raises:
        PresetIntegrityError: a file missing or not matching its SHA-256 (checked before loading).
        PresetMismatchError: the vocabulary does not fit the embedding table, or the weights the config.
        zoo.presets.hub.HubUnreachableError: a hub URI without network.
        PresetError: anything else that makes the preset unusable; every message is one line.
    """
    directory, where = resolve(preset)
    metadata = verify_preset(directory, where)
    backbone = _deserialize(_read(directory, files.CONFIG_FILE, where), files.CONFIG_FILE, where)
    preprocessor = _deserialize(_read(directory, files.PREPROCESSOR_CONFIG_FILE, where),
                                files.PREPROCESSOR_CONFIG_FILE, where)
    try:
        preprocessor.tokenizer.load_assets(os.path.join(directory, *files.TOKENIZER_ASSET_DIR.split("/")))
    except ValueError as error:
        raise PresetIntegrityError(f"{where}: {files.VOCABULARY_FILE} is not a vocabulary of nli-zoo "
                                   f"({_first_line(error)})") from None
    size, rows = preprocessor.tokenizer.vocabulary_size, getattr(backbone, "vocabulary_size", None)
    if rows is not None and size != rows:
        raise PresetMismatchError(
            f"{where}: {files.VOCABULARY_FILE} has {size} tokens but the model's embedding table "
            f"({files.CONFIG_FILE}, {files.MODEL_WEIGHTS_FILE}) has {rows} rows: the vocabulary is not the one "
            "the weights were trained with; export the preset again from its run")
    if not backbone.built:
        backbone.build()
    try:
        backbone.load_weights(os.path.join(directory, files.MODEL_WEIGHTS_FILE))
    except Exception as error:  # a shape or a layer that does not match the config
        raise PresetMismatchError(f"{where}: {files.MODEL_WEIGHTS_FILE} does not fit {files.CONFIG_FILE} "
                                  f"({_first_line(error)})") from None
    task = {}
    if os.path.isfile(os.path.join(directory, files.TASK_CONFIG_FILE)):
        task = _read(directory, files.TASK_CONFIG_FILE, where).get("config", {})
    provenance = {k: v for k, v in metadata.items() if k not in COMPUTED_KEYS}
    return NLIClassifier(backbone, preprocessor, optimizer_settings=task.get("optimizer_settings"),
                         preset_metadata=provenance, compile=compile, name=task.get("name") or "nli_classifier")


def upload_preset(preset_dir, uri):
    """Uploads a local preset folder to a hub, after checking it as `from_preset` would.

    Args:
        preset_dir: the preset folder (`export_preset`'s output).
        uri: `hf://[OWNER/]NAME` (Hugging Face, through `huggingface_hub`) or
            `kaggle://OWNER/MODEL/keras/VARIANT` (Kaggle, through `keras_hub.upload_preset`, else `kagglehub`).

    Returns:
        the URI.

    Raises:
        PresetIntegrityError: the folder fails its checks (nothing is uploaded).
        zoo.presets.hub.HubUnreachableError, HubClientMissingError, HubError: one line naming the URI.
    """
    hub.parse_uri(uri, for_upload=True)
    directory = os.fspath(preset_dir)
    if not os.path.isdir(directory):
        raise PresetError(f"{directory}: no such preset folder")
    verify_preset(directory)
    return hub.upload(directory, uri)
