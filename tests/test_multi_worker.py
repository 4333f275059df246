"""`--strategy multi_worker` across processes, as across machines: two `train.py` workers on loopback
ports train like one process with the same global batch, only the chief writes the run, a killed
worker's cluster resumes from the last finished epoch, and a worker without peers or with a malformed
TF_CONFIG stops with one line.

Every run is tiny (bowman_lstm, hidden size 8, 8-d random vectors, 64 training pairs, batch 16).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import train as train_script
from tests.support.runs import ONE_SHAPE
from zoo.training import strategy as strategy_module

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "8",
        "--max-train-examples", "64", "--max-eval-examples", "32", "--set", "hidden_size=8", "--batch-size", "16",
        "--attention-examples", "0", "--log-every", "0", "--keras-verbose", "2", *ONE_SHAPE]
PROCESS_TIMEOUT = 300  # seconds; generous so that a slow CI machine fails a test rather than hanging it
# What TensorFlow's C++ logging writes to stderr while it is imported, whatever TF_CPP_MIN_LOG_LEVEL says.
TF_LOG_LINE = re.compile(r"^(WARNING: All log messages before absl::InitializeLog|[IWEF]\d{4} \d\d:\d\d:)")


def free_ports(count):
    """`count` distinct loopback ports that are free now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tf_config(ports, index):
    return json.dumps({"cluster": {"worker": [f"localhost:{p}" for p in ports]},
                       "task": {"type": "worker", "index": index}})


def environment(config=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    if config is not None:
        env["TF_CONFIG"] = config
    return env


class Process:
    """`python train.py ARGS` whose output lines are collected by a thread (so that a test can wait for
    a line without polling, and no pipe ever fills up)."""

    def __init__(self, args, env):
        self.process = subprocess.Popen([sys.executable, "train.py", *args], cwd=ROOT, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines, self.errors, self.closed = [], [], False
        self.changed = threading.Condition()
        self.readers = [threading.Thread(target=self._read, args=(self.process.stdout, self.lines), daemon=True),
                        threading.Thread(target=self._read, args=(self.process.stderr, self.errors), daemon=True)]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, into):
        for line in stream:
            with self.changed:
                into.append(line)
                self.changed.notify_all()
        with self.changed:
            self.closed = self.closed or into is self.lines
            self.changed.notify_all()

    @property
    def pid(self):
        return self.process.pid

    @property
    def output(self):
        return "".join(self.lines)

    @property
    def error_output(self):
        return "".join(self.errors)

    def wait_for(self, text, timeout=PROCESS_TIMEOUT, stream="stdout"):
        """Waits until a line of `stream` contains `text` (or the process closed it); returns whether one did."""
        lines = self.lines if stream == "stdout" else self.errors

        def seen():
            return any(text in line for line in lines)

        with self.changed:
            return self.changed.wait_for(lambda: seen() or self.closed, timeout) and seen()

    def completed(self, timeout=PROCESS_TIMEOUT):
        """Whether the run printed its results (train.py's last line, after results.json is written); the
        process is ended then. (At interpreter exit TensorFlow may wait up to a minute per tf.data
        iterator for its autotuning thread; that teardown tells nothing about the run.)"""
        done = self.wait_for("parameters: ", timeout)
        self.kill()
        for reader in self.readers:
            reader.join(10)
        return done and self.process.returncode in (0, -signal.SIGKILL)

    def exit_status(self, timeout=PROCESS_TIMEOUT):
        """Waits for the process to end (killed after `timeout` s) and returns its exit status."""
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        for reader in self.readers:
            reader.join(10)
        return self.process.returncode

    def kill(self):
        # SIGKILL: TensorFlow's coordination service takes SIGTERM (as a preemption notice)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def __str__(self):
        return f"--- stdout\n{self.output}\n--- stderr\n{self.error_output[-3000:]}"


@pytest.fixture
def start():
    """`start(args, config)` starts a train.py process; every process still running at the end is killed."""
    started = []

    def run(args, config=None):
        process = Process(args, environment(config))
        started.append(process)
        return process

    yield run
    for process in started:
        process.kill()


def start_cluster(start, run_dir, *extra):
    ports = free_ports(2)
    return [start([*TINY, "--strategy", "multi_worker", "--run-dir", str(run_dir), *extra], tf_config(ports, i))
            for i in range(2)]


def model_weights(run_dir):
    import zoo

    return zoo.load(run_dir).model.get_weights()


def event_file_pids(logdir):
    """The process ids in the names of the TensorBoard event files under `logdir`
    (`events.out.tfevents.TIME.HOST.PID.N.v2`)."""
    return {int(path.name.split(".")[-3]) for path in Path(logdir).rglob("events.out.tfevents.*")}


# Two workers -------------------------------------------------------------------------------------
@pytest.mark.large
def test_two_workers_train_like_one_process_and_only_the_chief_writes_the_run(tmp_path, start):
    # 64 pairs in data order (--no-bucket) are 4 full global batches of 16: worker i trains on rows
    # 8i..8i+7 of each (tf.distribute splits each batch into one slice per replica), in the same shuffled
    # order as one process; the mean of the two replicas' means is then the one process' mean.
    common = ["--epochs", "2", "--set", "dropout=0", "--no-bucket"]
    run = tmp_path / "run"
    chief, worker = start_cluster(start, run, *common)
    # the one-process run trains in the pytest process meanwhile (one TensorFlow start less; a run trains
    # alike in this process and in a fresh one: tests/test_protocol.py holds them to 1e-6)
    train_script.main([*TINY, *common, "--strategy", "one_device", "--run-dir", str(tmp_path / "one")])
    for process in (chief, worker):
        assert process.completed(), process
    for process in (chief, worker):
        assert "MultiWorkerMirroredStrategy on 2 replica(s)" in process.output, process

    # Only the chief writes the run directory; worker 1 writes its scratch directory only.
    scratch = run / "workers" / "worker-1"
    assert sorted(os.listdir(run / "workers")) == ["worker-1"]
    results = json.loads((run / "results.json").read_text())
    assert results["run_dir"] == str(run)
    assert json.loads((scratch / "results.json").read_text())["run_dir"] == str(scratch)
    chief_events = {p for p in (run / "logs").rglob("events.out.tfevents.*")}
    assert chief_events and event_file_pids(run / "logs") == {chief.pid}
    assert event_file_pids(scratch / "logs") == {worker.pid}
    assert not (run / "backup").exists() and not (scratch / "backup").exists()  # removed when training ends

    # The same training as one process with the same global batch.
    alone = json.loads((tmp_path / "one" / "results.json").read_text())
    context = json.dumps({"multi_worker": results["history"], "one_device": alone["history"]}, indent=1)
    assert [e["epoch"] for e in results["history"]] == [1, 2]
    for a, b in zip(results["history"], alone["history"]):
        for key in ("loss", "val_loss", "accuracy", "val_accuracy"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), context
    assert results["best_epoch"] == alone["best_epoch"], context
    # The best weights (epoch 1: 4 Adam steps, each moving a weight by up to about lr = 1e-3). Tolerance
    # 1e-5: the measured differences are <= 3e-7 (float32 sums in another order), while a wrong split,
    # e.g. each step on 8 rows (batch 8 instead of 16), differs by ~5e-3 (measured).
    for w1, w2 in zip(model_weights(run), model_weights(tmp_path / "one")):
        np.testing.assert_allclose(w1, w2, rtol=0, atol=1e-5)


@pytest.mark.large
def test_killed_worker_resumes_from_the_last_finished_epoch(tmp_path, start):
    run = tmp_path / "run"
    chief, worker = start_cluster(start, run, "--epochs", "3", "--pause-after-epoch", "2")
    assert worker.wait_for("Epoch 2/3"), worker  # worker 1 has begun epoch 2
    worker.kill()
    # The chief does not hang: its next collective fails once the coordination service misses worker 1's
    # heartbeats (~10 s), and it says so in one line.
    assert chief.wait_for("train.py: error: training stopped on a TensorFlow error in the cluster", timeout=120,
                          stream="stderr"), chief
    chief.kill()
    finished = [n for n in (1, 2, 3) if all(f"[train] epoch {n} done\n" in p.lines for p in (chief, worker))]
    assert finished and not (run / "results.json").exists(), chief
    resume_at = finished[-1] + 1  # 2, unless epoch 2 ended before the kill landed

    chief, worker = start_cluster(start, run, "--epochs", "3")
    for process in (chief, worker):
        assert process.completed(), process
        assert f"[train] resuming from epoch {resume_at}" in process.output, process
        assert f"Epoch {resume_at - 1}/3" not in process.output and f"Epoch {resume_at}/3" in process.output
    results = json.loads((run / "results.json").read_text())
    assert [e["epoch"] for e in results["history"]] == [1, 2, 3] and results["epochs_run"] == 3


# Failing fast ------------------------------------------------------------------------------------
@pytest.mark.large
def test_worker_without_peers_fails_with_one_line_in_bounded_time(tmp_path, start):
    ports = free_ports(3)  # two workers whose peer never starts, each in a cluster of its own
    timeout = 2
    began = time.monotonic()
    processes = {
        "leader": start([*TINY, "--strategy", "multi_worker", "--cluster-timeout", str(timeout),
                         "--run-dir", str(tmp_path / "leader")], tf_config(ports[:2], 0)),
        "follower": start([*TINY, "--strategy", "multi_worker", "--cluster-timeout", str(timeout),
                           "--run-dir", str(tmp_path / "follower")], tf_config(ports[1:], 1)),
    }
    for name, process in processes.items():
        assert process.exit_status(timeout=120) == 2, process
        errors = [line for line in process.errors if line.strip() and not TF_LOG_LINE.match(line)]
        assert len(errors) == 1 and errors[0].startswith("train.py: error: "), process
        assert not (tmp_path / name).exists()  # stopped before touching the run directory
    # Bounded: TensorFlow's start (~5-8 s), the timeout, and ~5 s for a follower's last registration try.
    assert time.monotonic() - began < 90
    assert f"cannot reach worker 1 at localhost:{ports[1]}" in processes["leader"].error_output
    assert f"within {timeout} s" in processes["leader"].error_output
    assert f"cannot reach worker 0 at localhost:{ports[1]}" in processes["follower"].error_output


def test_malformed_tf_config_stops_train_py_with_one_line(tmp_path, monkeypatch, capsys):
    # checked before TensorFlow runs anything, so this runs in the test's process
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 1}}')
    with pytest.raises(SystemExit) as exit_status:
        train_script.main([*TINY, "--strategy", "multi_worker", "--run-dir", str(tmp_path / "run")])
    assert exit_status.value.code == 2
    assert capsys.readouterr().err == ("train.py: error: TF_CONFIG task index 1 is not one of the 1 'worker' "
                                       "address(es) (0 to 0)\n")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("config, message", [
    ("", "needs the TF_CONFIG environment variable"),
    ("{cluster", "TF_CONFIG is not valid JSON"),
    ('["worker"]', "must be a JSON object with 'cluster' and 'task' objects"),
    ('{"cluster": {"worker": ["a:1"]}}', "must be a JSON object with 'cluster' and 'task' objects"),
    ('{"cluster": {}, "task": {"type": "worker"}}', "cluster is empty"),
    ('{"cluster": {"ps": ["a:1"], "worker": ["b:1"]}, "task": {"type": "worker"}}', "job(s) ['ps']"),
    ('{"cluster": {"worker": "a:1"}, "task": {"type": "worker"}}', "non-empty list of 'host:port'"),
    ('{"cluster": {"worker": ["a:1", "a"]}, "task": {"type": "worker"}}', "cluster['worker'][1] is 'a'"),
    ('{"cluster": {"worker": ["a:0"]}, "task": {"type": "worker"}}', "a port from 1 to 65535"),
    ('{"cluster": {"worker": ["a:1", "a:1"]}, "task": {"type": "worker"}}', "repeats the address 'a:1'"),
    ('{"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief"}}', "exactly one address"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}}', "task type 'chief' is not a job"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}}', "task index '0'"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}}', "task index -1"),
])
def test_malformed_tf_config_is_one_line(config, message):
    with pytest.raises(ValueError) as error:
        strategy_module.check_tf_config(config)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_chief_and_scratch_directories():
    config = {"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]}, "task": {"type": "worker", "index": 0}}
    task = strategy_module.ClusterTask(strategy_module.check_tf_config(json.dumps(config)))
    assert not task.chief and task.name == "worker-0" and task.peers == [("chief 0", "a:1"), ("worker 1", "c:1")]
    config["task"] = {"type": "chief", "index": 0}
    assert strategy_module.ClusterTask(config).chief
    config = {"cluster": {"worker": ["b:1", "c:1"]}, "task": {"type": "worker", "index": 0}}
    assert strategy_module.ClusterTask(config).chief  # worker 0 without a chief task
    # A TF_CONFIG in the environment alone does not make a process a non-chief: only a cluster it joined.
    assert strategy_module.worker_task() is None and strategy_module.is_chief()


def test_a_taken_port_is_one_line():
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = {"cluster": {"worker": [f"localhost:{port}", "localhost:1"]}, "task": {"type": "worker", "index": 0}}
        with pytest.raises(ValueError, match=f"port {port} of worker 0 .* is taken"):
            strategy_module.connect_cluster(config, timeout=1)


def test_follow_chief_copies_the_run_state(tmp_path):
    chief, scratch = tmp_path / "run", tmp_path / "run" / "workers" / "worker-1"
    (chief / "backup").mkdir(parents=True)
    for name in ("config.json", "vocab.txt", "history.json", "backup/training_metadata.json"):
        (chief / name).write_text(name)
    (chief / "logs").mkdir()
    scratch.mkdir(parents=True)
    (scratch / "history.json").write_text("ahead of the chief")
    (scratch / "results.json").write_text("stale")
    strategy_module.follow_chief(str(chief), str(scratch))
    assert sorted(p.relative_to(scratch).as_posix() for p in scratch.rglob("*")) == [
        "backup", "backup/training_metadata.json", "config.json", "history.json", "vocab.txt"]
    assert (scratch / "history.json").read_text() == "history.json"
    (chief / "config.json").unlink()  # a new run: the worker starts from nothing
    strategy_module.follow_chief(str(chief), str(scratch))
    assert list(scratch.iterdir()) == []

