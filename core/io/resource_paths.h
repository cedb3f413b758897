#pragma once
#include <QString>

namespace ropescope::io {

// The resources folder (bundled models, sample images, jobs): $ROPESCOPE_RESOURCES, else
// <executable>/../resources (an installed layout), else the source tree's resources/.
QString resourceDir();
QString bundledModel(const QString& name = "mrope");
QString sampleImage();    // resources/samples/shapes.png
QString sampleQuestion(); // the question of resources/samples/shapes.txt

} // namespace ropescope::io
