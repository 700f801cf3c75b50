"""Benchmark: text-to-image and image-embedding throughput, ratios against a baseline measured
in the same run.

1. The tiny Stable Diffusion pipeline through ``DiffusersBackend`` (CPU, 64x64 and 128x128):
   images/s at batch 1 (baseline) and batch 8; pixels grow 4x from 64 to 128 px.
2. Embeddings through ``ImageEmbedder`` (tiny CLIP and tiny DINOv2, cache off, then a cached
   re-run) against a plain ``processor`` + forward pass over the same decoded images (baseline)
   and over the PNG bytes (decode + forward: what any caller pays).
3. ``--real-size`` (meant for a GPU): a pipeline with Stable Diffusion 2.1's UNet, VAE and
   text-encoder configurations and random weights at 512x512, images/s per batch size.

    python benchmarks/bench_t2i.py [--images 16] [--steps 10] [--real-size] [--threads N]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import torch

from culturebench.eval.backends.base import Request
from culturebench.eval.backends.diffusers_backend import DiffusersBackend
from culturebench.eval.backends.image_base import ImageParams


def _prompts(n: int) -> list[Request]:
    dishes = ["Ugali", "Jollof", "Ndolè", "Bunny chow", "Mukimo", "Chakalaka", "Brik", "Fufu"]
    return [
        Request(str(i), f"Generate a photograph of food from Kenya called {dishes[i % len(dishes)]}.")
        for i in range(n)
    ]


def t2i_rate(model: Path, n: int, *, size: int, steps: int, batch: int, device: str | None = None) -> float:
    backend = DiffusersBackend(
        str(model), sampling=ImageParams(size, size, steps, seed=0), batch_size=batch, device=device
    )
    backend.generate_images(_prompts(min(batch, 2)))  # load + warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    backend.generate_images(_prompts(n))
    if device == "cuda":
        torch.cuda.synchronize()
    return n / (time.perf_counter() - start)


def embed_rates(model: Path, images: list[bytes], batch: int) -> dict[str, float]:
    from PIL import Image
    from transformers import AutoModel, AutoProcessor

    from culturebench.eval.embeddings import ImageEmbedder

    hf_model = AutoModel.from_pretrained(model).eval()
    processor = AutoProcessor.from_pretrained(model)
    decoded = [Image.open(io.BytesIO(b)).convert("RGB") for b in images]

    def plain() -> None:
        for start in range(0, len(decoded), batch):
            inputs = processor(images=decoded[start : start + batch], return_tensors="pt")
            with torch.inference_mode():
                if hf_model.config.model_type == "clip":
                    hf_model.get_image_features(pixel_values=inputs["pixel_values"])
                else:
                    hf_model(pixel_values=inputs["pixel_values"]).last_hidden_state[:, 0]

    plain()  # warm-up
    start = time.perf_counter()
    plain()
    base = len(images) / (time.perf_counter() - start)
    start = time.perf_counter()
    decoded = [Image.open(io.BytesIO(b)).convert("RGB") for b in images]
    plain()
    decode_and_forward = len(images) / (time.perf_counter() - start)
    cache = Path(tempfile.mkdtemp(prefix="cb-emb-cache-"))
    ours = ImageEmbedder(str(model), batch_size=batch, cache=False)
    ours.embed_images(images[:2])
    start = time.perf_counter()
    ours.embed_images(images)
    uncached = len(images) / (time.perf_counter() - start)
    ImageEmbedder(str(model), batch_size=batch, cache_dir=cache).embed_images(images)
    start = time.perf_counter()
    ImageEmbedder(str(model), batch_size=batch, cache_dir=cache).embed_images(images)
    cached = len(images) / (time.perf_counter() - start)
    return {
        "plain forward (decoded images)": base,
        "PNG decode + plain forward": decode_and_forward,
        "ImageEmbedder (no cache)": uncached,
        "ImageEmbedder (cached)": cached,
    }


def build_real_size(path: Path) -> Path:
    """A pipeline with SD 2.1's component configurations (random weights, no download)."""
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from culturebench.eval.tiny import clip_tokenizer

    tokenizer = clip_tokenizer()
    unet = UNet2DConditionModel(
        sample_size=64,
        block_out_channels=(320, 640, 1280, 1280),
        attention_head_dim=(5, 10, 20, 20),
        cross_attention_dim=1024,
        use_linear_projection=True,
        layers_per_block=2,
    )
    vae = AutoencoderKL(
        block_out_channels=(128, 256, 512, 512),
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        latent_channels=4,
        sample_size=512,
    )
    text = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer),
            hidden_size=1024,
            intermediate_size=4096,
            num_hidden_layers=23,
            num_attention_heads=16,
            max_position_embeddings=77,
            hidden_act="gelu",
            projection_dim=512,
        )
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, steps_offset=1
    )
    StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text,
        tokenizer=tokenizer,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    ).save_pretrained(path)
    return path


def _pngs(n: int) -> list[bytes]:
    """``n`` distinct 256x192 PNGs (seeded noise) made with numpy and Pillow."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (192, 256, 3), dtype=np.uint8)).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def _print(title: str, rates: dict[str, float], baseline: str) -> None:
    print(f"\n{title}")
    for name, value in rates.items():
        print(f"  {name:34s} {value:9.2f}/s   {value / rates[baseline]:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--real-size", action="store_true", help="SD 2.1-size pipeline at 512 px (GPU)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from culturebench.eval.tiny import build_tiny_clip, build_tiny_dinov2, build_tiny_sd

    root = Path(tempfile.mkdtemp(prefix="cb-bench-t2i-"))
    print(f"torch threads: {torch.get_num_threads()}; images per measurement: {args.images}")
    if args.real_size:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = build_real_size(root / "sd21-size")
        rates = {
            f"512px, batch {b}": t2i_rate(
                model, args.images, size=512, steps=args.steps, batch=b, device=device
            )
            for b in (1, 2, 4, 8)
        }
        _print(f"SD 2.1-size pipeline, random weights, {args.steps} steps, {device}", rates, "512px, batch 1")
        return
    sd = build_tiny_sd(root / "sd")
    rates = {}
    for size in (64, 128):
        for batch in (1, 8):
            rates[f"{size}px, batch {batch}"] = t2i_rate(
                sd, args.images, size=size, steps=args.steps, batch=batch
            )
    _print(f"tiny SD pipeline, {args.steps} steps, CPU", rates, "64px, batch 1")

    images = _pngs(args.images * 8)
    for name, build in (("tiny CLIP", build_tiny_clip), ("tiny DINOv2", build_tiny_dinov2)):
        model = build(root / name.split()[-1].lower())
        title = f"{name} embeddings, {len(images)} images of 256x192, batch 32, CPU"
        _print(title, embed_rates(model, images, 32), "plain forward (decoded images)")


if __name__ == "__main__":
    main()
