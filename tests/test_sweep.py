"""`nli-zoo sweep`: the grid and the search space from flags or a file, trials as ordinary runs trained by
`zoo.training.train`, resuming a killed sweep, and KerasTuner's distributed mode sharing one sweep.

One real sweep (two tiny runs, one epoch) checks the whole path, `nli-zoo compare` included; the
bookkeeping tests (kill and rerun, failed trials, several processes) give `run_sweep` a training function
that writes a run's results at once, since what they check is which runs are trained, not the training.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.runs import hparams_table
from zoo.commands import compare as compare_command
from zoo.commands import sweep as sweep_command
from zoo.comparison.spec import SpecError, SweepSpec

ROOT = Path(__file__).resolve().parent.parent
ISSUE_EXAMPLE = ["--models", "bowman_lstm", "hypothesis_only", "--seeds", "3", "--dataset", "snli_sample",
                 "--embeddings", "glove-6b-50d", "--epochs", "2", "--set", "hidden_size=16"]


def spec_of(argv):
    return sweep_command.spec_from_args(sweep_command.build_parser().parse_args(argv + ["--dir", "unused"]))


def quick_train(calls, fail=()):
    """A training function for the bookkeeping tests: records the run, writes its results.json."""
    from zoo.errors import TrainError
    from zoo.runs.results import RunResults
    from zoo.training.outcome import TrainOutcome

    def train(**options):
        calls.append(options["run_dir"])
        if any(name in options["run_dir"] for name in fail):
            raise TrainError("the loss became NaN")
        os.makedirs(options["run_dir"], exist_ok=True)
        accuracy = 0.3 + 0.01 * options["seed"]
        Path(options["run_dir"], "results.json").write_text(json.dumps({"options": options}))
        scored = RunResults(test={"accuracy": accuracy}, dev={"accuracy": accuracy})
        return TrainOutcome(options["run_dir"], scored, record=None)

    return train


# The specification --------------------------------------------------------------------------------------
def test_the_issue_example_is_six_trials_named_by_model_and_seed(tmp_path):
    spec = spec_of(ISSUE_EXAMPLE)
    points = spec.points()
    assert len(points) == 6 and {(p["model"], p["seed"]) for p in points} == {
        (m, s) for m in ("bowman_lstm", "hypothesis_only") for s in (0, 1, 2)}
    options = spec.train_options(points[0], 0, str(tmp_path))
    assert options == {"model": "bowman_lstm", "seed": 0, "overrides": {"hidden_size": 16}, "dataset": "snli_sample",
                       "embeddings": "glove-6b-50d", "epochs": 2,
                       "run_dir": str(tmp_path / "runs" / "bowman_lstm-seed=0")}
    spec.check(str(tmp_path))  # every run is a valid nli-zoo train configuration


def test_a_repeated_setting_is_a_grid_axis_and_a_file_gives_the_same_spec(tmp_path):
    flags = spec_of(["--models", "esim", "--seeds", "0,7", "--set", "hidden_size=8", "--set", "hidden_size=16",
                     "--set", "dropout=0.1"])
    assert [name for name, _ in flags.axes()] == ["model", "hidden_size", "seed"]
    assert len(flags.points()) == 4 and flags.seeds == (0, 7)
    assert flags.run_name({"model": "esim", "hidden_size": 16}, 7) == "esim-hidden_size=16-seed=7"
    spec_file = tmp_path / "sweep.yaml"
    spec_file.write_text("models: [esim]\nseeds: [0, 7]\nset: {hidden_size: [8, 16], dropout: 0.1}\n")
    assert spec_of([str(spec_file)]) == flags
    # a search: ranges and values; a dotted key changes one entry of the schedule, keeping the others
    search = spec_of(["--models", "esim", "--search", "random", "--max-trials", "4",
                      "--tune", "learning_rate=1e-4:1e-2:log", "--tune", "hidden_size=100,200",
                      "--tune", "lr_decay.wait=1:3"])
    assert search.tune == {"learning_rate": {"min": 1e-4, "max": 1e-2, "log": True},
                           "hidden_size": {"values": [100, 200]}, "lr_decay.wait": {"min": 1, "max": 3, "log": False}}
    overrides = search.overrides({"model": "esim", "lr_decay.wait": 2, "learning_rate": 0.001})
    assert overrides["lr_decay"] == {"type": "halve_on_plateau", "factor": 0.5, "wait": 2}
    search.check(str(tmp_path))


@pytest.mark.parametrize("argv, content, message", [
    (["--models", "nope"], None, "models: unknown model 'nope'"),
    (["--models", "esim", "--set", "hiden_size=3"], None, "unknown setting 'hiden_size'"),
    (["--models", "esim", "--set", "dropout=2"], None, "dropout must be a number in [0, 1)"),
    (["--models", "esim", "--tune", "dropout=0:0.5"], None, "add --search random"),
    (["--models", "esim", "--seeds", "two"], None, "--seeds expects a count N"),
    (["--models", "bowman_lstm", "--search", "random", "--tune", "lr_decay.wait=1:3"], None, "not a mapping"),
    ([], "models: [esim]\nsedes: 3\n", "sweep.yaml: unknown entry 'sedes'"),
    ([], "models: [esim\nseeds: 3\n", "sweep.yaml:2: not valid YAML"),
])
def test_a_bad_spec_is_one_line_and_status_2(tmp_path, capsys, argv, content, message):
    if content is not None:
        (tmp_path / "sweep.yaml").write_text(content)
        argv = [str(tmp_path / "sweep.yaml")] + argv
    with pytest.raises(SystemExit) as stopped:
        sweep_command.main(argv + ["--dir", str(tmp_path / "S")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "S").exists()


def test_a_json_spec_error_names_its_line(tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text('{"models": ["esim"],\n "seeds": 3,\n}\n')
    with pytest.raises(SpecError, match=r"sweep.json:3: not valid JSON"):
        SweepSpec.read(str(path))


# The sweep ----------------------------------------------------------------------------------------------
@pytest.mark.large
def test_a_real_sweep_trains_runs_resumes_as_done_and_compares(tmp_path, capsys):
    directory = str(tmp_path / "S")
    argv = ["--models", "bowman_lstm", "hypothesis_only", "--seeds", "1", "--dataset", "snli_sample",
            "--embeddings", "none", "--embedding-dim", "8", "--epochs", "1", "--set", "hidden_size=8",
            "--max-train-examples", "64", "--max-eval-examples", "40", "--keras-verbose", "0", "--dir", directory]
    summary = sweep_command.main(argv)
    assert [t.status for t in summary.trials] == ["COMPLETED", "COMPLETED"]
    runs = sorted((tmp_path / "S" / "runs").iterdir())
    assert [r.name for r in runs] == ["bowman_lstm-seed=0", "hypothesis_only-seed=0"]
    for run in runs:  # ordinary runs, as nli-zoo train writes them, with per-item predictions kept
        results = json.loads((run / "results.json").read_text())
        assert len(results["test"]["predictions"]) == len(results["test"]["gold"]) == results["test"]["examples"] == 40
        assert json.loads((run / "config.json").read_text())["preset"]["model"]["hidden_size"] == 8
    # TensorBoard's HParams table: a model column, and each run's whole name (its trial ID column is narrow)
    _, groups = hparams_table(tmp_path / "S" / "runs")
    assert {(g.hparams["model"].string_value, g.hparams["run"].string_value) for g in groups} == {
        ("bowman_lstm", str(runs[0])), ("hypothesis_only", str(runs[1]))}
    written = {r: (r / "results.json").stat().st_mtime_ns for r in runs}
    assert f"[sweep] compare the runs: nli-zoo compare {directory}" in capsys.readouterr().out
    sweep_command.main([*argv, "--quiet"])  # rerun: nothing left to train; --quiet: the trials' table alone
    assert {r: (r / "results.json").stat().st_mtime_ns for r in runs} == written
    out = capsys.readouterr().out
    assert out.startswith(f"{directory}: 2 trial(s)\n  trial ") and "[sweep]" not in out
    comparison = compare_command.main([directory, "--no-tensorboard", "--resamples", "500"])
    out = capsys.readouterr().out
    assert "| 1 | bowman_lstm | 1 (0) |" in out and "| 2 | hypothesis_only | 1 (0) |" in out
    assert comparison.pairs[0].mcnemar[0].seeds == [0, 0]
    assert (tmp_path / "S" / "comparison" / "comparison.png").stat().st_size > 0
    assert json.loads((tmp_path / "S" / "comparison" / "comparison.json").read_text())["groups"][0]["label"] == \
        "bowman_lstm"


@pytest.mark.large
def test_a_killed_sweep_reruns_only_what_is_left(tmp_path):
    from zoo.comparison.tuner import run_sweep

    spec = spec_of(ISSUE_EXAMPLE)
    calls = []
    train = quick_train(calls)

    def killed_in_the_fourth_trial(**options):
        if len(calls) == 3:
            calls.append(options["run_dir"])
            raise KeyboardInterrupt  # as a kill: the trial never ends
        return train(**options)

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, str(tmp_path), train=killed_in_the_fourth_trial)
    before, calls[:] = list(calls), []
    summary = run_sweep(spec, str(tmp_path), train=train)
    assert calls[0] == before[3]  # the killed trial first, in its own run directory (which resumes it)
    assert sorted(calls) == sorted(set(before[3:]) | {str(tmp_path / "runs" / f"hypothesis_only-seed={s}")
                                                      for s in range(3)})
    assert [t.status for t in summary.trials] == ["COMPLETED"] * 6
    assert len({run for t in summary.trials for run in t.runs}) == 6
    calls[:] = []
    run_sweep(spec, str(tmp_path), train=train)
    assert calls == []
    with pytest.raises(SpecError, match="holds another sweep"):  # the same directory, other settings
        run_sweep(spec_of(ISSUE_EXAMPLE + ["--epochs", "3"]), str(tmp_path), train=train)


def test_a_sweep_killed_as_it_writes_a_new_trial_trains_that_trial_on_the_rerun(tmp_path, monkeypatch):
    """Killed between a new trial's `trial.json` and the oracle's state (`sweep:trial`, the fault sweep's
    row): the rerun takes the trial up, where it used to list it as running, train nothing and exit 0."""
    from tests.support.runs import Killed
    from zoo.comparison.tuner import run_sweep
    from zoo.fileio import faults as fileio_faults

    spec = spec_of(["--models", "bowman_lstm", "--seeds", "1", "--dataset", "snli_sample", "--embeddings", "none",
                    "--embedding-dim", "4", "--epochs", "1"])
    calls = []

    def kill(step, epoch=None):
        raise Killed(step)

    with monkeypatch.context() as patch:
        patch.setattr(fileio_faults, "kill", kill)
        patch.setenv(fileio_faults.FAULT_VARIABLE, "sweep:trial")
        with pytest.raises(Killed):
            run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert calls == []  # killed before the trial trained
    summary = run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert calls == [str(tmp_path / "runs" / "bowman_lstm-seed=0")]
    assert [t.status for t in summary.trials] == ["COMPLETED"]


@pytest.mark.large
def test_damaged_sweep_files_are_one_line_and_their_remedies_work(tmp_path, capsys):
    """A damaged oracle.json, trial.json or sweep.json is one line naming the file and its remedy (before
    KerasTuner reads it); following it (delete tuner/, or sweep.json) hands out the same runs again; a spec
    file that is not UTF-8 names its line."""
    from zoo.comparison.tuner import run_sweep
    from zoo.fileio import CorruptFileError

    spec = spec_of(["--models", "bowman_lstm", "--seeds", "2", "--dataset", "snli_sample", "--embeddings", "none"])
    calls = []
    run_sweep(spec, str(tmp_path), train=quick_train(calls))
    first, calls[:] = list(calls), []
    for damaged in (tmp_path / "tuner" / "oracle.json", tmp_path / "tuner" / "trial_0" / "trial.json"):
        kept = damaged.read_text()
        damaged.write_text('{"status": ')
        with pytest.raises(CorruptFileError, match=rf"{damaged.name}: not valid JSON .*: delete {tmp_path / 'tuner'} "
                                                   "and rerun the same command"):
            run_sweep(spec, str(tmp_path), train=quick_train(calls))
        damaged.write_text(kept)
    import shutil

    shutil.rmtree(tmp_path / "tuner")  # the remedy: the same trials, in the same runs
    run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert calls == first
    (tmp_path / "sweep.json").write_text("[1, ")
    with pytest.raises(CorruptFileError, match="sweep.json: not valid JSON .*delete it and rerun the same command"):
        run_sweep(spec, str(tmp_path), train=quick_train(calls))
    os.remove(tmp_path / "sweep.json")
    calls[:] = []
    run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert calls == []  # nothing left to train
    (tmp_path / "spec.json").write_bytes(b'{"models": ["esim"],\n "seeds": "\xff"}\n')
    with pytest.raises(SystemExit):
        sweep_command.main([str(tmp_path / "spec.json"), "--dir", str(tmp_path / "other")])
    err = capsys.readouterr().err.strip()
    assert "spec.json:2: not UTF-8 text" in err and len(err.splitlines()) == 1


def test_a_second_process_on_a_sweep_is_refused_in_one_line(tmp_path, capsys):
    from zoo.fileio import DirectoryLock

    with DirectoryLock(tmp_path / "S", what="sweep directory"):  # another process runs the sweep
        with pytest.raises(SystemExit) as stopped:
            sweep_command.main(["--models", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none",
                                "--dir", str(tmp_path / "S")])
    err = capsys.readouterr().err.strip()
    assert stopped.value.code == 2 and len(err.splitlines()) == 1
    assert f"the sweep directory {tmp_path / 'S'} is in use by PID {os.getpid()}" in err
    assert os.listdir(tmp_path / "S") == []  # nothing written


@pytest.mark.large
def test_a_failed_trial_is_reported_the_others_run_and_a_rerun_tries_it_again(tmp_path, capsys):
    from zoo.comparison.tuner import run_sweep

    spec = spec_of(["--models", "bowman_lstm", "hypothesis_only", "--seeds", "2"])
    calls = []
    summary = run_sweep(spec, str(tmp_path), train=quick_train(calls, fail=["hypothesis_only-seed=0"]))
    assert [t.status for t in summary.trials] == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]
    assert "NaN" in summary.trials[2].error
    assert "trial 2 failed: " in capsys.readouterr().out
    calls[:] = []
    summary = run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert calls == [str(tmp_path / "runs" / "hypothesis_only-seed=0")]
    assert [t.status for t in summary.trials] == ["COMPLETED"] * 4


WORKER = """
import json, os, sys, time
from pathlib import Path
from zoo.comparison.tuner import run_sweep
from zoo.commands.sweep import build_parser, spec_from_args
from zoo.runs.results import RunResults
from zoo.training.outcome import TrainOutcome

log, directory = sys.argv[1], sys.argv[2]
me = os.environ["KERASTUNER_TUNER_ID"]

def train(**options):
    with open(log, "a") as file:
        file.write(json.dumps([me, options["run_dir"]]) + "\\n")
    Path(log + "." + me).touch()
    # the first trial waits for the other worker to have started one: the two share the sweep
    deadline = time.time() + 120
    while len({p for p in os.listdir(os.path.dirname(log)) if p.startswith(os.path.basename(log) + ".")}) < 2:
        if time.time() > deadline:
            break
        time.sleep(0.2)
    return TrainOutcome(options["run_dir"], RunResults(test={"accuracy": 0.5}, dev={"accuracy": 0.5}), record=None)

spec = spec_from_args(build_parser().parse_args(sys.argv[3:] + ["--dir", directory]))
summary = run_sweep(spec, directory, train=train)
print("TRIALS", len(summary.trials))
"""


def start_sweep_on_loopback(tmp_path, log):
    """Starts KerasTuner's chief and two workers of one sweep on a free loopback port, each writing its
    output to `tmp_path/NAME.out` (a file, not a pipe: nothing waits for a reader while the others are
    polled); returns the processes, their outputs and whether the chief served until both workers ended
    (`False`: it failed first, e.g. because another process took the port between the probe and the chief's
    bind, and the workers were stopped: they would wait for an oracle that is not there, as they once did
    for 240 s in a full run of the suite)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = dict(os.environ, PYTHONPATH=str(ROOT), KERAS_BACKEND="numpy", KERASTUNER_ORACLE_IP="127.0.0.1",
                KERASTUNER_ORACLE_PORT=str(port))
    command = [sys.executable, str(tmp_path / "worker.py"), str(log), str(tmp_path / "S"), *ISSUE_EXAMPLE]
    processes = {}
    for name in ("chief", "worker0", "worker1"):
        with open(tmp_path / f"{name}.out", "w") as out:
            processes[name] = subprocess.Popen(command, env=dict(base, KERASTUNER_TUNER_ID=name), cwd=tmp_path,
                                               stdout=out, stderr=subprocess.STDOUT)
    deadline, chief_up = time.time() + 240, True
    try:
        while any(processes[name].poll() is None for name in ("worker0", "worker1")) and time.time() < deadline:
            if processes["chief"].poll() not in (None, 0):  # it ends with 0 once the workers have
                chief_up = False
                break
            time.sleep(0.2)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
    outputs = {name: (tmp_path / f"{name}.out").read_text(errors="replace")[-3000:] for name in processes}
    return processes, outputs, chief_up


@pytest.mark.large
def test_two_workers_on_loopback_share_one_sweep_and_run_no_trial_twice(tmp_path):
    (tmp_path / "worker.py").write_text(WORKER)
    log = tmp_path / "logs" / "trained"
    log.parent.mkdir()
    processes, outputs, chief_up = start_sweep_on_loopback(tmp_path, log)
    if not chief_up:  # once more on another port, from a clean slate
        shutil.rmtree(tmp_path / "S", ignore_errors=True)
        for path in log.parent.iterdir():
            path.unlink()
        processes, outputs, chief_up = start_sweep_on_loopback(tmp_path, log)
    assert chief_up, outputs
    assert all(processes[name].returncode == 0 for name in ("worker0", "worker1")), outputs
    trained = [json.loads(line) for line in log.read_text().splitlines()]
    run_dirs = [run_dir for _, run_dir in trained]
    assert len(run_dirs) == len(set(run_dirs)) == 6  # every trial, none twice
    assert {worker for worker, _ in trained} == {"worker0", "worker1"}
    oracle = json.loads((tmp_path / "S" / "tuner" / "oracle.json").read_text())
    assert len(oracle["end_order"]) == 6


@pytest.mark.large
@pytest.mark.parametrize("search", ["random", "bayesian"])
def test_a_search_samples_the_space_and_trains_each_sample_once_per_seed(tmp_path, search):
    from zoo.comparison.tuner import run_sweep

    spec = spec_of(["--models", "esim", "--seeds", "2", "--search", search, "--max-trials", "3",
                    "--tune", "learning_rate=1e-4:1e-2:log", "--tune", "dropout=0:0.5",
                    "--tune", "hidden_size=8,16", "--tune", "lr_decay.wait=1:3"])
    calls = []
    summary = run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert len(summary.trials) == 3 and len(calls) == 6 == len(set(calls))
    for trial in summary.trials:
        values = trial.values
        assert 1e-4 <= values["learning_rate"] <= 1e-2 and 0 <= values["dropout"] <= 0.5
        assert values["hidden_size"] in (8, 16) and values["lr_decay.wait"] in (1, 2, 3)
        assert [Path(run).name.split("-")[0] for run in trial.runs] == [f"trial{trial.trial}"] * 2
        assert trial.runs[1].endswith("seed=1")
        written = json.loads(Path(trial.runs[0], "results.json").read_text())["options"]
        assert written["overrides"]["lr_decay"]["wait"] == values["lr_decay.wait"]
        assert written["overrides"]["learning_rate"] == values["learning_rate"]
        assert trial.dev_accuracy == pytest.approx(0.305)  # the mean over the seeds (0.30 and 0.31)


@pytest.mark.large
def test_an_axis_of_values_of_mixed_types_reaches_the_runs_unchanged(tmp_path):
    from zoo.comparison.tuner import run_sweep

    spec = spec_of(["--models", "esim", "--set", "dropout=0", "--set", "dropout=0.25", "--set", "lr_decay=null",
                    "--set", 'lr_decay={"type": "halve_on_plateau", "factor": 0.5}'])
    calls = []
    summary = run_sweep(spec, str(tmp_path), train=quick_train(calls))
    assert len(summary.trials) == 4 and len(set(calls)) == 4
    chosen = sorted((json.loads(Path(run, "results.json").read_text())["options"]["overrides"]["dropout"],
                     json.dumps(json.loads(Path(run, "results.json").read_text())["options"]["overrides"]["lr_decay"]))
                    for run in calls)
    assert chosen == sorted((d, json.dumps(s)) for d in (0, 0.25)
                            for s in (None, {"type": "halve_on_plateau", "factor": 0.5}))
    assert {type(v) for t in summary.trials for k, v in t.values.items() if k == "dropout"} == {int, float}
