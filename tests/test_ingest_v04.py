"""Real lm-eval v0.4 files: filters, "N/A" stderrs, groups and placeholders, samples."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import ood_store
from conftest import V04

LEADERBOARD = next((V04 / "csabakecskemeti").rglob("results_*.json"))
MMLU = V04 / "saucam-PowerBot-8B" / "mmlu.json"
MEDNLI = next((V04 / "araag2-MedNLI").rglob("results_*.json"))
EVALEVAL = next((V04 / "evaleval").rglob("results_*.json"))


def metric_keys(entry: dict) -> dict[tuple[str, str], float]:
    """(metric, filter) -> value for one task entry, read from the JSON."""
    out = {}
    for key, value in entry.items():
        if "," in key and "_stderr," not in key:
            metric, filt = key.rsplit(",", 1)
            out[(metric, filt)] = value
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("v04") / "store.duckdb"
    with ood_store.open(db) as s:
        report = s.ingest([V04])
        assert len(report.ingested) == 4, report.files
        assert not report.rejected
    s = ood_store.open(db, read_only=True)
    yield s
    s.close()


def scores_of(store, path) -> list[dict]:
    return store.query(
        "SELECT s.* FROM scores_all s JOIN evaluations e USING (evaluation_id) WHERE e.source_path = $p",
        p=str(path.resolve()),
    ).to_dicts()


def test_leaderboard_rows_match_json_and_placeholders_are_skipped(store):
    doc = json.loads(LEADERBOARD.read_text())
    rows = scores_of(store, LEADERBOARD)
    expected = {
        (task, metric, filt): value
        for task, entry in doc["results"].items()
        for (metric, filt), value in metric_keys(entry).items()
    }
    got = {(r["task"], r["metric"], r["filter"]): r["value"] for r in rows}
    assert got == expected
    placeholders = {t for t, e in doc["results"].items() if e.get(" ") == " "}
    assert placeholders == {"leaderboard_bbh", "leaderboard_gpqa", "leaderboard_math_hard", "leaderboard_musr"}
    assert not placeholders & {r["task"] for r in rows}


def test_na_stderr_is_null_and_numbers_are_kept(store):
    doc = json.loads(LEADERBOARD.read_text())
    entry = doc["results"]["leaderboard_ifeval"]
    rows = {(r["task"], r["metric"]): r for r in scores_of(store, LEADERBOARD)}
    assert entry["inst_level_strict_acc_stderr,none"] == "N/A"
    assert rows[("leaderboard_ifeval", "inst_level_strict_acc")]["stderr"] is None
    assert (
        rows[("leaderboard_ifeval", "prompt_level_strict_acc")]["stderr"]
        == entry["prompt_level_strict_acc_stderr,none"]
    )
    mednli = {r["metric"]: r for r in scores_of(store, MEDNLI)}
    assert mednli["f1"]["stderr"] is None and mednli["f1"]["value"] == 0.9286075949367089
    assert mednli["acc"]["stderr"] == 0.012923740871368583


def test_shots_and_sample_counts_come_from_the_file(store):
    doc = json.loads(LEADERBOARD.read_text())
    for row in scores_of(store, LEADERBOARD):
        assert row["num_fewshot"] == doc["n-shot"][row["task"]]
        assert row["n_samples"] == doc["n-samples"][row["task"]]["effective"]


def test_groups_with_aggregates_are_stored_and_marked(store):
    doc = json.loads(MMLU.read_text())
    rows = scores_of(store, MMLU)
    groups = {r["task"]: r for r in rows if r["is_group"]}
    assert (
        set(groups)
        == set(doc["groups"])
        == {"mmlu", "mmlu_humanities", "mmlu_other", "mmlu_social_sciences", "mmlu_stem"}
    )
    for name, row in groups.items():
        assert row["value"] == doc["groups"][name]["acc,none"]
        assert row["stderr"] == doc["groups"][name]["acc_stderr,none"]
    plain = [r for r in rows if not r["is_group"]]
    assert len(plain) == 57 and all(r["num_fewshot"] == 5 for r in plain)
    assert len(rows) == len(doc["results"])  # one metric (acc,none) per entry


def test_string_model_args_from_vllm(store):
    row = store.query("SELECT * FROM evaluations WHERE source_path = $p", p=str(MEDNLI.resolve())).to_dicts()[0]
    doc = json.loads(MEDNLI.read_text())
    assert row["model_type"] == "vllm"
    assert row["run"] == "meta-llama/Llama-3.1-8B-Instruct" and row["step"] is None
    assert json.loads(row["model_args"]) == doc["config"]["model_args"]
    assert row["lm_eval_version"] == "0.4.9" and row["git_hash"] == "491d5d5b"
    assert row["date"] == dt.datetime.fromtimestamp(doc["date"], dt.UTC).replace(tzinfo=None)


def test_samples_file_beside_results_is_ingested(store):
    samples_file = next(EVALEVAL.parent.glob("samples_*.jsonl"))
    lines = [json.loads(line) for line in samples_file.read_text().splitlines() if line.strip()]
    rows = store.query("SELECT * FROM samples_all WHERE task = 'math_perturbed_full' ORDER BY doc_id").to_dicts()
    assert len(rows) == len(lines) == 10
    for row, line in zip(rows, lines, strict=True):
        assert row["doc_id"] == line["doc_id"]
        assert row["doc_hash"] == line["doc_hash"] and row["prompt_hash"] == line["prompt_hash"]
        assert row["target"] == line["target"]
        assert row["response"] == line["filtered_resps"][0]
        assert row["metrics"] == {"exact_match": line["exact_match"]}
        assert row["loglikelihoods"] is None
    evaluation = store.query("SELECT samples_files FROM evaluations WHERE source_path = $p", p=str(EVALEVAL.resolve()))
    assert evaluation["samples_files"][0].to_list() == [str(samples_file.resolve())]


def test_filters_are_kept_apart(tmp_path):
    """Two filters of one metric (as gsm8k writes them) are two rows, not a conflict."""
    doc = json.loads(MEDNLI.read_text())
    doc["results"]["gsm8k"] = {
        "alias": "gsm8k",
        "exact_match,strict-match": 0.25,
        "exact_match_stderr,strict-match": 0.01,
        "exact_match,flexible-extract": 0.5,
        "exact_match_stderr,flexible-extract": "N/A",
    }
    doc["n-shot"]["gsm8k"] = 5
    path = tmp_path / "results_2025-01-01T00-00-00.000000.json"
    path.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "s.duckdb") as s:
        assert s.ingest([path]).ok
        rows = s.query(
            "SELECT filter, value, stderr, num_fewshot FROM scores WHERE task = 'gsm8k' ORDER BY filter"
        ).rows()
    assert rows == [("flexible-extract", 0.5, None, 5), ("strict-match", 0.25, 0.01, 5)]


def test_date_falls_back_to_the_file_name(tmp_path):
    doc = json.loads(MEDNLI.read_text())
    del doc["date"]
    good = tmp_path / "a" / "results_2025-03-04T05-06-07.123456.json"
    odd = tmp_path / "b" / "results_2025-13-45T99-99-99.json"
    for path in (good, odd):
        path.parent.mkdir()
        path.write_text(json.dumps(doc))
        doc["results"]["MedNLI_0-shot"]["acc,none"] = 0.1  # keep the two files' contents apart
    with ood_store.open(tmp_path / "s.duckdb") as s:
        assert s.ingest([good, odd]).ok
        dates = dict(s.query("SELECT source_path, date FROM evaluations").rows())
    assert dates[str(good.resolve())] == dt.datetime(2025, 3, 4, 5, 6, 7, 123456)
    assert dates[str(odd.resolve())] is None
