"""The output folder's layout: the one place that names what a run writes (other tools read these names).

    OUT/run.yaml          resolved config + what the run used (versions, the trainer's own settings, GPU
                          memory): re-run with `--config OUT/run.yaml`
    OUT/metrics.jsonl     one JSON object per logged step (reward, reward_std, rewards/<name>/mean, ...)
    OUT/eval.json         held-out scores before and after training (eval.n prompts; 0 turns it off)
    OUT/recipe/           a copy of a user's recipe file (run.yaml's `inputs` has its path and sha256)
    OUT/held_out.json     the rows held out of a local training file (eval.holdout), which `kit eval` scores
    OUT/adapter/          the LoRA adapter + tokenizer
    OUT/merged/           the adapter merged into 16-bit weights; loads with plain transformers
    OUT/gguf/             GGUF files, an Ollama Modelfile and verification.json (save.formats has gguf)
    OUT/checkpoints/      trainer checkpoints every grpo.save_minutes and grpo.save_steps (and on Ctrl-C /
                          SIGTERM; --resume continues from the newest complete one)
    OUT/.run.lock         held while a run writes to OUT: a second run into the same OUT is refused
    OUT/report.md         timings, eval table, health diagnostics, plots, samples, config
    OUT/plots/            run.png, metrics.png;  OUT/samples.jsonl, OUT/diagnostics.jsonl
    OUT/samples/          (pictures in the rows) a small copy of each picture a logged sample saw
    OUT/distributed.json  (more than one process) what each rank did: steps, completions, weight norms
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

VERIFICATION = "verification.json"  # beside the GGUF files, wherever `kit export` writes them
LOCK_NAME = ".run.lock"
# run.yaml's sections that record what the run used, after its settings; reading it back as a config drops them
RUN_RECORDS = ("inputs", "versions", "trainer", "memory", "cpu", "adaptive_weights", "timing", "learnability")


def write_run_section(run_file: Path, key: str, value: dict) -> None:
    """Add or replace the top-level `key:` block of run.yaml, at the end, leaving every other line as written."""
    import yaml

    lines, kept, inside = run_file.read_text().splitlines(keepends=True), [], False
    for line in lines:
        if not line.startswith((" ", "-")) and line.strip():  # a top-level key or comment starts a block
            inside = line.startswith(f"{key}:")
        if not inside:
            kept.append(line)
    run_file.write_text("".join(kept) + yaml.safe_dump({key: value}, sort_keys=False))


@dataclass(frozen=True)
class RunDir:
    """One run's output folder; `RunDir(path).metrics` is OUT/metrics.jsonl, and so on."""

    root: Path

    def __post_init__(self):
        object.__setattr__(self, "root", Path(self.root))

    def __fspath__(self) -> str:
        return str(self.root)

    def __str__(self) -> str:
        return str(self.root)

    @property
    def run_file(self) -> Path:
        return self.root / "run.yaml"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def eval(self) -> Path:
        return self.root / "eval.json"

    @property
    def recipe_copy(self) -> Path:
        return self.root / "recipe"  # a copy of a user's recipe file, as the run read it

    @property
    def held_out(self) -> Path:
        return self.root / "held_out.json"

    @property
    def samples(self) -> Path:
        return self.root / "samples.jsonl"

    @property
    def sample_pictures(self) -> Path:
        return self.root / "samples"

    @property
    def diagnostics(self) -> Path:
        return self.root / "diagnostics.jsonl"

    @property
    def report(self) -> Path:
        return self.root / "report.md"

    @property
    def distributed(self) -> Path:
        return self.root / "distributed.json"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def run_plot(self) -> Path:
        return self.plots / "run.png"

    @property
    def metrics_plot(self) -> Path:
        return self.plots / "metrics.png"

    @property
    def adapter(self) -> Path:
        return self.root / "adapter"

    @property
    def merged(self) -> Path:
        return self.root / "merged"

    @property
    def gguf(self) -> Path:
        return self.root / "gguf"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    def stage_checkpoints(self, stage: str | None) -> Path:
        """A GRPO stage's checkpoints: OUT/checkpoints for a run's one GRPO stage, else OUT/checkpoints/<stage>."""
        return self.checkpoints if stage is None else self.checkpoints / stage

    @property
    def sft_checkpoints(self) -> Path:
        return self.root / "checkpoints-sft"  # the trainer's scratch folder; the warm start saves no checkpoint

    @property
    def lock(self) -> Path:
        return self.root / LOCK_NAME

    def early_entries(self) -> set[str]:
        """What a run writes before its first GRPO checkpoint: an OUT holding only these is a start to clear."""
        paths = (self.run_file, self.recipe_copy, self.held_out, self.metrics, self.eval, self.samples,
                 self.sample_pictures, self.diagnostics, self.distributed, self.plots, self.checkpoints,
                 self.sft_checkpoints)
        return {p.name for p in paths}

    def finished_outputs(self) -> list[Path]:
        """What only a finished run leaves: a new run must not clear them without being asked."""
        return [p for p in (self.merged, self.adapter, self.gguf, self.report) if p.exists()]


def run_of(model_dir: Path) -> RunDir | None:
    """The run a saved model folder (OUT/merged or OUT/adapter) belongs to, when it is one."""
    model_dir = Path(model_dir)
    run = RunDir(model_dir.parent)
    return run if model_dir.name in (run.merged.name, run.adapter.name) else None


def run_file_beside(model_dir: Path) -> Path:
    """OUT/run.yaml for a model folder inside OUT (it may not exist)."""
    return RunDir(Path(model_dir).parent).run_file


def eval_file_name(model_dir: Path, split: str) -> str:
    """`kit eval`'s results file: OUT/eval.json is the training run's own before/after table."""
    return f"eval-{Path(model_dir).name}-{split}.json"
