"""The checks of a run file's fields (`config.json`, `results.json`): each failure is one line naming the file
and the field, with what to do about it (`RunFileError`)."""

from zoo import fileio
from zoo.errors import ConfigError


class RunFileError(fileio.CorruptFileError):
    """A run file that parses but does not hold what the zoo wrote: one line naming the file and the field."""


class Fields:
    """Reads the fields of a JSON object, each check failing as one line naming the file and the field."""

    _MISSING = object()

    def __init__(self, value, path, remedy):
        self.path, self.remedy = path, remedy
        if not isinstance(value, dict):
            raise RunFileError(f"{path}: holds {type(value).__name__} {short(value)}, not an object: {remedy}", path)
        self.value = value

    def get(self, key, check, default=_MISSING):
        if key not in self.value:
            if default is self._MISSING:
                raise RunFileError(f"{self.path}: field {key!r} is missing: {self.remedy}", self.path)
            return default
        return self.check(key, check)

    def check(self, key, check, optional=False):
        if key not in self.value:
            if optional:
                return None
            raise RunFileError(f"{self.path}: field {key!r} is missing: {self.remedy}", self.path)
        try:
            return check(self.value.get(key), key)
        except ConfigError as error:
            raise RunFileError(f"{self.path}: field {_field_message(key, error)}: {self.remedy}", self.path) from None


def _field_message(key, error):
    message = str(error)
    return message if message.startswith(key) else f"{key}: {message}"


def wrong(name, what):
    raise ConfigError(f"{name} {what}")


def short(value):
    written = repr(value)
    return written if len(written) <= 40 else written[:37] + "..."


def text(value, name):
    return value if isinstance(value, str) and value else wrong(name, f"must be text, got {short(value)}")


def optional_text(value, name):
    return None if value is None else text(value, name)


def text_list(value, name):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        wrong(name, f"must be a list of text, got {short(value)}")
    return value


def boolean(value, name):
    return value if isinstance(value, bool) else wrong(name, f"must be true or false, got {short(value)}")


def json_object(value, name):
    return value if value is None or isinstance(value, dict) else wrong(name, f"must be an object, got {short(value)}")


def labels(value, name):
    names = text_list(value, name)
    return names if len(names) >= 2 else wrong(name, "must name at least two labels")
