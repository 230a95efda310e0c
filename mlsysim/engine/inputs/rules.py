"""Rules between inputs, written once for one layout and for a grid of layouts.

Each :class:`Rule` reads a few inputs, turns each value into a number or a
flag (``nodes`` -> 4, ``inter_bandwidth`` -> "not given"), and says where the
rule is broken with operators that work on Python scalars and numpy arrays
alike (``&``, ``>``). The scenario calls :func:`check_together` on its inputs;
a sweep or a plan evaluates the same ``broken`` on its axes, broadcast over
the grid, and reports how many layouts break it and one example
(:func:`mlsysim.planning.space.Space.check_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, cast

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import setting
from mlsysim.engine.model.equations import LAYOUT_INPUTS


def _not_given(value: object) -> bool:
    return value is None


def _given(value: object) -> bool:
    return value is not None


def _positive_rate(value: object) -> object:
    """A failure rate that asks for failures to be priced: given and above zero."""
    if value is None:
        return False
    magnitude = getattr(value, "magnitude", value)
    return isinstance(magnitude, int | float) and magnitude > 0


def _needs(name: str, number: str, unit: str, note: str = "") -> Callable[[Mapping[str, object]], str]:
    """The message of a failure rate given without what a failure costs (the example in the
    caller's syntax, :func:`~mlsysim.core.suggest.setting`)."""

    def message(values: Mapping[str, object]) -> str:
        return f"required with failure_rate (it prices a failure): give e.g. {setting(name, number, unit)}{note}"

    return message


def _count(value: object) -> object:
    return value


def _on(value: object) -> object:
    """A switch given on (1; None, not given, and 0 are off)."""
    return value == 1


def _size(value: object) -> object:
    """A layout count, 1 where not given."""
    return 1 if value is None else value


def _inert(switch: str, size: str, does: str, needs: str) -> Rule:
    """The rule of a switch that does nothing unless a layout count is above 1: ``switch=1`` with ``size``
    at 1 (or not given) is refused with the reason, never priced as if it were off (issue 40)."""

    def message(v: Mapping[str, object]) -> str:
        got = v.get(size)
        return (
            f"{switch}=1 {does}, but {size} is {1 if got is None else got}: it does nothing here; "
            f"give {needs}, or leave {switch} out"
        )

    return Rule(
        (switch, size), (_on, _size), lambda on, count: on & (count <= 1), switch, message,
        f"{switch}=1 and {size} 1", when=switch, inert=True,
    )


def _without(
    field: str, read: Callable[[object], object], needed: str, loc: str,
    message: Callable[[Mapping[str, object]], str], phrase: str,
) -> Rule:
    """The rule of an input ``field`` that needs another, ``needed``: broken where ``read`` holds of
    ``field`` and ``needed`` is not given."""
    return Rule(
        (field, needed), (read, _not_given), lambda present, missing: present & missing, loc, message, phrase,
        when=field,
    )


def _reruns_mlp(value: object) -> bool:
    return value is not None and "mlp" in str(value).split(",")


def _has_experts(workload: object) -> bool:
    return getattr(workload, "experts", None) is not None


def _job_rate(value: object) -> object:
    """A failure rate of a whole job (interruptions/day), not one per device."""
    from mlsysim.core.units import KINDS, Quantity

    return isinstance(value, Quantity) and (
        value.dimensionality == KINDS["event_rate"][0].dimensionality
    )


def _per_device_rate(value: object) -> object:
    from mlsysim.core.units import KINDS, Quantity

    return isinstance(value, Quantity) and (
        value.dimensionality == KINDS["failure_rate"][0].dimensionality
    )


def _bare_rate(values: Mapping[str, object]) -> str:
    """The message of a failure rate that could be per device or of a whole job."""
    from mlsysim.core.suggest import example
    from mlsysim.core.units import SPELLINGS, Quantity, ureg

    rate = values.get("failure_rate")
    unit, number = "interruptions/day", "8.6"
    if isinstance(rate, Quantity):  # in the spelling it came in where one is, else per hour
        unit = next(
            (u for u in SPELLINGS["event_rate"] if ureg.Unit(u) == rate.units), "failures/hour"
        )
        number = f"{rate.to(unit).magnitude:g}"
    per_device = unit.replace("/", "/device/", 1)
    return (
        f"{number} {unit} does not say whether it is per device or of a whole job: for a rate "
        f"per device write {example(number, per_device)}; for a whole job's rate give the "
        "devices it was observed on, failure_rate_devices=N (Llama 3: 466 interruptions in 54 "
        "days on 16,384 GPUs is 8.6 interruptions/day with failure_rate_devices=16384)"
    )


@dataclass(frozen=True)
class Rule:
    """A rule between inputs.

    ``fields`` are the inputs read, ``reads`` turn each value into what
    ``broken`` takes (same order); ``broken`` returns True (or a boolean
    array) where the rule is broken. ``loc`` is the input the error is located
    at; ``message`` the error of one layout (from its values), ``phrase`` what
    a grid's broken layouts "have" (``"nodes > 1 and no inter_bandwidth"``).
    """

    fields: tuple[str, ...]
    reads: tuple[Callable[[object], object], ...]
    broken: Callable[..., object]
    loc: str
    message: Callable[[Mapping[str, object]], str]
    phrase: str
    when: str | None = None
    """An input the rule concerns only when it is given (None: always checked); a layout
    without it cannot break the rule, so one scenario skips it at once."""
    inert: bool = False
    """The rule of an input that does nothing where it is broken (a switch without the layout it
    acts on). One scenario refuses it; a sweep or a plan refuses it only where the input does
    nothing in every combination that gives it (a row at t = 1 of a sweep over t is the switch
    off, and the table shows it)."""

    def is_broken(self, values: Mapping[str, object]) -> bool:
        """Whether one layout's checked ``values`` (every input) break this rule."""
        if len(self.fields) == 2:  # every rule so far: unpacked, the path of every solve
            (first, second), (read_first, read_second) = self.fields, self.reads
            return bool(self.broken(read_first(values[first]), read_second(values[second])))
        return bool(self.broken(*[read(values[f]) for f, read in zip(self.fields, self.reads, strict=True)]))


RULES: Final = (
    Rule(
        ("nodes", "inter_bandwidth"),
        (_count, _not_given),
        lambda nodes, missing: (nodes > 1) & missing,
        "inter_bandwidth",
        lambda v: (
            f"required when nodes > 1 (got nodes={v.get('nodes')} and no inter_bandwidth); "
            f"give the inter-node link, e.g. {setting('inter_bandwidth', '100', 'Gbps')}, or a fabric "
            f"({setting('fabric', 'InfiniBand_NDR')})"
        ),
        "nodes > 1 and no inter_bandwidth",
    ),
    Rule(
        ("optimizer", "optimizer_step_time"),
        (_given, _given),
        lambda optimizer, step: optimizer & step,
        "optimizer",
        lambda v: "give either optimizer (with memory_bandwidth) or optimizer_step_time, not both",
        "both optimizer and optimizer_step_time",
        when="optimizer",
    ),
    _without(
        "optimizer", _given, "memory_bandwidth", "memory_bandwidth",
        lambda v: (
            f"required with optimizer={v.get('optimizer')!r} (its step's bytes move at the "
            f"device's memory bandwidth); give e.g. {setting('memory_bandwidth', '2.0', 'TB/s')} "
            f"or {setting('memory_bandwidth', 'A100')}"
        ),
        "an optimizer and no memory_bandwidth",
    ),
    Rule(
        ("reshard_after_forward", "zero_stage"),
        (_given, _count),
        lambda given, stage: given & (stage != 3),
        "reshard_after_forward",
        lambda v: (
            f"reshard_after_forward applies to ZeRO-3/FSDP full sharding (got zero_stage={v.get('zero_stage')}); "
            "give zero_stage=3, or leave reshard_after_forward out"
        ),
        "reshard_after_forward without zero_stage 3",
        when="reshard_after_forward",
    ),
    _without(
        "failure_rate", _job_rate, "failure_rate_devices", "failure_rate", _bare_rate,
        "a failure_rate without 'per device' and no failure_rate_devices",
    ),
    Rule(
        ("failure_rate", "failure_rate_devices"),
        (_per_device_rate, _given),
        lambda per_device, given: per_device & given,
        "failure_rate_devices",
        lambda v: (
            f"failure_rate ({v.get('failure_rate'):~P}) is already per device; "
            "failure_rate_devices is for the rate of a whole job (interruptions/day): "
            "give one or the other"
        ),
        "a failure_rate per device and failure_rate_devices",
        when="failure_rate_devices",
    ),
    Rule(
        ("recompute_modules", "recompute"),
        (_given, str),
        lambda given, mode: given & (mode != "selective"),
        "recompute_modules",
        lambda v: (
            f"recompute_modules ({v.get('recompute_modules')}) says what selective recomputation reruns, but "
            f"recompute is {v.get('recompute')!r}: give recompute=selective, or leave recompute_modules out"
        ),
        "recompute_modules without recompute=selective",
        when="recompute_modules",
    ),
    Rule(
        ("recompute_modules", "workload"),
        (_reruns_mlp, _has_experts),
        lambda mlp, experts: mlp & experts,
        "recompute_modules",
        lambda v: (
            f"recompute_modules ({v.get('recompute_modules')}): mlp reruns a dense MLP, but the workload is a "
            "mixture of experts, whose MLPs are its experts (Megatron-Core's moe / moe_act modules, not priced "
            "yet); leave mlp out"
        ),
        "mlp recomputation on a mixture of experts",
        when="recompute_modules",
    ),
    _inert(
        "sequence_parallel", "tensor_parallel",
        "splits the activations of a tensor-parallel group along the sequence", "tensor_parallel > 1",
    ),
    _inert(
        "tensor_overlap", "tensor_parallel",
        "overlaps the tensor-parallel collectives with the products", "tensor_parallel > 1",
    ),
    _inert(
        "context_all_gather", "context_parallel",
        "gathers the keys and values of the other context-parallel ranks", "context_parallel > 1",
    ),
    _inert(
        "expert_overlap", "expert_parallel",
        "overlaps the expert all-to-alls with another micro-batch's compute",
        "expert_parallel > 1 (a mixture of experts spread over devices)",
    ),
    _inert(
        "hierarchical_dispatch", "expert_parallel",
        "routes the expert all-to-alls over the NICs once per node, then NVLink",
        "expert_parallel > 1 (a mixture of experts spread over devices)",
    ),
    *(
        _without("failure_rate", _positive_rate, needed, needed, _needs(needed, *example), f"a failure_rate and no {needed}")
        for needed, example in (
            ("checkpoint_bandwidth", ("2", "GB/s", " (per node)")),
            ("restart_time", ("10", "min")),
        )
    ),
)
"""Every rule between inputs, in the order they are checked."""


_CHECKED: Final = tuple((rule.when, rule) for rule in RULES)


def check_together(values: Mapping[str, object]) -> None:
    """Raise an :class:`InputError` located at its input for the first rule ``values`` break.

    ``values`` holds every input (the checked values of a scenario), read by subscript.
    """
    for when, rule in _CHECKED:
        if when is not None and values[when] is None:
            continue
        if rule.is_broken(values):
            raise InputError(
                rule.message(values), loc=(rule.loc,), type="rule", ctx={"fields": rule.fields}
            )
    for name in LAYOUT_FIELDS:  # check_layout_rules has nothing to check without a layout input
        if values[name] is not None:
            check_layout_rules(values)
            return


LAYOUT_FIELDS: Final = LAYOUT_INPUTS
"""The inputs that make a scenario a parallel layout (docs/parallelism.md) when any is given."""


def check_layout_rules(values: Mapping[str, object]) -> None:
    """The rules of a parallel layout, for one scenario (nothing when no layout input is given).

    A transformer workload (layers, hidden size, heads, sequence length);
    t p divides the devices; heads divisible by t; a layer per chunk (L >= p v);
    micro-batches (``accumulation_steps``) a multiple of p when interleaved (fewer
    than p is legal: the bubble dominates, a note says so); first/last stage layer
    counts leaving every stage a layer; the shard group dividing d and only with a ZeRO stage
    (:func:`mlsysim.physics.layout.check_layout`, whose one-line errors name
    both numbers and the fix). A sweep or a plan does not raise for these: the
    same rules (:func:`~mlsysim.physics.layout.layout_mask`) mark the layouts
    that break them as not fitting (``fits`` False, ``layout_valid`` False), so
    a plan drops them as infeasible.
    """
    get = values.get
    for name in LAYOUT_FIELDS:  # noqa: SIM110 - a plain loop: the path of every solve
        if get(name) is not None:
            break
    else:
        if get("pipeline_layout") is not None:  # never dropped in silence
            raise InputError(f"pipeline_layout ({get('pipeline_layout')}) places the layers on pipeline stages, "
                             "but no pipeline is given: give pipeline_parallel", loc=("pipeline_layout",))
        return
    from mlsysim.physics.layout import check_layout

    workload = values.get("workload")
    shape = {a: getattr(workload, a, None) for a in ("layers", "hidden_dim", "heads", "seq_len")}
    missing = [a for a, v in shape.items() if v is None]
    if missing:
        from mlsysim.engine.inputs.workload_figures import shape_gap

        gap = shape_gap(workload)
        raise InputError(
            f"a parallel layout needs a transformer's shape: {gap}" if gap else
            f"a parallel layout needs a transformer workload; {getattr(workload, 'name', workload)} has no "
            f"{', '.join(missing)}; leave {', '.join(LAYOUT_FIELDS)} out for the data-parallel model",
            loc=("tensor_parallel" if values.get("tensor_parallel") is not None else _first_given(values),),
        )
    if values.get("shard_group") is not None and not values.get("zero_stage"):
        raise InputError(
            f"shard_group ({values['shard_group']}) shards the ZeRO state, but zero_stage is 0; "
            "give zero_stage 1, 2 or 3 (3: FSDP/HSDP full shard), or leave shard_group out",
            loc=("shard_group",),
        )

    def count(name: str, default: int) -> int:
        value = values.get(name)
        return default if value is None else int(cast(int, value))

    chunks = count("pipeline_chunks", 1)
    text = values.get("pipeline_layout")
    if text is not None:
        chunks = _pipeline_layout_chunks(values, str(text), int(cast(int, shape["layers"])),
                                         count("pipeline_parallel", 1))
    try:
        check_layout(
            devices=count("devices_per_node", 1) * count("nodes", 1),
            tensor_parallel=count("tensor_parallel", 1),
            pipeline_parallel=count("pipeline_parallel", 1),
            heads=int(cast(int, shape["heads"])),
            layers=int(cast(int, shape["layers"])),
            micro_batches=count("accumulation_steps", 1),
            pipeline_chunks=chunks,
            custom_layout=text is not None,
            shard_group=count("shard_group", 0),
            first_stage_layers=_optional_count(values, "first_stage_layers"),
            last_stage_layers=_optional_count(values, "last_stage_layers"),
            context_parallel=count("context_parallel", 1),
            seq_len=int(cast(int, shape["seq_len"])),
            experts=int(getattr(workload, "experts", None) or 0),
            expert_parallel=count("expert_parallel", 1),
            expert_tensor_parallel=count("expert_tensor_parallel", 1),
        )
    except InputError as exc:
        raise InputError(exc.message, loc=(exc.field or "tensor_parallel",)) from None


def _pipeline_layout_chunks(values: Mapping[str, object], text: str, layers: int, p: int) -> int:
    """The chunks per rank of a custom pipeline layout, after its checks against the scenario; the uneven
    first and last stages are the layout's to say (both given: refused)."""
    from mlsysim.physics.pipeline_layout import check_pipeline_layout, parse_pipeline_layout

    for name in ("first_stage_layers", "last_stage_layers"):
        if values.get(name) is not None:
            raise InputError(f"{name} ({values[name]}) and pipeline_layout both place the layers; the layout "
                             f"says what each stage holds: leave {name} out", loc=(name,))
    given = values.get("pipeline_chunks")
    try:
        return check_pipeline_layout(parse_pipeline_layout(text), text, layers, p,
                                     None if given is None else int(cast(int, given)),
                                     int(getattr(values.get("workload"), "mtp_layers", None) or 0))
    except InputError as exc:
        raise InputError(exc.message, loc=(exc.field or "pipeline_layout",)) from None


def _optional_count(values: Mapping[str, object], name: str) -> int | None:
    value = values.get(name)
    return None if value is None else int(cast(int, value))


def _first_given(values: Mapping[str, object]) -> str:
    return next(name for name in LAYOUT_FIELDS if values.get(name) is not None)
