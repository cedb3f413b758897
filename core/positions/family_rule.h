#pragma once
// The position rule of each model family, as plain data: which token ids mark images and videos (or that
// mm_token_type_ids does), the merge size, and how a video's frames are placed. No Qt, no LibTorch: the
// CLI's check-positions, the engine's prompts and the Python package (libropescope_c) share it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ropescope::positions {

struct FamilyRule {
    std::string family;          // "qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "glm-v", "paddleocr-vl"
    int64_t imageToken = 151655; // the Hub's ids
    int64_t videoToken = 151656;
    int64_t vocab = 0; // ids must be below it; 0: not checked (a family named without its config)
    int mergeSize = 2;
    double tokensPerSecond = 2; // Qwen2.5-VL's temporal rule
    // GLM-V and PaddleOCR-VL find their vision tokens by mm_token_type_ids (1 image, 2 video), not by id.
    bool byTokenTypes = false;
    // Qwen3-VL, Qwen3.5, GLM-V (and PaddleOCR-VL): every temporal patch of a video is its own run of pad
    // tokens (frames separated by timestamp text), placed as a one-frame grid with t at its start.
    bool splitVideoFrames = false;
    // Qwen2.5-VL: a video's t is floor(frame * second_per_grid * tokens_per_second); the others step t by 1.
    bool secondsTemporal = false;
};

// The rule of a family by its name or by its config.json model_type (qwen2_vl, qwen2_5_vl, qwen3_vl,
// qwen3_vl_moe, qwen3_5, qwen3_5_moe, glm4v, glm46v, glm4v_moe, paddleocr_vl): an MoE member takes its dense
// sibling's rule. nullopt for an unknown name.
std::optional<FamilyRule> familyRule(const std::string& name);
const std::vector<std::string>& familyNameList(); // the canonical names
std::string familyNames();                        // "qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, glm-v, paddleocr-vl"

} // namespace ropescope::positions
