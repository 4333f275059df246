"""Model hubs: `hf://` and `kaggle://` URIs, downloading a preset and uploading one, through the hubs'
official clients (`huggingface_hub`, `kagglehub`), imported only when a hub URI is used.

Downloading fetches the whole preset in one call (`huggingface_hub.snapshot_download`,
`kagglehub.model_download`) into the client's cache; `zoo.presets.from_preset` then checks every file
against metadata.json like a local folder. Without network, or without the client installed, every
function here fails with one line (`HubUnreachableError`, `HubClientMissingError`) naming the URI.

Uploading to Kaggle goes through KerasHub's `keras_hub.upload_preset` when KerasHub is installed
(else `kagglehub.model_upload`, which is what it calls). Uploading to Hugging Face calls
`huggingface_hub` directly: KerasHub's upload writes its own generic model card over `README.md` when the
repository has none, and deletes the preset's `README.md` afterwards.
"""

import dataclasses
import errno
import re
import socket

from zoo.presets.files import PresetError

HF_SCHEME = "hf"
KAGGLE_SCHEME = "kaggle"
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HF_FORM = "hf://OWNER/NAME (e.g. hf://someone/bowman_lstm_snli)"
KAGGLE_FORM = "kaggle://OWNER/MODEL/keras/VARIANT[/VERSION] (e.g. kaggle://someone/nli-zoo/keras/bowman_lstm)"


class HubError(PresetError):
    """A hub refused or failed a download or an upload (one line naming the URI)."""


class HubUnreachableError(HubError):
    """The hub could not be reached (no network, a proxy, a timeout, the client's offline mode)."""


class HubClientMissingError(HubError):
    """The hub's client package is not installed."""


@dataclasses.dataclass(frozen=True)
class HubURI:
    """A parsed hub URI.

    Attributes:
        scheme: `"hf"` or `"kaggle"`.
        handle: what the client takes: `OWNER/NAME` (Hugging Face; `NAME` alone for an upload to your own
            account) or `OWNER/MODEL/FRAMEWORK/VARIANT[/VERSION]` (Kaggle).
        uri: the URI as given.
    """

    scheme: str
    handle: str
    uri: str

    @property
    def version(self):
        """The Kaggle version number, or None (the latest)."""
        parts = self.handle.split("/")
        return int(parts[4]) if self.scheme == KAGGLE_SCHEME and len(parts) == 5 else None


def is_hub_uri(value):
    """Whether `value` is a string with a `scheme://` prefix (a hub URI, not a local path)."""
    return isinstance(value, str) and "://" in value


def parse_uri(uri, for_upload=False):
    """Parses `hf://OWNER/NAME` or `kaggle://OWNER/MODEL/FRAMEWORK/VARIANT[/VERSION]`.

    Args:
        uri: the URI.
        for_upload: an upload may also name `hf://NAME` (your own account, as `huggingface_hub` allows) and
            takes no Kaggle version (the hub numbers versions).

    Returns:
        a `HubURI`.

    Raises:
        PresetError: another scheme or a malformed handle (one line with the expected form).
    """
    if not is_hub_uri(uri):
        raise PresetError(f"{uri!r} is not a hub URI; expected {HF_FORM} or {KAGGLE_FORM}")
    scheme, _, handle = uri.partition("://")
    scheme = scheme.lower()
    parts = handle.strip("/").split("/")
    valid = all(_SEGMENT.match(p) for p in parts)
    if scheme == HF_SCHEME:
        if not valid or len(parts) not in ((1, 2) if for_upload else (2,)):
            raise PresetError(f"malformed Hugging Face URI {uri!r}; expected {HF_FORM}")
    elif scheme == KAGGLE_SCHEME:
        counts = (4,) if for_upload else (4, 5)
        if not valid or len(parts) not in counts or (len(parts) == 5 and not parts[4].isdigit()):
            raise PresetError(f"malformed Kaggle URI {uri!r}; expected {KAGGLE_FORM}")
    else:
        raise PresetError(f"unknown hub {scheme + '://'!r} in {uri!r}; expected {HF_FORM} or {KAGGLE_FORM}")
    return HubURI(scheme, "/".join(parts), uri)


# --------------------------------------------------------------------------------- errors of the clients

_UNREACHABLE_NAMES = {
    "LocalEntryNotFoundError", "OfflineModeIsEnabled",             # huggingface_hub
    "ConnectError", "ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException",
    "NetworkError", "ProxyError", "RemoteProtocolError",          # httpx
    "ConnectionError", "Timeout", "NewConnectionError", "MaxRetryError", "NameResolutionError",  # requests/urllib3
}
_UNREACHABLE_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.ECONNRESET,
                       errno.ETIMEDOUT, errno.ENETDOWN, errno.ECONNABORTED}


def _chain(error):
    seen = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def _unreachable(error):
    """Whether an error of a hub client (or one it was raised from) says the network is missing."""
    for e in _chain(error):
        if isinstance(e, (ConnectionError, TimeoutError, socket.gaierror, socket.timeout)):
            return True
        if isinstance(e, OSError) and e.errno in _UNREACHABLE_ERRNOS:
            return True
        if any(cls.__name__ in _UNREACHABLE_NAMES for cls in type(e).__mro__):
            return True
    return False


def _status(error):
    """The HTTP status of a client's error (or one it was raised from), or None."""
    for e in _chain(error):
        response = getattr(e, "response", None)
        code = getattr(response, "status_code", None)
        if isinstance(code, int):
            return code
        match = re.search(r"\b(40[0-9]|5[0-9][0-9]) (Client|Server) Error", str(e))
        if match:
            return int(match.group(1))
    return None


def _line(error, limit=200):
    """The error's innermost message, on one line."""
    for e in reversed(_chain(error)):
        text = " ".join(str(e).split())
        if text:
            return text if len(text) <= limit else text[:limit - 3] + "..."
    return type(error).__name__


def _client(scheme, action):
    """Imports the hub's client, or raises HubClientMissingError."""
    package = "huggingface_hub" if scheme == HF_SCHEME else "kagglehub"
    try:
        return __import__(package)  # optional dependencies: imported only when a hub URI is used
    except ImportError:
        raise HubClientMissingError(f"{action} {scheme}:// needs the `{package}` package: "
                                    f"pip install {package}") from None


def _hub_error(error, hub_uri, action):
    """The one-line `HubError` of a client's error."""
    where = hub_uri.uri
    if _unreachable(error):
        return HubUnreachableError(f"{where}: the hub could not be reached to {action} ({_line(error, 120)}); "
                                   "check the network, or use a local preset folder")
    status = _status(error)
    names = {cls.__name__ for cls in type(error).__mro__}
    if status in (401, 403) or names & {"GatedRepoError", "CredentialError", "UnauthenticatedError"}:
        login = "hf auth login (or set HF_TOKEN)" if hub_uri.scheme == HF_SCHEME else \
            "a Kaggle API token (~/.kaggle/kaggle.json, or KAGGLE_USERNAME and KAGGLE_KEY)"
        return HubError(f"{where}: the hub refused to {action} (not logged in, or no access): use {login}")
    if status == 404 or names & {"RepositoryNotFoundError", "RevisionNotFoundError", "NotFoundError",
                                 "EntryNotFoundError"}:
        return HubError(f"{where}: no such preset on the hub (or it is private): check the URI")
    return HubError(f"{where}: could not {action}: {_line(error)}")


# --------------------------------------------------------------------------------- download and upload

def download(uri):
    """Downloads a preset from a hub into its client's cache.

    Args:
        uri: `hf://OWNER/NAME` or `kaggle://OWNER/MODEL/keras/VARIANT[/VERSION]`.

    Returns:
        the local folder holding the preset's files.

    Raises:
        PresetError: a malformed URI.
        HubClientMissingError, HubUnreachableError, HubError: one line naming the URI.
    """
    hub_uri = parse_uri(uri)
    client = _client(hub_uri.scheme, "loading from")
    try:
        if hub_uri.scheme == HF_SCHEME:
            return client.snapshot_download(repo_id=hub_uri.handle)
        return client.model_download(hub_uri.handle)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as error:  # the clients raise many kinds (OSError, httpx, requests, ValueError)
        raise _hub_error(error, hub_uri, "download the preset") from None


def upload(preset_dir, uri):
    """Uploads a preset folder (already checked by the caller) to a hub.

    Args:
        preset_dir: the local preset folder.
        uri: `hf://[OWNER/]NAME` or `kaggle://OWNER/MODEL/keras/VARIANT`.

    Returns:
        the URI.

    Raises:
        PresetError: a malformed URI.
        HubClientMissingError, HubUnreachableError, HubError: one line naming the URI.
    """
    hub_uri = parse_uri(uri, for_upload=True)
    client = _client(hub_uri.scheme, "uploading to")
    try:
        if hub_uri.scheme == HF_SCHEME:
            repo = client.create_repo(repo_id=hub_uri.handle, exist_ok=True)
            client.upload_folder(repo_id=repo.repo_id, folder_path=str(preset_dir), ignore_patterns=[".*"])
        else:
            try:
                import keras_hub  # optional dependency: uploads to Kaggle through it where installed
            except ImportError:
                client.model_upload(hub_uri.handle, str(preset_dir), ignore_patterns=[".*"])
            else:
                keras_hub.upload_preset(f"{KAGGLE_SCHEME}://{hub_uri.handle}", str(preset_dir))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as error:
        raise _hub_error(error, hub_uri, "upload the preset") from None
    return uri
