"""A tiny causal LM built locally, for smoke tests and benchmarks of the evaluation pipeline
without any download: a byte-level BPE tokenizer trained on a few sentences (Cyrillic
included) and a 2-layer Llama with random weights, saved to a folder and loaded back through
``from_pretrained(path)`` exactly as real models are. Its answers are noise, by design."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "Из какой страны или каких стран происходит блюдо борщ?",
    "Блюдо происходит из Украины, России, Беларуси и Молдовы.",
    "З якої країни походить страва вареники? Страва з України та Польщі.",
    "Грузия, Армения, Азербайджан, Казахстан, Узбекистан, Таджикистан, Киргизия.",
    "This dish comes from Ukraine, Russia, Georgia and Lithuania.",
    "Плов, хачапури, драники, пельмени, сырники, цепеліни, мамалига.",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tiny_llama(path: Path, *, seed: int = 0) -> Path:
    """Create the model folder at ``path`` (tokenizer + config + weights) and return it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    path.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(path)
    return path
