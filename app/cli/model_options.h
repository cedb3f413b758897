#pragma once
// Shared by the commands that run a model (LibTorch headers: include only from those).
#include "app/cli/cli_error.h"
#include "app/cli/geometry_options.h"
#include "core/geometry/errors.h"
#include "core/io/atomic_file.h"
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/safetensors.h"

#include <QCommandLineParser>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>

namespace ropescope::cli {

// --device cpu (default) | cuda; a usage error otherwise, a failure when CUDA is not there.
inline c10::Device parseDevice(const QCommandLineParser& parser)
{
    const QString device = parser.value("device");
    if (device.isEmpty() || device == "cpu")
        return c10::kCPU;
    if (device != "cuda")
        throw UsageError("--device: expected cpu or cuda, got '" + device.toStdString() + "'");
    if (!torch::cuda::is_available())
        throw Failure("--device cuda: this LibTorch build has no CUDA or no GPU is visible");
    return c10::kCUDA;
}

// --dtype fp32 (default) | bf16: the weights' and activations' type (bf16 halves memory; on a CPU it is
// emulated and slower, on a GPU it is the checkpoints' own type).
inline c10::ScalarType parseDtype(const QCommandLineParser& parser)
{
    const QString dtype = parser.value("dtype");
    if (dtype.isEmpty() || dtype == "fp32")
        return c10::kFloat;
    if (dtype != "bf16")
        throw UsageError("--dtype: expected fp32 or bf16, got '" + dtype.toStdString() + "'");
    return c10::kBFloat16;
}

// --scheme (default mrope), its parameters and --age for train / eval, checked against a model of `layers`
// decoder layers (a --layers other than that is refused). The AGE string is kept as given (a strategy name
// stays a name in reports); the model parses it against its own layer count.
inline model::ModelScheme modelSchemeFrom(const QCommandLineParser& parser, int layers)
{
    model::ModelScheme m;
    m.params = parseModelSchemeOptions(parser, layers).params;
    if (parser.isSet("age"))
        m.age = parser.value("age").toStdString();
    return m;
}

// Runs a model command (or one batch item), turning model, LibTorch and file errors into one-line CLI errors.
template <class Fn> auto runModelCommand(Fn&& fn) -> decltype(fn())
{
    try {
        return fn();
    } catch (const model::BadInputFile& e) {
        throw UsageError(e.what()); // a malformed outside file is bad input: exit 2, as for tables and schemes
    } catch (const model::ModelError& e) {
        throw Failure(e.what());
    } catch (const io::IoError& e) {
        throw Failure(e.what());
    } catch (const geometry::InvalidInput& e) {
        throw UsageError(e.what());
    } catch (const c10::Error& e) {
        const std::string what = e.what_without_backtrace();
        if (what.find("can't allocate memory") != std::string::npos || what.find("out of memory") != std::string::npos)
            throw Failure("out of memory: the model run's inputs are too large for this machine (use a smaller image, "
                          "--max-pixels, fewer images or a shorter prompt); LibTorch: " +
                          what.substr(0, what.find('\n')));
        throw Failure("LibTorch: " + what);
    } catch (const std::bad_alloc&) {
        throw Failure("out of memory: the model run's inputs are too large for this machine (use a smaller image, --max-pixels, "
                      "fewer images or a shorter prompt)");
    }
}

} // namespace ropescope::cli
