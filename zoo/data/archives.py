"""Reading data files from a folder or a zip archive, line by line as UTF-8, and naming damaged archives.

- `DataFiles`: the files of a folder or a zip archive, by base name (`lines(name)`: strict UTF-8 lines).
- `check_zip`, `zip_damage`, `member_damage`: one-line `DataFormatError`s for a corrupt or truncated zip
  and for a member failing its CRC check (`ARCHIVE.zip/MEMBER: ...`).
"""

import contextlib
import io
import os
import zipfile
import zlib

from zoo.data.errors import DataFormatError, DataUnavailableError

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
