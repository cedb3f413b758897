// Python schemes run in a worker process (scheme_worker.h): this file holds no Python. It reads the file
// once, hashes those bytes and sends exactly them to the worker, and checks every value that comes back
// (shape, count, finiteness, ranges) before geometry sees it.
#include "core/user_schemes/python_scheme.h"

#include "core/io/input_file.h"
#include "core/user_schemes/scheme_worker.h"
#include "core/user_schemes/worker_wire.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>

#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace ropescope::user_schemes {
namespace {

constexpr qint64 kMaxSchemeFileBytes = 1 << 20;
constexpr std::uint32_t kMaxParameters = 256;

// The layout a scheme's component count is learnt from at load: every segment kind once.
const char* const kProbeLayout = "text:3,image:2x2,text:2,video:2x2x2,text:1";

std::uint32_t segmentKindCode(geometry::SegmentKind kind)
{
    switch (kind) {
    case geometry::SegmentKind::Text: return 0;
    case geometry::SegmentKind::Image: return 1;
    case geometry::SegmentKind::Video: return 2;
    }
    return 0;
}

// One line for a message: control characters (a newline in a file name, a scheme's own text) become '?'.
std::string oneLine(std::string text, std::size_t maxChars = 600)
{
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?';
    if (text.size() > maxChars)
        text = text.substr(0, maxChars) + "...";
    return text;
}

bool isIdentifier(const std::string& name)
{
    if (name.empty() || name.size() > 128 || std::isdigit(static_cast<unsigned char>(name[0])))
        return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
            return false;
    return true;
}

class PythonScheme final : public geometry::CustomScheme {
public:
    explicit PythonScheme(SchemeSource source)
        : file_(source.path), source_(source.bytes), sha256_(source.sha256), modules_(std::move(source.modules)),
          importsFolder_(source.importsFolder), worker_(label())
    { }

    const std::string& file() const override { return file_; }
    const std::string& sha256() const override { return sha256_; }
    std::string label() const override { return oneLine(QFileInfo(QString::fromStdString(file_)).fileName().toStdString(), 200); }
    int components() const override { return static_cast<int>(componentNames_.size()); }
    std::vector<std::string> componentNames() const override { return componentNames_; }
    std::vector<geometry::CustomParameter> parameters() const override { return parameters_; }
    bool importsFolder() const override { return importsFolder_; }

    void load()
    {
        std::lock_guard<std::mutex> lock(callMutex_);
        ensureLoaded();
        // The first call fixes C when the file names no COMPONENTS.
        geometry::CustomValues defaults;
        for (const geometry::CustomParameter& p : parameters_)
            defaults[p.name] = p.defaultValue;
        const Eigen::MatrixXd probe = callPositions(geometry::parseLayout(kProbeLayout), defaults);
        if (componentNames_.empty())
            componentNames_ = geometry::defaultComponentNames(static_cast<int>(probe.cols()));
    }

    Eigen::MatrixXd positions(const geometry::Layout& layout, const geometry::CustomValues& values) const override
    {
        const std::string key = layout.toString();
        std::lock_guard<std::mutex> lock(callMutex_);
        // The explorer asks again for the same layout and values on every redraw.
        if (cached_ && cachedLayout_ == key && cachedValues_ == values)
            return *cached_;
        Eigen::MatrixXd out = callPositions(layout, values);
        cachedLayout_ = key;
        cachedValues_ = values;
        cached_ = out;
        return out;
    }

    std::optional<std::vector<int>> allocation(int, int halfDim) const override
    {
        // The file is asked for the dims that rotate (head_dim x partial_rotary_factor), one component per pair.
        std::lock_guard<std::mutex> lock(callMutex_);
        if (const auto it = allocations_.find(halfDim); it != allocations_.end())
            return it->second;
        ensureLoaded();
        wire::WireWriter request;
        request.u32(static_cast<std::uint32_t>(2 * halfDim));
        request.u32(static_cast<std::uint32_t>(halfDim));
        request.u32(static_cast<std::uint32_t>(components()));
        const std::string reply = call(wire::Kind::Allocation, request.bytes(), "allocation()");
        std::optional<std::vector<int>> out;
        try {
            wire::WireReader in(reply);
            const std::uint32_t present = in.u32();
            if (present > 1)
                throw wire::WireError("bad presence flag");
            if (present) {
                const std::uint32_t n = in.u32();
                if (n != static_cast<std::uint32_t>(halfDim))
                    bad("allocation(" + std::to_string(2 * halfDim) + ") returned " + std::to_string(n) + " indices; expected " +
                        std::to_string(halfDim) + ", one per rotated pair");
                std::vector<int> indices(n);
                for (std::uint32_t i = 0; i < n; ++i) {
                    const std::int64_t v = in.i64();
                    if (v < 0 || v >= components())
                        bad("allocation() returned component " + std::to_string(v) + "; the scheme has " + std::to_string(components()));
                    indices[i] = static_cast<int>(v);
                }
                out = std::move(indices);
            }
            in.finish();
        } catch (const wire::WireError& e) {
            malformed("allocation()", e);
        }
        allocations_[halfDim] = out;
        return out;
    }

private:
    [[noreturn]] void bad(const std::string& what) const { throw PythonError(label() + ": " + what, label() + ": " + what); }

    [[noreturn]] void malformed(const char* what, const wire::WireError& e) const
    {
        worker_.stop(); // a worker that sends nonsense is not asked again
        bad(std::string(what) + ": the scheme's process sent a malformed reply (" + e.what() + ")");
    }

    // One request; an error the scheme raised becomes PythonError, a worker that overran or died too (with
    // what the scheme printed as its detail).
    std::string call(wire::Kind kind, const std::string& payload, const char* what) const
    {
        SchemeWorker::Reply reply;
        try {
            reply = worker_.call(static_cast<std::uint32_t>(kind), payload, what);
        } catch (const WorkerFailure& e) {
            throw PythonError(withPrinted(oneLine(e.what())), withOutput(e.what()));
        }
        if (reply.ok)
            return std::move(reply.payload);
        std::string line, detail;
        try {
            wire::WireReader in(reply.payload);
            line = in.str(64 << 10);
            detail = in.str(1 << 20);
            in.finish();
        } catch (const wire::WireError& e) {
            malformed(what, e);
        }
        if (line.find("MemoryError") != std::string::npos)
            worker_.stop(); // over its memory limit: start again clean
        throw PythonError(withPrinted(oneLine(line)), withOutput(detail));
    }

    std::string withPrinted(std::string line) const
    {
        std::string printed = worker_.output(400);
        if (printed.empty())
            return line;
        printed = printed.substr(printed.find_last_of('\n') == std::string::npos ? 0 : printed.find_last_of('\n') + 1);
        return line + " (the scheme printed: " + oneLine(printed, 160) + ")";
    }

    std::string withOutput(std::string detail) const
    {
        const std::string printed = worker_.output(4000);
        if (!printed.empty())
            detail += "\n\nThe scheme printed:\n" + printed;
        return detail;
    }

    // Starts the worker when it is not running (first use, or after it was ended) and runs the file's bytes in
    // it. The declarations must be the same each time: a file whose PARAMETERS change between loads is refused.
    void ensureLoaded() const
    {
        if (worker_.running())
            return;
        wire::WireWriter request;
        request.str(QFileInfo(QString::fromStdString(file_)).absoluteFilePath().toStdString());
        request.str(source_.toStdString());
        request.u32(static_cast<std::uint32_t>(modules_.size()));
        const QDir folder = QFileInfo(QString::fromStdString(file_)).absoluteDir();
        for (const auto& [name, bytes] : modules_) {
            request.str(name);
            request.str(folder.filePath(QString::fromStdString(name) + ".py").toStdString());
            request.str(bytes.toStdString());
        }
        const std::string reply = call(wire::Kind::Load, request.bytes(), "loading the file");
        std::vector<geometry::CustomParameter> parameters;
        std::vector<std::string> names;
        try {
            wire::WireReader in(reply);
            const std::uint32_t count = in.u32();
            if (count > kMaxParameters)
                bad("PARAMETERS declares " + std::to_string(count) + " parameters; at most " + std::to_string(kMaxParameters));
            std::set<std::string> seen;
            for (std::uint32_t i = 0; i < count; ++i) {
                geometry::CustomParameter p;
                p.name = in.str(4096);
                p.defaultValue = in.f64();
                p.min = in.f64();
                p.max = in.f64();
                if (!isIdentifier(p.name) || !seen.insert(p.name).second)
                    bad("PARAMETERS: '" + oneLine(p.name, 60) + "' is not a parameter name");
                if (!std::isfinite(p.defaultValue) || !std::isfinite(p.min) || !std::isfinite(p.max) || p.min > p.defaultValue ||
                    p.defaultValue > p.max)
                    bad("PARAMETERS['" + p.name + "']: need finite min <= default <= max");
                parameters.push_back(p);
            }
            const std::uint32_t nameCount = in.u32();
            if (nameCount > 4)
                bad("COMPONENTS must be a list of 1 to 4 names, got " + std::to_string(nameCount));
            for (std::uint32_t i = 0; i < nameCount; ++i) {
                std::string name = in.str(4096);
                if (name.empty() || name.size() > 64)
                    bad("COMPONENTS: a name must have 1 to 64 characters");
                names.push_back(oneLine(name, 64));
            }
            in.finish();
        } catch (const wire::WireError& e) {
            malformed("loading the file", e);
        }
        if (loadedOnce_ && (names != declaredNames_ || parameters.size() != parameters_.size())) {
            worker_.stop();
            bad("its PARAMETERS or COMPONENTS changed when it was loaded again");
        }
        if (!loadedOnce_) {
            parameters_ = parameters;
            declaredNames_ = componentNames_ = names;
            loadedOnce_ = true;
        }
    }

    Eigen::MatrixXd callPositions(const geometry::Layout& layout, const geometry::CustomValues& values) const
    {
        ensureLoaded();
        const long long tokens = layout.tokenCount();
        wire::WireWriter request;
        request.str(layout.toString());
        request.u32(static_cast<std::uint32_t>(layout.segments.size()));
        for (const geometry::Segment& s : layout.segments) {
            request.u32(segmentKindCode(s.kind));
            request.i64(s.tokenCount());
            request.i64(s.isVisual() ? s.frames : 0);
            request.i64(s.rows);
            request.i64(s.cols);
        }
        request.u32(static_cast<std::uint32_t>(values.size()));
        for (const auto& [name, value] : values) {
            request.str(name);
            request.f64(value);
        }
        request.u32(static_cast<std::uint32_t>(components()));
        const std::string reply = call(wire::Kind::Positions, request.bytes(), "positions()");
        Eigen::MatrixXd out;
        try {
            wire::WireReader in(reply);
            const std::uint32_t c = in.u32();
            const std::int64_t n = in.i64();
            if (c < 1 || c > 4)
                bad("positions() returned " + std::to_string(c) + " components; expected 1 to 4 (shape [C, L])");
            if (components() > 0 && static_cast<int>(c) != components())
                bad("positions() returned " + std::to_string(c) + " components; the scheme has " + std::to_string(components()));
            if (n != tokens)
                bad("positions() returned " + std::to_string(n) + " positions per component for a layout of " + std::to_string(tokens) +
                    " tokens");
            out.resize(n, c);
            // [C, L] row-major is L x C column-major: one copy.
            in.f64s(out.data(), static_cast<std::size_t>(n) * c);
            in.finish();
        } catch (const wire::WireError& e) {
            malformed("positions()", e);
        }
        for (Eigen::Index i = 0; i < out.rows(); ++i)
            for (Eigen::Index k = 0; k < out.cols(); ++k)
                if (!std::isfinite(out(i, k)))
                    bad(std::string("positions() returned ") + (std::isnan(out(i, k)) ? "NaN" : "an infinite value") + " at token " +
                        std::to_string(i));
        return out;
    }

    std::string file_;
    QByteArray source_; // the bytes that were hashed: the only ones ever run
    std::string sha256_;
    std::vector<std::pair<std::string, QByteArray>> modules_; // the folder's modules, when it may import them
    bool importsFolder_ = false;
    mutable SchemeWorker worker_;
    mutable std::mutex callMutex_; // one call at a time: the explorer's worker, the GUI thread and a model runner share it
    mutable bool loadedOnce_ = false;
    mutable std::vector<geometry::CustomParameter> parameters_;
    mutable std::vector<std::string> componentNames_, declaredNames_;
    mutable std::string cachedLayout_;
    mutable geometry::CustomValues cachedValues_;
    mutable std::optional<Eigen::MatrixXd> cached_;
    mutable std::map<int, std::optional<std::vector<int>>> allocations_;
};

std::mutex refusalMutex;
std::string& refusal()
{
    static std::string why;
    return why;
}

QByteArray readSchemeFile(const std::string& path)
{
    return io::readInputFile(QString::fromStdString(path), kMaxSchemeFileBytes, "Python scheme");
}

} // namespace

bool isPythonSchemePath(const std::string& scheme)
{
    return scheme.size() > 3 && scheme.compare(scheme.size() - 3, 3, ".py") == 0;
}

SchemeSource readSchemeSource(const std::string& path, bool importsFolder)
{
    SchemeSource s;
    s.path = path;
    s.bytes = readSchemeFile(path);
    s.importsFolder = importsFolder;
    if (!importsFolder) {
        s.sha256 = QCryptographicHash::hash(s.bytes, QCryptographicHash::Sha256).toHex().toStdString();
        return s;
    }
    // The scheme and its neighbours, in name order, each as name, size and bytes: one hash over all of them.
    const QFileInfo self(QString::fromStdString(path));
    const QFileInfoList files = self.absoluteDir().entryInfoList({"*.py"}, QDir::Files | QDir::Readable, QDir::Name);
    qint64 total = 0;
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(QByteArray("ropescope scheme with its folder, v1\n"));
    hash.addData(QByteArray::number(s.bytes.size()) + "\n");
    hash.addData(s.bytes);
    for (const QFileInfo& f : files) {
        if (f.absoluteFilePath() == self.absoluteFilePath() || !isIdentifier(f.completeBaseName().toStdString()))
            continue;
        if (s.modules.size() >= 64)
            throw io::IoError(self.absolutePath().toStdString() + ": more than 64 Python files beside the scheme to import");
        QByteArray bytes = readSchemeFile(f.absoluteFilePath().toStdString());
        total += bytes.size();
        if (total > (4 << 20))
            throw io::IoError(self.absolutePath().toStdString() + ": the Python files beside the scheme hold more than 4 MB");
        hash.addData(f.completeBaseName().toUtf8() + "\n" + QByteArray::number(bytes.size()) + "\n");
        hash.addData(bytes);
        s.modules.emplace_back(f.completeBaseName().toStdString(), std::move(bytes));
    }
    s.sha256 = hash.result().toHex().toStdString();
    return s;
}

std::string schemeFileSha256(const std::string& path)
{
    return readSchemeSource(path).sha256;
}

void refusePythonSchemes(const std::string& why)
{
    std::lock_guard<std::mutex> lock(refusalMutex);
    refusal() = why;
}

std::shared_ptr<const geometry::CustomScheme> loadPythonScheme(const SchemeSource& source)
{
    {
        std::lock_guard<std::mutex> lock(refusalMutex);
        if (!refusal().empty()) {
            const std::string line =
                oneLine(QFileInfo(QString::fromStdString(source.path)).fileName().toStdString(), 200) + ": " + refusal();
            throw PythonError(line, line);
        }
    }
    auto scheme = std::make_shared<PythonScheme>(source);
    scheme->load();
    return scheme;
}

std::shared_ptr<const geometry::CustomScheme> loadPythonScheme(const std::string& path, bool importsFolder)
{
    {
        std::lock_guard<std::mutex> lock(refusalMutex);
        if (!refusal().empty()) // refused before the file is even read
            return loadPythonScheme(SchemeSource{path, {}, {}, {}, false});
    }
    return loadPythonScheme(readSchemeSource(path, importsFolder));
}

geometry::CustomSchemeRef pythonSchemeRef(std::shared_ptr<const geometry::CustomScheme> scheme, geometry::CustomValues values)
{
    geometry::CustomSchemeRef ref;
    ref.file = scheme->file();
    ref.sha256 = scheme->sha256();
    ref.importsFolder = scheme->importsFolder();
    ref.values = std::move(values);
    ref.scheme = std::move(scheme);
    return ref;
}

} // namespace ropescope::user_schemes
