"""Record parsers: `(line number, record dict)` of JSON lines, tab-separated or CSV text."""

import csv
import json
import os

from zoo.data.errors import DataFormatError

DATA_EXTENSIONS = (".jsonl", ".json", ".tsv", ".txt", ".csv")


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
