"""train.py end to end on the shipped SNLI sample: run directory, results, TensorBoard, zoo.load,
resume after SIGKILL, mirrored strategy on two logical CPUs, bf16 mixed precision, clear errors.

Every run is tiny (64 training pairs, hidden size 8, 8-d random vectors, 1-3 epochs).
"""

import contextlib
import io
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import train as train_script
import zoo
from tests.support.runs import ONE_SHAPE, ROOT, TINY_MODEL, hparams_table, subprocess_env, tiny_args
from zoo import runs
from zoo.commands import train as cli
from zoo.models.base import NLIModel
from zoo.runs import evaluation, layout
from zoo.runs.record import RunRecord
from zoo.training import callbacks as cb
from zoo.training.config import parse_overrides

MODEL = TINY_MODEL  # attends, so attention images are drawn


def run_cli(args, env=None, **kwargs):
    """Runs train.py in a subprocess and returns the CompletedProcess."""
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *args], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=300, **kwargs)


def trained_args(run_dir, *extra):
    """The command line of `trained` (rerun: a finished run)."""
    decay = json.dumps({"type": "exponential", "rate": 0.5, "every_epochs": 1})
    return tiny_args(run_dir, "--epochs", "2", "--log-every", "3", "--set", f"lr_decay={decay}", *extra)


class Records(logging.Handler):
    """Keeps the records it is given."""

    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One in-process tiny run of 2 epochs with a halving learning rate; what it printed on stdout and the
    records of the `zoo` logger are kept as `printed` and `records`."""
    run_dir = tmp_path_factory.mktemp("runs") / "wbw"
    # --log-every 3 does not divide the steps of an epoch: epoch summaries must still be written;
    # --images-every 1: the images of both epochs (the default draws every 5th epoch and the last)
    records, printed = Records(), io.StringIO()
    logging.getLogger("zoo").addHandler(records)
    try:
        with contextlib.redirect_stdout(printed):
            result = train_script.main(trained_args(run_dir, "--images-every", "1"))
    finally:
        logging.getLogger("zoo").removeHandler(records)
    sys.stdout.write(printed.getvalue())
    # the outcome's fields, what was printed and the log records
    return types.SimpleNamespace(**vars(result), printed=printed.getvalue(), records=records.records)


# Command line and helpers ------------------------------------------------------------------------
def test_set_values_are_json_literals_else_strings():
    assert parse_overrides(["a=1e-3", "b=true", "c=null", "d=adam", "e={\"x\": 1}", "f=a=b"]) == {
        "a": 1e-3, "b": True, "c": None, "d": "adam", "e": {"x": 1}, "f": "a=b"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_overrides(["novalue"])


def test_epochs_and_batch_size_are_train_shortcuts():
    args = cli.build_parser().parse_args(["--model", MODEL, "--epochs", "3", "--batch-size", "8",
                                          "--set", "dropout=0.2"])
    assert cli.run_config(args).overrides == {"dropout": 0.2, "epochs": 3, "batch_size": 8}


def test_learning_rate_schedule():
    assert cb.learning_rate_schedule(0.1, None)(5, 0.0) == 0.1
    step = cb.learning_rate_schedule(0.1, {"type": "exponential", "rate": 0.5, "every_epochs": 2})
    assert [step(e, None) for e in range(5)] == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025])


def test_confusion_matrix_rows_are_gold():
    matrix = evaluation.confusion_matrix([0, 0, 1, 2], [0, 1, 1, 0])
    assert matrix.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 0]]


def test_flatten_hparams_makes_plain_values():
    flat = cb.flatten_hparams({"train": {"lr_decay": None, "epochs": 2}, "model": {"d": {"a": 1}}}, {"x": "y"})
    assert flat == {"train.lr_decay": "null", "train.epochs": 2, "model.d": '{"a": 1}', "x": "y"}


def test_multi_worker_needs_tf_config(monkeypatch):
    from zoo.training.strategy import make_strategy

    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG"):
        make_strategy("multi_worker")


def test_default_run_dir_is_deterministic():
    assert layout.default_run_dir("bowman_lstm") == os.path.join("runs", "bowman_lstm")


# A finished run ----------------------------------------------------------------------------------
@pytest.mark.large
def test_run_directory(trained):
    run_dir = Path(trained.run_dir)
    for name in ("config.json", "vocab.txt", "best.weights.h5", "results.json", "history.json", "logs"):
        assert (run_dir / name).exists(), name
    assert not (run_dir / "backup").exists()  # removed once training finished
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"] == MODEL and config["preset"]["model"]["hidden_size"] == 8
    assert config["vocabulary_size"] == len((run_dir / "vocab.txt").read_text().splitlines())
    assert config["embedding_dim"] == 8 and config["embeddings"] == "none" and config["tunable_words"] == "all"


@pytest.mark.large
def test_results(trained):
    results = json.loads((Path(trained.run_dir) / "results.json").read_text())
    test = results["test"]
    assert results["epochs_run"] == 2 and results["model"] == MODEL
    assert np.array(test["confusion_matrix"]).shape == (3, 3)
    assert np.array(test["confusion_matrix"]).sum() == test["examples"] == 32
    assert test["accuracy"] == pytest.approx(np.trace(test["confusion_matrix"]) / 32)
    assert set(test["per_class_accuracy"]) == set(zoo.data.LABELS)
    assert 0 <= results["dev_accuracy"] <= 1
    assert results["parameters"]["without_embeddings"] == trained.model.count_params_without_embeddings()
    assert results["parameters"]["total"] > results["parameters"]["without_embeddings"]


def read_tags(logdir):
    """`{run: {tag: [(step, value or None)]}}` of every event file under `logdir`."""
    import tensorflow as tf

    tags = {}
    for path in Path(logdir).rglob("events.out.tfevents.*"):
        run = str(path.parent.relative_to(logdir))
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                scalar = None
                if value.HasField("tensor") and value.tensor.dtype == tf.float32.as_datatype_enum \
                        and not value.tensor.tensor_shape.dim:
                    scalar = float(tf.make_ndarray(value.tensor))
                tags.setdefault(run, {}).setdefault(value.tag, []).append((event.step, scalar))
    return tags


@pytest.mark.large
def test_tensorboard(trained):
    tags = read_tags(Path(trained.run_dir) / "logs")
    assert {"epoch_loss", "epoch_accuracy", "epoch_learning_rate", "batch_loss"} <= set(tags["train"])
    assert {"epoch_loss", "epoch_accuracy"} <= set(tags["validation"])
    assert [step for step, _ in sorted(tags["train"]["epoch_loss"])] == [0, 1]
    assert [step for step, _ in sorted(tags["validation"]["epoch_accuracy"])] == [0, 1]
    lr = [v for _, v in sorted(tags["train"]["epoch_learning_rate"])]
    assert lr == pytest.approx([1e-3, 5e-4])  # the per-epoch decay
    assert len(tags["images"]["attention/pair_0"]) == 2 and "attention/pair_2" in tags["images"]
    assert "confusion_matrix/dev" in tags["images"]
    assert {"confusion_matrix/test", "test_accuracy"} <= set(tags["test"])
    # images count epochs from 1, as the console, history.json and their titles do
    assert [step for step, _ in sorted(tags["images"]["confusion_matrix/dev"])] == [1, 2]
    assert [step for step, _ in sorted(tags["images"]["attention/pair_0"])] == [1, 2]
    # the HParams session is a run of its own (LOGDIR/hparams), never the logdir's root
    assert "_hparams_/session_start_info" in tags["hparams"] and "." not in tags


@pytest.mark.large
def test_hparams_show_the_reported_metrics_under_either_logdir(trained, tmp_path):
    run_dir = Path(trained.run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    runs_root = tmp_path / "runs"
    runs_root.mkdir()
    (runs_root / "wbw").symlink_to(run_dir, target_is_directory=True)
    for logdir in (run_dir / "logs", runs_root):  # tensorboard --logdir runs/NAME/logs, and --logdir runs
        experiment, groups = hparams_table(logdir)
        assert {m.name.tag for m in experiment.metric_infos} == {"dev_accuracy", "test_accuracy", "best_epoch",
                                                                 "epochs_run"}, logdir
        assert len(groups) == 1, logdir
        group = groups[0]
        assert group.name == os.path.normpath(trained.run_dir)  # the run directory: two runs never merge
        values = {m.name.tag: m.value for m in group.metric_values}
        # what results.json reports: the best epoch's dev accuracy (not the last epoch's) and test accuracy
        assert values["dev_accuracy"] == pytest.approx(results["dev_accuracy"])
        assert values["test_accuracy"] == pytest.approx(results["test_accuracy"])
        assert values["best_epoch"] == results["best_epoch"] and values["epochs_run"] == 2
        hparams = {name: value for name, value in group.hparams.items()}
        assert hparams["data.source"].string_value == "snli_sample"
        assert hparams["data.max_train_examples"].number_value == 64
        assert hparams["data.max_eval_examples"].number_value == 32
        assert hparams["init_from"].string_value == "none"
        assert hparams["model.hidden_size"].number_value == 8
        assert group.sessions[0].status == 1  # STATUS_SUCCESS


@pytest.mark.large
def test_zoo_load_round_trips(trained):
    run = zoo.load(trained.run_dir)
    pairs = [("A man is playing a guitar on stage.", "A person plays music."),
             ("Two dogs run in the snow.", "The animals are asleep."),
             ("Nobody is here.", "")]
    predictions = run.predict(pairs)
    inputs = run.encode(pairs)
    expected = np.asarray(trained.model.explain(inputs)["probabilities"])
    got = np.array([[p["probabilities"][name] for name in zoo.data.LABELS] for p in predictions])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert [p["label"] for p in predictions] == [zoo.data.LABELS[i] for i in expected.argmax(-1)]
    assert run.vocab.words == trained.vocab.words and run.record.model == MODEL


@pytest.mark.large
def test_rerun_of_finished_run_does_not_train(trained, capsys):
    result = train_script.main(trained_args(trained.run_dir))
    assert "already finished" in capsys.readouterr().out
    assert result.results.epochs_run == 2


@pytest.mark.large
def test_the_command_prints_the_zoos_messages_which_come_through_logging(trained):
    from zoo.commands.messages import PrefixFormatter  # the prefix is the logger's (`[data]`, `[vocabulary]`)

    messages = [line for record in trained.records for line in PrefixFormatter().format(record).splitlines()]
    said = [line for line in trained.printed.splitlines()
            if re.match(r"\[(train|data|vocabulary|embeddings)\]", line)]
    assert {"[train] epoch 1 done", "[train] epoch 2 done"} <= set(said)
    assert said and all(line in messages for line in said)  # every such line is a record of a `zoo.*` logger
    assert {record.name for record in trained.records} >= {"zoo.training.trainer", "zoo.training.inputs",
                                                              "zoo.training.callbacks.epoch_marker"}


@pytest.mark.large
def test_one_line_silences_a_training_run_and_the_quiet_command_keeps_warnings_only(trained, capsys):
    from zoo.training.trainer import train

    config = cli.run_config(cli.build_parser().parse_args(trained_args(trained.run_dir)))  # the level: INFO
    records = Records()
    logging.getLogger("zoo").addHandler(records)
    try:
        train(config)
        assert any("already finished" in record.getMessage() for record in records.records)
        capsys.readouterr()
        records.records.clear()
        logging.getLogger("zoo").setLevel(logging.ERROR)  # what an application writes to silence the zoo
        train(config)
        assert records.records == [] and capsys.readouterr().out == ""
        train_script.main(trained_args(trained.run_dir, "--quiet"))  # the command sets its level again
        out = capsys.readouterr().out  # warnings only: at most the note that the accuracy is near chance
        assert {r.name for r in records.records} <= {"zoo.runs.evaluation.note"} and "[train]" not in out
        assert out.startswith(f"model {MODEL}: test accuracy ")  # the run's scores: the command's output
        train_script.main(trained_args(trained.run_dir))
        assert "already finished" in capsys.readouterr().out and records.records
    finally:
        logging.getLogger("zoo").removeHandler(records)


@pytest.mark.large
def test_rerun_with_other_settings_is_refused(trained, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_script.main(tiny_args(trained.run_dir, "--set", "dropout=0.3"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "model.dropout: 0.1 -> 0.3" in err and "--overwrite" in err


@pytest.mark.large
def test_more_epochs_train_a_finished_run_further(tmp_path, capsys):
    run_dir = tmp_path / "run"
    args = tiny_args(run_dir, "--attention-examples", "0", *ONE_SHAPE)
    first = train_script.main(args + ["--epochs", "1"]).results
    longer = train_script.main(args + ["--epochs", "2"]).results
    assert "training it further, to 2, from its best weights" in capsys.readouterr().out
    assert longer.epochs_run == 2 and longer.history[0] == first.history[0]
    assert json.loads((run_dir / "config.json").read_text())["preset"]["train"]["epochs"] == 2
    assert not (run_dir / "results.previous.json").exists() and not (run_dir / "backup").exists()
    assert train_script.main(args + ["--epochs", "1"]).results.epochs_run == 2  # fewer: finished as it is


def test_unknown_setting_lists_known_keys(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_script.main(tiny_args(tmp_path / "r", "--set", "hiden_size=3"))
    err = capsys.readouterr().err
    assert "unknown setting 'hiden_size'" in err and "hidden_size" in err and "learning_rate" in err


@pytest.mark.parametrize("extra, named", [
    (["--set", 'lr_decay={"type": "nope"}'], "lr_decay type"),
    (["--set", 'lr_decay={"type": "exponential", "rate": 0.5, "every": 2}'], "'every'"),
    (["--seed", "-1"], "--seed"),
    (["--set", "optimizer=nosuch"], "optimizer"),
    (["--set", "lowercase=maybe"], "lowercase"),
])
def test_setting_errors_are_one_line_before_the_run_directory(tmp_path, capsys, extra, named):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        train_script.main(tiny_args(run_dir, *extra))
    assert exit_info.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("train.py: error:") and named in errors[0], errors
    assert not run_dir.exists()  # nothing written: the corrected command starts a new run


@pytest.mark.large
def test_the_corrected_command_trains_and_a_growing_loss_is_flagged(tmp_path, capsys, monkeypatch):
    from zoo.training.callbacks import loss_guard

    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit):
        train_script.main(tiny_args(run_dir, "--set", "optimizer=nosuch"))
    assert not (run_dir / "config.json").exists()
    # Any growth over the first step's loss is flagged here (the real factor is a thousand): the warning
    # line is printed once and results.json keeps it.
    monkeypatch.setattr(loss_guard, "GROWTH", 0.5)
    results = train_script.main(tiny_args(run_dir, "--epochs", "1", "--attention-examples", "0", "--set",
                                          "learning_rate=1e3", *ONE_SHAPE)).results
    out = capsys.readouterr().out
    assert out.count("[train] warning: the training loss grew") == 1
    growth = json.loads((run_dir / "results.json").read_text())["loss_growth"]
    assert growth == results.loss_growth and growth["loss"] > 0.5 * growth["first_loss"] > 0
    # the pairs cut to the maximum lengths are counted per split, printed and kept
    inputs = results.inputs
    assert inputs["train"]["pairs"] == 64 and inputs["train"]["premises_cut"] > 0
    assert inputs["train"]["max_premise_length"] == 14 and inputs["test"]["empty_hypotheses"] == 0
    assert f"[data] train: of 64 pairs, {inputs['train']['premises_cut']} premise(s) cut" in out


def test_loss_guard_takes_the_first_loss_and_flags_once():
    from zoo.training.callbacks.loss_guard import LossGrowthGuard

    class History:
        epochs = []

    guard = LossGrowthGuard(History())
    guard.on_train_begin()
    for step, loss in enumerate([1.1, 50.0, 1200.0, 5e7, float("nan")]):
        guard.on_train_batch_end(step, {"loss": loss})
    assert guard.report() == {"first_loss": 1.1, "loss": 1200.0, "growth": pytest.approx(1200 / 1.1),
                              "epoch": 1, "step": 3}
    History.epochs = [{"epoch": 1, "loss": 2.0}]  # resumed: the first epoch's loss is the reference
    resumed = LossGrowthGuard(History())
    resumed.on_train_begin()
    resumed.on_train_batch_end(0, {"loss": 1500.0})
    assert resumed.report() is None
    resumed.on_train_batch_end(1, {"loss": 2500.0})
    assert resumed.report()["first_loss"] == 2.0


@pytest.mark.large
def test_a_damaged_results_json_is_one_line_in_train_and_init_from(trained, tmp_path, capsys):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(trained.run_dir, run_dir)
    (run_dir / "results.json").write_text('{"test_accuracy": 0.5,')
    decay = json.dumps({"type": "exponential", "rate": 0.5, "every_epochs": 1})
    for args in (tiny_args(run_dir, "--epochs", "2", "--log-every", "3", "--set", f"lr_decay={decay}"),
                 tiny_args(tmp_path / "tuned", "--init-from", str(run_dir), "--epochs", "1")):
        with pytest.raises(SystemExit) as exit_info:
            train_script.main(args)
        assert exit_info.value.code == 2
        errors = capsys.readouterr().err.strip().splitlines()
        assert len(errors) == 1 and "results.json: not valid JSON" in errors[0], errors
    assert not (tmp_path / "tuned" / "config.json").exists()


def test_data_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "snli_1.0"
    bad.mkdir()
    for stem in ("train", "dev", "test"):
        (bad / f"snli_1.0_{stem}.jsonl").write_text("{not json\n")
    # the real command line (exit status, stderr) for a missing folder, train.py's main in this process for
    # a malformed file (the same message path, without a TensorFlow start)
    for data_dir, where, expected, in_process in (
            (tmp_path / "missing", "missing", "argument --data-dir", False),
            (bad, "snli_1.0_train.jsonl:1:", "cannot load", True)):
        argv = ["--model", MODEL, "--data-dir", str(data_dir), "--embeddings", "none",
                "--run-dir", str(tmp_path / "run")]
        if in_process:
            with pytest.raises(SystemExit) as exit_info:
                train_script.main(argv)
            returncode, stderr = exit_info.value.code, capsys.readouterr().err
        else:
            result = run_cli(argv, env=subprocess_env())
            returncode, stderr = result.returncode, result.stderr
        assert returncode == 2
        assert "Traceback" not in stderr
        lines = [line for line in stderr.splitlines() if line.startswith("train.py: error:")]
        assert len(lines) == 1 and expected in lines[0] and where in lines[0], stderr


# Precision and strategies ------------------------------------------------------------------------
@pytest.mark.large
def test_bf16_trains_without_nan(tmp_path):
    import keras

    result = train_script.main(tiny_args(tmp_path / "bf16", "--epochs", "1", "--mixed-precision", "bf16",
                                         "--attention-examples", "1", *ONE_SHAPE))
    assert result.model.dtype_policy.name == "mixed_bfloat16"
    assert keras.mixed_precision.global_policy().name == "float32"  # restored afterwards
    loss = result.results.history[0]["loss"]
    assert math.isfinite(loss) and math.isfinite(result.results.history[0]["val_loss"])


@pytest.mark.large
def test_mirrored_on_two_cpus_matches_one_device(tmp_path):
    # Global batch 16 = 2 x 8 on every step (64 train, 32 dev/test pairs, unbucketed): each replica's
    # mean loss then averages to the single-device mean exactly, up to float summation order.
    common = ["--epochs", "2", "--set", "dropout=0", "--no-shuffle", "--no-bucket", "--batch-size", "16",
              "--attention-examples", "0", "--log-every", "0", *ONE_SHAPE]
    # Two logical CPUs must be set before TensorFlow starts: the mirrored run is a process of its own; the
    # one-device run trains in this process meanwhile (a run trains alike in this process and in a fresh one:
    # tests/test_protocol.py's real kill -9 holds them to 1e-6)
    process = subprocess.Popen([sys.executable, "train.py", *tiny_args(tmp_path / "mirrored", *common),
                                "--strategy", "mirrored", "--cpu-devices", "2"], cwd=ROOT, env=subprocess_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        train_script.main([*tiny_args(tmp_path / "one", *common), "--strategy", "one_device"])
    finally:
        output = process.communicate(timeout=300)[0]
    assert process.returncode == 0, output
    assert "MirroredStrategy on 2 replica(s)" in output
    results = {n: json.loads((tmp_path / n / "results.json").read_text()) for n in ("one", "mirrored")}
    context = json.dumps({n: r["history"] for n, r in results.items()}, indent=1)
    for a, b in zip(results["one"]["history"], results["mirrored"]["history"]):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-5), context
        assert a["val_loss"] == pytest.approx(b["val_loss"], rel=1e-4, abs=1e-5), context
        # near chance a tie may flip under float noise: allow one dev pair
        assert abs(a["val_accuracy"] - b["val_accuracy"]) <= 1 / 32 + 1e-9
    one, mirrored = zoo.load(tmp_path / "one"), zoo.load(tmp_path / "mirrored")
    for w1, w2 in zip(one.model.get_weights(), mirrored.model.get_weights()):
        np.testing.assert_allclose(w1, w2, rtol=1e-3, atol=1e-5)


# Resume ------------------------------------------------------------------------------------------
@pytest.mark.large
def test_resume_after_sigkill(tmp_path, capsys):
    command = tiny_args(tmp_path / "resume", "--epochs", "3", "--attention-examples", "1", *ONE_SHAPE)
    env = subprocess_env()
    process = subprocess.Popen([sys.executable, "train.py", *command, "--pause-after-epoch", "2"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    deadline = time.time() + 240
    for line in process.stdout:
        seen.append(line)
        if line.startswith("[train] epoch 1 done") or time.time() > deadline:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert "[train] epoch 1 done\n" in seen, "".join(seen)
    assert process.returncode == -signal.SIGKILL
    assert (tmp_path / "resume" / "backup").is_dir()
    assert not (tmp_path / "resume" / "results.json").exists()

    capsys.readouterr()
    train_script.main(command)  # the same command again (less the pause), in this process: one TensorFlow start less
    out = capsys.readouterr().out
    assert "resuming from epoch 2" in out
    assert "Epoch 1/3" not in out and "Epoch 2/3" in out and "Epoch 3/3" in out
    results = json.loads((tmp_path / "resume" / "results.json").read_text())
    assert [e["epoch"] for e in results["history"]] == [1, 2, 3] and results["epochs_run"] == 3


class Interrupted(RuntimeError):
    """Stops a run right after an epoch's state is on disk, where a kill would."""


@pytest.mark.large
def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path, monkeypatch):
    # Shuffled, bucketed, with the preset's dropout: the data order and the dropout masks of epoch 3 must
    # not depend on whether the process that trains it also trained epochs 1 and 2.
    common = ["--epochs", "3", "--attention-examples", "0", "--log-every", "0", *ONE_SHAPE]
    assert zoo.get_preset(MODEL).model["dropout"] > 0
    traces = []  # Python runs a step's code only while tf.function traces it
    keras_train_step = NLIModel.train_step
    with monkeypatch.context() as patch:
        patch.setattr(NLIModel, "train_step", lambda self, data: traces.append(1) or keras_train_step(self, data))
        whole = train_script.main(tiny_args(tmp_path / "whole", *common)).results.history
    # one batch shape, one trace: the optimizer's moments exist before the first step (else Keras traces twice)
    assert len(traces) == 1, traces

    marker = cb.EpochMarker.on_epoch_end

    def stop_after_epoch_2(self, epoch, logs=None):
        marker(self, epoch, logs)
        if epoch == 1:
            raise Interrupted

    monkeypatch.setattr(cb.EpochMarker, "on_epoch_end", stop_after_epoch_2)
    with pytest.raises(Interrupted):
        train_script.main(tiny_args(tmp_path / "resumed", *common))
    monkeypatch.undo()
    assert not (tmp_path / "resumed" / "results.json").exists()
    resumed = train_script.main(tiny_args(tmp_path / "resumed", *common)).results.history
    assert [e["epoch"] for e in resumed] == [e["epoch"] for e in whole] == [1, 2, 3]
    for a, b in zip(whole, resumed):
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-7), (a["epoch"], key, whole, resumed)


def test_runs_written_before_a_setting_existed_load_as_trained():
    config = {"model": "rocktaschel_wbw", "vocabulary_size": 20, "embedding_dim": 4, "tunable_words": "all",
              "num_tunable": 0, "tokenizer": {"lowercase": True},
              "preset": {"model": {"hidden_size": 4, "dropout": 0.1, "two_way": False}}}
    old = RunRecord.from_json(config)  # the one conversion of older runs: zoo.runs.record
    assert runs.build_model(old).classifier_activation == "linear"  # the classifier of runs before tanh
    config["preset"]["model"]["classifier_activation"] = "tanh"
    assert runs.build_model(RunRecord.from_json(config)).classifier_activation == "tanh"
