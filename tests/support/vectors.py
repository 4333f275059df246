"""Word-vector fixtures for the tests: a few rows in GloVe's text layout and word2vec's binary one, served
as `file://` URLs (`fixture_source`), and `forbid_network`, which fails a test that opens a URL again.
No test downloads from the network.
"""

import gzip
import hashlib
import struct
import urllib.request
import zipfile

from zoo.data.vectors import VectorSource
from zoo.data.vectors import download as vector_download

# In frequency order, as the real files are; "at name@domain.com" is a GloVe 840B word with a space.
ROWS = [("the", [0.1, 0.2, 0.3]), (",", [1.0, -1.0, 0.5]), ("man", [1.0, 1.0, 1.0]),
        ("sleeps", [-1.0, 0.0, 1.0]), ("at name@domain.com", [0.5, 0.5, 0.5]), ("café", [2.0, 2.0, 2.0])]
GLOVE = "".join(f"{w} {' '.join(str(v) for v in values)}\n" for w, values in ROWS)


def write_word2vec_bin(path, rows, compress):
    """The C tool's layout: "COUNT DIM\\n", then per word "WORD " + float32 values + "\\n"."""
    body = f"{len(rows)} {len(rows[0][1])}\n".encode()
    for word, values in rows:
        body += word.encode("utf-8") + b" " + struct.pack(f"<{len(values)}f", *values) + b"\n"
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(body)
    return path


def fixture_source(tmp_path, kind, checksum="auto", size="auto"):
    """A `VectorSource` whose URL is a file:// fixture: kind "text", "zip" or "bin.gz"."""
    rows = [r for r in ROWS if " " not in r[0]]  # word2vec words have no spaces
    if kind == "text":
        path, member, fmt = tmp_path / "fixture.vec", None, "text"
        path.write_text(f"{len(ROWS)} 3\n" + GLOVE, encoding="utf-8")  # fastText-style header
    elif kind == "zip":
        path, member, fmt = tmp_path / "fixture.zip", "vectors.300d.txt", "text"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("vectors.50d.txt", "the 1 2\n")
            z.writestr(member, GLOVE)
    else:
        path, member, fmt = tmp_path / "fixture.bin.gz", None, "word2vec-binary"
        write_word2vec_bin(path, rows, compress=True)
    data = path.read_bytes()
    return VectorSource(
        f"fixture-{kind.replace('.', '-')}", path.as_uri(), fmt, 3, member=member,
        size=len(data) if size == "auto" else size,
        checksum=("sha256", hashlib.sha256(data).hexdigest()) if checksum == "auto" else checksum,
        checksum_source="test fixture", count=len(ROWS))


def forbid_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the URL was opened again")
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(vector_download, "_host_reachable", refuse)
