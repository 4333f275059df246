"""The run directory's protocol without a model: a fake epoch writer and a fake trainer that make the run
directory's writes (`zoo.runs.directory.RunDirectory`) in the order `zoo.training.trainer` makes them, for
tests/test_protocol.py's kill matrix (a kill at every write of a run, a fine-tuning and an extension, in
milliseconds, without TensorFlow).

`FakeWeights` is the model and its optimizer: two small arrays in an HDF5 file, as Keras writes weights
(h5py), so the run state's checks (readable files, their SHA-256) apply to them as to a model's. An epoch
of "training" moves them as a function of themselves and the epoch, so a run resumed from another epoch's
weights, or without the optimizer's moments it should have, ends with another history and other results.
The dev accuracy of each epoch is given (`accuracies`), so which epochs improve is the same in every rerun
and can be set to any pattern; the epoch's loss and the test score are functions of the weights.

tests/test_protocol.py also checks that a real tiny training makes the same sequence of writes as the fake
trainer given the same dev accuracies (`write_sequence`), so the two cannot drift apart.
"""

import contextlib
import dataclasses
import json
import os

import h5py
import numpy as np

from zoo.data.vocab import Vocabulary
from zoo.fileio import LOCK_NAME, sha256_file
from zoo.registry import get_preset
from zoo.runs import directory as directory_module
from zoo.runs import layout
from zoo.runs.directory import RunDirectory
from zoo.runs.record import InitFrom, RunRecord, load_record
from zoo.runs.results import RunResults
from zoo.runs.stages import RunStage

MODEL = "bowman_lstm"
SIZE = 6  # weights of the fake model
DEV = (0.40, 0.55, 0.50, 0.60, 0.58, 0.61)  # epoch 1's, epoch 2's, ...: improves at 1, 2, 4, 6


class Killed(BaseException):
    """The in-process kill: a BaseException, so that no `except Exception` of the code under test runs."""


class FakeWeights:
    """A model's and its optimizer's weights (`RunDirectory`'s `save` / `load`), as arrays in an HDF5 file.

    Args:
        seed: the initial weights' seed (the run's `--seed`).
    """

    def __init__(self, seed=0):
        self.model = np.random.default_rng(seed).normal(size=SIZE)
        self.moments = np.zeros(SIZE)

    def save(self, path):
        with h5py.File(path, "w") as f:
            f["model"], f["optimizer"] = self.model, self.moments

    def load(self, path, optimizer=True):
        with h5py.File(path, "r") as f:
            self.model = f["model"][()]
            self.moments = f["optimizer"][()] if optimizer else np.zeros(SIZE)

    def train_epoch(self, epoch):
        """One epoch (0-based `epoch`) of momentum steps; returns its loss."""
        self.moments = 0.9 * self.moments + np.sin(self.model + epoch)
        self.model = self.model - 0.1 * self.moments
        return float(np.sum(self.model ** 2))

    def score(self):
        """The test accuracy of these weights: a function of them."""
        return round(float(0.5 + 0.4 * np.tanh(np.sum(self.model))), 6)


@dataclasses.dataclass
class Job:
    """What a fake run is asked for: `train.py`'s command, less the model.

    Attributes:
        epochs: `--epochs`. seed: `--seed`. init_from: `--init-from` (a finished fake run). overwrite: `--overwrite`.
        accuracies: the dev accuracy of epoch 1, 2, ... (`DEV`).
        patience: early stopping after this many epochs without improvement (None: none).
    """

    epochs: int = 3
    seed: int = 0
    init_from: str = None
    overwrite: bool = False
    accuracies: tuple = DEV
    patience: int = None


def record_of(run_dir, job, init_from=None):
    """The fake run's `RunRecord` (a real one: the registered model's preset, with the job's epochs)."""
    settings = get_preset(MODEL).replace(train={"epochs": job.epochs})
    return RunRecord(model=MODEL, settings=settings, vocabulary_size=5, embedding_dim=SIZE, tunable_words="all",
                     num_tunable=0, lowercase=False, seed=job.seed, init_from=init_from, manifest=True)


def identity(run_dir, job):
    """The entries a rerun must match to resume (`RunConfig.identity`), as the trainer passes them."""
    init = InitFrom(run_dir=os.path.abspath(job.init_from), model=MODEL) if job.init_from else None
    return record_of(run_dir, job, init).identity()


VOCABULARY = Vocabulary.build([["a", "man", "sleeps"], ["a", "dog"]])


def fake_train(run_dir, job):
    """`zoo.training.trainer.train` with `FakeWeights` for the model: the same writes in the same order (see
    the module); returns the run's `RunResults`.

    Raises:
        TrainError: what the trainer raises (another run's settings, a damaged state, a changed source).
    """
    directory = RunDirectory(run_dir)
    with directory.writing():
        stage = directory.prepare(identity(run_dir, job), job.epochs, overwrite=job.overwrite)
        previous = None if stage is RunStage.NEW else load_record(directory.path)
        rebuild_vocabulary = stage is RunStage.FINISHED and not os.path.exists(directory.file(layout.VOCAB_FILE))
        if stage is RunStage.FINISHED and not rebuild_vocabulary:
            return directory.finished(previous)
        if stage is RunStage.EXTEND:
            directory.extend(job.epochs)
        committed = stage is not RunStage.NEW and directory.committed
        recorded_init = previous.init_from if previous is not None else None
        source = start_source(directory, job, None if job.overwrite else recorded_init, committed)
        if rebuild_vocabulary:
            directory.restore_vocabulary(VOCABULARY, previous)
            return directory.finished(previous)
        directory.write_record(record_of(run_dir, job, recorded_init if committed else source))
        directory.write_vocabulary(VOCABULARY)
        weights = FakeWeights(job.seed)
        if source is not None and not committed:  # the copied weights: epoch 0 of the state
            weights.load(os.path.join(job.init_from, layout.BEST_WEIGHTS_FILE), optimizer=False)
            directory.commit_start(weights, job.init_from)
            stage = RunStage.RESUME
        results = fit_and_evaluate(directory, job, weights, stage)
        directory.write_results(results)
        return results


def start_source(directory, job, recorded, committed):
    """The `InitFrom` of `--init-from` (its best weights' SHA-256 now), checked as the trainer checks it."""
    if not job.init_from:
        return None
    digest = sha256_file(os.path.join(job.init_from, layout.BEST_WEIGHTS_FILE))
    directory.check_init_source(job.init_from, digest, recorded.weights_sha256 if recorded else None, committed)
    return InitFrom(run_dir=os.path.abspath(job.init_from), model=MODEL, weights_sha256=digest)


def fit_and_evaluate(directory, job, weights, stage):
    """`fit` with the run's callbacks at each epoch's end (the best named, the history, the commit), then the
    best weights scored."""
    initial = directory.begin(stage, job.epochs, weights)
    if initial is not None:
        best = max((e["val_accuracy"] for e in directory.epochs), default=None)  # the replayed monitor
        waited = 0
        for epoch in range(initial, job.epochs):
            directory.resuming(epoch)
            logs = {"loss": weights.train_epoch(epoch), "val_accuracy": job.accuracies[epoch]}
            improved = best is None or logs["val_accuracy"] > best
            best, waited = (logs["val_accuracy"], 0) if improved else (best, waited + 1)
            if improved:
                directory.name_best(epoch + 1)
            directory.record_epoch(epoch + 1, logs)
            stopped = job.patience is not None and waited >= job.patience
            directory.commit_epoch(epoch + 1, weights, stopped=stopped)
            if stopped:
                break
        directory.end_training()
    best_epoch = directory.load_best(weights)
    test = weights.score()
    return RunResults(test={"accuracy": test, "examples": 32}, dev={"accuracy": test, "examples": 32},
                      test_accuracy=test, dev_accuracy=test, model=MODEL, run_dir=directory.path,
                      epochs_run=len(directory.epochs), best_epoch=best_epoch, history=directory.epochs,
                      labels=("entailment", "neutral", "contradiction"))


# Kills and what must not depend on them --------------------------------------------------------------------
@contextlib.contextmanager
def recording_writes():
    """Records every write step a run makes (`["config@0", "vocab@0", ..., "cleanup"]`) while it lasts, by
    the run directory's kill hook (the steps of `zoo.runs.faults`)."""
    steps, original = [], directory_module.fault_point

    def record(step, epoch=None):
        steps.append(step if epoch is None else f"{step}@{epoch}")
        original(step, epoch)

    directory_module.fault_point = record
    try:
        yield steps
    finally:
        directory_module.fault_point = original


@contextlib.contextmanager
def killed_at(point, occurrence=1):
    """Kills a run (raises `Killed`) right after its `occurrence`-th write step `point` (`"state@2"`), as
    `NLI_ZOO_FAULT_AT` does with SIGKILL: nothing after the step runs."""
    seen, original = [0], directory_module.fault_point

    def kill(step, epoch=None):
        original(step, epoch)
        if (step if epoch is None else f"{step}@{epoch}") == point:
            seen[0] += 1
            if seen[0] == occurrence:
                raise Killed(point)

    directory_module.fault_point = kill
    try:
        yield
    finally:
        directory_module.fault_point = original


def comparable(run_dir):
    """What must not depend on where a run was killed: its history and results (less clock times), its best
    weights, and the files it holds."""
    run_dir = str(run_dir)
    with open(os.path.join(run_dir, layout.HISTORY_FILE), encoding="utf-8") as f:
        history = json.load(f)
    with open(os.path.join(run_dir, layout.RESULTS_FILE), encoding="utf-8") as f:
        results = json.load(f)
    drop = lambda entries: [{k: v for k, v in e.items() if k != "time"} for e in entries]  # noqa: E731
    best = FakeWeights()
    best.load(os.path.join(run_dir, layout.BEST_WEIGHTS_FILE))
    return {"history": drop(history["epochs"]), "finished": history["finished"],
            "results": {**{k: v for k, v in results.items() if k not in ("history", "run_dir")},
                        "history": drop(results["history"])},
            "best": best.model.tolist() + best.moments.tolist(),
            "files": sorted(set(os.listdir(run_dir)) - {LOCK_NAME})}
