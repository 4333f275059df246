"""The files of an exported SavedModel version beside its graph: `assets.extra/zoo.json` (what the zoo needs to
read the version: model name, labels, tokenizer, truncation; the few-rows loop its graph was traced with,
`"loop"`, read back by `zoo.export.loop_tuning.LoopChoice.from_json`, absent from exports before it) and
`assets.extra/manifest.json`, the SHA-256 of every other file of the version (the graph, the variables,
`assets/vocab.txt`, `zoo.json`, the warm-up requests), written last, before the version is renamed into place.

Every reader of the zoo checks a version against its manifest before loading it (`verify_saved_model`:
`zoo.export.predictor.SavedModelPredictor`, and so `evaluate`, `predict`, the diagnostics and the demo;
`predict.py --saved-model DIR --check` checks alone). TF Serving itself does not read the manifest: check a
version with that command before pointing a server at it (docs/serving.md).
"""

import json
import os

from zoo import fileio
from zoo.constants import LABELS

METADATA_PATH = "assets.extra/zoo.json"
MANIFEST_PATH = "assets.extra/manifest.json"  # TF Serving ignores assets.extra/ but for its warm-up requests
MANIFEST_REMEDY = "the export was changed or damaged since it was written: export the run again (a new version)"


def write_metadata_file(saved_model_dir, metadata):
    """Writes `assets.extra/zoo.json` atomically."""
    os.makedirs(os.path.join(saved_model_dir, "assets.extra"), exist_ok=True)
    with fileio.atomic_write(os.path.join(saved_model_dir, *METADATA_PATH.split("/")), "w") as f:
        json.dump(metadata, f, indent=2, sort_keys=True)
        f.write("\n")


def read_metadata(saved_model_dir):
    """The `assets.extra/zoo.json` of an exported SavedModel (labels default to `zoo.data.LABELS`).

    Raises:
        zoo.fileio.CorruptFileError: a damaged file (one line naming it).
    """
    path = os.path.join(saved_model_dir, *METADATA_PATH.split("/"))
    metadata = fileio.read_json(path, remedy=MANIFEST_REMEDY)
    if metadata is None:
        return {"labels": list(LABELS)}
    if not isinstance(metadata, dict) or not isinstance(metadata.get("labels", []), list) \
            or not isinstance(metadata.get("loop", {}), dict):
        raise fileio.CorruptFileError(f"{path}: not the metadata export.py writes: {MANIFEST_REMEDY}", path)
    return metadata


def version_files(saved_model_dir):
    """The files of a SavedModel version a manifest covers (relative POSIX paths, the manifest excluded)."""
    found = []
    for root, _, names in os.walk(saved_model_dir):
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), saved_model_dir).replace(os.sep, "/")
            if relative != MANIFEST_PATH:
                found.append(relative)
    return sorted(found)


def write_manifest(saved_model_dir):
    """Writes `assets.extra/manifest.json`: the SHA-256 of every other file of the version (the graph, the
    variables, `assets/vocab.txt`, `assets.extra/zoo.json`, the warm-up requests)."""
    fileio.write_manifest(saved_model_dir, version_files(saved_model_dir),
                          os.path.join(saved_model_dir, *MANIFEST_PATH.split("/")))


def verify_saved_model(saved_model_dir):
    """Checks every file of a SavedModel version against its manifest before it is loaded; a version written
    before manifests (its zoo.json does not name one) is taken as it is.

    Returns:
        the number of files checked (0: no manifest to check against).

    Raises:
        zoo.fileio.ManifestError: a file missing, changed or not listed, or the manifest missing or damaged (one
            line naming the file: export the run again).
    """
    manifest = os.path.join(saved_model_dir, *MANIFEST_PATH.split("/"))
    expected = os.path.exists(manifest) or bool(read_metadata(saved_model_dir).get("manifest"))
    if not expected:
        return 0
    recorded = fileio.read_manifest(manifest, MANIFEST_REMEDY)
    if recorded is None:
        raise fileio.ManifestError(f"{manifest} is missing, so the version's files cannot be checked: "
                                   f"{MANIFEST_REMEDY}", manifest, MANIFEST_PATH)
    names = sorted(set(recorded) | set(version_files(saved_model_dir)))
    fileio.verify_files(saved_model_dir, recorded, names, lambda name: MANIFEST_REMEDY, MANIFEST_PATH)
    return len(names)
