#pragma once
// Small files the CLI suites write and read back.
#include <QByteArray>
#include <QFile>
#include <QString>

// Writes `bytes` to `path` (replacing it) and returns the path.
inline QString writeFile(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(bytes);
    return path;
}

// The whole file, or nothing when it cannot be read.
inline QByteArray contents(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}
