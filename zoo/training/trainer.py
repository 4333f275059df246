"""The training loop behind `train.py`, usable from Python.

```python
import zoo.training
result = zoo.training.train(model="bowman_lstm", dataset="snli_sample", embeddings="none", epochs=1)
result["results"]["test"]["accuracy"], result["run_dir"]
```

`train(args)` takes the parsed `train.py` command line (or `training_options(**kwargs)`), prepares or
resumes the run directory (`zoo.training.runs`), loads the data and word vectors
(`zoo.training.inputs`), builds and compiles the model under the distribution strategy, fits it with
the run's callbacks, reloads the best weights and scores them on dev and test
(`zoo.training.evaluation`).
"""

import os
import time

from zoo.training import runs
from zoo.training.inputs import TrainError

__all__ = ["TrainError", "train", "training_options"]


def training_options(**options):
    """`train.py`'s options as keyword arguments (`model="esim", data_dir=..., overrides=["k=v"]`).

    Unset options take the command line's defaults.

    Raises:
        TypeError: for an option `train.py` does not have.
    """
    from zoo.training.cli import build_parser

    args = build_parser().parse_args(["--model", str(options.get("model", ""))])
    unknown = set(options) - set(vars(args))
    if unknown:
        raise TypeError(f"unknown training option(s) {sorted(unknown)}; options: {sorted(vars(args))}")
    for key, value in options.items():
        setattr(args, key, value)
    return args


# Settings ----------------------------------------------------------------------------------------
def resolve_preset(args):
    """The model's paper preset with the command line's overrides applied.

    Raises:
        TrainError: for an unknown model or setting, or a malformed `--set`.
    """
    import zoo
    from zoo.registry import apply_overrides
    from zoo.training.cli import collect_overrides

    try:
        preset = zoo.get_preset(args.model)
        return apply_overrides(preset, collect_overrides(args))
    except ValueError as error:
        raise TrainError(str(error)) from None


def run_identity(args, preset):
    """The config entries that must match to resume in an existing run directory."""
    identity = {
        "model": args.model,
        "preset": preset,
        "embeddings": args.embeddings,
        "data": {"source": args.data_dir or args.dataset, "fields": args.fields, "labels": args.labels,
                 "roles": args.roles, "max_train_examples": args.max_train_examples,
                 "max_eval_examples": args.max_eval_examples, "shuffle": not args.no_shuffle,
                 "bucket": not args.no_bucket},
        "seed": args.seed,
    }
    if args.embeddings == "none":
        identity["embedding_dim"] = args.embedding_dim
    if getattr(args, "init_from", None):
        identity["init_from"] = os.path.abspath(args.init_from)
    return identity


def check_vectors_available(embeddings):
    """Fetches named word vectors now (at once when cached), so that a machine without network stops
    before any data is read, with the offline options in the message.

    Raises:
        TrainError: when they can be neither found in the cache nor downloaded.
    """
    from zoo.data.vectors import CATALOG, fetch_vectors

    if embeddings in CATALOG:
        try:
            fetch_vectors(embeddings)
        except (RuntimeError, OSError, ValueError) as error:
            raise TrainError(str(error)) from None


def load_init_run(args, preset, tokenizer):
    """The run `--init-from` names, checked to fit the new run (same model, sizes and tokenizer), or None.

    Raises:
        TrainError: when it cannot be loaded or does not fit.
    """
    if not args.init_from:
        return None
    try:
        run = runs.load_run(args.init_from)
    except (FileNotFoundError, ValueError) as error:
        raise TrainError(f"--init-from: cannot load the run: {error}") from None
    old = run.config
    if old["model"] != args.model:
        raise TrainError(f"--init-from {args.init_from} is a {old['model']!r} run; train {old['model']!r} "
                         f"(--model {old['model']}) to start from it")
    differences = [f"{key}: {old['preset']['model'].get(key)!r} there, {value!r} here"
                   for key, value in preset["model"].items() if old["preset"]["model"].get(key) != value]
    if differences:
        raise TrainError(f"--init-from {args.init_from} has other model settings ({'; '.join(differences)}): "
                         "the architecture and sizes must match")
    if old["tokenizer"] != tokenizer.get_config():
        raise TrainError(f"--init-from {args.init_from} tokenized with {old['tokenizer']}, this run with "
                         f"{tokenizer.get_config()}: keep the preset's lowercase setting")
    print(f"[train] starting from {args.init_from} ({old['model']}, {len(run.vocab):,} words, test accuracy "
          f"{(run.results or {}).get('test_accuracy')})", flush=True)
    return run


def copy_weights(source, target):
    """Copies every weight but the word vectors (set from the merged matrix) from one model to another."""
    skip = {id(w) for w in source.embedding.weights} | {id(w) for w in target.embedding.weights}
    pairs = [(a, b) for a, b in zip([w for w in source.weights if id(w) not in skip],
                                    [w for w in target.weights if id(w) not in skip])]
    for a, b in pairs:
        if tuple(a.shape) != tuple(b.shape):
            raise TrainError(f"--init-from: weight {a.path} has shape {tuple(a.shape)}, the new model's "
                             f"{b.path} {tuple(b.shape)}")
        b.assign(a)


def worker_run_dir(run_dir):
    """The directory this process writes: the run directory, or `RUN/workers/TYPE-INDEX` for a non-chief
    worker of the multi-worker strategy created in this process (`zoo.training.strategy.worker_task`),
    reset to a copy of the chief's run state (`zoo.training.strategy.follow_chief`)."""
    from zoo.training.strategy import follow_chief, worker_task

    task = worker_task()
    if task is None or task.chief:
        return run_dir
    scratch = os.path.join(run_dir, "workers", task.name)
    follow_chief(run_dir, scratch)  # resume where the chief resumes
    return scratch


# Model -------------------------------------------------------------------------------------------
def make_optimizer(train):
    """The optimizer of the preset's train section (Adam with its betas, epsilon and global_clipnorm)."""
    import keras

    name = train.get("optimizer", "adam").lower()
    clip = {"global_clipnorm": train["global_clipnorm"]} if train.get("global_clipnorm") else {}
    if name == "adam":
        return keras.optimizers.Adam(learning_rate=float(train["learning_rate"]), beta_1=train["beta_1"],
                                     beta_2=train["beta_2"], epsilon=train.get("epsilon", 1e-7), **clip)
    try:
        return keras.optimizers.get({"class_name": name, "config": {"learning_rate": float(train["learning_rate"]), **clip}})
    except ValueError as error:
        raise TrainError(f"unknown optimizer {name!r}: {error}") from None


def make_loss(model, l2=0.0):
    """The training loss: `zoo.training.losses.NLILoss` over the model's non-embedding weight matrices."""
    from zoo.training.losses import NLILoss

    embedding_ids = {id(w) for w in model.embedding.weights}
    weights = [w for w in model.trainable_weights if id(w) not in embedding_ids and len(w.shape) > 1]
    return NLILoss(l2=l2 or 0.0, weights=weights)


def build_model(model_name, preset, vocab_size, embeddings, strategy, jit_compile="auto"):
    """Creates, loads the vectors into, and compiles the model inside the strategy scope.

    Args:
        model_name: the registered name.
        preset: the run's preset.
        vocab_size: rows of the embedding table.
        embeddings: `inputs.vocabulary_and_vectors`' tuple (matrix, mask, dim, tunable_words, num_tunable, _).
        strategy: the `tf.distribute.Strategy`.
        jit_compile: `"auto"` (Keras decides, see docs/training.md), True or False.
    """
    import keras
    import zoo

    matrix, mask, dim, tunable_words, num_tunable, _ = embeddings
    with strategy.scope():
        try:
            model = zoo.create_model(model_name, vocabulary_size=vocab_size, embedding_dim=dim,
                                     tunable_words=tunable_words, num_tunable=num_tunable, **preset["model"])
        except (TypeError, ValueError) as error:
            raise TrainError(f"cannot build {model_name!r} with {preset['model']}: {error}") from None
        if matrix is not None:
            model.set_embeddings(matrix, mask)
        if jit_compile is True:
            from zoo.training.kernels import use_xla_loops

            use_xla_loops(model)  # else Keras keeps XLA off on a GPU for cuDNN-capable LSTMs
        model.compile(optimizer=make_optimizer(preset["train"]), loss=make_loss(model, preset["train"].get("l2")),
                      weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=jit_compile)
    return model


# Callbacks ---------------------------------------------------------------------------------------
def make_callbacks(args, preset, run_dir, logdir, model_dev_pairs, dev_subset, trial_id, extra_hparams):
    """The callbacks of `fit`, in the order that keeps the run directory consistent when killed:
    best checkpoint and history are written before the backup, the epoch marker last.

    Returns:
        `(callbacks, history)`.
    """
    import keras

    from zoo.data import LABELS
    from zoo.training import callbacks as cb

    history = cb.EpochHistory(os.path.join(run_dir, runs.HISTORY_FILE))
    train = preset["train"]
    best_path = os.path.join(run_dir, runs.BEST_WEIGHTS_FILE)
    decay = train.get("lr_decay")
    callbacks = [keras.callbacks.ModelCheckpoint(best_path, monitor="val_accuracy", mode="max",
                                                 save_best_only=True, save_weights_only=True,
                                                 initial_value_threshold=cb.best_of(history.epochs))]
    if cb.is_plateau_schedule(decay):
        # Chen et al.'s released schedule: halve and reload the best weights after every epoch without a
        # dev improvement; stop after `patience` halvings.
        callbacks.append(cb.HalveOnPlateau(history, train["learning_rate"], best_path, monitor="val_accuracy",
                                           factor=decay.get("factor", 0.5), max_halvings=train.get("patience")))
    else:
        callbacks += [keras.callbacks.LearningRateScheduler(cb.learning_rate_schedule(train["learning_rate"], decay)),
                      cb.ResumableEarlyStopping(history, monitor="val_accuracy", patience=train.get("patience"))]
    callbacks += [
        history,
        cb.TensorBoard(logdir, update_freq=args.log_every if args.log_every > 0 else "epoch"),
        cb.HParamsLogger(logdir, cb.flatten_hparams(preset, extra_hparams), trial_id),
        cb.ConfusionImages(logdir, dev_subset, list(LABELS)),
    ]
    if model_dev_pairs is not None:
        callbacks.append(cb.AttentionImages(logdir, *model_dev_pairs))
    callbacks += [keras.callbacks.BackupAndRestore(os.path.join(run_dir, runs.BACKUP_DIR)),
                  cb.EpochMarker(args.pause_after_epoch)]
    return callbacks, history


def attention_pairs(examples, vocab, tokenizer, preset, count):
    """The first `count` pairs, encoded, with their tokens and gold labels (for attention images)."""
    from zoo.data import LABELS
    from zoo.data.pipeline import encode_pairs

    if count <= 0:
        return None
    examples = examples[:count]
    data = preset["data"]
    lp, lh = data["max_premise_length"], data["max_hypothesis_length"]
    inputs = encode_pairs([(e["premise"], e["hypothesis"]) for e in examples], vocab, tokenizer,
                          max_premise_length=lp, max_hypothesis_length=lh)
    premise = [tokenizer.tokenize(e["premise"])[:lp or None] for e in examples]
    hypothesis = [tokenizer.tokenize(e["hypothesis"])[:lh or None] for e in examples]
    return inputs, premise, hypothesis, [LABELS[e["label"]] for e in examples]


def write_test_summaries(logdir, results, step):
    """Test accuracy scalar and confusion-matrix image in the `test` TensorBoard run."""
    import tensorflow as tf

    from zoo.data import LABELS
    from zoo.training.callbacks import write_confusion_image

    writer = tf.summary.create_file_writer(os.path.join(logdir, "test"))
    with writer.as_default(), tf.summary.record_if(True):
        tf.summary.scalar("test_accuracy", results["test"]["accuracy"], step=step)
    write_confusion_image(writer, results["test"]["confusion_matrix"], list(LABELS), "confusion_matrix/test",
                          step, "test")
    writer.close()


# Main --------------------------------------------------------------------------------------------
def train(args):
    """Trains (or resumes) the run described by `args` and evaluates its best weights on test.

    Args:
        args: the parsed `train.py` command line, or `training_options(...)`.

    Returns:
        `{"run_dir", "results", "model", "vocab", "tokenizer", "config"}`.

    Raises:
        TrainError: for a user error (unknown model or setting, data, conflicting run directory).
    """
    started = time.time()
    from zoo.training.strategy import configure_cpu_devices, describe, make_strategy

    if args.cpu_devices:
        configure_cpu_devices(args.cpu_devices)
    try:  # first: MultiWorkerMirroredStrategy must exist before TensorFlow runs anything
        strategy = make_strategy(args.strategy, cluster_timeout=args.cluster_timeout)
    except ValueError as error:
        raise TrainError(str(error)) from None
    import keras

    from zoo.data import LABELS
    from zoo.data.tokenizer import Tokenizer
    from zoo.training import inputs
    from zoo.training.evaluation import format_results

    preset = resolve_preset(args)
    args.embeddings = preset["data"]["embeddings"]  # the paper's vectors unless --embeddings says otherwise
    if args.members:
        return combine_members(args, preset)
    check_vectors_available(args.embeddings)
    run_dir = worker_run_dir(args.run_dir or runs.default_run_dir(args.model))
    identity = run_identity(args, preset)
    try:
        state = runs.prepare_run_dir(run_dir, identity, overwrite=args.overwrite)
    except runs.RunConflictError as error:
        raise TrainError(str(error)) from None
    if state == "finished":
        results = runs.read_json(os.path.join(run_dir, runs.RESULTS_FILE))
        print(f"[train] {run_dir} already finished (pass --overwrite to train again)")
        print(format_results(results))
        return {"run_dir": run_dir, "results": results}
    os.makedirs(run_dir, exist_ok=True)
    print(f"[train] run directory {run_dir} ({'resuming' if state != 'new' else 'new run'})", flush=True)
    keras.utils.set_random_seed(args.seed)
    print(f"[train] strategy: {describe(strategy)}", flush=True)

    splits, _ = inputs.load_splits(args.data_dir or args.dataset, args.max_train_examples, args.max_eval_examples,
                                   fields=args.fields, labels=args.labels, roles=args.roles)
    tokenizer = Tokenizer(lowercase=preset["data"]["lowercase"])
    init_run = load_init_run(args, preset, tokenizer)
    vocab, embeddings, vocabulary_report = inputs.vocabulary_and_vectors(
        args.embeddings, preset, run_dir, state != "new", tokenizer, splits, seed=args.seed, init_run=init_run)
    if embeddings[2] is None:
        embeddings = embeddings[:2] + (args.embedding_dim,) + embeddings[3:]
    _, _, dim, tunable_words, num_tunable, coverage = embeddings
    config = dict(identity, vocabulary_size=len(vocab), embedding_dim=dim, tunable_words=tunable_words,
                  num_tunable=num_tunable, tokenizer=tokenizer.get_config(), labels=list(LABELS),
                  mixed_precision=args.mixed_precision, strategy=args.strategy, vocabulary=vocabulary_report)
    if init_run is not None:
        config["init_from"] = {"run_dir": os.path.abspath(init_run.run_dir), "model": init_run.config["model"],
                               "data": init_run.config.get("data"), "test_accuracy": (init_run.results or {}).get(
                                   "test_accuracy")}
    runs.save_config(run_dir, config)

    previous_policy = keras.mixed_precision.global_policy()
    if args.mixed_precision:
        from zoo.training.cli import MIXED_PRECISION

        keras.mixed_precision.set_global_policy(MIXED_PRECISION[args.mixed_precision])
    try:
        jit_compile = {"auto": "auto", "true": True, "false": False}[str(args.jit_compile).lower()]
        model = build_model(args.model, preset, len(vocab), embeddings, strategy, jit_compile=jit_compile)
        if init_run is not None and state == "new":
            copy_weights(init_run.model, model)
        results = fit_and_evaluate(args, preset, run_dir, model, splits, vocab, tokenizer, coverage, state)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    results["vocabulary"] = vocabulary_report
    results["timing"]["total_seconds"] = time.time() - started
    runs.write_json(os.path.join(run_dir, runs.RESULTS_FILE), results)
    print(format_results(results), flush=True)
    return {"run_dir": run_dir, "results": results, "model": model, "vocab": vocab, "tokenizer": tokenizer,
            "config": config}


def fit_and_evaluate(args, preset, run_dir, model, splits, vocab, tokenizer, coverage, state):
    """Fits with the run's callbacks (unless training already finished), reloads the best weights and
    evaluates them on dev and test.

    Returns:
        the results dict (written to `results.json` by the caller).
    """
    from zoo.data.pipeline import ShapeLog
    from zoo.data import LABELS
    from zoo.training import inputs
    from zoo.training.evaluation import evaluate_examples

    shapes = {"train": ShapeLog(), "validation": ShapeLog()}
    datasets = {split: inputs.make_dataset(splits[split], vocab, tokenizer, preset,
                                           shuffle=split == "train" and not args.no_shuffle, seed=args.seed,
                                           bucket=not args.no_bucket, shape_log=shapes[split], report_trees=split)
                for split in ("train", "validation")}
    print(f"[train] batch shapes: at most {inputs.length_grid(preset).num_cells} "
          f"({inputs.length_grid(preset)}), batch dimension {preset['train']['batch_size']}", flush=True)
    chief_logdir = run_dir == (args.run_dir or runs.default_run_dir(args.model))
    logdir = (args.logdir if chief_logdir else None) or os.path.join(run_dir, runs.LOGS_DIR)
    dev_subset = datasets["validation"].take(max(1, 2000 // preset["train"]["batch_size"]))
    pairs = attention_pairs(splits["validation"], vocab, tokenizer, preset, args.attention_examples)
    extra = {"embeddings": args.embeddings, "embedding_dim": int(model.embedding_dim),
             "strategy": args.strategy, "mixed_precision": args.mixed_precision or "none", "seed": args.seed}
    callbacks, history = make_callbacks(args, preset, run_dir, logdir, pairs, dev_subset,
                                        os.path.basename(os.path.abspath(run_dir)), extra)
    from zoo.training.kernels import gpu_plan

    plan = gpu_plan(model, distributed=model.distribute_strategy.num_replicas_in_sync > 1)
    print(f"[train] XLA (jit_compile): {model.jit_compile}; on a TensorFlow GPU: {len(plan['cudnn_lstms'])} LSTM(s) "
          f"on cuDNN, {len(plan['loops'])} other recurrent loop(s); {plan['why']}", flush=True)
    fit_started = time.time()
    if state != "evaluate":
        fit_in_cluster(model, datasets, preset, callbacks, args)
        print(f"[train] training saw {shapes['train'].describe()}; validation saw "
              f"{shapes['validation'].describe()}", flush=True)
    fit_seconds = time.time() - fit_started
    best_path = os.path.join(run_dir, runs.BEST_WEIGHTS_FILE)
    if os.path.exists(best_path):
        model.load_weights(best_path)
    else:  # no epoch improved on nothing (e.g. NaN accuracy): keep the last weights as the best
        model.save_weights(best_path)
    eval_started = time.time()
    dev = evaluate_examples(model, splits["validation"], vocab, tokenizer, preset)
    test = evaluate_examples(model, splits["test"], vocab, tokenizer, preset)
    epochs = history.epochs
    results = {
        "model": args.model, "run_dir": run_dir, "test": test, "dev": dev,
        "test_accuracy": test["accuracy"], "dev_accuracy": dev["accuracy"],
        "epochs_run": len(epochs), "best_epoch": _best_epoch(epochs), "history": epochs,
        "parameters": parameter_counts(model),
        "embeddings": {"source": args.embeddings, "dim": int(model.embedding_dim), "coverage": coverage,
                       "tunable_words": model.tunable_words, "num_tunable": int(model.num_tunable)},
        "labels": list(LABELS),
        "batch_shapes": {split: sorted(list(s) for s in log.shapes) for split, log in shapes.items()},
        "timing": {"fit_seconds_this_process": fit_seconds, "eval_seconds": time.time() - eval_started},
    }
    write_test_summaries(logdir, results, max(len(epochs) - 1, 0))
    return results


def fit_in_cluster(model, datasets, preset, callbacks, args):
    """`model.fit` over the training and dev datasets; under `--strategy multi_worker`, a peer that stops
    mid-training (killed, machine lost) ends this worker with one line instead of a TensorFlow traceback.

    Raises:
        TrainError: a worker of the cluster stopped.
    """
    import tensorflow as tf

    try:
        model.fit(datasets["train"], validation_data=datasets["validation"], epochs=preset["train"]["epochs"],
                  callbacks=callbacks, verbose=args.verbose, shuffle=False)
    except tf.errors.OpError as error:  # the class a lost peer surfaces as varies (Unavailable, Aborted, ...)
        if args.strategy != "multi_worker":
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise TrainError(f"training stopped on a TensorFlow error in the cluster ({type(error).__name__}: "
                         f"{first[:200]}); if a worker stopped, rerun every worker's command to resume from the "
                         "last finished epoch") from None


def parameter_counts(model):
    """`{"total", "trainable", "without_embeddings"}` (the last is the papers' |θ|_M)."""
    import numpy as np

    return {"total": int(model.count_params()),
            "trainable": int(sum(int(np.prod(w.shape)) for w in model.trainable_weights)),
            "without_embeddings": int(model.count_params_without_embeddings())}


def _best_epoch(epochs):
    scored = [e for e in epochs if "val_accuracy" in e]
    return max(scored, key=lambda e: e["val_accuracy"])["epoch"] if scored else None


def combine_members(args, preset):
    """`--model him --members ESIM_RUN TREE_RUN`: the HIM ensemble of two finished runs (Chen et al. 2017
    train the two models separately and average their probabilities), evaluated and written as a run of
    its own, so that `zoo.load` and `export.py` treat it like any other run.

    Raises:
        TrainError: when the runs are not an esim run and a tree run over the same vocabulary.
    """
    from zoo.data.tokenizer import Tokenizer
    from zoo.models.him import HIM
    from zoo.training import inputs
    from zoo.training.evaluation import evaluate_examples, format_results

    if args.model != "him":
        raise TrainError("--members combines runs into the HIM ensemble: use it with --model him")
    try:
        esim_run, tree_run = (runs.load_run(run_dir) for run_dir in args.members)
    except (FileNotFoundError, ValueError) as error:
        raise TrainError(f"cannot load a member run: {error}") from None
    kinds = (esim_run.config["model"], tree_run.config["model"])
    if kinds[0] != "esim" or kinds[1] not in ("syntactic_tree_lstm", "esim_tree"):
        raise TrainError(f"--members takes an esim run, then a syntactic_tree_lstm or esim_tree run; got {kinds}")
    if esim_run.vocab.words != tree_run.vocab.words or esim_run.config["tokenizer"] != tree_run.config["tokenizer"]:
        raise TrainError("the member runs have different vocabularies or tokenizers: train both on the same "
                         "data with the same settings")
    try:
        model = HIM.from_members(esim_run.model, tree_run.model)
    except ValueError as error:
        raise TrainError(f"the member runs do not fit one HIM (sizes differ?): {error}") from None
    tree_model = tree_run.config["preset"]["model"]
    preset["model"].update({k: tree_model[k] for k in ("hidden_size", "dropout", "trees", "max_depth")
                            if k in tree_model})
    preset["data"] = dict(tree_run.config["preset"]["data"])
    run_dir = args.run_dir or runs.default_run_dir("him")
    if os.path.exists(run_dir) and os.listdir(run_dir) and not args.overwrite:
        raise TrainError(f"{run_dir} is not empty (pass --overwrite or another --run-dir)")
    if args.overwrite and os.path.exists(run_dir):
        import shutil

        shutil.rmtree(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    config = {key: tree_run.config[key] for key in ("vocabulary_size", "embedding_dim", "tunable_words",
                                                    "num_tunable", "tokenizer", "labels") if key in tree_run.config}
    config.update(run_identity(args, preset), members=[os.path.abspath(d) for d in args.members])
    runs.save_config(run_dir, config)
    tree_run.vocab.save(os.path.join(run_dir, runs.VOCAB_FILE))
    model.save_weights(os.path.join(run_dir, runs.BEST_WEIGHTS_FILE))

    splits, _ = inputs.load_splits(args.data_dir or args.dataset, args.max_train_examples, args.max_eval_examples,
                                   required=("validation", "test"), fields=args.fields, labels=args.labels,
                                   roles=args.roles)
    tokenizer = Tokenizer.from_config(config["tokenizer"])
    results = {"model": "him", "run_dir": run_dir, "members": config["members"],
               "dev": evaluate_examples(model, splits["validation"], tree_run.vocab, tokenizer, preset),
               "test": evaluate_examples(model, splits["test"], tree_run.vocab, tokenizer, preset),
               "epochs_run": 0, "history": [], "parameters": parameter_counts(model)}
    results.update(test_accuracy=results["test"]["accuracy"], dev_accuracy=results["dev"]["accuracy"])
    runs.write_json(os.path.join(run_dir, runs.RESULTS_FILE), results)
    print(format_results(results), flush=True)
    return {"run_dir": run_dir, "results": results, "model": model, "config": config}
