"""A row's pictures: rows are told apart by their pictures."""

from PIL import Image

from kit.data.row_pictures import row_key
from kit.digest import shown_keys

RED, BLUE = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (64, 64), "blue")
PROMPT = [{"role": "system", "content": "Count."}, {"role": "user", "content": "How many?"}]


def test_rows_with_one_question_are_told_apart_by_their_pictures():
    from datasets import Dataset

    assert row_key(PROMPT, RED) != row_key(PROMPT, BLUE)
    assert row_key(PROMPT, RED) == row_key(PROMPT, RED.copy())
    filled = [
        PROMPT[0],
        {"role": "user", "content": [{"type": "image", "image": RED}, {"type": "text", "text": "How many?"}]},
    ]
    assert row_key(filled) == row_key(PROMPT, RED)  # as TRL logs it, and as the dataset holds it
    rows = Dataset.from_list([{"prompt": PROMPT, "image": RED}, {"prompt": PROMPT, "image": BLUE}])
    keys = shown_keys(rows)
    assert len(set(keys)) == 2
