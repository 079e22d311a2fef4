"""Slices of a testset by any field of its documents (issue 33): `documents` (schema 0006) holds each item's
document once; `--slice TASK:FIELD` splits a task's items by a top-level key of it.

Expected values are computed here from the samples files themselves (json.loads of each line), never from
the store: a slice's score at a checkpoint is the mean of its items' `acc`.
"""

from __future__ import annotations

import importlib.util
import json
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np
import pytest

from conftest import FIXTURES, suite_checkpoint

_make = importlib.util.spec_from_file_location("hans_slices_make", FIXTURES / "hans-slices" / "make.py")
assert _make is not None and _make.loader is not None
make = importlib.util.module_from_spec(_make)
_make.loader.exec_module(make)  # the fixture's own document and line builders (tests/fixtures/hans-slices/make.py)

STAMP, HEURISTICS, TASKS = make.STAMP, make.HEURISTICS, make.TASKS
ITEMS = 60


def _line(task: str, i: int, correct: bool) -> dict:
    """A samples line of ``task`` (three labels for the tasks other than hans)."""
    return make.line(task, i, correct, labels=3)


def write_run(folder: Path, run: str, rng: np.random.Generator, steps: int = 8) -> None:
    """lm-eval results and samples files of one run, one folder per checkpoint, items right at random."""
    from ood_store._examples import pilot

    ability = rng.uniform(0.2, 0.8, size=(len(TASKS), ITEMS))
    for t in range(steps):
        step = (t + 1) * 100
        checkpoint = folder / run / f"step-{step}"
        checkpoint.mkdir(parents=True)
        scores = {}
        for k, task in enumerate(TASKS):
            right = rng.random(ITEMS) < np.clip(ability[k] + 0.03 * t, 0, 1)
            scores[task] = float(right.mean())
            lines = [json.dumps(_line(task, i, bool(right[i]))) for i in range(ITEMS)]
            (checkpoint / f"samples_{task}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
        results = pilot._results_file(run, step, scores, dict.fromkeys(TASKS, ITEMS))
        (checkpoint / f"results_{STAMP}.json").write_text(json.dumps(results))


def expected_slices(folder: Path, task: str, field: str) -> dict[tuple[str, int, str], float]:
    """(run, step, slice name) -> the mean `acc` of its items, read from the samples files directly."""
    sums: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    for path in folder.rglob(f"samples_{task}_*.jsonl"):
        run, step = path.parent.parent.name, int(path.parent.name.removeprefix("step-"))
        for text in path.read_text().splitlines():
            line = json.loads(text)
            sums[run, step, f"{task}[{field}={line['doc'][field]}]"].append(line["acc"])
    return {key: sum(values) / len(values) for key, values in sums.items()}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("slices")
    rng = np.random.default_rng(33)
    for run in ("r1", "r2"):
        write_run(folder / "files", run, rng)
    return folder / "files"


@pytest.fixture(scope="module")
def sliced_db(files, tmp_path_factory) -> Path:
    import ood_store

    db = tmp_path_factory.mktemp("db") / "store.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([files]).ok
    return db


def _series(store, *slices: str):
    from ood_store._analysis.partial import Options
    from ood_store._analysis.series import load_series

    return load_series(store, Options(in_domain="mnli", ood=("rte",), slices=slices)).scores


def test_documents_are_stored_once_per_task_and_hash(sliced_db, files):
    """16 checkpoints of 3 tasks hold 60 documents each: 180 rows, each the file's `doc` object."""
    con = duckdb.connect(str(sliced_db), read_only=True)
    rows = con.execute("SELECT task, doc_hash, doc FROM documents").fetchall()
    con.close()
    assert len(rows) == len({(task, h) for task, h, _ in rows}) == len(TASKS) * ITEMS
    line = json.loads(next(files.rglob("samples_hans_*.jsonl")).read_text().splitlines()[5])
    stored = {(task, h): json.loads(doc) for task, h, doc in rows}
    assert stored["hans", line["doc_hash"]] == line["doc"]


def test_a_slice_by_a_document_field_scores_the_mean_of_its_items(sliced_db, files):
    import ood_store

    with ood_store.open(sliced_db, read_only=True) as store:
        scores = _series(store, "hans:heuristic", "hans:subcase")
    for field in ("heuristic", "subcase"):
        expected = expected_slices(files, "hans", field)
        got = {
            (run, step, task): value
            for run, step, task, value in scores.filter(scores["task"].str.contains(f"[{field}=", literal=True))
            .select("run", "step", "task", "value")
            .iter_rows()
        }
        assert set(got) == set(expected) and len(expected) == 2 * 8 * (3 if field == "heuristic" else 4)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-12), key


def test_slices_by_field_in_analyze_and_bad_fields_in_one_line(sliced_db, runner):
    from ood_store._cli import main

    base = ["--db", str(sliced_db), "analyze", "--in-domain", "mnli", "--ood", "rte"]
    result = runner.invoke(main, [*base, "--slice", "hans:heuristic", "--format", "csv"])
    assert result.exit_code == 0, result.output
    for heuristic in HEURISTICS:
        assert f"hans[heuristic={heuristic}]" in result.output
    bad = runner.invoke(main, [*base, "--slice", "hans:round"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output and len(bad.output.strip().splitlines()) == 1
    assert bad.output.strip() == (
        "Error: --slice: 'hans:round': the documents of 'hans' have no field 'round'; their fields: heuristic, "
        "hypothesis, label, premise, subcase, template (or target, the label)"
    )


def test_a_store_of_schema_5_migrates_and_says_its_samples_have_no_documents(files, tmp_path, runner):
    """A store left at 0005 (samples, no documents table) gains an empty `documents`: slicing by a document's
    field says that the store holds none of them and how to get them; slicing by target still works. Ingesting
    the same files again (all present) stores their documents, once."""
    import ood_store
    from ood_store._cli import main

    db = tmp_path / "old.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([files / "r1"]).ok
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE documents")
    con.execute("DELETE FROM schema_version WHERE version = 6")
    con.close()
    with ood_store.open(db) as store:
        assert store.migrations_applied == [6]
        assert store.query("SELECT count(*) FROM documents").rows() == [(0,)]
        assert store.query("SELECT count(*) FROM samples").rows() == [(8 * 3 * ITEMS,)]
    base = ["--db", str(db), "analyze", "--in-domain", "mnli", "--ood", "rte"]
    refused = runner.invoke(main, [*base, "--slice", "hans:heuristic"])
    assert refused.exit_code != 0 and "Traceback" not in refused.output
    assert "'hans:heuristic': the store holds none of its documents for 1 run (r1)" in refused.output
    assert "ingesting its results files again, with their samples files beside them, stores them" in refused.output
    assert runner.invoke(main, [*base, "--slice", "hans:target"]).exit_code == 0
    with ood_store.open(db) as store:  # the files again: present, and their documents stored
        report = store.ingest([files / "r1"])
        assert report.ok and len(report.present) == 8 and not report.ingested and not report.warnings
        assert store.query("SELECT count(*) FROM documents").rows() == [(len(TASKS) * ITEMS,)]
        scores = _series(store, "hans:heuristic")
        assert store.ingest([files / "r1"]).ok  # nothing left to add: no duplicates
        assert store.query("SELECT count(*) FROM documents").rows() == [(len(TASKS) * ITEMS,)]
    expected = {k: v for k, v in expected_slices(files, "hans", "heuristic").items() if k[0] == "r1"}
    got = {
        (run, step, task): value
        for run, step, task, value in scores.filter(
            scores["task"].str.contains("[heuristic=", literal=True)
        ).iter_rows()
    }
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(v, abs=1e-12) for k, v in expected.items())


def test_dump_and_merge_carry_documents_once(sliced_db, files, tmp_path):
    import ood_store

    def documents(db: Path) -> list[tuple]:
        con = duckdb.connect(str(db), read_only=True)
        try:
            return sorted(con.execute("SELECT task, doc_hash, doc::VARCHAR FROM documents").fetchall())
        finally:
            con.close()

    held = documents(sliced_db)
    with ood_store.open(sliced_db, read_only=True) as store:
        store.dump(tmp_path / "dump")
    with ood_store.open(tmp_path / "loaded.duckdb") as store:
        assert store.load(tmp_path / "dump").documents_added == len(held)
        assert store.load(tmp_path / "dump").documents_added == 0
    assert documents(tmp_path / "loaded.duckdb") == held
    with ood_store.open(tmp_path / "half.duckdb") as store:  # r1's files: the same documents as r2's
        assert store.ingest([files / "r1"]).ok
        report = store.merge(sliced_db)
        assert report.evaluations_added == 8 and report.documents_added == 0
        assert store.merge(sliced_db).documents_added == 0
    assert documents(tmp_path / "half.duckdb") == held


def test_hans_of_the_suite_fixtures_by_heuristic(tmp_path):
    """The suite's HANS testset (tests/fixtures/nli-suite) scored by the toy model at three checkpoints:
    its slices by heuristic are HANS's heuristics in that file, each scored the mean of its items' acc."""
    import ood_store
    from ood_store._evaluate.scorer import VerbalizerLM, score, suite_tasks
    from ood_store._evaluate.suite.variant import Variant

    rows = [json.loads(t) for t in (FIXTURES / "nli-suite" / "ood_nli_hans.jsonl").read_text().splitlines()]
    checkpoint = suite_checkpoint(tmp_path / "model", 64)
    lm = VerbalizerLM(str(checkpoint), batch_size=4, device="cpu")
    for step in (100, 200, 300):
        pretrained = str(tmp_path / "toy" / f"checkpoint-{step}")
        with suite_tasks(["ood_nli_hans", "ood_nli_mnli"], variant=Variant.of("minimal"),
                         data_dir=FIXTURES / "nli-suite") as tasks:  # fmt: skip
            score(lm, tasks, model_args={"pretrained": pretrained}).write(tmp_path / "out" / f"step-{step}")
    samples = sorted((tmp_path / "out").rglob("samples_ood_nli_hans__minimal_*.jsonl"))
    assert len(samples) == 3
    expected: dict[str, list[float]] = defaultdict(list)
    for text in samples[0].read_text().splitlines():
        line = json.loads(text)
        expected[f"ood_nli_hans__minimal[heuristic={line['doc']['heuristic']}]"].append(line["acc"])
    assert {name.split("=")[1][:-1] for name in expected} == {row["heuristic"] for row in rows}
    with ood_store.open(tmp_path / "suite.duckdb") as store:
        assert store.ingest([tmp_path / "out"]).ok
        scores = _suite_series(store)
    assert scores["step"].unique().sort().to_list() == [100, 200, 300]
    for name, values in expected.items():
        got = scores.filter(scores["task"] == name)["value"].to_list()
        assert got == pytest.approx([sum(values) / len(values)] * 3, abs=1e-12), name


def _suite_series(store):
    from ood_store._analysis.partial import Options
    from ood_store._analysis.series import load_series

    options = Options(in_domain="ood_nli_mnli__minimal", slices=("ood_nli_hans__minimal:heuristic",))
    frame = load_series(store, options).scores
    return frame.filter(frame["task"].str.starts_with("ood_nli_hans__minimal["))


def test_field_slices_in_compare_and_in_a_saved_analysis_export(sliced_db, tmp_path, runner):
    """compare takes --slice TASK:FIELD, and an analysis saved with one exports its slices as tasks."""
    import shutil

    from ood_store._cli import main

    db = tmp_path / "copy.duckdb"
    shutil.copy(sliced_db, db)
    slices = ["--in-domain", "mnli", "--ood", "rte", "--slice", "hans:heuristic"]
    compared = runner.invoke(main, ["--db", str(db), "compare", *slices, "--format", "csv"])
    assert compared.exit_code == 0, compared.output
    assert all(f"hans[heuristic={h}]" in compared.output for h in HEURISTICS)
    saved = runner.invoke(main, ["--db", str(db), "analyze", *slices, "--save", "by-heuristic"])
    assert saved.exit_code == 0, saved.output
    exported = runner.invoke(main, ["--db", str(db), "export", "--analysis", "by-heuristic", "-f", "csv"])
    assert exported.exit_code == 0, exported.output
    assert all(f"hans[heuristic={h}]" in exported.output for h in HEURISTICS)


def test_samples_without_doc_hash_are_refused_by_field_but_slice_by_target(tmp_path, runner):
    """Samples files of an lm-eval that wrote no doc_hash: their items name no document; one line says so."""
    import shutil

    from ood_store._cli import main

    folder = tmp_path / "files"
    write_run(folder, "old", np.random.default_rng(5), steps=4)
    for path in folder.rglob("samples_*.jsonl"):
        lines = [json.loads(t) for t in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "doc_hash"}) + "\n" for x in lines))
    db = tmp_path / "old.duckdb"
    assert runner.invoke(main, ["--db", str(db), "ingest", "-q", str(folder)]).exit_code == 0
    assert duckdb.connect(str(db), read_only=True).execute("SELECT count(*) FROM documents").fetchone() == (0,)
    base = ["--db", str(db), "analyze", "--in-domain", "mnli", "--ood", "rte"]
    refused = runner.invoke(main, [*base, "--slice", "hans:heuristic"])
    assert refused.exit_code != 0 and len(refused.output.strip().splitlines()) == 1
    assert "samples of 'hans' in 1 run (old) name no document" in refused.output
    assert runner.invoke(main, [*base, "--slice", "hans:target"]).exit_code == 0
    shutil.rmtree(folder)
