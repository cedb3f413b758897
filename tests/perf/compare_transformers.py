#!/usr/bin/env python3
"""RopeScope vs Hugging Face transformers at real model size, on a GPU machine.

Builds a random-weight Qwen2-VL with the real Qwen2-VL-2B config (resources/configs/qwen2vl-2b.json) and,
for each size (about 1k, 4k, 8k and 16k tokens) and layout (one image, or four images among text), times
one prefill that returns every layer's attention (transformers eager, output_attentions=True) and one that
returns none (transformers SDPA), against `ropescope bench model --config ... --random` capturing every
layer's text->image attention on the same shapes. Reports time and peak GPU memory of each side, naming the
device; a side that runs out of memory is reported as such and the rest goes on.

Needs: PyTorch with CUDA, transformers (>= 4.45), a RopeScope build against that PyTorch's LibTorch
(scripts/gpu_check.sh builds one):
    python3 tests/perf/compare_transformers.py --ropescope build-gpu/bin/ropescope [--sizes 1k,4k] [--json-out F]
"""
import argparse
import json
import subprocess
import time

import torch
from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

# Merged image tokens and text tokens of each size; every image count divides the image tokens into
# square grids (784 = 4 x 14^2, 3136 = 4 x 28^2, 7056 = 4 x 42^2, 15376 = 4 x 62^2).
SIZES = {"1k": (784, 216), "4k": (3136, 960), "8k": (7056, 1136), "16k": (15376, 1006)}


def set_attention(model, impl):
    if hasattr(model, "set_attn_implementation"):  # transformers 5
        model.set_attn_implementation(impl)
    cfg = model.config
    for c in (cfg, getattr(cfg, "text_config", None), getattr(cfg, "vision_config", None)):
        if c is not None:
            c._attn_implementation = impl


def inputs(cfg, image_tokens, text_tokens, images, dtype):
    """The same layout as `ropescope bench model --images N`: text split evenly around the images."""
    per_image = image_tokens // images
    side = int(per_image ** 0.5)
    m = cfg.vision_config.spatial_merge_size
    grid = torch.tensor([[1, side * m, side * m]] * images, device="cuda")
    pixels = torch.randn(images * side * side * m * m, 3 * 2 * 14 * 14, device="cuda", dtype=dtype)
    ceiling = min(cfg.image_token_id, cfg.vision_start_token_id)
    pieces = []
    for i in range(images + 1):
        text = text_tokens * (i + 1) // (images + 1) - text_tokens * i // (images + 1)
        pieces.append(torch.randint(0, ceiling, (text,)))
        if i < images:
            pieces += [torch.tensor([cfg.vision_start_token_id]), torch.full((side * side,), cfg.image_token_id),
                       torch.tensor([cfg.vision_end_token_id])]
    ids = torch.cat(pieces).unsqueeze(0).cuda()
    batch = {"input_ids": ids, "pixel_values": pixels, "image_grid_thw": grid}
    # transformers 5 asks which tokens are image tokens whenever images are passed.
    batch["mm_token_type_ids"] = (ids == cfg.image_token_id).int()
    return batch


def hf_prefill(model, batch, attentions, runs):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    loaded_mb = torch.cuda.memory_allocated() / 2**20  # weights and inputs, before any forward
    torch.cuda.reset_peak_memory_stats()
    times = []
    try:
        with torch.no_grad():
            for _ in range(runs + 1):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = model(**batch, output_attentions=attentions, use_cache=False)
                torch.cuda.synchronize()
                times.append((time.perf_counter() - t0) * 1000)
                if attentions and (not out.attentions or out.attentions[0] is None):
                    raise SystemExit("transformers returned no attention probabilities: eager attention is not in effect")
                del out
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return {"ms": None, "peak_mb": None, "forward_peak_mb": None, "error": "out of memory"}
    times = sorted(times[1:])
    peak = torch.cuda.max_memory_allocated() / 2**20
    return {"ms": times[len(times) // 2], "peak_mb": peak, "forward_peak_mb": peak - loaded_mb}


def ropescope(binary, config, image_tokens, text_tokens, images, dtype, runs, attention=None):
    command = [binary, "bench", "model", "--config", config, "--random", "--device", "cuda", "--dtype", dtype,
               "--image-tokens", str(image_tokens), "--text-tokens", str(text_tokens), "--images", str(images),
               "--runs", str(runs), "--json"]
    if attention:
        command += ["--attention", attention]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    rs = json.loads(done.stdout)
    if "peak_gpu_mb" not in rs:
        raise SystemExit("ropescope reported no GPU memory: is it built against a LibTorch with CUDA?")
    return {"ms": rs["vision_ms"] + rs["prefill_capture_ms"], "vision_ms": rs["vision_ms"],
            "prefill_capture_ms": rs["prefill_capture_ms"], "peak_mb": rs["peak_gpu_mb"],
            "forward_peak_mb": rs["forward_peak_gpu_mb"], "captured_mb": rs["captured_mb"],
            "tokens": rs["tokens"], "attention": rs.get("attention", "")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ropescope", default="build-gpu/bin/ropescope")
    ap.add_argument("--config", default="resources/configs/qwen2vl-2b.json")
    ap.add_argument("--sizes", default="1k,4k,8k,16k", help="comma-separated: " + ", ".join(SIZES))
    ap.add_argument("--images", default="1,4", help="comma-separated image counts")
    ap.add_argument("--explicit-up-to", default="4k", help="also time RopeScope's explicit attention path up to this size")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json-out", help="also write the rows here, after each one")
    a = ap.parse_args()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    with open(a.config) as f:
        cfg = Qwen2VLConfig.from_dict(json.load(f))
    torch.manual_seed(0)
    with torch.device("cuda"):  # initialised on the GPU: minutes faster than on the CPU at 2B parameters
        model = Qwen2VLForConditionalGeneration(cfg).to(dtype).eval()
    sizes = [s for s in a.sizes.split(",") if s]
    explicit_sizes = list(SIZES)[: list(SIZES).index(a.explicit_up_to) + 1] if a.explicit_up_to in SIZES else []
    rows = []
    for size in sizes:
        image_tokens, text_tokens = SIZES[size]
        for images in (int(n) for n in a.images.split(",")):
            batch = inputs(cfg, image_tokens, text_tokens, images, dtype)
            row = {"device": torch.cuda.get_device_name(), "dtype": a.dtype, "size": size, "images": images,
                   "tokens": batch["input_ids"].shape[1]}
            set_attention(model, "eager")
            row["transformers_eager_attentions"] = hf_prefill(model, batch, True, a.runs)
            set_attention(model, "sdpa")
            row["transformers_sdpa_no_attentions"] = hf_prefill(model, batch, False, a.runs)
            del batch
            torch.cuda.empty_cache()
            row["ropescope_fused"] = ropescope(a.ropescope, a.config, image_tokens, text_tokens, images, a.dtype, a.runs)
            if size in explicit_sizes:
                row["ropescope_explicit"] = ropescope(a.ropescope, a.config, image_tokens, text_tokens, images, a.dtype, a.runs, "explicit")
            eager, ours = row["transformers_eager_attentions"], row["ropescope_fused"]
            if eager.get("ms") and ours.get("ms"):
                row["speedup_vs_eager"] = eager["ms"] / ours["ms"]
                row["forward_memory_ratio_vs_eager"] = eager["forward_peak_mb"] / ours["forward_peak_mb"]
            print(json.dumps(row), flush=True)
            rows.append(row)
            if a.json_out:
                with open(a.json_out, "w") as f:
                    json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
