"""Multi-turn rollouts outside training, by TRL's rules, with the model's replies scripted: each turn's reply
is parsed, its calls run, their results appended, and the next turn generated from the whole conversation."""

import pytest
from datasets import Dataset

from kit.eval import rollout
from kit.eval.evaluate import evaluate, format_table
from kit.models.generate import Sampling
from kit.recipes import load_recipe
from kit.recipes.guess_number import to_row


def call(name: str, **arguments) -> str:
    import json

    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call><|im_end|>'


class Script:
    """Stands in for generation: the reply for each conversation, from what its last message says."""

    def __init__(self, tokenizer, reply):
        self.tokenizer, self.reply, self.contexts, self.budgets = tokenizer, reply, [], []

    def __call__(self, model, tokenizer, prompt_ids, sampling, batch_size, lora_request, progress):
        self.budgets.append(sampling.max_new_tokens)
        # the tiny tokenizer decodes "<|im_start|>tool" with a space between
        texts = [tokenizer.decode(ids).replace("<|im_start|> ", "<|im_start|>") for ids in prompt_ids]
        self.contexts += texts
        return [tokenizer(self.reply(text), add_special_tokens=False).input_ids for text in texts]


@pytest.fixture
def script(monkeypatch, tool_tokenizer):
    def install(reply):
        scripted = Script(tool_tokenizer, reply)
        monkeypatch.setattr(rollout, "generate_ids", scripted)
        return scripted
    return install


def python_rows(n=2):
    from kit.recipes.python_tool import product_row

    return Dataset.from_list([product_row(347, 862), product_row(120, 5)][:n])


def test_a_call_is_run_and_the_answer_follows_its_result(script, tool_tokenizer):
    recipe = load_recipe("python_tool")

    def reply(context):
        if "<|im_start|>tool" not in context:
            return call("python", code="print(347 * 862)" if "347" in context else "120 * 5")
        return f"<answer>{context.rsplit('<|im_start|>tool', 1)[1].split('<')[0].strip()}</answer><|im_end|>"

    scripted = script(reply)
    result = evaluate(None, tool_tokenizer, recipe, python_rows(), Sampling(max_new_tokens=200), "model")
    assert result.strict_accuracy == 1.0 and result.tools["calling"] == 1.0 and result.tools["turns"] == 2.0
    assert "Tool python(code)" in scripted.contexts[0]  # the prompt shows the tool
    assert result.samples[1]["completion"] == "[call python({'code': '120 * 5'})] [python -> 600] <answer>600</answer>"
    assert "replies calling a tool" in format_table([result])


def test_rounds_stop_at_the_limit_and_tool_errors_are_counted(script, tool_tokenizer):
    script(lambda context: call("python", code="1/0"))
    rollouts = rollout.roll_out(None, tool_tokenizer, python_rows(1).to_list(), load_recipe("python_tool").toolbox,
                                Sampling(max_new_tokens=400), max_rounds=2)
    roles = [m["role"] for m in rollouts[0].messages]
    assert roles == ["assistant", "tool", "assistant", "tool", "assistant"]  # the third call is not run
    assert rollouts[0].messages[1]["content"] == "error: ZeroDivisionError: division by zero"


def test_the_budget_covers_every_turn_and_an_overflowing_round_is_undone(script, tool_tokenizer):
    scripted = script(lambda context: call("python", code="print('x' * 40)"))
    rollouts = rollout.roll_out(None, tool_tokenizer, python_rows(1).to_list(), load_recipe("python_tool").toolbox,
                                Sampling(max_new_tokens=120), max_rounds=None)
    assert scripted.budgets[0] == 120 and all(b < 120 for b in scripted.budgets[1:])
    assert rollouts[0].messages[-1]["role"] == "assistant"  # the round whose result overflowed was taken back


def test_an_environment_scores_the_rollout_with_get_reward(script, tool_tokenizer):
    recipe = load_recipe("guess_number")

    def binary_search(context):
        hints = context.count("<|im_start|>tool")
        if "correct: it is" in context:
            return context.rsplit("correct: it is ", 1)[1].split("<")[0].strip() + "<|im_end|>"
        low, high = 1, 50
        for line in (part.lstrip() for part in context.split("<|im_start|>")[3:]):
            if line.startswith("assistant") and "<tool_call>" in line:
                guess = int(line.split('"number": ')[1].split("}")[0])
            elif line.startswith("tool"):
                low, high = (guess + 1, high) if "higher" in line else (low, guess - 1)
        assert hints < 8
        return call("guess", number=(low + high) // 2)

    script(binary_search)
    rows = Dataset.from_list([to_row(37), to_row(1)])
    result = evaluate(None, tool_tokenizer, recipe, rows, Sampling(max_new_tokens=2000, max_tool_rounds=8), "model")
    assert result.strict_accuracy == 1.0 and result.rewards["HiddenNumber"] == 1.0
    assert result.tools["calls"] == 5.5  # 37 in 6 guesses, 1 in 5


RED_TEAM = {
    "surrogate name": '<tool_call>{"name": "\\ud800", "arguments": {}}</tool_call><|im_end|>',
    "surrogate argument": '<tool_call>{"name": "python", "arguments": {"code": "\\udfff"}}</tool_call><|im_end|>',
    "deep nesting": '<tool_call>{"name": "python", "arguments": {"code": ' + "[" * 1500 + "<|im_end|>",
    "null name": '<tool_call>{"name": null, "arguments": {}}</tool_call><|im_end|>',
    "flood": '<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call>' * 40 + "<|im_end|>",
}


def test_kit_evals_scoring_survives_the_red_teams_replies_and_counts_them(script, tool_tokenizer):
    """What `kit eval` runs (evaluate: rollouts, rewards, the table) on a model that writes only the red team's
    replies: every row is scored, the malformed ones counted as unparsed, the flood as over its budget."""
    replies = list(RED_TEAM.values())
    seen = []

    def reply(context):
        seen.append(context)
        if "<|im_start|>tool" in context:
            return "<answer>1</answer><|im_end|>"
        return replies[(len(seen) - 1) % len(replies)]

    script(reply)
    rows = python_rows(1).select([0] * len(replies))
    result = evaluate(None, tool_tokenizer, load_recipe("python_tool"), rows,
                      Sampling(max_new_tokens=20_000, max_tool_rounds=1), "model")
    assert result.n == len(replies) and result.strict_accuracy == 0.0
    assert result.tools["unparsed"] == 3 / 5  # the surrogate name, the nesting, the null name
    assert result.tools["over_budget"] == 1 / 5  # the flood met grpo.tool_calls_per_turn (8)
    assert "tool calls unparsed" in format_table([result])
