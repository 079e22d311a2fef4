"""lm-eval 0.4.13 output of a tiny model: checkpoint paths, groups and per-sample rows."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import ood_store
from conftest import V0413


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("v0413") / "store.duckdb"
    with ood_store.open(db) as s:
        report = s.ingest([V0413])
        assert len(report.ingested) == 2 and report.ok
    s = ood_store.open(db, read_only=True)
    yield s
    s.close()


def results_files():
    return sorted(V0413.rglob("results_*.json"))


def test_run_and_step_come_from_the_checkpoint_path(store):
    rows = store.query("SELECT run, step, identity_from FROM evaluations ORDER BY step").rows()
    assert rows == [("toy-run", 10, "path"), ("toy-run", 20, "path")]
    checkpoints = store.query("SELECT run, step, model FROM checkpoints ORDER BY step").rows()
    assert checkpoints == [("toy-run", 10, "toy-run/checkpoint-10"), ("toy-run", 20, "toy-run/checkpoint-20")]


def test_scores_match_the_files(store):
    for path in results_files():
        doc = json.loads(path.read_text())
        step = int(doc["config"]["model_args"].rsplit("-", 1)[1])
        for task, entry in doc["results"].items():
            for key, value in entry.items():
                if "," not in key or "_stderr," in key:
                    continue
                metric, filt = key.rsplit(",", 1)
                got = store.query(
                    "SELECT value, stderr, n_samples, is_group FROM scores "
                    "WHERE step = $s AND task = $t AND metric = $m AND filter = $f",
                    s=step,
                    t=task,
                    m=metric,
                    f=filt,
                ).rows()
                assert got == [
                    (value, entry[f"{metric}_stderr,{filt}"], entry["sample_len"], task in doc["group_subtasks"])
                ], (step, task, key)


def test_group_sample_count(store):
    rows = store.query("SELECT step, n_samples FROM scores WHERE task = 'toy_suite' ORDER BY step").rows()
    assert rows == [(10, 40), (20, 40)]  # 24 + 16 documents of its two subtasks


def test_one_sample_row_per_document(store):
    counts = store.query(
        "SELECT step, task, count(*) AS n FROM samples_all GROUP BY step, task ORDER BY step, task"
    ).rows()
    assert counts == [(s, t, n) for s in (10, 20) for t, n in (("toy_gen", 6), ("toy_nli", 24), ("toy_nli_yn", 16))]


def test_accuracy_is_the_mean_of_per_sample_correctness(store):
    rows = store.query(
        """
        SELECT s.step, s.task, s.value AS acc, avg(x.metrics['acc']) AS mean_sample_acc
        FROM scores s JOIN samples x USING (evaluation_id, task, filter)
        WHERE s.metric = 'acc' AND NOT s.is_group
        GROUP BY ALL ORDER BY ALL
        """
    ).rows()
    assert len(rows) == 4
    for step, task, acc, mean_sample_acc in rows:
        assert acc == pytest.approx(mean_sample_acc, abs=1e-12), (step, task)


def test_loglikelihoods_are_numbers_and_explain_acc(store):
    """acc of a sample is 1 exactly when the gold choice has the highest log-likelihood."""
    rows = store.query(
        "SELECT target, loglikelihoods, is_greedy, metrics['acc'] AS acc FROM samples WHERE task = 'toy_nli'"
    ).rows()
    assert len(rows) == 48
    for target, lls, greedy, acc in rows:
        assert len(lls) == 2 and all(isinstance(v, float) for v in lls)
        assert all(isinstance(g, bool) for g in greedy)
        best = max(range(len(lls)), key=lambda i: lls[i])
        assert acc == float(best == int(target))


def test_loglikelihoods_equal_the_strings_in_the_file(store):
    path = next(V0413.rglob("samples_toy_nli_yn_*.jsonl"))
    first = json.loads(path.read_text().splitlines()[0])
    step = int(path.parent.name.rsplit("-", 1)[1])
    got = store.query(
        "SELECT loglikelihoods, target FROM samples_all WHERE task = 'toy_nli_yn' AND doc_id = $d AND step = $s",
        d=first["doc_id"],
        s=step,
    ).rows()
    assert got == [([float(pair[0]) for pair in first["filtered_resps"]], first["target"])]


def test_generation_responses(store):
    path = next(V0413.rglob("samples_toy_gen_*.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    step = int(path.parent.name.rsplit("-", 1)[1])
    rows = store.query(
        "SELECT doc_id, response, target, metrics FROM samples_all "
        "WHERE task = 'toy_gen' AND step = $s ORDER BY doc_id",
        s=step,
    ).rows()
    assert rows == [
        (line["doc_id"], line["filtered_resps"][0], line["target"], {"exact_match": line["exact_match"]})
        for line in lines
    ]


def test_no_samples_flag(tmp_path):
    with ood_store.open(tmp_path / "s.duckdb") as s:
        report = s.ingest([V0413], samples=False)
        assert report.ok and sum(f.samples for f in report.ingested) == 0
        assert s.query("SELECT count(*) AS n FROM samples")["n"][0] == 0
        assert s.query("SELECT count(*) AS n FROM scores")["n"][0] > 0


def test_non_numeric_per_sample_values_are_kept_as_json(tmp_path):
    """ifeval writes lists of booleans and f1 writes (gold, prediction) pairs per sample."""
    import shutil

    folder = tmp_path / "out"
    shutil.copytree(next(V0413.glob("toy-run__checkpoint-10")), folder)
    samples = next(folder.glob("samples_toy_gen_*.jsonl"))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for line in lines:
        line["metrics"] = ["exact_match", "f1", "inst_level_strict_acc"]
        line["f1"] = [line["target"], line["filtered_resps"][0]]
        line["inst_level_strict_acc"] = [True, False]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest([folder]).ok
        rows = store.query("SELECT doc_id, metrics, metrics_other FROM samples WHERE task = 'toy_gen' ORDER BY doc_id")
    for (doc_id, metrics, other), line in zip(rows.rows(), lines, strict=True):
        assert doc_id == line["doc_id"]
        assert metrics == {"exact_match": line["exact_match"]}
        assert json.loads(other) == {"f1": line["f1"], "inst_level_strict_acc": [True, False]}


def rows_of(db, task):
    with ood_store.open(db, read_only=True) as s:
        return s.query(
            "SELECT * EXCLUDE (evaluation_id) FROM samples WHERE task = $t ORDER BY doc_id, filter", t=task
        ).rows()


def test_both_layouts_read_the_same_rows(tmp_path, monkeypatch):
    """Log-likelihood files go in by the typed "scored" layout; read as "json" they give the same rows."""
    from ood_store._ingest import samples as samples_module

    plans = [samples_module.plan(p, "multiple_choice") for p in sorted(V0413.rglob("samples_toy_nli_*.jsonl"))]
    assert {p.layout for p in plans} == {"scored"}
    fast, generic = tmp_path / "fast.duckdb", tmp_path / "generic.duckdb"
    with ood_store.open(fast) as s:
        assert s.ingest([V0413]).ok
    real = samples_module.plan
    monkeypatch.setattr(samples_module, "plan", lambda *a, **k: dataclasses.replace(real(*a, **k), layout="json"))
    with ood_store.open(generic) as s:
        assert s.ingest([V0413]).ok
    for task in ("toy_nli", "toy_nli_yn", "toy_gen"):
        assert rows_of(fast, task) == rows_of(generic, task), task


def copy_checkpoint(tmp_path):
    folder = tmp_path / "out"
    shutil.copytree(next(V0413.glob("toy-run__checkpoint-10")), folder)
    return folder


def test_a_line_that_leaves_the_scored_layout_is_read_as_json(tmp_path):
    folder = copy_checkpoint(tmp_path)
    samples = next(folder.glob("samples_toy_nli_2*.jsonl"))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[7]["filtered_resps"] = [[-3.5, True], [-1.25, None]]  # numbers and a null where lm-eval writes strings
    lines[9]["acc"] = "0.5"
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest([folder]).ok
        got = store.query(
            "SELECT doc_id, loglikelihoods, is_greedy, metrics FROM samples WHERE task = 'toy_nli' ORDER BY doc_id"
        ).rows()
    assert got[7] == (
        lines[7]["doc_id"],
        [-3.5, -1.25],
        [True, None],
        {"acc": lines[7]["acc"], "acc_norm": lines[7]["acc_norm"]},
    )
    assert got[9][3] == {"acc": 0.5, "acc_norm": lines[9]["acc_norm"]}
    assert [row[1] for row in got] == [[float(p[0]) for p in line["filtered_resps"]] for line in lines]


def test_a_metric_that_only_later_lines_list(tmp_path):
    folder = copy_checkpoint(tmp_path)
    samples = next(folder.glob("samples_toy_gen_*.jsonl"))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[4]["metrics"] = ["exact_match", "chrf"]
    lines[4]["chrf"] = 12.5
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest([folder]).ok
        got = store.query("SELECT doc_id, metrics FROM samples WHERE task = 'toy_gen' ORDER BY doc_id").rows()
    assert got[4] == (lines[4]["doc_id"], {"exact_match": lines[4]["exact_match"], "chrf": 12.5})
    assert got[0] == (lines[0]["doc_id"], {"exact_match": lines[0]["exact_match"]})


def test_a_line_longer_than_the_first_read_expects_is_read_again(tmp_path):
    """Samples files are first read with DuckDB's own bound on a line (16 MB: buffers of 32 MB, one per
    thread, so that DuckDB splits a large file between its threads); a file with a longer line, up to
    ood-store's 64 MB, is read again with that bound, and its rows are those of the file."""
    from ood_store._ingest.limits import MAX_SAMPLE_LINE_BYTES, SAMPLE_READ_LINE_BYTES

    assert SAMPLE_READ_LINE_BYTES == 16 * 2**20 and MAX_SAMPLE_LINE_BYTES == 64 * 2**20
    folder = copy_checkpoint(tmp_path)
    samples = next(folder.glob("samples_toy_nli_2*.jsonl"))
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[3]["doc"]["premise"] = "x" * (40 * 2**20)  # beyond two buffers of the first read: DuckDB refuses it
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert SAMPLE_READ_LINE_BYTES * 2 < len(json.dumps(lines[3])) < MAX_SAMPLE_LINE_BYTES
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([folder])
        assert report.ok, report.rejected
        got = store.query("SELECT doc_id, loglikelihoods FROM samples WHERE task = 'toy_nli' ORDER BY doc_id").rows()
    assert got == [(line["doc_id"], [float(p[0]) for p in line["filtered_resps"]]) for line in lines]


def test_the_samples_files_of_a_batch_go_in_together_as_each_alone(tmp_path, monkeypatch):
    """The samples files of a batch that share a layout and columns are read by one statement (both
    checkpoints' toy_nli files, ...); the rows are those that inserting each file alone gives."""
    from ood_store._ingest import samples as samples_module

    real = samples_module.groups
    seen = []
    monkeypatch.setattr(samples_module, "groups", lambda files: seen.extend(real(files)) or real(files))
    together, alone = tmp_path / "together.duckdb", tmp_path / "alone.duckdb"
    with ood_store.open(together) as s:
        assert s.ingest([V0413]).ok
    assert max(len(group) for group in seen) >= 2, seen
    monkeypatch.setattr(samples_module, "groups", lambda files: [[item] for item in files])
    with ood_store.open(alone) as s:
        assert s.ingest([V0413]).ok
    for task in ("toy_nli", "toy_nli_yn", "toy_gen"):
        assert rows_of(together, task) == rows_of(alone, task), task


def test_a_bad_file_read_with_others_is_named_and_the_others_go_in(tmp_path):
    """A document twice in one checkpoint's samples file: DuckDB reads it with the other checkpoint's
    file of the same task; the ingest names that file and stores the other checkpoint whole."""
    root = tmp_path / "runs"
    shutil.copytree(V0413, root)
    bad = sorted(root.rglob("samples_toy_nli_2*.jsonl"))[0]
    lines = bad.read_text().splitlines()
    bad.write_text("\n".join([*lines, lines[2]]) + "\n")  # document 2 again, under the same filter
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([root])
        stored = store.query("SELECT task, count(*) AS n FROM samples GROUP BY task ORDER BY task").rows()
    assert len(report.ingested) == 1 and len(report.rejected) == 1
    doc = json.loads(lines[2])
    assert report.rejected[0].reason == (
        f"{bad}: line {len(lines) + 1}: doc_id: document {doc['doc_id']} appears twice under filter "
        f"{doc.get('filter', 'none')!r}"
    )
    good = report.ingested[0].path
    expected = {}
    for samples in sorted(Path(good).parent.glob("samples_*.jsonl")):
        task = samples.name.split("_2")[0].removeprefix("samples_")
        expected[task] = len(samples.read_text().splitlines())
    assert stored == sorted(expected.items())


def test_documents_read_file_by_file_equal_those_read_in_one_statement(tmp_path, monkeypatch):
    """A batch's documents go in by one statement that reads a file per task (toy_nli, toy_nli_yn, toy_gen) at
    once; the file-by-file path (after a refusal) stores the same rows. Each row is the `doc` of its file's
    lines with that doc_hash, as json.loads reads the file."""
    from ood_store._ingest import samples as samples_module

    real_insert, real_store = samples_module._insert_documents, samples_module.store_documents
    batches: list[int] = []

    def spy(con, batch, fresh, line_bytes):
        batches.append(len(batch))
        return real_insert(con, batch, fresh, line_bytes)

    monkeypatch.setattr(samples_module, "_insert_documents", spy)
    together, alone = tmp_path / "together.duckdb", tmp_path / "alone.duckdb"
    with ood_store.open(together) as s:
        assert s.ingest([V0413]).ok
    assert max(batches) == 3, batches  # the three tasks' files in one statement
    batches.clear()
    monkeypatch.setattr(
        samples_module, "store_documents", lambda con, files, grouped=True: real_store(con, files, False)
    )
    with ood_store.open(alone) as s:
        assert s.ingest([V0413]).ok
    assert batches and max(batches) == 1

    def documents(db):
        with ood_store.open(db, read_only=True) as s:
            return s.query("SELECT task, doc_hash, doc FROM documents ORDER BY task, doc_hash").rows()

    got = documents(together)
    assert got == documents(alone)
    expected = {}
    for path in V0413.rglob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            sample = json.loads(line)
            expected[path.name.split("_2")[0].removeprefix("samples_"), sample["doc_hash"]] = sample["doc"]
    assert {(task, doc_hash): json.loads(doc) for task, doc_hash, doc in got} == expected
    assert len(got) == len(expected)  # each (task, doc_hash) once, however many checkpoints hold it
