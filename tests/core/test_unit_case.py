"""A unit's case carries its meaning (issue 30, item 2): B a byte, b a bit, M mega, m milli.

``--set "inter_bandwidth=100 GBps"`` was read as 100 Gbps (a spelling folded by
case); Python's ``Q_(100, "GBps")`` raised. Now a spelling is read as typed
where its case says what it is, folded only where no case could change its
meaning, and refused naming each reading where it could; Python, text inputs and
the command line read every spelling the same way.
"""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim import Q_, Scenarios
from mlsysim.cli import main
from mlsysim.core.exceptions import UnitsError
from mlsysim.core.units import KINDS, SPELLINGS, parse_quantity, parse_unit, ureg

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
PORT_SPEEDS = ("G", "GbE", "T", "TbE")  # 400G is 400 Gb/s: text only (not pint units)
SPELLED = [(kind, s) for kind, names in SPELLINGS.items() for s in names if s not in PORT_SPEEDS]


def _same(a, b) -> bool:
    """Two units mean the same: equal dimension and size."""
    one, other = Q_(1.0, a), Q_(1.0, b)
    return one.dimensionality == other.dimensionality and one.to(b).magnitude == pytest.approx(1.0)


def _case_variant(text: str, mask: list[bool]) -> str:
    flips = mask + [False] * len(text)
    return "".join(ch.swapcase() if flip else ch for ch, flip in zip(text, flips, strict=False))


def _efficiency(capsys, bandwidth: str) -> float:
    assert main(["run", FOUR.name, "--set", f"inter_bandwidth={bandwidth}", "--json"]) == 0
    return float(json.loads(capsys.readouterr().out)["result"]["efficiency"])


def test_gbps_with_a_capital_b_is_gigabytes_on_the_command_line(capsys):
    # 100 GB/s = 800 Gb/s: efficiency 96.3 % (before: read as 100 Gb/s, 79.1 %)
    assert _efficiency(capsys, "100 GBps") == pytest.approx(_efficiency(capsys, "100 GB/s"), rel=1e-12)
    assert _efficiency(capsys, "100 GBps") == pytest.approx(0.962674, abs=1e-6)
    assert _efficiency(capsys, "100 Gbps") == pytest.approx(0.790630, abs=1e-6)


def test_python_reads_gbps_with_a_capital_b_as_gigabytes():
    assert Q_(100, "GBps").to("Gbps").magnitude == pytest.approx(800)
    assert Q_("100 MBps").to("MB/s").magnitude == pytest.approx(100)
    scenario = FOUR.variant(inter_bandwidth="100 GBps")
    assert scenario.result.efficiency == FOUR.variant(inter_bandwidth=Q_(100, "GBps")).result.efficiency
    assert scenario.result.efficiency == pytest.approx(0.962674, abs=1e-6)


@pytest.mark.parametrize(
    ("text", "readings"),
    [("gbps", ("Gbps", "GBps")), ("GBPS", ("Gbps", "GBps")), ("gb", ("GB", "Gb")),
     ("kb", ("kB", "Kb")), ("mw", ("mW", "MW")), ("GB/S", ("GB/s", "Gb/s"))],
)  # fmt: skip
def test_a_spelling_whose_case_says_nothing_is_refused_naming_each_reading(text, readings):
    with pytest.raises(UnitsError, match="ambiguous") as info:
        parse_unit(text, None)
    for reading in readings:
        assert f"{reading} (" in str(info.value)


def test_a_refused_spelling_is_one_line_with_status_2_on_the_command_line(capsys):
    assert main(["run", FOUR.name, "--set", "inter_bandwidth=100 gbps"]) == 2
    out, err = capsys.readouterr()
    assert "write Gbps (1 Gbps = 125 MB/s) or GBps (1 GBps = 1 GB/s)" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "kind", "means"),
    [("gB/s", "bandwidth", "GB/s"), ("GBit/s", "bandwidth", None), ("mW", "power", "mW"),
     ("MIN", "time", "min"), ("usd/HOUR", "money_rate", "USD/hour"), ("kbps", "bandwidth", "Kbps"),
     ("tflop/s", "compute_rate", "Tflop/s"), ("KIB", "data", "KiB")],
)  # fmt: skip
def test_case_is_folded_only_where_it_cannot_change_the_meaning(text, kind, means):
    if means is None:  # GBit/s: a capital B says byte, "it" says bit: no spelling fits
        with pytest.raises(UnitsError):
            parse_unit(text, kind)
    else:
        assert _same(parse_unit(text, kind), ureg.Unit(means))


@pytest.mark.parametrize(("kind", "spelling"), SPELLED)
def test_every_spelling_means_in_text_what_it_means_in_python(kind, spelling):
    assert _same(parse_unit(spelling, kind), ureg.Unit(spelling))
    assert ureg.Unit(spelling).dimensionality == KINDS[kind][0].dimensionality  # (kt was a knot)


@given(st.sampled_from(SPELLED), st.lists(st.booleans(), min_size=20, max_size=20))
def test_any_case_of_any_spelling_is_read_as_its_case_says_or_refused(spelled, mask):
    kind, spelling = spelled
    text = _case_variant(spelling, mask)
    try:
        got = parse_quantity(f"1 {text}", kind).units  # the kind's dimension checked
    except UnitsError as exc:
        message = str(exc)
        if "ambiguous" in message:  # at least two readings of different meaning are named
            named = [s for k, names in SPELLINGS.items() for s in names if f" {s} (" in message]
            assert len({Q_(1.0, s).to_base_units().magnitude for s in named} | {0}) >= 2
        return
    assert got.dimensionality == KINDS[kind][0].dimensionality
    try:
        typed = ureg.Unit(text)
    except Exception:  # pint does not know it as typed: a fold of the case
        typed = None
    lower = text.lower()
    if typed is not None and typed.dimensionality == got.dimensionality:
        assert _same(got, typed)  # pint, as typed in Python, means the same
    if text in SPELLINGS[kind]:
        return  # a spelling as listed: the parametrized test above
    one_case = text == text.lower() or text == text.upper()
    folds = [s for s in SPELLINGS[kind] if s.lower() == lower and s not in PORT_SPEEDS]
    if one_case:  # the case says nothing: every spelling it could be means the same
        assert all(_same(got, ureg.Unit(s)) for s in folds)
    elif typed is None and folds:  # mixed case: B and b kept as typed
        marks = [ch for ch in text if ch in "bB"]
        assert any(
            _same(got, ureg.Unit(s)) and [ch for ch in s if ch in "bB"] == marks for s in folds
        )


@pytest.mark.parametrize(("text", "expected"), [("0GBE", "0 Gbit/s"), ("3 gbe", "3 Gbit/s"), ("2 TBE", "2 Tbit/s")])
def test_a_port_speed_in_any_case_reads_without_a_kind(text, expected):
    """Found by the fuzz test: with no kind, folding the case of 'GBE' met the spelling GbE, which pint does not
    know; a port speed is bits per second whatever the kind."""
    assert parse_quantity(text) == parse_quantity(expected)
