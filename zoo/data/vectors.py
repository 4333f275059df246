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
CACHE/checksums.json              # trust-on-first-use SHA-256 of downloads that publish no checksum
CACHE/downloads/FILE              # the download; removed once converted unless keep_download=True
CACHE/vectors/NAME/meta.json      # written last: the index is complete when it exists
CACHE/vectors/NAME/words.txt      # one word per line ("\n"-separated, UTF-8), file order
CACHE/vectors/NAME/vectors.f32    # little-endian float32 [count, dim], row i = words.txt line i
```
Every file appears under its final name only when complete (written under a temporary name, then
renamed), so a killed download or conversion never leaves a file that passes as complete.

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
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile

import numpy as np

from zoo.data.snli import DataFormatError, DataUnavailableError, _host_reachable

CACHE_ENV = "NLI_ZOO_CACHE"
INDEX_VERSION = 1
TEXT, WORD2VEC_BINARY = "text", "word2vec-binary"
OFFLINE_OPTIONS = ("--embeddings glove-6b-50d (installed with the zoo, no download) or --embeddings PATH "
                   "(a GloVe, fastText or word2vec file you already have: .txt/.vec/.gz/.zip/.bin/.bin.gz)")
_CHUNK = 1 << 20


class ChecksumMismatchError(DataUnavailableError):
    """A download's size or checksum differs from the published or first recorded one."""


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
        checksum: `(algorithm, hex digest)` of the download where a trustworthy source publishes one;
            None: the SHA-256 of the first download is recorded and later downloads must match it.
        checksum_source: where `size` and `checksum` come from.
        count: number of vectors (for the progress bar and the disk-space check; approximate is fine).
        description: what the vectors are, for `--help` and the docs.
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

    @property
    def filename(self):
        """The download's file name (the last part of the URL's path)."""
        return os.path.basename(urllib.parse.urlparse(self.url).path)


CATALOG = {source.name: source for source in (
    VectorSource(
        "glove-840b-300d", "https://nlp.stanford.edu/data/glove.840B.300d.zip", TEXT, 300,
        member="glove.840B.300d.txt", size=2_176_768_927,
        checksum=("sha1", "8084fbacc2dee3b1fd1ca4cc534cbfff3519ed0d"),
        checksum_source="SHA-1 pinned by Apache MXNet's text-embedding module, which downloaded this file "
                        "from nlp.stanford.edu/data and checked it", count=2_196_017,
        description="GloVe Common Crawl 840B tokens, 2.2M cased words (Wang & Jiang 2016, Chen et al. 2017, "
                    "Bowman et al. 2015); 2.0 GB zip"),
    VectorSource(
        "glove-6b-300d", "https://nlp.stanford.edu/data/glove.6B.zip", TEXT, 300,
        member="glove.6B.300d.txt", size=862_182_613,
        checksum=("sha1", "b64e54f1877d2f735bdd000c1d7d771e25c7dfdc"),
        checksum_source="SHA-1 pinned by Apache MXNet's text-embedding module, which downloaded this file "
                        "from nlp.stanford.edu/data and checked it", count=400_000,
        description="GloVe Wikipedia 2014 + Gigaword 5, 6B tokens, 400k lowercased words; 822 MB zip "
                    "(holding the 50/100/200/300-d files; the 300-d one is read)"),
    VectorSource(
        "word2vec-google-news-300",
        "https://github.com/RaRe-Technologies/gensim-data/releases/download/word2vec-google-news-300/"
        "word2vec-google-news-300.gz", WORD2VEC_BINARY, 300, size=1_743_563_840,
        checksum=("md5", "a5e5354d40acb95f9ec66d5977d140ef"),
        checksum_source="MD5 and size published in gensim-data's list.json for this release asset, which "
                        "gensim's downloader checks", count=3_000_000,
        description="word2vec GoogleNews-vectors-negative300 (binary format, gzip-compressed), 3M cased words "
                    "and phrases (Rocktaschel et al. 2016, Paria et al. 2016); 1.7 GB"),
    VectorSource(
        "fasttext-crawl-300d-2m",
        "https://dl.fbaipublicfiles.com/fasttext/vectors-english/crawl-300d-2M.vec.zip", TEXT, 300,
        member="crawl-300d-2M.vec", size=1_523_785_255, checksum=None,
        checksum_source="size from public download logs; no published checksum: the SHA-256 of the first "
                        "download is recorded and checked afterwards", count=2_000_000,
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
        keep_download: keep the downloaded archive after the conversion (default: remove it).

    Returns:
        The folder holding `meta.json`, `words.txt` and `vectors.f32` (open it with `VectorIndex`).

    Raises:
        DataUnavailableError: the host cannot be reached (at once, after a 3 s connection probe), the
            download fails, or the cache cannot be written; the message names the offline options.
        ChecksumMismatchError: the download's size or checksum is not the expected one.
        DataFormatError: the downloaded file is malformed.
    """
    if not isinstance(source, VectorSource):
        if source not in CATALOG:
            raise DataUnavailableError(f"unknown word vectors {source!r}; named vectors: "
                                       f"{', '.join(('glove-6b-50d',) + tuple(CATALOG))}")
        source = CATALOG[source]
    root = resolve_cache_dir(cache_dir)
    index_dir = os.path.join(root, "vectors", source.name)
    if VectorIndex.is_complete(index_dir):
        return index_dir
    try:
        os.makedirs(os.path.join(root, "vectors"), exist_ok=True)
        os.makedirs(os.path.join(root, "downloads"), exist_ok=True)
    except OSError as error:
        raise DataUnavailableError(f"cannot write the word-vector cache {root}: {error}; set "
                                   f"{CACHE_ENV} or cache_dir= to a writable folder") from None
    with _locked(os.path.join(root, "vectors", f".{source.name}.lock")):
        if VectorIndex.is_complete(index_dir):  # another process finished it while we waited
            return index_dir
        archive = _download(source, root, progress)
        _say(f"converting {source.name} once into {index_dir} (later runs read only the rows they need)")
        _build_index(source, archive, index_dir, progress)
        if not keep_download:
            os.remove(archive)
    return index_dir


class VectorIndex:
    """A converted vector set in the cache: the word list in memory, the matrix memory-mapped.

    Args:
        path: a folder written by `fetch_vectors`.

    Raises:
        DataUnavailableError: the folder is not a complete index, or its files do not match meta.json.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        if not self.is_complete(self.path):
            raise DataUnavailableError(f"{self.path} is not a complete word-vector index")
        with open(os.path.join(self.path, "meta.json"), encoding="utf-8") as f:
            self.meta = json.load(f)
        self.dim, self.count = int(self.meta["dim"]), int(self.meta["count"])
        matrix_path = os.path.join(self.path, "vectors.f32")
        if os.path.getsize(matrix_path) != self.count * self.dim * 4:
            raise DataUnavailableError(f"{matrix_path} does not hold {self.count} x {self.dim} float32 values; "
                                       f"delete {self.path} to rebuild it")
        self._words = None

    @staticmethod
    def is_complete(path):
        """Whether `path` holds an index of this version (its meta.json is written last)."""
        try:
            with open(os.path.join(path, "meta.json"), encoding="utf-8") as f:
                return json.load(f).get("version") == INDEX_VERSION
        except (OSError, ValueError):
            return False

    @property
    def words(self):
        """All words in file order (row i of the matrix is `words[i]`)."""
        if self._words is None:
            with open(os.path.join(self.path, "words.txt"), "rb") as f:
                words = f.read().decode("utf-8").split("\n")
            if len(words) != self.count:
                raise DataUnavailableError(f"{self.path}/words.txt has {len(words)} words, meta.json says "
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
        """
        words, matrix = self.words, self.matrix()
        top = self.count if wanted is None else min(int(top or 0), self.count)
        rest = [] if wanted is None else [i for i in range(top, self.count) if words[i] in wanted]
        values = np.concatenate([np.array(matrix[:top], dtype=np.float32),  # one contiguous read
                                 np.array(matrix[np.asarray(rest, dtype=np.int64)], dtype=np.float32)])
        return {words[i]: values[k] for k, i in enumerate(list(range(top)) + rest)}


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
def open_vector_file(path, member=None, format=None):
    """Opens a vector file and yields an iterator of `(word, float32 vector)` in file order.

    Args:
        path: the file (plain, `.gz` or `.zip`).
        member: the file inside a zip archive (default: its first file).
        format: `"text"` or `"word2vec-binary"` (default: binary when the file or member ends in `.bin`
            or `.bin.gz`).
    """
    name = os.path.basename(path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if member is None:
                members = [n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX")]
                if not members:
                    raise DataFormatError(f"{name}: empty zip archive")
                member = members[0]
            elif member not in archive.namelist():
                raise DataFormatError(f"{name}: no file {member!r} in the archive")
            with archive.open(member) as raw:
                yield _pairs(raw, f"{name}:{member}", format or _format_of(member))
        return
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as raw:
        yield _pairs(raw, name, format or _format_of(path[:-3] if path.endswith(".gz") else path))


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
        yield word, np.frombuffer(buf, dtype="<f4", count=dim, offset=cut + 1)
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


def _recorded(root):
    try:
        with open(_checksums_path(root), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
    except ValueError:
        raise DataUnavailableError(f"{_checksums_path(root)} is not valid JSON; delete it") from None


def _record(root, source, sha256, size):
    records = _recorded(root)
    records[source.url] = {"name": source.name, "file": source.filename, "size": size, "sha256": sha256,
                           "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    _write_atomically(_checksums_path(root), json.dumps(records, indent=1, sort_keys=True).encode("utf-8"))


def _write_atomically(path, data):
    part = f"{path}.part-{os.getpid()}"
    with open(part, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)


def _expected(source, root):
    """`(algorithm, hex digest, where from)` the download must match, or None on first use."""
    if source.checksum:
        return source.checksum[0], source.checksum[1].lower(), source.checksum_source
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


def _download(source, root, progress):
    """Downloads `source` into `root/downloads` once (atomically, checked) and returns its path."""
    target = os.path.join(root, "downloads", source.filename)
    expected = _expected(source, root)
    if os.path.exists(target):  # kept from an earlier run, or put there by hand
        hashes = {"sha256": hashlib.sha256()}
        if expected:
            hashes.setdefault(expected[0], hashlib.new(expected[0]))
        size = 0
        with open(target, "rb") as f:
            while chunk := f.read(_CHUNK):
                size += len(chunk)
                for h in hashes.values():
                    h.update(chunk)
        _verify(source, root, target, size, hashes, expected, remove=False)
        return target
    if urllib.parse.urlparse(source.url).scheme in ("http", "https"):
        address = _probe_address(source.url)
        if not _host_reachable(address):
            raise _offline(source, f"{address[0]} cannot be reached (no network?)")
        _check_space(root, source)
    _say(f"downloading {source.name} ({source.size / 1e9:.2f} GB) from {source.url}" if source.size else
         f"downloading {source.name} from {source.url}")
    part = target + ".part"  # under the lock: a leftover one is from a killed run
    hashes = {"sha256": hashlib.sha256()}
    if expected:
        hashes.setdefault(expected[0], hashlib.new(expected[0]))
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
    _verify(source, root, part, size, hashes, expected, remove=True)
    os.replace(part, target)
    return target


def _verify(source, root, path, size, hashes, expected, remove):
    """Checks size and checksum; records the SHA-256 on first use; removes a bad new download."""
    problem = None
    if source.size and size != source.size:
        problem = f"it has {size:,} bytes, expected {source.size:,} ({source.checksum_source})"
    elif expected and hashes[expected[0]].hexdigest() != expected[1]:
        problem = (f"its {expected[0]} is {hashes[expected[0]].hexdigest()}, expected {expected[1]} "
                   f"({expected[2]})")
    if problem:
        if remove:
            os.remove(path)
        what = "the download was removed" if remove else f"delete {path} to download it again"
        raise ChecksumMismatchError(
            f"{source.name}: {source.filename} from {source.url} failed its check: {problem}; {what}. The host "
            f"may now serve a different file, or the transfer was corrupted: retry, or pass a file you trust "
            f"with --embeddings PATH")
    if expected is None:
        sha256 = hashes["sha256"].hexdigest()
        _record(root, source, sha256, size)
        _say(f"{source.name}: no published checksum; recorded sha256 {sha256} in {_checksums_path(root)} "
             f"(trust on first use): later downloads must match it")


def _build_index(source, archive, index_dir, progress):
    """Converts the downloaded file into `index_dir` (words.txt, vectors.f32, then meta.json), atomically."""
    tmp = f"{index_dir}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    words, seen, duplicates, skipped, dim = [], set(), 0, 0, None
    bar = _Progress(f"converting {source.name}", source.count, unit="k vectors", scale=1e3, enabled=progress)
    try:
        with open_vector_file(archive, member=source.member, format=source.format) as pairs, \
                open(os.path.join(tmp, "vectors.f32"), "wb") as out:
            for word, vector in pairs:
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
        if not words:
            raise DataFormatError(f"{source.filename}: no vectors found")
        with open(os.path.join(tmp, "words.txt"), "wb") as f:
            f.write("\n".join(words).encode("utf-8"))
        meta = {"version": INDEX_VERSION, "name": source.name, "dim": dim, "count": len(words),
                "url": source.url, "file": source.filename, "duplicates_skipped": duplicates,
                "words_with_newline_skipped": skipped}
        with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
        shutil.rmtree(index_dir, ignore_errors=True)  # an incomplete one (no meta.json of this version)
        os.replace(tmp, index_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _say(f"{source.name}: {len(words):,} vectors of {dim} values in {index_dir}"
         + (f" ({duplicates} repeated words kept once)" if duplicates else ""))
