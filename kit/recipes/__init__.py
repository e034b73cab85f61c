"""Task recipes: one module per task, each a dataset preparer + a reward bundle + default settings.

Copy `gsm8k.py` to start a new one; see kit/recipe.py for the contract.
"""
