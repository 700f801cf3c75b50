"""transformers backend (CPU or GPU): chat templates for text models, processors for
vision-language models, left-padded batched greedy generation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from culturebench.eval.backends.base import (
    Backend,
    ModelLoadError,
    Request,
    SamplingParams,
    package_versions,
)


class TransformersBackend(Backend):
    """Runs a Hugging Face model with ``generate``; loads it through ``from_pretrained``."""

    name = "transformers"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        sampling: SamplingParams | None = None,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str = "auto",
    ) -> None:
        super().__init__(model, revision=revision, sampling=sampling)
        import torch

        self.batch_size = batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = dtype
        self._text: tuple[Any, Any] | None = None
        self._vision: tuple[Any, Any] | None = None
        self._is_vlm: bool | None = None

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        """Load the model (and its tokenizer or processor) now; a missing or broken model
        is a :class:`ModelLoadError` with a one-line reason."""
        if self.model.startswith(("/", "./", "../", "~")) and not Path(self.model).expanduser().exists():
            raise ModelLoadError(f"cannot load model {self.model!r}: no such folder")
        try:
            if self.is_vision_language():
                self._vision_model()
            else:
                self._text_model()
        except ModelLoadError:
            raise
        except Exception as exc:  # OSError (not found, offline), ValueError (not a model), ...
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise ModelLoadError(f"cannot load model {self.model!r}: {first}") from None

    def is_vision_language(self) -> bool:
        """Whether the model is a vision-language model (its config has a ``vision_config``).
        Such a model answers text-only requests through its processor too, so one model can
        run all of a benchmark's tasks (FoodieQA's text task on a VLM, as the paper does)."""
        if self._is_vlm is None:
            from transformers import AutoConfig

            config = AutoConfig.from_pretrained(self.model, revision=self.revision)
            self._is_vlm = getattr(config, "vision_config", None) is not None
        return self._is_vlm

    def _text_model(self):
        if self._text is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.model, revision=self.revision)
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model = AutoModelForCausalLM.from_pretrained(self.model, revision=self.revision, dtype=self.dtype)
            self._text = (tokenizer, model.to(self.device).eval())
        return self._text

    def _vision_model(self):
        if self._vision is None:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            processor = AutoProcessor.from_pretrained(self.model, revision=self.revision)
            if getattr(processor, "tokenizer", None) is not None:
                processor.tokenizer.padding_side = "left"
            model = AutoModelForImageTextToText.from_pretrained(
                self.model, revision=self.revision, dtype=self.dtype
            )
            self._vision = (processor, model.to(self.device).eval())
        return self._vision

    # ------------------------------------------------------------------ prompts
    @staticmethod
    def text_prompt(tokenizer, request: Request) -> str:
        """The prompt string: the model's chat template when it has one, else the raw text."""
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(
                [{"role": "user", "content": request.prompt}], add_generation_prompt=True, tokenize=False
            )
        return request.prompt

    @staticmethod
    def vision_messages(request: Request) -> list[dict[str, Any]]:
        """Processor chat messages: one image placeholder per image, then the text."""
        content: list[dict[str, Any]] = [{"type": "image"} for _ in request.images]
        content.append({"type": "text", "text": request.prompt})
        return [{"role": "user", "content": content}]

    def _generate_kwargs(self, pad_token_id: int | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.sampling.max_new_tokens,
            "pad_token_id": pad_token_id,
        }
        if self.sampling.greedy:
            kwargs["do_sample"] = False
        else:
            kwargs.update(do_sample=True, temperature=self.sampling.temperature)
        return kwargs

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[Request]) -> list[str]:
        import torch

        outputs: list[str] = []
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            torch.manual_seed(self.sampling.seed)
            if any(r.images for r in batch) or self.is_vision_language():
                # one request at a time: how processors batch images differs between models
                outputs += [self._generate_vision(r) for r in batch]
            else:
                outputs += self._generate_text(batch)
        return outputs

    def _generate_text(self, batch: Sequence[Request]) -> list[str]:
        import torch

        tokenizer, model = self._text_model()
        prompts = [self.text_prompt(tokenizer, r) for r in batch]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        with torch.inference_mode():
            out = model.generate(**enc, **self._generate_kwargs(tokenizer.pad_token_id))
        new = out[:, enc["input_ids"].shape[1] :]
        return [t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True)]

    def vision_inputs(self, request: Request) -> Any:
        """The processor's tensors for one request: the chat template with one image
        placeholder per image (expanded to the model's image tokens) and the pixel values."""
        processor, _ = self._vision_model()
        text = processor.apply_chat_template(self.vision_messages(request), add_generation_prompt=True)
        images = request.pil_images() or None
        return processor(text=[text], images=images, return_tensors="pt").to(self.device)

    def _generate_vision(self, request: Request) -> str:
        import torch

        processor, model = self._vision_model()
        inputs = self.vision_inputs(request)
        tokenizer = getattr(processor, "tokenizer", processor)
        with torch.inference_mode():
            out = model.generate(**inputs, **self._generate_kwargs(tokenizer.pad_token_id))
        return processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)[
            0
        ].strip()

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "torch", "transformers", "tokenizers"])
