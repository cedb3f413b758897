#include "app/batch/batch_job.h"

#include "core/io/input_file.h"

#include <QDir>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <cmath>

namespace ropescope::batch {
namespace {

const QStringList kTypes{"cone", "ptd-chart", "profile-chart", "prior-heatmap", "table",
                         "ptd",  "freqs",     "attention",     "bias",          "check-positions"};

QString valueText(const QJsonValue& v)
{
    if (v.isDouble())
        return QString::number(v.toDouble(), 'g', 15);
    if (v.isString())
        return v.toString();
    if (v.isArray()) {
        QStringList parts;
        for (const QJsonValue& x : v.toArray())
            parts << valueText(x);
        return parts.join(',');
    }
    return {};
}

// Flags for one parameter object; throws std::invalid_argument naming a bad key.
QStringList flagsFor(const QJsonObject& params)
{
    QStringList flags;
    for (auto it = params.begin(); it != params.end(); ++it) {
        const QString key = it.key();
        // A key is a flag's name (lowercase words joined by '-') or param.NAME, nothing else: "scheme=x.py"
        // would otherwise reach the command as --scheme=x.py, past every check that reads --scheme's value.
        static const QRegularExpression flagName("^[a-z][a-z0-9]*(-[a-z0-9]+)*$");
        static const QRegularExpression paramName("^param\\.[A-Za-z_][A-Za-z0-9_]*$");
        if (!flagName.match(key).hasMatch() && !paramName.match(key).hasMatch()) {
            static const QRegularExpression control("[\\x00-\\x1f\\x7f]");
            throw std::invalid_argument("bad parameter name '" + QString(key).replace(control, "?").toStdString() +
                                        "' (a flag's name without '--', or param.NAME)");
        }
        // Flags that print and end the process would end the whole batch (with success).
        if (key == "h" || key == "help" || key == "help-all" || key == "v" || key == "version")
            throw std::invalid_argument("'" + key.toStdString() + "' is not an item parameter");
        // A NUL or newline would cut or split the one-line error that names the item.
        static const QRegularExpression control("[\\x00-\\x1f\\x7f]");
        if (key.contains(control) || valueText(it.value()).contains(control))
            throw std::invalid_argument("parameter '" + QString(key).replace(control, "?").toStdString() +
                                        "' contains a control character");
        const QJsonValue v = it.value();
        if (v.isBool()) {
            if (v.toBool())
                flags << "--" + key;
        } else if (key == "image" && v.isArray()) { // a prompt of several images: the flag repeated, in order
            for (const QJsonValue& path : v.toArray()) {
                if (!path.isString())
                    throw std::invalid_argument("parameter 'image' must be a path or an array of paths");
                flags << "--image" << path.toString();
            }
        } else if (key.startsWith("param.") && v.isDouble()) { // a Python scheme's parameter: "param.radius": 4
            flags << "--param" << key.mid(6) + "=" + valueText(v);
        } else if (v.isDouble() || v.isString() || v.isArray()) {
            flags << "--" + key << valueText(v);
        } else {
            throw std::invalid_argument("parameter '" + key.toStdString() + "' must be a number, string, boolean or array");
        }
    }
    return flags;
}

std::vector<QJsonValue> sweepValues(const QString& name, const QJsonValue& spec)
{
    std::vector<QJsonValue> values;
    if (spec.isArray()) {
        for (const QJsonValue& v : spec.toArray())
            values.push_back(v);
    } else if (spec.isObject()) {
        const QJsonObject o = spec.toObject();
        const double from = o["from"].toDouble(NAN), to = o["to"].toDouble(NAN), step = o["step"].toDouble(NAN);
        if (!std::isfinite(from) || !std::isfinite(to) || !std::isfinite(step) || step <= 0 || to < from)
            throw std::invalid_argument("sweep '" + name.toStdString() + "' needs numbers from <= to and step > 0");
        const double count = std::floor((to - from) / step + 1e-9) + 1;
        if (count > kMaxBatchItems)
            throw std::invalid_argument("sweep '" + name.toStdString() + "' has too many values");
        for (int i = 0; i < static_cast<int>(count); ++i) {
            const double v = from + i * step;
            values.push_back(std::round(v * 1e12) / 1e12); // 0.1 * 3 prints as 0.3, not 0.30000000000000004
        }
    } else {
        throw std::invalid_argument("sweep '" + name.toStdString() + "' must be a list or {from, to, step}");
    }
    if (values.empty())
        throw std::invalid_argument("sweep '" + name.toStdString() + "' has no values");
    return values;
}

// Outputs must stay inside the output directory.
void checkOutput(const QString& output)
{
    if (output.isEmpty())
        throw std::invalid_argument("missing \"output\"");
    if (QDir::isAbsolutePath(output) || QDir::cleanPath(output).startsWith("..") || output.contains('\\'))
        throw std::invalid_argument("output '" + output.toStdString() + "' must be a relative path inside the output directory");
    static const QRegularExpression control("[\\x00-\\x1f\\x7f]");
    if (output.contains(control))
        throw std::invalid_argument("output '" + QString(output).replace(control, "?").toStdString() + "' contains a control character");
}

QString outputFor(QString templ, const QJsonObject& sweepPoint)
{
    for (auto it = sweepPoint.begin(); it != sweepPoint.end(); ++it) {
        const QString placeholder = "{" + it.key() + "}";
        // Values become part of a file name: keep it portable.
        static const QRegularExpression unsafe("[^A-Za-z0-9._-]+");
        const QString value = valueText(it.value()).replace(unsafe, "-");
        if (templ.contains(placeholder)) {
            templ.replace(placeholder, value);
        } else {
            const auto dot = templ.lastIndexOf('.');
            const QString suffix = "_" + it.key() + "-" + value;
            templ = dot > templ.lastIndexOf('/') ? templ.left(dot) + suffix + templ.mid(dot) : templ + suffix;
        }
    }
    return templ;
}

// Files an item writes: its output, and the parameter sidecar of vector figures.
QStringList filesOf(const BatchItem& item)
{
    const QString output = QDir::cleanPath(item.output);
    QStringList files{output};
    if (output.endsWith(".svg", Qt::CaseInsensitive) || output.endsWith(".pdf", Qt::CaseInsensitive))
        files << output + ".json";
    return files;
}

// Two items writing one file would leave only the last one's while the manifest reports both: the later
// item becomes an error. The manifests' names belong to the batch itself.
void refuseSharedOutputs(std::vector<BatchItem>& items)
{
    static const QRegularExpression manifest("^manifest(\\.shard-\\d+-of-\\d+)?\\.json$");
    QHash<QString, int> writer; // file -> expanded index of the item that writes it
    for (BatchItem& item : items) {
        if (!item.error.isEmpty())
            continue;
        const QStringList files = filesOf(item);
        for (const QString& file : files) {
            if (manifest.match(file).hasMatch()) {
                item.error = QString("item %1: output '%2' is the batch's manifest").arg(item.jobItem).arg(file);
                break;
            }
            if (const auto it = writer.constFind(file); it != writer.constEnd()) {
                item.error = QString("item %1: output '%2' is also written by an earlier item (expanded item %3); "
                                     "give each output its own name")
                                 .arg(item.jobItem)
                                 .arg(file)
                                 .arg(*it);
                break;
            }
        }
        if (item.error.isEmpty())
            for (const QString& file : files)
                writer.insert(file, item.index);
    }
}

} // namespace

std::vector<BatchItem> readJob(const QString& path)
{
    QByteArray bytes;
    try {
        bytes = io::readInputFile(path, 64 << 20, "job file");
    } catch (const io::IoError& e) {
        throw JobError(e.what());
    }
    return parseJob(bytes, path);
}

std::vector<BatchItem> parseJob(const QByteArray& bytes, const QString& path)
{
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &parseError);
    if (doc.isNull())
        throw JobError(path.toStdString() + ": not JSON: " + parseError.errorString().toStdString() + " at offset " +
                       std::to_string(parseError.offset));
    const QJsonObject root = doc.object();
    if (!doc.isObject() || !root["items"].isArray())
        throw JobError(path.toStdString() + ": expected an object with an \"items\" array");
    if (root.contains("defaults") && !root["defaults"].isObject())
        throw JobError(path.toStdString() + ": \"defaults\" must be an object");
    const QJsonObject defaults = root["defaults"].toObject();
    const QJsonArray items = root["items"].toArray();
    if (items.isEmpty())
        throw JobError(path.toStdString() + ": \"items\" is empty");
    if (items.size() > kMaxBatchItems)
        throw JobError(path.toStdString() + ": " + std::to_string(items.size()) + " items; a job may list at most " +
                       std::to_string(kMaxBatchItems));

    std::vector<BatchItem> out;
    for (int j = 0; j < items.size(); ++j) {
        BatchItem base;
        base.jobItem = j + 1;
        try {
            if (!items[j].isObject())
                throw std::invalid_argument("must be an object");
            const QJsonObject item = items[j].toObject();
            base.type = item["type"].toString();
            if (!kTypes.contains(base.type))
                throw std::invalid_argument("unknown type '" + base.type.toStdString() + "' (expected " + kTypes.join(", ").toStdString() +
                                            ")");
            if (!item["output"].isString())
                throw std::invalid_argument("missing \"output\"");
            QJsonObject params = defaults;
            for (auto it = item.begin(); it != item.end(); ++it)
                if (it.key() != "type" && it.key() != "output" && it.key() != "sweep")
                    params[it.key()] = it.value();

            // Cartesian product of the sweep values.
            std::vector<QJsonObject> points{QJsonObject()};
            if (item.contains("sweep")) {
                if (!item["sweep"].isObject() || item["sweep"].toObject().isEmpty())
                    throw std::invalid_argument("\"sweep\" must be an object of parameter -> values");
                const QJsonObject sweep = item["sweep"].toObject();
                for (auto it = sweep.begin(); it != sweep.end(); ++it) {
                    std::vector<QJsonObject> next;
                    for (const QJsonValue& v : sweepValues(it.key(), it.value()))
                        for (QJsonObject p : points) {
                            p[it.key()] = v;
                            next.push_back(p);
                            if (next.size() + out.size() > static_cast<size_t>(kMaxBatchItems))
                                throw std::invalid_argument("expands to more than " + std::to_string(kMaxBatchItems) + " items");
                        }
                    points = std::move(next);
                }
            }
            for (const QJsonObject& point : points) {
                BatchItem b = base;
                QJsonObject p = params;
                for (auto it = point.begin(); it != point.end(); ++it)
                    p[it.key()] = it.value();
                b.parameters = p;
                b.output = outputFor(item["output"].toString(), point);
                checkOutput(b.output);
                b.flags = flagsFor(p);
                if (out.size() >= static_cast<size_t>(kMaxBatchItems))
                    throw std::invalid_argument("the job expands to more than " + std::to_string(kMaxBatchItems) + " items");
                out.push_back(b);
            }
        } catch (const std::invalid_argument& e) {
            base.error = QString("item %1: %2").arg(j + 1).arg(e.what());
            out.push_back(base);
        }
    }
    for (size_t i = 0; i < out.size(); ++i)
        out[i].index = static_cast<int>(i) + 1;
    refuseSharedOutputs(out);
    return out;
}

QStringList pythonFilesOf(const BatchItem& item)
{
    QStringList files;
    for (qsizetype i = 0; i + 1 < item.flags.size(); ++i) {
        if (item.flags[i] == "--scheme" && item.flags[i + 1].endsWith(".py"))
            files << item.flags[i + 1];
        if (item.flags[i] == "--schemes")
            for (const QString& entry : item.flags[i + 1].split(','))
                if (entry.section(':', 0, 0).endsWith(".py"))
                    files << entry.section(':', 0, 0);
    }
    return files;
}

std::vector<BatchItem> shard(const std::vector<BatchItem>& items, int i, int n)
{
    std::vector<BatchItem> out;
    for (size_t k = 0; k < items.size(); ++k)
        if (static_cast<int>(k % static_cast<size_t>(n)) == i)
            out.push_back(items[k]);
    return out;
}

} // namespace ropescope::batch
