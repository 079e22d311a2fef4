"""``ood-store evaluate``: run lm-eval on every checkpoint of a run (or a study) and fill the store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from ood_store._cli.options import FILE, FOLDER, attr_file_option
from ood_store._counts import n
from ood_store._errors import InputError
from ood_store._evaluate.executors import NAMES
from ood_store._evaluate.options import SCORERS, TRUNCATIONS
from ood_store._evaluate.plan import run_folder
from ood_store._evaluate.runner import EvaluateReport, EvaluationInterrupted
from ood_store._evaluate.suite.labels import NEUTRAL_SCHEMES
from ood_store._evaluate.suite.variant import PATTERNS, Variant
from ood_store._evaluate.timings import where_the_time_went


@click.command()
@click.argument("checkpoints", nargs=-1, metavar="[CHECKPOINT...]")
@click.option("--run", help="The run these checkpoints belong to (or `run` in --run-file).")
@click.option(
    "--tasks",
    "tasks",
    multiple=True,
    metavar="TASK[,TASK...]",
    help="lm-eval tasks, groups or tags: ood_nli (the NLI suite), tasks in --include-path, or built-in ones.",
)
@click.option(
    "--study",
    type=FILE,
    help="A TOML (or .yaml) file of many runs, each with its checkpoints, tasks and attributes; instead of "
    "CHECKPOINT, --run and --attr. Other options given here apply to every run.",
)
@click.option(
    "--attr",
    "attributes",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a run attribute (family, size, in_domain, seed, or any key). Repeatable; wins over --run-file.",
)
@click.option(
    "--run-file",
    type=FILE,
    help="A TOML (or .yaml) file with the run's name (`run = ...`) and attributes (`family = ...`).",
)
@attr_file_option
@click.option(
    "--include-path",
    "include_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="A folder of your own lm-eval task YAMLs. Repeatable.",
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Read the ood_nli suite from the JSONL files of `ood-store suite export DIR`, not from the hub.",
)
@click.option(
    "--pattern",
    metavar="NAME|TEXT",
    help=f"The ood_nli suite's prompt: a shipped pattern ({', '.join(PATTERNS)}; default ood-nli) or a text with "
    "{premise} and {hypothesis}, e.g. '{premise} {hypothesis} ?'.",
)
@click.option(
    "--verbalizer",
    metavar="YES,NO",
    help="The answers scored after the prompt, entailed first; leading whitespace goes before each: ' Yes,No' "
    "(default: the pattern's own).",
)
@click.option(
    "--neutral",
    type=click.Choice(NEUTRAL_SCHEMES),
    help="Three-way sets (SNLI, MNLI, ANLI): drop the neutral rows (default), or count them as 'no' (not entailed).",
)
@click.option(
    "--output-dir",
    type=FOLDER,
    help="Where lm-eval's results and samples files are kept (OUTPUT_DIR/RUN/step-N/unit-HASH/).  "
    "[default: lm-eval-results]",
)
@click.option(
    "--work-dir",
    type=FOLDER,
    help="The work folder (plan, completion markers, job logs), on storage every worker sees.  "
    "[default: beside --output-dir, lm-eval-results-work]",
)
@click.option("--base-model", help="The base model of PEFT adapter checkpoints (default: from adapter_config.json).")
@click.option("--batch-size", help="lm-eval batch size: a number, auto or auto:N.  [default: auto]")
@click.option("--device", help="cuda, cuda:1, mps, cpu, ... (default: cuda where a worker sees a GPU, else cpu).")
@click.option("--dtype", help="Model dtype, e.g. bfloat16 (default: lm-eval's, auto).")
@click.option(
    "--scorer",
    type=click.Choice(SCORERS, case_sensitive=False),
    help="lm-eval (lm-eval's hf model, the reference), verbalizer: for answers of one token after the prompt "
    "(the ood_nli suite), one forward pass per document, the same scores and files, or fast: the same for "
    "multiple-choice accuracy, the run's requests prepared once and each checkpoint its forward passes.  "
    "[default: lm-eval]",
)
@click.option(
    "--max-length",
    type=click.IntRange(min=1),
    help="The most prompt tokens the model sees (lm-eval's max_length; default: lm-eval's length for the model).",
)
@click.option(
    "--truncation",
    type=click.Choice(TRUNCATIONS, case_sensitive=False),
    help="Which end of a longer prompt is cut: left (lm-eval's) or right (as a run trained with right truncation "
    "saw its prompts; needs --scorer verbalizer or fast).  [default: left]",
)
@click.option("--num-fewshot", type=click.IntRange(min=0), help="Few-shot examples per prompt.")
@click.option(
    "--limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Documents per task (a fraction when below 1); for trying things out.",
)
@click.option("--no-samples", is_flag=True, help="Do not log or store per-sample rows.")
@click.option("--force", is_flag=True, help="Evaluate even the (step, task) pairs the store already holds.")
@click.option(
    "--executor",
    type=click.Choice(NAMES, case_sensitive=False),
    help="Where workers run: inline (this process), local (--workers processes here), slurm (a job array "
    "through submitit), ray.  [default: inline, or the study's]",
)
@click.option("--workers", type=int, help="local, ray: how many workers (default: one per GPU, or one).")
@click.option("--gpus-per-task", type=float, help="GPUs per worker (local, slurm; ray: num_gpus, fractions allowed).")
@click.option("--units-per-task", type=int, help="slurm: checkpoints evaluated per array task (default 4).")
@click.option("--slurm-partition", help="slurm: the partition.")
@click.option("--timeout-min", type=int, help="slurm: each array task's time limit in minutes (default 240).")
@click.option("--max-parallel", type=int, help="slurm: array tasks running at once (slurm_array_parallelism).")
@click.option(
    "--slurm-param",
    "slurm_params",
    multiple=True,
    metavar="KEY=VALUE",
    help="slurm: a further sbatch parameter, e.g. qos=high, mem=64G, account=lab (repeatable).",
)
@click.option(
    "--ray-address",
    envvar="RAY_ADDRESS",
    show_envvar=True,
    help="ray: the cluster, e.g. auto or ray://head:10001 (default: RAY_ADDRESS if set, else start Ray here).",
)
@click.option(
    "--detach", is_flag=True, help="Submit the workers and return; `ood-store collect WORK_DIR` stores results."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only problems.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show lm-eval's own log on the terminal (by default it goes to lm-eval.log beside each checkpoint's results).",
)
@click.pass_obj
def evaluate(
    settings,
    checkpoints,
    run,
    tasks,
    study,
    attributes,
    run_file,
    attribute_file,
    pattern,
    verbalizer,
    neutral,
    quiet,
    verbose,
    **options,
) -> None:
    """Evaluate every checkpoint of a run (or of every run of a study) with lm-eval and store the scores, resumably.

    \b
    CHECKPOINT is a checkpoint folder, a folder of checkpoints (checkpoint-N,
    step-N, ...), a glob, or HF_REPO@REVISION; PEFT adapter folders work too.
    Each model is loaded once and evaluated on all tasks; each finished
    checkpoint is stored at once, in its own commit. (step, task) pairs
    already in the store are skipped, so an interrupted job resumes where it
    stopped. Workers run here (--executor inline, local) or on a cluster
    (slurm, ray); only this process writes the store. Examples:

    \b
      ood-store evaluate runs/opt-mnli-s1/ --run opt-2.7b-mnli-s1 --tasks ood_nli \\
        --pattern '{premise} {hypothesis} ?' --verbalizer ' Yes,No' --neutral drop \\
        --attr family=OPT --attr size=2.7b --attr in_domain=mnli --attr seed=1
      ood-store evaluate --study study.toml --executor slurm --slurm-partition gpu --gpus-per-task 1
    """
    if study is None and run is None and run_file is None:
        raise InputError("--run", None, "name the run with --run NAME (or `run = ...` in --run-file)")
    no_samples = options.pop("no_samples")
    slurm_params = options.pop("slurm_params")
    with settings.open() as store, _progress_bars_off(not verbose):
        try:
            report = store.evaluate(
                checkpoints,
                run=run,
                tasks=tasks,
                study=study,
                run_file=run_file,
                attribute_file=attribute_file,
                pattern=pattern,
                verbalizer=verbalizer,
                neutral=neutral,
                attributes=list(attributes) or None,
                samples=False if no_samples else None,
                slurm_params=list(slurm_params) or None,
                progress=not quiet,
                log_to_file=not verbose,
                **options,
            )
        except EvaluationInterrupted as interrupted:
            _interrupted(interrupted.report, settings.db)
            raise SystemExit(130) from None
    _summarize(report, settings.db, quiet, report.variant)
    if report.failed or report.pending:
        raise SystemExit(1)


@contextmanager
def _progress_bars_off(off: bool) -> Iterator[None]:
    """``TQDM_DISABLE=1`` while evaluating, so that lm-eval.log holds no progress bars: for worker processes
    started meanwhile, and for this one if it has not imported tqdm yet (tqdm reads TQDM_* when it is
    imported). The environment is as it was afterwards (a program that calls the command keeps its own)."""
    before = os.environ.get("TQDM_DISABLE")
    if off and before is None:
        os.environ["TQDM_DISABLE"] = "1"
    try:
        yield
    finally:
        if off and before is None:
            os.environ.pop("TQDM_DISABLE", None)


def _summarize(report: EvaluateReport, db, quiet: bool, variant: Variant | None) -> None:
    study = len(report.runs) > 1
    for outcomes, what in ((report.failed, "Failed"), (report.pending, "Not evaluated (pending)")):
        if outcomes:
            click.echo(f"{what}: {n(len(outcomes), 'checkpoint')}:", err=True)
            for c in outcomes:
                click.echo(f"  {_name(c, study)}: {c.error}", err=True)
    for end in report.ended_jobs:  # once per job, however many units it held
        log = f" ({end.log})" if end.log else ""
        click.echo(f"{end.describe()}; the end of its stderr{log}:" if end.tail else end.describe(), err=True)
        for line in end.tail:
            click.echo(f"  {line}", err=True)
    if report.failed or report.pending:
        click.echo(
            f"The errors in full: ood-store status {report.work_dir}; running the same command again retries.", err=True
        )
    if report.submitted:
        tasks = sum(len(c.tasks) for c in report.submitted)
        click.echo(f"Submitted {n(len(report.submitted), 'checkpoint')} ({n(tasks, 'task')}) to {report.jobs}.")
        click.echo(f"Watch them: ood-store status {report.work_dir}")
        click.echo(
            f"Store what has finished (again as often as you like): ood-store --db {db} collect {report.work_dir}"
        )
        return
    if quiet:
        return
    evaluated, skipped = report.evaluated, report.skipped
    scores = sum(c.scores for c in evaluated)
    samples = sum(c.samples for c in evaluated)
    whose = f"{n(len(report.runs), 'run')}" if study else f"run {report.run}"
    counts = f"{n(scores, 'score')}, {n(samples, 'sample')}"
    click.echo(f"Evaluated {n(len(evaluated), 'checkpoint')} of {whose} into {db}: {counts}.")
    for c in evaluated:
        click.echo(f"  {_name(c, study)}: {', '.join(c.tasks)} ({c.seconds:.1f} s)")
    if variant is not None:
        click.echo(f"ood_nli prompt: {variant.describe()}")
    if skipped:
        click.echo(f"Already in the store: {n(len(skipped), 'checkpoint')} (--force evaluates them again).")
    if evaluated:
        where = report.output_dir if study else run_folder(report.output_dir, report.run)
        rebuild = "" if study else f" (ingest {where} --run {report.run} rebuilds)"
        click.echo(f"lm-eval's results, samples and logs: {where}/{rebuild}")
    went = where_the_time_went(c.timings for c in evaluated)
    if went:
        click.echo(went)


def _interrupted(report: EvaluateReport, db) -> None:
    stored = len(report.evaluated)
    units = stored + len(report.pending) + len(report.failed)
    stopped = f" (stopped {report.jobs})" if report.jobs else ""
    click.echo(
        f"Interrupted{stopped}: {n(stored, 'unit')} of {units} stored in {db}. "
        "Run the same command again to resume: what is stored or finished is not evaluated again.",
        err=True,
    )


def _name(c, study: bool) -> str:
    step = "final" if c.step is None else f"step {c.step}"
    return f"{c.run} {step}" if study else step


COMMANDS = [evaluate]
