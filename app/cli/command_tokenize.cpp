#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "core/io/input_file.h"
#include "core/model/engine/tokenizer.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

namespace ropescope::cli {

namespace {

QByteArray idsJson(const std::vector<int64_t>& ids)
{
    QByteArray out = "[";
    for (size_t i = 0; i < ids.size(); ++i)
        out += (i ? "," : "") + QByteArray::number(static_cast<qlonglong>(ids[i]));
    return out + "]";
}

// The lines of a text file: the newline ending the file does not start an empty last line, and a CR before a
// newline goes with it. A byte order mark is dropped at the start of the file only.
QStringList textLines(const QByteArray& text)
{
    QStringList lines = QString::fromUtf8(text).split('\n');
    if (!lines.isEmpty() && lines.back().isEmpty())
        lines.removeLast();
    for (QString& line : lines)
        if (line.endsWith('\r'))
            line.chop(1);
    return lines;
}

// The strings of a JSON array; anything else is bad input, named.
QStringList jsonStrings(const QByteArray& text, const QString& file)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(model::escapeByteOrderMarks(text), &error);
    if (!doc.isArray())
        throw UsageError(
            (file + ": --json needs a JSON array of strings (" + (doc.isNull() ? error.errorString() : QString("not an array")) + ")")
                .toStdString());
    QStringList out;
    const QJsonArray array = doc.array();
    for (qsizetype i = 0; i < array.size(); ++i) {
        if (!array[i].isString())
            throw UsageError(QString("%1: --json needs a JSON array of strings (item %2 is not a string)").arg(file).arg(i).toStdString());
        out << array[i].toString();
    }
    return out;
}

} // namespace

int runTokenize(const QStringList& args)
{
    QCommandLineParser parser;
    parser.addOptions({
        {"model", "Model folder with a tokenizer.json.", "DIR"},
        {"tokenizer", "A tokenizer.json file.", "FILE"},
        {"text", "Text to encode as one input (newlines included); prints one JSON array of ids.", "S"},
        {"text-file", "Encode every line of a UTF-8 file; prints one JSON array per line.", "F"},
        {"json",
         "Encode every string of a JSON array in a UTF-8 file (strings may hold newlines); prints one JSON array "
         "per string.",
         "F"},
        {"output", "Write to this file (atomically) instead of standard output.", "F"},
    });
    parseOrThrow(parser, args);
    if (parser.isSet("model") == parser.isSet("tokenizer"))
        throw UsageError("give exactly one of --model DIR or --tokenizer tokenizer.json");
    if (int(parser.isSet("text")) + int(parser.isSet("text-file")) + int(parser.isSet("json")) != 1)
        throw UsageError("give exactly one of --text, --text-file or --json");
    const QString path = parser.isSet("model") ? QDir(parser.value("model")).filePath("tokenizer.json") : parser.value("tokenizer");

    // The inputs first: a missing or malformed text file is refused before a large vocabulary is read.
    QStringList inputs;
    if (parser.isSet("text")) {
        inputs << parser.value("text");
    } else {
        const QString file = parser.value(parser.isSet("json") ? "json" : "text-file");
        QByteArray text;
        try {
            text = io::readInputFile(file, 64 << 20, parser.isSet("json") ? "JSON text file" : "text file");
        } catch (const io::IoError& e) {
            throw UsageError(e.what()); // a missing or unreadable input: exit 2 (docs/CLI.md)
        }
        inputs = parser.isSet("json") ? jsonStrings(text, file) : textLines(text);
    }
    try {
        const model::Tokenizer tokenizer = model::Tokenizer::load(path);
        QByteArray out;
        for (const QString& input : inputs)
            out += idsJson(tokenizer.encode(input)) + "\n";
        writeOutput(parser.value("output"), out);
    } catch (const model::BadInputFile& e) {
        throw UsageError(e.what()); // a malformed tokenizer.json is bad input: exit 2, as in the model commands
    } catch (const model::ModelError& e) {
        throw Failure(e.what());
    }
    return 0;
}

} // namespace ropescope::cli
