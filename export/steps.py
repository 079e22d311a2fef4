"""The step axis of training curves: linear, or a symmetric log scale where the checkpoints are log-spaced.

Log-spaced checkpoints (the finetuning default ``schedule = { kind = "log" }``,
Pythia's 0, 1, 2, 4, ..., 512, 1000, ...) crowd into a sliver at the left of a
linear axis, where most of the learning happens. ``auto`` picks a log axis for
them: the nonzero steps span at least a decade and at least a third of them lie
in the first tenth of the steps' range, where a linear axis squeezes them. The
log axis is symmetric log (``symlog``), linear from 0 to the first nonzero step,
so step 0 is shown.

Examples
--------
>>> step_scale([0, 1, 2, 3, 5, 9, 16, 28, 48])  # the demo's log schedule of 9 checkpoints over 48 steps
'log'
>>> step_scale([0, 6, 12, 18, 24, 30, 36, 42, 48])  # an even one
'linear'
>>> step_scale([0, 100, 200], "log"), linear_threshold([0, 100, 200])
('log', 100.0)
"""

from __future__ import annotations

from collections.abc import Iterable

from ood_store._errors import AnalysisError

#: What ``x_scale`` may be.
X_SCALES = ("auto", "linear", "log")
LINSCALE = 0.3  # decades the linear part, from 0 to the first nonzero step, takes on a symlog axis


def check_x_scale(x_scale: str) -> str:
    """``x_scale`` if it is one of :data:`X_SCALES`, else an AnalysisError naming the parameter."""
    if x_scale not in X_SCALES:
        raise AnalysisError(f"must be one of {', '.join(X_SCALES)}, not {x_scale!r}", parameter="x_scale")
    return x_scale


def is_log_spaced(steps: Iterable[float]) -> bool:
    """Whether checkpoints at ``steps`` are log-spaced (see the module's docstring for the rule)."""
    positive = sorted({float(s) for s in steps if s is not None and s > 0})
    if len(positive) < 4 or positive[-1] < 10 * positive[0]:
        return False
    early = sum(s <= positive[-1] / 10 for s in positive)
    return 3 * early >= len(positive)


def step_scale(steps: Iterable[float], x_scale: str = "auto") -> str:
    """``linear`` or ``log``: what ``x_scale`` asks for, ``auto`` decided by :func:`is_log_spaced`."""
    check_x_scale(x_scale)
    if x_scale != "auto":
        return x_scale
    return "log" if is_log_spaced(steps) else "linear"


def linear_threshold(steps: Iterable[float]) -> float:
    """The symlog axis' linear threshold: the first nonzero step (1 where there is none)."""
    positive = [float(s) for s in steps if s is not None and s > 0]
    return min(positive) if positive else 1.0


def set_step_axis(ax, steps: Iterable[float], x_scale: str = "auto") -> str:
    """Give ``ax`` the step axis that ``x_scale`` asks for (symlog for ``log``); the scale chosen."""
    steps = list(steps)
    scale = step_scale(steps, x_scale)
    if scale == "log":
        ax.set_xscale("symlog", linthresh=linear_threshold(steps), linscale=LINSCALE)
    return scale
