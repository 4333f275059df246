"""Wang & Jiang (2016) specifics: the NULL column, the mLSTM gates, Eq. 6-8 against a NumPy reference,
and the parameter counts at the paper's sizes (the harness in test_models.py covers the rest)."""

import numpy as np
import pytest

import zoo
from tests.support import models as tc


def test_attention_has_a_null_column_first():
    model = tc.make_model("mlstm")
    batch = tc.random_pairs(batch=4)
    batch["premise"][0] = 0                                    # empty premise: only NULL to align with
    out = {k: np.asarray(v) for k, v in model.explain(batch).items()}
    lp = batch["premise"].shape[1]
    assert out["attention"].shape == (4, batch["hypothesis"].shape[1], lp + 1)
    real_rows = batch["hypothesis"][0] != 0
    np.testing.assert_allclose(out["attention"][0, real_rows, 0], 1.0, atol=1e-6)
    assert np.all(out["attention"][1:, :, 0][batch["hypothesis"][1:] != 0] > 0)  # NULL is a real column


@pytest.mark.parametrize("name", ["mlstm", "mlstm_bilstm"])
def test_gates_are_probabilities_and_zero_at_padding(name):
    model = tc.make_model(name)
    batch = tc.random_pairs(batch=5)
    out = {k: np.asarray(v) for k, v in model.explain(batch).items()}
    real = batch["hypothesis"] != 0
    for key in ("input_gate", "forget_gate", "output_gate"):
        gate = out[key]
        assert gate.shape == batch["hypothesis"].shape + (tc.SMALL["hidden_size"],)
        assert np.all(gate[real] > 0) and np.all(gate[real] < 1)
        assert np.all(gate[~real] == 0)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_mlstm_follows_equations_6_to_8():
    """`mlstm_embedding` (h = word vectors) recomputed step by step in NumPy from the model's weights."""
    model = tc.make_model("mlstm_embedding")
    batch = tc.random_pairs(batch=3, seed=3)
    out = {k: np.asarray(v) for k, v in model.explain(batch).items()}
    table = np.asarray(model.embedding.table)
    w = {v.path.split("/")[-2] + "/" + v.path.split("/")[-1]: np.asarray(v) for v in model.weights}
    W_s, W_t = w["W_s/kernel"], w["W_t/kernel"]
    W_a, W_h, b = w["W_m_a/kernel"], w["W_m_t/kernel"], w["W_m_t/bias"]
    W_m, V, w_e = w["match_lstm_cell/W_m"], w["match_lstm_cell/V_m"], w["w_e/w"]
    W_c, b_c = w["classifier/kernel"], w["classifier/bias"]
    d = W_m.shape[0]
    for n in range(3):
        p = batch["premise"][n][batch["premise"][n] != 0]
        hyp = batch["hypothesis"][n][batch["hypothesis"][n] != 0]
        h_s = np.concatenate([np.zeros((1, table.shape[1])), table[p]])        # NULL first
        h_m, c_m = np.zeros(d), np.zeros(d)
        for k, word in enumerate(hyp):
            h_t = table[word]
            e = np.tanh(h_s @ W_s + h_t @ W_t + h_m @ W_m) @ w_e                 # (6)
            alpha = np.exp(e - e.max()) / np.exp(e - e.max()).sum()              # (3)
            a = alpha @ h_s                                                      # (2)
            z = a @ W_a + h_t @ W_h + b + h_m @ V                                # (7)-(8): W [a; h^t]
            i, f, o = _sigmoid(z[:d]), _sigmoid(z[d:2 * d]), _sigmoid(z[2 * d:3 * d])
            c_m = f * c_m + i * np.tanh(z[3 * d:])
            h_m = o * np.tanh(c_m)
            np.testing.assert_allclose(out["attention"][n, k, :len(p) + 1], alpha, atol=1e-5)
            np.testing.assert_allclose(out["input_gate"][n, k], i, atol=1e-5)
            np.testing.assert_allclose(out["forget_gate"][n, k], f, atol=1e-5)
        np.testing.assert_allclose(out["logits"][n], h_m @ W_c + b_c, atol=1e-4)  # from h^m_N


def test_hypothesis_encoding_does_not_see_the_premise():
    """Changing the premise changes neither W^t h^t nor the hypothesis LSTM (not conditioned, §2.2)."""
    model = tc.make_model("mlstm")
    batch = tc.random_pairs(batch=2)
    other = {"premise": np.flip(batch["premise"], 0).copy(), "hypothesis": batch["hypothesis"]}
    h1 = np.asarray(model.hypothesis_encoder(model.embedding(batch["hypothesis"]),
                                             mask=batch["hypothesis"] != 0))
    h2 = np.asarray(model.hypothesis_encoder(model.embedding(other["hypothesis"]),
                                             mask=other["hypothesis"] != 0))
    np.testing.assert_array_equal(h1, h2)
    assert not np.allclose(np.asarray(model(batch)), np.asarray(model(other)))


# |θ|_M at the paper's sizes (300-d GloVe, frozen). Table 1's figures (in the registry) differ: see
# MatchLSTM's docstring and the lead's param table; these pin the structure down.
@pytest.mark.parametrize("name, expected", [
    ("mlstm", 609_303), ("mlstm_300", 2_073_603), ("mlstm_bilstm", 1_104_903),
    ("mlstm_embedding", 1_352_403), ("wang_jiang_wbw", 406_203)])
def test_parameter_counts_at_paper_size(name, expected):
    model = zoo.create_model(name, vocabulary_size=10, embedding_dim=300)
    assert model.count_params_without_embeddings() == expected
    assert zoo.get_preset(name).data.oov == "wang_jiang"
    assert zoo.get_preset(name).train.lr_decay.to_json() == {"type": "exponential", "rate": 0.95, "every_epochs": 1}


def test_gate_statistics_script_on_the_sample():
    import importlib.util
    from pathlib import Path

    from zoo.data.snli import load_snli
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.vocab import Vocabulary

    path = Path(__file__).resolve().parents[1] / "scripts" / "gate_statistics.py"
    spec = importlib.util.spec_from_file_location("gate_statistics", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    examples = load_snli("snli_sample")[0]["test"][:40]
    tokenizer = Tokenizer(lowercase=True)
    vocab = Vocabulary.build([tokenizer.tokenize(e[k]) for e in examples for k in ("premise", "hypothesis")])
    import keras
    keras.utils.set_random_seed(0)
    model = zoo.create_model("mlstm", vocabulary_size=len(vocab), embedding_dim=8, hidden_size=8)
    stats = script.gate_statistics(model, vocab, tokenizer, examples, batch_size=16)
    assert stats["pairs"] == 40
    assert stats["input_gate"]["stop_words"]["count"] > 0 and stats["input_gate"]["content_words"]["count"] > 0
    assert sum(s["count"] for s in stats["forget_gate"].values()) == 40
    for s in stats["forget_gate"].values():
        assert s["mean"] is None or 0 < s["mean"] < 1
    assert "paper" in script.format_report(stats)
    assert {"a", "the", "not", "is"} <= script.STOP_WORDS
