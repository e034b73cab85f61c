"""A file of questions beside a folder of pictures: paths read relative to the file, and every bad picture named
in one error before anything trains."""

import json

import pytest
from PIL import Image

from kit.data.images import MAX_PIXELS, read_image_table
from kit.errors import KitError


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def picture(path, size=(8, 8)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, "red").save(path)


def row(image):
    return {"prompt": [{"role": "user", "content": "How many?"}], "image": image, "answer": "1"}


def test_relative_and_absolute_paths_read_as_pictures(tmp_path):
    picture(tmp_path / "pics" / "a.png")
    picture(tmp_path / "elsewhere" / "b.png")
    write_rows(tmp_path / "data.jsonl", [row("pics/a.png"), row(str(tmp_path / "elsewhere" / "b.png"))])
    rows = read_image_table(str(tmp_path / "data.jsonl"), "train", ["prompt", "image", "answer"])
    assert [r["image"].size for r in rows] == [(8, 8), (8, 8)]
    assert rows[0]["image"].filename == str(tmp_path / "pics" / "a.png")


def test_a_list_of_pictures_per_row(tmp_path):
    picture(tmp_path / "a.png")
    picture(tmp_path / "b.png")
    write_rows(tmp_path / "data.jsonl", [{**row(None), "images": ["a.png", "b.png"]}])
    rows = read_image_table(str(tmp_path / "data.jsonl"), "train", ["prompt", "answer"])
    assert len(rows[0]["images"]) == 2


def test_every_bad_picture_is_named_in_one_error(tmp_path):
    picture(tmp_path / "good.png")
    (tmp_path / "text.png").write_text("not a picture")
    write_rows(tmp_path / "data.jsonl", [row("good.png"), row("missing.png"), row("text.png"), row("")])
    with pytest.raises(KitError) as err:
        read_image_table(str(tmp_path / "data.jsonl"), "train", ["prompt", "image", "answer"])
    message = str(err.value)
    assert "3 picture(s) cannot be used" in message
    assert "row 1: no picture at" in message and "missing.png" in message
    assert "row 2:" in message and "not a picture PIL can read" in message
    assert "row 3: no picture at" in message and "row 0" not in message


def test_a_huge_picture_is_refused_by_its_header(tmp_path, monkeypatch):
    monkeypatch.setattr("kit.data.images.MAX_PIXELS", 63)
    picture(tmp_path / "big.png", (8, 8))
    write_rows(tmp_path / "data.jsonl", [row("big.png")])
    with pytest.raises(KitError, match="8x8, over 63 pixels; shrink it"):
        read_image_table(str(tmp_path / "data.jsonl"), "train", ["prompt", "image", "answer"])
    assert MAX_PIXELS == 4096 * 4096


def test_a_missing_image_column_is_the_usual_column_error(tmp_path):
    write_rows(tmp_path / "data.jsonl", [{"prompt": [{"role": "user", "content": "?"}], "answer": "1"}])
    with pytest.raises(KitError, match="image"):
        read_image_table(str(tmp_path / "data.jsonl"), "train", ["prompt", "image", "answer"])


def embedded(path, pictures: list, column="image"):
    """A Parquet file holding its pictures, as `datasets` writes one (and as hub datasets are stored)."""
    from datasets import Dataset, Features, Image, List, Value

    feature = List(Image()) if column == "images" else Image()
    features = Features({"prompt": [{"role": Value("string"), "content": Value("string")}], column: feature,
                         "answer": Value("string")})
    rows = {"prompt": [row(None)["prompt"]] * len(pictures), column: pictures, "answer": ["1"] * len(pictures)}
    Dataset.from_dict(rows, features).to_parquet(str(path))


@pytest.mark.parametrize("column", ["image", "images"])
def test_a_parquet_file_that_holds_its_pictures(tmp_path, column):
    pictures = [Image.new("RGB", (8, 4), "red"), Image.new("RGB", (4, 4), "blue")]
    embedded(tmp_path / "data.parquet", [[p] for p in pictures] if column == "images" else pictures, column)
    rows = read_image_table(str(tmp_path / "data.parquet"), "train", ["prompt", column, "answer"])
    shown = [r[column][0] if column == "images" else r[column] for r in rows]
    assert [(p.size, p.getpixel((0, 0))) for p in shown] == [((8, 4), (255, 0, 0)), ((4, 4), (0, 0, 255))]


def test_bad_pictures_held_in_a_parquet_file_are_named(tmp_path, monkeypatch):
    junk = {"bytes": b"not a picture", "path": None}
    embedded(tmp_path / "data.parquet", [Image.new("RGB", (4, 4)), Image.new("RGB", (9, 9)), None, junk])
    monkeypatch.setattr("kit.data.images.MAX_PIXELS", 63)
    with pytest.raises(KitError) as err:
        read_image_table(str(tmp_path / "data.parquet"), "train", ["prompt", "image", "answer"])
    message = str(err.value)
    assert "3 picture(s) cannot be used" in message and "row 0" not in message
    assert "row 1: its picture" in message and "9x9, over 63 pixels" in message and "row 2: no picture" in message
    assert "row 3: its picture (13 bytes) is not a picture PIL can read" in message


def test_a_hub_dataset_with_an_image_column(tmp_path):
    """The hub's loading code, given a local folder as its dataset id (offline, as every test is)."""
    embedded(tmp_path / "org-dataset" / "train.parquet", [Image.new("RGB", (4, 4), "blue")])
    rows = read_image_table(None, "train", ["prompt", "image", "answer"], hub_id=str(tmp_path / "org-dataset"))
    assert rows[0]["image"].getpixel((0, 0)) == (0, 0, 255)


def test_a_hub_dataset_naming_its_pictures_by_path_is_refused(tmp_path):
    (tmp_path / "org-dataset").mkdir()
    write_rows(tmp_path / "org-dataset" / "train.jsonl", [row("a.png")])
    with pytest.raises(KitError, match="not pictures; a hub dataset's pictures must be an Image column"):
        read_image_table(None, "train", ["prompt", "image", "answer"], hub_id=str(tmp_path / "org-dataset"))
