#!/usr/bin/env python3
"""RopeScope vs Hugging Face transformers at real model size, on a GPU machine.

For each config (default: the real Qwen2-VL-2B shapes, resources/configs/qwen2vl-2b.json; any family's
config.json from resources/configs works: Qwen2/2.5/3-VL, Qwen3.5, GLM-4.1V, PaddleOCR-VL and the MoE
members) builds a random-weight model of that family in transformers and, for each size (about 1k, 4k, 8k
and 16k tokens) and layout (one image, or several among text), times one prefill that returns every
layer's attention (transformers eager, output_attentions=True) and one that returns none (transformers
SDPA), against `ropescope bench model --config ... --random` capturing every attention layer's
text->image attention on the same shapes (with its vision, prefill and decode-step times). Reports time
and peak GPU memory of each side, naming the device; a side that runs out of memory or fails is reported
as such and the rest goes on.

Needs: PyTorch with CUDA, transformers (>= 4.45; 5.x for Qwen3-VL, Qwen3.5, GLM-4.1V and PaddleOCR-VL),
a RopeScope build against that PyTorch's LibTorch (scripts/gpu_check.sh builds one):
    python3 tests/perf/compare_transformers.py --ropescope build-gpu/bin/ropescope [--sizes 1k,4k] [--json-out F]
    python3 tests/perf/compare_transformers.py --config resources/configs/qwen35-0.8b.json,resources/configs/glm4v-9b.json \
        --sizes 1k,4k --images 1
"""
import argparse
import json
import os
import subprocess
import time
import traceback

import torch
import transformers

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


def build_model(path):
    """A random-weight model of the config's family (its `architectures` class), on the GPU, in float32."""
    with open(path) as f:
        raw = json.load(f)
    architecture = getattr(transformers, raw["architectures"][0], None)
    if architecture is None:
        raise RuntimeError(f"transformers {transformers.__version__} has no {raw['architectures'][0]}")
    cfg = architecture.config_class.from_dict(raw)
    torch.manual_seed(0)
    with torch.device("cuda"):  # initialised on the GPU: minutes faster than on the CPU at billions of parameters
        return cfg, architecture(cfg)


def first_attribute(cfg, *names):
    for name in names:
        value = getattr(cfg, name, None)
        if value is not None:
            return value
    raise RuntimeError(f"the config has none of {names}")


def inputs(cfg, image_tokens, text_tokens, images, dtype):
    """The same layout as `ropescope bench model --images N`: text split evenly around the images."""
    per_image = image_tokens // images
    side = int(per_image ** 0.5)
    vision = cfg.vision_config
    m = vision.spatial_merge_size
    patch = vision.patch_size
    channels = first_attribute(vision, "in_channels", "in_chans", "num_channels")
    grid = torch.tensor([[1, side * m, side * m]] * images, device="cuda")
    patches = images * side * side * m * m
    if getattr(vision, "temporal_patch_size", None):  # Qwen and GLM: rows of [C, T, P, P], flattened
        pixels = torch.randn(patches, channels * vision.temporal_patch_size * patch * patch, device="cuda", dtype=dtype)
    else:  # PaddleOCR-VL's SigLIP: one [C, P, P] image per patch
        pixels = torch.randn(patches, channels, patch, patch, device="cuda", dtype=dtype)
    image = cfg.image_token_id
    start = first_attribute(cfg, "vision_start_token_id", "image_start_token_id")
    end = first_attribute(cfg, "vision_end_token_id", "image_end_token_id")
    vocab = getattr(getattr(cfg, "text_config", cfg), "vocab_size", None) or cfg.vocab_size
    ceiling = min(image, start, end, vocab)
    pieces = []
    for i in range(images + 1):
        text = text_tokens * (i + 1) // (images + 1) - text_tokens * i // (images + 1)
        pieces.append(torch.randint(0, ceiling, (text,)))
        if i < images:
            pieces += [torch.tensor([start]), torch.full((side * side,), image), torch.tensor([end])]
    ids = torch.cat(pieces).unsqueeze(0).cuda()
    batch = {"input_ids": ids, "pixel_values": pixels, "image_grid_thw": grid}
    # transformers 5 asks which tokens are image tokens whenever images are passed (without it GLM-4.1V and
    # PaddleOCR-VL silently take 1-D positions).
    batch["mm_token_type_ids"] = (ids == image).int()
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
                # Qwen3.5's DeltaNet layers return no map: one attention layer's is enough.
                if attentions and (not out.attentions or all(a is None for a in out.attentions)):
                    raise SystemExit("transformers returned no attention probabilities: eager attention is not in effect")
                del out
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return {"ms": None, "peak_mb": None, "forward_peak_mb": None, "error": "out of memory"}
    except Exception as e:  # a family this transformers runs differently: said, and the rest goes on
        traceback.print_exc()
        torch.cuda.empty_cache()
        return {"ms": None, "peak_mb": None, "forward_peak_mb": None, "error": f"{type(e).__name__}: {e}"[:300]}
    times = sorted(times[1:])
    peak = torch.cuda.max_memory_allocated() / 2**20
    return {"ms": times[len(times) // 2], "peak_mb": peak, "forward_peak_mb": peak - loaded_mb}


def ropescope(binary, config, image_tokens, text_tokens, images, dtype, runs, attention=None, timeout=300, profile=None):
    command = [binary, "bench", "model", "--config", config, "--random", "--device", "cuda", "--dtype", dtype,
               "--image-tokens", str(image_tokens), "--text-tokens", str(text_tokens), "--images", str(images),
               "--runs", str(runs), "--json"]
    if attention:
        command += ["--attention", attention]
    if profile:  # the operators, kernels and launches of one prefill, capture pass and 5-token generation
        command += ["--profile", profile]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout} s"}
    if done.returncode != 0 and profile:  # a build without --profile (gpu_check.sh's fallback): time it unprofiled
        return ropescope(binary, config, image_tokens, text_tokens, images, dtype, runs, attention, timeout)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    rs = json.loads(done.stdout)
    profiled = None
    if profile:
        with open(profile) as f:
            profiled = json.load(f)["stages"]
    if "peak_gpu_mb" not in rs:
        raise SystemExit("ropescope reported no GPU memory: is it built against a LibTorch with CUDA?")
    return {"ms": rs["vision_ms"] + rs["prefill_capture_ms"], "vision_ms": rs["vision_ms"],
            "prefill_capture_ms": rs["prefill_capture_ms"], "peak_mb": rs["peak_gpu_mb"],
            "forward_peak_mb": rs["forward_peak_gpu_mb"], "captured_mb": rs["captured_mb"],
            "tokens": rs["tokens"], "attention": rs.get("attention", ""), "decoder_ms": rs.get("decoder_ms"),
            "decode_step_ms": rs.get("decode_step_ms"), "capture_overhead_ms": rs.get("capture_overhead_ms"),
            "load_ms": rs.get("load_ms"), "cached_vision_lookup_ms": rs.get("cached_vision_lookup_ms"),
            "positions_ms": rs.get("positions_ms"), **({"profile": profiled} if profiled else {})}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ropescope", default="build-gpu/bin/ropescope")
    ap.add_argument("--config", default="resources/configs/qwen2vl-2b.json", help="comma-separated config.json files")
    ap.add_argument("--sizes", default="1k,4k,8k,16k", help="comma-separated: " + ", ".join(SIZES))
    ap.add_argument("--images", default="1,4", help="comma-separated image counts")
    ap.add_argument("--explicit-up-to", default="4k", help="also time RopeScope's explicit attention path up to this size")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json-out", help="also write the rows here, after each one")
    ap.add_argument("--timeout", type=int, default=300, help="seconds one ropescope run may take")
    ap.add_argument("--profile-sizes", default="", help="comma-separated sizes whose RopeScope run is also profiled "
                    "(bench model --profile; the row keeps the summary)")
    a = ap.parse_args()
    rows = []
    for config in (c for c in a.config.split(",") if c):
        compare(a, config, rows)


def compare(a, config, rows):
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    t0 = time.perf_counter()
    try:
        cfg, model = build_model(config)
        model = model.to(dtype).eval()
    except Exception as e:  # transformers lacks or builds this family differently: RopeScope's side still runs
        traceback.print_exc()
        cfg, model = None, None
        built = f"{type(e).__name__}: {e}"[:300]
    else:
        built = f"built in {time.perf_counter() - t0:.1f} s"
    print(f"{config}: transformers {transformers.__version__}, {built}", flush=True)
    sizes = [s for s in a.sizes.split(",") if s]
    explicit_sizes = list(SIZES)[: list(SIZES).index(a.explicit_up_to) + 1] if a.explicit_up_to in SIZES else []
    for size in sizes:
        image_tokens, text_tokens = SIZES[size]
        for images in (int(n) for n in a.images.split(",")):
            row = {"config": config, "device": torch.cuda.get_device_name(), "dtype": a.dtype, "size": size,
                   "images": images, "transformers": transformers.__version__}
            batch = None
            if model is not None:
                try:
                    batch = inputs(cfg, image_tokens, text_tokens, images, dtype)
                except Exception as e:
                    traceback.print_exc()
                    row["transformers_error"] = f"inputs: {type(e).__name__}: {e}"[:300]
            if batch is not None:
                row["tokens"] = batch["input_ids"].shape[1]
                set_attention(model, "eager")
                row["transformers_eager_attentions"] = hf_prefill(model, batch, True, a.runs)
                set_attention(model, "sdpa")
                row["transformers_sdpa_no_attentions"] = hf_prefill(model, batch, False, a.runs)
                del batch
            elif model is None:
                row["transformers_error"] = built
            torch.cuda.empty_cache()
            profile = None
            if size in a.profile_sizes.split(","):
                profile = f"/tmp/ropescope-profile-{os.getpid()}.json"
            row["ropescope_fused"] = ropescope(a.ropescope, config, image_tokens, text_tokens, images, a.dtype, a.runs,
                                               timeout=a.timeout, profile=profile)
            if size in explicit_sizes:
                row["ropescope_explicit"] = ropescope(a.ropescope, config, image_tokens, text_tokens, images, a.dtype, a.runs,
                                                      "explicit", timeout=a.timeout)
            eager, ours = row.get("transformers_eager_attentions", {}), row["ropescope_fused"]
            if eager.get("ms") and ours.get("ms"):
                row["speedup_vs_eager"] = eager["ms"] / ours["ms"]
                row["forward_memory_ratio_vs_eager"] = eager["forward_peak_mb"] / ours["forward_peak_mb"]
            print(json.dumps(row), flush=True)
            rows.append(row)
            if a.json_out:
                with open(a.json_out, "w") as f:
                    json.dump(rows, f, indent=2)
    del model
    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
