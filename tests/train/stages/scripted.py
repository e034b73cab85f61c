"""The tiny model never writes a tool call by itself: the first turn of a step, scripted for the trainer tests."""


def script_first_turn(model, tokenizer, replies: list[str], every_call: bool = False):
    """model.generate, with its first call answered by replies[i % len(replies)] for row i, padded after EOS;
    every later call (the turns after the tools' results) is the model's own, or scripted too (every_call)."""
    import torch

    real, calls = model.generate, []
    encoded = [tokenizer(r, add_special_tokens=False).input_ids + [tokenizer.eos_token_id] for r in replies]

    def generate(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1 and not every_call:
            return real(*args, **kwargs)
        prompts = kwargs["input_ids"]
        rows = [encoded[i % len(encoded)] for i in range(prompts.shape[0])]
        width = max(map(len, rows))
        padded = [ids + [tokenizer.pad_token_id] * (width - len(ids)) for ids in rows]
        return torch.cat([prompts, torch.tensor(padded)], dim=1)

    model.generate = generate
