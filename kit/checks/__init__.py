"""The checks made before training, on the recipe's rewards and rows, by `kit train` and `kit rewards check`:
empty_completions.py (each reward once on empty completions), model_rewards.py (rewards scored by a model, made
ready and checked), gold_answers.py (does the correctness reward pay a right answer; trial.py: rewards called on a
few training rows as TRL calls them), rewards_check.py (`kit rewards check`: the rewards on sample completions)."""
