#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "core/io/input_file.h"
#include "core/model/engine/tokenizer.h"

#include <QDir>
#include <QFile>

namespace ropescope::cli {

namespace {

QByteArray idsJson(const std::vector<int64_t>& ids)
{
    QByteArray out = "[";
    for (size_t i = 0; i < ids.size(); ++i)
        out += (i ? "," : "") + QByteArray::number(static_cast<qlonglong>(ids[i]));
    return out + "]";
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
        {"output", "Write to this file (atomically) instead of standard output.", "F"},
    });
    parseOrThrow(parser, args);
    if (parser.isSet("model") == parser.isSet("tokenizer"))
        throw UsageError("give exactly one of --model DIR or --tokenizer tokenizer.json");
    if (parser.isSet("text") == parser.isSet("text-file"))
        throw UsageError("give exactly one of --text or --text-file");
    const QString path = parser.isSet("model") ? QDir(parser.value("model")).filePath("tokenizer.json") : parser.value("tokenizer");

    try {
        const model::Tokenizer tokenizer = model::Tokenizer::load(path);
        QByteArray out;
        if (parser.isSet("text")) {
            out = idsJson(tokenizer.encode(parser.value("text"))) + "\n";
        } else {
            QByteArray text;
            try {
                text = io::readInputFile(parser.value("text-file"), 64 << 20, "text file");
            } catch (const io::IoError& e) {
                throw Failure(e.what());
            }
            const QList<QByteArray> lines = text.split('\n');
            for (qsizetype i = 0; i < lines.size(); ++i) {
                if (i + 1 == lines.size() && lines[i].isEmpty())
                    break; // the newline ending the file is not an empty last line
                QByteArray line = lines[i];
                if (line.endsWith('\r'))
                    line.chop(1);
                out += idsJson(tokenizer.encode(QString::fromUtf8(line))) + "\n";
            }
        }
        writeOutput(parser.value("output"), out);
    } catch (const model::ModelError& e) {
        throw Failure(e.what());
    }
    return 0;
}

} // namespace ropescope::cli
