"""Predictions and accuracies shared by every diagnostic set (plain Python and numpy, no TensorFlow).

A predictor is any object with `.labels` (the three label names in id order) and
`.predict(pairs, batch_size=256)` returning `[{"label": name, "probabilities": {name: float}}, ...]`:
a `zoo.runs.predictor.Predictor` (`zoo.predictors.open_predictor`), or a test's stand-in.
"""

from collections import Counter

from zoo.data import LABELS

ENTAILMENT = "entailment"
NON_ENTAILMENT = "non-entailment"


def predict(predictor, pairs, batch_size=256):
    """The predicted label names and their probabilities, one per `(premise, hypothesis)` pair.

    Returns:
        `(labels, confidences)`: lists of str and float (the probability of the predicted label).

    Raises:
        ValueError: the predictor answers with a label outside its `labels`, or not one answer per pair.
    """
    pairs = [(str(p), str(h)) for p, h in pairs]
    if not pairs:
        return [], []
    answers = list(predictor.predict(pairs, batch_size=batch_size))
    if len(answers) != len(pairs):
        raise ValueError(f"the predictor answered {len(answers)} times for {len(pairs)} pairs")
    known = set(predictor.labels)
    labels, confidences = [], []
    for answer in answers:
        label = answer["label"]
        if label not in known:
            raise ValueError(f"the predictor answered {label!r}, not one of its labels {tuple(predictor.labels)}")
        labels.append(label)
        confidences.append(float(answer.get("probabilities", {}).get(label, float("nan"))))
    return labels, confidences


def check_labels(predictor, needed=LABELS):
    """Raises ValueError unless the predictor's labels include `needed` (the names the gold labels use)."""
    missing = [name for name in needed if name not in tuple(predictor.labels)]
    if missing:
        raise ValueError(f"the predictor's labels {tuple(predictor.labels)} lack {', '.join(missing)}: the "
                         f"diagnostic sets are labelled {', '.join(needed)}")


def collapse(label):
    """A three-way label as HANS scores it: entailment stays, neutral and contradiction are non-entailment."""
    return ENTAILMENT if label == ENTAILMENT else NON_ENTAILMENT


def entry(correct):
    """`{"accuracy", "examples", "correct"}` of a list of booleans (accuracy None when it is empty)."""
    correct = [bool(c) for c in correct]
    n, k = len(correct), sum(correct)
    return {"accuracy": k / n if n else None, "examples": n, "correct": k}


def merge(entries):
    """One entry pooling several `entry` dicts."""
    n = sum(e["examples"] for e in entries)
    k = sum(e["correct"] for e in entries)
    return {"accuracy": k / n if n else None, "examples": n, "correct": k}


def grouped(keys, correct, order=None):
    """`{key: entry}` of the pairs grouped by `keys` (parallel to `correct`), in `order` then sorted."""
    groups = {}
    for key, ok in zip(keys, correct):
        groups.setdefault(key, []).append(ok)
    ordered = [k for k in (order or ()) if k in groups] + sorted(k for k in groups if k not in (order or ()))
    return {key: entry(groups[key]) for key in ordered}


def counts(labels, order=LABELS):
    """`{label: n}` over `order` (zeros included) plus any other label seen."""
    seen = Counter(labels)
    return {**{name: seen.get(name, 0) for name in order}, **{k: v for k, v in seen.items() if k not in order}}


def failures(examples, predicted, confidences, correct, limit, fields=()):
    """The first `limit` wrongly predicted examples, for the report.

    Args:
        examples: dicts with `premise`, `hypothesis`, `label` (and `fields` to keep).
        predicted, confidences, correct: parallel to `examples`.
        limit: how many to keep.
    """
    out = []
    for example, label, confidence, ok in zip(examples, predicted, confidences, correct):
        if ok:
            continue
        if len(out) >= limit:
            break
        item = {"premise": example["premise"], "hypothesis": example["hypothesis"], "gold": example["label"],
                "predicted": label, "probability": round(confidence, 4)}
        item.update({f: example[f] for f in fields if f in example})
        out.append(item)
    return out
