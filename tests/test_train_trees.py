"""train.py with tree models: parse trees fed from the data, and the HIM ensemble of two finished runs.

The HIM runs use `esim_tree` (complete binary trees, built in-model) as the tree member: fitting the
syntactic model end to end is covered by tests/test_tree_models.py, and tracing its 48-level loop in a
full `train.py` run costs minutes (see the README's notes on the tree models).
"""

import numpy as np
import pytest

import train as train_script
import zoo
from tests.support.runs import ONE_SHAPE, TINY
from zoo.commands.train import build_parser, run_config
from zoo.data.snli import load_snli
from zoo.data.tokenizer import Tokenizer
from zoo.data.vocab import Vocabulary
from zoo.runs import datasets as inputs


def tiny(model, run_dir, *extra):
    return ["--model", model, *TINY, "--run-dir", str(run_dir), "--epochs", "1", *extra]


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    root = tmp_path_factory.mktemp("members")
    no_images = ("--attention-examples", "0")  # the members' images are not what these tests look at
    esim = train_script.main(tiny("esim", root / "esim", *ONE_SHAPE, *no_images))
    tree = train_script.main(tiny("esim_tree", root / "tree", *ONE_SHAPE, *no_images))
    return root, esim, tree


def test_syntactic_models_get_the_parse_trees(capsys):
    args = build_parser().parse_args(["--model", "syntactic_tree_lstm"])
    settings = run_config(args).settings
    splits, _ = load_snli("snli_sample")
    test = splits["test"][:40]
    tokenizer = Tokenizer(lowercase=settings.data.lowercase)
    vocab = Vocabulary.build(inputs.tokenize_sentences(tokenizer, splits["train"][:40]))
    batches = inputs.make_model_batches(test, vocab, tokenizer, settings, report_trees="test")
    features, labels, weights = next(iter(batches))
    for key in ("premise", "hypothesis"):
        ids, tree = features[key].numpy(), features[f"{key}_tree"].numpy()
        assert tree.shape == (ids.shape[0], 2 * ids.shape[1] - 1, 3)
        real_words = (ids != 0).sum(1)
        filler = weights.numpy() == 0  # the rows filling the batch up: empty sentences, no node at all
        assert filler.any() and not real_words[filler].any()
        assert np.array_equal((tree[..., 2] >= 0).sum(1), np.where(filler, 0, 2 * real_words - 1))  # 2n - 1 real nodes
    # Every shipped row has a parse whose leaves match the tokenizer: nothing falls back.
    assert "0 sentence(s) without a usable parse" in capsys.readouterr().out


@pytest.mark.large
def test_him_combines_two_runs_and_reports_each_member(members):
    root, esim, tree = members
    him = train_script.main(["--model", "him", "--members", str(root / "esim"), str(root / "tree"),
                             "--dataset", "snli_sample", "--max-eval-examples", "32",
                             "--run-dir", str(root / "him")])
    test = him.results.test
    # Each member, inside the ensemble, scores exactly what its own run scored.
    assert test["members"]["esim"]["accuracy"] == esim.results.test["accuracy"]
    assert test["members"]["tree"]["accuracy"] == tree.results.test["accuracy"]
    # The ensemble's probabilities are the mean of the members' (Chen et al. §3.3).
    run = zoo.load(root / "him")
    assert run.settings.model["trees"] == "complete"
    inputs = run.encode([("A man is playing a guitar.", "A person plays music."),
                         ("Two dogs run in the snow.", "Cats sleep.")])
    out = run.model.explain(inputs)
    mean = (np.asarray(out["esim_probabilities"]) + np.asarray(out["tree_probabilities"])) / 2
    np.testing.assert_allclose(np.asarray(out["probabilities"]), mean, atol=1e-6)


@pytest.mark.large
def test_members_in_the_wrong_order_are_refused(members, capsys):
    root, _, _ = members
    with pytest.raises(SystemExit) as exit_info:
        train_script.main(["--model", "him", "--members", str(root / "tree"), str(root / "esim"),
                           "--dataset", "snli_sample", "--run-dir", str(root / "wrong")])
    assert exit_info.value.code == 2
    assert "esim run, then a syntactic_tree_lstm" in capsys.readouterr().err
