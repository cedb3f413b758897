#include "csv_table.h"

#include <QFile>

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
            t.header = line.split(',');
        else
            t.rows.append(line.split(','));
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
