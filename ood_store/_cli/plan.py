"""``ood-store plan``: how many seeds and checkpoints a study needs, by simulating it (and ``plot power``)."""

from __future__ import annotations

import click

from ood_store._analysis.compare import ADJUST_PAIRS, DEFAULT_ADJUST_PAIRS, DEFAULT_TEST
from ood_store._analysis.meta import TESTS
from ood_store._analysis.power import PowerAnalysis, power_analysis
from ood_store._analysis.residuals import GAM_DF, GAM_MIN_DF, RESIDUALIZERS, SMOOTHING
from ood_store._analysis.simulate import AR1_CHECKPOINTS, SCHEDULES, Analysis, Curves
from ood_store._cli.analyze import shown
from ood_store._cli.options import FILE, bundle, choice
from ood_store._cli.output import emit, output_options, write_figure


class Integers(click.ParamType):
    """A list of integers: ``2,3,5,8``, a range ``2:10`` (both ends included), or both (``2:5,8``)."""

    name = "integers"

    def __init__(self, minimum: int):
        self.minimum = minimum

    def convert(self, value, param, ctx):
        if isinstance(value, list | tuple):
            return value
        out: list[int] = []
        try:
            for part in str(value).split(","):
                first, sep, last = part.strip().partition(":")
                out.extend(range(int(first), int(last) + 1) if sep else [int(first)])
        except ValueError:
            self.fail(f"expected integers such as 2,3,5 or a range 2:10, not {value!r}", param, ctx)
        if not out or min(out) < self.minimum:
            self.fail(f"each must be at least {self.minimum}: {value!r}", param, ctx)
        return sorted(set(out))


class Ar1(click.ParamType):
    """``PHI`` or ``PHI@N``: lag-1 autocorrelation between neighbours of N evenly spaced checkpoints."""

    name = "ar1"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        phi, _, at = str(value).partition("@")
        try:
            pair = (float(phi), int(at) if at else AR1_CHECKPOINTS)
        except ValueError:
            self.fail(f"expected PHI or PHI@N (0.6, 0.6@24), not {value!r}", param, ctx)
        if not 0 <= pair[0] < 1 or pair[1] < 2:
            self.fail(f"PHI must be at least 0 and below 1, N at least 2: {value!r}", param, ctx)
        return pair


def _floats(text: str | None, count: int, flag: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, not {text!r}", param_hint=flag) from None
    if len(values) == 1:
        values = values * count
    if len(values) != count:
        raise click.BadParameter(f"one value, or {count}", param_hint=flag)
    return values


def _at_least(flag: str, minimum: int, default: int, help: str):  # noqa: A002 - click's name
    """An integer option of at least ``minimum``, its default shown."""
    return click.option(flag, type=click.IntRange(min=minimum), default=default, show_default=True, help=help)


plan_options = bundle(
    click.option(
        "--effect",
        "effects",
        multiple=True,
        type=float,
        metavar="R",
        help="The partial correlation to detect in a family (repeat once per family: --effect 0.3 --effect -0.3), "
        "of the curves without item noise. The smallest worth finding, not a pilot's estimate.",
    ),
    click.option(
        "--seeds", type=Integers(1), default="2:10", show_default=True, help="Seeds per family: a list or range."
    ),
    click.option(
        "--checkpoints",
        type=Integers(6),
        help="Checkpoints per run: a list or range (12,24,48).  [default: the pilot's, else 24]",
    ),
    choice(
        "--schedule",
        SCHEDULES,
        None,
        "Where the checkpoints are: evenly spaced, log-spaced, or like the pilot's.  [default: pilot with --pilot, "
        "else linear]",
    ),
    click.option("--tau", type=click.FloatRange(0, 5), help="Seed spread of a family's correlations on Fisher z."),
    click.option(
        "--ar1",
        type=Ar1(),
        metavar="PHI[@N]",
        help=f"Lag-1 autocorrelation of the residual curves at N evenly spaced checkpoints (default N "
        f"{AR1_CHECKPOINTS}); denser checkpoints are more alike.",
    ),
    click.option("--noise", metavar="X[,Y]", help="Item-noise variance over residual-curve variance, of each testset."),
    click.option("--pilot", type=FILE, metavar="STORE", help="Estimate --ar1, --noise and --tau from this store."),
    click.option("--pair", metavar="X,Y", help="With --pilot: the pair of OOD tasks to plan for."),
    click.option("--in-domain", metavar="TASK", help="With --pilot: the in-domain task.  [default: the runs']"),
    click.option("--between", default="family", show_default=True, help="With --pilot: what tells models apart."),
    click.option("--within", default="seed", show_default=True, help="With --pilot: what tells seeds apart."),
    click.option("--where", multiple=True, metavar="KEY=VALUE", help="With --pilot: only runs with this attribute."),
    click.option("--metric", default="acc", show_default=True, help="With --pilot: the metric of the series."),
    click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True),
    _at_least(
        "--pairs", 1, 1, "Pairs the study tests: verdicts are adjusted over them (the test is made at alpha / pairs)."
    ),
    choice("--adjust-pairs", ADJUST_PAIRS, DEFAULT_ADJUST_PAIRS, "The adjustment of verdicts over pairs."),
    choice("--test", TESTS, DEFAULT_TEST, "Knapp-Hartung (calibrated with few seeds) or z."),
    choice("--inference", ("effective", "naive"), "effective", "Fisher z variances from n_eff or n."),
    choice("--residualizer", RESIDUALIZERS, "linear", "The residualizer of the simulated analyses."),
    click.option("--gam-df", type=click.IntRange(min=GAM_MIN_DF), default=GAM_DF, show_default=True),
    choice("--smoothing", SMOOTHING, "reml", "The GAM's smoothing criterion."),
    _at_least("--replications", 10, 1000, "Simulated studies per design, for the power and for the type I error each."),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulations."),
    _at_least("--threads", 1, 1, "Designs simulated at once (the result does not change with it)."),
    click.option(
        "--target-power",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        help="Find the cheapest design (fewest checkpoint evaluations) whose power reaches this.",
    ),
)


def run_plan(settings, options: dict, *, progress: bool = True) -> PowerAnalysis:
    """The power analysis the options describe, its nuisance from ``--pilot`` where not given by hand."""
    effects = options["effects"]
    if not effects:
        raise click.UsageError("Give the partial correlation to detect in each family: --effect R (once per family).")
    schedule = options["schedule"]
    tau, ar1, noise = options["tau"], options["ar1"], _floats(options["noise"], 2, "--noise")
    curves = Curves()
    checkpoints = options["checkpoints"] or [24]
    if options["pilot"] is not None:
        curves, estimated_tau = _from_pilot(settings, options)
        tau = estimated_tau if tau is None else tau
        schedule = schedule or "pilot"
        checkpoints = options["checkpoints"] or [len(curves.pilot_steps or ())]
    elif options["pair"] is not None:
        raise click.UsageError("--pair needs --pilot.")
    changes: dict = {}
    if ar1 is not None:
        changes.update(ar1=ar1[0], ar1_checkpoints=ar1[1])
    if noise is not None:
        changes["noise"] = noise
    curves = Curves(**{**_fields(curves), **changes})
    analysis = Analysis(options["residualizer"], options["gam_df"], options["smoothing"], options["inference"])
    return power_analysis(
        effects, seeds=options["seeds"], checkpoints=checkpoints, tau=tau or 0.0, curves=curves,
        schedule=schedule or "linear", analysis=analysis, alpha=options["alpha"], pairs=options["pairs"],
        adjust_pairs=options["adjust_pairs"], test=options["test"], replications=options["replications"],
        seed=options["seed"], target_power=options["target_power"], threads=options["threads"], progress=progress,
    )  # fmt: skip


def _fields(curves: Curves) -> dict:
    return {name: getattr(curves, name) for name in curves.__dataclass_fields__}


def _from_pilot(settings, options: dict):
    """The pair's curves and seed spread, estimated from the pilot store (read-only)."""
    from ood_store import open as open_store
    from ood_store._analysis.nuisance import estimate_nuisance

    pair = options["pair"]
    if pair is None or len(pair.split(",")) != 2:
        raise click.UsageError("With --pilot, name the pair to plan for: --pair X,Y.")
    task_x, task_y = (name.strip() for name in pair.split(","))
    with open_store(options["pilot"], read_only=True, lock_timeout=settings.lock_timeout) as store:
        estimates = estimate_nuisance(
            store, options["in_domain"], [task_x, task_y], between=options["between"], within=options["within"],
            metric=options["metric"], where=options["where"] or None, progress=True,
        )  # fmt: skip
    row = estimates.row(task_x, task_y)
    tau = row["tau"]
    click.echo(
        f"Pilot {options['pilot']} ({row['runs']} runs): {task_x}-{task_y} residual curves ar1 {row['ar1']:.2f} "
        f"({row['ar1_low']:.2f}-{row['ar1_high']:.2f}) at {AR1_CHECKPOINTS} even checkpoints, item noise "
        f"{row['noise_x']:.2g} and {row['noise_y']:.2g} of their variance (from {row['item_noise_from']}), seed spread "
        + (f"tau {tau:.2f} ({row['tau_low']:.2f}-{row['tau_high']:.2f})." if tau is not None else "not estimated."),
        err=True,
    )
    return estimates.curves(task_x, task_y), tau


def _plan_kwargs(kwargs: dict) -> dict:
    keys = ("effects", "seeds", "checkpoints", "schedule", "tau", "ar1", "noise", "pilot", "pair", "in_domain",
            "between", "within", "where", "metric", "alpha", "pairs", "adjust_pairs", "test", "inference",
            "residualizer", "gam_df", "smoothing", "replications", "seed", "threads", "target_power")  # fmt: skip
    return {key: kwargs.pop(key) for key in keys}


@click.command()
@plan_options
@click.option("--estimates", is_flag=True, help="With --pilot: print the pilot's nuisance estimates of every pair.")
@click.option("--all-columns", is_flag=True, help="Show every column in table, markdown and latex output.")
@output_options
@click.pass_obj
def plan(settings, estimates: bool, all_columns: bool, output_format, output, **kwargs):
    """How many seeds and checkpoints a study needs: power by simulation, through the real analysis.

    For each design of the grid --seeds x --checkpoints it simulates the study
    --replications times (autocorrelated residual curves at the checkpoints'
    steps, seed spread, item noise), analyses each as `analyze` and `compare
    --between family --within seed` would, and reports the power to find the
    --effect difference, the type I error of the same test under no
    difference, the width of a family's pooled interval, and the cost in
    checkpoint evaluations. The nuisance comes from --pilot STORE or by hand.

    \b
    Examples:
      ood-store plan --effect 0.3 --effect -0.3 --tau 0.2 --ar1 0.6 --seeds 2:10 --target-power 0.8
      ood-store plan --pilot pilot.duckdb --pair hans,rte --effect 0.3 --effect -0.3 --pairs 3 --target-power 0.8
      ood-store plan --pilot pilot.duckdb --estimates
    """
    options = _plan_kwargs(kwargs)
    if estimates:
        _print_estimates(settings, options, output_format, output, all_columns)
        return
    result = run_plan(settings, options)
    emit(shown(result, output_format, all_columns), output_format, output)
    if result.target_power is not None:
        chosen = result.chosen
        click.echo(
            f"Cheapest design with power {result.target_power:g}: {chosen.seeds} seeds x {chosen.checkpoints} "
            f"checkpoints ({chosen.evaluations} checkpoint evaluations)." if chosen else
            f"No design of the grid reaches power {result.target_power:g}: try more --seeds or --checkpoints.",
            err=True,
        )  # fmt: skip


def _print_estimates(settings, options, output_format, output, all_columns) -> None:
    from ood_store import open as open_store
    from ood_store._analysis.nuisance import estimate_nuisance

    if options["pilot"] is None:
        raise click.UsageError("--estimates needs --pilot STORE.")
    ood = options["pair"].split(",") if options["pair"] else None
    with open_store(options["pilot"], read_only=True, lock_timeout=settings.lock_timeout) as store:
        result = estimate_nuisance(
            store, options["in_domain"], ood, between=options["between"], within=options["within"],
            metric=options["metric"], where=options["where"] or None, progress=True,
        )  # fmt: skip
    emit(shown(result, output_format, all_columns), output_format, output)


def power_figure(settings, output, width, no_note, **kwargs):
    """``plot power``: the plan's power curves, written to ``output`` with the plan's settings as provenance."""
    from ood_store._export.figure_files import PaperFigure, file_format
    from ood_store._export.power import power_curves
    from ood_store._export.provenance import Provenance

    file_format(output)
    options = _plan_kwargs(kwargs)
    result = run_plan(settings, options)
    params = result.settings.to_dict()  # the nuisance as simulated: by hand, or as estimated from the pilot
    params["pilot"] = None if options["pilot"] is None else str(options["pilot"].resolve())
    provenance = Provenance(source="power analysis (ood-store plan)", params=params)
    figure = power_curves(result, note=not no_note, **({"width": width} if width else {}))
    paper = PaperFigure(figure, provenance, f"power curves of {result.table.height} designs")
    write_figure(paper, output)


COMMANDS = [plan]
