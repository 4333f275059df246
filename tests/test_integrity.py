"""Nothing wrong reported as right (issue 35): a run's files checked against its manifest by every command that
opens it, the machine's own faults (a full or read-only disk, an unwritable cache or home) in one line, and the
folders a run does not need not created.

The runs are the finished tiny run of `tests/conftest.py` (untrained weights: what is checked is which files
are read, not what they hold), copied before anything is damaged. The training cases (a full disk at a write
of training, Ctrl-C in the final evaluation) are in tests/test_reliability_runs.py.
"""

import errno
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import evaluate as evaluate_script
import predict as predict_script
import zoo
from tests.support.runs import subprocess_env
from zoo import fileio
from zoo.commands import compare as compare_command
from zoo.fileio import ManifestError
from zoo.runs import layout
from zoo.runs.manifest import MANIFEST_FILE, check_run


def one_line(capsys, main, argv):
    """Runs a command's `main` expecting exit status 2 and one line on stderr; returns the line."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert stopped.value.code == 2 and len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def run_copy(finished_run_dir, tmp_path):
    return shutil.copytree(finished_run_dir, tmp_path / "run")


def other_weights(run_dir):
    """best.weights.h5 replaced by another run's of the same shapes (the same model, other values)."""
    run = zoo.load(str(run_dir))
    for weight in run.model.weights:
        weight.assign(np.asarray(weight) + 0.5)
    run.model.save_weights(str(run_dir / layout.BEST_WEIGHTS_FILE))


def test_every_command_refuses_a_file_of_another_run_in_one_line(run_copy, tmp_path, capsys):
    """Another run's best weights (same shapes): zoo.load, evaluate, predict and the demo refuse the run in one line
    naming the file and the remedy (a finished run keeps no other copy: --overwrite); compare refuses another run's
    results.json; vocab.txt with two words swapped names its own remedy (delete it: rebuilt)."""
    from zoo.demo.models import open_model

    other_weights(run_copy)
    with pytest.raises(ManifestError) as error:
        zoo.load(str(run_copy))
    message = str(error.value)
    assert "\n" not in message and f"{run_copy / layout.BEST_WEIGHTS_FILE} does not match its SHA-256" in message
    assert "train the run again with --overwrite" in message
    for main, argv in ((evaluate_script.main, ["--run-dir", str(run_copy), "--dataset", "snli_sample", "--quiet"]),
                       (predict_script.main, ["--run-dir", str(run_copy), "--check"])):
        assert "best.weights.h5 does not match its SHA-256" in one_line(capsys, main, argv)
    with pytest.raises(ValueError, match="best.weights.h5 does not match its SHA-256"):
        open_model(str(run_copy))

    results = json.loads((run_copy / layout.RESULTS_FILE).read_text())
    (run_copy / layout.RESULTS_FILE).write_text(json.dumps(dict(results, test_accuracy=0.99)))
    line = one_line(capsys, compare_command.main, [str(run_copy), "--no-tensorboard"])
    assert "results.json does not match its SHA-256" in line and "delete it: rerunning train.py" in line

    vocab = shutil.copytree(run_copy, tmp_path / "vocab")
    words = (vocab / layout.VOCAB_FILE).read_text(encoding="utf-8").split("\n")
    words[5], words[6] = words[6], words[5]  # same size, other ids: every prediction would change silently
    (vocab / layout.VOCAB_FILE).write_text("\n".join(words), encoding="utf-8")
    with pytest.raises(ManifestError, match=r"vocab.txt does not match its SHA-256 in manifest.json .*: delete it and "
                                            "rerun the run's train.py command: it is rebuilt from the data"):
        check_run(str(vocab), [layout.VOCAB_FILE])


def test_a_run_without_its_manifest_names_the_remedy_and_older_runs_load_unchecked(run_copy, tmp_path):
    os.remove(run_copy / MANIFEST_FILE)
    with pytest.raises(ManifestError, match=r"manifest.json is missing, so the run's files cannot be checked: put "
                                            r"the run's own manifest.json back .*or train the run again with "
                                            r"--overwrite"):
        zoo.load(str(run_copy))
    # a run written before the zoo kept manifests (no "manifest" in its config.json) loads as it did
    config = json.loads((run_copy / layout.CONFIG_FILE).read_text())
    del config["manifest"]
    (run_copy / layout.CONFIG_FILE).write_text(json.dumps(config))
    assert zoo.load(str(run_copy)).record.manifest is False


def test_a_run_being_trained_is_said_to_be_written_not_damaged(run_copy):
    """While train.py holds the run (its lock), a file that does not match is one it is writing between two
    commits: said so, with the holder, instead of calling the run damaged."""
    (run_copy / layout.HISTORY_FILE).write_text('{"epochs": [], "finished": false}')  # written, not yet sealed
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from zoo.fileio import DirectoryLock; "
                               "held = DirectoryLock(sys.argv[1]).acquire(); print('held', flush=True); "
                               "time.sleep(120)",
                               str(run_copy)], stdout=subprocess.PIPE, text=True, env=subprocess_env())
    try:  # another process trains it
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ManifestError, match=f"is being written by PID {holder.pid}.*wait for it to finish"):
            check_run(str(run_copy), [layout.HISTORY_FILE], holder=lambda: layout.holder(str(run_copy)))
    finally:
        holder.kill()
        holder.wait()
    # this process's own lock (an export reading the run under it) is never another writer: the file is named
    with fileio.DirectoryLock(run_copy):
        with pytest.raises(ManifestError, match=r"history.json is not listed in manifest.json") as error:
            check_run(str(run_copy), [layout.HISTORY_FILE], holder=lambda: layout.holder(str(run_copy)))
    assert "being written" not in str(error.value)


# The machine's own faults --------------------------------------------------------------------------------
@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "no space left on the device of"),
                                         (errno.EROFS, "is on a read-only file system"),
                                         (errno.EACCES, "permission denied")])
def test_a_fault_of_the_machine_at_a_report_is_one_line_naming_the_path(run_copy, tmp_path, capsys, monkeypatch,
                                                                        code, words):
    """evaluate --output and compare --out on a full disk, a read-only one or a folder without permission: one
    line naming the file and what to free or change, exit 2, nothing half-written (an atomic write)."""
    real = os.replace

    def failing(source, target, *args, **kwargs):
        if "report" in str(target) or "comparison" in str(target):
            raise OSError(code, os.strerror(code), str(target))
        return real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", failing)
    report = tmp_path / "report.json"
    line = one_line(capsys, evaluate_script.main, ["--run-dir", str(run_copy), "--dataset", "snli_sample",
                                                   "--max-examples", "8", "--quiet", "--output", str(report)])
    assert line.startswith("evaluate.py: error: ") and str(report) in line and words in line
    assert "rerun the same command" in line and not report.exists()
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]
    line = one_line(capsys, compare_command.main, [str(run_copy), "--no-tensorboard", "--out",
                                                   str(tmp_path / "comparison")])
    assert words in line and "comparison" in line


def test_an_unwritable_home_or_cache_is_one_line_and_a_run_creates_no_folder_it_needs_not(tmp_path, monkeypatch,
                                                                                          capsys):
    """The compilation cache is not made before it is used (a run that compiles nothing makes no folder); a
    default one that cannot be made turns the cache off; a --compile-cache that cannot be made is one line
    before anything is written."""
    import train as train_script
    from zoo.training import compile_cache

    monkeypatch.setenv("HOME", "/proc/nope")
    monkeypatch.delenv("NLI_ZOO_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    assert compile_cache.enable(backend="tensorflow") is None
    assert "/proc/nope" in compile_cache.UNAVAILABLE["directory"] and "TF_XLA_FLAGS" not in os.environ
    monkeypatch.setenv("NLI_ZOO_CACHE", str(tmp_path / "cache"))
    assert compile_cache.enable(backend="tensorflow") == str(tmp_path / "cache" / "xla")
    assert not (tmp_path / "cache").exists()  # made by XLA when it first keeps a step, never before
    line = one_line(capsys, train_script.main, ["--model", "bowman_lstm", "--dataset", "snli_sample",
                                                "--embeddings", "none", "--compile-cache", "/proc/nope",
                                                "--run-dir", str(tmp_path / "run")])
    assert line.startswith("train.py: error: --compile-cache /proc/nope cannot be created")
    assert not (tmp_path / "run").exists()


def test_describe_fault_reads_the_errors_of_libraries_that_write_by_path(tmp_path):
    """h5py and TensorFlow say the fault in their text: it is found there, with the path."""
    h5py_error = OSError("Unable to synchronously create file (unable to open file: name = "
                         f"'{tmp_path}/.best.tmp-1-ab.weights.h5', errno = 28, "
                         "error message = 'No space left on device')")
    line = fileio.describe_fault(h5py_error)
    assert line.startswith(f"cannot write {tmp_path}/.best.tmp-1-ab.weights.h5: "
                           f"no space left on the device of {tmp_path}")
    assert fileio.describe_fault(ValueError("a shape mismatch")) is None
    assert "read-only" in fileio.describe_fault(OSError(errno.EROFS, "Read-only file system", str(tmp_path / "x")))


@pytest.mark.large
def test_a_full_disk_at_an_export_or_a_sweep_is_one_line_and_leaves_nothing_half_written(run_copy, tmp_path,
                                                                                         capsys, monkeypatch):
    import export as export_script
    from zoo.commands import sweep as sweep_command

    real = os.replace

    def full(source, target, *args, **kwargs):
        if str(target).endswith(("zoo.json", "sweep.json")):
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        return real(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full)
    line = one_line(capsys, export_script.main, ["--run-dir", str(run_copy), "--out", str(tmp_path / "models" / "m"),
                                                 "--allowed-batch-sizes", "1"])
    assert line.startswith("export.py: error: cannot write ") and "zoo.json: no space left" in line
    assert "or export elsewhere with --out" in line
    assert not (tmp_path / "models" / "m").exists() or os.listdir(tmp_path / "models" / "m") == []
    line = one_line(capsys, sweep_command.main, ["--models", "bowman_lstm", "--dataset", "snli_sample", "--embeddings",
                                                 "none", "--dir", str(tmp_path / "S")])
    assert f"cannot write {tmp_path / 'S' / 'sweep.json'}: no space left" in line and "or use another --dir" in line
