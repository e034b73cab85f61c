"""`grpo.extra` and `sft.extra`: any other field of TRL's config class, passed through, checked first."""

from __future__ import annotations

from kit.errors import KitError


def checked_extra(section: str, extra: dict, trl_config: type, section_fields: set[str],
                  kit_sets: dict[str, str]) -> dict:
    """`extra`, refused when a key is not a field of `trl_config`, has a setting of its own, or is set by the kit.

    Without this a typo reaches TRL as an unexpected keyword, and a key the kit passes too (`seed`) as
    "got multiple values for keyword argument": tracebacks that do not say which setting to change.
    `kit_sets` maps each key the kit sets to where the user sets it instead.
    """
    unknown = sorted(set(extra) - set(trl_config.__dataclass_fields__))
    if unknown:
        name = trl_config.__name__
        article = "an" if name[0] in "AEFHILMNORSX" else "a"  # read letter by letter: an SFTConfig, a GRPOConfig
        raise KitError(f"{section}.extra.{unknown[0]}: not {article} {name} setting in this TRL version")
    for key in sorted(extra):
        if key in section_fields:
            raise KitError(f"{section}.extra.{key}: set it as {section}.{key}, not in extra")
        if key in kit_sets:
            raise KitError(f"{section}.extra.{key}: the kit sets it from {kit_sets[key]}; change that instead")
    return extra
