"""The checks' workers that `kit doctor` and bench/gpu_check share, and their helpers; each worker runs in a
fresh process (`python -m kit.doctor.entry NAME SPEC_FILE`, started by kit.doctor.processes.Driver).

A worker takes its spec (a dict read from SPEC_FILE) and returns {"status", "reason", "figures"}. Nothing
here downloads: models are built from a config with random weights (speed and memory depend on shapes,
not values) and the kit's tiny tokenizer. Importing this module imports neither torch nor Unsloth, so a
worker that measures plain TRL can live beside the others.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import time
from pathlib import Path

from kit.doctor.processes import FAIL, PASS

GIB = 1024**3
SEED = 3407
GENERATE_PROMPTS, GENERATE_TOKENS = 4, 32  # the generation checks


# --- what every GRPO check shares: prompts, reward, step timing --------------------------------------


def prompt_rows(count: int = 64) -> list[dict]:
    """Chat prompts in the digit_sum recipe's wording: short, and the same in every check."""
    return [{"prompt": [{"role": "user", "content": f"What is {i % 10} plus {i * 7 % 10} plus {i * 3 % 10}?"}]}
            for i in range(count)]


def prompt_dataset():
    from datasets import Dataset

    return Dataset.from_list(prompt_rows())


def rendered_prompts(tokenizer, count: int) -> list[str]:
    return [tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
            for row in prompt_rows(count)]


def token_parity(completions, completion_ids, **kwargs) -> list[float]:
    """The share of even token ids. A task reward gives a random model all zeros, hence zero advantages
    and an adapter that never moves; this one differs between random completions, so it trains."""
    return [sum(1 for t in ids if t % 2 == 0) / max(len(ids), 1) for ids in completion_ids]


def steady_seconds(step_seconds: list[float]) -> float:
    """Seconds per step without the first step (kernel compilation, caches) when there are more."""
    return statistics.median(step_seconds[1:] if len(step_seconds) > 1 else step_seconds)


def step_timer():
    """A TrainerCallback recording each optimizer step's wall time (generation, rewards, backward)."""
    import torch
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.seconds: list[float] = []

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()  # CUDA runs ahead of Python; count the step's kernels in its time
            self.seconds.append(time.perf_counter() - self.started)

    return StepTimer()


def memory_figures() -> dict:
    """This process's peaks: GPU memory PyTorch allocated / reserved, else the CPU's resident set."""
    import resource

    import torch

    if torch.cuda.is_available():
        return {"peak_allocated_gib": torch.cuda.max_memory_allocated() / GIB,
                "peak_reserved_gib": torch.cuda.max_memory_reserved() / GIB}
    return {"peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB}


def train_timed(trainer, cfg=None, out: Path | None = None) -> dict:
    """Train, timing each step; with `cfg` and `out`, the memory probe runs first as `kit train` runs it."""
    timer = step_timer()
    trainer.add_callback(timer)
    probe = with_memory_probe(trainer, cfg, out) if cfg is not None and out is not None else None
    trainer.train()
    return {"step_seconds": timer.seconds, "seconds_per_step": steady_seconds(timer.seconds), **memory_figures(),
            **probe_figures(probe)}


def with_memory_probe(trainer, cfg, out: Path):
    """The memory probe as `kit train` adds it (grpo.memory_probe: on with a GPU), with the plan for this GPU, so
    that a check records the probe's phases beside the plan's peak (probe_figures). None where it does not apply."""
    from kit.outputs import RunDir
    from kit.plan.preflight import plan_for_run
    from kit.plan.probe import MemoryProbe, probe_applies

    if not probe_applies(cfg):
        return None
    run_file = RunDir(out).run_file  # the probe writes its section there, as in a run's folder
    run_file.parent.mkdir(parents=True, exist_ok=True)
    if not run_file.exists():
        run_file.write_text(f"seed: {cfg.seed}\n")
    probe = MemoryProbe(trainer, run_file, plan_for_run(cfg), cfg.grpo.optim)
    trainer.add_callback(probe)
    return probe


def probe_figures(probe) -> dict:
    if probe is None or probe.result is None:
        return {}
    result = probe.result
    return {"probe_peak_gib": result.total_gib, "probe_phases_gib": result.phases_gib,
            "probe_plan_peak_gib": probe.plan.peak_gib if probe.plan is not None else None}


def differing_rows(first: list, second: list) -> int:
    """How many generations differ in at least one token (or character, or in length)."""
    return sum(1 for a, b in zip(first, second, strict=True) if list(a) != list(b))


def adapter_verdict(tuned: list, plain: list, again: list) -> dict:
    """Seeded samples with the adapter (`tuned`) against the base's, drawn twice (`plain`, `again`).

    Random weights make greedy decoding repeat one token whatever a small adapter does, so the checks
    sample (temperature 1, as GRPO does) with one seed. The base drawn twice must agree, so that a
    difference can only come from the adapter: each draw must compute what the others do, so a vLLM
    engine's prefix cache is emptied before each (forget_cached_prompts).
    """
    differ = differing_rows(tuned, plain)
    figures = {"prompts": len(tuned), "new_tokens": GENERATE_TOKENS, "differing_prompts": differ,
               "base_repeatable": differing_rows(plain, again) == 0}
    reason = None
    if not figures["base_repeatable"]:
        reason = "the base model's seeded samples differ between two runs: not repeatable here, so proves nothing"
    elif not differ:
        reason = "the same seeded samples with the adapter as without it: the adapter changed nothing"
    return {"status": FAIL if reason else PASS, "reason": reason, "figures": figures}


def forget_cached_prompts(llm) -> None:
    """Empty a vLLM engine's prefix cache (`llm`: vllm.LLM), before a draw that is compared with another.

    A prompt found in the cache is read back instead of computed, by other kernels that round its logits
    differently on a GPU. A random model's logits are nearly uniform, so that rounding alone changes seeded
    samples: the base drawn twice would differ with no adapter involved. From an empty cache every draw
    computes its prompts the same way.
    """
    if llm.reset_prefix_cache() is False:  # vLLM's answer while a request still holds cached blocks
        raise RuntimeError("vLLM kept its prefix cache (a request still running): two draws would not compare")


# --- workers --------------------------------------------------------------------------------------


def work_probe(spec: dict) -> dict:
    """What the device is, from a process of its own (a CUDA context in the driver would hold GPU memory)."""
    import torch

    from kit.env import bf16_supported

    if not torch.cuda.is_available():
        return {"status": PASS, "figures": {"cuda": False, "torch": torch.__version__}}
    props = torch.cuda.get_device_properties(0)
    return {"status": PASS, "figures": {"cuda": True, "gpu": props.name, "gpu_memory_gib": props.total_memory / GIB,
                                        "capability": float(f"{props.major}.{props.minor}"), "bf16": bf16_supported(),
                                        "torch": torch.__version__, "torch_cuda": torch.version.cuda}}


def tiny_qwen2_fields(tokenizer_pieces: int) -> dict:
    """config.json fields of the kit's tiny Qwen2 (kit.models.tiny.SPECS): a real architecture, 2 layers x 256."""
    from kit.models.tiny import SPECS

    tiny = SPECS["qwen2"]
    return {"model_type": tiny.architecture, "hidden_size": tiny.hidden, "intermediate_size": tiny.intermediate,
            "num_hidden_layers": tiny.layers, "num_attention_heads": tiny.heads, "num_key_value_heads": tiny.kv_heads,
            "vocab_size": tokenizer_pieces, "tie_word_embeddings": True}  # tied, as Qwen2.5-1.5B is


def work_build(spec: dict) -> dict:
    """A model folder from config fields (spec["fields"]; the tiny Qwen2 without) with random weights and the
    kit's tiny tokenizer, or a real model's folder copied (spec["real_model"]): nothing downloaded."""
    if spec.get("real_model"):
        return copy_real_model(spec)
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from kit.models.tiny import tiny_model_path

    started = time.perf_counter()
    out = Path(spec["model_dir"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path("demo"))  # the demo model: no pretraining to wait for
    fields = dict(spec.get("fields") or tiny_qwen2_fields(len(tokenizer)))
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    config = AutoConfig.for_model(fields.pop("model_type"), **fields, **ids)
    torch.manual_seed(SEED)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # random init is far faster on a GPU
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.generation_config = GenerationConfig(**ids)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    return {"status": PASS, "figures": {
        "seconds": time.perf_counter() - started, "parameters": sum(p.numel() for p in model.parameters()),
        "layers": config.num_hidden_layers, "hidden": config.hidden_size, "vocab": config.vocab_size,
        "tokenizer_pieces": len(tokenizer), "weights_gib": size / GIB, "model_type": config.model_type}}


def copy_real_model(spec: dict) -> dict:
    """A real model's folder, as the kit resolves its name offline, copied so the checks own their files."""
    from safetensors import safe_open

    from kit.models.names import resolve_model_name

    started = time.perf_counter()
    out = Path(spec["model_dir"])
    shutil.copytree(resolve_model_name(spec["real_model"]), out)
    config = json.loads((out / "config.json").read_text())
    parameters = 0
    for weights in out.glob("*.safetensors"):
        with safe_open(weights, "pt") as f:
            parameters += sum(math.prod(f.get_slice(name).get_shape()) for name in f.keys())
    size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    return {"status": PASS, "figures": {
        "seconds": time.perf_counter() - started, "parameters": parameters, "layers": config["num_hidden_layers"],
        "hidden": config["hidden_size"], "vocab": config["vocab_size"], "tokenizer_pieces": config["vocab_size"],
        "weights_gib": size / GIB, "model_type": config["model_type"], "real_weights": True}}
