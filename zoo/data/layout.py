"""Label mapping and record layouts: which field of a record is the premise, the hypothesis, the label, ...,
and which label names mean which of `LABELS`.

- `Layout`: the fields and labels of a corpus; `read_examples` turns records into examples with it,
  counting the unlabeled ones; `read_split_files` reads one file per split.
- `label_key`, `label_id`: a label as written in the data -> its lookup key / its id into `LABELS`.
"""

from zoo.constants import LABELS
from zoo.data.errors import DataFormatError, DataUnavailableError
from zoo.data.records import delimited_records, jsonl_records

# The fields of an example (`zoo.data.snli.load_snli`'s format, plus `genre` where a corpus has one).
TARGETS = ("premise", "hypothesis", "label", "pair_id", "genre", "premise_binary_parse", "hypothesis_binary_parse")
REQUIRED = ("premise", "hypothesis", "label")
# SNLI's field names, which MultiNLI and Breaking NLI reuse (target -> field of the record).
SNLI_FIELDS = {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label", "pair_id": "pairID",
               "premise_binary_parse": "sentence1_binary_parse", "hypothesis_binary_parse": "sentence2_binary_parse"}
NO_GOLD_LABEL = "no_gold_label"  # skip reason: label "-" (no annotator majority), empty, null or -1
UNLABELED = ("-", "", "-1")  # label keys meaning "no gold label" (-1: tensorflow-datasets, Hugging Face)


# Layout: records -> examples -----------------------------------------------------------------------
def label_key(value):
    """A record's label as a lookup key: stripped and case-folded text, or the digits of an integer; None when
    it is neither (a bool, a float, a list, ...)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip().casefold()
    return None


def label_id(value):
    """The id into `LABELS` of a label name (any case) or of 0, 1, 2 (int or text); None if it is neither."""
    key = label_key(value)
    names = [name.casefold() for name in LABELS]
    if key in names:
        return names.index(key)
    if key is not None and key.isdigit() and int(key) < len(LABELS):
        return int(key)
    return None


class Layout:
    """How the records of a corpus become examples.

    Args:
        fields: target -> field of the record, for the targets of `TARGETS` (`None`: not read). The
            required targets are `REQUIRED`.
        labels: extra label names: {label in the data: a name of `LABELS` or its id 0, 1, 2}. The names of
            `LABELS` are always known; labels are matched after stripping and case-folding.
        optional: targets whose field may be absent from a record (they get "", or a `FILE:LINE` pair id).

    Raises:
        ValueError: an unknown target, a required target without a field, or a label mapped to neither a
            name of `LABELS` nor 0, 1, 2.
    """

    def __init__(self, fields, labels=None, optional=()):
        check_fields(fields)
        for target in REQUIRED:
            if not fields.get(target):
                raise ValueError(f"fields: {target!r} needs a field name (fields: {', '.join(TARGETS)})")
        self.fields = {t: c for t, c in fields.items() if c}
        self.optional = frozenset(optional)
        self.labels = {name.casefold(): i for i, name in enumerate(LABELS)}
        self.extra_labels = {}
        for name, target in (labels or {}).items():
            key, target_id = label_key(name), label_id(target)
            if key in (None, *UNLABELED):
                raise ValueError(f"labels: cannot map {name!r} (a label must be a non-empty text or an integer)")
            if target_id is None:
                raise ValueError(f"labels: {name!r} is mapped to {target!r}; map each label to one of "
                                 f"{', '.join(LABELS)} (or 0, 1, 2 in that order)")
            self.labels[key] = target_id
            self.extra_labels[str(name)] = LABELS[target_id]
        # Precomputed for `example`, which runs once per record.
        self._texts = [(t, self.fields[t], t in self.optional) for t in
                       ("premise", "hypothesis", "genre", "premise_binary_parse", "hypothesis_binary_parse")
                       if t in self.fields]
        self._exact_labels = {name: self.labels[name.casefold()] for name in LABELS}
        self._exact_labels.update({n: self.labels[label_key(n)] for n in self.extra_labels if isinstance(n, str)})
        self._pair_column = self.fields.get("pair_id")
        self._pair_optional = "pair_id" in self.optional

    def with_overrides(self, fields=None, labels=None):
        """This layout with the caller's fields and labels on top; fields the caller names are required."""
        check_fields(fields or {})
        merged = dict(self.fields)
        merged.update(fields or {})
        optional = {t for t in self.optional if t not in (fields or {})}
        extra = dict(self.extra_labels)
        extra.update(labels or {})
        return Layout(merged, extra, optional)

    def describe_fields(self):
        """{target: field} of the fields read (optional ones when present)."""
        return dict(self.fields)

    def _missing(self, record, column, target, where):
        present = ", ".join(map(repr, record)) or "none"
        hint = ""
        if target in REQUIRED:
            # Suggest the fields named like the targets, e.g. a file with `premise`, `hypothesis`, `label` fields.
            same = [t for t in REQUIRED if self.fields[t] not in record and t in record]
            hint = "; map it with --fields " + (",".join(f"{t}={t}" for t in same) if target in same
                                                else f"{target}=FIELD")
        return DataFormatError(f"{where}: missing or non-string field {column!r} ({target}); the record has "
                               f"{present}{hint}")

    def example(self, record, where, default_id=None):
        """The example of one record, or None when it has no gold label.

        Args:
            record: a dict from `jsonl_records` / `delimited_records`.
            where: `"FILE:LINE"` for messages.
            default_id: the pair id when the record has none (default `where`).

        Raises:
            DataFormatError: a missing or non-string field, or an unknown label (`FILE:LINE:`).
        """
        example = {"premise": None, "hypothesis": None, "label": None, "pair_id": None,
                   "premise_binary_parse": "", "hypothesis_binary_parse": ""}
        for target, column, optional in self._texts:
            value = record.get(column)
            if value.__class__ is not str:  # the common case first: a str (not a subclass, as JSON gives)
                if value is None and optional:
                    continue
                if not isinstance(value, str):
                    raise self._missing(record, column, target, where)
            example[target] = value
        column = self.fields["label"]
        raw = record.get(column)
        label = self._exact_labels.get(raw) if raw.__class__ is str else None
        if label is None:
            if column not in record:
                raise self._missing(record, column, "label", where)
            key = label_key(raw)
            if raw is None or key in UNLABELED:
                return None
            if key not in self.labels:
                raise DataFormatError(f"{where}: unknown label {raw!r} in field {column!r}; {self._known_labels(raw)}")
            label = self.labels[key]
        example["label"] = label
        pair_id = record.get(self._pair_column) if self._pair_column else None
        if pair_id is None or pair_id == "":
            if self._pair_column and not self._pair_optional and self._pair_column not in record:
                raise self._missing(record, self._pair_column, "pair_id", where)
            pair_id = where if default_id is None else default_id
        elif isinstance(pair_id, bool) or not isinstance(pair_id, (str, int)):
            raise DataFormatError(f"{where}: field {self._pair_column!r} (pair_id) is not a text or an integer")
        example["pair_id"] = str(pair_id)
        return example

    def _known_labels(self, raw):
        known = ", ".join(LABELS)
        if self.extra_labels:
            known += ", " + ", ".join(f"{k} (= {v})" for k, v in self.extra_labels.items())
        text = f"known labels: {known}; '-', empty or -1: no gold label (skipped and counted)"
        if label_key(raw) is not None and label_key(raw).isdigit():
            return (text + "; labels given as numbers need their meaning, e.g. "
                    "--labels 0=entailment,1=neutral,2=contradiction")
        return text + f"; map others with --labels, e.g. --labels {label_key(raw) or 'LABEL'}=entailment"


def check_fields(fields):
    """Raises ValueError unless every key of `fields` is a target of `TARGETS` and every value a field name or
    None (not read)."""
    for target, column in fields.items():
        if target not in TARGETS:
            raise ValueError(f"fields: unknown target {target!r}; targets: {', '.join(TARGETS)}")
        if column is not None and not isinstance(column, str):
            raise ValueError(f"fields: {target!r} is mapped to {column!r}, expected a field name")


def read_examples(records, layout, name, keep_raw=False):
    """Turns `(line number, record)` pairs into examples.

    Args:
        records: from `jsonl_records` / `delimited_records`.
        layout: a `Layout`.
        name: the file's name in messages.
        keep_raw: also keep each record under `"raw"`.

    Returns:
        `(examples, skipped)`: `skipped` counts the records left out by reason (`{"no_gold_label": n}`).
        A record without a pair id gets `"BASENAME:LINE"`.
        When some example of the file has a `genre`, every example has one ("" where the record has none).

    Raises:
        DataFormatError: a malformed record (`FILE:LINE:`).
    """
    examples, skipped = [], {NO_GOLD_LABEL: 0}
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    for lineno, record in records:
        example = layout.example(record, f"{name}:{lineno}", f"{base}:{lineno}")
        if example is None:
            skipped[NO_GOLD_LABEL] += 1
            continue
        if keep_raw:
            example["raw"] = record
        examples.append(example)
    if any("genre" in ex for ex in examples):
        for ex in examples:
            ex.setdefault("genre", "")
    return examples, skipped


def read_split_files(files, stems, layout, keep_raw=False):
    """Reads one file per split from `files` (`STEM.jsonl`, else the tab-separated `STEM.txt`).

    Args:
        files: a `DataFiles`.
        stems: {split name: file stem}, e.g. `{"train": "snli_1.0_train", ...}`.

    Returns:
        `(splits, skipped, names)`: {split: examples}, {split: {reason: n}}, {split: file name read}.

    Raises:
        DataUnavailableError: a split has neither file.
        DataFormatError: a malformed record (`FILE:LINE:`).
    """
    splits, skipped, names = {}, {}, {}
    for split, stem in stems.items():
        if stem + ".jsonl" in files.names:
            name, reader = stem + ".jsonl", jsonl_records
        elif stem + ".txt" in files.names:
            name, reader = stem + ".txt", delimited_records
        else:
            raise DataUnavailableError(f"{files.path}: neither {stem}.jsonl nor {stem}.txt found")
        display = files.display(name)
        with files.lines(name) as lines:
            splits[split], skipped[split] = read_examples(reader(lines, display), layout, display, keep_raw)
        names[split] = display
    return splits, skipped, names
