#!/usr/bin/env python3
"""transformers' own mixture-of-experts block beside RopeScope's, on this machine's CPU (issue 55's anchor).

Times, on the same random tokens and at a config's real shapes (default: Qwen3.5-35B-A3B's layers, 256 experts,
top-8, expert width 512, a gated shared expert of 512, hidden 2048, 1,002 tokens, fp32):
  - transformers 5's block, transcribed line for line (Qwen3MoeExperts.forward: one_hot expert mask, a loop over
    the experts hit, torch.where per expert, index_add_), with its softmax router and shared expert;
  - one dense SwiGLU MLP of the block's active width (top-k x expert width + shared width), the goal's yardstick.
RopeScope's block on the same shapes is `ropescope bench model --config C --random --layers 1` (moe_block_ms,
dense_mlp_active_width_ms). Needs PyTorch (Debian's python3-torch is enough: /usr/bin/python3 here).
    /usr/bin/python3 tests/perf/moe_block_transformers.py [--config resources/configs/qwen35-35b-a3b.json]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def text_config(path):
    with open(path) as f:
        config = json.load(f)
    return config.get("text_config", config)


def median_ms(runs, fn):
    fn()  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def transformers_block(x, router, gate_up, down, shared, top_k):
    """Qwen3_5MoeSparseMoeBlock of transformers 5 (router, experts loop, gated shared expert), as written there."""
    logits = F.linear(x, router)
    probs = torch.softmax(logits, dim=-1, dtype=torch.float)
    top_k_weights, top_k_index = torch.topk(probs, top_k, dim=-1)
    top_k_weights = (top_k_weights / top_k_weights.sum(dim=-1, keepdim=True)).to(x.dtype)
    final = torch.zeros_like(x)
    with torch.no_grad():
        expert_mask = F.one_hot(top_k_index, num_classes=gate_up.shape[0]).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert_idx = expert_idx[0]
        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
        current = x[token_idx]
        gate, up = F.linear(current, gate_up[expert_idx]).chunk(2, dim=-1)
        current = F.linear(F.silu(gate) * up, down[expert_idx])
        current = current * top_k_weights[token_idx, top_k_pos, None]
        final.index_add_(0, token_idx, current.to(final.dtype))
    s_gate_up, s_down, s_gate = shared
    gate, up = F.linear(x, s_gate_up).chunk(2, dim=-1)
    return final + torch.sigmoid(F.linear(x, s_gate)) * F.linear(F.silu(gate) * up, s_down)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="resources/configs/qwen35-35b-a3b.json")
    parser.add_argument("--tokens", type=int, default=1002)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch intra-op threads (BLAS keeps its own)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    t = text_config(args.config)
    hidden, experts, top_k = t["hidden_size"], t["num_experts"], t["num_experts_per_tok"]
    width, shared_width = t["moe_intermediate_size"], t.get("shared_expert_intermediate_size", 0)
    torch.manual_seed(11)
    x = torch.randn(args.tokens, hidden)
    router = torch.randn(experts, hidden) / hidden**0.5
    gate_up = torch.randn(experts, 2 * width, hidden) / hidden**0.5  # transformers 5's in-memory layout
    down = torch.randn(experts, hidden, width) / width**0.5
    shared = (torch.randn(2 * shared_width, hidden) / hidden**0.5, torch.randn(hidden, shared_width) / shared_width**0.5,
              torch.randn(1, hidden) / hidden**0.5)
    active = top_k * width + shared_width
    gate, up = torch.randn(active, hidden) / hidden**0.5, torch.randn(active, hidden) / hidden**0.5
    dense_down = torch.randn(hidden, active) / active**0.5
    with torch.no_grad():
        block = median_ms(args.runs, lambda: transformers_block(x, router, gate_up, down, shared, top_k))
        dense = median_ms(args.runs, lambda: F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), dense_down))
    print(json.dumps({"config": args.config, "torch": torch.__version__, "threads": torch.get_num_threads(), "tokens": args.tokens,
                      "experts": experts, "top_k": top_k, "transformers_block_ms": round(block, 1),
                      "dense_mlp_active_width_ms": round(dense, 1), "block_over_dense": round(block / dense, 2)}, indent=1))


if __name__ == "__main__":
    main()
