"""Generation for prompts that show pictures: the held-out scores and `kit chat --image` of a vision model.

    texts = generate_with_images(model, processor, prompts, images, Sampling(max_new_tokens=12))

Each prompt's first user turn gets its pictures as TRL puts them there in training (image parts before the
text, trl.data_utils.prepare_multimodal_messages), the processor renders and tokenizes it with the pictures'
tokens, and transformers' generate continues it greedily or by sampling, in batches padded on the left. The
image placeholder tokens are never generated (kit.models.vision_models.IMAGE_PLACEHOLDERS). vLLM is not used for
pictures yet: on a GPU too, this is transformers' generate.
"""

from __future__ import annotations

from tqdm.auto import tqdm

from kit.models.generate import Sampling, until_eos
from kit.models.vision_models import placeholder_ids, text_tokenizer


def with_image_parts(prompt: list[dict], images: list) -> list[dict]:
    """The prompt as TRL's GRPOTrainer shows it to a vision-language model: every turn's text as a text part, and
    the pictures as image parts before the text of the first user turn (TRL's own prepare_multimodal_messages), so
    evaluation renders what training rendered."""
    from trl.data_utils import prepare_multimodal_messages

    return prepare_multimodal_messages(prompt, list(images))


def generate_with_images(model, processor, prompts: list[list[dict]], images: list[list], sampling: Sampling,
                         batch_size: int = 32, progress: bool = True) -> list[str]:
    import torch

    tokenizer = text_tokenizer(processor)
    texts = [processor.apply_chat_template(with_image_parts(p, i), tokenize=False, add_generation_prompt=True,
                                           **sampling.chat_template_kwargs) for p, i in zip(prompts, images)]
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    torch.manual_seed(sampling.seed)
    was_training = model.training
    model.eval()
    banned = [[i] for i in placeholder_ids(processor)]
    results: list[str] = []
    try:
        batches = range(0, len(texts), batch_size)
        for start in tqdm(batches, desc="generate", unit="batch", disable=not progress or len(batches) < 2):
            part = slice(start, start + batch_size)
            inputs = processor(text=texts[part], images=[i or None for i in images[part]], padding=True,
                               return_tensors="pt").to(model.device)
            with torch.no_grad():
                out = model.generate(**inputs, max_new_tokens=sampling.max_new_tokens, use_cache=True,
                                     pad_token_id=tokenizer.pad_token_id, min_new_tokens=sampling.min_new_tokens,
                                     do_sample=sampling.temperature > 0, bad_words_ids=banned or None,
                                     **({"temperature": sampling.temperature, "top_p": sampling.top_p}
                                        if sampling.temperature > 0 else {}))
            new = [until_eos(row, tokenizer) for row in out[:, inputs["input_ids"].shape[1]:].tolist()]
            results += tokenizer.batch_decode(new, skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
        model.train(was_training)
    return results
