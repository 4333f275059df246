"""The artifacts report: how much of a model's test accuracy premise-blind or word-counting baselines reach,
and how the model does on the pairs each baseline gets wrong ("hard for the baseline").

Baselines:

- `hypothesis_only`: a trained run of the `hypothesis_only` model (`zoo/models/hypothesis_only.py`), which
  never sees the premise (Gururangan et al. 2018; Poliak et al. 2018), given as any predictor.
- `lexical_overlap`: no neural network. Seven features of the word sets (lowercased `[a-z0-9]+` words):
  the share of hypothesis words found in the premise, the share of premise words found in the hypothesis,
  whether every hypothesis word is in the premise, their Jaccard overlap, the log length ratio, and
  whether the hypothesis (or the premise) has a negation word the other lacks. With training pairs, a
  three-way logistic regression over the standardised features is fitted in numpy (full-batch gradient
  descent, fixed steps, deterministic); without them a fixed rule decides (`rule_predict`).

Both baselines are predictors (`zoo.runs.predictor.Predictor`: `OverlapClassifier`, `OverlapRule`), scored
by the same `zoo.diagnostics.scoring.predict` as the model.

```python
from zoo.diagnostics.artifacts import run_artifacts
section = run_artifacts(predictor, test_examples, train_examples=train, hypothesis_only=other_predictor)
```
"""

import math
import re

import numpy as np

from zoo.data import LABELS
from zoo.diagnostics.behaviour.lexicon import NEGATIONS
from zoo.diagnostics.scoring import check_labels, entry, predict
from zoo.runs.predictor import Predictor

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
FEATURES = ("hypothesis_in_premise", "premise_in_hypothesis", "all_hypothesis_in_premise", "jaccard",
            "log_length_ratio", "negation_in_hypothesis_only", "negation_in_premise_only")
_NEGATIONS = frozenset(NEGATIONS) | {"noone", "didn't", "doesn't", "don't", "isn't", "aren't",
                                     "wasn't", "weren't", "won't", "can't"}
MAX_TRAIN = 100_000


def words(text):
    """Lowercased words of a sentence (`n't` kept with its verb: `isn't`)."""
    return WORD.findall(text.lower())


def features(pairs):
    """`float32 [N, len(FEATURES)]` of `(premise, hypothesis)` pairs."""
    rows = []
    for premise, hypothesis in pairs:
        p, h = words(premise), words(hypothesis)
        ps, hs = set(p), set(h)
        h_in_p = sum(w in ps for w in h) / len(h) if h else 1.0
        p_in_h = sum(w in hs for w in p) / len(p) if p else 1.0
        union = ps | hs
        neg_p, neg_h = bool(ps & _NEGATIONS), bool(hs & _NEGATIONS)
        rows.append([h_in_p, p_in_h, float(hs <= ps), len(ps & hs) / len(union) if union else 1.0,
                     math.log((len(h) + 1) / (len(p) + 1)), float(neg_h and not neg_p), float(neg_p and not neg_h)])
    return np.asarray(rows, dtype="float32").reshape(-1, len(FEATURES))


def rule_predict(pairs):
    """The fixed rule used without training pairs (label ids into `LABELS`):

    a negation word in the hypothesis only -> contradiction; else every hypothesis word in the premise ->
    entailment; else fewer than a third of the hypothesis words in the premise -> contradiction (another
    scene); else neutral."""
    x = features(pairs)
    out = np.full(len(x), LABELS.index("neutral"))
    out[x[:, 0] < 1 / 3] = LABELS.index("contradiction")
    out[x[:, 2] == 1.0] = LABELS.index("entailment")
    out[x[:, 5] == 1.0] = LABELS.index("contradiction")
    return out


class OverlapRule(Predictor):
    """`rule_predict` as a predictor: probability 1 on the rule's label."""

    kind = "lexical_overlap rule"
    labels = tuple(LABELS)

    def predict_probabilities(self, pairs, batch_size=256):
        return np.eye(len(LABELS), dtype="float32")[rule_predict([tuple(p[:2]) for p in pairs])]


class OverlapClassifier(Predictor):
    """Multinomial logistic regression over `features`, fitted in numpy.

    Args:
        steps: full-batch gradient steps.
        learning_rate: step size (on standardised features).
        l2: weight decay on the weights (not the biases).
    """

    kind = "lexical_overlap regression"
    labels = tuple(LABELS)

    def __init__(self, steps=300, learning_rate=0.5, l2=1e-4):
        self.steps, self.learning_rate, self.l2 = int(steps), float(learning_rate), float(l2)
        self.mean = self.scale = self.weights = self.bias = None

    def fit(self, pairs, labels):
        """Fits on `(premise, hypothesis)` pairs and their label ids; returns self."""
        x = features(pairs).astype("float64")
        y = np.asarray(labels, dtype="int64")
        self.mean, self.scale = x.mean(axis=0), x.std(axis=0)
        self.scale[self.scale == 0] = 1.0
        x = (x - self.mean) / self.scale
        onehot = np.eye(len(LABELS))[y]
        self.weights = np.zeros((x.shape[1], len(LABELS)))
        self.bias = np.log(onehot.mean(axis=0) + 1e-9)
        for _ in range(self.steps):
            p = self._softmax(x @ self.weights + self.bias)
            grad = (p - onehot) / len(x)
            self.weights -= self.learning_rate * (x.T @ grad + self.l2 * self.weights)
            self.bias -= self.learning_rate * grad.sum(axis=0)
        return self

    @staticmethod
    def _softmax(z):
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict_ids(self, pairs):
        """Label ids of the pairs."""
        return np.argmax(self.predict_probabilities(pairs), axis=1)

    def predict_probabilities(self, pairs, batch_size=256):
        """Class probabilities float32 `[N, 3]` of `(premise, hypothesis)` pairs (columns: `LABELS`)."""
        x = (features([tuple(p[:2]) for p in pairs]).astype("float64") - self.mean) / self.scale
        return self._softmax(x @ self.weights + self.bias).astype("float32")

    def describe(self):
        """One line: the baseline and how many features it weighs."""
        return f"{self.kind} over {len(FEATURES)} features"

    def weights_table(self):
        """The fitted weights `{feature: {label: weight}}` (on standardised features) and biases."""
        return {"weights": {f: {name: round(float(w), 4) for name, w in zip(LABELS, row)}
                            for f, row in zip(FEATURES, self.weights)},
                "bias": {name: round(float(b), 4) for name, b in zip(LABELS, self.bias)}}


def _label_name(label):
    return LABELS[label] if isinstance(label, (int, np.integer)) else str(label)


def normalize(examples):
    """Examples with the label as a name (the loaders give ids into `LABELS`)."""
    return [{**e, "label": _label_name(e["label"])} for e in examples]


def _subsample(examples, limit, seed=0):
    if len(examples) <= limit:
        return examples
    chosen = np.sort(np.random.default_rng(seed).choice(len(examples), size=limit, replace=False))
    return [examples[i] for i in chosen]


def compare(name, gold, model_predicted, baseline_predicted, model_accuracy, **extra):
    """One baseline against the model: accuracies, the share of the model's accuracy the baseline reaches,
    and the model's accuracy on the pairs the baseline gets wrong (`hard`) and right (`easy`)."""
    baseline_ok = [b == g for b, g in zip(baseline_predicted, gold)]
    model_ok = [m == g for m, g in zip(model_predicted, gold)]
    result = entry(baseline_ok)
    share = None
    if result["accuracy"] is not None and model_accuracy:
        share = result["accuracy"] / model_accuracy
    return {"name": name, **result, "share_of_model": share,
            "hard": entry([m for m, b in zip(model_ok, baseline_ok) if not b]),
            "easy": entry([m for m, b in zip(model_ok, baseline_ok) if b]),
            "agreement": entry([m == b for m, b in zip(model_predicted, baseline_predicted)]), **extra}


def run_artifacts(predictor, test, train=None, hypothesis_only=None, batch_size=256, max_train=MAX_TRAIN,
                  test_source=None, train_source=None):
    """The artifacts report of a model on labelled test pairs.

    Args:
        predictor: the model (see `zoo.diagnostics.scoring`).
        test: labelled examples (`premise`, `hypothesis`, `label` as a name or an id into `LABELS`).
        train: labelled training examples to fit the lexical-overlap regression (None: the fixed rule);
            at most `max_train` of them are used (a seeded sample).
        hypothesis_only: a predictor of the `hypothesis_only` model, or None.
        test_source, train_source: where the pairs come from, for the report.

    Returns:
        `{"test_source", "train_source", "examples", "model": entry, "baselines": {name: compare(...)}}`.
    """
    check_labels(predictor)
    test = normalize(test)
    gold = [e["label"] for e in test]
    pairs = [(e["premise"], e["hypothesis"]) for e in test]
    model_predicted, _ = predict(predictor, pairs, batch_size)
    model = entry([m == g for m, g in zip(model_predicted, gold)])
    baselines = {}
    if train:
        train = _subsample(normalize(train), max_train)
        baseline = OverlapClassifier().fit([(e["premise"], e["hypothesis"]) for e in train],
                                           [LABELS.index(e["label"]) for e in train])
        extra = {"kind": "logistic regression", "fitted_on": len(train), **baseline.weights_table()}
    else:
        baseline = OverlapRule()
        extra = {"kind": "fixed rule", "fitted_on": 0}
    overlap, _ = predict(baseline, pairs, batch_size)
    baselines["lexical_overlap"] = compare("lexical_overlap", gold, model_predicted, overlap, model["accuracy"],
                                           **extra)
    if hypothesis_only is not None:
        check_labels(hypothesis_only)
        predicted, _ = predict(hypothesis_only, pairs, batch_size)
        baselines["hypothesis_only"] = compare("hypothesis_only", gold, model_predicted, predicted,
                                               model["accuracy"], kind="hypothesis_only model")
    return {"test_source": test_source, "train_source": train_source, "examples": len(test), "model": model,
            "baselines": baselines}
