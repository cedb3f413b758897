#!/usr/bin/env python3
"""RopeScope vs Hugging Face transformers at real model size, on a GPU machine.

Builds a random-weight Qwen2-VL with the real Qwen2-VL-2B config (resources/configs/qwen2vl-2b.json),
feeds ~1000 tokens (a 784-token image plus text) and times one prefill that returns every layer's
attention, against `ropescope bench model --config ... --random` capturing every layer's text->image
attention on the same shapes. Reports time and peak GPU memory for both, naming the device.

Needs: PyTorch with CUDA, transformers (>= 4.45), a RopeScope build against that PyTorch's LibTorch:
    cmake -S . -B build-gpu -DROPESCOPE_GUI=OFF -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
    cmake --build build-gpu -j && python3 tests/perf/compare_transformers.py --ropescope build-gpu/bin/ropescope
"""
import argparse
import json
import subprocess
import time

import torch
from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration


def hf_prefill(config_path, image_tokens, text_tokens, dtype, runs):
    with open(config_path) as f:
        cfg = Qwen2VLConfig.from_dict(json.load(f))
    # output_attentions needs eager attention; transformers 4.x reads it from the top config, 5.x from each
    # sub-config too.
    for c in (cfg, getattr(cfg, "text_config", None), getattr(cfg, "vision_config", None)):
        if c is not None:
            c._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(cfg).to("cuda", dtype).eval()
    side = int(image_tokens ** 0.5)
    m = cfg.vision_config.spatial_merge_size
    grid = torch.tensor([[1, side * m, side * m]], device="cuda")
    patches = side * side * m * m
    pixels = torch.randn(patches, 3 * 2 * 14 * 14, device="cuda", dtype=dtype)
    ceiling = min(cfg.image_token_id, cfg.vision_start_token_id)
    ids = torch.cat([
        torch.randint(0, ceiling, (text_tokens // 2,)),
        torch.tensor([cfg.vision_start_token_id]),
        torch.full((side * side,), cfg.image_token_id),
        torch.tensor([cfg.vision_end_token_id]),
        torch.randint(0, ceiling, (text_tokens - text_tokens // 2,)),
    ]).unsqueeze(0).cuda()
    times = []
    torch.cuda.synchronize()
    loaded_mb = torch.cuda.memory_allocated() / 2**20  # weights and inputs, before any forward
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        for _ in range(runs + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(input_ids=ids, pixel_values=pixels, image_grid_thw=grid, output_attentions=True, use_cache=False)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1000)
            if not out.attentions or out.attentions[0] is None:  # a fused kernel would return none
                raise SystemExit("transformers returned no attention probabilities: eager attention is not in effect")
            del out
    times = sorted(times[1:])
    return {"tokens": ids.shape[1], "total_ms": times[len(times) // 2],
            "loaded_mb": loaded_mb, "peak_mb": torch.cuda.max_memory_allocated() / 2**20,
            "device": torch.cuda.get_device_name()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ropescope", default="build-gpu/bin/ropescope")
    ap.add_argument("--config", default="resources/configs/qwen2vl-2b.json")
    ap.add_argument("--image-tokens", type=int, default=784)
    ap.add_argument("--text-tokens", type=int, default=216)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    hf = hf_prefill(a.config, a.image_tokens, a.text_tokens, dtype, a.runs)
    rs = json.loads(subprocess.check_output([
        a.ropescope, "bench", "model", "--config", a.config, "--random", "--device", "cuda", "--dtype", a.dtype,
        "--image-tokens", str(a.image_tokens), "--text-tokens", str(a.text_tokens), "--runs", str(a.runs), "--json"]))
    if "peak_gpu_mb" not in rs:
        raise SystemExit("ropescope reported no GPU memory: is it built against a LibTorch with CUDA?")
    ours_ms = rs["vision_ms"] + rs["prefill_capture_ms"]
    # Both peaks include the same weights (bf16 2B: ~4.4 GB), which no attention implementation changes;
    # the forward peak above the loaded weights is what capturing attention costs, and is compared too.
    hf_forward_mb = hf["peak_mb"] - hf["loaded_mb"]
    print(json.dumps({"device": hf["device"], "tokens": hf["tokens"], "dtype": a.dtype,
                      "transformers_ms": hf["total_ms"], "ropescope_ms": ours_ms,
                      "speedup": hf["total_ms"] / ours_ms,
                      "transformers_peak_mb": hf["peak_mb"], "ropescope_peak_mb": rs["peak_gpu_mb"],
                      "memory_ratio_total": hf["peak_mb"] / rs["peak_gpu_mb"],
                      "transformers_forward_peak_mb": hf_forward_mb,
                      "ropescope_forward_peak_mb": rs["forward_peak_gpu_mb"],
                      "memory_ratio_forward": hf_forward_mb / rs["forward_peak_gpu_mb"]}, indent=2))


if __name__ == "__main__":
    main()
