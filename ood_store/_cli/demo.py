"""``ood-store demo``: the whole workflow offline, on a toy finetuning run built from code.

``--pythia`` shows the store alone instead, on bundled real lm-eval files (no torch needed);
``--planted`` makes a study of 24 runs with correlations planted in advance, for the figures of many runs;
``--pilot`` a small pilot whose curves' nuisance is planted, for ``ood-store plan --pilot``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import click

from ood_store import _sqlfiles as sqlfiles
from ood_store._cli.options import folder_option
from ood_store._examples import extract_pythia
from ood_store._export.rows import render
from ood_store._store.database import read

DEMO_DB = "ood-store-demo.duckdb"
DEMO_DIR = "ood-store-demo"
_SIZES = ("160m", "410m", "1.4b")


@click.command()
@folder_option(
    "--workdir",
    DEMO_DIR,
    "Where the toy checkpoints, tasks and lm-eval's files go (kept, and reused by the next demo).",
)
@click.option("--pythia", is_flag=True, help="Ingest and query the bundled real Pythia evaluations instead.")
@click.option(
    "--planted",
    is_flag=True,
    help="Ingest a planted study of 24 runs x 8 OOD testsets (known correlations) and save its analysis instead.",
)
@click.option(
    "--pilot",
    is_flag=True,
    help="Ingest a planted pilot of 4 runs (2 families x 2 seeds, known autocorrelation, item noise and seed "
    "spread) for `ood-store plan --pilot` instead.",
)
@click.pass_context
def demo(ctx: click.Context, workdir: Path, pythia: bool, planted: bool, pilot: bool) -> None:
    """Finetune a toy model, evaluate its checkpoints with lm-eval on toy NLI sets, show the scores.

    Works offline on a CPU in about a minute: the model, tokenizer and data
    are built from code. Uses ood-store-demo.duckdb in the working directory
    unless --db is given; running it again evaluates nothing new.
    """
    settings = ctx.obj
    parent = ctx.parent
    if parent is not None and parent.get_parameter_source("db") == click.core.ParameterSource.DEFAULT:
        settings.db = Path(DEMO_DB)
    if pythia + planted + pilot > 1:
        raise click.UsageError("Choose one of --pythia, --planted and --pilot.")
    if pythia:
        _pythia(settings)
    elif planted:
        _planted(settings)
    elif pilot:
        _pilot(settings)
    else:
        _toy(settings, workdir)


def _toy(settings, workdir: Path) -> None:
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):  # before transformers, datasets, lm_eval are imported
        os.environ.setdefault(name, "1")
    if "tqdm" not in sys.modules:
        os.environ.setdefault("TQDM_DISABLE", "1")
    from ood_store._evaluate.harness import require_eval_extra
    from ood_store._examples.demo import IN_DOMAIN, RUN, DemoSettings, run_demo
    from ood_store._finetune.runner import require_finetune_extra

    require_eval_extra("the demo")
    require_finetune_extra({"full"})
    toy = DemoSettings()
    every = toy.steps // (toy.checkpoints - 1)
    click.echo(
        "A TOY run, to show the workflow, not to measure anything: a 42k-parameter GPT-2 and a tokenizer built\n"
        f"from code, finetuned by `ood-store finetune` for {toy.steps} steps on {toy.shots} made-up sentences (a "
        "hypothesis with\n'did not' is not entailed) in the prompt '{premise} Question: {hypothesis} Yes or No?', "
        f"checkpoints every {every}\nsteps from step 0, each evaluated with lm-eval through the study file finetuning "
        f"wrote, on the in-domain\ntoy set (toy_nli) and three out-of-domain styles (toy_ood_*), {toy.docs} "
        "documents each, in the same prompt.\n"
    )
    started = time.perf_counter()
    with settings.open() as store:
        result = run_demo(store, workdir, toy, progress=True)
    report = result.report
    click.echo(
        f"{'Finetuned' if result.trained else 'Reused'} the toy checkpoints in {workdir}/runs/{RUN}; evaluated "
        f"{len(report.evaluated)} of {len(report.checkpoints)} checkpoints into {settings.db} "
        f"({len(report.skipped)} already there) in {time.perf_counter() - started:.0f} s.\n"
    )
    click.echo(f"Toy accuracy per checkpoint (run {RUN}; chance is about 0.5):\n")
    click.echo(render(result.scores, "table"))
    click.echo(
        f"\nPartial correlations between the out-of-domain sets over these {len(report.checkpoints)} checkpoints, "
        f"with in-domain\n{IN_DOMAIN} accuracy regressed out (`ood-store analyze --in-domain {IN_DOMAIN}`); "
        "a toy, so read the columns, not the numbers:\n"
    )
    click.echo(render(result.partial.summary().frame, "table"))
    db, prog = settings.db, _program()
    click.echo(
        f"\nThe demo's finetuning study is {result.study}; the study file finetuning wrote for evaluate is\n"
        f"{workdir}/runs/study.toml. The same on real runs (models and data load from the Hugging Face hub;\n"
        f"offline, run `{prog} suite export nli-data/ --fewshot` on a connected machine first, and give\n"
        "--data-dir nli-data/ to both commands):\n"
        f"  {prog} finetune --base-model facebook/opt-125m --in-domain mnli --pattern minimal --shots 16 \\\n"
        "      --data-seed 0 --data-seed 1 --attr family=OPT --attr size=125m --output-dir runs/\n"
        f"  {prog} evaluate --study runs/study.toml\n"
        f"  {prog} compare --in-domain ood_nli_mnli__minimal --by family     # once several runs are in the store\n"
        "Look around this demo's store:\n"
        f"  {prog} --db {db} runs\n"
        f"  {prog} --db {db} analyze --in-domain {IN_DOMAIN} --all-columns\n"
        f"  {prog} --db {db} query \"SELECT step, task, value FROM scores WHERE metric = 'acc' ORDER BY task, step\"\n"
        f"  {prog} --db {db} analyze --in-domain {IN_DOMAIN} --save toy --replace\n"
        f"  {prog} --db {db} plot curves --analysis toy -o toy-curves.png\n"
        f"  {prog} --db {db} export --analysis toy -o toy.tex   # the table for a paper\n"
        f"lm-eval's own files are in {workdir}/lm-eval-results/."
    )


def _pythia(settings) -> None:
    click.echo(
        "Demo data: real lm-eval (v0.3 format) results of 27 checkpoints each of Pythia v1.1 "
        "160M, 410M and 1.4B on 87 tasks (EleutherAI/pythia, evals/pythia-v1)."
    )
    with tempfile.TemporaryDirectory(prefix="ood-store-demo-") as tmp, settings.open() as store:
        folder = extract_pythia(Path(tmp))
        totals = {"ingested": 0, "present": 0, "scores": 0}
        for size in _SIZES:
            report = store.ingest([folder / f"pythia-{size}"], attributes={"family": "pythia", "size": size})
            totals["ingested"] += len(report.ingested)
            totals["present"] += len(report.present)
            totals["scores"] += sum(f.scores for f in report.ingested)
            if not report.ok:  # the bundled files are known good; this would be a bug
                raise click.ClickException("; ".join(f.reason or f.path for f in report.rejected))
        click.echo(
            f"Store {settings.db}: ingested {totals['ingested']} files ({totals['scores']:,} scores), "
            f"{totals['present']} already present.\n"
        )
        frame = read(store, sqlfiles.load("ood_store._examples", "demo_pythia"))
    click.echo("LAMBADA (OpenAI) accuracy over training steps, from the `scores` table:\n")
    click.echo(render(frame, "table"))
    db, prog = settings.db, _program()
    click.echo(
        "\nNext, try:\n"
        f"  {prog} --db {db} runs\n"
        f"  {prog} --db {db} tasks\n"
        f'  {prog} --db {db} query "SELECT run, step, value FROM scores '
        "WHERE task = 'arc_easy' AND metric = 'acc' ORDER BY run, step\" --format csv\n"
        f"On your own lm-eval outputs: {prog} ingest PATH... (files, folders or globs)."
    )


def _planted(settings) -> None:
    from ood_store._examples import planted

    with tempfile.TemporaryDirectory(prefix="ood-store-planted-") as tmp, settings.open() as store:
        result = planted.build(store, Path(tmp))
    runs = len(planted.FAMILIES) * len(planted.SIZES) * len(planted.SEEDS)
    click.echo(
        f"Planted study in {settings.db}: {runs} runs ({len(planted.FAMILIES)} families x {len(planted.SIZES)} sizes x "
        f"{len(planted.SEEDS)} seeds), {len(planted.STEPS)} checkpoints each, in-domain {planted.IN_DOMAIN} and "
        f"{len(planted.OOD)} OOD testsets.\n"
        f"Saved analysis '{planted.ANALYSIS}' ({result.table.height} rows): snli-scitail and anli_r1-anli_r2 are "
        "planted positive,\nanli_r3-wnli negative, rte-hans positive in pythia and opt but negative in qwen and llama."
    )


def _pilot(settings) -> None:
    from ood_store._examples import pilot

    truth = pilot.Truth()
    with tempfile.TemporaryDirectory(prefix="ood-store-pilot-") as tmp, settings.open() as store:
        runs = pilot.build(store, Path(tmp), truth)
    noise = pilot.planted_noise(truth)
    click.echo(
        f"Planted pilot in {settings.db}: {len(runs)} runs ({len(truth.families)} families x {truth.seeds} seeds), "
        f"{len(pilot.STEPS)} checkpoints each (log-spaced, then every 1,250 steps), in-domain {pilot.IN_DOMAIN} and "
        f"OOD {', '.join(pilot.OOD)}.\n"
        f"Planted: residual curves of lag-1 autocorrelation {pilot.planted_ar1(truth):.2f} at 24 even checkpoints, "
        f"item noise {', '.join(f'{noise[t]:.2g}' for t in pilot.OOD)} of their variance, seed spread tau "
        f"{truth.tau:g};\nhans-rte correlated +0.5 in opt and -0.5 in olmo."
    )


def _program() -> str:
    """How to call ood-store again: its name if the shell finds this one, else its path (e.g. .venv/bin/...)."""
    running = Path(sys.argv[0])
    if running.name != "ood-store":
        return "ood-store"
    found = shutil.which("ood-store")
    if found and Path(found).resolve() == running.resolve():
        return "ood-store"
    return os.path.relpath(running)


COMMANDS = [demo]
