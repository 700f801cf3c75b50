"""The backend interface: batched generation for text and image+text prompts."""

from __future__ import annotations

import base64
import hashlib
import io
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar

from culturebench.errors import CultureBenchError
from culturebench.eval.backends.options import BackendOption


@dataclass(frozen=True)
class SamplingParams:
    """Decoding settings. Defaults follow the BORSCH paper: greedy, 200 new tokens."""

    max_new_tokens: int = 200
    temperature: float = 0.0
    seed: int = 0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def request_seed(seed: int, request_id: str) -> int:
    """The seed of one request's random stream when sampling: the run's seed and the request's
    id (31 bits, which every engine and API takes). Every backend seeds each request with it,
    so a request samples the same answer in any batch, shard or resume, and repeats of one
    prompt under different ids (CulinaryASH's judge repeats) sample independently."""
    from culturebench.hashing import sha256_text

    return int(sha256_text(f"{seed}:{request_id}")[:8], 16) & 0x7FFFFFFF


@dataclass(frozen=True)
class Request:
    """One prompt: a user message, optionally with images (encoded bytes, in order)."""

    id: str
    prompt: str
    images: tuple[bytes, ...] = field(default=(), repr=False)
    #: a JSON Schema (as JSON text) the answer must follow, where the engine can constrain its
    #: output (vLLM structured outputs, OpenAI ``response_format``); other engines ignore it
    json_schema: str | None = field(default=None, repr=False)

    def messages(self) -> list[dict[str, Any]]:
        """OpenAI-style chat messages; images as base64 data URLs before the text."""
        if not self.images:
            return [{"role": "user", "content": self.prompt}]
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": image_data_url(img)}} for img in self.images
        ]
        content.append({"type": "text", "text": self.prompt})
        return [{"role": "user", "content": content}]

    def pil_images(self) -> list[Any]:
        from PIL import Image

        return [Image.open(io.BytesIO(data)).convert("RGB") for data in self.images]


def image_data_url(data: bytes) -> str:
    """A ``data:`` URL for encoded image bytes (format sniffed with Pillow)."""
    from PIL import Image

    fmt = (Image.open(io.BytesIO(data)).format or "PNG").lower()
    return f"data:image/{fmt};base64,{base64.b64encode(data).decode('ascii')}"


def package_versions(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def weights_sha256(path: str | Path) -> str | None:
    """sha256 over a local model folder (relative paths + contents), or None if not local."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode())
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


class ModelLoadError(CultureBenchError):
    """The model cannot be loaded (no such local folder or Hub id, offline, not a model)."""


class ModelIdentity:
    """What every backend (text or image) reports about itself: name, model, revision, local
    weights sha256, generation settings and library versions; and an early ``load``."""

    name: str = "base"
    #: whether the engine constrains an answer to ``Request.json_schema`` (else it is ignored)
    CONSTRAINS_JSON: ClassVar[bool] = False
    model: str
    revision: str | None
    sampling: Any
    output_kind: str = "text"  # what it makes: "text", or "image" (text-to-image)
    # The backend's declaration, read without importing its engine by the registry, the
    # command line (help, which shared flags it gets, install hints) and the records:
    SUMMARY: ClassVar[str] = ""  # one line for `eval backends`
    REQUIRES: ClassVar[tuple[str, ...]] = ()  # the packages it imports to run
    EXTRA: ClassVar[str] = ""  # the culturebench extra that installs them
    INSTALL_HINT: ClassVar[str] = ""  # said after the pip line when they are missing
    # the engine flags it takes (of ENGINE_FLAGS: base_url, concurrency, batch_size, dtype,
    # quality); the others, given, are refused naming the backend
    SHARED_FLAGS: ClassVar[tuple[str, ...]] = ()
    SELF_DEPLOYED: ClassVar[bool] = False  # it loads the weights itself (open weights)
    # its answers are a function of (model identity, request, sampling): the response cache
    # (eval/response_cache.py) may keep and reuse them; False for a backend whose identity does
    # not pin its answers (a scripted or recorded stand-in)
    CACHEABLE: ClassVar[bool] = True
    # the options this backend takes from --model-arg (types, defaults, help, identity)
    OPTIONS: ClassVar[tuple[BackendOption, ...]] = ()
    # engine settings it refuses on purpose, with what to do instead (key -> one line)
    REFUSED: ClassVar[dict[str, str]] = {}
    # the options given explicitly (by --model-arg or a dedicated flag), as typed values
    model_args: dict[str, Any] = {}  # noqa: RUF012  (replaced per instance by make_backend)

    def chunk_size(self, batch_size: int) -> int:
        """How many requests the runner hands over at once (and checkpoints after): an engine
        that schedules its own batches (vLLM) takes thousands, a client keeps its concurrency
        busy; by default ``batch_size``."""
        return batch_size

    def bind_run_folder(self, folder: Path) -> None:
        """The folder of the run this backend generates for, given before it generates: a
        backend whose work outlives its process (a provider's batch in flight) records it
        there, so a resumed run picks it up. The default keeps nothing."""
        return None

    def load(self) -> None:
        """Load (or check) the model now, raising :class:`ModelLoadError` with a one-line
        reason when it cannot be used; a run calls this before it writes anything. The
        default does nothing (a backend that loads lazily and cannot fail early)."""
        return None

    def describe(self) -> dict[str, Any]:
        """Model and backend identity for the results file."""
        out = {
            "backend": self.name,
            "model": self.model,
            "model_revision": self.revision,
            "weights_sha256": weights_sha256(self.model),
            "sampling": self.sampling.to_dict(),
            "versions": self.versions(),
        }
        identity = {o.name: o.default for o in self.OPTIONS if o.identity}
        # an identity option given at its default is the run without it (resumes either way)
        given = {k: v for k, v in self.model_args.items() if k in identity and v != identity[k]}
        runtime = {k: v for k, v in self.model_args.items() if k not in identity}
        if given:  # they change the outputs: part of the run's identity
            out["model_args"] = given
        if runtime:  # they change only the speed: recorded, and free to change on resume
            out["runtime"] = runtime
        out.update(self.provenance())
        return out

    def provenance(self) -> dict[str, Any]:
        """More identity a backend knows (e.g. the model commit that supplied remote code)."""
        return {}

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench"])


class Backend(ModelIdentity, ABC):
    """Generates one completion per request, in request order."""

    name: str = "base"

    def __init__(
        self, model: str, *, revision: str | None = None, sampling: SamplingParams | None = None
    ) -> None:
        self.model = model
        self.revision = revision
        self.sampling = sampling or SamplingParams()

    @abstractmethod
    def generate(self, requests: Sequence[Request]) -> list[str]:
        """Completions for ``requests`` (same order)."""
