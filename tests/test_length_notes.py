"""Pairs cut at a model's maximum lengths and empty sentences are counted for every kind of model: a run, its
SavedModel, its TFLite export and its preset give the same counts (`Predictor.length_notes`), and `evaluate.py`
and `predict.py` print the same line for each (and `evaluate.py` writes the counts as `inputs`).

One tiny untrained `bowman_lstm` run (8-d vectors, hidden size 8) with short maximum lengths, premise 12 and
hypothesis 8 tokens (two limits, so that each kind is seen to read its own), exported once per module.
"""

import json

import pytest

import zoo
from tests.support.runs import finished_run
from zoo.commands import evaluate as evaluate_command
from zoo.commands import predict as predict_command

MAX_PREMISE, MAX_HYPOTHESIS = 12, 8
KINDS = ("run", "saved_model", "tflite", "preset")
FLAGS = {"run": "--run-dir", "saved_model": "--saved-model", "tflite": "--tflite", "preset": "--preset"}

# One premise over its limit, one hypothesis over its limit, one empty hypothesis, one clean pair.
EDGE = [(" ".join(["word"] * (MAX_PREMISE + 1)), "A text.", "neutral"),
        ("A dog runs.", " ".join(["word"] * (MAX_HYPOTHESIS + 3)), "neutral"),
        ("A dog runs in the park.", "", "contradiction"),
        ("A man sleeps.", "A person rests.", "entailment")]
CLEAN = [("A man sleeps.", "A person rests.", "entailment"), ("Two dogs run.", "Animals move.", "entailment")]
LINE = (f"of 4 pairs, 1 premise(s) cut to their first {MAX_PREMISE} tokens, 1 hypothesis(s) cut to their first "
        f"{MAX_HYPOTHESIS} tokens, 1 empty hypothesis(s) (no tokens; answered all the same)")
COUNTS = {"pairs": 4, "premises_cut": 1, "hypotheses_cut": 1, "empty_premises": 0, "empty_hypotheses": 1,
          "max_premise_length": MAX_PREMISE, "max_hypothesis_length": MAX_HYPOTHESIS}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """`{kind: path}` of the run and its three exports (the smallest each: no TF Serving files, no test split)."""
    from zoo.export.saved_model import export_saved_model
    from zoo.export.tflite import export_tflite
    from zoo.presets import export_preset

    root = tmp_path_factory.mktemp("length_notes")
    run_dir = finished_run(str(root / "run"), "bowman_lstm",  # with a results.json: a preset needs one
                           overrides={"max_premise_length": MAX_PREMISE, "max_hypothesis_length": MAX_HYPOTHESIS})
    run = zoo.load(run_dir)
    return {"run": run_dir,
            "saved_model": export_saved_model(run, str(root / "saved_model"), serving_files=False),
            "tflite": export_tflite(run, str(root / "tflite"), test_examples=None),
            "preset": export_preset(run, str(root / "preset"))}


def write_lines(path, rows, keys):
    path.write_text("".join(json.dumps(dict(zip(keys, row))) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.mark.large
def test_every_kind_counts_the_same(models):
    from zoo.predictors import open_predictor

    pairs = [row[:2] for row in EDGE]
    for kind in KINDS:
        predictor = open_predictor(models[kind])
        assert predictor.kind == kind
        assert predictor.length_notes(pairs) == COUNTS, kind
        assert predictor.length_notes([row[:2] for row in CLEAN])["premises_cut"] == 0, kind
        if kind == "saved_model":  # the graph's own counts (`explain`) agree with the Python tokenizer's
            outputs = predictor._call("explain", pairs)
            assert int((outputs["tokens_cut"] > 0).sum()) == COUNTS["premises_cut"] + COUNTS["hypotheses_cut"]
            assert int(outputs["empty_sentences"].sum()) == COUNTS["empty_hypotheses"]


def test_a_predictor_that_knows_no_lengths_counts_nothing():
    from zoo.runs.predictor import Predictor

    class Constant(Predictor):
        def predict_probabilities(self, pairs, batch_size=256):
            raise AssertionError("not called")

    assert Constant().length_notes([("", "")]) is None


@pytest.mark.large
@pytest.mark.parametrize("kind", KINDS[1:])
def test_predict_prints_the_count_for_every_kind(models, kind, tmp_path, capfd):
    capsys = capfd  # descriptor 2 itself: a SavedModel's own line about cut pairs would show there
    out = tmp_path / "out.jsonl"
    edge = write_lines(tmp_path / "edge.jsonl", EDGE, ("premise", "hypothesis"))
    predictions = predict_command.main([FLAGS[kind], models[kind], "--input", edge, "--output", str(out)])
    assert len(predictions.predictions) == len(out.read_text().splitlines()) == 4
    err = capsys.readouterr().err
    assert f"[predict] {edge}: {LINE}\n" in err and err.count("[predict]") == 1
    assert "[nli-zoo]" not in err  # one line per fact

    clean = write_lines(tmp_path / "clean.jsonl", CLEAN, ("premise", "hypothesis"))
    predict_command.main([FLAGS[kind], models[kind], "--input", clean, "--output", str(out)])
    assert "[predict]" not in capsys.readouterr().err
    predict_command.main([FLAGS[kind], models[kind], "--premise", "A dog runs.", "--hypothesis", ""])
    captured = capsys.readouterr()
    assert captured.out.startswith("label: ")
    assert "[predict] the pair: of 1 pairs, 1 empty hypothesis(s)" in captured.err


@pytest.mark.large
@pytest.mark.parametrize("kind", KINDS[1:])
def test_evaluate_prints_and_writes_the_count_for_every_kind(models, kind, tmp_path, capsys):
    keys = ("sentence1", "sentence2", "gold_label")
    edge = write_lines(tmp_path / "edge.jsonl", EDGE, keys)
    report = evaluate_command.main([FLAGS[kind], models[kind], "--data-dir", edge, "--quiet",
                                    "--output", str(tmp_path / "edge.json")])
    (split, notes), = report.inputs.items()
    assert notes == COUNTS
    written = json.loads((tmp_path / "edge.json").read_text())
    assert written["inputs"][split] == COUNTS
    assert written[kind] == models[kind]                         # the report names what was scored
    assert f"[evaluate] {split}: {LINE}\n" in capsys.readouterr().out

    clean = write_lines(tmp_path / "clean.jsonl", CLEAN, keys)
    report = evaluate_command.main([FLAGS[kind], models[kind], "--data-dir", clean, "--quiet",
                                    "--output", str(tmp_path / "clean.json")])
    assert next(iter(report.inputs.values()))["premises_cut"] == 0
    out = capsys.readouterr().out
    assert " cut to " not in out and "empty" not in out
