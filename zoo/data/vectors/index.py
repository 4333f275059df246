"""The converted form of a vector set in the cache: a word list and a memory-mapped float32 matrix, each
with the SHA-256 recorded when it was written and checked whenever the index is opened.

```
CACHE/vectors/NAME/meta.json      # written last: the index is complete when it exists; holds the SHA-256
                                  # of the two files below
CACHE/vectors/NAME/words.txt      # one word per line ("\n"-separated, UTF-8), file order
CACHE/vectors/NAME/vectors.f32    # little-endian float32 [count, dim], row i = words.txt line i
```

`IndexWriter` writes one (in a temporary folder `NAME.tmp-PID`, renamed into place whole); `VectorIndex`
opens one and reads only the rows asked for.
"""

import hashlib
import os
import shutil

import numpy as np

from zoo import fileio
from zoo.data.errors import DataUnavailableError
from zoo.data.vectors.formats import NonFiniteVectorError, describe_bad_value, first_bad_row
from zoo.data.vectors.progress import say, warn

INDEX_VERSION = 2  # 2: meta.json always records the SHA-256 of both files (1: written before, perhaps without)
READABLE_VERSIONS = (1, 2)
WORDS, MATRIX, META = "words.txt", "vectors.f32", "meta.json"


class CacheCorruptError(DataUnavailableError):
    """A file of the vector cache is damaged (unreadable meta.json or checksums.json, an index whose files
    disagree with it, differ from the SHA-256 recorded when they were written, or hold non-finite rows); the
    message names the exact file or folder to delete."""


def _rebuild(index_dir):
    return f"delete {index_dir} to rebuild it"


file_sha256 = fileio.sha256_file  # the SHA-256 (hex) of a file, through a memory map (zoo.fileio.checksums)


def read_meta(index_dir):
    """The meta.json of an index (None when there is none); CacheCorruptError (naming the folder to delete)
    when it is unreadable."""
    remedy = f"the word-vector index {index_dir} is damaged: delete that folder to rebuild it"
    try:
        meta = fileio.read_json(os.path.join(index_dir, META), remedy=remedy)
    except fileio.CorruptFileError as error:
        raise CacheCorruptError(str(error)) from None
    if meta is not None and not (isinstance(meta, dict) and isinstance(meta.get("dim"), int)
                                 and isinstance(meta.get("count"), int)
                                 and isinstance(meta.get("sha256", {}), dict)):
        raise CacheCorruptError(f"{os.path.join(index_dir, META)}: not an index description: {remedy}")
    return meta


def index_ready(index_dir):
    """Whether `index_dir` holds a complete index of this version (False: none, or an older version, to be
    rebuilt). CacheCorruptError when its meta.json exists but cannot be read: rebuilding it silently would
    hide the damage, and offline it would be reported as a download failure."""
    meta = read_meta(index_dir)
    return meta is not None and meta.get("version") in READABLE_VERSIONS


class IndexWriter:
    """Writes an index: `add(word, vector)` row by row, then `finish(**meta)` moves it into place whole, or
    `abort()` removes it. The SHA-256 of each file is computed while it is written and kept in meta.json."""

    def __init__(self, index_dir):
        self.index_dir = index_dir
        self.tmp = f"{index_dir}.tmp-{os.getpid()}"
        shutil.rmtree(self.tmp, ignore_errors=True)
        os.makedirs(self.tmp)
        self.words, self.dim = [], None
        self._digest = hashlib.sha256()
        self._out = open(os.path.join(self.tmp, MATRIX), "wb")

    def add(self, word, vector):
        data = np.asarray(vector, dtype="<f4").tobytes()
        self._out.write(data)
        self._digest.update(data)
        self.words.append(word)

    def finish(self, **meta):
        """Writes words.txt and meta.json (`meta` plus version, dim, count, digests), then renames the folder
        onto the index's; returns the index folder."""
        self._out.flush()
        os.fsync(self._out.fileno())
        self._out.close()
        text = "\n".join(self.words).encode("utf-8")
        with open(os.path.join(self.tmp, WORDS), "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        meta = {"version": INDEX_VERSION, "dim": self.dim, "count": len(self.words), **meta,
                "sha256": {WORDS: hashlib.sha256(text).hexdigest(), MATRIX: self._digest.hexdigest()}}
        fileio.write_json(os.path.join(self.tmp, META), meta, indent=1)
        shutil.rmtree(self.index_dir, ignore_errors=True)  # an incomplete one (no meta.json of this version)
        os.replace(self.tmp, self.index_dir)
        return self.index_dir

    def abort(self):
        self._out.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class VectorIndex:
    """A converted vector set in the cache: the word list in memory, the matrix memory-mapped.

    Opening it checks the files against meta.json: the matrix's size, and the SHA-256 of both files
    recorded when the index was written. An index of version 2 always records them: one whose meta.json
    lacks them was edited and is refused (a removed entry never turns the check off); one of version 1,
    written before the zoo kept them, gets them recorded now, once, with a notice.

    Args:
        path: a folder written by `fetch_vectors`.

    Raises:
        DataUnavailableError: the folder is not a complete index of this version.
        CacheCorruptError: its meta.json is unreadable or its files do not match it (the message names the
            file and the folder to delete).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        meta = read_meta(self.path)
        if meta is None or meta.get("version") not in READABLE_VERSIONS:
            raise DataUnavailableError(f"{self.path} is not a complete word-vector index of version "
                                       f"{INDEX_VERSION}; delete it to rebuild it")
        self.meta = meta
        self.dim, self.count = int(self.meta["dim"]), int(self.meta["count"])
        matrix_path = os.path.join(self.path, MATRIX)
        try:
            size = os.path.getsize(matrix_path)
        except OSError:
            size = None
        if size != self.count * self.dim * 4:
            raise CacheCorruptError(f"{matrix_path} does not hold {self.count} x {self.dim} float32 values; "
                                    f"{_rebuild(self.path)}")
        self._check_digests()
        self._words = None

    def _check_digests(self):
        digests = {}
        for name in (WORDS, MATRIX):
            path = os.path.join(self.path, name)
            try:
                digests[name] = file_sha256(path)
            except OSError as error:
                raise CacheCorruptError(f"{path} cannot be read ({error.strerror or error}); "
                                        f"{_rebuild(self.path)}") from None
        recorded = self.meta.get("sha256")
        if recorded is None and self.meta.get("version") == 1:
            self._record_digests(digests)
            return
        if not isinstance(recorded, dict):
            raise CacheCorruptError(f"{os.path.join(self.path, META)} records no SHA-256 of {WORDS} and {MATRIX}, "
                                    f"which every index of version {INDEX_VERSION} records (edited?): "
                                    f"{_rebuild(self.path)}")
        for name, digest in digests.items():
            if recorded.get(name) != digest:
                raise CacheCorruptError(
                    f"{os.path.join(self.path, name)}: its SHA-256 is {digest}, not the {recorded.get(name)} recorded "
                    f"in meta.json when the index was written (the file changed since); {_rebuild(self.path)}")

    def _record_digests(self, digests):
        """Records the digests of an index written before the zoo kept them (trusted as found, once)."""
        self.meta = dict(self.meta, sha256=digests)
        try:
            fileio.write_json(os.path.join(self.path, META), self.meta, indent=1)
        except OSError as error:
            warn(f"{self.path}: written before the cache kept checksums, and meta.json cannot be updated "
                 f"({error.strerror or error}): used unchecked; {_rebuild(self.path)} with checksums")
            return
        say(f"{self.path}: recorded the SHA-256 of {WORDS} and {MATRIX} in meta.json (an index written before the "
            "cache kept them; they are checked at every open from now on)")

    @staticmethod
    def is_complete(path):
        """Whether `path` holds an index of this version (its meta.json is written last); False also when
        its meta.json is unreadable."""
        try:
            return index_ready(os.fspath(path))
        except CacheCorruptError:
            return False

    @property
    def words(self):
        """All words in file order (row i of the matrix is `words[i]`)."""
        if self._words is None:
            try:
                with open(os.path.join(self.path, WORDS), "rb") as f:
                    words = f.read().decode("utf-8").split("\n")
            except (OSError, UnicodeDecodeError) as error:
                raise CacheCorruptError(f"{self.path}/{WORDS} cannot be read ({error}); "
                                        f"{_rebuild(self.path)}") from None
            if len(words) != self.count:
                raise CacheCorruptError(f"{self.path}/{WORDS} has {len(words)} words, meta.json says "
                                        f"{self.count}; {_rebuild(self.path)}")
            self._words = words
        return self._words

    def matrix(self):
        """The `[count, dim]` float32 matrix, memory-mapped read-only."""
        return np.memmap(os.path.join(self.path, MATRIX), dtype="<f4", mode="r", shape=(self.count, self.dim))

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
