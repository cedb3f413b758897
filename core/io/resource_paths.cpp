#include "core/io/resource_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>

namespace ropescope::io {

QString resourceDir()
{
    const QString env = qEnvironmentVariable("ROPESCOPE_RESOURCES");
    if (!env.isEmpty())
        return env;
    if (QCoreApplication::instance()) {
        const QString installed = QDir(QCoreApplication::applicationDirPath()).filePath("../resources");
        if (QFile::exists(installed + "/models"))
            return QDir::cleanPath(installed);
    }
    return ROPESCOPE_SOURCE_RESOURCES;
}

QString bundledModel(const QString& name)
{
    return QDir(resourceDir()).filePath("models/" + name);
}

QString sampleImage()
{
    return QDir(resourceDir()).filePath("samples/shapes.png");
}

QString sampleQuestion()
{
    QFile f(QDir(resourceDir()).filePath("samples/shapes.txt"));
    if (!f.open(QIODevice::ReadOnly))
        return "what colour is the circle";
    return QString::fromUtf8(f.readLine()).trimmed();
}

} // namespace ropescope::io
