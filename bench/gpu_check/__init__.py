"""The GPU route end to end, offline: load, GRPO (the kit against hand-written Unsloth and plain TRL), merge, vLLM.

    .venv/bin/python -m bench.gpu_check [--shape tiny|qwen2.5-1.5b|smollm2] [--steps N] [--rounds R] [--out FILE]
    make gpu-check [SHAPE=qwen2.5-1.5b] [STEPS=4] [OUT=results.json]

No network and no model hub: the model is built from a config.json with random weights (speed and memory
depend on shapes, not values) and the kit's tiny tokenizer, which is trained on the spot. The default
shape is Qwen2.5-1.5B (bench/model_configs/) where CUDA is present, the kit's tiny 2-layer Qwen2 elsewhere,
so CI keeps every check that a CPU can run working. `--shape smollm2` uses real weights instead
(SmolLM2-135M-Instruct, reached offline): the kit's overhead on a real model, on a CPU too. One line per
check, in this order:

    build model          the model folder: config, random bf16 weights, tokenizer
    load 16-bit          kit.models.loader.load_model, then one forward pass
    load 4-bit           the same in 4-bit (CUDA and bitsandbytes)
    grpo kit             N GRPO steps through the kit's GRPO stage: s/step, peak memory next to `kit plan`'s estimate
    grpo unsloth script  the same steps in a hand-written FastLanguageModel + GRPOTrainer script, as a ratio
    grpo plain trl       the same steps in plain TRL + PEFT (Unsloth never imported), as a ratio
    merge vs peft        the kit's shard merge of the trained adapter against PEFT's merge_and_unload
    adapter hf generate  seeded transformers sampling with the adapter on and switched off: must differ
    vllm adapter         the same through the kit's vLLM engine (`kit eval --adapter`'s), with and without the
                         saved adapter as a LoRA request
    default route        what `make train RECIPE=gsm8k` runs on one GPU: gsm8k's full-profile model settings (4-bit
                         weights read by vLLM, Unsloth's vLLM engine for the rollouts, LoRA) on this shape for a few
                         steps, then the evaluation through the live adapter (kit.doctor.route; `kit doctor` runs it
                         on the tiny shape)

Each check runs in a fresh process (bench.gpu_check.workers, started by kit.doctor.processes): Unsloth patches
transformers and TRL at import, so plain TRL needs a process that never imported it, and
torch.cuda.max_memory_allocated is then one check's alone. The three GRPO sides run alternated (kit,
unsloth, trl, kit, ...) with the same model, data, reward and GRPOConfig settings (the kit's stage resolves
them once, and every side passes each one explicitly), and generate with transformers
(vLLM is checked on its own lines). What this machine cannot do is skipped by name with the reason; a failed
check makes the exit code 1. The figures go to --out as JSON (default outputs/gpu-check-<time>.json):
versions, the GPU, each check's status and figures; BENCHMARKS.md ("GPU route check") describes the format.

The package: settings (the checks, sides and shapes), workers and baselines (what runs in each process),
driver (the order and the skips), stats (alternation, ratios, the merge comparison), report (the lines and
the JSON), __main__ (the command line). Importing it brings in neither torch nor Unsloth nor TRL: the
workers import them in their own processes.
"""

from bench.gpu_check.baselines import fused_head_failure
from bench.gpu_check.driver import default_route_check, grpo_checks, run_checks
from bench.gpu_check.settings import CHECKS, SHAPES, SIDES, Settings
from bench.gpu_check.stats import alternation, compare_merges, summarize_side, with_ratios
from kit.doctor.processes import FAIL, PASS, SKIP

__all__ = ["CHECKS", "FAIL", "PASS", "SHAPES", "SIDES", "SKIP", "Settings", "alternation", "compare_merges",
           "default_route_check", "fused_head_failure", "grpo_checks", "run_checks", "summarize_side", "with_ratios"]
