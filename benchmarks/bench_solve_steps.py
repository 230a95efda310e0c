"""Where one ``solve`` spends its time, step by step, timed inside the solve.

Run: ``python benchmarks/bench_solve_steps.py`` (a few seconds).

Replays the steps of ``DataParallelScaleOutModel.solve`` (``checked_inputs``
then ``solve_checked``) on the GPT-2 four-node layout with
``time.perf_counter_ns`` between them, 20,000 times, and prints the mean of
each step in microseconds. Timed this way each step pays what it pays inside
a real solve (the caches the other steps leave behind), which a loop over one
step alone does not show; the timer itself adds ~0.05 us per step. Then
prints the same two halves timed alone, for comparison.
"""

from __future__ import annotations

import time
import timeit

from mlsysim import Q_, Models
from mlsysim.engine.inputs import checking
from mlsysim.engine.inputs.checking import checked_inputs
from mlsysim.engine.inputs.derivation import plain_job, resolve, wants_derivation
from mlsysim.engine.inputs.fields import FIELDS, derived_numbers
from mlsysim.engine.inputs.rules import check_together
from mlsysim.engine.model.equations import evaluate
from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.engine.solvers.data_parallel import (
    check_finite,
    choices_of,
    constraint_trace,
    model_inputs,
    solve_checked,
)

GIVEN = {
    "workload": Models.Language.GPT2,
    "precision": "fp16",
    "step_time": Q_(1.8, "s"),
    "training_time": Q_(25, "hour"),
    "per_device_batch": 16,
    "devices_per_node": 8,
    "nodes": 4,
    "intra_bandwidth": Q_(450, "GB/s"),
    "inter_bandwidth": Q_(10, "Gbps"),
    "accumulation_steps": 1,
    "node_hour_rate": Q_(32, "USD/hour"),
}
STEPS = (
    "inputs over the defaults",
    "required inputs",
    "presets and derivations",
    "cross-field rules",
    "derived numbers",
    "Inputs and Choices",
    "evaluate",
    "finite check",
    "result object",
)


def one_solve(clock: list[int]) -> None:
    """The steps of ``checked_inputs`` and ``solve_checked`` (happy path), with a clock reading after each."""
    tick = time.perf_counter_ns
    clock.append(tick())
    values = dict(checking.DEFAULTS)
    numbers = dict(checking._DEFAULT_NUMBERS)
    given = {}
    for name, value in GIVEN.items():
        checked, number = FIELDS[name].normalize(value)
        given[name] = checked
        if number is not None:
            numbers[name] = number
    values.update(given)
    clock.append(tick())
    assert not [name for name in checking._REQUIRED if values[name] is None]
    clock.append(tick())
    if wants_derivation(values):
        job = resolve(values, {}, numbers)
        for name in job.origins:
            values[name], number = FIELDS[name].normalize(values[name])
            if number is not None:
                numbers[name] = number
    else:
        job = plain_job(values)
    clock.append(tick())
    check_together(values)
    clock.append(tick())
    numbers.update(derived_numbers(values))
    clock.append(tick())
    x = model_inputs(values, numbers)
    c = choices_of(values["assumptions"], values["zero_stage"])  # type: ignore[arg-type]
    clock.append(tick())
    figures = evaluate(x, c)
    clock.append(tick())
    check_finite(figures)
    clock.append(tick())
    DataParallelScaleOutResult(figures, values, c, x, trace=constraint_trace, job=job)
    clock.append(tick())


def main() -> None:
    n = 20_000
    totals = [0] * len(STEPS)
    for _ in range(n):
        clock: list[int] = []
        one_solve(clock)
        for i in range(len(STEPS)):
            totals[i] += clock[i + 1] - clock[i]
    for label, total in zip(STEPS, totals, strict=True):
        print(f"{label:<26} {total / n / 1e3:6.2f} us")
    print(f"{'sum':<26} {sum(totals) / n / 1e3:6.2f} us")

    values, numbers, job, _ = checked_inputs(GIVEN, "bench")

    def best(fn: object) -> float:
        runs = timeit.repeat(fn, number=2000, repeat=7, timer=time.process_time)  # type: ignore[arg-type]
        return min(runs) / 2000 * 1e6

    print(f"{'checked_inputs alone':<26} {best(lambda: checked_inputs(GIVEN, 'bench')):6.2f} us")
    print(f"{'solve_checked alone':<26} {best(lambda: solve_checked(values, numbers, job)):6.2f} us")
    both = best(lambda: solve_checked(*checked_inputs(GIVEN, "bench")[:3]))
    print(f"{'both, in sequence':<26} {both:6.2f} us")


if __name__ == "__main__":
    main()
