#include "core/positions/family_rule.h"

#include <map>

namespace ropescope::positions {

const std::vector<std::string>& familyNameList()
{
    static const std::vector<std::string> names{"qwen2-vl",     "qwen2.5-vl", "qwen3-vl", "qwen3.5", "glm-v",
                                                "paddleocr-vl", "ernie-vl",   "xd-rope",  "gemma3",  "gemma4"};
    return names;
}

std::string familyNames()
{
    std::string s;
    for (const std::string& n : familyNameList())
        s += (s.empty() ? "" : ", ") + n;
    return s;
}

namespace {

// Gemma 3 and Gemma 4 (transformers' Gemma3Model / Gemma4Model at c1ff11866b): position_ids are
// arange(L) (generate: attention_mask.cumsum(-1) - 1, padding 1) for every token, the image and video soft
// tokens included. The Hub's ids of the tokens a report names.
void sequentialRule(FamilyRule& r)
{
    r.placement = Placement::Sequential;
    r.boiToken = 255999;
    if (r.family == "gemma3") {
        r.imageToken = 262144;
        r.videoToken = -1;
        r.eoiToken = 256000;
    } else {
        r.imageToken = 258880;
        r.videoToken = 258884; // a video is one run per frame, each between boi and eoi after its timestamp
        r.audioToken = 258881;
        r.eoiToken = 258882;
    }
}

} // namespace

std::optional<FamilyRule> familyRule(const std::string& given)
{
    // config.json's model_type spellings (and the MoE members, whose positions are their dense sibling's).
    static const std::map<std::string, std::string> aliases{{"qwen2_vl", "qwen2-vl"},
                                                            {"qwen2_5_vl", "qwen2.5-vl"},
                                                            {"qwen3_vl", "qwen3-vl"},
                                                            {"qwen3_vl_moe", "qwen3-vl"},
                                                            {"qwen3-vl-moe", "qwen3-vl"},
                                                            {"qwen3_5", "qwen3.5"},
                                                            {"qwen3_5_moe", "qwen3.5"},
                                                            {"qwen3.5-moe", "qwen3.5"},
                                                            {"glm4v", "glm-v"},
                                                            {"glm46v", "glm-v"},
                                                            {"glm4v_moe", "glm-v"},
                                                            {"glm-v-moe", "glm-v"},
                                                            {"paddleocr_vl", "paddleocr-vl"},
                                                            {"ernie4_5_vl_moe", "ernie-vl"},
                                                            {"ernie4_5_moe_vl", "ernie-vl"},
                                                            {"hunyuan_vl", "xd-rope"},
                                                            {"gemma3_text", "gemma3"},
                                                            {"gemma4_text", "gemma4"}};
    const auto alias = aliases.find(given);
    const std::string name = alias == aliases.end() ? given : alias->second;
    FamilyRule r;
    r.family = name;
    if (name == "qwen2-vl") {
    } else if (name == "qwen2.5-vl") {
        r.secondsTemporal = true;
    } else if (name == "qwen3-vl" || name == "qwen3.5") {
        r.splitVideoFrames = true;
    } else if (name == "glm-v" || name == "paddleocr-vl") {
        r.byTokenTypes = true;
        r.splitVideoFrames = true; // GLM-V: one run per frame, t at its start; PaddleOCR-VL as Qwen3-VL
    } else if (name == "ernie-vl") {
        // transformers' Ernie4_5_VLMoeModel.get_rope_index (with huggingface/transformers#45400's fix: t steps
        // by one per temporal patch); vision tokens by mm_token_type_ids, a video one run.
        r.placement = Placement::ErnieVl;
        r.byTokenTypes = true;
        r.temporalMerge = 2;
    } else if (name == "xd-rope") {
        // vLLM's HunYuanVLForConditionalGeneration.get_xdrope_input_positions: every image and video frame
        // its own span after an image-start token.
        r.placement = Placement::XdRope;
        r.imageToken = 120120;
        r.videoToken = -1; // a video's frames are image tokens after a video-start token
        r.splitVideoFrames = true;
    } else if (name == "gemma3" || name == "gemma4") {
        sequentialRule(r);
    } else {
        return std::nullopt;
    }
    return r;
}

} // namespace ropescope::positions
