"""The training loop behind `train.py`, usable from Python: the orchestration of one run.

```python
import zoo.training
outcome = zoo.training.train(model="bowman_lstm", dataset="snli_sample", embeddings="none", epochs=1)
outcome.results.test_accuracy, outcome.run_dir, outcome.model
```

`train(config)` takes the run's `zoo.training.config.RunConfig` and reads as the run goes: the run directory
prepared or resumed (`zoo.runs.directory.RunDirectory`, which owns every write of the run and its order),
the data and word vectors (`prepare_data`, `zoo.training.inputs`), the model built and compiled under the
distribution strategy (`zoo.training.model`), fitted with the run's callbacks (`zoo.training.callbacks`,
which commit each epoch through the run directory), its best weights reloaded and scored on dev and test
(`zoo.runs.evaluation`). `--members` goes to `zoo.training.ensemble` instead.
"""

import contextlib
import dataclasses
import json
import logging
import os
import time
from typing import Any

import keras
import tensorflow as tf

from zoo.data import LABELS
from zoo.data.pipeline import ShapeLog, encode_pairs
from zoo.data.tokenizer import Tokenizer
from zoo.errors import TrainError, TrainInterrupted
from zoo.fileio import CorruptFileError, LockedError, sha256_file
from zoo.quiet import describe_thread_layout, import_tensorflow
from zoo.runs import layout, load_run
from zoo.runs.datasets import length_grid, length_notes, make_model_batches
from zoo.runs.directory import RunDirectory
from zoo.runs.evaluation import evaluate_examples
from zoo.runs.optimizer import build_optimizer
from zoo.runs.record import load_record
from zoo.runs.results import RunResults
from zoo.runs.stages import RunStage
from zoo.training import callbacks as cb
from zoo.training import compile_cache, inputs
from zoo.training.callbacks.loss_guard import LossGrowthGuard
from zoo.training.config import MIXED_PRECISION
from zoo.training.ensemble import combine_members
from zoo.training.kernels import gpu_plan
from zoo.training.model import build_model, copy_weights, parameter_counts
from zoo.training.outcome import TrainOutcome
from zoo.training.strategy import configure_cpu_devices, describe, follow_chief, make_strategy, worker_task
from zoo.training.untrained import new_record
from zoo.training.weights import ModelWeights

logger = logging.getLogger(__name__)

__all__ = ["TrainError", "TrainOutcome", "train"]


# Settings ----------------------------------------------------------------------------------------
def load_init_run(config, tokenizer, directory, recorded=None, committed=False):
    """The run `--init-from` names, checked to fit the new run (same model, sizes and tokenizer), or None.

    It is read under its lock (a run that trains is refused) and checked against its manifest; its best
    weights' SHA-256 is kept (`Run.weights_sha256`) for the new run's record.

    Args:
        directory: the new run's `RunDirectory`.
        recorded: the `InitFrom` of the run being resumed (its config.json), or None for a new run.
        committed: whether the resumed run's state holds the copied weights already (then they are not
            needed again, and the run may have changed since).

    Raises:
        TrainError: when it cannot be loaded, does not fit, or (a resumed run that has not committed the
            copied weights yet) its best weights are no longer those the run started from.
    """
    if not config.init_from:
        return None
    try:
        with layout.lock(config.init_from):  # not while another process writes it (trains it further)
            run = load_run(config.init_from)
            run.weights_sha256 = sha256_file(os.path.join(config.init_from, layout.BEST_WEIGHTS_FILE))
        results = run.results
    except LockedError as error:
        raise TrainError(f"--init-from {config.init_from}: {error}") from None
    except (FileNotFoundError, ValueError) as error:  # CorruptFileError is a ValueError naming the file
        raise TrainError(f"--init-from: cannot load the run: {error}") from None
    directory.check_init_source(config.init_from, run.weights_sha256,
                                recorded.weights_sha256 if recorded is not None else None, committed)
    old = run.record
    if not getattr(run.model, "embeds_words", True):
        raise TrainError(f"--init-from {config.init_from} is a {old.model!r} run, whose members each have their own "
                         "word vectors: fine-tune each member run, then combine them with --members")
    if old.model != config.model:
        raise TrainError(f"--init-from {config.init_from} is a {old.model!r} run; train {old.model!r} "
                         f"(--model {old.model}) to start from it")
    differences = [f"{key}: {old.settings.model.get(key)!r} there, {value!r} here"
                   for key, value in config.model_settings.items() if old.settings.model.get(key) != value]
    if differences:
        raise TrainError(f"--init-from {config.init_from} has other model settings ({'; '.join(differences)}): "
                         "the architecture and sizes must match")
    if old.tokenizer_config != tokenizer.get_config():
        raise TrainError(f"--init-from {config.init_from} tokenized with {old.tokenizer_config}, this run with "
                         f"{tokenizer.get_config()}: keep the preset's lowercase setting")
    accuracy = None if results is None else results.test_accuracy
    logger.info(f"starting from {config.init_from} ({old.model}, {len(run.vocab):,} words, test accuracy "
                f"{'unknown' if accuracy is None else format(accuracy, '.4f')})")
    return run


def worker_run_dir(run_dir):
    """The directory this process writes: the run directory, or `RUN/workers/TYPE-INDEX` for a non-chief
    worker of the multi-worker strategy created in this process (`zoo.training.strategy.worker_task`),
    reset to a copy of the chief's run state (`zoo.training.strategy.follow_chief`)."""
    task = worker_task()
    if task is None or task.chief:
        return run_dir
    scratch = os.path.join(run_dir, "workers", task.name)
    follow_chief(run_dir, scratch)  # resume where the chief resumes
    return scratch


# Callbacks ---------------------------------------------------------------------------------------
def make_callbacks(config, directory, data, batches, hparams, extra_callbacks=()):
    """The callbacks of `fit`, in the order that keeps the run directory consistent when killed: the
    non-finite loss guard first (it stops before anything of a diverged epoch is written), the best epoch
    named and the history written before the epoch's commit (`EpochCommit`, `RunDirectory.commit_epoch`), the
    epoch marker last, then `extra_callbacks`.

    Args:
        data: the run's `RunData`; batches: its `Batches`; hparams: the run's settings for TensorBoard's
            HParams dashboard beside its preset's (`hparams_of`).

    Returns:
        `(callbacks, loss_guard)`: `loss_guard.report()` says whether the loss grew a thousandfold.
    """
    train, decay, logdir = config.train, config.train.lr_decay, log_dir(config, directory)
    loss_guard = LossGrowthGuard(directory)
    # Keras's progress line first, so that the epoch's line is complete before any callback prints
    callbacks = [cb.EpochProgress(), batches.randomness, cb.StopOnNonFiniteLoss(), loss_guard,
                 cb.BestCheckpoint(directory, monitor="val_accuracy")]
    if decay is not None and decay.on_plateau:
        # Chen et al.'s released schedule: halve and reload the best weights after every epoch without a
        # dev improvement; stop after `patience` halvings.
        callbacks.append(cb.HalveOnPlateau(directory, train.learning_rate, directory.best_path,
                                           monitor="val_accuracy", factor=decay.factor, max_halvings=train.patience,
                                           wait=decay.wait))
    else:
        callbacks += [keras.callbacks.LearningRateScheduler(cb.learning_rate_schedule(train.learning_rate, decay)),
                      cb.ResumableEarlyStopping(directory, monitor="val_accuracy", patience=train.patience)]
    dev_subset = batches.datasets["validation"].take(max(1, 2000 // train.batch_size))
    callbacks += [
        cb.EpochHistory(directory),
        cb.TensorBoard(logdir, log_every=config.log_every),
        cb.HParamsLogger(logdir, cb.flatten_hparams(config.settings.to_json(), hparams),
                         os.path.normpath(config.run_dir)),
        cb.ConfusionImages(logdir, dev_subset, list(LABELS), every=config.images_every),
    ]
    pairs = attention_pairs(data.splits["validation"], data.vocab, data.tokenizer, config.data,
                            config.attention_examples)
    if pairs is not None:
        callbacks.append(cb.AttentionImages(logdir, *pairs, scale=config.attention_scale, every=config.images_every))
    callbacks += [cb.EpochCommit(directory), cb.EpochMarker(config.pause_after_epoch), *extra_callbacks]
    return callbacks, loss_guard


def hparams_of(config, model):
    """The run's settings shown beside its preset's in TensorBoard's HParams dashboard."""
    return {"model": config.model, "embeddings": config.embeddings, "embedding_dim": int(model.embedding_dim),
            "strategy": config.strategy, "mixed_precision": config.mixed_precision or "none", "seed": config.seed,
            "data.source": str(config.source), "init_from": str(config.init_from or "none"),
            "data.max_train_examples": config.max_train_examples or "all",
            "data.max_eval_examples": config.max_eval_examples or "all"}


def log_dir(config, directory):
    """The run's TensorBoard folder: `--logdir` or `RUN/logs` (a non-chief worker's scratch folder logs apart)."""
    chief = directory.path == config.run_dir
    return (config.logdir if chief else None) or directory.file(layout.LOGS_DIR)


def attention_pairs(examples, vocab, tokenizer, data, count):
    """The first `count` pairs, encoded, with their tokens and gold labels (for attention images).

    Args:
        data: the run's `DataSettings` (the maximum lengths).
    """
    if count <= 0:
        return None
    examples = examples[:count]
    lp, lh = data.max_premise_length, data.max_hypothesis_length
    inputs = encode_pairs([(e["premise"], e["hypothesis"]) for e in examples], vocab, tokenizer,
                          max_premise_length=lp, max_hypothesis_length=lh)
    premise = [tokenizer.tokenize(e["premise"])[:lp or None] for e in examples]
    hypothesis = [tokenizer.tokenize(e["hypothesis"])[:lh or None] for e in examples]
    return inputs, premise, hypothesis, [LABELS[e["label"]] for e in examples]


def write_test_summaries(logdir, results, step):
    """Test accuracy scalar and confusion-matrix image in the `test` TensorBoard run (`results`: `RunResults`)."""
    writer = tf.summary.create_file_writer(os.path.join(logdir, "test"))
    with writer.as_default(), tf.summary.record_if(True):
        tf.summary.scalar("test_accuracy", results.test_accuracy, step=step)
    cb.write_confusion_image(writer, results.test["confusion_matrix"], list(LABELS), "confusion_matrix/test",
                          step, "test")
    writer.close()


# Main --------------------------------------------------------------------------------------------
def train(config, callbacks=()):
    """Trains (or resumes) the run `config` describes and evaluates its best weights on test.

    Args:
        config: the run's `RunConfig` (`RunConfig.from_options` of `train.py`'s command line, or
            `RunConfig.create(**options)`).
        callbacks: extra Keras callbacks for `fit`, called after the run's own (so that an epoch's end
            they see is complete: validation, checkpoints, commit, images), e.g. a timer
            (`scripts/benchmark_training.py`) or a notifier. They must not change the run's state.

    Returns:
        a `zoo.training.outcome.TrainOutcome`: the run directory, its `RunResults` and `RunRecord`, and (for a
        run trained in this call) the model with its best weights, the vocabulary, tokenizer and word vectors.

    Raises:
        TrainError: for a user error (unknown model or setting, data, conflicting run directory).
    """
    started = time.time()
    import_tensorflow()  # TensorFlow's thread layout on a CPU, before anything runs (zoo.quiet)
    if config.cpu_devices:
        configure_cpu_devices(config.cpu_devices)
    try:  # first: MultiWorkerMirroredStrategy must exist before TensorFlow runs anything
        strategy = make_strategy(config.strategy, cluster_timeout=config.cluster_timeout)
    except ValueError as error:
        raise TrainError(str(error)) from None
    if config.members:
        with RunDirectory(config.run_dir).writing():
            return combine_members(config)
    inputs.check_available(config.embeddings, config.source)  # offline: one message, every offline option
    with RunDirectory(worker_run_dir(config.run_dir)).writing() as directory:
        try:
            return train_in(directory, config, strategy, started, list(callbacks))
        except CorruptFileError as error:  # a damaged file, or one not the run's (ManifestError): named, one line
            raise TrainError(str(error)) from None


@dataclasses.dataclass
class RunData:
    """What a run trains and is scored on: its splits, tokenizer, vocabulary and word vectors (with their
    report), the notes on cut and empty sentences, and the run it starts from (`--init-from`), if any."""

    splits: dict
    tokenizer: Any
    vocab: Any
    embeddings: Any
    vocabulary_report: dict
    notes: dict
    init_run: Any = None


@dataclasses.dataclass
class Batches:
    """The training and dev batches of `fit`, the batch shapes they gave, and the data order and dropout
    masks of each epoch as a function of (seed, epoch) (`EpochRandomness`: a resumed run is the uninterrupted
    one)."""

    datasets: dict
    shapes: dict
    randomness: Any


def train_in(directory, config, strategy, started, extra_callbacks=()):
    """`train` once the run directory (`RunDirectory`) is locked: prepare or resume it, prepare the data,
    build, fit, evaluate, write the results. The run's first writes make the folder a run directory (its
    record, its vocabulary; a fine-tuning's copied weights as epoch 0 of its state)."""
    stage = directory.prepare(config.identity(), config.train.epochs, overwrite=config.overwrite)
    previous = None if stage is RunStage.NEW else load_record(directory.path)
    rebuild_vocabulary = stage is RunStage.FINISHED and not os.path.exists(directory.file(layout.VOCAB_FILE))
    if stage is RunStage.FINISHED and not rebuild_vocabulary:
        return finished(directory, previous)
    if stage is RunStage.EXTEND:  # (its history from results.json: history.json is written again from it)
        directory.extend(config.train.epochs)  # the state's first generation: the best weights
    logger.info(f"run directory {directory.path} ({'resuming' if stage is not RunStage.NEW else 'new run'})")
    logger.debug(f"configuration: {json.dumps(config.to_json(), sort_keys=True, default=str)}")
    keras.utils.set_random_seed(config.seed)
    logger.info(f"strategy: {describe(strategy)}; TensorFlow threads: {describe_thread_layout(tf)}")
    committed = stage is not RunStage.NEW and directory.committed
    recorded_init = previous.init_from if previous is not None else None
    data = prepare_data(config, directory, stage, recorded_init, committed)
    if rebuild_vocabulary:  # a finished run whose vocab.txt was deleted: rebuilt, checked, nothing trained
        directory.restore_vocabulary(data.vocab, previous)
        return finished(directory, previous)
    record = new_record(config, data.vocab, data.embeddings, data.vocabulary_report, data.init_run,
                        init_from=recorded_init if committed else None)
    directory.write_record(record)  # the first write: the folder is a run directory from now on
    directory.write_vocabulary(data.vocab)
    with mixed_precision(config.mixed_precision):
        model = build_model(config.model, config.settings, len(data.vocab), data.embeddings, strategy,
                            jit_compile=config.jit)
        if data.init_run is not None and not committed:  # the copied weights: epoch 0 of the state
            copy_weights(data.init_run.model, model)
            directory.commit_start(ModelWeights(model), data.init_run.run_dir)
            stage = RunStage.RESUME
        results = fit_and_evaluate(config, directory, model, data, stage, strategy, extra_callbacks)
    results = results.replace(vocabulary=data.vocabulary_report, inputs=data.notes,
                              timing={**results.timing, "total_seconds": time.time() - started})
    directory.write_results(results)  # then the backup and earlier results go: only now are results safe
    return TrainOutcome(directory.path, results, record, model=model, vocab=data.vocab, tokenizer=data.tokenizer,
                        embeddings=data.embeddings)


def prepare_data(config, directory, stage, recorded_init, committed):
    """The run's `RunData`: its corpus splits, tokenizer, the run it starts from (checked to fit), vocabulary
    and word vectors, and the cut and empty sentences of each split (counted, printed, kept in results.json).

    Args:
        recorded_init: the `InitFrom` of the run being resumed (its config.json), or None.
        committed: whether the run's state holds a committed generation.
    """
    splits, _ = inputs.load_splits(config.source, config.max_train_examples, config.max_eval_examples,
                                   fields=config.fields, labels=config.labels, roles=config.roles)
    tokenizer = Tokenizer(lowercase=config.data.lowercase)
    # --overwrite on a run that committed nothing yet: it starts from the source's weights as they are now
    init_run = load_init_run(config, tokenizer, directory, None if config.overwrite else recorded_init, committed)
    tokens = inputs.tokenize_splits(tokenizer, splits)
    vocab, embeddings, report = inputs.vocabulary_and_vectors(
        config.embeddings, config.data, directory.path, stage is not RunStage.NEW, tokenizer, splits,
        seed=config.seed, init_run=init_run, tokens=tokens, random_dim=config.random_vectors_dim)
    notes = {split: length_notes(splits[split], tokenizer, config.data, split, tokens=tokens[split])
             for split in splits}
    return RunData(splits, tokenizer, vocab, embeddings, report, notes, init_run)


@contextlib.contextmanager
def mixed_precision(name):
    """Keras's global dtype policy for `--mixed-precision NAME` (None: as it is) while the run builds and fits."""
    previous = keras.mixed_precision.global_policy()
    if name:
        keras.mixed_precision.set_global_policy(MIXED_PRECISION[name])
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def finished(directory, record):
    """A finished run's results, once its files are checked (`RunDirectory.finished`)."""
    try:
        results = directory.finished(record)
    except ValueError as error:  # a file that is not the run's (ManifestError), named with its remedy
        raise TrainError(str(error)) from None
    logger.info(f"{directory.path} already finished (pass --overwrite to train again)")
    return TrainOutcome(directory.path, results, record, trained=False)


def make_batches(config, data):
    """The training and dev batches of the preset (`make_model_batches`; the training batches shuffled per
    epoch by the run's `EpochRandomness`)."""
    shapes = {"train": ShapeLog(), "validation": ShapeLog()}
    randomness = cb.EpochRandomness()  # the data order and dropout masks of epoch N: f(seed, N), resumable
    datasets = {split: make_model_batches(data.splits[split], data.vocab, data.tokenizer, config.settings,
                                          shuffle=split == "train" and config.shuffle, seed=config.seed,
                                          bucket=config.bucket, shape_log=shapes[split], report_trees=split,
                                          epoch=randomness.epoch if split == "train" else None)
                for split in ("train", "validation")}
    grid = length_grid(config.data)
    logger.info(f"batch shapes: at most {grid.num_cells} ({grid}), batch dimension {config.train.batch_size}")
    return Batches(datasets, shapes, randomness)


def fit_and_evaluate(config, directory, model, data, stage, strategy, extra_callbacks=()):
    """Fits with the run's callbacks and `extra_callbacks` after them (unless training already finished),
    reloads the best weights and scores them on dev and test. `strategy` is the one the model was built under
    (`make_strategy`; under JAX, where a Keras model has no `distribute_strategy`, TensorFlow's default
    strategy, which distributes nothing).

    Returns:
        the `RunResults` (written to `results.json` by the caller).
    """
    batches = make_batches(config, data)
    callbacks, loss_guard = make_callbacks(config, directory, data, batches, hparams_of(config, model),
                                           extra_callbacks)
    gpu_notices(model, strategy)
    fit_started, weights = time.time(), ModelWeights(model)
    with strategy.scope():  # the optimizer's variables, mirrored like the model's
        initial_epoch = directory.begin(stage, config.train.epochs, weights)  # None: training is complete
        if initial_epoch is not None:  # no state restored: the zero moments now, one trace of the step
            build_optimizer(model)
    if initial_epoch is not None:
        fit_in_cluster(model, batches.datasets, config, callbacks, initial_epoch, directory.path)
        logger.info(f"training saw {batches.shapes['train'].describe()}; validation saw "
                    f"{batches.shapes['validation'].describe()}")
    fit_seconds = time.time() - fit_started
    best_epoch = directory.load_best(weights)  # the epoch of the weights evaluated, reported as best_epoch
    eval_started = time.time()
    dev = evaluate_examples(model, data.splits["validation"], data.vocab, data.tokenizer, config.settings)
    test = evaluate_examples(model, data.splits["test"], data.vocab, data.tokenizer, config.settings)
    results = RunResults(
        model=config.model, run_dir=directory.path, test=test, dev=dev, epochs_run=len(directory.epochs),
        best_epoch=best_epoch, history=directory.epochs, parameters=parameter_counts(model),
        embeddings={"source": config.embeddings, "dim": int(model.embedding_dim), "coverage": data.embeddings.coverage,
                    "tunable_words": model.tunable_words, "num_tunable": int(model.num_tunable)},
        labels=tuple(LABELS), batch_shapes={split: sorted(list(s) for s in log.shapes)
                                            for split, log in batches.shapes.items()},
        timing={"fit_seconds_this_process": fit_seconds, "eval_seconds": time.time() - eval_started},
        loss_growth=loss_guard.report())
    write_test_summaries(log_dir(config, directory), results, max(len(directory.epochs) - 1, 0))
    cb.write_hparams_metrics(log_dir(config, directory), results)  # the HParams session shows results.json's
    return results


def gpu_notices(model, strategy):
    """The GPU-only notices of a run (where there is no GPU they say nothing true): its LSTMs on cuDNN, XLA; and
    a run compiled with XLA without a compilation cache."""
    if tf.config.list_logical_devices("GPU"):
        plan = gpu_plan(model, distributed=strategy.num_replicas_in_sync > 1)
        logger.info(f"XLA (jit_compile): {model.jit_compile}; on a TensorFlow GPU: {len(plan['cudnn_lstms'])} "
                    f"LSTM(s) on cuDNN, {len(plan['loops'])} other recurrent loop(s); {plan['why']}")
    if model.jit_compile and compile_cache.UNAVAILABLE:
        logger.warning(f"no compilation cache: {compile_cache.UNAVAILABLE['why']}; set NLI_ZOO_CACHE or "
                       "--compile-cache to a writable folder to keep the compiled steps for a rerun")


def fit_in_cluster(model, datasets, config, callbacks, initial_epoch, run_dir):
    """`model.fit` over the training and dev datasets from `initial_epoch`; under `--strategy multi_worker`,
    a peer that stops mid-training (killed, machine lost) ends this worker with one line instead of a
    TensorFlow traceback; a non-finite loss and Ctrl-C end it with one line saying what was kept.

    Raises:
        TrainError: a worker of the cluster stopped, the loss diverged, or the user interrupted.
    """
    try:
        model.fit(datasets["train"], validation_data=datasets["validation"], epochs=config.train.epochs,
                  initial_epoch=initial_epoch, callbacks=callbacks, verbose=config.fit_verbose, shuffle=False)
    except cb.NonFiniteLossError as error:
        raise TrainError(f"{error}: training stopped, no results written; {run_dir} keeps the state of the last "
                         f"good epoch. Lower the learning rate or check the word vectors, then train again "
                         f"(--overwrite, or another --run-dir)") from None
    except KeyboardInterrupt:
        raise TrainInterrupted(f"interrupted: {run_dir} keeps every finished epoch; rerun the same command to "
                               "resume after the last one") from None
    except tf.errors.OpError as error:  # the class a lost peer surfaces as varies (Unavailable, Aborted, ...)
        if config.strategy != "multi_worker":
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise TrainError(f"training stopped on a TensorFlow error in the cluster ({type(error).__name__}: "
                         f"{first[:200]}); if a worker stopped, rerun every worker's command to resume from the "
                         "last finished epoch") from None
