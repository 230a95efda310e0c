"""The time of one collective (all-reduce, all-gather, reduce-scatter, all-to-all, send/recv) on a
registry accelerator or node, from the size curve of :mod:`mlsysim.physics.collective_curves` and
the constants fitted on measured nccl-tests tables (``mlsysim/data/kernel_fits/collectives.json``,
written by ``python -m mlsysim.validation.kernels_collectives``).

The constants live where they are measured:

* per accelerator **architecture** (Ampere, Hopper, Blackwell): the fraction of its NVLink rate
  that ring (and point-to-point) copies reach, and the fixed latency of a collective's start;
* per architecture and **link level**: NVLink SHARP's (NVLS) fraction of the wire, inside one
  node's NVSwitch (``nvlink``) or across an NVL72 rack's NVLink switches (``nvl72``);
* per **scale-out fabric** (``infiniband``, ``efa``, ``roce``): the fraction of a rank's NIC share
  reached, and the latency of each step across domains;
* common to all: the size curve's shape (the per-rank size at which a collective is at 2^-g of
  its ceiling, and g) and the latency of each algorithm step on NVLink (one NVLink hop of the
  library's low-latency protocol; the nccl-tests sweeps of small messages shipped here are of
  ring all-reduce on A100 and GB200 and of forced NVLS on H100, so one step latency for all
  NVLink generations is what they can pin).

A link, architecture or algorithm no fitted table covers is refused with an
:class:`~mlsysim.core.exceptions.InputError` naming the missing table and how to supply one
(an nccl-tests log: ``mlsysim calibrate kernels FILE``); nothing falls back to another GPU or
fabric. :func:`collective` is the public form (Quantities in, a
:class:`~mlsysim.kernels.result.KernelEstimate` out); :func:`collective_time` the SI form the
engine calls on arrays.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, cast

import numpy as np

from mlsysim.core.exceptions import InputError, UnitsError
from mlsysim.core.units import Quantity, ureg
from mlsysim.kernels._accelerator import accelerator_entry, nvlink_rate
from mlsysim.kernels.result import KernelEstimate
from mlsysim.physics import collective_curves as curves
from mlsysim.physics.bounds import KernelTime
from mlsysim.physics.collective_curves import ALGORITHMS, OPS, Algorithm, Op

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator, Node
    from mlsysim.hardware.types import Fabric as RegistryFabric
    from mlsysim.kernels.tables import KernelTable
    from mlsysim.physics._array import Num

SCALE_UP_LINKS = ("nvlink", "nvl72")
"""Links inside one NVLink domain: a node's NVSwitch, or an NVL72 rack's NVLink switches."""
SCALE_OUT_LINKS = ("infiniband", "roce", "efa")
"""Fabrics that join NVLink domains (the NICs)."""
LINKS = SCALE_UP_LINKS + SCALE_OUT_LINKS
"""Every link a collective table or call may name."""

NVLS_ARCHITECTURES = frozenset({"Hopper", "Blackwell"})
"""Architectures whose NVSwitch reduces in the switch (NVLink SHARP: third-generation NVSwitch on,
NVIDIA, "NVIDIA H100 Tensor Core GPU Architecture" whitepaper, NVLink Switch System section)."""

SUPPLY = ("measure it with nccl-tests and supply the log with 'mlsysim calibrate kernels FILE' "
          "(or a table in the kernel-table format)")
"""How a user supplies a table this library does not ship (the end of every 'no table' error)."""


@dataclass(frozen=True)
class Constant:
    """One fitted constant: its value (SI), what it is, the tables it rests on and its bound."""

    value: float
    unit: str
    what: str
    tables: tuple[str, ...] = ()
    bound: str = ""

    def as_json(self) -> dict[str, object]:
        return {"value": self.value, "unit": self.unit, "what": self.what, "tables": list(self.tables),
                "bound": self.bound}

    @classmethod
    def from_json(cls, raw: object) -> Constant:
        """A constant as :meth:`as_json` writes it."""
        d = dict(raw)  # type: ignore[call-overload]
        return cls(float(d["value"]), str(d["unit"]), str(d["what"]), tuple(d.get("tables", ())), str(d.get("bound", "")))


def read_fits(name: str) -> dict[str, object]:
    """The ``constants`` of a shipped fits file (``mlsysim/data/kernel_fits/<name>``)."""
    text = files("mlsysim.data").joinpath("kernel_fits").joinpath(name).read_text(encoding="utf-8")
    constants: dict[str, object] = json.loads(text)["constants"]
    return constants


@dataclass(frozen=True)
class CollectiveConstants:
    """The fitted constants of the collective model (module docstring), keyed where they live.

    ``scale_up[architecture]`` holds ``ring_efficiency`` and ``base_latency``;
    ``nvls["Architecture/level"]`` NVLS's wire efficiency; ``scale_out[link]`` ``efficiency`` and
    ``step_latency``; ``common`` ``half_size`` (bytes per rank), ``sharpness`` and ``step_latency``
    (on NVLink).
    """

    common: Mapping[str, Constant]
    scale_up: Mapping[str, Mapping[str, Constant]]
    nvls: Mapping[str, Constant] = field(default_factory=dict)
    scale_out: Mapping[str, Mapping[str, Constant]] = field(default_factory=dict)
    harness: Mapping[str, Constant] = field(default_factory=dict)
    """Per measuring program other than nccl-tests: its per-call overhead, added to the rows it measured
    (to compare them), never to a prediction."""

    def as_json(self) -> dict[str, object]:
        def group(table: Mapping[str, Mapping[str, Constant]]) -> dict[str, object]:
            return {key: {name: c.as_json() for name, c in values.items()} for key, values in sorted(table.items())}

        return {"common": {name: c.as_json() for name, c in self.common.items()},
                "scale_up": group(self.scale_up),
                "nvls": {key: c.as_json() for key, c in sorted(self.nvls.items())},
                "scale_out": group(self.scale_out),
                "harness": {key: c.as_json() for key, c in sorted(self.harness.items())}}

    @classmethod
    def from_json(cls, document: Mapping[str, object]) -> CollectiveConstants:
        one = Constant.from_json

        def group(raw: object) -> dict[str, dict[str, Constant]]:
            return {key: {name: one(c) for name, c in dict(values).items()} for key, values in dict(raw).items()}  # type: ignore[call-overload]

        return cls(common={k: one(v) for k, v in dict(document["common"]).items()},  # type: ignore[call-overload]
                   scale_up=group(document["scale_up"]),
                   nvls={k: one(v) for k, v in dict(document.get("nvls", {})).items()},  # type: ignore[call-overload]
                   scale_out=group(document.get("scale_out", {})),
                   harness={k: one(v) for k, v in dict(document.get("harness", {})).items()})  # type: ignore[call-overload]


@cache
def shipped_constants() -> CollectiveConstants:
    """The constants fitted on the shipped tables (``mlsysim/data/kernel_fits/collectives.json``)."""
    return CollectiveConstants.from_json(read_fits("collectives.json"))


# ---------------------------------------------------------------------------------------------
# The SI level: plain numbers (or arrays) in, KernelTime out


@dataclass(frozen=True)
class Fabric:
    """Where a collective runs, as plain numbers: the constants of its architecture, levels and links.

    ``up_rate`` / ``out_rate``: a rank's nominal NVLink and NIC-share rates (bytes/s per direction);
    ``out_link``: the scale-out fabric (None when the group stays in one domain).
    """

    architecture: str
    level: str
    up_rate: float
    out_rate: float
    out_link: str | None


def _coefficients(constants: CollectiveConstants, fabric: Fabric) -> dict[str, float]:
    """The constants one fabric uses (NaN for NVLS where none was measured); refuses what no table covers."""
    up = constants.scale_up.get(fabric.architecture)
    if up is None:
        raise InputError(
            f"no collective table covers {fabric.architecture} GPUs over NVLink (covered: "
            f"{', '.join(sorted(constants.scale_up)) or 'none'}); {SUPPLY}", field="accelerator")
    nvls = constants.nvls.get(f"{fabric.architecture}/{fabric.level}")
    out = constants.scale_out.get(fabric.out_link) if fabric.out_link is not None else None
    if fabric.out_link is not None and out is None:
        raise InputError(
            f"no collective table covers the {fabric.out_link} fabric between nodes (covered: "
            f"{', '.join(sorted(constants.scale_out)) or 'none'}); {SUPPLY}", field="link")
    return {
        "ring": up["ring_efficiency"].value, "base": up["base_latency"].value,
        "step": constants.common["step_latency"].value,
        "nvls": nvls.value if nvls is not None and fabric.architecture in NVLS_ARCHITECTURES else float("nan"),
        "out": out["efficiency"].value if out is not None else 1.0,
        "out_step": out["step_latency"].value if out is not None else 0.0,
        "half": constants.common["half_size"].value, "sharp": constants.common["sharpness"].value,
    }


def algorithm_time(
    op: Num, algorithm: Num, size: Num, group: Num, domain: Num, *, up_rate: Num, out_rate: Num,
    ring_efficiency: Num, nvls_efficiency: Num, out_efficiency: Num, base_latency: Num, step_latency: Num,
    out_step_latency: Num, half_size: Num, sharpness: Num,
) -> KernelTime:
    """One algorithm's time (:func:`~mlsysim.physics.collective_curves.collective_time`) with the NVLink
    efficiency of that algorithm (NVLS's for ``nvls`` and ``nvls_tree``, the ring's otherwise); ``inf``
    where the algorithm does not apply or has no measured constant (a NaN efficiency)."""
    uses_nvls = (np.asarray(algorithm) == Algorithm.NVLS) | (np.asarray(algorithm) == Algorithm.NVLS_TREE)
    kernel = curves.collective_time(
        op, algorithm, size, group, domain, up_rate=up_rate, out_rate=out_rate,
        up_efficiency=np.where(uses_nvls, nvls_efficiency, ring_efficiency), out_efficiency=out_efficiency,
        base_latency=base_latency, up_latency=step_latency, out_latency=out_step_latency,
        half_size=half_size, sharpness=sharpness)
    time = np.where(np.isfinite(kernel.time), kernel.time, np.inf)
    return KernelTime(time, kernel.efficiency, kernel.bound)


AUTO = -1
"""The algorithm code of ``auto``: the fastest that applies, as NCCL's tuner picks by its own model."""


def best_time(op: Num, algorithm: Num, size: Num, group: Num, domain: Num, **coefficients: Num) -> tuple[KernelTime, Num]:
    """(the KernelTime, the algorithm code used): ``algorithm`` as given, or for :data:`AUTO` (-1) the
    fastest of :class:`~mlsysim.physics.collective_curves.Algorithm` (arrays broadcast row by row)."""
    shape = np.broadcast(np.asarray(op), np.asarray(algorithm), np.asarray(size), np.asarray(group),
                         np.asarray(domain)).shape
    codes = _candidates(op, algorithm, group, domain, coefficients["nvls_efficiency"])
    tried = [algorithm_time(op, code, size, group, domain, **coefficients) for code in codes]
    if len(tried) == 1:
        return tried[0], codes[0] if not shape else np.full(shape, codes[0])
    times = np.stack([np.broadcast_to(k.time, shape) for k in tried])
    best = np.argmin(times, axis=0)
    wanted = np.asarray(algorithm)
    index = np.where(wanted == AUTO, best, np.searchsorted(np.array(codes), np.clip(wanted, 0, None)))
    index = np.broadcast_to(index, shape).astype(int)

    def pick(values: Sequence[Num]) -> np.ndarray:
        stacked = np.stack([np.broadcast_to(v, shape) for v in values])
        return np.take_along_axis(stacked, index[None, ...], axis=0)[0]

    kernel = KernelTime(pick([k.time for k in tried]), pick([k.efficiency for k in tried]),
                        pick([np.asarray(k.bound) for k in tried]).astype(int))
    chosen = np.array(codes)[index]
    if not shape:
        return KernelTime(float(kernel.time), float(kernel.efficiency), int(kernel.bound)), int(chosen)
    return kernel, chosen


def _candidates(op: Num, algorithm: Num, group: Num, domain: Num, nvls: Num) -> list[int]:
    """The algorithm codes worth computing: the one asked for; for ``auto`` on one collective those that
    apply to it (NVLS on one domain with a measured NVLS efficiency, the trees across domains); every
    code for many rows."""
    if np.ndim(algorithm) == 0 and int(algorithm) != AUTO:
        return [int(algorithm)]
    if np.ndim(algorithm) or np.ndim(op) or np.ndim(group) or np.ndim(domain) or np.ndim(nvls):
        return [int(a) for a in Algorithm]
    one = float(group) <= float(domain)
    codes = [int(Algorithm.RING)]
    if int(op) == Op.ALL_REDUCE and np.isfinite(nvls):
        codes.append(int(Algorithm.NVLS if one else Algorithm.NVLS_TREE))
    if not one:
        codes.append(int(Algorithm.TREE))
    return sorted(codes)


def collective_time(
    op: str, size: Num, group: Num, domain: Num, fabric: Fabric, *, algorithm: str = "auto",
    constants: CollectiveConstants | None = None,
) -> KernelTime:
    """The SI-level collective time: ``size`` bytes (nccl-tests' convention for ``op``) over ``group``
    ranks in NVLink domains of ``domain`` ranks on ``fabric``; floats or arrays of size, group and domain.

    Raises :class:`InputError` for an op, algorithm or fabric no table covers (module docstring).
    """
    code, alg = _op_code(op), _algorithm_code(algorithm)
    coefficients = _coefficients(constants or shipped_constants(), fabric)
    kernel, _ = best_time(code, alg, size, group, domain, **_as_arguments(coefficients, fabric))
    return kernel


def _as_arguments(c: Mapping[str, float], fabric: Fabric) -> dict[str, Num]:
    return {"up_rate": fabric.up_rate, "out_rate": fabric.out_rate, "ring_efficiency": c["ring"],
            "nvls_efficiency": c["nvls"], "out_efficiency": c["out"], "base_latency": c["base"],
            "step_latency": c["step"], "out_step_latency": c["out_step"], "half_size": c["half"],
            "sharpness": c["sharp"]}


def _op_code(op: object) -> int:
    name = str(op).strip().lower().replace("-", "_")
    name = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
            "alltoall": "all_to_all", "sendrecv": "send_recv"}.get(name, name)
    if name not in OPS:
        raise InputError(f"op: expected one of {', '.join(OPS)}, got {op!r}", field="op")
    return OPS.index(name)


def _algorithm_code(algorithm: object) -> int:
    name = str(algorithm).strip().lower().replace("-", "_")
    if name == "auto":
        return AUTO
    if name not in ALGORITHMS:
        raise InputError(f"algorithm: expected auto or one of {', '.join(ALGORITHMS)}, got {algorithm!r}",
                         field="algorithm")
    return ALGORITHMS.index(name)


# ---------------------------------------------------------------------------------------------
# Tables: each row's fabric, and the model's time for every row (the fit and the benchmark read these)


def link_level(link: str, domain: float, gpus_per_node: float) -> str:
    """The NVLink level of a row or call: ``nvl72`` for an NVLink domain larger than a node, else ``nvlink``."""
    if link in SCALE_UP_LINKS:
        return link
    return "nvl72" if domain > gpus_per_node else "nvlink"


def table_fabrics(table: KernelTable) -> list[Fabric]:
    """Each row's :class:`Fabric` (the accelerator from the registry, NIC share from ``nic_rate``)."""
    accelerator = accelerator_entry(table.accelerator)
    rate = nvlink_rate(accelerator)
    architecture = _architecture(accelerator)
    columns = table.columns
    fabrics = []
    for i in range(len(table)):
        link = str(columns["link"][i])
        if link not in LINKS:
            raise InputError(f"{table.name}: row {i + 1}, column 'link': {link!r} is not one of {', '.join(LINKS)}",
                             field="link")
        domain = float(columns["domain"][i]) if "domain" in columns else float(columns["group"][i])
        per_node = float(columns["gpus_per_node"][i]) if "gpus_per_node" in columns else domain
        out_rate = float(columns["nic_rate"][i]) if "nic_rate" in columns else 0.0
        out_link = link if link in SCALE_OUT_LINKS else None
        fabrics.append(Fabric(architecture, link_level(link, domain, per_node), rate, out_rate, out_link))
    return fabrics


def table_arguments(
    table: KernelTable, constants: CollectiveConstants, *, fabrics: Sequence[Fabric] | None = None,
) -> dict[str, Num]:
    """The arrays :func:`best_time` takes for every row of ``table`` with ``constants``."""
    fabrics = table_fabrics(table) if fabrics is None else fabrics
    per_row = [_as_arguments(_coefficients(constants, f), f) for f in fabrics]
    columns = table.columns
    arguments: dict[str, Num] = {k: np.array([row[k] for row in per_row], dtype=float) for k in per_row[0]}
    arguments["op"] = np.array([OPS.index(str(o)) for o in columns["op"]])
    algorithm = columns["algorithm"] if "algorithm" in columns else np.full(len(table), "auto", dtype=object)
    arguments["algorithm"] = np.array([_algorithm_code(a) for a in algorithm])
    arguments["size"] = columns["bytes"]
    arguments["group"] = columns["group"]
    arguments["domain"] = np.minimum(columns["domain"], columns["group"]) if "domain" in columns else columns["group"]
    return arguments


def predict_table(table: KernelTable, constants: CollectiveConstants | None = None) -> np.ndarray:
    """The model's seconds for every row of a collective table (its measured ones are ``table.time``)."""
    constants = constants or shipped_constants()
    arguments = table_arguments(table, constants)
    kernel, _ = best_time(arguments.pop("op"), arguments.pop("algorithm"), arguments.pop("size"),
                          arguments.pop("group"), arguments.pop("domain"), **arguments)
    return np.asarray(kernel.time, dtype=float) + harness_latency(table, constants)


def harness_latency(table: KernelTable, constants: CollectiveConstants) -> np.ndarray:
    """The per-call overhead of each row's measuring program (0 for nccl-tests; the fitted
    :attr:`CollectiveConstants.harness` of another, as its ``library`` column names it)."""
    values = []
    for row in range(len(table)):
        key = harness_key(table, row)
        if key is None:
            values.append(0.0)
            continue
        constant = constants.harness.get(key)
        if constant is None:
            raise InputError(f"{table.name}: row {row + 1} was measured by {key.split(' @ ')[0]!r}, whose overhead no "
                             "fit knows; measure with nccl-tests, or fit the table with the collective model first",
                             field="library")
        values.append(constant.value)
    return np.array(values)


def harness_key(table: KernelTable, row: int) -> str | None:
    """``program @ table`` for a row measured by a program other than nccl-tests (its ``library``
    column; its setup's overhead is a constant of its own), None for nccl-tests or no such column."""
    library = table.columns.get("library")
    if library is None or str(library[row]).startswith("nccl-tests"):
        return None
    return f"{library[row]} @ {table.name}"


# ---------------------------------------------------------------------------------------------
# The public facade: registry names and Quantities in, KernelEstimate out


def collective(
    op: str, size: Quantity, group: int, *, accelerator: Accelerator | str | None = None,
    node: Node | str | None = None, link: str | None = None, algorithm: str = "auto",
    constants: CollectiveConstants | None = None,
) -> KernelEstimate:
    """The predicted time of one collective (nccl-tests' conventions: module docstring of
    :mod:`mlsysim.physics.collective_curves`).

    ``size`` is a data Quantity (``"1 GiB"`` as ``quantity(1, "GiB")``; an array magnitude for many);
    ``group`` the ranks. Give a registry ``node`` (its accelerator, NVLink domain and NICs; a group
    larger than the domain crosses its NIC fabric) or an ``accelerator`` (the group is one NVLink
    domain). ``link`` overrides the level: ``nvlink`` (one node's NVSwitch), ``nvl72`` (an NVL72
    rack), or the scale-out fabric (``infiniband``, ``roce``, ``efa``). ``algorithm``: ``auto``
    (the fastest, as NCCL's tuner picks), ``ring``, ``nvls``, ``tree`` or ``nvls_tree``.

    >>> from mlsysim.core.units import quantity
    >>> estimate = collective("all_reduce", quantity(1, "GiB"), 8, node="DGX_H100")
    >>> estimate.bound
    'bandwidth'
    """
    code, alg = _op_code(op), _algorithm_code(algorithm)
    n = _group(group)
    bytes_ = _bytes(size)
    fabric, domain, where = fabric_of(accelerator, node, link, n)
    constants = constants or shipped_constants()
    coefficients = _coefficients(constants, fabric)
    if alg in (Algorithm.NVLS, Algorithm.NVLS_TREE) and not np.isfinite(coefficients["nvls"]):
        raise InputError(f"algorithm {algorithm!r}: no NVLS table covers {fabric.architecture} on {fabric.level} "
                         f"(NVLink SHARP needs a third-generation NVSwitch); {SUPPLY}", field="algorithm")
    kernel, chosen = best_time(code, alg, bytes_, n, domain, **_as_arguments(coefficients, fabric))
    if np.any(~np.isfinite(np.asarray(kernel.time))):
        raise InputError(f"algorithm {algorithm!r} does not implement {OPS[code]} over {n} ranks in domains of "
                         f"{domain} ({_applies(code)})", field="algorithm")
    used = ALGORITHMS[int(np.ravel(chosen)[0])] if np.ndim(chosen) == 0 or np.all(chosen == np.ravel(chosen)[0]) \
        else "per size"
    what = f"{OPS[code]} over {n} ranks, {where} ({algorithm}: {used})"
    return KernelEstimate.of(what, kernel)


def _applies(op: int) -> str:
    if op == Op.ALL_REDUCE:
        return "nvls: one NVLink domain; tree and nvls_tree: more than one"
    if op in (Op.ALL_GATHER, Op.REDUCE_SCATTER):
        return "ring; tree across more than one domain"
    return "ring (direct point-to-point) only"


def _group(group: object) -> int:
    if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 2:
        raise InputError(f"group: expected a whole number of ranks, at least 2, got {group!r}", field="group")
    return int(group)


def _bytes(size: object) -> Num:
    if not isinstance(size, Quantity):
        raise UnitsError(f"size: expected a data size (a Quantity such as quantity(1, 'GiB')), got {size!r}")
    if size.dimensionality != ureg.byte.dimensionality:
        raise UnitsError(f"size: expected a data size, got units of {size.units}")
    value = size.to(ureg.byte).magnitude
    array = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(array) & (array > 0)):
        raise InputError(f"size: expected sizes above zero, got {size}", field="size")
    return array if array.ndim else float(array)


def fabric_of(
    accelerator: Accelerator | str | None, node: Node | str | None, link: str | None, n: int,
) -> tuple[Fabric, int, str]:
    """(the :class:`Fabric`, the ranks per NVLink domain in the group, a description) of ``group`` ranks on a
    registry node (its accelerator, NVLink domain, NICs and NIC fabric) or accelerator (the group one
    NVLink domain), as :func:`collective` reads them; the engine calls it once with its largest group
    and passes arrays of sizes and groups to :func:`collective_time`."""
    if (accelerator is None) == (node is None):
        raise InputError("give one of accelerator= (a registry accelerator) or node= (a registry node)",
                         field="accelerator")
    if link is not None and link not in LINKS:
        raise InputError(f"link: expected one of {', '.join(LINKS)}, got {link!r}", field="link")
    if node is not None:
        from mlsysim.core.registry import CATALOG

        system = cast("Node", CATALOG.entry("nodes", node)) if isinstance(node, str) else node
        acc = system.accelerator
        per_node = system.accelerators_per_node
        domain_size = system.domain_size
        nic_rate = system.nics_per_node * float(system.nic_bandwidth.to("byte/s").magnitude) / per_node
        default_out = _fabric_kind(system)
        label = system.name
    else:
        acc = accelerator_entry(accelerator)  # type: ignore[arg-type]
        per_node = domain_size = n
        nic_rate, default_out, label = 0.0, None, acc.name
    if link in SCALE_UP_LINKS or link is None:
        if link == "nvl72" and node is None:
            domain_size = max(domain_size, n)
        if n > domain_size and link is not None:
            raise InputError(f"link {link!r}: a group of {n} ranks does not fit one NVLink domain of {domain_size}; "
                             "name the fabric between domains (infiniband, roce, efa)", field="link")
        out_link = default_out if n > domain_size else None
        level = link or ("nvl72" if domain_size > per_node else "nvlink")
    else:
        if node is None:
            raise InputError(f"link {link!r} joins nodes: give node= (its NVLink domain and NICs)", field="link")
        out_link, level = link, ("nvl72" if domain_size > per_node else "nvlink")
    if n > domain_size and out_link is None:
        raise InputError(f"group: {n} ranks span more than one NVLink domain of {domain_size}, and the node names "
                         "no NIC fabric; give link= (infiniband, roce, efa)", field="group")
    domain = min(n, domain_size)
    fabric = Fabric(_architecture(acc), level, nvlink_rate(acc), nic_rate, out_link if n > domain_size else None)
    where = f"{label} ({level}" + (f" + {out_link}" if fabric.out_link else "") + ")"
    return fabric, domain, where


def _fabric_kind(node: Node) -> str | None:
    """The scale-out link of a registry node: InfiniBand, or Ethernet as RoCE (RDMA over Converged Ethernet)."""
    return link_kind(node.nic_fabric)


def _architecture(accelerator: Accelerator) -> str:
    if not accelerator.architecture:
        raise InputError(f"{accelerator.name} has no architecture in the registry, so no collective table applies; "
                         f"{SUPPLY}", field="accelerator")
    return accelerator.architecture


def link_kind(fabric: RegistryFabric | None) -> str | None:
    """The collective tables' name of a registry fabric: ``infiniband``, Ethernet as ``roce`` (RDMA over
    Converged Ethernet); None for another."""
    if fabric is None:
        return None
    name = fabric.name.lower()
    if "infiniband" in name:
        return "infiniband"
    if "ethernet" in name or "gbe" in name:
        return "roce"
    return None
