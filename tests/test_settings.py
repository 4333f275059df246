"""One truth for each thing: every setting has one default (`zoo.settings`), which the registry's presets, the
typed settings, the preset task's `compile()` and docs/training.md all read; a finished run is read back
typed as it was written (`zoo.runs.record.RunRecord`), and a damaged or hand-edited run file is refused in
one line naming the file and the field, by every command that opens it."""

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

import zoo
from tests.support.runs import make_run
from zoo import registry
from zoo.errors import ConfigError
from zoo.registry import get_preset
from zoo.runs.optimizer import make_optimizer
from zoo.runs.record import RunFileError, RunRecord, load_record
from zoo.runs.results import RunResults, read_results
from zoo.settings import DataSettings, LearningRateDecay, RunSettings, TrainSettings, tunable_words_for
from zoo.settings.sections import OOV_RULES

ROOT = Path(__file__).resolve().parent.parent


def test_every_preset_starts_from_the_one_default_of_each_setting():
    assert registry.DEFAULT_TRAIN == TrainSettings().to_json()
    assert registry.DEFAULT_DATA == DataSettings().to_json()
    train_keys = {f.name for f in dataclasses.fields(TrainSettings)}
    data_keys = {f.name for f in dataclasses.fields(DataSettings)}
    for name in zoo.list_models():
        preset = get_preset(name).to_json()
        assert set(preset["train"]) == train_keys and set(preset["data"]) == data_keys, name
        assert RunSettings.of(preset) == get_preset(name), name  # typed and back: the same preset
    # a setting no registration changes keeps the class's default in every preset
    for key in ("beta_1", "beta_2", "epsilon", "l2"):
        assert {getattr(get_preset(name).train, key) for name in zoo.list_models()} == {getattr(TrainSettings, key)}


def test_docs_table_of_defaults_is_the_classes():
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (train|data) \| `(\w+)` \| `([^`]*)` \|$", text, flags=re.M)
    documented = {(section, key): _literal(value) for section, key, value in rows}
    expected = {("train", k): v for k, v in TrainSettings().to_json().items()}
    expected.update({("data", k): v for k, v in DataSettings().to_json().items()})
    assert documented == expected


def _literal(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def test_the_preset_task_compiles_with_the_runs_optimizer_settings():
    from zoo.presets import NLIClassifier

    backbone = zoo.create_model("bowman_lstm", vocabulary_size=12, embedding_dim=4, hidden_size=4, mlp_size=4)
    default = NLIClassifier(backbone).optimizer
    built = make_optimizer(TrainSettings())
    assert type(default) is type(built)
    for key in ("epsilon", "beta_1", "beta_2", "learning_rate"):
        assert float(getattr(default, key)) == pytest.approx(float(getattr(built, key))), key
    tuned = NLIClassifier(backbone, optimizer_settings={"learning_rate": 4e-4, "global_clipnorm": 10.0}).optimizer
    assert float(tuned.learning_rate) == pytest.approx(4e-4) and float(tuned.global_clipnorm) == 10.0
    assert float(tuned.epsilon) == TrainSettings.epsilon


def test_the_oov_rules_are_one_list():
    from zoo.data import embeddings

    assert embeddings.STRATEGIES == OOV_RULES
    assert {tunable_words_for(rule) for rule in OOV_RULES} == {"oov", "all", "none"}


def test_a_run_is_read_back_typed_as_it_was_written(finished_run_dir):
    record = load_record(finished_run_dir)
    assert record.model == "bowman_lstm" and record.settings.model["hidden_size"] == 8
    assert record.data.source == "snli_sample" and record.data.max_train_examples == 64
    assert record.settings.train.epochs == 1 and record.embedding_dim == 8 and record.tunable_words == "all"
    written = json.loads(Path(finished_run_dir, "config.json").read_text(encoding="utf-8"))
    assert record.to_json() == written and RunRecord.from_json(written) == record
    run = zoo.load(finished_run_dir)
    assert run.record == record and run.settings is run.record.settings and run.labels == record.labels


def test_a_run_written_before_the_typed_record_loads_as_it_was_trained(tmp_path):
    """An older config.json: the data as a plain source name, no labels and no vocabulary report, a model
    setting added since (`classifier_activation`) missing, an older form of lr_decay."""
    record = load_record(make_run(tmp_path / "old", "rocktaschel_wbw"))
    old = record.to_json()
    old["data"] = "snli_sample"
    for key in ("labels", "vocabulary", "options", "overrides"):
        old.pop(key)
    del old["preset"]["model"]["classifier_activation"]
    old["preset"]["train"]["lr_decay"] = 0.9
    loaded = RunRecord.from_json(old)
    assert loaded.settings.model["classifier_activation"] == "linear"  # the value such runs were trained with
    assert loaded.data.source == "snli_sample" and loaded.labels == zoo.data.LABELS
    assert loaded.settings.train.lr_decay.rate == 0.9 and loaded.settings.train.lr_decay.kind == "exponential"


# Damaged run files: (what to do to the file, the file, the field the line names)
def _config(edit):
    def change(run_dir):
        path = Path(run_dir, "config.json")
        config = json.loads(path.read_text(encoding="utf-8"))
        config = edit(config)
        path.write_text(json.dumps(config), encoding="utf-8")
    return change


def _results(value):
    def change(run_dir):
        Path(run_dir, "results.json").write_text(json.dumps(value), encoding="utf-8")
    return change


def _without(key):
    def edit(config):
        config.pop(key)
        return config
    return edit


def _with(key, value):
    def edit(config):
        config[key] = value
        return config
    return edit


def _preset(section, key, value):
    def edit(config):
        config["preset"][section][key] = value
        return config
    return edit


DAMAGED_CONFIGS = {
    "no model": (_config(_without("model")), "field 'model' is missing"),
    "an unknown model": (_config(_with("model", "nosuch")), "model must be one of"),
    "another model's settings": (_config(_with("model", "esim")),
                                 "'mlp_size', which is not a setting of model 'esim'"),
    "a batch size of 0": (_config(_preset("train", "batch_size", 0)), "preset: batch_size must be a whole number"),
    "an unknown OOV rule": (_config(_preset("data", "oov", "nosuch")), "preset: oov must be one of"),
    "no tokenizer": (_config(_without("tokenizer")), "field 'tokenizer' is missing"),
    "a list": (_config(lambda config: [1]), "holds list [1], not an object"),
    "a vocabulary size of text": (_config(_with("vocabulary_size", "many")), "vocabulary_size must be a whole number"),
}
DAMAGED_RESULTS = {
    "an empty object": (_results({}), "field 'test' is missing"),
    "a list": (_results([1]), "holds list [1], not an object"),
    "a test without accuracy": (_results({"test": {"examples": 3}}), "test must be an object with an accuracy"),
    "a history that is no list": (_results({"test": {"accuracy": 0.5}, "history": {}}),
                                  "history must be a list of epochs"),
    "a best epoch of text": (_results({"test": {"accuracy": 0.5}, "best_epoch": "two"}), "best_epoch must be"),
    "a test accuracy of text": (_results({"test": {"accuracy": 0.5}, "test_accuracy": "high"}),
                                "test_accuracy must be a number"),
    "labels of numbers": (_results({"test": {"accuracy": 0.5}, "labels": [0, 1, 2]}), "labels must be a list of text"),
}


def damaged_copy(run_dir, tmp_path, damage):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    damage(copy)
    return str(copy)


@pytest.mark.parametrize("case", sorted(DAMAGED_CONFIGS))
def test_a_damaged_config_is_one_line_naming_the_file_and_field(finished_run_dir, tmp_path, case):
    damage, expected = DAMAGED_CONFIGS[case]
    copy = damaged_copy(finished_run_dir, tmp_path, damage)
    with pytest.raises(RunFileError) as error:
        load_record(copy)
    message = str(error.value)
    assert "\n" not in message and message.startswith(os.path.join(copy, "config.json") + ": ")
    assert expected in message and "--overwrite" in message


@pytest.mark.parametrize("case", sorted(DAMAGED_RESULTS))
def test_a_damaged_results_json_is_one_line_naming_the_file_and_field(finished_run_dir, tmp_path, case):
    damage, expected = DAMAGED_RESULTS[case]
    copy = damaged_copy(finished_run_dir, tmp_path, damage)
    with pytest.raises(RunFileError) as error:
        read_results(copy)
    message = str(error.value)
    assert "\n" not in message and message.startswith(os.path.join(copy, "results.json") + ": ")
    assert expected in message and "delete it" in message


def test_results_json_reads_back_as_written(finished_run_dir):
    written = json.loads(Path(finished_run_dir, "results.json").read_text(encoding="utf-8"))
    results = read_results(finished_run_dir)
    assert written.items() <= results.to_json().items() and RunResults.from_json(results.to_json()) == results
    assert results.test_accuracy == written["test_accuracy"] and results.best_epoch == written["best_epoch"]


def test_an_older_results_json_reads_with_what_it_has(tmp_path):
    # a file of an older version: the test scores alone; entries it lacks are None (the accuracies the splits')
    Path(tmp_path, "results.json").write_text(json.dumps({"test": {"accuracy": 0.25}, "note": "kept"}))
    results = read_results(str(tmp_path))
    assert (results.test_accuracy, results.dev_accuracy, results.best_epoch, results.history) == (0.25, None, None, [])
    assert results.to_json()["note"] == "kept"  # an entry this version does not know is written back
    assert read_results(str(tmp_path / "none")) is None


TRAIN_ARGS = ["--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none", "--embedding-dim", "8",
              "--set", "hidden_size=8", "--set", "mlp_size=8", "--max-train-examples", "64", "--max-eval-examples",
              "32", "--epochs", "1"]


@pytest.mark.parametrize("command, case", [
    ("evaluate", "another model's settings"), ("predict", "no model"), ("export", "a list"),
    ("train", "a batch size of 0"), ("train", "results: an empty object"), ("train", "results: a list"),
    ("compare", "results: a test without accuracy")])
def test_every_command_refuses_a_damaged_run_file_in_one_line(finished_run_dir, tmp_path, capsys, command, case):
    """The commands that open a run name the damaged file and field in one line, exit 2, and write nothing."""
    import evaluate
    import export
    import predict
    import train
    from zoo.commands import compare

    damage, expected = DAMAGED_RESULTS[case[9:]] if case.startswith("results: ") else DAMAGED_CONFIGS[case]
    copy = damaged_copy(finished_run_dir, tmp_path, damage)
    before = sorted(os.listdir(copy))
    argv = {"evaluate": ["--run-dir", copy, "--dataset", "snli_sample", "--quiet"],
            "predict": ["--run-dir", copy, "--premise", "A man.", "--hypothesis", "A person."],
            "export": ["--run-dir", copy, "--out", str(tmp_path / "export")],
            "train": [*TRAIN_ARGS, "--run-dir", copy],
            "compare": [copy, "--out", str(tmp_path / "comparison"), "--no-tensorboard"]}[command]
    main = {"evaluate": evaluate.main, "predict": predict.main, "export": export.main, "train": train.main,
            "compare": compare.main}[command]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert stop.value.code == 2 and len(errors) == 1, errors
    file = "results.json" if case.startswith("results: ") else "config.json"
    assert os.path.join(copy, file) in errors[0] and expected in errors[0], errors
    assert sorted(os.listdir(copy)) == before and not (tmp_path / "export").exists()
    assert not (tmp_path / "comparison").exists()


def test_a_preset_is_typed_and_overrides_apply_to_its_sections():
    preset = get_preset("esim")
    changed = preset.with_overrides({"hidden_size": 8, "learning_rate": 1e-2, "max_premise_length": None,
                                     "lr_decay": 0.5})
    assert (changed.model["hidden_size"], changed.train.learning_rate) == (8, 1e-2)
    assert changed.data.max_premise_length is None
    assert changed.train.lr_decay == LearningRateDecay(kind="exponential", rate=0.5)
    assert changed.train.batch_size == preset.train.batch_size and preset.model["hidden_size"] == 300  # a copy
    assert changed.value("lr_decay") == {"type": "exponential", "rate": 0.5, "every_epochs": 1}
    with pytest.raises(ConfigError, match="unknown setting 'nosuch'; settings of this model: batch_size"):
        preset.with_overrides({"nosuch": 1})
    with pytest.raises(ConfigError, match="batch_size must be a whole number"):
        preset.with_overrides({"batch_size": 0})


def test_what_a_rerun_does_is_a_run_stage(finished_run_dir, tmp_path):
    from zoo.runs import layout
    from zoo.runs.stages import RunStage

    record = load_record(finished_run_dir)
    epochs = record.settings.train.epochs
    assert layout.prepare_run_dir(finished_run_dir, record.identity(), epochs) is RunStage.FINISHED
    assert layout.prepare_run_dir(str(tmp_path / "elsewhere"), record.identity(), epochs) is RunStage.NEW


# The model constructors' arguments that are not architecture: how the word vectors are sized, loaded and
# trained, and the classes. They keep their defaults; every other setting is the presets' alone.
NOT_ARCHITECTURE = {"embedding_dim", "tunable_words", "num_tunable", "num_classes"}


def test_a_model_class_takes_its_sizes_from_the_presets_only():
    """Architecture settings have one source, the registered preset (as KerasHub's backbones take theirs):
    every setting a preset of a class holds is a constructor argument without a default, no constructor on
    the class's way to `keras.Model` gives a default to anything but `NOT_ARCHITECTURE` (`embedding_dim`'s
    the papers'), and building a class without one of its preset's settings is a one-line error naming it."""
    import inspect

    import keras

    from zoo.constants import EMBEDDING_DIM

    names_of = {}
    for name in zoo.list_models():
        names_of.setdefault(registry.get_spec(name).model_class, []).append(name)
    for cls, names in names_of.items():
        parameters, defaults = {}, {}
        for klass in cls.__mro__[:cls.__mro__.index(keras.Model)]:
            if "__init__" in vars(klass):
                for p in inspect.signature(klass.__init__).parameters.values():
                    if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                        parameters.setdefault(p.name, p)
                        if p.default is not p.empty:
                            defaults[f"{klass.__name__}.{p.name}"] = p.default
        assert {key.split(".")[1] for key in defaults} <= NOT_ARCHITECTURE, f"{cls.__name__}: defaults {defaults}"
        assert defaults["NLIModel.embedding_dim"] == EMBEDDING_DIM
        for name in names:
            preset = get_preset(name).model
            assert set(preset) <= set(parameters), (name, sorted(set(preset) - set(parameters)))
            assert all(parameters[key].default is inspect.Parameter.empty for key in preset), name
            for key in preset:
                with pytest.raises(TypeError, match=f"^{cls.__init__.__qualname__}\\(\\) missing 1 required "
                                                    f"keyword-only argument: '{key}'$"):
                    cls(vocabulary_size=4, **{k: v for k, v in preset.items() if k != key})
