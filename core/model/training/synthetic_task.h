#pragma once
#include <QImage>
#include <QString>
#include <QStringList>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace ropescope::model {

// The bundled models' task: shapes and colours on a 224x224 image (an 8x8 merged token grid at patch 14,
// merge 2), 2-6 objects, one per grid cell, each a unique (shape, colour); questions whose one-word
// answer requires finding an object ("what is left of X": the object in the next cell to the left).
// Deterministic: the same seed gives the same bytes.
// How a sample's picture is drawn. The questions, answers, masks and cell targets depend only on (seed,
// index), so one sample drawn three ways asks the same thing about the same objects.
enum class Rendering {
    OnGrid, // the original: aliased, centred on the cells, sizes 14-24 px, one palette, one gradient
    Varied, // training augmentation: antialiased, anywhere in the cell (overlapping neighbouring cells),
            // sizes 10-32 px, shades, gradients, outlines, noise
    Drawn,  // the second test set, as another program would draw it: 4x supersampled and filtered down, other
            // offsets, shades and gradient profiles than Varied
};
const char* renderingName(Rendering r);
std::optional<Rendering> renderingFromName(const QString& name);

struct SyntheticSample {
    QImage image;
    QString question;
    QString answer;
    QString type;                // colour | shape | where | relation | count
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
    // What the task's models understand, for the user: the pictures and the questions, in a few lines.
    static QString inputsNote();
    // Every word a question or answer uses (for the WordLevel tokenizer).
    static QStringList vocabulary();

    // Sample `index` of the stream seeded by `seed` (random access: samples do not depend on each other).
    static SyntheticSample sample(uint64_t seed, uint64_t index, Rendering rendering = Rendering::OnGrid);
    // What training draws: every other sample Varied, so the models meet both the grid's pictures and
    // pictures drawn otherwise (never Drawn: that is the held-out test of other renderings).
    static SyntheticSample trainingSample(uint64_t seed, uint64_t index);
};

} // namespace ropescope::model
