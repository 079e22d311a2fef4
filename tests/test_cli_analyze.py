"""ood-store analyze / compare / analyses on the Pythia fixtures, checked against pingouin on the JSON series."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pandas as pd
import pingouin as pg
import polars as pl
import pytest

import ood_store
from conftest import PYTHIA_SIZES, expected_pythia_rows, pythia_files, table_dump
from ood_store._cli import main

REFERENCE_DIR = Path(__file__).parent / "reference"
IN_DOMAIN = "lambada_openai"
NOT_GIVEN = (
    "Error: --in-domain: not given, and no run has an in_domain attribute (set run attributes with --attr at ingest)"
)
OOD = ("arc_easy", "piqa", "sciq", "winogrande")
REQUIRED = ("run", "task_x", "task_y", "n", "r", "ci_low", "ci_high", "p", "p_adj", "n_eff", "p_eff",
            "residualizer", "method")  # fmt: skip


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("analyze") / "store.duckdb"
    with ood_store.open(db) as store:
        for size in PYTHIA_SIZES:
            assert store.ingest(pythia_files(size), attributes={"family": "pythia", "size": size}).ok
    return db


@pytest.fixture(scope="module")
def series():
    """{run: DataFrame(step × task acc)}, read straight from the JSON files."""
    rows = expected_pythia_rows(pythia_files())
    frame = pd.DataFrame(
        [(run, step, task, value) for (run, step, task, metric), (value, _) in rows.items() if metric == "acc"],
        columns=["run", "step", "task", "value"],
    )
    return {run: part.pivot(index="step", columns="task", values="value") for run, part in frame.groupby("run")}


def invoke(runner, db, *args):
    result = runner.invoke(main, ["--db", str(db), *args])
    assert "Traceback" not in result.output, result.output
    return result


def _csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_analyze_csv_matches_pingouin_on_the_json_series(runner, store_db, series, method):
    args = ["analyze", "--in-domain", IN_DOMAIN, "--ood", ",".join(OOD), "--method", method, "--format", "csv"]
    result = invoke(runner, store_db, *args)
    assert result.exit_code == 0, result.output
    rows = _csv(result.output)
    assert set(REQUIRED) <= set(rows[0])
    assert len(rows) == 3 * 6  # 3 runs × (4 choose 2) pairs
    for row in rows:
        data = series[row["run"]]
        expected = pg.partial_corr(data, x=row["task_x"], y=row["task_y"], covar=IN_DOMAIN, method=method)
        assert int(row["n"]) == expected["n"].iloc[0] == 27
        assert float(row["r"]) == pytest.approx(expected["r"].iloc[0], abs=1e-9)
        assert float(row["p"]) == pytest.approx(expected["p_val"].iloc[0], rel=1e-9, abs=1e-12)
        assert row["residualizer"] == "linear" and row["method"] == method


def test_analyze_default_ood_is_every_other_task_with_the_metric(runner, store_db, series):
    result = invoke(runner, store_db, "analyze", "--in-domain", IN_DOMAIN, "--run", "EleutherAI/pythia-v1.1-160m",
                    "--format", "json")  # fmt: skip
    rows = json.loads(result.output)
    tasks = {r["task_x"] for r in rows} | {r["task_y"] for r in rows}
    expected = set(series["EleutherAI/pythia-v1.1-160m"].columns) - {IN_DOMAIN}
    assert tasks == expected
    assert len(rows) == len(expected) * (len(expected) - 1) // 2


def test_analyze_table_output_is_a_readable_summary(runner, store_db):
    result = invoke(runner, store_db, "analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa")
    assert result.exit_code == 0
    header = result.output.splitlines()[0].split()
    assert header == ["run", "task_x", "task_y", "n", "r", "ci_low", "ci_high", "p_adj", "n_eff", "p_eff_adj", "reason"]
    full = invoke(runner, store_db, "analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa", "--all-columns")
    assert "boot_ci_low" in full.output.splitlines()[0]


def test_analyze_gam_and_bootstrap_from_the_cli(runner, store_db):
    args = ["analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa", "--run", "EleutherAI/pythia-v1.1-410m",
            "--residualizer", "gam", "--bootstrap", "100", "--seed", "3", "--format", "csv"]  # fmt: skip
    first, second = invoke(runner, store_db, *args), invoke(runner, store_db, *args)
    assert first.exit_code == 0, first.output
    assert first.output == second.output  # seeded
    [row] = _csv(first.output)
    assert row["residualizer"] == "gam"
    assert float(row["boot_ci_low"]) < float(row["boot_ci_high"])
    assert float(row["dof"]) == pytest.approx(27 - 1 - max(float(row["edf_x"]), float(row["edf_y"])))


def test_save_list_reload_and_compare_a_saved_analysis(runner, tmp_path):
    db = tmp_path / "store.duckdb"
    with ood_store.open(db) as store:
        for size in PYTHIA_SIZES:
            assert store.ingest(pythia_files(size), attributes={"family": "pythia", "size": size}).ok
    computed = invoke(runner, db, "analyze", "--in-domain", IN_DOMAIN, "--ood", ",".join(OOD), "--save", "main",
                      "--format", "csv")  # fmt: skip
    assert computed.exit_code == 0
    assert "Saved as analysis 'main' (18 rows)" in computed.stderr
    listed = _csv(invoke(runner, db, "analyses", "--format", "csv").output)
    assert [(r["name"], r["in_domain"], r["rows"]) for r in listed] == [("main", IN_DOMAIN, "18")]
    params = json.loads(listed[0]["params"])
    assert params["ood"] == list(OOD) and params["residualizer"] == "linear" and params["adjust"] == "holm"
    assert params["tasks"] == sorted(OOD) and params["runs_analyzed"] == sorted(set(fresh_runs(computed.stdout)))
    with ood_store.open(db, read_only=True) as store:
        saved = store.analysis("main").table
    fresh = pl.read_csv(io.StringIO(computed.stdout))
    assert saved.columns == fresh.columns
    assert saved.sort("run", "task_x", "task_y")["r"].to_list() == pytest.approx(
        fresh.sort("run", "task_x", "task_y")["r"].to_list(), abs=1e-12
    )
    before = table_dump(db)
    again = invoke(runner, db, "analyze", "--in-domain", IN_DOMAIN, "--save", "main")
    assert again.exit_code == 1
    assert again.output.strip().splitlines()[-1] == (
        "Error: --save: an analysis named 'main' exists already; pass --replace to overwrite it"
    )
    assert table_dump(db) == before
    replaced = invoke(runner, db, "analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa", "--save", "main",
                      "--replace", "--format", "csv")  # fmt: skip
    assert replaced.exit_code == 0
    with ood_store.open(db, read_only=True) as store:
        assert store.analysis("main").table.height == 3
    by_name = invoke(runner, db, "compare", "--analysis", "main", "--format", "csv")
    assert by_name.exit_code == 0, by_name.output
    assert len(_csv(by_name.output)) == 1
    dropped = invoke(runner, db, "analyses", "--drop", "main")
    assert dropped.exit_code == 0
    assert _csv(invoke(runner, db, "analyses", "--format", "csv").output) == []


def test_compare_from_the_cli(runner, store_db, series):
    result = invoke(runner, store_db, "compare", "--in-domain", IN_DOMAIN, "--ood", ",".join(OOD), "--inference",
                    "naive", "--format", "csv")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = _csv(result.output)
    assert len(rows) == 6
    row = next(r for r in rows if (r["task_x"], r["task_y"]) == ("arc_easy", "piqa"))
    runs = sorted(series)
    rs = [pg.partial_corr(series[run], x="arc_easy", y="piqa", covar=IN_DOMAIN)["r"].iloc[0] for run in runs]
    for run, r in zip(runs, rs, strict=True):
        assert float(row[f"r:{run}"]) == pytest.approx(r, abs=1e-9)
    assert int(row["n_positive"]) == sum(r > 0 for r in rs)
    assert row["verdict"] in {"consistently positive", "consistently negative", "model-dependent", "no evidence"}
    # hand check of the pooled estimate's homogeneity statistic with n - 4 weights
    z = [math.atanh(r) for r in rs]
    mean = sum(z) / 3
    assert float(row["q"]) == pytest.approx(sum((v - mean) ** 2 for v in z) * 23, rel=1e-9)


def test_compare_by_a_run_attribute(runner, store_db):
    result = invoke(runner, store_db, "compare", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa", "--by", "size",
                    "--by", "size", "--format", "csv")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = _csv(result.output)
    assert sorted(r["size"] for r in rows) == sorted(PYTHIA_SIZES)
    assert {r["verdict"] for r in rows} == {"too few runs"}  # one run per size


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze"], NOT_GIVEN),
        (["analyze", "--in-domain", "nope"], "Error: --in-domain: no task 'nope' in the store (see `ood-store tasks`)"),
        (["analyze", "--in-domain", "lambada", "--ood", "piqa"],
         "Error: --in-domain: no task 'lambada' in the store; did you mean lambada_openai? (see `ood-store tasks`)"),
        (["analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_esay,piqa"],
         "Error: --ood: no task 'arc_esay' in the store; did you mean arc_easy? (see `ood-store tasks`)"),
        (["analyze", "--in-domain", IN_DOMAIN, "--sensitivity", "--bootstrap", "10"],
         "--sensitivity compares point estimates: leave out --save and --bootstrap."),
        (["analyze", "--in-domain", IN_DOMAIN, "--metric", "f1"],
         f"Error: task '{IN_DOMAIN}' has no 'f1' scores; it has: acc, ppl (choose with --metric)"),
        (["analyze", "--in-domain", IN_DOMAIN, "--run", "gpt-5"],
         "Error: --run: no run 'gpt-5' in the store (see `ood-store runs`)"),
        (["analyze", "--in-domain", IN_DOMAIN, "--ood", IN_DOMAIN],
         f"Error: --ood: '{IN_DOMAIN}' is the in-domain task; it cannot also be an OOD task"),
        (["compare"], NOT_GIVEN),
        (["compare", "--analysis", "x", "--in-domain", IN_DOMAIN],
         "Give --analysis NAME or the analysis options (--in-domain ...), not both."),
        (["compare", "--in-domain", IN_DOMAIN, "--between", "family"], "--between and --within go together."),
        (["compare", "--in-domain", IN_DOMAIN, "--between", "family", "--within", "family"],
         "Error: --within: 'family' is also --between; give two different attributes"),
        (["compare", "--in-domain", IN_DOMAIN, "--between", "family", "--within", "size", "--by", "size"],
         "--between compares groups with each other; it does not combine with --by."),
        (["compare", "--analysis", "nothing"], "Error: no saved analysis named 'nothing' (see `ood-store analyses`)"),
        (["compare", "--in-domain", IN_DOMAIN, "--by", "shots"],
         "Error: --by: no run has attribute 'shots' (set run attributes with --attr at ingest)"),
        (["compare", "--in-domain", IN_DOMAIN, "--ood", "piqa,sciq", "--by", "run"],
         "Error: --by: run is a column of the table, not a run attribute"),
        (["analyses", "--drop", "nothing"], "Error: no saved analysis named 'nothing' (see `ood-store analyses`)"),
    ],
)  # fmt: skip
def test_user_errors_are_one_line(runner, store_db, args, message):
    before = table_dump(store_db)
    result = invoke(runner, store_db, *args)
    assert result.exit_code != 0
    assert message in result.output.strip().splitlines()[-1]
    assert table_dump(store_db) == before


def fresh_runs(csv_text: str) -> list[str]:
    return pl.read_csv(io.StringIO(csv_text))["run"].to_list()


def test_analyze_takes_the_runs_in_domain_attribute_when_they_agree(runner, tmp_path):
    db = tmp_path / "store.duckdb"
    with ood_store.open(db) as store:
        for size in PYTHIA_SIZES:
            attributes = {"family": "pythia", "size": size, "in_domain": IN_DOMAIN}
            assert store.ingest(pythia_files(size), attributes=attributes).ok
    implicit = invoke(runner, db, "analyze", "--ood", "arc_easy,piqa", "--format", "csv", "--save", "implicit")
    explicit = invoke(runner, db, "analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa", "--format", "csv")
    assert implicit.exit_code == 0, implicit.output
    assert implicit.stdout == explicit.stdout
    assert {row["in_domain"] for row in _csv(implicit.stdout)} == {IN_DOMAIN}
    with ood_store.open(db) as store:
        assert store.analysis("implicit").options.in_domain == IN_DOMAIN  # the saved parameters say which task
        store.set_run_attributes("EleutherAI/pythia-v1.1-410m", {"in_domain": "sciq"})
    # compare computes the same way; once the runs disagree, the error says how
    compared = invoke(runner, db, "compare", "--ood", "arc_easy,piqa", "--run", "EleutherAI/pythia-v1.1-160m",
                      "--run", "EleutherAI/pythia-v1.1-1.4b", "--format", "csv")  # fmt: skip
    assert compared.exit_code == 0, compared.output
    disagree = invoke(runner, db, "analyze", "--ood", "arc_easy,piqa")
    assert disagree.exit_code == 1
    assert disagree.output == (
        "Error: --in-domain: not given, and the runs' in_domain attributes differ: "
        "'lambada_openai' (2 runs), 'sciq' (1 run)\n"
    )


def test_analyze_sensitivity_reports_the_three_residualizers(runner, store_db):
    base = ["analyze", "--in-domain", IN_DOMAIN, "--ood", ",".join(OOD), "--format", "csv"]
    report = _csv(invoke(runner, store_db, *base, "--sensitivity").stdout)
    assert len(report) == 18
    assert list(report[0]) == list(ood_store._analysis.SENSITIVITY_COLUMNS)
    for name, extra in (("linear", []), ("gam_gcv", ["--residualizer", "gam", "--smoothing", "gcv"]),
                        ("gam_reml", ["--residualizer", "gam"])):  # fmt: skip
        rows = {(r["run"], r["task_x"], r["task_y"]): r for r in _csv(invoke(runner, store_db, *base, *extra).stdout)}
        for row in report:
            analyzed = rows[(row["run"], row["task_x"], row["task_y"])]
            assert float(row[f"r_{name}"]) == float(analyzed["r"])
            assert float(row[f"p_{name}"]) == float(analyzed["p_eff_adj"])
    for row in report:
        p = [float(row[f"p_{name}"]) < 0.05 for name in ("linear", "gam_gcv", "gam_reml")]
        signs = {math.copysign(1, float(row[f"r_{name}"])) for name in ("linear", "gam_gcv", "gam_reml")}
        assert (row["fragile"] == "true") == (len(set(p)) > 1 or (len(signs) > 1 and any(p)))
    table = invoke(runner, store_db, "analyze", "--in-domain", IN_DOMAIN, "--ood", "arc_easy,piqa", "--sensitivity")
    assert table.output.splitlines()[0].split() == [
        "run",
        "task_x",
        "task_y",
        "n",
        "r_linear",
        "r_gam_gcv",
        "r_gam_reml",
        "r_range",
        "fragile",
    ]


def test_compare_agreement_threshold_from_the_cli(runner, store_db):
    """With three runs, 2 of 3 sharing a sign pass a threshold of 0.6 but not the default 0.8 (each pair tested
    alone, by z: with the defaults no pooled interval of three runs is off 0 here)."""
    base = ["compare", "--in-domain", IN_DOMAIN, "--ood", ",".join(OOD), "--format", "csv", "--test", "z",
            "--adjust-pairs", "none"]  # fmt: skip
    strict, loose = _csv(invoke(runner, store_db, *base).stdout), _csv(invoke(runner, store_db, *base, "--agreement",
                                                                              "0.6").stdout)  # fmt: skip
    changed = 0
    for a, b in zip(strict, loose, strict=True):
        assert (a["task_x"], a["task_y"], a["r_pooled"]) == (b["task_x"], b["task_y"], b["r_pooled"])
        for row, threshold in ((a, 0.8), (b, 0.6)):
            if row["verdict"].startswith("consistently"):
                assert float(row["sign_agreement"]) >= threshold
        changed += a["verdict"] != b["verdict"]
    assert changed  # some pair with 2 of 3 runs agreeing and a pooled interval off 0


def _planted_store(tmp_path, dataset: str):
    """The planted model-versus-seed set of tests/reference as lm-eval v0.3 files, ingested with family and seed."""
    series = pl.read_csv(REFERENCE_DIR / "series.csv").filter(pl.col("dataset") == dataset)
    runs = pl.read_csv(REFERENCE_DIR / "runs.csv").filter(pl.col("dataset") == dataset)
    folder = tmp_path / dataset
    folder.mkdir()
    db = tmp_path / f"{dataset}.duckdb"
    with ood_store.open(db) as store:
        for run, family, seed in runs.select("run", "family", "seed").iter_rows():
            files = []
            part = series.filter(pl.col("run") == run)
            for (step,), rows in part.partition_by("step", as_dict=True).items():
                scores = zip(rows["task"], rows["value"], strict=True)
                doc = {
                    "results": {task: {"acc": value, "acc_stderr": 0.01} for task, value in scores},
                    "versions": dict.fromkeys(rows["task"], 0),
                    "config": {"model": "hf-causal", "model_args": f"pretrained={run},revision=step{step}",
                               "num_fewshot": 0, "batch_size": 1, "limit": None},
                }  # fmt: skip
                path = folder / f"{run}-{step}.json"
                path.write_text(json.dumps(doc))
                files.append(path)
            assert store.ingest(files, attributes={"family": family, "seed": int(seed)}).ok
    return db


def test_compare_between_families_within_seeds_from_the_cli(runner, tmp_path):
    """Planted +0.6 / -0.6 families with seed noise: they differ beyond seed variation, as metafor says."""
    reference = pl.read_csv(REFERENCE_DIR / "subgroups.csv")
    knha = pl.read_csv(REFERENCE_DIR / "subgroups_knha.csv", null_values=["NA", ""])
    for dataset, verdict in (("planted-between", "differs by family beyond seed variation"),
                             ("planted-seeds", "not shown to differ by family beyond seed variation")):  # fmt: skip
        db = _planted_store(tmp_path, dataset)
        for method in ("PM", "REML"):
            default = invoke(runner, db, "compare", "--in-domain", "id", "--between", "family", "--within", "seed",
                             "--tau2-method", method, "--format", "csv")  # fmt: skip
            row = next(r for r in _csv(default.stdout) if (r["task_x"], r["task_y"]) == ("x", "y"))
            expected = knha.filter(
                (pl.col("dataset") == dataset) & (pl.col("method") == method) & (pl.col("task_x") == "x")
                & (pl.col("task_y") == "y")
            ).row(0, named=True)  # fmt: skip
            assert row["verdict"] == verdict
            assert float(row["p_between"]) == pytest.approx(expected["QMp"], abs=1e-6)  # Knapp-Hartung's F
            assert float(row["p_between_adj"]) >= float(row["p_between"])  # Holm over the three pairs
            result = invoke(runner, db, "compare", "--in-domain", "id", "--between", "family", "--within", "seed",
                            "--tau2-method", method, "--format", "csv", "--test", "z",
                            "--adjust-pairs", "none")  # fmt: skip
            assert result.exit_code == 0, result.output
            row = next(r for r in _csv(result.stdout) if (r["task_x"], r["task_y"]) == ("x", "y"))
            expected = reference.filter(
                (pl.col("dataset") == dataset) & (pl.col("method") == method) & (pl.col("task_x") == "x")
                & (pl.col("task_y") == "y")
            ).row(0, named=True)  # fmt: skip
            assert row["verdict"] == verdict
            assert float(row["q_between"]) == pytest.approx(expected["QM"], abs=1e-6)
            assert float(row["p_between"]) == pytest.approx(expected["QMp"], abs=1e-6)
            assert float(row["tau2_within"]) == pytest.approx(expected["tau2"], abs=1e-6)
            assert float(row["q_within"]) == pytest.approx(expected["QE"], abs=1e-6)
        text = invoke(runner, db, "compare", "--in-domain", "id", "--between", "family", "--within", "seed")
        assert text.output.splitlines()[0].split() == [
            "task_x", "task_y", "groups", "runs", "q_between", "p_between", "p_between_adj", "tau2_within", "verdict",
            "basis", "r:olmo", "r:opt",
        ]  # fmt: skip
