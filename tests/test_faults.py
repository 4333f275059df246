"""The fault harness of training (issues 24 and 35): a kill at each write step of a run (its first writes, each
epoch's checkpoint, the end of training; `zoo.runs.faults`), then the same command again, must end with the
history and results of the uninterrupted run; so must a run started from another (`--init-from`) and a finished
run trained further, rerun with the same command or with the original one (or stop with one line).

The steps are killed in one chain of reruns of one run directory, each rerun stopped at the next step (in
this process: `zoo.fileio.faults.kill` replaced by an exception, nothing after the step runs, as after a kill
-9; the atomic writers leave nothing behind between two steps), so that every step costs one short run
instead of two; one case kills a subprocess for real with `NLI_ZOO_FAULT_AT`. Every run is tiny: a hidden
size of 4, 32 training pairs of the shipped sample, 3 epochs (2 for a fine-tuning, 1 more for an extension),
sentences cut to the length grid's first cell. Each step is killed by at least one chain below;
scripts/fault_sweep.py kills every step of every kind of run in its own process, reruns it with the same and
the original command, and prints the table (docs/resuming.md).
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

import train as train_script
from tests.support.runs import ROOT, Killed, assert_same, comparable, subprocess_env
from zoo.fileio import faults as fileio_faults
from zoo.runs import faults, layout

pytestmark = pytest.mark.large  # the whole file is the large tier

ARGS = ["--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "4",
        "--max-train-examples", "32", "--max-eval-examples", "16", "--set", "hidden_size=4", "--batch-size", "16",
        "--epochs", "3", "--attention-examples", "0", "--images-every", "0", "--log-every", "0", "--keras-verbose", "0",
        "--set", "max_premise_length=14", "--set", "max_hypothesis_length=10"]


def args(run_dir, *extra):
    return [*ARGS, "--run-dir", str(run_dir), *extra]


def fine_tuning(run_dir, source):
    """A run of 2 epochs started from `source` (`--init-from`)."""
    return args(run_dir, "--init-from", str(source), "--epochs", "2")


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory):
    """The uninterrupted run (3 epochs)."""
    run_dir = tmp_path_factory.mktemp("faults") / "whole"
    train_script.main(args(run_dir))
    return run_dir


@pytest.fixture(scope="module")
def reference(reference_dir):
    return comparable(reference_dir)


def improving_epochs(history):
    best, found = None, []
    for entry in history:
        if best is None or entry["val_accuracy"] > best:
            best = entry["val_accuracy"]
            found.append(entry["epoch"])
    return found


def kill_chain(reference):
    """Kill points in the order one chain of reruns reaches them. A kill before an epoch's commit (`best`,
    `history`, `weights`) makes the rerun train that epoch again; one after it (`state`, `publish`, `manifest`)
    makes it go on with the next, so each epoch ends the chain's visit with one of those. The best weights'
    steps are killed at the last epoch that improved on dev (`publish` happens only then), `state` and
    `manifest` at the two others, then every step of the end of training. (The run's first writes are
    killed by the fine-tuning's chain, `prune` by the extension's.)"""
    improved = improving_epochs(reference["history"])[-1]
    others = [epoch for epoch in (1, 2, 3) if epoch != improved]
    visits = {others[0]: ["state"], others[1]: ["manifest"], improved: ["best", "history", "weights", "publish"]}
    return [f"{step}@{epoch}" for epoch in sorted(visits) for step in visits[epoch]] + list(faults.END_STEPS)


def run_chain(monkeypatch, run_dir, argv, chain, before=None):
    """Runs `argv` killed at each point of `chain` in turn (in this process), then to its end; returns where
    each kill happened. `before(point)` runs before the run that is killed at `point`."""
    def kill(step, epoch):
        raise Killed(f"{step}@{epoch}".replace("@None", ""))

    killed = []
    with monkeypatch.context() as patch:
        patch.setattr(fileio_faults, "kill", kill)
        for point in chain:
            if before is not None:
                before(point)
            patch.setenv(faults.FAULT_ENV, point)
            with pytest.raises(Killed) as stop:
                train_script.main(argv)
            killed.append(str(stop.value))
            leftovers = [*run_dir.glob(".*.tmp-*"), *run_dir.glob("backup/.*.tmp-*")]
            assert not leftovers, point  # nothing half-written between two steps
    return killed


def one_line(capsys, argv):
    """Runs train.py expecting one line on stderr and exit status 2; returns the line."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        train_script.main(argv)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert exit_.value.code == 2 and len(lines) == 1, lines
    return lines[0]


def test_a_kill_after_any_write_step_resumes_exactly(reference, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "killed"
    chain = kill_chain(reference)

    def before(point):
        if point == "results":  # training finished, not yet evaluated: with best.weights.h5 truncated too,
            (run_dir / layout.BEST_WEIGHTS_FILE).write_bytes(b"")  # the generation's copy is evaluated

    killed = run_chain(monkeypatch, run_dir, args(run_dir), chain, before)
    assert "the newest readable backup is evaluated instead" in capsys.readouterr().out
    train_script.main(args(run_dir))
    capsys.readouterr()
    assert killed == chain  # each kill where it was asked for
    assert {p.split("@")[0] for p in chain} == set(faults.STEPS) - {"prune"}
    assert_same(comparable(run_dir), reference)
    assert {"backup", layout.PREVIOUS_RESULTS_FILE} & set(os.listdir(run_dir)) == set()


def test_a_real_kill_9_at_the_commit_of_an_epoch(reference, tmp_path, capsys):
    run_dir = tmp_path / "sigkill"
    env = {**subprocess_env(), faults.FAULT_ENV: "weights@2"}
    killed = subprocess.run([sys.executable, str(ROOT / "train.py"), *args(run_dir)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert (run_dir / "backup" / "epoch-2.weights.h5").exists()  # written, never committed
    assert json.loads((run_dir / "history.json").read_text())["epochs"][-1]["epoch"] == 2  # ahead of the state
    train_script.main(args(run_dir))  # the same command again (in this process: one TensorFlow start less)
    assert "resuming from epoch 2" in capsys.readouterr().out
    assert_same(comparable(run_dir), reference)


# Fine-tuning (--init-from) -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fine_tuned(reference_dir, tmp_path_factory):
    """The uninterrupted fine-tuning from the reference run."""
    run_dir = tmp_path_factory.mktemp("faults") / "fine_tuned"
    train_script.main(fine_tuning(run_dir, reference_dir))
    return comparable(run_dir)


def test_a_fine_tuning_killed_at_any_of_its_first_writes_starts_from_the_copied_weights(
        reference_dir, fine_tuned, tmp_path, monkeypatch, capsys):
    """Killed at each write before its first epoch (its record, its vocabulary, the copied weights committed as
    epoch 0 of its state), the rerun of the same command ends as the uninterrupted fine-tuning, not from random
    weights; once epoch 0 is committed, the source run changing does not matter."""
    run_dir = tmp_path / "killed"
    argv = fine_tuning(run_dir, reference_dir)
    chain = ["config@0", "vocab@0", "weights@0", "state@0", "started", "history@1", "state@1"]  # prune@0: the sweep
    assert run_chain(monkeypatch, run_dir, argv, chain) == chain
    capsys.readouterr()
    train_script.main(argv)
    assert "resuming from epoch 2" in capsys.readouterr().out
    assert_same(comparable(run_dir), fine_tuned)
    assert json.loads((run_dir / "config.json").read_text())["init_from"]["weights_sha256"]


def test_a_fine_tuning_rerun_as_another_command_or_after_its_remedy(reference_dir, fine_tuned, tmp_path, monkeypatch,
                                                                   capsys):
    """The original command (without --init-from) on a fine-tuning killed before its first epoch trains that
    run instead (nothing was trained); after an epoch it is refused in one line. The remedy of a damaged state
    (delete backup/) trains the fine-tuning again from the source's weights; a source whose weights changed
    before the copy was committed is named in one line, and its remedy (--overwrite) works."""
    run_dir = tmp_path / "run"
    plain = args(run_dir, "--epochs", "1")
    run_chain(monkeypatch, run_dir, fine_tuning(run_dir, reference_dir), ["started"])  # committed epoch 0 only
    capsys.readouterr()
    train_script.main(plain)
    assert "never finished an epoch: starting it again with these settings" in capsys.readouterr().out
    assert "init_from" not in json.loads((run_dir / "config.json").read_text())
    shutil.rmtree(run_dir)
    run_chain(monkeypatch, run_dir, fine_tuning(run_dir, reference_dir), ["prune@1"])  # epoch 1 committed
    assert "holds a run with other settings (init_from:" in one_line(capsys, plain)
    shutil.rmtree(run_dir / "backup")  # the remedy of a damaged state: trains again from epoch 1 ...
    train_script.main(fine_tuning(run_dir, reference_dir))  # ... from the copied weights, not random ones
    assert_same(comparable(run_dir), fine_tuned)

    source = shutil.copytree(reference_dir, tmp_path / "source")
    other = tmp_path / "other"
    run_chain(monkeypatch, other, fine_tuning(other, source), ["config@0"])  # nothing copied yet
    shutil.copy(tmp_path / "run" / layout.BEST_WEIGHTS_FILE, source / layout.BEST_WEIGHTS_FILE)  # trained over
    layout.seal(str(source))
    line = one_line(capsys, fine_tuning(other, source))
    assert "its best weights are no longer those this run started from" in line and "--overwrite" in line
    train_script.main(fine_tuning(other, source) + ["--overwrite"])
    assert (other / layout.RESULTS_FILE).exists()


# A finished run trained further --------------------------------------------------------------------
@pytest.fixture(scope="module")
def extended(reference_dir, tmp_path_factory):
    """The reference run trained further to 4 epochs, uninterrupted."""
    run_dir = shutil.copytree(reference_dir, tmp_path_factory.mktemp("faults") / "extended")
    train_script.main(args(run_dir, "--epochs", "4"))
    return comparable(run_dir)


def test_an_extension_killed_at_any_of_its_writes_resumes_exactly(reference_dir, extended, tmp_path, monkeypatch,
                                                                  capsys):
    run_dir = shutil.copytree(reference_dir, tmp_path / "killed")
    argv = args(run_dir, "--epochs", "4")
    chain = ["extend:best", "state@3", "prune@3", "extend:history", "extend:results", "config@0", "started",
             "history@4", "prune@4", "results"]  # manifest@3, after extend:results: the sweep
    assert run_chain(monkeypatch, run_dir, argv, chain) == chain
    train_script.main(argv)
    assert_same(comparable(run_dir), extended)
    assert not (run_dir / layout.PREVIOUS_RESULTS_FILE).exists() and not (run_dir / "backup").exists()


@pytest.mark.parametrize("point", ["extend:results", "state@4"])
def test_an_extension_rerun_with_its_original_epochs(reference, reference_dir, extended, tmp_path, monkeypatch,
                                                     capsys, point):
    """Killed before its first epoch, the extension rerun with the original --epochs gives back the finished run
    (its results, untouched); killed after an epoch of it, the original command is refused in one line and
    nothing is deleted; the extension's own command then finishes it exactly."""
    run_dir = shutil.copytree(reference_dir, tmp_path / "run")
    run_chain(monkeypatch, run_dir, args(run_dir, "--epochs", "4"), [point])
    if point == "state@4":
        line = one_line(capsys, args(run_dir))
        assert "is being trained further from 3 to 4 epochs (4 done" in line and "rerun with --epochs 4" in line
        assert (run_dir / layout.PREVIOUS_RESULTS_FILE).exists()  # the finished results are kept
        train_script.main(args(run_dir, "--epochs", "4"))  # the remedy
        assert_same(comparable(run_dir), extended)
        return
    train_script.main(args(run_dir))
    assert_same(comparable(run_dir), reference)
    assert set(os.listdir(run_dir)) & {"backup", layout.PREVIOUS_RESULTS_FILE} == set()
    assert json.loads((run_dir / "config.json").read_text())["preset"]["train"]["epochs"] == 3
    train_script.main(args(run_dir, "--epochs", "4"))  # and the extension asked for again is the same
    assert_same(comparable(run_dir), extended)
