#pragma once
// The files an attention run writes, in one table. `attend` writes every row its flags enable (and removes an
// earlier run's files of the rows it does not, so a folder never mixes two runs); a batch attention item writes
// the first enabled row that takes its file's type. A new output is one row (attend_output_table.cpp).
// LibTorch inside (through attend_run.h): include only from the commands that run a model.
#include "app/cli/attend_run.h"
#include "app/cli/attend_schemes.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <vector>

namespace ropescope::cli {

// What the rows write from: one run, the comparison of --schemes (or null), and the flags.
struct AttendResult {
    const AttentionOutcome& run;
    const SchemesOutcome* compared;
    const AttentionOptions& options;
};

struct AttendOutput {
    // Figure: .png, .svg or .pdf (attend: --figure-format; batch: the item's extension); the others one type.
    enum class Type { Figure, Png, Csv, Json, Text, Safetensors };
    const char* stem; // the file attend writes: stem + the type's extension ("heatmap" -> heatmap.png)
    Type type;
    const char* what; // what a batch item of this type writes, for the refusal that lists them ("positions")
    bool (*enabled)(const AttentionOptions& options);
    QByteArray (*write)(const AttendResult& result, views::FigureFormat format);
};

// In the order a batch item chooses among the rows that take its type (an item with --layers-heads writes
// that figure as .png, not the heatmap).
const std::vector<AttendOutput>& attendOutputs();

// The file `attend` writes for `row`, and every name the row can have (a figure's three).
QString attendFileName(const AttendOutput& row, views::FigureFormat figureFormat);
QStringList attendFileNames(const AttendOutput& row);

// The row a batch item writes for an output file named `output` under `options`; throws UsageError listing
// what the item can write when no enabled row takes that type.
const AttendOutput& attendOutputFor(const QString& output, const AttentionOptions& options);

} // namespace ropescope::cli
