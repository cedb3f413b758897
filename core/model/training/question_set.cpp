#include "core/model/training/question_set.h"

#include "core/io/input_file.h"
#include "core/model/engine/safetensors.h" // ModelError

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace ropescope::model {

std::vector<LabelledQuestion> readQuestionSet(const QString& path)
{
    constexpr qint64 kMaxBytes = 64ll << 20;
    QByteArray data;
    try {
        data = io::readInputFile(path, kMaxBytes, "question set");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    return parseQuestionSet(data, path, QFileInfo(path).absolutePath());
}

std::vector<LabelledQuestion> parseQuestionSet(const QByteArray& data, const QString& path, const QString& folderPath)
{
    constexpr size_t kMaxQuestions = 100000;
    const QDir folder(folderPath);
    std::vector<LabelledQuestion> out;
    int lineNumber = 0;
    for (const QByteArray& line : data.split('\n')) {
        ++lineNumber;
        if (line.trimmed().isEmpty())
            continue;
        const auto where = [&](const QString& what) {
            return BadInputFile(QString("%1:%2: %3").arg(path).arg(lineNumber).arg(what).toStdString());
        };
        if (out.size() == kMaxQuestions)
            throw where("more than 100000 questions");
        QJsonParseError error{};
        const QJsonDocument doc = QJsonDocument::fromJson(line, &error);
        if (error.error != QJsonParseError::NoError || !doc.isObject())
            throw where("not a JSON object (" + (doc.isNull() ? error.errorString() : QString("another JSON value")) + ")");
        const QJsonObject o = doc.object();
        LabelledQuestion q;
        q.line = lineNumber;
        for (const auto& [field, target] :
             {std::pair<const char*, QString*>{"image", &q.image}, {"question", &q.question}, {"answer", &q.answer}}) {
            if (!o[field].isString() || o[field].toString().isEmpty())
                throw where(QString("\"%1\" must be a non-empty string").arg(field));
            *target = o[field].toString();
        }
        if (o.contains("type")) {
            if (!o["type"].isString())
                throw where("\"type\" must be a string");
            q.type = o["type"].toString();
        }
        if (o.contains("mask")) {
            const QJsonArray mask = o["mask"].toArray();
            if (!o["mask"].isArray() || mask.size() != 64)
                throw where("\"mask\" must be 64 numbers (the 8x8 cells, row-major)");
            std::array<bool, 64> cells{};
            for (int c = 0; c < 64; ++c) {
                if (!mask[c].isDouble() || (mask[c].toDouble() != 0 && mask[c].toDouble() != 1))
                    throw where("\"mask\" holds only 0 and 1");
                cells[static_cast<size_t>(c)] = mask[c].toDouble() == 1;
            }
            q.mask = cells;
        }
        q.image = folder.filePath(q.image);
        out.push_back(std::move(q));
    }
    if (out.empty())
        throw BadInputFile(path.toStdString() + ": no questions");
    return out;
}

} // namespace ropescope::model
