#pragma once
// Reading config.json: one object's keys, each checked for its type and range, errors naming the file and the key.
// Shared by the families' readers (model_config.cpp, model_config_gemma.cpp); not a public header.
#include "core/model/engine/safetensors.h" // BadInputFile

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

#include <cmath>
#include <string>
#include <vector>

namespace ropescope::model::config {

inline std::string shortNumber(double v)
{
    return QString::number(v, 'g', 6).toStdString();
}

class Reader {
public:
    Reader(QJsonObject o, std::string where) : o_(std::move(o)), where_(std::move(where)) { }

    bool has(const char* key) const { return o_.contains(key) && !o_[key].isNull(); }

    int integer(const char* key, int fallback, int lo = 0, int hi = 1 << 30) const
    {
        if (!has(key))
            return fallback;
        const double v = o_[key].toDouble(NAN);
        if (!o_[key].isDouble() || v != std::floor(v) || v < lo || v > hi)
            throw BadInputFile(where_ + ": '" + key + "' must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
        return static_cast<int>(v);
    }
    // A number in [lo, hi]: every one is converted to float somewhere, so the range keeps it finite there.
    double number(const char* key, double fallback, double lo, double hi) const
    {
        if (!has(key))
            return fallback;
        const double v = o_[key].toDouble(NAN);
        if (!o_[key].isDouble() || !(v >= lo && v <= hi))
            throw BadInputFile(where_ + ": '" + key + "' must be a number from " + shortNumber(lo) + " to " + shortNumber(hi));
        return v;
    }
    std::string text(const char* key, const std::string& fallback) const
    {
        if (!has(key))
            return fallback;
        if (!o_[key].isString())
            throw BadInputFile(where_ + ": '" + key + "' must be a string");
        return o_[key].toString().toStdString();
    }
    // true or false only: a string ("no") or a number would otherwise read as the fallback, silently.
    bool boolean(const char* key, bool fallback) const
    {
        if (!has(key))
            return fallback;
        if (!o_[key].isBool())
            throw BadInputFile(where_ + ": '" + key + "' must be true or false");
        return o_[key].toBool();
    }
    std::vector<int> integers(const char* key, std::vector<int> fallback) const
    {
        if (!has(key))
            return fallback;
        if (!o_[key].isArray() || o_[key].toArray().size() > 64)
            throw BadInputFile(where_ + ": '" + key + "' must be a list of whole numbers");
        std::vector<int> out;
        for (const QJsonValue& v : o_[key].toArray()) {
            if (!v.isDouble() || v.toDouble() != std::floor(v.toDouble()) || std::abs(v.toDouble()) > 1e6)
                throw BadInputFile(where_ + ": '" + key + "' must be a list of whole numbers");
            out.push_back(v.toInt());
        }
        return out;
    }
    Reader object(const char* key) const
    {
        if (has(key) && !o_[key].isObject())
            throw BadInputFile(where_ + ": '" + key + "' must be an object");
        return Reader(o_[key].toObject(), where_ + "." + key);
    }
    const QJsonObject& json() const { return o_; }
    const std::string& where() const { return where_; }

private:
    QJsonObject o_;
    std::string where_;
};

} // namespace ropescope::model::config
