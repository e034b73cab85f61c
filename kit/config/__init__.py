"""The run configuration: one typed schema for the YAML file, the CLI and the recipe defaults.

Layers, later wins: the schema's defaults < the recipe's DEFAULTS < the profile (smoke / full)
< the YAML file < CLI flags. Each section is read by one module: `model` by kit.models.loader,
`data` by kit.data, `grpo` and `sft` by their stages in kit.train.stages, `save` by kit.export.save.

    python -m kit train gsm8k --config my.yaml grpo.learning_rate=1e-5 model.lora_rank=32

Where each part lives: the sections, each setting with its help, in `sections`; RunConfig in `schema`; the
rules that span fields in `rules`; the smoke and CPU-full profiles in `profiles`; the merging of the layers in
`layers`; and the settings reference (docs/settings.md, `kit train --help`) rendered from them in `reference`,
which is not imported here so that `python -m kit.config.reference` runs it cleanly.
"""

from kit.config.layers import (
    build_config,
    deep_merge,
    format_validation_error,
    parse_overrides,
    read_yaml,
    resolve_config,
)
from kit.config.profiles import (
    CPU_FULL_PROFILE,
    FULL,
    SAMPLE_DATA,
    SMOKE,
    SMOKE_PROFILE,
    TINY_MODEL,
    TINY_PREFIX,
    resolve_profile,
    smoke_profile,
)
from kit.config.rules import SHARDED, cross_field_problems, multi_process_vllm_problems, nearest_valid_batch
from kit.config.schema import LAUNCHERS, PROFILES, SAVE_FORMATS, RunConfig, choices
from kit.config.sections import (
    DataConfig,
    EvalConfig,
    GRPOSection,
    LaunchConfig,
    ModelConfig,
    MonitorConfig,
    SaveConfig,
    Section,
    SFTSection,
)

__all__ = [
    "CPU_FULL_PROFILE", "FULL", "LAUNCHERS", "PROFILES", "SAMPLE_DATA", "SAVE_FORMATS", "SHARDED", "SMOKE",
    "SMOKE_PROFILE", "TINY_MODEL", "TINY_PREFIX", "DataConfig", "EvalConfig", "GRPOSection", "LaunchConfig",
    "ModelConfig", "MonitorConfig", "RunConfig", "SFTSection", "SaveConfig", "Section", "build_config", "choices",
    "cross_field_problems", "deep_merge", "format_validation_error", "multi_process_vllm_problems",
    "nearest_valid_batch", "parse_overrides", "read_yaml", "resolve_config", "resolve_profile", "smoke_profile",
]
