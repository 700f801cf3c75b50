"""Tiny models built locally, for smoke tests and benchmarks of the evaluation pipeline without
any download. Both use a byte-level BPE tokenizer trained on a few sentences (Cyrillic and
Chinese included) and random weights, are saved to a folder and are loaded back through
``from_pretrained(path)`` exactly as real models are. Their answers are noise, by design.

- :func:`build_tiny_llama`: a 2-layer Llama causal LM (text tasks).
- :func:`build_tiny_llava`: a LLaVA-style vision-language model (a 2-layer CLIP vision tower
  on 32x32 images, a projector and the same 2-layer Llama), with a ``LlavaProcessor`` and a
  chat template that places one ``<image>`` per image (FoodieQA's image tasks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPUS = [
    "Из какой страны или каких стран происходит блюдо борщ?",
    "Блюдо происходит из Украины, России, Беларуси и Молдовы.",
    "З якої країни походить страва вареники? Страва з України та Польщі.",
    "Грузия, Армения, Азербайджан, Казахстан, Узбекистан, Таджикистан, Киргизия.",
    "This dish comes from Ukraine, Russia, Georgia and Lithuania.",
    "Плов, хачапури, драники, пельмени, сырники, цепеліни, мамалига.",
    "根据图片回答问题。这道菜是哪个地区的？答案为：图 A B C D",
    "Which image shows the dish from Sichuan? The answer is Option (A).",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
IMAGE_TOKEN = "<image>"
# Content may be a string or a list of typed parts; each image part becomes one <image>.
VISION_CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: "
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for part in m['content'] %}"
    "{% if part['type'] == 'image' %}" + IMAGE_TOKEN + "{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
IMAGE_SIZE = 32
PATCH_SIZE = 8


def _tokenizer(extra_special: tuple[str, ...] = ()) -> Any:
    """A byte-level BPE tokenizer trained on :data:`CORPUS`, as a fast transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<s>", "</s>", "<pad>", *extra_special],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def _llama_config(tokenizer: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def build_tiny_llama(path: Path, *, seed: int = 0) -> Path:
    """Create a tiny causal LM folder at ``path`` (tokenizer + config + weights) and return it."""
    import torch
    from transformers import LlamaForCausalLM

    tokenizer = _tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    LlamaForCausalLM(_llama_config(tokenizer)).save_pretrained(path)
    return path


def _image_processor() -> Any:
    """CLIP preprocessing at :data:`IMAGE_SIZE`; the Pillow variant where transformers has one
    (it needs no torchvision), else the default class."""
    try:
        from transformers import CLIPImageProcessorPil as processor_class
    except ImportError:  # older transformers: one class, Pillow-based
        from transformers import CLIPImageProcessor as processor_class
    return processor_class(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )


def build_tiny_llava(path: Path, *, seed: int = 0) -> Path:
    """Create a tiny LLaVA-style vision-language model folder at ``path`` (processor with image
    processor, tokenizer and chat template + config + weights) and return it. Each image costs
    ``(IMAGE_SIZE / PATCH_SIZE) ** 2`` = 16 tokens."""
    import torch
    from transformers import CLIPVisionConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tokenizer = _tokenizer((IMAGE_TOKEN,))
    processor = LlavaProcessor(
        image_processor=_image_processor(),
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",  # drop CLS: 16 patch tokens per image
        num_additional_image_tokens=1,
        chat_template=VISION_CHAT_TEMPLATE,
        image_token=IMAGE_TOKEN,
    )
    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=32,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=_llama_config(tokenizer),
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    path.mkdir(parents=True, exist_ok=True)
    processor.save_pretrained(path)
    torch.manual_seed(seed)
    LlavaForConditionalGeneration(config).save_pretrained(path)
    return path
