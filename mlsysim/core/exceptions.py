"""The project's exceptions.

Every error that a user's mistake can cause is an :class:`MlsysimError`; those
caused by bad input also subclass the built-in :class:`ValueError` (as astropy's
``UnitConversionError(UnitsError, ValueError)`` does), so ``except ValueError``
keeps working::

    MlsysimError
     ├── InputError(MlsysimError, ValueError)      a field got a bad value
     │    ├── UnitsError                            wrong dimension, or no units at all
     │    └── ScenarioFileError                     a scenario file is malformed (file, line, field)
     ├── UnknownNameError(MlsysimError, LookupError, ValueError)
     │                                              no scenario / registry entry of that name
     ├── InfeasiblePlanError(MlsysimError, ValueError)
     │                                              no layout of a plan meets its constraints
     └── MissingDependencyError(MlsysimError, ImportError)
                                                    an optional extra is not installed

The command line catches ``MlsysimError`` (and pydantic/pint errors raised by
user input are converted to ``InputError`` before they leave the library), prints
its one-line message and exits with status 2. Anything else is a bug and shows
as one.
"""

from __future__ import annotations


class MlsysimError(Exception):
    """Base of every error this library raises on purpose."""


class InputError(MlsysimError, ValueError):
    """A field got a value it cannot take.

    ``field`` names the input (``None`` when the error is about several), and the
    message says what was received and what was expected.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnitsError(InputError):
    """A physical input has the wrong dimension, or is a plain number."""


class ScenarioFileError(InputError):
    """A scenario file cannot be read: names the file, the line and the field."""

    def __init__(
        self, message: str, *, path: str, line: int | None = None, field: str | None = None
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}", field=field)
        self.path = path
        self.line = line


class UnknownNameError(MlsysimError, LookupError, ValueError):
    """No scenario or registry entry has this name; the message lists the known ones."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class InfeasiblePlanError(MlsysimError, ValueError):
    """No layout of a :func:`mlsysim.plan` search meets the constraints.

    The message says how many layouts each constraint excluded; ``table``
    holds the whole sweep and ``excluded`` those counts, for a closer look.
    """

    def __init__(self, message: str, *, table: object = None, excluded: dict | None = None) -> None:
        super().__init__(message)
        self.table = table
        self.excluded = dict(excluded or {})


class MissingDependencyError(MlsysimError, ImportError):
    """An optional extra (plot, yaml, calibrate) is needed and not installed."""


class MlsysimWarning(UserWarning):
    """A result is computed, but an input was probably not meant as given.

    Raised through :func:`warnings.warn`, never as an error: for instance a
    measured ``step_time`` carried unchanged to a different workload by
    ``scenario.variant(workload=...)``. The command line prints it as a note.
    """
