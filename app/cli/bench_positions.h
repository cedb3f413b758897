#pragma once
#include <QCommandLineParser>

namespace ropescope::cli {

// `ropescope bench positions`: check-positions on a dump of 1,000 Qwen2.5-VL-shaped samples (125 safetensors
// batches of 8, each sample text, an image of 14x14 merged tokens and a video of 4 x 8x8, left-padded),
// written to a temporary folder first; reading and checking them is timed. Goal: under 5 s.
int benchPositions(const QCommandLineParser& parser);
// `ropescope bench positions-memory`: `check-positions --report` run as a child process on a dump of 1,000,000
// Qwen2-VL samples (100 int32 safetensors batches of 10,000, a tenth of them differing); its peak resident
// memory is measured. Goal: under 500 MB (the dump is 140 MB on disk; its samples are streamed, not kept).
int benchPositionsMemory(const QCommandLineParser& parser);

} // namespace ropescope::cli
