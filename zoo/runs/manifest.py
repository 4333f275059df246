"""A run directory's files, and the manifest that says they belong together: `RUN/manifest.json` holds the
SHA-256 of `config.json`, `vocab.txt`, `best.weights.h5`, `history.json` and `results.json`, written again
with each commit of the run (its first write, every epoch, the results), and checked whenever the run is
opened: for evaluation, prediction, export, the diagnostics, a comparison, the demo, a fine-tuning that
starts from it, and by `train.py` when it finds the run finished.

A file that does not match (another run's weights or vocabulary copied in, a damaged file, a file of a
killed writer) is refused in one line naming it and the narrowest remedy that works (`remedy`): a file the
run rebuilds (its vocabulary from the data, its history and best weights from its state or results) is
rebuilt by rerunning `train.py`; a file nothing can rebuild (a finished run's best weights, `config.json`)
is named with `--overwrite`. The backup's own files are checked by the run state (`zoo.runs.state`: each
generation records the SHA-256 of its weights).

A run written before the zoo kept manifests (its `config.json` without `"manifest": true`) is read
unchecked, as before. While `train.py` holds the run (its lock), its files change between two commits: a
mismatch then says so instead of calling the run damaged.

```python
check_run("runs/esim", [CONFIG_FILE, VOCAB_FILE, BEST_WEIGHTS_FILE])    # ManifestError, one line
seal("runs/esim")                                                        # after a commit, by training
```
"""

import os

from zoo import fileio
from zoo.runs.record import CONFIG_FILE, CONFIG_REMEDY
from zoo.runs.results import RESULTS_FILE, RESULTS_REMEDY
from zoo.runs.state import STATE_FILE

VOCAB_FILE = "vocab.txt"
BEST_WEIGHTS_FILE = "best.weights.h5"
BACKUP_DIR = "backup"
HISTORY_FILE = "history.json"
MANIFEST_FILE = "manifest.json"
# The files the manifest covers, in the order a run writes them.
COVERED = (CONFIG_FILE, VOCAB_FILE, BEST_WEIGHTS_FILE, HISTORY_FILE, RESULTS_FILE)

RERUN = "rerun the run's train.py command"
HASHER = fileio.checksums.HASHER  # by inode: a commit hashes only the files it changed


def unfinished(run_dir):
    """Whether the run has a state to resume (`backup/state.json`): training, or stopped before its results."""
    return os.path.exists(os.path.join(run_dir, BACKUP_DIR, STATE_FILE))


def remedy(run_dir, name):
    """The narrowest remedy for a file of the run that is missing, damaged or not the one its manifest records."""
    if name == CONFIG_FILE:
        return CONFIG_REMEDY
    if name == VOCAB_FILE:
        return f"delete it and {RERUN}: it is rebuilt from the data and checked against {MANIFEST_FILE}"
    if unfinished(run_dir):  # the state can write the others again
        what = "the manifest" if name == MANIFEST_FILE else "it"
        return f"the run stopped between two writes, or the file was changed: {RERUN}, which resumes the run and " \
               f"writes {what} again from its state"
    if name == BEST_WEIGHTS_FILE:
        return ("a finished run keeps no other copy of its best weights: train the run again with --overwrite (the "
                "same command gives the same results)")
    if name == HISTORY_FILE:
        return f"delete it: {RERUN} writes it again from {RESULTS_FILE}"
    if name == RESULTS_FILE:
        return RESULTS_REMEDY
    return (f"delete {RESULTS_FILE} and {RERUN}: the best weights are evaluated again and the manifest written with "
            "the new results")


def seal(run_dir):
    """Writes `manifest.json` with the SHA-256 of the run's files as they are now (after a commit)."""
    fileio.write_manifest(run_dir, COVERED, os.path.join(run_dir, MANIFEST_FILE), HASHER)


def remember(path, digest):
    """Tells the manifest's hasher the SHA-256 of a file just written as a copy of one whose digest is known."""
    HASHER.remember(path, digest)


def recorded(run_dir, expected=True):
    """The `{name: sha256}` the run's manifest records; None for a run written before manifests (`expected`
    False: its config.json does not say it keeps one).

    Raises:
        zoo.fileio.ManifestError: the manifest is missing (where expected) or damaged, one line.
    """
    path = os.path.join(run_dir, MANIFEST_FILE)
    files = fileio.read_manifest(path, remedy(run_dir, MANIFEST_FILE))
    if files is None and expected:
        raise fileio.ManifestError(f"{path} is missing, so the run's files cannot be checked: "
                                   f"{remedy(run_dir, MANIFEST_FILE)}", path, MANIFEST_FILE)
    return files


def check_run(run_dir, names, expected=True, holder=None):
    """Checks files of the run against its manifest before they are used.

    Args:
        run_dir: the run directory.
        names: the files about to be read (of `COVERED`).
        expected: whether the run keeps a manifest (`RunRecord.manifest`); False: a run written before
            manifests, checked only if it has one.
        holder: a function returning the live process that holds the run's lock (a `describe_holder`
            text), or None; asked only when a file does not match, to tell a run being written from a
            damaged one.

    Returns:
        True when the files were checked, None for a run without a manifest.

    Raises:
        zoo.fileio.ManifestError: the first file at fault, one line naming it and the remedy.
    """
    try:
        files = recorded(run_dir, expected)
        if files is None:
            return None
        fileio.verify_files(run_dir, files, [n for n in names if n in COVERED], lambda name: remedy(run_dir, name),
                            MANIFEST_FILE, HASHER)
        return True
    except fileio.ManifestError as error:
        writer = holder() if holder is not None else None
        if writer is None:
            raise
        raise fileio.ManifestError(f"{run_dir} is being written by {writer}, so its files change between two "
                                   "commits: wait for it to finish (or stop it), then try again", error.path,
                                   error.name) from None
