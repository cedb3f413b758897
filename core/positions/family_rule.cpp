#include "core/positions/family_rule.h"

#include <map>

namespace ropescope::positions {

const std::vector<std::string>& familyNameList()
{
    static const std::vector<std::string> names{"qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "glm-v", "paddleocr-vl"};
    return names;
}

std::string familyNames()
{
    std::string s;
    for (const std::string& n : familyNameList())
        s += (s.empty() ? "" : ", ") + n;
    return s;
}

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
                                                            {"paddleocr_vl", "paddleocr-vl"}};
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
    } else {
        return std::nullopt;
    }
    return r;
}

} // namespace ropescope::positions
