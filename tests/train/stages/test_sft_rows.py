"""The SFT warm start's rows, tokenized by the kit: the same tokens for TRL's SFTTrainer and Unsloth's generated one,
the prompt as GRPO and evaluation tokenize it, the tools' schemas shown, and the loss on the assistant's turns alone."""

import copy

import pytest
from datasets import Dataset

from kit.data import load_rows
from kit.errors import KitError
from kit.models.generate import prompt_token_ids
from kit.recipes import load_recipe
from kit.train.stages.sft import sft_dataset
from kit.train.stages.sft_rows import tokenized

PROMPT = [{"role": "system", "content": "Find the number."}, {"role": "user", "content": "Guess it."}]
COMPLETION = [{"role": "assistant", "content": "", "tool_calls": [
                  {"type": "function", "function": {"name": "guess", "arguments": {"number": 25}}}]},
              {"role": "tool", "name": "guess", "content": "lower"},
              {"role": "assistant", "content": "<answer>7</answer>"}]


def guess(number: int) -> str:
    """Guess the hidden number.

    Args:
        number: the guess
    """
    return "lower"


@pytest.fixture
def tool_tokenizer(tiny_tokenizer):
    from kit.tools.template import use_tool_template

    tokenizer = copy.deepcopy(tiny_tokenizer)
    use_tool_template(tokenizer, "kit:tiny-llama")
    return tokenizer


def one_row(tokenizer, completion, tools=None) -> dict:
    return tokenized(Dataset.from_list([{"prompt": PROMPT, "completion": completion}]), tokenizer, tools)[0]


def trained(row: dict, tokenizer) -> str:
    return tokenizer.decode([t for t, m in zip(row["input_ids"], row["completion_mask"]) if m])


def test_the_loss_covers_the_assistants_turns_and_not_the_tools_result(tool_tokenizer):
    row = one_row(tool_tokenizer, COMPLETION, [guess])
    assert set(row) == {"input_ids", "completion_mask"}  # what both trainers take as it is
    whole, learned = tool_tokenizer.decode(row["input_ids"]), trained(row, tool_tokenizer)
    assert "lower" in whole and "lower" not in learned  # the tool's result is the tool's text
    assert '"number": 25' in learned and "<answer>7</answer>" in learned
    assert "im_start" not in learned  # the template opens each turn; the model writes from there
    assert learned.count("<|im_end|>") == 2  # each turn ends with the token the model generates last
    assert not learned.rstrip().endswith("\n")


def test_the_tools_are_shown_as_grpo_shows_them(tool_tokenizer):
    """Schemas were a JSON string in a `tools` column, which Unsloth's SFT preparation hands to the template as it
    is (transformers then refuses it): now they are rendered here, from the functions GRPO is given."""
    row = one_row(tool_tokenizer, COMPLETION, [guess])
    assert "Tool guess(number)" in tool_tokenizer.decode(row["input_ids"])
    prompt_ids = prompt_token_ids(tool_tokenizer, [PROMPT], tools=[guess])[0]
    assert row["input_ids"][: len(prompt_ids)] == prompt_ids


def test_a_plain_answer_trains_after_the_prompt_evaluation_and_grpo_see(tiny_tokenizer):
    row = one_row(tiny_tokenizer, [{"role": "assistant", "content": "<answer>22</answer>"}])
    prompt_ids = prompt_token_ids(tiny_tokenizer, [PROMPT])[0]
    assert row["input_ids"][: len(prompt_ids)] == prompt_ids
    through_eos = row["input_ids"].index(tiny_tokenizer.eos_token_id, len(prompt_ids)) + 1
    after = len(row["input_ids"]) - through_eos  # the template's newline after the end of the turn
    assert row["completion_mask"] == [0] * len(prompt_ids) + [1] * (through_eos - len(prompt_ids)) + [0] * after
    assert trained(row, tiny_tokenizer) == "<answer>22</answer><|im_end|>"


@pytest.mark.parametrize("name", ["python_tool", "guess_number"])
def test_a_tool_recipes_worked_answers_leave_every_tool_turn_out(name, tool_tokenizer, tmp_path):
    recipe = load_recipe(name)
    cfg = recipe.config({}, {"profile": "smoke", "output_dir": str(tmp_path / "run")}, gpu=False)
    rows = sft_dataset(recipe, load_rows(recipe, cfg.data).select(range(3)))
    for row in tokenized(rows, tool_tokenizer, recipe.toolbox.functions()):
        learned = trained(row, tool_tokenizer)
        assert "<tool_call>" in learned and "im_start" not in learned
        assert not any(word in learned for word in ("higher", "lower", "correct: it is"))


@pytest.fixture
def qwen3_tokenizer(tiny_tokenizer):
    """The tiny tokenizer with Qwen3's own chat template (as TRL ships it): it writes a think block before the last
    assistant turn alone, so a turn rendered as the last one differs from the same turn inside the conversation."""
    from importlib.resources import files

    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.chat_template = (files("trl") / "chat_templates" / "qwen3.jinja").read_text()
    return tokenizer


def test_a_template_that_is_not_prefix_preserving_still_trains_every_call(qwen3_tokenizer):
    """Measured against the whole conversation, a tool call turn used to end where it began (Qwen3 adds a think
    block when the turn is rendered last): no loss on the calls at all. Turns now end at their end-of-turn token,
    and the rows are rendered with the template TRL's GRPO rollouts swap in."""
    from trl.chat_template_utils import get_training_chat_template

    row = one_row(qwen3_tokenizer, COMPLETION, [guess])
    learned = trained(row, qwen3_tokenizer)
    assert '"number": 25' in learned and "<answer>7</answer>" in learned and "lower" not in learned
    rollout = get_training_chat_template(qwen3_tokenizer)
    prompt_ids = qwen3_tokenizer.apply_chat_template(PROMPT, tools=[guess], chat_template=rollout, tokenize=True,
                                                     add_generation_prompt=True, return_dict=True)["input_ids"]
    assert row["input_ids"][: len(prompt_ids)] == prompt_ids  # the prompt GRPO's rollouts see


def test_rows_are_cut_to_the_length_and_those_left_without_an_answer_dropped(tiny_tokenizer, capsys):
    """Unsloth's GPU preparation leaves tokenized rows as they are; TRL's cuts them. The kit cuts them for both."""
    answers = ["<answer>22</answer>", "9" * 400]
    rows = Dataset.from_list([{"prompt": PROMPT, "completion": [{"role": "assistant", "content": answer}]}
                              for answer in answers])
    prompt_length = len(prompt_token_ids(tiny_tokenizer, [PROMPT])[0])
    cut = tokenized(rows, tiny_tokenizer, max_length=prompt_length + 20)
    assert len(cut) == 2 and all(len(row["input_ids"]) <= prompt_length + 20 for row in cut)
    assert "1 of 2 worked answers are longer" in capsys.readouterr().out
    with pytest.raises(KitError, match="every worked answer starts past model.max_seq_length"):
        tokenized(rows, tiny_tokenizer, max_length=prompt_length)
