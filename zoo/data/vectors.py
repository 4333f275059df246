"""Word-vector files: the papers' vectors by name, a one-time download into a cache, and the readers.

The catalog (`CATALOG`) names the 300-d vectors the papers used. `fetch_vectors(name)` downloads one
once (progress bar on stderr, size and checksum checked), converts it once into an indexed form in the
cache (`words.txt` + a raw float32 matrix that is memory-mapped), and returns that folder; later runs,
offline included, read only the rows they ask for (`VectorIndex.select`). `read_vector_file(path)`
reads a file the user already has: GloVe / word2vec / fastText text (plain, `.gz`, `.zip`) or word2vec
binary (`.bin`, `.bin.gz`).

Cache layout (`resolve_cache_dir()`: `cache_dir=`, else `$NLI_ZOO_CACHE`, else `$XDG_CACHE_HOME/nli-zoo`, else
`~/.cache/nli-zoo`):
```
CACHE/checksums.json              # trust-on-first-use SHA-256 of downloads that no catalogue checksum covers
CACHE/downloads/FILE              # the download; removed once converted unless keep_download=True (a file
                                  # put there by hand is checked and converted, and never removed)
CACHE/vectors/NAME/meta.json      # written last: the index is complete when it exists
CACHE/vectors/NAME/words.txt      # one word per line ("\n"-separated, UTF-8), file order
CACHE/vectors/NAME/vectors.f32    # little-endian float32 [count, dim], row i = words.txt line i
```
Every file appears under its final name only when complete (written under a temporary name, then
renamed), so a killed download or conversion never leaves a file that passes as complete; the temporary
folder a killed conversion leaves (`vectors/NAME.tmp-PID`) is removed by the next conversion of that set
once that PID no longer runs.

What is trusted: a download (or a file put into `downloads/` by hand) must have the catalogue's size and
checksum; a set whose publisher gives no checksum of the download has a pinned checksum of the file inside
the archive, checked while converting; and the vectors read must have the catalogue's count and dimension
(the structure check). A file failing any check is never converted into the index, never recorded as
trusted, and, when the user put it there, never deleted: the error names the file to delete. Every vector
read (file, index, package) must be finite and below `MAX_ABS_VALUE` in magnitude.

Example:
```python
from zoo.data.vectors import VectorIndex, fetch_vectors
index = VectorIndex(fetch_vectors("glove-840b-300d"))   # downloads once, then offline
vectors = index.select(wanted={"the", "man"}, top=1000)
```
"""

import contextlib
import dataclasses
import datetime
import gzip
import hashlib
import io
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile
import zlib

import numpy as np

from zoo import fileio
from zoo.data.readers import ZIP_DAMAGE, member_damage, zip_damage
from zoo.data.snli import DataFormatError, DataUnavailableError, _host_reachable

CACHE_ENV = "NLI_ZOO_CACHE"
INDEX_VERSION = 1
TEXT, WORD2VEC_BINARY = "text", "word2vec-binary"
OFFLINE_OPTIONS = ("--embeddings glove-6b-50d (installed with the zoo, no download) or --embeddings PATH "
                   "(a GloVe, fastText or word2vec file you already have: .txt/.vec/.gz/.zip/.bin/.bin.gz)")
_CHUNK = 1 << 20
# The largest magnitude a word-vector value may have. Trained embeddings stay small: the largest |value| of
# GloVe 6B 50-d (glove-6b-50d, all 400k x 50 values, measured) is 5.46 (the 300-d sets could not be measured
# here). 1e4 leaves three orders of magnitude of room above that and stays far below what overflows float32
# in a dot product of two 300-d vectors (about 1e18 per value): a value beyond it is taken for a damaged
# file (a shifted column, a garbled exponent), not a word vector.
MAX_ABS_VALUE = 1e4
_FINITE_RULE = f"word vectors must be finite numbers below {MAX_ABS_VALUE:g} in magnitude (a damaged file?)"


class ChecksumMismatchError(DataUnavailableError):
    """A file for a named vector set is not the published one: its size, its checksum (published, or
    recorded at the first download) or its structure (vector count, dimension) differs."""


class CacheCorruptError(DataUnavailableError):
    """A file of the vector cache is damaged (unreadable meta.json or checksums.json, an index whose files
    disagree or hold non-finite rows); the message names the exact file or folder to delete."""


class NonFiniteVectorError(DataFormatError):
    """A word vector holds NaN, an infinity (e.g. `1e39`, beyond float32) or a value above `MAX_ABS_VALUE`
    in magnitude; the message names the file and the line, record or row, and the word."""


@dataclasses.dataclass(frozen=True)
class VectorSource:
    """One downloadable vector set.

    Attributes:
        name: the name given to `--embeddings`, e.g. `"glove-840b-300d"`.
        url: where to download it (`https://`, `http://` or `file://`).
        format: `"text"` (GloVe, fastText, word2vec text) or `"word2vec-binary"`.
        dim: vector size.
        member: the file to read inside a zip archive (None: the download itself, gzip-compressed when
            its name ends in `.gz`).
        size: bytes of the download, where known.
        checksum: `(algorithm, hex digest)` of the download where a trustworthy source gives one.
        member_checksum: `(algorithm, hex digest)` of the file read from the download (the zip member, or
            the download itself when it is not an archive), checked while converting; for sets whose
            download has no known checksum.
            With neither checksum, the SHA-256 of the first download is recorded (after it passed the
            structure check and was converted) and later downloads must match it.
        checksum_source: where `size` and the checksums come from.
        count: number of vectors (for the progress bar and the disk-space check; approximate is fine).
        description: what the vectors are, for `--help` and the docs.
        rows: the exact number of vectors in the file (the structure check; None: not checked).
    """

    name: str
    url: str
    format: str
    dim: int
    member: str = None
    size: int = None
    checksum: tuple = None
    checksum_source: str = ""
    count: int = None
    description: str = ""
    rows: int = None
    member_checksum: tuple = None

    @property
    def filename(self):
        """The download's file name (the last part of the URL's path)."""
        return os.path.basename(urllib.parse.urlparse(self.url).path)


MXNET_GLOVE = ("SHA-1 pinned by Apache MXNet's text-embedding module (python/mxnet/contrib/text/_constants.py, "
               "GLOVE_PRETRAINED_FILE_SHA1), which first downloaded this file from nlp.stanford.edu/data "
               "(apache/mxnet PR #8763) and then served a copy checked against the same SHA-1")

CATALOG = {source.name: source for source in (
    VectorSource(
        "glove-840b-300d", "https://nlp.stanford.edu/data/glove.840B.300d.zip", TEXT, 300,
        member="glove.840B.300d.txt", size=2_176_768_927,
        checksum=("sha1", "8084fbacc2dee3b1fd1ca4cc534cbfff3519ed0d"), checksum_source=MXNET_GLOVE,
        count=2_196_017, rows=2_196_017,
        description="GloVe Common Crawl 840B tokens, 2.2M cased words (Wang & Jiang 2016, Chen et al. 2017, "
                    "Bowman et al. 2015); 2.0 GB zip"),
    VectorSource(
        "glove-6b-300d", "https://nlp.stanford.edu/data/glove.6B.zip", TEXT, 300,
        member="glove.6B.300d.txt", size=862_182_613,
        checksum=("sha1", "b64e54f1877d2f735bdd000c1d7d771e25c7dfdc"), checksum_source=MXNET_GLOVE,
        count=400_000, rows=400_000,
        description="GloVe Wikipedia 2014 + Gigaword 5, 6B tokens, 400k lowercased words; 822 MB zip "
                    "(holding the 50/100/200/300-d files; the 300-d one is read)"),
    VectorSource(
        "word2vec-google-news-300",
        "https://github.com/RaRe-Technologies/gensim-data/releases/download/word2vec-google-news-300/"
        "word2vec-google-news-300.gz", WORD2VEC_BINARY, 300, size=1_743_563_840,
        checksum=("md5", "a5e5354d40acb95f9ec66d5977d140ef"),
        checksum_source="MD5 and size published in gensim-data's list.json for this release asset, which "
                        "gensim's downloader checks", count=3_000_000, rows=3_000_000,
        description="word2vec GoogleNews-vectors-negative300 (binary format, gzip-compressed), 3M cased words "
                    "and phrases (Rocktaschel et al. 2016, Paria et al. 2016); 1.7 GB"),
    VectorSource(
        "fasttext-crawl-300d-2m",
        "https://dl.fbaipublicfiles.com/fasttext/vectors-english/crawl-300d-2M.vec.zip", TEXT, 300,
        member="crawl-300d-2M.vec", size=1_523_785_255, checksum=None,
        member_checksum=("sha1", "9b556504d099a6c01f3dd76b88775d02cb2f1946"),
        checksum_source="fastText publishes no checksum of the zip; its size is the one dl.fbaipublicfiles.com "
                        "served (a public wget log); the SHA-1 of crawl-300d-2M.vec, the file inside, is the one "
                        "Apache MXNet pinned when it added these vectors (apache/mxnet PR #9551, "
                        "python/mxnet/contrib/text/_constants.py, FAST_TEXT_FILE_SHA1)",
        count=2_000_000, rows=2_000_000,
        description="fastText Common Crawl 600B tokens, 2M cased words; 1.5 GB zip"),
)}


def resolve_cache_dir(cache_dir=None):
    """The cache root: `cache_dir`, else `$NLI_ZOO_CACHE`, else `$XDG_CACHE_HOME/nli-zoo`, else
    `~/.cache/nli-zoo`."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nli-zoo")
    return os.path.abspath(os.path.expanduser(os.fspath(cache_dir)))


def fetch_vectors(source, cache_dir=None, progress=True, keep_download=False):
    """Downloads and converts a catalog vector set once; returns the folder of its index.

    When the index is already in the cache nothing else happens (no network access at all).

    Args:
        source: a name from `CATALOG` or a `VectorSource`.
        cache_dir: the cache root (see `resolve_cache_dir()`).
        progress: show progress bars on stderr.
        keep_download: keep the downloaded archive after the conversion (default: remove it; a file put
            into `CACHE/downloads/` by hand is always kept).

    Returns:
        The folder holding `meta.json`, `words.txt` and `vectors.f32` (open it with `VectorIndex`).

    Raises:
        DataUnavailableError: the host cannot be reached (at once, after a 3 s connection probe), the
            download fails, or the cache cannot be written; the message names the offline options.
        ChecksumMismatchError: the file's size, checksum, vector count or dimension is not the expected
            one (the message names the file and, for a file put there by hand, says to delete it).
        CacheCorruptError: a file of the cache is damaged (the message names what to delete).
        DataFormatError: a download that passed its checksum is malformed.
    """
    if not isinstance(source, VectorSource):
        if source not in CATALOG:
            raise DataUnavailableError(f"unknown word vectors {source!r}; named vectors: "
                                       f"{', '.join(('glove-6b-50d',) + tuple(CATALOG))}")
        source = CATALOG[source]
    root = resolve_cache_dir(cache_dir)
    index_dir = os.path.join(root, "vectors", source.name)
    if _index_ready(index_dir):
        return index_dir
    try:
        os.makedirs(os.path.join(root, "vectors"), exist_ok=True)
        os.makedirs(os.path.join(root, "downloads"), exist_ok=True)
    except OSError as error:
        raise DataUnavailableError(f"cannot write the word-vector cache {root}: {error}; set "
                                   f"{CACHE_ENV} or cache_dir= to a writable folder") from None
    with _locked(os.path.join(root, "vectors", f".{source.name}.lock")):
        if _index_ready(index_dir):  # another process finished it while we waited
            return index_dir
        # The conversion folder of a killed run of this set (this set's lock is ours: no one else converts it).
        fileio.clean_stale_temporaries(os.path.join(root, "vectors"), on_remove=_removed_leftover,
                                       prefix=f"{source.name}.tmp-")
        archive, by_hand, sha256 = _download(source, root, progress)
        _say(f"converting {source.name} once into {index_dir} (later runs read only the rows they need)")
        _convert(source, root, archive, index_dir, progress, by_hand, sha256)
        if by_hand:
            _say(f"kept {archive} (it was there before this run; the index does not need it: delete it to free "
                 f"{os.path.getsize(archive) / 1e6:,.0f} MB)")
        elif not keep_download:
            os.remove(archive)
    return index_dir


def _removed_leftover(path):
    _say(f"removed {path}, left by a conversion or write that was killed (its process no longer runs)")


def _read_meta(index_dir):
    """The meta.json of an index; CacheCorruptError (naming the folder to delete) when it is unreadable."""
    remedy = f"the word-vector index {index_dir} is damaged: delete that folder to rebuild it"
    try:
        meta = fileio.read_json(os.path.join(index_dir, "meta.json"), remedy=remedy)
    except fileio.CorruptFileError as error:
        raise CacheCorruptError(str(error)) from None
    if meta is not None and not (isinstance(meta, dict) and isinstance(meta.get("dim"), int)
                                 and isinstance(meta.get("count"), int)):
        raise CacheCorruptError(f"{os.path.join(index_dir, 'meta.json')}: not an index description: {remedy}")
    return meta


def _index_ready(index_dir):
    """Whether `index_dir` holds a complete index of this version (False: none, or an older version, to be
    rebuilt). CacheCorruptError when its meta.json exists but cannot be read: rebuilding it silently would
    hide the damage, and offline it would be reported as a download failure."""
    meta = _read_meta(index_dir)
    return meta is not None and meta.get("version") == INDEX_VERSION


class VectorIndex:
    """A converted vector set in the cache: the word list in memory, the matrix memory-mapped.

    Args:
        path: a folder written by `fetch_vectors`.

    Raises:
        DataUnavailableError: the folder is not a complete index of this version.
        CacheCorruptError: its meta.json is unreadable or its files do not match it (the message names the
            folder to delete).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        meta = _read_meta(self.path)
        if meta is None or meta.get("version") != INDEX_VERSION:
            raise DataUnavailableError(f"{self.path} is not a complete word-vector index of version "
                                       f"{INDEX_VERSION}; delete it to rebuild it")
        self.meta = meta
        self.dim, self.count = int(self.meta["dim"]), int(self.meta["count"])
        matrix_path = os.path.join(self.path, "vectors.f32")
        try:
            size = os.path.getsize(matrix_path)
        except OSError:
            size = None
        if size != self.count * self.dim * 4:
            raise CacheCorruptError(f"{matrix_path} does not hold {self.count} x {self.dim} float32 values; "
                                    f"delete {self.path} to rebuild it")
        self._words = None

    @staticmethod
    def is_complete(path):
        """Whether `path` holds an index of this version (its meta.json is written last); False also when
        its meta.json is unreadable."""
        try:
            return _index_ready(os.fspath(path))
        except CacheCorruptError:
            return False

    @property
    def words(self):
        """All words in file order (row i of the matrix is `words[i]`)."""
        if self._words is None:
            try:
                with open(os.path.join(self.path, "words.txt"), "rb") as f:
                    words = f.read().decode("utf-8").split("\n")
            except (OSError, UnicodeDecodeError) as error:
                raise CacheCorruptError(f"{self.path}/words.txt cannot be read ({error}); delete {self.path} "
                                        "to rebuild it") from None
            if len(words) != self.count:
                raise CacheCorruptError(f"{self.path}/words.txt has {len(words)} words, meta.json says "
                                        f"{self.count}; delete {self.path} to rebuild it")
            self._words = words
        return self._words

    def matrix(self):
        """The `[count, dim]` float32 matrix, memory-mapped read-only."""
        return np.memmap(os.path.join(self.path, "vectors.f32"), dtype="<f4", mode="r",
                         shape=(self.count, self.dim))

    def select(self, wanted=None, top=None):
        """Reads the rows of some words.

        Args:
            wanted: a set of words, or None for every word.
            top: also take the first `top` words of the file.

        Returns:
            dict word -> float32 `[dim]`, in file order (so with `top` its first entries are the file's
            first `top` words).

        Raises:
            NonFiniteVectorError: a row read holds NaN, an infinity or an absurd magnitude (the index was
                damaged after it was written: the message names the row, the word and the folder to delete).
        """
        words, matrix = self.words, self.matrix()
        top = self.count if wanted is None else min(int(top or 0), self.count)
        rest = [] if wanted is None else [i for i in range(top, self.count) if words[i] in wanted]
        values = np.concatenate([np.array(matrix[:top], dtype=np.float32),  # one contiguous read
                                 np.array(matrix[np.asarray(rest, dtype=np.int64)], dtype=np.float32)])
        rows = list(range(top)) + rest
        bad = first_bad_row(values)
        if bad is not None:
            row = rows[bad]
            raise NonFiniteVectorError(
                f"{os.path.join(self.path, 'vectors.f32')}: row {row} ({words[row]!r}): "
                f"{describe_bad_value(values[bad])}; the index was damaged after it was written: delete {self.path} "
                "to rebuild it")
        return {words[i]: values[k] for k, i in enumerate(rows)}


def first_bad_row(values):
    """The index of the first row of a `[n, dim]` array holding NaN, an infinity or a value beyond
    `MAX_ABS_VALUE` in magnitude, or None."""
    if not len(values):
        return None
    ok = np.abs(values).max(axis=1) <= MAX_ABS_VALUE  # NaN compares False
    return None if ok.all() else int(np.argmin(ok))


def describe_bad_value(vector, written=None):
    """What is wrong with `vector` (see `first_bad_row`), e.g. "value 3 of 300 is an infinity ('1e39' as
    written: beyond float32's range)"; `written`: the values as text, when read from text."""
    i = int(np.argmin(np.abs(vector) <= MAX_ABS_VALUE))
    value = float(vector[i])
    text = written[i] if written is not None and i < len(written) else None
    if np.isnan(value):
        what = "NaN"
    elif np.isinf(value):
        what = "an infinity"
        if text is not None and "inf" not in text.lower():
            what += " (beyond float32's range, about 3.4e38)"
    else:
        what = f"{value:.4g}, beyond {MAX_ABS_VALUE:g} in magnitude (no word vector has such values)"
    return f"value {i + 1} of {len(vector)} is {what}" + (f" ({text!r} as written)" if text is not None else "")


def read_vector_file(path, wanted=None, top=None):
    """Reads a vector file the user has, keeping only some words.

    Args:
        path: GloVe / fastText / word2vec text (`word v1 ... vD` lines, an optional `COUNT DIM` header;
            plain, `.gz`, or `.zip` whose first file is read), or word2vec binary (`.bin`, `.bin.gz`, or
            a `.bin` inside a zip).
        wanted: a set of words to keep, or None for all.
        top: also keep the first `top` distinct words of the file.

    Returns:
        `(vectors, dim)`: dict word -> float32 `[dim]` in file order (a word listed twice keeps its first
        vector), and the dimension.

    Raises:
        DataFormatError: a malformed line or record (the message names the file and line or record).
    """
    path = os.fspath(path)
    top = int(top or 0)
    vectors, dim, counted = {}, None, 0
    with open_vector_file(path) as pairs:
        for word, vector in pairs:
            if dim is None:
                dim = len(vector)
            if word in vectors:
                continue
            in_top = counted < top
            counted += in_top
            if wanted is None or in_top or word in wanted:
                vectors[word] = np.array(vector, dtype=np.float32)
            if wanted is not None and not wanted and counted >= top:
                break  # only the first `top` words were asked for
    if dim is None:
        raise DataFormatError(f"{os.path.basename(path)}: no vectors found")
    return vectors, dim


@contextlib.contextmanager
def open_vector_file(path, member=None, format=None, digest=None):
    """Opens a vector file and yields an iterator of `(word, float32 vector)` in file order.

    Args:
        path: the file (plain, `.gz` or `.zip`).
        member: the file inside a zip archive (default: its first file); given, `path` must be a zip.
        format: `"text"` or `"word2vec-binary"` (default: binary when the file or member ends in `.bin`
            or `.bin.gz`).
        digest: a hashlib object fed with every byte of the file read (the zip member, or the file
            decompressed); when the iteration ends, the rest of the file is read into it too.

    Raises (also while iterating):
        DataFormatError: a malformed line or record, a non-finite value (`NonFiniteVectorError`), or a
            damaged archive: a zip member failing its CRC, truncated or corrupt compressed data, a file
            that should be a zip and is not (one line naming the archive and the member).
    """
    path = os.fspath(path)
    name = os.path.basename(path)
    if zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            raise DataFormatError(f"{path}: corrupt zip archive ({error}); get the file again") from None
        with archive:
            if member is None:
                members = [n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX")]
                if not members:
                    raise DataFormatError(f"{name}: empty zip archive")
                member = members[0]
            elif member not in archive.namelist():
                raise DataFormatError(f"{name}: no file {member!r} in the archive")
            try:
                with archive.open(member) as raw:
                    yield from _read_pairs(raw, f"{name}:{member}", format or _format_of(member), digest)
            except ZIP_DAMAGE as error:
                raise zip_damage(error, path, member) from None
            except DataFormatError:
                # A damaged member often shows first as a malformed line: report the damage, not the line.
                damage = member_damage(archive, path, member)
                if damage:
                    raise damage from None
                raise
        return
    if member is not None:
        raise DataFormatError(f"{name}: not a zip archive (it should hold {member}): corrupt or truncated")
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as raw:
            yield from _read_pairs(raw, name, format or _format_of(path[:-3] if path.endswith(".gz") else path),
                                   digest)
    except (gzip.BadGzipFile, zlib.error, EOFError) as error:
        text = str(error).strip() or type(error).__name__
        what = "cut short" if isinstance(error, EOFError) else "corrupt"
        raise DataFormatError(f"{path}: its compressed data are {what} ({text}): the file is damaged; get it "
                              "again") from None


def _read_pairs(raw, name, format, digest):
    """The body of `open_vector_file` (a generator that yields once): the pairs of `raw`, hashed when asked."""
    source = raw
    if digest is not None:
        raw = io.BufferedReader(_HashingReader(source, digest), buffer_size=_CHUNK)
    yield _pairs(raw, name, format)
    if digest is not None:  # the bytes after the last record (or the last newline) count too
        while chunk := source.read(_CHUNK):  # (the text layer may have closed `raw` already)
            digest.update(chunk)


def _format_of(filename):
    return WORD2VEC_BINARY if filename.endswith(".bin") else TEXT


def _pairs(raw, name, format):
    if format == WORD2VEC_BINARY:
        return iter_word2vec_binary(raw, name)
    return iter_text_vectors(io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n"), name)


def iter_text_vectors(lines, name):
    """Parses `word v1 ... vD` lines (GloVe; fastText and word2vec text start with a `COUNT DIM` header).

    A few GloVe 840B words contain spaces: when a line has more fields than `D + 1` and the field before
    the last `D` is not a number, those first fields are the word.

    Args:
        lines: an iterable of text lines.
        name: the file name for error messages.

    Yields:
        `(word, float32 [D])`.

    Raises:
        DataFormatError: `FILE:LINE: ...` for a line with the wrong number of values or a non-number.
        NonFiniteVectorError: `FILE:LINE: ...` for NaN, an infinity (`inf`, or `1e39`: beyond float32) or
            a value beyond `MAX_ABS_VALUE` in magnitude.
    """
    dim = None
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r\n").rstrip(" ")
        if not line:
            continue
        if lineno == 1:
            head = line.split(" ")
            if len(head) == 2 and head[0].isdigit() and head[1].isdigit():
                dim = int(head[1])  # "COUNT DIM" header
                continue
        if dim is None:
            dim = line.count(" ")
            if dim < 1:
                raise DataFormatError(f"{name}:{lineno}: expected a word followed by its vector")
        spaces = line.count(" ")
        if spaces == dim:
            cut = line.index(" ")
            word, values = line[:cut], line[cut + 1:]
        else:
            fields = line.split(" ")
            if spaces < dim or _is_float(fields[-dim - 1]):
                raise DataFormatError(f"{name}:{lineno}: expected {dim} values, got {len(fields) - 1}")
            word, values = " ".join(fields[:-dim]), " ".join(fields[-dim:])
        vector = _parse_values(values, dim)
        if vector is None:
            raise DataFormatError(f"{name}:{lineno}: non-numeric value in the vector of {word!r}")
        if not np.abs(vector).max() <= MAX_ABS_VALUE:  # NaN compares False
            raise NonFiniteVectorError(f"{name}:{lineno}: the vector of {word!r}: "
                                       f"{describe_bad_value(vector, values.split(' '))}; {_FINITE_RULE}")
        yield word, vector


def _is_float(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _parse_values(text, dim):
    """`dim` space-separated numbers -> float32 array, or None when they are not exactly that."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # numpy warns (and truncates) on a non-number
        try:
            vector = np.fromstring(text, dtype=np.float32, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return vector if vector.size == dim else None


def iter_word2vec_binary(f, name):
    """Parses the word2vec binary format: a `COUNT DIM` text line, then per word its UTF-8 bytes, a space
    and DIM little-endian float32 values (the C tool also writes a newline after each vector).

    Args:
        f: a binary file object.
        name: the file name for error messages.

    Yields:
        `(word, float32 [DIM])` (the array is read-only; copy it to keep it).

    Raises:
        DataFormatError: a missing header, or fewer records than the header announces.
        NonFiniteVectorError: a record holding NaN, an infinity or a value beyond `MAX_ABS_VALUE`.
    """
    header = f.readline(200)
    try:
        count, dim = (int(x) for x in header.split())
    except ValueError:
        raise DataFormatError(f"{name}:1: expected the word2vec header 'COUNT DIM', got {header[:40]!r}") from None
    if count < 0 or dim < 1:
        raise DataFormatError(f"{name}:1: bad word2vec header {header.strip()!r}")
    width = 4 * dim
    buf, pos = b"", 0
    for index in range(count):
        while True:
            cut = buf.find(b" ", pos)
            if cut >= 0 and len(buf) - cut - 1 >= width:
                break
            chunk = f.read(_CHUNK)
            if not chunk:
                raise DataFormatError(f"{name}: record {index + 1}: the file ends, but its header announces "
                                      f"{count} vectors")
            buf, pos = buf[pos:] + chunk, 0
        word = buf[pos:cut].lstrip(b"\r\n").decode("utf-8", errors="replace")
        vector = np.frombuffer(buf, dtype="<f4", count=dim, offset=cut + 1)
        if not np.abs(vector).max() <= MAX_ABS_VALUE:  # NaN compares False
            raise NonFiniteVectorError(f"{name}: record {index + 1} ({word!r}): {describe_bad_value(vector)}; "
                                       f"{_FINITE_RULE}")
        yield word, vector
        pos = cut + 1 + width


# ---------------------------------------------------------------- download and conversion

def _say(message):
    print(f"[vectors] {message}", file=sys.stderr, flush=True)


class _Progress:
    """A progress bar on stderr: redrawn in place on a terminal, a line per 10% otherwise."""

    def __init__(self, label, total=None, unit="MB", scale=1e6, enabled=True):
        self.label, self.total, self.unit, self.scale, self.enabled = label, total, unit, scale, enabled
        self.start = self.last = time.monotonic()
        self.done, self.step = 0, -1
        self.tty = enabled and sys.stderr.isatty()

    def update(self, done):
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        fraction = done / self.total if self.total else None
        if self.tty:
            if now - self.last >= 0.25:
                self.last = now
                sys.stderr.write("\r" + self._line(now, fraction))
                sys.stderr.flush()
        elif fraction is not None and int(fraction * 10) > self.step:
            self.step = int(fraction * 10)
            print(self._line(now, fraction), file=sys.stderr, flush=True)

    def close(self):
        if self.enabled:
            now = time.monotonic()
            fraction = self.done / self.total if self.total else None
            print(("\r" if self.tty else "") + self._line(now, fraction) + " done", file=sys.stderr, flush=True)

    def _line(self, now, fraction):
        rate = self.done / self.scale / max(now - self.start, 1e-6)
        text = f"[vectors] {self.label}: {self.done / self.scale:,.1f}"
        if self.total:
            text += f"/{self.total / self.scale:,.1f}"
        text += f" {self.unit}"
        if fraction is not None:
            width = 30
            filled = min(width, int(fraction * width))
            text += f" [{'#' * filled}{'.' * (width - filled)}] {min(fraction, 1.0):.0%}"
        return text + f" {rate:,.1f} {self.unit}/s"


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock on `path` (POSIX), so that two processes do not build the same index."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _checksums_path(root):
    return os.path.join(root, "checksums.json")


_RECORDS_NOTE = ("it holds only the SHA-256 recorded at the first download of vector sets the catalogue has no "
                 "checksum for")


def _recorded(root):
    path = _checksums_path(root)
    remedy = f"delete it ({_RECORDS_NOTE}; they are recorded again at the next download)"
    try:
        records = fileio.read_json(path, default={}, remedy=remedy)
    except fileio.CorruptFileError as error:
        raise CacheCorruptError(str(error)) from None
    if not isinstance(records, dict):
        raise CacheCorruptError(f"{path}: not a record of checksums: {remedy}")
    return records


def _record(root, source, sha256, size):
    with _locked(os.path.join(root, ".checksums.lock")):  # two sets converted at once both record
        fileio.clean_stale_temporaries(root, on_remove=_removed_leftover, prefix=".checksums.json.tmp-")
        records = _recorded(root)
        records[source.url] = {"name": source.name, "file": source.filename, "size": size, "sha256": sha256,
                               "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        fileio.write_json(_checksums_path(root), records, indent=1)


def _trust_on_first_use(source):
    """Whether no catalogue checksum covers `source` (neither of its download nor of the file inside)."""
    return source.checksum is None and source.member_checksum is None


def _expected(source, root):
    """`(algorithm, hex digest, where from)` the download must match, or None (the catalogue has no
    checksum of the download: a checksum of the file inside it, or none at all and this is the first use)."""
    if source.checksum:
        return source.checksum[0], source.checksum[1].lower(), source.checksum_source
    if not _trust_on_first_use(source):
        return None
    record = _recorded(root).get(source.url)
    if record:
        return "sha256", record["sha256"], f"recorded at the first download on {record['recorded']}"
    return None


def _offline(source, detail):
    return DataUnavailableError(
        f"cannot download word vectors {source.name!r}: {detail}. Offline options: {OFFLINE_OPTIONS}")


def _probe_address(url):
    """The `(host, port)` a download of `url` connects to first (the proxy, when one is set)."""
    parts = urllib.parse.urlparse(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        proxy_parts = urllib.parse.urlparse(proxy if "://" in proxy else f"http://{proxy}")
        return proxy_parts.hostname, proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _check_space(root, source):
    need = (source.size or 0) + (source.count or 0) * (source.dim * 4 + 16)
    free = shutil.disk_usage(root).free
    if need and free < need:
        raise DataUnavailableError(f"{source.name} needs about {need / 1e9:.1f} GB free in {root} (download and "
                                   f"index), {free / 1e9:.1f} GB are; set {CACHE_ENV} or cache_dir= elsewhere")


def _hashes(source, expected):
    """The hash objects a download is fed to: the expected checksum's, and SHA-256 to record on first use."""
    hashes = {}
    if expected:
        hashes[expected[0]] = hashlib.new(expected[0])
    if _trust_on_first_use(source):
        hashes.setdefault("sha256", hashlib.sha256())
    return hashes


def _download(source, root, progress):
    """Downloads `source` into `root/downloads` once (atomically, checked).

    Returns:
        `(path, by_hand, sha256)`: `by_hand` when the file was there before (put there by hand, or kept
        from an earlier run): it is checked, never removed; `sha256` of the file when no catalogue checksum
        covers it (to record once the conversion succeeded), else None.
    """
    target = os.path.join(root, "downloads", source.filename)
    expected = _expected(source, root)
    hashes = _hashes(source, expected)
    if os.path.exists(target):  # kept from an earlier run, or put there by hand
        size = 0 if hashes else os.path.getsize(target)
        with open(target, "rb") as f:
            while hashes and (chunk := f.read(_CHUNK)):
                size += len(chunk)
                for h in hashes.values():
                    h.update(chunk)
        _verify(source, root, target, size, hashes, expected, by_hand=True)
        return target, True, hashes["sha256"].hexdigest() if "sha256" in hashes else None
    if urllib.parse.urlparse(source.url).scheme in ("http", "https"):
        address = _probe_address(source.url)
        if not _host_reachable(address):
            raise _offline(source, f"{address[0]} cannot be reached (no network?)")
        _check_space(root, source)
    _say(f"downloading {source.name} ({source.size / 1e9:.2f} GB) from {source.url}" if source.size else
         f"downloading {source.name} from {source.url}")
    part = target + ".part"  # under the lock: a leftover one is from a killed run
    size = 0
    try:
        with urllib.request.urlopen(source.url, timeout=60) as response, open(part, "wb") as out:
            length = response.headers.get("Content-Length")
            bar = _Progress(f"downloading {source.filename}", int(length) if length and length.isdigit()
                            else source.size, enabled=progress)
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                size += len(chunk)
                for h in hashes.values():
                    h.update(chunk)
                bar.update(size)
            out.flush()
            os.fsync(out.fileno())
            bar.close()
    except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
        with contextlib.suppress(OSError):
            os.remove(part)
        raise _offline(source, f"{source.url}: {getattr(error, 'reason', error)}") from None
    _verify(source, root, part, size, hashes, expected, by_hand=False)
    os.replace(part, target)
    return target, False, hashes["sha256"].hexdigest() if "sha256" in hashes else None


def _verify(source, root, path, size, hashes, expected, by_hand):
    """Checks the size and the expected checksum of a download; raises ChecksumMismatchError (see
    `_mismatch`) when one differs."""
    problem = None
    if source.size and size != source.size:
        problem = f"it has {size:,} bytes, expected {source.size:,} ({source.checksum_source})"
    elif expected and hashes[expected[0]].hexdigest() != expected[1]:
        problem = (f"its {expected[0]} is {hashes[expected[0]].hexdigest()}, expected {expected[1]} "
                   f"({expected[2]})")
    if problem:
        raise _mismatch(source, root, path, problem, by_hand, recorded=bool(expected) and not source.checksum)


def _mismatch(source, root, path, problem, by_hand, recorded=False):
    """The ChecksumMismatchError of a file that is not the one expected, with the exact remedy; a file this
    run downloaded is removed, a file put there by hand is left in place (the message names it)."""
    if by_hand:
        head = f"{source.name}: {path} (put there by hand, or kept from an earlier download) failed its check"
        what = (f"it was left in place and not converted: delete {path} to download it again, or replace it with "
                f"the published {source.filename} from {source.url}")
    else:
        with contextlib.suppress(OSError):
            os.remove(path)
        head = f"{source.name}: {source.filename} from {source.url} failed its check"
        what = ("the download was removed; the host may now serve a different file, or the transfer was "
                "corrupted: retry")
    if recorded:
        what += (f"; if you trust this file over the one recorded at its first download, delete the entry of "
                 f"{source.url} in {_checksums_path(root)} ({_RECORDS_NOTE})")
    return ChecksumMismatchError(f"{head}: {problem}; {what}. Or pass a file you trust with --embeddings PATH")


def _convert(source, root, archive, index_dir, progress, by_hand, sha256):
    """Converts a checked download into the index, after the structure check; records its SHA-256 when no
    catalogue checksum covers it, only once the conversion succeeded."""
    pinned = source.checksum is not None  # the download matched a published checksum in _download

    def refuse(problem):
        return _mismatch(source, root, archive, problem, by_hand, recorded=_trust_on_first_use(source) and
                         source.url in _recorded(root))

    try:
        _build_index(source, archive, index_dir, progress, refuse, pinned)
    except DataFormatError as error:
        if pinned:  # the published file itself: keep it, the message names the line
            raise
        raise refuse(f"it cannot be read as {source.name} ({error})") from None
    if sha256 is not None and source.url not in _recorded(root):
        _record(root, source, sha256, os.path.getsize(archive))
        _say(f"{source.name}: no published checksum; recorded sha256 {sha256} in {_checksums_path(root)} "
             f"(trust on first use, after the structure check): later downloads must match it")


class _HashingReader(io.RawIOBase):
    """A read-only stream that feeds every byte it reads from `raw` to the hash object `digest`."""

    def __init__(self, raw, digest):
        self.raw, self.digest = raw, digest

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.raw.read(len(buffer))
        self.digest.update(data)
        buffer[:len(data)] = data
        return len(data)


def _build_index(source, archive, index_dir, progress, refuse, pinned):
    """Converts the downloaded file into `index_dir` (words.txt, vectors.f32, then meta.json), atomically,
    after the structure check: the catalogue's dimension, vector count (`source.rows`) and checksum of the
    file inside the archive (`source.member_checksum`). `refuse(problem)` gives the error to raise; a count
    that differs from the catalogue's in a file that matched a published checksum (of the download:
    `pinned`, or of the file inside) is reported, not refused: the catalogue is wrong then, not the file."""
    tmp = f"{index_dir}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    words, seen, duplicates, skipped, dim, rows = [], set(), 0, 0, None, 0
    digest = hashlib.new(source.member_checksum[0]) if source.member_checksum else None
    bar = _Progress(f"converting {source.name}", source.count, unit="k vectors", scale=1e3, enabled=progress)
    try:
        with open_vector_file(archive, member=source.member, format=source.format, digest=digest) as pairs, \
                open(os.path.join(tmp, "vectors.f32"), "wb") as out:
            for word, vector in pairs:
                rows += 1
                if dim is None:
                    dim = len(vector)
                    if dim != source.dim:
                        raise DataFormatError(f"{source.filename}: vectors have {dim} values, the catalog says "
                                              f"{source.dim}")
                if word in seen:
                    duplicates += 1
                    continue
                if "\n" in word:
                    skipped += 1
                    continue
                seen.add(word)
                words.append(word)
                out.write(np.asarray(vector, dtype="<f4").tobytes())
                if len(words) % 10_000 == 0:
                    bar.update(len(words))
            bar.update(len(words))
            bar.close()
            out.flush()
            os.fsync(out.fileno())
        if not words:
            raise DataFormatError(f"{source.filename}: no vectors found")
        structure = None
        if source.rows is not None and rows != source.rows:
            structure = (f"it holds {rows:,} vectors of {dim} values, the catalogue says {source.rows:,} of "
                         f"{source.dim}")
        if digest is not None and digest.hexdigest() != source.member_checksum[1].lower():
            raise refuse((f"{structure}, and " if structure else "")
                         + f"its {source.member or 'content'} has {source.member_checksum[0]} {digest.hexdigest()}, "
                         f"expected {source.member_checksum[1].lower()} ({source.checksum_source})")
        if structure and not (pinned or digest is not None):
            raise refuse(structure)
        if structure:
            _say(f"warning: {source.name}: {structure}; the file matched its published checksum, so it is used "
                 "(the catalogue's count is wrong)")
        with open(os.path.join(tmp, "words.txt"), "wb") as f:
            f.write("\n".join(words).encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        meta = {"version": INDEX_VERSION, "name": source.name, "dim": dim, "count": len(words),
                "url": source.url, "file": source.filename, "rows": rows, "duplicates_skipped": duplicates,
                "words_with_newline_skipped": skipped}
        fileio.write_json(os.path.join(tmp, "meta.json"), meta, indent=1)
        shutil.rmtree(index_dir, ignore_errors=True)  # an incomplete one (no meta.json of this version)
        os.replace(tmp, index_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _say(f"{source.name}: {len(words):,} vectors of {dim} values in {index_dir}"
         + (f" ({duplicates} repeated words kept once)" if duplicates else ""))
