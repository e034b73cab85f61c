"""One compact line per training step; TRL's whole dict only when verbose."""

from types import SimpleNamespace

from kit.monitor.console import StepLines, step_line

GRPO_LOG = {"loss": 0.1178, "grad_norm": 0.25, "learning_rate": 5e-05, "completions/mean_length": 29.97,
            "rewards/field_accuracy/mean": 0.5286, "rewards/field_accuracy/std": 0.4173,
            "rewards/json_format/mean": 0.5938, "reward": 1.651, "reward_std": 1.213, "frac_reward_zero_std": 0.0,
            "entropy": 0.7168, "clip_ratio/low_mean": 0.0, "step_time": 65.72, "epoch": 0.0625}


def test_a_grpo_step_is_one_short_line_with_what_the_checklist_watches():
    line = step_line("grpo", 5, 40, GRPO_LOG)
    assert line == ("grpo step 5/40  reward 1.651 ±1.213  field_accuracy 0.529  json_format 0.594  len 30.0  "
                    "65.7 s/step")
    assert "kl" not in line  # beta = 0: TRL logs no KL
    assert "kl 0.0123" in step_line("grpo", 5, 40, {**GRPO_LOG, "kl": 0.0123})


def test_sft_steps_and_the_final_summary():
    assert step_line("sft", 4, 8, {"loss": 0.6173, "grad_norm": 0.8107, "learning_rate": 2e-4, "epoch": 0.5}) == \
        "sft step 4/8  loss 0.6173  grad_norm 0.8107  lr 0.0002"
    assert step_line("sft", 8, 8, {"train_runtime": 69.76, "train_loss": 0.49}) == "sft: 8 steps in 69.8 s"


class Bar:
    def __init__(self):
        self.lines = []

    def write(self, text):
        self.lines.append(text)


def test_the_callback_writes_the_line_quietly_and_the_dict_when_verbose(monkeypatch):
    callback = StepLines("grpo")
    callback.training_bar = Bar()
    state = SimpleNamespace(is_world_process_zero=True, global_step=5, max_steps=40)
    monkeypatch.delenv("KIT_VERBOSE", raising=False)
    callback.on_log(None, state, None, logs=GRPO_LOG)
    monkeypatch.setenv("KIT_VERBOSE", "1")
    callback.on_log(None, state, None, logs=GRPO_LOG)
    quiet, loud = callback.training_bar.lines
    assert quiet.startswith("grpo step 5/40") and "{" not in quiet
    assert loud.startswith("{") and "'frac_reward_zero_std'" in loud
