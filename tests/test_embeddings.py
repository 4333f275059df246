"""Word vectors by name (download once, checksum, cache, offline error), the word2vec binary reader,
`top` words for vocabulary extension, and the papers' OOV strategies.

Downloads use `file://` URLs of small fixtures (tests/support/vectors.py), or a closed port on 127.0.0.1: never
the network.
"""

import dataclasses
import gzip
import hashlib
import json
import math
import os
import socket
import time
import urllib.request

import numpy as np
import pytest

import zoo
from zoo.data.embeddings import STRATEGIES, build_embedding_matrix, load_vectors
from zoo.data.snli import DataFormatError, DataUnavailableError
from zoo.data.vectors import (CATALOG, ChecksumMismatchError, VectorIndex, VectorSource, fetch_vectors,
                              read_vector_file, resolve_cache_dir)
from zoo.data.vocab import NULL_ID, PAD_ID, UNK_ID, Vocabulary
from zoo.registry import tunable_words_for

from tests.support.vectors import GLOVE, ROWS, fixture_source, forbid_network, write_word2vec_bin


# ---------------------------------------------------------------- readers

@pytest.mark.parametrize("compress", [False, True])
def test_word2vec_binary_reader(tmp_path, compress):
    rows = [("the", [0.25, -1.5, 3.0]), ("naïve", [1.0, 2.0, 3.0]), ("New_York", [0.0, 0.0, -2.0])]
    path = write_word2vec_bin(tmp_path / ("w.bin.gz" if compress else "w.bin"), rows, compress)
    vectors, dim = read_vector_file(path)
    assert dim == 3 and list(vectors) == ["the", "naïve", "New_York"]
    for word, values in rows:
        assert vectors[word].dtype == np.float32
        np.testing.assert_array_equal(vectors[word], np.float32(values))
    vectors, _ = load_vectors(str(path), words=["new_york", "The"])  # lowercase fallback happens later
    assert set(vectors) == {"the"}


def test_word2vec_binary_errors(tmp_path):
    path = write_word2vec_bin(tmp_path / "w.bin", [("a", [1.0, 2.0]), ("b", [3.0, 4.0])], compress=False)
    path.write_bytes(path.read_bytes()[:-6])  # cut inside the last vector
    with pytest.raises(DataFormatError, match=r"w\.bin: record 2: the file ends"):
        read_vector_file(path)
    (tmp_path / "h.bin").write_bytes(b"not a header\n")
    with pytest.raises(DataFormatError, match=r"h\.bin:1: expected the word2vec header"):
        read_vector_file(tmp_path / "h.bin")


def test_text_reader_words_with_spaces_and_duplicates(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text(GLOVE + "man 9 9 9\n", encoding="utf-8")
    vectors, dim = read_vector_file(path)
    assert dim == 3 and "at name@domain.com" in vectors
    np.testing.assert_array_equal(vectors["man"], [1, 1, 1])  # a repeated word keeps its first vector
    path.write_text(GLOVE + "dog 1 x 3\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"v\.txt:7: non-numeric value in the vector of 'dog'"):
        read_vector_file(path)


def test_top_words_in_file_order(tmp_path):
    path = tmp_path / "v.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(GLOVE)
    vectors, _ = load_vectors(str(path), words=["Sleeps", "café"], top=2)
    assert list(vectors) == ["the", ",", "sleeps", "café"]
    vectors, _ = load_vectors(str(path), words=[], top=3)
    assert list(vectors) == ["the", ",", "man"]
    vectors, _ = load_vectors(str(path), words=["man"], top=5)  # a wanted word inside the top is not repeated
    assert list(vectors) == ["the", ",", "man", "sleeps", "at name@domain.com"]
    with pytest.raises(ValueError):
        load_vectors(str(path), top=-1)


def test_top_words_of_glove_6b_50d():
    vectors, dim = load_vectors("glove-6b-50d", words=["zebra"], top=3)
    assert dim == 50 and list(vectors) == ["the", ",", ".", "zebra"]


def test_unknown_name_lists_the_names():
    with pytest.raises(DataUnavailableError, match="glove-840b-300d.*word2vec-google-news-300"):
        load_vectors("glove-999b")


def test_catalog_entries():
    assert set(CATALOG) == {"glove-840b-300d", "glove-6b-300d", "word2vec-google-news-300",
                            "fasttext-crawl-300d-2m"}
    for source in CATALOG.values():
        assert source.url.startswith("https://") and source.dim == 300 and source.size > 10**8
        assert source.format in ("text", "word2vec-binary") and source.checksum_source
        assert (source.member is not None) == source.filename.endswith(".zip")
        if source.checksum:
            algorithm, digest = source.checksum
            assert len(digest) == hashlib.new(algorithm).digest_size * 2 and int(digest, 16) >= 0


# ---------------------------------------------------------------- download, cache, checksum

@pytest.mark.parametrize("kind", ["text", "zip", "bin.gz"])
def test_download_convert_then_offline(tmp_path, monkeypatch, capsys, kind):
    source = fixture_source(tmp_path, kind)
    cache = tmp_path / "cache"
    vectors, dim = load_vectors(source, words=["Man", "sleeps", "nothere"], cache_dir=cache)
    assert dim == 3 and set(vectors) == {"man", "sleeps"}
    np.testing.assert_array_equal(vectors["sleeps"], [-1, 0, 1])
    err = capsys.readouterr().err
    assert "downloading" in err and "100%" in err and "converting" in err
    index_dir = cache / "vectors" / source.name
    assert sorted(os.listdir(index_dir)) == ["meta.json", "vectors.f32", "words.txt"]
    assert os.listdir(cache / "downloads") == []  # the download is removed once converted

    # Second use: the URL is gone and any network call fails; only the cache is read.
    os.remove(urllib.request.url2pathname(source.url[len("file://"):]))
    forbid_network(monkeypatch)
    vectors, dim = load_vectors(source, words=["the"], top=2, cache_dir=cache)
    assert dim == 3 and list(vectors) == ["the", ","]
    np.testing.assert_allclose(vectors[","], [1.0, -1.0, 0.5])


def test_index_select_reads_rows_in_file_order(tmp_path):
    index = VectorIndex(fetch_vectors(fixture_source(tmp_path, "zip"), cache_dir=tmp_path / "c", progress=False))
    assert index.dim == 3 and index.count == len(ROWS) and index.words[4] == "at name@domain.com"
    assert list(index.select({"café", "man"}, top=1)) == ["the", "man", "café"]
    assert len(index.select()) == len(ROWS)
    np.testing.assert_array_equal(index.matrix()[5], [2, 2, 2])


def test_cache_dir_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("NLI_ZOO_CACHE", str(tmp_path / "env"))
    assert resolve_cache_dir() == str(tmp_path / "env")
    assert resolve_cache_dir(tmp_path / "arg") == str(tmp_path / "arg")
    monkeypatch.delenv("NLI_ZOO_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_cache_dir() == str(tmp_path / "home" / ".cache" / "nli-zoo")
    source = fixture_source(tmp_path, "text")
    monkeypatch.setenv("NLI_ZOO_CACHE", str(tmp_path / "env"))
    load_vectors(source, words=["the"], progress=False)
    assert VectorIndex.is_complete(tmp_path / "env" / "vectors" / source.name)


def test_checksum_mismatch_leaves_nothing(tmp_path):
    cache = tmp_path / "cache"
    bad = fixture_source(tmp_path, "zip", checksum=("sha1", "0" * 40))
    with pytest.raises(ChecksumMismatchError, match=r"fixture-zip: fixture\.zip .* failed its check: its sha1 is "
                                                    r"[0-9a-f]{40}, expected 0{40} \(test fixture\)"):
        load_vectors(bad, words=["the"], cache_dir=cache, progress=False)
    assert os.listdir(cache / "downloads") == [] and not os.path.exists(cache / "vectors" / bad.name)
    wrong_size = fixture_source(tmp_path, "zip", size=12345)
    with pytest.raises(ChecksumMismatchError, match="expected 12,345"):
        load_vectors(wrong_size, cache_dir=cache, progress=False)
    # A pinned MD5 (as for word2vec-google-news-300) is checked too.
    good = fixture_source(tmp_path, "bin.gz")
    md5 = hashlib.md5((tmp_path / "fixture.bin.gz").read_bytes()).hexdigest()
    vectors, _ = load_vectors(VectorSource(**{**good.__dict__, "checksum": ("md5", md5)}), words=["the"],
                              cache_dir=cache, progress=False)
    assert list(vectors) == ["the"]


def test_trust_on_first_use(tmp_path, capsys):
    cache = tmp_path / "cache"
    source = fixture_source(tmp_path, "text", checksum=None, size=None)
    load_vectors(source, words=["the"], cache_dir=cache)
    records = json.loads((cache / "checksums.json").read_text())
    fixture = tmp_path / "fixture.vec"
    assert records[source.url]["sha256"] == hashlib.sha256(fixture.read_bytes()).hexdigest()
    assert "trust on first use" in capsys.readouterr().err
    # The cached index is deleted and the host now serves another file: the recorded checksum catches it.
    import shutil
    shutil.rmtree(cache / "vectors" / source.name)
    fixture.write_text(GLOVE.replace("0.1 0.2 0.3", "0.1 0.2 0.4"), encoding="utf-8")
    with pytest.raises(ChecksumMismatchError, match="recorded at the first download"):
        load_vectors(source, words=["the"], cache_dir=cache, progress=False)


def test_file_put_in_the_cache_by_hand(tmp_path, monkeypatch):
    source = fixture_source(tmp_path, "zip")
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / "fixture.zip").write_bytes(b"PK\x03\x04 not the published file")
    forbid_network(monkeypatch)
    with pytest.raises(ChecksumMismatchError, match="delete .*fixture.zip to download it again"):
        load_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    assert os.path.exists(downloads / "fixture.zip")  # a file the user put there is not deleted
    (downloads / "fixture.zip").write_bytes((tmp_path / "fixture.zip").read_bytes())
    index_dir = fetch_vectors(source, cache_dir=tmp_path / "cache", progress=False, keep_download=True)
    assert VectorIndex(index_dir).count == len(ROWS) and os.path.exists(downloads / "fixture.zip")


def test_offline_error_is_immediate(tmp_path):
    with socket.socket() as s:  # a port nobody listens on: the connection is refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = VectorSource("far-away-300d", f"http://127.0.0.1:{port}/vectors.zip", "text", 300,
                          member="vectors.txt", size=10**9)
    start = time.monotonic()
    with pytest.raises(DataUnavailableError) as error:
        load_vectors(source, words=["the"], cache_dir=tmp_path / "cache")
    assert time.monotonic() - start < 3
    message = str(error.value)
    assert "\n" not in message and "127.0.0.1 cannot be reached" in message
    assert "--embeddings glove-6b-50d" in message and "--embeddings PATH" in message
    assert os.listdir(tmp_path / "cache" / "downloads") == []


def test_interrupted_download_leaves_no_file(tmp_path, monkeypatch):
    source = fixture_source(tmp_path, "zip")
    cache = tmp_path / "cache"

    class Dropped:
        headers = {"Content-Length": str(source.size)}

        def __init__(self):
            self.calls = 0

        def read(self, n):
            self.calls += 1
            if self.calls > 1:
                raise ConnectionResetError("connection reset by peer")
            return b"PK\x03\x04 partial"

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: Dropped())
    with pytest.raises(DataUnavailableError, match="connection reset by peer.*Offline options"):
        load_vectors(source, cache_dir=cache, progress=False)
    assert os.listdir(cache / "downloads") == [] and not VectorIndex.is_complete(cache / "vectors" / source.name)
    monkeypatch.undo()
    # A process killed mid-download leaves only FILE.part, which the next run overwrites.
    (cache / "downloads" / "fixture.zip.part").write_bytes(b"junk from a killed run")
    vectors, _ = load_vectors(source, words=["man"], cache_dir=cache, progress=False)
    assert list(vectors) == ["man"] and os.listdir(cache / "downloads") == []


def test_malformed_download_keeps_no_index(tmp_path):
    (tmp_path / "bad.txt").write_text(GLOVE + "dog 1 2\n", encoding="utf-8")
    data = (tmp_path / "bad.txt").read_bytes()
    source = VectorSource("bad-3d", (tmp_path / "bad.txt").as_uri(), "text", 3, size=len(data),
                          checksum=("sha256", hashlib.sha256(data).hexdigest()), checksum_source="test")
    cache = tmp_path / "cache"
    with pytest.raises(DataFormatError, match=r"bad\.txt:7: expected 3 values, got 2"):
        load_vectors(source, cache_dir=cache, progress=False)
    assert os.listdir(cache / "vectors") == [".bad-3d.lock"]  # no index, no temporary folder
    assert os.listdir(cache / "downloads") == ["bad.txt"]  # the checked download stays for a retry


# ---------------------------------------------------------------- OOV strategies

@pytest.fixture()
def big_vocab():
    words = ["[PAD]", "[UNK]", "[NULL]"] + [f"w{i}" for i in range(3000)]
    rng = np.random.default_rng(1)
    vectors = {f"w{i}": rng.normal(0, 0.4, 20).astype(np.float32) for i in range(0, 3000, 2)}  # half covered
    return Vocabulary(words), vectors


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_pad_row_and_tunable_rows(big_vocab, strategy):
    vocab, vectors = big_vocab
    sentences = [[f"w{i}", f"w{i + 1}"] for i in range(0, 3000, 2)]
    emb = build_embedding_matrix(vocab, vectors, 20, strategy, token_lists=sentences, seed=0)
    assert not emb.matrix[PAD_ID].any() and not emb.tunable_mask[PAD_ID] and emb.oov_init
    np.testing.assert_array_equal(emb.matrix[3], vectors["w0"])  # pretrained rows are never rescaled
    oov = np.array([i != PAD_ID and vocab.words[i] not in vectors for i in range(len(vocab))])
    expected = {"oov": oov, "all": np.arange(len(vocab)) != PAD_ID,
                "none": np.zeros(len(vocab), bool)}[tunable_words_for(strategy)]
    np.testing.assert_array_equal(emb.tunable_mask, expected)
    assert emb.coverage["types_found"] == 1500 and emb.coverage["tokens"] == pytest.approx(0.5)


def test_chen_paria_bowman_scales(big_vocab):
    vocab, vectors = big_vocab
    oov_rows = [i for i, w in enumerate(vocab.words) if i != PAD_ID and w not in vectors]

    def oov_std(strategy):
        return float(build_embedding_matrix(vocab, vectors, 20, strategy).matrix[oov_rows].std())

    assert oov_std("chen") == pytest.approx(0.01, rel=0.03)                 # released ESIM code
    assert oov_std("paria") == pytest.approx(math.sqrt(0.06), rel=0.03)     # N(0, 0.06): variance 0.06
    pretrained = np.stack(list(vectors.values())).std()
    assert oov_std("bowman") == pytest.approx(pretrained, rel=0.03)         # the pretrained values' scale
    again = build_embedding_matrix(vocab, vectors, 20, "paria", seed=5).matrix
    np.testing.assert_array_equal(again, build_embedding_matrix(vocab, vectors, 20, "paria", seed=5).matrix)


def test_wang_jiang_window_stays_inside_its_sentence():
    vocab = Vocabulary(["[PAD]", "[UNK]", "[NULL]", "zork", "a", "b", "c", "d"])
    vectors = {w: np.full(2, v, np.float32) for w, v in {"a": 1, "b": 2, "c": 10, "d": 20}.items()}
    premise, hypothesis = ["a", "b", "zork"], ["c", "d"]
    per_sentence = build_embedding_matrix(vocab, vectors, 2, "wang_jiang", token_lists=[premise, hypothesis])
    np.testing.assert_allclose(per_sentence.matrix[3], [1.5, 1.5])  # a and b only: c, d are the next sentence
    joined = build_embedding_matrix(vocab, vectors, 2, "wang_jiang", token_lists=[premise + hypothesis])
    np.testing.assert_allclose(joined.matrix[3], [8.25, 8.25])  # what joining the pair used to give
    assert per_sentence.coverage["tokens"] == joined.coverage["tokens"] == pytest.approx(4 / 5)


def test_wang_jiang_matches_a_per_sentence_reference():
    rng = np.random.default_rng(0)
    words = [f"t{i}" for i in range(12)]
    vectors = {w: rng.normal(size=3).astype(np.float32) for w in words[:8]}  # t8..t11 have no vector
    sentences = [list(rng.choice(words, size=rng.integers(1, 15))) for _ in range(40)]
    vocab = Vocabulary.build(sentences)
    emb = build_embedding_matrix(vocab, vectors, 3, "wang_jiang", token_lists=sentences)
    for word in words[8:]:
        neighbours = [vectors[s[j]] for s in sentences for i, t in enumerate(s) if t == word
                      for j in range(max(0, i - 4), min(len(s), i + 5)) if j != i and s[j] in vectors]
        expected = np.mean(neighbours, axis=0) if neighbours else np.zeros(3)
        np.testing.assert_allclose(emb.matrix[vocab.id(word)], expected, rtol=1e-5, atol=1e-6)
    assert not emb.matrix[[UNK_ID, NULL_ID]].any()


def test_presets_name_the_papers_rules():
    assert zoo.get_preset("paria_bilstm").data.oov == "paria"
    assert zoo.get_preset("paria_btree").data.oov == "paria"
    assert zoo.get_preset("bowman_lstm").data.oov == "bowman"
    assert zoo.get_preset("rocktaschel_wbw").data.oov == "rocktaschel"
    assert zoo.get_preset("luo_matrix").data.oov == "luo" and zoo.get_preset("esim").data.oov == "chen"
    bowman, rocktaschel = zoo.get_preset("bowman_lstm").data, zoo.get_preset("rocktaschel_wbw").data
    # Only the OOV rule and the vectors (Bowman et al.: GloVe 840B; Rocktäschel et al.: word2vec) differ.
    assert dataclasses.replace(bowman, oov="rocktaschel", embeddings="word2vec-google-news-300") == rocktaschel


# Words unseen in training ------------------------------------------------------------------------
UNSEEN_ROWS = [("a", [0.1, 0.1, 0.1]), ("man", [1.0, 1.0, 1.0]), ("plays", [0.0, 1.0, 0.0]),
               ("violin", [0.3, -0.2, 0.9]), ("cello", [-0.7, 0.4, 0.2]), ("zebra", [0.5, 0.6, 0.7]),
               ("kite", [0.9, 0.8, 0.7])]


@pytest.mark.parametrize("name", ["rocktaschel_wbw", "esim"])
def test_words_unseen_in_training_keep_their_pretrained_vectors_frozen(tmp_path, name, capsys):
    from zoo.data.tokenizer import Tokenizer
    from zoo.training import inputs

    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in UNSEEN_ROWS), encoding="utf-8")
    splits = {"train": [{"premise": "a man plays", "hypothesis": "a man sleeps"}],
              "validation": [{"premise": "a man plays cello", "hypothesis": "a violin"}],
              "test": [{"premise": "a cello plays", "hypothesis": "qwerty"}]}
    base_size = 3 + 4  # reserved ids, then a man plays sleeps
    data = zoo.get_preset(name).with_overrides({"max_vocabulary": base_size + 3}).data  # the dev/test words, one more
    vocab, vectors, report = inputs.vocabulary_and_vectors(
        str(path), data, str(tmp_path), False, Tokenizer(lowercase=data.lowercase), splits)
    matrix, mask, tunable_words = vectors.matrix, vectors.tunable_mask, vectors.tunable_words

    # Training words first (whatever the bound), then the dev/test words that have a vector (most frequent
    # first), then the source's most frequent words up to the bound; words without a vector stay [UNK].
    assert sorted(vocab.words[3:base_size]) == ["a", "man", "plays", "sleeps"]
    assert vocab.words[base_size:] == ["cello", "violin", "zebra"]
    assert "qwerty" not in vocab and "kite" not in vocab
    # Their rows are the pretrained vectors, and they never train.
    rows = dict(UNSEEN_ROWS)
    for word in ("cello", "violin", "zebra"):
        np.testing.assert_array_equal(matrix[vocab.id(word)], np.float32(rows[word]))
        assert not mask[vocab.id(word)], f"{name}: {word} would train"
    assert tunable_words == "oov" and mask.sum() == mask[:base_size].sum()
    # dev/test tokens: a man plays cello / a violin / a cello plays / qwerty: 4 unseen, 3 of them rescued.
    assert (report["tokens"], report["unseen"], report["rescued"]) == (10, 4, 3)
    assert "4 of 10, 3 of them rescued from [UNK]" in capsys.readouterr().out
