"""More than one process: the same recipe on several GPUs through `accelerate launch`.

    python -m kit train gsm8k --num-processes 4 --launcher zero2     # or: make train NPROC=4 LAUNCHER=zero2

`kit train` with --num-processes N > 1 checks the run as for one GPU, then starts N copies of itself
with `accelerate launch --config_file kit/train/launch/<launcher>.yaml` (kit.train.launch.launcher). Each copy is
a rank (kit.ranks): it loads the model with transformers + PEFT instead of Unsloth's single-GPU
loader, TRL's GRPOTrainer shares the batch among the ranks, and only rank 0 writes OUT/. Rank 0 also
writes OUT/distributed.json: what each rank did (kit.monitor.distributed).
"""

from pathlib import Path

CONFIG_DIR = Path(__file__).parent
