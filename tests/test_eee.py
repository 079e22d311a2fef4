"""Every Eval Ever: export validated by the every-eval-ever package's own validator, import of its files."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES, PYTHIA_SIZES, V04, pythia_files, table_dump, validate_eee_folder
from ood_store._cli import main
from ood_store._export.eee import EeeSource

SCORES = "SELECT run, step, task, num_fewshot, metric, filter, value, stderr, n_samples, is_group FROM scores"
LEADERBOARD = next((V04 / "csabakecskemeti").rglob("results_*.json"))
EXAMPLE_ROOT = FIXTURES / "eee"
EXAMPLE = next(EXAMPLE_ROOT.rglob("*.json"))


@pytest.fixture(scope="module")
def pythia_export(analysis_db, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("eee") / "export"
    with ood_store.open(analysis_db, read_only=True) as store:
        report = store.export_eee(folder, source=EeeSource("pythia-study", "EleutherAI"))
    assert len(report.files) == 81 and report.not_finite == 0
    return folder


def test_the_pythia_export_validates_with_every_eval_evers_validator(pythia_export, analysis_db):
    files = validate_eee_folder(pythia_export)
    assert len(files) == 81
    with ood_store.open(analysis_db, read_only=True) as store:
        hashes = set(store.query("SELECT content_hash FROM evaluations")["content_hash"])
    docs = [json.loads(f.read_text()) for f in files]
    # one file per evaluation, named by a UUID that its content hash gives, in the datastore's layout
    assert {d["source_metadata"]["additional_details"]["ood_store.content_hash"] for d in docs} == hashes
    assert all(f.stem == d["evaluation_id"] for f, d in zip(files, docs, strict=True))
    assert {f.parent.relative_to(pythia_export).as_posix() for f in files} == {
        f"data/pythia-study/EleutherAI/pythia-v1.1-{size}" for size in PYTHIA_SIZES
    }


def test_import_of_the_export_gives_the_same_scores(pythia_export, analysis_db, tmp_path):
    with ood_store.open(analysis_db, read_only=True) as store:
        expected = sorted(store.query(SCORES).rows(), key=repr)
        runs = store.query("SELECT run, family, size FROM runs ORDER BY run").rows()
    with ood_store.open(tmp_path / "new.duckdb") as store:
        report = store.ingest([pythia_export])
        assert report.ok and len(report.ingested) == 81
        assert sorted(store.query(SCORES).rows(), key=repr) == expected
        assert store.query("SELECT run, family, size FROM runs ORDER BY run").rows() == runs
        steps = store.query("SELECT DISTINCT step FROM evaluations ORDER BY step")["step"].to_list()
        # each evaluation's row as the store it came from held it (ood_store.evaluation): read from lm-eval files
        assert set(store.query("SELECT source_format FROM evaluations")["source_format"]) == {"lm-eval"}
    assert len(steps) == 27 and steps[0] == 0 and steps[-1] == 143000


def test_exporting_again_writes_the_same_bytes(pythia_export, analysis_db, tmp_path):
    with ood_store.open(analysis_db, read_only=True) as store:
        again = store.export_eee(tmp_path / "again", source=EeeSource("pythia-study", "EleutherAI"))
    first = {f.relative_to(pythia_export): f.read_bytes() for f in pythia_export.rglob("*.json")}
    second = {f.relative_to(tmp_path / "again"): f.read_bytes() for f in again.files}
    assert first == second


def test_an_exported_evaluation_is_recognized_by_the_store_it_came_from(pythia_export, analysis_db, tmp_path):
    copy = tmp_path / "store.duckdb"
    copy.write_bytes(analysis_db.read_bytes())
    before = table_dump(copy)
    with ood_store.open(copy) as store:
        report = store.ingest([pythia_export])
    assert len(report.present) == 81 and not report.ingested
    assert table_dump(copy) == before


def test_shots_filters_and_groups_survive_the_round_trip(tmp_path):
    """lm-eval's n-shot (3-shot BBH, 5-shot MMLU-Pro: log-likelihood tasks) and a non-default filter, in a
    copy of a real Open LLM Leaderboard file with one metric's filter renamed; MMLU's aggregating groups."""
    doc = json.loads(LEADERBOARD.read_text())
    entry = doc["results"]["leaderboard_bbh_navigate"]
    entry["acc_norm,custom-extract"] = entry.pop("acc_norm,none")
    entry["acc_norm_stderr,custom-extract"] = entry.pop("acc_norm_stderr,none")
    source = tmp_path / "in" / "results_2025-01-25T04-48-43.622918.json"
    source.parent.mkdir()
    source.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "a.duckdb") as store:
        assert store.ingest([source, V04 / "saucam-PowerBot-8B" / "mmlu.json"]).ok
        expected = sorted(store.query(SCORES).rows(), key=repr)
        store.export_eee(tmp_path / "out")
    validate_eee_folder(tmp_path / "out")
    with ood_store.open(tmp_path / "b.duckdb") as store:
        assert store.ingest([tmp_path / "out"]).ok
        got = sorted(store.query(SCORES).rows(), key=repr)
    assert got == expected
    keys = {(r[2], r[3], r[4], r[5], r[9]) for r in got}
    assert ("leaderboard_bbh_navigate", 3, "acc_norm", "custom-extract", False) in keys
    assert ("leaderboard_mmlu_pro", 5, "acc", "none", False) in keys
    assert {r[2] for r in got if r[9]} == {"mmlu", "mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem"}


def test_a_hand_made_file_from_the_packages_examples_imports(db):
    assert validate_eee_folder(EXAMPLE_ROOT) == [EXAMPLE]
    doc = json.loads(EXAMPLE.read_text())
    with ood_store.open(db) as store:
        report = store.ingest([EXAMPLE])
        assert report.ok, report.rejected
        got = store.query("SELECT run, step, task, metric, filter, value, stderr, num_fewshot FROM scores").rows()
        date = store.query("SELECT date FROM evaluations").rows()
    expected = [
        (doc["model_info"]["id"], None, result["evaluation_name"], result["metric_config"].get("metric_name", "score"),
         "none", result["score_details"]["score"], None, None)
        for result in doc["evaluation_results"]
    ]  # fmt: skip
    assert sorted(got) == sorted(expected)
    assert date[0][0].timestamp() == pytest.approx(float(doc["evaluation_timestamp"]))


def test_files_of_every_eval_evers_own_lm_eval_converter_import(tmp_path):
    """The converter writes one file per task and keeps shots only for generation tasks; what it keeps
    comes back as the lm-eval file has it."""
    from every_eval_ever.converters.lm_eval.adapter import LMEvalAdapter

    logs = LMEvalAdapter().transform_from_file(LEADERBOARD, {"source_organization_name": "csabakecskemeti"})
    folder = tmp_path / "converted"
    folder.mkdir()
    for index, log in enumerate(logs):
        (folder / f"{index}.json").write_text(log.model_dump_json(exclude_none=True))
    with ood_store.open(tmp_path / "direct.duckdb") as store:
        assert store.ingest([LEADERBOARD]).ok
        direct = {r[:3]: r[3:] for r in store.query("SELECT task, metric, filter, value, stderr FROM scores").rows()}
    with ood_store.open(tmp_path / "eee.duckdb") as store:
        report = store.ingest([folder])
        assert report.ok and len(report.ingested) == len(logs)
        converted = store.query("SELECT task, metric, filter, value, stderr, run FROM scores").rows()
    assert converted and all(direct[r[:3]] == r[3:5] for r in converted)
    assert {r[5] for r in converted} == {"meta-llama/Llama-3.1-8B-Instruct"}


def test_a_file_against_the_schema_is_rejected_naming_the_field(runner, db, tmp_path):
    doc = json.loads(EXAMPLE.read_text())
    del doc["source_metadata"]["evaluator_relationship"]
    doc["evaluation_results"][1]["score_details"]["score"] = "high"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with ood_store.open(db) as store:
        assert store.ingest(pythia_files("160m")[:1]).ok
    before = table_dump(db)
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    assert f"  {path}: source_metadata.evaluator_relationship: missing (EEE schema 0.3.0 requires it)" in result.output
    assert table_dump(db) == before


def test_the_schema_ood_store_checks_against_is_the_packages():
    import every_eval_ever.schemas

    shipped = resources.files("ood_store._ingest").joinpath("eee-eval-0.3.0.schema.json").read_text("utf-8")
    package = resources.files(every_eval_ever.schemas).joinpath("eval.schema.json").read_text("utf-8")
    assert json.loads(shipped) == json.loads(package)


def test_export_eee_command(runner, analysis_db, tmp_path):
    out = tmp_path / "eee"
    result = runner.invoke(
        main, ["--db", str(analysis_db), "export-eee", str(out), "--run", "EleutherAI/pythia-v1.1-160m"]
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"Wrote 27 Every Eval Ever files (4,644 scores) to {out / 'data' / 'ood-store'}.\n"
    bad = runner.invoke(main, ["--db", str(analysis_db), "export-eee", str(out), "--run", "nope"])
    assert (bad.exit_code, bad.output) == (1, "Error: --run: no such run in the store: 'nope'\n")


def test_without_the_eee_extra_an_eee_file_is_one_line_naming_the_extra(runner, db, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if not installed: importing it fails
    result = runner.invoke(main, ["--db", str(db), "ingest", str(EXAMPLE)])
    assert result.exit_code == 1
    expected = (
        f'  {EXAMPLE}: reading Every Eval Ever files needs jsonschema: pip install -e ".[eee]" (EEE schema 0.3.0)'
    )
    assert expected in result.output.splitlines()


def test_non_finite_scores_follow_the_lm_eval_rule(db, tmp_path):
    # The same rule as lm-eval files: NaN is stored as NULL, Infinity as it is, a literal beyond a DOUBLE is refused.
    doc = json.loads(EXAMPLE.read_text())
    first, second = doc["evaluation_results"][:2]
    first["score_details"]["score"], second["score_details"]["score"] = float("nan"), float("inf")
    folder = tmp_path / "nonfinite"
    folder.mkdir()
    path = folder / EXAMPLE.name
    path.write_text(json.dumps(doc))  # json writes NaN and Infinity, as lm-eval does
    overflow = tmp_path / "overflow.json"
    overflow.write_text(EXAMPLE.read_text().replace('"score": 0.31', '"score": 1' + "0" * 400, 1))
    with ood_store.open(db) as store:
        report = store.ingest([path, overflow])
        values = dict(store.query("SELECT task, value FROM scores").rows())
    assert [f.path for f in report.ingested] == [str(path)]
    [rejected] = report.rejected
    assert rejected.path == str(overflow) and "does not fit a DOUBLE" in (rejected.reason or "")
    assert values[first["evaluation_name"]] is None and values[second["evaluation_name"]] == float("inf")


def test_scores_that_are_not_finite_are_left_out_of_the_results_and_kept_in_the_record(runner, tmp_path):
    """EEE's score is a finite number: a NaN (stored as NULL) or ±Infinity score has no place in a file's
    results. The export says how many it kept in ood_store.evaluation instead; all of them come back."""
    doc = json.loads(LEADERBOARD.read_text())
    doc["results"]["leaderboard_ifeval"]["prompt_level_loose_acc,none"] = float("-inf")
    doc["results"]["leaderboard_musr_murder_mysteries"]["acc_norm,none"] = float("nan")
    source = tmp_path / "in" / LEADERBOARD.name
    source.parent.mkdir()
    source.write_text(json.dumps(doc))  # NaN and -Infinity as lm-eval writes them
    db, out = tmp_path / "a.duckdb", tmp_path / "out"
    assert runner.invoke(main, ["--db", str(db), "ingest", str(source)]).exit_code == 0
    result = runner.invoke(main, ["--db", str(db), "export-eee", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "2 scores not a finite number, which EEE's score cannot hold: kept only in each file's ood_store.evaluation "
        "record (ood-store reads it back).\n"
    )
    validate_eee_folder(out)
    with ood_store.open(db, read_only=True) as store:
        every = sorted(store.query(SCORES).rows(), key=repr)
    with ood_store.open(tmp_path / "b.duckdb") as store:
        assert store.ingest([out]).ok
        assert sorted(store.query(SCORES).rows(), key=repr) == every
    kept = {(r["evaluation_name"], r["metric_config"]["metric_name"]) for r in json.loads(
        next(out.rglob("*.json")).read_text())["evaluation_results"]}  # fmt: skip
    assert ("leaderboard_ifeval", "prompt_level_loose_acc") not in kept
    assert ("leaderboard_musr_murder_mysteries", "acc_norm") not in kept
    assert ("leaderboard_ifeval", "inst_level_loose_acc") in kept
