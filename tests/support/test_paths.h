#pragma once
// Where the suites find their data, the sources and the ropescope binary: this build's paths, compiled into one
// generated file of the support library (tests/CMakeLists.txt writes it) rather than onto every suite's command
// line. ccache rewrites paths in a compiler's options but never in -D values, so with the paths there every
// suite missed the cache in every fresh clone; now only that one small file does.
#include <QString>

namespace test_paths {

QString dataDir();   // tests/data
QString sourceDir(); // the checkout
QString binary();    // the ropescope executable of this build

} // namespace test_paths

#define ROPESCOPE_TEST_DATA (::test_paths::dataDir())
#define ROPESCOPE_BINARY (::test_paths::binary())
