"""kit.checks.empty_completions: each reward once on empty completions before training, as TRL will call it."""

import pytest

from kit.checks.empty_completions import try_on_empty_completions
from kit.errors import KitError
from kit.rewards import AdaptiveWeight


def test_trial_call_before_training_leaves_adaptive_weights_alone():
    from datasets import Dataset

    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": "q"}], "answer": "1"}] * 3)
    adaptive = AdaptiveWeight(lambda completions, answer, **kw: [0.0] * len(completions))
    adaptive.__name__ = "zeros"
    try_on_empty_completions([adaptive], rows)
    assert adaptive.multiplier == 1.0 and not adaptive.history

    def raises(completions, answer, **kwargs):
        raise ValueError("no")

    with pytest.raises(KitError, match="reward 'raises' raised ValueError: no on completion 0 of a batch of empty "
                                       "completions tried before training"):
        try_on_empty_completions([raises], rows)
