#pragma once
#include <QString>
#include <QStringList>
#include <QVector>

// A CSV file or text read as rows of fields (quoted fields as RFC 4180 has them, within one line); lines
// starting with '#' are comments.
struct CsvTable {
    QStringList header;
    QVector<QStringList> rows;

    static CsvTable fromText(const QByteArray& text);
    static CsvTable fromFile(const QString& path);
    QString comment; // the first '#' line, without the '#'
};
