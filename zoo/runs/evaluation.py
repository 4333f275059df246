"""Scoring a model on labelled pairs: accuracy, per-class accuracy, confusion matrix, per genre.

Used at the end of training (`zoo.training.trainer`), by `evaluate.py` and from Python:

```python
import zoo
run = zoo.load("runs/esim")
results = run.evaluate(examples)            # examples as the loaders give them (zoo.data.snli)
print(format_scores(results))
```
"""

import hashlib
import logging

import numpy as np

from zoo.data import LABELS

notes = logging.getLogger(__name__).getChild("note")  # what the scores say of the model: `[note] ...`


def predict(model, dataset, verbose=0):
    """Gold labels and logits of the real rows (weight > 0) of a `(features, labels, weights)` dataset.

    Uses `model.predict`, which distributes the batches under the model's strategy; the dataset is
    iterated twice, so it must give its batches in a fixed order (no shuffling).

    Returns:
        `(gold int [N], logits float32 [N, C])` in the dataset's order.
    """
    gold, weights = [], []
    for _, labels, weight in dataset:
        gold.append(np.asarray(labels))
        weights.append(np.asarray(weight))
    if not gold:
        return np.zeros(0, "int64"), np.zeros((0, len(LABELS)), "float32")
    features = dataset.map(lambda features, labels, weights: features)
    trace_predict_once(model, features.element_spec)
    logits = np.asarray(model.predict(features, verbose=verbose), dtype="float32")
    real = np.concatenate(weights) > 0
    return np.concatenate(gold)[real], logits[real]


def trace_predict_once(model, spec):
    """Traces Keras's predict function (TensorFlow backend) for batches of `spec`, the element spec of the
    dataset given to `model.predict` (lengths unknown), before it runs.

    Keras calls its predict function with each batch's tensors, so a dataset whose batches come in several
    shapes (the length grid's cells) traces it again for each new shape until `reduce_retracing` has relaxed
    the shapes: three traces of a paper-size ESIM (about 1.5 s each on one core) on the first call. Traced
    once for the relaxed spec, every batch shape is served by that one function. Keras's XLA (`jit_compile`)
    compiles per shape anyway, JAX traces otherwise, and several replicas get their batches split per
    replica (another signature): all left as they are.
    """
    import keras

    if (keras.backend.backend() != "tensorflow" or model.run_eagerly or model.jit_compile
            or model.distribute_strategy.num_replicas_in_sync != 1):
        return
    with model.distribute_strategy.scope():
        model.make_predict_function()
        model.predict_function.get_concrete_function([spec])  # Keras's calling convention: one step's batch, in a list


def predict_labels(model, dataset, verbose=0):
    """Gold and predicted label ids of the real rows of a `(features, labels, weights)` dataset."""
    gold, logits = predict(model, dataset, verbose=verbose)
    return gold, np.argmax(logits, axis=-1)


def member_predictions(model, dataset):
    """Each ensemble member's predicted label ids over the real rows of `dataset` (as `predict`)."""
    chunks = {name: [] for name in model.member_names}
    weights = []
    for features, _, weight in dataset:
        outputs = model.explain(features)
        weights.append(np.asarray(weight))
        for name in model.member_names:
            chunks[name].append(np.argmax(np.asarray(outputs[f"{name}_probabilities"]), axis=-1))
    if not weights:
        return {name: np.zeros(0, "int64") for name in model.member_names}
    real = np.concatenate(weights) > 0
    return {name: np.concatenate(parts)[real] for name, parts in chunks.items()}


def confusion_matrix(gold, predicted, num_classes=3):
    """Counts `[num_classes, num_classes]`: rows gold labels, columns predicted labels."""
    matrix = np.zeros((num_classes, num_classes), dtype="int64")
    np.add.at(matrix, (np.asarray(gold, "int64"), np.asarray(predicted, "int64")), 1)
    return matrix


def scores(gold, predicted, labels=LABELS, genres=None):
    """Accuracy, per-class accuracy and confusion matrix (rows gold, columns predicted).

    Args:
        gold, predicted: label ids `[N]`.
        labels: label names by id.
        genres: optional genre name of each pair `[N]` (MultiNLI): adds `per_genre` accuracy and counts.

    Returns:
        `{"accuracy", "examples", "per_class_accuracy", "confusion_matrix"[, "per_genre"]}`; accuracies are
        None where there is nothing to score.
    """
    gold, predicted = np.asarray(gold, "int64"), np.asarray(predicted, "int64")
    matrix = confusion_matrix(gold, predicted, len(labels))
    per_class = {name: (float(matrix[i, i] / matrix[i].sum()) if matrix[i].sum() else None)
                 for i, name in enumerate(labels)}
    result = {"accuracy": float((gold == predicted).mean()) if len(gold) else None,
              "examples": int(len(gold)), "per_class_accuracy": per_class, "confusion_matrix": matrix.tolist(),
              "predictions": "".join(str(int(p)) for p in predicted)}
    if genres is not None and any(genres):
        genres = np.asarray([g or "" for g in genres])
        result["per_genre"] = {
            str(genre): {"accuracy": float((gold[genres == genre] == predicted[genres == genre]).mean()),
                         "examples": int((genres == genre).sum())}
            for genre in sorted(set(genres.tolist()))}
    return result


def evaluate_dataset(model, dataset, genres=None, verbose=0):
    """`scores` of a model on a dataset (and of each member of an ensemble, under `members`)."""
    gold, predicted = predict_labels(model, dataset, verbose=verbose)
    scored = scores(gold, predicted, genres=genres)
    if getattr(model, "member_names", None):
        scored["members"] = {name: scores(gold, member)
                             for name, member in member_predictions(model, dataset).items()}
    return scored


def evaluate_examples(model, examples, vocab, tokenizer, settings, batch_size=None, verbose=0):
    """`scores` of a model on labelled examples, per genre where they have one.

    The pairs are batched grouped by shape (`zoo.runs.datasets.by_shape`) and scored in their own order.

    Args:
        model: an `NLIModel` (or HIM).
        examples: dicts with `premise`, `hypothesis`, `label` (and parses, `genre`), as the loaders give.
        vocab, tokenizer, settings: the run's (`settings`: its `zoo.settings.RunSettings`).
        batch_size: pairs per batch (default: the run's).
        verbose: 1 shows a progress bar.
    """
    from zoo.runs.datasets import by_shape, make_model_batches

    order = by_shape(examples, tokenizer, settings.data)
    ordered = [examples[i] for i in order]
    dataset = make_model_batches(ordered, vocab, tokenizer, settings, batch_size=batch_size, bucket=False)
    genres = [ex.get("genre", "") for ex in ordered]
    return keep_items(evaluate_dataset(model, dataset, genres=genres, verbose=verbose), examples, order)


def evaluate_saved_model(predictor, examples, batch_size=256, verbose=0):
    """`scores` of an exported SavedModel (`zoo.export.predictor.SavedModelPredictor`) on labelled examples.

    The SavedModel tokenizes the raw sentences itself (and parses them, for syntactic tree models), so
    this scores exactly what TF Serving would answer.
    """
    import keras

    pairs = [(e["premise"], e["hypothesis"], e.get("premise_binary_parse", ""), e.get("hypothesis_binary_parse", ""))
             for e in examples]
    index = {name: i for i, name in enumerate(predictor.labels)}
    predicted = []
    progress = keras.utils.Progbar(len(pairs), verbose=verbose) if verbose and pairs else None
    for start in range(0, len(pairs), batch_size):
        predicted += [index[p["label"]] for p in predictor.predict(pairs[start:start + batch_size], batch_size)]
        if progress is not None:
            progress.update(min(start + batch_size, len(pairs)))
    return keep_items(scores([e["label"] for e in examples], predicted, labels=predictor.labels,
                             genres=[e.get("genre", "") for e in examples]), examples)


def keep_items(result, examples, order=None):
    """Keeps with a scored set what pairing two runs item by item needs (`nli-zoo compare`), so that it is
    written wherever the scores are (results.json, evaluate.py's reports): `predictions`, each pair's
    predicted label id as one string of digits, in the examples' own order; `gold`, their labels alike; and
    `items`, a digest of the pairs' text and labels (equal digests: the same items in the same order).

    Args:
        result: `scores`' dict (with `members`' for an ensemble), predictions in the order scored.
        examples: the labelled pairs, in their own order.
        order: `order[i]` is the index in `examples` of the pair scored i-th (None: their own order).

    Returns:
        `result`, completed.
    """
    for entry in [result, *result.get("members", {}).values()]:
        if order is not None:
            restored = [""] * len(order)
            for position, index in enumerate(order):
                restored[index] = entry["predictions"][position]
            entry["predictions"] = "".join(restored)
    result["gold"] = "".join(str(int(e["label"])) for e in examples)
    digest = hashlib.sha256()
    for e in examples:
        digest.update(f"{e['premise']}\t{e['hypothesis']}\t{int(e['label'])}\n".encode("utf-8"))
    result["items"] = digest.hexdigest()[:16]
    return result


# A first result that explains itself: an accuracy within this margin of chance (one label in three) is noted
# with what gets a model past it. The offline first run (988 training pairs) ends about 0.04 above chance; a
# model trained on SNLI's 550,000 pairs, 0.4 to 0.55 above.
CHANCE = 1 / len(LABELS)
NEAR_CHANCE_MARGIN = 0.10
TRAIN_ON_SNLI = ("the papers' 77-89% come from training on SNLI's 550,000 pairs: nli-zoo train --model NAME "
                 "(its default data; docs/training.md)")


def near_chance(accuracy):
    """Whether an accuracy is within `NEAR_CHANCE_MARGIN` of chance (`CHANCE`, one label of three)."""
    return accuracy is not None and accuracy < CHANCE + NEAR_CHANCE_MARGIN


def chance_note(accuracies):
    """One line for the accuracies (`{what: accuracy}`) that are near chance ("" when none is): that the model
    has not learned the task yet, and what would teach it."""
    near = {what: accuracy for what, accuracy in accuracies.items() if near_chance(accuracy)}
    if not near:
        return ""
    listed = ", ".join(f"{what} {accuracy:.3f}" for what, accuracy in near.items())
    return (f"accuracy near chance ({listed}; chance is {CHANCE:.3f}): this model has not learned the task "
            f"yet; {TRAIN_ON_SNLI}")


def say_if_near_chance(accuracies):
    """Says `chance_note(accuracies)` where there is one (a WARNING of the `[note]` logger, which `--quiet`
    keeps: it qualifies the scores shown); returns it ("" when none)."""
    line = chance_note(accuracies)
    if line:
        notes.warning(line)
    return line


def format_scores(result, labels=LABELS, title=None):
    """One scored set as printable lines: accuracy, confusion matrix with per-class accuracy, genres."""
    width = max(len(n) for n in labels) + 2
    accuracy = result["accuracy"]
    lines = [title] if title else []
    lines += [f"accuracy {accuracy:.4f} on {result['examples']} pairs" if accuracy is not None
              else f"no pairs to score ({result['examples']})",
              "confusion matrix (rows gold, columns predicted):",
              " " * width + "".join(f"{n:>{width}}" for n in labels) + f"{'accuracy':>{width}}"]
    for i, name in enumerate(labels):
        acc = result["per_class_accuracy"][name]
        lines.append(f"{name:<{width}}" + "".join(f"{c:>{width}}" for c in result["confusion_matrix"][i])
                     + (f"{acc:>{width}.4f}" if acc is not None else f"{'-':>{width}}"))
    for genre, entry in result.get("per_genre", {}).items():
        lines.append(f"genre {genre:<16} accuracy {entry['accuracy']:.4f} on {entry['examples']} pairs")
    return "\n".join(lines)


def format_results(results):
    """A finished training run's results (`zoo.runs.results.RunResults`) as a printable table."""
    test, dev = results.test, results.dev or {}
    dev_accuracy = "-" if results.dev_accuracy is None else format(results.dev_accuracy, ".4f")
    lines = [f"model {results.model}: test accuracy {test['accuracy']:.4f} on {test.get('examples')} pairs, "
             f"dev accuracy {dev_accuracy}, {results.epochs_run} epoch(s)"]
    lines += format_scores(test).splitlines()[1:]
    for name, member in test.get("members", {}).items():
        lines.append(f"member {name}: test accuracy {member['accuracy']:.4f}, "
                     f"dev accuracy {dev['members'][name]['accuracy']:.4f}")
    params = results.parameters
    if params is not None:
        lines.append(f"parameters: {params['total']} total, {params['trainable']} trainable, "
                     f"{params['without_embeddings']} without word vectors")
    return "\n".join(lines)
