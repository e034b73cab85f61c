"""Mistakes the user can see without a model are said before the heavy imports (Unsloth takes a minute)."""

import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import sys
from kit.cli import main
code = main(sys.argv[1:])
print("unsloth imported:", "unsloth" in sys.modules, "exit:", code)
"""


def run_kit(*argv):
    return subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)


def test_a_missing_data_file_is_refused_before_unsloth_is_imported(tmp_path):
    result = run_kit("train", "gsm8k", "--profile", "smoke", "--data", str(tmp_path / "nope.jsonl"),
                     "--out", str(tmp_path / "out"))
    assert f"error: data.path: data file {tmp_path / 'nope.jsonl'} does not exist" in result.stderr + result.stdout
    assert "unsloth imported: False exit: 2" in result.stdout, result.stdout + result.stderr[-2000:]
    assert not (tmp_path / "out").exists()


def test_a_held_out_file_with_an_unknown_type_is_refused_as_early(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n')
    result = run_kit("train", "gsm8k", "--profile", "smoke", "--data", str(tmp_path / "train.jsonl"),
                     "--out", str(tmp_path / "out"), f"eval.path={tmp_path / 'held.txt'}")
    assert "error: eval.path: data file" in result.stderr + result.stdout and "unknown type" in result.stderr
    assert "unsloth imported: False" in result.stdout
