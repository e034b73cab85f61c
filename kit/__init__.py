"""grpo-kit: GRPO fine-tuning of language models on one GPU, with Unsloth and TRL.

    make train RECIPE=gsm8k          # or: python -m kit train gsm8k
"""

from kit import compile_cache

__version__ = "0.1.0"

# Before anything compiles: inductor's cache mixes kernels built for different CPUs (kit/compile_cache.py).
compile_cache.separate_per_cpu()
