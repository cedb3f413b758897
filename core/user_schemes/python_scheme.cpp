// Python's headers before Qt's: Qt's `slots` macro would rewrite a field of Python's object.h.
#include "core/user_schemes/python_runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "core/user_schemes/python_scheme.h"

#include "core/io/input_file.h"

#include <QCryptographicHash>
#include <QFileInfo>

#include <cstring>
#include <map>
#include <mutex>
#include <optional>

namespace ropescope::user_schemes {
namespace {

constexpr qint64 kMaxSchemeFileBytes = 1 << 20;

// The layout a scheme's component count is learnt from at load: every segment kind once.
const char* const kProbeLayout = "text:3,image:2x2,text:2,video:2x2x2,text:1";

const char* segmentKindName(geometry::SegmentKind kind)
{
    switch (kind) {
    case geometry::SegmentKind::Text: return "text";
    case geometry::SegmentKind::Image: return "image";
    case geometry::SegmentKind::Video: return "video";
    }
    return "text";
}

py::object pythonLayout(const geometry::Layout& layout)
{
    py::list segments;
    for (const geometry::Segment& s : layout.segments)
        segments.append(py::make_tuple(segmentKindName(s.kind), s.tokenCount(), s.isVisual() ? s.frames : 0, s.rows, s.cols));
    return schemeRuntime().attr("Layout")(layout.toString(), segments);
}

// A Python error as one line naming file:line (and the traceback for the window). Call holding the GIL.
[[noreturn]] void rethrow(py::error_already_set& e, const std::string& path, const char* what)
{
    py::tuple described = schemeRuntime().attr("describe")(e.value(), e.trace() ? e.trace() : py::none(), path, what);
    const std::string line = described[0].cast<std::string>();
    const std::string detail = described[1].cast<std::string>();
    throw PythonError(line, detail);
}

class PythonScheme final : public geometry::CustomScheme {
public:
    PythonScheme(std::string file, std::string sha256) : file_(std::move(file)), sha256_(std::move(sha256)) {}
    ~PythonScheme() override
    {
        if (module_)
            withPython([this] { delete module_; });
    }

    const std::string& file() const override { return file_; }
    const std::string& sha256() const override { return sha256_; }
    std::string label() const override { return QFileInfo(QString::fromStdString(file_)).fileName().toStdString(); }
    int components() const override { return componentNames_.size() ? static_cast<int>(componentNames_.size()) : 0; }
    std::vector<std::string> componentNames() const override { return componentNames_; }
    std::vector<geometry::CustomParameter> parameters() const override { return parameters_; }

    void load(const QByteArray& source)
    {
        withPython([&] {
            try {
                CallDeadline deadline;
                py::module_ m = schemeRuntime().attr("load")(file_, py::bytes(source.constData(), static_cast<size_t>(source.size())));
                module_ = new py::object(m);
                for (py::handle p : schemeRuntime().attr("parameters")(m)) {
                    py::tuple t = p.cast<py::tuple>();
                    parameters_.push_back({t[0].cast<std::string>(), t[1].cast<double>(), t[2].cast<double>(), t[3].cast<double>()});
                }
                py::object names = schemeRuntime().attr("components")(m);
                if (!names.is_none())
                    componentNames_ = names.cast<std::vector<std::string>>();
            } catch (py::error_already_set& e) {
                rethrow(e, file_, "loading the file");
            }
        });
        // The first call fixes C when the file names no COMPONENTS.
        geometry::CustomValues defaults;
        for (const geometry::CustomParameter& p : parameters_)
            defaults[p.name] = p.defaultValue;
        const Eigen::MatrixXd probe = positions(geometry::parseLayout(kProbeLayout), defaults);
        if (componentNames_.empty())
            componentNames_ = geometry::defaultComponentNames(static_cast<int>(probe.cols()));
    }

    Eigen::MatrixXd positions(const geometry::Layout& layout, const geometry::CustomValues& values) const override
    {
        const std::string key = layout.toString();
        {
            std::lock_guard<std::mutex> lock(cacheMutex_);
            if (cached_ && cachedLayout_ == key && cachedValues_ == values)
                return *cached_;
        }
        Eigen::MatrixXd out;
        withPython([&] {
            try {
                py::dict params;
                for (const auto& [name, value] : values)
                    params[py::str(name)] = value;
                CallDeadline deadline;
                py::array_t<double, py::array::c_style> a =
                    schemeRuntime().attr("call_positions")(*module_, pythonLayout(layout), params, components());
                const auto c = a.shape(0), n = a.shape(1);
                out.resize(n, c);
                // [C, L] row-major is L x C column-major: one copy.
                std::memcpy(out.data(), a.data(), static_cast<size_t>(c * n) * sizeof(double));
            } catch (py::error_already_set& e) {
                rethrow(e, file_, "positions()");
            }
        });
        std::lock_guard<std::mutex> lock(cacheMutex_);
        cachedLayout_ = key;
        cachedValues_ = values;
        cached_ = out;
        return out;
    }

    std::optional<std::vector<int>> allocation(int, int halfDim) const override
    {
        // The file is asked for the dims that rotate (head_dim x partial_rotary_factor), one component per pair.
        {
            std::lock_guard<std::mutex> lock(cacheMutex_);
            if (const auto it = allocations_.find(halfDim); it != allocations_.end())
                return it->second;
        }
        std::optional<std::vector<int>> out;
        withPython([&] {
            try {
                CallDeadline deadline;
                py::object a = schemeRuntime().attr("call_allocation")(*module_, 2 * halfDim, halfDim, components());
                if (!a.is_none())
                    out = a.cast<std::vector<int>>();
            } catch (py::error_already_set& e) {
                rethrow(e, file_, "allocation()");
            }
        });
        std::lock_guard<std::mutex> lock(cacheMutex_);
        allocations_[halfDim] = out;
        return out;
    }

private:
    std::string file_, sha256_;
    py::object* module_ = nullptr;
    std::vector<std::string> componentNames_;
    std::vector<geometry::CustomParameter> parameters_;
    // The last positions: the explorer asks again for the same layout and values on every redraw.
    mutable std::mutex cacheMutex_;
    mutable std::string cachedLayout_;
    mutable geometry::CustomValues cachedValues_;
    mutable std::optional<Eigen::MatrixXd> cached_;
    mutable std::map<int, std::optional<std::vector<int>>> allocations_;
};

} // namespace

bool isPythonSchemePath(const std::string& scheme)
{
    return scheme.size() > 3 && scheme.compare(scheme.size() - 3, 3, ".py") == 0;
}

std::string schemeFileSha256(const std::string& path)
{
    const QByteArray source = io::readInputFile(QString::fromStdString(path), kMaxSchemeFileBytes, "Python scheme");
    return QCryptographicHash::hash(source, QCryptographicHash::Sha256).toHex().toStdString();
}

std::shared_ptr<const geometry::CustomScheme> loadPythonScheme(const std::string& path)
{
    const QByteArray source = io::readInputFile(QString::fromStdString(path), kMaxSchemeFileBytes, "Python scheme");
    auto scheme = std::make_shared<PythonScheme>(path, QCryptographicHash::hash(source, QCryptographicHash::Sha256).toHex().toStdString());
    scheme->load(source);
    return scheme;
}

geometry::CustomSchemeRef pythonSchemeRef(std::shared_ptr<const geometry::CustomScheme> scheme, geometry::CustomValues values)
{
    geometry::CustomSchemeRef ref;
    ref.file = scheme->file();
    ref.sha256 = scheme->sha256();
    ref.values = std::move(values);
    ref.scheme = std::move(scheme);
    return ref;
}

} // namespace ropescope::user_schemes
