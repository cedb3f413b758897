# The transformers side of scripts/bench_transformers_gemma.sh (its header says what is timed and how); run
# inside its chroot by that script.
import argparse, json, os, statistics, sys, time, types
from importlib.machinery import ModuleSpec

ap = argparse.ArgumentParser()
ap.add_argument("--config", required=True)
ap.add_argument("--config-name", default="")
ap.add_argument("--layers", type=int, required=True)
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--blas-threads", type=int, default=2)
ap.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa")
ap.add_argument("--text-tokens", type=int, default=216)
ap.add_argument("--image-tokens", type=int, default=784)
ap.add_argument("--only", choices=["all", "text", "image_mask"], default="all")
a = ap.parse_args()

# Import-only stand-ins (see the shell part's header): a `tokenizers` whose names are placeholder classes, and no
# import-time version check.
class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {"__init__": lambda self, *x, **y: None})
        setattr(self, name, value)
        return value
for name in ["tokenizers", "tokenizers.models", "tokenizers.decoders", "tokenizers.normalizers",
             "tokenizers.pre_tokenizers", "tokenizers.processors", "tokenizers.trainers"]:
    m = _Stub(name)
    m.__spec__ = ModuleSpec(name, None)
    m.__path__ = []
    sys.modules[name] = m
check = types.ModuleType("transformers.dependency_versions_check")
check.dep_version_check = lambda pkg, hint=None: None
sys.modules["transformers.dependency_versions_check"] = check

import torch
torch.set_num_threads(a.threads)
import transformers
from transformers.models.gemma4 import configuration_gemma4 as cg
from transformers.models.gemma4 import modeling_gemma4 as mg

with open(a.config) as f:
    full = json.load(f)
tc = dict(full["text_config"])
if not 1 <= a.layers <= tc["num_hidden_layers"]:
    sys.exit(f"--layers {a.layers}: the config has {tc['num_hidden_layers']} decoder layers")
tc["num_hidden_layers"] = a.layers
tc["layer_types"] = tc["layer_types"][: a.layers]
tc.pop("model_type", None)
kinds = list(tc["layer_types"])
cfg = cg.Gemma4TextConfig(**tc)
if cfg.layer_types != kinds:
    # Gemma4TextConfig forces the last layer to full attention; the real model's first N layers keep their own kinds
    # (bench model's --layers does the same), and the full layers' head size and kv heads follow the kinds.
    cfg.layer_types = kinds
    cfg.per_layer_config = {i: {"head_dim": tc.get("global_head_dim", 512),
                                **({"num_key_value_heads": tc["num_global_key_value_heads"]}
                                   if tc.get("attention_k_eq_v") and tc.get("num_global_key_value_heads") else {})}
                            for i, kind in enumerate(kinds) if kind == "full_attention"}

torch.manual_seed(20261121)
t0 = time.perf_counter()
model = mg.Gemma4ForCausalLM._from_config(cfg, attn_implementation=a.attn, dtype=torch.float32).eval()
load_s = time.perf_counter() - t0
assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "lm_head is not tied"

# bench model's synthetic prompt: text split around one near-square image grid, boi and eoi around it.
rows = int(a.image_tokens ** 0.5)
cols = (a.image_tokens + rows - 1) // rows
image = rows * cols
before = a.text_tokens // 2
after = a.text_tokens - before
L = before + 1 + image + 1 + after
g = torch.Generator().manual_seed(7)
ceiling = min(full.get("boi_token_id", cfg.vocab_size), full.get("image_token_id", cfg.vocab_size), cfg.vocab_size)
ids = torch.randint(0, ceiling, (1, L), generator=g)
types_ = torch.zeros(1, L, dtype=torch.long)
types_[0, before + 1: before + 1 + image] = 1

def prefill_text():
    return model(input_ids=ids, use_cache=False, logits_to_keep=1).logits

def prefill_image_mask():
    # Gemma4Model.forward's own mask path for mm_token_type_ids, then the text model on those masks.
    embeds = model.model.embed_tokens(ids)
    position_ids = torch.arange(L).unsqueeze(0)
    block = mg.get_block_sequence_ids_for_mask(types_, device=embeds.device)
    masks = mg.create_masks_for_vision_model(config=cfg, inputs_embeds=embeds, attention_mask=None,
                                             past_key_values=None, position_ids=position_ids,
                                             block_sequence_ids=block)
    return model(inputs_embeds=embeds, attention_mask=masks, position_ids=position_ids, use_cache=False,
                 logits_to_keep=1).logits

def timed(fn):
    t = time.perf_counter()
    out = fn()
    ms = (time.perf_counter() - t) * 1e3
    if not torch.isfinite(out).all():
        sys.exit("non-finite logits")
    return ms

stages = {"text": prefill_text, "image_mask": prefill_image_mask}
if a.only != "all":
    stages = {a.only: stages[a.only]}
result = {
    "side": "transformers",
    "transformers": transformers.__version__ + " (c1ff11866b)",
    "torch": torch.__version__,
    "config": a.config_name,
    "layers": a.layers,
    "layer_types": [layer.self_attn.layer_type for layer in model.model.layers],
    "loadavg_start": open("/proc/loadavg").read().split()[:3],
    "attention": a.attn,
    "dtype": "fp32",
    "threads": f"torch {torch.get_num_threads()} intra-op, OpenBLAS {a.blas_threads}",
    "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    "tokens": L,
    "image_tokens": image,
    "runs": a.runs,
    "experts_implementation": model.config._experts_implementation if cfg.enable_moe_block else None,
    "load_s": round(load_s, 1),
    "params": sum(p.numel() for p in model.parameters()),
}
times = {k: [] for k in stages}
with torch.no_grad():
    for k, fn in stages.items():  # one untimed round of each
        timed(fn)
    for _ in range(a.runs):
        for k, fn in stages.items():
            times[k].append(timed(fn))
for k, v in times.items():
    result[f"{k}_prefill_ms"] = round(statistics.median(v), 1)
    result[f"{k}_prefill_runs_ms"] = [round(x, 1) for x in v]

if cfg.enable_moe_block:
    layer = model.model.layers[0]
    h = cfg.hidden_size
    active = cfg.top_k_experts * cfg.moe_intermediate_size
    x = torch.randn(L, h, generator=g)
    gate = torch.randn(active, h, generator=g) / h ** 0.5
    up = torch.randn(active, h, generator=g) / h ** 0.5
    down = torch.randn(h, active, generator=g) / active ** 0.5
    act = torch.nn.functional.gelu
    lin = torch.nn.functional.linear

    def moe():  # the decoder layer's expert branch: router on the residual, experts on pre_feedforward_layernorm_2
        _, w, idx = layer.router(x)
        return layer.experts(layer.pre_feedforward_layernorm_2(x), idx, w)

    default_experts = model.config._experts_implementation

    def dense():
        return lin(act(lin(x, gate), approximate="tanh") * lin(x, up), down)

    def ms(fn):
        t = time.perf_counter(); fn(); return (time.perf_counter() - t) * 1e3

    result.update({"moe_active_width": active})
    # transformers' default experts path (grouped_mm: on torch 2.6's CPU its fallback, one torch.mm per expert over
    # the tokens sorted by expert), then the eager loop (Gemma4TextExperts.forward) for comparison.
    for impl in [default_experts, "eager"]:
        model.set_experts_implementation(impl)
        suffix = "" if impl == default_experts else f"_{impl}"
        with torch.no_grad():
            ms(dense); ms(moe)
            d, m, r = [], [], []
            for _ in range(max(a.runs, 3)):
                d.append(ms(dense)); m.append(ms(moe)); r.append(m[-1] / d[-1])
        result.update({f"moe_block{suffix}_ms": round(statistics.median(m), 1),
                       f"dense_mlp_active_width{suffix}_ms": round(statistics.median(d), 1),
                       f"moe_over_dense{suffix}": round(statistics.median(r), 2)})
    model.set_experts_implementation(default_experts)
    with torch.no_grad():
        _, _, idx = layer.router(x)
    result["moe_experts_hit"] = int(idx.unique().numel())

import resource
result["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(result, indent=1))
