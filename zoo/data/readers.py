"""The pieces shared by the corpus loaders (`zoo.data.snli`, `zoo.data.corpora`), by what they read; users
call the loaders, not these. This module gathers their names for the callers outside `zoo.data`:

- `zoo.data.errors`: `DataUnavailableError`, `DataFormatError`, the loaders' two errors.
- `zoo.data.archives`: `DataFiles` (a folder or a zip archive, read line by line as UTF-8), `check_zip`,
  `zip_damage`, `member_damage` (one line naming a damaged archive and member).
- `zoo.data.records`: `jsonl_records`, `delimited_records`, `file_records`: `(line number, record dict)`.
- `zoo.data.layout`: `Layout` (which field is the premise, the hypothesis, the label, ...; which label names
  mean which of `LABELS`), `read_examples`, `read_split_files`, `label_key`, `label_id`.
- `zoo.data.tfds_reader`: `read_tfds`, the splits of a tensorflow-datasets NLI data set.
- `zoo.data.network`: `host_reachable`, the check made before a download.
"""

from zoo.data.archives import ZIP_DAMAGE, DataFiles, check_zip, member_damage, text_lines, zip_damage
from zoo.data.errors import DataFormatError, DataUnavailableError
from zoo.data.layout import (
                             NO_GOLD_LABEL,
                             REQUIRED,
                             SNLI_FIELDS,
                             TARGETS,
                             UNLABELED,
                             Layout,
                             check_fields,
                             label_id,
                             label_key,
                             read_examples,
                             read_split_files,
)
from zoo.data.network import host_reachable
from zoo.data.records import DATA_EXTENSIONS, delimited_records, file_records, jsonl_records
from zoo.data.tfds_reader import read_tfds

__all__ = ["ZIP_DAMAGE", "DataFiles", "check_zip", "member_damage", "text_lines", "zip_damage", "DataFormatError",
           "DataUnavailableError", "NO_GOLD_LABEL", "REQUIRED", "SNLI_FIELDS", "TARGETS", "UNLABELED", "Layout",
           "check_fields", "label_id", "label_key", "read_examples", "read_split_files", "host_reachable",
           "DATA_EXTENSIONS", "delimited_records", "file_records", "jsonl_records", "read_tfds"]
