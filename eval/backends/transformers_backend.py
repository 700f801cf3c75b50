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
    request_seed,
)
from culturebench.eval.backends.options import BackendOption

Opt = BackendOption
OPTIONS = (
    Opt(
        "dtype", "str", "auto", "Weights dtype: auto, bfloat16, float16, float32.", identity=True,
        choices=("auto", "bfloat16", "float16", "float32"),
    ),
    Opt("device_map", "str", None, "auto spreads the model over every visible GPU (and CPU if needed)."),
    Opt(
        "max_memory", "json", None, 'With device_map: memory per device, e.g. {"0": "70GiB"}.',
        requires="device_map",
    ),
    Opt("trust_remote_code", "bool", False, "Run the model repo's own code (Qwen-VL, Yi-VL, Phi-3-vision).",
        identity=True),
    Opt("attn_implementation", "str", None, "eager, sdpa or flash_attention_2.", identity=True),
    Opt("batch_size", "int", 8, "Prompts per generate() call (sorted by length within a chunk).", minimum=1),
    Opt("gguf_file", "str", None, "A GGUF file in the model folder or repo (dequantised on load).",
        identity=True),
    Opt("device", "str", None, "cuda, cpu, ... (default: cuda when available); ignored with device_map."),
)  # fmt: skip
CHUNKS_PER_CALL = 16  # the runner hands over batch_size x 16 prompts; they are batched by length


class TransformersBackend(Backend):
    """Runs a Hugging Face model with ``generate``; loads it through ``from_pretrained``."""

    name = "transformers"
    SUMMARY = "Hugging Face transformers on CPU or GPU: text and vision-language models"
    REQUIRES = ("torch", "transformers")
    EXTRA = "eval"
    SHARED_FLAGS = ("batch_size",)
    SELF_DEPLOYED = True
    OPTIONS = OPTIONS

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        sampling: SamplingParams | None = None,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str = "auto",
        device_map: str | None = None,
        max_memory: dict[str, Any] | None = None,
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
        gguf_file: str | None = None,
    ) -> None:
        super().__init__(model, revision=revision, sampling=sampling)
        import torch

        self.batch_size = batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = dtype
        self.device_map = device_map
        self.max_memory = max_memory
        self.trust_remote_code = trust_remote_code
        self.attn_implementation = attn_implementation
        self.gguf_file = gguf_file
        self._text: tuple[Any, Any] | None = None
        self._vision: tuple[Any, Any] | None = None
        self._is_vlm: bool | None = None

    def chunk_size(self, batch_size: int) -> int:
        return self.batch_size * CHUNKS_PER_CALL

    def _load_kwargs(self) -> dict[str, Any]:
        """What every ``from_pretrained`` of the model gets (tokenizer/processor: the first three)."""
        out: dict[str, Any] = {"revision": self.revision, "trust_remote_code": self.trust_remote_code}
        if self.gguf_file:
            out["gguf_file"] = self.gguf_file
        return out

    def _model_kwargs(self) -> dict[str, Any]:
        out = {**self._load_kwargs(), "dtype": self.dtype}
        if self.device_map:
            out["device_map"] = self.device_map
            if self.max_memory:
                out["max_memory"] = self.max_memory
        if self.attn_implementation:
            out["attn_implementation"] = self.attn_implementation
        return out

    def _place(self, model: Any) -> Any:
        """The model on its device (``device_map`` placed it already)."""
        return (model if self.device_map else model.to(self.device)).eval()

    @property
    def input_device(self) -> Any:
        """Where inputs go: the first layer's device under ``device_map``."""
        loaded = (self._text or self._vision or (None, None))[1]
        return loaded.device if self.device_map and loaded is not None else self.device

    def provenance(self) -> dict[str, Any]:
        """With remote code: the commit of the Hub repo that supplied it (a local folder is
        pinned by its weights' sha256 already)."""
        if not self.trust_remote_code or Path(self.model).exists():
            return {}
        return {"remote_code_commit": remote_code_commit(self.model, self.revision)}

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

            config = AutoConfig.from_pretrained(self.model, **self._load_kwargs())
            self._is_vlm = getattr(config, "vision_config", None) is not None
        return self._is_vlm

    def _text_model(self) -> tuple[Any, Any]:
        """(tokenizer, model), loaded once."""
        if self._text is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.model, **self._load_kwargs())
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model = AutoModelForCausalLM.from_pretrained(self.model, **self._model_kwargs())
            self._text = (tokenizer, self._place(model))
        return self._text

    def _vision_model(self) -> tuple[Any, Any]:
        """(processor, model), loaded once."""
        if self._vision is None:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            processor = AutoProcessor.from_pretrained(self.model, **self._load_kwargs())
            if getattr(processor, "tokenizer", None) is not None:
                processor.tokenizer.padding_side = "left"
            model = AutoModelForImageTextToText.from_pretrained(self.model, **self._model_kwargs())
            self._vision = (processor, self._place(model))
        return self._vision

    # ------------------------------------------------------------------ prompts
    @staticmethod
    def text_prompt(tokenizer: Any, request: Request) -> str:
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

    def _generate_kwargs(self, pad_token_id: int | None, batch: Sequence[Request]) -> dict[str, Any]:
        """Greedy decoding, or sampling at the temperature with one random stream per request
        (:class:`RequestSampler`): a request's answer does not depend on which others share its
        batch, so a resumed or sharded run samples exactly what one process samples."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.sampling.max_new_tokens,
            "pad_token_id": pad_token_id,
            "do_sample": False,  # sampled runs pick the argmax of Gumbel-perturbed logits
        }
        if not self.sampling.greedy:
            from transformers import LogitsProcessorList

            sampler = RequestSampler(
                self.sampling.temperature, [request_seed(self.sampling.seed, r.id) for r in batch]
            )
            kwargs["logits_processor"] = LogitsProcessorList([sampler])
        return kwargs

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[Request]) -> list[str]:
        import torch

        # batches of similar length pad less; answers go back in request order
        order = sorted(range(len(requests)), key=lambda i: (len(requests[i].prompt), i))
        answers: dict[int, str] = {}
        for start in range(0, len(order), self.batch_size):
            indices = order[start : start + self.batch_size]
            batch = [requests[i] for i in indices]
            torch.manual_seed(self.sampling.seed)  # for anything else random in the model
            if any(r.images for r in batch) or self.is_vision_language():
                # one request at a time: how processors batch images differs between models
                texts = [self._generate_vision(r) for r in batch]
            else:
                texts = self._generate_text(batch)
            answers.update(zip(indices, texts, strict=True))
        return [answers[i] for i in range(len(requests))]

    def _generate_text(self, batch: Sequence[Request]) -> list[str]:
        import torch

        tokenizer, model = self._text_model()
        prompts = [self.text_prompt(tokenizer, r) for r in batch]
        enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            self.input_device
        )
        with torch.inference_mode():
            out = model.generate(**enc, **self._generate_kwargs(tokenizer.pad_token_id, batch))
        new = out[:, enc["input_ids"].shape[1] :]
        return [t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True)]

    def vision_inputs(self, request: Request) -> Any:
        """The processor's tensors for one request: the chat template with one image
        placeholder per image (expanded to the model's image tokens) and the pixel values."""
        processor, _ = self._vision_model()
        text = processor.apply_chat_template(self.vision_messages(request), add_generation_prompt=True)
        images = request.pil_images() or None
        return processor(text=[text], images=images, return_tensors="pt").to(self.input_device)

    def _generate_vision(self, request: Request) -> str:
        import torch

        processor, model = self._vision_model()
        inputs = self.vision_inputs(request)
        tokenizer = getattr(processor, "tokenizer", processor)
        with torch.inference_mode():
            out = model.generate(**inputs, **self._generate_kwargs(tokenizer.pad_token_id, [request]))
        return processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)[
            0
        ].strip()

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "torch", "transformers", "tokenizers"])


def remote_code_commit(model: str, revision: str | None) -> str | None:
    """The commit sha of Hub repo ``model`` at ``revision`` (None when it cannot be asked)."""
    try:
        from huggingface_hub import HfApi

        from culturebench.hub_http import hub_deadline

        return HfApi().model_info(model, revision=revision, timeout=hub_deadline()).sha
    except Exception:  # offline, gated: the run still records that remote code ran
        return None


class RequestSampler:
    """A logits processor that turns greedy decoding into sampling at ``temperature`` with a
    random stream per batch row: the argmax of ``logits / T + Gumbel noise`` is a draw from
    ``softmax(logits / T)`` (the Gumbel-max trick). Each row draws its noise from its own
    generator, seeded by :func:`request_seed`, one vector per step, so a request samples the
    same tokens in any batch. No top-k or top-p: plain temperature sampling, as vLLM and the
    OpenAI API do by default."""

    def __init__(self, temperature: float, seeds: Sequence[int]) -> None:
        import torch

        self.temperature = temperature
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        vocab = scores.shape[-1]
        uniform = torch.stack([torch.rand(vocab, generator=g, dtype=torch.float64) for g in self.generators])
        gumbel = -torch.log(-torch.log(uniform.clamp(1e-300, 1.0 - 1e-16)))
        return scores.float() / self.temperature + gumbel.to(device=scores.device, dtype=torch.float32)
