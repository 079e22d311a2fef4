"""``ood-store evaluate``: run lm-eval on every checkpoint of a run and fill the store."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ood_store.cli.options import attr_file_option, folder_option
from ood_store.errors import InputError
from ood_store.evaluate.runner import DEFAULT_OUTPUT_DIR, EvaluateReport, run_folder
from ood_store.evaluate.suite.labels import NEUTRAL_SCHEMES
from ood_store.evaluate.suite.variant import PATTERNS, Variant, from_run_file, variant_of
from ood_store.store.attribute_rules import for_run, read_attribute_file
from ood_store.store.runs import parse_attributes, read_run_file


@click.command()
@click.argument("checkpoints", nargs=-1, required=True, metavar="CHECKPOINT...")
@click.option("--run", help="The run these checkpoints belong to (or `run` in --run-file).")
@click.option(
    "--tasks",
    "tasks",
    multiple=True,
    required=True,
    metavar="TASK[,TASK...]",
    help="lm-eval tasks, groups or tags: ood_nli (the NLI suite), tasks in --include-path, or built-in ones.",
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
    type=click.Path(dir_okay=False, path_type=Path),
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
@folder_option(
    "--output-dir", DEFAULT_OUTPUT_DIR, "Where lm-eval's results and samples files are kept (OUTPUT_DIR/RUN/step-N/)."
)
@click.option("--base-model", help="The base model of PEFT adapter checkpoints (default: from adapter_config.json).")
@click.option("--batch-size", default="auto", show_default=True, help="lm-eval batch size: a number, auto or auto:N.")
@click.option("--device", help="cuda, cuda:1, mps, cpu, ... (default: cuda when there is a GPU, else cpu).")
@click.option("--dtype", help="Model dtype, e.g. bfloat16 (default: lm-eval's, auto).")
@click.option("--num-fewshot", type=click.IntRange(min=0), help="Few-shot examples per prompt.")
@click.option(
    "--limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Documents per task (a fraction when below 1); for trying things out.",
)
@click.option("--no-samples", is_flag=True, help="Do not log or store per-sample rows.")
@click.option("--force", is_flag=True, help="Evaluate even the (step, task) pairs the store already holds.")
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
    attributes,
    run_file,
    attribute_file,
    include_paths,
    data_dir,
    pattern,
    verbalizer,
    neutral,
    output_dir,
    base_model,
    batch_size,
    device,
    dtype,
    num_fewshot,
    limit,
    no_samples,
    force,
    quiet,
    verbose,
) -> None:
    """Evaluate every checkpoint of a run with lm-eval and store the scores, resumably.

    \b
    CHECKPOINT is a checkpoint folder, a folder of checkpoints (checkpoint-N,
    step-N, ...), a glob, or HF_REPO@REVISION; PEFT adapter folders work too.
    Each model is loaded once and evaluated on all tasks; each finished
    checkpoint is stored at once, in its own transaction. (step, task) pairs
    already in the store are skipped, so an interrupted job resumes where it
    stopped. Example:

    \b
      ood-store evaluate runs/opt-mnli-s1/ --run opt-2.7b-mnli-s1 --tasks ood_nli \\
        --pattern '{premise} {hypothesis} ?' --verbalizer ' Yes,No' --neutral drop \\
        --attr family=OPT --attr size=2.7b --attr in_domain=mnli --attr seed=1
    """
    file_run, file_attrs = read_run_file(run_file) if run_file else (None, {})
    run = run or file_run
    if not run:
        raise InputError("--run", None, "name the run with --run NAME (or `run = ...` in --run-file)")
    rules = read_attribute_file(attribute_file) if attribute_file else []
    attrs = {**file_attrs, **for_run(run, rules), **parse_attributes(list(attributes))}  # checked before anything runs
    given = {"pattern": pattern, "verbalizer": verbalizer, "neutral": neutral}
    variant = variant_of(from_run_file(run_file) if run_file else {}, given)
    if not verbose and "tqdm" not in sys.modules:  # tqdm reads TQDM_* settings when it is imported
        os.environ.setdefault("TQDM_DISABLE", "1")  # keeps lm-eval.log free of progress bars
    with settings.open() as store:
        report = store.evaluate(
            checkpoints,
            run=run,
            tasks=tasks,
            output_dir=output_dir,
            include_paths=include_paths,
            data_dir=data_dir,
            variant=variant,
            base_model=base_model,
            batch_size=_batch_size(batch_size),
            device=device,
            dtype=dtype,
            num_fewshot=num_fewshot,
            limit=int(limit) if limit is not None and limit >= 1 and limit == int(limit) else limit,
            samples=not no_samples,
            force=force,
            attributes=attrs or None,
            progress=not quiet,
            log_to_file=not verbose,
        )
    if not quiet:
        _summarise(report, settings.db, output_dir, variant)


def _summarise(report: EvaluateReport, db, output_dir: Path, variant: Variant | None) -> None:
    evaluated, skipped = report.evaluated, report.skipped
    scores = sum(c.scores for c in evaluated)
    samples = sum(c.samples for c in evaluated)
    click.echo(
        f"Evaluated {_n(len(evaluated), 'checkpoint')} of run {report.run} into {db}: "
        f"{_n(scores, 'score')}, {_n(samples, 'sample')}."
    )
    for c in evaluated:
        step = "final" if c.step is None else f"step {c.step}"
        click.echo(f"  {step}: {', '.join(c.tasks)} ({c.seconds:.1f} s)")
    if variant is not None:
        click.echo(f"ood_nli prompt: {variant.describe()}")
    if skipped:
        click.echo(f"Already in the store: {_n(len(skipped), 'checkpoint')} (--force evaluates them again).")
    if evaluated:
        folder = run_folder(output_dir, report.run)
        click.echo(f"lm-eval's results, samples and logs: {folder}/ (ingest {folder} --run {report.run} rebuilds)")


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'s' if count != 1 else ''}"


def _batch_size(value: str) -> int | str:
    value = value.strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if value == "auto" or (value.startswith("auto:") and value[5:].isdigit()):
        return value
    raise InputError("--batch-size", None, f"expected a positive number, auto or auto:N, got {value!r}")


COMMANDS = [evaluate]
