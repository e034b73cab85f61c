"""Reward functions with TRL's signature: `fn(completions, **dataset_columns) -> list[float | None]`.

Each returns a score in [0, 1] per completion (the bundle's weight sets its scale; the published shapes
below keep their published ranges, in `fn.reward_range`), accepts chat-message
and plain-string completions, and never raises on model output. None means "does not apply to this
row"; TRL leaves it out of the mean. Parameterised rewards are factories that return a named function.

    correctness  answer_correct, integer_answer, exact_match, numeric_match(), math_equivalent, fuzzy_match
    lenient      last_number_correct: the last number stated (for evaluation's lenient column, not training)
    the rule     answer_values, numeral_values, same_answer: the whole answer must state ONE value, and for a
                 gold number be one written out, not '14+9' (kit/rewards/whole_answer.py)
    format       strict_xml_format(), soft_xml_format(), xml_tag_count(), tag_format(), json_format,
                 code_block(language)
    fields       field_accuracy: the share of a gold JSON object's fields the reply's JSON gets right
    length       ideal_length(n), min_length(n), max_length_penalty(n); in their published ranges:
                 soft_overlong_punishment() (DAPO), and, paying for brevity only when right,
                 cosine_scaled_length(correctness), kimi_length(correctness)
    style        reasoning_connectors, reasoning_steps, citations, repetition_penalty()
    code         syntax_valid, passes_tests()     (sandboxed: kit/sandbox/)
    from a model reward_model(name_or_path, normalise=...): a reward model (one-label classifier) scores it
    from a model llm_judge(rubric): a chat model behind an OpenAI-compatible endpoint scores it
                 (kit/rewards/judge/reward.py)
    bundle       RewardBundle((fn, weight), ...): a recipe's REWARDS (kit/rewards/bundle.py)
    scaling      AdaptiveWeight(fn)             presets: kit/rewards/presets.py
    judging      Scoring(strict=..., lenient=..., formatted=...): a recipe's EVAL (kit/rewards/scoring.py)
    contract     row_optional(fn): may return None for a whole batch (kit/rewards/guard.py checks the rest);
                 with_traits(fn, reward_range=..., runs_model_code=...) (kit/rewards/traits.py)
"""

from kit.rewards.adaptive import AdaptiveWeight
from kit.rewards.answers import (
    canonical_number,
    extract_boxed,
    extract_hash_answer,
    extract_tag,
    final_answer,
    parse_number,
)
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.code import passes_tests, syntax_valid
from kit.rewards.correctness import (
    answer_correct,
    exact_match,
    fuzzy_match,
    integer_answer,
    last_number_correct,
    math_equivalent,
    numeric_closeness,
    numeric_match,
)
from kit.rewards.fields import field_accuracy, first_json_object, json_reply
from kit.rewards.format import code_block, json_format, soft_xml_format, strict_xml_format, tag_format, xml_tag_count
from kit.rewards.guard import row_optional
from kit.rewards.judge.reward import llm_judge
from kit.rewards.length import (
    cosine_scaled_length,
    ideal_length,
    kimi_length,
    max_length_penalty,
    min_length,
    soft_overlong_punishment,
)
from kit.rewards.reward_models.reward import reward_model
from kit.rewards.style import citations, reasoning_connectors, reasoning_steps, repetition_penalty
from kit.rewards.text import completion_text
from kit.rewards.traits import with_traits
from kit.rewards.whole_answer import answer_values, numeral_values, same_answer

__all__ = [
    "AdaptiveWeight",
    "Reward",
    "RewardBundle",
    "answer_correct",
    "answer_values",
    "canonical_number",
    "citations",
    "code_block",
    "completion_text",
    "cosine_scaled_length",
    "exact_match",
    "extract_boxed",
    "extract_hash_answer",
    "extract_tag",
    "field_accuracy",
    "final_answer",
    "first_json_object",
    "fuzzy_match",
    "ideal_length",
    "integer_answer",
    "kimi_length",
    "last_number_correct",
    "llm_judge",
    "json_format",
    "json_reply",
    "math_equivalent",
    "max_length_penalty",
    "min_length",
    "numeral_values",
    "numeric_closeness",
    "numeric_match",
    "parse_number",
    "passes_tests",
    "reasoning_connectors",
    "reasoning_steps",
    "repetition_penalty",
    "reward_model",
    "row_optional",
    "same_answer",
    "soft_overlong_punishment",
    "soft_xml_format",
    "strict_xml_format",
    "syntax_valid",
    "tag_format",
    "with_traits",
    "xml_tag_count",
]
