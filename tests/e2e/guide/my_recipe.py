"""Arithmetic word problems, trained with the GRPO guide's own rewards."""
import re

from datasets import load_dataset

from kit.rewards import RewardBundle

SYSTEM_PROMPT = """Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>"""


def prepare(split, source):
    rows = load_dataset("json", data_files=source, split="train")
    return rows.map(lambda x: {
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                   {"role": "user", "content": x["question"]}],
        "answer": x["answer"],
    })


def extract_final_answer(text):
    match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    return match.group(1).strip() if match else None


def correctness_reward(prompts, completions, answer, **kwargs):
    responses = [comp[0]["content"] for comp in completions]
    extracted = [extract_final_answer(r) for r in responses]
    return [2.0 if ans == gt else 0.0 for ans, gt in zip(extracted, answer)]


def format_reward(completions, **kwargs):
    pattern = r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>"
    responses = [comp[0]["content"] for comp in completions]
    return [1.0 if re.search(pattern, r, re.DOTALL) else 0.0 for r in responses]


def sft_target(row):
    return f"<reasoning>\nWorking it out.\n</reasoning>\n<answer>\n{row['answer']}\n</answer>"


REWARDS = RewardBundle((correctness_reward, 1.0), (format_reward, 1.0))
