"""The run directory as one object: `RunDirectory` owns a training run folder's protocol, every write of a
training run and the kill hook after each (`fault_point`, `zoo.runs.faults`).

A run's writes, in the order a run makes them; each verb below names its kill hooks (`STEP@EPOCH`):

- `writing()`: the writer's lock; on the way out, nothing left of a run that stopped before its `config.json`.
- `prepare(...)`: nothing is written; what a rerun does with the folder (`zoo.runs.layout.prepare_run_dir`).
- `extend(epochs)`: a finished run trained further, its best weights the state's first generation:
  `extend:best`, `state@N`, `prune@N`, `extend:history`, `extend:results`, `manifest@N`.
- `write_record(record)`, `write_vocabulary(vocab)`: `config.json` (from then on a run directory), `vocab.txt`:
  `config@0`, `vocab@0`.
- `commit_start(weights, source)`: `--init-from`'s copied weights, epoch 0 of the state: `weights@0`,
  `state@0`, `prune@0`.
- `begin(stage, epochs, weights)`: the committed state restored into the model, `manifest.json`: `finished`
  (when training is already complete), `started`.
- each epoch N: `name_best(N)` (nothing written: the epoch's weights are named the best) `best@N`;
  `record_epoch(N, logs)` (`history.json`) `history@N`; `commit_epoch(N, weights, stopped)` (the generation's
  weights, `backup/state.json`, the commit, `best.weights.h5`, `manifest.json`): `weights@N`, `state@N`,
  `prune@N`, `publish@N`, `manifest@N`.
- `end_training()`: `history.json` marked finished: `finished`.
- `write_results(results)`: `results.json`, the manifest that seals it, the backup deleted: `results`, `sealed`,
  `cleanup`.
- `finished(record)`: a finished run checked whole, what a kill after its results left removed: `sealed`,
  `cleanup`.

`begin`'s resume and `load_best` are `zoo.runs.restore`'s. The model is never read here: what the protocol
saves and restores goes through a `weights` object with `save(path)` (the model's and optimizer's weights,
written to `path`; the directory makes the write atomic) and `load(path, optimizer)` (`optimizer=False`: the
model's weights only, the optimizer starting again).
`zoo.training.weights.ModelWeights` is the Keras model's; tests/support/protocol.py's fake epoch writer
drives the whole kill-and-resume protocol with this module alone, without TensorFlow. The Keras callbacks
that end an epoch (`zoo.training.callbacks.checkpoints`, `history`) call `name_best`, `record_epoch` and
`commit_epoch`, in that order.

This module imports nothing above `zoo.runs` and no TensorFlow.
"""

import contextlib
import logging
import os
import shutil
import time

from zoo import fileio
from zoo.errors import TrainError
from zoo.runs import layout, restore
from zoo.runs.faults import fault_point
from zoo.runs.manifest import (
    BACKUP_DIR,
    BEST_WEIGHTS_FILE,
    CONFIG_FILE,
    HISTORY_FILE,
    VOCAB_FILE,
    check_run,
    recorded,
    seal,
)
from zoo.runs.record import load_record, save_record
from zoo.runs.results import RESULTS_FILE, read_results, save_results
from zoo.runs.state import (
    RunState,
    generation,
    weights_name,
    weights_readable,
)

logger = logging.getLogger(__name__)


class RunDirectory:
    """A training run's folder and the protocol of its writes (see the module).

    Args:
        path: the run directory.

    Attributes:
        path: the run directory.
        state: its `zoo.runs.state.RunState` (`backup/`).
        history: `{"epochs": [one entry per finished epoch], "finished": bool}`, what `history.json` holds.
        best: the best record `{"epoch": N, "file": name}` of the state, or None before any.
    """

    def __init__(self, path):
        self.path = str(path)
        self.state = RunState(os.path.join(self.path, BACKUP_DIR))
        self.history = {"epochs": [], "finished": False}
        self.best, self._best_changed, self._resumed = None, False, False

    def file(self, name):
        return os.path.join(self.path, name)

    @property
    def best_path(self):
        return self.file(BEST_WEIGHTS_FILE)

    @property
    def epochs(self):
        """The history's entries `{"epoch": 1-based, metric: value, ...}` of the finished epochs."""
        return self.history["epochs"]

    # Open ---------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self):
        """Holds the run directory's lock while a run writes it (a second writer is refused with one line
        naming the holder). A run that stopped before writing its `config.json` leaves nothing behind: not
        its vocabulary, and not the folder when it made it.

        Raises:
            TrainError: another process writes the run, or the path is a file.
        """
        existed, had_config = os.path.isdir(self.path), os.path.exists(self.file(CONFIG_FILE))
        had_vocab = os.path.exists(self.file(VOCAB_FILE))  # a run that lost its config.json keeps it
        try:
            lock = layout.lock(self.path).acquire()
        except (fileio.LockedError, NotADirectoryError) as error:
            raise TrainError(str(error)) from None
        try:
            yield self
        finally:
            lock.release()
            if not had_config and not had_vocab and not os.path.exists(self.file(CONFIG_FILE)):
                with contextlib.suppress(OSError):
                    os.remove(self.file(VOCAB_FILE))
                if not existed:
                    with contextlib.suppress(OSError):
                        os.rmdir(self.path)  # only when empty

    def prepare(self, identity, epochs, overwrite=False):
        """What a run of `identity` asking for `epochs` does with the folder (a `RunStage`;
        `zoo.runs.layout.prepare_run_dir`, which also clears it where that is asked or safe).

        Raises:
            TrainError: another run's settings, a damaged config.json, or an extension asked for fewer epochs.
        """
        try:
            return layout.prepare_run_dir(self.path, identity, epochs, overwrite=overwrite)
        except ValueError as error:
            raise TrainError(str(error)) from None

    @property
    def committed(self):
        """Whether the state holds a committed generation (epoch 0 of a fine-tuning counts)."""
        return self.state.load().current is not None

    def check_init_source(self, source, digest, recorded_digest, committed):
        """A fine-tuning rerun before its copied weights were committed must start from the weights it
        recorded: the source's best weights (`digest`, their SHA-256 now) must not have changed since.

        Raises:
            TrainError: they changed (one line naming both digests and the remedy).
        """
        if recorded_digest and not committed and recorded_digest != digest:
            raise TrainError(f"--init-from {source}: its best weights are no longer those this run started from "
                             f"(SHA-256 {digest[:12]}..., config.json of {self.path} records "
                             f"{recorded_digest[:12]}...: it was trained or exported over since) and this run "
                             "committed no epoch yet: pass --overwrite to start from its current weights")

    # The first writes ---------------------------------------------------------------------------------
    def write_record(self, record):
        """Writes `config.json` (the run's `RunRecord`): the first write, from now on a run directory."""
        os.makedirs(self.path, exist_ok=True)
        save_record(self.path, record)
        fault_point("config", 0)

    def write_vocabulary(self, vocab):
        """Writes `vocab.txt` where it is missing."""
        path = self.file(VOCAB_FILE)
        if not os.path.exists(path):
            vocab.save(path)
            fault_point("vocab", 0)

    def commit_start(self, weights, source):
        """Commits the weights a run starts from (copied from the run `source`, `--init-from`) as epoch 0 of its
        state, before any epoch is trained: a rerun resumes from them whatever happens to `source`."""
        os.makedirs(self.state.backup_dir, exist_ok=True)
        self._save(weights, self.state.path(weights_name(0)))
        fault_point("weights", 0)
        self._commit(generation(0, weights_name(0), [], None, optimizer=False, start="init_from"))
        logger.info(f"the weights of {source} are epoch 0 of {self.state.backup_dir}: a rerun starts from them")

    def restore_vocabulary(self, vocab, record):
        """Writes a finished run's `vocab.txt` again from the vocabulary rebuilt from its data, once checked to
        be the one the run was trained with (its SHA-256 in `manifest.json`).

        Raises:
            zoo.fileio.ManifestError: no manifest to check it against, or a vocabulary that differs.
        """
        path = self.file(VOCAB_FILE)
        expected = (recorded(self.path, expected=record.manifest) or {}).get(VOCAB_FILE)
        if expected is None:
            raise fileio.ManifestError(f"{path} is missing and manifest.json records no checksum to rebuild it "
                                       "against: train the run again with --overwrite", path, VOCAB_FILE)
        tmp = fileio.temporary_name(path)
        vocab.save(tmp)
        if fileio.sha256_file(tmp) != expected:
            os.remove(tmp)
            raise fileio.ManifestError(f"{path} is missing, and the vocabulary rebuilt from the data is not the one "
                                       "the run was trained with (its SHA-256 differs from manifest.json's): the data "
                                       "or the word vectors changed since; put the run's vocab.txt back, or train "
                                       "the run again with --overwrite", path, VOCAB_FILE)
        os.replace(tmp, path)
        logger.info(f"{path} rebuilt from the data (its SHA-256 is the one manifest.json records)")

    def extend(self, epochs):
        """Makes a finished run one that resumes from its best weights with a new optimizer: the first
        generation of its state is the finished run (its best weights, its history), the state records the
        extension's target (`epochs`), and its results are kept as `results.previous.json` until the longer run
        writes new ones (a kill in between resumes the extension, or, before its first epoch, puts the run back).

        Raises:
            TrainError: its best weights are missing (nothing to train further from).
            zoo.fileio.ManifestError: a file that is not the finished run's (one line, the remedy).
        """
        results = read_results(self.path)
        history = results.history
        logger.info(f"{self.path} finished {len(history)} epoch(s): training it further, to {epochs}, from "
                    "its best weights (the optimizer's moments start again; its results so far are kept in "
                    f"{layout.PREVIOUS_RESULTS_FILE})")
        # what it trains further from, as the finished run wrote it (history.json is written again below)
        check_run(self.path, [CONFIG_FILE, BEST_WEIGHTS_FILE, RESULTS_FILE],
                  expected=load_record(self.path).manifest)
        if results.best_epoch is None or not weights_readable(self.best_path):
            raise TrainError(f"{self.path} cannot be trained further: its best weights ({self.best_path}) cannot be "
                             "read; train the run again with --overwrite and the new --epochs")
        shutil.rmtree(self.state.backup_dir, ignore_errors=True)  # a stale one, left by a stop after results.json
        self.state = RunState(self.state.backup_dir)
        self.state.extension = {"from_epoch": len(history), "epochs": int(epochs)}
        best = self.state.save_best_copy(self.best_path, results.best_epoch)
        fault_point("extend:best")
        self._commit(generation(len(history), best["file"], history, best, optimizer=False, start="extension"))
        layout.write_json(self.file(HISTORY_FILE), {"epochs": history, "finished": False})
        fault_point("extend:history")
        os.replace(self.file(RESULTS_FILE), self.file(layout.PREVIOUS_RESULTS_FILE))
        fault_point("extend:results")
        seal(self.path)
        fault_point("manifest", len(history))

    # Before the first epoch ---------------------------------------------------------------------------
    def begin(self, stage, epochs, weights):
        """Brings the model (through `weights`) and the history to the run's committed state, then seals the
        run (its manifest: best.weights.h5 and history.json as the state has them, config.json, vocab.txt).

        Args:
            stage: the `RunStage` `prepare` decided (`EXTEND`: the state `extend` just made, resumed without
                saying so again).
            epochs: the epochs asked for.
            weights: the model's weights (`save`, `load`).

        Returns:
            the epoch to train from (0 for a new run), or None when training is complete (evaluate only).

        Raises:
            TrainError: the run has no consistent state (one line saying what to do).
        """
        initial = restore.start(self, stage, epochs, weights)
        if initial == restore.COMPLETE:
            self._write_history(self.epochs, finished=True)
            fault_point("finished")
            initial = None
        seal(self.path)
        fault_point("started")
        return initial

    def _start_over(self):
        """Training from epoch 1: whatever an earlier attempt wrote before its first commit is dropped."""
        self._write_history([])
        if os.path.exists(self.best_path):
            os.remove(self.best_path)

    # Each epoch ---------------------------------------------------------------------------------------
    def resuming(self, epoch):
        """The first epoch a `fit` begins (0-based `epoch`): the history keeps the epochs before it."""
        if not self._resumed:
            self._resumed = True
            self.history["epochs"] = [e for e in self.epochs if e["epoch"] <= epoch]
            if epoch > 0:
                logger.info(f"resuming from epoch {epoch + 1}")

    def name_best(self, epoch):
        """Names the weights of `epoch` (1-based) the best: written by its commit, published after it."""
        self.best, self._best_changed = {"epoch": int(epoch), "file": weights_name(epoch)}, True
        fault_point("best", epoch)

    def record_epoch(self, epoch, logs):
        """Writes the history with the entry of `epoch` (1-based; `logs`: its scalar metrics)."""
        entry = {"epoch": int(epoch), "time": time.time(), **logs}
        self._write_history([e for e in self.epochs if e["epoch"] < epoch] + [entry])
        fault_point("history", epoch)

    def commit_epoch(self, epoch, weights, stopped=False):
        """Writes the generation of `epoch` (1-based): its weights (the best ones too when it improved: the
        same file), then `backup/state.json` naming them with the history and the best (the commit), then
        `best.weights.h5` copied from it when the best changed, and the run's manifest.

        Args:
            weights: the model's weights (`save`).
            stopped: whether the schedule or early stopping ended training at this epoch.
        """
        os.makedirs(self.state.backup_dir, exist_ok=True)
        self._save(weights, self.state.path(weights_name(epoch)))
        fault_point("weights", epoch)
        self._commit(generation(epoch, weights_name(epoch), self.epochs, self.best, stopped=stopped))
        if self._best_changed:
            self.state.publish_best(self.state.current, self.best_path)
            fault_point("publish", epoch)
        self._best_changed = False
        seal(self.path)  # the run's manifest: its new history.json and best.weights.h5
        fault_point("manifest", epoch)

    def end_training(self):
        """Marks the history finished (`fit` returned)."""
        self._write_history(self.epochs, finished=True)
        fault_point("finished")

    # After training -----------------------------------------------------------------------------------
    def load_best(self, weights):
        """Loads the best weights for the final evaluation and returns their epoch (None: no epoch had a dev
        score, and the last weights are kept as the best; `zoo.runs.restore.load_best`).

        Raises:
            TrainError: no readable copy of the best weights.
        """
        return restore.load_best(self, weights)

    def write_results(self, results):
        """Writes `results.json` (a `RunResults`) and the manifest that seals it, then deletes what it
        supersedes: the backup and a finished run's earlier results (never before: until then the backup is
        what a rerun evaluates)."""
        save_results(self.path, results)
        fault_point("results")
        seal(self.path)
        fault_point("sealed")
        self._finish()

    def finished(self, record=None):
        """The results of a finished run, once it is checked to be whole; what a kill after its results left
        (the backup, earlier results) is removed and a missing, damaged or other `history.json` is written
        again from the results.

        Raises:
            TrainError: its best weights cannot be read (a finished run keeps no other copy of them).
            zoo.fileio.ManifestError: a file that is not the run's (checked against `manifest.json`).
        """
        results, stopped, resealed = layout.check_finished(self.path, record)
        if stopped or resealed:
            seal(self.path)
            fault_point("sealed")
        if stopped:
            self._finish()
            logger.info(f"removed what a stop after writing {RESULTS_FILE} left (backup/, "
                        f"{layout.PREVIOUS_RESULTS_FILE})")
        return results

    # Writes -------------------------------------------------------------------------------------------
    def _save(self, weights, path):
        with fileio.atomic_path(path) as tmp:  # written under a temporary name and renamed: never truncated
            weights.save(tmp)

    def _commit(self, record):
        self.state.commit(record)
        fault_point("state", record["epoch"])
        self.state.prune()
        fault_point("prune", record["epoch"])

    def _write_history(self, epochs, finished=False):
        self.history = {"epochs": list(epochs), "finished": bool(finished)}
        layout.write_json(self.file(HISTORY_FILE), self.history)

    def _finish(self):
        shutil.rmtree(self.state.backup_dir, ignore_errors=True)
        fault_point("cleanup")
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.file(layout.PREVIOUS_RESULTS_FILE))
