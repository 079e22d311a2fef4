"""Every Eval Ever files of every schema version ood-store reads, as the EEE repository published them
(tests/fixtures/eee-real, its README says from which commit), each read against its own version's schema.

Expected values are read from the files with the json module: results, names and sources as each version
spells them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES, V04, table_dump
from ood_store._cli import main

REAL = FIXTURES / "eee-real"
ROOT = FIXTURES.parent.parent
FILES = sorted(REAL.rglob("*.json"))
JOSIE_010 = next((REAL / "0.1.0").rglob("7c2cc003-*.json"))
JOSIE_020 = next((REAL / "0.2.0").rglob("0b1c6aa6-*.json"))
HAL = next((REAL / "0.2.2" / "data").rglob("*.json"))
FLAT = next((REAL / "0.2.2" / "flat").rglob("*.json"))
DEMO = next((REAL / "0.3.0").rglob("*.json"))
LEADERBOARD = next((V04 / "csabakecskemeti").rglob("results_*.json"))


def expected(path: Path) -> set[tuple]:
    """(run, step, task, metric, filter, value, stderr, n_samples, campaign) of a third party's file: run =
    model_info.id, no step, each result's name and metric (``score`` before metric_name existed), filter none,
    the campaign its source's name."""
    doc = json.loads(path.read_text())
    rows = set()
    for result in doc["evaluation_results"]:
        metric = result["metric_config"].get("metric_name") or "score"
        uncertainty = result["score_details"].get("uncertainty") or {}
        stderr = (uncertainty.get("standard_error") or {}).get("value")
        rows.add((doc["model_info"]["id"], None, result["evaluation_name"], metric, "none",
                  result["score_details"]["score"], stderr, uncertainty.get("num_samples"),
                  doc["source_metadata"]["source_name"]))  # fmt: skip
    return rows


SCORES = "SELECT run, step, task, metric, filter, value, stderr, n_samples, campaign FROM scores_all"


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("eee-real") / "store.duckdb"
    with ood_store.open(db) as store:
        report = store.ingest([REAL])
    assert report.ok, report.rejected
    assert sorted(f.path for f in report.ingested) == [str(f) for f in FILES]
    return db


def test_the_datastore_files_of_every_version_go_in(real_store):
    with ood_store.open(real_store, read_only=True) as store:
        got = set(store.query(SCORES).rows())
        formats = dict(store.query("SELECT source_path, format FROM evaluations").rows())
    assert got == set().union(*(expected(f) for f in FILES))
    assert {Path(path).name: fmt for path, fmt in formats.items()} == {
        f.name: f"eee-{json.loads(f.read_text())['schema_version']}" for f in FILES
    }
    assert {fmt for fmt in formats.values()} == {"eee-0.1.0", "eee-0.2.0", "eee-0.2.2", "eee-0.3.0"}


def test_fields_a_version_lacks_are_null(real_store):
    """0.1.0 has no evaluation_timestamp, uncertainty or eval_library; 0.2.2 names its library (HAL, not lm-eval)."""
    with ood_store.open(real_store, read_only=True) as store:
        rows = store.query("SELECT source_path, date, lm_eval_version, model_args, num_fewshot FROM evaluations").rows()
        stderr = store.query("SELECT count(stderr), count(n_samples) FROM scores_all").rows()
    by_name = {Path(path).name: rest for path, *rest in rows}
    assert by_name[JOSIE_010.name] == [None, None, "null", None]  # model_args: JSON null, as a file without them
    assert stderr == [(0, 0)]  # none of these leaderboards gives a standard error
    demo = json.loads(DEMO.read_text())
    assert by_name[DEMO.name][0].timestamp() == pytest.approx(float(demo["evaluation_timestamp"]))
    assert by_name[HAL.name][1] is None  # eval_library HAL: no lm-eval version


def test_the_campaign_is_the_source_not_a_folder_of_the_layout(real_store):
    """The datastore layout's folders (collection, developer, model) and the flat store's two-letter shards
    are not campaigns; the leaderboard (source_metadata.source_name) is."""
    with ood_store.open(real_store, read_only=True) as store:
        rows = dict(store.query("SELECT source_path, campaign FROM evaluations").rows())
    got = {Path(path).name: campaign for path, campaign in rows.items()}
    assert got == {f.name: json.loads(f.read_text())["source_metadata"]["source_name"] for f in FILES}
    assert got[FLAT.name] == "MMLU-Pro Leaderboard" and FLAT.parent.name == "6f"


def test_a_hub_id_ending_in_step2000_is_a_model_evaluated_at_no_step(real_store, tmp_path):
    """The Open LLM Leaderboard's josie-7b-v6.0-step2000 (real entries of 0.1.0 and 0.2.0) is run
    Goekdeniz-Guelmez/josie-7b-v6.0-step2000 at no step; the same entry with a revision naming a step is at it."""
    with ood_store.open(real_store, read_only=True) as store:
        rows = store.query(
            "SELECT DISTINCT run, step, identity_from FROM evaluations WHERE run LIKE 'Goekdeniz-Guelmez/%'"
        ).rows()
    assert rows == [("Goekdeniz-Guelmez/josie-7b-v6.0-step2000", None, "model")]
    doc = json.loads(JOSIE_020.read_text())
    doc["model_info"]["additional_details"]["revision"] = "step500"
    path = tmp_path / JOSIE_020.name
    path.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "revision.duckdb") as store:
        assert store.ingest([path]).ok
        rows = store.query("SELECT run, step, identity_from FROM evaluations").rows()
    assert rows == [("Goekdeniz-Guelmez/josie-7b-v6.0-step2000", 500, "revision")]


@pytest.mark.parametrize("revision", [None, "step1000"])
def test_an_lm_eval_file_of_such_a_model_with_and_without_a_revision(tmp_path, revision):
    """The same rule for lm-eval files: a real Open LLM Leaderboard results file, its model renamed to the
    leaderboard's -step2000 entry."""
    doc = json.loads(LEADERBOARD.read_text())
    args = "pretrained=Goekdeniz-Guelmez/josie-7b-v6.0-step2000,dtype=bfloat16"
    doc["config"]["model_args"] = args + (f",revision={revision}" if revision else "")
    path = tmp_path / "Goekdeniz-Guelmez__josie-7b-v6.0-step2000" / LEADERBOARD.name
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest([path]).ok
        rows = store.query(
            "SELECT e.run, e.step, e.identity_from, c.revision FROM evaluations e "
            "JOIN checkpoints c ON c.run = e.run AND c.step IS NOT DISTINCT FROM e.step"
        )
    expected_row = ("Goekdeniz-Guelmez/josie-7b-v6.0-step2000", 1000 if revision else None,
                    "revision" if revision else "model", revision)  # fmt: skip
    assert rows.rows() == [expected_row]


def test_dry_run_shows_run_step_campaign_and_where_each_came_from(runner, tmp_path):
    db = tmp_path / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", "--dry-run", str(JOSIE_010), str(FLAT)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index(str(JOSIE_010))
    assert lines[at + 1 : at + 7] == [
        '  format    Every Eval Ever 0.1.0 (JSON with "schema_version", "model_info" and "evaluation_results")',
        "  run       Goekdeniz-Guelmez/josie-7b-v6.0-step2000",
        "  step      none (a final model)",
        "  from      model: model_info.id Goekdeniz-Guelmez/josie-7b-v6.0-step2000",
        "  campaign  HF Open LLM v2 (source_metadata.source_name)",
        "  scores    6",
    ]
    assert f"Would ingest 2 files into {db}: 2 evaluations, 21 scores, 2 runs; nothing was stored (--dry-run)." in lines
    assert not db.exists()  # nothing stored, not even an empty store


# A field each version requires and the next does not, or the reverse (each version's own schema decides).
REQUIRED = [
    (JOSIE_010, ("source_data",), "source_data: missing (EEE schema 0.1.0 requires it)"),
    (HAL, ("eval_library",), "eval_library: missing (EEE schema 0.2.2 requires it)"),
    (
        DEMO,
        ("model_info", "additional_details"),
        "model_info.additional_details: missing (EEE schema 0.3.0 requires it)",
    ),
]


@pytest.mark.parametrize(("source", "field", "message"), REQUIRED, ids=["0.1.0", "0.2.2", "0.3.0"])
def test_each_version_requires_what_its_own_schema_does(runner, tmp_path, source, field, message):
    doc = json.loads(source.read_text())
    holder = doc
    for key in field[:-1]:
        holder = holder[key]
    del holder[field[-1]]
    path = tmp_path / source.name
    path.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(path)])
    assert result.exit_code == 1
    assert f"  {path}: {message}" in result.output.splitlines()


def test_a_field_an_older_version_lacks_is_not_required_of_it(tmp_path):
    """eval_library, required from 0.2.1 on, is absent from the real 0.2.0 file: read, lm_eval_version NULL."""
    assert "eval_library" not in json.loads(JOSIE_020.read_text())
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest([JOSIE_020]).ok


@pytest.mark.parametrize(
    ("version", "why"),
    [
        ("0.4.0", "0.4.0 is newer than the Every Eval Ever versions ood-store reads 0.1.0, 0.2.0, 0.2.1, 0.2.2, "
                  "0.2.3 and 0.3.0; a newer ood-store may read it"),
        ("1.0.0", "1.0.0 is newer than the Every Eval Ever versions ood-store reads 0.1.0, 0.2.0, 0.2.1, 0.2.2, "
                  "0.2.3 and 0.3.0; a newer ood-store may read it"),
        ("0.0.1", "0.0.1 predates 0.1.0, the oldest Every Eval Ever version ood-store reads"),
        ("0.2.7", "0.2.7 is not an Every Eval Ever release (ood-store reads 0.1.0, 0.2.0, 0.2.1, 0.2.2, 0.2.3 "
                  "and 0.3.0)"),
        (3, 'expected an Every Eval Ever version such as "0.3.0", got int (ood-store reads 0.1.0, 0.2.0, '
            "0.2.1, 0.2.2, 0.2.3 and 0.3.0)"),
    ],
)  # fmt: skip
def test_a_version_ood_store_does_not_read_is_refused_in_one_line(runner, tmp_path, version, why):
    db = tmp_path / "store.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([HAL]).ok
    before = table_dump(db)
    doc = json.loads(DEMO.read_text())
    doc["schema_version"] = version
    path = tmp_path / "future.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if str(path) in line] == [f"  {path}: schema_version: {why}"]
    assert table_dump(db) == before


def test_a_broken_score_names_the_version(runner, tmp_path):
    doc = json.loads(JOSIE_010.read_text())
    doc["evaluation_results"][2]["score_details"]["score"] = "0.42"
    path = tmp_path / "josie.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(path), "-v"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    at = lines.index(f'  {path}: evaluation_results[2].score_details.score: expected "number", got string "0.42" '
                     "(EEE schema 0.1.0)")  # fmt: skip
    assert lines[at + 1] == '    read as Every Eval Ever 0.1.0 (JSON with "schema_version", "model_info" and ' \
        '"evaluation_results")'  # fmt: skip


def test_the_datastore_layout_copied_elsewhere_keeps_its_campaign(tmp_path):
    """The same file in another folder is the same evaluation of the same campaign (a folder never names one)."""
    elsewhere = tmp_path / "downloads" / "EleutherAI"
    elsewhere.mkdir(parents=True)
    shutil.copy(HAL, elsewhere / "x.json")
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([elsewhere / "x.json", HAL])
        campaigns = store.query("SELECT campaign FROM evaluations").rows()
    assert len(report.ingested) == 1 and len(report.present) == 1
    assert campaigns == [(json.loads(HAL.read_text())["source_metadata"]["source_name"],)]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # 0.1.0's schema gives score_details no type: a number there passes it, and is refused by ingest
        (lambda doc: doc["evaluation_results"][1].__setitem__("score_details", 0.51),
         "evaluation_results[1].score_details: expected an object, got float (EEE schema 0.1.0)"),
        (lambda doc: doc.__setitem__("model_info", ["Goekdeniz-Guelmez/josie-7b-v6.0-step2000"]),
         'model_info: expected "object", got a list (EEE schema 0.1.0)'),
    ],
)  # fmt: skip
def test_what_an_old_schema_lets_through_is_still_one_line(runner, tmp_path, edit, message):
    """Found by benchmarks/reliability.py's full run (EEE: wrong types): these were internal errors."""
    doc = json.loads(JOSIE_010.read_text())
    edit(doc)
    path = tmp_path / JOSIE_010.name
    path.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == f"  {path}: {message}"


# -- nulls in optional fields ------------------------------------------------------------------------
def _schema(version: str) -> dict:
    return json.loads((ROOT / "ingest" / f"eee-eval-{version}.schema.json").read_text())


def _nulled(value, schema: dict, root: dict, nulled: list[str], where: str = "") -> None:
    """Set to null every field of ``value`` that ``schema`` lets an object lack (not in its ``required``, nor
    in that of its if/then/else), walking into objects and lists by the schema: the fields come from the
    schema, the values from the file."""
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    for form in schema.get("oneOf", []) + schema.get("anyOf", []):  # the form whose type the value has
        kind = form.get("type")
        if (kind == "object" and isinstance(value, dict)) or (kind == "array" and isinstance(value, list)):
            _nulled(value, form, root, nulled, where)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _nulled(item, schema["items"], root, nulled, f"{where}[{index}]")
    if not isinstance(value, dict) or "properties" not in schema:
        return
    required = set(schema.get("required", []))
    for branch in (schema.get("then", {}), schema.get("else", {}), schema.get("else", {}).get("then", {})):
        required |= set(branch.get("required", []))
    for key, field in schema["properties"].items():
        if key not in value or value[key] is None:
            continue
        if key in required:
            _nulled(value[key], field, root, nulled, f"{where}.{key}".lstrip("."))
        else:
            value[key] = None
            nulled.append(f"{where}.{key}".lstrip("."))


NULLABLE = [JOSIE_010, next((REAL / "0.1.0").rglob("a6cf2367-*.json")), JOSIE_020, HAL, FLAT, DEMO]


@pytest.mark.parametrize("source", NULLABLE, ids=lambda p: f"{p.parts[len(REAL.parts)]}-{p.stem[:8]}")
def test_nulls_in_optional_fields_are_missing_values(tmp_path, source):
    """A real file of each version with every optional field it has (by its schema) set to null: it goes
    in, with the scores of the file as it was, and those fields NULL (what the EEE HELM converter writes)."""
    doc = json.loads(source.read_text())
    version = doc["schema_version"]
    nulled: list[str] = []
    _nulled(doc, _schema(version), _schema(version), nulled)
    assert len(nulled) >= 3, nulled
    path = tmp_path / source.name
    path.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([path])
        assert report.ok, report.rejected
        values = sorted(store.query("SELECT value FROM scores_all")["value"].to_list())
        date, config = store.query("SELECT date, config FROM evaluations").rows()[0]
    assert values == sorted(r["score_details"]["score"] for r in json.loads(source.read_text())["evaluation_results"])
    if "evaluation_timestamp" in nulled:
        assert date is None
    kept = json.loads(config)
    for field in nulled:  # a missing value in the document kept too: absent, not null
        holder = kept
        for part in field.replace("[", ".[").split(".")[:-1]:
            holder = holder[int(part[1:-1])] if part.startswith("[") else holder[part]
        assert field.split(".")[-1] not in holder, field


def test_a_file_of_0_1_0_with_nulls_where_its_schema_types_strings(tmp_path):
    """Built from the 0.1.0 schema (as the HELM converter fills it): each optional string field of the
    schema null; read as missing, the scores stored."""
    doc = {
        "schema_version": "0.1.0",
        "evaluation_id": "helm_local/pythia-1b/1",
        "retrieved_timestamp": "1700000000",
        "source_data": {"dataset_name": "mmlu", "hf_repo": None, "hf_split": None, "samples_number": None},
        "source_metadata": {
            "source_name": "helm_local",
            "source_type": "evaluation_run",
            "source_organization_name": "crfm",
            "source_organization_url": None,
            "source_organization_logo_url": None,
            "evaluator_relationship": "third_party",
        },
        "model_info": {"name": "pythia-1b", "id": "EleutherAI/pythia-1b", "developer": None,
                       "inference_platform": None, "inference_engine": None},
        "evaluation_results": [
            {"evaluation_name": "mmlu", "evaluation_timestamp": None,
             "metric_config": {"evaluation_description": None, "lower_is_better": False, "score_type": None},
             "score_details": {"score": 0.25, "details": None},
             "detailed_evaluation_results_url": None, "generation_config": None},
        ],
    }  # fmt: skip
    schema = _schema("0.1.0")
    nulls = {"source_data": ["hf_repo", "hf_split", "samples_number"],
             "source_metadata": ["source_organization_url", "source_organization_logo_url"],
             "model_info": ["developer", "inference_platform", "inference_engine"]}  # fmt: skip
    for part, keys in nulls.items():
        properties = (schema["properties"][part].get("oneOf") or [{}])[-1].get("properties") or schema["properties"][
            part
        ]["properties"]
        for key in keys:  # each is an optional field the schema types, not as null
            assert key not in schema["properties"][part].get("required", []) and "null" not in str(properties[key])
    path = tmp_path / "helm.json"
    path.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([path])
        assert report.ok, report.rejected
        rows = store.query("SELECT run, step, task, metric, value, campaign FROM scores_all").rows()
        model_type = store.query("SELECT model_type FROM evaluations").rows()
    assert rows == [("EleutherAI/pythia-1b", None, "mmlu", "score", 0.25, "helm_local")]
    assert model_type == [(None,)]


@pytest.mark.parametrize(
    ("source", "field", "expected"),
    [
        (JOSIE_010, ("model_info", "id"), '"string"'),
        (JOSIE_010, ("evaluation_results", 0, "score_details", "score"), '"number"'),
        (HAL, ("eval_library", "name"), '"string"'),
        (DEMO, ("evaluation_results", 0, "metric_config", "lower_is_better"), '"boolean"'),
    ],
    ids=["0.1.0-id", "0.1.0-score", "0.2.2-library", "0.3.0-direction"],
)
def test_a_null_where_a_field_is_required_is_still_refused(runner, tmp_path, source, field, expected):
    doc = json.loads(source.read_text())
    holder = doc
    for key in field[:-1]:
        holder = holder[key]
    holder[field[-1]] = None
    path = tmp_path / source.name
    path.write_text(json.dumps(doc))
    db = tmp_path / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    where = ".".join(f"[{k}]" if isinstance(k, int) else k for k in field).replace(".[", "[")
    version = doc["schema_version"]
    assert f"  {path}: {where}: expected {expected}, got null (EEE schema {version})" in result.output.splitlines()
    assert not db.exists()
