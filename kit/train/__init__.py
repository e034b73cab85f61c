"""Training: the run as a list of steps (run.py), its checks before loading (prepare.py), the stages
(stages/), stopping and resuming (resume.py, checkpoints.py), and the output folder's claim and lock."""
