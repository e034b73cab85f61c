"""count_shapes draws its own pictures: each holds as many shapes as its answer says, the same on every machine,
and no held-out picture is a training one."""

from kit.recipes import count_shapes


def blobs(picture) -> int:
    """Shapes counted by their pixels: connected regions (4-neighbours) that are not the white ground."""
    rgb = picture.convert("RGB")
    width, height = rgb.size
    ink = {(x, y) for x in range(width) for y in range(height) if min(rgb.getpixel((x, y))) < 250}
    count = 0
    while ink:
        count += 1
        frontier = [ink.pop()]
        while frontier:
            x, y = frontier.pop()
            for near in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if near in ink:
                    ink.remove(near)
                    frontier.append(near)
    return count


def test_each_picture_holds_as_many_shapes_as_its_answer():
    rows = count_shapes.pictures("test")
    assert len(rows) == 200
    for row in rows:
        assert blobs(row["image"]) == int(row["answer"]), row["prompt"]
        kind = row["prompt"][0]["content"].removeprefix("How many ").removesuffix("s are there?")
        assert kind in count_shapes.KINDS


def test_the_answers_cover_one_to_six_and_every_kind():
    rows = count_shapes.pictures("test")
    assert {r["answer"] for r in rows} == {str(n) for n in range(1, 7)}
    assert {r["prompt"][0]["content"] for r in rows} == {f"How many {k}s are there?" for k in count_shapes.KINDS}


def test_the_splits_are_the_same_everywhere_and_share_no_picture():
    test = [count_shapes.digest(r["image"]) for r in count_shapes.pictures("test")]
    assert test == [count_shapes.digest(r["image"]) for r in count_shapes.pictures("test")]
    train = {count_shapes.digest(r["image"]) for r in count_shapes.pictures("train")}
    assert len(train) > 1900 and not train & set(test)


def test_the_sample_file_names_pictures_beside_it_and_reads_back(tmp_path):
    path = tmp_path / "sample.jsonl"
    count_shapes.write_sample(path, "train")
    rows = count_shapes.prepare("train", str(path))
    drawn = count_shapes.pictures("train")[: count_shapes.SAMPLE_ROWS]
    assert len(rows) == len(drawn)
    assert [count_shapes.digest(r["image"].convert("RGB")) for r in rows] == [
        count_shapes.digest(r["image"]) for r in drawn
    ]
    assert [r["answer"] for r in rows] == [r["answer"] for r in drawn]


def test_scoring_and_the_near_miss():
    row = {"answer": "3"}
    assert tuple(count_shapes.EVAL.verdict("<answer>3</answer>", row)) == (True, True, True)
    assert not count_shapes.EVAL.verdict("<answer>4</answer>", row).strict
    close = count_shapes.REWARDS.rewards[2].fn
    completions = [[{"role": "assistant", "content": f"<answer>{n}</answer>"}] for n in (3, 4, 2, 5)]
    assert close(completions, answer=["3"] * 4) == [1.0, 0.5, 0.5, 0.0]


def test_the_sample_pictures_appear_whole_for_ranks_reading_them_as_another_writes(tmp_path, monkeypatch):
    """Every rank of a multi-process run writes the sample: a picture is written aside and renamed into place, so
    a reader never opens one half-written (seen: UnidentifiedImageError in a two-process run)."""
    from pathlib import Path

    from PIL import Image

    written, save = [], Image.Image.save
    monkeypatch.setattr(Image.Image, "save", lambda self, fp, *args, **kwargs: written.append(Path(fp).name) or
                        save(self, fp, *args, **kwargs))
    count_shapes.write_sample(tmp_path / "sample.jsonl", "train")
    assert written and all(name.startswith(".") for name in written), written
    pictures = sorted((tmp_path / "count_shapes-train-images").iterdir())
    assert pictures and all(p.suffix == ".png" for p in pictures)
    for picture in pictures:
        Image.open(picture).verify()
