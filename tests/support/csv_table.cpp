#include "tests/support/csv_table.h"

#include <QFile>

// RFC 4180 fields of one line: a quoted field may hold commas and doubled quotes.
static QStringList splitFields(const QString& line)
{
    QStringList fields;
    QString field;
    bool quoted = false;
    for (int i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            ++i;
        } else if (c == '"') {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            fields << field;
            field.clear();
        } else {
            field += c;
        }
    }
    fields << field;
    return fields;
}

CsvTable CsvTable::fromText(const QByteArray& text)
{
    CsvTable t;
    for (const QByteArray& raw : text.split('\n')) {
        const QString line = QString::fromUtf8(raw).trimmed();
        if (line.isEmpty())
            continue;
        if (line.startsWith('#')) {
            if (t.comment.isEmpty())
                t.comment = line.mid(1).trimmed();
            continue;
        }
        if (t.header.isEmpty())
            t.header = splitFields(line);
        else
            t.rows.append(splitFields(line));
    }
    return t;
}

CsvTable CsvTable::fromFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return fromText(f.readAll());
}
