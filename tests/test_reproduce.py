"""`nli-zoo reproduce`: the papers' tables as data (structure: every row a registered model with settings
it accepts), one real reproduction on tiny settings (two rows, two seeds, a rerun that trains nothing, the
dry run), a reproduction killed at three places and rerun ending with the uninterrupted report, and the
user errors (one line, status 2).

The papers' text is not read here (a clone holds no copy of the papers): scripts/check_paper_tables.py checks the
figures and quotations against it.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests.support.runs import write_record, write_results
from zoo.commands import reproduce as command
from zoo.data import LABELS
from zoo.registry import get_spec
from zoo.reproduction import report as reporting
from zoo.reproduction.markdown import to_markdown
from zoo.reproduction.plan import ReproductionSpec, select_rows
from zoo.reproduction.tables import COLUMNS, load_paper, paper_keys, parse_count, structure_problems
from zoo.runs.evaluation import keep_items, scores
from zoo.runs.record import load_record
from zoo.runs.results import RunResults
from zoo.training.outcome import TrainOutcome

TINY = ["--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "4", "--set", "hidden_size=4",
        "--set", "max_premise_length=14", "--set", "max_hypothesis_length=10", "--epochs", "1",
        "--max-train-examples", "16", "--max-eval-examples", "16", "--batch-size", "16", "--keras-verbose", "0",
        "--resamples", "200"]


# The tables -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", paper_keys())
def test_every_row_names_a_registered_model_with_settings_it_accepts(key):
    paper = load_paper(key)
    assert structure_problems(paper) == []
    assert key == paper.key and any(row.runnable for row in paper.rows) and paper.claims
    for row in paper.rows:
        assert set(row.reported) <= set(COLUMNS) and row.reported.get("test") is not None
        assert all(0 < row.reported[c] < 100 for c in ("train", "dev", "test") if row.reported.get(c) is not None)
        if row.runnable and not row.cited and row.reported.get("params"):
            # the table's |θ|_M agrees with the model's registration (which the parameter table checks)
            registered = get_spec(row.model).paper_params
            assert registered is None or parse_count(row.reported["params"]) == pytest.approx(registered, rel=0.01)


def test_rows_that_need_a_switch_the_models_lack_are_listed_not_faked():
    chen = load_paper("chen2017")
    ablations = [chen.row(str(n)) for n in range(19, 25)]
    assert all(not row.runnable and "ablation switch" in row.not_runnable for row in ablations)
    assert [u.name for u in chen.row("18").units()] == ["esim", "esim_tree"]
    assert [u.name for u in load_paper("luo").row("ebim").units()] == ["luo_matrix-bilinear=false"]
    assert parse_count("1.9M") == 1_900_000 and parse_count("221k") == 221_000 and parse_count(None) is None


# One real reproduction --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reproduce") / "D"
    argv = ["rocktaschel2016", "--rows", "lstm", "conditional_shared_100", "--seeds", "2", *TINY,
            "--dir", str(directory)]
    return argv, directory, command.main(argv)


@pytest.mark.large
def test_a_reproduction_trains_the_rows_and_writes_the_table_beside_the_paper(reproduced, capsys):
    argv, directory, result = reproduced
    report = result.report
    rows = {row.id: row for row in report.rows}
    assert sorted(p.name for p in (directory / "runs").iterdir()) == [
        f"{model}-seed={seed}" for model in ("bowman_lstm", "rocktaschel_conditional_shared_100") for seed in (0, 1)]
    for row_id in ("lstm", "conditional_shared_100"):
        row = report.row(row_id)
        assert row.status == "run" and row.seeds == [0, 1] and row.test_pairs == 16
        assert row.measured.test_interval[0] <= row.measured.test <= row.measured.test_interval[1]
        assert row.difference == pytest.approx(row.measured.test - row.reported["test"])
        assert row.verdict.startswith("ordering only") and row.reported_inside is None
    assert rows["wbw"].status == "not selected" and rows["lexicalized"].status == "not runnable"
    assert not report.conditions.levels_comparable
    assert ["data", "snli_sample", "snli"] in report.conditions.departures
    claim = next(c for c in report.claims if (c.a, c.b) == ("conditional_shared_100", "lstm"))
    assert claim.difference == pytest.approx(rows["conditional_shared_100"].measured.test - rows["lstm"].measured.test)
    low, high = claim.interval  # the runs' test: both seeds' accuracies and the items' variance
    assert claim.test == "runs" and claim.verdict.startswith(
        "held" if low > 0 else "not held" if high < 0 else "not resolved")
    assert all(c.verdict.startswith("not tested") and not c.tested for c in report.claims if c is not claim)
    text = (directory / "reports" / "rocktaschel2016" / "reproduction.md").read_text()
    assert "> **Not the paper's conditions**: data snli_sample (the paper's: snli)" in text
    assert "| LSTM (Bowman et al., 2015) (Table 1) [Bowman et al. 2015] | 100 | bowman_lstm | 77.6 |" in text
    written = json.loads((directory / "reports" / "rocktaschel2016" / "reproduction.json").read_text())
    assert written == json.loads(json.dumps(report.to_json()))
    assert written["comparison"] == json.loads(json.dumps(report.comparison.to_json())) and "runs" not in \
        written["comparison"]  # the comparison as nli-zoo compare writes it, less the runs it was given
    assert (directory / "reports" / "rocktaschel2016" / "reproduction.png").stat().st_size > 0
    assert any((directory / "reports" / "rocktaschel2016" / "logs").iterdir())
    # the same command again: nothing trains, the same table
    runs = sorted((directory / "runs").glob("*/results.json"))
    stamps = [path.stat().st_mtime_ns for path in runs]
    capsys.readouterr()
    again = command.main([*argv, "--quiet"])  # --quiet: the report alone, no note
    out = capsys.readouterr().out
    assert [path.stat().st_mtime_ns for path in runs] == stamps and "[sweep] trial" not in out
    assert out.strip() == to_markdown(again.report) and "[reproduce]" not in out
    assert again.report.to_json()["rows"] == report.to_json()["rows"]


@pytest.mark.large
def test_the_dry_run_lists_the_runs_and_times_an_epoch(reproduced, capsys):
    argv, directory, _ = reproduced
    plan = command.main(argv[:3] + ["--seeds", "3", *TINY, "--dir", str(directory), "--dry-run", "--timed-steps", "2"])
    assert [u["unit"] for u in plan["units"]] == ["bowman_lstm"]
    for unit in plan["units"]:
        assert [state for _, _, state in unit["runs"]] == ["finished", "finished", "new"]
        assert unit["batches_per_epoch"] == 1 and unit["timed_steps"] == 1 and unit["epoch_seconds"] > 0
    out = capsys.readouterr().out
    assert "per epoch" in out and "bowman_lstm-seed=2 (new)" in out
    assert not (directory / "runs" / "bowman_lstm-seed=2").exists()
    # more epochs than the runs trained: the real command trains them on, and the plan says so
    plan = command.main(argv[:3] + ["--seeds", "2", *TINY, "--epochs", "2", "--dir", str(directory), "--dry-run",
                                    "--timed-steps", "2"])
    assert [state for _, _, state in plan["units"][0]["runs"]] == ["finished at 1 epoch(s): trains further to 2"] * 2


def test_offline_one_line_names_the_data_and_vector_options_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """README's command on a machine without network: one line naming the offline options of the corpus and
    of the word vectors, exit 2, no failed trials, no sweeps/ folder, no absl warning; the dry run too."""
    from zoo.data import readers
    from zoo.data.vectors import download as vectors

    monkeypatch.setenv("NLI_ZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    monkeypatch.setattr(vectors, "_host_reachable", lambda *args, **kwargs: False)
    monkeypatch.setattr(readers, "host_reachable", lambda *args, **kwargs: False)
    for extra in ([], ["--dry-run"]):
        with pytest.raises(SystemExit) as stopped:
            command.main(["rocktaschel2016", "--seeds", "3", "--dir", str(tmp_path / "repro"), *extra])
        err = capsys.readouterr().err.strip()
        assert stopped.value.code == 2 and len(err.splitlines()) == 1, err
        assert "--embeddings glove-6b-50d" in err and "--dataset snli_sample" in err and "--data-dir" in err, err
        assert "absl" not in err and "trial" not in err
        assert not (tmp_path / "repro").exists()


# Kill and resume --------------------------------------------------------------------------------------------
N = 90
GOLD = np.arange(N) % 3
RATES = {"esim": 0.8, "syntactic_tree_lstm": 0.6, "him": 0.85}


class Killed(BaseException):
    """A kill in this process: not an `Exception`, so no `except Exception` of the code under test runs."""


def fake_train(calls, kill_at=None):
    """Training replaced by writing a finished run (config.json as training writes it, results.json with
    fixed per-item predictions); the `kill_at`-th call is killed half-way (config.json written only)."""
    def train(**options):
        calls.append(options["run_dir"])
        run_dir = Path(options["run_dir"])
        rest = {k: v for k, v in options.items() if k not in ("model", "seed", "run_dir")}
        write_record(run_dir, options["model"], options["seed"], **dict(rest, embedding_dim=rest.get("embedding_dim")))
        if kill_at is not None and len(calls) == kill_at:
            raise Killed(options["run_dir"])
        seed = int(run_dir.name.rsplit("=", 1)[1])
        rate = RATES.get(options["model"], 0.5)
        correct = np.random.default_rng(100 * seed + len(options["model"])).random(N) < rate
        test = keep_items(scores(GOLD, np.where(correct, GOLD, (GOLD + 1) % 3)),
                          [{"premise": f"p {i}", "hypothesis": f"h {i}", "label": int(GOLD[i])} for i in range(N)])
        results = {"model": options["model"], "test": test, "test_accuracy": test["accuracy"], "dev_accuracy": 0.5,
                   "best_epoch": 1, "epochs_run": 1, "labels": list(LABELS), "parameters": {"without_embeddings": 7},
                   "history": [{"epoch": 1, "accuracy": 0.6}]}
        write_results(run_dir, results)
        return TrainOutcome(str(run_dir), RunResults.from_json(results), load_record(str(run_dir)))

    return train


def comparable(report):
    """A report less its paths."""
    written = report.to_json()
    rows = [{k: v for k, v in row.items() if k not in ("runs",)} for row in written["rows"]]
    groups = [{k: v for k, v in g.items() if k != "runs"} for g in written["comparison"]["groups"]]
    return rows, written["claims"], groups


def test_a_reproduction_killed_in_a_run_in_an_ensemble_and_in_its_report_ends_as_an_uninterrupted_one(
        tmp_path, monkeypatch):
    import keras

    from zoo.reproduction.reproduce import reproduce

    monkeypatch.setattr(keras.backend, "clear_session", lambda: None)  # nothing to clear: no model is built
    paper = load_paper("chen2017")
    rows = select_rows(paper, ["16", "25", "17"])
    spec = ReproductionSpec.of(rows, seeds="2", dataset="snli_sample", embeddings="none", max_eval_examples=N)
    calls = []
    clean = reproduce(paper, rows, spec, str(tmp_path / "clean"), train=fake_train(calls), resamples=200,
                      tensorboard=False)
    assert len(calls) == 6  # 2 units x 2 seeds, then the ensemble of each seed
    directory = str(tmp_path / "killed")
    calls[:] = []
    with pytest.raises(Killed):  # in the third run
        reproduce(paper, rows, spec, directory, train=fake_train(calls, kill_at=3), tensorboard=False)
    before, calls[:] = list(calls), []
    with pytest.raises(Killed):  # the killed run first, then the rest; killed again combining seed 0
        reproduce(paper, rows, spec, directory, train=fake_train(calls, kill_at=3), tensorboard=False)
    assert calls[0] == before[2] and len(calls) == 3 and "him-of-esim+syntactic_tree_lstm-seed=0" in calls[2]
    calls[:] = []
    published = reporting.fileio.publish_folder

    def killed_publishing(staged, target, **kwargs):
        raise Killed(target)

    monkeypatch.setattr(reporting.fileio, "publish_folder", killed_publishing)
    with pytest.raises(Killed):  # both ensembles combined, then killed putting the report in place
        reproduce(paper, rows, spec, directory, train=fake_train(calls), resamples=200, tensorboard=False)
    assert [Path(c).name for c in calls] == [f"him-of-esim+syntactic_tree_lstm-seed={s}" for s in (0, 1)]
    monkeypatch.setattr(reporting.fileio, "publish_folder", published)
    reports = Path(directory) / "reports"
    for staged in reports.iterdir():  # the killed writer's staging folder, as a process that died leaves it
        staged.rename(reports / staged.name.replace(f"-{os.getpid()}-", "-999999999-"))
    calls[:] = []
    result = reproduce(paper, rows, spec, directory, train=fake_train(calls), resamples=200, tensorboard=False)
    assert calls == []
    assert comparable(result.report) == comparable(clean.report)
    assert sorted(os.listdir(os.path.join(directory, "reports"))) == ["chen2017"]  # no staging folder left
    verdicts = {(c.a, c.b): c.verdict for c in result.report.claims}
    assert verdicts[("17", "16")].startswith(("held", "not resolved"))  # "not resolved (... seeds ...)"
    assert verdicts[("16", "25")].startswith(("held", "not resolved"))
    assert verdicts[("16", "19")].startswith("not tested: row 19 not runnable")


def test_a_folder_of_9000_training_pairs_is_named_and_both_seeds_fall_in_one_more_runs_interval(tmp_path, monkeypatch):
    import keras

    from zoo.reproduction.reproduce import reproduce

    monkeypatch.setattr(keras.backend, "clear_session", lambda: None)
    folder = tmp_path / "snli_1.0"
    folder.mkdir()
    items = 900
    gold = np.arange(items) % 3
    rates = {("bowman_lstm", 0): 0.58, ("bowman_lstm", 1): 0.575, ("rocktaschel_wbw", 0): 0.403,
             ("rocktaschel_wbw", 1): 0.339}

    def train(**options):  # a run of a 9,000-pair folder, scored on fixed predictions
        run_dir = Path(options["run_dir"])
        rest = {k: v for k, v in options.items() if k not in ("model", "seed", "run_dir")}
        write_record(run_dir, options["model"], options["seed"], **dict(rest, embedding_dim=rest.get("embedding_dim")))
        correct = np.zeros(items, bool)  # exactly the rate, on items drawn by the seed
        chosen = np.random.default_rng(options["seed"] + len(options["model"])).permutation(items)
        correct[chosen[:round(rates[(options["model"], options["seed"])] * items)]] = True
        test = keep_items(scores(gold, np.where(correct, gold, (gold + 1) % 3)),
                          [{"premise": f"p {i}", "hypothesis": f"h {i}", "label": int(gold[i])} for i in range(items)])
        results = {"model": options["model"], "test": test, "test_accuracy": test["accuracy"], "dev_accuracy": 0.5,
                   "best_epoch": 4, "epochs_run": 6, "labels": list(LABELS), "parameters": {"without_embeddings": 7},
                   "inputs": {"train": {"pairs": 9000}, "validation": {"pairs": 842}, "test": {"pairs": items}},
                   "embeddings": {"coverage": {"types": 0.9, "tokens": 0.99}},
                   "history": [{"epoch": e, "accuracy": 0.5} for e in range(1, 7)]}
        write_results(run_dir, results)
        return TrainOutcome(str(run_dir), RunResults.from_json(results), load_record(str(run_dir)))

    paper = load_paper("rocktaschel2016")
    rows = select_rows(paper, ["lstm", "wbw"])
    spec = ReproductionSpec.of(rows, seeds="2", data_dir=str(folder), embeddings="none")
    report = reproduce(paper, rows, spec, str(tmp_path / "R"), train=train, resamples=200, tensorboard=False).report
    departures = report.conditions.departures
    assert ["training pairs", "9,000", "549,367 (550,152 before pairs without a gold label are dropped)"] in departures
    assert ["dev pairs", "842", "9,842 (10,000 before pairs without a gold label are dropped)"] in departures
    wbw = report.row("wbw")
    accuracies = [100 * run.test_accuracy for run in report.comparison.group(wbw.group).runs]
    low, high = wbw.measured.test_interval  # one more run's: both seeds inside, unlike the items' interval
    assert all(low <= a <= high for a in accuracies) and wbw.verdict.startswith("ordering only")
    items_low, items_high = wbw.measured.test_items_interval
    assert not all(items_low <= a <= items_high for a in accuracies)
    text = (tmp_path / "R" / "reports" / "rocktaschel2016" / "reproduction.md").read_text()
    assert "training pairs 9,000 (the paper's: 549,367" in text and "seed 0 6 (best 4)" in text


def test_runs_of_other_settings_in_the_directory_are_refused_before_anything_trains(tmp_path, capsys):
    argv = ["rocktaschel2016", "--rows", "wbw", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim",
            "8", "--dir", str(tmp_path / "D")]
    spec = ReproductionSpec.of(select_rows(load_paper("rocktaschel2016"), ["wbw"]), settings=["hidden_size=4"],
                               dataset="snli_sample", embeddings="none", embedding_dim=8)
    fake_train([])(**spec.train_options({"unit": "rocktaschel_wbw"}, 0, str(tmp_path / "D" / "sweeps" / "S")))
    with pytest.raises(SystemExit) as stopped:
        command.main(argv + ["--set", "hidden_size=8"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().endswith(
        "rocktaschel_wbw-seed=0 holds a run with other settings (model.hidden_size: 4 -> 8): reproduce these "
        "settings into another --dir")
    assert sorted(os.listdir(tmp_path / "D")) == ["runs"]


# User errors ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["nope", "--dir", "R"], "unknown paper 'nope'"),
    (["chen2017", "--rows", "99", "--dir", "R"], "no row '99'"),
    (["chen2017", "--rows", "19", "--dir", "R"], "--rows 19: chen2017's row '(19) ESIM - ave./max' cannot run here"),
    (["chen2017"], "--dir is required"),
    (["chen2017", "--dir", "R", "--seeds", "two"], "--seeds expects a count N"),
    (["chen2017", "--dir", "R", "--set", "hidden_size"], "--set expects KEY=VALUE"),
    (["chen2017", "--dir", "R", "--set", "hidden_size=4", "--set", "hidden_size=8"],
     "--set hidden_size: given 2 times"),
    (["luo", "--dir", "R", "--set", "bilinear=true"], "--set bilinear: row ebim is defined by bilinear=false"),
    (["chen2017", "--dir", "R", "--epochs", "two"], "argument --epochs: must be a whole number, got 'two'"),
    (["chen2017", "--dir", "R", "--epochs", "0"], "argument --epochs: must be a whole number from 1 to 10,000, got 0"),
    (["chen2017", "--dir", "R", "--keras-verbose", "5"], "argument --keras-verbose: invalid choice"),
    (["chen2017", "--dir", "R", "--verbose", "2"], "argument --verbose: takes no value (the zoo's details); Keras's "
                                                   "fit output is --keras-verbose 2"),
    (["chen2017", "--dir", "R", "--resamples", "10"], "--resamples must be at least 100"),
    (["chen2017", "--dir", "R", "--timed-steps", "0"],
     "argument --timed-steps: must be a whole number from 1 to 1,000"),
    (["chen2017", "--dir", "R", "--dataset", "snly"], "--dataset snly: not a corpus name"),
    (["chen2017", "--dir", "R", "--data-dir", "nowhere"], "argument --data-dir: "),
    (["chen2017", "--dir", "R", "--embeddings", "glove"], "--embeddings glove: not a name"),
    (["chen2017", "--dir", "D/file"], "argument --dir: D/file is a file; name a folder"),
    (["chen2017", "--dir", "D/other"], "not a reproduction directory"),
    (["chen2017", "--dir", "D"], "not a reproduction directory"),
    (["rocktaschel2016", "--rows", "wbw", "--dir", "R", "--set", "dropout=2"], "dropout must be a number in [0, 1)"),
    (["rocktaschel2016", "--rows", "wbw", "--dir", "R", "--set", "hiden_size=3"], "unknown setting 'hiden_size'"),
])
def test_a_bad_flag_is_one_line_and_status_2(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "D").mkdir()
    (tmp_path / "D" / "file").write_text("")
    (tmp_path / "D" / "other").mkdir()
    (tmp_path / "D" / "other" / "notes.txt").write_text("")
    with pytest.raises(SystemExit) as stopped:
        command.main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert sorted(os.listdir(tmp_path / "D")) == ["file", "other"] and not (tmp_path / "R").exists()  # nothing written


def test_the_listing_shows_every_paper_and_one_paper_in_full(capsys):
    command.main(["--list"])
    out = capsys.readouterr().out
    assert all(f"{key}: " in out for key in paper_keys())
    command.main(["luo", "--list"])
    out = capsys.readouterr().out
    assert "ebim" in out and "luo_matrix bilinear=false" in out and "reported train 90.8, test 87.2" in out
    assert "Matrix ≈ Our 600D EBIM" in out
