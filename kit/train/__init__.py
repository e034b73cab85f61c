"""Training: the run as a list of steps (run.py), its checks before loading (prepare.py), the stages
(stages/), stopping and resuming (resume.py, checkpoints.py), and the output folder's claim and lock.

Unsloth patches TRL and transformers when it is imported, so it must come before them: importing any
module of this package imports it first, whatever order a caller's imports are in.
"""

from kit.models import training as _unsloth_first  # noqa: F401
