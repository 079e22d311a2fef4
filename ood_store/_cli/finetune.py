"""``ood-store finetune``: few-shot pattern finetuning of every run of a study, and the study file for evaluate."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import click

from ood_store._cli.flags import spelled
from ood_store._cli.options import FILE, FOLDER
from ood_store._counts import n
from ood_store._errors import InputError, OodStoreError
from ood_store._evaluate.executors import NAMES
from ood_store._evaluate.suite.labels import NEUTRAL_SCHEMES
from ood_store._evaluate.suite.variant import PATTERNS
from ood_store._finetune.config import DTYPES, KEEP, LOSSES, METHODS, TRUNCATION
from ood_store._finetune.runner import FinetuneInterrupted, FinetuneReport, RunOutcome
from ood_store._store.runs import parse_attributes


def _pairs(values: tuple[str, ...], parameter: str) -> dict[str, Any] | None:
    """``KEY=VALUE`` arguments as a table; a value is read as a TOML value when it is one (1e-4, true, [1, 2])."""
    if not values:
        return None
    out: dict[str, Any] = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise InputError(None, None, f"expected KEY=VALUE, got {text!r}", parameter=parameter)
        try:
            out[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value
    return out


@click.command()
@click.argument("study", type=FILE, required=False)
@click.option("--base-model", help="A causal LM's folder or hub id, e.g. facebook/opt-125m.")
@click.option("--in-domain", help="The training set: a testset of the ood_nli suite (mnli, snli, ...) or your own.")
@click.option(
    "--pattern",
    metavar="NAME|TEXT",
    help=f"The prompt: a shipped pattern ({', '.join(PATTERNS)}; default ood-nli) or a text with {{premise}} and "
    "{hypothesis}.",
)
@click.option("--verbalizer", metavar="YES,NO", help="The answers, entailed first: ' Yes,No' (default: the pattern's).")
@click.option("--neutral", type=click.Choice(NEUTRAL_SCHEMES), help="Neutral rows: drop them (default) or answer No.")
@click.option("--method", type=click.Choice(METHODS), help="LoRA adapters or full finetuning.  [default: lora]")
@click.option(
    "--loss",
    type=click.Choice(LOSSES),
    help="Cross-entropy over the whole vocabulary at the verbalizer position (llmft's), or over the two verbalizer "
    "logits.  [default: vocabulary]",
)
@click.option("--shots", "shots", type=int, multiple=True, help="Training examples per run (repeatable: a grid).")
@click.option("--data-seed", "data_seeds", type=int, multiple=True, help="Which shots (llmft's rule; repeatable).")
@click.option("--seed", "seeds", type=int, multiple=True, help="The Trainer's seed (repeatable).  [default: 0]")
@click.option("--balanced", is_flag=True, default=None, help="Draw half the shots from each answer.")
@click.option(
    "--schedule",
    metavar="log:N|even:N|manual:S,S,...",
    help="Which steps are saved; step 0 and the last always.  [default: log:24]",
)
@click.option("--max-length", type=int, help="Cut prompts to this many tokens (default: the model's, as lm-eval).")
@click.option("--truncation", type=click.Choice(TRUNCATION), help="Which end of a long prompt is cut.  [default: left]")
@click.option("--dtype", type=click.Choice(DTYPES), help="The dtype the model is loaded in.  [default: float32]")
@click.option("--name", help="The runs' names, e.g. '{family}-{size}-k{shots}-d{data_seed}' (fields and attributes).")
@click.option("--training", "training", multiple=True, metavar="KEY=VALUE", help="A TrainingArguments argument.")
@click.option("--lora", "lora", multiple=True, metavar="KEY=VALUE", help="A peft.LoraConfig argument.")
@click.option("--attr", "attributes", multiple=True, metavar="KEY=VALUE", help="A run attribute (family, size, ...).")
@click.option("--tasks", "tasks", multiple=True, metavar="TASK[,TASK...]", help="What the study file evaluates.")
@click.option("--include-path", "include_path", multiple=True, type=FOLDER, metavar="DIR", help="Task YAMLs.")
@click.option(
    "--data-dir",
    type=FOLDER,
    metavar="DIR",
    help="Read the training splits (TASK.train.jsonl) and the suite from here, not from the hub.",
)
@click.option(
    "--output-dir",
    type=FOLDER,
    help="Where the runs, their work folder and study.toml go.  [default: the study's, else finetune-runs]",
)
@click.option(
    "--keep-checkpoints",
    type=click.Choice(KEEP),
    help="What a finished run keeps of its checkpoints: all (resume state too), weights, none.  [default: weights]",
)
@click.option(
    "--in-loop",
    is_flag=True,
    default=None,
    help="Score every checkpoint as it is saved (the verbalizer scorer) into the store (--db); otherwise evaluate the "
    "study file afterwards.",
)
@click.option(
    "--executor",
    type=click.Choice(NAMES, case_sensitive=False),
    help="Where runs train: inline (here), local (--workers processes), slurm, ray.  [default: inline, or the study's]",
)
@click.option("--workers", type=int, help="local, ray: how many workers (default: one per GPU, or one).")
@click.option("--gpus-per-task", type=float, help="GPUs per worker (local, slurm; ray: num_gpus).")
@click.option("--units-per-task", type=int, help="slurm: runs per array task (default 1).")
@click.option("--slurm-partition", help="slurm: the partition.")
@click.option("--timeout-min", type=int, help="slurm: each array task's time limit in minutes (default 240).")
@click.option("--max-parallel", type=int, help="slurm: array tasks running at once.")
@click.option("--slurm-param", "slurm_params", multiple=True, metavar="KEY=VALUE", help="slurm: an sbatch parameter.")
@click.option("--ray-address", envvar="RAY_ADDRESS", show_envvar=True, help="ray: the cluster (default: Ray here).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only problems.")
@click.pass_obj
def finetune(settings, study, training, lora, attributes, shots, data_seeds, seeds, tasks, include_path, quiet,
             **options):  # fmt: skip
    """Finetune every run of a study few-shot on a pattern, save its checkpoints on a schedule, write the study file.

    \b
    STUDY is a TOML (or .yaml) file of runs: a base model, the training set,
    the pattern and verbalizers, LoRA or full, shot counts and data seeds, the
    checkpoint schedule, [training] (TrainingArguments) and [lora]
    (LoraConfig); the options here give the same for one run, or override the
    file. Everything is checked before anything trains; a run resumes from its
    last checkpoint, so the same command again continues where it stopped.
    The study file it writes (OUTPUT_DIR/study.toml) evaluates every
    checkpoint with the prompt it was trained with:

    \b
      ood-store finetune study.toml
      ood-store evaluate --study finetune-runs/study.toml
      ood-store finetune --base-model facebook/opt-125m --in-domain mnli --pattern minimal \\
        --shots 16 --data-seed 0 --data-seed 1 --training learning_rate=2e-4 --training max_steps=200
    """
    from ood_store._finetune.runner import finetune as run_finetune

    slurm_params = options.pop("slurm_params")
    given = {
        **options,
        "slurm_params": list(slurm_params) or None,
        "training": _pairs(training, "training"),
        "lora": _pairs(lora, "lora"),
        "attributes": parse_attributes(list(attributes)) if attributes else None,
        "shots": list(shots) or None,
        "data_seeds": list(data_seeds) or None,
        "seeds": list(seeds) or None,
        "tasks": [t for value in tasks for t in value.split(",") if t.strip()] or None,
        "include_path": [str(Path(p).resolve()) for p in include_path] or None,
    }
    for key in ("data_dir", "output_dir"):
        if given.get(key) is not None:
            given[key] = str(Path(given[key]).resolve())
    output_dir = given.pop("output_dir")
    executor = given.pop("executor")
    try:
        report = run_finetune(
            study, output_dir=output_dir, executor=executor, store=settings.db, progress=not quiet, **given
        )
    except OodStoreError as exc:  # spelled here, where this command's options name what it says (--seed, ...)
        raise click.ClickException(spelled(exc)) from None
    except FinetuneInterrupted as interrupted:
        _interrupted(interrupted.report, settings.db)
        raise SystemExit(130) from None
    _summarize(report, quiet, settings.db)
    if report.failed:
        raise SystemExit(1)


def _summarize(report: FinetuneReport, quiet: bool, db: Path) -> None:
    if report.failed:
        click.echo(f"Failed: {n(len(report.failed), 'run')}:", err=True)
        for outcome in report.failed:
            click.echo(f"  {outcome.run}: {outcome.error}", err=True)
        click.echo(
            f"The errors in full: {_shown(report.output_dir)}/finetune-work/failed/; running the same command again "
            "resumes each from its last checkpoint.",
            err=True,
        )
    if quiet:
        return
    trained, complete = report.of("trained"), report.of("complete")
    if trained:
        resumed = [o for o in trained if o.resumed_from is not None]
        again = f" ({len(resumed)} resumed)" if resumed else ""
        click.echo(f"Finetuned {n(len(trained), 'run')}{again} into {_shown(report.output_dir)}:")
        for outcome in trained:
            click.echo(f"  {outcome.run}: {_checkpoints(outcome)}")
    if complete:
        click.echo(f"Already finished: {n(len(complete), 'run')} (remove a run's folder to train it again).")
    if report.collected:
        click.echo(_stored(report, db))
    if report.study_file is not None:
        click.echo(f"Evaluate every checkpoint with the prompt it was trained with:\n  ood-store evaluate --study "
                   f"{_shown(report.study_file)}")  # fmt: skip


def _stored(report: FinetuneReport, db: Path) -> str:
    stored = [c for c in report.collected if c.status != "rejected"]
    scores = sum(c.scores for c in stored)
    return f"Evaluated in the loop: {n(len(stored), 'checkpoint')} stored into {db} ({n(scores, 'score')})."


def _shown(path: Path) -> str:
    """A path as the user gave it: relative to the working directory when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _checkpoints(outcome: RunOutcome) -> str:
    steps = ", ".join(str(s) for s in outcome.checkpoints)
    return f"{outcome.steps} steps, checkpoints at {steps}"


def _interrupted(report: FinetuneReport, db: Path) -> None:
    finished = [o for o in report.runs if o.status in ("trained", "complete")]
    stopped = f" (stopped {report.jobs})" if report.jobs else ""
    where = _shown(report.output_dir)
    lines = [f"Interrupted{stopped}: {len(finished)} of {n(len(report.runs), 'run')} finished, in {where}."]
    for outcome in report.of("pending"):
        if outcome.checkpoints:
            last = outcome.checkpoints[-1]
            lines.append(f"  {outcome.run}: saved up to checkpoint-{last} (step {last} of {outcome.steps})")
        else:
            lines.append(f"  {outcome.run}: nothing saved yet")
    if report.collected:
        lines.append(_stored(report, db))
    lines.append(
        "Run the same command again to resume: finished runs are kept, the others continue from their last checkpoint."
    )
    click.echo("\n".join(lines), err=True)


COMMANDS = [finetune]
