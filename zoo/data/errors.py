"""The two errors of every data loader (corpora, SNLI, word vectors, diagnostic sets)."""


class DataUnavailableError(RuntimeError):
    """The requested data set cannot be had here (not prepared and no network, or no such path)."""


class DataFormatError(ValueError):
    """A data file is malformed; the message starts with "FILE:LINE:" ("FILE:" for a damaged archive or
    compressed file, which has no line at fault)."""
