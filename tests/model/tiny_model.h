#pragma once
// The tiny Qwen2-VL fixture weights with the small WordLevel tokenizer of tests/data/attend, as a model
// folder: what the attention tests run end to end.
#include <QDir>
#include <QColor>
#include <QFile>
#include <QImage>
#include <QString>

// Creates `dir` and copies config.json, model.safetensors and tokenizer.json into it; false on failure.
inline bool makeTinyModel(const QString& dir)
{
    const QString fixture = ROPESCOPE_TEST_DATA "/fixtures/qwen2vl-tiny/";
    return QDir().mkpath(dir) && QFile::copy(fixture + "config.json", dir + "/config.json")
           && QFile::copy(fixture + "model.safetensors", dir + "/model.safetensors")
           && QFile::copy(ROPESCOPE_TEST_DATA "/attend/tokenizer.json", dir + "/tokenizer.json");
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
