"""Word-vector files: the papers' vectors by name, a one-time download into a cache, and the readers.

The package, by idea:

- `catalog`: `CATALOG` names the 300-d vectors the papers used (`VectorSource`: URL, size, checksums,
  structure).
- `download`: `fetch_vectors(name)` downloads one once (progress bar on stderr, size and checksum checked,
  trust-on-first-use records in `CACHE/checksums.json` for a set without a published checksum), converts
  it once into an index in the cache and returns that folder; later runs, offline included, need no network.
- `index`: the index (`words.txt` + a raw float32 matrix that is memory-mapped, with the SHA-256 of both
  recorded in `meta.json` and checked on every open); `VectorIndex.select` reads only the rows asked for.
- `formats`: `read_vector_file(path)` reads a file the user already has: GloVe / word2vec / fastText text
  (plain, `.gz`, `.zip`) or word2vec binary (`.bin`, `.bin.gz`), words strictly UTF-8, a `COUNT DIM` header
  checked against the rows; every value finite and below `MAX_ABS_VALUE` in magnitude.

Example:
```python
from zoo.data.vectors import VectorIndex, fetch_vectors
index = VectorIndex(fetch_vectors("glove-840b-300d"))   # downloads once, then offline
vectors = index.select(wanted={"the", "man"}, top=1000)
```
"""

from zoo.data.vectors.catalog import CATALOG, MXNET_GLOVE, VectorSource
from zoo.data.vectors.download import (
                                       CACHE_ENV,
                                       OFFLINE_OPTIONS,
                                       ChecksumMismatchError,
                                       fetch_vectors,
                                       resolve_cache_dir,
)
from zoo.data.vectors.formats import (
                                       MAX_ABS_VALUE,
                                       TEXT,
                                       WORD2VEC_BINARY,
                                       NonFiniteVectorError,
                                       describe_bad_value,
                                       first_bad_row,
                                       iter_text_vectors,
                                       iter_word2vec_binary,
                                       open_vector_file,
                                       read_vector_file,
)
from zoo.data.vectors.index import INDEX_VERSION, CacheCorruptError, VectorIndex, file_sha256
from zoo.data.vectors.progress import Progress as _Progress  # tests replace its methods to stop a conversion

__all__ = ["CATALOG", "MXNET_GLOVE", "VectorSource", "CACHE_ENV", "OFFLINE_OPTIONS", "ChecksumMismatchError",
           "fetch_vectors", "resolve_cache_dir", "MAX_ABS_VALUE", "TEXT", "WORD2VEC_BINARY", "NonFiniteVectorError",
           "describe_bad_value", "first_bad_row", "iter_text_vectors", "iter_word2vec_binary", "open_vector_file",
           "read_vector_file", "INDEX_VERSION", "CacheCorruptError", "VectorIndex", "file_sha256", "_Progress"]
