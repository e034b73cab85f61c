"""OUT/plots/run.png and metrics.png, drawn from a metrics.jsonl written by the kit's MetricsFile (and eval.json):
real PNG files of the expected size, each curve from the GRPO steps alone, nothing written when nothing was logged."""

import math
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
from matplotlib.container import BarContainer

from kit.eval.evaluate import EvalResult, write_json
from kit.eval.intervals import wilson
from kit.monitor.metrics import MetricsFile
from kit.monitor.plots import plot_metrics, plot_run

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
BEFORE = EvalResult("before", 20, 0.10, 0.25, 0.40, {"answer_correct": 0.10}, 80.0)
AFTER = EvalResult("after", 20, 0.55, 0.60, None, {"answer_correct": 0.55}, 64.5)  # None: recipe has no format


def grpo_logs(step: int) -> dict:
    """What TRL logs at one GRPO step, with two reward functions."""
    return {"loss": 0.01, "grad_norm": 0.4, "learning_rate": 5e-6 * (1 - step / 50), "reward": 0.1 + 0.02 * step,
            "reward_std": 0.3, "frac_reward_zero_std": 0.1, "kl": 0.0, "completions/mean_length": 120.0 - step,
            "completions/clipped_ratio": 0.05, "rewards/correct/mean": 0.02 * step, "rewards/format/mean": 0.5}


def sft_logs(step: int) -> dict:
    return {"loss": 2.0 - 0.01 * step, "grad_norm": 1.5, "learning_rate": 2e-4, "mean_token_accuracy": 0.4}


def make_run(tmp_path: Path, sft_steps=(), grpo_steps=(), evaluations=(), change=None) -> Path:
    """A run folder with metrics.jsonl as MetricsFile writes it (SFT lines first) and eval.json.

    change: {step: {key: value}} laid over the GRPO logs of that step; a value None: the key is not logged.
    """
    out = tmp_path / "run"
    out.mkdir()
    for stage, steps, logs in (("sft", sft_steps, sft_logs), ("grpo", grpo_steps, grpo_logs)):
        writer = MetricsFile(out / "metrics.jsonl", stage=stage)
        for step in steps:
            state = SimpleNamespace(is_world_process_zero=True, global_step=step)
            logged = {**logs(step), **(change or {}).get(step, {})}
            writer.on_log(None, state, None, logs={k: v for k, v in logged.items() if v is not None})
    if evaluations:
        write_json(out / "eval.json", list(evaluations))
    return out


@pytest.fixture
def figures(monkeypatch) -> list:
    """Every figure the plots save, kept for a look at what was drawn on it."""
    from matplotlib.figure import Figure

    saved, savefig = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *a, **k: saved.append(figure) or savefig(figure, *a, **k))
    return saved


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header, after checking that it is one."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    assert len(data) > 20_000, f"{path} holds {len(data)} bytes: a blank canvas?"  # a blank one is about 4 KB
    return struct.unpack(">II", data[16:24])


def panel(figure, title: str):
    return next(ax for ax in figure.axes if ax.get_title() == title)


def curves(ax) -> dict[str, list]:
    """{label: [(x, y), ...]} of the lines drawn on one panel."""
    return {line.get_label(): list(zip(line.get_xdata(), line.get_ydata())) for line in ax.get_lines()}


def test_run_png_shows_the_reward_curve_and_the_held_out_scores(tmp_path, figures):
    out = make_run(tmp_path, grpo_steps=range(1, 21), evaluations=[BEFORE, AFTER])
    assert plot_run(out) == out / "plots" / "run.png"
    assert png_size(out / "plots" / "run.png") == (1320, 495)  # 12 x 4.5 inches at 110 dpi
    rewards = curves(panel(figures[0], "GRPO reward per step"))
    assert rewards["reward (weighted sum)"] == [(s, pytest.approx(0.1 + 0.02 * s)) for s in range(1, 21)]
    assert set(rewards) == {"reward (weighted sum)", "mean of last 2", "reward_std (learning signal)"}
    bars = panel(figures[0], "held-out scores")
    drawn = [c for c in bars.containers if isinstance(c, BarContainer)]
    heights = {container.get_label(): [round(b.get_height(), 6) for b in container] for container in drawn}
    assert heights == {"before": [10, 25, 40], "after": [55, 60, 0]}  # strict, lenient, format (None drawn as 0)
    spans = [sorted(round(y, 4) for y in segment[:, 1]) for container in drawn
             for segment in container.errorbar.lines[2][0].get_segments()]
    low, high = wilson(2, 20)  # before's strict: 2 of 20
    assert spans[0] == [round(100 * low, 4), round(100 * high, 4)]
    assert spans[-1] == [0, 0]  # no format score, no interval


def test_metrics_png_draws_each_watched_quantity_in_its_panel(tmp_path, figures):
    out = make_run(tmp_path, grpo_steps=range(1, 11))
    assert plot_metrics(out) == out / "plots" / "metrics.png"
    assert png_size(out / "plots" / "metrics.png") == (1500, 800)  # 15 x 8 inches at 100 dpi
    drawn = {ax.get_title(): set(curves(ax)) for ax in figures[0].axes}
    assert drawn == {
        "reward (total and each function)": {"reward", "correct", "format"},
        "reward_std (learning signal)": {"reward_std", "frac_reward_zero_std"},
        "completion length (tokens)": {"completions/mean_length", "completions/clipped_ratio"},
        "KL to the reference (beta > 0)": {"kl"},
        "learning rate": {"learning_rate"},
        "loss and gradient norm": {"loss", "grad_norm"},
    }


def test_a_quantity_the_run_did_not_log_gets_a_note_instead_of_a_curve(tmp_path, figures):
    out = make_run(tmp_path, grpo_steps=range(1, 6), change={s: {"kl": None} for s in range(1, 6)})  # beta = 0
    plot_metrics(out)
    kl = panel(figures[0], "KL to the reference (beta > 0)")
    assert curves(kl) == {} and [t.get_text() for t in kl.texts] == ["not logged in this run"]


@pytest.mark.parametrize("plot", [plot_run, plot_metrics])
@pytest.mark.parametrize("run", [
    {},  # nothing logged yet: the run failed while loading
    {"sft_steps": range(1, 6)},  # an SFT-only run has no GRPO steps to draw
])
def test_nothing_to_plot_writes_nothing_and_returns_none(tmp_path, plot, run):
    out = make_run(tmp_path, **run)
    assert plot(out) is None
    assert not (out / "plots").exists()


def test_an_empty_metrics_file_is_nothing_to_plot(tmp_path):
    out = make_run(tmp_path)
    (out / "metrics.jsonl").write_text("\n")
    assert plot_run(out) is None and plot_metrics(out) is None
    assert not (out / "plots").exists()


def test_held_out_scores_alone_still_make_run_png(tmp_path, figures):
    out = make_run(tmp_path, sft_steps=range(1, 6), evaluations=[BEFORE, AFTER])
    assert png_size(plot_run(out)) == (1320, 495)
    rewards = panel(figures[0], "GRPO reward per step")
    assert curves(rewards) == {} and [t.get_text() for t in rewards.texts] == ["no GRPO steps logged"]


def test_sft_steps_in_the_same_file_stay_out_of_the_grpo_curves(tmp_path, figures):
    out = make_run(tmp_path, sft_steps=range(1, 31), grpo_steps=range(1, 11))
    plot_run(out)
    plot_metrics(out)
    run, metrics = figures
    assert [x for x, _ in curves(panel(run, "GRPO reward per step"))["reward (weighted sum)"]] == list(range(1, 11))
    losses = curves(panel(metrics, "loss and gradient norm"))["loss"]
    assert losses == [(s, 0.01) for s in range(1, 11)]  # not SFT's 2.0 - 0.01 * step
    assert png_size(out / "plots" / "metrics.png") == (1500, 800)


def test_non_finite_losses_are_left_out_of_the_metrics_curves(tmp_path, figures):
    out = make_run(tmp_path, grpo_steps=range(1, 11), change={4: {"loss": math.nan}, 5: {"grad_norm": math.inf}})
    assert '"loss": "nan"' in (out / "metrics.jsonl").read_text()  # as MetricsFile keeps them
    assert png_size(plot_metrics(out)) == (1500, 800)
    drawn = curves(panel(figures[0], "loss and gradient norm"))
    assert [x for x, _ in drawn["loss"]] == [1, 2, 3, 5, 6, 7, 8, 9, 10]
    assert [x for x, _ in drawn["grad_norm"]] == [1, 2, 3, 4, 6, 7, 8, 9, 10]


def test_a_non_finite_reward_does_not_stop_run_png(tmp_path):
    out = make_run(tmp_path, grpo_steps=range(1, 11), change={3: {"reward": math.nan}})
    assert png_size(plot_run(out)) == (1320, 495)


def test_a_non_finite_reward_std_leaves_the_other_steps_on_a_numeric_axis(tmp_path, figures):
    out = make_run(tmp_path, grpo_steps=range(1, 6), change={3: {"reward_std": math.inf}})
    plot_run(out)
    std = curves(panel(figures[0], "GRPO reward per step"))["reward_std (learning signal)"]
    assert [y for _, y in std if isinstance(y, float) and math.isfinite(y)] == [0.3] * 4
