#pragma once
// The one JSON spelling of a scheme's parameters: sessions, model records (config.json's "ropescope"
// section) and position-table metadata all read and write them here, with one table of names.
#include "core/geometry/scheme.h"
#include "core/geometry/scheme_parameters.h"

#include <QJsonObject>

#include <array>
#include <optional>
#include <string>

namespace ropescope::io {

// "fixed", "auto" (the paper's auto-k), "code-auto" (the official code's auto-k).
const char* radiusModeName(geometry::RadiusMode mode);
std::optional<geometry::RadiusMode> radiusModeFromName(const std::string& name);
// "qwen2vl" (tau = t), "qwen25vl" (tau = floor(t * second_per_grid * tokens_per_second)).
const char* temporalModeName(geometry::TemporalParams::Mode mode);
std::optional<geometry::TemporalParams::Mode> temporalModeFromName(const std::string& name);

// A scheme parameter row's value as files hold it: a number, a choice's name, true/false, [x, y, z].
QJsonValue parameterJson(const geometry::SchemeParameter& row, const geometry::SchemeParams& params);

// Typed reads of one JSON object's fields: a missing key gives the fallback, a wrong type throws
// geometry::InvalidInput "<context>: '<key>' must be ...".
class JsonFields {
public:
    JsonFields(const QJsonObject& object, std::string context) : o_(object), context_(std::move(context)) { }

    bool has(const char* key) const { return o_.contains(key); }
    double number(const char* key, double fallback) const;
    int integer(const char* key, int fallback) const;
    bool boolean(const char* key, bool fallback) const;
    std::string text(const char* key, const std::string& fallback) const;
    std::array<double, 3> triple(const char* key, std::array<double, 3> fallback) const;
    const QJsonObject& object() const { return o_; }
    [[noreturn]] void bad(const char* key, const std::string& why) const;

private:
    QJsonObject o_;
    std::string context_;
};

// Every parameter (the allocation only when one is chosen), under the keys sessions have always used:
// scheme, alpha, radius_mode, radius, text_vector, stride, temporal, second_per_grid, tokens_per_second,
// theta, head_dim, kv_heads, allocation, sections, temporal_stride, visual_stride, position_scale,
// ntk_factor; for xd-rope also ntk_alpha and newline_column.
void writeSchemeParams(QJsonObject& o, const geometry::SchemeParams& params);
// A custom scheme as files record it: {"path", "sha256", "params": {name: value}} (key "scheme_file").
// Read back, it names the file without loading it: the application loads (and trusts) it.
QJsonObject customSchemeJson(const geometry::CustomSchemeRef& ref);
// The keys above over `defaults`; "allocation": "default" means the scheme's own. Not validated: callers
// build a table (or call geometry::validate), which names a bad value.
geometry::SchemeParams readSchemeParams(const JsonFields& fields, geometry::SchemeParams defaults = {});

} // namespace ropescope::io
