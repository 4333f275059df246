"""Outputs never land on what the user keeps: every command that writes a file or a folder
(`zoo.runs.targets.check_output`) refuses, in one line with exit status 2 and `--overwrite` or not, a target
that is one of a run's files, one of its own inputs, or inside a run, sweep, reproduction or export folder of
another kind; and nothing under the test's folder changes, byte for byte.

A new command that writes meets these cases by adding its rows to `REFUSED`.
"""

import hashlib
import logging
import os
import shutil
from pathlib import Path

import pytest

from zoo import commands
from zoo.runs import targets
from zoo.runs.targets import OutputError, check_output, folder_kind

SAMPLE = Path(commands.__file__).resolve().parents[1] / "data" / "sample"


@pytest.fixture(scope="module")
def tree(tmp_path_factory, finished_run_dir):
    """R and R2 (finished runs), D (an SNLI folder), F (pairs), SWEEP (a sweep with one run), REPRO (a
    reproduction), and exports of each format (their marking files only: the check reads names, not models)."""
    root = tmp_path_factory.mktemp("outputs")
    shutil.copytree(finished_run_dir, root / "R")
    shutil.copytree(finished_run_dir, root / "R2")
    shutil.copytree(SAMPLE, root / "D")
    (root / "F.jsonl").write_text('{"premise": "A man sleeps .", "hypothesis": "A man is awake ."}\n')
    (root / "SWEEP" / "runs").mkdir(parents=True)
    (root / "SWEEP" / "sweep.json").write_text("{}")
    shutil.copytree(finished_run_dir, root / "SWEEP" / "runs" / "a")
    (root / "REPRO" / "sweeps" / "p-1").mkdir(parents=True)
    (root / "REPRO" / "sweeps" / "p-1" / "sweep.json").write_text("{}")
    (root / "TFLITE").mkdir()
    (root / "TFLITE" / "model.tflite").write_bytes(b"tflite")
    (root / "TFLITE" / "tflite.json").write_text("{}")
    (root / "SERVING" / "1").mkdir(parents=True)
    (root / "SERVING" / "1" / "saved_model.pb").write_bytes(b"pb")
    (root / "PRESET").mkdir()
    (root / "PRESET" / "preprocessor.json").write_text("{}")
    return root


def snapshot(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in sorted(root.rglob("*")) if not p.name.endswith(".lock")}


EVALUATE = ["evaluate", "--run-dir", "R", "--dataset", "snli_sample"]
PREDICT = ["predict", "--run-dir", "R", "--input", "F.jsonl"]
TRAIN = ["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim",
         "4", "--epochs", "1"]

# (command line, the words the one line must hold): every row of the table of harms, and one per writer.
REFUSED = [
    (EVALUATE + ["--output", "R/results.json"], "a file of"),
    (PREDICT + ["--output", "R/config.json"], "a file of"),
    (["evaluate", "--run-dir", "R", "--data-dir", "D", "--output", "D/snli_1.0_test.jsonl"], "input"),
    (PREDICT + ["--output", "F.jsonl"], "input"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "R", "--overwrite"], "input"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "R2", "--overwrite"], "a run directory"),
    (["export", "--run-dir", "R", "--format", "tflite", "--out", "R2", "--overwrite"], "a run directory"),
    (["export", "--run-dir", "R", "--format", "saved_model", "--out", "TFLITE", "--overwrite"], "a TFLite export"),
    (["export", "--run-dir", "R", "--format", "tflite", "--out", "SERVING", "--overwrite"], "a SavedModel"),
    (["export", "--run-dir", "R", "--format", "preset", "--out", "R/presets"], "inside"),
    (TRAIN + ["--run-dir", "SWEEP", "--overwrite"], "a sweep"),
    (TRAIN + ["--run-dir", "PRESET"], "a preset"),
    (TRAIN + ["--run-dir", "R2/logs"], "inside"),
    (["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--run-dir", "R2", "--init-from", "R2",
      "--overwrite"], "input"),
    (["compare", "R", "R2", "--out", "R2"], "input"),
    (["compare", "R", "--out", "SERVING/comparison"], "inside"),
    (["sweep", "--models", "bowman_lstm", "--dir", "R"], "a run directory"),
    (["sweep", "--models", "bowman_lstm", "--dir", "REPRO"], "a reproduction"),
    (["reproduce", "rocktaschel2016", "--dir", "SWEEP", "--embeddings", "none"], "a sweep"),
    (["reproduce", "rocktaschel2016", "--dir", "repro", "--embeddings", "none", "--out", "R"], "a run directory"),
]


@pytest.mark.parametrize("argv, words", REFUSED, ids=[" ".join(a[:1] + a[-3:]) for a, _ in REFUSED])
def test_refused_and_nothing_changed(tree, monkeypatch, capsys, argv, words):
    monkeypatch.chdir(tree)
    before = snapshot(tree)
    with pytest.raises(SystemExit) as stopped:
        commands.main(argv)
    err = capsys.readouterr().err.strip()
    assert stopped.value.code == 2, err
    assert len(err.splitlines()) == 1 and "error:" in err and words in err, err
    assert "Traceback" not in err
    assert snapshot(tree) == before
    assert not (tree / "repro").exists()


def test_allowed_places(tree):
    """What the commands write by default, and a thing replacing one of its own kind."""
    assert check_output(tree / "R" / "evaluations" / "snli-test.json", "report", "--output") is None
    assert check_output(tree / "SERVING" / "evaluations" / "x.json", "report", "--output") is None
    assert check_output(tree / "SWEEP" / "runs" / "b", "run", "--run-dir") is None
    assert check_output(tree / "SWEEP" / "comparison", "report", "--out") is None
    assert check_output(tree / "REPRO" / "sweeps" / "p-2", "sweep", "--dir") is None
    assert check_output(tree / "D" / "report.json", "report", "--output", inputs=[tree / "D"]) is None
    assert check_output(tree / "elsewhere" / "x.json", "report", "--output") is None
    assert "a run directory" in check_output(tree / "R2", "run", "--run-dir", overwrite=True)


def test_overwrite_says_what_it_replaces(tree, caplog):
    with caplog.at_level(logging.WARNING, logger=targets.__name__):
        replaced = check_output(tree / "TFLITE", "tflite", "--out", overwrite=True)
    assert "a TFLite export (model.tflite, tflite.json)" == replaced
    assert "--overwrite replaces it" in caplog.text and "TFLITE" in caplog.text


def test_kinds(tree):
    assert [folder_kind(tree / n) for n in ("R", "SWEEP", "REPRO", "TFLITE", "SERVING", "PRESET", "D")] == [
        "run", "sweep", "reproduction", "tflite", "saved_model", "preset", None]
    lost = tree / "lost"
    shutil.copytree(tree / "R", lost)
    os.remove(lost / "config.json")
    assert folder_kind(lost) == "run"  # a run that lost its config.json is still a run
    shutil.rmtree(lost)


def test_marks_agree_with_the_writers():
    from zoo.comparison.tuner import SPEC_FILE, TUNER_DIR
    from zoo.reproduction.plan import REPORTS_DIR, RUNS_DIR, SWEEPS_DIR
    from zoo.reproduction.report import JSON_FILE

    assert (targets.SWEEP_FILE, targets.TUNER_DIR) == (SPEC_FILE, TUNER_DIR)
    assert (targets.SWEEPS_DIR, targets.REPORTS_DIR, targets.RUNS_DIR, targets.REPORT_FILE) == (
        SWEEPS_DIR, REPORTS_DIR, RUNS_DIR, JSON_FILE)


def test_check_output_refuses_in_one_line(tree):
    with pytest.raises(OutputError, match="never replaced"):
        check_output(tree / "R", "preset", "--out", overwrite=True)
