"""Issue 16, the data side: bad files and damaged caches end with one clear line naming the file and the row,
nothing the user placed is deleted, and every remedy names the exact path.

- word vectors holding NaN, an infinity, 1e39 (beyond float32) or an absurd value, in a text file, a word2vec
  binary file, a cached index or the matrix handed to build_embedding_matrix;
- the vector cache: a right-size file of 800 vectors or of garbage put there by hand, the first download
  of a set without checksum, a corrupt meta.json or checksums.json, a killed conversion;
- data files: a zip member failing its CRC, a corrupt or truncated snli_1.0.zip, an unclosed CSV quote.

Tiny fixtures in tmp_path; downloads are file:// URLs (tests/support/vectors.py): no network.
"""

import dataclasses
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.vectors import GLOVE, ROWS, fixture_source, forbid_network, write_word2vec_bin
from zoo.data.corpora import load_corpus
from zoo.data.embeddings import build_embedding_matrix, load_vectors
from zoo.data.readers import DataFormatError
from zoo.data.snli import SAMPLE_DIR, load_snli
from zoo.data.vectors import (
    CATALOG,
    MAX_ABS_VALUE,
    CacheCorruptError,
    ChecksumMismatchError,
    NonFiniteVectorError,
    VectorIndex,
    VectorSource,
    fetch_vectors,
    read_vector_file,
)
from zoo.data.vocab import Vocabulary
from zoo.fileio import DirectoryLock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FASTTEXT = CATALOG["fasttext-crawl-300d-2m"]


def one_line(error):
    message = str(error.value)
    assert "\n" not in message, message
    return message


def dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# ---------------------------------------------------------------- non-finite word vectors

@pytest.mark.parametrize("value, what", [("nan", "is NaN"), ("inf", "is an infinity"), ("-inf", "is an infinity"),
                                         ("1e39", "is an infinity (beyond float32's range"),
                                         ("-2.5e5", "is -2.5e+05, beyond 10000 in magnitude")])
def test_vector_file_with_a_non_finite_or_absurd_value_names_the_line_and_word(tmp_path, value, what):
    path = tmp_path / "vectors.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(GLOVE.replace("1.0 1.0 1.0", f"1.0 {value} 1.0"))  # the line of "man"
    with pytest.raises(NonFiniteVectorError) as error:
        load_vectors(str(path), words=["man"])
    message = one_line(error)
    assert message.startswith("vectors.txt.gz:3: the vector of 'man': value 2 of 3 " + what)
    assert f"({value!r} as written)" in message and isinstance(error.value, (DataFormatError, ValueError))
    assert MAX_ABS_VALUE == 1e4


def test_word2vec_binary_with_nan_names_the_record(tmp_path):
    path = write_word2vec_bin(tmp_path / "w.bin", [("a", [1.0, 2.0]), ("b", [3.0, float("nan")])], compress=False)
    with pytest.raises(NonFiniteVectorError) as error:
        read_vector_file(path)
    assert one_line(error).startswith("w.bin: record 2 ('b'): value 2 of 2 is NaN")


def test_cached_index_with_nan_rows_names_the_row_and_the_folder_to_delete(tmp_path, monkeypatch):
    source = fixture_source(tmp_path, "zip")
    cache = tmp_path / "cache"
    index_dir = fetch_vectors(source, cache_dir=cache, progress=False)
    matrix = np.memmap(os.path.join(index_dir, "vectors.f32"), dtype="<f4", mode="r+", shape=(len(ROWS), 3))
    matrix[3, 1] = np.nan  # "sleeps", damaged after the index was written
    matrix.flush()
    del matrix
    # Its SHA-256 recorded again as found (else the check of the digests names the file first, tested below):
    # the rows read are still checked.
    meta = json.loads((Path(index_dir) / "meta.json").read_text())
    meta["sha256"]["vectors.f32"] = hashlib.sha256((Path(index_dir) / "vectors.f32").read_bytes()).hexdigest()
    (Path(index_dir) / "meta.json").write_text(json.dumps(meta))
    forbid_network(monkeypatch)
    with pytest.raises(NonFiniteVectorError) as error:
        load_vectors(source, words=["sleeps"], cache_dir=cache)
    assert one_line(error) == (f"{index_dir}/vectors.f32: row 3 ('sleeps'): value 2 of 3 is NaN; the index was "
                               f"damaged after it was written: delete {index_dir} to rebuild it")
    vectors, _ = load_vectors(source, words=["man"], cache_dir=cache)  # only the rows read are checked
    assert list(vectors) == ["man"]


def test_a_download_with_nan_is_not_converted(tmp_path):
    (tmp_path / "nan.txt").write_text(GLOVE.replace("-1.0 0.0 1.0", "-1.0 nan 1.0"), encoding="utf-8")
    data = (tmp_path / "nan.txt").read_bytes()
    source = VectorSource("nan-3d", (tmp_path / "nan.txt").as_uri(), "text", 3, size=len(data),
                          checksum=("sha256", hashlib.sha256(data).hexdigest()), checksum_source="test")
    with pytest.raises(NonFiniteVectorError, match=r"^nan\.txt:4: the vector of 'sleeps': value 2 of 3 is NaN"):
        load_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    assert not VectorIndex.is_complete(tmp_path / "cache" / "vectors" / "nan-3d")
    assert os.listdir(tmp_path / "cache" / "vectors") == [".nan-3d.lock"]  # no index, no temporary folder


def test_embedding_matrix_refuses_a_nan_vector():
    vocab = Vocabulary(["[PAD]", "[UNK]", "[NULL]", "man", "sleeps"])
    vectors = {"man": np.ones(3, np.float32), "sleeps": np.array([0, np.inf, 0], np.float32)}
    with pytest.raises(NonFiniteVectorError) as error:
        build_embedding_matrix(vocab, vectors, 3, "rocktaschel")
    assert one_line(error).startswith("the pretrained vector of 'sleeps': value 2 of 3 is an infinity")


# ---------------------------------------------------------------- the vector cache

def test_every_named_set_has_a_pinned_checksum_and_a_structure():
    for source in CATALOG.values():
        assert source.checksum or source.member_checksum, source.name
        assert source.rows and source.dim == 300 and source.count == source.rows and source.checksum_source
        for pinned in (source.checksum, source.member_checksum):
            if pinned:
                assert len(pinned[1]) == hashlib.new(pinned[0]).digest_size * 2 and int(pinned[1], 16) >= 0
    assert FASTTEXT.checksum is None
    assert FASTTEXT.member_checksum == ("sha1", "9b556504d099a6c01f3dd76b88775d02cb2f1946")
    assert "apache/mxnet PR #9551" in FASTTEXT.checksum_source and FASTTEXT.rows == 2_000_000


def fasttext_zip(path, count, dim=300, seed=0):
    """A crawl-300d-2M.vec.zip lookalike: a fastText header and `count` random vectors."""
    rng = np.random.default_rng(seed)
    lines = [f"{count} {dim}"] + [f"w{i} " + " ".join(f"{v:.3f}" for v in rng.normal(0, 0.3, dim))
                                  for i in range(count)]
    member = ("\n".join(lines) + "\n").encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(FASTTEXT.member, member)
    return member


def test_right_size_file_of_800_vectors_put_there_by_hand_is_refused_and_kept(tmp_path, monkeypatch):
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    placed = downloads / FASTTEXT.filename
    fasttext_zip(placed, 800)
    before = placed.read_bytes()
    source = dataclasses.replace(FASTTEXT, size=len(before))  # the catalogue's entry, at this file's size
    forbid_network(monkeypatch)
    with pytest.raises(ChecksumMismatchError) as error:
        load_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    message = one_line(error)
    assert "it holds 800 vectors of 300 values, the catalogue says 2,000,000 of 300" in message
    assert "has sha1 " in message and "expected 9b556504d099a6c01f3dd76b88775d02cb2f1946" in message
    assert f"left in place and not converted: delete {placed} to download it again" in message
    assert placed.read_bytes() == before  # never deleted
    assert sorted(os.listdir(tmp_path / "cache")) == ["downloads", "vectors"]  # nothing recorded as trusted
    assert not VectorIndex.is_complete(tmp_path / "cache" / "vectors" / FASTTEXT.name)


def test_right_size_garbage_is_refused_then_the_right_file_is_accepted(tmp_path, monkeypatch):
    served = tmp_path / "served.zip"
    member = fasttext_zip(served, 20, dim=300, seed=1)
    source = dataclasses.replace(FASTTEXT, url=served.as_uri(), size=served.stat().st_size, rows=20, count=20,
                                 member_checksum=("sha1", hashlib.sha1(member).hexdigest()))
    cache = tmp_path / "cache"
    placed = cache / "downloads" / source.filename
    placed.parent.mkdir(parents=True)
    placed.write_bytes(np.random.default_rng(2).bytes(source.size))
    with pytest.raises(ChecksumMismatchError) as error:
        load_vectors(source, cache_dir=cache, progress=False)
    message = one_line(error)
    assert message.startswith(f"fasttext-crawl-300d-2m: {placed} (put there by hand")
    assert "not a zip archive (it should hold crawl-300d-2M.vec): corrupt or truncated" in message
    assert f"delete {placed} to download it again" in message and placed.exists()
    assert not (cache / "checksums.json").exists()
    os.remove(placed)  # the remedy, as given
    vectors, dim = load_vectors(source, words=["w3"], cache_dir=cache, progress=False)
    assert dim == 300 and list(vectors) == ["w3"] and not (cache / "checksums.json").exists()


def test_trust_on_first_use_is_recorded_only_after_the_structure_check(tmp_path, capsys):
    served = tmp_path / "fixture.vec"
    source = dataclasses.replace(fixture_source(tmp_path, "text", checksum=None, size=None), rows=len(ROWS))
    cache = tmp_path / "cache"
    served.write_text("".join(GLOVE.splitlines(keepends=True)[:5]), encoding="utf-8")  # a row short
    with pytest.raises(ChecksumMismatchError) as error:
        load_vectors(source, cache_dir=cache, progress=False)
    assert "it holds 5 vectors of 3 values, the catalogue says 6 of 3; the download was removed" in one_line(error)
    assert not (cache / "checksums.json").exists() and os.listdir(cache / "downloads") == []
    served.write_text(GLOVE, encoding="utf-8")
    load_vectors(source, words=["man"], cache_dir=cache, progress=False)
    records = json.loads((cache / "checksums.json").read_text())
    assert records[source.url]["sha256"] == hashlib.sha256(served.read_bytes()).hexdigest()
    assert "after the structure check" in capsys.readouterr().err
    shutil.rmtree(cache / "vectors" / source.name)
    served.write_text(GLOVE.replace("0.1 0.2 0.3", "0.1 0.2 0.4"), encoding="utf-8")  # the host changed the file
    with pytest.raises(ChecksumMismatchError) as error:
        load_vectors(source, cache_dir=cache, progress=False)
    assert f"delete the entry of {source.url} in {cache / 'checksums.json'}" in one_line(error)


def test_corrupt_meta_json_is_named_not_reported_as_no_network(tmp_path, monkeypatch):
    source = fixture_source(tmp_path, "text")
    index_dir = fetch_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    meta = os.path.join(index_dir, "meta.json")
    with open(meta, "w") as f:
        f.write('{"version": 1,\n "dim": 3\n "count": 6}\n')
    forbid_network(monkeypatch)
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")
    message = one_line(error)
    assert message == (f"{meta}: not valid JSON (line 3: Expecting ',' delimiter): the word-vector index {index_dir} "
                       "is damaged: delete that folder to rebuild it")
    assert "network" not in message


def test_corrupt_checksums_json_is_named(tmp_path):
    source = fixture_source(tmp_path, "text", checksum=None, size=None)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "checksums.json").write_text("{\n")
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    assert one_line(error).startswith(f"{tmp_path / 'cache' / 'checksums.json'}: not valid JSON (line 2: ")


KILLED_CONVERSION = """
import sys, time
from zoo.data import vectors
update = vectors._Progress.update
def stall(self, done):
    if not self.label.startswith("converting"):
        return update(self, done)
    print("converting", flush=True)
    time.sleep(60)
vectors._Progress.update = stall  # the conversion stops after vectors.f32 is written, before the rename
source = vectors.VectorSource("fixture-zip", sys.argv[1], "text", 3, member="vectors.300d.txt")
vectors.fetch_vectors(source, cache_dir=sys.argv[2], progress=False)
"""


def test_a_killed_conversion_leaves_a_folder_the_next_run_removes(tmp_path, capsys):
    source = dataclasses.replace(fixture_source(tmp_path, "zip"), checksum=None, size=None)
    cache = tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=ROOT)
    converter = subprocess.Popen([sys.executable, "-c", KILLED_CONVERSION, source.url, cache], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert converter.stdout.readline().strip() == "converting"
    converter.send_signal(signal.SIGKILL)
    converter.wait()
    leftover = cache / "vectors" / f"{source.name}.tmp-{converter.pid}"
    assert (leftover / "vectors.f32").exists()
    live = cache / "vectors" / f"other.tmp-{os.getppid()}"  # a conversion of a live process is left alone
    live.mkdir()
    vectors, _ = load_vectors(source, words=["man"], cache_dir=cache, progress=True)
    assert list(vectors) == ["man"] and not leftover.exists() and live.exists()
    assert f"removed {leftover}, left by a conversion or write that was killed" in capsys.readouterr().err
    assert (cache / "downloads" / "fixture.zip").exists()  # the killed run's download, kept for the next


def cached_index(tmp_path, monkeypatch):
    """A converted fixture set in `tmp_path/cache`, offline from then on: `(source, index folder)`."""
    source = fixture_source(tmp_path, "zip")
    index_dir = fetch_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    forbid_network(monkeypatch)
    return source, index_dir


def test_a_removed_checksum_entry_does_not_turn_the_cache_check_off(tmp_path, monkeypatch):
    """vectors.f32 altered and its sha256 entry removed from meta.json (issue 35: it was taken as an old index,
    its digests recorded as found, and trained with): refused, naming meta.json and the folder to delete; a
    folder without meta.json is named too, not reported as a failed download."""
    source, index_dir = cached_index(tmp_path, monkeypatch)
    matrix = os.path.join(index_dir, "vectors.f32")
    with open(matrix, "r+b") as f:
        f.write(np.float32([0.5, 0.5, 0.5]).tobytes())
    meta = json.loads((Path(index_dir) / "meta.json").read_text())
    assert meta["version"] == 2
    del meta["sha256"]
    (Path(index_dir) / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")
    assert one_line(error).startswith(f"{index_dir}/meta.json records no SHA-256 of words.txt and vectors.f32")
    assert f"delete {index_dir} to rebuild it" in one_line(error)
    meta["version"] = 1  # made to look like an index written before the cache kept checksums: refused too
    (Path(index_dir) / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")
    assert "records no SHA-256" in one_line(error) and "nothing can vouch for its vectors" in one_line(error)
    os.remove(Path(index_dir) / "meta.json")
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")
    assert one_line(error).startswith(f"{index_dir} holds files but no meta.json") and "delete" in one_line(error)
    shutil.rmtree(index_dir)  # the remedy: converted again (here from the file:// download)
    monkeypatch.undo()
    assert load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")[0]["man"].tolist() == [1.0, 1.0, 1.0]


def test_cache_matrix_refilled_with_other_numbers_of_the_same_size_is_named(tmp_path, monkeypatch):
    source, index_dir = cached_index(tmp_path, monkeypatch)
    matrix = os.path.join(index_dir, "vectors.f32")
    size = os.path.getsize(matrix)
    with open(matrix, "r+b") as f:  # finite, plausible values: only the checksum can tell
        f.write(np.random.default_rng(0).normal(0, 0.3, size // 4).astype("<f4").tobytes())
    assert os.path.getsize(matrix) == size
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")
    message = one_line(error)
    assert message.startswith(f"{matrix}: its SHA-256 is {hashlib.sha256(open(matrix, 'rb').read()).hexdigest()}, "
                              "not the ")
    assert message.endswith(f"recorded in meta.json when the index was written (the file changed since); delete "
                            f"{index_dir} to rebuild it")
    shutil.rmtree(index_dir)  # the remedy, as given (the download is gone: it is fetched again)
    monkeypatch.undo()
    vectors, _ = load_vectors(source, words=["man"], cache_dir=tmp_path / "cache", progress=False)
    np.testing.assert_array_equal(vectors["man"], [1.0, 1.0, 1.0])


def test_cache_word_list_with_two_words_swapped_is_named(tmp_path, monkeypatch):
    source, index_dir = cached_index(tmp_path, monkeypatch)
    words_path = os.path.join(index_dir, "words.txt")
    words = open(words_path, encoding="utf-8").read().split("\n")
    words[2], words[3] = words[3], words[2]  # "man" and "sleeps": same count, same bytes, other rows
    with open(words_path, "w", encoding="utf-8") as f:
        f.write("\n".join(words))
    with pytest.raises(CacheCorruptError) as error:
        load_vectors(source, words=["man"], cache_dir=tmp_path / "cache")
    assert one_line(error).startswith(f"{words_path}: its SHA-256 is ")
    assert f"delete {index_dir} to rebuild it" in one_line(error)


def test_cache_digests_match_the_files_written(tmp_path, monkeypatch):
    _, index_dir = cached_index(tmp_path, monkeypatch)
    recorded = json.loads((Path(index_dir) / "meta.json").read_text())["sha256"]
    assert recorded == {name: hashlib.sha256((Path(index_dir) / name).read_bytes()).hexdigest()
                        for name in ("words.txt", "vectors.f32")}
    assert VectorIndex(index_dir).select({"man"})["man"].tolist() == [1.0, 1.0, 1.0]


def test_a_second_conversion_waits_for_the_first_then_uses_its_index(tmp_path, capsys):
    source = fixture_source(tmp_path, "zip")
    cache = tmp_path / "cache"
    holder = DirectoryLock(cache / "vectors" / f".{source.name}.lock", what="conversion").acquire()
    timer = threading.Timer(1.0, holder.release)  # another converter, busy for a second
    timer.start()
    try:
        index_dir = fetch_vectors(source, cache_dir=cache, progress=False)
    finally:
        timer.join()
    assert "[vectors] waiting: the conversion " in capsys.readouterr().err and VectorIndex.is_complete(index_dir)


@pytest.mark.parametrize("kind", ["text", "bin"])
def test_a_header_promising_more_or_fewer_vectors_than_the_file_holds(tmp_path, kind):
    if kind == "text":
        path = tmp_path / "short.vec"
        path.write_text("100 3\n" + "".join(f"w{i} 0.1 0.2 0.3\n" for i in range(16)), encoding="utf-8")
        expected = "short.vec:1: the header promises 100 vectors of 3 values, the file holds 16"
    else:
        path = write_word2vec_bin(tmp_path / "long.bin", ROWS[:3], compress=False)
        data = path.read_bytes().replace(b"3 3\n", b"2 3\n", 1)  # one record more than its header says
        path.write_bytes(data)
        expected = "long.bin:1: the header announces 2 vectors, but more records follow"
    with pytest.raises(DataFormatError) as error:
        read_vector_file(path)
    assert one_line(error).startswith(expected)


def test_a_download_whose_header_does_not_match_is_not_converted(tmp_path):
    source = dataclasses.replace(fixture_source(tmp_path, "text", checksum=None, size=None))
    served = tmp_path / "fixture.vec"
    served.write_text(served.read_text(encoding="utf-8").replace("6 3\n", "100 3\n", 1), encoding="utf-8")
    with pytest.raises(ChecksumMismatchError) as error:
        load_vectors(source, cache_dir=tmp_path / "cache", progress=False)
    assert "fixture.vec:1: the header promises 100 vectors of 3 values, the file holds 6" in one_line(error)
    assert not VectorIndex.is_complete(tmp_path / "cache" / "vectors" / source.name)


@pytest.mark.parametrize("kind", ["text", "bin"])
def test_a_word_that_is_not_utf8_is_named(tmp_path, kind):
    if kind == "text":
        path = tmp_path / "latin1.txt"
        path.write_bytes(GLOVE.encode("utf-8") + "na\xefve 1 2 3\n".encode("latin-1"))
        expected = f"latin1.txt:{len(ROWS) + 1}: not UTF-8 text (invalid continuation byte at byte 2 of the line)"
    else:
        path = write_word2vec_bin(tmp_path / "latin1.bin", ROWS[:3], compress=False)
        path.write_bytes(path.read_bytes().replace(b"man ", b"m\xe4n ", 1))
        expected = "latin1.bin: record 3: the word is not UTF-8 text (invalid continuation byte at byte 1"
    with pytest.raises(DataFormatError) as error:
        read_vector_file(path)
    assert one_line(error).startswith(expected)


# ---------------------------------------------------------------- data files

def _flip_inside(data, marker):
    """`data` with one letter of the text after `marker` changed (the zip's CRC no longer matches)."""
    data = bytearray(data)
    at = data.index(marker) + len(marker)
    data[at] ^= 0x01
    return bytes(data)


def test_zip_member_failing_its_crc_names_the_zip_and_the_member(tmp_path):
    archive = tmp_path / "snli_1.0.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:  # stored: a changed byte stays readable text
        for name in sorted(os.listdir(SAMPLE_DIR)):
            if name.startswith("snli_1.0_") and name.endswith(".jsonl"):
                z.write(os.path.join(SAMPLE_DIR, name), f"snli_1.0/{name}")
    # A letter of the first premise of the archive's first member (dev): read after train, it fails at its end.
    archive.write_bytes(_flip_inside(archive.read_bytes(), b'"sentence1": "'))
    for load in (load_snli, load_corpus):
        with pytest.raises(DataFormatError) as error:
            load(str(archive))
        assert one_line(error) == (f"{archive}/snli_1.0/snli_1.0_dev.jsonl: it fails its CRC check (Bad CRC-32 for "
                                   f"file 'snli_1.0/snli_1.0_dev.jsonl'): the zip archive {archive} is damaged; "
                                   "download it again")
    # A changed label shows first as a bad line ('ndutral'): the damage is what is reported.
    with zipfile.ZipFile(tmp_path / "train_dev_test.zip", "w", zipfile.ZIP_STORED) as z:
        for name in ("train", "dev", "test"):
            z.writestr(f"{name}.jsonl", json.dumps({"sentence1": "A man.", "sentence2": "A man.",
                                                     "gold_label": "neutral"}) + "\n")
    damaged = _flip_inside((tmp_path / "train_dev_test.zip").read_bytes(), b'"gold_label": "n')
    (tmp_path / "train_dev_test.zip").write_bytes(damaged)
    with pytest.raises(DataFormatError) as error:
        load_corpus(str(tmp_path / "train_dev_test.zip"))
    assert one_line(error).startswith(f"{tmp_path / 'train_dev_test.zip'}/train.jsonl: it fails its CRC check")


def test_vector_zip_member_failing_its_crc(tmp_path):
    path = tmp_path / "vectors.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("vectors.txt", GLOVE)
    path.write_bytes(_flip_inside(path.read_bytes(), b"sleeps -1.0 0.0 1"))
    with pytest.raises(DataFormatError) as error:
        read_vector_file(path)
    assert one_line(error).startswith(f"{path}/vectors.txt: it fails its CRC check")


@pytest.mark.parametrize("damage, what", [("html", "it does not even start as one"),
                                          ("truncated", "it starts as a zip but has no end")])
def test_corrupt_or_truncated_snli_zip_says_so(tmp_path, damage, what):
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as z:
        for name in os.listdir(SAMPLE_DIR):
            if name.startswith("snli_1.0_"):
                z.write(os.path.join(SAMPLE_DIR, name), f"snli_1.0/{name}")
    archive = tmp_path / "snli_1.0.zip"
    archive.write_bytes(b"<html>503 Service Unavailable</html>" if damage == "html"
                        else good.read_bytes()[:good.stat().st_size // 2])
    for load in (load_snli, load_corpus):
        with pytest.raises(DataFormatError) as error:
            load(str(archive))
        message = one_line(error)
        assert message.startswith(f"{archive}: not a readable zip archive, corrupt or truncated: {what}")
        assert "not a known data file" not in message and message.endswith("download it again")


def test_unclosed_csv_quote_is_reported_where_it_opens(tmp_path):
    rows = ["sentence1,sentence2,gold_label"] + [f"A man {i}.,A person {i}.,entailment" for i in range(2, 12)]
    rows[5] = '"A man says ""hi.,A person speaks.,neutral'  # line 6: the quote opened here is never closed
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as error:
        load_corpus(str(path))
    assert one_line(error) == (f"{path}:6: a quoted field opened on this line is never closed: the record runs on "
                               "to line 11, swallowing the lines between; close the quote, or double it (\"\") if it "
                               "is part of the text")
    rows[5] = '"A man says ""hi.""",A person speaks.,neutral'  # closed: read, and multi-line fields still work
    rows[6] = 'A man 7.,"A person\non two lines.",entailment'
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    splits, _ = load_corpus(str(path))
    assert splits["pairs"][4]["premise"] == 'A man says "hi."' and splits["pairs"][5]["pair_id"] == "pairs.csv:7"
    assert splits["pairs"][6]["pair_id"] == "pairs.csv:9"  # the line a record starts on


# ---------------------------------------------------------------- a file's kind from its content (issue 35)

def test_a_vector_files_kind_comes_from_its_content_where_its_name_lies(tmp_path, capsys):
    """Each mismatch is one line on stderr; a word listed twice keeps its first vector, counted in one line; a file
    that starts as a zip archive but is cut short is a damaged archive, not text ("non-numeric value of 'PK'")."""
    (tmp_path / "text.zip").write_text(GLOVE + "man 9 9 9\n", encoding="utf-8")  # text named as a zip
    vectors, dim = read_vector_file(tmp_path / "text.zip")
    assert dim == 3 and vectors["man"].tolist() == [1.0, 1.0, 1.0]  # the first of its two vectors
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"[vectors] {tmp_path / 'text.zip'}: its name says a zip archive, its content is an uncompressed "
                   "file: read as an uncompressed file",
                   f"[vectors] {tmp_path / 'text.zip'}: 1 repeated word(s) kept once, with the first of their "
                   "vectors (e.g. 'man')"]
    with zipfile.ZipFile(tmp_path / "whole.zip", "w") as archive:
        archive.writestr("glove.txt", GLOVE)
    (tmp_path / "cut.zip").write_bytes((tmp_path / "whole.zip").read_bytes()[:40])
    with pytest.raises(DataFormatError) as error:
        read_vector_file(tmp_path / "cut.zip")
    assert one_line(error) == (f"{tmp_path / 'cut.zip'}: starts as a zip archive but cannot be opened as one (cut "
                               "short, or damaged): get the file again")
    binary = write_word2vec_bin(tmp_path / "vectors.txt", [("a", [1.0, 2.0]), ("b", [3.0, 4.0])], compress=True)
    vectors, dim = read_vector_file(binary)  # gzip data of word2vec binary, named as plain text
    assert dim == 2 and vectors["b"].tolist() == [3.0, 4.0]
    assert "its content is gzip data" in capsys.readouterr().err
