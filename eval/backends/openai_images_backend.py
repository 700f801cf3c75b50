"""OpenAI-compatible ``images/generations`` backend (DALL-E 2/3 through the official API, or any
server speaking the same protocol): one image per request, asked as ``b64_json``.

The OpenAI Images API takes no seed: the run's seeds are replicate indices there (the paper's
five DALL-E images per dish are five calls), recorded in provenance, and a repeated call is
not expected to give the same image. A ``url`` answer is fetched through the guarded HTTP
session (public addresses only, unless the endpoint itself is on an allowed address).
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from culturebench.eval.backends.base import Request, package_versions
from culturebench.eval.backends.image_base import ImageBackend, ImageParams, png_bytes
from culturebench.eval.backends.openai_backend import CLIENT_OPTIONS, EndpointClient, EndpointError
from culturebench.eval.backends.options import BackendOption
from culturebench.safe_http import redact

MAX_IMAGE_BYTES = 64 << 20


class OpenAIImagesBackend(EndpointClient, ImageBackend):
    """``POST {base_url}/images/generations`` with ``{model, prompt, n: 1, size, response_format:
    b64_json}`` (plus ``quality`` when set); the key comes from ``OPENAI_API_KEY``. Answers are
    re-encoded as PNG so every run stores one format."""

    name = "openai-images"
    SUMMARY = "any OpenAI-compatible images/generations endpoint (DALL-E 2 and 3 on the hosted API)"
    SHARED_FLAGS = ("base_url", "concurrency", "quality")
    OPTIONS = (
        *(replace(o, default=2) if o.name == "concurrency" else o for o in CLIENT_OPTIONS),
        BackendOption("quality", "str", None, "Image quality (standard, hd).", identity=True),
    )

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        revision: str | None = None,
        sampling: ImageParams | None = None,
        quality: str | None = None,
        concurrency: int = 2,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        timeout: float | None = None,
        api_key_env: str = "OPENAI_API_KEY",
    ) -> None:
        ImageBackend.__init__(self, model, revision=revision, sampling=sampling)
        timeout_s = timeout if timeout is not None else timeout_s
        self._init_client(
            base_url,
            concurrency=concurrency,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            api_key_env=api_key_env,
        )
        self.quality = quality

    def payload(self, request: Request) -> dict[str, Any]:
        """The JSON body for one image."""
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": request.prompt,
            "n": 1,
            "size": f"{self.sampling.width}x{self.sampling.height}",
            "response_format": "b64_json",
        }
        if self.quality:
            body["quality"] = self.quality
        return body

    def _one(self, request: Request) -> bytes:
        answer = self.post_json("images/generations", self.payload(request), request.id)
        where = f"{redact(self.base_url)}/images/generations (request {request.id})"
        try:
            item = answer["data"][0]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"{where}: answer has no data[0]") from None
        if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
            try:
                raw = base64.b64decode(item["b64_json"], validate=True)
            except (binascii.Error, ValueError):
                raise EndpointError(f"{where}: b64_json is not base64") from None
        elif isinstance(item, dict) and isinstance(item.get("url"), str):
            raw = self._fetch(item["url"], where)
        else:
            raise EndpointError(f"{where}: data[0] has neither b64_json nor url")
        return _as_png(raw, where)

    def _fetch(self, url: str, where: str) -> bytes:
        import ipaddress
        from urllib.parse import urlsplit

        from culturebench.safe_http import BlockedAddress, guarded_session, read_capped

        host = (urlsplit(self.base_url).hostname or "").strip("[]")
        try:  # an endpoint on a private address may hand out image URLs on that address
            allow = [str(ipaddress.ip_address(host))]
        except ValueError:
            allow = []
        try:
            with guarded_session(allow=allow) as session:
                resp = session.get(url, timeout=self.timeout_s, stream=True)
                body = read_capped(resp, MAX_IMAGE_BYTES) if resp.status_code == 200 else b""
        except BlockedAddress as exc:
            raise EndpointError(f"{where}: image URL refused: {exc}") from None
        except Exception as exc:  # connection errors
            raise EndpointError(
                f"{where}: cannot fetch image URL: {type(exc).__name__}: {redact(exc)}"
            ) from None
        if resp.status_code != 200:
            raise EndpointError(f"{where}: image URL answered HTTP {resp.status_code}")
        if body is None:
            raise EndpointError(f"{where}: image larger than {MAX_IMAGE_BYTES} bytes")
        return body

    def generate_images(self, requests: Sequence[Request]) -> list[bytes]:
        return self.map_concurrently(self._one, requests)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update({"base_url": redact(self.base_url), "quality": self.quality, "seeded": False})
        return info

    def versions(self) -> dict[str, str]:
        return package_versions(["culturebench", "requests", "pillow"])


def _as_png(raw: bytes, where: str) -> bytes:
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(raw))
        image.load()
    except (UnidentifiedImageError, OSError):
        raise EndpointError(f"{where}: the answer is not an image") from None
    return raw if image.format == "PNG" else png_bytes(image)
