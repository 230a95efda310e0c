"""Brute force for the sweep tests: the scalar solve, one layout at a time."""

import itertools
import math

import numpy as np

from mlsysim.engine.results import field_unit
from mlsysim.planning.table import row_scenario


def scalar_value(result, field):
    """A scalar result field as the sweep table stores it (NaN/True for the optional figures)."""
    value = getattr(result, field)
    if hasattr(value, "magnitude"):
        assert f"{value.units:D}" == field_unit(field)
        return float(value.magnitude)
    if value is None:
        return True if field == "fits" else math.nan
    return value


def assert_same(expected, got, *, rel=1e-12, where=""):
    if isinstance(expected, (str, bool)):
        assert expected == got, where
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got), where
    else:
        assert got == expected or abs(got - expected) <= rel * abs(expected), (
            f"{where}: {got!r} != {expected!r}"
        )


def brute_force(base, axes):
    """The scenario of every combination, in itertools.product order.

    A combination where a switch does nothing (``sequence_parallel=1`` on a row at ``tensor_parallel=1``) is
    refused by the scalar solve but is a row of a sweep that gives the switch elsewhere (the rule's ``inert``):
    its scalar solve is the row with the switch off."""
    names = list(axes)
    return [variant_of_row(base, dict(zip(names, combo, strict=True))) for combo in itertools.product(*axes.values())]


variant_of_row = row_scenario  # the product's rule for a row that gives a switch doing nothing there


def assert_table_matches_scalar(table, base, axes, *, rel=1e-12):
    scenarios = brute_force(base, axes)
    assert len(table) == len(scenarios)
    result_columns = [c for c in table.columns if c not in {a.column for a in table.axes}]
    for i, scenario in enumerate(scenarios):
        result = scenario.result
        for column in result_columns:
            got = table[column][i]
            got = got.item() if isinstance(got, np.generic) else got
            assert_same(scalar_value(result, column), got, rel=rel, where=f"row {i} {column}")
