"""Named vector sets, downloaded once into the cache with their checksums checked, and converted into an
index (`zoo.data.vectors.index`) that later runs read offline.

Cache layout (`resolve_cache_dir()`: `cache_dir=`, else `$NLI_ZOO_CACHE`, else `$XDG_CACHE_HOME/nli-zoo`, else
`~/.cache/nli-zoo`):
```
CACHE/checksums.json              # trust-on-first-use SHA-256 of downloads that no catalogue checksum covers
CACHE/downloads/FILE              # the download; removed once converted unless keep_download=True (a file
                                  # put there by hand is checked and converted, and never removed)
CACHE/vectors/NAME/               # the index (see zoo.data.vectors.index)
CACHE/vectors/.NAME.lock/         # the lock of the one process converting NAME (zoo.fileio.DirectoryLock)
```
Every file appears under its final name only when complete (written under a temporary name, then
renamed), so a killed download or conversion never leaves a file that passes as complete; the temporary
folder a killed conversion leaves (`vectors/NAME.tmp-PID`) is removed by the next conversion of that set
once that PID no longer runs.

What is trusted: a download (or a file put into `downloads/` by hand) must have the catalogue's size and
checksum; a set whose publisher gives no checksum of the download has a pinned checksum of the file inside
the archive, checked while converting; and the vectors read must have the catalogue's count and dimension
(the structure check). A file failing any check is never converted into the index, never recorded as
trusted, and, when the user put it there, never deleted: the error names the file to delete.
"""

import contextlib
import datetime
import hashlib
import os
import shutil
import time
import urllib.parse
import urllib.request

from zoo import fileio
from zoo.data.errors import DataFormatError, DataUnavailableError
from zoo.data.network import host_reachable as _host_reachable
from zoo.data.vectors.catalog import CATALOG, VectorSource
from zoo.data.vectors.formats import CHUNK, open_vector_file
from zoo.data.vectors.index import CacheCorruptError, IndexWriter, index_ready
from zoo.data.vectors.progress import Progress, say, warn

CACHE_ENV = "NLI_ZOO_CACHE"
_LOCK_POLL_SECONDS = 0.5
OFFLINE_OPTIONS = ("--embeddings glove-6b-50d (installed with the zoo, no download) or --embeddings PATH "
                   "(a GloVe, fastText or word2vec file you already have: .txt/.vec/.gz/.zip/.bin/.bin.gz)")


class ChecksumMismatchError(DataUnavailableError):
    """A file for a named vector set is not the published one: its size, its checksum (published, or
    recorded at the first download) or its structure (vector count, dimension) differs."""


def resolve_cache_dir(cache_dir=None):
    """The cache root: `cache_dir`, else `$NLI_ZOO_CACHE`, else `$XDG_CACHE_HOME/nli-zoo`, else
    `~/.cache/nli-zoo`."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nli-zoo")
    return os.path.abspath(os.path.expanduser(os.fspath(cache_dir)))


def fetch_vectors(source, cache_dir=None, progress=True, keep_download=False):
    """Downloads and converts a catalog vector set once; returns the folder of its index.

    When the index is already in the cache nothing else happens (no network access at all).

    Args:
        source: a name from `CATALOG` or a `VectorSource`.
        cache_dir: the cache root (see `resolve_cache_dir()`).
        progress: show progress bars on stderr.
        keep_download: keep the downloaded archive after the conversion (default: remove it; a file put
            into `CACHE/downloads/` by hand is always kept).

    Returns:
        The folder holding `meta.json`, `words.txt` and `vectors.f32` (open it with `VectorIndex`).

    Raises:
        DataUnavailableError: the host cannot be reached (at once, after a 3 s connection probe), the
            download fails, or the cache cannot be written; the message names the offline options.
        ChecksumMismatchError: the file's size, checksum, vector count or dimension is not the expected
            one (the message names the file and, for a file put there by hand, says to delete it).
        CacheCorruptError: a file of the cache is damaged (the message names what to delete).
        DataFormatError: a download that passed its checksum is malformed.
    """
    if not isinstance(source, VectorSource):
        if source not in CATALOG:
            raise DataUnavailableError(f"unknown word vectors {source!r}; named vectors: "
                                       f"{', '.join(('glove-6b-50d',) + tuple(CATALOG))}")
        source = CATALOG[source]
    root = resolve_cache_dir(cache_dir)
    index_dir = os.path.join(root, "vectors", source.name)
    if index_ready(index_dir):
        return index_dir
    if os.path.isdir(index_dir) and os.listdir(index_dir) and not os.path.exists(os.path.join(index_dir, "meta.json")):
        raise CacheCorruptError(f"{index_dir} holds files but no meta.json, so it is not an index the conversion wrote "
                                f"(the conversion writes a folder whole, meta.json last): delete {index_dir} to convert "
                                f"{source.name} again (from {os.path.join(root, 'downloads', source.filename)} if it is "
                                "there, else downloaded)")
    try:
        os.makedirs(os.path.join(root, "vectors"), exist_ok=True)
        os.makedirs(os.path.join(root, "downloads"), exist_ok=True)
    except OSError as error:
        raise DataUnavailableError(f"cannot write the word-vector cache {root}: {error}; set "
                                   f"{CACHE_ENV} or cache_dir= to a writable folder") from None
    with _waiting_lock(os.path.join(root, "vectors", f".{source.name}.lock"), f"conversion of {source.name}"):
        if index_ready(index_dir):  # another process finished it while we waited
            return index_dir
        # The conversion folder of a killed run of this set (this set's lock is ours: no one else converts it).
        fileio.clean_stale_temporaries(os.path.join(root, "vectors"), on_remove=_removed_leftover,
                                       prefix=f"{source.name}.tmp-")
        archive, by_hand, sha256 = _download(source, root, progress)
        say(f"converting {source.name} once into {index_dir} (later runs read only the rows they need)")
        _convert(source, root, archive, index_dir, progress, by_hand, sha256)
        if by_hand:
            say(f"kept {archive} (it was there before this run; the index does not need it: delete it to free "
                 f"{os.path.getsize(archive) / 1e6:,.0f} MB)")
        elif not keep_download:
            os.remove(archive)
    return index_dir


def _removed_leftover(path):
    say(f"removed {path}, left by a conversion or write that was killed (its process no longer runs)")


@contextlib.contextmanager
def _waiting_lock(folder, what):
    """Holds `zoo.fileio.DirectoryLock(folder)`, waiting while another live process holds it (it is
    converting the same set: once it is done, the index is there). The lock of a killed process is taken
    over. `DirectoryLock` refuses at once rather than waiting, hence the loop."""
    if os.path.isfile(folder):  # the lock file of a zoo from before the cache used DirectoryLock
        with contextlib.suppress(OSError):
            os.remove(folder)
    lock, told = fileio.DirectoryLock(folder, what=what), False
    while True:
        try:
            lock.acquire()
            break
        except fileio.LockedError as error:
            if not told:
                say(f"waiting: {error}")
                told = True
            time.sleep(_LOCK_POLL_SECONDS)
    try:
        yield
    finally:
        lock.release()


def _checksums_path(root):
    return os.path.join(root, "checksums.json")


_RECORDS_NOTE = ("it holds only the SHA-256 recorded at the first download of vector sets the catalogue has no "
                 "checksum for")


def _recorded(root):
    path = _checksums_path(root)
    remedy = f"delete it ({_RECORDS_NOTE}; they are recorded again at the next download)"
    try:
        records = fileio.read_json(path, default={}, remedy=remedy)
    except fileio.CorruptFileError as error:
        raise CacheCorruptError(str(error)) from None
    if not isinstance(records, dict):
        raise CacheCorruptError(f"{path}: not a record of checksums: {remedy}")
    return records


def _record(root, source, sha256, size):
    with _waiting_lock(os.path.join(root, ".checksums.lock"), "record of checksums"):  # two sets at once both record
        fileio.clean_stale_temporaries(root, on_remove=_removed_leftover, prefix=".checksums.json.tmp-")
        records = _recorded(root)
        records[source.url] = {"name": source.name, "file": source.filename, "size": size, "sha256": sha256,
                               "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        fileio.write_json(_checksums_path(root), records, indent=1)


def _trust_on_first_use(source):
    """Whether no catalogue checksum covers `source` (neither of its download nor of the file inside)."""
    return source.checksum is None and source.member_checksum is None


def _expected(source, root):
    """`(algorithm, hex digest, where from)` the download must match, or None (the catalogue has no
    checksum of the download: a checksum of the file inside it, or none at all and this is the first use)."""
    if source.checksum:
        return source.checksum[0], source.checksum[1].lower(), source.checksum_source
    if not _trust_on_first_use(source):
        return None
    record = _recorded(root).get(source.url)
    if record:
        return "sha256", record["sha256"], f"recorded at the first download on {record['recorded']}"
    return None


def _offline(source, detail):
    return DataUnavailableError(
        f"cannot download word vectors {source.name!r}: {detail}. Offline options: {OFFLINE_OPTIONS}")


def _probe_address(url):
    """The `(host, port)` a download of `url` connects to first (the proxy, when one is set)."""
    parts = urllib.parse.urlparse(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        proxy_parts = urllib.parse.urlparse(proxy if "://" in proxy else f"http://{proxy}")
        return proxy_parts.hostname, proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _check_space(root, source):
    need = (source.size or 0) + (source.count or 0) * (source.dim * 4 + 16)
    free = shutil.disk_usage(root).free
    if need and free < need:
        raise DataUnavailableError(f"{source.name} needs about {need / 1e9:.1f} GB free in {root} (download and "
                                   f"index), {free / 1e9:.1f} GB are; set {CACHE_ENV} or cache_dir= elsewhere")


def _hashes(source, expected):
    """The hash objects a download is fed to: the expected checksum's, and SHA-256 to record on first use."""
    hashes = {}
    if expected:
        hashes[expected[0]] = hashlib.new(expected[0])
    if _trust_on_first_use(source):
        hashes.setdefault("sha256", hashlib.sha256())
    return hashes


def _download(source, root, progress):
    """Downloads `source` into `root/downloads` once (atomically, checked).

    Returns:
        `(path, by_hand, sha256)`: `by_hand` when the file was there before (put there by hand, or kept
        from an earlier run): it is checked, never removed; `sha256` of the file when no catalogue checksum
        covers it (to record once the conversion succeeded), else None.
    """
    target = os.path.join(root, "downloads", source.filename)
    expected = _expected(source, root)
    hashes = _hashes(source, expected)
    if os.path.exists(target):  # kept from an earlier run, or put there by hand
        size = 0 if hashes else os.path.getsize(target)
        with open(target, "rb") as f:
            while hashes and (chunk := f.read(CHUNK)):
                size += len(chunk)
                for h in hashes.values():
                    h.update(chunk)
        _verify(source, root, target, size, hashes, expected, by_hand=True)
        return target, True, hashes["sha256"].hexdigest() if "sha256" in hashes else None
    if urllib.parse.urlparse(source.url).scheme in ("http", "https"):
        address = _probe_address(source.url)
        if not _host_reachable(address):
            raise _offline(source, f"{address[0]} cannot be reached (no network?)")
        _check_space(root, source)
    say(f"downloading {source.name} ({source.size / 1e9:.2f} GB) from {source.url}" if source.size else
         f"downloading {source.name} from {source.url}")
    part = target + ".part"  # under the lock: a leftover one is from a killed run
    size = 0
    try:
        with urllib.request.urlopen(source.url, timeout=60) as response, open(part, "wb") as out:
            length = response.headers.get("Content-Length")
            bar = Progress(f"downloading {source.filename}", int(length) if length and length.isdigit()
                            else source.size, enabled=progress)
            while chunk := response.read(CHUNK):
                out.write(chunk)
                size += len(chunk)
                for h in hashes.values():
                    h.update(chunk)
                bar.update(size)
            out.flush()
            os.fsync(out.fileno())
            bar.close()
    except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
        with contextlib.suppress(OSError):
            os.remove(part)
        raise _offline(source, f"{source.url}: {getattr(error, 'reason', error)}") from None
    _verify(source, root, part, size, hashes, expected, by_hand=False)
    os.replace(part, target)
    return target, False, hashes["sha256"].hexdigest() if "sha256" in hashes else None


def _verify(source, root, path, size, hashes, expected, by_hand):
    """Checks the size and the expected checksum of a download; raises ChecksumMismatchError (see
    `_mismatch`) when one differs."""
    problem = None
    if source.size and size != source.size:
        problem = f"it has {size:,} bytes, expected {source.size:,} ({source.checksum_source})"
    elif expected and hashes[expected[0]].hexdigest() != expected[1]:
        problem = (f"its {expected[0]} is {hashes[expected[0]].hexdigest()}, expected {expected[1]} "
                   f"({expected[2]})")
    if problem:
        raise _mismatch(source, root, path, problem, by_hand, recorded=bool(expected) and not source.checksum)


def _mismatch(source, root, path, problem, by_hand, recorded=False):
    """The ChecksumMismatchError of a file that is not the one expected, with the exact remedy; a file this
    run downloaded is removed, a file put there by hand is left in place (the message names it)."""
    if by_hand:
        head = f"{source.name}: {path} (put there by hand, or kept from an earlier download) failed its check"
        what = (f"it was left in place and not converted: delete {path} to download it again, or replace it with "
                f"the published {source.filename} from {source.url}")
    else:
        with contextlib.suppress(OSError):
            os.remove(path)
        head = f"{source.name}: {source.filename} from {source.url} failed its check"
        what = ("the download was removed; the host may now serve a different file, or the transfer was "
                "corrupted: retry")
    if recorded:
        what += (f"; if you trust this file over the one recorded at its first download, delete the entry of "
                 f"{source.url} in {_checksums_path(root)} ({_RECORDS_NOTE})")
    return ChecksumMismatchError(f"{head}: {problem}; {what}. Or pass a file you trust with --embeddings PATH")


def _convert(source, root, archive, index_dir, progress, by_hand, sha256):
    """Converts a checked download into the index, after the structure check; records its SHA-256 when no
    catalogue checksum covers it, only once the conversion succeeded."""
    pinned = source.checksum is not None  # the download matched a published checksum in _download

    def refuse(problem):
        return _mismatch(source, root, archive, problem, by_hand, recorded=_trust_on_first_use(source) and
                         source.url in _recorded(root))

    try:
        _build_index(source, archive, index_dir, progress, refuse, pinned)
    except DataFormatError as error:
        if pinned:  # the published file itself: keep it, the message names the line
            raise
        raise refuse(f"it cannot be read as {source.name} ({error})") from None
    if sha256 is not None and source.url not in _recorded(root):
        _record(root, source, sha256, os.path.getsize(archive))
        say(f"{source.name}: no published checksum; recorded sha256 {sha256} in {_checksums_path(root)} "
             f"(trust on first use, after the structure check): later downloads must match it")


def _build_index(source, archive, index_dir, progress, refuse, pinned):
    """Converts the downloaded file into `index_dir` (words.txt, vectors.f32, then meta.json), atomically,
    after the structure check: the catalogue's dimension, vector count (`source.rows`) and checksum of the
    file inside the archive (`source.member_checksum`). `refuse(problem)` gives the error to raise; a count
    that differs from the catalogue's in a file that matched a published checksum (of the download:
    `pinned`, or of the file inside) is reported, not refused: the catalogue is wrong then, not the file."""
    digest = hashlib.new(source.member_checksum[0]) if source.member_checksum else None
    writer = IndexWriter(index_dir)
    try:
        rows, duplicates, skipped = _write_rows(source, archive, writer, digest, progress)
        dim = writer.dim
        structure = None
        if source.rows is not None and rows != source.rows:
            structure = (f"it holds {rows:,} vectors of {dim} values, the catalogue says {source.rows:,} of "
                         f"{source.dim}")
        if digest is not None and digest.hexdigest() != source.member_checksum[1].lower():
            raise refuse((f"{structure}, and " if structure else "")
                         + f"its {source.member or 'content'} has {source.member_checksum[0]} {digest.hexdigest()}, "
                         f"expected {source.member_checksum[1].lower()} ({source.checksum_source})")
        if structure and not (pinned or digest is not None):
            raise refuse(structure)
        if structure:
            warn(f"warning: {source.name}: {structure}; the file matched its published checksum, so it is used "
                 "(the catalogue's count is wrong)")
        writer.finish(name=source.name, url=source.url, file=source.filename, rows=rows,
                      duplicates_skipped=duplicates, words_with_newline_skipped=skipped)
    except BaseException:
        writer.abort()
        raise
    say(f"{source.name}: {len(writer.words):,} vectors of {dim} values in {index_dir}"
        + (f" ({duplicates} repeated words kept once)" if duplicates else ""))


def _write_rows(source, archive, writer, digest, progress):
    """Reads the vectors of the download into `writer` (a repeated word keeps its first vector; a word
    holding a newline is skipped: words.txt is one word per line); returns `(rows read, repeated words,
    words skipped)`."""
    seen, duplicates, skipped, rows = set(), 0, 0, 0
    bar = Progress(f"converting {source.name}", source.count, unit="k vectors", scale=1e3, enabled=progress)
    with open_vector_file(archive, member=source.member, format=source.format, digest=digest) as pairs:
        for word, vector in pairs:
            rows += 1
            if writer.dim is None:
                writer.dim = len(vector)
                if writer.dim != source.dim:
                    raise DataFormatError(f"{source.filename}: vectors have {writer.dim} values, the catalog says "
                                          f"{source.dim}")
            if word in seen:
                duplicates += 1
                continue
            if "\n" in word:
                skipped += 1
                continue
            seen.add(word)
            writer.add(word, vector)
            if len(writer.words) % 10_000 == 0:
                bar.update(len(writer.words))
        bar.update(len(writer.words))
        bar.close()
    if not writer.words:
        raise DataFormatError(f"{source.filename}: no vectors found")
    return rows, duplicates, skipped
