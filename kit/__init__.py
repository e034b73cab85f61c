"""grpo-kit: GRPO fine-tuning of language models on one GPU, with Unsloth and TRL.

    make train RECIPE=gsm8k          # or: python -m kit train gsm8k
"""

__version__ = "0.1.0"
