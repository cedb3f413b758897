#pragma once
// A runnable model folder from a transformers fixture: its config.json and weights, and the small
// word-level tokenizer of tests/data/attend (the Qwen3-VL and Qwen3.5 fixtures share its special ids; GLM-V
// has its own), so
// `attend` and the Attention tab can ask the random model a question.
#include "tests/support/test_paths.h"
#include <QColor>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QString>

namespace ropescope::test {

// False when a file could not be copied (the folder is made if missing). GLM-V fixtures get the same words
// with GLM-4.1V's special tokens at the fixture's ids (attend/glm_tokenizer.json), PaddleOCR-VL fixtures with
// its own (attend/paddleocr_tokenizer.json), Gemma 3 and Gemma 4 fixtures with theirs (attend/gemma3_tokenizer.json,
// attend/gemma4_tokenizer.json: bos 2, eos 1, the turn tokens at 105/106, runs of 1 to 4 newlines at 107-110 as on the Hub, the
// vision tokens at the fixtures' remapped ids, and a word "wN" at every other id, so a random model's answer reads).
inline bool makeModelFolder(const QString& fixtureName, const QString& dir)
{
    const QString from = QString(ROPESCOPE_TEST_DATA) + "/fixtures/" + fixtureName + "/";
    const QString tokenizer = fixtureName.startsWith("glm") ? "glm_tokenizer.json"
        : fixtureName.startsWith("paddle")                  ? "paddleocr_tokenizer.json"
        : fixtureName.startsWith("gemma3")                  ? "gemma3_tokenizer.json"
        : fixtureName.startsWith("gemma4")                  ? "gemma4_tokenizer.json"
                                                            : "tokenizer.json";
    return QDir().mkpath(dir) && QFile::copy(from + "config.json", dir + "/config.json") &&
        QFile::copy(from + "model.safetensors", dir + "/model.safetensors") &&
        QFile::copy(QString(ROPESCOPE_TEST_DATA) + "/attend/" + tokenizer, dir + "/tokenizer.json");
}

} // namespace ropescope::test

// The tiny Qwen2-VL fixture as a model folder: what the attention tests run end to end.
inline bool makeTinyModel(const QString& dir)
{
    return ropescope::test::makeModelFolder("qwen2vl-tiny", dir);
}

// A picture with content in every patch (red across, green down, a product pattern in blue), written to
// `path`: 168x112 resizes to a 4x6 merged grid for the tiny model. False on failure.
inline bool writeGradientImage(const QString& path, int width = 168, int height = 112)
{
    QImage image(width, height, QImage::Format_RGB888);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            image.setPixelColor(x, y, QColor(x * 255 / width, y * 255 / height, (x * y) % 256));
    return image.save(path);
}
