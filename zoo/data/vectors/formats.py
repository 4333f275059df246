"""Word-vector files: GloVe / word2vec / fastText text and word2vec binary, plain, `.gz` or `.zip`.

`read_vector_file(path)` reads the vectors of a file the user has; `open_vector_file` iterates over its
`(word, vector)` pairs in file order (the conversion into the cache reads it too). What a file must be:

- words are UTF-8 (decoded strictly: a line or record that is not is an error naming it);
- a `COUNT DIM` header (fastText, word2vec) must match the rows that follow: a file holding fewer or
  more vectors than its header promises is an error naming the header's line;
- every value finite and below `MAX_ABS_VALUE` in magnitude (`NonFiniteVectorError`, naming the line).

What a file is comes from its content where its name says otherwise (each such file is named in one line
on stderr): a zip archive, gzip data, word2vec binary or text, whatever its name ends with; a file whose
content starts as a zip archive but cannot be opened is a damaged archive, not text. A word listed twice
keeps its first vector, and the repeated words are counted in one line (as the cache's conversion does).
"""

import contextlib
import gzip
import io
import os
import warnings
import zipfile
import zlib

import numpy as np

from zoo.data.archives import ZIP_DAMAGE, member_damage, zip_damage
from zoo.data.errors import DataFormatError
from zoo.data.vectors.progress import warn

TEXT, WORD2VEC_BINARY = "text", "word2vec-binary"
CHUNK = 1 << 20
# The largest magnitude a word-vector value may have. Trained embeddings stay small: the largest |value| of
# GloVe 6B 50-d (glove-6b-50d, all 400k x 50 values, measured) is 5.46 (the 300-d sets could not be measured
# here). 1e4 leaves three orders of magnitude of room above that and stays far below what overflows float32
# in a dot product of two 300-d vectors (about 1e18 per value): a value beyond it is taken for a damaged
# file (a shifted column, a garbled exponent), not a word vector.
MAX_ABS_VALUE = 1e4
_FINITE_RULE = f"word vectors must be finite numbers below {MAX_ABS_VALUE:g} in magnitude (a damaged file?)"


class NonFiniteVectorError(DataFormatError):
    """A word vector holds NaN, an infinity (e.g. `1e39`, beyond float32) or a value above `MAX_ABS_VALUE`
    in magnitude; the message names the file and the line, record or row, and the word."""


def first_bad_row(values):
    """The index of the first row of a `[n, dim]` array holding NaN, an infinity or a value beyond
    `MAX_ABS_VALUE` in magnitude, or None."""
    if not len(values):
        return None
    ok = np.abs(values).max(axis=1) <= MAX_ABS_VALUE  # NaN compares False
    return None if ok.all() else int(np.argmin(ok))


def describe_bad_value(vector, written=None):
    """What is wrong with `vector` (see `first_bad_row`), e.g. "value 3 of 300 is an infinity ('1e39' as
    written: beyond float32's range)"; `written`: the values as text, when read from text."""
    i = int(np.argmin(np.abs(vector) <= MAX_ABS_VALUE))
    value = float(vector[i])
    text = written[i] if written is not None and i < len(written) else None
    if np.isnan(value):
        what = "NaN"
    elif np.isinf(value):
        what = "an infinity"
        if text is not None and "inf" not in text.lower():
            what += " (beyond float32's range, about 3.4e38)"
    else:
        what = f"{value:.4g}, beyond {MAX_ABS_VALUE:g} in magnitude (no word vector has such values)"
    return f"value {i + 1} of {len(vector)} is {what}" + (f" ({text!r} as written)" if text is not None else "")


def read_vector_file(path, wanted=None, top=None):
    """Reads a vector file the user has, keeping only some words.

    Args:
        path: GloVe / fastText / word2vec text (`word v1 ... vD` lines, an optional `COUNT DIM` header;
            plain, `.gz`, or `.zip` whose first file is read), or word2vec binary (`.bin`, `.bin.gz`, or
            a `.bin` inside a zip).
        wanted: a set of words to keep, or None for all.
        top: also keep the first `top` distinct words of the file.

    Returns:
        `(vectors, dim)`: dict word -> float32 `[dim]` in file order (a word listed twice keeps its first
        vector), and the dimension.

    Raises:
        DataFormatError: a malformed line or record (the message names the file and line or record).
    """
    path = os.fspath(path)
    top = int(top or 0)
    vectors, dim, counted = {}, None, 0
    seen, repeated = set(), []
    with open_vector_file(path) as pairs:
        for word, vector in pairs:
            if dim is None:
                dim = len(vector)
            if word in seen:
                repeated.append(word)
                continue
            seen.add(word)
            in_top = counted < top
            counted += in_top
            if wanted is None or in_top or word in wanted:
                vectors[word] = np.array(vector, dtype=np.float32)
            if wanted is not None and not wanted and counted >= top:
                break  # only the first `top` words were asked for
    if dim is None:
        raise DataFormatError(f"{os.path.basename(path)}: no vectors found")
    if repeated:
        warn(f"{path}: {len(repeated):,} repeated word(s) kept once, with the first of their vectors (e.g. "
             f"{repeated[0]!r})")
    return vectors, dim


@contextlib.contextmanager
def open_vector_file(path, member=None, format=None, digest=None):
    """Opens a vector file and yields an iterator of `(word, float32 vector)` in file order.

    Args:
        path: the file (plain, `.gz` or `.zip`).
        member: the file inside a zip archive (default: its first file); given, `path` must be a zip.
        format: `"text"` or `"word2vec-binary"` (default: binary when the file or member ends in `.bin`
            or `.bin.gz`).
        digest: a hashlib object fed with every byte of the file read (the zip member, or the file
            decompressed); when the iteration ends, the rest of the file is read into it too.

    Raises (also while iterating):
        DataFormatError: a malformed line or record, a non-finite value (`NonFiniteVectorError`), or a
            damaged archive: a zip member failing its CRC, truncated or corrupt compressed data, a file
            that should be a zip and is not (one line naming the archive and the member).
    """
    path = os.fspath(path)
    name = os.path.basename(path)
    kind = content_kind(path)
    named = "zip" if name.lower().endswith(".zip") else "gzip" if name.lower().endswith(".gz") else "plain"
    if member is None and kind != named:
        warn(f"{path}: its name says {_KINDS[named]}, its content is {_KINDS[kind]}: read as {_KINDS[kind]}")
    if kind == "zip" and not zipfile.is_zipfile(path):
        raise DataFormatError(f"{path}: starts as a zip archive but cannot be opened as one (cut short, or "
                              "damaged): get the file again")
    if kind == "zip":
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            raise DataFormatError(f"{path}: corrupt zip archive ({error}); get the file again") from None
        with archive:
            if member is None:
                members = [n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX")]
                if not members:
                    raise DataFormatError(f"{name}: empty zip archive")
                member = members[0]
            elif member not in archive.namelist():
                raise DataFormatError(f"{name}: no file {member!r} in the archive")
            try:
                with archive.open(member) as raw:
                    yield from _read_pairs(raw, f"{name}:{member}", format or _format_of(member), digest,
                                           sniff=format is None)
            except ZIP_DAMAGE as error:
                raise zip_damage(error, path, member) from None
            except DataFormatError:
                # A damaged member often shows first as a malformed line: report the damage, not the line.
                damage = member_damage(archive, path, member)
                if damage:
                    raise damage from None
                raise
        return
    if member is not None:
        raise DataFormatError(f"{name}: not a zip archive (it should hold {member}): corrupt or truncated")
    opener = gzip.open if kind == "gzip" else open
    try:
        with opener(path, "rb") as raw:
            yield from _read_pairs(raw, name, format or _format_of(path[:-3] if path.endswith(".gz") else path),
                                   digest, sniff=format is None)
    except (gzip.BadGzipFile, zlib.error, EOFError) as error:
        text = str(error).strip() or type(error).__name__
        what = "cut short" if isinstance(error, EOFError) else "corrupt"
        raise DataFormatError(f"{path}: its compressed data are {what} ({text}): the file is damaged; get it "
                              "again") from None


_KINDS = {"zip": "a zip archive", "gzip": "gzip data", "plain": "an uncompressed file",
          TEXT: "text vectors", WORD2VEC_BINARY: "word2vec binary"}


def content_kind(path):
    """`"zip"`, `"gzip"` or `"plain"`, from the file's first bytes (not its name)."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    return "gzip" if head[:2] == b"\x1f\x8b" else "plain"


def sniff_format(head, named):
    """`TEXT` or `WORD2VEC_BINARY` from a file's first bytes (`named`: what its name says, kept when the bytes
    cannot tell). Binary follows its `COUNT DIM` line with raw float32 records; text with lines of numbers."""
    first, newline, rest = head.partition(b"\n")
    fields = first.split()
    if not newline or len(fields) != 2 or not all(f.isdigit() for f in fields):
        return TEXT if newline and _text_vector_line(first) else named  # word2vec binary always has a header
    dim = int(fields[1])
    if b"\n" not in rest:
        return named  # a first record longer than the bytes looked at
    line = rest.split(b"\n", 1)[0]
    try:
        parts = line.decode("utf-8").rstrip(" \r").split(" ")
        if len(parts) >= dim + 1 and all(_is_float(p) for p in parts[-dim:]):
            return TEXT
    except UnicodeDecodeError:
        pass
    return WORD2VEC_BINARY


def _text_vector_line(line):
    """Whether a line reads as a word followed by numbers (a text vector file's line)."""
    try:
        parts = line.decode("utf-8").rstrip(" \r").split(" ")
    except UnicodeDecodeError:
        return False
    return len(parts) >= 2 and all(_is_float(p) for p in parts[1:])


def _read_pairs(raw, name, format, digest, sniff=False):
    """The body of `open_vector_file` (a generator that yields once): the pairs of `raw`, hashed when asked;
    with `sniff`, the text or binary format is taken from the content where the name says otherwise."""
    source = raw
    if digest is not None:
        raw = io.BufferedReader(_HashingReader(source, digest), buffer_size=CHUNK)
    if sniff and hasattr(raw, "peek"):
        found = sniff_format(raw.peek(1 << 16)[:1 << 16], format)
        if found != format:
            warn(f"{name}: its name says {_KINDS[format]}, its content is {_KINDS[found]}: read as {_KINDS[found]}")
            format = found
    yield _pairs(raw, name, format)
    if digest is not None:  # the bytes after the last record (or the last newline) count too
        while chunk := source.read(CHUNK):  # (the text layer may have closed `raw` already)
            digest.update(chunk)


def _format_of(filename):
    return WORD2VEC_BINARY if filename.endswith(".bin") else TEXT


def _pairs(raw, name, format):
    if format == WORD2VEC_BINARY:
        return iter_word2vec_binary(raw, name)
    return iter_text_vectors(utf8_lines(raw, name), name)


def utf8_lines(raw, name):
    """The lines of a binary file as text, each decoded strictly as UTF-8 ("\\n" ends a line).

    Raises:
        DataFormatError: `FILE:LINE: not UTF-8 text (...)` for the first line that is not.
    """
    for lineno, line in enumerate(raw, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataFormatError(f"{name}:{lineno}: not UTF-8 text ({error.reason} at byte {error.start} of the "
                                  "line): the words of a vector file must be UTF-8") from None


def iter_text_vectors(lines, name):
    """Parses `word v1 ... vD` lines (GloVe; fastText and word2vec text start with a `COUNT DIM` header).

    A few GloVe 840B words contain spaces: when a line has more fields than `D + 1` and the field before
    the last `D` is not a number, those first fields are the word.

    Args:
        lines: an iterable of text lines.
        name: the file name for error messages.

    Yields:
        `(word, float32 [D])`.

    Raises:
        DataFormatError: `FILE:LINE: ...` for a line with the wrong number of values or a non-number, and
            `FILE:1: ...` when a `COUNT DIM` header promises another number of vectors than the file holds
            (checked when the iteration ends).
        NonFiniteVectorError: `FILE:LINE: ...` for NaN, an infinity (`inf`, or `1e39`: beyond float32) or
            a value beyond `MAX_ABS_VALUE` in magnitude.
    """
    dim, promised, rows = None, None, 0
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r\n").rstrip(" ")
        if not line:
            continue
        if lineno == 1:
            head = line.split(" ")
            if len(head) == 2 and head[0].isdigit() and head[1].isdigit():
                promised, dim = int(head[0]), int(head[1])  # "COUNT DIM" header
                continue
        if dim is None:
            dim = line.count(" ")
            if dim < 1:
                raise DataFormatError(f"{name}:{lineno}: expected a word followed by its vector")
        spaces = line.count(" ")
        if spaces == dim:
            cut = line.index(" ")
            word, values = line[:cut], line[cut + 1:]
        else:
            fields = line.split(" ")
            if spaces < dim or _is_float(fields[-dim - 1]):
                raise DataFormatError(f"{name}:{lineno}: expected {dim} values, got {len(fields) - 1}")
            word, values = " ".join(fields[:-dim]), " ".join(fields[-dim:])
        vector = _parse_values(values, dim)
        if vector is None:
            raise DataFormatError(f"{name}:{lineno}: non-numeric value in the vector of {word!r}")
        if not np.abs(vector).max() <= MAX_ABS_VALUE:  # NaN compares False
            raise NonFiniteVectorError(f"{name}:{lineno}: the vector of {word!r}: "
                                       f"{describe_bad_value(vector, values.split(' '))}; {_FINITE_RULE}")
        rows += 1
        yield word, vector
    if promised is not None and rows != promised:
        raise DataFormatError(f"{name}:1: the header promises {promised:,} vectors of {dim} values, the file holds "
                              f"{rows:,} (cut short, or a header that does not belong to it)")


def _is_float(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _parse_values(text, dim):
    """`dim` space-separated numbers -> float32 array, or None when they are not exactly that."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # numpy warns (and truncates) on a non-number
        try:
            vector = np.fromstring(text, dtype=np.float32, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return vector if vector.size == dim else None


def iter_word2vec_binary(f, name):
    """Parses the word2vec binary format: a `COUNT DIM` text line, then per word its UTF-8 bytes, a space
    and DIM little-endian float32 values (the C tool also writes a newline after each vector).

    Args:
        f: a binary file object.
        name: the file name for error messages.

    Yields:
        `(word, float32 [DIM])` (the array is read-only; copy it to keep it).

    Raises:
        DataFormatError: a missing header, fewer or more records than the header announces (checked when
            the iteration ends), or a word that is not UTF-8 (naming the record).
        NonFiniteVectorError: a record holding NaN, an infinity or a value beyond `MAX_ABS_VALUE`.
    """
    header = f.readline(200)
    try:
        count, dim = (int(x) for x in header.split())
    except ValueError:
        raise DataFormatError(f"{name}:1: expected the word2vec header 'COUNT DIM', got {header[:40]!r}") from None
    if count < 0 or dim < 1:
        raise DataFormatError(f"{name}:1: bad word2vec header {header.strip()!r}")
    width = 4 * dim
    buf, pos = b"", 0
    for index in range(count):
        while True:
            cut = buf.find(b" ", pos)
            if cut >= 0 and len(buf) - cut - 1 >= width:
                break
            chunk = f.read(CHUNK)
            if not chunk:
                raise DataFormatError(f"{name}: record {index + 1}: the file ends, but its header announces "
                                      f"{count} vectors")
            buf, pos = buf[pos:] + chunk, 0
        try:
            word = buf[pos:cut].lstrip(b"\r\n").decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataFormatError(f"{name}: record {index + 1}: the word is not UTF-8 text ({error.reason} at byte "
                                  f"{error.start} of the word {buf[pos:cut][:40]!r})") from None
        vector = np.frombuffer(buf, dtype="<f4", count=dim, offset=cut + 1)
        if not np.abs(vector).max() <= MAX_ABS_VALUE:  # NaN compares False
            raise NonFiniteVectorError(f"{name}: record {index + 1} ({word!r}): {describe_bad_value(vector)}; "
                                       f"{_FINITE_RULE}")
        yield word, vector
        pos = cut + 1 + width
    rest = buf[pos:]
    while not rest.strip() and (chunk := f.read(CHUNK)):  # only line ends may follow the last record
        rest += chunk
    if rest.strip():
        raise DataFormatError(f"{name}:1: the header announces {count:,} vectors, but more records follow "
                              f"(starting {rest.strip()[:20]!r}): a header that does not belong to the file")


class _HashingReader(io.RawIOBase):
    """A read-only stream that feeds every byte it reads from `raw` to the hash object `digest`."""

    def __init__(self, raw, digest):
        self.raw, self.digest = raw, digest

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.raw.read(len(buffer))
        self.digest.update(data)
        buffer[:len(data)] = data
        return len(data)
