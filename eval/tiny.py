"""Tiny models built locally, for smoke tests and benchmarks of the evaluation pipeline without
any download. Both use a byte-level BPE tokenizer trained on a few sentences (Cyrillic and
Chinese included) and random weights, are saved to a folder and are loaded back through
``from_pretrained(path)`` exactly as real models are. Their answers are noise, by design.

- :func:`build_tiny_llama`: a 2-layer Llama causal LM (text tasks).
- :func:`build_tiny_llava`: a LLaVA-style vision-language model (a 2-layer CLIP vision tower
  on 32x32 images, a projector and the same 2-layer Llama), with a ``LlavaProcessor`` and a
  chat template that places one ``<image>`` per image (FoodieQA's image tasks).
- :func:`build_tiny_sd`: a Stable Diffusion pipeline (UNet, VAE, CLIP text encoder, a locally
  made CLIP tokenizer, DDIM scheduler) saved with ``save_pretrained``; 64x64 images in well
  under a second on CPU.
- :func:`build_tiny_clip`: a CLIP model (image and text towers) with its processor.
- :func:`build_tiny_dinov2`: a DINOv2 backbone ([CLS] embeddings) with its image processor.
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
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS * 4, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def _llama_config(tokenizer: Any, *, head_dim: int = 8) -> Any:
    """A 2-layer Llama: head size 8 by default; 64 for vLLM's CPU attention, which takes head
    sizes 32, 64, 80, ... only (2 heads, 1 KV head: hidden 128)."""
    from transformers import LlamaConfig

    heads, kv_heads = (4, 2) if head_dim == 8 else (2, 1)
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=heads * head_dim,
        intermediate_size=2 * heads * head_dim,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def build_tiny_llama(path: Path, *, seed: int = 0, head_dim: int = 8) -> Path:
    """Create a tiny causal LM folder at ``path`` (tokenizer + config + weights) and return it;
    ``head_dim=64`` makes one vLLM's CPU build can run."""
    import torch
    from transformers import LlamaForCausalLM

    tokenizer = _tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    LlamaForCausalLM(_llama_config(tokenizer, head_dim=head_dim)).save_pretrained(path)
    return path


def _image_processor() -> Any:
    """CLIP preprocessing at :data:`IMAGE_SIZE`; the Pillow variant where transformers has one
    (it needs no torchvision), else the default class."""
    processor_class: type
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


CLIP_MAX_LENGTH = 77


def _bytes_alphabet() -> list[str]:
    """The 256 printable stand-ins of byte-level BPE (one per byte value), in byte order."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1)]
    kept += list(range(ord("\u00ae"), ord("\u00ff") + 1))
    out, extra = {}, 0
    for byte in range(256):
        if byte in kept:
            out[byte] = chr(byte)
        else:
            out[byte] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


def clip_tokenizer() -> Any:
    """A CLIP tokenizer made locally: every byte as a token (word-final forms too) and no
    merges, so any text (Cyrillic, accents, Chinese) tokenizes without an unknown token."""
    from transformers import CLIPTokenizer

    vocab: dict[str, int] = {}
    alphabet = _bytes_alphabet()
    for token in [*alphabet, *(c + "</w>" for c in alphabet), "<|startoftext|>", "<|endoftext|>"]:
        vocab.setdefault(token, len(vocab))
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=CLIP_MAX_LENGTH)


def _clip_text_config(tokenizer: Any) -> dict[str, Any]:
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": CLIP_MAX_LENGTH,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }


def _fresh_folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_tiny_sd(path: Path, *, seed: int = 0) -> Path:
    """Create a tiny Stable Diffusion pipeline folder at ``path`` (``model_index.json`` with
    unet, vae, text_encoder, tokenizer, scheduler; no safety checker) and return it. It makes
    64x64 images (latents 8x8 through a 2-block VAE)."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    tokenizer = clip_tokenizer()
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64),
        layers_per_block=2,
        sample_size=32,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        norm_num_groups=32,
    )
    vae = AutoencoderKL(
        block_out_channels=(32, 64),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        norm_num_groups=32,
    )
    text_encoder = CLIPTextModel(CLIPTextConfig(**_clip_text_config(tokenizer)))
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipeline = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    # diffusers' lazy-import typing of the class omits DiffusionPipeline's methods
    pipeline.save_pretrained(_fresh_folder(path))  # type: ignore[attr-defined]
    return path


def build_tiny_clip(path: Path, *, seed: int = 0) -> Path:
    """Create a tiny CLIP folder (model with image and text towers, 16-d projections, and a
    ``CLIPProcessor``: 32x32 image preprocessing + the local tokenizer) and return it."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    tokenizer = clip_tokenizer()
    config = CLIPConfig(
        text_config=_clip_text_config(tokenizer),
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "image_size": IMAGE_SIZE,
            "patch_size": PATCH_SIZE,
        },
        projection_dim=16,
    )
    torch.manual_seed(seed)
    model = CLIPModel(config)
    processor = CLIPProcessor(image_processor=_image_processor(), tokenizer=tokenizer)
    _fresh_folder(path)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


DINO_IMAGE_SIZE = 56


def build_tiny_dinov2(path: Path, *, seed: int = 0) -> Path:
    """Create a tiny DINOv2 folder (2 layers, 32-d, 56x56 images in 14-px patches, and its
    image processor) and return it; its [CLS] embedding is ``last_hidden_state[:, 0]``."""
    import torch
    from transformers import Dinov2Config, Dinov2Model

    processor_class: type
    try:
        from transformers import BitImageProcessorPil as processor_class
    except ImportError:  # older transformers: one class, Pillow-based
        from transformers import BitImageProcessor as processor_class
    config = Dinov2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,  # (its MLP is mlp_ratio x hidden_size: DINOv2 takes no intermediate_size)
        image_size=DINO_IMAGE_SIZE,
        patch_size=14,
    )
    torch.manual_seed(seed)
    model = Dinov2Model(config)
    processor = processor_class(
        size={"shortest_edge": DINO_IMAGE_SIZE},
        crop_size={"height": DINO_IMAGE_SIZE, "width": DINO_IMAGE_SIZE},
        do_center_crop=True,
    )
    _fresh_folder(path)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path
