"""The memory probe's GPU side on this CPU, with torch.cuda's counters faked: which GPU its verdict is about, the
phases it measures (a reward model's scoring among them), what it leaves in the peak counters, and standby."""

import sys
from types import ModuleType, SimpleNamespace

import pytest
import torch
import yaml

from kit import env
from kit.errors import KitError
from kit.plan import device_memory, probe
from kit.plan.gpus import GIB
from kit.plan.planner import make_plan
from kit.plan.probe import run_probe
from kit.plan.probe_verdict import ProbeResult, report
from kit.plan.shapes import read_shape
from tests.plan.conftest import config

QWEN = "Qwen2.5-1.5B-Instruct"


class FakeGpu:
    """torch.cuda's memory counters as a GPU answers them. `asleep` bytes are reserved in torch's eyes but given
    back to the driver, as vLLM's sleep pool is in standby."""

    def __init__(self, total_gib: float, context_gib: float = 0.5):
        self.total, self.context = total_gib * GIB, context_gib * GIB
        self.reserved = self.max_reserved = self.asleep = 0
        self.events: list[str] = []

    def hold(self, gib: float) -> None:
        self.reserved += gib * GIB
        self.max_reserved = max(self.max_reserved, self.reserved)

    def install(self, monkeypatch, name: str) -> None:
        cuda = torch.cuda
        monkeypatch.setattr(cuda, "is_available", lambda: True)
        monkeypatch.setattr(cuda, "synchronize", lambda: None)
        monkeypatch.setattr(cuda, "reset_peak_memory_stats", self.reset)
        monkeypatch.setattr(cuda, "memory_reserved", lambda: self.reserved)
        monkeypatch.setattr(cuda, "max_memory_reserved", lambda: self.max_reserved)
        monkeypatch.setattr(cuda, "mem_get_info", lambda: (self.total - self.context - self.reserved + self.asleep,
                                                           self.total))
        monkeypatch.setattr(cuda, "get_rng_state_all", lambda: None)
        monkeypatch.setattr(cuda, "set_rng_state_all", lambda state: None)
        monkeypatch.setattr(env, "has_gpu", lambda: True)
        monkeypatch.setattr(env, "gpu_name", lambda: name)

    def reset(self) -> None:
        self.max_reserved = self.reserved
        self.events.append("reset")


def plan_for(gpu: str, gib: float, **model):
    cfg = config(QWEN, model={"gpu_memory_utilization": 0.6, **model})
    return make_plan(cfg, read_shape(cfg.model.name), gpu, gib)


def probed(total: float, peak: float, device: str) -> ProbeResult:
    return ProbeResult(prompts=4, prompt_tokens=200, completion_tokens=512, peak_gib=peak, optimizer_gib=0.0,
                       device=device, gpu_gib=total)


def test_the_verdict_is_about_the_gpu_the_step_ran_on_not_the_one_gpu_names(tmp_path, capsys):
    """--gpu T4 on an A100: the A100's vLLM share (0.6 x 79.2 GiB) once counted against a T4's 14.7 GiB and stopped a
    run that fits; --gpu H100 on a T4 once said "fits" to a step the T4 cannot hold."""
    run_file = tmp_path / "run.yaml"
    run_file.write_text("seed: 1\n")
    on_a100 = probed(79.2, 0.6 * 79.2 + 3.0, "NVIDIA A100-SXM4-80GB")
    report(on_a100, plan_for("T4", 14.7), run_file)
    said = capsys.readouterr().out
    assert "fits NVIDIA A100-SXM4-80GB" in said and "plan " not in said.splitlines()[0]
    assert "--gpu T4 (14.7 GiB) is not the GPU here" in said and "3.0 GiB beside vLLM's share here" in said
    assert "(8.8 GiB) that would fit it" in said
    recorded = yaml.safe_load(run_file.read_text())["memory_probe"]
    assert recorded["fits"] is True and recorded["gpu_gib"] == 79.2 and "estimated_peak_gib" not in recorded
    assert recorded["named_gpu"]["gpu"] == "T4"

    with pytest.raises(KitError, match=r"probe 15.0 GiB of 14.7 .*does not fit Tesla T4"):
        report(probed(14.7, 15.0, "Tesla T4"), plan_for("H100", 79.2), run_file)

    report(probed(14.7, 10.0, "Tesla T4"), plan_for("T4", 14.7), run_file)  # the same GPU: the plan's figure beside
    assert "plan " in capsys.readouterr().out
    assert "estimated_peak_gib" in yaml.safe_load(run_file.read_text())["memory_probe"]


def test_without_vllm_the_whole_step_is_what_another_gpu_would_hold(tmp_path, capsys):
    run_file = tmp_path / "run.yaml"
    run_file.write_text("seed: 1\n")
    report(probed(39.4, 16.0, "NVIDIA A100-SXM4-40GB"), plan_for("T4", 14.7, fast_inference=False), run_file)
    assert "this step's 16.0 GiB would not fit it (no vLLM" in capsys.readouterr().out


class Scorer:
    """A reward model's scorer: its largest pass holds `gib` on the fake GPU while it runs."""

    def __init__(self, gpu: FakeGpu, gib: float):
        self.gpu, self.gib, self.passes = gpu, gib, 0

    def largest_pass(self):
        self.passes += 1
        self.gpu.hold(self.gib)
        self.gpu.hold(-self.gib)


def reward_with(scorer):
    def preference(prompts, completions, **kwargs):
        return [0.0] * len(completions)

    preference.scorer = scorer
    return SimpleNamespace(fn=preference)  # as the kit's CheckedReward wraps it


def fake_trainer(gpu: FakeGpu, rewards, vllm_pool_gib: float = 0.0, standby: bool = False):
    """A trainer whose generation wakes a vLLM pool of `vllm_pool_gib` (asleep afterwards in standby) and whose
    backward pass holds 3 GiB at its peak."""
    from datasets import Dataset

    model = torch.nn.Linear(4, 4)
    engine = SimpleNamespace(sleeping=False)
    engine.is_sleeping = lambda: engine.sleeping

    def generate(rows):
        gpu.hold(1.0)  # the batch's tensors, kept for the loss
        gpu.hold(2.0)  # the generation's working set
        gpu.hold(-2.0)
        if standby:
            gpu.asleep, engine.sleeping = int(vllm_pool_gib * GIB), True
        n = len(rows)
        return {"prompt_mask": torch.ones(n, 5), "completion_mask": torch.ones(n, 7)}

    def compute_loss(model_, step):
        gpu.hold(3.0)
        gpu.hold(-3.0)
        return model(torch.ones(1, 4)).sum()

    gpu.hold(vllm_pool_gib)  # vLLM's share, reserved when it started
    trainer = SimpleNamespace(
        train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}] * 4),
        processing_class=None, num_generations=2, max_completion_length=7, mask_truncated_completions=False,
        args=SimpleNamespace(generation_batch_size=4, steps_per_generation=1, gradient_accumulation_steps=1),
        accelerator=SimpleNamespace(num_processes=1, backward=lambda loss: loss.backward()),
        _metrics={"train": {}}, _logs={}, state=SimpleNamespace(num_input_tokens_seen=0), _buffered_inputs=None,
        model=model, reward_funcs=rewards, _generate_and_score_completions=generate, compute_loss=compute_loss,
        compute_loss_context_manager=lambda: __import__("contextlib").nullcontext(),
        llm=SimpleNamespace(llm_engine=engine))
    return trainer


@pytest.fixture
def lengths(monkeypatch):
    monkeypatch.setattr("kit.data.rows.prompt_lengths", lambda dataset, tokenizer: [3] * len(dataset))


def test_every_reward_model_is_loaded_and_run_at_its_largest_shapes_in_its_own_phase(monkeypatch, lengths):
    gpu = FakeGpu(14.7)
    gpu.install(monkeypatch, "Tesla T4")
    scorer = Scorer(gpu, 6.0)  # a reward model's scoring pass: more than the step's other phases
    trainer = fake_trainer(gpu, [reward_with(scorer), reward_with(scorer), SimpleNamespace(fn=len)])
    result = run_probe(trainer, "adamw_torch")
    assert scorer.passes == 1, "each reward model once"
    assert result.phases_gib["scoring"] == pytest.approx(1.0 + 6.0 + 0.5)  # the batch, the pass, the context
    assert result.phases_gib["generation"] == pytest.approx(3.5) and result.phases_gib["training"] == 4.5
    assert result.peak_gib == pytest.approx(7.5) and result.gpu_gib == 14.7


def test_the_peak_counters_are_the_real_steps_after_the_probe(monkeypatch, lengths):
    """run.yaml's memory.measured_max_* (kit.plan.record) read the counters after step 2: not the probe's peak."""
    gpu = FakeGpu(14.7)
    gpu.install(monkeypatch, "Tesla T4")
    trainer = fake_trainer(gpu, [SimpleNamespace(fn=len)])
    result = run_probe(trainer, "adamw_torch")
    assert result.peak_gib == pytest.approx(4.5)
    assert gpu.events[-1] == "reset" and gpu.max_reserved == gpu.reserved


def test_in_standby_vllms_released_kv_cache_is_left_out_of_scoring_and_training(monkeypatch, lengths):
    """vLLM's sleep pool is a torch MemPool: asleep, torch still counts its 9 GiB as reserved, though the driver has
    them back. Generation counts them (vLLM is awake then); the phases after it do not."""
    gpu = FakeGpu(14.7)
    gpu.install(monkeypatch, "Tesla T4")
    cumem = ModuleType("vllm.device_allocator.cumem")
    pool = {1: SimpleNamespace(tag="kv_cache", handle=(0, 9 * GIB)), 2: SimpleNamespace(tag="weights", handle=(0, GIB))}
    cumem.CuMemAllocator = SimpleNamespace(get_instance=lambda: SimpleNamespace(pointer_to_data=pool))
    monkeypatch.setitem(sys.modules, "vllm.device_allocator.cumem", cumem)
    trainer = fake_trainer(gpu, [reward_with(Scorer(gpu, 1.0))], vllm_pool_gib=9.0, standby=True)
    result = run_probe(trainer, "adamw_torch")
    assert result.phases_gib["generation"] == pytest.approx(9 + 3 + 0.5)  # the pool awake, and the generation's
    assert result.phases_gib["scoring"] == pytest.approx(1 + 1 + 0.5)  # the batch and the pass, pool released
    assert result.phases_gib["training"] == pytest.approx(1 + 3 + 0.5)
    assert device_memory.vllm_asleep_bytes(trainer) == 9 * GIB


def test_standby_is_said_in_run_yaml_where_it_applies(tmp_path, capsys):
    run_file = tmp_path / "run.yaml"
    run_file.write_text("seed: 1\n")
    report(probed(14.7, 12.0, "Tesla T4"), plan_for("T4", 14.7, vllm_standby=True), run_file)
    assert "KV cache is counted while it generates" in yaml.safe_load(run_file.read_text())["memory_probe"][
        "vllm_standby"]
    report(probed(14.7, 12.0, "Tesla T4"), plan_for("T4", 14.7), run_file)
    assert "vllm_standby" not in yaml.safe_load(run_file.read_text())["memory_probe"]


def test_a_reward_models_largest_pass_is_its_batch_at_full_length(monkeypatch):
    """The probe's scoring phase on a real (tiny) reward model: loaded, and one batch of batch_size replies of
    max_length tokens through it."""
    from kit.rewards import reward_model
    from kit.rewards.reward_models.reward import Scorer
    from kit.rewards.traits import unwrapped

    scorer = unwrapped(reward_model("kit:tiny-reward", batch_size=3, max_length=40)).scorer
    shapes, forward = [], Scorer.forward
    monkeypatch.setattr(Scorer, "forward", lambda self, loaded, ids, mask: shapes.append(tuple(ids.shape)) or
                        forward(self, loaded, ids, mask))
    trainer = SimpleNamespace(reward_funcs=[SimpleNamespace(fn=unwrapped(reward_model("kit:tiny-reward")))])
    assert probe.reward_model_scorers(trainer)
    scorer.largest_pass()
    assert scorer.loaded is not None and shapes == [(3, 40)]


def test_no_engine_or_one_without_sleep_mode_is_never_asleep():
    assert not device_memory.engine_asleep(None)
    assert not device_memory.engine_asleep(SimpleNamespace(llm_engine=SimpleNamespace()))  # no sleep mode
