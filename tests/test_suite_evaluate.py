"""The ood_nli suite evaluated with prompt variants and in-context examples: a tiny model, offline.

Expected prompts are the patterns filled with Python's str.format from the
fixture rows (read with json), and few-shot examples are found among the
rows of the fixture's training file; lm-eval renders its prompts with Jinja,
so the two agree only if the variant's template is right. What lm-eval
recorded is read back from its own results and samples files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES
from ood_store._cli import main

SUITE_DATA = FIXTURES / "nli-suite"
RUN = "toy/nli-variants"
TASKS = ("ood_nli_rte", "ood_nli_snli", "ood_nli_hans")
# Two patterns and two verbalizer sets: one by name through a run file, one written out on the command line.
CUSTOM = ("Premise: {premise}\nHypothesis: {hypothesis}\nAnswer:", " True,False", (" True", " False"))
MINIMAL = ("{premise} {hypothesis} ?", (" Yes", " No"))
# Native labels that answer with the first verbalizer (entailed), per task, from the dataset cards;
# SNLI's neutral (1) and no-gold (-1) rows are dropped under the default neutral scheme.
ENTAILED = {"ood_nli_rte": {0}, "ood_nli_snli": {0}, "ood_nli_hans": {0}}
DROPPED = {"ood_nli_rte": set(), "ood_nli_snli": {1, -1}, "ood_nli_hans": set()}

shared_store = pytest.mark.xdist_group("suite-variants")


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def kept_rows(task: str, split_file: str) -> list[dict]:
    return [r for r in rows_of(SUITE_DATA / split_file) if r["label"] not in DROPPED[task]]


def pair(row: dict) -> tuple[str, str]:
    return (row["premise"], row["hypothesis"]) if "premise" in row else (row["sentence1"], row["sentence2"])


def samples_of(results_file: Path, task: str) -> list[dict]:
    stamp = results_file.name.removeprefix("results_").removesuffix(".json")
    path = results_file.parent / f"samples_{task}_{stamp}.jsonl"
    return sorted(rows_of(path), key=lambda s: s["doc_id"])


def args(db: Path, toy_run, out: Path, *extra: str) -> list[str]:
    return [
        "--db", str(db), "evaluate", str(toy_run["run"]), "--run", RUN, "--tasks", ",".join(TASKS),
        "--data-dir", str(SUITE_DATA), "--output-dir", str(out), "--batch-size", "8", "-q", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def evaluated(toy_run, tmp_path_factory):
    """The toy run evaluated on three suite tasks under two variants, into one store."""
    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("suite-variants")
    db, out = root / "store.duckdb", root / "out"
    run_file = root / "run.toml"
    run_file.write_text(f'run = "{RUN}"\nfamily = "toy"\ntrain_shots = 16\n\n[suite]\npattern = "minimal"\n')
    first = CliRunner().invoke(main, [a for a in args(db, toy_run, out, "--run-file", str(run_file)) if a != "-q"])
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(main, args(db, toy_run, out, "--pattern", CUSTOM[0], "--verbalizer", CUSTOM[1]))
    assert second.exit_code == 0, second.output
    return {"db": db, "out": out, "output": first.output}


def stored_evaluations(db: Path) -> list[tuple[int, str, dict]]:
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT step, source_path, config FROM evaluations ORDER BY evaluation_id").rows()
    return [(step, path, json.loads(config)) for step, path, config in rows]


@shared_store
def test_each_variant_prompts_with_its_own_pattern_and_verbalizers(evaluated):
    from ood_store._evaluate.suite.variant import Variant

    key = Variant.of(CUSTOM[0], CUSTOM[1]).key
    checked = 0
    for _, path, config in stored_evaluations(evaluated["db"]):
        variant = config["ood_nli"]["variant"]
        pattern, verbalizers = (
            (MINIMAL[0], MINIMAL[1]) if variant["pattern_name"] == "minimal" else (CUSTOM[0], CUSTOM[2])
        )
        suffix = "minimal" if variant["pattern_name"] == "minimal" else key
        # The recorded pattern and verbalizers are the ones given.
        assert variant["pattern"] == pattern and tuple(variant["verbalizers"]) == verbalizers
        results = json.loads(Path(path).read_text())
        for task in TASKS:
            name = f"{task}__{suffix}"
            assert results["configs"][name]["metadata"]["ood_nli"]["pattern"] == pattern
            rows = kept_rows(task, f"{task}.jsonl")
            samples = samples_of(Path(path), name)
            assert len(samples) == len(rows)
            for sample, row in zip(samples, rows, strict=True):
                prompt = pattern.format(premise=pair(row)[0], hypothesis=pair(row)[1])
                assert [a["arg_0"] for a in sample["arguments"].values()] == [prompt, prompt]
                assert [a["arg_1"] for a in sample["arguments"].values()] == list(verbalizers)
                assert sample["target"] == str(0 if row["label"] in ENTAILED[task] else 1)
                assert sample["prompt_hash"] == hashlib.sha256(prompt.encode()).hexdigest()
                checked += 1
    assert checked == 2 * 3 * sum(len(kept_rows(t, f"{t}.jsonl")) for t in TASKS)  # 2 variants x 3 checkpoints


@shared_store
def test_variants_are_separate_score_keys(evaluated):
    from ood_store._evaluate.suite.variant import Variant

    key = Variant.of(CUSTOM[0], CUSTOM[1]).key
    assert key.startswith("p") and key.endswith("__v-True-False")
    with ood_store.open(evaluated["db"], read_only=True) as store:
        tasks = store.query(
            "SELECT task, count(*) AS n FROM scores WHERE metric = 'acc' GROUP BY task ORDER BY task"
        ).rows()
        conflicts = store.query("SELECT count(*) FROM score_conflicts").item()
        stored_samples = store.query("SELECT task, prompt_hash FROM samples_all WHERE doc_id = 0 AND step = 0").rows()
        attributes = store.query("SELECT attributes FROM runs").item()
    assert tasks == sorted((f"{t}__{s}", 3) for t in TASKS for s in ("minimal", key))
    assert conflicts == 0
    row = rows_of(SUITE_DATA / "ood_nli_rte.jsonl")[0]
    prompts = {t: h for t, h in stored_samples}
    assert (
        prompts["ood_nli_rte__minimal"]
        == hashlib.sha256(MINIMAL[0].format(premise=row["sentence1"], hypothesis=row["sentence2"]).encode()).hexdigest()
    )
    assert json.loads(attributes) == {"train_shots": 16}  # the run file's [suite] table is not an attribute


@shared_store
def test_the_store_lists_its_variants_and_gives_each_runs_scores_under_plain_names(evaluated, runner):
    from ood_store._evaluate.suite.stored import variant_scores, variants
    from ood_store._evaluate.suite.variant import Variant

    key = Variant.of(CUSTOM[0], CUSTOM[1]).key
    with ood_store.open(evaluated["db"], read_only=True) as store:
        listed = variants(store).select("run", "variant", "pattern", "verbalizers", "neutral", "checkpoints").rows()
        minimal = variant_scores(store, "minimal").filter(metric="acc")
        with pytest.raises(ood_store.OodStoreError, match="has several ood_nli variants"):
            variant_scores(store)
        raw = dict(
            ((t, s), v) for t, s, v in store.query("SELECT task, step, value FROM scores WHERE metric = 'acc'").rows()
        )
    assert listed == sorted(
        [(RUN, "minimal", MINIMAL[0], list(MINIMAL[1]), "drop", 3), (RUN, key, CUSTOM[0], list(CUSTOM[2]), "drop", 3)],
        key=lambda r: r[1],
    )
    assert {(t, s): v for t, s, v in minimal.select("task", "step", "value").rows()} == {
        (t.removesuffix("__minimal"), s): v for (t, s), v in raw.items() if t.endswith("__minimal")
    }
    printed = runner.invoke(main, ["--db", str(evaluated["db"]), "suite", "variants", "--format", "csv"])
    assert printed.exit_code == 0 and printed.output.count(RUN) == 2


@shared_store
def test_summary_says_which_prompt_ran(evaluated):
    assert (
        "ood_nli prompt: minimal '{premise} {hypothesis} ?' -> ' Yes' / ' No', neutral rows dropped"
        in evaluated["output"]
    )


@shared_store
def test_in_domain_by_its_testset_name(evaluated, runner, tmp_path):
    import shutil

    db = tmp_path / "store.duckdb"
    shutil.copyfile(evaluated["db"], db)
    both = runner.invoke(main, ["--db", str(db), "analyze", "--in-domain", "rte", "--format", "csv"])
    assert both.exit_code == 1
    assert both.output.startswith("Error: --in-domain: no task 'rte' in the store; the ood_nli suite has ood_nli_rte__")
    import duckdb

    con = duckdb.connect(str(db))  # keep one variant's scores: the name then stands for it
    con.execute("DELETE FROM evaluation_scores WHERE task NOT LIKE '%__minimal'")
    con.close()
    one = runner.invoke(main, ["--db", str(db), "analyze", "--in-domain", "rte", "--format", "csv", "--save", "rte"])
    assert one.exit_code == 0, one.output
    lines = one.output.splitlines()
    assert lines[0] == "Note: in-domain task 'rte' read as 'ood_nli_rte__minimal', the one stored task of that name"
    assert "ood_nli_hans__minimal,ood_nli_snli__minimal" in lines[2]
    with ood_store.open(db, read_only=True) as store:  # the saved parameters name the task as the store does
        assert store.analysis("rte").options.in_domain == "ood_nli_rte__minimal"


def test_few_shot_prompts_hold_two_solved_training_examples_the_same_at_every_checkpoint(toy_run, tmp_path, runner):
    db, out = tmp_path / "store.duckdb", tmp_path / "out"
    result = runner.invoke(
        main, args(db, toy_run, out, "--num-fewshot", "2", "--pattern", "minimal") + ["--tasks", "ood_nli_snli"]
    )
    assert result.exit_code == 0, result.output
    # Solved examples: the training rows that survive the neutral scheme, each with its answer.
    solved = {
        f"{r['premise']} {r['hypothesis']} ? {'Yes' if r['label'] == 0 else 'No'}"
        for r in kept_rows("ood_nli_snli", "ood_nli_snli.train.jsonl")
    }
    test_rows = kept_rows("ood_nli_snli", "ood_nli_snli.jsonl")
    prompts_by_step = {}
    for _, path, config in stored_evaluations(db):
        results = json.loads(Path(path).read_text())
        assert results["config"]["fewshot_seed"] == 1234  # lm-eval's default: fixed, recorded
        assert results["n-shot"]["ood_nli_snli__minimal"] == 2
        assert config["ood_nli"]["tasks"]["ood_nli_snli__minimal"]["fewshot_split"] == "train"
        prompts = []
        for sample, row in zip(samples_of(Path(path), "ood_nli_snli__minimal"), test_rows, strict=True):
            prompt = sample["arguments"]["gen_args_0"]["arg_0"]
            *examples, question = prompt.split("\n\n")
            assert question == f"{row['premise']} {row['hypothesis']} ?"
            assert len(examples) == 2 and set(examples) <= solved and examples[0] != examples[1]
            prompts.append(prompt)
        prompts_by_step[path] = prompts
    assert len(prompts_by_step) == 3
    assert len({tuple(p) for p in prompts_by_step.values()}) == 1  # identical across checkpoints
    with ood_store.open(db, read_only=True) as store:
        shots = store.query("SELECT DISTINCT num_fewshot FROM scores").rows()
    assert shots == [(2,)]


def test_a_run_files_suite_table_gives_the_prompt_length_unless_it_is_given(tmp_path):
    from ood_store._evaluate.request import resolve
    from ood_store._evaluate.suite.variant import Variant

    run_file = tmp_path / "run.toml"
    run_file.write_text(f'run = "{RUN}"\n[suite]\npattern = "minimal"\nmax_length = 128\ntruncation = "right"\n')
    suite = {"pattern": None, "verbalizer": None, "neutral": None}
    run, options = resolve(run=None, run_file=run_file, attribute_file=None, suite=suite, options={})
    assert run == RUN
    assert (options["variant"], options["max_length"], options["truncation"]) == (Variant.of("minimal"), 128, "right")
    _, options = resolve(run=None, run_file=run_file, attribute_file=None, suite=suite, options={"max_length": 64})
    assert options["max_length"] == 64  # given wins over the file


def test_a_bad_suite_table_in_a_run_file_is_one_line(toy_run, tmp_path, runner):
    db = tmp_path / "store.duckdb"
    for table, message in (
        ('[suite]\npattern = "{premise} {answer}"\n', "suite.pattern: '{premise} {answer}': unknown field {answer}"),
        (
            '[suite]\nprompt = "minimal"\n',
            "suite.prompt: unknown key (a [suite] table has pattern, verbalizer, neutral, max_length, truncation)",
        ),
        ('[suite]\nneutral = "maybe"\n', "suite.neutral: expected one of drop, no, got 'maybe'"),
        ('[suite]\ntruncation = "both"\n', "suite.truncation: expected left or right, got 'both'"),
    ):
        run_file = tmp_path / "run.toml"
        run_file.write_text(f'run = "{RUN}"\n{table}')
        result = runner.invoke(main, args(db, toy_run, tmp_path / "out", "--run-file", str(run_file)))
        assert result.exit_code == 1
        assert result.output.startswith(f"Error: {run_file}: {message}"), result.output
    assert not db.exists() or not list((tmp_path / "out").glob("*"))


def test_hans_per_heuristic_and_label_sub_tasks_and_the_docs_recipe_agree(toy_run, tmp_path, runner):
    import re

    db, out = tmp_path / "store.duckdb", tmp_path / "out"
    checkpoint = str(toy_run["run"] / "checkpoint-8")
    result = runner.invoke(
        main,
        ["--db", str(db), "evaluate", checkpoint, "--run", "toy-hans",
         "--tasks", "ood_nli_hans,ood_nli_hans_heuristics",
         "--data-dir", str(SUITE_DATA), "--output-dir", str(out), "--batch-size", "8", "-q"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [(_, path, _)] = stored_evaluations(db)
    samples = samples_of(Path(path), "ood_nli_hans")
    # The suite page's recipe, run on this evaluation's samples files.
    readme = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "suite.md").read_text()
    [recipe] = re.findall(
        r'^ood-store query --allow-files lm-eval-results "(SELECT doc\.heuristic.*)"$', readme, flags=re.MULTILINE
    )
    sql = recipe.replace("lm-eval-results/RUN/step-N/*/*/", f"{Path(path).parent}/")  # RUN/step-N/UNIT/MODEL/
    allowed = ["--allow-files", str(out)]  # the README's lm-eval-results
    printed = runner.invoke(main, ["--db", str(db), "query", *allowed, sql, "--format", "json"])
    by_recipe = {(r["heuristic"], r["label"]): (r["pairs"], r["acc"]) for r in json.loads(printed.output)}
    with ood_store.open(db, read_only=True) as store:
        stored = dict(store.query("SELECT task, value FROM scores WHERE task LIKE 'ood_nli_hans_%'").rows())
    assert len(stored) == 6
    for heuristic in ("lexical_overlap", "subsequence", "constituent"):
        for subset, label in (("entailed", 0), ("non_entailed", 1)):
            group = [s["acc"] for s in samples if (s["doc"]["heuristic"], s["doc"]["label"]) == (heuristic, label)]
            assert by_recipe[(heuristic, label)] == (len(group), pytest.approx(sum(group) / len(group)))
            assert stored[f"ood_nli_hans_{heuristic}_{subset}"] == pytest.approx(sum(group) / len(group))
