"""``mlsysim sweep --intervals LEVEL``: interval columns equal each row's result.interval."""

import csv

import pytest

from mlsysim import Q_, Assumptions, Scenarios
from mlsysim.cli import main
from mlsysim.planning.sweep import sweep


def test_interval_columns_equal_the_results_intervals(capsys, tmp_path):
    out = tmp_path / "rows.csv"
    code = main([
        "sweep", "Gpt2DataParallelOneNode", "--set", "assumptions=realistic",
        "--set", "nics_per_node=8", "--set", "inter_bandwidth=100 Gbps",
        "--set", "node_hour_rate=32 USD/hour", "--axis", "nodes=1,2,4,16",
        "--intervals", "0.8", "--csv", str(out),
    ])
    capsys.readouterr()
    assert code == 0
    rows = list(csv.DictReader(out.open()))
    base = Scenarios.Gpt2DataParallelOneNode.variant(
        assumptions=Assumptions.realistic(), nics_per_node=8,
        inter_bandwidth=Q_(100, "Gbps"), node_hour_rate=Q_(32, "USD/hour"),
    )
    for row in rows:
        r = base.variant(nodes=int(row["nodes"])).result
        for name, column in (("efficiency", "efficiency"), ("cost", "cost [USD]")):
            low, high = r.interval(name)
            prefix = column.replace(" [USD]", "")
            unit = " [USD]" if name == "cost" else ""
            assert float(row[f"{prefix}_low{unit}"]) == pytest.approx(low, rel=1e-9)
            assert float(row[f"{prefix}_high{unit}"]) == pytest.approx(high, rel=1e-9)
        low, high = r.interval("training_time")
        assert float(row["training_time_low [hour]"]) == pytest.approx(low.to("hour").magnitude)


def test_intervals_need_non_seed_assumptions_and_a_level(capsys):
    code = main(["sweep", "Gpt2DataParallelOneNode", "--axis", "nodes=1,2",
                 "--set", "inter_bandwidth=100 Gbps", "--intervals", "0.8"])
    assert code == 2 and "seed model" in capsys.readouterr().err
    code = main(["sweep", "Gpt2DataParallelOneNode", "--set", "assumptions=realistic",
                 "--axis", "nodes=1,2", "--set", "inter_bandwidth=100 Gbps", "--intervals", "1.5"])
    assert code == 2 and "level" in capsys.readouterr().err


def test_with_columns_refuses_a_taken_name_or_a_wrong_length():
    table = sweep(Scenarios.Gpt2DataParallelOneNode, devices_per_node=[1, 2])
    with pytest.raises(ValueError):
        table.with_columns({"efficiency": table["efficiency"]}, {})
    with pytest.raises(ValueError):
        table.with_columns({"x": table["efficiency"][:1]}, {})
    assert list(table.with_columns({"x": table["efficiency"]}, {"x": None})["x"]) == list(
        table["efficiency"]
    )
