"""TensorBoard images of the attention callback for models with extra maps: the match-LSTM's gates,
Luo et al.'s unmatchedness column (their Figure 1), and tree-node attention."""

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.support import models as tc
from zoo.training.callbacks import AttentionImages
from zoo.training.callbacks.images import EveryNthEpoch


def image_tags(model, tmp_path):
    batch = tc.random_pairs(batch=2)
    tokens = lambda ids: [[f"w{t}" for t in row if t] for row in ids]  # noqa: E731
    callback = AttentionImages(str(tmp_path), batch, tokens(batch["premise"]), tokens(batch["hypothesis"]),
                               ["neutral", "entailment"], every=1)
    callback.set_model(model)
    callback.on_epoch_end(0)
    events = EventAccumulator(str(tmp_path / "images"), size_guidance={"tensors": 0})
    events.Reload()
    return sorted(events.Tags()["tensors"])


@pytest.mark.parametrize("name, expected", [
    ("mlstm", ["attention/pair_0", "attention/pair_1", "gates/pair_0", "gates/pair_1"]),
    ("luo_unmatched_append", ["attention/pair_0", "attention/pair_1"]),
    ("esim_tree", ["attention/pair_0", "attention/pair_1"]),
])
def test_images_are_written(name, expected, tmp_path):
    assert image_tags(tc.make_model(name), tmp_path) == expected


def test_unmatchedness_column_is_drawn(monkeypatch, tmp_path):
    drawn = []
    import zoo.training.callbacks.images as callbacks

    original = callbacks.plot_attention
    def plot_attention(w, cols, rows, title=""):
        drawn.append((np.asarray(w), cols))
        return original(w, cols, rows, title)

    monkeypatch.setattr(callbacks, "plot_attention", plot_attention)
    model = tc.make_model("luo_unmatched_append")
    image_tags(model, tmp_path)
    weights, columns = drawn[0]
    assert columns[-1] == "u"
    u = weights[:, -1]
    premise_length = len(columns) - 1
    assert np.all(u >= 1.0 / premise_length - 1e-6) and np.all(u <= 1.0 + 1e-6)


@pytest.mark.parametrize("every, epochs, drawn", [(3, 7, [2, 5, 6]), (3, 6, [2, 5]), (1, 2, [0, 1]), (5, 2, [1]),
                                                  (0, 4, [])])
def test_images_are_drawn_every_nth_epoch_and_after_the_last(every, epochs, drawn):
    """`--images-every N`: after epochs N, 2N, ... (1-based) and once more at the end for a last epoch not
    drawn yet, so that a run always ends with the images of its final weights; 0 draws none."""
    class Recorder(EveryNthEpoch):
        def draw(self, epoch):
            seen.append(epoch)

    seen = []
    callback = Recorder(every)
    for epoch in range(epochs):
        callback.on_epoch_end(epoch)
    callback.on_train_end()
    assert seen == drawn
