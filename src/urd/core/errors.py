"""Errors that name what went wrong, where, and what was expected."""


class UrdError(Exception):
    """Base class: every failure urd raises on purpose."""


class InputError(UrdError):
    """Bad input: names the file, the field and what was expected."""

    def __init__(self, path, field, expected, got=None):
        self.path, self.field, self.expected, self.got = str(path), field, expected, got
        msg = f"{self.path}: {field}: expected {expected}"
        if got is not None:
            msg += f", got {got!r}"
        super().__init__(msg)


class DigestMismatch(UrdError):
    """A file's SHA-256 differs from the pinned one."""

    def __init__(self, path, expected, actual):
        self.path, self.expected, self.actual = str(path), expected, actual
        super().__init__(
            f"{self.path}: SHA-256 mismatch: expected {expected}, actual {actual}"
        )
