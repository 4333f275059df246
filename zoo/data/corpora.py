"""One entry point for every NLI corpus the zoo reads: SNLI, MultiNLI, SICK and any NLI file.

Example:
```python
from zoo.data.corpora import by_role, describe, load_corpus, parse_fields, parse_labels

splits, report = load_corpus("path/to/multinli_1.0.zip")   # or "snli", "snli_sample", "multi_nli", a file, ...
for line in describe(report):
    print("[data]", line)
data = by_role(splits, report)                  # {"train": [...], "validation": [...], "test": [...]}
splits["dev_mismatched"][0]["genre"]            # every split by its own name, too

splits, report = load_corpus("breaking_nli/dataset.jsonl")   # one file: one split, scored whole ("test")
splits, report = load_corpus("scores.tsv", fields=parse_fields("premise=text_a,hypothesis=text_b,label=gold"),
                             labels=parse_labels("entails=entailment,contradicts=contradiction"))
```

`load_corpus(source, ...)` returns `(splits, report)`:

- `splits`: {split name: [example, ...]}, the corpus' own split names in file order (SNLI: `train`,
  `validation`, `test`; MultiNLI files: `train`, `dev_matched`, `dev_mismatched`; MultiNLI from
  tensorflow-datasets: `train`, `validation_matched`, `validation_mismatched`; SICK: `train`, `trial`,
  `test`; a folder of files: each file's stem; a single file: its stem). An example is
  `{"premise": str, "hypothesis": str, "label": int (id into zoo.data.LABELS), "pair_id": str,
  "premise_binary_parse": str, "hypothesis_binary_parse": str}` (parses "" when the corpus has none), plus
  `"genre": str` on every example of a corpus with genres (MultiNLI files; a file with a genre field).
- `report`:
  - `source`: the source as given; `corpus`: `"snli"`, `"multi_nli"`, `"sick"` or `"file"`;
  - `rows`: {split: examples kept}; `skipped`: {split: {reason: n}} (reason `"no_gold_label"`: label `-`,
    empty or null);
  - `roles`: {"train": split or None, "validation": split or None, "test": split or None}, which split
    plays which part (see `DEFAULT_ROLES`; `roles=` overrides it);
  - `has_parses`: whether the examples carry binary parses (else tree models use complete binary trees);
    `genres`: the sorted genre names ([] without genres);
  - `files`: {split: file read} (file sources), `fields`: {target: field read} and `labels`: the label
    mapping given (file sources; {} otherwise); `notes`: sentences to print with the report.

Raises (every loader): `DataUnavailableError` (a `RuntimeError`) when the data cannot be had (no network,
no such path, a path of no known layout), `DataFormatError` (a `ValueError`) starting `FILE:LINE:` for a
malformed record (`FILE:` for a corrupt or truncated zip, or a zip member failing its CRC check:
`ARCHIVE.zip/MEMBER:`), and `ValueError` for bad `fields` / `labels` / `roles`.
"""

import os
import zipfile

from zoo.data import snli
from zoo.data.archives import DataFiles, check_zip
from zoo.data.corpus_options import ROLES, parse_fields, parse_labels, parse_roles
from zoo.data.errors import DataFormatError, DataUnavailableError
from zoo.data.layout import NO_GOLD_LABEL, SNLI_FIELDS, Layout, check_fields, read_examples, read_split_files
from zoo.data.records import DATA_EXTENSIONS, delimited_records, file_records
from zoo.data.tfds_reader import read_tfds

__all__ = ["load_corpus", "check_source", "by_role", "describe", "parse_fields", "parse_labels", "parse_roles", "ROLES",
           "DEFAULT_ROLES", "DataFormatError", "DataUnavailableError"]

NAMED_SOURCES = ("snli", "snli_sample", "multi_nli")
MULTINLI_HOST = ("cims.nyu.edu", 443)  # tfds `multi_nli` downloads multinli_1.0.zip from there
MULTINLI_SPLITS = ("train", "dev_matched", "dev_mismatched")  # multinli_1.0_{split}.jsonl
MULTINLI_TFDS_SPLITS = ("train", "validation_matched", "validation_mismatched")
SICK_FILE = "SICK.txt"
SICK_SETS = {"TRAIN": "train", "TRIAL": "trial", "TEST": "test"}  # SemEval_set -> split
# File stems of a folder of NLI files, by role (the first match of a role is used; two matches are an error).
ROLE_STEMS = {"train": ("train",), "validation": ("dev", "validation", "val"), "test": ("test",)}

# Which split plays which role, by corpus. MultiNLI has no labelled test set (its test sets are scored on
# Kaggle): dev_matched (the genres of train) selects the model and dev_mismatched (five other genres) is
# the held-out test, so the reported test accuracy is the cross-genre one.
DEFAULT_ROLES = {
    "snli": {"train": "train", "validation": "validation", "test": "test"},
    "multi_nli": {"train": "train", "validation": "dev_matched", "test": "dev_mismatched"},
    "multi_nli_tfds": {"train": "train", "validation": "validation_matched", "test": "validation_mismatched"},
    "sick": {"train": "train", "validation": "trial", "test": "test"},
}

# Record layouts. Generic files default to SNLI's fields (Breaking NLI's dataset.jsonl fits), reading the
# pair id, genre and parses when a record has them.
MULTINLI_LAYOUT = Layout(dict(SNLI_FIELDS, genre="genre"),
                         optional=("pair_id", "premise_binary_parse", "hypothesis_binary_parse"))
SICK_LAYOUT = Layout({"premise": "sentence_A", "hypothesis": "sentence_B", "label": "entailment_label",
                      "pair_id": "pair_ID"})
FILE_LAYOUT = Layout(dict(SNLI_FIELDS, genre="genre"),
                     optional=("pair_id", "genre", "premise_binary_parse", "hypothesis_binary_parse"))

NO_PARSES_NOTE = "no binary parses: tree models use complete binary trees over the tokens"


def load_corpus(source, *, fields=None, labels=None, roles=None, data_dir=None, keep_raw=False):
    """Loads an NLI corpus as lists of examples by split, with a report (see the module docstring).

    Args:
        source: `"snli"` (tensorflow-datasets), `"snli_sample"` (rows shipped with the zoo), `"multi_nli"`
            (tensorflow-datasets), or a path: an `snli_1.0` / `multinli_1.0` folder (or its parent) or zip,
            `SICK.txt` (or the folder holding it), a folder (or zip) of NLI files named `train.*`,
            `dev.*` / `validation.*` / `val.*`, `test.*`, or a single NLI file (.jsonl, .json, .tsv, .txt,
            .csv). A file's name decides its corpus: `snli_1.0_*` and `multinli_1.0_*` files are read as
            SNLI / MultiNLI, a tab-separated file with a `SemEval_set` column as SICK.
        fields: files only: {target: field of the record} on top of the corpus' own (targets: `premise`,
            `hypothesis`, `label`, `pair_id`, `genre`, `premise_binary_parse`, `hypothesis_binary_parse`;
            None: do not read), or a `--fields` string (`parse_fields`). Fields named here must be in every
            record. Default for NLI files: SNLI's (`premise=sentence1,hypothesis=sentence2,label=gold_label`,
            and `pairID`, `genre`, `sentence1_binary_parse`, `sentence2_binary_parse` when present).
        labels: files only: {label in the data: label name or id 0, 1, 2}, or a `--labels` string
            (`parse_labels`). The names `entailment`, `neutral`, `contradiction` are always known (any case).
        roles: {role: split name or None} overriding the default roles (`train`, `validation` - or `dev` -,
            `test`), or a `--roles` string (`parse_roles`). `dev_*` and `validation_*` names are interchangeable.
        data_dir: tensorflow-datasets data directory (`"snli"`, `"multi_nli"`).
        keep_raw: files and `"snli_sample"`: also keep each original record under `"raw"` (costs memory).

    Returns:
        `(splits, report)`.

    Raises:
        DataUnavailableError: a named source is not prepared and its download host cannot be reached, the
            path does not exist or is of no known layout, or a split file is missing.
        DataFormatError: a malformed record, an unknown label (`FILE:LINE:`, naming the field); a corrupt or
            truncated zip, a zip member failing its CRC check (`ARCHIVE.zip/MEMBER:`).
        ValueError: bad `fields`, `labels` or `roles`.
    """
    fields = parse_fields(fields) if isinstance(fields, str) else dict(fields or {})
    labels = parse_labels(labels) if isinstance(labels, str) else dict(labels or {})
    check_fields(fields)
    if source in NAMED_SOURCES:
        if fields or labels:
            raise ValueError(f"fields and labels apply to files; {source!r} has fixed fields and labels")
        splits, report = _load_named(source, data_dir, keep_raw)
    else:
        splits, report = _load_path(source, fields, labels, keep_raw)
    if isinstance(roles, str):
        roles = parse_roles(roles)
    report["roles"] = _assign_roles(report["roles"], roles or {}, splits, report["source"])
    return splits, report


# Roles -------------------------------------------------------------------------------------------------
def _find_split(name, splits, source):
    if name in splits:
        return name
    for a, b in (("dev", "validation"), ("validation", "dev")):
        if name.startswith(a) and b + name[len(a):] in splits:
            return b + name[len(a):]
    raise ValueError(f"roles: {source!r} has no split {name!r}; its splits: {', '.join(splits)}")


def _assign_roles(defaults, overrides, splits, source):
    roles = dict(defaults)
    for role, name in overrides.items():
        role = "validation" if role == "dev" else role
        if role not in ROLES:
            raise ValueError(f"roles: unknown role {role!r}; roles: {', '.join(ROLES)}")
        roles[role] = None if name is None else _find_split(name, splits, source)
    return roles


def by_role(splits, report, required=ROLES):
    """The examples of each role: {role: examples} for the roles of `report["roles"]` that have a split.

    Args:
        splits, report: from `load_corpus`.
        required: roles that must have a split with at least one example.

    Raises:
        DataUnavailableError: a required role has no split or an empty one (the message names the splits
            and how to assign one).
    """
    out = {}
    for role in ROLES:
        name = report["roles"].get(role)
        if name is None:
            if role in required:
                single = " (a single file is one split, scored whole as the test set)" if len(splits) == 1 else ""
                raise DataUnavailableError(
                    f"{report['source']} has no {role} split{single}; its splits: {', '.join(splits)}; "
                    f"assign one with --roles {role}=SPLIT")
            continue
        if role in required and not splits[name]:
            raise DataUnavailableError(f"the {role} split {name!r} of {report['source']} has no labelled pairs")
        out[role] = splits[name]
    return out


def describe(report):
    """Lines that say what was read: rows and skips per split, roles, parses, genres, notes.

    Returns:
        a list of strings, e.g. `["multi_nli from DIR: train 6 pairs, dev_matched 4 pairs (1 skipped: no gold
        label), ...", "roles: train=train, validation=dev_matched, test=dev_mismatched", ...]`.
    """
    parts = []
    for split, n in report["rows"].items():
        skips = ", ".join(f"{k} skipped: {reason.replace('_', ' ')}"
                          for reason, k in report["skipped"].get(split, {}).items() if k)
        parts.append(f"{split} {n:,} pairs" + (f" ({skips})" if skips else ""))
    lines = [f"{report['corpus']} from {report['source']}: " + ", ".join(parts),
             "roles: " + ", ".join(f"{role}={report['roles'].get(role) or '(none)'}" for role in ROLES)]
    genres = report["genres"]
    lines.append(f"binary parses: {'yes' if report['has_parses'] else 'no'}; genres: "
                 + (f"{len(genres)} ({', '.join(genres)})" if genres else "none"))
    if report["labels"]:
        lines.append("label mapping: " + ", ".join(f"{k}={v}" for k, v in report["labels"].items()))
    lines += [f"note: {note}" for note in report["notes"]]
    return lines


# Loaders -----------------------------------------------------------------------------------------------
def _report(source, corpus, splits, skipped, roles, *, files=None, layout=None, notes=()):
    notes = list(notes)
    has_parses = any(ex["premise_binary_parse"] or ex["hypothesis_binary_parse"]
                     for examples in splits.values() for ex in examples)
    if not has_parses:
        notes.append(NO_PARSES_NOTE)
    genres = sorted({ex["genre"] for examples in splits.values() for ex in examples if ex.get("genre")})
    return {"source": os.fspath(source), "corpus": corpus,
            "rows": {split: len(examples) for split, examples in splits.items()},
            "skipped": {split: dict(skipped[split]) for split in splits},
            "roles": dict(roles), "has_parses": has_parses, "genres": genres, "files": dict(files or {}),
            "fields": layout.describe_fields() if layout is not None else {},
            "labels": dict(layout.extra_labels) if layout is not None else {}, "notes": notes}


def _from_snli_report(source, splits, snli_report):
    skipped = {split: {NO_GOLD_LABEL: n} for split, n in snli_report["dropped_no_gold_label"].items()}
    return _report(source, "snli", splits, skipped, DEFAULT_ROLES["snli"])


def _multinli_offline_message(detail):
    return (f"MultiNLI from tensorflow-datasets is not available: {detail}. Offline options: --data-dir PATH "
            "(a multinli_1.0 folder or multinli_1.0.zip from https://cims.nyu.edu/~sbowman/multinli/), or set "
            "TFDS_DATA_DIR to a tensorflow-datasets data directory where multi_nli is already prepared.")


def _load_named(source, data_dir, keep_raw):
    if source in ("snli", "snli_sample"):
        splits, snli_report = snli.load_snli(source, data_dir=data_dir, keep_raw=keep_raw)
        report = _from_snli_report(source, splits, snli_report)
        if source == "snli_sample":
            report["notes"].append("snli_sample: 1,289 rows of the SNLI dev split, for tests and demos only")
        return splits, report
    # `snli._host_reachable` looked up at call time (tests replace it), the check `load_snli` uses.
    splits, skipped = read_tfds("multi_nli", MULTINLI_TFDS_SPLITS, data_dir, MULTINLI_HOST,
                                _multinli_offline_message, reachable=snli._host_reachable)
    note = ("tensorflow-datasets drops MultiNLI's pairs without gold label when it prepares the data (not "
            "counted here) and keeps no genres or parses; the multinli_1.0 files (--data-dir) have all three")
    for split in skipped:
        skipped[split] = {}  # tfds `multi_nli` has no -1 labels: its builder already left those pairs out
    return splits, _report("multi_nli", "multi_nli", splits, skipped, DEFAULT_ROLES["multi_nli_tfds"],
                           notes=[note])


def check_source(source, fields=None, labels=None, roles=None):
    """What can be checked of a corpus request before anything is read: `source` is a named data set or an
    existing path, and the `--fields`, `--labels` and `--roles` strings parse.

    Raises:
        DataUnavailableError: an unknown name or a missing path; ValueError: a malformed option string.
    """
    if source not in NAMED_SOURCES and not os.path.exists(os.path.expanduser(os.fspath(source))):
        raise _unknown_source(source)
    for text, parse in ((fields, parse_fields), (labels, parse_labels), (roles, parse_roles)):
        if isinstance(text, str):
            parse(text)


def _unknown_source(source):
    return DataUnavailableError(
        f"unknown data set or missing path {source!r}: use 'snli', 'snli_sample', 'multi_nli', or the path of an "
        "snli_1.0 or multinli_1.0 folder or zip, SICK.txt, or NLI files (.jsonl, .json, .tsv, .txt, .csv)")


def _load_path(source, fields, labels, keep_raw):
    path = os.path.expanduser(os.fspath(source))
    if not os.path.exists(path):
        raise _unknown_source(path)
    if os.path.isdir(path):
        inner = [d for d in ("snli_1.0", "multinli_1.0") if os.path.isdir(os.path.join(path, d))]
        if len(inner) > 1:
            raise DataUnavailableError(f"{path} holds several corpora ({', '.join(inner)}): pass one of them")
        if inner:
            path = os.path.join(path, inner[0])
    else:
        check_zip(path)  # a corrupt or truncated zip says so (not "not a known data file")
        if not zipfile.is_zipfile(path):
            return _load_single_file(source, path, fields, labels, keep_raw)
    with DataFiles(path) as files:
        names = files.names
        kinds = [kind for kind, found in (
            ("snli", any(n.startswith("snli_1.0_") and n.endswith((".jsonl", ".txt")) for n in names)),
            ("multi_nli", any(n.startswith("multinli_1.0_") and n.endswith((".jsonl", ".txt")) for n in names)),
            ("sick", SICK_FILE in names)) if found]
        if len(kinds) > 1:
            raise DataUnavailableError(f"{path} holds files of several corpora ({', '.join(kinds)}): pass one file "
                                       "or a folder per corpus")
        kind = kinds[0] if kinds else "file"
        if kind == "multi_nli":
            layout = MULTINLI_LAYOUT.with_overrides(fields, labels)
            splits, skipped, read = read_split_files(files, {s: f"multinli_1.0_{s}" for s in MULTINLI_SPLITS},
                                                     layout, keep_raw)
            return splits, _report(source, "multi_nli", splits, skipped, DEFAULT_ROLES["multi_nli"], files=read,
                                   layout=layout)
        if kind == "sick":
            with files.lines(SICK_FILE) as lines:
                return _load_sick(source, files.display(SICK_FILE), lines, fields, labels, keep_raw)
        if kind == "file":
            return _load_folder(source, files, fields, labels, keep_raw)
        layout = snli.LAYOUT.with_overrides(fields, labels)
        splits, skipped, read = read_split_files(files, snli.FILE_STEMS, layout, keep_raw)
        return splits, _report(source, "snli", splits, skipped, DEFAULT_ROLES["snli"], files=read, layout=layout)


def _load_sick(source, display, lines, fields, labels, keep_raw):
    """SICK.txt: one tab-separated file, the split of each pair in `SemEval_set`."""
    layout = SICK_LAYOUT.with_overrides(fields, labels)
    by_split = {split: [] for split in SICK_SETS.values()}
    for lineno, record in delimited_records(lines, display):
        semeval_set = record.get("SemEval_set")
        if semeval_set is None:
            raise DataFormatError(f"{display}:{lineno}: missing field 'SemEval_set' (the split: "
                                  f"{', '.join(SICK_SETS)})")
        if semeval_set not in SICK_SETS:
            raise DataFormatError(f"{display}:{lineno}: field 'SemEval_set' is {semeval_set!r}, expected one of "
                                  f"{', '.join(SICK_SETS)}")
        by_split[SICK_SETS[semeval_set]].append((lineno, record))
    splits, skipped = {}, {}
    for split, records in by_split.items():
        splits[split], skipped[split] = read_examples(records, layout, display, keep_raw)
    return splits, _report(source, "sick", splits, skipped, DEFAULT_ROLES["sick"],
                           files={split: display for split in splits}, layout=layout,
                           notes=["SICK: SemEval_set TRAIN, TRIAL, TEST are the splits train, trial, test"])


def _is_sick_header(lines):
    """Whether the first line of a tab-separated file is SICK's header (it has `SemEval_set` and `sentence_A`)."""
    first = next(iter(lines), "").rstrip("\r\n").split("\t")
    return "SemEval_set" in first and "sentence_A" in first


def _file_corpus(name):
    """(corpus, split, layout) of a single file, by its name."""
    stem = os.path.splitext(name)[0]
    if name.startswith("multinli_1.0_"):
        return "multi_nli", stem[len("multinli_1.0_"):], MULTINLI_LAYOUT
    if name.startswith("snli_1.0_"):
        return "snli", stem[len("snli_1.0_"):], snli.LAYOUT
    return "file", stem, FILE_LAYOUT


def _load_single_file(source, path, fields, labels, keep_raw):
    name = os.path.basename(path)
    if not name.lower().endswith(DATA_EXTENSIONS):
        raise DataUnavailableError(
            f"{path}: not a known data file: expected an snli_1.0 or multinli_1.0 zip, SICK.txt, or an NLI file "
            f"({', '.join(DATA_EXTENSIONS)})")
    files = DataFiles(os.path.dirname(path) or ".")
    if name.lower().endswith((".txt", ".tsv")):
        with files.lines(name) as lines:
            if _is_sick_header(lines):
                with files.lines(name) as again:
                    return _load_sick(source, path, again, fields, labels, keep_raw)
    corpus, split, layout = _file_corpus(name)
    layout = layout.with_overrides(fields, labels)
    with files.lines(name) as lines:
        examples, skipped = read_examples(file_records(lines, path), layout, path, keep_raw)
    splits = {split: examples}
    return splits, _report(source, corpus, splits, {split: skipped}, {"train": None, "validation": None, "test": split},
                           files={split: path}, layout=layout,
                           notes=[f"a single file is one split, {split!r}, scored whole: it plays the test role"])


def _load_folder(source, files, fields, labels, keep_raw):
    """A folder or zip of NLI files named by role: train.*, dev.* / validation.* / val.*, test.*."""
    found = {}
    for role, stems in ROLE_STEMS.items():
        matches = [n for n in files.names
                   if os.path.splitext(n)[0].lower() in stems and n.lower().endswith(DATA_EXTENSIONS)]
        if len(matches) > 1:
            raise DataUnavailableError(f"{files.path}: several {role} files ({', '.join(matches)}): keep one")
        if matches:
            found[role] = matches[0]
    if not found:
        listed = ", ".join(files.names[:12]) + (", ..." if len(files.names) > 12 else "") or "no files"
        raise DataUnavailableError(
            f"{files.path}: no known data layout: expected an snli_1.0 or multinli_1.0 folder or zip, SICK.txt, or "
            f"NLI files named train.*, dev.* (or validation.*, val.*), test.* ({', '.join(DATA_EXTENSIONS)}); "
            f"found: {listed}. A single file can be given as the path itself.")
    layout = FILE_LAYOUT.with_overrides(fields, labels)
    splits, skipped, read, roles = {}, {}, {}, {role: None for role in ROLES}
    for role, name in found.items():
        split = os.path.splitext(name)[0]
        display = files.display(name)
        with files.lines(name) as lines:
            splits[split], skipped[split] = read_examples(file_records(lines, display), layout, display, keep_raw)
        read[split], roles[role] = display, split
    notes = []
    ignored = [n for n in files.names if n not in found.values()]
    if ignored:
        notes.append("not read (not named train.*, dev.*, validation.*, val.* or test.*): " + ", ".join(ignored))
    return splits, _report(source, "file", splits, skipped, roles, files=read, layout=layout, notes=notes)
