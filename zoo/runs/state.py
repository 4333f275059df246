"""A run's state: what a rerun of `train.py` resumes from, one generation per epoch, committed by one file.

After each epoch the run writes a new generation into `RUN/backup/`, then commits it:

```
backup/
  epoch-N.weights.h5   # the model's and optimizer's weights after epoch N
  epoch-K.weights.h5   # those of epoch K, the best so far on dev: kept while a generation names it as its best
  best-K.weights.h5    # best weights written apart: a finished run's, trained further, and runs of earlier versions
  state.json           # written last, atomically: names the files of the committed generations
```

`state.json` holds `{"format": 2, "generations": [newest, previous]}`; each generation is
`{"epoch": N, "weights": "epoch-N.weights.h5", "optimizer": true, "best": {"epoch": K, "file":
"epoch-K.weights.h5"}, "history": [one entry per finished epoch], "stopped": false, "sha256": {file: digest}}`.
The best weights are the weights file of the epoch that was best (the same weights need no second file).
Its history and best are those of that epoch, so a generation is the whole state of the run after epoch N:
the model, the optimizer's moments, the history the resumable callbacks replay (best value, early stopping,
the halving schedule), and which epoch the best weights are. A kill at any instant leaves either the old
`state.json` or the new one, each naming files written whole before it (`zoo.fileio` writes every file under
a temporary name and renames it). Files no committed generation names are leftovers of a generation that was
not committed, and are deleted.

Each generation is checked before a resume trusts it: its epoch against its history (entries 1 to N) and
the name of its weights, and its files against the SHA-256 it records. One that does not agree (a hand edit,
a file of another epoch or run) is set aside with a line saying why, and the run resumes from the one before.

Two kinds of generation hold weights without an optimizer (`"optimizer": false`): epoch 0 of a run started
from another (`--init-from`: the copied weights, committed with the run's first writes, so a rerun never
starts from anything else), and the first generation of a finished run trained further (its best weights).
A run trained further also records its target in the state (`"extension": {"from_epoch": N, "epochs": M}`), so
that a rerun asking for fewer epochs is told, not finished half-way.

`history.json` and `best.weights.h5` in the run directory are the views of the newest generation that
evaluation, export and the diagnostics read; a resume writes both again from the state, so a kill between
their writes and the commit changes nothing.

The previous generation is kept so that a newest one that cannot be read (a disk that lost it, a hand edit)
falls back one epoch, exactly, instead of failing on every rerun. `backup/` is deleted once `results.json`
is written.

This module imports nothing of the zoo above `zoo.fileio` and `zoo.errors` (it is below `zoo.runs.layout`), and
writes no kill hook: `zoo.runs.directory.RunDirectory` commits the state and names each write.
"""

import contextlib
import logging
import os
import shutil

import h5py

from zoo import fileio
from zoo.errors import TrainError

logger = logging.getLogger(__name__)

STATE_FILE = "state.json"
FORMAT = 2
GENERATIONS_KEPT = 2
_WEIGHT_FILES = ("epoch-", "best-")
_SUFFIX = ".weights.h5"


class RunStateError(TrainError):
    """A run directory without a consistent state to resume from: one line saying what to do."""


def weights_name(epoch):
    """The file of a generation's model and optimizer weights."""
    return f"epoch-{epoch}{_SUFFIX}"


def best_name(epoch):
    """The file of the best weights, those of `epoch`."""
    return f"best-{epoch}{_SUFFIX}"


def best_epoch_of(history, monitor="val_accuracy"):
    """The epoch `BestCheckpoint` keeps: the first of the highest `monitor` values (None without any)."""
    scored = [e for e in history if e.get(monitor) is not None]
    return max(scored, key=lambda e: e[monitor])["epoch"] if scored else None


def generation(epoch, weights, history, best, stopped=False, optimizer=True, sha256=None, start=None):
    """One generation's record (see the module).

    Args:
        sha256: `{file name: SHA-256}` of the files it names (checked before they are loaded).
        start: `"init_from"` (epoch 0 of a fine-tuning: the copied weights) or `"extension"` (a finished run's
            best weights, trained further), else None.
    """
    record = {"epoch": int(epoch), "weights": weights, "optimizer": bool(optimizer), "best": best,
              "history": list(history), "stopped": bool(stopped)}
    if sha256:
        record["sha256"] = dict(sha256)
    if start:
        record["start"] = start
    return record


def inconsistency(record):
    """Why a generation's fields disagree with each other (its epoch, its history, the names of its files), or
    None: a generation relabelled by hand as another epoch is not resumed from."""
    epoch, history = record["epoch"], record["history"]
    numbers = [e.get("epoch") if isinstance(e, dict) else None for e in history]
    if numbers != list(range(1, epoch + 1)):
        shown = numbers[:3] + ["..."] if len(numbers) > 3 else numbers
        return f"it says epoch {epoch} but its history holds epochs {shown}"
    best = record.get("best")
    if best is not None and (best["epoch"] > epoch
                             or best["file"] not in (weights_name(best["epoch"]), best_name(best["epoch"]))):
        return f"its best weights {best['file']} (epoch {best['epoch']}) do not fit epoch {epoch}"
    best_kept = best is not None and not record.get("optimizer", True)
    allowed = {weights_name(epoch)} | ({best["file"]} if best_kept else set())
    if record["weights"] not in allowed:
        return f"it says epoch {epoch} but names the weights {record['weights']}"
    return None


def is_complete(record, epochs):
    """Whether training ended at this generation: early stopping or the halving schedule stopped it, or it
    trained the `epochs` asked for."""
    return bool(record["stopped"]) or record["epoch"] >= epochs


class RunState:
    """The generations of `backup_dir` (see the module).

    Args:
        backup_dir: the run's `backup/` folder.

    Attributes:
        generations: the committed generations, newest first, once `load` ran ([] when none), less those
            whose fields disagree (`rejected`).
        rejected: `[(epoch, why)]` of the generations set aside by `load` (see `inconsistency`).
        legacy: the epochs of a `state.json` written by the zoo before generations existed, else None.
        extension: `{"from_epoch": N, "epochs": M}` while a finished run of N epochs is trained further to M,
            else None (written with every commit).
    """

    def __init__(self, backup_dir):
        self.backup_dir = backup_dir
        self.run_dir = os.path.dirname(os.path.abspath(backup_dir))
        self.generations = []
        self.rejected = []
        self.legacy = None
        self.extension = None

    @property
    def state_path(self):
        return os.path.join(self.backup_dir, STATE_FILE)

    def path(self, name):
        return os.path.join(self.backup_dir, name)

    @property
    def current(self):
        """The newest committed generation, or None."""
        return self.generations[0] if self.generations else None

    @property
    def remedy(self):
        return (f"the run cannot resume exactly from it: delete {self.backup_dir} to train again from epoch 1, or "
                "pass --overwrite")

    def load(self):
        """Reads `state.json` (nothing when there is none).

        Returns:
            self.

        Raises:
            RunStateError: a damaged or unknown state file, one line saying what to do.
        """
        self.generations, self.rejected, self.legacy, self.extension = [], [], None, None
        try:
            data = fileio.read_json(self.state_path, None, remedy=self.remedy)
        except fileio.CorruptFileError as error:
            raise RunStateError(str(error)) from None
        if data is None:
            return self
        if isinstance(data, dict) and "format" not in data and isinstance(data.get("epochs"), list):
            self.legacy = [int(e) for e in data["epochs"] if isinstance(e, int)]
            return self
        if not (isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("generations"), list)
                and data["generations"] and all(_valid(g) for g in data["generations"])):
            raise RunStateError(f"{self.state_path}: not a run state this version of the zoo wrote; {self.remedy}")
        extension = data.get("extension")
        if extension is not None and not (isinstance(extension, dict) and isinstance(extension.get("from_epoch"), int)
                                          and isinstance(extension.get("epochs"), int)):
            raise RunStateError(f"{self.state_path}: its extension is not one this version of the zoo wrote; "
                                f"{self.remedy}")
        self.extension = extension
        for record in data["generations"]:
            why = inconsistency(record)
            if why is None:
                self.generations.append(record)
            else:
                self.rejected.append((record["epoch"], why))
        if not self.generations:
            raise RunStateError(f"{self.state_path}: no generation of it can be trusted ({self.rejected[0][1]}); "
                                f"{self.remedy}")
        return self

    def check_files(self, record):
        """Checks the files `record` names against the SHA-256 it records (generations written before the state
        kept them are taken as found).

        Raises:
            RunStateError: a file that is missing or not the one committed, one line naming it.
        """
        names = [record["weights"]] + ([record["best"]["file"]] if record.get("best") else [])
        for name in dict.fromkeys(names):
            path = self.path(name)
            if not os.path.exists(path):
                raise RunStateError(f"{path} is missing")
            expected = (record.get("sha256") or {}).get(name)
            if expected is not None and fileio.checksums.HASHER(path) != expected:
                raise RunStateError(f"{path} is not the file the state committed (its SHA-256 differs)")

    def commit(self, record):
        """Makes `record` the newest generation: `state.json` written (the commit; `prune` then deletes the files
        no kept generation names). Every file `record` names must be written already."""
        epoch = record["epoch"]
        if "sha256" not in record:
            record = dict(record, sha256=self.digests(record))
        kept = [record] + [g for g in self.generations if g["epoch"] < epoch][:GENERATIONS_KEPT - 1]
        os.makedirs(self.backup_dir, exist_ok=True)
        written = {"format": FORMAT, "generations": kept}
        if self.extension is not None:
            written["extension"] = self.extension
        fileio.write_json(self.state_path, written)
        self.generations = kept

    def keep_only(self, record):
        """After resuming from `record` (perhaps an older generation than the newest), forget the newer ones:
        the next commit keeps `record` as its previous generation."""
        self.generations = [record]

    def prune(self):
        """Deletes the weight files no committed generation names (those of a generation a kill stopped
        before its commit, or older than the kept ones) and the temporaries of dead writers."""
        if not os.path.isdir(self.backup_dir):
            return
        named = set()
        for record in self.generations:
            named.add(record.get("weights"))
            named.add((record.get("best") or {}).get("file"))
        for name in os.listdir(self.backup_dir):
            if name.startswith(_WEIGHT_FILES) and name.endswith(_SUFFIX) and name not in named:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.path(name))
        fileio.clean_stale_temporaries(self.backup_dir)

    def publish_best(self, record, best_path):
        """Writes `best_path` (the run's `best.weights.h5`) as a copy of `record`'s best weights, or
        removes a stale one when the generation has none."""
        best = record.get("best")
        if best is None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(best_path)
            return
        with fileio.atomic_path(best_path) as tmp:
            shutil.copyfile(self.path(best["file"]), tmp)
        digest = (record.get("sha256") or {}).get(best["file"])
        if digest is not None:  # a copy: the manifest need not hash it again
            fileio.checksums.HASHER.remember(best_path, digest)

    def save_best_copy(self, source, epoch):
        """Copies `source` (a finished run's `best.weights.h5`, of `epoch`) into the backup; returns its
        best record."""
        os.makedirs(self.backup_dir, exist_ok=True)
        with fileio.atomic_path(self.path(best_name(epoch))) as tmp:
            shutil.copyfile(source, tmp)
        return {"epoch": int(epoch), "file": best_name(epoch)}

    def digests(self, record):
        """`{file: SHA-256}` of the files a new generation names (for its `sha256`)."""
        names = [record["weights"]] + ([record["best"]["file"]] if record.get("best") else [])
        return {name: fileio.checksums.HASHER(self.path(name)) for name in dict.fromkeys(names)}

    def convert_legacy(self, history, best_path, finished=False):
        """The generation of a backup written before generations existed (`{"epochs": [N, N-1]}` and the
        run's `history.json` and `best.weights.h5` beside it), committed in the current format.

        That format wrote the best weights and the history before the backup, so a kill between them left
        them an epoch ahead of it. Ahead by an epoch that did not improve on dev, they still are the state
        after epoch N (the history is cut there); ahead by one that did, the best weights of epoch N are
        gone, and this says so.

        Args:
            history: the entries of the run's `history.json`.
            best_path: the run's `best.weights.h5`.
            finished: whether `history.json` says training finished (then at its last epoch).

        Raises:
            RunStateError: no backup epoch that the history covers, or best weights ahead of it.
        """
        for epoch in self.legacy or []:
            if not os.path.exists(self.path(weights_name(epoch))):
                continue
            entries = [e for e in history if e["epoch"] <= epoch]
            if [e["epoch"] for e in entries] != list(range(1, epoch + 1)):
                continue
            best_epoch = best_epoch_of(entries)
            after = [e for e in history if e["epoch"] == epoch + 1]
            best_value = None if best_epoch is None else entries[best_epoch - 1]["val_accuracy"]
            if after and after[0].get("val_accuracy") is not None and (
                    best_value is None or after[0]["val_accuracy"] > best_value):
                break  # best.weights.h5 holds epoch N + 1's weights
            best = None
            if best_epoch is not None and os.path.exists(best_path):
                best = self.save_best_copy(best_path, best_epoch)
            logger.warning(f"{self.backup_dir} was written by an earlier version of the zoo: resuming "
                           f"from its epoch {epoch}")
            self.legacy = None
            self.commit(generation(epoch, weights_name(epoch), entries, best,
                                   stopped=finished and len(entries) == len(history)))
            self.prune()
            return self.current
        raise RunStateError(f"{self.backup_dir} was written by an earlier version of the zoo and stopped between "
                            "the writes of an epoch: the run cannot resume exactly; pass --overwrite to train again")


def _valid(record):
    """Whether a generation record has the fields a resume reads."""
    if not (isinstance(record, dict) and isinstance(record.get("epoch"), int)
            and isinstance(record.get("history"), list) and isinstance(record.get("weights"), str)):
        return False
    best = record.get("best")
    return best is None or (isinstance(best, dict) and isinstance(best.get("file"), str)
                            and isinstance(best.get("epoch"), int))


def weights_readable(path):
    """Whether an HDF5 weights file opens (a truncated or emptied one does not)."""
    try:
        with h5py.File(path, "r"):
            return True
    except (OSError, ValueError):
        return False
