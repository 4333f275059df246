"""Pieces shared by the corpus loaders (`zoo.data.snli`, `zoo.data.corpora`); users call those, not this module.

- `DataUnavailableError`, `DataFormatError`: the loaders' two errors (also importable from `zoo.data.snli`).
- `DataFiles`: the files of a folder or a zip archive, by base name, read line by line as UTF-8.
- `jsonl_records`, `delimited_records`: `(line number, record dict)` of JSON lines, TSV or CSV text.
- `Layout`: which field of a record is the premise, the hypothesis, the label, ...; and which label names
  mean which of `LABELS`. `read_examples` turns records into examples with it, counting the unlabeled ones.
- `read_tfds`: the splits of a tensorflow-datasets NLI data set, failing at once when it is not prepared and
  its download host cannot be reached.
"""

import contextlib
import csv
import io
import json
import os
import socket
import zipfile
import zlib

from zoo.data import LABELS

# The fields of an example (`zoo.data.snli.load_snli`'s format, plus `genre` where a corpus has one).
TARGETS = ("premise", "hypothesis", "label", "pair_id", "genre", "premise_binary_parse", "hypothesis_binary_parse")
REQUIRED = ("premise", "hypothesis", "label")
# SNLI's field names, which MultiNLI and Breaking NLI reuse (target -> field of the record).
SNLI_FIELDS = {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label", "pair_id": "pairID",
               "premise_binary_parse": "sentence1_binary_parse", "hypothesis_binary_parse": "sentence2_binary_parse"}
NO_GOLD_LABEL = "no_gold_label"  # skip reason: label "-" (no annotator majority), empty, null or -1
UNLABELED = ("-", "", "-1")  # label keys meaning "no gold label" (-1: tensorflow-datasets, Hugging Face)
DATA_EXTENSIONS = (".jsonl", ".json", ".tsv", ".txt", ".csv")


class DataUnavailableError(RuntimeError):
    """The requested data set cannot be had here (not prepared and no network, or no such path)."""


class DataFormatError(ValueError):
    """A data file is malformed; the message starts with "FILE:LINE:" ("FILE:" for a damaged archive or
    compressed file, which has no line at fault)."""


# Reading a zip member raises these when its data are damaged: zipfile.BadZipFile (a CRC mismatch, found when
# the member has been read to its end, or a bad local header), zlib.error (corrupt deflate data), EOFError
# (compressed data cut short).
ZIP_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError)


def zip_damage(error, archive, member):
    """The DataFormatError of a zip member that cannot be read: one line naming the archive and the member."""
    text = str(error).strip() or type(error).__name__
    if isinstance(error, EOFError):
        what = f"its compressed data are cut short ({text})"
    elif "CRC" in text:
        what = f"it fails its CRC check ({text})"
    else:
        what = f"its compressed data are corrupt ({text})"
    return DataFormatError(f"{archive}/{member}: {what}: the zip archive {archive} is damaged; download it again")


def member_damage(archive, path, member):
    """The DataFormatError of a zip member whose data are damaged (read through, CRC checked), or None.

    Args:
        archive: an open `zipfile.ZipFile`.
        path: its path, for the message.
        member: the member's name in the archive.
    """
    try:
        with archive.open(member) as f:
            while f.read(1 << 20):
                pass
    except ZIP_DAMAGE as error:
        return zip_damage(error, path, member)
    return None


def check_zip(path):
    """Raises DataFormatError when `path`, a file named `*.zip`, is not a readable zip archive (corrupt or
    truncated: a download cut short, a file saved from an error page); does nothing for other files."""
    path = os.fspath(path)
    if not path.lower().endswith(".zip") or not os.path.isfile(path):
        return
    problem = None
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as f:
            head = f.read(4)
        size = os.path.getsize(path)
        if head == b"PK\x03\x04":
            problem = f"it starts as a zip but has no end (a download cut short?), {size:,} bytes"
        else:
            problem = f"it does not even start as one ({size:,} bytes, starting {head!r})"
    else:
        try:
            zipfile.ZipFile(path).close()
        except (zipfile.BadZipFile, OSError) as error:
            problem = str(error)
    if problem:
        raise DataFormatError(f"{path}: not a readable zip archive, corrupt or truncated: {problem}; download it "
                              "again")


def host_reachable(address, timeout=3.0):
    """Returns whether a TCP connection to `address` (host, port) opens within `timeout` seconds."""
    try:
        socket.create_connection(address, timeout=timeout).close()
        return True
    except OSError:
        return False


# Files ---------------------------------------------------------------------------------------------
class DataFiles:
    """The files of a folder, or the members of a zip archive, by base name.

    In an archive, folder entries, macOS metadata (`__MACOSX/`, `._*`) and the folders inside are ignored,
    so `multinli_1.0.zip` lists `multinli_1.0_train.jsonl`, ... Use as a context manager (closes the zip).

    Args:
        path: a folder or a zip archive.

    Raises:
        DataUnavailableError: an archive holds two data members with the same base name; a file that is
            not a zip archive.
        DataFormatError: a zip archive that is corrupt or truncated (here, or while a member is read: a
            member failing its CRC check names the archive and the member).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._zip = None
        self._members = {}
        check_zip(self.path)
        if os.path.isfile(self.path) and not zipfile.is_zipfile(self.path):
            raise DataUnavailableError(f"{self.path}: expected a folder or a zip archive")
        if os.path.isfile(self.path):
            try:
                self._zip = zipfile.ZipFile(self.path)
            except (zipfile.BadZipFile, OSError) as error:
                raise DataFormatError(f"{self.path}: not a readable zip archive, corrupt or truncated ({error}); "
                                      "download it again") from None
            for member in self._zip.namelist():
                base = member.rsplit("/", 1)[-1]
                if not base or member.startswith("__MACOSX/") or base.startswith("._"):
                    continue
                if base in self._members:
                    self.close()
                    raise DataUnavailableError(
                        f"{self.path}: two members named {base!r} ({self._members[base]}, {member})")
                self._members[base] = member
        else:
            self._members = {n: n for n in os.listdir(self.path) if os.path.isfile(os.path.join(self.path, n))}

    @property
    def names(self):
        """The base names of the files, sorted."""
        return sorted(self._members)

    def display(self, name):
        """The file's name in messages: its path (`ARCHIVE.zip/MEMBER` inside an archive)."""
        if self._zip is not None:
            return f"{self.path}/{self._members[name]}"
        return os.path.join(self.path, name)

    def _open(self, name):
        if self._zip is not None:
            try:
                return self._zip.open(self._members[name])
            except ZIP_DAMAGE as error:
                raise zip_damage(error, self.path, self._members[name]) from None
        return open(os.path.join(self.path, name), "rb")

    @contextlib.contextmanager
    def lines(self, name):
        """Yields an iterator over the lines of file `name`, decoded as UTF-8 (see `text_lines`).

        Raises (also while iterating): DataFormatError for a line that is not UTF-8, and for a damaged zip
        member (`ARCHIVE/MEMBER: it fails its CRC check ...`).
        """
        try:
            with self._open(name) as binary:
                yield text_lines(binary, self.display(name), lambda: self._open(name))
        except ZIP_DAMAGE as error:
            if self._zip is None:
                raise
            raise zip_damage(error, self.path, self._members[name]) from None
        except DataFormatError:
            # A damaged member often shows first as a malformed line: report the damage, not the line.
            damage = self._zip is not None and member_damage(self._zip, self.path, self._members[name])
            if damage:
                raise damage from None
            raise

    def close(self):
        if self._zip is not None:
            self._zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def text_lines(binary, name, reopen):
    """Yields the lines of a binary file as UTF-8 text (a leading byte-order mark dropped, line ends as "\\n").

    Args:
        binary: the open file.
        name: its name in messages.
        reopen: opens the file again (binary), to find the line of a decoding error.

    Raises:
        DataFormatError: a line is not UTF-8 (`FILE:LINE:`).
    """
    try:
        yield from io.TextIOWrapper(binary, encoding="utf-8-sig")
    except UnicodeDecodeError:
        pass
    else:
        return
    # The decoder works on blocks: find the first line that does not decode.
    with reopen() as again:
        for lineno, raw in enumerate(again, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataFormatError(f"{name}:{lineno}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    raise DataFormatError(f"{name}: not UTF-8 text")


# Records -------------------------------------------------------------------------------------------
def jsonl_records(lines, name):
    """Yields (line number, record dict) of JSON lines text; blank lines are skipped.

    Raises:
        DataFormatError: invalid JSON, or a value that is not an object (`FILE:LINE:`).
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            hint = ""
            if lineno == 1 and line.lstrip().startswith("["):
                hint = "; a JSON array? expected JSON lines, one object per line"
            raise DataFormatError(f"{name}:{lineno}: invalid JSON ({e}){hint}") from None
        if not isinstance(record, dict):
            hint = "; expected JSON lines, one object per line" if isinstance(record, list) else ""
            raise DataFormatError(f"{name}:{lineno}: expected a JSON object, got {type(record).__name__}{hint}")
        yield lineno, record


def delimited_records(lines, name, delimiter="\t", quoting=csv.QUOTE_NONE):
    """Yields (line number, record dict) of delimited text whose first line is the header; blank lines skipped.

    The default reads tab-separated files as distributed with SNLI, MultiNLI and SICK: no quoting (their
    sentences hold unbalanced quotes). CSV: `delimiter=","`, `quoting=csv.QUOTE_MINIMAL`. A row shorter than
    the header lacks the trailing fields (a missing field is reported when it is needed). The line number of
    a record is the line it starts on (a quoted field may span lines).

    Raises:
        DataFormatError: an empty file, a header naming a field twice, a row longer than the header, broken
            quoting, or a quote that is never closed (reported at the line where the record holding it
            starts, not where the reader ran out of text) (`FILE:LINE:`).
    """
    quoted = quoting != csv.QUOTE_NONE
    raw = []  # the physical lines of the record being read (quoted files only)
    if quoted:
        lines = _recording(lines, raw)
    reader = csv.reader(lines, delimiter=delimiter, quoting=quoting)
    start = 1
    try:
        header = next(reader, None)
        if header is None:
            raise DataFormatError(f"{name}:1: empty file, expected a header line")
        for column in header:
            if header.count(column) > 1:
                raise DataFormatError(f"{name}:1: the header names field {column!r} twice")
        kind = "tab-separated" if delimiter == "\t" else f"{delimiter!r}-separated"
        while True:
            start = reader.line_num + 1
            raw.clear()
            fields = next(reader, None)
            if fields is None:
                break
            if quoted and len(raw) > 1:
                _check_quotes(raw, name, start, reader.line_num, delimiter)
            if not fields or fields == [""]:
                continue
            if len(fields) > len(header):
                raise DataFormatError(f"{name}:{start}: {len(fields)} {kind} fields, header has {len(header)}")
            yield start, dict(zip(header, fields))
    except csv.Error as e:
        if quoted and len(raw) > 1:
            _check_quotes(raw, name, start, reader.line_num, delimiter)
        raise DataFormatError(f"{name}:{reader.line_num}: {e}") from None


def _recording(lines, raw):
    """Yields `lines`, appending each to `raw` (the caller clears it at each record)."""
    for line in lines:
        raw.append(line)
        yield line


def _check_quotes(raw, name, start, end, delimiter):
    """Raises DataFormatError when a record spanning the lines `raw` (lines `start` to `end`) ends inside a
    quoted field: a quote that is never closed, which makes the reader swallow the following lines. Follows
    the reader's rules: a quote opens a field only at its start, `""` inside a quoted field is a quote."""
    inside, opened = False, None
    for i, line in enumerate(raw):
        j = 0
        while j < len(line):
            if line[j] == '"':
                if inside and line.startswith('""', j):
                    j += 1  # an escaped quote
                elif inside:
                    inside = False
                elif j == 0 or line[j - 1] == delimiter:
                    inside, opened = True, i
            j += 1
    if inside:
        raise DataFormatError(f"{name}:{start + opened}: a quoted field opened on this line is never closed: the "
                              f"record runs on to line {end}, swallowing the lines between; close the quote, or "
                              f"double it (\"\") if it is part of the text")


def file_records(lines, name):
    """Records of a file by its extension: .jsonl/.json JSON lines, .tsv/.txt tab-separated, .csv CSV.

    Raises:
        DataFormatError: another extension.
    """
    extension = os.path.splitext(name)[1].lower()
    if extension in (".jsonl", ".json"):
        return jsonl_records(lines, name)
    if extension in (".tsv", ".txt"):
        return delimited_records(lines, name)
    if extension == ".csv":
        return delimited_records(lines, name, delimiter=",", quoting=csv.QUOTE_MINIMAL)
    raise DataFormatError(f"{name}: unknown file type {extension or '(no extension)'!r}; expected one of "
                          + ", ".join(DATA_EXTENSIONS))


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


# tensorflow-datasets -------------------------------------------------------------------------------
def read_tfds(name, split_names, data_dir, host, offline_message, reachable=host_reachable):
    """Reads NLI splits (`premise`, `hypothesis`, `label` with -1 for no gold label) from tensorflow-datasets.

    Args:
        name: the tfds builder, e.g. `"snli"`, `"multi_nli"`.
        split_names: the tfds splits to read.
        data_dir: tfds data directory (None: its default).
        host: (host, port) the download needs; checked before downloading, so that an offline machine fails at
            once instead of after tfds's retries.
        offline_message: detail -> the message of the error raised offline.
        reachable: the host check, `host_reachable` by default.

    Returns:
        `(splits, skipped)`: {split: examples without parses, pair id `"{split}-{index}"`}, {split: {reason: n}}.

    Raises:
        DataUnavailableError: not prepared and `host` cannot be reached.
    """
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    if not builder.is_prepared():
        if not reachable(host):
            raise DataUnavailableError(offline_message(
                f"not prepared in {builder.data_dir} and {host[0]} cannot be reached"))
        builder.download_and_prepare()
    splits, skipped = {}, {}
    for split in split_names:
        examples, dropped = [], 0
        for i, ex in enumerate(tfds.as_numpy(builder.as_dataset(split=split))):
            label = int(ex["label"])
            if label < 0:
                dropped += 1
                continue
            examples.append({"premise": ex["premise"].decode("utf-8"), "hypothesis": ex["hypothesis"].decode("utf-8"),
                             "label": label, "pair_id": f"{split}-{i}", "premise_binary_parse": "",
                             "hypothesis_binary_parse": ""})
        splits[split] = examples
        skipped[split] = {NO_GOLD_LABEL: dropped}
    return splits, skipped
