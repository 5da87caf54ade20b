"""steptp's exceptions. Every error of the C++ core has a kind (src/base/error.h, the table that
also gives serve's HTTP statuses and the CLI's exit codes); BY_KIND below names the class each kind
raises. Errors about a program's text carry where: `file` (the label or path it was read from),
`line` and `col` (1-based; 0 when the problem has no position), and `message`."""


class Error(Exception):
    """Base of every steptp error. `field`: the argument or option the error is about ("" when none)."""

    kind = ""

    def __init__(self, text: str, field: str = ""):
        super().__init__(text)
        self.field = field


class RequestError(Error, ValueError):
    """A call that does not follow the API: an unknown strategy, target or option, a value out of
    range or not among the choices (a site or parameters the program lacks)."""

    kind = "bad_request"


class InvalidInputError(Error, ValueError):
    """Input that follows the API but is not valid: a model that does not import, a trace that does
    not replay, programs whose signatures differ."""

    kind = "invalid"


class TooLargeError(Error, ValueError):
    """Input over a configured limit."""

    kind = "too_large"


class FailedError(Error, RuntimeError):
    """The work could not be done: a compile error, a failed measurement, a system failure."""

    kind = "failed"


# The class of each error kind (src/base/error.h kErrorKinds' names): the bindings raise an error
# of the core through this table, never by call site.
BY_KIND = {c.kind: c for c in (RequestError, InvalidInputError, TooLargeError, FailedError)}


class LeirError(InvalidInputError):
    """A LEIR program that cannot be used: str(e) is "file:line:col: error: message"."""

    def __init__(self, text: str, file: str = "", line: int = 0, col: int = 0, message: str = ""):
        super().__init__(text)
        self.file = file
        self.line = line
        self.col = col
        self.message = message or text


class ParseError(LeirError):
    """The text or JSON does not parse as a LEIR program (Program.parse, Program.from_json, Program.load)."""


class InvalidProgramError(LeirError):
    """A parsed program that is not valid LEIR (shapes, bounds, dtypes, ...; see check())."""


class LowerError(LeirError):
    """The target of lower() rejects the program (the reason says why)."""


class RunError(Error, RuntimeError):
    """A run-time error of the interpreter: out-of-range index, unset output element, race, ..."""

    kind = "invalid"


def http_status(e: Error) -> int:
    """The HTTP status `steptp serve` answers for an error of this kind (src/base/error.h)."""
    from . import _core

    return _core.error_kinds()[e.kind]["http_status"]
