"""Shared fixtures. Expected values here are read straight from the JSON files,
with code that does not use ood_store's parsers."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

# Offline, whatever the environment says: the tests never download (models and tokenizers are built from code).
os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
# A fresh Hugging Face home (hub cache, modules) and datasets cache per test process: what the tests
# find, print and cache must not depend on what an earlier run on this machine left in ~/.cache (a
# warm datasets cache hides its progress bars, a cold one on CI shows them; a model in the hub cache
# would load offline here and nowhere else).
os.environ["HF_HOME"] = _HF_HOME = tempfile.mkdtemp(prefix="ood-store-tests-hf-home-")
for _variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_MODULES_CACHE"):
    os.environ.pop(_variable, None)  # each would point somewhere other than HF_HOME
os.environ["HF_DATASETS_CACHE"] = _HF_DATASETS_CACHE = tempfile.mkdtemp(prefix="ood-store-tests-hf-datasets-")
for _folder in (_HF_HOME, _HF_DATASETS_CACHE):
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
# One torch thread per xdist worker: `make test` runs 2 workers on 2 cores, and torch's
# threads spinning against each other's made the model tests several times slower. Set, not
# defaulted: the executor tests compare loglikelihoods computed here with those of worker
# processes (Ray's run on one thread unless it is set), so every process must sum in the same order,
# whatever OMP_NUM_THREADS the machine's environment holds.
os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"

FIXTURES = Path(__file__).parent / "fixtures"
REAL = FIXTURES / "lm-eval-real"
PYTHIA = REAL / "pythia-v1"
PYTHIA_SIZES = ("160m", "410m", "1.4b")
V04 = REAL / "v0.4"
V0413 = FIXTURES / "lm-eval-0.4.13" / "out"

# Every table of the store, for row-for-row comparisons.
TABLES = ("schema_version", "runs", "checkpoints", "evaluations", "evaluation_scores", "samples")


def pythia_files(size: str | None = None) -> list[Path]:
    sizes = [size] if size else PYTHIA_SIZES
    return sorted(p for s in sizes for p in (PYTHIA / f"pythia-{s}" / "zero-shot").glob("*.json"))


#: A worker process (python -c INGEST_WORKER) for concurrent ingests (tests/test_store_birth.py,
#: benchmarks/concurrent_ingest.py): one JSON task a line ({"db": ..., "files": [...]}), one JSON answer a line.
INGEST_WORKER = """
import json, sys
import ood_store
print("ready", flush=True)
for line in sys.stdin:
    task = json.loads(line)
    try:
        with ood_store.open(task["db"], lock_timeout=120) as store:
            report = store.ingest(task["files"])
        answer = {"ingested": len(report.ingested), "rejected": [f.reason for f in report.rejected]}
    except BaseException as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(answer), flush=True)
"""


def expected_pythia_rows(files: list[Path]) -> dict[tuple, tuple]:
    """(run, step, task, metric) -> (value, stderr), read directly from v0.3 files."""
    rows = {}
    for file in files:
        doc = json.loads(file.read_text())
        args = dict(item.split("=", 1) for item in doc["config"]["model_args"].split(","))
        run, step = args["pretrained"], int(args["revision"].removeprefix("step"))
        for task, entry in doc["results"].items():
            for key, value in entry.items():
                if key.endswith("_stderr"):
                    continue
                rows[(run, step, task, key)] = (value, entry.get(f"{key}_stderr"))
    return rows


def validate_eee_folder(root: Path) -> list[Path]:
    """Run Every Eval Ever's own validator, with its repository and semantic checks, on every file under
    ``root`` (aggregate files and samples files, each against the other); returns the files."""
    from every_eval_ever.validator import validate_file

    files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl"))
    available = frozenset(f.relative_to(root).as_posix() for f in files)
    for file in files:
        report = validate_file(file, repo_path=file.relative_to(root).as_posix(), available_files=available,
                               read_repo_file=lambda p: (root / p).read_text(), run_semantic_checks=True)  # fmt: skip
        assert report.valid and not report.errors and not report.warnings, (file, report.errors, report.warnings)
    return files


def stored_loglikelihoods(db: Path) -> dict[tuple, list[float]]:
    """(run, step, task, document) -> the document's stored answer loglikelihoods, in choice order."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT e.run, e.step, s.task, s.doc_id, s.loglikelihoods FROM samples s JOIN evaluations e "
            "USING (evaluation_id)"
        ).fetchall()
        return {(run, step, task, doc): list(lls) for run, step, task, doc, lls in rows}
    finally:
        con.close()


def table_dump(db: Path) -> dict[str, list[tuple]]:
    """Every row of every table, sorted: equal dumps mean an unchanged store."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        dump = {}
        for table in TABLES:
            rows = con.execute(f"SELECT * FROM {table}").fetchall()
            dump[table] = sorted(rows, key=repr)
        return dump
    finally:
        con.close()


def store_of_version(db: Path, version: int, *statements: str, params: dict | None = None) -> None:
    """A store at schema ``version`` made with today's migrations cut there (tables only: the views come
    with the latest migration), holding what ``statements`` insert; not opened through ood_store, which
    would migrate it."""
    from ood_store import _sqlfiles as sqlfiles
    from ood_store._store import migrations

    con = duckdb.connect(str(db))
    try:
        assert migrations.migrate(con, str(db), upto=version) == list(range(1, version + 1))
        for statement in statements:
            sqlfiles.execute(con, statement, params)  # each statement with the parameters it names
    finally:
        con.close()


def store_as_made_at(db: Path, commit: str, migrations: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    """A connection to a new store at ``db`` made as the ood-store of ``commit`` made one: its
    ``migrations``, read from git at that commit, each run in a transaction with its schema_version
    row. For the scripts that make the fixtures of older stores."""
    con = duckdb.connect(str(db))
    for version, name in enumerate(migrations, start=1):
        sql = subprocess.run(
            ["git", "show", f"{commit}:schema/{name}"], cwd=FIXTURES, check=True, capture_output=True, text=True
        ).stdout
        con.execute("BEGIN TRANSACTION")
        con.execute(sql)
        con.execute("INSERT INTO schema_version VALUES ($v, $name, now()::TIMESTAMP)", {"v": version, "name": name})
        con.execute("COMMIT")
    return con


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def dead_address():
    """``127.0.0.1:PORT`` where nothing listens while the test runs: a port bound here and never listened on,
    so that a connection is refused at once, whatever else runs on the machine (no well-known port assumed free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture
def copy_file(tmp_path: Path):
    """Copy a fixture file into a fresh folder (optionally renamed); returns the copy."""
    counter = iter(range(10_000))

    def copy(source: Path, name: str | None = None) -> Path:
        folder = tmp_path / f"input{next(counter)}"
        folder.mkdir()
        target = folder / (name or source.name)
        shutil.copyfile(source, target)
        return target

    return copy


# Tasks of the toy run used by the evaluate tests (16 documents each), and its checkpoints' steps.
TOY_TASKS = ("toy_nli", "toy_ood_never", "toy_ood_long")
TOY_STEPS = (0, 4, 8)
TOY_RUN = "toy/opt-sim-s1"

# What an evaluation puts in the store, without ids, paths and times: equal for equal evaluations.
_EVALUATION_ROWS = {
    "scores": "SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, is_group FROM scores_all",
    "samples": "SELECT e.run, e.step, s.task, s.doc_id, s.filter, s.target, s.loglikelihoods, s.is_greedy, "
    "s.response, s.metrics, s.doc_hash, s.prompt_hash, s.target_hash "
    "FROM samples s JOIN evaluations e USING (evaluation_id)",
    "evaluations": "SELECT run, step, model_name, model_args, num_fewshot, sample_limit, task_hashes, task_versions "
    "FROM evaluations",
    "runs": "SELECT run, base_model, family, size, in_domain_task, seed, attributes FROM runs",
    "checkpoints": "SELECT run, step, model, revision FROM checkpoints",
}


def evaluation_rows(db: Path) -> dict[str, list[tuple]]:
    """The rows an evaluation left in the store (sorted), without evaluation ids, file paths or times."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in _EVALUATION_ROWS.items()}
    finally:
        con.close()


def toy_evaluate_args(db: Path, toy_run, out: Path, *extra: str, run: str = TOY_RUN, tasks=TOY_TASKS) -> list[str]:
    """``ood-store evaluate`` of the toy run's checkpoints on ``tasks``, quietly, into ``db`` (files in ``out``)."""
    return [
        "--db", str(db), "evaluate", str(toy_run["run"]), "--run", run, "--tasks", ",".join(tasks),
        "--include-path", str(toy_run["tasks"]), "--output-dir", str(out), "--batch-size", "8", "-q", *extra,
    ]  # fmt: skip


def wait_for(condition, what: str, timeout: float = 300, process: subprocess.Popen | None = None):
    """``condition()``'s first true value, asked every 50 ms; fails after ``timeout`` s, or when ``process`` ends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if process is not None and process.poll() is not None:
            output = process.communicate() if process.stdout is not None or process.stderr is not None else ""
            pytest.fail(f"the process ended (status {process.returncode}) before {what} {output}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


#: The tasks of the reference evaluation that the fault and real-cluster tests compare with.
REFERENCE_TASKS = TOY_TASKS[:2]


@pytest.fixture(scope="module")
def reference(toy_run, tmp_path_factory) -> dict[str, list[tuple]]:
    """The rows of an inline evaluation of the toy run's checkpoints on REFERENCE_TASKS, which every executor,
    fault or cluster must reproduce (tests/test_evaluate.py checks inline evaluations against lm-eval's files)."""
    from ood_store._cli import main

    root = tmp_path_factory.mktemp("reference")
    db = root / "store.duckdb"
    result = CliRunner().invoke(main, toy_evaluate_args(db, toy_run, root / "out", tasks=REFERENCE_TASKS))
    assert result.exit_code == 0, result.output
    return evaluation_rows(db)


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory) -> dict[str, Path]:
    """A tiny model finetuned for 8 steps with checkpoints 0, 4, 8, and local lm-eval tasks (built from code)."""
    from ood_store._examples import toy

    root = tmp_path_factory.mktemp("toy")
    tokenizer = toy.build_tokenizer()
    model = toy.build_model(tokenizer)
    toy.finetune(model, tokenizer, toy.training_rows(64), root / "run", steps=8, save_every=4, batch_size=8)
    toy.write_tasks(root / "tasks", toy.toy_sets(16))  # TOY_TASKS and toy_ood_reported
    return {"run": root / "run", "tasks": root / "tasks"}


#: The toy training split of the finetuning tests: how many rows (toy.training_rows), and the tasks they evaluate.
FINETUNE_ROWS = 256
FINETUNE_TASKS = ("toy_nli", "toy_ood_long", "toy_ood_never")


@pytest.fixture(scope="session")
def finetune_inputs(tmp_path_factory) -> dict[str, Path]:
    """What a finetuning study of the toy needs, built from code: the base model (the demo's untrained 42k-parameter
    GPT-2, saved with save_pretrained), a data folder with its training split (toy_nli.train.jsonl: premise,
    hypothesis, label 0/1) and the toy lm-eval tasks (12 documents each)."""
    import json

    from ood_store._examples import toy

    root = tmp_path_factory.mktemp("finetune-inputs")
    tokenizer = toy.build_tokenizer()
    toy.save_checkpoint(toy.build_model(tokenizer), tokenizer, root / "toy-gpt2")
    (root / "data").mkdir()
    rows = "".join(json.dumps(row) + "\n" for row in toy.training_rows(FINETUNE_ROWS))
    (root / "data" / "toy_nli.train.jsonl").write_text(rows, "utf-8")
    toy.write_tasks(root / "tasks", toy.toy_sets(12))
    return {"base": root / "toy-gpt2", "data": root / "data", "tasks": root / "tasks"}


# The saved analysis that the export and plot tests read (linear, Pearson, 3 Pythia runs × 6 pairs).
PYTHIA_ANALYSIS = "pythia-linear"
PYTHIA_IN_DOMAIN = "lambada_openai"
PYTHIA_OOD = ("arc_easy", "piqa", "sciq", "winogrande")


@pytest.fixture(scope="session", autouse=True)
def _nothing_written_into_the_checkout():
    """evaluate's default output and work folders are the current folder's: a test that forgets its own
    output_dir writes them into the checkout, where a later run finds them (stale ones broke tests once)."""
    root = Path(__file__).resolve().parents[1]
    names = ("lm-eval-results", "lm-eval-results-work")
    before = {name for name in names if (root / name).exists()}
    yield
    written = sorted(name for name in names if (root / name).exists() and name not in before)
    assert not written, f"a test wrote {written} into the checkout: give it an output_dir under tmp_path"


@pytest.fixture(scope="session")
def analysis_db(tmp_path_factory) -> Path:
    """A store with the three Pythia runs (family and size set) and the saved analysis PYTHIA_ANALYSIS.

    Read-only for the tests that use it: copy it first to change it.
    """
    import ood_store
    from ood_store._analysis import partial_correlations

    db = tmp_path_factory.mktemp("analysis") / "store.duckdb"
    with ood_store.open(db) as store:
        for size in PYTHIA_SIZES:
            assert store.ingest(pythia_files(size), attributes={"family": "pythia", "size": size}).ok
        # Saved as `ood-store analyze --save` saves it: the parameters come from the result.
        store.save_analysis(PYTHIA_ANALYSIS, partial_correlations(store, PYTHIA_IN_DOMAIN, PYTHIA_OOD))
    return db


# The planted study of 24 runs (4 families x 2 sizes x 3 seeds) x 8 OOD testsets (ood_store/_examples/planted.py).
PLANTED_ANALYSIS = "planted"
PLANTED_NAMES = FIXTURES / "planted-names.yaml"


@pytest.fixture(scope="session")
def planted_db(tmp_path_factory) -> Path:
    """A store with the planted study ingested from its lm-eval files and its analysis saved (read-only for tests)."""
    import ood_store
    from ood_store._examples import planted

    root = tmp_path_factory.mktemp("planted")
    with ood_store.open(root / "store.duckdb") as store:
        planted.build(store, root / "files")
    return root / "store.duckdb"


def sql_rows(db: Path, sql: str, *params) -> list[tuple]:
    """The rows of ``sql`` on the store file ``db``, read with DuckDB alone (not ood-store)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


# Labels of the suite's testsets that its default neutral scheme drops, per the dataset cards: SNLI's and
# MNLI's neutral 1 and SNLI's -1 without a gold label, ANLI's neutral 1.
SUITE_DROPPED = {"ood_nli_snli": {1, -1}, "ood_nli_mnli": {1}, **{f"ood_nli_anli_r{n}": {1} for n in (1, 2, 3)}}


def suite_documents(rows: int) -> int:
    """The documents scored of a generated suite (benchmarks' suite_data) of ``rows`` rows per testset: the
    fixture rows (tests/fixtures/nli-suite) repeated, less the labels the default neutral scheme drops."""
    from itertools import cycle, islice

    count = 0
    for path in sorted((FIXTURES / "nli-suite").glob("ood_nli_*.jsonl")):
        if path.name.endswith(".train.jsonl"):
            continue
        labels = [json.loads(line)["label"] for line in path.read_text("utf-8").splitlines()]
        dropped = SUITE_DROPPED.get(path.name.removesuffix(".jsonl"), set())
        count += sum(label not in dropped for label in islice(cycle(labels), rows))
    return count


def benchmark(name: str):
    """The module ``benchmarks/NAME.py``, whose trials a test runs (benchmarks/ joins the import path)."""
    import importlib

    folder = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if folder not in sys.path:
        sys.path.append(folder)
    return importlib.import_module(name)


def tool(name: str) -> str:
    """The path of a TeX, poppler or pandoc tool; CI installs them (make latex), elsewhere a missing one skips."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed; CI installs it with `make latex`")
        pytest.skip(f"{name} is not installed (make latex installs it)")
    return path


def pdflatex(folder: Path, name: str, text: str) -> str:
    """Compile ``text`` as ``name.tex`` in ``folder`` with pdflatex (it must succeed); returns its log."""
    (folder / f"{name}.tex").write_text(text)
    run = subprocess.run(
        [tool("pdflatex"), "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    return (folder / f"{name}.log").read_text(errors="replace")


def pdf_text(folder: Path, name: str) -> str:
    """The text of ``name.pdf`` as pdftotext -layout reads it."""
    return subprocess.run([tool("pdftotext"), "-layout", f"{name}.pdf", "-"], cwd=folder, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip


# The inspect_ai logs the inspect tests read: written by inspect_ai itself, offline (its mockllm
# provider answers with the outputs given; the usage is given too, so that it counts no tokens).
INSPECT_TARGETS = ("2", "4", "6", "8", "10", "12")
INSPECT_ANSWERS = {"step100": ("2", "4", "x", "8", "x", "x"), "step200": ("2", "4", "6", "8", "x", "12")}


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory) -> dict[str, Path]:
    """Logs of one task scored by two scorers at two checkpoints (.eval at step 100, .eval and .json
    at step 200, both named by a revision), one of a checkpoint folder, and one of an evaluation that
    failed; name -> path."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import generate, solver

    root = tmp_path_factory.mktemp("inspect")
    samples = [Sample(input=f"What is {i + 1} + {i + 1}?", target=t) for i, t in enumerate(INSPECT_TARGETS)]
    task = Task(dataset=samples, solver=generate(), scorer=[match(), includes()], name="toy_add")

    def outputs(answers):
        out = []
        for answer in answers:
            output = ModelOutput.from_content("mockllm/model", f"The answer is {answer}")
            output.usage = ModelUsage(input_tokens=8, output_tokens=4, total_tokens=12)
            out.append(output)
        return out

    logs = {}
    for name, revision, log_format in (("step100", "step100", "eval"), ("step200", "step200", "eval"),
                                        ("step200-json", "step200", "json")):  # fmt: skip
        folder = root / name
        (log,) = inspect_eval(
            task,
            model="mockllm/model",
            model_args={"revision": revision, "custom_outputs": outputs(INSPECT_ANSWERS[revision])},
            log_dir=str(folder),
            log_format=log_format,
            display="none",
        )
        assert log.status == "success"
        logs[name] = Path(log.location)

    # a local checkpoint folder as the model: the path names run and step
    (log,) = inspect_eval(
        task,
        model="mockllm/runs/opt-mnli-s1/checkpoint-500",
        model_args={"custom_outputs": outputs(INSPECT_ANSWERS["step100"])},
        log_dir=str(root / "checkpoint"),
        display="none",
    )
    assert log.status == "success"
    logs["checkpoint"] = Path(log.location)

    @solver
    def broken():
        async def solve(state, generate):
            raise RuntimeError("the model server went away")

        return solve

    failing = Task(dataset=samples[:1], solver=broken(), scorer=match(), name="toy_add")
    (log,) = inspect_eval(failing, model="mockllm/model", log_dir=str(root / "failed"), display="none")
    assert log.status == "error"
    logs["failed"] = Path(log.location)
    return logs


# A store whose names come from files anyone could write: run, task and attribute names holding markup,
# quotes, `</script>` and `{{` (the viewer must show them as text), with one disagreeing repeated evaluation
# (campaign "recheck", which the run's series then mix) and one run without one task.
HOSTILE_RUNS = ('lab/<script>alert("run")</script>', "lab/\"quoted\" 'run' {{run}}", "lab/plain-a", "lab/plain-b")
HOSTILE_TASKS = ("mnli", "</script><script>alert('task')</script>", "\"q\" 'task' {{7*7}}", "<b>bold</b>&amp;", "plain")
HOSTILE_FAMILIES = ("<i>fam</i>", "{{fam}}", "<i>fam</i>", "{{fam}}")
HOSTILE_ANALYSIS = "<script>alert('analysis')</script>"
HOSTILE_STEPS = tuple(range(0, 1200, 100))


def _lm_eval_file(path: Path, run: str, step: int, scores: dict[str, float], date: float) -> None:
    """A minimal lm-eval v0.4 results file of one checkpoint (the layout of ood_store/_examples/planted.py's)."""
    doc = {
        "results": {t: {"alias": t, "acc,none": v, "acc_stderr,none": 0.01} for t, v in scores.items()},
        "versions": dict.fromkeys(scores, 1.0),
        "n-shot": dict.fromkeys(scores, 0),
        "config": {"model": "hf", "model_args": f"pretrained={run},revision=step{step}"},
        "lm_eval_version": "0.4.13",
        "date": date,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="session")
def hostile_db(tmp_path_factory) -> Path:
    """HOSTILE_RUNS x HOSTILE_STEPS x HOSTILE_TASKS (lab/plain-b without "plain"), ingested from lm-eval files;
    family and seed set; a second evaluation of lab/plain-a at step 100 (campaign "recheck") giving mnli another
    value; the partial correlations saved as HOSTILE_ANALYSIS. Read-only for tests."""
    import numpy as np

    import ood_store
    from ood_store._analysis import partial_correlations

    root = tmp_path_factory.mktemp("hostile")
    for k, run in enumerate(HOSTILE_RUNS):
        rng = np.random.default_rng(k)
        for i, step in enumerate(HOSTILE_STEPS):
            z = 0.4 + 0.03 * i + rng.normal(0, 0.005)
            scores = {t: float(np.clip(0.2 + 0.5 * z + rng.normal(0, 0.02), 0, 1)) for t in HOSTILE_TASKS[1:]}
            scores = {"mnli": round(z, 5), **{t: round(v, 5) for t, v in scores.items()}}
            if run == "lab/plain-b":
                del scores["plain"]
            _lm_eval_file(root / "files" / f"run{k}" / f"step-{step}" / "results.json", run, step, scores, 1.7e9 + step)
    again = {t: 0.5 for t in HOSTILE_TASKS}
    _lm_eval_file(root / "recheck" / "results.json", "lab/plain-a", 100, again, 1.8e9)
    with ood_store.open(root / "store.duckdb") as store:
        assert store.ingest([root / "files"], campaign="first").ok
        assert store.ingest([root / "recheck"], campaign="recheck").ok
        for k, (run, family) in enumerate(zip(HOSTILE_RUNS, HOSTILE_FAMILIES, strict=True)):
            store.set_run_attributes(run, {"family": family, "seed": str(k + 1)})
        result = partial_correlations(store, "mnli", HOSTILE_TASKS[1:4])
        store.save_analysis(HOSTILE_ANALYSIS, result)
    return root / "store.duckdb"


def suite_checkpoint(folder: Path, positions: int) -> Path:
    """A tiny GPT-2 of ``positions`` positions and a tokenizer trained on the suite's fixture rows
    (fixtures/nli-suite) and every shipped pattern and verbalizer (each answer one token), saved in ``folder``."""
    from ood_store._evaluate.suite.variant import PATTERNS
    from ood_store._examples import toy

    texts = [
        value
        for path in sorted((FIXTURES / "nli-suite").glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
        for value in json.loads(line).values()
        if isinstance(value, str)
    ]
    texts += [p.text.format(premise="it", hypothesis="it") + v for p in PATTERNS.values() for v in p.verbalizers] * 40
    tokenizer = toy.build_tokenizer(texts, vocab_size=600)
    return toy.save_checkpoint(toy.build_model(tokenizer, n_positions=positions), tokenizer, folder)
