"""Reading and writing the user's files safely: one implementation for every reader and writer.

Writing (:func:`atomic_writer`, checked first by :func:`check_target`):

* ``~`` is expanded; the folder must exist and be writable; the suffix must
  match the format (when the caller names the suffixes);
* only a regular file is ever replaced: a folder, a device (``/dev/null``), a
  FIFO or a socket is refused, so is a dangling symlink;
* a symlink to a regular file is written *through*: the file it points to is
  replaced and the link stays a link (what an editor saving the file does);
* a read-only file is refused unless ``force=True`` (``--force``): it is then
  replaced and keeps its permissions;
* the text goes to a temporary file beside the target, flushed, synced and
  renamed over it (``os.replace``, atomic), so a reader never sees half a file;
  an error, Ctrl-C or a signal turned into an exception removes the temporary
  file, and :func:`remove_temporary_files` removes any left when the process
  is stopped between two Python instructions.

Reading (:func:`read_text`): regular files only (a FIFO would block, a device
never ends), at most ``limit`` bytes, strict UTF-8 whose error names the
byte and the line.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, overload

from mlsysim.core.exceptions import InputError, ScenarioFileError
from mlsysim.core.text import decode_utf8, printable

MAX_READ = 16 * 2**20
"""Largest scenario file read, in bytes (a scenario is a few hundred)."""

_FORCE: contextvars.ContextVar[bool] = contextvars.ContextVar("mlsysim_force", default=False)

_TEMPORARY: set[str] = set()
"""Temporary files being written now (removed on a signal by :func:`remove_temporary_files`)."""


def _label(path: Path | str) -> str:
    return repr(printable(str(path)))


def check_target(
    path: str | os.PathLike[str],
    *,
    suffixes: tuple[str, ...] = (),
    force: bool = False,
    option: str | None = None,
) -> Path:
    """The file to write for ``path``, checked before any work; :class:`InputError` otherwise.

    Returns the path to replace: ``path`` with ``~`` expanded, or the file a
    symlink points to. ``suffixes`` (lower case, with the dot) are the
    accepted suffixes; ``option`` (``--csv``) starts the messages.
    """
    start = f"{option} " if option else ""
    target = Path(os.path.expanduser(os.fspath(path)))
    where = f"{start}{_label(target)}"
    if suffixes and target.suffix.lower() not in suffixes:
        raise InputError(f"{where}: expected a {' or '.join(suffixes)} file", field=option)
    if target.is_symlink():
        resolved = target.resolve()
        if not resolved.exists():
            raise InputError(f"{where}: a symlink to nothing ({_label(resolved)})", field=option)
        target = resolved
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise InputError(f"{where}: cannot check the file ({exc.strerror})", field=option) from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{where}: is a folder; give a file name", field=option)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                f"{where}: is not a regular file (a device, FIFO or socket); refusing to replace it",
                field=option,
            )
        if not info.st_mode & 0o222 and not (force or _FORCE.get()):
            raise InputError(
                f"{where}: the file is read-only; pass --force to replace it", field=option
            )
    folder = target.parent
    if not folder.is_dir():
        raise InputError(f"{where}: the folder {_label(folder)} does not exist", field=option)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{where}: the folder {_label(folder)} is not writable", field=option)
    return target


@overload
def atomic_writer(
    path: str | os.PathLike[str],
    *,
    newline: str | None = None,
    binary: Literal[False] = False,
    force: bool = False,
) -> contextlib.AbstractContextManager[IO[str]]: ...


@overload
def atomic_writer(
    path: str | os.PathLike[str],
    *,
    newline: str | None = None,
    binary: Literal[True],
    force: bool = False,
) -> contextlib.AbstractContextManager[IO[bytes]]: ...


@contextlib.contextmanager
def atomic_writer(
    path: str | os.PathLike[str],
    *,
    newline: str | None = None,
    binary: bool = False,
    force: bool = False,
) -> Iterator[IO[Any]]:  # IO[str], or IO[bytes] with binary (the overloads say which)
    """Open a file for writing (text, or bytes with ``binary``) that appears at ``path`` only when complete.

    ``path`` is checked by :func:`check_target` (``force`` replaces a read-only
    file). Writes go to a temporary file in the same folder, which is flushed,
    synced and renamed over the target when the ``with`` block ends without an
    error; on an error (or KeyboardInterrupt) it is removed and the target is
    left as it was. An unwritable path raises :class:`InputError` naming it.
    """
    target = check_target(path, force=force)
    temp = _temporary_name(target)
    _TEMPORARY.add(temp)  # registered before it exists: a signal at any point finds it
    try:
        fd = _create(temp, target)
    except InputError:  # not created (or, one chance in 2**48, someone else's name): keep it
        _TEMPORARY.discard(temp)
        raise
    except BaseException:  # a signal just after the file was created
        _remove(temp)
        _TEMPORARY.discard(temp)
        raise
    try:
        opened = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline=newline)
        )
        with opened as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, _mode_for(target))
        os.replace(temp, target)
    except OSError as exc:
        _remove(temp)
        raise InputError(f"cannot write {_label(target)}: {exc.strerror}", field="path") from None
    except BaseException:
        _remove(temp)
        raise
    finally:
        _TEMPORARY.discard(temp)


@contextlib.contextmanager
def replacing_read_only(force: bool = True) -> Iterator[None]:
    """Within the block, writers replace read-only files too (the command line's ``--force``)."""
    token = _FORCE.set(force)
    try:
        yield
    finally:
        _FORCE.reset(token)


def _temporary_name(target: Path) -> str:
    return str(target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp")


def _create(temp: str, target: Path) -> int:
    """Create ``temp`` exclusively (mode 0600, as ``tempfile.mkstemp``); InputError naming the target."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(temp, flags, 0o600)
    except OSError as exc:
        raise InputError(f"cannot write {_label(target)}: {exc.strerror}", field="path") from None


def write_text(path: str | os.PathLike[str], text: str, *, force: bool = False) -> Path:
    """Replace the file at ``path`` by ``text`` through :func:`atomic_writer`; returns the target."""
    with atomic_writer(path, force=force) as handle:
        handle.write(text)
    return Path(os.path.expanduser(os.fspath(path)))


def remove_temporary_files() -> None:
    """Remove the temporary files of writes still in progress (called on SIGTERM and SIGHUP)."""
    for temp in list(_TEMPORARY):
        _remove(temp)
        _TEMPORARY.discard(temp)


def _remove(temp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(temp)


def _mode_for(target: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual ``0o666 & ~umask``."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def read_bytes(path: str | os.PathLike[str], *, limit: int = MAX_READ) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    FIFOs, devices and folders are refused before they are opened for reading
    (opened non-blocking, then checked again on the open descriptor). Raises
    :class:`ScenarioFileError` (an ``InputError``) naming the file.
    """
    file = Path(os.path.expanduser(os.fspath(path)))
    where = printable(str(file))
    try:
        info = os.stat(file)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO, device or socket"
            raise ScenarioFileError(f"is {kind}, not a regular file", path=where)
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ScenarioFileError(f"cannot read the file ({exc.strerror})", path=where) from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise ScenarioFileError("is not a regular file", path=where)
        if opened.st_size > limit:
            raise ScenarioFileError(f"larger than {limit:,} bytes, the most read", path=where)
        data = handle.read(min(limit, opened.st_size) + 1)
    if len(data) > limit:
        raise ScenarioFileError(f"larger than {limit:,} bytes, the most read", path=where)
    return data


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_READ) -> str:
    """:func:`read_bytes`, decoded as strict UTF-8; an error names the file and the line."""
    data = read_bytes(path, limit=limit)
    try:
        return decode_utf8(data)
    except InputError as exc:
        line, _, message = str(exc).removeprefix("line ").partition(": ")
        raise ScenarioFileError(
            message, path=printable(os.fspath(path)), line=int(line)
        ) from None
