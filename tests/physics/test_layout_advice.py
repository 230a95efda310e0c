"""A layout error's advice: every value it suggests obeys every rule at once (no advice that loops)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.core.exceptions import InputError
from mlsysim.physics.layout import check_layout, layout_mask
from mlsysim.physics.layout_advice import ADJUSTABLE


def suggested(message: str) -> list[dict[str, int]]:
    """The changes a message suggests, read back from its words ("try A in 1, 2 or B 3";
    "try A 1 with B 2, or A 1 with B 4")."""
    tail = message.split("try ", 1)[1]
    if " with " in tail:
        return [
            {name: int(value) for name, value in (part.split() for part in pair.split(" with "))}
            for pair in tail.split(", or ")
        ]
    found = []
    for part in tail.split(" or "):
        name, rest = part.split(" ", 1)
        values = rest.removeprefix("in ").split(", ")
        found += [{name: int(v)} for v in values]
    return found


def obeys_every_rule(layout: dict, change: dict[str, int]) -> bool:
    changed = {**layout, **{ADJUSTABLE[name]: value for name, value in change.items()}}
    try:
        check_layout(**changed)
    except InputError:
        return False
    return bool(layout_mask(**changed))


LAYOUTS = dict(
    devices=st.sampled_from([1, 8, 16, 40, 64, 96, 512]),
    tensor_parallel=st.integers(1, 40),
    pipeline_parallel=st.integers(1, 20),
    heads=st.sampled_from([12, 25, 28, 64, 96]),
    layers=st.sampled_from([12, 32, 48, 80, 96]),
    micro_batches=st.integers(1, 40),
    pipeline_chunks=st.integers(1, 6),
    shard_group=st.sampled_from([0, 1, 2, 3, 5, 8]),
)


@settings(max_examples=300, deadline=None)
@given(**LAYOUTS)
def test_each_value_a_layout_error_suggests_is_accepted(**layout):
    try:
        check_layout(**layout)
        return
    except InputError as caught:
        message = str(caught)
    assert "\n" not in message and not message.rstrip().endswith("would")
    changes = suggested(message)
    assert changes, message
    for change in changes:
        assert obeys_every_rule(layout, change), (message, change)


GPT2_ON_ONE_NODE = dict(devices=8, pipeline_parallel=1, heads=25, layers=48, micro_batches=1)


@pytest.mark.parametrize("t", [2, 3, 5, 6, 25])
def test_gpt2_advice_on_tensor_parallel_does_not_loop(t):
    """GPT-2 (25 heads) on an 8-GPU node: 5 suggested "1, 2, 4, 8", 2 then "1, 5, 25",
    25 then the divisors of 8 again (issue 30); now only 1 obeys both rules."""
    with pytest.raises(InputError) as caught:
        check_layout(**GPT2_ON_ONE_NODE, tensor_parallel=t)
    assert suggested(str(caught.value)) == [{"tensor_parallel": 1}]


def test_the_advice_names_values_of_another_input_when_the_named_one_cannot_fix_it():
    layout = dict(devices=16, tensor_parallel=2, pipeline_parallel=5, heads=25, layers=48, micro_batches=8)
    with pytest.raises(InputError) as caught:
        check_layout(**layout)
    message = str(caught.value)
    assert re.search(r"no single change obeys every rule; try tensor_parallel 1 with pipeline_parallel \d", message)
    for change in suggested(message):
        assert obeys_every_rule(layout, change)
