"""Before training: does the correctness reward pay a right answer at all? One that cannot (a gold column kept as
numbers, compared with the text the model writes) trains nothing, and nothing said so until a health check fired.

    gold = check_gold_answers(recipe, rows, rewards)   # the training rows; the rewards as the run weights them
    print(gold.summary)                                # "gold answers: answer_correct pays the recipe's worked ..."
    gold.raise_problem()                               # the KitError training must not start with, if any

The correctness reward is the top-weighted one that reads a dataset column. On a few training rows it is called as
TRL calls it (chat completions, every column as a keyword, TRL's own arguments). With an `sft_target`, on the
recipe's own worked answers: paying none of them, or raising, is the problem, whose cause is named when the numeric
columns, as text, make it pay. Without one, each numeric column a reward reads is written out in common answer
forms ("27", "<answer>27</answer>", "\\boxed{27}", ...): paid as none of them, but paid once the column is text, it
compares a number with text (a warning). Where neither tells, the summary says so. No tool runs (a tool recipe's
worked answer holds its tools' results) and no environment is played: a reward reading one is left out, said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kit.checks.trial import NotPlayed, Trial, pays, reads, spread
from kit.errors import KitError
from kit.recipe import Recipe
from kit.rewards.bundle import Reward, RewardBundle
from kit.rewards.guard import is_row_optional
from kit.rewards.text import as_messages, completion_text
from kit.user_code import described, location, preview, short, traceback_hint

WORKED = " of the recipe's worked answers (sft_target)"  # where the guard's message says it failed
ROWS = 8  # training rows scored: enough to see a pattern, cheap for a reward that runs code
# How a model might state a gold value; a recipe without a worked answer says nothing of its format.
STATEMENTS = ("{}", "<answer>{}</answer>", "<reasoning>\n...\n</reasoning>\n<answer>\n{}\n</answer>",
              "\\boxed{{{}}}", "#### {}", "The answer is {}.")


@dataclass
class GoldCheck:
    summary: str  # one line, "gold answers: ...", for the run's console and `kit rewards check`
    error: KitError | None = None  # what training must not start with (a reward's own, with its traceback for -v)
    warnings: list[str] = field(default_factory=list)

    @property
    def problem(self) -> str | None:
        return None if self.error is None else str(self.error)

    def raise_problem(self) -> None:
        if self.error is not None:
            raise self.error


def check_gold_answers(recipe: Recipe, rows, rewards: RewardBundle, count: int = ROWS) -> GoldCheck:
    """Does the run's correctness reward pay right answers, on `count` of `rows` (a datasets.Dataset with a chat
    `prompt` column and the columns the rewards read)?"""
    reward = correctness_reward(rewards)
    if reward is None:
        return GoldCheck("gold answers: not checked: no reward has a positive weight")
    if not len(rows):
        return GoldCheck("gold answers: not checked: no training rows")
    trial = Trial(rows.select(spread(len(rows), count)), recipe.toolbox)
    if recipe.sft_target is None:
        return numeric_columns_check(trial, rewards)
    return worked_answers_check(recipe, trial, reward)


def correctness_reward(rewards: RewardBundle) -> Reward | None:
    """The top-weighted reward that reads a dataset column (the first of equals), else the top-weighted one: a
    format reward weighted as high as the correctness reward is not the one that compares with a gold answer."""
    positive = [r for r in rewards.rewards if r.weight > 0]
    needed = rewards.columns_needed()
    candidates = [r for r in positive if needed[r.name]] or positive
    return max(candidates, key=lambda r: r.weight) if candidates else None


def worked_answers_check(recipe: Recipe, trial: Trial, reward: Reward) -> GoldCheck:
    """The correctness reward on the recipe's own worked answers (sft_target), as the warm start writes them."""
    completions, failed = worked_answers(recipe, trial.rows)
    if failed:
        return GoldCheck(f"gold answers: not checked: {failed}")
    name, rows = reward.name, len(trial.rows)
    try:
        values, floor = trial.values(reward, completions, WORKED), trial.floor(reward)
    except NotPlayed:
        return GoldCheck(f"gold answers: not checked: {name} reads the rollout's environment, which the check does "
                         "not play")
    except KitError as err:
        return GoldCheck(f"gold answers: {name} raised on the recipe's worked answers", err)
    paid = sum(pays(v, floor) for v in values)
    if paid:
        return GoldCheck(f"gold answers: {name} pays the recipe's worked answer on {paid} of {rows} training rows"
                         + trial.skipped([]))
    if all(v is None for v in values) and is_row_optional(reward.fn):
        return GoldCheck(f"gold answers: not checked: {name} does not apply to the {rows} training rows checked")
    said = f"reward '{name}' never pays the recipe's own worked answers (sft_target) on {rows} training rows"
    numbers = trial.numeric_columns(reward)
    cured = paid_as_text(trial, reward, completions, numbers, floor)
    if cured:
        return GoldCheck(f"gold answers: {name} never pays the recipe's worked answer", KitError(
            f"{said}: {trial.column_types(numbers)} while the completions are text (as text, it pays {cured} of "
            f"{rows}); {as_text_in_prepare(trial, numbers)}"))
    read = reads(reward)
    shown = {c: trial.columns[c][0] for c in read if c in trial.columns}
    return GoldCheck(f"gold answers: {name} never pays the recipe's worked answer", KitError(
        f"{said} (it gave {', '.join(map(str, values[:3]))}{', ...' if rows > 3 else ''}; it reads "
        f"{', '.join(f'{c!r} ({trial.dtype(c)})' for c in read) or 'no column by name'}): sft_target writes answers "
        f"in another form than the reward reads, or the reward is wrong; the first: "
        f"{short(completion_text(completions[0]), 120)} for the row with {preview(shown, 80)}"))


def worked_answers(recipe: Recipe, rows) -> tuple[list, str | None]:
    """(each row's worked answer as the completion training would pass, None) or ([], why there are none)."""
    completions = []
    for row in rows:
        try:
            target = recipe.sft_target(row)
        except Exception as err:  # noqa: BLE001  (the recipe's code; a run without an sft stage does not need it)
            return [], (f"sft_target() raised {described(err)} on the row with {preview(row, 80)}"
                        f"{location(recipe.sft_target, err)}")
        if not isinstance(target, (str, list)):
            return [], f"sft_target() returned {type(target).__name__}, not the reply's text or (with tools) messages"
        completions.append(as_messages(target, "assistant"))
    return completions, None


def paid_as_text(trial: Trial, reward: Reward, completions: list, columns: list[str], floor: float) -> int:
    """On how many rows the reward pays the completions once `columns` are text (0 when there are none)."""
    if not columns:
        return 0
    as_text = {c: [None if v is None else str(v) for v in trial.columns[c]] for c in columns}
    try:
        return sum(pays(v, floor) for v in trial.values(reward, completions, WORKED, **as_text))
    except (KitError, NotPlayed):  # a reward written for numbers may fail on text: then text is not the cure
        return 0


def numeric_columns_check(trial: Trial, rewards: RewardBundle) -> GoldCheck:
    """Without a worked answer: each numeric column a reward reads, written out as text, as a model would."""
    said, warnings, environment = [], [], []
    for reward in (r for r in rewards.rewards if r.weight > 0):  # a penalty pays for what is wrong
        for column in trial.numeric_columns(reward, declared_only=True):
            try:
                verdict = stated_as_text(trial, reward, column)
            except NotPlayed:
                environment.append(reward.name)
                break
            said.append(f"{reward.name} reads '{column}' ({trial.dtype(column)}) and {verdict[0]}")
            warnings += verdict[1:]
    if not said:
        said = ["no reward takes a numeric column by name"]
    return GoldCheck("gold answers: no sft_target (a worked answer) to score; " + "; ".join(said)
                     + trial.skipped(environment), warnings=warnings)


def stated_as_text(trial: Trial, reward: Reward, column: str) -> list[str]:
    """[what the reward does with the column written as text, then a warning if any]."""
    gold = [str(v) for v in trial.columns[column]]
    completions = [as_messages(form.format(v), "assistant") for form in STATEMENTS for v in gold]
    where = f" of column '{column}' written as text"
    try:
        floor = trial.floor(reward)
        if any(pays(v, floor) for v in trial.values(reward, completions, where)):
            return ["pays it written as text"]
        cured = any(pays(v, floor) for v in trial.values(reward, completions, where, **{column: gold}))
    except KitError as err:
        said = str(err).removesuffix(f"; {traceback_hint()}")  # a warning has no traceback to show
        return ["raised on it written as text (see the warning)", f"gold-answer check: {said}"]
    if not cured:
        return ["pays none of the check's ways of writing it, as a number or as text: the check cannot tell"]
    return ["never pays it written as text (see the warning)", (
        f"reward '{reward.name}' reads column '{column}' as {trial.dtype(column)} and compares it with text: it "
        f"paid none of {len(trial.rows)} training rows' values written out ({STATEMENTS[1].format(gold[0])!r}, ...) "
        f"and pays them once the column is text; {as_text_in_prepare(trial, [column])}")]


def as_text_in_prepare(trial: Trial, columns: list[str]) -> str:
    """The fix. Not a map returning str(x[column]): datasets casts text that reads as the column's type back to it."""
    first = columns[0]
    return (f"make {'it' if len(columns) == 1 else 'each'} text at the end of prepare: rows = rows.cast_column("
            f"'{first}', datasets.Value('string')) (a map returning str(x['{first}']) is not enough: datasets casts "
            f"the text back to {trial.dtype(first)})")
