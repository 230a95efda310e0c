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

from typing import TYPE_CHECKING, Final, cast

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic_core import ErrorDetails


class _NoInput:
    def __repr__(self) -> str:
        return "NO_INPUT"


NO_INPUT: Final = _NoInput()
"""The ``input`` of an error that is not about one value (a missing field, a rule)."""


class MlsysimError(Exception):
    """Base of every error this library raises on purpose."""


class InputError(MlsysimError, ValueError):
    """A field got a value it cannot take.

    The error keeps its parts apart, as pydantic's ``errors()`` keeps ``loc``
    from ``msg``: ``message`` is the bare complaint (what was received, what was
    expected), ``loc`` the field path (``("assumptions", "bucket_size")``) and
    ``owner`` the object it belongs to (``"TrainingScenario"``).
    ``str()`` formats them once: ``Owner.field.path: message``. Code that adds
    context calls :meth:`at` (a copy with a longer path), never edits the text.

    ``field=`` (without ``loc``) is for errors whose message already names the
    input in its own words (``"--axis nodes is given twice"``): the location is
    recorded, not printed again.

    Several mistakes found at once travel together: :meth:`errors` lists every
    one as pydantic's ``ErrorDetails`` (``loc``, ``msg``, ``input``, ``type``,
    and ``ctx`` where a rule names the inputs it reads), the first one leading;
    the command line, the file loader and the page read that list, never the
    text.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        loc: tuple[str, ...] = (),
        owner: str | None = None,
        input: object = NO_INPUT,
        type: str = "value_error",
        ctx: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.loc = tuple(loc)
        self.owner = owner
        self._field = field
        self.input = input
        self.type = type
        self.ctx = ctx
        self.others: tuple[InputError, ...] = ()
        """The other mistakes found with this one (:func:`~mlsysim.core.validation.input_error`)."""

    def errors(self) -> list[ErrorDetails]:
        """Every mistake found, this one first, as pydantic's ``ErrorDetails``.

        ``loc`` is the field path (without the owner), ``msg`` the bare message,
        ``input`` the value given (absent where there is none: a missing field,
        a rule between fields), ``type`` a short code (``value_error``,
        ``missing``, ``extra_forbidden``, ``rule``); a rule's ``ctx`` names the
        ``fields`` it reads.
        """
        out: list[ErrorDetails] = []
        for error in (self, *self.others):
            loc = error.loc or ((error._field,) if error._field else ())
            detail: dict[str, object] = {"type": error.type, "loc": loc, "msg": error.message}
            if error.input is not NO_INPUT:
                detail["input"] = error.input
            if error.ctx:
                detail["ctx"] = dict(error.ctx)
            out.append(cast("ErrorDetails", detail))  # its keys; "input" absent where none was given
        return out

    @property
    def field(self) -> str | None:
        """The field path as text (``"assumptions.bucket_size"``), or None."""
        if self.loc:
            return ".".join(self.loc)
        return self._field

    def location(self) -> str:
        """``Owner.field.path`` (or the parts of it that are known)."""
        parts = ([self.owner] if self.owner else []) + list(self.loc)
        return ".".join(parts)

    def __str__(self) -> str:
        where = self.location()
        text = f"{where}: {self.message}" if where else self.message
        if self.others:
            text += f" (also {'; '.join(o.located for o in self.others)})"
        return text

    def at(self, *prefix: str, owner: str | None = None) -> InputError:
        """A copy located under ``prefix`` (and ``owner`` when given); the message is unchanged.

        The mistakes found with it move with it.
        """
        copy = self.__class__.__new__(self.__class__)
        copy.__dict__.update(self.__dict__)
        Exception.__init__(copy, *self.args)
        copy.loc = (*prefix, *self.loc)
        copy.owner = owner  # the outermost object owns the path
        copy.others = tuple(o.at(*prefix, owner=owner) for o in self.others)
        return copy

    @property
    def located(self) -> str:
        """``field.path: message`` without the owner (a ``field=`` error: its message alone)."""
        where = ".".join(self.loc)
        return f"{where}: {self.message}" if where else self.message

    def with_input(self, value: object) -> InputError:
        """This error with the value it is about (where it does not say one already)."""
        if self.input is NO_INPUT:
            self.input = value
        return self


class UnitsError(InputError):
    """A physical input has the wrong dimension, or is a plain number."""


class ScenarioFileError(InputError):
    """A scenario file cannot be read: names the file, the line and the field.

    Formatted as ``path:line: field.path: message``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str,
        line: int | None = None,
        field: str | None = None,
        loc: tuple[str, ...] = (),
    ) -> None:
        if field and not loc:
            loc = tuple(field.split("."))
        super().__init__(message, loc=loc)
        self.path = path
        self.line = line

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        inner = super().__str__()
        return f"{where}: {inner}"


class UnknownNameError(MlsysimError, LookupError, ValueError):
    """No scenario or registry entry has this name; the message lists the known ones."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class InfeasiblePlanError(MlsysimError, ValueError):
    """No layout of a :func:`mlsysim.plan` search meets the constraints.

    The message says how many layouts each constraint excluded; ``table``
    holds the whole sweep (spaces up to a million layouts; else None) and
    ``excluded`` those counts, for a closer look.
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
