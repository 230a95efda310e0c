"""Limits that fail on a regression only (issue 29): an improvement prints a note.

A figure of the model held to a limit fails the test when it gets worse than the limit;
when it gets better by more than ``margin`` the test passes and warns
(:class:`ImprovementNote`, shown in pytest's warnings summary), so the limit can be
tightened in the same change that earned it, never as a failure of an improvement.
"""

import warnings


class ImprovementNote(UserWarning):
    """A figure better than its limit by more than the margin: tighten the limit."""


def hold(name: str, reached: float, limit: float, *, higher_is_better: bool = False,
         margin: float = 0.002) -> None:
    """Fail if ``reached`` is worse than ``limit``; warn if it is better by more than
    ``margin`` (fractions: 0.002 is 0.2 points of efficiency)."""
    if higher_is_better:
        assert reached >= limit, f"{name}: {reached:.4f} fell below its limit {limit:.4f}"
        better = reached - limit
    else:
        assert reached <= limit, f"{name}: {reached:.4f} rose above its limit {limit:.4f}"
        better = limit - reached
    if better > margin:
        warnings.warn(
            f"{name}: {reached:.4f} is better than its limit {limit:.4f} by {better:.4f}; "
            "tighten the limit (docs/model.md states the figure)",
            ImprovementNote,
            stacklevel=2,
        )
