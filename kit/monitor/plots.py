"""Pictures of a run: the GRPO reward curve and the held-out scores after each stage, as one PNG.

    python -c "from kit.monitor.plots import plot_run; plot_run('outputs/<run>')"
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from kit.outputs import RunDir


def plot_run(out: RunDir | Path) -> Path | None:
    """Write OUT/plots/run.png from metrics.jsonl and eval.json; None when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    from kit.monitor.metrics import grpo_steps, held_out_checks, read_metrics

    out = RunDir(out)
    records = read_metrics(out.metrics) if out.metrics.exists() else []
    # metrics.jsonl keeps a non-finite value as a string ("nan"): a step without a number has no point to draw
    metrics = [m for m in grpo_steps(records) if finite(m.get("reward"))]
    evaluations = json.loads(out.eval.read_text())["results"] if out.eval.exists() else []
    if not metrics and not evaluations:
        return None
    figure, (curve, bars) = plt.subplots(1, 2, figsize=(12, 4.5))
    draw_rewards(curve, metrics)
    draw_held_out_curve(curve, held_out_checks(records))
    draw_scores(bars, evaluations)
    figure.tight_layout()
    path = out.run_plot
    path.parent.mkdir(exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def draw_rewards(ax, metrics: list[dict]) -> None:
    ax.set_title("GRPO reward per step")
    if not metrics:
        ax.text(0.5, 0.5, "no GRPO steps logged", ha="center", transform=ax.transAxes)
        return
    steps = [m["run_step"] for m in metrics]
    reward = [m["reward"] for m in metrics]
    ax.plot(steps, reward, color="#9ab", linewidth=1, label="reward (weighted sum)")
    window = max(1, len(reward) // 10)
    smooth = [sum(reward[max(0, i - window + 1): i + 1]) / len(reward[max(0, i - window + 1): i + 1])
              for i in range(len(reward))]
    ax.plot(steps, smooth, color="#1f5f8b", linewidth=2, label=f"mean of last {window}")
    std = [m.get("reward_std", 0.0) if finite(m.get("reward_std", 0.0)) else math.nan for m in metrics]  # a gap
    ax.plot(steps, std, color="#d98c1f", linewidth=1, label="reward_std (learning signal)")
    mark_stages(ax, metrics)
    ax.set_xlabel("step")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)


def draw_held_out_curve(ax, checks: list[dict]) -> None:
    """The held-out checks made while training, on their own axis (% of prompts) beside the reward curve."""
    if not checks:
        return
    held = ax.twinx()
    steps = [c["run_step"] for c in checks]
    held.plot(steps, [100 * c["eval/strict"] for c in checks], color="#2e8b57", marker="o", markersize=3,
              linewidth=1.5, label=f"held-out strict accuracy ({checks[0]['eval/n']} prompts)")
    if all(finite(c.get("eval/format")) for c in checks):
        held.plot(steps, [100 * c["eval/format"] for c in checks], color="#2e8b57", linestyle="--", linewidth=1,
                  label="held-out format compliance")
    held.set_ylim(0, 105)
    held.set_ylabel("held-out %")
    held.legend(loc="lower right", fontsize=8)


def mark_stages(ax, metrics: list[dict]) -> None:
    """With several GRPO stages: a line where each begins, with its name."""
    starts = [(m["run_step"], m["stage"]) for i, m in enumerate(metrics)
              if i == 0 or m.get("stage") != metrics[i - 1].get("stage")]
    if len(starts) < 2:
        return
    for step, name in starts:
        ax.axvline(step, color="gray", linestyle=":", linewidth=1)
        ax.text(step, 1.0, f" {name}", transform=ax.get_xaxis_transform(), fontsize=7, va="top", color="gray")


def finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def draw_scores(ax, evaluations: list[dict]) -> None:
    """Each scoring's proportions as bars, with their 95% Wilson intervals as error bars."""
    from kit.eval.evaluate import PROPORTIONS
    from kit.eval.intervals import wilson

    ax.set_title("held-out scores")
    if not evaluations:
        ax.text(0.5, 0.5, "no held-out evaluation", ha="center", transform=ax.transAxes)
        return
    width = 0.8 / len(evaluations)
    for i, result in enumerate(evaluations):
        values = [result[attribute] for _, attribute, _ in PROPORTIONS]
        bounds = [wilson(round(v * result["n"]), result["n"]) if v is not None else (0.0, 0.0) for v in values]
        heights = [100 * (v or 0.0) for v in values]
        errors = [[h - 100 * low if v is not None else 0 for h, v, (low, _) in zip(heights, values, bounds)],
                  [100 * high - h if v is not None else 0 for h, v, (_, high) in zip(heights, values, bounds)]]
        positions = [k + i * width for k in range(len(PROPORTIONS))]
        drawn = ax.bar(positions, heights, width, yerr=errors, capsize=3, ecolor="#444444",
                       label=result["name"])
        ax.bar_label(drawn, fmt="%.0f", fontsize=7, label_type="center")
    ax.set_xticks([k + width * (len(evaluations) - 1) / 2 for k in range(len(PROPORTIONS))],
                  [title for title, _, _ in PROPORTIONS])
    ax.set_ylim(0, 105)
    ax.set_ylabel(f"% of {evaluations[0]['n']} held-out prompts (95% interval)")
    ax.legend(loc="best", fontsize=8)


PANELS = [
    ("reward (total and each function)",
     lambda keys: ["reward"] + sorted(k for k in keys if k.startswith("rewards/") and k.endswith("/mean"))),
    ("reward_std (learning signal)", lambda keys: ["reward_std", "frac_reward_zero_std"]),
    ("completion length (tokens)", lambda keys: ["completions/mean_length", "completions/clipped_ratio"]),
    ("KL to the reference (beta > 0)", lambda keys: ["kl"]),
    ("learning rate", lambda keys: ["learning_rate"]),
    ("loss and gradient norm", lambda keys: ["loss", "grad_norm"]),
]


def plot_metrics(out: RunDir | Path) -> Path | None:
    """OUT/plots/metrics.png: one panel per thing the guide says to watch, from the GRPO steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kit.monitor.metrics import grpo_steps, read_metrics

    out = RunDir(out)
    rows = grpo_steps(read_metrics(out.metrics)) if out.metrics.exists() else []
    if not rows:
        return None
    keys = set().union(*rows)
    figure, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax, (title, pick) in zip(axes.flat, PANELS):
        ax.set_title(title, fontsize=10)
        drawn = False
        for key in pick(keys):
            points = [(m["run_step"], m[key]) for m in rows if isinstance(m.get(key), (int, float))]
            if points:
                ax.plot(*zip(*points), label=key.removeprefix("rewards/").removesuffix("/mean"), linewidth=1.2)
                drawn = True
        if drawn:
            ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
        else:
            ax.text(0.5, 0.5, "not logged in this run", ha="center", transform=ax.transAxes, color="gray")
        ax.set_xlabel("step", fontsize=8)
    figure.tight_layout()
    target = out.metrics_plot
    target.parent.mkdir(exist_ok=True)
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target
