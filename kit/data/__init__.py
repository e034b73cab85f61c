"""Data: reading a recipe's files and hub datasets (tables.py: what a recipe's `prepare` uses), and the run's
rows made from them (rows.py: the sample, checks, limits, the held-out share, prompts that would not fit), and a
row's pictures (images.py: read and checked; row_pictures.py: their column, the row's key, a sample's name)."""

from kit.data.rows import (
    check_prompts,
    drop_long_prompts,
    eval_skip_reason,
    holds_out_of_training,
    load_eval_rows,
    load_rows,
    prepare_dataset,
    prompt_lengths,
    sample_path,
    split_off_held_out,
)
from kit.data.tables import check_local_files, load_table, require_columns, rows_kept

__all__ = ["check_local_files", "check_prompts", "drop_long_prompts", "eval_skip_reason", "holds_out_of_training",
           "load_eval_rows", "load_rows", "load_table", "prepare_dataset", "prompt_lengths", "require_columns",
           "rows_kept", "sample_path", "split_off_held_out"]
