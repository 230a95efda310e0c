"""The clock a compute-bound kernel sustains under a power limit.

A GPU's firmware lowers the SM clock until the board's power stays under its limit. A
large matrix product keeps every tensor core busy, so at a limit below the power it needs
its rate falls with the clock. Dynamic power grows with the clock f times the square of
the voltage, and the voltage with the clock over the DVFS range (P ~ f^3 at the top of
the range, ~ f where the voltage is at its floor); with the board's static and memory
power added, measured boards sit between. One exponent alpha summarises it:

    s(P) = min(1, (P / P_ref) ** (1 / alpha))

the fraction of the rate reached at ``P_ref`` (the power limit the kernel's ceiling was
measured at: the device's default limit, its TDP) that is sustained at a limit P.

Evidence (see ``mlsysim/data/kernel_fits/matmul.json`` for the fitted value and its
rows): FBGEMM's H100 benchmark at a 500 W limit (pull request #2546: bf16 8192^3 at
585 TFLOP/s) against the same products at the default 700 W (OpenXLA's and the MAMF
tables: 760-795 TFLOP/s) gives s(500 W) ~ 0.75, alpha ~ 1.2. Horace He, "Strangely,
Matrix Multiplications on GPUs Run Faster When Given 'Predictable' Data!" (2024) shows
the mechanism on A100 and H100: the same product runs faster when its data draw less
power. Above ``P_ref`` no gain is claimed (s = 1): the published maxima show little
headroom (MAMF: GB200 at 1,200 W 4% above B200 at 1,000 W in bf16 TFLOP/s; GH200 at
900 W 4% above H100 at 700 W), so a higher limit than the measured one is priced at the
measured rate. The evidence is thin (one limit on one GPU); alpha is bounded to [1, 3],
the two ends of the physics above.
"""

from __future__ import annotations

from mlsysim.physics._array import Num, minimum

EXPONENT_BOUNDS = (1.0, 3.0)
"""alpha's physical range: 1 (power proportional to clock, voltage at its floor) to 3 (voltage proportional to clock)."""


def sustained_fraction(power_limit: Num, reference_power: Num, exponent: Num) -> Num:
    """s = min(1, (P / P_ref) ** (1 / alpha)): the share of the reference rate sustained at ``power_limit``.

    >>> round(float(sustained_fraction(500.0, 700.0, 1.0)), 3)
    0.714
    >>> float(sustained_fraction(900.0, 700.0, 1.2))
    1.0
    """
    return minimum(1.0, (power_limit / reference_power) ** (1.0 / exponent))
