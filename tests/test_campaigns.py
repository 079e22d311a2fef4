"""Evaluation campaigns: derived from the folder a file sits in, counted by `runs`, reported by ingest,
selected by analyses. On real files: EleutherAI's pythia-410m-deduped evaluated zero-shot at 27
checkpoints and, in a later `baseline` campaign, at 10 (fixtures/lm-eval-real/pythia-campaigns).
Expected values are read from the JSON files."""

from __future__ import annotations

import json
import shutil

import pytest

import ood_store
from conftest import REAL, V04
from ood_store._analysis import partial_correlations
from ood_store._cli import main

FOLDER = REAL / "pythia-campaigns" / "pythia-410m-deduped"
ZERO = sorted((FOLDER / "zero-shot").glob("*.json"))
BASE = sorted((FOLDER / "baseline").glob("*.json"))
OOD = ("crows_pairs_french", "crows_pairs_english_age")


def args_of(path) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in json.loads(path.read_text())["config"]["model_args"].split(","))


def step_of(path) -> int:
    return int(args_of(path)["revision"].removeprefix("step"))


RUN = args_of(ZERO[0])["pretrained"]
ZERO_STEPS, BASE_STEPS = {step_of(p) for p in ZERO}, {step_of(p) for p in BASE}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """A store with both campaigns, zero-shot ingested first; the CLI's output of the second ingest."""
    from click.testing import CliRunner

    db = tmp_path_factory.mktemp("campaigns") / "store.duckdb"
    runner = CliRunner()
    first = runner.invoke(main, ["--db", str(db), "ingest", "-q", str(FOLDER / "zero-shot")])
    assert first.exit_code == 0 and first.output == "", first.output
    second = runner.invoke(main, ["--db", str(db), "ingest", str(FOLDER / "baseline"), "--attr", "size=410m"])
    assert second.exit_code == 0, second.output
    return db, second.output


def test_the_campaign_is_the_folder_a_file_sits_in(both):
    db, _ = both
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT source_path, campaign FROM evaluations").rows()
    expected = {str(p.resolve()): p.parent.name for p in (*ZERO, *BASE)}
    assert dict(rows) == expected


def test_runs_count_checkpoints_per_campaign(both, runner):
    db, _ = both
    result = runner.invoke(main, ["--db", str(db), "runs", "-f", "json"])
    [row] = json.loads(result.output)
    assert row["run"] == RUN
    assert row["checkpoints"] == len(ZERO_STEPS | BASE_STEPS) == 36
    assert row["campaigns"] == f"baseline: {len(BASE_STEPS)}, zero-shot: {len(ZERO_STEPS)}"
    assert row["evaluations"] == len(ZERO) + len(BASE)


def test_ingest_says_what_a_second_campaign_adds(both):
    _, output = both
    added = len(BASE_STEPS - ZERO_STEPS)
    assert added == 9
    lines = output.splitlines()
    assert (
        f"Campaign baseline adds {added} checkpoints to run {RUN}, which had {len(ZERO_STEPS)} from zero-shot." in lines
    )
    assert any(
        line.startswith("Their series mix campaigns unless an analysis picks one with --campaign") for line in lines
    )


def test_disagreements_are_grouped_by_run_and_campaigns(both):
    db, output = both
    shared = sorted(ZERO_STEPS & BASE_STEPS)
    differing = 0
    for step in shared:
        zero = json.loads(next(p for p in ZERO if step_of(p) == step).read_text())["results"]
        base = json.loads(next(p for p in BASE if step_of(p) == step).read_text())["results"]
        for task, entry in base.items():
            differing += sum(
                1 for key, value in entry.items() if not key.endswith("_stderr") and zero[task][key] != value
            )
    assert differing > 0
    lines = output.splitlines()
    score = "score" if differing == 1 else "scores"
    assert (
        f"  run {RUN}: {differing} {score} at {len(shared)} step differ between campaigns baseline and zero-shot"
        in lines
    )
    assert f"""  See them: ood-store --db {db} query "SELECT * FROM score_conflicts WHERE run = '{RUN}'\"""" in lines


def test_the_conflicts_the_summary_points_to_print_as_csv(both, runner):
    """`query "SELECT * FROM score_conflicts" --format csv`: one row per differing score, lists as JSON."""
    import csv
    import io

    db, _ = both
    expected = {}
    for step in sorted(ZERO_STEPS & BASE_STEPS):
        zero = json.loads(next(p for p in ZERO if step_of(p) == step).read_text())["results"]
        base = json.loads(next(p for p in BASE if step_of(p) == step).read_text())["results"]
        for task, entry in base.items():
            for key, value in entry.items():
                if not key.endswith("_stderr") and zero[task][key] != value:
                    expected[(step, task, key)] = sorted([zero[task][key], value])
    result = runner.invoke(main, ["--db", str(db), "query", "SELECT * FROM score_conflicts", "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output)))
    got = {(int(r["step"]), r["task"], r["metric"]): sorted(json.loads(r["value_list"])) for r in rows}
    assert got == expected and len(rows) == 30  # the 30 of the README's tour
    assert {tuple(sorted(json.loads(r["campaigns"]))) for r in rows} == {("baseline", "zero-shot")}


def test_tasks_list_the_campaigns_that_hold_them(both, runner):
    db, _ = both
    result = runner.invoke(main, ["--db", str(db), "tasks", "-f", "json"])
    rows = {(r["task"], r["metric"]): r["campaigns"] for r in json.loads(result.output)}
    assert rows[("crows_pairs_english", "pct_stereotype")] == "baseline, zero-shot"
    assert rows[("arc_easy", "acc")] == "zero-shot"


def checkpoints_with(files, tasks) -> int:
    steps = set()
    for path in files:
        results = json.loads(path.read_text())["results"]
        if all(t in results and "pct_stereotype" in results[t] for t in tasks):
            steps.add(step_of(path))
    return len(steps)


def test_campaign_selection_changes_n(both):
    db, _ = both
    tasks = ("crows_pairs_english", *OOD)
    expected = {
        None: len({step_of(p) for p in (*ZERO, *BASE)}),
        "zero-shot": checkpoints_with(ZERO, tasks),
        "baseline": checkpoints_with(BASE, tasks),
    }
    assert expected == {None: 36, "zero-shot": 27, "baseline": 10}
    with ood_store.open(db, read_only=True) as store:
        for campaign, n in expected.items():
            result = partial_correlations(store, "crows_pairs_english", OOD, metric="pct_stereotype", campaign=campaign)
            assert result.table["n"].to_list() == [n], campaign
            assert result.options.campaign == campaign


def test_the_campaign_of_one_campaign_uses_its_own_values(both):
    """At step 143000 both campaigns hold a value: `--campaign baseline` reads baseline's, as the file says."""
    db, _ = both
    base = json.loads(next(p for p in BASE if step_of(p) == 143000).read_text())["results"]
    zero = json.loads(next(p for p in ZERO if step_of(p) == 143000).read_text())["results"]
    task = next(t for t in base if base[t]["pct_stereotype"] != zero[t]["pct_stereotype"])
    with ood_store.open(db, read_only=True) as store:
        rows = store.query(
            "SELECT campaign, value FROM campaign_scores "
            "WHERE step = 143000 AND task = $t AND metric = 'pct_stereotype'",
            t=task,
        ).rows()
    assert sorted(rows) == [("baseline", base[task]["pct_stereotype"]), ("zero-shot", zero[task]["pct_stereotype"])]


def test_analyze_and_compare_take_campaign_and_where(both, runner):
    db, _ = both
    common = ["--in-domain", "crows_pairs_english", "--ood", ",".join(OOD), "--metric", "pct_stereotype"]
    result = runner.invoke(main, ["--db", str(db), "analyze", *common, "--campaign", "baseline", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert [row["n"] for row in json.loads(result.output)] == [len(BASE_STEPS)]
    result = runner.invoke(main, ["--db", str(db), "analyze", *common, "--where", "size=4*", "-f", "json"])
    assert [row["run"] for row in json.loads(result.output)] == [RUN]
    result = runner.invoke(main, ["--db", str(db), "analyze", *common, "--where", "size=7b"])
    assert result.exit_code == 1
    assert result.output == "Error: --where: no run has size=7b (see `ood-store runs`)\n"
    result = runner.invoke(main, ["--db", str(db), "compare", *common, "--campaign", "five-shot"])
    assert result.output == "Error: --campaign: no campaign 'five-shot' in the store; it has: baseline, zero-shot\n"


def test_campaign_flag_and_lm_eval_layouts(tmp_path):
    """--campaign wins; lm-eval's <output>/<model_name_sanitized>/ folder is looked past; a file in
    ood-store's own layout (<output_dir>/<run>/step-N/<model>/, or step-N/unit-<hash>/<model>/ since evaluate
    works in units) has no campaign."""
    mednli = next((V04 / "araag2-MedNLI").rglob("results_*.json"))
    doc = json.loads(mednli.read_text())
    lm_eval = tmp_path / "outputs" / "MedNLI" / "0-shot" / doc["model_name_sanitized"] / mednli.name
    lm_eval.parent.mkdir(parents=True)
    shutil.copyfile(mednli, lm_eval)
    own = tmp_path / "lm-eval-results" / "my-run" / "step-5" / "__runs__my-run__checkpoint-5" / ZERO[0].name
    own.parent.mkdir(parents=True)
    shutil.copyfile(ZERO[0], own)
    flagged = tmp_path / "elsewhere" / ZERO[1].name
    flagged.parent.mkdir()
    shutil.copyfile(ZERO[1], flagged)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest([lm_eval]).ok
        assert store.ingest([own], overrides=ood_store._ingest.Overrides(run="my-run", step=5)).ok
        assert store.ingest([flagged], campaign="rerun").ok
        rows = dict(store.query("SELECT source_path, campaign FROM evaluations").rows())
    assert rows == {str(lm_eval.resolve()): "0-shot", str(own.resolve()): None, str(flagged.resolve()): "rerun"}


def test_files_stored_before_campaigns_get_theirs_when_ingested_again(tmp_path):
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest(ZERO[:3]).ok
        store.connection.execute("UPDATE evaluations SET campaign = NULL")  # as a store of schema 3 holds them
        report = store.ingest(ZERO[:3])
        rows = store.query("SELECT DISTINCT campaign FROM evaluations").rows()
    assert len(report.present) == 3 and rows == [("zero-shot",)]
