"""The fault harness of training (issue 24): a kill at each write step of an epoch's checkpoint and of the
end of training (`zoo.runs.faults`), then the same command again, must end with the history and results of
the uninterrupted run.

The steps are killed in one chain of reruns of one run directory, each rerun stopped at the next step (in
this process: `zoo.fileio.faults.kill` replaced by an exception, nothing after the step runs, as after a kill
-9; the atomic writers leave nothing behind between two steps), so that every step costs one short run
instead of two; one case kills a subprocess for real with `NLI_ZOO_FAULT_AT`. Every run is tiny: a hidden
size of 4, 32 training pairs of the shipped sample, 3 epochs, sentences cut to the length grid's first cell.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

import train as train_script
from zoo.fileio import faults as fileio_faults
from zoo.runs import faults, layout

from tests.support.runs import ROOT, Killed, assert_same, comparable, subprocess_env

ARGS = ["--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "4",
        "--max-train-examples", "32", "--max-eval-examples", "16", "--set", "hidden_size=4", "--batch-size", "16",
        "--epochs", "3", "--attention-examples", "0", "--log-every", "0", "--verbose", "0",
        "--set", "max_premise_length=14", "--set", "max_hypothesis_length=10"]


def args(run_dir):
    return [*ARGS, "--run-dir", str(run_dir)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run."""
    run_dir = tmp_path_factory.mktemp("faults") / "whole"
    train_script.main(args(run_dir))
    return comparable(run_dir)


def improving_epochs(history):
    best, found = None, []
    for entry in history:
        if best is None or entry["val_accuracy"] > best:
            best = entry["val_accuracy"]
            found.append(entry["epoch"])
    return found


def kill_chain(reference):
    """Kill points in the order one chain of reruns reaches them. A kill before an epoch's commit (`best`,
    `history`, `weights`) makes the rerun train that epoch again; one after it (`state`, `prune`, `publish`)
    makes it go on with the next, so each epoch ends the chain's visit with one of those. The best weights'
    steps are killed at the last epoch that improved on dev (`publish` happens only then), `state` and
    `prune` at the two others, then every step of the end of training."""
    improved = improving_epochs(reference["history"])[-1]
    others = [epoch for epoch in (1, 2, 3) if epoch != improved]
    visits = {others[0]: ["state"], others[1]: ["prune"], improved: ["best", "history", "weights", "publish"]}
    return [f"{step}@{epoch}" for epoch in sorted(visits) for step in visits[epoch]] + list(faults.END_STEPS)


def test_a_kill_after_any_write_step_resumes_exactly(reference, tmp_path, monkeypatch, capsys):
    def kill(step, epoch):
        raise Killed(f"{step}@{epoch}")

    monkeypatch.setattr(fileio_faults, "kill", kill)
    run_dir = tmp_path / "killed"
    chain = kill_chain(reference)
    killed = []
    for point in chain:
        if point == "results":  # training finished, not yet evaluated: with best.weights.h5 truncated too,
            (run_dir / layout.BEST_WEIGHTS_FILE).write_bytes(b"")  # the generation's copy is evaluated
        monkeypatch.setenv(faults.FAULT_ENV, point)
        with pytest.raises(Killed) as stop:
            train_script.main(args(run_dir))
        if point == "results":
            assert "the newest readable backup is evaluated instead" in capsys.readouterr().out
        killed.append(str(stop.value))
        leftovers = [*run_dir.glob(".*.tmp-*"), *run_dir.glob("backup/.*.tmp-*")]
        assert not leftovers, point  # nothing half-written between two steps
    monkeypatch.delenv(faults.FAULT_ENV)
    train_script.main(args(run_dir))
    capsys.readouterr()
    assert [p.replace("@None", "") for p in killed] == chain  # each kill where it was asked for
    assert {p.split("@")[0] for p in chain} == set(faults.STEPS), "every write step is killed once"
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
