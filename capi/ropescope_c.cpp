// The C API over core/positions (the families' position rules) and core/geometry (schemes, PTD, prior).
// Every entry point catches everything: an exception never crosses into the caller's interpreter.
#include "capi/ropescope_c.h"

#include "capi/given_positions.h"
#include "core/geometry/errors.h"
#include "core/geometry/metrics.h"
#include "core/geometry/scheme.h"
#include "core/geometry/scheme_parameters.h"
#include "core/positions/batch.h"
#include "core/positions/family_rule.h"
#include "core/positions/patch_positions.h"
#include "core/positions/position_check.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

using namespace ropescope;

struct rs_rule {
    positions::FamilyRule rule;
};
struct rs_check {
    std::vector<positions::SampleCheck> samples;
};
struct rs_table {
    geometry::PositionTable table;
    std::vector<std::string> componentNames;
};

namespace {

thread_local std::string lastError, lastParameter;

int fail(int status, const std::string& message, const std::string& parameter = {})
{
    lastError = message;
    lastParameter = parameter;
    return status;
}

// A batch error's parameter: core/positions names the tensor first, quoted ("'attention_mask' must be [B, L]").
std::string quotedName(const std::string& message)
{
    const size_t end = message.size() > 1 && message[0] == '\'' ? message.find('\'', 1) : std::string::npos;
    return end == std::string::npos ? std::string() : message.substr(1, end - 1);
}

// Runs f, turning every exception into a status and the thread's error line.
template <class F> int guarded(F f)
{
    try {
        lastError.clear();
        lastParameter.clear();
        f();
        return RS_OK;
    } catch (const geometry::InvalidInput& e) {
        return fail(RS_INVALID_INPUT, e.what(), e.parameter());
    } catch (const positions::BadBatch& e) {
        return fail(RS_INVALID_INPUT, e.what(), quotedName(e.what()));
    } catch (const std::bad_alloc&) {
        return fail(RS_ERROR, "out of memory");
    } catch (const std::exception& e) {
        return fail(RS_ERROR, e.what());
    } catch (...) {
        return fail(RS_ERROR, "unknown error");
    }
}

[[noreturn]] void invalid(const std::string& message)
{
    throw geometry::InvalidInput(message);
}

std::vector<int64_t> shapeOf(int32_t ndim, const int64_t* shape, const char* name)
{
    if (ndim < 0 || ndim > 4)
        invalid(std::string(name) + ": at most 4 dimensions");
    std::vector<int64_t> s(shape, shape + ndim);
    int64_t n = 1;
    for (int64_t d : s) {
        if (d < 0 || (d > 0 && n > (int64_t(1) << 40) / d))
            invalid(std::string(name) + ": a shape that is negative or too large");
        n *= d;
    }
    return s;
}

positions::IntView intView(const rs_ints& t, const char* name)
{
    positions::IntView v;
    if (!t.given)
        return v;
    v.given = true;
    v.shape = shapeOf(t.ndim, t.shape, name);
    v.data = t.data;
    if (!v.data && v.numel() > 0)
        invalid(std::string(name) + ": no data");
    return v;
}

positions::Batch batchView(const rs_batch* b)
{
    if (!b)
        invalid("no batch");
    positions::Batch v;
    v.inputIds = intView(b->input_ids, "input_ids");
    v.attentionMask = intView(b->attention_mask, "attention_mask");
    v.tokenTypes = intView(b->mm_token_type_ids, "mm_token_type_ids");
    v.imageGrids = intView(b->image_grid_thw, "image_grid_thw");
    v.videoGrids = intView(b->video_grid_thw, "video_grid_thw");
    const rs_reals& s = b->second_per_grid_ts;
    if (s.given) {
        v.secondPerGrid.given = true;
        v.secondPerGrid.shape = shapeOf(s.ndim, s.shape, "second_per_grid_ts");
        v.secondPerGrid.data = s.data;
        if (!s.data && v.secondPerGrid.numel() > 0)
            invalid("second_per_grid_ts: no data");
    }
    return v;
}

const rs_rule& needRule(const rs_rule* rule)
{
    if (!rule)
        invalid("no rule");
    return *rule;
}

// A parameter given as text, read as its row's type says (the CLI's flags read the same types).
void setParameter(geometry::SchemeParams& p, const std::string& key, const std::string& text)
{
    auto number = [&](const std::string& s) {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE)
            throw geometry::InvalidInput(key, "expected a number, got '" + s + "'");
        return v;
    };
    if (key == "theta") {
        p.rotary.theta = number(text);
        return;
    }
    if (key == "head_dim") {
        const double v = number(text);
        if (v != static_cast<double>(static_cast<int>(v)))
            throw geometry::InvalidInput(key, "expected a whole number, got '" + text + "'");
        p.rotary.headDim = static_cast<int>(v);
        return;
    }
    const geometry::SchemeParameter* row = geometry::findSchemeParameter(key);
    if (!row) {
        std::string keys = "theta, head_dim";
        for (const geometry::SchemeParameter& r : geometry::schemeParameters())
            keys += std::string(", ") + r.key;
        throw geometry::InvalidInput(key, "no such parameter (" + keys + ")");
    }
    switch (row->type) {
    case geometry::SchemeParameter::Type::Number: row->set(p, number(text)); return;
    case geometry::SchemeParameter::Type::Choice: {
        const auto index = geometry::choiceIndex(*row, text);
        if (!index)
            throw geometry::InvalidInput(key, "expected " + geometry::choiceList(*row) + ", got '" + text + "'");
        row->set(p, *index);
        return;
    }
    case geometry::SchemeParameter::Type::Flag:
        if (text != "on" && text != "off")
            throw geometry::InvalidInput(key, "expected on or off, got '" + text + "'");
        row->set(p, text == "on" ? 1 : 0);
        return;
    case geometry::SchemeParameter::Type::Vector: {
        std::array<double, 3> v{};
        size_t at = 0;
        for (int i = 0; i < 3; ++i) {
            const size_t comma = i < 2 ? text.find(',', at) : text.size();
            if (comma == std::string::npos)
                throw geometry::InvalidInput(key, "expected three numbers x,y,z, got '" + text + "'");
            v[static_cast<size_t>(i)] = number(text.substr(at, comma - at));
            at = comma + 1;
        }
        row->setVector(p, v);
        return;
    }
    }
}

const char* typeName(geometry::SchemeParameter::Type type)
{
    switch (type) {
    case geometry::SchemeParameter::Type::Number: return "number";
    case geometry::SchemeParameter::Type::Choice: return "choice";
    case geometry::SchemeParameter::Type::Flag: return "flag";
    case geometry::SchemeParameter::Type::Vector: return "vector";
    }
    return "?";
}

const rs_table& needTable(const rs_table* table)
{
    if (!table)
        invalid("no table");
    return *table;
}

} // namespace

extern "C" {

const char* rs_last_error(void)
{
    return lastError.c_str();
}

const char* rs_last_error_parameter(void)
{
    return lastParameter.c_str();
}

int32_t rs_abi_version(void)
{
    // 2: xd-rope's four rows (rs_rule_components, rs_rule_configure_spans). 3: rs_rope_index and rs_table_prior
    // take their arrays' capacities (a caller's binding of the old signatures must not load this library).
    // 4: gemma3 and gemma4 (rs_rule_configure_markers, rs_sample's sequences, rs_gemma4_patch_positions).
    return 4;
}

int rs_rule_new(const char* family, rs_rule** out)
{
    return guarded([&] {
        if (!out)
            invalid("no place for the rule");
        *out = nullptr;
        const std::string name = family ? family : "";
        const std::optional<positions::FamilyRule> r = positions::familyRule(name);
        if (!r)
            throw geometry::InvalidInput(
                "family", "expected one of " + positions::familyNames() + " (or a config.json model_type), got '" + name + "'");
        *out = new rs_rule{*r};
    });
}

void rs_rule_free(rs_rule* rule)
{
    delete rule;
}

const char* rs_rule_family(const rs_rule* rule)
{
    return rule ? rule->rule.family.c_str() : "";
}

int32_t rs_rule_by_token_types(const rs_rule* rule)
{
    return rule && rule->rule.byTokenTypes ? 1 : 0;
}

int32_t rs_rule_components(const rs_rule* rule)
{
    return rule ? rule->rule.components() : 0;
}

int rs_rule_configure_spans(rs_rule* rule, int64_t imageStartTokenId, int64_t videoStartTokenId, int64_t videoEndTokenId)
{
    return guarded([&] {
        if (!rule)
            invalid("no rule");
        positions::FamilyRule& r = rule->rule;
        if (imageStartTokenId >= 0)
            r.imageStartToken = imageStartTokenId;
        if (videoStartTokenId >= 0)
            r.videoStartToken = videoStartTokenId;
        if (videoEndTokenId >= 0)
            r.videoEndToken = videoEndTokenId;
    });
}

int rs_rule_configure_markers(rs_rule* rule, int64_t audioTokenId, int64_t boiTokenId, int64_t eoiTokenId)
{
    return guarded([&] {
        if (!rule)
            invalid("no rule");
        positions::FamilyRule& r = rule->rule;
        if (audioTokenId >= 0)
            r.audioToken = audioTokenId;
        if (boiTokenId >= 0)
            r.boiToken = boiTokenId;
        if (eoiTokenId >= 0)
            r.eoiToken = eoiTokenId;
    });
}

int rs_rule_configure(rs_rule* rule, int64_t imageTokenId, int64_t videoTokenId, int64_t spatialMergeSize, double tokensPerSecond,
                      int64_t vocabSize)
{
    return guarded([&] {
        if (!rule)
            invalid("no rule");
        if (spatialMergeSize == 0 || spatialMergeSize > 64)
            throw geometry::InvalidInput("spatial_merge_size", "must be from 1 to 64");
        if (tokensPerSecond == 0 || !std::isfinite(tokensPerSecond) || tokensPerSecond >= 1e6)
            throw geometry::InvalidInput("tokens_per_second", "must be above 0 and below 1e6");
        positions::FamilyRule& r = rule->rule;
        if (imageTokenId >= 0)
            r.imageToken = imageTokenId;
        if (videoTokenId >= 0)
            r.videoToken = videoTokenId;
        if (spatialMergeSize > 0)
            r.mergeSize = static_cast<int>(spatialMergeSize);
        if (tokensPerSecond > 0)
            r.tokensPerSecond = tokensPerSecond;
        if (vocabSize > 0)
            r.vocab = vocabSize;
    });
}

const char* rs_family_names(void)
{
    static const std::string names = positions::familyNames();
    return names.c_str();
}

int rs_rope_index(const rs_rule* rule, const rs_batch* batch, int64_t* positionIds, int64_t positionCapacity, int64_t* ropeDeltas,
                  int64_t deltasCapacity)
{
    return guarded([&] {
        const positions::Batch view = batchView(batch);
        const positions::IntView& ids = view.inputIds;
        if (!ids.given || ids.shape.size() != 2)
            throw geometry::InvalidInput("input_ids", "'input_ids' must be [B, L]");
        // Both arrays are the caller's: what the rule writes is checked against the room given before a value is
        // written (xd-rope writes 4 rows where the others write 3). shapeOf bounds B x L by 2^40.
        const int64_t rows = ids.shape[0], needed = needRule(rule).rule.components() * rows * ids.shape[1];
        if (!positionIds || positionCapacity < needed)
            throw geometry::InvalidInput("position_ids",
                                         "room for " + std::to_string(positionIds ? positionCapacity : 0) + " values; the rule writes " +
                                             std::to_string(needed) + " (" + std::to_string(rule->rule.components()) + " x B x L)");
        if (!ropeDeltas || deltasCapacity < rows)
            throw geometry::InvalidInput("rope_deltas",
                                         "room for " + std::to_string(ropeDeltas ? deltasCapacity : 0) + " values; the rule writes " +
                                             std::to_string(rows) + " (one per sample)");
        positions::ropeIndex(view, rule->rule, positionIds, ropeDeltas);
    });
}

int rs_check_positions(const rs_rule* rule, const rs_batch* batch, const rs_ints* positionIds, const rs_ints* ropeDeltas, rs_check** out)
{
    return guarded([&] {
        if (!out)
            invalid("no place for the check");
        *out = nullptr;
        const positions::Batch view = batchView(batch);
        const positions::IntView pos = positionIds ? intView(*positionIds, "position_ids") : positions::IntView{};
        const positions::IntView deltas = ropeDeltas ? intView(*ropeDeltas, "rope_deltas") : positions::IntView{};
        auto check = std::make_unique<rs_check>();
        check->samples = positions::checkBatch(view, pos, deltas, needRule(rule).rule, false);
        *out = check.release();
    });
}

int64_t rs_check_count(const rs_check* check)
{
    return check ? static_cast<int64_t>(check->samples.size()) : 0;
}

int rs_check_sample(const rs_check* check, int64_t index, rs_sample* out)
{
    return guarded([&] {
        if (!check || !out || index < 0 || index >= static_cast<int64_t>(check->samples.size()))
            invalid("no such sample");
        const positions::SampleCheck& c = check->samples[static_cast<size_t>(index)];
        out->row = c.row;
        out->tokens = c.tokens;
        out->kind = positions::faultKindName(c.kind);
        out->words = positions::faultKindWords(c.kind);
        out->detail = c.detail.c_str();
        out->first_token = c.firstToken;
        out->axis = c.axis;
        out->got = c.got;
        out->expected = c.expected;
        out->segment = c.segment.c_str();
        out->differing = c.differing;
        out->sequences = c.sequences;
    });
}

void rs_check_free(rs_check* check)
{
    delete check;
}

int rs_gemma4_patch_positions(int64_t heightPatches, int64_t widthPatches, int64_t maxPatches, int64_t* out, int64_t capacity)
{
    return guarded([&] {
        const std::vector<int64_t> p = positions::gemma4PatchPositions(heightPatches, widthPatches, maxPatches);
        if (!out || capacity < static_cast<int64_t>(p.size()))
            throw geometry::InvalidInput("out",
                                         "room for " + std::to_string(out ? capacity : 0) + " values; " + std::to_string(maxPatches) +
                                             " patches take " + std::to_string(p.size()));
        std::copy(p.begin(), p.end(), out);
    });
}

int32_t rs_scheme_count(void)
{
    return static_cast<int32_t>(geometry::allSchemes().size());
}

const char* rs_scheme_name(int32_t index)
{
    const auto& all = geometry::allSchemes();
    return index >= 0 && index < static_cast<int32_t>(all.size()) ? geometry::schemeName(all[static_cast<size_t>(index)]) : nullptr;
}

const char* rs_scheme_summary(int32_t index)
{
    const auto& all = geometry::allSchemes();
    return index >= 0 && index < static_cast<int32_t>(all.size()) ? geometry::schemeSummary(all[static_cast<size_t>(index)]) : nullptr;
}

int32_t rs_scheme_components(int32_t index)
{
    const auto& all = geometry::allSchemes();
    return index >= 0 && index < static_cast<int32_t>(all.size()) ? geometry::componentCount(all[static_cast<size_t>(index)]) : 0;
}

int32_t rs_parameter_count(void)
{
    return static_cast<int32_t>(geometry::schemeParameters().size());
}

int rs_parameter_info(int32_t index, rs_parameter* out)
{
    return guarded([&] {
        const auto& rows = geometry::schemeParameters();
        if (!out || index < 0 || index >= static_cast<int32_t>(rows.size()))
            invalid("no such parameter");
        const geometry::SchemeParameter& row = rows[static_cast<size_t>(index)];
        // The texts live as long as the library: one pair per row, built once (thread-safe static initialisation).
        static const std::vector<std::pair<std::string, std::string>> texts = [&rows] {
            std::vector<std::pair<std::string, std::string>> t;
            for (const geometry::SchemeParameter& r : rows) {
                std::string schemes;
                for (geometry::SchemeKind k : geometry::allSchemes())
                    if (r.reads(k))
                        schemes += (schemes.empty() ? "" : ", ") + std::string(geometry::schemeName(k));
                t.emplace_back(r.type == geometry::SchemeParameter::Type::Choice ? geometry::choiceList(r) : "", schemes);
            }
            return t;
        }();
        out->key = row.key;
        out->type = typeName(row.type);
        out->label = row.label;
        out->help = row.help;
        out->default_value = row.defaultValue;
        out->min = row.min;
        out->max = row.max;
        out->open_min = row.openMin ? 1 : 0;
        out->choices = texts[static_cast<size_t>(index)].first.c_str();
        out->schemes = texts[static_cast<size_t>(index)].second.c_str();
    });
}

int rs_table_new(const char* layout, const char* scheme, int32_t count, const char* const* keys, const char* const* values, rs_table** out)
{
    return guarded([&] {
        if (!out)
            invalid("no place for the table");
        *out = nullptr;
        const std::string name = scheme ? scheme : "";
        const std::optional<geometry::SchemeKind> kind = geometry::schemeFromName(name);
        if (!kind)
            throw geometry::InvalidInput("scheme", "expected one of " + geometry::schemeNameList() + ", got '" + name + "'");
        geometry::SchemeParams params = geometry::defaultSchemeParams(*kind);
        if (count < 0 || (count > 0 && (!keys || !values)))
            invalid("parameters: no keys or values");
        for (int32_t i = 0; i < count; ++i) {
            if (!keys[i] || !values[i])
                invalid("parameters: a null key or value");
            setParameter(params, keys[i], values[i]);
        }
        auto t = std::make_unique<rs_table>();
        t->table = geometry::buildPositionTable(geometry::parseLayout(layout ? layout : ""), params);
        t->componentNames = t->table.componentLabels();
        *out = t.release();
    });
}

int rs_table_from_positions(const char* layout, const char* label, int32_t components, const char* const* componentNames, int64_t tokens,
                            const double* positions, const char* allocation, const int32_t* sections, int32_t sectionCount, double theta,
                            int32_t headDim, rs_table** out)
{
    return guarded([&] {
        if (!out)
            invalid("no place for the table");
        *out = nullptr;
        if (components < 1 || components > 4)
            throw geometry::InvalidInput("components", "must be from 1 to 4, got " + std::to_string(components));
        const geometry::Layout parsed = geometry::parseLayout(layout ? layout : "");
        const int layoutTokens = geometry::tokenMetadata(parsed).size();
        if (tokens != layoutTokens || (tokens > 0 && !positions))
            throw geometry::InvalidInput("positions",
                                         "the layout " + parsed.toString() + " has " + std::to_string(layoutTokens) +
                                             " tokens; positions for " + std::to_string(tokens) + " were given");
        if (!(theta > 0 && theta <= 1e12))
            throw geometry::InvalidInput("theta", "must be above 0 and at most 1e12");
        if (headDim < 2 || headDim > 4096 || headDim % 2)
            throw geometry::InvalidInput("head_dim", "must be even, from 2 to 4096, got " + std::to_string(headDim));
        Eigen::MatrixXd p(tokens, components);
        for (int64_t i = 0; i < tokens; ++i)
            for (int32_t c = 0; c < components; ++c)
                p(i, c) = positions[i * components + c];
        std::vector<std::string> names = geometry::defaultComponentNames(components);
        for (int32_t c = 0; componentNames && c < components; ++c)
            if (componentNames[c])
                names[static_cast<size_t>(c)] = componentNames[c];
        geometry::SchemeParams params = geometry::defaultSchemeParams(geometry::SchemeKind::Mrope);
        params.rotary.theta = theta;
        params.rotary.headDim = headDim;
        std::optional<std::vector<int>> pairs;
        if (allocation) {
            if (sectionCount < 0 || (sectionCount > 0 && !sections))
                invalid("allocation: no sections");
            pairs =
                capi::pairComponents(allocation, std::vector<int>(sections, sections + sectionCount), components, params.rotary.halfDim());
        }
        geometry::CustomSchemeRef ref;
        ref.file = label && *label ? label : "given positions";
        ref.scheme = std::make_shared<capi::GivenPositions>(ref.file, names, std::move(p), std::move(pairs));
        params.custom = ref;
        auto t = std::make_unique<rs_table>();
        t->table = geometry::buildPositionTable(parsed, params);
        t->componentNames = t->table.componentLabels();
        *out = t.release();
    });
}

void rs_table_free(rs_table* table)
{
    delete table;
}

int64_t rs_table_tokens(const rs_table* table)
{
    return table ? table->table.size() : 0;
}

int32_t rs_table_components(const rs_table* table)
{
    return table ? table->table.components() : 0;
}

const char* rs_table_component_name(const rs_table* table, int32_t c)
{
    return table && c >= 0 && c < static_cast<int32_t>(table->componentNames.size()) ? table->componentNames[static_cast<size_t>(c)].c_str()
                                                                                     : nullptr;
}

int64_t rs_table_blocks(const rs_table* table)
{
    return table ? static_cast<int64_t>(table->table.blocks.size()) : 0;
}

int64_t rs_table_text_tokens(const rs_table* table)
{
    return table ? static_cast<int64_t>(table->table.textTokens.size()) : 0;
}

void rs_table_positions(const rs_table* table, double* out)
{
    if (!table || !out)
        return;
    const Eigen::MatrixXd& p = table->table.positions;
    for (Eigen::Index i = 0; i < p.rows(); ++i)
        for (Eigen::Index c = 0; c < p.cols(); ++c)
            *out++ = p(i, c);
}

void rs_table_metadata(const rs_table* table, int32_t* modality, int32_t* segment, int32_t* frame, int32_t* row, int32_t* col)
{
    if (!table)
        return;
    const geometry::PositionTable& t = table->table;
    for (size_t i = 0; i < static_cast<size_t>(t.size()); ++i) {
        if (modality)
            modality[i] = static_cast<int32_t>(t.modality[i]);
        if (segment)
            segment[i] = t.segment[i];
        if (frame)
            frame[i] = t.frame[i];
        if (row)
            row[i] = t.row[i];
        if (col)
            col[i] = t.col[i];
    }
}

int rs_table_ptd(const rs_table* table, double* mean, double* perBlock, double* perTextToken)
{
    return guarded([&] {
        const geometry::PtdResult r = geometry::computePtd(needTable(table).table);
        if (mean)
            *mean = r.mean;
        if (perBlock)
            std::copy(r.perBlock.begin(), r.perBlock.end(), perBlock);
        if (perTextToken)
            std::copy(r.perToken.data(), r.perToken.data() + r.perToken.size(), perTextToken);
    });
}

int rs_table_prior(const rs_table* table, int64_t textToken, double* perVisualToken, int64_t capacity)
{
    return guarded([&] {
        const geometry::PositionTable& t = needTable(table).table;
        if (textToken < 0 || textToken >= t.size() || !t.isText(static_cast<int>(textToken)))
            throw geometry::InvalidInput("text_token", "must be the index of a text token (0.." + std::to_string(t.size() - 1) + ")");
        const int64_t visual = t.size() - static_cast<int64_t>(t.textTokens.size());
        if (perVisualToken && capacity < visual)
            throw geometry::InvalidInput("per_visual_token",
                                         "room for " + std::to_string(capacity) + " values; the table has " + std::to_string(visual) +
                                             " visual tokens");
        const geometry::PriorMap m = geometry::positionalPrior(t, static_cast<int>(textToken));
        if (perVisualToken)
            std::copy(m.values.data(), m.values.data() + m.values.size(), perVisualToken);
    });
}

} // extern "C"
