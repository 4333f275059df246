"""Tests of zoo.data.corpora: MultiNLI, SICK, any NLI file, roles, errors and the command-line strings.

The fixtures in tests/fixtures/ were written for these tests (tests/fixtures/make_fixtures.py); malformed
variants are written to tmp_path. Nothing is downloaded: MultiNLI from tensorflow-datasets is tested offline.
"""

import json
import os
import shutil
import socket
import time
import zipfile

import pytest

from zoo.data import LABELS, snli
from zoo.data.corpora import DEFAULT_ROLES, by_role, describe, load_corpus, parse_fields, parse_labels, parse_roles
from zoo.data.readers import DataFormatError, DataUnavailableError

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
MULTINLI = os.path.join(FIXTURES, "multinli_1.0")
SICK = os.path.join(FIXTURES, "sick", "SICK.txt")
NLI_FILES = os.path.join(FIXTURES, "nli_files")
BREAKING = os.path.join(FIXTURES, "breaking_nli", "dataset.jsonl")
CUSTOM = os.path.join(FIXTURES, "nli_custom")
E, N, C = range(3)
EXAMPLE_KEYS = {"premise", "hypothesis", "label", "pair_id", "premise_binary_parse", "hypothesis_binary_parse"}


def _strip_raw(splits):
    return {s: [{k: v for k, v in ex.items() if k != "raw"} for ex in examples] for s, examples in splits.items()}


# ---------------------------------------------------------------- MultiNLI

@pytest.fixture(scope="module")
def multinli():
    return load_corpus(MULTINLI)


def test_multinli_folder(multinli):
    splits, report = multinli
    assert list(splits) == ["train", "dev_matched", "dev_mismatched"]
    assert report["corpus"] == "multi_nli" and report["source"] == MULTINLI
    assert report["rows"] == {"train": 6, "dev_matched": 3, "dev_mismatched": 3}
    assert report["skipped"] == {"train": {"no_gold_label": 0}, "dev_matched": {"no_gold_label": 1},
                                 "dev_mismatched": {"no_gold_label": 1}}
    assert report["roles"] == {"train": "train", "validation": "dev_matched", "test": "dev_mismatched"}
    assert report["has_parses"] is True
    assert report["genres"] == ["facetoface", "fiction", "government", "letters", "slate", "telephone", "travel",
                                "verbatim"]
    assert all(set(ex) == EXAMPLE_KEYS | {"genre"} and ex["genre"] for s in splits.values() for ex in s)
    ex = splits["train"][4]
    assert ex["premise"] == 'The guide said "take the left path" twice.'
    assert (ex["label"], ex["pair_id"], ex["genre"]) == (N, "1005n", "travel")
    assert ex["premise_binary_parse"] == ("( ( ( ( The guide ) said ) ( ( `` take ) the ) ) "
                                         "( ( ( left path ) '' ) ( twice . ) ) )")
    assert ex["hypothesis_binary_parse"] == "( ( ( The left ) path ) ( ( is shorter ) . ) )"
    assert [ex["label"] for ex in splits["dev_mismatched"]] == [N, C, E]
    assert [ex["genre"] for ex in splits["dev_mismatched"]] == ["letters", "verbatim", "facetoface"]
    assert report["files"]["dev_matched"].endswith("multinli_1.0_dev_matched.jsonl")


def test_multinli_zip_txt_and_parent_read_the_same(multinli, tmp_path):
    splits, _ = multinli
    zipped, report = load_corpus(os.path.join(FIXTURES, "multinli_1.0.zip"))  # has __MACOSX/._* members
    assert zipped == splits and report["rows"] == multinli[1]["rows"]
    assert report["files"]["train"].endswith("multinli_1.0.zip/multinli_1.0/multinli_1.0_train.jsonl")
    txt = tmp_path / "multinli_1.0"  # the tab-separated release files only, in a parent folder
    txt.mkdir()
    for name in os.listdir(MULTINLI):
        if name.endswith(".txt"):
            shutil.copy(os.path.join(MULTINLI, name), txt / name)
    from_txt, report = load_corpus(str(tmp_path))
    assert from_txt == splits and report["corpus"] == "multi_nli"
    assert report["files"]["train"].endswith("multinli_1.0_train.txt")


def test_multinli_single_file_is_the_test_split():
    splits, report = load_corpus(os.path.join(MULTINLI, "multinli_1.0_dev_mismatched.jsonl"))
    assert report["corpus"] == "multi_nli" and list(splits) == ["dev_mismatched"]
    assert report["roles"] == {"train": None, "validation": None, "test": "dev_mismatched"}
    assert report["genres"] == ["facetoface", "letters", "verbatim"]
    with pytest.raises(DataUnavailableError, match=r"no train split \(a single file .*--roles train=SPLIT"):
        by_role(splits, report)
    assert by_role(splits, report, required=("test",)) == {"test": splits["dev_mismatched"]}


def test_parses_feed_the_tree_models(multinli):
    from zoo.data.tokenizer import Tokenizer
    from zoo.data.trees import example_trees

    for examples in multinli[0].values():  # every MultiNLI parse matches its sentence's tokens
        assert example_trees(examples, Tokenizer(), on_error="raise")[2]["fallback_complete"] == 0
    sick = load_corpus(SICK)[0]["train"]  # SICK has no parses: complete trees, counted
    assert example_trees(sick, Tokenizer(), on_error="complete")[2]["fallback_complete"] == 2 * len(sick)


def test_roles_override_and_by_role(multinli):
    splits, report = multinli
    data = by_role(splits, report)
    assert data == {"train": splits["train"], "validation": splits["dev_matched"], "test": splits["dev_mismatched"]}
    for roles in ({"validation": "dev_mismatched", "test": "dev_matched"},
                  "dev=validation_mismatched, test=dev_matched"):  # dev_* and validation_* are interchangeable
        _, swapped = load_corpus(MULTINLI, roles=roles)
        assert swapped["roles"] == {"train": "train", "validation": "dev_mismatched", "test": "dev_matched"}
    _, report = load_corpus(MULTINLI, roles="test=none")
    assert report["roles"]["test"] is None
    assert "test" not in by_role(splits, report, required=("train", "validation"))
    with pytest.raises(ValueError, match="no split 'dev'.*train, dev_matched, dev_mismatched"):
        load_corpus(MULTINLI, roles={"validation": "dev"})
    with pytest.raises(ValueError, match="unknown role 'eval'"):
        load_corpus(MULTINLI, roles={"eval": "train"})
    empty = dict(splits, dev_matched=[])
    with pytest.raises(DataUnavailableError, match="validation split 'dev_matched' .* no labelled pairs"):
        by_role(empty, multinli[1])


def test_describe_lines(multinli):
    lines = describe(multinli[1])
    assert lines[0] == (f"multi_nli from {MULTINLI}: train 6 pairs, dev_matched 3 pairs (1 skipped: no gold label), "
                        "dev_mismatched 3 pairs (1 skipped: no gold label)")
    assert lines[1] == "roles: train=train, validation=dev_matched, test=dev_mismatched"
    assert lines[2].startswith("binary parses: yes; genres: 8 (facetoface, fiction")


def test_multinli_tfds_fails_fast_offline(monkeypatch, tmp_path):
    def no_network(*args, **kwargs):
        raise OSError("network unreachable (simulated)")

    monkeypatch.setattr(socket, "create_connection", no_network)
    start = time.monotonic()
    with pytest.raises(DataUnavailableError) as info:
        load_corpus("multi_nli", data_dir=str(tmp_path / "tfds"))
    assert time.monotonic() - start < 10
    message = str(info.value)
    assert "\n" not in message and "cims.nyu.edu cannot be reached" in message
    assert "--data-dir" in message and "multinli_1.0" in message


def test_multinli_tfds_mock_roles(monkeypatch, tmp_path):
    import tensorflow as tf
    import tensorflow_datasets as tfds

    def as_dataset(self, split, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices({"premise": ["A man sleeps.", "A dog runs."],
                                                   "hypothesis": ["A man rests.", "A cat sleeps."],
                                                   "label": tf.constant([0, 2], tf.int64)})

    monkeypatch.setattr(snli, "_host_reachable", lambda *a, **k: True)
    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        splits, report = load_corpus("multi_nli", data_dir=str(tmp_path))
    assert list(splits) == ["train", "validation_matched", "validation_mismatched"]
    assert report["roles"] == DEFAULT_ROLES["multi_nli_tfds"]
    assert report["rows"] == {"train": 2, "validation_matched": 2, "validation_mismatched": 2}
    assert report["has_parses"] is False and report["genres"] == []
    assert any("keeps no genres" in note for note in report["notes"])
    assert [(ex["premise"], ex["label"]) for ex in splits["validation_mismatched"]] == [("A man sleeps.", 0),
                                                                                       ("A dog runs.", 2)]


# ---------------------------------------------------------------- SICK

def test_sick_file_and_folder():
    splits, report = load_corpus(SICK)
    assert load_corpus(os.path.dirname(SICK))[0] == splits
    assert report["corpus"] == "sick" and list(splits) == ["train", "trial", "test"]
    assert report["rows"] == {"train": 4, "trial": 2, "test": 3}
    assert report["roles"] == {"train": "train", "validation": "trial", "test": "test"}
    assert report["has_parses"] is False and any("complete binary trees" in n for n in report["notes"])
    assert [(ex["pair_id"], ex["label"]) for ex in splits["train"]] == [("1", E), ("2", N), ("6", C), ("13", N)]
    ex = splits["test"][0]
    assert set(ex) == EXAMPLE_KEYS and ex["premise_binary_parse"] == ""
    assert (ex["premise"], ex["hypothesis"]) == ("Two dogs are running in the snow", "No dogs are running in the snow")


def test_sick_errors(tmp_path):
    with open(SICK, encoding="utf-8") as f:
        lines = f.read().splitlines()
    bad = tmp_path / "SICK.txt"
    bad.write_text("\n".join(lines[:3] + [lines[3].replace("\tTEST", "\tDEV")]) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"SICK\.txt:4: field 'SemEval_set' is 'DEV', expected one of TRAIN"):
        load_corpus(str(bad))
    bad.write_text("\n".join(lines[:2] + [lines[2].replace("NEUTRAL", "UNRELATED")]) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"SICK\.txt:3: unknown label 'UNRELATED' in field 'entailment_label'; "
                                              r"known labels: entailment, neutral, contradiction"):
        load_corpus(str(bad))
    splits, report = load_corpus(str(bad), labels="unrelated=neutral")  # a label mapping fixes it
    assert splits["train"][1]["label"] == N and report["labels"] == {"unrelated": "neutral"}


# ---------------------------------------------------------------- any NLI file

def test_folder_of_jsonl_tsv_csv():
    splits, report = load_corpus(NLI_FILES)
    assert report["corpus"] == "file" and list(splits) == ["train", "dev", "test"]
    assert report["roles"] == {"train": "train", "validation": "dev", "test": "test"}
    assert report["rows"] == {"train": 3, "dev": 3, "test": 2}
    assert report["skipped"] == {"train": {"no_gold_label": 2}, "dev": {"no_gold_label": 0},
                                 "test": {"no_gold_label": 1}}
    assert [ex["label"] for ex in splits["train"]] == [E, N, C]  # "Contradiction": labels match in any case
    assert splits["dev"][0]["premise"] == 'He wrote "yes" on the form .'  # TSV: quotes are text
    assert splits["test"][0]["premise"] == 'Yes, she said, "of course".'  # CSV: quoted fields
    assert splits["test"][1]["pair_id"].endswith("test.csv:3")  # no id field: FILE:LINE
    assert any("not read" in n and "README.md" in n for n in report["notes"])
    assert "genre" not in splits["train"][0] and report["has_parses"] is False


def test_zip_of_nli_files(tmp_path):
    archive = tmp_path / "mine.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in ("train.jsonl", "dev.tsv", "test.csv"):
            z.write(os.path.join(NLI_FILES, name), f"mine/{name}")
    splits, report = load_corpus(str(archive))
    assert splits == load_corpus(NLI_FILES)[0] and report["roles"]["validation"] == "dev"
    assert report["files"]["dev"] == f"{archive}/mine/dev.tsv"


def test_breaking_nli_like_single_file():
    splits, report = load_corpus(BREAKING)
    assert report["corpus"] == "file" and list(splits) == ["dataset"]
    assert report["roles"] == {"train": None, "validation": None, "test": "dataset"}
    assert [(ex["pair_id"], ex["label"]) for ex in splits["dataset"]] == [("1", C), ("2", E), ("3", C), ("4", C),
                                                                           ("5", N)]
    assert "genre" not in splits["dataset"][0]
    splits, report = load_corpus(BREAKING, fields="genre=category")  # categories as genres, for a breakdown
    assert [ex["genre"] for ex in splits["dataset"]][:2] == ["antonyms", "synonyms"]
    assert report["fields"]["genre"] == "category" and len(report["genres"]) == 5


def test_field_and_label_mappings():
    csv_path = os.path.join(CUSTOM, "pairs.csv")
    fields = "premise=text_a, hypothesis=text_b, label=verdict, pair_id=id, genre=topic"
    with pytest.raises(DataFormatError, match=r"pairs\.csv:2: unknown label 'entails' in field 'verdict'.*"
                                              r"--labels entails=entailment"):
        load_corpus(csv_path, fields=fields)
    splits, report = load_corpus(csv_path, fields=parse_fields(fields),
                                 labels=parse_labels("entails=entailment,contradicts=2,unknown=Neutral"))
    assert [(ex["pair_id"], ex["label"], ex["genre"]) for ex in splits["pairs"]] == [
        ("c1", E, "transport"), ("c2", C, "transport"), ("c3", N, "food"), ("c4", E, "food")]
    assert report["labels"] == {"entails": "entailment", "contradicts": "contradiction", "unknown": "neutral"}
    assert report["fields"]["premise"] == "text_a"

    numeric = os.path.join(CUSTOM, "numeric.jsonl")
    with pytest.raises(DataFormatError, match=r"numeric\.jsonl:1: .*'sentence1' \(premise\).*"
                                              r"--fields premise=premise,hypothesis=hypothesis,label=label"):
        load_corpus(numeric)
    same = "premise=premise,hypothesis=hypothesis,label=label"
    with pytest.raises(DataFormatError, match=r"numeric\.jsonl:1: unknown label 0 .*numbers need their meaning"):
        load_corpus(numeric, fields=same)
    splits, report = load_corpus(numeric, fields=same, labels="0=entailment,1=neutral,2=contradiction")
    assert [ex["label"] for ex in splits["numeric"]] == [E, C, N]
    assert report["skipped"]["numeric"] == {"no_gold_label": 1}  # label -1: no gold label
    splits, _ = load_corpus(numeric, fields=same, labels={0: 2, 1: 1, 2: 0})  # ints, reversed
    assert [ex["label"] for ex in splits["numeric"]] == [C, E, N]


def test_named_field_must_exist():
    with pytest.raises(DataFormatError, match=r"dataset\.jsonl:1: missing or non-string field 'topic' \(genre\)"):
        load_corpus(BREAKING, fields="genre=topic")


# ---------------------------------------------------------------- malformed files

def _write(path, text, mode="w"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


GOOD = {"sentence1": "A man sleeps .", "sentence2": "A man rests .", "gold_label": "entailment"}


@pytest.mark.parametrize("name, text, pattern", [
    ("bad.jsonl", json.dumps(GOOD) + "\n\n" + '{"sentence1": "A"\n', r"bad\.jsonl:3: invalid JSON"),
    ("bad.json", "[" + json.dumps(GOOD) + ",\n" + json.dumps(GOOD) + "]\n", r"bad\.json:1: .*JSON lines"),
    ("bad.jsonl", json.dumps(GOOD) + "\n" + json.dumps(["a", "b"]) + "\n", r"bad\.jsonl:2: expected a JSON object"),
    ("one_line.json", json.dumps([GOOD, GOOD]) + "\n",
     r"one_line\.json:1: expected a JSON object, got list; .*JSON lines"),
    ("bad.jsonl", json.dumps(dict(GOOD, sentence2=7)) + "\n", r"bad\.jsonl:1: missing or non-string field 'sentence2'"),
    ("bad.jsonl", json.dumps({k: v for k, v in GOOD.items() if k != "gold_label"}) + "\n",
     r"bad\.jsonl:1: missing or non-string field 'gold_label' \(label\)"),
    ("bad.jsonl", json.dumps(dict(GOOD, gold_label="entails")) + "\n",
     r"bad\.jsonl:1: unknown label 'entails' in field 'gold_label'; known labels: entailment, neutral, contradiction"),
    ("bad.jsonl", json.dumps(dict(GOOD, gold_label=True)) + "\n", r"bad\.jsonl:1: unknown label True"),
    ("bad.tsv", "sentence1\tsentence2\tgold_label\na\tb\tneutral\na\tb\tneutral\textra\n",
     r"bad\.tsv:3: 4 tab-separated fields, header has 3"),
    ("bad.tsv", "sentence1\tsentence2\tgold_label\na\tb\n", r"bad\.tsv:2: missing or non-string field 'gold_label'"),
    ("bad.tsv", "", r"bad\.tsv:1: empty file"),
    ("bad.csv", "sentence1,sentence1,gold_label\na,b,neutral\n",
     r"bad\.csv:1: the header names field 'sentence1' twice"),
    ("bad.csv", "premise,hypothesis,gold_label\na,b,neutral\n",
     r"bad\.csv:2: missing or non-string field 'sentence1' \(premise\)"
     r".*--fields premise=premise,hypothesis=hypothesis"),
])
def test_malformed_rows_name_file_line_and_field(tmp_path, name, text, pattern):
    with pytest.raises(DataFormatError, match=pattern):
        load_corpus(_write(tmp_path / name, text))


def test_malformed_row_in_a_split_folder_or_zip(tmp_path):
    folder = tmp_path / "multinli_1.0"
    shutil.copytree(MULTINLI, folder)
    with open(folder / "multinli_1.0_dev_matched.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(dict(GOOD, gold_label="maybe", genre="slate")) + "\n")
    with pytest.raises(DataFormatError, match=r"multinli_1\.0_dev_matched\.jsonl:5: unknown label 'maybe'"):
        load_corpus(str(folder))
    archive = tmp_path / "multinli_1.0.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in os.listdir(folder):
            z.write(folder / name, f"multinli_1.0/{name}")
    with pytest.raises(DataFormatError, match=r"multinli_1\.0\.zip/multinli_1\.0/multinli_1\.0_dev_matched\.jsonl:5: "):
        load_corpus(str(archive))
    record = json.loads((folder / "multinli_1.0_train.jsonl").read_text(encoding="utf-8").splitlines()[0])
    del record["genre"]  # MultiNLI keeps genre on every example: a record without one is malformed
    (folder / "multinli_1.0_train.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"multinli_1\.0_train\.jsonl:1: .*'genre'"):
        load_corpus(str(folder))


def test_not_utf8_names_the_line(tmp_path):
    path = _write(tmp_path / "latin1.tsv", "sentence1\tsentence2\tgold_label\n".encode() + b"caf\xe9\tb\tneutral\n",
                  mode="wb")
    with pytest.raises(DataFormatError, match=r"latin1\.tsv:2: not UTF-8"):
        load_corpus(path)


def test_bom_and_crlf_are_read(tmp_path):
    path = _write(tmp_path / "win.csv", b"\xef\xbb\xbfsentence1,sentence2,gold_label\r\na,b,neutral\r\n", mode="wb")
    splits, _ = load_corpus(path)
    assert splits["win"][0]["premise"] == "a" and splits["win"][0]["label"] == N


# ---------------------------------------------------------------- unknown layouts and sources

def test_unknown_paths_and_layouts(tmp_path):
    with pytest.raises(DataUnavailableError, match=r"missing path .*'snli', 'snli_sample', 'multi_nli'"):
        load_corpus(str(tmp_path / "nowhere"))
    _write(tmp_path / "misc" / "notes.md", "hello")
    _write(tmp_path / "misc" / "pairs.jsonl", json.dumps(GOOD) + "\n")
    with pytest.raises(DataUnavailableError, match=r"no known data layout.*train\.\*.*found: notes\.md, pairs\.jsonl"):
        load_corpus(str(tmp_path / "misc"))
    with pytest.raises(DataUnavailableError, match=r"not a known data file"):
        load_corpus(_write(tmp_path / "vectors.bin", "x"))
    _write(tmp_path / "two" / "dev.jsonl", json.dumps(GOOD) + "\n")
    _write(tmp_path / "two" / "validation.tsv", "sentence1\tsentence2\tgold_label\n")
    with pytest.raises(DataUnavailableError, match=r"several validation files \(dev\.jsonl, validation\.tsv\)"):
        load_corpus(str(tmp_path / "two"))
    shutil.copytree(MULTINLI, tmp_path / "both" / "multinli_1.0")
    (tmp_path / "both" / "snli_1.0").mkdir()
    with pytest.raises(DataUnavailableError, match=r"several corpora \(snli_1\.0, multinli_1\.0\)"):
        load_corpus(str(tmp_path / "both"))
    _write(tmp_path / "partial" / "multinli_1.0_train.jsonl", "")
    with pytest.raises(DataUnavailableError, match=r"neither multinli_1\.0_dev_matched\.jsonl nor"):
        load_corpus(str(tmp_path / "partial"))


def test_snli_through_load_corpus(tmp_path):
    splits, report = load_corpus("snli_sample")
    assert (report["corpus"], report["roles"]) == ("snli", DEFAULT_ROLES["snli"])
    assert report["skipped"] == {"train": {"no_gold_label": 12}, "validation": {"no_gold_label": 1},
                                 "test": {"no_gold_label": 3}}
    assert splits == snli.load_snli("snli_sample")[0] and report["has_parses"] is True
    shutil.copytree(snli.SAMPLE_DIR, tmp_path / "snli_1.0")
    from_path, report = load_corpus(str(tmp_path))  # the parent of snli_1.0
    assert from_path == splits and report["corpus"] == "snli"
    assert report["files"]["test"].endswith("snli_1.0_test.jsonl")
    with pytest.raises(ValueError, match="fields and labels apply to files"):
        load_corpus("snli_sample", fields="premise=a")


def test_keep_raw(tmp_path):
    splits, _ = load_corpus(SICK, keep_raw=True)
    assert splits["train"][0]["raw"]["relatedness_score"] == "4.5"
    assert _strip_raw(splits) == load_corpus(SICK)[0]


# ---------------------------------------------------------------- command-line strings

def test_parse_fields():
    assert parse_fields("premise=sentence1, hypothesis=sentence2,label=gold_label") == {
        "premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"}
    assert parse_fields("genre=category,premise_binary_parse=") == {"genre": "category", "premise_binary_parse": None}
    for text, pattern in [("premis=a", "unknown target 'premis'; targets: premise, hypothesis"),
                          ("premise", "expected NAME=VALUE"), ("premise=a,premise=b", "'premise' is given twice"),
                          ("label=", "'label' needs a field name, e.g. label=gold_label"), (" , ", "empty")]:
        with pytest.raises(ValueError, match=f"--fields: {pattern}"):
            parse_fields(text)


def test_parse_labels_and_roles():
    assert parse_labels("entails=entailment, 0=NEUTRAL, c=2") == {"entails": "entailment", "0": "neutral",
                                                                    "c": "contradiction"}
    for text, pattern in [("entails=yes", "'entails' is mapped to 'yes'"), ("entails=3", "'entails' is mapped to '3'"),
                          ("-=neutral", "'-' means no gold label"), ("=neutral", "expected NAME=VALUE")]:
        with pytest.raises(ValueError, match=f"--labels: {pattern}"):
            parse_labels(text)
    assert parse_roles("dev=dev_mismatched,test=none") == {"validation": "dev_mismatched", "test": None}
    for text, pattern in [("eval=x", "unknown role 'eval'"), ("dev=a,validation=b", "'validation' is given twice")]:
        with pytest.raises(ValueError, match=f"--roles: {pattern}"):
            parse_roles(text)
    assert LABELS == ("entailment", "neutral", "contradiction")


def test_tokens_folder_and_single_file_read_through_the_library(tmp_path):
    from zoo.data.tokens_folder import read_pairs

    folder = tmp_path / "tokens"
    folder.mkdir()
    (folder / "premise.txt").write_text("A man plays .\nTwo dogs run .\nA cat sleeps .\n", encoding="utf-8")
    (folder / "hypothesis.txt").write_text("A person plays .\nAnimals sleep .\nA cat rests .\n", encoding="utf-8")
    (folder / "label.txt").write_text("entailment\ncontradiction\n-\n", encoding="utf-8")
    examples, skipped = read_pairs(str(folder))
    assert [(e["premise"], e["label"]) for e in examples] == [("A man plays .", 0), ("Two dogs run .", 2)]
    assert skipped == 1
    (folder / "label.txt").write_text("entailment\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"label\.txt:2: the file ends here"):
        read_pairs(str(folder))
    single = tmp_path / "pairs.jsonl"
    single.write_text(json.dumps({"sentence1": "A b .", "sentence2": "C d .", "gold_label": "neutral"}) + "\n",
                      encoding="utf-8")
    examples, skipped = read_pairs(str(single))
    assert [(e["premise"], e["hypothesis"], e["label"]) for e in examples] == [("A b .", "C d .", 1)]
