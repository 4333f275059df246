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
import sys
from pathlib import Path

import pytest

from zoo import commands

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import fault_sweep  # noqa: E402  (scripts/fault_sweep.py: the table of outputs refused)
from zoo.runs import targets
from zoo.runs.targets import OutputError, check_output, folder_kind

SAMPLE = Path(commands.__file__).resolve().parents[1] / "data" / "sample"


@pytest.fixture(scope="module")
def tree(tmp_path_factory, finished_run_dir):
    """R and R2 (finished runs), D (an SNLI folder), F (pairs), SWEEP (a sweep with one run), REPRO (a
    reproduction), and exports of each format (their marking files only: the check reads names, not models)."""
    return Path(fault_sweep.outputs_tree(str(tmp_path_factory.mktemp("outputs")), finished_run_dir))


def snapshot(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            for p in sorted(Path(root).rglob("*")) if not p.name.endswith(".lock")}


EVALUATE = ["evaluate", "--run-dir", "R", "--dataset", "snli_sample"]
TRAIN = ["train", "--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim",
         "4", "--epochs", "1"]
REFUSED = fault_sweep.OUTPUT_CASES  # (command line, words of the one line): one table for the tests and the sweep


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
    assert check_output(tree, "report", "--out", inputs=[tree / "F.jsonl"]) is None  # reports beside the data
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


# Causes named as they are ------------------------------------------------------------------------------
def test_a_full_disk_is_the_targets_device_with_its_free_space(tmp_path):
    from zoo.fileio import describe_fault

    target = tmp_path / "full" / "report.json"
    line = describe_fault(OSError(28, "No space left on device"), target=target)  # write() names no file
    assert line.startswith(f"cannot write {target}: no space left on the device of {tmp_path} (")
    assert "free): free space there" in line


def test_a_folder_this_user_cannot_write_is_called_read_only(tmp_path, monkeypatch):
    from zoo.fileio import describe_fault

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # the tests may run as root, who writes anyway
    line = describe_fault(PermissionError(13, "Permission denied", str(tmp_path / "x.json")))
    assert f"{tmp_path} is read-only for this user" in line and "permission denied" not in line


def test_a_run_without_its_config_is_named_and_never_sent_to_overwrite(tree, monkeypatch, capsys):
    monkeypatch.chdir(tree)
    lost = tree / "lost"
    shutil.copytree(tree / "R", lost)
    os.remove(lost / "config.json")
    try:
        before = snapshot(lost)
        for argv in (TRAIN + ["--run-dir", "lost"], EVALUATE[:2] + ["lost"] + EVALUATE[3:],
                     ["export", "--run-dir", "lost", "--format", "preset", "--out", "P"]):
            with pytest.raises(SystemExit) as stopped:
                commands.main(argv)
            err = capsys.readouterr().err.strip()
            assert stopped.value.code == 2 and len(err.splitlines()) == 1, err
            assert "lost/config.json is missing" in err and "put the run's config.json back" in err, err
            assert "--overwrite" not in err, err
        assert snapshot(lost) == before and not (tree / "P").exists()
    finally:
        shutil.rmtree(lost)


def test_a_command_holding_the_runs_lock_names_the_damaged_file_not_itself(tree):
    from zoo.runs import layout
    from zoo.runs.manifest import check_run

    damaged = tree / "swapped"
    shutil.copytree(tree / "R", damaged)
    with open(damaged / "best.weights.h5", "r+b") as f:  # another run's weights, as far as the manifest can tell
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    try:
        with layout.lock(damaged):  # as export and --init-from hold it while they read the run
            with pytest.raises(Exception) as error:
                check_run(damaged, ["best.weights.h5"], holder=lambda: layout.holder(damaged))
        text = str(error.value)
        assert "best.weights.h5 does not match its SHA-256" in text and f"PID {os.getpid()}" not in text
        assert "being written" not in text
    finally:
        shutil.rmtree(damaged)


# Bad values of the numeric flags ---------------------------------------------------------------------------
@pytest.mark.parametrize("command", fault_sweep.COMMANDS)
def test_every_numeric_flag_refuses_a_huge_or_bad_value_in_one_line(tree, monkeypatch, command, capsys):
    """The parse-time half of `fault_sweep.py --flags` (no run started): 99999999999, nan and abc are one line
    naming the flag (the bound, for a count), exit 2; -1 and 0 are one line or taken."""
    import importlib

    monkeypatch.chdir(tree)
    module = importlib.import_module(f"zoo.commands.{command}")
    flags = [f for f in fault_sweep.numeric_flags(command) if f not in fault_sweep.TEXT_COUNTS.get(command, [])]
    assert flags
    for flag in flags:
        for value in fault_sweep.BAD_VALUES:
            try:
                module.build_parser().parse_args([*fault_sweep.BASE[command], flag, value])
            except SystemExit as stopped:
                err = capsys.readouterr().err.strip()
                assert stopped.code == 2 and len(err.splitlines()) == 1 and flag in err, (flag, value, err)
                if value == "99999999999" and "whole number" in err:
                    assert " to " in err, err  # the bound is named
                continue
            assert value in ("-1", "0"), (flag, value, "taken")


@pytest.mark.parametrize("argv", [["sweep", "--models", "bowman_lstm", "--seeds", "99999999999", "--dir", "S"],
                                  ["reproduce", "rocktaschel2016", "--seeds", "99999999999", "--dir", "S"],
                                  ["export", "--run-dir", "R", "--allowed-batch-sizes", "1,99999999999"]])
def test_counts_read_as_text_are_bounded_too(tree, monkeypatch, capsys, argv):
    monkeypatch.chdir(tree)
    with pytest.raises(SystemExit) as stopped:
        commands.main(argv)
    err = capsys.readouterr().err.strip()
    assert stopped.value.code == 2 and len(err.splitlines()) == 1 and ("1,000" in err or "65,536" in err), err
    assert not (tree / "S").exists()


def test_a_project_folder_with_a_sweep_in_it_is_not_a_reproduction(tmp_path):
    """The docs' order (a sweep in ./sweeps/S, then a reproduction in ./repro-doc) in one working folder: the
    folder holds other things than a reproduction's runs/, sweeps/, reports/, so it is not one."""
    project = tmp_path / "project"
    (project / "sweeps" / "S").mkdir(parents=True)
    (project / "sweeps" / "S" / targets.SWEEP_FILE).write_text("{}")
    (project / "notes.txt").write_text("mine")
    assert targets.folder_kind(project) is None
    assert targets.check_output(project / "repro-doc", "reproduction", "--dir") is None
    (project / "notes.txt").unlink()  # now it holds a sweeps/ alone: a reproduction begun
    assert targets.folder_kind(project) == "reproduction"
