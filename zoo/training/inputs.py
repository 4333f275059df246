"""What a training run reads: the corpus and its splits, its vocabulary and its word vectors.

The batches themselves come from `zoo.runs.datasets`, which scoring a finished run shares, so that a
run is evaluated on exactly the inputs it was trained on.
"""

import collections
import dataclasses
import logging
import os

import numpy as np
import tensorflow_datasets as tfds
from absl import logging as absl_logging

from zoo.constants import EMBEDDING_DIM
from zoo.data import readers
from zoo.data.corpora import MULTINLI_HOST, by_role, describe, load_corpus
from zoo.data.embeddings import EmbeddingMatrix, build_embedding_matrix, find_vector, load_vectors
from zoo.data.snli import DOWNLOAD_HOST as SNLI_HOST
from zoo.data.vectors import CATALOG, fetch_vectors
from zoo.data.vectors.download import check_obtainable
from zoo.data.vocab import PAD_ID, Vocabulary
from zoo.errors import TrainError
from zoo.runs import layout
from zoo.runs.datasets import tokenize_sentences

logger = logging.getLogger(__name__)
# the vocabulary's and the word vectors' lines: `[vocabulary]`, `[embeddings]`
vocabulary_logger, embeddings_logger = logger.getChild("vocabulary"), logger.getChild("embeddings")

SPLITS = ("train", "validation", "test")
# The corpora tensorflow-datasets downloads: the host each download needs, and what to use offline instead.
TFDS_CORPORA = {
    "snli": (SNLI_HOST, "--dataset snli_sample (1,289 real SNLI rows shipped with the zoo) or --data-dir DIR "
                        "(an snli_1.0 folder or snli_1.0.zip from https://nlp.stanford.edu/projects/snli/)"),
    "multi_nli": (MULTINLI_HOST, "--data-dir DIR (a multinli_1.0 folder or multinli_1.0.zip)"),
}


# Availability ------------------------------------------------------------------------------------
def check_available(embeddings, source, fetch=True):
    """Stops at once, in one message, when the word vectors or the corpus must be downloaded and cannot be
    (a machine without network): both are checked, so that the message names every offline option, before
    any data is read or the run directory is written.

    Named word vectors are fetched now (at once when cached; with `fetch` False, only checked to be cached or
    reachable: a plan that trains nothing). A tensorflow-datasets corpus (`snli`, `multi_nli`) that is not
    prepared needs its host.

    Raises:
        TrainError: naming what cannot be had and the offline options of each.
    """
    problems = []
    if embeddings in CATALOG:
        try:
            fetch_vectors(embeddings) if fetch else check_obtainable(embeddings)
        except (RuntimeError, OSError, ValueError) as error:
            problems.append(str(error).rstrip("."))
    if source in TFDS_CORPORA and not tfds_prepared(source):
        host, options = TFDS_CORPORA[source]
        if problems or not readers.host_reachable(host):  # looked up at call time: tests replace it
            problems.append(f"the corpus {source!r} (tensorflow-datasets) is not downloaded and {host[0]} cannot "
                            f"be reached. Offline options: {options}")
    if problems:
        raise TrainError("; and ".join(problems))


def tfds_prepared(name):
    """Whether tensorflow-datasets has `name` prepared in its data directory (`$TFDS_DATA_DIR`), asked
    without absl's warning about the missing `dataset_info.json` of a corpus never downloaded."""
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.ERROR)
    try:
        return tfds.builder(name).is_prepared()
    finally:
        absl_logging.set_verbosity(verbosity)


# Corpus ------------------------------------------------------------------------------------------
def load_splits(source, max_train_examples=None, max_eval_examples=None, required=SPLITS, fields=None,
                labels=None, roles=None):
    """Loads a corpus (`zoo.data.corpora.load_corpus`), prints what was read, and picks the splits by role.

    Args:
        source: `"snli"`, `"snli_sample"`, `"multi_nli"` or a path (SNLI or MultiNLI release, SICK, NLI files).
        max_train_examples, max_eval_examples: keep only the first N pairs of train / of dev and test.
        required: the roles that must have a non-empty split.
        fields, labels, roles: the `--fields`, `--labels` and `--roles` strings (or dicts), see `load_corpus`.

    Returns:
        `(splits, report)`: `{"train": [...], "validation": [...], "test": [...]}` (the roles present) and
        the loader's report.

    Raises:
        TrainError: when the data cannot be loaded or a required role has no pairs.
    """
    try:
        corpus, report = load_corpus(source, fields=fields, labels=labels, roles=roles)
        splits = by_role(corpus, report, required=required)
    except (RuntimeError, ValueError, OSError) as error:  # missing data, bad line, no network: one line
        raise TrainError(f"cannot load {'the data' if str(source) in str(error) else repr(source)}: {error}") from None
    for line in describe(report):
        logger.info(f"{line}")
    splits = cap_splits(splits, max_train_examples, max_eval_examples)
    for split in required:
        if not splits.get(split):
            raise TrainError(f"the {split} split of {source!r} is empty")
    return splits, report


def cap_splits(splits, max_train_examples=None, max_eval_examples=None):
    """The splits cut to the first N pairs (train, and dev and test), printed when cut."""
    splits = dict(splits)
    if max_train_examples is not None and "train" in splits:
        splits["train"] = splits["train"][:max_train_examples]
    if max_eval_examples is not None:
        for split in ("validation", "test"):
            if split in splits:
                splits[split] = splits[split][:max_eval_examples]
    if max_train_examples is not None or max_eval_examples is not None:
        logger.info("using " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()))
    return splits


# Tokens and vocabulary ---------------------------------------------------------------------------
def training_vocabulary(train_tokens):
    """The vocabulary of the training sentences (ids 0-2 reserved, then words by decreasing count)."""
    return Vocabulary.build(train_tokens)


def extension_words(vectors, vocab, eval_tokens, top_words, limit, lowercase):
    """Words to add to `vocab` so that words unseen in training keep their pretrained vectors.

    First the words of the dev/test sentences that have a vector (most frequent first), then the vector
    source's most frequent words (file order), in the tokenizer's case, until the vocabulary holds `limit`
    ids. Training words come first whatever `limit` is.

    Args:
        vectors: `{word: vector}` of the source (`zoo.data.embeddings.load_vectors`).
        vocab: the training vocabulary.
        eval_tokens: token lists of the dev and test sentences.
        top_words: the source's first words, in file order.
        limit: the most ids the vocabulary may have (0 or None: add nothing).
        lowercase: whether the tokenizer lowercases (words are added as it produces them).

    Returns:
        the list of words to append.
    """
    room = max(0, (limit or 0) - len(vocab))
    if not room:
        return []
    counts = collections.Counter(t for tokens in eval_tokens for t in tokens if t not in vocab)
    candidates = [w for w, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    candidates += [w.lower() if lowercase else w for w in top_words]
    added, seen = [], set()
    for word in candidates:
        if word in seen or word in vocab or find_vector(vectors, word) is None:
            continue
        seen.add(word)
        added.append(word)
        if len(added) == room:
            break
    return added


def rescued_tokens(eval_tokens, train_vocab, vocab):
    """How many dev/test tokens the extension keeps out of [UNK]: `{"rescued", "unseen", "tokens"}`."""
    tokens = [t for sentence in eval_tokens for t in sentence]
    unseen = [t for t in tokens if t not in train_vocab]
    return {"rescued": sum(t in vocab for t in unseen), "unseen": len(unseen), "tokens": len(tokens)}


# Word vectors ------------------------------------------------------------------------------------
def tokenize_splits(tokenizer, splits):
    """`{split: tokens}`: each split's sentences tokenized once (`tokenize_sentences`: premises, then
    hypotheses), for the vocabulary and the counted notes on cut and empty sentences."""
    return {split: tokenize_sentences(tokenizer, examples, what=split) for split, examples in splits.items()}


def vocabulary_and_vectors(embeddings, data, run_dir, resume, tokenizer, splits, seed=0, init_run=None, tokens=None,
                           random_dim=EMBEDDING_DIM):
    """The run's vocabulary and embedding matrix, under the preset's OOV rule.

    The vocabulary holds the training words (after those of `init_run`, whose ids are kept), then, with
    pretrained vectors, words unseen in training that have one: the dev/test words first, then the
    vector source's most frequent words, up to `data.max_vocabulary` ids. Those extra rows keep their
    pretrained vectors, frozen, so that a word never seen in training but known to the vectors is not
    [UNK] at evaluation time nor in exported models (Rocktäschel et al. §2.2.1).

    Args:
        embeddings: `--embeddings`: a vector source name or path, or `"none"` (random vectors).
        data: the run's `DataSettings` (`max_vocabulary`, `lowercase`, `oov`).
        run_dir: the run directory (its `vocab.txt`, when resuming, must be the vocabulary built here; the
            caller writes it when missing).
        resume: check the run's `vocab.txt`, if it exists, against the vocabulary built.
        tokenizer: the run's `Tokenizer`.
        splits: `{"train": [...], "validation": [...], "test": [...]}`.
        seed: seeds the random OOV vectors.
        init_run: a `Run` to start from (`--init-from`): its words keep their ids and trained vectors.
        tokens: `tokenize_splits(tokenizer, splits)` when the caller has it (default: tokenized here).
        random_dim: the size of random vectors (`embeddings="none"`, no `init_run`).

    Returns:
        `(vocab, vectors, report)`: `vectors` is the run's `zoo.data.embeddings.EmbeddingMatrix` (its matrix
        None where `embeddings` is `"none"`: the model keeps random vectors, all trainable); `report` counts
        training and pretrained words and the dev/test tokens rescued from [UNK].

    Raises:
        TrainError: when the vectors cannot be read, or the run's `vocab.txt` is not the vocabulary of its data.
    """
    tokens = tokens if tokens is not None else tokenize_splits(tokenizer, splits)
    train_tokens = tokens["train"]
    base = training_vocabulary(train_tokens)
    if init_run is not None:
        base = init_run.vocab.extended(base.words[3:])  # past the reserved ids
    eval_tokens = [t for split in ("validation", "test") if split in splits for t in tokens[split]]
    path = os.path.join(run_dir, layout.VOCAB_FILE)
    vectors, dim = None, None
    if embeddings != "none":
        try:
            vectors, dim = load_vectors(embeddings, words=set(base.words) | {t for s in eval_tokens for t in s},
                                        top=data.max_vocabulary or 0)
        except Exception as error:
            raise TrainError(f"cannot load word vectors {embeddings!r}: {error}") from None
        if init_run is not None and dim != init_run.model.embedding_dim:
            raise TrainError(f"--init-from {init_run.run_dir}: its word vectors are {init_run.model.embedding_dim}-d, "
                             f"{embeddings!r} are {dim}-d; use vectors of the same size (or --embeddings none)")
    extra = [] if vectors is None else extension_words(
        vectors, base, eval_tokens, list(vectors), data.max_vocabulary, data.lowercase)
    vocab = base.extended(extra)
    if resume and os.path.exists(path):
        check_vocabulary(path, vocab)
    report = {"training_words": len(base), "pretrained_words": len(vocab) - len(base),
              "max_vocabulary": data.max_vocabulary, **rescued_tokens(eval_tokens, base, vocab)}
    vocabulary_logger.info(f"{len(base):,} ids from training" + (" and the --init-from run" if init_run else "")
                + f", {report['pretrained_words']:,} more words with pretrained vectors (frozen); dev/test tokens "
                f"unseen in training: {report['unseen']:,} of {report['tokens']:,}, {report['rescued']:,} of them "
                f"rescued from [UNK]")
    if vectors is None:
        built = EmbeddingMatrix.random(random_dim)
        if init_run is not None:  # the run's words keep their trained vectors, the new ones start random
            dim = init_run.model.embedding_dim
            matrix = np.random.default_rng(seed).uniform(-0.05, 0.05, (len(vocab), dim)).astype("float32")
            matrix[PAD_ID] = 0.0
            built = dataclasses.replace(built, matrix=matrix, size=None)
    else:
        built = build_embedding_matrix(vocab, vectors, dim, data.oov, token_lists=train_tokens, seed=seed)
        if built.tunable_words == "all" and len(vocab) > len(base):  # the rule trains every word: all but the extra
            built = dataclasses.replace(built, tunable_words="oov",
                                        tunable_mask=built.tunable_mask & (np.arange(len(vocab)) < len(base)))
        coverage = {k: float(v) if isinstance(v, float) else int(v) for k, v in built.coverage.items()
                    if v is not None}
        # Type coverage of the training words (every extra word has a vector by construction).
        words = base.words[3:]
        found = sum(find_vector(vectors, w) is not None for w in words)
        coverage.update(types=found / max(len(words), 1), types_found=found, types_total=len(words))
        built = dataclasses.replace(built, coverage=coverage)
        embeddings_logger.info(f"{embeddings} ({dim}d): {describe_coverage(coverage)}; tunable words: "
                    f"{built.tunable_words}" + (f" ({built.num_tunable})" if built.tunable_words == "oov" else ""))
    if init_run is not None:
        old = len(init_run.vocab)
        built.matrix[:old] = np.asarray(init_run.model.embedding(np.arange(old, dtype="int32")), dtype="float32")
    return vocab, built, report


def check_vocabulary(path, vocab):
    """Checks a resumed run's `vocab.txt` against the vocabulary built from its data and vectors (the same
    settings build the same vocabulary, word for word).

    Raises:
        TrainError: a file of another length or other words (one line: delete it, a rerun rebuilds it).
    """
    remedy = "delete it and rerun the same command: it is rebuilt from the data"
    try:
        saved = Vocabulary.load(path)
    except (OSError, ValueError) as error:
        raise TrainError(f"{path} cannot be read ({error}): {remedy}") from None
    if saved.words == vocab.words:
        return
    if len(saved) != len(vocab):
        what = f"it holds {len(saved):,} tokens, the run's data and vectors give {len(vocab):,}"
    else:
        at = next(i for i, (a, b) in enumerate(zip(saved.words, vocab.words)) if a != b)
        what = f"line {at + 1} holds {saved.words[at]!r}, the run's vocabulary has {vocab.words[at]!r} there"
    raise TrainError(f"{path} is not this run's vocabulary ({what}): {remedy}")


def describe_coverage(coverage):
    """`types 99.4% (630/634), tokens 99.7% (4662/4676)` from a coverage dict."""
    parts = []
    for kind in ("types", "tokens"):
        if coverage.get(kind) is not None:
            part = f"{kind} {coverage[kind]:.1%}"
            if f"{kind}_found" in coverage and f"{kind}_total" in coverage:
                part += f" ({coverage[kind + '_found']}/{coverage[kind + '_total']})"
            parts.append(part)
    return ", ".join(parts) or str(coverage)
