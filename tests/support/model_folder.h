#pragma once
// A runnable model folder from a transformers fixture: its config.json and weights, and the small
// word-level tokenizer of tests/data/attend (the Qwen3-VL and Qwen3.5 fixtures share its special ids), so
// `attend` and the Attention tab can ask the random model a question.
#include <QDir>
#include <QFile>
#include <QString>

namespace ropescope::test {

// False when a file could not be copied (the folder is made if missing).
inline bool makeModelFolder(const QString& fixtureName, const QString& dir)
{
    const QString from = QString(ROPESCOPE_TEST_DATA) + "/fixtures/" + fixtureName + "/";
    return QDir().mkpath(dir) && QFile::copy(from + "config.json", dir + "/config.json")
           && QFile::copy(from + "model.safetensors", dir + "/model.safetensors")
           && QFile::copy(QString(ROPESCOPE_TEST_DATA) + "/attend/tokenizer.json", dir + "/tokenizer.json");
}

} // namespace ropescope::test
