"""Trains an nli-zoo model on SNLI with its paper preset.

Example:
```
python train.py --model rocktaschel_wbw                      # SNLI via tensorflow-datasets, GloVe 6B 50d
python train.py --model bowman_lstm --dataset snli_sample --embeddings none --epochs 2
python train.py --model rocktaschel_wbw --data-dir ~/snli_1.0 --embeddings ~/GoogleNews-300.txt.gz \
    --set learning_rate=3e-4 --set dropout=0.2
```
Rerunning the same command after an interruption resumes from the last finished epoch. See
docs/training.md for every option, the run directory, strategies, mixed precision and TensorBoard.
"""

import os
import sys
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from zoo.training.cli import MIXED_PRECISION, build_parser, collect_overrides  # noqa: E402
from zoo.training import runs  # noqa: E402


class TrainError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def main(argv=None):
    """Runs `train.py` with `argv` (default `sys.argv[1:]`).

    Returns:
        the dict of `train(args)`; on a user error prints one line to stderr and exits with status 2.
    """
    args = build_parser().parse_args(argv)
    # tf.data datasets of unknown length end each epoch this way; Keras warns every epoch.
    warnings.filterwarnings("ignore", message="Your input ran out of data")
    try:
        return train(args)
    except TrainError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


# Settings ----------------------------------------------------------------------------------------
def resolve_preset(args):
    """The model's paper preset with the command line's overrides applied.

    Raises:
        TrainError: for an unknown model or setting, or a malformed `--set`.
    """
    import zoo
    from zoo.registry import apply_overrides

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
        "data": {"source": args.data_dir or args.dataset, "max_train_examples": args.max_train_examples,
                 "max_eval_examples": args.max_eval_examples, "shuffle": not args.no_shuffle,
                 "bucket": not args.no_bucket},
        "seed": args.seed,
    }
    if args.embeddings == "none":
        identity["embedding_dim"] = args.embedding_dim
    return identity


def worker_run_dir(run_dir):
    """The directory this process writes: the run directory, or a scratch one for non-chief workers."""
    from zoo.training.strategy import is_chief

    if is_chief():
        return run_dir
    import json

    task = json.loads(os.environ["TF_CONFIG"])["task"]
    return os.path.join(run_dir, "workers", f"{task['type']}-{task['index']}")


# Data --------------------------------------------------------------------------------------------
def load_data(args):
    """Loads SNLI and prints its report.

    Returns:
        `{"train": [...], "validation": [...], "test": [...]}`, capped by `--max-*-examples`.

    Raises:
        TrainError: when the data cannot be loaded.
    """
    from zoo.data.snli import load_snli

    source = args.data_dir or args.dataset
    try:
        splits, report = load_snli(source)
    except Exception as error:  # any data failure (missing dir, bad line, no network) is one line
        raise TrainError(f"cannot load SNLI from {source!r}: {error}") from None
    dropped = report.get("dropped_no_gold_label", {})
    print(f"[data] {report.get('source', source)}: " + ", ".join(
        f"{split} {n} pairs ({dropped.get(split, 0)} without gold label dropped)"
        for split, n in report.get("rows", {}).items()), flush=True)
    if args.max_train_examples is not None:
        splits["train"] = splits["train"][:args.max_train_examples]
    if args.max_eval_examples is not None:
        splits["validation"] = splits["validation"][:args.max_eval_examples]
        splits["test"] = splits["test"][:args.max_eval_examples]
    if args.max_train_examples is not None or args.max_eval_examples is not None:
        print("[data] using " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()), flush=True)
    for split in ("train", "validation", "test"):
        if not splits.get(split):
            raise TrainError(f"the {split} split of {source!r} is empty")
    return splits


def tokenize_pairs(tokenizer, examples):
    """Premise + hypothesis tokens of each example (the token lists of the vocabulary and coverage)."""
    batch = getattr(tokenizer, "tokenize_batch", None)
    if batch is None:
        return [tokenizer.tokenize(e["premise"]) + tokenizer.tokenize(e["hypothesis"]) for e in examples]
    premises = batch([e["premise"] for e in examples])
    hypotheses = batch([e["hypothesis"] for e in examples])
    return [p + h for p, h in zip(premises, hypotheses)]


def load_vocabulary(run_dir, train_tokens, resume):
    """The run's vocabulary: read back from `vocab.txt` when resuming, else built and saved."""
    from zoo.data.vocab import Vocabulary

    path = os.path.join(run_dir, runs.VOCAB_FILE)
    if resume and os.path.exists(path):
        return Vocabulary.load(path)
    vocab = Vocabulary.build(train_tokens)
    vocab.save(path)
    return vocab


def load_embeddings(args, vocab, preset, train_tokens):
    """Word vectors for the vocabulary.

    Returns:
        `(matrix or None, tunable_mask or None, dim, tunable_words, num_tunable, coverage or None)`;
        with `--embeddings none` the model keeps its random initial vectors, all trainable.

    Raises:
        TrainError: when the vectors cannot be read.
    """
    from zoo.data.embeddings import build_embedding_matrix, load_vectors
    from zoo.registry import tunable_words_for

    if args.embeddings == "none":
        return None, None, args.embedding_dim, "all", 0, None
    try:
        vectors, dim = load_vectors(args.embeddings, words=set(vocab.words))
    except Exception as error:
        raise TrainError(f"cannot load word vectors {args.embeddings!r}: {error}") from None
    oov = preset["data"]["oov"]
    built = build_embedding_matrix(vocab, vectors, dim, oov, token_lists=train_tokens, seed=args.seed)
    tunable_words = tunable_words_for(oov)
    num_tunable = int(built.tunable_mask.sum()) if tunable_words == "oov" else 0
    coverage = {k: float(v) if isinstance(v, float) else int(v) for k, v in built.coverage.items()}
    print(f"[embeddings] {args.embeddings} ({dim}d): {describe_coverage(coverage)}; tunable words: "
          f"{tunable_words}" + (f" ({num_tunable})" if tunable_words == "oov" else ""), flush=True)
    return built.matrix, built.tunable_mask, dim, tunable_words, num_tunable, coverage


def describe_coverage(coverage):
    """`types 99.4% (630/634), tokens 99.7% (4662/4676)` from a coverage dict."""
    parts = []
    for kind in ("types", "tokens"):
        if kind in coverage:
            part = f"{kind} {coverage[kind]:.1%}"
            if f"{kind}_found" in coverage and f"{kind}_total" in coverage:
                part += f" ({coverage[kind + '_found']}/{coverage[kind + '_total']})"
            parts.append(part)
    return ", ".join(parts) or str(coverage)


def make_datasets(splits, vocab, tokenizer, preset, args):
    """tf.data datasets of the three splits (the preset's batch size is the global batch).

    A model with `trees="syntactic"` also gets each pair's parse trees (`zoo.data.trees`); a sentence
    without a usable parse (none in tfds SNLI, malformed, or deeper than the model's `max_depth`) gets
    a complete binary tree, and the count is printed.
    """
    from zoo.data.pipeline import make_dataset

    data = preset["data"]
    common = dict(vocab=vocab, tokenizer=tokenizer, batch_size=preset["train"]["batch_size"],
                  max_premise_length=data["max_premise_length"],
                  max_hypothesis_length=data["max_hypothesis_length"], bucket=not args.no_bucket)
    datasets = {}
    for split in ("train", "validation", "test"):
        options = dict(shuffle=not args.no_shuffle, seed=args.seed) if split == "train" else {}
        if preset["model"].get("trees") != "syntactic":
            datasets[split] = make_dataset(splits[split], **common, **options)
            continue
        from zoo.data.trees import make_tree_dataset

        report = {}
        datasets[split] = make_tree_dataset(splits[split], trees="syntactic", on_error="complete",
                                            max_depth=preset["model"].get("max_depth"), report=report,
                                            **common, **options)
        print(f"[trees] {split}: binary parses, {report['fallback_complete']} sentence(s) without a usable "
              f"parse use complete trees; deepest tree {report['max_level']} level(s)", flush=True)
    return datasets


# Model -------------------------------------------------------------------------------------------
def make_optimizer(train):
    """The optimizer of the preset's train section (Adam with its betas and global_clipnorm by default)."""
    import keras

    name = train.get("optimizer", "adam").lower()
    clip = {"global_clipnorm": train["global_clipnorm"]} if train.get("global_clipnorm") else {}
    if name == "adam":
        return keras.optimizers.Adam(learning_rate=train["learning_rate"], beta_1=train["beta_1"],
                                     beta_2=train["beta_2"], epsilon=train.get("epsilon", 1e-7), **clip)
    try:
        return keras.optimizers.get({"class_name": name, "config": {"learning_rate": train["learning_rate"], **clip}})
    except ValueError as error:
        raise TrainError(f"unknown optimizer {name!r}: {error}") from None


def make_loss(model, l2):
    """Sparse cross-entropy on logits, plus `l2` * (sum of squared non-embedding weights) when `l2` > 0."""
    import keras
    from keras import ops

    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    if not l2:
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    embedding_ids = {id(w) for w in model.embedding.weights}
    weights = [w for w in model.trainable_weights if id(w) not in embedding_ids and len(w.shape) > 1]

    def loss(y_true, y_pred):
        penalty = sum(ops.sum(ops.square(ops.cast(w, "float32"))) for w in weights)
        return cross_entropy(y_true, y_pred) + l2 * penalty

    return loss


def build_model(args, preset, vocab_size, matrix, mask, dim, tunable_words, num_tunable, strategy):
    """Creates, loads the vectors into, and compiles the model inside the strategy scope."""
    import keras
    import zoo

    with strategy.scope():
        try:
            model = zoo.create_model(args.model, vocabulary_size=vocab_size, embedding_dim=dim,
                                     tunable_words=tunable_words, num_tunable=num_tunable, **preset["model"])
        except (TypeError, ValueError) as error:
            raise TrainError(f"cannot build {args.model!r} with {preset['model']}: {error}") from None
        if matrix is not None:
            model.set_embeddings(matrix, mask)
        model.compile(optimizer=make_optimizer(preset["train"]),
                      loss=make_loss(model, preset["train"].get("l2")),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    return model


# Callbacks ---------------------------------------------------------------------------------------
def make_callbacks(args, preset, run_dir, logdir, model_dev_pairs, dev_subset, tokenizer, trial_id, extra_hparams):
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
    best = cb.best_of(history.epochs)
    callbacks = [
        keras.callbacks.LearningRateScheduler(cb.learning_rate_schedule(train["learning_rate"],
                                                                        train.get("lr_decay"))),
        keras.callbacks.ModelCheckpoint(os.path.join(run_dir, runs.BEST_WEIGHTS_FILE), monitor="val_accuracy",
                                        mode="max", save_best_only=True, save_weights_only=True,
                                        initial_value_threshold=best),
        history,
        cb.ResumableEarlyStopping(history, monitor="val_accuracy", patience=train.get("patience")),
        cb.TensorBoard(logdir, update_freq=args.log_every if args.log_every > 0 else "epoch"),
        cb.HParamsLogger(logdir, cb.flatten_hparams(preset, extra_hparams), trial_id),
        cb.ConfusionImages(logdir, dev_subset, list(LABELS)),
    ]
    if model_dev_pairs is not None:
        callbacks.append(cb.AttentionImages(logdir, *model_dev_pairs))
    callbacks += [keras.callbacks.BackupAndRestore(os.path.join(run_dir, runs.BACKUP_DIR)),
                  cb.EpochMarker(args.pause_after_epoch)]
    return callbacks, history


def attention_pairs(splits, vocab, tokenizer, preset, count):
    """The first `count` dev pairs, encoded, with their tokens and gold labels (for attention images)."""
    from zoo.data import LABELS
    from zoo.data.pipeline import encode_pairs

    if count <= 0:
        return None
    examples = splits["validation"][:count]
    data = preset["data"]
    lp, lh = data["max_premise_length"], data["max_hypothesis_length"]
    inputs = encode_pairs([(e["premise"], e["hypothesis"]) for e in examples], vocab, tokenizer,
                          max_premise_length=lp, max_hypothesis_length=lh)
    premise = [tokenizer.tokenize(e["premise"])[:lp or None] for e in examples]
    hypothesis = [tokenizer.tokenize(e["hypothesis"])[:lh or None] for e in examples]
    return inputs, premise, hypothesis, [LABELS[e["label"]] for e in examples]


# Evaluation --------------------------------------------------------------------------------------
def evaluate(model, dataset):
    """Accuracy, per-class accuracy and confusion matrix (rows gold, columns predicted) on a dataset.

    For an ensemble (a model with `member_names`, e.g. HIM) each member's accuracy is reported too,
    under `members`.
    """
    from zoo.training.callbacks import predict_labels

    gold, predicted = predict_labels(model, dataset)
    results = _scores(gold, predicted)
    if getattr(model, "member_names", None):
        results["members"] = {name: _scores(gold, member_predictions)
                              for name, member_predictions in _member_predictions(model, dataset).items()}
    return results


def _scores(gold, predicted):
    from zoo.data import LABELS
    from zoo.training.callbacks import confusion_matrix

    matrix = confusion_matrix(gold, predicted, len(LABELS))
    per_class = {name: (float(matrix[i, i] / matrix[i].sum()) if matrix[i].sum() else None)
                 for i, name in enumerate(LABELS)}
    return {"accuracy": float((gold == predicted).mean()) if len(gold) else None,
            "examples": int(len(gold)), "per_class_accuracy": per_class,
            "confusion_matrix": matrix.tolist()}


def _member_predictions(model, dataset):
    """Each ensemble member's predicted label ids over `dataset` (same order as `predict_labels`)."""
    import numpy as np

    chunks = {name: [] for name in model.member_names}
    for inputs, _ in dataset:
        outputs = model.explain(inputs)
        for name in model.member_names:
            chunks[name].append(np.argmax(np.asarray(outputs[f"{name}_probabilities"]), axis=-1))
    return {name: np.concatenate(parts) if parts else np.zeros(0, "int64") for name, parts in chunks.items()}


def format_results(results):
    """The results as a printable table."""
    from zoo.data import LABELS

    test = results["test"]
    width = max(len(n) for n in LABELS) + 2
    lines = [f"model {results['model']}: test accuracy {test['accuracy']:.4f} on {test['examples']} pairs, "
             f"dev accuracy {results['dev']['accuracy']:.4f}, {results['epochs_run']} epoch(s)",
             "confusion matrix (rows gold, columns predicted):",
             " " * width + "".join(f"{n:>{width}}" for n in LABELS) + f"{'accuracy':>{width}}"]
    for i, name in enumerate(LABELS):
        acc = test["per_class_accuracy"][name]
        lines.append(f"{name:<{width}}" + "".join(f"{c:>{width}}" for c in test["confusion_matrix"][i])
                     + (f"{acc:>{width}.4f}" if acc is not None else f"{'-':>{width}}"))
    params = results["parameters"]
    for name, member in test.get("members", {}).items():
        lines.append(f"member {name}: test accuracy {member['accuracy']:.4f}, "
                     f"dev accuracy {results['dev']['members'][name]['accuracy']:.4f}")
    lines.append(f"parameters: {params['total']} total, {params['trainable']} trainable, "
                 f"{params['without_embeddings']} without word vectors")
    return "\n".join(lines)


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
        strategy = make_strategy(args.strategy)
    except ValueError as error:
        raise TrainError(str(error)) from None
    import keras

    preset = resolve_preset(args)
    if args.members:
        return combine_members(args, preset)
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

    from zoo.data.tokenizer import Tokenizer

    keras.utils.set_random_seed(args.seed)
    print(f"[train] strategy: {describe(strategy)}", flush=True)

    splits = load_data(args)
    tokenizer = Tokenizer(lowercase=preset["data"]["lowercase"])
    train_tokens = tokenize_pairs(tokenizer, splits["train"])
    vocab = load_vocabulary(run_dir, train_tokens, resume=state != "new")
    matrix, mask, dim, tunable_words, num_tunable, coverage = load_embeddings(args, vocab, preset, train_tokens)
    config = dict(identity, vocabulary_size=len(vocab), embedding_dim=dim, tunable_words=tunable_words,
                  num_tunable=num_tunable, tokenizer=tokenizer.get_config(),
                  labels=list(_labels()), mixed_precision=args.mixed_precision, strategy=args.strategy)
    runs.save_config(run_dir, config)

    previous_policy = keras.mixed_precision.global_policy()
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy(MIXED_PRECISION[args.mixed_precision])
    try:
        model = build_model(args, preset, len(vocab), matrix, mask, dim, tunable_words, num_tunable, strategy)
        results = fit_and_evaluate(args, preset, run_dir, model, splits, vocab, tokenizer, coverage, state)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    results["timing"]["total_seconds"] = time.time() - started
    runs.write_json(os.path.join(run_dir, runs.RESULTS_FILE), results)
    print(format_results(results), flush=True)
    return {"run_dir": run_dir, "results": results, "model": model, "vocab": vocab, "tokenizer": tokenizer,
            "config": config}


def combine_members(args, preset):
    """`--model him --members ESIM_RUN TREE_RUN`: the HIM ensemble of two finished runs (Chen et al. 2017
    train the two models separately and average their probabilities), evaluated and written as a run of
    its own, so that `zoo.load` and `export.py` treat it like any other run.

    Raises:
        TrainError: when the runs are not an esim run and a tree run over the same vocabulary.
    """
    from zoo.data.tokenizer import Tokenizer
    from zoo.models.him import HIM

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

    splits = load_data(args)
    tokenizer = Tokenizer.from_config(config["tokenizer"])
    datasets = make_datasets(splits, tree_run.vocab, tokenizer, preset, args)
    results = {"model": "him", "run_dir": run_dir, "members": config["members"],
               "dev": evaluate(model, datasets["validation"]), "test": evaluate(model, datasets["test"]),
               "epochs_run": 0, "history": [],
               "parameters": {"total": int(model.count_params()),
                              "trainable": int(sum(int(_size(w)) for w in model.trainable_weights)),
                              "without_embeddings": int(model.count_params_without_embeddings())}}
    results.update(test_accuracy=results["test"]["accuracy"], dev_accuracy=results["dev"]["accuracy"])
    runs.write_json(os.path.join(run_dir, runs.RESULTS_FILE), results)
    print(format_results(results), flush=True)
    return {"run_dir": run_dir, "results": results, "model": model, "config": config}


def _labels():
    from zoo.data import LABELS

    return LABELS


def fit_and_evaluate(args, preset, run_dir, model, splits, vocab, tokenizer, coverage, state):
    """Fits with the run's callbacks (unless training already finished), reloads the best weights and
    evaluates them on dev and test.

    Returns:
        the results dict (written to `results.json` by the caller).
    """
    datasets = make_datasets(splits, vocab, tokenizer, preset, args)
    chief_logdir = run_dir == (args.run_dir or runs.default_run_dir(args.model))
    logdir = (args.logdir if chief_logdir else None) or os.path.join(run_dir, runs.LOGS_DIR)
    dev_subset = datasets["validation"].take(max(1, 2000 // preset["train"]["batch_size"]))
    pairs = attention_pairs(splits, vocab, tokenizer, preset, args.attention_examples)
    extra = {"embeddings": args.embeddings, "embedding_dim": int(model.embedding_dim),
             "strategy": args.strategy, "mixed_precision": args.mixed_precision or "none", "seed": args.seed}
    callbacks, history = make_callbacks(args, preset, run_dir, logdir, pairs, dev_subset, tokenizer,
                                        os.path.basename(os.path.abspath(run_dir)), extra)
    fit_started = time.time()
    if state != "evaluate":
        model.fit(datasets["train"], validation_data=datasets["validation"], epochs=preset["train"]["epochs"],
                  callbacks=callbacks, verbose=args.verbose, shuffle=False)
    fit_seconds = time.time() - fit_started
    best_path = os.path.join(run_dir, runs.BEST_WEIGHTS_FILE)
    if os.path.exists(best_path):
        model.load_weights(best_path)
    else:  # no epoch improved on nothing (e.g. NaN accuracy): keep the last weights as the best
        model.save_weights(best_path)
    eval_started = time.time()
    dev, test = evaluate(model, datasets["validation"]), evaluate(model, datasets["test"])
    epochs = history.epochs
    results = {
        "model": args.model, "run_dir": run_dir, "test": test, "dev": dev,
        "test_accuracy": test["accuracy"], "dev_accuracy": dev["accuracy"],
        "epochs_run": len(epochs), "best_epoch": _best_epoch(epochs), "history": epochs,
        "parameters": {"total": int(model.count_params()),
                       "trainable": int(sum(int(_size(w)) for w in model.trainable_weights)),
                       "without_embeddings": int(model.count_params_without_embeddings())},
        "embeddings": {"source": args.embeddings, "dim": int(model.embedding_dim), "coverage": coverage,
                       "tunable_words": model.tunable_words, "num_tunable": int(model.num_tunable)},
        "labels": list(_labels()),
        "timing": {"fit_seconds_this_process": fit_seconds, "eval_seconds": time.time() - eval_started},
    }
    write_test_summaries(logdir, results, max(len(epochs) - 1, 0))
    return results


def _size(weight):
    size = 1
    for d in weight.shape:
        size *= int(d)
    return size


def _best_epoch(epochs):
    scored = [e for e in epochs if "val_accuracy" in e]
    return max(scored, key=lambda e: e["val_accuracy"])["epoch"] if scored else None


if __name__ == "__main__":
    main()
