"""zoo.diagnostics: the readers on fixtures in each release's layout, the scoring (HANS's two-way collapse, the
per-category / per-heuristic / per-subcase counts), the generated behaviour tests, the artifacts baselines,
the suite's outputs and its command-line options. Fake predictors keep it fast; one test runs real models."""

import argparse
import json
import os
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from zoo.commands.options import add_diagnostics_options, diagnostics_request
from zoo.data import LABELS
from zoo.data.readers import DataFormatError, DataUnavailableError
from zoo.diagnostics import SETS, artifacts, format_report, readers, run_suite
from zoo.diagnostics import report as reporting
from zoo.diagnostics import sets as diagnostic_sets
from zoo.diagnostics.behaviour import TESTS, generate, run_behaviour
from zoo.diagnostics.behaviour.templates import typo
from zoo.diagnostics.request import run_diagnostics
from zoo.diagnostics.scoring import collapse

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "diagnostics"
BREAKING = FIXTURES / "breaking_nli" / "dataset.jsonl"
HANS = FIXTURES / "hans" / "heuristics_evaluation_set.txt"
SNLI_HARD = FIXTURES / "snli_hard" / "snli_1.0_test_hard.jsonl"
STRESS = FIXTURES / "Stress_Tests"
ANLI = FIXTURES / "anli" / "anli_v1.0"
NLI_FILES = Path(__file__).resolve().parent / "fixtures" / "nli_files"


class FakePredictor:
    """Answers `rule(premise, hypothesis) -> label` (or a dict lookup); counts its calls and pairs."""

    labels = LABELS

    def __init__(self, rule):
        self.rule = rule if callable(rule) else (lambda p, h: rule[(p, h)] if (p, h) in rule else rule[h])
        self.calls = 0
        self.pairs = 0

    def predict(self, pairs, batch_size=256):
        self.calls += 1
        self.pairs += len(pairs)
        out = []
        for premise, hypothesis in pairs:
            label = self.rule(premise, hypothesis)
            out.append({"label": label, "probabilities": {n: 0.9 if n == label else 0.05 for n in self.labels}})
        return out


def constant(label):
    return FakePredictor(lambda p, h: label)


def copy_with(src, dst, line_number, edit):
    """Copies a text file with line `line_number` (1-based) replaced by `edit(line)`."""
    lines = Path(src).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line_number - 1] = edit(lines[line_number - 1])
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    Path(dst).write_text("".join(lines), encoding="utf-8")
    return dst


def edit_json(change):
    def edit(line):
        record = json.loads(line)
        change(record)
        return json.dumps(record) + "\n"
    return edit


# Breaking NLI ---------------------------------------------------------------------------------------------
def test_breaking_nli_accuracy_per_category():
    data = diagnostic_sets.load_breaking_nli(BREAKING)
    assert [e["category"] for e in data["examples"]] == ["antonyms", "antonyms", "cardinals", "cardinals",
                                                         "colors", "synonyms", "instruments"]
    assert data["examples"][0]["pair_id"] == "1" and data["examples"][5]["label"] == "entailment"
    # Right on both antonyms, one cardinal, the synonym; wrong elsewhere.
    right = {"A boy carries a light crate up the stairs .", "The young fisherman mends a net on the dock .",
             "Six cyclists wait at a red light .", "A man naps on a huge sofa ."}
    predictor = FakePredictor(lambda p, h: ("entailment" if "huge" in h else "contradiction") if h in right
                              else "neutral")
    section = diagnostic_sets.score_breaking_nli(predictor, data, examples=2)
    assert (section["correct"], section["examples"]) == (4, 7)
    per = {k: (v["correct"], v["examples"]) for k, v in section["per_category"].items()}
    assert per == {"antonyms": (2, 2), "cardinals": (1, 2), "colors": (0, 1), "instruments": (0, 1),
                   "synonyms": (1, 1)}
    assert section["per_label"]["contradiction"]["examples"] == 6
    assert len(section["failures"]) == 2 and section["failures"][0]["category"] == "cardinals"


def test_breaking_nli_row_without_category_stops_at_its_line(tmp_path):
    bad = copy_with(BREAKING, tmp_path / "dataset.jsonl", 3, edit_json(lambda r: r.pop("category")))
    with pytest.raises(DataFormatError) as error:
        readers.read_breaking_nli(bad)
    message = str(error.value)
    assert message.startswith(f"{bad}:3: field 'category'") and "\n" not in message
    bad = copy_with(BREAKING, tmp_path / "labels.jsonl", 2, edit_json(lambda r: r.update(gold_label="maybe")))
    with pytest.raises(ValueError, match=r"labels\.jsonl:2: field 'gold_label' is 'maybe'"):
        readers.read_breaking_nli(bad)
    with pytest.raises(DataUnavailableError, match="no such file"):
        readers.read_breaking_nli(tmp_path / "missing.jsonl")


def test_sets_with_no_labelled_pair_stop_in_one_line_before_scoring(tmp_path):
    rows = [json.loads(line) for line in BREAKING.read_text(encoding="utf-8").splitlines()]
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text("".join(json.dumps({**r, "gold_label": "-"}) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataFormatError) as error:
        diagnostic_sets.load_breaking_nli(unlabelled)
    message = str(error.value)
    assert message == f"{unlabelled}: no labelled pairs to score as Breaking NLI ({len(rows)} rows without a " \
                      "gold label skipped)"
    with pytest.raises(DataFormatError, match="no labelled pairs to score as SNLI hard"):
        diagnostic_sets.load_snli_hard(unlabelled)


# HANS -----------------------------------------------------------------------------------------------------
# The fixture's hypotheses -> a three-way answer: right, wrong, right, wrong, right, right, wrong, wrong.
HANS_ANSWERS = {"The baker admired the painter .": "contradiction",   # non-entailment: right once collapsed
                "The clerk thanked the pilot .": "entailment",        # non-entailment: wrong
                "The poet laughed .": "entailment",                   # entailment: right
                "The nurse waved .": "neutral",                       # entailment: wrong
                "The actor slept .": "neutral",                       # non-entailment: right once collapsed
                "The chef left the hall .": "entailment",             # entailment: right
                "The student smiled .": "entailment",                 # non-entailment: wrong
                "The dentist called the banker .": "contradiction"}   # entailment: wrong


def test_hans_collapses_three_way_predictions_and_counts_per_heuristic_and_subcase():
    assert [collapse(label) for label in LABELS] == ["entailment", "non-entailment", "non-entailment"]
    data = diagnostic_sets.load_hans(HANS)
    assert [e["heuristic"] for e in data["examples"]].count("lexical_overlap") == 4
    assert {e["label"] for e in data["examples"]} == {"entailment", "non-entailment"}
    assert data["examples"][0]["subcase"] == "ln_subject/object_swap" and data["examples"][0]["template"] == "temp1"
    section = diagnostic_sets.score_hans(FakePredictor(HANS_ANSWERS), data, examples=10)
    assert (section["correct"], section["examples"]) == (4, 8)
    heuristic = {h: {g: (v[g]["correct"], v[g]["examples"]) for g in ("entailment", "non-entailment")}
                 for h, v in section["per_heuristic"].items()}
    assert list(heuristic) == ["lexical_overlap", "subsequence", "constituent"]
    assert heuristic == {"lexical_overlap": {"entailment": (1, 2), "non-entailment": (1, 2)},
                         "subsequence": {"entailment": (1, 1), "non-entailment": (1, 1)},
                         "constituent": {"entailment": (0, 1), "non-entailment": (0, 1)}}
    swap = section["per_subcase"]["ln_subject/object_swap"]
    assert swap["heuristic"] == "lexical_overlap" and swap["entailment"] is None
    assert (swap["non-entailment"]["correct"], swap["non-entailment"]["examples"]) == (1, 2)
    assert len(section["per_subcase"]) == 6 and section["per_template"]["temp2"]["accuracy"] == 0.5
    assert section["predicted"]["non-entailment"] == {"entailment": 2, "neutral": 1, "contradiction": 1}
    assert section["predicted"]["entailment"] == {"entailment": 2, "neutral": 1, "contradiction": 1}
    assert [f["predicted"] for f in section["failures"]] == ["entailment", "neutral", "entailment", "contradiction"]
    text = format_report({"sets": {"hans": section}, "skipped": []})
    assert "lexical_overlap" in text and "0.5000 (2)" in text and "ln_subject/object_swap" in text


def test_hans_schema_errors_name_line_and_field(tmp_path):
    header = HANS.read_text(encoding="utf-8").splitlines()[0]
    bad = copy_with(HANS, tmp_path / "no_heuristic.txt", 1, lambda line: line.replace("\theuristic", "\theur"))
    with pytest.raises(DataFormatError, match=r"no_heuristic\.txt:1: the header has no field 'heuristic'"):
        readers.read_hans(bad)
    bad = copy_with(HANS, tmp_path / "label.txt", 4, lambda line: "neutral" + line[line.index("\t"):])
    with pytest.raises(DataFormatError, match=r"label\.txt:4: field 'gold_label' is 'neutral', expected one of "
                                              r"entailment, non-entailment"):
        readers.read_hans(bad)
    bad = copy_with(HANS, tmp_path / "short.txt", 6, lambda line: "\t".join(line.split("\t")[:8]) + "\n")
    with pytest.raises(DataFormatError, match=r"short\.txt:6: missing field 'heuristic'"):
        readers.read_hans(bad)
    assert header.split("\t") == list(readers.HANS_COLUMNS)


# SNLI hard ------------------------------------------------------------------------------------------------
def test_snli_hard_beside_the_full_test_accuracy():
    data = diagnostic_sets.load_snli_hard(SNLI_HARD)
    assert len(data["examples"]) == 4 and data["skipped"] == 1
    section = diagnostic_sets.score_snli_hard(constant("entailment"), data, test_accuracy=0.8)
    assert section["accuracy"] == 0.5 and section["full_test_accuracy"] == 0.8
    assert section["gap"] == pytest.approx(0.3) and section["skipped_no_gold_label"] == 1
    assert "(hard minus full: -0.3000)" in format_report({"sets": {"snli_hard": section}})
    alone = diagnostic_sets.score_snli_hard(constant("entailment"), data)
    assert alone["gap"] is None and "not given" in format_report({"sets": {"snli_hard": alone}})


# Stress tests ---------------------------------------------------------------------------------------------
def test_stress_tests_found_by_the_releases_layout():
    files = readers.stress_test_files(FIXTURES)  # the parent of Stress_Tests works too
    assert [(f["test"], f["variant"], f["subset"]) for f in files] == [
        ("Antonym", "antonym", "matched"), ("Antonym", "antonym", "mismatched"),
        ("Numerical_Reasoning", "quant_hard", "all"), ("Word_Overlap", "taut2", "matched"),
        ("Negation", "negation", "matched"),
        ("Spelling_Error", "dev_gram_keyboard", "matched"), ("Spelling_Error", "dev_gram_keyboard", "mismatched"),
        ("Spelling_Error", "dev_gram_swap", "matched")]
    assert files[4]["path"].endswith("multinli_0.9_negation_matched.txt")  # only the tab-separated twin
    with pytest.raises(DataUnavailableError, match="Antonym, Numerical_Reasoning"):
        readers.stress_test_files(FIXTURES / "hans")


def test_stress_tests_accuracy_per_test_and_subset():
    data = diagnostic_sets.load_stress_tests(STRESS)
    section = diagnostic_sets.score_stress_tests(constant("contradiction"), data)
    tests = section["tests"]
    assert list(tests) == ["Antonym", "Numerical_Reasoning", "Word_Overlap", "Negation", "Spelling_Error"]
    assert (tests["Antonym"]["matched"]["correct"], tests["Antonym"]["matched"]["examples"]) == (2, 2)
    assert tests["Antonym"]["mismatched"]["accuracy"] == 1.0 and tests["Antonym"]["all"]["examples"] == 3
    assert tests["Numerical_Reasoning"]["matched"] is None and tests["Numerical_Reasoning"]["all"]["examples"] == 3
    spelling = tests["Spelling_Error"]
    assert (spelling["matched"]["correct"], spelling["matched"]["examples"]) == (0, 3)  # pooled over two variants
    assert spelling["mismatched"]["accuracy"] == 1.0
    assert set(spelling["variants"]) == {"dev_gram_keyboard", "dev_gram_swap"}
    assert spelling["variants"]["dev_gram_keyboard"]["all"]["examples"] == 3
    assert tests["Negation"]["all"]["accuracy"] == 0.0 and tests["Negation"]["all"]["examples"] == 2
    assert (section["correct"], section["examples"]) == (5, 14)


def test_stress_test_bad_row_names_file_line_and_field(tmp_path):
    shutil.copytree(STRESS, tmp_path / "Stress_Tests")
    target = tmp_path / "Stress_Tests" / "Word_Overlap" / "multinli_0.9_taut2_matched.jsonl"
    copy_with(target, target, 2, edit_json(lambda r: r.pop("sentence2")))
    with pytest.raises(DataFormatError, match=rf"{target}:2: field 'sentence2' \(the hypothesis\) is missing"):
        diagnostic_sets.load_stress_tests(tmp_path)


# ANLI -----------------------------------------------------------------------------------------------------
def test_anli_rounds_from_folder_zip_and_single_file(tmp_path):
    rounds, skipped = readers.read_anli(FIXTURES / "anli")
    assert list(rounds) == ["R1", "R2", "R3"] and [len(r) for r in rounds.values()] == [3, 2, 2]
    first = rounds["R1"][0]
    assert first["label"] == "entailment" and first["pair_id"] == "r1-0000" and first["reason"]
    assert [e["label"] for e in rounds["R1"]] == ["entailment", "contradiction", "neutral"]
    dev, _ = readers.read_anli(ANLI, split="dev")
    assert [len(r) for r in dev.values()] == [1, 1, 1]
    archive = tmp_path / "anli_v1.0.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(ANLI.rglob("*.jsonl")):
            z.write(path, "anli_v1.0/" + path.relative_to(ANLI).as_posix())
    zipped, _ = readers.read_anli(archive)
    assert {k: [e["hypothesis"] for e in v] for k, v in zipped.items()} == \
        {k: [e["hypothesis"] for e in v] for k, v in rounds.items()}
    single, _ = readers.read_anli(ANLI / "R2" / "test.jsonl")
    assert list(single) == ["R2"]
    section = diagnostic_sets.score_anli(constant("entailment"), diagnostic_sets.load_anli(ANLI))
    assert {k: v["correct"] for k, v in section["rounds"].items()} == {"R1": 1, "R2": 1, "R3": 1}
    assert (section["correct"], section["examples"]) == (3, 7)


def test_anli_bad_label_and_offline_tfds(tmp_path):
    copy_with(ANLI / "R3" / "test.jsonl", tmp_path / "R3" / "test.jsonl", 2,
              edit_json(lambda r: r.update(label="entailment")))
    with pytest.raises(DataFormatError, match=r"R3/test\.jsonl:2: field 'label' is 'entailment', expected one of "
                                              r"entailment, neutral, contradiction"):
        readers.read_anli(tmp_path)
    started = time.monotonic()
    with pytest.raises(DataUnavailableError, match="cannot be reached"):
        readers.read_anli("tfds", data_dir=str(tmp_path / "tfds"), reachable=lambda *a, **k: False)
    assert time.monotonic() - started < 20


# Behaviour tests ------------------------------------------------------------------------------------------
def test_behaviour_tests_are_generated_deterministically_without_data():
    first, again, other = generate(seed=0, size=60), generate(seed=0, size=60), generate(seed=1, size=60)
    names = [t.name for t in TESTS]
    assert names == ["negation", "antonyms", "hypernyms", "numbers", "counting", "argument swap", "word order",
                     "typos", "irrelevant additions"]
    assert first == again and first != other
    for name, cases in first.items():
        assert len(cases) == 60, name
        assert len({(c["premise"], c["hypothesis"]) for c in cases}) == 60
        for case in cases:
            assert case["expected"] and set(case["expected"]) <= set(LABELS) and case["reason"]
            assert (case["clean"] is not None) == (name in ("typos", "irrelevant additions"))
    # The templates state what they claim: an "another number" pair has two different numbers, a typo one
    # changed word, an argument swap the same words.
    for case in first["argument swap"]:
        assert sorted(case["premise"].split()) == sorted(case["hypothesis"].split())
        assert case["premise"] != case["hypothesis"]
    for case in first["typos"]:
        changed = [(a, b) for a, b in zip(" ".join(case["clean"]).split(), (case["premise"] + " " +
                                                                           case["hypothesis"]).split()) if a != b]
        assert len(changed) == 1 and sorted(changed[0][0]) == sorted(changed[0][1])
    assert typo("A man is at home.", np.random.default_rng(0))[1] == "home"
    assert typo("I am ok.", np.random.default_rng(0)) == ("I am ok.", None)


def test_behaviour_failure_rates_per_test():
    # Always "contradiction": right exactly where contradiction is among the expected labels.
    section = run_behaviour(constant("contradiction"), seed=0, size=40, examples=2)
    tests = section["tests"]
    cases = generate(seed=0, size=40)
    for name, cases_of in cases.items():
        expected_failures = sum("contradiction" not in c["expected"] for c in cases_of)
        assert tests[name]["failures"] == expected_failures, name
        assert tests[name]["failure_rate"] == pytest.approx(expected_failures / 40)
        assert sum(tests[name]["predicted"].values()) == 40
    assert tests["antonyms"]["failure_rate"] == 0.0 and tests["hypernyms"]["failure_rate"] == 1.0
    assert tests["argument swap"]["failure_rate"] == 0.0 and tests["word order"]["failure_rate"] == 1.0
    negation = tests["negation"]
    assert negation["templates"]["unrelated negation"]["failure_rate"] == 1.0
    assert negation["templates"]["negated hypothesis"]["failure_rate"] == 0.0
    assert len(tests["word order"]["failing"]) == 2 and tests["word order"]["failing"][0]["reason"]
    # A constant model never changes its answer under a perturbation.
    assert tests["typos"]["changed"] == {"examples": 40, "changed": 0, "rate": 0.0}
    assert tests["negation"]["changed"] is None
    # A model that reads spelling: every typo changes its answer, additions never do.
    from zoo.diagnostics.behaviour.lexicon import IRRELEVANT

    clean_words = {w.strip(".,").lower() for cases_of in cases.values() for c in cases_of if c["clean"]
                   for s in c["clean"] for w in s.split()}
    clean_words |= {w.strip(".,").lower() for s in IRRELEVANT for w in s.split()}
    speller = FakePredictor(lambda p, h: "neutral" if all(w.strip(".,").lower() in clean_words
                                                          for w in (p + " " + h).split()) else "entailment")
    perturbed = run_behaviour(speller, seed=0, size=40)["tests"]
    assert perturbed["typos"]["changed"]["rate"] == 1.0
    assert perturbed["irrelevant additions"]["changed"]["rate"] == 0.0
    assert perturbed["typos"]["clean_failure_rate"] == pytest.approx(
        sum("neutral" not in c["expected"] for c in cases["typos"]) / 40)
    text = format_report({"sets": {"behaviour": section}, "skipped": []})
    assert "argument swap" in text and "FAIL [" in text and "failure rate" in text


# Artifacts ------------------------------------------------------------------------------------------------
def test_lexical_overlap_features_rule_and_regression():
    x = artifacts.features([("A man sleeps on a couch.", "A man sleeps."), ("A man sleeps.", "Nobody is awake.")])
    named = [dict(zip(artifacts.FEATURES, row)) for row in x]
    assert named[0]["hypothesis_in_premise"] == 1.0 and named[0]["all_hypothesis_in_premise"] == 1.0
    assert named[0]["premise_in_hypothesis"] == pytest.approx(4 / 6)  # a, man, sleeps, a
    assert named[1]["negation_in_hypothesis_only"] == 1.0 and named[1]["hypothesis_in_premise"] == 0.0
    assert [LABELS[i] for i in artifacts.rule_predict([("A man sleeps on a couch.", "A man sleeps."),
                                                       ("A man sleeps on a couch.", "A man does not sleep."),
                                                       ("A man sleeps on a couch.", "A man sleeps on a red couch."),
                                                       ("A man sleeps.", "Two dogs run in the snow.")])] == \
        ["entailment", "contradiction", "neutral", "contradiction"]
    # Labels that only overlap decides: the regression learns them.
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    pairs, labels = [], []
    for i in range(300):
        premise = list(rng.choice(words, 8, replace=False))
        label = i % 3
        hypothesis = premise[:4] if label == 0 else (premise[:3] + ["x1", "x2"] if label == 1 else ["y1", "y2", "y3"])
        pairs.append((" ".join(premise), " ".join(hypothesis)))
        labels.append(label)
    classifier = artifacts.OverlapClassifier().fit(pairs, labels)
    assert np.mean(classifier.predict_ids(pairs) == np.asarray(labels)) > 0.95
    assert set(classifier.weights_table()["weights"]) == set(artifacts.FEATURES)


def test_artifacts_report_compares_model_with_each_baseline():
    test = [{"premise": "A man sleeps on a couch.", "hypothesis": "A man sleeps.", "label": 0},
            {"premise": "A man sleeps on a couch.", "hypothesis": "A man does not sleep.", "label": 2},
            {"premise": "A man sleeps.", "hypothesis": "A man sleeps on a red couch.", "label": 1},
            {"premise": "A dog runs.", "hypothesis": "An animal runs.", "label": "entailment"}]
    # The rule gets the first three right and calls the last one neutral (one word of three overlaps).
    model = FakePredictor({"A man sleeps.": "entailment", "A man does not sleep.": "neutral",
                           "A man sleeps on a red couch.": "neutral", "An animal runs.": "entailment"})
    premise_blind = FakePredictor(lambda p, h: "contradiction" if "not" in h else "entailment")
    section = artifacts.run_artifacts(model, test, hypothesis_only=premise_blind)
    assert section["model"]["accuracy"] == 0.75
    overlap = section["baselines"]["lexical_overlap"]
    assert overlap["kind"] == "fixed rule" and (overlap["correct"], overlap["examples"]) == (3, 4)
    assert overlap["share_of_model"] == pytest.approx(1.0)
    assert (overlap["hard"]["correct"], overlap["hard"]["examples"]) == (1, 1)  # the model gets the dog pair
    assert (overlap["easy"]["correct"], overlap["easy"]["examples"]) == (2, 3)
    blind = section["baselines"]["hypothesis_only"]
    assert (blind["correct"], blind["examples"]) == (3, 4) and (blind["hard"]["examples"]) == 1
    assert blind["hard"]["accuracy"] == 1.0  # the premise-blind model misses the neutral pair, the model not
    fitted = artifacts.run_artifacts(model, test, train=test * 5)
    assert fitted["baselines"]["lexical_overlap"]["kind"] == "logistic regression"
    assert fitted["baselines"]["lexical_overlap"]["fitted_on"] == 20


# The suite ------------------------------------------------------------------------------------------------
def test_run_suite_reports_writes_json_charts_and_tensorboard(tmp_path, capsys):
    predictor = constant("contradiction")
    sets = {"breaking_nli": str(BREAKING), "hans": str(HANS), "snli_hard": str(SNLI_HARD),
            "stress_tests": str(STRESS), "anli": str(ANLI), "behaviour": {"seed": 3, "size": 20},
            "artifacts": {"test": str(NLI_FILES), "train": str(NLI_FILES)}}
    report = run_suite(predictor, sets, out_dir=str(tmp_path / "out"), logdir=str(tmp_path / "logs"),
                       test_accuracy=0.5, step=7, examples=1)
    assert list(report["sets"]) == list(SETS) and report["skipped"] == []
    printed = reporting.format_report(report)  # the tables: the command's output (evaluate prints them)
    for title in reporting.SET_TITLES.values():
        assert title in printed
    said = capsys.readouterr().out  # the library says only where it wrote
    assert said == f"[diagnostics] written to {tmp_path / 'out' / 'diagnostics.json'}\n"
    written = json.loads((tmp_path / "out" / "diagnostics.json").read_text(encoding="utf-8"))
    assert written["sets"]["breaking_nli"]["per_category"]["colors"]["accuracy"] == 1.0
    assert written["sets"]["snli_hard"]["full_test_accuracy"] == 0.5
    assert written["sets"]["behaviour"]["seed"] == 3
    assert sorted(os.listdir(tmp_path / "out")) == sorted(["diagnostics.json"] +
                                                          [f"diagnostics_{name}.png" for name in SETS])
    assert (tmp_path / "out" / "diagnostics_hans.png").read_bytes()[:4] == b"\x89PNG"
    import tensorflow as tf

    events = list((tmp_path / "logs" / "diagnostics").glob("events.out.tfevents.*"))
    tags = {}
    for event in tf.compat.v1.train.summary_iterator(str(events[0])):
        for value in event.summary.value:
            tags[value.tag] = (event.step, float(tf.make_ndarray(value.tensor)))
    assert tags["breaking_nli/category/colors"] == (7, 1.0)
    assert tags["hans/lexical_overlap/non-entailment"] == (7, 1.0)
    assert tags["stress_tests/Antonym/matched"] == (7, 1.0)
    assert tags["behaviour/failure_rate/antonyms"] == (7, 0.0)
    assert set(tags) == set(reporting.scalars(report))


def test_run_suite_skips_sets_not_given_and_reads_before_predicting(tmp_path, capsys):
    predictor = constant("neutral")
    report = run_suite(predictor, {"snli_hard": str(SNLI_HARD), "hans": None, "behaviour": False})
    assert list(report["sets"]) == ["snli_hard"]
    assert report["skipped"] == ["breaking_nli", "hans", "stress_tests", "anli", "behaviour", "artifacts"]
    assert "not run (not given): breaking_nli, hans, stress_tests, anli, behaviour, artifacts" in \
        reporting.format_report(report)
    assert capsys.readouterr().out == ""  # nothing written, nothing said
    bad = copy_with(HANS, tmp_path / "hans.txt", 3, lambda line: "maybe" + line[line.index("\t"):])
    predictor = constant("neutral")
    with pytest.raises(DataFormatError, match=r"hans\.txt:3: field 'gold_label'"):
        run_suite(predictor, {"breaking_nli": str(BREAKING), "hans": str(bad), "behaviour": True})
    assert predictor.calls == 0
    with pytest.raises(ValueError, match="unknown diagnostic set"):
        run_suite(predictor, {"hanz": str(HANS)})


def test_command_line_options_and_run_from_args(tmp_path):
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir")
    parser.add_argument("--dataset")
    add_diagnostics_options(parser)
    args = parser.parse_args([])
    assert run_diagnostics(diagnostics_request(args), constant("neutral"), None, None, None) is None
    args = parser.parse_args(["--hans", str(HANS)])
    with pytest.raises(ValueError, match="--hans needs --suite diagnostics"):
        run_diagnostics(diagnostics_request(args), constant("neutral"), None, None, None)
    with pytest.raises(SystemExit):
        parser.parse_args(["--suite", "everything"])
    args = parser.parse_args(["--suite", "diagnostics", "--breaking-nli", str(BREAKING), "--hans", str(HANS),
                              "--stress-tests", str(FIXTURES), "--anli", str(ANLI / "R1" / "test.jsonl"),
                              "--no-behaviour", "--data-dir", str(NLI_FILES)])
    report = run_diagnostics(diagnostics_request(args), constant("entailment"), str(tmp_path), None, 0.61)
    assert list(report["sets"]) == ["breaking_nli", "hans", "stress_tests", "anli", "artifacts"]
    assert report["skipped"] == ["snli_hard", "behaviour"]
    assert list(report["sets"]["anli"]["rounds"]) == ["R1"]
    overlap = report["sets"]["artifacts"]["baselines"]["lexical_overlap"]
    assert overlap["kind"] == "logistic regression" and overlap["fitted_on"] > 0  # nli_files has a train.jsonl
    assert report["sets"]["artifacts"]["test_source"].endswith("[test]")
    assert (tmp_path / "diagnostics.json").exists()
    args = parser.parse_args(["--suite", "diagnostics", "--hypothesis-only", str(tmp_path)])
    with pytest.raises(ValueError, match="--hypothesis-only"):  # a folder that is not a run
        run_diagnostics(diagnostics_request(args), constant("neutral"), None, None, None)


# Real models ----------------------------------------------------------------------------------------------
class TinyPredictor:
    """A minimal predictor over an (untrained) zoo model: the interface `RunPredictor` has."""

    labels = LABELS

    def __init__(self, model, vocab, tokenizer):
        self.model, self.vocab, self.tokenizer = model, vocab, tokenizer

    def predict(self, pairs, batch_size=256):
        from zoo.data.pipeline import encode_pairs

        out = []
        for start in range(0, len(pairs), batch_size):
            ids = encode_pairs(pairs[start:start + batch_size], self.vocab, self.tokenizer)
            logits = np.asarray(self.model(ids, training=False), "float64")
            p = np.exp(logits - logits.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            out += [{"label": LABELS[int(np.argmax(row))], "probabilities": dict(zip(LABELS, map(float, row)))}
                    for row in p]
        return out


def test_behaviour_and_artifacts_with_real_tiny_models():
    import keras

    import zoo
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    cases = generate(seed=0, size=15)
    sentences = [s for cs in cases.values() for c in cs for s in (c["premise"], c["hypothesis"])]
    tokenizer = Tokenizer(lowercase=True)
    vocab = Vocabulary.build(tokenizer.tokenize_batch(sentences))
    keras.utils.set_random_seed(0)
    model = TinyPredictor(zoo.create_model("bowman_lstm", vocabulary_size=len(vocab), embedding_dim=8, hidden_size=8,
                                           mlp_size=8), vocab, tokenizer)
    blind = TinyPredictor(zoo.create_model("hypothesis_only", vocabulary_size=len(vocab), embedding_dim=8,
                                           hidden_size=8, mlp_size=8), vocab, tokenizer)
    section = run_behaviour(model, seed=0, size=15, examples=2)
    assert section["examples"] == 15 * len(TESTS)
    for name, test in section["tests"].items():
        assert 0.0 <= test["failure_rate"] <= 1.0 and sum(test["predicted"].values()) == 15, name
        assert test["failures"] == round(test["failure_rate"] * 15)
    # The hypothesis-only model cannot see the premise: swapping premises changes none of its answers.
    pairs = [(c["premise"], c["hypothesis"]) for c in cases["negation"]]
    shuffled = [(pairs[(i + 5) % len(pairs)][0], h) for i, (_, h) in enumerate(pairs)]
    def table(answers):
        return np.asarray([[a["probabilities"][name] for name in LABELS] for a in answers])

    np.testing.assert_allclose(table(blind.predict(pairs)), table(blind.predict(shuffled)), atol=1e-6)
    assert pairs != shuffled
    test = [{"premise": c["premise"], "hypothesis": c["hypothesis"], "label": c["expected"][0]}
            for cs in cases.values() for c in cs]
    report = artifacts.run_artifacts(model, test, train=test, hypothesis_only=blind)
    for baseline in report["baselines"].values():
        assert baseline["hard"]["examples"] + baseline["easy"]["examples"] == len(test)
