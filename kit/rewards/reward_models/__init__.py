"""A reward model as a reward (kit.rewards.reward_model), by concern: reward.py (the reward TRL calls: the chats,
their batches, the normalisation), load.py (the model's name resolved, its config checked, its weights loaded
frozen) and tiny.py (`kit:tiny-reward`, built on the spot so the path runs offline)."""
