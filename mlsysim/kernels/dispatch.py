"""The time of one expert dispatch or combine (DeepEP's normal and low-latency kernels, HybridEP) on a
registry accelerator or node, from :mod:`mlsysim.physics.expert_dispatch` and the constants fitted on
DeepEP's published tables (``mlsysim/data/kernel_fits/dispatch.json``, written by
``python -m mlsysim.validation.kernels_collectives``).

The constants: per accelerator **architecture**, the fraction of its NVLink rate the kernels reach;
per **scale-out fabric**, the fraction of a rank's NIC share; per **kernel** (``normal``,
``low_latency``), a fixed latency. An architecture or fabric no fitted table covers is refused
with an :class:`~mlsysim.core.exceptions.InputError` naming the missing table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.kernels._accelerator import accelerator_entry, nvlink_rate
from mlsysim.kernels.collectives import (
    SUPPLY,
    Constant,
    _architecture,
    fabric_of,
    read_fits,
)
from mlsysim.kernels.least_squares import (
    levenberg_marquardt,
    robust,
    round_constant,
    to_search,
    to_value,
)
from mlsysim.kernels.result import KernelEstimate
from mlsysim.physics import expert_dispatch as physics
from mlsysim.physics.bounds import KernelTime
from mlsysim.physics.expert_dispatch import FP8_BYTES, KERNELS

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator, Node
    from mlsysim.kernels.tables import KernelTable
    from mlsysim.physics._array import Num

ELEMENT_BYTES: Mapping[str, float] = {"fp8": FP8_BYTES, "bf16": 2.0, "fp16": 2.0}
"""Bytes per element of the tokens moved, by format (FP8 with its 1x128 float32 scales)."""

DIRECTIONS = ("dispatch", "combine")
"""A dispatch sends tokens to their experts, a combine brings the results back (the same bytes)."""

BOUNDS: Mapping[str, tuple[float, float, str, str]] = {
    "up": (0.05, 1.0, "1", "in [0.05, 1]: no achievable bandwidth above the NVLink's nominal rate"),
    "out": (0.05, 1.0, "1", "in [0.05, 1]: no achievable bandwidth above the NICs' nominal rate"),
    "latency": (1e-7, 1e-3, "s", "in [0.1, 1000] us, the search range"),
}
"""Each kind of constant: (low, high, unit, the bound as stated in the fits file)."""

WHAT: Mapping[str, str] = {
    "up": "fraction of the NVLink rate per direction the dispatch and combine kernels reach ({key} GPUs)",
    "out": "fraction of a rank's NIC share per direction the dispatch and combine kernels reach ({key})",
    "latency": "fixed time of one {key} dispatch or combine kernel",
}


@dataclass(frozen=True)
class DispatchConstants:
    """``up[architecture]``, ``out[link]`` and ``latency[kernel]`` (each a :class:`Constant`)."""

    up: Mapping[str, Constant]
    out: Mapping[str, Constant]
    latency: Mapping[str, Constant]

    def as_json(self) -> dict[str, object]:
        return {group: {k: c.as_json() for k, c in sorted(getattr(self, group).items())}
                for group in ("up", "out", "latency")}

    @classmethod
    def from_json(cls, document: Mapping[str, object]) -> DispatchConstants:
        return cls(**{group: {k: Constant.from_json(v) for k, v in dict(document[group]).items()}  # type: ignore[call-overload]
                      for group in ("up", "out", "latency")})


@cache
def shipped_constants() -> DispatchConstants:
    """The constants fitted on the shipped dispatch tables (``mlsysim/data/kernel_fits/dispatch.json``)."""
    return DispatchConstants.from_json(read_fits("dispatch.json"))


def _kernel_code(kernel: object) -> int:
    name = str(kernel).strip().lower().replace("-", "_")
    if name not in KERNELS:
        raise InputError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}", field="kernel")
    return KERNELS.index(name)


def _element_bytes(fmt: object) -> float:
    name = str(fmt).strip().lower()
    if name not in ELEMENT_BYTES:
        raise InputError(f"format: expected one of {', '.join(ELEMENT_BYTES)}, got {fmt!r}", field="format")
    return ELEMENT_BYTES[name]


def _lookup(constants: DispatchConstants, architecture: str, link: str | None, kernel: int) -> tuple[float, float, float]:
    up = constants.up.get(architecture)
    if up is None:
        raise InputError(f"no dispatch table covers {architecture} GPUs (covered: {', '.join(sorted(constants.up))}); "
                         f"{SUPPLY}", field="accelerator")
    out = constants.out.get(link) if link is not None else None
    if link is not None and out is None:
        raise InputError(f"no dispatch table covers the {link} fabric (covered: {', '.join(sorted(constants.out))}); "
                         f"{SUPPLY}", field="link")
    latency = constants.latency.get(KERNELS[kernel])
    if latency is None:
        raise InputError(f"no dispatch table covers the {KERNELS[kernel]} kernels; {SUPPLY}", field="kernel")
    return up.value, (out.value if out is not None else 1.0), latency.value


def dispatch_time(
    kernel: Num, tokens: Num, hidden: Num, element_bytes: Num, top_k: Num, experts: Num, ranks: Num,
    domain_ranks: Num, route_limit: Num, *, up_rate: Num, out_rate: Num, up_efficiency: Num, out_efficiency: Num,
    latency: Num,
) -> KernelTime:
    """The SI-level time of one dispatch or combine (floats or arrays): the bytes of
    :func:`~mlsysim.physics.expert_dispatch.dispatch_bytes` at the fitted efficiencies."""
    up, out = physics.dispatch_bytes(kernel, tokens, hidden, element_bytes, top_k, experts, ranks, domain_ranks,
                                     route_limit)
    return physics.dispatch_time(up, out, up_rate=up_rate, out_rate=out_rate, up_efficiency=up_efficiency,
                                 out_efficiency=out_efficiency, latency=latency)


def dispatch(
    tokens: int, hidden: int, top_k: int, experts: int, ranks: int, *, accelerator: Accelerator | str | None = None,
    node: Node | str | None = None, direction: str = "dispatch", format: str = "fp8", kernel: str = "normal",
    route_limit: int | None = None, link: str | None = None, constants: DispatchConstants | None = None,
) -> KernelEstimate:
    """The predicted time of one dispatch (or combine) of ``tokens`` tokens per rank of ``hidden``
    elements, each to ``top_k`` of ``experts`` experts over ``ranks`` ranks (module docstring of
    :mod:`mlsysim.physics.expert_dispatch`).

    Give a registry ``node`` (its NVLink domain and NICs: more ranks than the domain cross its NIC
    fabric) or an ``accelerator`` (all ranks in one NVLink domain). ``format``: ``fp8`` (1x128
    scales) or ``bf16``; ``kernel``: ``normal`` (hierarchical; training, prefill) or
    ``low_latency`` (direct; decoding); ``route_limit``: the most domains a token may use
    (DeepSeek-V3's 4), None for none.

    >>> dispatch(4096, 7168, 8, 256, 8, accelerator="H800").bound
    'bandwidth'
    """
    for name, value in (("tokens", tokens), ("hidden", hidden), ("top_k", top_k), ("experts", experts),
                        ("ranks", ranks)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name}: expected a whole number above zero, got {value!r}", field=name)
    if ranks < 2 or experts % ranks or top_k > experts:
        raise InputError(f"ranks, experts, top_k: expected at least 2 ranks holding experts evenly and top_k <= "
                         f"experts, got ranks {ranks}, experts {experts}, top_k {top_k}", field="ranks")
    if str(direction).lower() not in DIRECTIONS:
        raise InputError(f"direction: expected dispatch or combine, got {direction!r}", field="direction")
    if route_limit is not None and (not isinstance(route_limit, int) or route_limit < 1):
        raise InputError(f"route_limit: expected a whole number of domains above zero, or None, got {route_limit!r}",
                         field="route_limit")
    code = _kernel_code(kernel)
    element = _element_bytes(format)
    fabric, domain, where = fabric_of(accelerator, node, link, int(ranks))
    up_e, out_e, latency = _lookup(constants or shipped_constants(), fabric.architecture, fabric.out_link, code)
    time = dispatch_time(code, tokens, hidden, element, top_k, experts, ranks, domain,
                         float(route_limit) if route_limit is not None else np.inf, up_rate=fabric.up_rate,
                         out_rate=fabric.out_rate, up_efficiency=up_e, out_efficiency=out_e, latency=latency)
    return KernelEstimate.of(f"{KERNELS[code]} {direction} of {tokens} tokens x {hidden} ({format}), top-{top_k} of "
                             f"{experts} experts over {ranks} ranks, {where}", time)


# ---------------------------------------------------------------------------------------------
# Tables: the model's time for every row, and the fit


def _rows(table: KernelTable) -> dict[str, np.ndarray]:
    """The arrays :func:`dispatch_time` takes for every row (rates from the registry and ``nic_rate``)."""
    accelerator = accelerator_entry(table.accelerator)
    c = table.columns
    limit = c["route_limit"] if "route_limit" in c else np.zeros(len(table))
    return {
        "kernel": np.array([_kernel_code(k) for k in c["kernel"]]) if "kernel" in c else np.zeros(len(table), int),
        "tokens": c["tokens"], "hidden": c["hidden"], "element_bytes": np.array([_element_bytes(f) for f in c["format"]]),
        "top_k": c["top_k"], "experts": c["experts"], "ranks": c["ranks"],
        "domain_ranks": c["ranks_per_domain"] if "ranks_per_domain" in c else c["ranks"],
        "route_limit": np.where(limit > 0, limit, np.inf),
        "up_rate": np.full(len(table), nvlink_rate(accelerator)),
        "out_rate": c["nic_rate"] if "nic_rate" in c else np.zeros(len(table)),
    }


def _keys(table: KernelTable) -> tuple[str, list[str | None], list[str]]:
    architecture = _architecture(accelerator_entry(table.accelerator))
    c = table.columns
    domains = (c["ranks"] / np.minimum(c["ranks_per_domain"], c["ranks"])) if "ranks_per_domain" in c else np.ones(len(table))
    links = [str(link) if d > 1 else None for link, d in zip(c["link"], domains, strict=True)]
    kernels = [str(k) for k in c["kernel"]] if "kernel" in c else ["normal"] * len(table)
    return architecture, links, kernels


def predict_table(table: KernelTable, constants: DispatchConstants | None = None) -> np.ndarray:
    """The model's seconds for every row of a dispatch table (its measured ones are ``table.time``)."""
    constants = constants or shipped_constants()
    architecture, links, kernels = _keys(table)
    looked = [_lookup(constants, architecture, link, KERNELS.index(k)) for link, k in zip(links, kernels, strict=True)]
    up, out, latency = (np.array(v) for v in zip(*looked, strict=True))
    rows = _rows(table)
    kernel = dispatch_time(up_efficiency=up, out_efficiency=out, latency=latency, **rows)
    return np.asarray(kernel.time, dtype=float)


@dataclass(frozen=True)
class DispatchFit:
    """The fitted dispatch constants and the objective reached."""

    constants: DispatchConstants
    objective: float

    def as_json(self) -> dict[str, object]:
        return self.constants.as_json()


def fit_dispatch(tables: Iterable[KernelTable]) -> DispatchFit:
    """Fit the dispatch constants the rows of ``tables`` depend on (robust least squares on log time,
    each table weighing the same, as :mod:`mlsysim.kernels.collective_fit`). Refuses holdout tables."""
    chosen = list(tables)
    if not chosen:
        raise InputError("no dispatch table to fit", field="tables")
    for table in chosen:
        if table.kind != "dispatch" or table.split != "fit":
            raise InputError(f"{table.name}: only dispatch tables of split 'fit' are fitted", field="tables")
    names: list[tuple[str, str]] = []
    users: dict[tuple[str, str], set[str]] = {}
    columns: dict[str, list[np.ndarray]] = {}
    slots: dict[str, list[int]] = {"up": [], "out": [], "latency": []}
    measured, weights = [], []

    def slot(group: str, key: str, table: str) -> int:
        if (group, key) not in names:
            names.append((group, key))
        users.setdefault((group, key), set()).add(table)
        return names.index((group, key))

    for table in chosen:
        architecture, links, kernels = _keys(table)
        for k, v in _rows(table).items():
            columns.setdefault(k, []).append(np.asarray(v, dtype=float))
        for link, kernel in zip(links, kernels, strict=True):
            slots["up"].append(slot("up", architecture, table.name))
            slots["out"].append(slot("out", link, table.name) if link is not None else -1)
            slots["latency"].append(slot("latency", kernel, table.name))
        measured.append(table.time)
        weights.append(np.full(len(table), 1.0 / len(table) / len(chosen)))
    rows = {k: np.concatenate(v) for k, v in columns.items()}
    index = {k: np.array(v) for k, v in slots.items()}
    t, w = np.concatenate(measured), np.concatenate(weights)
    low = np.array([BOUNDS[g][0] for g, _ in names])
    high = np.array([BOUNDS[g][1] for g, _ in names])
    start = np.array([{"up": 0.7, "out": 0.8, "latency": 2e-5}[g] for g, _ in names])

    def residuals(theta: np.ndarray) -> np.ndarray:
        kernel = dispatch_time(up_efficiency=theta[index["up"]],
                               out_efficiency=np.where(index["out"] >= 0, theta[np.maximum(index["out"], 0)], 1.0),
                               latency=theta[index["latency"]], **rows)
        return robust(np.log(np.asarray(kernel.time) / t), w)

    z, _, _ = levenberg_marquardt(lambda z: residuals(to_value(z, low, high)), to_search(start, low, high),
                                  np.arange(len(names)), 100)
    theta = np.array([round_constant(v) for v in to_value(z, low, high)])
    groups: dict[str, dict[str, Constant]] = {"up": {}, "out": {}, "latency": {}}
    for i, (group, key) in enumerate(names):
        low_i, high_i, unit, bound = BOUNDS[group]
        groups[group][key] = Constant(float(theta[i]), unit, WHAT[group].format(key=key),
                                      tuple(sorted(users[(group, key)])), bound)
    cost = residuals(theta)
    return DispatchFit(DispatchConstants(**groups), float(cost @ cost))
