"""Tests of zoo.data: loaders, tokenizer, vocabulary, word vectors, OOV strategies and the tf.data pipeline."""

import gzip
import json
import socket
import time
import zipfile

import numpy as np
import pytest
import tensorflow as tf

from zoo.data import LABELS, snli
from zoo.data.embeddings import build_embedding_matrix, load_vectors
from zoo.data.pipeline import encode_pairs, make_dataset
from zoo.data.snli import DataFormatError, DataUnavailableError, load_snli
from zoo.data.tokenizer import Tokenizer
from zoo.data.vocab import NULL_ID, PAD_ID, UNK_ID, Vocabulary


def _record(label, s1="A man sleeps.", s2="A person rests.", pair_id="1r1e"):
    return {"gold_label": label, "sentence1": s1, "sentence2": s2, "pairID": pair_id, "captionID": "1",
            "sentence1_binary_parse": "( ( A man ) ( sleeps . ) )",
            "sentence2_binary_parse": "( ( A person ) ( rests . ) )"}


def _write_jsonl(directory, split_records):
    directory.mkdir(parents=True, exist_ok=True)
    for infix, records in split_records.items():
        (directory / f"snli_1.0_{infix}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def sample():
    return load_snli("snli_sample")


@pytest.fixture(scope="module")
def sample_vocab(sample):
    tokens = Tokenizer().tokenize_batch([ex[k] for ex in sample[0]["train"] for k in ("premise", "hypothesis")])
    return Vocabulary.build(tokens), tokens


# ---------------------------------------------------------------- loaders

def test_labels():
    assert LABELS == ("entailment", "neutral", "contradiction")


def test_sample_loads_with_dropped_count(sample):
    splits, report = sample
    assert report["source"] == "snli_sample"
    assert report["rows"] == {"train": 988, "validation": 141, "test": 144}
    assert report["dropped_no_gold_label"] == {"train": 12, "validation": 1, "test": 3}
    ex = splits["train"][0]
    assert set(ex) == {"premise", "hypothesis", "label", "pair_id", "premise_binary_parse",
                       "hypothesis_binary_parse"}
    assert ex["premise"] == "Two women are embracing while holding to go packages."
    assert ex["label"] == LABELS.index("neutral") and ex["pair_id"] == "4705552913.jpg#2r1n"
    assert ex["premise_binary_parse"].startswith("( ( Two women )")
    assert all(ex["label"] in (0, 1, 2) for split in splits.values() for ex in split)


def test_jsonl_folder_and_zip(tmp_path):
    records = {"train": [_record("entailment"), _record("-"), _record("contradiction")],
               "dev": [_record("neutral")], "test": [_record("-"), _record("entailment")]}
    folder = _write_jsonl(tmp_path / "snli_1.0", records)
    for source in (tmp_path, folder):  # parent folder or the snli_1.0 folder itself
        splits, report = load_snli(str(source))
        assert report["rows"] == {"train": 2, "validation": 1, "test": 1}
        assert report["dropped_no_gold_label"] == {"train": 1, "validation": 0, "test": 1}
        assert [ex["label"] for ex in splits["train"]] == [0, 2]
    archive = tmp_path / "snli_1.0.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in folder.iterdir():
            z.write(f, f"snli_1.0/{f.name}")
        z.writestr("__MACOSX/snli_1.0/._snli_1.0_train.jsonl", "junk")
    splits, report = load_snli(str(archive), keep_raw=True)
    assert report["dropped_no_gold_label"]["train"] == 1
    assert splits["validation"][0]["raw"]["captionID"] == "1"
    assert splits["validation"][0]["hypothesis_binary_parse"] == "( ( A person ) ( rests . ) )"


def test_txt_files(tmp_path):
    header = ["gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
              "sentence2_parse", "sentence1", "sentence2", "captionID", "pairID", "label1"]
    folder = tmp_path / "snli_1.0"
    folder.mkdir()
    for infix in ("train", "dev", "test"):
        rows = [["neutral", "( a b )", "( c )", "(ROOT)", "(ROOT)", 'He said "hi"', "c", "9", f"{infix}1", "neutral"],
                ["-", "( a )", "( c )", "", "", "a", "c", "9", f"{infix}2", "neutral"]]
        (folder / f"snli_1.0_{infix}.txt").write_text(
            "\n".join("\t".join(r) for r in [header] + rows) + "\n", encoding="utf-8")
    splits, report = load_snli(str(folder))
    assert report["rows"] == {"train": 1, "validation": 1, "test": 1}
    assert report["dropped_no_gold_label"] == {"train": 1, "validation": 1, "test": 1}
    ex = splits["validation"][0]
    assert (ex["premise"], ex["label"], ex["pair_id"], ex["premise_binary_parse"]) == (
        'He said "hi"', 1, "dev1", "( a b )")
    # jsonl is preferred when both are present
    _write_jsonl(folder, {"train": [_record("contradiction")], "dev": [], "test": []})
    splits, _ = load_snli(str(folder))
    assert splits["train"][0]["label"] == 2 and splits["validation"] == []


def test_malformed_lines_name_file_and_line(tmp_path):
    folder = _write_jsonl(tmp_path / "bad", {"train": [_record("neutral")], "dev": [], "test": []})
    lines = [json.dumps(_record("neutral"))] * 16 + ['{"gold_label": "neutral", "sentence1": ']
    (folder / "snli_1.0_dev.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=r"snli_1\.0_dev\.jsonl:17: "):
        load_snli(str(folder))
    bad = _record("neutral")
    del bad["sentence2"]
    _write_jsonl(folder, {"dev": [_record("neutral"), bad]})
    with pytest.raises(DataFormatError, match=r"snli_1\.0_dev\.jsonl:2: .*sentence2"):
        load_snli(str(folder))
    _write_jsonl(folder, {"dev": [_record("maybe")]})
    with pytest.raises(DataFormatError, match=r"snli_1\.0_dev\.jsonl:1: .*maybe"):
        load_snli(str(folder))
    assert issubclass(DataFormatError, ValueError)


def test_missing_path_or_split(tmp_path):
    with pytest.raises(DataUnavailableError):
        load_snli(str(tmp_path / "nowhere"))
    _write_jsonl(tmp_path / "partial", {"train": [_record("neutral")]})
    with pytest.raises(DataUnavailableError, match="snli_1.0_dev"):
        load_snli(str(tmp_path / "partial"))


def test_tfds_mock_drops_unlabelled(monkeypatch, tmp_path):
    import tensorflow_datasets as tfds

    rows = {"premise": ["A man sleeps.", "No gold.", "A dog runs."],
            "hypothesis": ["A man rests.", "Anything.", "A cat sleeps."], "label": [0, -1, 2]}

    def as_dataset(self, split, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices(
            {"premise": rows["premise"], "hypothesis": rows["hypothesis"],
             "label": tf.constant(rows["label"], tf.int64)})

    monkeypatch.setattr(snli, "_host_reachable", lambda *a, **k: True)
    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        splits, report = load_snli("snli", data_dir=str(tmp_path))
    assert report["source"] == "tfds:snli"
    assert report["rows"] == {"train": 2, "validation": 2, "test": 2}
    assert report["dropped_no_gold_label"] == {"train": 1, "validation": 1, "test": 1}
    assert [(ex["premise"], ex["label"]) for ex in splits["test"]] == [("A man sleeps.", 0), ("A dog runs.", 2)]
    assert splits["train"][0]["premise_binary_parse"] == ""


def test_tfds_fails_fast_offline(monkeypatch, tmp_path):
    def no_network(*args, **kwargs):
        raise OSError("network unreachable (simulated)")

    monkeypatch.setattr(socket, "create_connection", no_network)
    start = time.monotonic()
    with pytest.raises(DataUnavailableError) as info:
        load_snli("snli", data_dir=str(tmp_path / "tfds"))
    assert time.monotonic() - start < 10
    assert "--data-dir" in str(info.value) and "--dataset snli_sample" in str(info.value)
    assert issubclass(DataUnavailableError, RuntimeError)


# ---------------------------------------------------------------- tokenizer

@pytest.mark.parametrize("text, tokens", [
    ("The man's dog doesn't bark.", ["The", "man", "'s", "dog", "does", "n't", "bark", "."]),
    ("I can't, won't go.", ["I", "ca", "n't", ",", "wo", "n't", "go", "."]),
    ("Two men are dressed in bikini's.", ["Two", "men", "are", "dressed", "in", "bikini", "'s", "."]),
    ("The dogs' toys!", ["The", "dogs", "'", "toys", "!"]),
    ('He says "hi" (loudly) at 5:30; 1,000 dogs?', ["He", "says", "``", "hi", "''", "-LRB-", "loudly", "-RRB-",
                                                    "at", "5:30", ";", "1,000", "dogs", "?"]),
    ("Dr. Smith lives in the U.S. now, 50% off $5...", ["Dr.", "Smith", "lives", "in", "the", "U.S.", "now", ",",
                                                       "50", "%", "off", "$", "5", "..."]),
    ("A t-shirt is 3.5 ft. long.", ["A", "t-shirt", "is", "3.5", "ft.", "long", "."]),
    ("", []),
    ("   ", []),
    ("Ein Mädchen trägt ein Café-Tuch — naïve.", ["Ein", "Mädchen", "trägt", "ein", "Café-Tuch", "—", "naïve", "."]),
    ("It’s 日本.", ["It", "'s", "日本", "."]),
])
def test_tokenizer_examples(text, tokens):
    assert Tokenizer(lowercase=False).tokenize(text) == tokens


def test_tokenizer_lowercase_and_config():
    tok = Tokenizer()
    assert tok.tokenize("ÜBER Café") == ["über", "café"]
    again = Tokenizer.from_config(json.loads(json.dumps(Tokenizer(lowercase=False).get_config())))
    assert again.lowercase is False


def test_tokenizer_python_equals_graph(sample):
    tok = Tokenizer()
    texts = [ex["premise"] for ex in sample[0]["validation"]] + [ex["hypothesis"] for ex in sample[0]["validation"]]
    texts += ["", "naïve café", "It's"]
    graph_fn = tf.function(lambda t: tok.tf_tokenize(t).to_tensor(default_value="<pad>"))
    graph = [[w.decode() for w in row if w != b"<pad>"] for row in graph_fn(tf.constant(texts)).numpy()]
    assert graph == [tok.tokenize(t) for t in texts]


def test_tokenizer_reproduces_sample_parse_leaves(sample):
    tok = Tokenizer(lowercase=False)
    examples = sample[0]["train"][:300]
    texts = [ex[k] for ex in examples for k in ("premise", "hypothesis")]
    leaves = [[t for t in ex[k + "_binary_parse"].split() if t not in "()"]
              for ex in examples for k in ("premise", "hypothesis")]
    same = sum(a == b for a, b in zip(tok.tokenize_batch(texts), leaves))
    assert same / len(texts) > 0.99


# ---------------------------------------------------------------- vocabulary

def test_vocab_reserved_ids_and_roundtrip(tmp_path):
    vocab = Vocabulary.build([["a", "b", "a"], ["c", "a", "b"], ["d"]], min_count=2)
    assert vocab.words == ["[PAD]", "[UNK]", "[NULL]", "a", "b"]
    assert (PAD_ID, UNK_ID, NULL_ID) == (0, 1, 2)
    assert vocab.ids(["a", "b", "zzz"]) == [3, 4, UNK_ID]
    assert len(Vocabulary.build([["a", "b", "c", "c"]], max_size=4)) == 4
    path = vocab.save(str(tmp_path))
    with open(path, encoding="utf-8") as f:
        assert f.read().splitlines()[:3] == ["[PAD]", "[UNK]", "[NULL]"]
    again = Vocabulary.load(path)
    assert again.words == vocab.words and len(again) == 5
    ids = again.tf_lookup(tf.ragged.constant([["a", "zzz"], []]))
    assert ids.dtype == tf.int32 and ids.to_list() == [[3, UNK_ID], []]
    assert tf.function(again.tf_lookup)(tf.constant(["b"])).numpy().tolist() == [4]


# ---------------------------------------------------------------- word vectors

GLOVE = "the 0.1 0.2 0.3\nman 1.0 1.0 1.0\nsleeps -1 0 1\n"


@pytest.mark.parametrize("kind", ["txt", "gz", "zip", "word2vec"])
def test_load_text_vectors(tmp_path, kind):
    path = tmp_path / f"vectors.{kind if kind != 'word2vec' else 'txt'}"
    if kind == "gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(GLOVE)
    elif kind == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("glove.txt", GLOVE)
    else:
        path.write_text(("3 3\n" if kind == "word2vec" else "") + GLOVE, encoding="utf-8")
    vectors, dim = load_vectors(str(path))
    assert dim == 3 and set(vectors) == {"the", "man", "sleeps"}
    np.testing.assert_allclose(vectors["sleeps"], [-1, 0, 1])
    vectors, _ = load_vectors(str(path), words=["Man"])
    assert set(vectors) == {"man"}


def test_malformed_vector_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text(GLOVE + "dog 1 2\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.txt:4: "):
        load_vectors(str(path))
    path.write_text(GLOVE + "dog 1 2 3 4\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.txt:4: "):
        load_vectors(str(path))


def test_glove_6b_50d_restricted():
    vectors, dim = load_vectors("glove-6b-50d", words=["The", "man", "(", "notawordxyz"])
    assert dim == 50 and set(vectors) == {"the", "man", "("}
    assert vectors["the"].dtype == np.float32 and vectors["the"].shape == (50,)


# ---------------------------------------------------------------- OOV strategies

@pytest.fixture()
def tiny():
    token_lists = [["the", "man", "Sleeps", "zork", "the"], ["a", "b", "c", "d", "e", "zork", "f"]]
    vocab = Vocabulary(["[PAD]", "[UNK]", "[NULL]", "the", "man", "sleeps", "zork", "a", "b", "c", "d", "e", "f"])
    vectors = {w: np.full(2, i, np.float32) for i, w in enumerate(["the", "man", "a", "b", "c", "d", "e", "f"], 1)}
    vectors["Sleeps"] = np.array([9, 9], np.float32)  # the exact (cased) form wins over the lowercased one
    vectors["sleeps"] = np.array([7, 7], np.float32)
    return vocab, vectors, token_lists


def test_rocktaschel_strategy(tiny):
    vocab, vectors, token_lists = tiny
    emb = build_embedding_matrix(vocab, vectors, 2, "rocktaschel", token_lists=token_lists, seed=3)
    assert emb.matrix.dtype == np.float32 and emb.matrix.shape == (13, 2)
    assert emb.tunable_mask.tolist() == [False, True, True, False, False, False, True] + [False] * 6
    assert not emb.matrix[PAD_ID].any()
    oov = emb.matrix[[UNK_ID, NULL_ID, 6]]
    assert (np.abs(oov) <= 0.05).all() and np.abs(oov).max() > 0
    np.testing.assert_array_equal(emb.matrix[4], vectors["man"])
    assert emb.coverage["types_found"] == 9 and emb.coverage["types_total"] == 10
    assert emb.coverage["tokens"] == pytest.approx(9 / 12)  # "Sleeps" is [UNK], "zork" x2


def test_lowercase_fallback():
    vocab = Vocabulary(["[PAD]", "[UNK]", "[NULL]", "Man", "-LRB-"])
    emb = build_embedding_matrix(vocab, {"man": np.ones(2, np.float32), "(": np.full(2, 2.0, np.float32)},
                                 2, "rocktaschel")
    np.testing.assert_array_equal(emb.matrix[3:], [[1, 1], [2, 2]])
    assert emb.coverage["types"] == 1.0 and emb.coverage["tokens"] is None


def test_chen_strategy(tiny):
    vocab, vectors, token_lists = tiny
    emb = build_embedding_matrix(vocab, vectors, 2, "chen", token_lists=token_lists)
    assert emb.tunable_mask.tolist() == [False] + [True] * 12
    assert not emb.matrix[PAD_ID].any() and emb.matrix[6].any()
    big = build_embedding_matrix(Vocabulary(["[PAD]", "[UNK]", "[NULL]"] + [f"w{i}" for i in range(2000)]),
                                 {}, 10, "chen")
    assert abs(big.matrix[1:].std() - 0.01) < 0.0005  # N(0, 0.01^2), the released ESIM code's scale


def test_wang_jiang_window_average(tiny):
    vocab, vectors, token_lists = tiny
    emb = build_embedding_matrix(vocab, vectors, 2, "wang_jiang", token_lists=token_lists)
    assert not emb.tunable_mask.any()
    # "zork": window in sentence 1 = the(1) man(2) Sleeps(->"Sleeps" vector 9) the(1);
    # in sentence 2 = b(4) c(5) d(6) e(7) f(8) ("a" is 5 positions away)
    expected = np.mean([1, 2, 9, 1, 4, 5, 6, 7, 8])
    np.testing.assert_allclose(emb.matrix[6], [expected, expected], rtol=1e-6)
    assert not emb.matrix[[PAD_ID, UNK_ID, NULL_ID]].any()  # never seen in context: zeros
    with pytest.raises(ValueError):
        build_embedding_matrix(vocab, vectors, 2, "wang_jiang")
    with pytest.raises(ValueError):
        build_embedding_matrix(vocab, vectors, 2, "nope")


# ---------------------------------------------------------------- tf.data

def _pairs_examples(pairs):
    return [{"premise": p, "hypothesis": h, "label": i % 3} for i, (p, h) in enumerate(pairs)]


def test_make_dataset_shapes_padding_truncation():
    vocab = Vocabulary.build([["a", "man", "sleeps", "."]])
    examples = _pairs_examples([("A man sleeps.", "A man."), ("", "man"), ("a a a a a a a", "")])
    ds = make_dataset(examples, vocab, Tokenizer(), batch_size=8, bucket=False, max_premise_length=5)
    x, y, w = next(iter(ds))
    assert x["premise"].dtype == tf.int32 and x["hypothesis"].dtype == tf.int32 and y.dtype == tf.int32
    a, man, sleeps, dot = vocab.ids(["a", "man", "sleeps", "."])
    # Premises truncated to 5 (the only premise boundary), hypotheses padded up to the first boundary, 10;
    # the batch is filled up to 8 rows with empty sentences, weighted 0.
    assert x["premise"].numpy().tolist() == [[a, man, sleeps, dot, 0], [0] * 5, [a] * 5] + [[0] * 5] * 5
    assert x["hypothesis"].numpy().tolist() == [[a, man, dot] + [0] * 7, [man] + [0] * 9] + [[0] * 10] * 6
    assert y.numpy().tolist() == [0, 1, 2] + [0] * 5
    assert w.numpy().tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    ds = make_dataset(_pairs_examples([("", "")]), vocab, Tokenizer(), batch_size=2, bucket=False)
    x, _, w = next(iter(ds))
    assert x["premise"].shape == (2, 14) and not x["premise"].numpy().any() and w.numpy().tolist() == [1, 0]


def test_make_dataset_bucketing_keeps_every_example(sample, sample_vocab):
    vocab, _ = sample_vocab
    examples = sample[0]["train"][:300]
    ds = make_dataset(examples, vocab, Tokenizer(), batch_size=16, shuffle=True, seed=1,
                      max_premise_length=30, max_hypothesis_length=12)
    expected = encode_pairs([(ex["premise"], ex["hypothesis"]) for ex in examples], vocab, Tokenizer(),
                            max_premise_length=30, max_hypothesis_length=12)
    want = sorted((tuple(p[p != 0]), tuple(h[h != 0])) for p, h in zip(expected["premise"], expected["hypothesis"]))
    for _ in range(2):  # two epochs, reshuffled
        got, labels = [], 0
        for x, y, w in ds:
            p, h, real = x["premise"].numpy(), x["hypothesis"].numpy(), w.numpy() > 0
            assert p.shape[0] == h.shape[0] == 16 and p.shape[1] in (14, 22, 30) and h.shape[1] in (10, 12)
            got += [(tuple(a[a != 0]), tuple(b[b != 0])) for a, b in zip(p[real], h[real])]
            labels += int(real.sum())
        assert sorted(got) == want and labels == len(examples)


def test_encode_pairs():
    vocab = Vocabulary.build([["a", "man", "'s", "dog", "."]])
    out = encode_pairs([("A man's dog.", ""), ("", "dog cat")], vocab, Tokenizer(), max_premise_length=3)
    assert out["premise"].dtype == np.int32
    assert out["premise"].tolist() == [vocab.ids(["a", "man", "'s"]), [0, 0, 0]]
    assert out["hypothesis"].tolist() == [[0, 0], [vocab.id("dog"), UNK_ID]]
    assert encode_pairs([("", "")], vocab, Tokenizer())["premise"].shape == (1, 1)
