"""The kill matrix of a run directory's protocol (`zoo.runs.directory.RunDirectory`), driven without a model or
TensorFlow by tests/support/protocol.py's fake epoch writer: a kill after any write of a run, a run stopped
early, a fine-tuning (`--init-from`) and a finished run trained further, then the same command again, must
end with the history, results and best weights of the uninterrupted run (or stop with one line saying
what to do). Each kill is in this process, right after the named write (nothing after it runs, as after
a kill -9; the atomic writers leave nothing behind between two steps).

A real tiny training makes the same writes in the same order as the fake trainer given its dev accuracies
(`test_the_trainer_writes_what_the_fake_trainer_writes`, large), and a real training killed with SIGKILL
resumes exactly (`test_a_real_kill_9_at_the_commit_of_an_epoch`, large); scripts/fault_sweep.py kills every
step of every kind of real run in its own process and prints the table (docs/resuming.md).
"""

import json
import logging
import os
import shutil
import subprocess
import sys

import pytest

from tests.support import protocol as P
from tests.support.runs import ROOT
from zoo.errors import TrainError
from zoo.runs import faults, layout
from zoo.runs.manifest import seal

# The scenarios: (name, what it trains from, its job).
PLAIN = P.Job(epochs=4)                   # improves at epochs 1, 2 and 4
STOPPED = P.Job(epochs=5, patience=1)     # stops after epoch 3, which did not improve
FINE_TUNING = P.Job(epochs=2)             # from a finished PLAIN run (init_from set by `prepared`)
EXTENSION = P.Job(epochs=6)               # a finished PLAIN run trained further, to 6 epochs


def prepared(tmp_path, name):
    """`(run_dir, job)` of the scenario `name`, with the run it starts from written first."""
    run_dir = tmp_path / name
    if name == "fine-tuning":
        source = tmp_path / "source"
        if not source.exists():
            P.fake_train(source, PLAIN)
        return run_dir, P.Job(epochs=FINE_TUNING.epochs, init_from=str(source))
    if name == "extension":
        if not run_dir.exists():
            P.fake_train(run_dir, PLAIN)
        return run_dir, EXTENSION
    return run_dir, {"plain": PLAIN, "stopped": STOPPED}[name]


SCENARIOS = ["plain", "stopped", "fine-tuning", "extension"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """Each scenario run without a kill: `{name: (its writes in order, what it left)}`."""
    found = {}
    for name in SCENARIOS:
        root = tmp_path_factory.mktemp(name)
        run_dir, job = prepared(root, name)
        with P.recording_writes() as steps:
            P.fake_train(run_dir, job)
        found[name] = (steps, P.comparable(run_dir))
    return found


def test_every_write_of_a_run_is_a_kill_point_of_the_steps_documented(uninterrupted):
    """The writes the scenarios make are the steps zoo.runs.faults documents, and each kind of run makes
    its own (the first writes, a fine-tuning's epoch 0, an extension's, each epoch's, the end)."""
    documented = set(faults.START_STEPS + faults.INIT_STEPS + faults.EXTENSION_STEPS + faults.STEPS)
    for name, (steps, _) in uninterrupted.items():
        assert {step.split("@")[0] for step in steps} <= documented, name
    plain, stopped, fine, extension = (uninterrupted[n][0] for n in SCENARIOS)
    assert plain[:3] == ["config@0", "vocab@0", "started"] and plain[-4:] == list(faults.END_STEPS)
    assert [s for s in plain if s.startswith("best@")] == ["best@1", "best@2", "best@4"]  # DEV's improvements
    assert [s for s in plain if s.startswith("publish@")] == ["publish@1", "publish@2", "publish@4"]
    assert "state@3" in stopped and "state@4" not in stopped  # early stopping after epoch 3
    assert fine[:6] == ["config@0", "vocab@0", "weights@0", "state@0", "prune@0", "started"]
    assert extension[:6] == ["extend:best", "state@4", "prune@4", "extend:history", "extend:results", "manifest@4"]
    assert "vocab@0" not in extension  # its vocab.txt is there
    written = {step.split("@")[0] for steps, _ in uninterrupted.values() for step in steps}
    assert written == documented  # together the scenarios kill at every documented step


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_kill_after_any_write_resumes_exactly(uninterrupted, tmp_path, caplog, name):
    """Killed after each write of the run in turn (a fresh copy each time), the same command again ends as
    the uninterrupted run, says which epoch it resumes from when it resumes from one, and nothing
    half-written is left between two steps."""
    steps, expected = uninterrupted[name]
    for index, point in enumerate(steps):
        root = tmp_path / f"kill-{index}"
        run_dir, job = prepared(root, name)
        with P.killed_at(point, steps[:index + 1].count(point)), pytest.raises(P.Killed):
            P.fake_train(run_dir, job)
        leftovers = [*run_dir.glob(".*.tmp-*"), *run_dir.glob("backup/.*.tmp-*")]
        assert not leftovers, point
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="zoo"):
            P.fake_train(run_dir, job)
        assert P.comparable(run_dir) == expected, (name, index, point)
        committed = [int(s.split("@")[1]) for s in steps[:index + 1] if s.startswith("state@")]
        if committed and 0 < committed[-1] < job.epochs and name != "stopped":
            assert f"resuming from epoch {committed[-1] + 1}" in caplog.text, (name, point)
        shutil.rmtree(root)


@pytest.mark.parametrize("name", SCENARIOS)
def test_one_run_killed_at_every_write_in_turn_resumes_exactly(uninterrupted, tmp_path, name):
    """One run directory killed again and again, each rerun at the next write (a chain of reruns, as a
    machine that keeps failing), ends as the uninterrupted run."""
    steps, expected = uninterrupted[name]
    run_dir, job = prepared(tmp_path, name)
    for index, point in enumerate(steps):
        try:
            with P.killed_at(point, steps[:index + 1].count(point)):
                P.fake_train(run_dir, job)
        except P.Killed:
            pass
    P.fake_train(run_dir, job)
    assert P.comparable(run_dir) == expected


def test_a_run_killed_before_its_results_with_its_best_weights_truncated_evaluates_the_backup(
        uninterrupted, tmp_path, caplog):
    """Killed after training finished, before its results, and its best.weights.h5 then truncated: the rerun
    evaluates the generation's copy of the best weights (and says so), ending as the uninterrupted run."""
    run_dir, job = prepared(tmp_path, "plain")
    with P.killed_at("finished"), pytest.raises(P.Killed):
        P.fake_train(run_dir, job)
    (run_dir / layout.BEST_WEIGHTS_FILE).write_bytes(b"")
    with caplog.at_level(logging.INFO, logger="zoo"):
        P.fake_train(run_dir, job)
    assert "the newest readable backup is evaluated instead" in caplog.text
    assert P.comparable(run_dir) == uninterrupted["plain"][1]
    assert {"backup", layout.PREVIOUS_RESULTS_FILE} & set(os.listdir(run_dir)) == set()


def test_a_fine_tuning_rerun_as_another_command_or_after_its_remedy(uninterrupted, tmp_path, caplog):
    """The original command (without --init-from) on a fine-tuning killed before its first epoch trains that
    run instead (nothing was trained); after an epoch it is refused in one line. The remedy of a damaged state
    (delete backup/) trains the fine-tuning again from the source's weights; a source whose weights changed
    before the copy was committed is named in one line, and its remedy (--overwrite) works."""
    run_dir, job = prepared(tmp_path, "fine-tuning")
    plain = P.Job(epochs=1)
    with P.killed_at("started"), pytest.raises(P.Killed):  # epoch 0 committed, no epoch trained
        P.fake_train(run_dir, job)
    with caplog.at_level(logging.INFO, logger="zoo"):
        P.fake_train(run_dir, plain)
    assert "never finished an epoch: starting it again with these settings" in caplog.text
    assert "init_from" not in json.loads((run_dir / "config.json").read_text())
    shutil.rmtree(run_dir)
    with P.killed_at("prune@1"), pytest.raises(P.Killed):  # epoch 1 committed
        P.fake_train(run_dir, job)
    with pytest.raises(TrainError, match=r"holds a run with other settings \(init_from:"):
        P.fake_train(run_dir, plain)
    shutil.rmtree(run_dir / "backup")  # the remedy of a damaged state: trains again from epoch 1 ...
    P.fake_train(run_dir, job)  # ... from the copied weights, not random ones
    assert P.comparable(run_dir) == uninterrupted["fine-tuning"][1]
    assert json.loads((run_dir / "config.json").read_text())["init_from"]["weights_sha256"]

    source = shutil.copytree(job.init_from, tmp_path / "changed")
    other, job = tmp_path / "other", P.Job(epochs=FINE_TUNING.epochs, init_from=str(source))
    with P.killed_at("config@0"), pytest.raises(P.Killed):  # nothing copied yet
        P.fake_train(other, job)
    shutil.copy(run_dir / layout.BEST_WEIGHTS_FILE, source / layout.BEST_WEIGHTS_FILE)  # trained over
    seal(str(source))
    with pytest.raises(TrainError, match="its best weights are no longer those this run started from") as error:
        P.fake_train(other, job)
    assert "--overwrite" in str(error.value) and len(str(error.value).splitlines()) == 1
    P.fake_train(other, P.Job(epochs=FINE_TUNING.epochs, init_from=str(source), overwrite=True))
    assert (other / layout.RESULTS_FILE).exists()


@pytest.mark.parametrize("point", ["extend:results", "state@5"])
def test_an_extension_rerun_with_its_original_epochs(uninterrupted, tmp_path, caplog, point):
    """Killed before its first epoch, the extension rerun with the original --epochs gives back the finished run
    (its results, untouched); killed after an epoch of it, the original command is refused in one line and
    nothing is deleted; the extension's own command then finishes it exactly."""
    finished = P.comparable(prepared(tmp_path / "finished", "extension")[0])
    run_dir, job = prepared(tmp_path, "extension")
    with P.killed_at(point), pytest.raises(P.Killed):
        P.fake_train(run_dir, job)
    if point == "state@5":
        with pytest.raises(TrainError, match=r"is being trained further from 4 to 6 epochs \(5 done") as error:
            P.fake_train(run_dir, PLAIN)
        assert "rerun with --epochs 6" in str(error.value)
        assert (run_dir / layout.PREVIOUS_RESULTS_FILE).exists()  # the finished results are kept
        P.fake_train(run_dir, job)  # the remedy
        assert P.comparable(run_dir) == uninterrupted["extension"][1]
        return
    with caplog.at_level(logging.INFO, logger="zoo"):
        P.fake_train(run_dir, PLAIN)
    assert "had not finished an epoch: its 4-epoch results are back" in caplog.text
    assert P.comparable(run_dir) == finished
    assert set(os.listdir(run_dir)) & {"backup", layout.PREVIOUS_RESULTS_FILE} == set()
    assert json.loads((run_dir / "config.json").read_text())["preset"]["train"]["epochs"] == 4
    P.fake_train(run_dir, job)  # and the extension asked for again is the same
    assert P.comparable(run_dir) == uninterrupted["extension"][1]


def test_the_protocol_runs_without_tensorflow(tmp_path):
    """The whole kill-and-resume protocol of a run folder, in a process that never imports TensorFlow or
    Keras: a run killed at its commit of epoch 2 and resumed equals the uninterrupted one."""
    code = (
        "import sys\n"
        "from tests.support import protocol as P\n"
        "P.fake_train(sys.argv[1] + '/whole', P.Job(epochs=4))\n"
        "try:\n"
        "    with P.killed_at('state@2'):\n"
        "        P.fake_train(sys.argv[1] + '/killed', P.Job(epochs=4))\n"
        "except P.Killed:\n"
        "    pass\n"
        "P.fake_train(sys.argv[1] + '/killed', P.Job(epochs=4))\n"
        "assert P.comparable(sys.argv[1] + '/whole') == P.comparable(sys.argv[1] + '/killed')\n"
        "print(sorted(m for m in ('tensorflow', 'keras', 'jax') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


# Real training (large) --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Real tiny trainings through train.py, in this process, their writes recorded: a 3-epoch run, a
    fine-tuning from it (2 epochs) and the run trained further to 4 epochs. `{name: (writes, dev accuracies)}`,
    and `"uninterrupted"`: the 3-epoch run's history and results before its extension."""
    import train as train_script
    from tests.support import runs

    root = tmp_path_factory.mktemp("real")
    found = {}
    for name, run_dir, extra in (("plain", root / "run", ()),
                                 ("fine-tuning", root / "fine", ("--init-from", str(root / "run"), "--epochs", "2")),
                                 ("extension", root / "run", ("--epochs", "4"))):
        with P.recording_writes() as steps:
            train_script.main(runs.fault_args(run_dir, *extra))
        history = json.loads((run_dir / layout.HISTORY_FILE).read_text())["epochs"]
        found[name] = (steps, tuple(e["val_accuracy"] for e in history))
        if name == "plain":
            found["uninterrupted"] = runs.comparable(run_dir)
    return found


@pytest.mark.large
def test_the_trainer_writes_what_the_fake_trainer_writes(real, tmp_path):
    """A real tiny training, a fine-tuning from it and its extension make the run directory's writes in the
    order the fake trainer makes them, given the dev accuracies the real runs had: so the kill matrix above
    is the real one."""
    fake = tmp_path / "fake"
    for name, job in (("plain", P.Job(epochs=3, accuracies=real["plain"][1])),
                      ("fine-tuning", P.Job(epochs=2, init_from=str(fake / "plain"),
                                            accuracies=real["fine-tuning"][1])),
                      ("extension", P.Job(epochs=4, accuracies=real["extension"][1]))):
        with P.recording_writes() as steps:
            P.fake_train(fake / ("plain" if name == "extension" else name), job)
        assert steps == real[name][0], name


@pytest.mark.large
def test_a_real_kill_9_at_the_commit_of_an_epoch(real, tmp_path, capsys):
    """train.py killed for real (SIGKILL, `NLI_ZOO_FAULT_AT`) right after epoch 2's weights were written, before
    their commit; the same command again resumes from epoch 2 and ends as the uninterrupted run."""
    import signal

    import train as train_script
    from tests.support.runs import assert_same, comparable, fault_args, subprocess_env

    run_dir = tmp_path / "sigkill"
    env = {**subprocess_env(), faults.FAULT_ENV: "weights@2"}
    killed = subprocess.run([sys.executable, str(ROOT / "train.py"), *fault_args(run_dir)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert (run_dir / "backup" / "epoch-2.weights.h5").exists()  # written, never committed
    assert json.loads((run_dir / "history.json").read_text())["epochs"][-1]["epoch"] == 2  # ahead of the state
    train_script.main(fault_args(run_dir))  # the same command again (in this process: one TensorFlow start less)
    assert "resuming from epoch 2" in capsys.readouterr().out
    assert_same(comparable(run_dir), real["uninterrupted"])
