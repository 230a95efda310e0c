"""The acceptance check of the measured collectives (issue 38, items 1 and 4): the published model-parallel runs
(``mlsysim validate parallel``) predicted with every collective priced alpha-beta at the links' rates (the default,
``Assumptions.collectives = "links"``) and by the measured size curves (``"measured"``), each with its own
in-training ceilings fitted, side by side: the held-out median (each family left out) and the in-sample one,
overall and per family, and the rule the switch's default follows (adopt only if the held-out median stays at most
7.6% and no family's held-out median degrades by more than 2 points).

Run:

    python benchmarks/bench_measured_collectives.py

Prints the comparison (about a minute); not a timed test.
"""

from __future__ import annotations

from mlsysim import Assumptions
from mlsysim.validation.parallel import by_family, summarize, validation

HELD_OUT_LIMIT = 0.076
"""The held-out median the measured collectives must not exceed to be adopted."""
FAMILY_LIMIT = 0.02
"""The most a family's held-out median may degrade."""


def main() -> None:
    links, curves = validation(Assumptions()), validation(Assumptions(collectives="measured"))
    rows = [("all runs", summarize(links.held_out), summarize(curves.held_out), summarize(links.in_sample),
             summarize(curves.in_sample))]
    held_links, held_curves = by_family(links.held_out), by_family(curves.held_out)
    in_links, in_curves = by_family(links.in_sample), by_family(curves.in_sample)
    rows += [(family, held_links[family], held_curves[family], in_links[family], in_curves[family])
             for family in held_links]
    print(f"{'':46s} {'n':>3s}   held out: links  measured   in sample: links  measured")
    worse = []
    for name, a, b, c, d in rows:
        print(f"{name:46s} {a.count:3d}   {a.median:14.1%} {b.median:9.1%}   {c.median:16.1%} {d.median:9.1%}")
        if name != "all runs" and b.median - a.median > FAMILY_LIMIT:
            worse.append(f"{name} ({a.median:.1%} -> {b.median:.1%})")
    overall = rows[0][2].median
    adopt = overall <= HELD_OUT_LIMIT and not worse
    print(f"\nheld-out median with the measured collectives: {overall:.1%} (limit {HELD_OUT_LIMIT:.1%}); families "
          f"worse by more than {FAMILY_LIMIT:.0%} points: {', '.join(worse) or 'none'}")
    print(f"decision: {'adopt (measured by default)' if adopt else 'keep links by default (measured: an assumption)'}")


if __name__ == "__main__":
    main()
