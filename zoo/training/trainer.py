"""The training loop behind `train.py`, usable from Python: the orchestration of one run.

```python
import zoo.training
outcome = zoo.training.train(model="bowman_lstm", dataset="snli_sample", embeddings="none", epochs=1)
outcome.results.test_accuracy, outcome.run_dir, outcome.model
```

`train(config)` takes the run's `zoo.training.config.RunConfig`, prepares or resumes the run directory
(`zoo.runs.layout`), loads the data and word vectors (`zoo.training.inputs`), builds and compiles the
model under the distribution strategy (`zoo.training.model`), fits it with the run's callbacks
(`zoo.training.callbacks`), reloads the best weights and scores them on dev and test
(`zoo.runs.evaluation`). `--members` goes to `zoo.training.ensemble` instead.
"""

import contextlib
import json
import logging
import os
import time

import keras
import tensorflow as tf

from zoo.data import LABELS
from zoo.data.pipeline import ShapeLog, encode_pairs
from zoo.data.tokenizer import Tokenizer
from zoo.errors import TrainError, TrainInterrupted
from zoo.fileio import CorruptFileError, LockedError, sha256_file
from zoo.quiet import describe_thread_layout, import_tensorflow
from zoo.runs import layout, load_run
from zoo.runs.faults import fault_point
from zoo.runs.datasets import length_grid, length_notes, make_model_batches
from zoo.runs.evaluation import evaluate_examples, format_results
from zoo.runs.optimizer import build_optimizer
from zoo.runs.record import load_record, save_record
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

logger = logging.getLogger(__name__)

__all__ = ["TrainError", "TrainOutcome", "train"]


# Settings ----------------------------------------------------------------------------------------
def load_init_run(config, tokenizer, recorded=None, committed=False):
    """The run `--init-from` names, checked to fit the new run (same model, sizes and tokenizer), or None.

    It is read under its lock (a run that trains is refused) and checked against its manifest; its best
    weights' SHA-256 is kept (`Run.weights_sha256`) for the new run's record.

    Args:
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
    expected = recorded.weights_sha256 if recorded is not None else None
    if expected and not committed and expected != run.weights_sha256:
        raise TrainError(f"--init-from {config.init_from}: its best weights are no longer those this run started from "
                         f"(SHA-256 {run.weights_sha256[:12]}..., config.json of {config.run_dir} records "
                         f"{expected[:12]}...: it was trained or exported over since) and this run committed no epoch "
                         f"yet: pass --overwrite to start from its current weights")
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
    logger.info(f"[train] starting from {config.init_from} ({old.model}, {len(run.vocab):,} words, test accuracy "
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
def make_callbacks(config, run_dir, logdir, model_dev_pairs, dev_subset, trial_id, extra_hparams):
    """The callbacks of `fit`, in the order that keeps the run directory consistent when killed: the
    non-finite loss guard first (it stops before anything of a diverged epoch is written), best checkpoint
    and history before the backup, which commits the epoch's state (`zoo.runs.state`), the epoch marker last.

    Returns:
        `(callbacks, history, backup, loss_guard)`: `backup.start(...)` brings the run to the state to resume
        from; `loss_guard.report()` says whether the loss grew a thousandfold.
    """
    history = cb.EpochHistory(os.path.join(run_dir, layout.HISTORY_FILE))
    train = config.train
    best_path = os.path.join(run_dir, layout.BEST_WEIGHTS_FILE)
    backup_dir = os.path.join(run_dir, layout.BACKUP_DIR)
    decay = train.lr_decay
    best = cb.BestCheckpoint(history, monitor="val_accuracy")
    backup = cb.Backup(backup_dir, history=history, best=best, best_path=best_path)
    loss_guard = LossGrowthGuard(history)
    # Keras's progress line first, so that the epoch's line is complete before any callback prints
    callbacks = [cb.EpochProgress(), cb.StopOnNonFiniteLoss(), loss_guard, best]
    if decay is not None and decay.on_plateau:
        # Chen et al.'s released schedule: halve and reload the best weights after every epoch without a
        # dev improvement; stop after `patience` halvings.
        callbacks.append(cb.HalveOnPlateau(history, train.learning_rate, best_path, monitor="val_accuracy",
                                           factor=decay.factor, max_halvings=train.patience, wait=decay.wait))
    else:
        callbacks += [keras.callbacks.LearningRateScheduler(cb.learning_rate_schedule(train.learning_rate, decay)),
                      cb.ResumableEarlyStopping(history, monitor="val_accuracy", patience=train.patience)]
    callbacks += [
        history,
        cb.TensorBoard(logdir, log_every=config.log_every),
        cb.HParamsLogger(logdir, cb.flatten_hparams(config.settings.to_json(), extra_hparams), trial_id),
        cb.ConfusionImages(logdir, dev_subset, list(LABELS), every=config.images_every),
    ]
    if model_dev_pairs is not None:
        callbacks.append(cb.AttentionImages(logdir, *model_dev_pairs, scale=config.attention_scale,
                                            every=config.images_every))
    callbacks += [backup, cb.EpochMarker(config.pause_after_epoch)]
    return callbacks, history, backup, loss_guard


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
            they see is complete: validation, checkpoints, backup, images), e.g. a timer
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
        with run_directory(config.run_dir):
            return combine_members(config)
    inputs.check_available(config.embeddings, config.source)  # offline: one message, every offline option
    run_dir = worker_run_dir(config.run_dir)
    with run_directory(run_dir):
        try:
            return train_in(run_dir, config, strategy, started, list(callbacks))
        except CorruptFileError as error:  # a damaged file, or one not the run's (ManifestError): named, one line
            raise TrainError(str(error)) from None


@contextlib.contextmanager
def run_directory(run_dir):
    """Holds the run directory's lock while a run writes it (a second writer is refused with one line
    naming the holder). A run that stopped before writing its `config.json` leaves nothing behind: not its
    vocabulary, and not the folder when it made it."""
    existed, had_config = os.path.isdir(run_dir), os.path.exists(os.path.join(run_dir, layout.CONFIG_FILE))
    try:
        lock = layout.lock(run_dir).acquire()
    except (LockedError, NotADirectoryError) as error:
        raise TrainError(str(error)) from None
    try:
        yield
    finally:
        lock.release()
        if not had_config and not os.path.exists(os.path.join(run_dir, layout.CONFIG_FILE)):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(run_dir, layout.VOCAB_FILE))
            if not existed:
                with contextlib.suppress(OSError):
                    os.rmdir(run_dir)  # only when empty


def train_in(run_dir, config, strategy, started, extra_callbacks=()):
    """`train` once the run directory is locked.

    The run's first writes make it a run directory: `config.json` (kill hook `config@0`), then `vocab.txt`
    (`vocab@0`), then, for a run started from another (`--init-from`), the copied weights as epoch 0 of its
    state (`weights@0`, `state@0`, `prune@0`): a rerun after a kill at any of them resumes the same run.
    """
    identity = config.identity()
    try:
        state = layout.prepare_run_dir(run_dir, identity, config.train.epochs, overwrite=config.overwrite)
    except ValueError as error:  # another run's settings, a damaged config.json, or a shorter extension (named)
        raise TrainError(str(error)) from None
    vocab_path = os.path.join(run_dir, layout.VOCAB_FILE)
    previous = None if state is RunStage.NEW else load_record(run_dir)
    rebuild_vocabulary = state is RunStage.FINISHED and not os.path.exists(vocab_path)
    if state is RunStage.FINISHED and not rebuild_vocabulary:
        return finished(run_dir, previous)
    if state is RunStage.EXTEND:  # (its history from results.json: history.json is written again from it)
        history = {"epochs": layout.read_results(run_dir).history}
        logger.info(f"[train] {run_dir} finished {len(history['epochs'])} epoch(s): training it further, to "
                    f"{config.train.epochs}, from its best weights (the optimizer's moments start again; "
                    f"its results so far are kept in {layout.PREVIOUS_RESULTS_FILE})")
        layout.start_extension(run_dir, config.train.epochs)  # the state's first generation: the best weights
    os.makedirs(run_dir, exist_ok=True)
    logger.info(f"[train] run directory {run_dir} ({'resuming' if state is not RunStage.NEW else 'new run'})")
    logger.debug(f"[train] configuration: {json.dumps(config.to_json(), sort_keys=True, default=str)}")
    keras.utils.set_random_seed(config.seed)
    logger.info(f"[train] strategy: {describe(strategy)}; TensorFlow threads: {describe_thread_layout(tf)}")

    splits, _ = inputs.load_splits(config.source, config.max_train_examples, config.max_eval_examples,
                                   fields=config.fields, labels=config.labels, roles=config.roles)
    tokenizer = Tokenizer(lowercase=config.data.lowercase)
    committed = state is not RunStage.NEW and layout.current_generation(run_dir) is not None
    recorded_init = previous.init_from if previous is not None else None
    # --overwrite on a run that committed nothing yet: it starts from the source's weights as they are now
    init_run = load_init_run(config, tokenizer, None if config.overwrite else recorded_init, committed)
    tokens = inputs.tokenize_splits(tokenizer, splits)
    vocab, embeddings, vocabulary_report = inputs.vocabulary_and_vectors(
        config.embeddings, config.data, run_dir, state is not RunStage.NEW, tokenizer, splits, seed=config.seed,
        init_run=init_run, tokens=tokens, random_dim=config.random_vectors_dim)
    if rebuild_vocabulary:  # a finished run whose vocab.txt was deleted: rebuilt, checked, nothing trained
        layout.restore_vocabulary(run_dir, vocab, previous)
        return finished(run_dir, previous)
    # pairs cut at the maximum lengths and empty sentences: counted, printed, kept in results.json
    notes = {split: length_notes(splits[split], tokenizer, config.data, split, tokens=tokens[split])
             for split in splits}
    record = new_record(config, vocab, embeddings, vocabulary_report, init_run,
                        init_from=recorded_init if committed else None)
    save_record(run_dir, record)  # the first write: the folder is a run directory from now on
    fault_point("config", 0)
    if not os.path.exists(vocab_path):
        vocab.save(vocab_path)
        fault_point("vocab", 0)

    previous_policy = keras.mixed_precision.global_policy()
    if config.mixed_precision:
        keras.mixed_precision.set_global_policy(MIXED_PRECISION[config.mixed_precision])
    try:
        model = build_model(config.model, config.settings, len(vocab), embeddings, strategy, jit_compile=config.jit)
        if init_run is not None and not committed:  # the copied weights: epoch 0 of the state, before any epoch
            copy_weights(init_run.model, model)
            layout.commit_start(run_dir, model, init_run.run_dir)
            state = RunStage.RESUME
        results = fit_and_evaluate(config, run_dir, model, splits, vocab, tokenizer, embeddings.coverage, state,
                                   strategy, extra_callbacks)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    results = results.replace(vocabulary=vocabulary_report, inputs=notes,
                              timing={**results.timing, "total_seconds": time.time() - started})
    layout.write_results(run_dir, results)  # then the backup and earlier results go: only now are results safe
    logger.info(format_results(results))
    return TrainOutcome(run_dir, results, record, model=model, vocab=vocab, tokenizer=tokenizer,
                        embeddings=embeddings)


def finished(run_dir, record):
    """A finished run's results, once its files are checked (`zoo.runs.layout.finished_run`)."""
    try:
        results = layout.finished_run(run_dir, record)
    except ValueError as error:  # a file that is not the run's (ManifestError), named with its remedy
        raise TrainError(str(error)) from None
    logger.info(f"[train] {run_dir} already finished (pass --overwrite to train again)")
    logger.info(format_results(results))
    return TrainOutcome(run_dir, results, record, trained=False)


def fit_and_evaluate(config, run_dir, model, splits, vocab, tokenizer, coverage, state, strategy,
                     extra_callbacks=()):
    """Fits with the run's callbacks and `extra_callbacks` after them (unless training already finished),
    reloads the best weights and evaluates them on dev and test. `strategy` is the one the model was built
    under (`make_strategy`; under JAX, where a Keras model has no `distribute_strategy`, TensorFlow's
    default strategy, which distributes nothing).

    Returns:
        the `RunResults` (written to `results.json` by the caller).
    """
    settings = config.settings
    shapes = {"train": ShapeLog(), "validation": ShapeLog()}
    randomness = cb.EpochRandomness()  # the data order and dropout masks of epoch N: f(seed, N), resumable
    datasets = {split: make_model_batches(splits[split], vocab, tokenizer, settings,
                                    shuffle=split == "train" and config.shuffle, seed=config.seed,
                                    bucket=config.bucket, shape_log=shapes[split], report_trees=split,
                                    epoch=randomness.epoch if split == "train" else None)
                for split in ("train", "validation")}
    grid = length_grid(config.data)
    logger.info(f"[train] batch shapes: at most {grid.num_cells} ({grid}), batch dimension {config.train.batch_size}")
    chief_logdir = run_dir == config.run_dir
    logdir = (config.logdir if chief_logdir else None) or os.path.join(run_dir, layout.LOGS_DIR)
    dev_subset = datasets["validation"].take(max(1, 2000 // config.train.batch_size))
    pairs = attention_pairs(splits["validation"], vocab, tokenizer, config.data, config.attention_examples)
    extra = {"model": config.model, "embeddings": config.embeddings, "embedding_dim": int(model.embedding_dim),
             "strategy": config.strategy, "mixed_precision": config.mixed_precision or "none", "seed": config.seed,
             "data.source": str(config.source), "init_from": str(config.init_from or "none"),
             "data.max_train_examples": config.max_train_examples or "all",
             "data.max_eval_examples": config.max_eval_examples or "all"}
    callbacks, history, backup, loss_guard = make_callbacks(config, run_dir, logdir, pairs, dev_subset,
                                                            os.path.normpath(config.run_dir), extra)
    callbacks.insert(1, randomness)
    callbacks += list(extra_callbacks)
    if tf.config.list_logical_devices("GPU"):  # a GPU-only notice: where there is none it says nothing true
        plan = gpu_plan(model, distributed=strategy.num_replicas_in_sync > 1)
        logger.info(f"[train] XLA (jit_compile): {model.jit_compile}; on a TensorFlow GPU: {len(plan['cudnn_lstms'])} "
                    f"LSTM(s) on cuDNN, {len(plan['loops'])} other recurrent loop(s); {plan['why']}")
    if model.jit_compile and compile_cache.UNAVAILABLE:
        logger.warning(f"[train] no compilation cache: {compile_cache.UNAVAILABLE['why']}; set NLI_ZOO_CACHE or "
                       "--compile-cache to a writable folder to keep the compiled steps for a rerun")
    fit_started = time.time()
    backup.set_model(model)
    with strategy.scope():  # the optimizer's variables, mirrored like the model's
        initial_epoch = backup.start(state, config.train.epochs)  # None: training is complete
        if initial_epoch is not None:  # no state restored: the zero moments now, one trace of the step
            build_optimizer(model)
    layout.seal(run_dir)  # best.weights.h5 and history.json as the state has them, config.json, vocab.txt
    fault_point("started")
    if initial_epoch is not None:
        fit_in_cluster(model, datasets, config, callbacks, initial_epoch, run_dir)
        logger.info(f"[train] training saw {shapes['train'].describe()}; validation saw "
                    f"{shapes['validation'].describe()}")
    fit_seconds = time.time() - fit_started
    best_epoch = backup.load_best()  # the epoch of the weights evaluated, reported as results' best_epoch
    eval_started = time.time()
    dev = evaluate_examples(model, splits["validation"], vocab, tokenizer, settings)
    test = evaluate_examples(model, splits["test"], vocab, tokenizer, settings)
    epochs = history.epochs
    results = RunResults(
        model=config.model, run_dir=run_dir, test=test, dev=dev, epochs_run=len(epochs), best_epoch=best_epoch,
        history=epochs, parameters=parameter_counts(model),
        embeddings={"source": config.embeddings, "dim": int(model.embedding_dim), "coverage": coverage,
                    "tunable_words": model.tunable_words, "num_tunable": int(model.num_tunable)},
        labels=tuple(LABELS),
        batch_shapes={split: sorted(list(s) for s in log.shapes) for split, log in shapes.items()},
        timing={"fit_seconds_this_process": fit_seconds, "eval_seconds": time.time() - eval_started},
        loss_growth=loss_guard.report())
    write_test_summaries(logdir, results, max(len(epochs) - 1, 0))
    cb.write_hparams_metrics(logdir, results)  # the HParams session shows what results.json reports
    return results


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
