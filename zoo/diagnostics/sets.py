"""The diagnostic data sets: each is read (`load_*`, which checks every row before any prediction) and then
scored (`score_*`) into a report section, a plain dict that `zoo.diagnostics.report` prints, writes and
draws. Accuracies are entries `{"accuracy", "examples", "correct"}` (`zoo.diagnostics.scoring.entry`).
"""

import os

from zoo.data import LABELS
from zoo.diagnostics import readers
from zoo.diagnostics.scoring import (
    ENTAILMENT,
    NON_ENTAILMENT,
    check_labels,
    collapse,
    counts,
    entry,
    failures,
    grouped,
    merge,
    predict,
)

HANS_HEURISTICS = ("lexical_overlap", "subsequence", "constituent")


def _score(predictor, examples, batch_size):
    predicted, confidences = predict(predictor, [(e["premise"], e["hypothesis"]) for e in examples], batch_size)
    correct = [p == e["label"] for p, e in zip(predicted, examples)]
    return predicted, confidences, correct


# Breaking NLI -----------------------------------------------------------------------------------------
def _labelled(examples, skipped, path, what):
    """The examples, or a one-line error when none has a gold label (nothing could be scored)."""
    if not examples:
        raise readers.DataFormatError(f"{os.fspath(path)}: no labelled pairs to score as {what}"
                                      + (f" ({skipped} rows without a gold label skipped)" if skipped else ""))
    return examples


def load_breaking_nli(path):
    examples, skipped = readers.read_breaking_nli(path)
    _labelled(examples, skipped, path, "Breaking NLI")
    return {"source": os.fspath(path), "examples": examples, "skipped": skipped}


def score_breaking_nli(predictor, data, examples=3, batch_size=256, **_):
    """Accuracy per word category and overall (and per gold label: the set is mostly contradictions)."""
    check_labels(predictor)
    items = data["examples"]
    predicted, confidences, correct = _score(predictor, items, batch_size)
    return {"source": data["source"], "skipped_no_gold_label": data["skipped"], **entry(correct),
            "per_category": grouped([e["category"] for e in items], correct),
            "per_label": grouped([e["label"] for e in items], correct, order=LABELS),
            "predicted": counts(predicted),
            "failures": failures(items, predicted, confidences, correct, examples, fields=("category",))}


# HANS ---------------------------------------------------------------------------------------------------
def load_hans(path):
    examples, _ = readers.read_hans(path)
    _labelled(examples, 0, path, "HANS")
    return {"source": os.fspath(path), "examples": examples}


def _by_gold(items, correct):
    """`{"entailment": entry, "non-entailment": entry, "all": entry}` (a gold label absent: None)."""
    out = {}
    for gold in (ENTAILMENT, NON_ENTAILMENT):
        chosen = [ok for e, ok in zip(items, correct) if e["label"] == gold]
        out[gold] = entry(chosen) if chosen else None
    out["all"] = entry(correct)
    return out


def score_hans(predictor, data, examples=3, batch_size=256, **_):
    """HANS: the three-way prediction collapsed to entailment / non-entailment (neutral and contradiction
    are non-entailment), accuracy per heuristic and per subcase, each split by gold label, and per template.

    Also counts the three-way predictions per gold label (which of neutral / contradiction a model uses
    for non-entailment)."""
    check_labels(predictor, (ENTAILMENT,))
    items = data["examples"]
    three_way, confidences = predict(predictor, [(e["premise"], e["hypothesis"]) for e in items], batch_size)
    predicted = [collapse(label) for label in three_way]
    correct = [p == e["label"] for p, e in zip(predicted, items)]
    heuristics = [h for h in HANS_HEURISTICS if any(e["heuristic"] == h for e in items)]
    heuristics += sorted({e["heuristic"] for e in items} - set(heuristics))
    per_heuristic, per_subcase = {}, {}
    for heuristic in heuristics:
        chosen = [i for i, e in enumerate(items) if e["heuristic"] == heuristic]
        per_heuristic[heuristic] = _by_gold([items[i] for i in chosen], [correct[i] for i in chosen])
        for subcase in dict.fromkeys(items[i]["subcase"] for i in chosen):  # file order
            sub = [i for i in chosen if items[i]["subcase"] == subcase]
            per_subcase[subcase] = {"heuristic": heuristic,
                                    **_by_gold([items[i] for i in sub], [correct[i] for i in sub])}
    fails = failures(items, three_way, confidences, correct, examples, fields=("heuristic", "subcase"))
    return {"source": data["source"], **entry(correct),
            "per_label": {gold: entry([ok for e, ok in zip(items, correct) if e["label"] == gold])
                          for gold in (ENTAILMENT, NON_ENTAILMENT)},
            "per_heuristic": per_heuristic, "per_subcase": per_subcase,
            "per_template": grouped([e["template"] for e in items], correct),
            "predicted": {gold: counts([p for p, e in zip(three_way, items) if e["label"] == gold])
                          for gold in (ENTAILMENT, NON_ENTAILMENT)},
            "failures": fails}


# SNLI hard ------------------------------------------------------------------------------------------------
def load_snli_hard(path):
    examples, skipped = readers.read_snli_hard(path)
    _labelled(examples, skipped, path, "SNLI hard")
    return {"source": os.fspath(path), "examples": examples, "skipped": skipped}


def score_snli_hard(predictor, data, examples=3, batch_size=256, test_accuracy=None, **_):
    """Accuracy on the pairs a hypothesis-only classifier got wrong, beside the full test set's when given."""
    check_labels(predictor)
    items = data["examples"]
    predicted, confidences, correct = _score(predictor, items, batch_size)
    result = entry(correct)
    full = None if test_accuracy is None else float(test_accuracy)
    return {"source": data["source"], "skipped_no_gold_label": data["skipped"], **result,
            "full_test_accuracy": full,
            "gap": None if full is None or result["accuracy"] is None else full - result["accuracy"],
            "per_label": grouped([e["label"] for e in items], correct, order=LABELS),
            "predicted": counts(predicted),
            "failures": failures(items, predicted, confidences, correct, examples)}


# Stress tests ---------------------------------------------------------------------------------------------
def load_stress_tests(path):
    files = readers.stress_test_files(path)
    for file in files:
        file["examples"], file["skipped"] = readers.read_stress_file(file["path"])
        _labelled(file["examples"], file["skipped"], file["path"], "a stress test")
    return {"source": os.fspath(path), "files": files}


def score_stress_tests(predictor, data, examples=3, batch_size=256, **_):
    """Accuracy per stress test, split matched / mismatched (pooled over a test's variants, e.g. the four
    spelling-error files), per variant, and per file."""
    check_labels(predictor)
    tests, files, fails = {}, [], []
    for file in data["files"]:
        items = file["examples"]
        predicted, confidences, correct = _score(predictor, items, batch_size)
        result = entry(correct)
        files.append({"test": file["test"], "variant": file["variant"], "subset": file["subset"],
                      "path": file["path"], "skipped_no_gold_label": file["skipped"], **result})
        test = tests.setdefault(file["test"], {"parts": {}, "variants": {}})
        test["parts"].setdefault(file["subset"], []).append(result)
        test["variants"].setdefault(file["variant"], {})[file["subset"]] = result
        if len(fails) < examples:
            for item in failures(items, predicted, confidences, correct, examples - len(fails)):
                fails.append({"test": file["test"], "variant": file["variant"], **item})
    out = {}
    for name, test in tests.items():
        parts = {subset: merge(results) for subset, results in test["parts"].items()}
        parts["all"] = merge([r for results in test["parts"].values() for r in results])
        variants = {variant: {**subsets, "all": merge(list(subsets.values()))} if len(subsets) > 1 else subsets
                    for variant, subsets in test["variants"].items()}
        out[name] = {**{k: parts.get(k) for k in ("matched", "mismatched")}, "all": parts["all"], "variants": variants}
    return {"source": data["source"], **merge([t["all"] for t in out.values()]), "tests": out, "files": files,
            "failures": fails}


# ANLI ---------------------------------------------------------------------------------------------------
def load_anli(value):
    """`value`: a path, `"tfds"`, or `{"source": path or "tfds", "split": "test", "data_dir": None}`."""
    spec = dict(value) if isinstance(value, dict) else {"source": value}
    split = spec.get("split", "test")
    rounds, skipped = readers.read_anli(spec["source"], split=split, data_dir=spec.get("data_dir"))
    return {"source": os.fspath(spec["source"]), "split": split, "rounds": rounds, "skipped": skipped}


def score_anli(predictor, data, examples=3, batch_size=256, **_):
    """Accuracy per adversarial round (R1-R3) and over all rounds."""
    check_labels(predictor)
    rounds, fails = {}, []
    for name, items in data["rounds"].items():
        predicted, confidences, correct = _score(predictor, items, batch_size)
        rounds[name] = {**entry(correct), "skipped_no_gold_label": data["skipped"][name],
                        "per_label": grouped([e["label"] for e in items], correct, order=LABELS)}
        if len(fails) < examples:
            fails += [{"round": name, **item} for item in
                      failures(items, predicted, confidences, correct, examples - len(fails), fields=("reason",))]
    return {"source": data["source"], "split": data["split"], **merge(list(rounds.values())), "rounds": rounds,
            "failures": fails}
