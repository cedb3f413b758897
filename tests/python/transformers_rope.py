"""transformers' get_rope_index for Qwen2-VL, Qwen2.5-VL and Qwen3-VL / Qwen3.5, transcribed to numpy line by line
from transformers' modeling code (4.50 for Qwen2-VL and Qwen2.5-VL; Qwen3-VL's splits video_grid_thw into
one-frame grids first, as its processor writes a timestamp and its own <|vision_start|> before each frame).
The tests compare ropescope.rope_index with it on random batches: an independent computation, not RopeScope's
code. Qwen2.5-VL's time index is computed in float32, as torch computes it (int64 range x float32 tensor)."""
import numpy as np


def get_rope_index(form, input_ids, image_grid_thw, video_grid_thw, attention_mask, second_per_grid_ts=None, *, image_token_id,
                   video_token_id, vision_start_token_id, spatial_merge_size=2, tokens_per_second=2):
    if form == "qwen3" and video_grid_thw is not None:
        video_grid_thw = np.repeat(video_grid_thw, video_grid_thw[:, 0], axis=0)
        video_grid_thw[:, 0] = 1
    total_input_ids = input_ids
    if attention_mask is None:
        attention_mask = np.ones_like(total_input_ids)
    position_ids = np.ones((3, input_ids.shape[0], input_ids.shape[1]), dtype=np.int64)
    image_index, video_index = 0, 0
    deltas = []
    for i, ids in enumerate(total_input_ids):
        ids = ids[attention_mask[i] == 1]
        vision_start_indices = np.argwhere(ids == vision_start_token_id)[:, 0]
        vision_tokens = ids[vision_start_indices + 1]
        image_nums = int((vision_tokens == image_token_id).sum())
        video_nums = int((vision_tokens == video_token_id).sum())
        input_tokens = ids.tolist()
        llm_pos_ids_list = []
        st = 0
        remain_images, remain_videos = image_nums, video_nums
        for _ in range(image_nums + video_nums):
            if image_token_id in input_tokens and remain_images > 0:
                ed_image = input_tokens.index(image_token_id, st)
            else:
                ed_image = len(input_tokens) + 1
            if video_token_id in input_tokens and remain_videos > 0:
                ed_video = input_tokens.index(video_token_id, st)
            else:
                ed_video = len(input_tokens) + 1
            if ed_image < ed_video:
                t, h, w = image_grid_thw[image_index]
                second_per_grid_t = 0
                image_index += 1
                remain_images -= 1
                ed = ed_image
            else:
                t, h, w = video_grid_thw[video_index]
                second_per_grid_t = second_per_grid_ts[video_index] if second_per_grid_ts is not None else 1.0
                video_index += 1
                remain_videos -= 1
                ed = ed_video
            llm_grid_t, llm_grid_h, llm_grid_w = int(t), int(h) // spatial_merge_size, int(w) // spatial_merge_size
            text_len = ed - st
            st_idx = llm_pos_ids_list[-1].max() + 1 if llm_pos_ids_list else 0
            llm_pos_ids_list.append(np.broadcast_to(np.arange(text_len).reshape(1, -1), (3, text_len)) + st_idx)
            expanded_range = np.broadcast_to(np.arange(llm_grid_t).reshape(-1, 1), (llm_grid_t, llm_grid_h * llm_grid_w))
            if form == "qwen2.5":
                time_tensor = expanded_range.astype(np.float32) * np.float32(second_per_grid_t) * np.float32(tokens_per_second)
                t_index = time_tensor.astype(np.int64).flatten()
            else:
                t_index = expanded_range.flatten()
            h_index = np.broadcast_to(np.arange(llm_grid_h).reshape(1, -1, 1), (llm_grid_t, llm_grid_h, llm_grid_w)).flatten()
            w_index = np.broadcast_to(np.arange(llm_grid_w).reshape(1, 1, -1), (llm_grid_t, llm_grid_h, llm_grid_w)).flatten()
            llm_pos_ids_list.append(np.stack([t_index, h_index, w_index]) + text_len + st_idx)
            st = ed + llm_grid_t * llm_grid_h * llm_grid_w
        if st < len(input_tokens):
            st_idx = llm_pos_ids_list[-1].max() + 1 if llm_pos_ids_list else 0
            text_len = len(input_tokens) - st
            llm_pos_ids_list.append(np.broadcast_to(np.arange(text_len).reshape(1, -1), (3, text_len)) + st_idx)
        llm_positions = np.concatenate(llm_pos_ids_list, axis=1).reshape(3, -1)
        position_ids[:, i, attention_mask[i] == 1] = llm_positions
        deltas.append(llm_positions.max() + 1 - len(total_input_ids[i]))
    return position_ids, np.array(deltas, dtype=np.int64).reshape(-1, 1)
