"""Presets (zoo.presets): a run exported in KerasHub's layout, loaded back as a Keras classifier on raw
pairs, checked byte for byte, written whole (kill -9 between writes) under the run's and the folder's
locks, and the hub paths as far as no network allows.

The runs are untrained (tests/support/runs.py, make_run: 8-d vectors, hidden size 8) with a results.json
written as train.py writes it, so that nothing here trains except the fine-tuning test.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.exports import PAIRS
from tests.support.runs import finished_run
from zoo.fileio import write_json
from zoo.presets import (
    HubClientMissingError,
    HubUnreachableError,
    NLIClassifier,
    NLIPreprocessor,
    NLITokenizer,
    PresetError,
    PresetIntegrityError,
    PresetMismatchError,
    export_preset,
    files,
    from_preset,
    parse_uri,
    saving,
    upload_preset,
    verify_preset,
)
from zoo.registry import get_spec
from zoo.runs import layout, load_run
from zoo.runs.predictor import RunPredictor

ROOT = Path(__file__).resolve().parent.parent
RAW = [pair[:2] for pair in PAIRS] + [("", ""), ("Ein Mann spielt Gitarre – ça va? 🎸", "Über naïve café.")]
LAYOUT = ("config.json", "model.weights.h5", "preprocessor.json", "tokenizer.json",
          "assets/tokenizer/vocabulary.txt", "task.json", "metadata.json", "README.md")


@pytest.fixture(scope="module")
def preset_dir(finished_run_dir, tmp_path_factory):
    return export_preset(load_run(finished_run_dir), str(tmp_path_factory.mktemp("presets") / "bowman_lstm"))


@pytest.fixture(scope="module")
def classifier(preset_dir):
    return from_preset(preset_dir)


@pytest.fixture
def copy_of(preset_dir, tmp_path):
    def copy():
        target = tmp_path / "copy"
        shutil.copytree(preset_dir, target)
        return target
    return copy


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network: every connection and name lookup fails; the hub clients' caches are empty folders."""
    def refuse(*args, **kwargs):
        raise OSError(101, "Network is unreachable (the test disabled the network)")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_USERNAME", "someone")
    monkeypatch.setenv("KAGGLE_KEY", "not-a-key")
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_token")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))


def one_line(error):
    message = str(error.value)
    assert "\n" not in message and message.strip(), message
    return message


def flip_byte(path, offset=None):
    data = bytearray(Path(path).read_bytes())
    offset = len(data) // 2 if offset is None else offset
    data[offset] ^= 0x01
    Path(path).write_bytes(bytes(data))


# Layout, metadata, model card ----------------------------------------------------------------------------

def test_preset_has_kerashubs_layout_and_every_file_checked(preset_dir):
    present = files.list_files(preset_dir) + [files.METADATA_FILE]
    assert sorted(present) == sorted(LAYOUT)
    metadata = json.loads((Path(preset_dir) / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["checksum_algorithm"] == "sha256"
    assert sorted(metadata["checksums"]) == sorted(set(LAYOUT) - {"metadata.json"})
    for name, digest in metadata["checksums"].items():
        assert hashlib.sha256((Path(preset_dir) / name).read_bytes()).hexdigest() == digest, name
    config = json.loads((Path(preset_dir) / "config.json").read_text(encoding="utf-8"))
    assert config["registered_name"] == "nli_zoo>BowmanLSTM" and "compile_config" not in config
    tokenizer = json.loads((Path(preset_dir) / "tokenizer.json").read_text(encoding="utf-8"))
    assert "vocabulary" not in tokenizer["config"]  # the vocabulary is the asset
    preprocessor = json.loads((Path(preset_dir) / "preprocessor.json").read_text(encoding="utf-8"))["config"]
    assert preprocessor["labels"] == ["entailment", "neutral", "contradiction"]
    assert preprocessor["max_premise_length"] == 100 and preprocessor["parse_trees"] is False


def test_metadata_records_paper_parameters_data_and_results(preset_dir, finished_run_dir):
    metadata = json.loads((Path(preset_dir) / "metadata.json").read_text(encoding="utf-8"))
    run = load_run(finished_run_dir)
    assert metadata["model"] == "bowman_lstm"
    assert metadata["paper"] == get_spec("bowman_lstm").paper
    assert metadata["parameters_without_embeddings"] == run.model.count_params_without_embeddings()
    assert metadata["parameter_count"] == run.model.count_params()
    assert metadata["data"] == run.record.data.to_json()
    assert metadata["results"]["dev"]["accuracy"] == 0.4375
    assert metadata["results"]["test"]["accuracy"] == 0.40625
    assert metadata["vocabulary_size"] == len(run.vocab)
    for key in ("keras_version", "date_saved", "tasks", "format", "embeddings", "training"):
        assert key in metadata, key
    assert metadata["training"]["epochs_run"] == 1 and metadata["embeddings"]["source"] == "none"


def test_model_card_says_what_how_results_and_licences(preset_dir):
    card = (Path(preset_dir) / "README.md").read_text(encoding="utf-8")
    assert "bowman_lstm" in card and get_spec("bowman_lstm").paper in card
    assert "40.62%" in card and "43.75%" in card  # test and dev accuracy
    assert "CC BY-SA 4.0" in card  # SNLI's licence
    assert "no pretrained vectors" in card  # the vectors' (none here)
    assert "epochs run: 1" in card and "hidden_size=8" in card


def test_file_names_are_kerashubs():
    preset_utils = pytest.importorskip("keras_hub.src.utils.preset_utils")
    for name in ("CONFIG_FILE", "MODEL_WEIGHTS_FILE", "PREPROCESSOR_CONFIG_FILE", "TOKENIZER_CONFIG_FILE",
                 "TASK_CONFIG_FILE", "METADATA_FILE", "README_FILE", "TOKENIZER_ASSET_DIR"):
        assert getattr(files, name) == getattr(preset_utils, name), name


def test_an_existing_folder_is_refused_unless_overwrite(finished_run_dir, tmp_path):
    target = tmp_path / "preset"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(PresetError) as error:
        export_preset(load_run(finished_run_dir), str(target))
    assert "not empty" in one_line(error) and (target / "notes.txt").exists()
    export_preset(finished_run_dir, str(target), overwrite=True)  # a run directory works too
    assert not (target / "notes.txt").exists() and (target / "metadata.json").exists()
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]  # no temporary left
    assert sorted(os.listdir(tmp_path)) == ["preset"]  # nor the folder's lock


# Loading, predicting, fine-tuning -------------------------------------------------------------------------

def test_predict_on_raw_pairs_equals_predict_py(classifier, finished_run_dir):
    expected = RunPredictor(finished_run_dir).predict(RAW)
    probabilities = classifier.predict(RAW)
    assert isinstance(classifier, NLIClassifier) and probabilities.shape == (len(RAW), 3)
    reference = np.array([[p["probabilities"][name] for name in classifier.labels] for p in expected])
    np.testing.assert_allclose(probabilities, reference, atol=1e-6, rtol=0)
    assert [p["label"] for p in classifier.predict_labels(RAW)] == [p["label"] for p in expected]
    assert classifier.labels == ("entailment", "neutral", "contradiction")


def test_preprocessor_gives_the_runs_id_inputs(classifier, finished_run_dir):
    run = load_run(finished_run_dir)
    ids = classifier.preprocessor(RAW)
    expected = run.encode(RAW)
    assert sorted(ids) == ["hypothesis", "premise"]
    for key in expected:
        np.testing.assert_array_equal(ids[key], expected[key])
    columns = {"premise": [p for p, _ in RAW], "hypothesis": [h for _, h in RAW]}
    np.testing.assert_allclose(classifier.predict(columns), classifier.predict(RAW), atol=1e-7)
    np.testing.assert_allclose(classifier.predict(ids), classifier.predict(RAW), atol=1e-6)


def test_facade_is_lazy_and_loads_presets(preset_dir, classifier):
    import zoo

    np.testing.assert_allclose(zoo.from_preset(preset_dir).predict(RAW[:1]), classifier.predict(RAW[:1]))
    code = "import sys, zoo; print(sorted(m for m in ('zoo.presets', 'keras', 'tensorflow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.large
def test_fit_on_raw_pairs_fine_tunes_and_saves_again(preset_dir, tmp_path, monkeypatch):
    from zoo.data.snli import load_snli

    classifier = from_preset(preset_dir)
    splits, _ = load_snli("snli_sample")
    examples = splits["train"][:32]
    pairs = [(ex["premise"], ex["hypothesis"]) for ex in examples]
    names = [classifier.labels[ex["label"]] for ex in examples]
    before = [w.copy() for w in classifier.backbone.get_weights()]
    initial = classifier.evaluate(pairs, names, verbose=0)[0]
    traced = {"train_step": [], "predict_step": []}  # Python runs a step's code only while it is traced
    for step, calls in traced.items():
        keras_step = getattr(type(classifier), step)
        monkeypatch.setattr(type(classifier), step,
                            lambda self, data, k=keras_step, c=calls: c.append(1) or k(self, data))
    history = classifier.fit(pairs, names, epochs=4, batch_size=8, seed=0, verbose=0)
    classifier.predict(pairs, batch_size=8)  # batches of several shapes
    monkeypatch.undo()
    assert len(traced["train_step"]) == 1 and len(traced["predict_step"]) == 1, traced  # the optimizer built first
    losses = history.history["loss"]
    assert losses[-1] < losses[0]
    assert classifier.evaluate(pairs, names, verbose=0)[0] < initial
    assert any(not np.array_equal(a, b) for a, b in zip(before, classifier.backbone.get_weights()))
    classifier.fit(pairs[:8], [classifier.labels.index(n) for n in names[:8]], epochs=1, verbose=0)  # ids too
    saved = classifier.save_to_preset(str(tmp_path / "tuned"))
    reloaded = from_preset(saved)
    np.testing.assert_allclose(reloaded.predict(RAW), classifier.predict(RAW), atol=1e-6)
    metadata = json.loads((tmp_path / "tuned" / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["fine_tuned"] is True and metadata["results"] is None
    assert metadata["results_before_fine_tuning"]["test"]["accuracy"] == 0.40625
    assert "before fine-tuning" in (tmp_path / "tuned" / "README.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="unknown label 'maybe'"):
        classifier.fit(pairs[:1], ["maybe"], verbose=0)


@pytest.mark.large
def test_classifier_round_trips_through_a_keras_file(preset_dir, tmp_path):
    import keras

    classifier = from_preset(preset_dir)
    classifier.fit(RAW[:4], [0, 1, 2, 0], epochs=1, verbose=0)  # the optimizer's state travels too
    classifier.save(tmp_path / "classifier.keras")
    loaded = keras.models.load_model(tmp_path / "classifier.keras")
    assert isinstance(loaded, NLIClassifier) and loaded.preset_metadata["model"] == "bowman_lstm"
    assert loaded.fine_tuned and int(loaded.optimizer.iterations.numpy()) == 1
    np.testing.assert_allclose(loaded.predict(RAW), classifier.predict(RAW), atol=1e-7)


@pytest.mark.large
def test_tree_model_takes_parses_like_the_run(tmp_path):
    run_dir = finished_run(str(tmp_path / "tree_run"), "syntactic_tree_lstm")
    classifier = from_preset(export_preset(run_dir, str(tmp_path / "tree_preset")))
    assert classifier.preprocessor.parse_trees
    expected = RunPredictor(run_dir).predict(PAIRS)
    reference = np.array([[p["probabilities"][name] for name in classifier.labels] for p in expected])
    np.testing.assert_allclose(classifier.predict(PAIRS), reference, atol=1e-6, rtol=0)


def test_tokenizer_and_preprocessor_are_keras_layers_saved_with_their_vocabulary(classifier, tmp_path):
    import keras

    preprocessor = classifier.preprocessor
    assert isinstance(preprocessor, keras.layers.Layer) and isinstance(preprocessor.tokenizer, keras.layers.Layer)
    assert preprocessor.tokenizer in classifier.preprocessor._layers and preprocessor in classifier._layers
    # The config holds the settings, the vocabulary is the tokenizer's asset (as in KerasHub).
    config = keras.saving.serialize_keras_object(preprocessor)
    assert config["registered_name"] == "nli_zoo>NLIPreprocessor"
    assert config["config"]["tokenizer"]["registered_name"] == "nli_zoo>NLITokenizer"
    assert "vocabulary" not in config["config"]["tokenizer"]["config"]
    rebuilt = keras.saving.deserialize_keras_object(config)
    assert keras.saving.serialize_keras_object(rebuilt) == config
    tokenizer_config = config["config"]["tokenizer"]["config"]
    for cls, layer_config in ((NLIPreprocessor, config["config"]), (NLITokenizer, tokenizer_config)):
        with pytest.raises((TypeError, ValueError)):  # no constructor swallows an unknown argument
            cls.from_config({**layer_config, "no_such_argument": 1})
    assert rebuilt.tokenizer.vocabulary is None and rebuilt.max_premise_length == preprocessor.max_premise_length
    preprocessor.tokenizer.save_assets(str(tmp_path))
    rebuilt.tokenizer.load_assets(str(tmp_path))
    for key, ids in preprocessor(RAW).items():
        np.testing.assert_array_equal(rebuilt(RAW)[key], ids)
    tokenizer = preprocessor.tokenizer
    tokens = ["a" if tokenizer.lowercase else "A", "man", "."]
    assert tokenizer.tokenize(["A man."]) == [tokens]
    assert tokenizer(["A man."]) == [tokenizer.vocabulary.ids(tokens)] and 1 not in tokenizer(["A man."])[0]
    with pytest.raises(ValueError, match="no vocabulary"):
        NLIPreprocessor(NLITokenizer())(RAW)


def test_a_preset_of_format_1_still_loads(copy_of, classifier):
    """Format 1 (the tokenizer and preprocessor were plain classes of zoo.presets.classifier): their JSON
    as it wrote it."""
    preset = copy_of()
    tokenizer = {"module": "zoo.presets.classifier", "class_name": "NLITokenizer",
                 "config": {"lowercase": classifier.preprocessor.tokenizer.lowercase},
                 "registered_name": "nli_zoo>NLITokenizer"}
    preprocessor = json.loads((preset / "preprocessor.json").read_text(encoding="utf-8"))
    preprocessor["module"] = "zoo.presets.classifier"
    preprocessor["config"] = {key: preprocessor["config"][key] for key in (
        "max_premise_length", "max_hypothesis_length", "labels", "parse_trees", "max_depth")}
    preprocessor["config"] = {"tokenizer": tokenizer, **preprocessor["config"]}
    write_json(preset / "tokenizer.json", tokenizer)
    write_json(preset / "preprocessor.json", preprocessor)
    metadata = json.loads((preset / "metadata.json").read_text(encoding="utf-8"))
    metadata["format_version"] = 1
    metadata["checksums"] = files.checksums(preset)
    write_json(preset / "metadata.json", metadata)
    np.testing.assert_allclose(from_preset(str(preset)).predict(RAW), classifier.predict(RAW), atol=1e-7)


# Written whole, under the run's and the folder's locks ------------------------------------------------------

# A child process per kill step, forked after the imports (they take most of the time).
KILL_DRIVER = """
import json, os, sys
from zoo.presets import export_preset
run_dir, steps_and_targets = sys.argv[1], sys.argv[2:]
status = {}
for step, target in zip(steps_and_targets[::2], steps_and_targets[1::2]):
    pid = os.fork()
    if pid == 0:
        os.environ["NLI_ZOO_FAULT_AT"] = step
        try:
            export_preset(run_dir, target, overwrite=True)
        finally:
            os._exit(0)
    _, code = os.waitpid(pid, 0)
    status[step] = os.WTERMSIG(code) if os.WIFSIGNALED(code) else -os.WEXITSTATUS(code)
print(json.dumps(status))
"""


def old_preset(preset_dir, target):
    """A copy of the preset marked as the old one (metadata.json, which no checksum covers)."""
    shutil.copytree(preset_dir, target)
    metadata = json.loads((target / "metadata.json").read_text(encoding="utf-8"))
    write_json(target / "metadata.json", {**metadata, "run": "the old preset"})
    return target


def leftovers(folder, name):
    return sorted(n for n in os.listdir(folder) if n.startswith(f".{name}."))


@pytest.mark.large
def test_a_killed_export_leaves_the_old_preset_or_the_new_one_whole(finished_run_dir, preset_dir, tmp_path):
    targets = {step: old_preset(preset_dir, tmp_path / f"p{i}") for i, step in enumerate(saving.FAULT_STEPS)}
    arguments = [str(part) for step, target in targets.items() for part in (step, target)]
    out = subprocess.run([sys.executable, "-c", KILL_DRIVER, finished_run_dir, *arguments], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != saving.FAULT_ENV})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {step: signal.SIGKILL for step in targets}, out.stderr
    run = load_run(finished_run_dir)
    for step, target in targets.items():
        expected = "bowman_lstm" if step == "preset:swapped" else "the old preset"
        assert verify_preset(str(target))["run"] == expected, step  # every file whole, the old or the new
        assert any(".tmp-" in n for n in leftovers(tmp_path, target.name)), step
        with pytest.raises(PresetError) as error:  # rerun without --overwrite: refused, leftovers removed
            export_preset(run, str(target))
        assert "not empty" in one_line(error) and leftovers(tmp_path, target.name) == [], step
        assert verify_preset(str(target))["run"] == expected, step
        export_preset(run, str(target), overwrite=True)  # and with it: the new preset
        assert verify_preset(str(target))["run"] == "bowman_lstm" and leftovers(tmp_path, target.name) == []
    np.testing.assert_allclose(from_preset(str(target)).predict(RAW[:2]), from_preset(preset_dir).predict(RAW[:2]))


class Fault(BaseException):
    pass


def test_without_an_atomic_exchange_the_next_export_puts_the_old_preset_back(finished_run_dir, preset_dir, tmp_path,
                                                                             monkeypatch):
    target = old_preset(preset_dir, tmp_path / "preset")

    def fail_at(step):
        if step == "preset:moved-aside":
            raise Fault(step)  # as a kill between the two renames (the test cannot kill itself)

    monkeypatch.setattr(saving, "_exchange", lambda a, b: False)
    monkeypatch.setattr(saving, "fault_point", fail_at)
    with pytest.raises(Fault):
        export_preset(finished_run_dir, str(target), overwrite=True)
    assert not target.exists() and [n for n in leftovers(tmp_path, "preset") if ".old-" in n]
    with pytest.raises(PresetError, match="not empty"):
        export_preset(finished_run_dir, str(target))  # puts it back first
    assert verify_preset(str(target))["run"] == "the old preset" and leftovers(tmp_path, "preset") == []
    monkeypatch.setattr(saving, "fault_point", lambda step: None)
    export_preset(finished_run_dir, str(target), overwrite=True)  # the two renames
    assert verify_preset(str(target))["run"] == "bowman_lstm" and leftovers(tmp_path, "preset") == []


def test_a_run_that_is_training_and_a_folder_being_written_are_refused(finished_run_dir, tmp_path):
    holder = subprocess.Popen(  # holds the run's lock as train.py does while it trains
        [sys.executable, "-c", "import sys, time; from zoo.runs import layout; layout.lock(sys.argv[1]).acquire(); "
         "print('locked', flush=True); time.sleep(120)", finished_run_dir], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(PresetError) as error:
            export_preset(finished_run_dir, str(tmp_path / "preset"))
    finally:
        holder.kill()
        holder.wait()
    message = one_line(error)
    assert finished_run_dir in message and f"PID {holder.pid}" in message and "training" in message
    with saving.target_lock(tmp_path / "preset"):  # another export into the folder
        with pytest.raises(PresetError) as error:
            export_preset(finished_run_dir, str(tmp_path / "preset"))
    assert "another process writes this preset folder" in one_line(error)
    assert os.listdir(tmp_path) == []  # a refused export leaves nothing
    with layout.lock(finished_run_dir):  # a caller holding the run's lock around the export: no second lock needed
        export_preset(finished_run_dir, str(tmp_path / "preset"))
    assert verify_preset(str(tmp_path / "preset"))["model"] == "bowman_lstm"
    assert not os.path.exists(os.path.join(finished_run_dir, ".lock"))


# Checks before loading ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["model.weights.h5", "assets/tokenizer/vocabulary.txt", "config.json"])
def test_a_changed_byte_is_refused_naming_the_file(copy_of, name):
    preset = copy_of()
    flip_byte(preset / name)
    with pytest.raises(PresetIntegrityError) as error:
        from_preset(str(preset))
    message = one_line(error)
    assert name in message and "SHA-256" in message


def test_a_missing_file_and_a_damaged_metadata_are_refused(copy_of, finished_run_dir):
    preset = copy_of()
    (preset / "model.weights.h5").unlink()
    with pytest.raises(PresetIntegrityError) as error:
        from_preset(str(preset))
    assert "model.weights.h5 is missing" in one_line(error)
    (preset / "metadata.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(PresetIntegrityError) as error:
        from_preset(str(preset))
    assert "metadata.json is not valid JSON" in one_line(error)
    # the remedy keeps it a preset (deleting metadata.json would not): export it again over the damaged folder
    assert one_line(error).endswith("export the preset again from its run (export.py --format preset --overwrite), "
                                    "or download it again")
    export_preset(load_run(finished_run_dir), str(preset), overwrite=True)  # followed: a whole preset again
    assert from_preset(str(preset)).preprocessor is not None
    with pytest.raises(PresetError) as error:
        from_preset(str(preset / "nowhere"))
    assert "no such preset folder" in one_line(error)


def test_a_vocabulary_that_does_not_fit_the_embedding_table_is_refused(copy_of):
    preset = copy_of()
    vocabulary = preset / "assets/tokenizer/vocabulary.txt"
    words = vocabulary.read_text(encoding="utf-8").splitlines()
    vocabulary.write_text("\n".join(words[:-5]) + "\n", encoding="utf-8")
    metadata = json.loads((preset / "metadata.json").read_text(encoding="utf-8"))
    metadata["checksums"]["assets/tokenizer/vocabulary.txt"] = files.sha256(vocabulary)  # checksums pass
    (preset / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    with pytest.raises(PresetMismatchError) as error:
        from_preset(str(preset))
    message = one_line(error)
    assert "vocabulary.txt" in message and f"{len(words) - 5} tokens" in message and f"{len(words)} rows" in message


# Hubs -----------------------------------------------------------------------------------------------------

def test_hub_uris_are_parsed():
    assert parse_uri("hf://someone/bowman_lstm").handle == "someone/bowman_lstm"
    kaggle = parse_uri("kaggle://someone/nli-zoo/keras/bowman_lstm/3")
    assert (kaggle.scheme, kaggle.handle, kaggle.version) == ("kaggle", "someone/nli-zoo/keras/bowman_lstm/3", 3)
    assert parse_uri("hf://bowman_lstm", for_upload=True).handle == "bowman_lstm"
    for bad in ("hf://bowman_lstm", "hf://a/b/c", "kaggle://someone/model", "kaggle://a/b/keras/c/latest",
                "s3://bucket/preset", "hf://some one/x"):
        with pytest.raises(PresetError) as error:
            parse_uri(bad)
        assert bad in one_line(error)
    with pytest.raises(PresetError):
        parse_uri("kaggle://a/b/keras/c/2", for_upload=True)  # the hub numbers the versions


@pytest.mark.parametrize("uri", ["hf://someone/nli-zoo-test-preset", "kaggle://someone/nli-zoo/keras/test_preset"])
def test_loading_from_a_hub_offline_is_one_line(offline, uri):
    with pytest.raises(HubUnreachableError) as error:
        from_preset(uri)
    message = one_line(error)
    assert uri in message and "could not be reached" in message


@pytest.mark.parametrize("uri", ["hf://someone/nli-zoo-test-preset", "kaggle://someone/nli-zoo/keras/test_preset"])
def test_uploading_offline_is_one_line(offline, preset_dir, uri):
    with pytest.raises(HubUnreachableError) as error:
        upload_preset(preset_dir, uri)
    message = one_line(error)
    assert uri in message and "could not be reached" in message


def test_a_damaged_preset_is_not_uploaded(offline, copy_of):
    preset = copy_of()
    flip_byte(preset / "model.weights.h5")
    with pytest.raises(PresetIntegrityError) as error:
        upload_preset(str(preset), "hf://someone/nli-zoo-test-preset")
    assert "model.weights.h5" in one_line(error)


def test_a_missing_hub_client_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    with pytest.raises(HubClientMissingError) as error:
        from_preset("hf://someone/nli-zoo-test-preset")
    assert "pip install huggingface_hub" in one_line(error)
