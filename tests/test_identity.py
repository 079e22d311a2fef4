"""Which run and step a results file belongs to (the rules in ingest/identity.py)."""

from __future__ import annotations

import pytest

from ood_store._ingest.identity import Overrides, identify, parse_model_args, step_in


def ident(model_args, config=None, top=None, **overrides):
    config = {"model_args": model_args, **(config or {})}
    return identify(parse_model_args(model_args), config, top or {}, Overrides(**overrides))


@pytest.mark.parametrize(
    ("name", "step"),
    [
        ("step1000", 1000),
        ("step-1000", 1000),
        ("step_1000", 1000),
        ("global_step1000", 1000),
        ("checkpoint-1000", 1000),
        ("ckpt_20", 20),
        ("stage1-step140000-tokens587B", 140000),  # OLMo / OLMo 2 hub revisions
        ("main", None),
        ("v1.0", None),
        ("pythia-160m", None),
        ("stepwise", None),
        ("", None),
        (None, None),
    ],
)
def test_step_in_names(name, step):
    assert step_in(name) == step


def test_revision_names_the_step_and_the_model_is_the_run():
    got = ident("pretrained=EleutherAI/pythia-160m,revision=step3000,dtype=float16")
    assert (got.run, got.step, got.source) == ("EleutherAI/pythia-160m", 3000, "revision")
    assert got.base_model == "EleutherAI/pythia-160m" and got.revision == "step3000"


@pytest.mark.parametrize(
    ("path", "run", "step"),
    [
        ("/scratch/opt-mnli-s1/checkpoint-500", "/scratch/opt-mnli-s1", 500),
        ("runs/opt-mnli-s1/checkpoint-500/", "runs/opt-mnli-s1", 500),
        ("runs/smollm/step-40", "runs/smollm", 40),
        ("runs/smollm/step40", "runs/smollm", 40),
        ("ckpts/olmo/global_step1200", "ckpts/olmo", 1200),
    ],
)
def test_checkpoint_path_names_run_and_step(path, run, step):
    got = ident(f"pretrained={path}")
    assert (got.run, got.step, got.source, got.model) == (run, step, "path", path.rstrip("/"))


def test_dict_model_args():
    got = ident({"pretrained": "allenai/OLMo-2-1124-7B", "revision": "stage1-step5000-tokens21B"})
    assert (got.run, got.step) == ("allenai/OLMo-2-1124-7B", 5000)


def test_model_revision_from_config_when_model_args_has_none():
    got = ident("pretrained=EleutherAI/pythia-410m", config={"model_revision": "step143000"})
    assert (got.run, got.step, got.revision) == ("EleutherAI/pythia-410m", 143000, "step143000")
    main = ident("pretrained=EleutherAI/pythia-410m", config={"model_revision": "main"})
    assert (main.step, main.revision) == (None, None)


def test_final_model_has_no_step():
    got = ident("pretrained=facebook/opt-1.3b,dtype=bfloat16")
    assert (got.run, got.step, got.source) == ("facebook/opt-1.3b", None, "model")


def test_null_model_args_falls_back_to_model_name():
    got = ident(None, top={"model_name": "my-model/checkpoint-7"})
    assert (got.run, got.step) == ("my-model", 7)


def test_nothing_named_gives_none():
    assert ident(None) is None


def test_peft_adapter_path_is_the_checkpoint():
    got = ident("pretrained=facebook/opt-1.3b,peft=/runs/opt-lora-mnli/checkpoint-300")
    assert (got.run, got.step, got.base_model) == ("/runs/opt-lora-mnli", 300, "facebook/opt-1.3b")


def test_overrides_win():
    got = ident("pretrained=runs/a/checkpoint-5", run="opt-mnli-seed1")
    assert (got.run, got.step, got.source) == ("opt-mnli-seed1", 5, "path+flags")
    got = ident("pretrained=runs/a/checkpoint-5", run="r", step=9)
    assert (got.run, got.step, got.source) == ("r", 9, "flags")
    got = ident(None, model="runs/b/step-12")
    assert (got.run, got.step) == ("runs/b", 12)


def test_model_args_strings_parse_like_lm_eval():
    assert parse_model_args("pretrained=x,revision=step1,trust_remote_code=True") == {
        "pretrained": "x",
        "revision": "step1",
        "trust_remote_code": True,
    }
    assert parse_model_args(None) == {}
    with pytest.raises(TypeError):
        parse_model_args(3)


MODEL_ARGS = [
    "pretrained=EleutherAI/pythia-160m,revision=step3000,dtype=float16",
    "use_accelerate=True,pretrained=EleutherAI/pythia-v1.1-1.4b,revision=step0",
    " pretrained='my,model' ,trust_remote_code=true,max_length=2048,temperature=0.7,x=None,y=",
    "pretrained=a=b,peft=/runs/lora/checkpoint-5,batch=-3,lr=1e-4,big=" + "9" * 5000,
    "",
    ",,",
]


@pytest.mark.parametrize("text", MODEL_ARGS)
def test_model_args_are_read_as_lm_eval_reads_them(text):
    """ingest reads model_args without importing lm-eval; lm-eval's own parser is the reference."""
    from lm_eval.utils import simple_parse_args_string

    assert parse_model_args(text) == simple_parse_args_string(text)


def test_model_args_of_every_fixture_as_lm_eval_reads_them():
    import json

    from lm_eval.utils import simple_parse_args_string

    from conftest import FIXTURES

    texts = {
        json.loads(f.read_text()).get("config", {}).get("model_args")
        for f in FIXTURES.rglob("*.json")
        if f.name.startswith(("results", "1", "4", "7", "mmlu", "baseline"))
    }
    texts = {t for t in texts if isinstance(t, str)}
    assert len(texts) > 80
    for text in texts:
        assert parse_model_args(text) == simple_parse_args_string(text), text


def test_samples_file_names_as_lm_eval_reads_them():
    from pathlib import Path

    from lm_eval.utils import get_file_datetime, get_file_task_name

    from ood_store._ingest.samples import results_beside, task_of

    for name in (
        "samples_toy_nli_yn_2026-12-02T10-30-50.239722.jsonl",
        "samples_math_perturbed_full_2026-01-21T03-44-18.458309.jsonl",
        "samples_arc_easy_2024-05-01T00-00-00.jsonl",
    ):
        path = Path("/x") / name
        assert task_of(path) == get_file_task_name(name.removesuffix(".jsonl"))
        assert results_beside(path) == Path("/x") / f"results_{get_file_datetime(name)}.json"


@pytest.mark.parametrize(
    ("folders", "campaign"),
    [
        (("evals", "pythia-v1", "pythia-160m", "zero-shot"), "zero-shot"),
        (("outputs", "MedNLI", "0-shot", "EleutherAI__pythia-160m"), "0-shot"),  # lm-eval's model folder
        (("lm-eval-results", "EleutherAI__pythia-160m", "step-3000", "EleutherAI__pythia-160m"), None),
        # evaluate's layout since its units: <output_dir>/<run>/step-N/unit-<hash>/<model>/
        (
            ("lm-eval-results", "EleutherAI__pythia-160m", "step-3000", "unit-0123456789", "EleutherAI__pythia-160m"),
            None,
        ),
        (("lm-eval-results", "EleutherAI__pythia-160m", "final", "unit-abcdef0123"), None),
        (("evals", "unit-tests"), "unit-tests"),  # a folder that only starts like one is a campaign
        (("lm-eval-results", "EleutherAI__pythia-160m", "final"), None),
        (("runs", "ckpt", "checkpoint-500"), "ckpt"),
        ((), None),
    ],
)
def test_campaign_from_the_folders_a_file_sits_in(folders, campaign):
    from ood_store._ingest.identity import campaign_of

    identity = ident("pretrained=EleutherAI/pythia-160m,revision=step3000")
    assert campaign_of(folders, identity, "EleutherAI/pythia-160m") == campaign


def test_a_step_with_more_digits_than_a_step_can_have():
    from ood_store._ingest.identity import StepTooLong

    assert step_in("step" + "9" * 18) == 10**18 - 1
    with pytest.raises(StepTooLong, match=r"step 9{20}\.\.\. \(5,000 digits\) is out of range"):
        step_in("step" + "9" * 5000)


@pytest.mark.parametrize(
    ("folder", "step"),
    [
        ("checkpoint-500", 500),
        ("step40", 40),
        ("step-40", 40),
        ("global_step1200", 1200),
        ("ckpt_20", 20),
        ("josie-7b-v6.0-step2000", None),  # a model's name, not a checkpoint folder
        ("run-checkpoint-5", None),
        ("stage1-step1000-tokens5B", None),  # a revision's name, not a folder's
    ],
)
def test_a_checkpoint_folder_is_one_whose_whole_name_is_a_checkpoints(folder, step):
    from ood_store._ingest.identity import checkpoint_step

    assert checkpoint_step(folder) == step


@pytest.mark.parametrize(
    ("model_args", "run", "step", "source", "evidence"),
    [
        # the Open LLM Leaderboard's entry: a model named ...-step2000, at no step
        ("pretrained=Goekdeniz-Guelmez/josie-7b-v6.0-step2000", "Goekdeniz-Guelmez/josie-7b-v6.0-step2000", None,
         "model", "model_args pretrained=Goekdeniz-Guelmez/josie-7b-v6.0-step2000"),
        ("pretrained=Goekdeniz-Guelmez/josie-7b-v6.0-step2000,revision=step1000",
         "Goekdeniz-Guelmez/josie-7b-v6.0-step2000", 1000, "revision", "model_args revision=step1000"),
        ("pretrained=EleutherAI/pythia-160m@step3000", "EleutherAI/pythia-160m", 3000, "revision",
         "@ of the model id step3000"),
        ("pretrained=/scratch/me@lab/opt/checkpoint-5", "/scratch/me@lab/opt", 5, "path",
         "checkpoint folder checkpoint-5 of /scratch/me@lab/opt/checkpoint-5"),
        ("pretrained=org/name-checkpoint-5", "org/name-checkpoint-5", None, "model",
         "model_args pretrained=org/name-checkpoint-5"),
    ],
)  # fmt: skip
def test_a_step_comes_from_a_revision_or_a_checkpoint_folder_never_from_a_name(model_args, run, step, source, evidence):
    got = ident(model_args)
    assert (got.run, got.step, got.source, got.evidence) == (run, step, source, evidence)


def test_flags_are_named_in_the_evidence():
    got = ident("pretrained=runs/a/checkpoint-5", run="opt-mnli-seed1")
    assert (got.source, got.evidence) == (
        "path+flags",
        "checkpoint folder checkpoint-5 of runs/a/checkpoint-5; `run` opt-mnli-seed1",
    )
