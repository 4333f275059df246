"""The papers' word vectors by name: where each set is published, its size, checksums and structure.

`CATALOG` maps a name given to `--embeddings` (e.g. `"glove-840b-300d"`) to its `VectorSource`; the
download checks (`zoo.data.vectors.download`) and the structure check of the conversion read it.
"""

import dataclasses
import os
import urllib.parse

from zoo.data.vectors.formats import TEXT, WORD2VEC_BINARY


@dataclasses.dataclass(frozen=True)
class VectorSource:
    """One downloadable vector set.

    Attributes:
        name: the name given to `--embeddings`, e.g. `"glove-840b-300d"`.
        url: where to download it (`https://`, `http://` or `file://`).
        format: `"text"` (GloVe, fastText, word2vec text) or `"word2vec-binary"`.
        dim: vector size.
        member: the file to read inside a zip archive (None: the download itself, gzip-compressed when
            its name ends in `.gz`).
        size: bytes of the download, where known.
        checksum: `(algorithm, hex digest)` of the download where a trustworthy source gives one.
        member_checksum: `(algorithm, hex digest)` of the file read from the download (the zip member, or
            the download itself when it is not an archive), checked while converting; for sets whose
            download has no known checksum.
            With neither checksum, the SHA-256 of the first download is recorded (after it passed the
            structure check and was converted) and later downloads must match it.
        checksum_source: where `size` and the checksums come from.
        count: number of vectors (for the progress bar and the disk-space check; approximate is fine).
        description: what the vectors are, for `--help` and the docs.
        rows: the exact number of vectors in the file (the structure check; None: not checked).
    """

    name: str
    url: str
    format: str
    dim: int
    member: str = None
    size: int = None
    checksum: tuple = None
    checksum_source: str = ""
    count: int = None
    description: str = ""
    rows: int = None
    member_checksum: tuple = None

    @property
    def filename(self):
        """The download's file name (the last part of the URL's path)."""
        return os.path.basename(urllib.parse.urlparse(self.url).path)


MXNET_GLOVE = ("SHA-1 pinned by Apache MXNet's text-embedding module (python/mxnet/contrib/text/_constants.py, "
               "GLOVE_PRETRAINED_FILE_SHA1), which first downloaded this file from nlp.stanford.edu/data "
               "(apache/mxnet PR #8763) and then served a copy checked against the same SHA-1")

CATALOG = {source.name: source for source in (
    VectorSource(
        "glove-840b-300d", "https://nlp.stanford.edu/data/glove.840B.300d.zip", TEXT, 300,
        member="glove.840B.300d.txt", size=2_176_768_927,
        checksum=("sha1", "8084fbacc2dee3b1fd1ca4cc534cbfff3519ed0d"), checksum_source=MXNET_GLOVE,
        count=2_196_017, rows=2_196_017,
        description="GloVe Common Crawl 840B tokens, 2.2M cased words (Wang & Jiang 2016, Chen et al. 2017, "
                    "Bowman et al. 2015); 2.0 GB zip"),
    VectorSource(
        "glove-6b-300d", "https://nlp.stanford.edu/data/glove.6B.zip", TEXT, 300,
        member="glove.6B.300d.txt", size=862_182_613,
        checksum=("sha1", "b64e54f1877d2f735bdd000c1d7d771e25c7dfdc"), checksum_source=MXNET_GLOVE,
        count=400_000, rows=400_000,
        description="GloVe Wikipedia 2014 + Gigaword 5, 6B tokens, 400k lowercased words; 822 MB zip "
                    "(holding the 50/100/200/300-d files; the 300-d one is read)"),
    VectorSource(
        "word2vec-google-news-300",
        "https://github.com/RaRe-Technologies/gensim-data/releases/download/word2vec-google-news-300/"
        "word2vec-google-news-300.gz", WORD2VEC_BINARY, 300, size=1_743_563_840,
        checksum=("md5", "a5e5354d40acb95f9ec66d5977d140ef"),
        checksum_source="MD5 and size published in gensim-data's list.json for this release asset, which "
                        "gensim's downloader checks", count=3_000_000, rows=3_000_000,
        description="word2vec GoogleNews-vectors-negative300 (binary format, gzip-compressed), 3M cased words "
                    "and phrases (Rocktaschel et al. 2016, Paria et al. 2016); 1.7 GB"),
    VectorSource(
        "fasttext-crawl-300d-2m",
        "https://dl.fbaipublicfiles.com/fasttext/vectors-english/crawl-300d-2M.vec.zip", TEXT, 300,
        member="crawl-300d-2M.vec", size=1_523_785_255, checksum=None,
        member_checksum=("sha1", "9b556504d099a6c01f3dd76b88775d02cb2f1946"),
        checksum_source="fastText publishes no checksum of the zip; its size is the one dl.fbaipublicfiles.com "
                        "served (a public wget log); the SHA-1 of crawl-300d-2M.vec, the file inside, is the one "
                        "Apache MXNet pinned when it added these vectors (apache/mxnet PR #9551, "
                        "python/mxnet/contrib/text/_constants.py, FAST_TEXT_FILE_SHA1)",
        count=2_000_000, rows=2_000_000,
        description="fastText Common Crawl 600B tokens, 2M cased words; 1.5 GB zip"),
)}
