#pragma once
// The position rule of each model family, as plain data: which token ids mark images and videos (or that
// mm_token_type_ids does), the merge size, and how a video's frames are placed. No Qt, no LibTorch: the
// CLI's check-positions, the engine's prompts and the Python package (libropescope_c) share it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ropescope::positions {

// Where a rule puts a sample's tokens once its layout is read: M-RoPE (the Qwen, GLM-V and PaddleOCR-VL
// families), ERNIE-4.5-VL's rule (text after a visual span resumes at its start + max(H, W)), XD-RoPE's four
// rows (p, w, h, t) of HunyuanOCR and HunyuanVL, or one sequential position per token, images and videos alike
// (Gemma 3 and Gemma 4: transformers' attention_mask.cumsum(-1) - 1). docs/SCHEMES.md has each one's source.
enum class Placement { Mrope, ErnieVl, XdRope, Sequential };

struct FamilyRule {
    std::string family;          // "qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "glm-v", "paddleocr-vl", "ernie-vl", "xd-rope",
                                 // "gemma3", "gemma4"
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
    Placement placement = Placement::Mrope;
    // ERNIE-4.5-VL: video_grid_thw's t counts frames, and two frames make one temporal patch (one step of t).
    int64_t temporalMerge = 1;
    // XD-RoPE: a span is the start token, then imageToken x (h (w + 1) + 2): one extra token, h rows of w
    // columns and a newline token, one more; the image-start tokens of a video follow its video-start token
    // (HunyuanOCR's ids; a model's config.json names its own).
    int64_t imageStartToken = 120118;
    int64_t videoStartToken = 120122;
    int64_t videoEndToken = 120123;
    // Sequential families (Gemma): the audio soft token and the begin- and end-of-image tokens around each image
    // (and each video frame) run, which only name the tokens in a report; -1: none. Their positions are the
    // text's, as every token's is.
    int64_t audioToken = -1;
    int64_t boiToken = -1;
    int64_t eoiToken = -1;

    // Rows of position_ids: 3 (t, h, w), XD-RoPE's 4 (p, w, h, t), or the sequential families' 1 ([B, L]).
    int components() const { return placement == Placement::XdRope ? 4 : placement == Placement::Sequential ? 1 : 3; }
};

// The rule of a family by its name or by its config.json model_type (qwen2_vl, qwen2_5_vl, qwen3_vl,
// qwen3_vl_moe, qwen3_5, qwen3_5_moe, glm4v, glm46v, glm4v_moe, paddleocr_vl, ernie4_5_vl_moe, hunyuan_vl, gemma3,
// gemma3_text, gemma4, gemma4_text): an MoE member takes its dense sibling's rule. nullopt for an unknown name.
std::optional<FamilyRule> familyRule(const std::string& name);
const std::vector<std::string>& familyNameList(); // the canonical names
std::string familyNames(); // "qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, glm-v, paddleocr-vl, ernie-vl, xd-rope, gemma3, gemma4"

} // namespace ropescope::positions
