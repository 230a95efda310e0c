"""Read nccl-tests / rccl-tests output as people paste it, and fit it.

The format (nccl-tests, src/common.cu): a header of ``#`` lines (``# nThread 1
nGpus 8 minBytes ...``, one ``#  Rank  r Group g Pid p on host device d [bus]
name`` line per rank, the column titles), then one row per message size::

    size  count  type  redop  [root]  time algbw busbw #wrong  [time algbw busbw #wrong]

(time in us, bandwidths in GB/s; the second group is the in-place run), then
``# Out of bounds values : 0 OK`` and ``# Avg bus bandwidth : x``. rccl-tests
prints the same. Around it, in real pastes: ``NCCL INFO`` lines from
``NCCL_DEBUG=INFO``, the shell command, Markdown indentation, code fences and
quote markers, older versions without the ``root`` column or with ``error``
for ``#wrong``, and several runs (all_gather_perf then reduce_scatter_perf)
in one file. All of that is accepted; a line that starts like a data row and
does not parse is an error naming the file and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mlsysim.calibrate.fit import COLLECTIVES, CollectiveFit, check_collective, fit_collective
from mlsysim.core.exceptions import InputError
from mlsysim.core.fileio import read_bytes
from mlsysim.core.text import printable, short

if TYPE_CHECKING:
    from mlsysim.kernels.tables import KernelTable

MAX_LOG_BYTES = 256 * 2**20
"""Largest nccl-tests log read (a real one is a few kilobytes; 50 MB is read in seconds)."""
MIN_TIME_US = 1e-3
"""Shortest time accepted in a row, in microseconds: under a nanosecond is not a measured collective."""
MAX_BUS_BANDWIDTH_GBS = 1e9
"""Largest bus bandwidth accepted in a row, in GB/s (1 EB/s)."""

_LOG_NOISE = re.compile(r"\b(NCCL|RCCL) (INFO|WARN|TRACE|ABORT)\b")
_TEST_NAME = re.compile(
    r"\b(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv|"
    r"scatter|gather|hypercube)_perf\b"
)
_RANK_LINE = re.compile(r"^#\s*Rank\s+(\d+)\s+Group\s+\d+", re.IGNORECASE)
_HOST = re.compile(r"\bon\s+(\S+)\s+device\b")
_VERSION = re.compile(r"NCCL version\s+(\S+)|nccl-library=(\d+)")
_RUN_HEADER = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_AVERAGE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_QUOTE = re.compile(r"^(\s*>)+")


@dataclass(frozen=True)
class Row:
    """One measured size: ``size`` in bytes, ``time`` in seconds, ``bus_bandwidth`` in bytes/s.

    ``wrong`` is the count of wrong values nccl-tests found (None when it did
    not check: ``N/A``). ``line`` is the 1-based line number in the file.
    """

    line: int
    size: int
    time: float
    bus_bandwidth: float
    wrong: float | None
    in_place_time: float | None = None
    in_place_bus_bandwidth: float | None = None
    in_place_wrong: float | None = None


@dataclass
class Run:
    """One nccl-tests run found in a file: its collective, ranks and rows."""

    line: int
    collective: str | None = None
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    rows: list[Row] = field(default_factory=list)
    started: bool = False
    has_root: bool | None = None
    redop: str | None = None
    average_bus_bandwidth: float | None = None


def parse_nccl_tests(text: str, path: str = "<text>") -> list[Run]:
    """All runs in an nccl-tests output, in order. Raises :class:`InputError` naming ``path:line``.

    A run starts at its ``# nThread`` line (or at the first data row when the
    paste has no header) and takes the test name (``all_reduce_perf``) last
    seen before it, or seen in its header.
    """
    runs: list[Run] = []
    pending_name: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _clean(raw)
        if not line:
            continue
        data = _is_data(line)
        if (not data or "CCL " in line) and (_LOG_NOISE.search(line) or line.startswith("```")):
            continue  # (the search is skipped on plain data rows: a large log is mostly those)
        current = runs[-1] if runs else None
        if data:
            if current is None or current.average_bus_bandwidth is not None:
                current = Run(line=number, collective=pending_name)
                runs.append(current)
                pending_name = None
            current.rows.append(_row(line, current, path, number))
            continue
        name = _TEST_NAME.search(line)
        if name:
            if current is not None and current.started and not current.rows:
                current.collective = current.collective or name.group(1)
            else:
                pending_name = name.group(1)
        if _RUN_HEADER.match(line):
            runs.append(Run(line=number, collective=pending_name, started=True))
            pending_name = None
        elif line.startswith("#") and current is not None:
            _header(line, current, f"{path}:{number}")
    return [run for run in runs if run.rows]


def from_nccl_tests(
    path: str | Path,
    *,
    ranks: int | None = None,
    collective: str | None = None,
    in_place: bool = False,
) -> CollectiveFit:
    """Fit the alpha-beta line to an nccl-tests / rccl-tests output file.

    ``ranks`` defaults to the number of ``# Rank`` lines in the header (when
    given and the header lists ranks too, they must agree). ``collective``
    (``all_reduce``, ``all_gather``, ``reduce_scatter``) picks a run when the
    file holds several, and names the test when the output does not (the
    binary name, e.g. ``all_reduce_perf``, is read from the pasted command or
    the ``# Collective test starting`` line; otherwise ``all_reduce`` is
    assumed for a reduction and ``all_gather`` for ``redop none``, and the
    fit's ``notes`` say so). ``in_place`` fits the in-place columns instead of
    the out-of-place ones. Rows whose ``#wrong`` is above zero failed
    nccl-tests' own check and are left out of the fit (noted).

    The fit is :func:`mlsysim.calibrate.fit.fit_collective` on (size, time).
    """
    p = Path(path)
    # pasted logs may hold stray bytes: decoded leniently; a data row they break is an error
    text = read_bytes(p, limit=MAX_LOG_BYTES).decode("utf-8", errors="replace")
    runs = parse_nccl_tests(text, printable(str(p)))
    if not runs:
        raise InputError(
            f"{p}: no nccl-tests data rows found (expected lines like "
            "'1048576  262144  float  sum  -1  25.1  41.8  73.1  0 ...')"
        )
    run = _pick(runs, collective, str(p))
    notes: list[str] = []
    if len(runs) > 1:
        notes.append(f"the file holds {len(runs)} runs ({_names(runs)}); fitted line {run.line}")
    name = check_collective(collective) if collective is not None else _collective_of(run, str(p))
    if collective is None and run.collective is None:
        notes.append(
            f"the output does not name its test; assumed {name} from the redop column "
            "(pass --collective to say which)"
        )
    n = _ranks_of(run, ranks, str(p))
    if in_place and any(row.in_place_time is None for row in run.rows):
        raise InputError(f"{p}:{run.rows[0].line}: in_place: this output has no in-place columns")
    points = [_point(row, in_place) for row in run.rows]
    good = [point for point in points if point is not None]
    if len(good) < len(points):
        bad = [row for row, point in zip(run.rows, points, strict=True) if point is None]
        notes.append(
            f"{len(bad)} row(s) with wrong values left out of the fit (lines "
            f"{', '.join(str(row.line) for row in bad)})"
        )
    if len({size for size, _, _ in good}) < 2:
        raise InputError(
            f"{p}:{run.line}: need rows at two or more sizes with no wrong values to fit, "
            f"got {len(good)} of {len(points)}"
        )
    peak = max(busbw for _, _, busbw in good)
    try:
        return fit_collective(
            [size for size, _, _ in good],
            [time for _, time, _ in good],
            collective=name,
            ranks=n,
            peak_bus_bandwidth=peak if peak > 0 else None,
            source=str(p),
            notes=tuple(notes),
        )
    except InputError as exc:
        raise InputError(f"{p}: {exc}", field=exc.field) from None


def _point(row: Row, in_place: bool) -> tuple[int, float, float] | None:
    """(size, time, bus bandwidth) of the chosen columns, or None when nccl-tests flagged it."""
    if in_place:
        wrong, time, busbw = row.in_place_wrong, row.in_place_time, row.in_place_bus_bandwidth
    else:
        wrong, time, busbw = row.wrong, row.time, row.bus_bandwidth
    if (wrong or 0) > 0 or time is None or busbw is None:
        return None
    return row.size, time, busbw


def _clean(raw: str) -> str:
    """Strip Markdown quoting and indentation around a line."""
    return _QUOTE.sub("", raw).strip()


def _is_data(line: str) -> bool:
    head = line.split(None, 1)[0]
    return head.isdigit()


def _header(line: str, run: Run, where: str) -> None:
    rank = _RANK_LINE.match(line)
    if rank:
        run.ranks.add(int(_number(rank.group(1), "Rank", where, integer=True)))
        host = _HOST.search(line)
        if host:
            run.hosts.add(host.group(1))
        return
    average = _AVERAGE.match(line)
    if average:
        run.average_bus_bandwidth = _number(average.group(1), "Avg bus bandwidth", where)
        return
    words = line.lstrip("#").split()
    if words[:2] == ["size", "count"]:
        run.has_root = "root" in words


def _row(line: str, run: Run, path: str, number: int) -> Row:
    """Parse ``size count type redop [root] (time algbw busbw wrong){1,2}``."""
    tokens = line.split()
    fast = _fast_row(tokens, run, number)
    if fast is not None:
        return fast
    where = f"{path}:{number}"
    rest = tokens[4:]
    has_root = run.has_root if run.has_root is not None else len(rest) % 4 == 1
    groups = rest[1:] if has_root else rest
    if len(tokens) < 4 or len(groups) not in (4, 8):
        raise InputError(
            f"{where}: cannot read this data row ({len(tokens)} columns; expected "
            "'size count type redop [root] time algbw busbw #wrong [time algbw busbw #wrong]'); "
            f"was the output cut off? line: {short(line, 80)}"
        )
    size = _number(tokens[0], "size", where, integer=True)
    if run.redop is None:
        run.redop = tokens[3].lower()
    values = [_group(groups[i : i + 4], where) for i in range(0, len(groups), 4)]
    out, inp = values[0], (values[1] if len(values) > 1 else (None, None, None))
    return Row(
        line=number,
        size=int(size),
        time=out[0],
        bus_bandwidth=out[1],
        wrong=out[2],
        in_place_time=inp[0],
        in_place_bus_bandwidth=inp[1],
        in_place_wrong=inp[2],
    )


def _fast_row(tokens: list[str], run: Run, number: int) -> Row | None:
    """The row when every value is plainly valid (the common case, no error to word); else None."""
    rest = tokens[4:]
    has_root = run.has_root if run.has_root is not None else len(rest) % 4 == 1
    groups = rest[1:] if has_root else rest
    if len(tokens) < 4 or len(groups) not in (4, 8) or len(tokens[0]) > 18:
        return None
    try:
        size = int(tokens[0])
        values = [
            (float(groups[i]), float(groups[i + 1]), float(groups[i + 2]), groups[i + 3])
            for i in range(0, len(groups), 4)
        ]
        parsed = []
        for time_us, algbw, busbw, wrong_text in values:
            wrong = None if wrong_text in ("N/A", "n/a") else float(wrong_text)
            if not (
                MIN_TIME_US <= time_us < _INF
                and 0.0 <= algbw < _INF
                and 0.0 <= busbw <= MAX_BUS_BANDWIDTH_GBS
                and (wrong is None or 0.0 <= wrong < _INF)
            ):
                return None
            parsed.append((time_us * 1e-6, busbw * 1e9, wrong))
    except ValueError:
        return None
    if size < 0:
        return None
    if run.redop is None:
        run.redop = tokens[3].lower()
    out, inp = parsed[0], (parsed[1] if len(parsed) > 1 else (None, None, None))
    return Row(number, size, out[0], out[1], out[2], inp[0], inp[1], inp[2])


_INF = float("inf")


def _group(tokens: list[str], where: str) -> tuple[float, float, float | None]:
    """``time(us) algbw(GB/s) busbw(GB/s) wrong`` -> (seconds, bus bytes/s, wrong)."""
    time_us = _number(tokens[0], "time", where)
    if not time_us >= MIN_TIME_US:
        raise InputError(
            f"{where}: time must be at least {MIN_TIME_US:g} us (1 ns), got {tokens[0]!r}"
        )
    _number(tokens[1], "algbw", where)
    busbw = _number(tokens[2], "busbw", where)
    if busbw > MAX_BUS_BANDWIDTH_GBS:
        raise InputError(f"{where}: column busbw: {tokens[2]!r} GB/s is beyond any link")
    wrong = None if tokens[3].upper() == "N/A" else _number(tokens[3], "#wrong", where)
    return time_us * 1e-6, busbw * 1e9, wrong


def _number(token: str, column: str, where: str, *, integer: bool = False) -> float:
    if len(token) > 40:
        raise InputError(f"{where}: column {column}: {len(token)} characters is not a number")
    try:
        value = int(token) if integer else float(token)
    except ValueError:
        raise InputError(f"{where}: column {column}: cannot read {token!r} as a number") from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        raise InputError(f"{where}: column {column}: expected a finite value, got {token!r}")
    return float(value)


def _pick(runs: list[Run], collective: str | None, path: str) -> Run:
    if collective is None:
        if len(runs) == 1:
            return runs[0]
        named = [run for run in runs if run.collective == "all_reduce"]
        if len(named) == 1:
            return named[0]
        raise InputError(
            f"{path}: the file holds {len(runs)} runs ({_names(runs)}); "
            "choose one with collective=... (--collective)"
        )
    name = check_collective(collective)
    matches = [run for run in runs if run.collective == name]
    if not matches and len(runs) == 1 and runs[0].collective is None:
        return runs[0]
    if len(matches) != 1:
        raise InputError(
            f"{path}: expected one {name} run, found {len(matches)} (runs: {_names(runs)})",
            field="collective",
        )
    return matches[0]


def _names(runs: list[Run]) -> str:
    return ", ".join(f"{run.collective or 'unnamed'} at line {run.line}" for run in runs)


def _collective_of(run: Run, path: str) -> str:
    """The run's collective: named in the log, else assumed from its reduction column."""
    if run.collective is not None:
        if run.collective not in COLLECTIVES:
            raise InputError(
                f"{path}:{run.line}: {run.collective}_perf output cannot be fitted; "
                f"expected {', '.join(c + '_perf' for c in COLLECTIVES)}"
            )
        return run.collective
    return "all_gather" if run.redop == "none" else "all_reduce"


def _ranks_of(run: Run, ranks: int | None, path: str) -> int:
    listed = len(run.ranks) or None
    if ranks is None:
        if listed is None:
            raise InputError(
                f"{path}: the output lists no '# Rank' lines, so the number of ranks is unknown; "
                "pass ranks=... (--ranks)",
                field="ranks",
            )
        return listed
    if listed is not None and listed != ranks:
        raise InputError(
            f"{path}: ranks={ranks} but the output lists {listed} ranks (line {run.line})",
            field="ranks",
        )
    return ranks


KERNEL_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
              "alltoall": "all_to_all", "sendrecv": "send_recv", "broadcast": "broadcast"}
"""nccl-tests binaries (``<name>_perf``) whose runs become rows of a collective kernel table, and the op each is."""


def kernel_table(
    path: str | Path,
    *,
    accelerator: str,
    link: str | None = None,
    nic_rate: float | None = None,
    domain: int | None = None,
    ranks: int | None = None,
    in_place: bool = False,
    algorithm: str = "auto",
) -> KernelTable:
    """Every run of an nccl-tests log as one collective table in the kernel-table format
    (:mod:`mlsysim.kernels.tables`): one row per size, the time as measured (out-of-place, or
    ``in_place``), rows nccl-tests flagged wrong left out.

    ``ranks`` comes from the log's ``# Rank`` lines (or is given); its nodes from the hosts those
    lines name. A log on one host is a run inside one NVLink domain (``link`` ``nvlink``, or
    ``nvl72`` for ranks of an NVL72 rack); one across hosts must name the fabric between them
    (``link``: infiniband, roce or efa) and each GPU's share of the NICs (``nic_rate``, bytes/s per
    direction). ``domain`` (ranks per NVLink domain) defaults to the ranks per host (the whole
    group for ``nvl72``). The table's source is the file (title, path, the NCCL version the log
    prints); fit it with :func:`mlsysim.kernels.collective_fit.fit_collectives` (a cluster's
    constants: ``start=`` the shipped ones, ``keep=("half_size", "sharpness")``).
    """
    from mlsysim.kernels.tables import build_table

    p = Path(path)
    text = read_bytes(p, limit=MAX_LOG_BYTES).decode("utf-8", errors="replace")
    runs = parse_nccl_tests(text, printable(str(p)))
    if not runs:
        raise InputError(f"{p}: no nccl-tests data rows found", field="path")
    rows: list[list[object]] = []
    hosts: set[str] = set()
    counts: set[int] = set()
    for run in runs:
        name = run.collective or ("all_gather" if run.redop == "none" else "all_reduce")
        if name not in KERNEL_OPS:
            raise InputError(f"{p}:{run.line}: {name}_perf output is not a collective the kernel model prices; "
                             f"expected {', '.join(k + '_perf' for k in KERNEL_OPS)}", field="path")
        n = _ranks_of(run, ranks, str(p))
        counts.add(n)
        hosts |= run.hosts
        for size, time, _ in (point for point in (_point(row, in_place) for row in run.rows) if point is not None):
            rows.append([KERNEL_OPS[name], size, n, time])
    if len(counts) > 1:
        raise InputError(f"{p}: the runs have different numbers of ranks ({sorted(counts)}); split the file",
                         field="ranks")
    n = counts.pop()
    nodes = max(len(hosts), 1)
    if n % nodes:
        raise InputError(f"{p}: {n} ranks on {nodes} hosts is not the same count on each", field="ranks")
    per_node = n // nodes
    if link is None:
        if nodes > 1:
            raise InputError(f"{p}: the log spans {nodes} hosts; name the fabric between them "
                             "(link: infiniband, roce or efa)", field="link")
        link = "nvlink"
    if nodes > 1 and link in ("nvlink",):
        raise InputError(f"{p}: the log spans {nodes} hosts, which one node's NVLink does not join; "
                         "link: nvl72 (one NVL72 rack), infiniband, roce or efa", field="link")
    if link in ("infiniband", "roce", "efa") and (nic_rate is None or not nic_rate > 0):
        raise InputError(f"{p}: a run across {link} needs each GPU's share of the NICs (nic_rate, bytes/s "
                         "per direction)", field="nic_rate")
    span = domain if domain is not None else (n if link == "nvl72" else per_node)
    version = _VERSION.search(text)
    software = (f"NCCL {version.group(1) or version.group(2)}" if version else "NCCL (version not in the log)")
    source = {"title": f"the user's nccl-tests log {p.name}", "url": str(p), "date": "unknown",
              "hardware": f"{n} x {accelerator} on {nodes} host(s) ({link})", "software": software,
              "notes": f"read by mlsysim.calibrate.nccl_tests.kernel_table ({'in-place' if in_place else 'out-of-place'}"
                       " times; rows nccl-tests flagged wrong left out)"}
    columns = ["op", "bytes", "group", "link", "domain", "nodes", "gpus_per_node", "nic_rate", "algorithm", "time"]
    full = [[op, size, group, link, span, nodes, per_node, nic_rate or 0.0, algorithm, time]
            for op, size, group, time in rows]
    return build_table(name=p.name, kind="collective", split="fit", accelerator=accelerator, source=source,
                       columns=columns, rows=full, units={"bytes": "B", "nic_rate": "B/s", "time": "s"})
