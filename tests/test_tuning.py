"""`nli-zoo tune` and what reads its record: the record written per machine in the zoo's cache, the choice read
back with its source (tuned / default / requested), `export --loop` tracing the serving graph under it and
recording it in zoo.json, runs opened for predict and the demo applying it, and a damaged record refused in
one line. Tiny ESIM, one or two rounds: what is checked is what is written and read, not the figures."""

import json
import os

import numpy as np
import pytest

from tests.support.runs import finished_run
from zoo.commands import export as export_command
from zoo.commands import tune as tune_command
from zoo.export import loop_timing
from zoo.export.loop_tuning import LoopChoice, TuningFileError, loop_for, record_path, tuned_loop
from zoo.export.version_files import read_metadata
from zoo.fileio.cpu import cpu, machine_id
from zoo.layers import recurrent, tensorflow_lstm
from zoo.layers.loop_choice import DEFAULT_DESIGN, DESIGNS, KERNEL_ROWS

TINY = ["--set", "hidden_size=8", "--embedding-dim", "8", "--calls", "2"]
PAIR = ("A man plays a guitar.", "A person makes music.")


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A tuning record written by `nli-zoo tune --quiet` (tiny ESIM, two rounds, the designs only) in a cache of
    its own, and what it printed."""
    import contextlib
    import io

    cache, printed = tmp_path_factory.mktemp("cache"), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setenv("NLI_ZOO_CACHE", str(cache))
        path = tune_command.main([*TINY, "--rounds", "2", "--designs-only", "--quiet"])
    return {"cache": str(cache), "path": path, "printed": printed.getvalue()}


@pytest.fixture(scope="module")
def esim_run(tmp_path_factory):
    return finished_run(str(tmp_path_factory.mktemp("runs") / "esim"), "esim")


@pytest.fixture
def in_cache(monkeypatch):
    """Sets `NLI_ZOO_CACHE` to a folder; the loop set by what the test opens is put back after it."""
    kept = tensorflow_lstm.DESIGN, recurrent.KERNEL_ROWS

    def use(folder):
        monkeypatch.setenv("NLI_ZOO_CACHE", str(folder))
        return folder

    yield use
    recurrent.set_few_rows_loop(*kept)


@pytest.mark.large
def test_tune_writes_this_machines_record_with_both_designs_timed(tuned, in_cache):
    in_cache(tuned["cache"])
    assert tuned["path"] == record_path() == os.path.join(tuned["cache"], "tuning", f"{machine_id(cpu())}.json")
    with open(tuned["path"], encoding="utf-8") as f:
        record = json.load(f)
    assert set(record["candidates"]) == set(DESIGNS)
    for figures in record["candidates"].values():
        assert figures["rounds"] == 2 and len(figures["round_ms"]) == 2
        assert 0 < figures["min_ms"] <= figures["median_ms"] <= figures["max_ms"]
    assert record["choice"] == {"design": min(DESIGNS, key=lambda d: record["candidates"][d]["median_ms"]),
                                "kernel_rows": KERNEL_ROWS}
    assert record["machine"]["id"] == machine_id(cpu()) and record["machine"]["cpu"]["model_name"]
    assert record["model"]["name"] == "esim" and record["model"]["settings"]["hidden_size"] == 8
    assert record["machine"]["threads"]["layout"] and record["date"] and record["software"]["tensorflow"]
    choice = tuned_loop()
    assert (choice.design, choice.kernel_rows, choice.source) == (record["choice"]["design"], KERNEL_ROWS, "tuned")
    assert choice.machine == machine_id(cpu()) and choice.date == record["date"]
    assert f"tuned on {choice.machine} {choice.date}" in choice.describe()
    # --quiet: the table of figures, the command's output, and none of its notes (the rounds, where it wrote)
    assert "\n".join(loop_timing.table(record)) + "\n" == tuned["printed"] and "[tune]" not in tuned["printed"]


def test_the_kernel_rows_follow_the_two_pair_figures():
    def figures(**medians):
        return {name.replace("_x2", " x2"): {"median_ms": ms} for name, ms in medians.items()}

    assert loop_timing.choose(figures(steps=2, kernel=3, steps_x2=4, kernel_x2=1, packed_x2=5)) == \
        {"design": "steps", "kernel_rows": loop_timing.TWO_PAIR_ROWS}
    assert loop_timing.choose(figures(steps=3, kernel=2, steps_x2=1, kernel_x2=6, packed_x2=5)) == \
        {"design": "kernel", "kernel_rows": KERNEL_ROWS}
    assert loop_timing.choose(figures(steps=3, kernel=2)) == {"design": "kernel", "kernel_rows": KERNEL_ROWS}
    # inside the margin (TUNE_MARGIN, 5%) the defaults stay: steps at one pair, the packed loop at two
    assert loop_timing.choose(figures(steps=100, kernel=97, steps_x2=98, kernel_x2=90, packed_x2=100)) == \
        {"design": "steps", "kernel_rows": KERNEL_ROWS}
    assert [c[0] for c in loop_timing.candidates()] == [*DESIGNS, "steps x2", "kernel x2", "packed x2"]


def test_no_record_is_the_safe_default_and_another_machines_is_not_this_ones(tmp_path, in_cache):
    in_cache(tmp_path)
    assert tuned_loop() == LoopChoice(DEFAULT_DESIGN, KERNEL_ROWS, "default") == loop_for("auto")
    os.makedirs(tmp_path / "tuning")
    (tmp_path / "tuning" / "intel-xeon-6-207.json").write_text("{}")  # another machine's file: not read
    assert tuned_loop().source == "default"
    assert loop_for("kernel") == LoopChoice("kernel", KERNEL_ROWS, "requested")
    with pytest.raises(ValueError, match="--loop must be one of auto, steps, kernel"):
        loop_for("fast")


@pytest.mark.parametrize("content, why", [
    ("{not json", "not valid JSON"),
    ('{"format": 1, "date": "d", "machine": {"id": "MACHINE"}, "choice": {"design": "fast", "kernel_rows": 2}}',
     "design is not one of steps, kernel"),
    ('{"format": 1, "date": "d", "machine": {"id": "MACHINE"}, "choice": {"design": "steps", "kernel_rows": 0}}',
     "kernel_rows is not a positive whole number"),
    ('{"format": 1, "date": "d", "machine": {"id": "elsewhere"}, "choice": {"design": "steps", "kernel_rows": 2}}',
     "not on this machine"),
])
def test_a_damaged_record_is_one_line_naming_the_file(tmp_path, in_cache, content, why):
    in_cache(tmp_path)
    os.makedirs(tmp_path / "tuning")
    with open(record_path(), "w", encoding="utf-8") as f:
        f.write(content.replace("MACHINE", machine_id(cpu())))
    with pytest.raises(TuningFileError) as error:
        tuned_loop()
    message = str(error.value)
    assert "\n" not in message and message.startswith(record_path()) and why in message
    assert "rerun `nli-zoo tune`" in message and "delete" in message


@pytest.mark.large
def test_export_auto_records_the_tuned_loop_and_kernel_the_requested_with_the_same_answers(
        tuned, esim_run, tmp_path, in_cache, capsys):
    in_cache(tuned["cache"])
    record = json.loads(open(tuned["path"], encoding="utf-8").read())
    auto = export_command.main(["--run-dir", esim_run, "--out", str(tmp_path / "auto")], "nli-zoo export")
    loop = read_metadata(auto)["loop"]
    assert loop == {"design": record["choice"]["design"], "kernel_rows": KERNEL_ROWS, "source": "tuned",
                    "machine": machine_id(cpu()), "date": record["date"]}
    assert f"few-rows loop: {record['choice']['design']}" in capsys.readouterr().out
    other = next(d for d in DESIGNS if d != loop["design"])
    asked = export_command.main(["--run-dir", esim_run, "--out", str(tmp_path / "asked"), "--loop", other],
                                "nli-zoo export")
    assert read_metadata(asked)["loop"] == {"design": other, "kernel_rows": KERNEL_ROWS, "source": "requested",
                                            "machine": None, "date": None}
    import tensorflow as tf

    answers = [tf.saved_model.load(path).signatures["serving_default"](
        premise=tf.constant([PAIR[0]]), hypothesis=tf.constant([PAIR[1]]))["probabilities"].numpy()
        for path in (auto, asked)]  # one pair: the few-rows loop, each export in its own design
    np.testing.assert_allclose(answers[0], answers[1], atol=1e-6, rtol=0)


@pytest.mark.large
def test_a_damaged_record_stops_the_export_in_one_line(esim_run, tmp_path, in_cache, capsys):
    in_cache(tmp_path / "cache")
    os.makedirs(os.path.dirname(record_path()))
    with open(record_path(), "w", encoding="utf-8") as f:
        f.write("{half a record")
    with pytest.raises(SystemExit) as stop:
        export_command.main(["--run-dir", esim_run, "--out", str(tmp_path / "model")], "nli-zoo export")
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert err[0].startswith(f"nli-zoo export: error: {record_path()}") and "nli-zoo tune" in err[0]
    assert not os.path.exists(tmp_path / "model" / "1")


@pytest.mark.large
def test_a_run_opened_for_predict_or_the_demo_runs_the_tuned_loop(tuned, esim_run, in_cache):
    from zoo.predictors import open_predictor

    in_cache(tuned["cache"])
    record = json.loads(open(tuned["path"], encoding="utf-8").read())
    recurrent.set_few_rows_loop(next(d for d in DESIGNS if d != record["choice"]["design"]), 7)
    predictor = open_predictor(esim_run)
    assert (tensorflow_lstm.DESIGN, recurrent.KERNEL_ROWS) == (record["choice"]["design"], KERNEL_ROWS)
    assert predictor.predict([PAIR])[0]["label"]


def test_tune_refuses_in_one_line_what_it_cannot_time(capsys):
    for argv, why in ((["--model", "nosuch"], "no registered model 'nosuch'"),
                      (["--set", "colour=1"], "--set colour: not a model setting of esim"),
                      (["--set", "hidden_size=0"], "hidden_size must be")):
        with pytest.raises(SystemExit) as stop:
            tune_command.main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert stop.value.code == 2 and len(err) == 1 and why in err[0], err
