"""evaluate.py and fine-tuning (`train.py --init-from`): any corpus, any split, a run or its SavedModel,
and a trained run carried over to new data (Bowman et al.'s SNLI-to-SICK transfer).

One tiny `bowman_lstm` run on the shipped SNLI rows serves every test (1 epoch, 8-d random vectors).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import evaluate as evaluate_script
import train as train_script
import zoo
from zoo.data.corpora import load_corpus
from zoo.runs.record import load_record

pytestmark = pytest.mark.large  # the whole file is the large tier

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
TINY = ["--embeddings", "none", "--embedding-dim", "8", "--set", "hidden_size=8", "--set", "mlp_size=8",
        "--batch-size", "16", "--keras-verbose", "0", "--attention-examples", "0", "--epochs", "1"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("eval") / "snli"
    train_script.main(["--model", "bowman_lstm", "--dataset", "snli_sample", "--max-train-examples", "96",
                       "--max-eval-examples", "40", "--run-dir", str(run_dir), *TINY])
    return run_dir


def test_evaluates_the_run_as_training_did(run, capsys):
    report = evaluate_script.main(["--run-dir", str(run), "--dataset", "snli_sample", "--max-examples", "40"])
    trained = json.loads((run / "results.json").read_text())
    assert report.results["test"] == trained["test"]  # one library path for both
    written = run / "evaluations" / "snli_sample-test.json"
    assert report.output == str(written) and json.loads(written.read_text()) == report.to_json()
    assert json.loads(written.read_text())["results"]["test"]["accuracy"] == trained["test"]["accuracy"]
    out = capsys.readouterr().out
    assert "confusion matrix (rows gold, columns predicted)" in out and f"[evaluate] written to {written}\n" in out
    assert "[data] test: scoring the first 40 of 144 pairs (--max-examples)" in out
    # --quiet: the scores, as without it, and no note (what it read, what it wrote)
    quiet = evaluate_script.main(["--run-dir", str(run), "--dataset", "snli_sample", "--max-examples", "40",
                                  "--quiet"])
    said = capsys.readouterr().out.splitlines()  # the warning that the accuracy is near chance is kept
    assert [line for line in said if not line.startswith("[note] accuracy near chance")] == \
        quiet.format_scores().splitlines() == report.format_scores().splitlines()
    # The same from Python: the library call the command wraps, and the run's own evaluate
    assert zoo.evaluate(run_dir=str(run), dataset="snli_sample", max_examples=40, quiet=True).results == report.results
    examples = load_corpus("snli_sample")[0]["test"][:40]
    assert zoo.load(run).evaluate(examples) == trained["test"]


def test_every_split_of_multinli_with_genres(run, tmp_path):
    report = evaluate_script.main(["--run-dir", str(run), "--data-dir", str(FIXTURES / "multinli_1.0.zip"),
                                   "--split", "all", "--quiet", "--output", str(tmp_path / "m.json")])
    assert set(report.results) == {"train", "dev_matched", "dev_mismatched"}
    matched = report.results["dev_matched"]
    genres = matched["per_genre"]
    assert sum(g["examples"] for g in genres.values()) == matched["examples"] > 0
    assert report.roles["test"] == "dev_mismatched"
    one = evaluate_script.main(["--run-dir", str(run), "--data-dir", str(FIXTURES / "multinli_1.0"),
                                "--split", "dev_matched", "--quiet", "--output", str(tmp_path / "d.json")])
    assert one.results["dev_matched"] == matched


def test_a_single_file_is_scored_whole_and_sick_by_role(run, tmp_path):
    whole = evaluate_script.main(["--run-dir", str(run), "--data-dir", str(FIXTURES / "breaking_nli" / "dataset.jsonl"),
                                  "--quiet", "--output", str(tmp_path / "b.json")])
    (split, result), = whole.results.items()
    lines = [line for line in (FIXTURES / "breaking_nli" / "dataset.jsonl").read_text().splitlines() if line.strip()]
    assert result["examples"] + sum(whole.skipped[split].values()) == len(lines)
    sick = evaluate_script.main(["--run-dir", str(run), "--data-dir", str(FIXTURES / "sick"), "--split", "dev",
                                 "--quiet", "--output", str(tmp_path / "s.json")])
    assert list(sick.results) == ["trial"]


def test_bad_input_is_one_line(run, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence1": "A dog.", "sentence2": "An animal.", "gold_label": "entailment"}\n{oops\n')
    # evaluate.py's real command line (exit status, stderr) for the malformed file; its main in this process
    # (the same code after the start-up, without a TensorFlow start) for the two other errors
    for argv, expected, in_process in (
            (["--run-dir", str(run), "--data-dir", str(bad)], "bad.jsonl:2:", False),
            (["--run-dir", str(run), "--dataset", "snli_sample", "--split", "nope"], "no split 'nope'", True),
            (["--run-dir", str(tmp_path / "none"), "--dataset", "snli_sample"], "none: no such folder", True),
            (["--run-dir", str(tmp_path), "--dataset", "snli_sample"], "not a run directory", True)):
        if in_process:
            with pytest.raises(SystemExit) as exit_:
                evaluate_script.main([*argv, "--quiet"])
            returncode, stderr = exit_.value.code, capsys.readouterr().err
        else:
            result = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), *argv, "--quiet"], cwd=ROOT,
                                    capture_output=True, text=True, timeout=120)
            returncode, stderr = result.returncode, result.stderr
        errors = [line for line in stderr.splitlines() if line.startswith("evaluate.py: error:")]
        assert returncode == 2 and "Traceback" not in stderr
        assert len(errors) == 1 and expected in errors[0], stderr


def test_the_exported_saved_model_scores_the_same(run, tmp_path):
    from zoo.export.saved_model import export_saved_model

    export_saved_model(zoo.load(run), str(tmp_path / "model"))
    report = evaluate_script.main(["--saved-model", str(tmp_path / "model"), "--dataset", "snli_sample",
                                   "--max-examples", "40", "--quiet"])
    trained = json.loads((run / "results.json").read_text())
    assert report.results["test"]["confusion_matrix"] == trained["test"]["confusion_matrix"]
    assert (tmp_path / "model" / "evaluations" / "snli_sample-test.json").exists()


def test_the_preset_and_the_tflite_export_score_the_same(run, tmp_path):
    from zoo.export.tflite import export_tflite
    from zoo.presets import export_preset

    trained = json.loads((run / "results.json").read_text())
    export_preset(zoo.load(run), str(tmp_path / "preset"))
    report = evaluate_script.main(["--preset", str(tmp_path / "preset"), "--dataset", "snli_sample",
                                   "--max-examples", "40", "--quiet"])
    assert report.results["test"]["confusion_matrix"] == trained["test"]["confusion_matrix"]
    path = export_tflite(zoo.load(run), str(tmp_path / "tflite"), test_examples=None)
    report = evaluate_script.main(["--tflite", str(path), "--dataset", "snli_sample", "--max-examples", "40",
                                   "--quiet", "--output", str(tmp_path / "t.json")])
    assert report.accuracy("test") == pytest.approx(trained["test"]["accuracy"], abs=1 / 40)
    assert json.loads((tmp_path / "t.json").read_text())["tflite"] == str(path)


def test_fine_tuning_starts_from_the_run(run, tmp_path):
    source = zoo.load(run)
    # Learning rate 0: after an epoch on SICK the weights are still the SNLI run's.
    result = train_script.main(["--model", "bowman_lstm", "--init-from", str(run), "--data-dir", str(FIXTURES / "sick"),
                                "--run-dir", str(tmp_path / "sick"), "--set", "learning_rate=0", *TINY])
    tuned = zoo.load(tmp_path / "sick")
    old = len(source.vocab)
    assert tuned.vocab.words[:old] == source.vocab.words and len(tuned.vocab) > old  # kept, then SICK's words
    assert tuned.record.init_from.run_dir == str(run.resolve())
    ids = np.arange(old, dtype="int32")
    np.testing.assert_allclose(np.asarray(tuned.model.embedding(ids)), np.asarray(source.model.embedding(ids)))
    skip = {id(w) for w in source.model.embedding.weights} | {id(w) for w in tuned.model.embedding.weights}
    for a, b in zip([w for w in source.model.weights if id(w) not in skip],
                    [w for w in tuned.model.weights if id(w) not in skip]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))
    assert result.results.test["examples"] > 0


def test_fine_tuning_refuses_another_architecture(run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_script.main(["--model", "bowman_lstm", "--init-from", str(run), "--data-dir", str(FIXTURES / "sick"),
                           "--run-dir", str(tmp_path / "x"), *TINY, "--set", "hidden_size=12"])
    err = capsys.readouterr().err
    assert "architecture and sizes must match" in err and "hidden_size: 8 there, 12 here" in err


def test_diagnostics_suite_from_evaluate(run, capsys):
    # --quiet: the suite's tables are the command's output, which --quiet keeps
    report = evaluate_script.main(["--run-dir", str(run), "--suite", "diagnostics", "--quiet",
                                   "--breaking-nli", str(FIXTURES / "breaking_nli" / "dataset.jsonl")])
    written = json.loads((run / "evaluations" / "diagnostics.json").read_text())
    assert report.diagnostics_file == str(run / "evaluations" / "diagnostics.json")
    assert report.diagnostics["sets"]["breaking_nli"] == written["sets"]["breaking_nli"]
    breaking = written["sets"]["breaking_nli"]
    assert breaking["examples"] == 5 and sum(c["examples"] for c in breaking["per_category"].values()) == 5
    out = capsys.readouterr().out
    assert "Breaking NLI" in out and "not run (not given): hans, snli_hard, stress_tests, anli" in out
    with pytest.raises(SystemExit) as exit_:
        evaluate_script.main(["--run-dir", str(run), "--dataset", "snli_sample", "--hans", str(run / "config.json")])
    assert exit_.value.code == 2 and "--hans needs --suite diagnostics" in capsys.readouterr().err


def test_cut_and_empty_sentences_are_counted_in_the_report(run, tmp_path, capsys):
    limit = load_record(run).settings.data.max_premise_length
    data = tmp_path / "edge.jsonl"
    rows = [("A dog runs in the park .", "", "neutral"), (" ".join(["word"] * (limit + 5)), "A text.", "neutral"),
            ("A man sleeps.", "A person rests.", "entailment")]
    data.write_text("".join(json.dumps({"sentence1": p, "sentence2": h, "gold_label": g}) + "\n" for p, h, g in rows))
    report = evaluate_script.main(["--run-dir", str(run), "--data-dir", str(data), "--quiet",
                                   "--output", str(tmp_path / "report.json")])
    (split, notes), = report.inputs.items()
    assert notes["pairs"] == 3 and notes["premises_cut"] == 1 and notes["empty_hypotheses"] == 1
    assert notes["hypotheses_cut"] == 0 and notes["empty_premises"] == 0
    assert json.loads((tmp_path / "report.json").read_text())["inputs"][split] == notes
    assert f"of 3 pairs, 1 premise(s) cut to their first {limit} tokens" in capsys.readouterr().out


def test_diagnostics_options_are_checked_before_scoring(run, tmp_path, capsys):
    import shutil

    other = tmp_path / "other"
    shutil.copytree(run, other)  # a bowman_lstm run, not the hypothesis-only model
    (other / "results.json").write_text("{")  # and a damaged results.json
    breaking = str(FIXTURES / "breaking_nli" / "dataset.jsonl")
    for argv, expected in (
            (["--run-dir", str(run), "--suite", "diagnostics", "--hans", str(tmp_path)],
             f"argument --hans: {tmp_path} is a folder; name a file"),
            (["--run-dir", str(run), "--dataset", "snli_sample", "--suite", "diagnostics", "--hypothesis-only",
              str(other)], "is a 'bowman_lstm' run"),
            (["--run-dir", str(other), "--suite", "diagnostics", "--no-behaviour", "--breaking-nli", breaking],
             "results.json: not valid JSON")):
        with pytest.raises(SystemExit) as exit_:
            evaluate_script.main([*argv, "--quiet"])
        errors = capsys.readouterr().err.strip().splitlines()
        assert exit_.value.code == 2 and len(errors) == 1 and expected in errors[0], errors


def test_output_names_a_file_or_a_folder_and_max_examples_is_reported(run, tmp_path, capsys):
    folder = tmp_path / "reports"
    folder.mkdir()
    report = evaluate_script.main(["--run-dir", str(run), "--dataset", "snli_sample", "--max-examples",
                                   "5", "--output", str(folder)])
    assert os.listdir(folder) == ["snli_sample-test.json"]  # the report's default name, inside the folder
    assert json.loads((folder / "snli_sample-test.json").read_text())["results"] == report.results
    assert report.results["test"]["examples"] == 5
    assert "scoring the first 5 of 144 pairs (--max-examples)" in capsys.readouterr().out


def test_scoring_traces_the_predict_function_once_for_every_batch_shape(run, monkeypatch):
    """The dev and test scoring of `evaluate` (and of training's end) run Keras's predict over batches of several
    shapes (the length grid's cells); its function is traced once, for the dataset's own spec, not once per
    new shape. The scores are those of the model called on each batch."""
    from zoo.models.base import NLIModel
    from zoo.runs import datasets, evaluation

    loaded = zoo.load(str(run))
    examples = load_corpus("snli_sample")[0]["test"][:40]
    batches = datasets.make_model_batches(examples, loaded.vocab, loaded.tokenizer, loaded.settings, batch_size=4)
    shapes = {(int(x["premise"].shape[1]), int(x["hypothesis"].shape[1])) for x, _, _ in batches}
    assert len(shapes) > 1, shapes  # the subject: batches of several shapes
    traced = []
    keras_predict_step = NLIModel.predict_step
    monkeypatch.setattr(NLIModel, "predict_step", lambda self, data: traced.append(1) or keras_predict_step(self, data))
    gold, logits = evaluation.predict(loaded.model, batches)
    assert len(traced) == 1, traced
    expected = np.concatenate([np.asarray(loaded.model(x, training=False))[np.asarray(w) > 0] for x, _, w in batches])
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    assert len(gold) == len(examples)
