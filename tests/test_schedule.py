"""Training settings as the papers ran them: Chen et al.'s halve-on-plateau schedule (resumable), Adam's
epsilon, Rocktäschel et al.'s ℓ2 strength, and each preset's word vectors."""

import keras
import numpy as np
import pytest

import zoo
from zoo.training import callbacks as cb
from zoo.commands.train import build_parser, run_config
from zoo.training.config import RunConfig
from zoo.runs.optimizer import make_optimizer
from zoo.training.model import make_loss
from zoo.training.losses import NLILoss


class History:
    def __init__(self, epochs=()):
        self.epochs = list(epochs)


def tiny_model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.Adam(0.4), loss="mse")
    return model


def run_epochs(callback, model, accuracies, start=0):
    """Feeds `accuracies` as the dev accuracy of epochs `start`, `start + 1`, ...; returns the learning rates
    the epochs trained with, the weights after each epoch and whether training stopped."""
    rates, kernels = [], []
    for epoch, accuracy in enumerate(accuracies, start):
        callback.on_epoch_begin(epoch)
        rates.append(float(model.optimizer.learning_rate))
        model.layers[0].kernel.assign(np.full((2, 3), float(epoch), "float32"))  # "training" changes the weights
        if accuracy >= max([a for a in accuracies[:epoch - start]] + [-1]):
            model.save_weights(callback.best_path)  # what the ModelCheckpoint before it does on a new best
        logs = {"val_accuracy": accuracy}
        callback.on_epoch_end(epoch, logs)
        callback.history.epochs.append({"epoch": epoch + 1, **logs})
        kernels.append(float(np.asarray(model.layers[0].kernel)[0, 0]))
        if model.stop_training:
            break
    return rates, kernels, model.stop_training


def test_halves_reloads_and_stops_as_the_released_esim_code(tmp_path):
    model = tiny_model()
    callback = cb.HalveOnPlateau(History(), 0.4, str(tmp_path / "best.weights.h5"), max_halvings=2)
    callback.set_model(model)
    rates, kernels, stopped = run_epochs(callback, model, [0.5, 0.6, 0.6, 0.55, 0.7, 0.65, 0.6])
    # A tie (epoch 3) is an improvement; each epoch below the best halves the rate and reloads the best weights.
    assert rates == pytest.approx([0.4, 0.4, 0.4, 0.4, 0.2, 0.2, 0.1])
    assert kernels[3] == 2.0 and kernels[5] == 4.0  # epochs 4 and 6 end with the best epoch's weights
    assert stopped and len(rates) == 7  # the third halving is more than max_halvings=2


def test_a_resumed_run_continues_the_schedule(tmp_path):
    accuracies = [0.5, 0.45, 0.6, 0.55, 0.5, 0.7]
    first = tiny_model()
    whole = cb.HalveOnPlateau(History(), 0.4, str(tmp_path / "a.weights.h5"), max_halvings=None)
    whole.set_model(first)
    rates, _, _ = run_epochs(whole, first, accuracies)
    # Killed after 4 epochs: a new process replays history.json, then trains epochs 5 and 6.
    history = History([{"epoch": e + 1, "val_accuracy": a} for e, a in enumerate(accuracies[:4])])
    second = tiny_model()
    resumed = cb.HalveOnPlateau(history, 0.4, str(tmp_path / "a.weights.h5"), max_halvings=None)
    resumed.set_model(second)
    resumed_rates, _, _ = run_epochs(resumed, second, accuracies[4:], start=4)
    assert resumed_rates == pytest.approx(rates[4:]) and resumed.halvings == whole.halvings == 3


def test_esim_family_presets_use_the_schedule_and_papers_epsilon():
    for name in ("esim", "esim_tree", "syntactic_tree_lstm", "him", "luo_matrix", "luo_unmatched_heuristics"):
        train = zoo.get_preset(name).train
        assert cb.is_plateau_schedule(train.lr_decay) and train.patience == 7 and train.epochs >= 1000
    for name in zoo.list_models():
        assert zoo.get_preset(name).train.epsilon == 1e-8
    optimizer = make_optimizer(zoo.get_preset("esim").train)
    assert float(optimizer.epsilon) == 1e-8 and float(optimizer.global_clipnorm) == 10.0


def test_l2_is_a_setting_of_rocktaschels_presets():
    for name in zoo.list_models("rocktaschel*"):
        args = build_parser().parse_args(["--model", name, "--set", "l2=3e-4"])
        assert run_config(args).train.l2 == 3e-4
    model = zoo.create_model("rocktaschel_wbw", vocabulary_size=20, embedding_dim=4, hidden_size=4)
    loss = make_loss(model, 3e-4)
    penalized = {id(w) for w in loss.penalized}
    assert penalized and not penalized & {id(w) for w in model.embedding.weights}
    y, logits = np.asarray([0, 2]), np.asarray([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], "float32")
    plain = float(NLILoss()(y, logits))
    expected = 3e-4 * sum(float(np.sum(np.square(np.asarray(w)))) for w in loss.penalized)
    assert float(loss(y, logits)) == pytest.approx(plain + expected, rel=1e-5)


def test_each_preset_names_its_papers_vectors():
    expected = {"rocktaschel_wbw": "word2vec-google-news-300", "paria_btree": "word2vec-google-news-300",
                "bowman_lstm": "glove-840b-300d", "mlstm": "glove-840b-300d", "esim": "glove-840b-300d",
                "luo_matrix": "glove-6b-300d"}
    for name, vectors in expected.items():
        assert zoo.get_preset(name).data.embeddings == vectors
    args = build_parser().parse_args(["--model", "esim", "--embeddings", "glove-6b-50d"])
    assert run_config(args).data.embeddings == "glove-6b-50d"


def test_without_network_the_papers_vectors_stop_train_py_at_once(tmp_path, monkeypatch, capsys):
    import time

    import train as train_script
    from zoo.data.vectors import download as vectors

    monkeypatch.setenv("NLI_ZOO_CACHE", str(tmp_path / "cache"))  # nothing cached
    monkeypatch.setattr(vectors, "_host_reachable", lambda *args, **kwargs: False)  # no network
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_:
        train_script.main(["--model", "rocktaschel_wbw", "--dataset", "snli_sample", "--run-dir",
                           str(tmp_path / "run"), "--compile-cache", "none"])
    assert exit_.value.code == 2 and time.monotonic() - started < 30
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "word2vec-google-news-300" in errors[0]
    assert "--embeddings glove-6b-50d" in errors[0] and "--embeddings PATH" in errors[0]
    assert not (tmp_path / "run").exists()  # stopped before the data and the run directory


def test_offline_the_main_job_names_every_offline_option_in_one_message(tmp_path, monkeypatch, capsys):
    import train as train_script
    from zoo.data import readers
    from zoo.data.vectors import download as vectors

    monkeypatch.setenv("NLI_ZOO_CACHE", str(tmp_path / "cache"))  # no vectors cached
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))  # SNLI never downloaded
    monkeypatch.setattr(vectors, "_host_reachable", lambda *args, **kwargs: False)  # no network
    monkeypatch.setattr(readers, "host_reachable", lambda *args, **kwargs: False)
    with pytest.raises(SystemExit) as exit_:
        train_script.main(["--model", "rocktaschel_wbw", "--run-dir", str(tmp_path / "run"), "--compile-cache",
                           "none"])  # the main job: the paper's vectors, tensorflow-datasets SNLI
    assert exit_.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "word2vec-google-news-300" in errors[0] and "'snli'" in errors[0], errors
    assert "--embeddings glove-6b-50d" in errors[0] and "--dataset snli_sample" in errors[0]
    assert "dataset_info.json" not in errors[0] and not (tmp_path / "run").exists()
    # with vectors that need no download, the corpus alone is named, still before any warning
    with pytest.raises(SystemExit):
        train_script.main(["--model", "rocktaschel_wbw", "--embeddings", "none", "--run-dir", str(tmp_path / "run"),
                           "--compile-cache", "none"])
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "--dataset snli_sample" in errors[0] and "--embeddings" not in errors[0], errors


def test_wait_halves_only_after_that_many_epochs_without_improvement(tmp_path):
    model = tiny_model()
    callback = cb.HalveOnPlateau(History(), 0.4, str(tmp_path / "best.weights.h5"), max_halvings=1, wait=2)
    callback.set_model(model)
    rates, kernels, stopped = run_epochs(callback, model, [0.5, 0.4, 0.6, 0.5, 0.55, 0.5, 0.45, 0.4])
    # Epoch 2 misses once (no halving), epoch 3 improves (the count restarts), epochs 4-5 miss twice: halved
    # and reloaded; epochs 6-7 miss twice more: the second halving is more than max_halvings=1.
    assert rates == pytest.approx([0.4, 0.4, 0.4, 0.4, 0.4, 0.2, 0.2])
    assert kernels[1] == 1.0 and kernels[4] == 2.0 and callback.halvings == 2 and stopped


def test_wait_must_be_a_positive_whole_number(tmp_path):
    for wait in (0, 1.5, "2", True):
        with pytest.raises(ValueError, match="wait"):
            cb.HalveOnPlateau(History(), 0.4, str(tmp_path / "b.weights.h5"), wait=wait)
    from zoo.errors import ConfigError

    with pytest.raises(ConfigError, match="lr_decay wait"):
        RunConfig.create("esim", dataset="snli_sample", overrides={
            "lr_decay": {"type": "halve_on_plateau", "factor": 0.5, "wait": 0}})
