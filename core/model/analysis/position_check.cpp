#include "core/model/analysis/position_check.h"

#include "core/geometry/layout.h"
#include "core/geometry/position_table.h"
#include "core/model/engine/safetensors.h"

#include "core/io/input_file.h"

#include <QDir>
#include <QStringList>
#include <QJsonArray>

#include <cmath>
#include <cstring>
#include <map>

namespace ropescope::model {
namespace {

[[noreturn]] void bad(const DumpBatch& batch, const std::string& what)
{
    throw BadInputFile(batch.name.toStdString() + ": " + what);
}

const DumpTensor* find(const DumpBatch& batch, const char* name)
{
    const auto it = batch.tensors.find(name);
    return it == batch.tensors.end() ? nullptr : &it->second;
}

void need(const DumpBatch& batch, const char* name)
{
    if (!find(batch, name))
        bad(batch,
            std::string("no '") + name + "' (a dump holds input_ids, attention_mask, image_grid_thw / video_grid_thw and position_ids)");
}

// The dump's tensor as core/positions views it; whole numbers where the rule needs them.
positions::IntView intView(const DumpBatch& batch, const char* name)
{
    positions::IntView v;
    const DumpTensor* t = find(batch, name);
    if (!t)
        return v;
    if (!t->integral)
        bad(batch, std::string("'") + name + "' holds numbers that are not whole");
    if (static_cast<int64_t>(t->held()) != t->numel())
        bad(batch, std::string("'") + name + "' holds fewer numbers than its shape");
    v.given = true;
    v.shape = t->shape;
    using Element = positions::IntView::Element;
    if (t->width == 8) {
        v.data = t->ints.data();
    } else {
        v.data = t->narrow.data();
        v.element = t->width == 4 ? Element::I32 : t->width == 2 ? Element::I16 : t->narrowUnsigned ? Element::U8 : Element::I8;
    }
    return v;
}

positions::RealView realView(const DumpBatch& batch, const char* name, std::vector<double>& storage)
{
    positions::RealView v;
    const DumpTensor* t = find(batch, name);
    if (!t)
        return v;
    if (static_cast<int64_t>(t->held()) != t->numel())
        bad(batch, std::string("'") + name + "' holds fewer numbers than its shape");
    v.given = true;
    v.shape = t->shape;
    if (t->integral) { // second_per_grid_ts saved as whole numbers: one real each (a few per batch)
        storage.resize(t->held());
        for (size_t k = 0; k < storage.size(); ++k)
            storage[k] = static_cast<double>(t->intAt(k));
        v.data = storage.data();
    } else {
        v.data = t->reals.data();
    }
    return v;
}

} // namespace

int64_t DumpTensor::intAt(size_t k) const
{
    if (width == 8)
        return ints[k];
    const uint8_t* at = narrow.data() + k * static_cast<size_t>(width);
    switch (width) {
    case 4: {
        int32_t v;
        std::memcpy(&v, at, 4);
        return v;
    }
    case 2: {
        int16_t v;
        std::memcpy(&v, at, 2);
        return v;
    }
    default: return narrowUnsigned ? static_cast<int64_t>(*at) : static_cast<int64_t>(static_cast<int8_t>(*at));
    }
}

int64_t DumpTensor::numel() const
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

namespace {

// The engine's architecture for each position rule's family (PaddleOCR-VL's videos are placed as Qwen3-VL's: one run
// per frame, t at its start). ERNIE-4.5-VL has a rule but no engine: finding tokens by mm_token_type_ids, its
// rule reads no token id from the config.
const std::map<std::string, std::optional<Architecture>>& engineArchitectures()
{
    static const std::map<std::string, std::optional<Architecture>> architectures{
        {"qwen2-vl", Architecture::Qwen2VL}, {"qwen2.5-vl", Architecture::Qwen25VL}, {"qwen3-vl", Architecture::Qwen3VL},
        {"qwen3.5", Architecture::Qwen35},   {"glm-v", Architecture::GlmV},          {"paddleocr-vl", Architecture::Qwen3VL},
        {"ernie-vl", std::nullopt},          {"gemma3", Architecture::Gemma3},       {"gemma4", Architecture::Gemma4}};
    return architectures;
}

} // namespace

std::optional<PositionRule> ruleForFamily(const QString& name)
{
    const std::optional<positions::FamilyRule> family = positions::familyRule(name.toStdString());
    // XD-RoPE's four rows are the Python package's (ropescope.check_positions); the dump reader, the report's
    // figures and the window's dialog draw three axes (or the sequential families' one).
    const auto& architectures = engineArchitectures();
    if (!family || family->components() == 4 || !architectures.count(family->family))
        return std::nullopt;
    PositionRule r;
    r.family = QString::fromStdString(family->family);
    r.config.vision.tokensPerSecond = 2; // Qwen2.5-VL's; the Hub's ids (151652, 151655, 151656) and merge size 2
    r.config.architecture = architectures.at(family->family).value_or(Architecture::Qwen2VL);
    r.byTokenTypes = family->byTokenTypes;
    if (family->placement == positions::Placement::Sequential) { // Gemma: the Hub's own ids, not Qwen's
        r.config.imageToken = static_cast<int>(family->imageToken);
        r.config.videoToken = static_cast<int>(family->videoToken);
        r.config.text.vocab = 0; // not checked without the model's config
        r.audioToken = family->audioToken;
        r.boiToken = family->boiToken;
        r.eoiToken = family->eoiToken;
    }
    return r;
}

QString engineFamilyNames()
{
    QStringList names;
    for (const std::string& n : positions::familyNameList()) {
        const auto a = engineArchitectures().find(n);
        if (a != engineArchitectures().end() && a->second)
            names << QString::fromStdString(n);
    }
    return names.join(", ");
}

namespace {

// Gemma's rule with a config.json's own ids (Gemma 4 spells them *_token_id, Gemma 3 *_token_index) and vocabulary
// (text_config's, or the text-only model's own).
PositionRule sequentialRuleOf(const QJsonObject& json, const QString& family)
{
    PositionRule r = *ruleForFamily(family);
    // A whole number from 0 to 2^31 - 1 (the config's ids and vocabulary are ints), or `keep` when absent.
    const auto whole = [](const QJsonValue& v, const std::string& name, int64_t keep) {
        if (v.isUndefined() || v.isNull())
            return keep;
        const double d = v.toDouble(-1);
        if (!v.isDouble() || d < 0 || d > 2147483647.0 || d != std::floor(d))
            throw BadInputFile("config.json: " + name + " is not a whole number from 0 to 2^31 - 1");
        return static_cast<int64_t>(d);
    };
    const auto id = [&](const char* name, int64_t keep) {
        const QString key = QString(name) + (json.contains(QString(name) + "_token_id") ? "_token_id" : "_token_index");
        return whole(json.value(key), key.toStdString(), keep);
    };
    r.config.imageToken = static_cast<int>(id("image", r.config.imageToken));
    r.config.videoToken = static_cast<int>(id("video", r.config.videoToken));
    r.audioToken = id("audio", r.audioToken);
    r.boiToken = id("boi", r.boiToken);
    r.eoiToken = id("eoi", r.eoiToken);
    const QJsonObject text = json.value("text_config").toObject();
    r.config.text.vocab =
        static_cast<int>(whole(text.contains("vocab_size") ? text.value("vocab_size") : json.value("vocab_size"), "vocab_size", 0));
    return r;
}

} // namespace

PositionRule ruleForModel(const QString& modelDir)
{
    const QString path = QDir(modelDir).filePath("config.json");
    QJsonObject json;
    try {
        json = io::readJsonObjectFile(path, 16 << 20, "model config");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    const QString type = json.value("model_type").toString();
    if (type == "gemma3" || type == "gemma3_text" || type == "gemma4" || type == "gemma4_text")
        return sequentialRuleOf(json, type.left(6));
    if (type == "glm4v" || type == "glm46v" || type == "glm4v_moe")
        return *ruleForFamily("glm-v");
    if (type == "paddleocr_vl")
        return *ruleForFamily("paddleocr-vl");
    if (type == "ernie4_5_vl_moe" || type == "ernie4_5_moe_vl")
        return *ruleForFamily("ernie-vl");
    PositionRule r;
    r.config = loadModelConfig(path); // the Qwen families, with the folder's own token ids
    static const std::map<Architecture, QString> names{{Architecture::Qwen2VL, "qwen2-vl"},
                                                       {Architecture::Qwen25VL, "qwen2.5-vl"},
                                                       {Architecture::Qwen3VL, "qwen3-vl"},
                                                       {Architecture::Qwen35, "qwen3.5"}};
    r.family = names.at(r.config.architecture);
    return r;
}

positions::FamilyRule familyRuleOf(const PositionRule& rule)
{
    std::optional<positions::FamilyRule> r = positions::familyRule(rule.family.toStdString());
    if (!r)
        throw BadInputFile("no position rule for the family '" + rule.family.toStdString() + "' (" + familyNames().toStdString() + ")");
    r->imageToken = rule.config.imageToken;
    r->videoToken = rule.config.videoToken;
    r->audioToken = rule.audioToken;
    r->boiToken = rule.boiToken;
    r->eoiToken = rule.eoiToken;
    r->vocab = rule.config.text.vocab;
    r->mergeSize = rule.config.vision.mergeSize;
    r->tokensPerSecond = rule.config.vision.tokensPerSecond;
    return *r;
}

QString familyNames()
{
    QStringList names;
    for (const std::string& n : positions::familyNameList())
        if (ruleForFamily(QString::fromStdString(n)))
            names << QString::fromStdString(n);
    return names.join(", ");
}

void checkBatchEach(const DumpBatch& batch, const PositionRule& rule, bool keepPositions, const std::function<void(SampleCheck&&)>& each)
{
    need(batch, "input_ids");
    need(batch, "position_ids");
    positions::Batch view;
    view.name = batch.name.toStdString();
    view.inputIds = intView(batch, "input_ids");
    const positions::IntView positionIds = intView(batch, "position_ids");
    view.attentionMask = intView(batch, "attention_mask");
    const positions::IntView ropeDeltas = intView(batch, "rope_deltas");
    view.imageGrids = intView(batch, "image_grid_thw");
    view.videoGrids = intView(batch, "video_grid_thw");
    std::vector<double> seconds; // a dump holds whole seconds as ints: the view needs them as reals
    view.secondPerGrid = realView(batch, "second_per_grid_ts", seconds);
    view.tokenTypes = intView(batch, "mm_token_type_ids");
    const positions::FamilyRule family = familyRuleOf(rule);
    try {
        positions::checkBatchEach(view, positionIds, ropeDeltas, family, keepPositions, [&](positions::SampleCheck&& p) {
            SampleCheck c;
            c.batch = batch.name;
            c.row = p.row;
            c.tokens = p.tokens;
            c.kind = p.kind;
            c.detail = QString::fromStdString(p.detail);
            c.firstToken = p.firstToken;
            c.axis = p.axis;
            c.got = p.got;
            c.expected = p.expected;
            c.segment = QString::fromStdString(p.segment);
            c.differing = p.differing;
            c.components = family.components();
            c.sequences = p.sequences;
            c.gotPositions = std::move(p.gotPositions);
            c.expectedPositions = std::move(p.expectedPositions);
            c.segments.reserve(p.segments.size());
            for (const std::string& s : p.segments)
                c.segments.push_back(QString::fromStdString(s));
            c.layout = std::move(p.layout);
            each(std::move(c));
        });
    } catch (const positions::BadBatch& e) {
        throw BadInputFile(e.what());
    }
}

std::vector<SampleCheck> checkBatch(const DumpBatch& batch, const PositionRule& rule, bool keepPositions)
{
    std::vector<SampleCheck> out;
    checkBatchEach(batch, rule, keepPositions, [&](SampleCheck&& c) { out.push_back(std::move(c)); });
    return out;
}

geometry::PositionTable pipelineTable(const SampleCheck& c)
{
    geometry::PositionTable t = geometry::tokenMetadata(geometry::parseLayout(c.layout));
    const int components = c.components;
    if (static_cast<int64_t>(t.size()) != c.tokens || static_cast<int64_t>(c.gotPositions.size()) != components * c.tokens)
        throw ModelError("the sample's positions were not kept");
    t.customScheme = "pipeline";
    t.customComponents = components == 1 ? std::vector<std::string>{"position"} : std::vector<std::string>{"t", "h", "w"};
    t.positions.resize(c.tokens, components);
    for (int a = 0; a < components; ++a)
        for (int64_t k = 0; k < c.tokens; ++k)
            t.positions(k, a) = static_cast<double>(c.gotPositions[static_cast<size_t>(a * c.tokens + k)]);
    return t;
}

QJsonObject sampleCheckJson(const SampleCheck& c)
{
    QJsonObject o{{"batch", c.batch},
                  {"row", c.row},
                  {"tokens", static_cast<double>(c.tokens)},
                  {"matches", c.kind == FaultKind::None},
                  {"kind", faultKindName(c.kind)}};
    if (c.kind == FaultKind::None)
        return o;
    o["detail"] = c.detail;
    if (c.sequences > 1)
        o["sequences"] = static_cast<double>(c.sequences);
    if (c.firstToken >= 0) {
        o["first_token"] = static_cast<double>(c.firstToken);
        o["axis"] = axisName(c);
        o["segment"] = c.segment;
        o["differing_tokens"] = static_cast<double>(c.differing);
    }
    o["got"] = static_cast<double>(c.got);
    o["expected"] = static_cast<double>(c.expected);
    return o;
}

QString axisName(const SampleCheck& c)
{
    static const char* axes[] = {"t", "h", "w", "text"};
    if (c.axis < 0 || c.axis > 3)
        return {};
    return c.components == 1 ? QString("position") : QString(axes[c.axis]);
}

} // namespace ropescope::model
