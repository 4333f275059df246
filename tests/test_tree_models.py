"""What the shared harness cannot see: tree models fed parse trees, Paria's published attention, HIM's members and
average."""

import numpy as np
import pytest

import zoo
from tests.support import models as tc
from tests.support.models import parsed_batch
from zoo.data import trees as T


def pad_parsed(batch, extra_premise, extra_hypothesis):
    out = tc.pad(batch, extra_premise, extra_hypothesis)
    for key, extra in (("premise_tree", extra_premise), ("hypothesis_tree", extra_hypothesis)):
        out[key] = np.pad(batch[key], ((0, 0), (0, 2 * extra), (0, 0)), constant_values=-1)
    return out


@pytest.mark.large
def test_syntactic_trees_padding_and_complete_equivalence():
    model = tc.make_model("syntactic_tree_lstm", max_depth=6)
    batch = parsed_batch(tc.random_pairs())
    base = model.explain(batch)
    padded = model.explain(pad_parsed(batch, 3, 2))
    np.testing.assert_allclose(np.asarray(padded["probabilities"]), np.asarray(base["probabilities"]), atol=1e-5)
    rows, cols = base["attention"].shape[1:]
    np.testing.assert_allclose(np.asarray(padded["attention"])[:, :rows, :cols], np.asarray(base["attention"]),
                               atol=1e-5)
    assert tc.check_attention_rows(model, batch) == 2
    # Parses change the prediction; complete trees given as inputs equal the in-model ones.
    ids = {k: batch[k] for k in ("premise", "hypothesis")}
    assert not np.allclose(np.asarray(model(ids)), np.asarray(model(batch)), atol=1e-4)
    complete = dict(ids, **{f"{k}_tree": T.pad_trees([T.complete_tree_arrays(n) for n in (ids[k] != 0).sum(1)],
                                                      length=ids[k].shape[1]) for k in ids})
    np.testing.assert_allclose(np.asarray(model(complete)), np.asarray(model(ids)), atol=1e-5)


@pytest.mark.large
def test_syntactic_tree_lstm_trains_under_xla_with_parses():
    import keras

    model = tc.make_model("syntactic_tree_lstm", max_depth=4)   # trees over <= 5 tokens
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    batch = parsed_batch(tc.random_pairs(batch=8, max_premise=5, max_hypothesis=4))
    labels = np.arange(8) % 3
    losses = [float(model.train_on_batch(batch, labels)) for _ in range(3)]
    assert np.all(np.isfinite(losses))


@pytest.mark.large
def test_esim_tree_reads_full_binary_trees_and_trains_under_xla():
    """`esim_tree`'s preset pads its complete trees (Chen et al., Table 2 row 18); "carried" is the other
    reading, the same model where every length is a power of two."""
    import keras

    assert zoo.get_preset("esim_tree").model["complete_trees"] == "padded"
    batch = tc.random_pairs(batch=8, max_premise=5, max_hypothesis=4)
    padded = tc.make_model("esim_tree")
    carried = tc.make_model("esim_tree", complete_trees="carried")
    carried.set_weights(padded.get_weights())
    assert padded.composition.padded and not carried.composition.padded
    lengths = [(batch["premise"][i] != 0).sum() for i in range(8)]
    differs = ~np.isclose(np.asarray(padded(batch)), np.asarray(carried(batch)), atol=1e-6).all(-1)
    assert differs.any() and not differs[[n in (1, 2, 4) and m in (1, 2, 4) for n, m in
                                          zip(lengths, (batch["hypothesis"] != 0).sum(1))]].any()
    padded.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                   jit_compile=True)
    losses = [float(padded.train_on_batch(batch, np.arange(8) % 3)) for _ in range(3)]
    assert np.all(np.isfinite(losses))


def test_paria_published_attention_is_finite_and_normalised():
    model = tc.make_model("paria_btree", attention="normalized")
    batch = tc.random_pairs()
    outputs = model.explain(batch)
    att = np.asarray(outputs["attention"])
    assert np.all(np.isfinite(att))
    real = np.asarray(outputs["hypothesis_mask"])
    np.testing.assert_allclose(att.sum(-1)[real], 1.0, atol=1e-3)
    empty = tc.random_pairs(batch=2)
    empty["premise"][0] = 0
    assert np.all(np.isfinite(np.asarray(model.explain(empty)["logits"])))


def test_him_members_are_their_presets_with_the_ensembles_settings():
    """HIM's members take their sizes from their own presets (`esim`, `syntactic_tree_lstm`), the ensemble's
    settings over them: ESIM's tanh layers are the `esim` preset's, which HIM's preset does not hold."""
    him = tc.make_unbuilt_model("him", hidden_size=6, dropout=0.25, trees="complete", max_depth=4)
    shared = {"hidden_size": 6, "dropout": 0.25}
    for member, name, settings in ((him.esim, "esim", shared),
                                   (him.tree, "syntactic_tree_lstm",
                                    {**shared, "trees": "complete", "max_depth": 4, "complete_trees": "padded"})):
        preset = zoo.get_preset(name).model
        config = member.get_config()
        assert {key: config[key] for key in preset} == {**preset, **settings}, name
        assert config["vocabulary_size"] == tc.VOCAB and config["embedding_dim"] == him.embedding_dim, name
    esim_layers = zoo.get_preset("esim").model["mlp_layers"]
    assert "mlp_layers" not in zoo.get_preset("him").model and len(him.esim.mlp) == esim_layers


@pytest.mark.large
def test_him_averages_its_members():
    him = tc.make_model("him", trees="complete", max_depth=4)
    batch = tc.random_pairs()
    outputs = him.explain(batch)
    esim_p = np.asarray(him.esim.explain(batch)["probabilities"])
    tree_p = np.asarray(him.tree.explain(batch)["probabilities"])
    np.testing.assert_allclose(np.asarray(outputs["probabilities"]), (esim_p + tree_p) / 2, atol=1e-6)
    clone = type(him).from_members(him.esim, him.tree)
    np.testing.assert_allclose(np.asarray(clone(batch)), np.asarray(him(batch)), atol=1e-6)
    assert him.count_params_without_embeddings() == (him.esim.count_params_without_embeddings()
                                                     + him.tree.count_params_without_embeddings())
