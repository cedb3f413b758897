"""Times ropescope.rope_index on the issue's batch: 8 rows of about 3.4k tokens, 4 images each (26x26 patches, 169
tokens), left-padded, Qwen2-VL's ids. With Debian's torch it also times transformers' Qwen2-VL get_rope_index
(4.50's loop, transcribed below with torch exactly as transformers writes it; transformers itself is not installed
here) on the same batch with 1 and 2 threads, and checks both give the same result.

    PYTHONPATH=build/python python3 tests/python/bench_rope_index.py [repeats]
"""
import sys
import time

import numpy as np

import ropescope

VS, VE, IMG = 151652, 151653, 151655


def batch():
    rng = np.random.default_rng(0)
    rows, grids = [], []
    for b in range(8):
        ids = []
        for _ in range(4):
            ids += list(rng.integers(0, 150000, size=200)) + [VS] + [IMG] * 169 + [VE]
            grids.append([1, 26, 26])
        ids += list(rng.integers(0, 150000, size=3400 - len(ids) - 10 * b))
        rows.append(ids)
    L = max(map(len, rows))
    ids, mask = np.zeros((8, L), np.int64), np.zeros((8, L), np.int64)
    for b, r in enumerate(rows):
        ids[b, L - len(r):] = r
        mask[b, L - len(r):] = 1
    return ids, mask, np.array(grids, np.int64)


def median_ms(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def transformers_qwen2vl(torch, input_ids, image_grid_thw, attention_mask, spatial_merge_size=2):
    # Qwen2VLForConditionalGeneration.get_rope_index (transformers 4.50), images only.
    position_ids = torch.ones(3, input_ids.shape[0], input_ids.shape[1], dtype=input_ids.dtype)
    image_index = 0
    deltas = []
    for i, ids in enumerate(input_ids):
        ids = ids[attention_mask[i] == 1]
        vision_start_indices = torch.argwhere(ids == VS).squeeze(1)
        vision_tokens = ids[vision_start_indices + 1]
        image_nums = (vision_tokens == IMG).sum()
        input_tokens = ids.tolist()
        llm_pos_ids_list = []
        st = 0
        for _ in range(image_nums):
            ed = input_tokens.index(IMG, st)
            t, h, w = image_grid_thw[image_index]
            image_index += 1
            llm_grid_t, llm_grid_h, llm_grid_w = t.item(), h.item() // spatial_merge_size, w.item() // spatial_merge_size
            text_len = ed - st
            st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
            llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
            t_index = torch.arange(llm_grid_t).view(-1, 1).expand(-1, llm_grid_h * llm_grid_w).flatten()
            h_index = torch.arange(llm_grid_h).view(1, -1, 1).expand(llm_grid_t, -1, llm_grid_w).flatten()
            w_index = torch.arange(llm_grid_w).view(1, 1, -1).expand(llm_grid_t, llm_grid_h, -1).flatten()
            llm_pos_ids_list.append(torch.stack([t_index, h_index, w_index]) + text_len + st_idx)
            st = ed + llm_grid_t * llm_grid_h * llm_grid_w
        if st < len(input_tokens):
            st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
            text_len = len(input_tokens) - st
            llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
        llm_positions = torch.cat(llm_pos_ids_list, dim=1).reshape(3, -1)
        position_ids[..., i, attention_mask[i] == 1] = llm_positions
        deltas.append(llm_positions.max() + 1 - len(input_ids[i]))
    return position_ids, torch.tensor(deltas).unsqueeze(1)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    ids, mask, grids = batch()
    print("batch: %d x %d tokens, %d images of %d tokens" % (ids.shape[0], ids.shape[1], len(grids), 169))
    ours = median_ms(lambda: ropescope.rope_index("qwen2-vl", ids, grids, attention_mask=mask), repeats)
    print("ropescope.rope_index: median %.3f ms over %d calls" % (ours, repeats))
    try:
        import torch
    except ImportError:
        print("transformers' loop: skipped (no torch)")
        return
    t_ids, t_mask, t_grids = torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(grids)
    for threads in (1, 2):  # on a busy machine torch's second thread costs more than it gives
        torch.set_num_threads(threads)
        theirs = median_ms(lambda: transformers_qwen2vl(torch, t_ids, t_grids, t_mask), max(repeats // 20, 5))
        print("transformers 4.50 Qwen2-VL get_rope_index (torch %s, %d thread%s): median %.3f ms; %.0fx" %
              (torch.__version__, threads, "s" if threads > 1 else "", theirs, theirs / ours))
    got = ropescope.rope_index("qwen2-vl", ids, grids, attention_mask=mask)
    want = transformers_qwen2vl(torch, t_ids, t_grids, t_mask)
    assert (got[0] == want[0].numpy()).all() and (got[1] == want[1].numpy()).all(), "results differ"
    print("same position_ids and rope_deltas")


if __name__ == "__main__":
    main()
