"""A preset directory's files (KerasHub's names), their SHA-256 checksums, and the errors of presets.

The layout is KerasHub's (`keras_hub.src.utils.preset_utils`): the same file names, so that a preset
looks like any other Keras preset on a hub. `tests/test_presets.py` checks the names against KerasHub's
where it is installed; this module does not import it.
```
PRESET/
  config.json                      # the NLIModel: keras.saving.serialize_keras_object(model)
  model.weights.h5                 # its weights
  preprocessor.json                # NLIPreprocessor layer: tokenizer, max lengths, labels, parse trees
  tokenizer.json                   # NLITokenizer layer (lowercasing); its vocabulary is an asset:
  assets/tokenizer/vocabulary.txt  # one token per line, line number = id
  task.json                        # NLIClassifier's own settings (fine-tuning optimiser)
  metadata.json                    # versions, counts, paper, data, results, SHA-256 of every other file
  README.md                        # the model card
```
"""

import hashlib
import os

from zoo.errors import UserError
from zoo.runs.kinds import PREPROCESSOR_CONFIG_FILE

# KerasHub's names (keras_hub/src/utils/preset_utils.py).
CONFIG_FILE = "config.json"
MODEL_WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_CONFIG_FILE = "tokenizer.json"
TASK_CONFIG_FILE = "task.json"
METADATA_FILE = "metadata.json"
README_FILE = "README.md"
ASSET_DIR = "assets"
TOKENIZER_ASSET_DIR = f"{ASSET_DIR}/tokenizer"
VOCABULARY_FILE = f"{TOKENIZER_ASSET_DIR}/vocabulary.txt"

# What a preset must have to be loaded (besides metadata.json); README.md and task.json are checked too
# when present.
REQUIRED_FILES = (CONFIG_FILE, MODEL_WEIGHTS_FILE, PREPROCESSOR_CONFIG_FILE, TOKENIZER_CONFIG_FILE,
                  VOCABULARY_FILE)
FORMAT = "nli-zoo-preset"
# 1: the tokenizer and the preprocessor were plain classes (their JSON has no Keras layer keys);
# 2: they are Keras layers (`name`, `trainable`, `dtype` added). This version reads both.
FORMAT_VERSION = 2


class PresetError(UserError):
    """A preset that cannot be written or loaded as asked (one line)."""


class PresetIntegrityError(PresetError):
    """A preset file is missing, unlisted or differs from the SHA-256 that metadata.json records."""


class PresetMismatchError(PresetError):
    """Preset files that do not fit each other (the vocabulary and the embedding table, the weights and
    the config)."""


def sha256(path, chunk=1 << 20):
    """The hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def list_files(directory):
    """The files under `directory` as sorted POSIX relative paths, without metadata.json and hidden files
    (lock files, temporaries, a hub client's `.cache`)."""
    found = []
    for root, folders, names in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in names:
            if name.startswith("."):
                continue
            relative = os.path.relpath(os.path.join(root, name), directory).replace(os.sep, "/")
            if relative != METADATA_FILE:
                found.append(relative)
    return sorted(found)


def checksums(directory):
    """`{relative path: sha256}` of every file of a preset directory but metadata.json."""
    return {name: sha256(os.path.join(directory, *name.split("/"))) for name in list_files(directory)}


def verify_checksums(directory, recorded, where=None):
    """Checks every file a preset needs against the SHA-256 metadata.json records, before anything is
    loaded.

    Args:
        directory: the local preset directory.
        recorded: metadata.json's `checksums`.
        where: how to name the preset in messages (default `directory`).

    Raises:
        PresetIntegrityError: a required file unlisted, a listed file missing, or a file whose bytes differ
            (one line naming the file).
    """
    where = where or directory
    if not isinstance(recorded, dict) or not recorded:
        raise PresetIntegrityError(f"{where}: {METADATA_FILE} records no checksums; re-export the preset "
                                   "with zoo.presets.export_preset")
    for name in REQUIRED_FILES:
        if name not in recorded:
            raise PresetIntegrityError(f"{where}: {METADATA_FILE} records no checksum for {name}; "
                                       "re-export the preset")
    for name, expected in sorted(recorded.items()):
        path = os.path.join(directory, *name.split("/"))
        if os.path.isabs(name) or ".." in name.split("/"):
            raise PresetIntegrityError(f"{where}: {METADATA_FILE} lists a path outside the preset: {name!r}")
        if not os.path.isfile(path):
            raise PresetIntegrityError(f"{where}: {name} is missing (listed in {METADATA_FILE})")
        actual = sha256(path)
        if actual != expected:
            raise PresetIntegrityError(
                f"{where}: {name} does not match its SHA-256 in {METADATA_FILE} (expected {expected[:12]}..., "
                f"found {actual[:12]}...): the file was changed or damaged; download or export the preset again")
