"""Qwen2-VL's M-RoPE written the way its get_rope_index is: from input_ids, image_grid_thw and
video_grid_thw, the transformers form of the layout RopeScope passes (layout.input_ids and friends). Lifting
your own get_rope_index into RopeScope looks like this: keep its body, read its inputs from `layout`, return
its position_ids. This one reproduces the built-in mrope exactly (tests/cli/test_user_schemes.cpp).
"""
import numpy as np

COMPONENTS = ["t", "h", "w"]


def get_rope_index(input_ids, image_grid_thw, video_grid_thw, spatial_merge_size, image_token_id, video_token_id,
                   vision_start_token_id):
    """One sequence: position_ids [3, L] from token ids and the grids (before the merge, as the processor returns
    them). A visual segment starts after a <|vision_start|> token; its first id says image or video."""
    ids = list(np.asarray(input_ids).reshape(-1))
    images, videos = list(image_grid_thw), list(video_grid_thw)
    columns, start, nxt = [], 0, 0
    while True:
        try:
            marker = ids.index(vision_start_token_id, start)
        except ValueError:
            break
        if marker + 1 >= len(ids) or ids[marker + 1] not in (image_token_id, video_token_id):
            start = marker + 1
            continue
        t, h, w = (images.pop(0) if ids[marker + 1] == image_token_id else videos.pop(0))
        h, w = h // spatial_merge_size, w // spatial_merge_size
        text = marker + 1 - start  # text up to and including <|vision_start|>
        columns.append(np.tile(np.arange(text), (3, 1)) + nxt)
        nxt += text
        grid = np.stack(np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")).reshape(3, -1)
        columns.append(grid + nxt)
        nxt = columns[-1].max() + 1
        start = marker + 1 + t * h * w
    columns.append(np.tile(np.arange(len(ids) - start), (3, 1)) + nxt)
    return np.concatenate(columns, axis=1)


def positions(layout):
    return get_rope_index(layout.input_ids, layout.image_grid_thw, layout.video_grid_thw, layout.spatial_merge_size,
                          layout.image_token_id, layout.video_token_id, layout.vision_start_token_id)
