"""Behaviour tests in the spirit of CheckList (Ribeiro et al. 2020), generated from templates: no data needed.

`generate(seed, size)` fills every test's templates (`templates.TESTS`) from the word lists of `lexicon`,
deterministically for a seed; `run_behaviour(predictor)` predicts them all and reports, per test, the
failure rate (the share of pairs whose prediction is not among the template's expected labels), the
predicted labels, a few failing pairs with the reason for their label and, for the perturbation tests
(typos, irrelevant additions), how often the perturbation alone changed the prediction of the clean pair.

```python
from zoo.diagnostics.behaviour import run_behaviour
section = run_behaviour(predictor, seed=0, size=100)
section["tests"]["negation"]["failure_rate"]
```

References:
    Ribeiro, Wu, Guestrin, Singh. Beyond Accuracy: Behavioral Testing of NLP Models with CheckList. ACL 2020.
"""

import zlib

import numpy as np

from zoo.diagnostics.behaviour.templates import TESTS, BehaviourTest, Template
from zoo.diagnostics.scoring import check_labels, counts, predict

DEFAULT_SIZE = 100
__all__ = ["DEFAULT_SIZE", "TESTS", "BehaviourTest", "Template", "generate", "run_behaviour"]


def generate(seed=0, size=DEFAULT_SIZE, tests=TESTS):
    """The pairs of every test: `{test name: [case, ...]}`.

    Each test draws from its own generator, seeded by `seed` and the test's name, so adding a test changes
    no other test's pairs. Templates are used in turn; a pair generated twice is kept once; a test whose
    templates cannot give `size` distinct pairs keeps what it has.

    Returns:
        cases `{"premise", "hypothesis", "expected": [labels], "reason", "template", "clean": None or
        [premise, hypothesis]}` (`clean`: the unperturbed pair of a perturbation test).
    """
    out = {}
    for test in tests:
        rng = np.random.default_rng([int(seed), zlib.crc32(test.name.encode("utf-8"))])
        cases, seen = [], set()
        for attempt in range(int(size) * 50):
            if len(cases) >= size:
                break
            template = test.templates[attempt % len(test.templates)]
            filled = template.fill(rng)
            premise, hypothesis = filled[:2]
            clean = list(filled[2:4]) if test.perturbation else None
            rest = filled[4:] if test.perturbation else filled[2:]
            expected, reason = (tuple(rest[0]), rest[1]) if rest else (template.expected, template.reason)
            if (premise, hypothesis) in seen or clean == [premise, hypothesis]:
                continue
            seen.add((premise, hypothesis))
            cases.append({"premise": premise, "hypothesis": hypothesis, "expected": list(expected),
                          "reason": reason, "template": template.name, "clean": clean})
        out[test.name] = cases
    return out


def _rate(k, n):
    return k / n if n else None


def run_behaviour(predictor, seed=0, size=DEFAULT_SIZE, examples=3, batch_size=256, tests=TESTS):
    """Predicts every generated pair and reports the failure rate per test.

    Args:
        predictor: see `zoo.diagnostics.scoring`.
        seed, size: of `generate`.
        examples: failing pairs kept per test.
        batch_size: pairs per `predictor.predict` batch.

    Returns:
        `{"seed", "size", "examples", "failures", "failure_rate", "tests": {name: {"capability", "examples",
        "failures", "failure_rate", "predicted", "templates": {name: {"expected", "reason", "examples",
        "failures", "failure_rate"}}, "changed", "clean_failure_rate", "failing": [...]}}}`; `changed`
        (the share of perturbed pairs predicted unlike their clean pair) and `clean_failure_rate` are None
        outside perturbation tests.
    """
    check_labels(predictor)
    generated = generate(seed, size, tests)
    pairs, cleans = [], []
    for cases in generated.values():
        for case in cases:
            pairs.append((case["premise"], case["hypothesis"]))
            if case["clean"] is not None:
                cleans.append(tuple(case["clean"]))
    clean_index = {pair: i for i, pair in enumerate(dict.fromkeys(cleans))}
    labels, confidences = predict(predictor, pairs + list(clean_index), batch_size)
    clean_labels = labels[len(pairs):]
    section, position, total, failed = {}, 0, 0, 0
    for test in tests:
        cases = generated[test.name]
        predicted = labels[position:position + len(cases)]
        confidence = confidences[position:position + len(cases)]
        position += len(cases)
        wrong = [label not in case["expected"] for label, case in zip(predicted, cases)]
        templates = {}
        for template in test.templates:
            chosen = [w for w, case in zip(wrong, cases) if case["template"] == template.name]
            templates[template.name] = {"expected": list(template.expected), "reason": template.reason,
                                        "examples": len(chosen), "failures": sum(chosen),
                                        "failure_rate": _rate(sum(chosen), len(chosen))}
        changed = clean_failure = None
        if test.perturbation:
            before = [clean_labels[clean_index[tuple(case["clean"])]] for case in cases]
            flips = sum(a != b for a, b in zip(before, predicted))
            changed = {"examples": len(cases), "changed": flips, "rate": _rate(flips, len(cases))}
            clean_failure = _rate(sum(b not in case["expected"] for b, case in zip(before, cases)), len(cases))
        failing = [{"premise": case["premise"], "hypothesis": case["hypothesis"], "expected": case["expected"],
                    "predicted": label, "probability": round(p, 4), "reason": case["reason"],
                    "template": case["template"], **({"clean": case["clean"]} if case["clean"] else {})}
                   for label, p, case, w in zip(predicted, confidence, cases, wrong) if w][:examples]
        section[test.name] = {"capability": test.capability, "examples": len(cases), "failures": sum(wrong),
                              "failure_rate": _rate(sum(wrong), len(cases)), "predicted": counts(predicted),
                              "templates": templates, "changed": changed, "clean_failure_rate": clean_failure,
                              "failing": failing}
        total += len(cases)
        failed += sum(wrong)
    return {"seed": int(seed), "size": int(size), "examples": total, "failures": failed,
            "failure_rate": _rate(failed, total), "tests": section}
