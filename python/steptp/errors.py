"""steptp's exceptions. Errors about a program's text carry where: `file` (the label or path it was
read from), `line` and `col` (1-based; 0 when the problem has no position), and `message`."""


class Error(Exception):
    """Base of every steptp error."""


class LeirError(Error, ValueError):
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
