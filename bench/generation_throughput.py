"""Batched generation against one prompt at a time: the kit's `generate` on the tiny model, on CPU.

    .venv/bin/python bench/generation_throughput.py [--prompts 64] [--tokens 32] [--batch 32]

Same prompts, exactly the same number of new tokens (min = max), greedy; the baseline (batch size 1)
is measured in the same run and the ratio printed.
"""

from __future__ import annotations

import argparse
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from kit.models.generate import Sampling, generate
from kit.models.tiny import tiny_model_path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    path = tiny_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    prompts = [[{"role": "user", "content": f"What is {i} plus {i + 3}?"}] for i in range(args.prompts)]
    sampling = Sampling(max_new_tokens=args.tokens, min_new_tokens=args.tokens)
    timings = {}
    for batch in (1, args.batch):
        generate(model, tokenizer, prompts[:2], sampling, batch_size=batch, progress=False)  # warm-up
        started = time.perf_counter()
        generate(model, tokenizer, prompts, sampling, batch_size=batch, progress=False)
        timings[batch] = time.perf_counter() - started
    tokens = args.prompts * args.tokens
    for batch, seconds in timings.items():
        label = "one prompt at a time (baseline)" if batch == 1 else f"batches of {batch}"
        print(f"{label:34s} {seconds:6.2f} s  {tokens / seconds:8.0f} new tokens/s")
    print(f"batched / baseline speed: {timings[1] / timings[args.batch]:.1f}x "
          f"({args.prompts} prompts x {args.tokens} new tokens, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
