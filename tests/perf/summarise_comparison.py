#!/usr/bin/env python3
"""Reads compare_transformers.py's output on stdin and prints each row as a few short lines: what a
device run's 12k-character output tail can hold (the whole rows, profiles included, go to --json-out).
Lines that are not rows pass through."""
import json
import os
import sys


def ms(side, key="ms"):
    value = (side or {}).get(key)
    return f"{value:.1f}" if isinstance(value, (int, float)) else (side or {}).get("error", "-")


def main():
    for line in sys.stdin:
        try:
            row = json.loads(line)
        except ValueError:
            print(line, end="", flush=True)
            continue
        if not isinstance(row, dict) or "ropescope_fused" not in row:
            print(line, end="", flush=True)
            continue
        ours = row["ropescope_fused"]
        name = os.path.splitext(os.path.basename(row["config"]))[0]
        print(f"{name} {row['size']} x{row['images']} tokens={row.get('tokens', ours.get('tokens'))}: "
              f"ropescope {ms(ours)} ms (vision {ms(ours, 'vision_ms')}, prefill+capture {ms(ours, 'prefill_capture_ms')}, "
              f"decoder {ms(ours, 'decoder_ms')}, capture +{ms(ours, 'capture_overhead_ms')}, decode step "
              f"{ms(ours, 'decode_step_ms')}, load {ms(ours, 'load_ms')}) | transformers eager+attn "
              f"{ms(row.get('transformers_eager_attentions'))}, sdpa {ms(row.get('transformers_sdpa_no_attentions'))}"
              + (f" | {row['transformers_error']}" if row.get("transformers_error") else ""), flush=True)
        for stage, p in (ours.get("profile") or {}).items():
            top = "; ".join(f"{k['name'][:60]} x{k['count']:.0f} {k['ms']:.2f}" for k in p.get("top_kernels", [])[:4])
            print(f"  {stage}: wall {p['wall_ms']:.1f} ms, {p['operators']:.0f} ops, {p['kernels']:.0f} kernels "
                  f"{p['kernel_ms']:.1f} ms, {p['kernel_launches']:.0f} launches | {top}", flush=True)


if __name__ == "__main__":
    main()
