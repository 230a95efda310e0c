"""Messages in the caller's language: examples in the syntax the value came in and of the
field's own dimension, closest-match suggestions, short lists of the nearest names."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim import Q_, Scenarios
from mlsysim.cli import main
from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.core.suggest import (
    SYNTAX,
    caller_syntax,
    closest,
    example,
    nearest_list,
    typed_names,
    unknown,
)
from mlsysim.core.units import SPELLINGS, parse_quantity

ONE = "Gpt2DataParallelOneNode"


def cli_error(capsys, *argv):
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mlsysim: error: ")
    return err


def test_the_example_follows_the_callers_syntax():
    assert SYNTAX.get() == "python"
    assert example("100", "Gbps") == "Q_(100, 'Gbps')"
    with caller_syntax("text"):
        assert example("100", "Gbps") == '"100 Gbps"'
        with caller_syntax("form"):
            assert example("100", "Gbps") == "100 Gbps"
        assert SYNTAX.get() == "text"
    assert SYNTAX.get() == "python"


@pytest.mark.parametrize(
    "argv, wanted, unwanted",
    [
        (["--set", "inter_bandwidth=100"], '(e.g. "450 GB/s" or "10 Gbps")', "Q_("),
        (["--set", "step_time=fast"], 'a time (e.g. "1.8 s")', "Gbps"),
        (["--set", "node_hour_rate=32"], '(e.g. "32 USD/hour")', "Q_("),
    ],
)
def test_cli_examples_are_text_as_typed_of_the_fields_dimension(capsys, argv, wanted, unwanted):
    err = cli_error(capsys, "run", ONE, *argv)
    assert wanted in err and unwanted not in err


@pytest.mark.parametrize("deadline", ["soon", "1.5"])
def test_a_bad_deadline_gets_a_time_example_in_cli_syntax(capsys, deadline):
    err = cli_error(capsys, "plan", ONE, "--axis", "nodes=1..2", "--deadline", deadline)
    assert '--deadline: expected a time (e.g. "1.8 s")' in err
    assert "Gbps" not in err and "Q_(" not in err


def test_python_keeps_python_examples():
    with pytest.raises(InputError, match=r"expected a time \(e\.g\. Q_\(1\.8, 's'\)\)"):
        Scenarios.Gpt2DataParallelOneNode.variant(step_time=3)
    with pytest.raises(InputError, match=r"expected a time \(e\.g\. Q_\(1\.8, 's'\)\), got 'soon'"):
        parse_quantity("soon", "time")


def test_an_unknown_unit_suggests_the_closest_and_lists_a_few(capsys):
    err = cli_error(capsys, "run", ONE, "--set", "nodes=2", "--set", "inter_bandwidth=10 Gbs")
    assert "did you mean 'Gbps'" in err
    assert "accepted spellings for a bandwidth: Gbps," in err
    assert f"and {len(SPELLINGS['bandwidth']) - 6} more" in err
    assert "or name a fabric" not in err  # a number with a unit is not a fabric's name
    assert len(err) < 400


def test_registry_names_as_typed_with_a_suggestion(capsys):
    err = cli_error(capsys, "run", ONE, "--set", "accelerator=H1000")
    assert "did you mean 'H100'?" in err and "Cloud." not in err
    err = cli_error(capsys, "run", ONE, "--set", "workload=Lama2_7B")
    assert "did you mean 'Llama2_7B'" in err and "Language." not in err and "more" in err


def test_unknown_fields_scenarios_and_groups_suggest_the_closest(capsys):
    assert "did you mean 'node' or 'nodes'?" in cli_error(capsys, "run", ONE, "--set", "nodez=3")
    assert f"did you mean '{ONE}'?" in cli_error(capsys, "run", "Gpt2DataParalelOneNode")
    assert "did you mean 'fabrics'?" in cli_error(capsys, "registry", "fabricz")
    with pytest.raises(UnknownNameError, match=f"did you mean '{ONE}'"):
        Scenarios.get("gpt2dataparallelonenod")


def test_a_far_off_name_gets_no_suggestion_but_the_nearest_few():
    message = unknown("zzzz", "scenario", [f"name{i}" for i in range(20)])
    assert "did you mean" not in message and message.endswith("... and 14 more")


def test_typed_names_keep_the_path_only_where_a_leaf_repeats():
    assert typed_names(["A.x", "B.y", "C.x"]) == ["A.x", "y", "C.x"]


@given(
    st.text(min_size=0, max_size=12),
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=30, unique=True),
    st.integers(1, 10),
)
def test_nearest_list_shows_at_most_limit_names_and_counts_the_rest(word, names, limit):
    text = nearest_list(word, names, limit=limit)
    shown = min(limit, len(names))
    if len(names) > limit + 2:
        assert text.endswith(f"... and {len(names) - limit} more")
    else:
        assert "more" not in text or any("more" in n for n in names)
    assert closest(word, names, n=shown, cutoff=0.0)[0] in text
    assert len(closest(word, names)) <= 3


def test_the_ui_writes_examples_as_a_form_field_takes_them():
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from mlsysim.ui.app import create_app

    answer = TestClient(create_app()).get(f"/api/evaluate?scenario={ONE}&step_time=fast")
    assert answer.status_code == 422
    assert "a time (e.g. 1.8 s)" in answer.json()["error"]


def test_quantities_still_take_their_spellings():
    assert parse_quantity("10 Gbps", "bandwidth") == Q_(10, "Gbps")
    assert parse_quantity("10 gbit/s", "bandwidth") == Q_(10, "Gbps")  # no B to mistake: folded
    with pytest.raises(InputError, match="write Gbps .* or GBps"):  # gbps: Gbps or GBps (issue 30)
        parse_quantity("10 gbps", "bandwidth")
