#pragma once
// The tiny Qwen2-VL fixture weights with the small WordLevel tokenizer of tests/data/attend, as a model
// folder: what the attention tests run end to end.
#include <QDir>
#include <QFile>
#include <QString>

// Creates `dir` and copies config.json, model.safetensors and tokenizer.json into it; false on failure.
inline bool makeTinyModel(const QString& dir)
{
    const QString fixture = ROPESCOPE_TEST_DATA "/fixtures/qwen2vl-tiny/";
    return QDir().mkpath(dir) && QFile::copy(fixture + "config.json", dir + "/config.json")
           && QFile::copy(fixture + "model.safetensors", dir + "/model.safetensors")
           && QFile::copy(ROPESCOPE_TEST_DATA "/attend/tokenizer.json", dir + "/tokenizer.json");
}
