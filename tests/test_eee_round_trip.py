"""store -> Every Eval Ever -> store gives the same evaluations, scores and samples; an imported third party's
file keeps its provenance when exported again. Every exported folder is checked with EEE's own validator
(its repository checks: layout, samples companions, row counts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

import ood_store
from conftest import FIXTURES, REAL, V0413, validate_eee_folder
from ood_store._cli import main
from ood_store._export.eee import EeeSource

EEE_REAL = FIXTURES / "eee-real"

# Every table an evaluation fills, keyed by content hash instead of ids, without the times of this ingest.
COMPARED = {
    "evaluations": "SELECT content_hash, * EXCLUDE (evaluation_id, ingested_at, content_hash) FROM evaluations",
    "evaluation_scores": "SELECT e.content_hash, s.* EXCLUDE (evaluation_id) "
    "FROM evaluation_scores s JOIN evaluations e USING (evaluation_id)",
    "samples": "SELECT e.content_hash, s.* EXCLUDE (evaluation_id) "
    "FROM samples s JOIN evaluations e USING (evaluation_id)",
    "runs": "SELECT * EXCLUDE (created_at) FROM runs",
    "checkpoints": "SELECT * FROM checkpoints",
}


def tables(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in COMPARED.items()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory) -> dict[str, Path]:
    """Every lm-eval fixture of the repository (lm-eval-real: v0.3 Pythia series, two campaigns, v0.4 files
    with samples; lm-eval-0.4.13: lm-eval's own output with samples) into a store, exported, read back."""
    folder = tmp_path_factory.mktemp("round-trip")
    paths = {"first": folder / "first.duckdb", "export": folder / "eee", "second": folder / "second.duckdb"}
    # lm-eval's Python API writes model_args as an object when given one: a copy of its own output so
    dicts = folder / "dict-model-args"
    shutil.copytree(V0413 / "toy-run__checkpoint-20", dicts)
    results = next(dicts.glob("results_*.json"))
    doc = json.loads(results.read_text())
    doc["config"]["model_args"] = {"pretrained": "toy-run/checkpoint-20", "dtype": "float32"}
    results.write_text(json.dumps(doc, indent=2))
    with ood_store.open(paths["first"]) as store:
        assert store.ingest([REAL, V0413, dicts], attributes=["family=pythia"]).ok
        report = store.export_eee(paths["export"], source=EeeSource("round-trip", "EleutherAI"))
    assert report.not_finite == 0 and not report.not_written
    with ood_store.open(paths["second"]) as store:
        back = store.ingest([paths["export"]])
    assert back.ok and len(back.ingested) == len(report.files), back.rejected
    return paths


def test_every_evaluation_column_and_sample_row_survives(round_trip):
    first, second = tables(round_trip["first"]), tables(round_trip["second"])
    assert first["samples"] and len(first["evaluations"]) > 100  # the fixtures hold both
    for name in COMPARED:
        assert second[name] == first[name], name
    # what the old convention lost: dict model_args stay objects, and a missing lm-eval version stays NULL
    con = duckdb.connect(str(round_trip["second"]), read_only=True)
    kinds = con.execute("SELECT DISTINCT json_type(model_args) FROM evaluations").fetchall()
    versions = con.execute(
        "SELECT count(*) FILTER (lm_eval_version IS NULL), count(git_hash) FROM evaluations"
    ).fetchall()
    con.close()
    assert set(kinds) == {("VARCHAR",), ("OBJECT",)}
    assert versions[0][0] > 0 and versions[0][1] > 0


def test_the_export_and_its_samples_files_validate(round_trip):
    files = validate_eee_folder(round_trip["export"])
    samples = [f for f in files if f.name.endswith("_samples.jsonl")]
    con = duckdb.connect(str(round_trip["first"]), read_only=True)
    with_samples = con.execute("SELECT count(DISTINCT evaluation_id), count(*) FROM samples").fetchone()
    con.close()
    assert len(samples) == with_samples[0]
    # every samples row is in its file (one line per finite per-sample metric, or one when it has none)
    lines = [json.loads(line) for f in samples for line in f.read_text().splitlines()]
    kept = [(json.loads(line["metadata"]["ood_store.sample"]), line["evaluation_id"]) for line in lines]
    rows = {(row["task"], row["doc_id"], row["filter"], evaluation) for row, evaluation in kept}
    assert len(rows) == with_samples[1]


def contents(folder: Path) -> dict[Path, object]:
    """The files under ``folder``: samples files' bytes, aggregate files without retrieved_timestamp (the time
    the evaluation was ingested into the store exported)."""
    out: dict[Path, object] = {}
    for file in folder.rglob("*"):
        if file.suffix == ".json":
            doc = json.loads(file.read_text())
            del doc["retrieved_timestamp"]
            out[file.relative_to(folder)] = doc
        elif file.is_file():
            out[file.relative_to(folder)] = file.read_bytes()
    return out


def test_exporting_the_read_back_store_writes_the_same_files(round_trip, tmp_path):
    with ood_store.open(round_trip["second"], read_only=True) as store:
        store.export_eee(tmp_path / "again", source=EeeSource("round-trip", "EleutherAI"))
    assert contents(tmp_path / "again") == contents(round_trip["export"])


PROVENANCE = ("source_name", "source_type", "source_organization_name", "evaluator_relationship")


def test_third_party_provenance_survives_import_and_export(tmp_path):
    """The real datastore files of every version: exported again, each keeps its source (a leaderboard's
    documentation, third party), its model, and every result's metric configuration and source data; in 0.3.0,
    a 0.1.0 file's top-level source_data moves into each result, as EEE's own migration does."""
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest([EEE_REAL]).ok
        report = store.export_eee(tmp_path / "out", source=EeeSource("mine", "me", "first_party"))
    assert report.imported == len(report.files) == len(list(EEE_REAL.rglob("*.json")))
    validate_eee_folder(tmp_path / "out")
    exported = {json.loads(f.read_text())["evaluation_id"]: json.loads(f.read_text()) for f in report.files}
    for original_path in EEE_REAL.rglob("*.json"):
        original = json.loads(original_path.read_text())
        doc = exported[original["evaluation_id"]]
        assert {k: doc["source_metadata"][k] for k in PROVENANCE} == {
            k: original["source_metadata"][k] for k in PROVENANCE
        }
        assert doc["source_metadata"]["source_type"] != "evaluation_run" or original_path.parent.name == "demo-model"
        assert (doc["model_info"]["id"], doc["model_info"]["name"]) == (
            original["model_info"]["id"],
            original["model_info"]["name"],
        )
        assert len(doc["evaluation_results"]) == len(original["evaluation_results"])
        for new, old in zip(doc["evaluation_results"], original["evaluation_results"], strict=True):
            assert new["evaluation_name"] == old["evaluation_name"]
            assert new["score_details"]["score"] == old["score_details"]["score"]
            config = {k: v for k, v in old["metric_config"].items() if k != "additional_details"}
            assert {k: new["metric_config"][k] for k in config} == config  # kind, unit, bounds, direction
            top = original.get("source_data")
            expected_source = old.get("source_data") or {
                "dataset_name": old["evaluation_name"],
                "source_type": "url",
                "url": top,
            }
            assert new["source_data"] == expected_source
        assert (original.get("eval_library") or {"name": "unknown", "version": "unknown"}) == doc["eval_library"]
    # read back, the same evaluations (the original documents are each evaluation's config)
    before = tables(tmp_path / "store.duckdb")
    with ood_store.open(tmp_path / "back.duckdb") as store:
        assert store.ingest([tmp_path / "out"]).ok
    assert tables(tmp_path / "back.duckdb") == before


def test_what_eee_cannot_hold_is_said(runner, tmp_path):
    """A NaN or infinite score has no place in EEE's results: the export says how many and keeps them in its
    ood_store.evaluation record, so that they come back; an evaluation with no finite score has no file, named."""
    source = next((REAL / "v0.4" / "csabakecskemeti").rglob("results_*.json"))
    doc = json.loads(source.read_text())
    doc["results"]["leaderboard_ifeval"]["prompt_level_loose_acc,none"] = float("-inf")
    doc["results"]["leaderboard_musr_murder_mysteries"]["acc_norm,none"] = float("nan")
    path = tmp_path / "in" / source.name
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    empty = tmp_path / "empty" / "results_2024-01-01T00-00-00.json"
    empty.parent.mkdir()
    empty.write_text(json.dumps({"results": {"t": {"acc": float("nan")}}, "config": {"model_args": "pretrained=m"}}))
    db, out = tmp_path / "a.duckdb", tmp_path / "out"
    assert runner.invoke(main, ["--db", str(db), "ingest", str(path), str(empty)]).exit_code == 0
    result = runner.invoke(main, ["--db", str(db), "export-eee", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "2 scores not a finite number, which EEE's score cannot hold: kept only in each file's ood_store.evaluation "
        "record (ood-store reads it back).",
        f"Not written: m at step None ({empty}): no file: none of its 1 score is a finite number, and an EEE result "
        "needs one",
    ]
    with ood_store.open(db, read_only=True) as store:
        expected = sorted(store.query("SELECT * EXCLUDE (evaluation_id) FROM scores WHERE run <> 'm'").rows(), key=repr)
    with ood_store.open(tmp_path / "b.duckdb") as store:
        assert store.ingest([out]).ok
        assert sorted(store.query("SELECT * EXCLUDE (evaluation_id) FROM scores").rows(), key=repr) == expected


def test_an_eee_evaluation_stored_by_an_older_ood_store_keeps_its_source(tmp_path):
    """The dump the ood-store of schema 4 wrote holds an EEE file's evaluation from before whole documents were
    kept (its config: the file's source_metadata, eval_library, model_info): exported, it has that source."""
    original = json.loads(next((FIXTURES / "eee").rglob("*.json")).read_text())
    with ood_store.open(tmp_path / "store.duckdb") as store:
        store.load(FIXTURES / "dump-schema-4" / "store")
        report = store.export_eee(tmp_path / "out", runs=[original["model_info"]["id"]])
    validate_eee_folder(tmp_path / "out")
    [doc] = [json.loads(f.read_text()) for f in report.files]
    for key in PROVENANCE:
        assert doc["source_metadata"][key] == original["source_metadata"][key]
    assert doc["eval_library"] == original["eval_library"]
