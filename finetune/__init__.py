"""``ood-store finetune``: pattern-based few-shot finetuning whose checkpoints ``evaluate --study`` takes as they are.

The study's first stage. A study file names a grid of runs (base models,
shot counts, data seeds, seeds, LoRA or full finetuning); each run is trained
on a few examples of an NLI training split, written with the ood_nli suite's
prompt variant (pattern, verbalizers, neutral scheme) and scored at the
verbalizer token exactly as lm-eval scores it, and saves its checkpoints on a
schedule that starts at step 0. The command writes a study file for
``ood-store evaluate --study``, so that evaluation uses the prompt that
training used.

- :mod:`~ood_store._finetune.config`: the study file (and the same options as
  arguments), read and checked, its grid expanded into runs;
- :mod:`~ood_store._finetune.schedule`: which steps are saved;
- :mod:`~ood_store._finetune.data`: the training split, cast as the suite casts
  it, and the few shots drawn from it (llmft's rule, or class-balanced);
- :mod:`~ood_store._finetune.examples`: training examples tokenized as lm-eval
  tokenizes the same documents, and the verbalizer checks;
- :mod:`~ood_store._finetune.trainer`: one run on Hugging Face's ``Trainer``:
  the loss, the schedule and progress callbacks, resuming;
- :mod:`~ood_store._finetune.runner`: the grid, checked before anything is
  trained, run inline or through evaluate's executors, and the study file;
- :mod:`~ood_store._finetune.worker`: what executors run, one run at a time.

Nothing heavy is imported here.
"""
