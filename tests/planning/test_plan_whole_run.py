"""Plans under the whole run's limits: emissions, energy, goodput (docs/whole_run.md)."""

import numpy as np
import pytest

from mlsysim import Q_, InputError, Scenarios, plan, sweep
from mlsysim.planning.plan import InfeasiblePlanError

BASE = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(
    device_power=Q_(700, "W"),
    carbon_intensity=Q_(400, "g/kWh"),
    failure_rate=Q_(1e-3, "failures/device/hour"),
    checkpoint_bandwidth=Q_(1, "GB/s"),
    restart_time=Q_(30, "min"),
)
AXES = {"nodes": list(range(1, 33)), "inter_bandwidth": [Q_(25, "Gbps"), Q_(400, "Gbps")]}


def _brute_best(table, mask):
    # with failures modeled a plan ranks by the whole run: its cost and wall clock (issue 30)
    cost = np.where(mask, table["total_cost"], np.inf)
    time = np.where(mask, table["wall_clock_time"], np.inf)
    order = np.lexsort((time, cost))
    return int(order[0])


@pytest.mark.parametrize(
    ("limits", "column", "at_most", "bound"),
    [
        ({"max_emissions": Q_(9, "kg")}, "emissions", True, 0.009),
        ({"max_energy": Q_(20, "kWh")}, "energy", True, 0.02),
        ({"min_goodput": 0.9}, "goodput", False, 0.9),
    ],
)
def test_the_best_layout_under_a_whole_run_limit_is_the_brute_force_one(
    limits, column, at_most, bound
):
    table = sweep(BASE, **AXES)
    values = np.asarray(table[column], dtype=float)
    mask = (values <= bound) if at_most else (values >= bound)
    assert 0 < mask.sum() < len(mask)  # the limit binds
    p = plan(BASE, objective="cost", **limits, **AXES)
    feasible = mask & np.asarray(table["fits"], dtype=bool)
    i = _brute_best(table, feasible)
    assert np.array_equal(p.feasible, feasible)  # the materialised table's masks agree
    assert p.best.nodes == table["nodes"][i]
    assert p.excluded[next(iter(limits))] == int((~mask).sum())
    assert next(iter(limits)).replace("_", " ").split()[1] in p.constraints.describe()


def test_a_limit_on_a_figure_not_modeled_excludes_every_layout():
    with pytest.raises(InfeasiblePlanError):
        plan(Scenarios.Gpt2DataParallelFourNodes10GbE, max_emissions=Q_(50, "t"), nodes=[1, 2])


def test_a_bad_limit_is_refused_naming_it():
    with pytest.raises(InputError) as info:
        plan(BASE, max_emissions=Q_(50, "MWh"), nodes=[1, 2])
    assert "max_emissions" in str(info.value)
