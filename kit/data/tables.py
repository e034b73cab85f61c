"""Reading a recipe's data: a local file or a hub dataset as a table, its columns checked, and the rows a
recipe keeps after its own checks (the helpers a recipe's `prepare` uses); and the call of `prepare` itself."""

from __future__ import annotations

from pathlib import Path

from kit.config import SAMPLE_DATA, DataConfig
from kit.errors import KitError
from kit.user_code import call_user, described

LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
TEXT_FORMATS = {"json", "csv"}


def load_table(source: str | None, hub_id: str, split: str, hub_config: str | None = None):
    """Rows from a local .jsonl/.json/.csv/.parquet file, or from the hub when `source` is None."""
    import datasets

    if source is None:
        try:
            return datasets.load_dataset(hub_id, hub_config, split=split)
        except OSError as err:  # ConnectionError, not found, offline without a cached copy
            raise KitError(
                f"cannot load dataset {hub_id} from the hub ({str(err).splitlines()[0]}); "
                "offline, pass a local file with DATA=path, or run PROFILE=smoke"
            ) from None
    path = Path(source)
    problem = local_file_problem(path)
    if problem:
        raise KitError(problem)
    kind = LOCAL_FORMATS[path.suffix.lower()]
    if kind in TEXT_FORMATS:
        require_utf8(path)
    try:
        return datasets.load_dataset(kind, data_files=str(path), split="train")
    except Exception as err:  # datasets wraps parser errors in several types
        raise KitError(f"cannot read data file {path} as {kind}: {described(err)}") from None


def recipe_rows(prepare, split: str, source: str | None):
    """What the recipe's prepare(split, source) returns. An empty file is refused before it reads it (`datasets`
    says that with a StopIteration); what its code raises is one line (kit.user_code)."""
    if source is not None and (problem := empty_file_problem(Path(source))):
        raise KitError(problem)
    return call_user(prepare, split, source, label="prepare()",
                     context=lambda: f" reading {source or 'its hub dataset'} (split {split!r})")


def check_local_files(data: DataConfig, eval_path: str | None) -> None:
    """The data files a run names exist and have a known type: checked first, before any heavy import, so a
    typo in DATA= is said in a second rather than after a minute of loading."""
    for what, source in (("data.path", data.path), ("eval.path", eval_path)):
        problem = None if source in (None, SAMPLE_DATA) else local_file_problem(Path(source))
        if problem:
            raise KitError(f"{what}: {problem}")


def local_file_problem(path: Path) -> str | None:
    if path.suffix.lower() not in LOCAL_FORMATS:
        return f"data file {path} has an unknown type; use one of: {', '.join(LOCAL_FORMATS)}"
    if not path.is_file():
        return f"data file {path} does not exist"
    return empty_file_problem(path)


def empty_file_problem(path: Path, most: int = 1 << 16) -> str | None:
    """An existing file with no bytes, or only blank lines (a small one is read to tell)."""
    try:
        size = path.stat().st_size
        blank = size == 0 or (size <= most and not path.read_bytes().strip())
    except OSError:  # not there, or not readable: whoever reads it says so
        return None
    return f"data file {path} is empty; give a file with at least one row" if blank else None


def require_utf8(path: Path, chunk: int = 1 << 20) -> None:
    """Refuse a text file that is not UTF-8 before `datasets` reads it.

    pyarrow keeps the bad bytes and fails only later, deep inside a recipe, with a UnicodeDecodeError.
    """
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    done, lines = 0, 1
    with path.open("rb") as f:
        while block := f.read(chunk):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as err:
                before = block[:err.start]
                line = lines + before.count(b"\n")
                raise KitError(f"data file {path}, line {line}: byte 0x{block[err.start]:02x} (file offset "
                               f"{done + err.start}) is not UTF-8; save the file as UTF-8 "
                               "(e.g. iconv -f latin1 -t utf-8)") from None
            done, lines = done + len(block), lines + block.count(b"\n")
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise KitError(f"data file {path} ends inside a UTF-8 character; save the file as UTF-8") from None


def require_columns(dataset, columns: list[str], where: str) -> None:
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise KitError(
            f"{where} lacks column(s) {', '.join(repr(c) for c in missing)}; it has: {', '.join(dataset.column_names)}"
        )


def rows_kept(kept: list[dict], total: int, where: str, dropped: str, none_left: str):
    """The rows a recipe kept out of `total`, as a Dataset. The count of the others is printed (`dropped` says
    which they are: "tasks without tests"); with none kept, `none_left` says what to fix."""
    from datasets import Dataset

    if len(kept) < total:
        print(f"data: {where}: dropped {total - len(kept)} of {total} {dropped}; {len(kept)} remain")
    if not kept:
        raise KitError(f"{where}: {none_left}")
    return Dataset.from_list(kept)
