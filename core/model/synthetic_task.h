#pragma once
#include <QImage>
#include <QString>
#include <QStringList>

#include <array>
#include <cstdint>
#include <vector>

namespace ropescope::model {

// The bundled models' task: shapes and colours on a 224x224 image (an 8x8 merged token grid at patch 14,
// merge 2), 2-6 objects, one per grid cell, each a unique (shape, colour); questions whose one-word
// answer requires finding an object ("what is left of X": the object in the next cell to the left).
// Deterministic: the same seed gives the same bytes.
struct SyntheticSample {
    QImage image;
    QString question;
    QString answer;
    QString type; // colour | shape | where | relation | count
    std::array<bool, 64> mask{}; // cells (row-major on the 8x8 token grid) of the object(s) asked about
    // What every cell holds (index into colours() / shapes()), -1 for an empty cell: the targets of the
    // vision tower's cell-naming loss during base training.
    std::array<int8_t, 64> cellColour, cellShape;
};

class SyntheticTask {
public:
    static constexpr int kImageSize = 224;
    static constexpr int kGrid = 8;

    // The background: a pastel gradient (redder to the right, bluer downwards), so that, as in photographs,
    // image content says where it is: Qwen2-VL's vision tower has only relative (2-D rotary) positions.
    static QColor background(int x, int y);
    static const QStringList& shapes();      // circle square triangle diamond
    static const QStringList& colours();     // red green blue yellow purple
    static const QStringList& quadrants();   // topleft topright bottomleft bottomright
    static int quadrantOf(int row, int col); // index into quadrants() of a cell of the token grid
    static const QStringList& answers();     // every answer word
    static const QStringList& questionTypes();
    // Every word a question or answer uses (for the WordLevel tokenizer).
    static QStringList vocabulary();

    // Sample `index` of the stream seeded by `seed` (random access: samples do not depend on each other).
    static SyntheticSample sample(uint64_t seed, uint64_t index);
};

} // namespace ropescope::model
