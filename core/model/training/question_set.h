#pragma once
// A user's own labelled questions for `eval --questions`: the questions.jsonl that `eval --save-samples`
// writes, or one made by hand for pictures drawn elsewhere.
#include <QByteArray>
#include <QString>

#include <array>
#include <optional>
#include <vector>

namespace ropescope::model {

struct LabelledQuestion {
    QString image; // absolute path (the file names it relative to its own folder)
    QString question, answer;
    QString type;                             // "colour", "where", ... or "" when the line has none
    std::optional<std::array<bool, 64>> mask; // the 8x8 cells the question is about, when given
    int line = 0;                             // 1-based, for messages
};

// One JSON object per line: "image", "question", "answer" (strings), optional "type" and "mask" (64 numbers
// 0/1). Blank lines are skipped. Bounded: 64 MiB, 100000 questions. Throws ModelError naming the file, the
// line and the field. Images are not read here.
std::vector<LabelledQuestion> readQuestionSet(const QString& path);
// The same on bytes already read; `name` for messages, images relative to `folder`.
std::vector<LabelledQuestion> parseQuestionSet(const QByteArray& data, const QString& name, const QString& folder);

} // namespace ropescope::model
