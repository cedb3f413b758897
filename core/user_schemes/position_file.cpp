#include "core/user_schemes/position_file.h"

#include "core/geometry/errors.h"
#include "core/geometry/position_table.h"
#include "core/io/input_file.h"
#include "core/io/npy.h"
#include "core/model/engine/safetensors.h"
#include "core/user_schemes/json_pull.h"

#include <QCryptographicHash>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <cctype>
#include <cmath>
#include <cstring>

namespace ropescope::user_schemes {
namespace {

using geometry::InvalidInput;

constexpr qint64 kMaxPositionFileBytes = 512LL << 20;

class FixedPositions final : public geometry::CustomScheme {
public:
    FixedPositions(std::string file, std::string sha256, Eigen::MatrixXd positions, std::vector<std::string> names)
        : file_(std::move(file)), sha256_(std::move(sha256)), positions_(std::move(positions)), names_(std::move(names))
    { }
    const std::string& file() const override { return file_; }
    const std::string& sha256() const override { return sha256_; }
    std::string label() const override { return QFileInfo(QString::fromStdString(file_)).fileName().toStdString(); }
    int components() const override { return static_cast<int>(positions_.cols()); }
    std::vector<std::string> componentNames() const override { return names_; }
    Eigen::MatrixXd positions(const geometry::Layout& layout, const geometry::CustomValues&) const override
    {
        if (layout.tokenCount() != positions_.rows())
            throw InvalidInput("positions",
                               label() + " holds positions for " + std::to_string(positions_.rows()) + " tokens; the " + "sequence (" +
                                   layout.toString() + ") has " + std::to_string(layout.tokenCount()));
        return positions_;
    }

private:
    std::string file_, sha256_;
    Eigen::MatrixXd positions_;
    std::vector<std::string> names_;
};

[[noreturn]] void bad(const QString& path, const std::string& what)
{
    throw InvalidInput("positions", QFileInfo(path).fileName().toStdString() + ": " + what);
}

void checkShape(const QString& path, long long components, long long tokens)
{
    if (components < 1 || components > 4)
        bad(path, "has " + std::to_string(components) + " position components; expected 1 to 4");
    if (tokens < 1 || tokens > geometry::kMaxLayoutTokens)
        bad(path, "has " + std::to_string(tokens) + " tokens; expected 1 to " + std::to_string(geometry::kMaxLayoutTokens));
}

void checkFinite(const QString& path, const Eigen::MatrixXd& p)
{
    for (Eigen::Index c = 0; c < p.cols(); ++c)
        for (Eigen::Index i = 0; i < p.rows(); ++i)
            if (!std::isfinite(p(i, c)) || std::abs(p(i, c)) > 1e15)
                bad(path,
                    "position of token " + std::to_string(i) + ", component " + std::to_string(c) + " is not a finite number within 1e15");
}

// One token's place as `positions` writes it.
struct TokenPlace {
    geometry::Modality modality;
    int segment, frame, row, col;
};

// The layout the token columns describe: segments in order, each text run or visual grid complete and
// row-major (frame, row, col), as `positions` writes them.
geometry::Layout layoutFromPlaces(const QString& path, const std::vector<TokenPlace>& places)
{
    geometry::Layout layout;
    size_t i = 0;
    while (i < places.size()) {
        const TokenPlace& first = places[i];
        if (first.segment != static_cast<int>(layout.segments.size()))
            bad(path,
                "token " + std::to_string(i) + " is in segment " + std::to_string(first.segment) + "; expected segment " +
                    std::to_string(layout.segments.size()));
        size_t end = i;
        while (end < places.size() && places[end].segment == first.segment)
            ++end;
        geometry::Segment seg;
        if (first.modality == geometry::Modality::Text) {
            seg.kind = geometry::SegmentKind::Text;
            seg.length = static_cast<int>(end - i);
        } else {
            seg.kind = first.modality == geometry::Modality::Image ? geometry::SegmentKind::Image : geometry::SegmentKind::Video;
            for (size_t k = i; k < end; ++k) {
                seg.frames = std::max(seg.frames, places[k].frame + 1);
                seg.rows = std::max(seg.rows, places[k].row + 1);
                seg.cols = std::max(seg.cols, places[k].col + 1);
            }
            if (static_cast<long long>(seg.frames) * seg.rows * seg.cols != static_cast<long long>(end - i))
                bad(path, "segment " + std::to_string(first.segment) + " is not a complete frames x rows x cols grid");
        }
        for (size_t k = i; k < end; ++k) {
            const TokenPlace& p = places[k];
            const long long at = static_cast<long long>(k - i);
            const bool inOrder = p.modality == first.modality &&
                (seg.kind == geometry::SegmentKind::Text ||
                 (p.frame >= 0 && p.row >= 0 && p.col >= 0 &&
                  (static_cast<long long>(p.frame) * seg.rows + p.row) * seg.cols + p.col == at));
            if (!inOrder)
                bad(path, "token " + std::to_string(k) + " is out of its segment's order (modality, frame, row, col)");
        }
        layout.segments.push_back(seg);
        i = end;
    }
    try {
        return geometry::parseLayout(layout.toString()); // the layout caps
    } catch (const InvalidInput& e) {
        bad(path, e.what());
    }
}

std::optional<geometry::Modality> modalityFrom(const QString& name)
{
    for (auto m : {geometry::Modality::Text, geometry::Modality::Image, geometry::Modality::Video})
        if (name == geometry::modalityName(m))
            return m;
    return std::nullopt;
}

int parseIndex(const QString& path, const QString& text, long long line, const char* column, bool optional)
{
    if (optional && text.isEmpty())
        return -1;
    bool ok = false;
    const int v = text.toInt(&ok);
    if (!ok || v < 0 || v > (1 << 24))
        bad(path, "line " + std::to_string(line) + ": " + column + " '" + text.left(20).toStdString() + "' is not a valid index");
    return v;
}

// Lines and comma-separated fields read in place over the file's bytes: no copy of a line or a field, so
// a table takes its own size (8 bytes per position, 20 per token) beside the file (a split into lists took
// about 28 times the file).
class CsvCursor {
public:
    explicit CsvCursor(const QByteArray& bytes) : p_(bytes.constData()), end_(bytes.constData() + bytes.size()) { }
    // The next line without its end (and without surrounding blanks); false at the end of the file.
    bool nextLine(const char** begin, const char** finish)
    {
        if (p_ >= end_)
            return false;
        const char* eol = static_cast<const char*>(std::memchr(p_, '\n', static_cast<size_t>(end_ - p_)));
        const char* stop = eol ? eol : end_;
        const char* b = p_;
        const char* e = stop;
        while (b < e && std::isspace(static_cast<unsigned char>(*b)))
            ++b;
        while (e > b && std::isspace(static_cast<unsigned char>(e[-1])))
            --e;
        *begin = b;
        *finish = e;
        p_ = eol ? eol + 1 : end_;
        ++line_;
        return true;
    }
    long long line() const { return line_; }

private:
    const char* p_;
    const char* end_;
    long long line_ = 0;
};

// Splits [begin, end) at commas into `fields` (pointer pairs), at most `max` + 1 of them (one more says "too many").
int splitFields(const char* begin, const char* end, std::pair<const char*, const char*>* fields, int max)
{
    int n = 0;
    const char* start = begin;
    for (const char* c = begin;; ++c) {
        if (c == end || *c == ',') {
            if (n <= max)
                fields[n] = {start, c};
            ++n;
            if (c == end)
                break;
            start = c + 1;
        }
    }
    return n;
}

PositionFile readCsv(const QString& path, const QByteArray& bytes, const std::string& sha)
{
    CsvCursor cursor(bytes);
    const char* b = nullptr;
    const char* e = nullptr;
    constexpr int kMaxFields = 10; // six place columns and up to four components
    std::pair<const char*, const char*> f[kMaxFields + 1];
    const auto text = [](const std::pair<const char*, const char*>& field) {
        return QString::fromLatin1(field.first, static_cast<qsizetype>(field.second - field.first));
    };
    const int headerFields = cursor.nextLine(&b, &e) ? splitFields(b, e, f, kMaxFields) : 0;
    const char* const fixed[] = {"index", "modality", "segment", "frame", "row", "col"};
    bool headerOk = headerFields >= 7 && headerFields <= kMaxFields;
    for (int c = 0; headerOk && c < 6; ++c)
        headerOk = text(f[c]) == fixed[c];
    if (!headerOk)
        bad(path, "the header must be index,modality,segment,frame,row,col,p0[,p1..p3] (as `ropescope positions` writes)");
    const int components = headerFields - 6;
    for (int c = 0; c < components; ++c)
        if (text(f[6 + c]) != "p" + QString::number(c))
            bad(path, "column " + std::to_string(7 + c) + " must be p" + std::to_string(c));
    // Rows first (one pass of memchr), so the table is allocated once at its size, after the cap is checked.
    long long rows = 0;
    {
        CsvCursor count(bytes);
        count.nextLine(&b, &e);
        while (count.nextLine(&b, &e))
            rows += b == e ? 0 : 1;
    }
    checkShape(path, components, rows);
    Eigen::MatrixXd p(rows, components);
    std::vector<TokenPlace> places;
    places.reserve(static_cast<size_t>(rows));
    long long token = 0;
    while (cursor.nextLine(&b, &e)) {
        if (b == e)
            continue;
        const long long l = cursor.line();
        const int n = splitFields(b, e, f, kMaxFields);
        if (n != 6 + components)
            bad(path,
                "line " + std::to_string(l) + " has " + std::to_string(n) + " columns; the header has " + std::to_string(6 + components));
        if (parseIndex(path, text(f[0]), l, "index", false) != token)
            bad(path, "line " + std::to_string(l) + ": index must be " + std::to_string(token));
        const auto modality = modalityFrom(text(f[1]));
        if (!modality)
            bad(path, "line " + std::to_string(l) + ": modality must be text, image or video");
        const bool isText = *modality == geometry::Modality::Text;
        places.push_back({*modality, parseIndex(path, text(f[2]), l, "segment", false), parseIndex(path, text(f[3]), l, "frame", isText),
                          parseIndex(path, text(f[4]), l, "row", isText), parseIndex(path, text(f[5]), l, "col", isText)});
        for (int c = 0; c < components; ++c) {
            bool ok = false;
            p(token, c) = text(f[6 + c]).toDouble(&ok);
            if (!ok)
                bad(path, "line " + std::to_string(l) + ": p" + std::to_string(c) + " is not a number");
        }
        ++token;
    }
    checkFinite(path, p);
    PositionFile out;
    out.layout = layoutFromPlaces(path, places);
    out.scheme = std::make_shared<FixedPositions>(path.toStdString(), sha, std::move(p), geometry::defaultComponentNames(components));
    return out;
}

// The JSON `positions --format json` writes, read one value at a time (JsonPull): memory grows with the
// table (its positions and places), never with a tree of the whole document.
PositionFile readJson(const QString& path, const QByteArray& bytes, const std::string& sha)
{
    std::vector<double> values; // token-major, `components` per token
    std::vector<TokenPlace> places;
    std::vector<std::string> names;
    int components = 0;
    bool sawTokens = false;
    try {
        JsonPull json(bytes);
        json.beginObject();
        std::string key;
        while (json.nextKey(&key)) {
            if (key == "component_names") {
                json.beginArray();
                while (json.nextItem()) {
                    std::string name = json.string();
                    if (names.size() >= 4 || name.size() > 64)
                        bad(path, "component_names: at most 4 names of at most 64 characters");
                    names.push_back(std::move(name));
                }
                continue;
            }
            if (key != "tokens") {
                json.skip();
                continue;
            }
            sawTokens = true;
            json.beginArray();
            while (json.nextItem()) {
                const long long i = static_cast<long long>(places.size());
                if (i >= geometry::kMaxLayoutTokens)
                    bad(path, "has more than " + std::to_string(geometry::kMaxLayoutTokens) + " tokens");
                TokenPlace place{geometry::Modality::Text, -1, -1, -1, -1};
                bool modalitySeen = false;
                int given = 0;
                json.beginObject();
                std::string field;
                while (json.nextKey(&field)) {
                    if (field == "p") {
                        json.beginArray();
                        while (json.nextItem()) {
                            if (given >= 4)
                                bad(path, "token " + std::to_string(i) + " has more than 4 positions");
                            values.push_back(json.number());
                            ++given;
                        }
                    } else if (field == "modality") {
                        const auto modality = modalityFrom(QString::fromStdString(json.string()));
                        if (!modality)
                            bad(path, "token " + std::to_string(i) + ": modality must be text, image or video");
                        place.modality = *modality;
                        modalitySeen = true;
                    } else if (field == "segment" || field == "frame" || field == "row" || field == "col") {
                        int* slot = field == "segment" ? &place.segment
                            : field == "frame"         ? &place.frame
                            : field == "row"           ? &place.row
                                                       : &place.col;
                        if (json.isNull())
                            continue;
                        const double d = json.number();
                        if (!(d >= 0 && d <= (1 << 24)) || d != std::floor(d))
                            bad(path, "token " + std::to_string(i) + ": " + field + " is not a valid index");
                        *slot = static_cast<int>(d);
                    } else {
                        json.skip();
                    }
                }
                if (i == 0)
                    components = given;
                if (given != components)
                    bad(path,
                        "token " + std::to_string(i) + " has " + std::to_string(given) + " positions; token 0 has " +
                            std::to_string(components));
                if (!modalitySeen)
                    bad(path, "token " + std::to_string(i) + ": modality must be text, image or video");
                places.push_back(place);
            }
        }
        json.finish();
    } catch (const JsonPullError& e) {
        bad(path, e.what());
    }
    if (!sawTokens || places.empty())
        bad(path, "has no \"tokens\" array (as `ropescope positions --format json` writes)");
    const long long n = static_cast<long long>(places.size());
    checkShape(path, components, n);
    Eigen::MatrixXd p(n, components);
    for (long long i = 0; i < n; ++i)
        for (int c = 0; c < components; ++c)
            p(i, c) = values[static_cast<size_t>(i * components + c)];
    checkFinite(path, p);
    if (static_cast<int>(names.size()) != components)
        names = geometry::defaultComponentNames(components);
    PositionFile out;
    out.layout = layoutFromPlaces(path, places);
    out.scheme = std::make_shared<FixedPositions>(path.toStdString(), sha, std::move(p), names);
    return out;
}

// [C, L], [C, 1, L] (transformers' batch of one) or [L]: (components, tokens).
std::pair<long long, long long> tableShape(const QString& path, const std::vector<long long>& shape)
{
    if (shape.size() == 1)
        return {1, shape[0]};
    if (shape.size() == 2)
        return {shape[0], shape[1]};
    if (shape.size() == 3 && shape[1] == 1)
        return {shape[0], shape[2]};
    std::string text;
    for (long long s : shape)
        text += (text.empty() ? "" : ",") + std::to_string(s);
    bad(path, "position array has shape [" + text + "]; expected [C, L], [C, 1, L] or [L] (one sequence)");
}

template <class T> void fill(Eigen::MatrixXd& p, const uint8_t* data, long long components, long long tokens)
{
    for (long long c = 0; c < components; ++c)
        for (long long i = 0; i < tokens; ++i) {
            T v;
            std::memcpy(&v, data + static_cast<size_t>(c * tokens + i) * sizeof(T), sizeof(T));
            p(i, c) = static_cast<double>(v);
        }
}

PositionFile fromArray(const QString& path, const std::string& sha, const std::string& dtype, const std::vector<long long>& shape,
                       const uint8_t* data, size_t bytes)
{
    const auto [components, tokens] = tableShape(path, shape);
    checkShape(path, components, tokens);
    const size_t width = dtype == "f8" || dtype == "i8" ? 8 : dtype == "f4" || dtype == "i4" ? 4 : 0;
    if (!width)
        bad(path, "position values of type " + dtype + "; expected float64, float32, int64 or int32");
    if (bytes < static_cast<size_t>(components * tokens) * width)
        bad(path, "holds fewer values than its shape needs");
    Eigen::MatrixXd p(tokens, components);
    if (dtype == "f8")
        fill<double>(p, data, components, tokens);
    else if (dtype == "f4")
        fill<float>(p, data, components, tokens);
    else if (dtype == "i8")
        fill<int64_t>(p, data, components, tokens);
    else
        fill<int32_t>(p, data, components, tokens);
    checkFinite(path, p);
    PositionFile out;
    out.scheme = std::make_shared<FixedPositions>(path.toStdString(), sha, std::move(p),
                                                  geometry::defaultComponentNames(static_cast<int>(components)));
    return out;
}

// NumPy's .npy: magic, version, a Python-literal header {'descr': '<f8', 'fortran_order': False, 'shape': (3, 15)}.
PositionFile readNpy(const QString& path, const QByteArray& bytes, const std::string& sha)
{
    io::NpyHeader h;
    try {
        h = io::parseNpyHeader(bytes, geometry::kMaxLayoutTokens);
    } catch (const io::IoError& e) {
        bad(path, e.what());
    }
    if (h.dtype[0] == 'b')
        bad(path, "a boolean .npy array is not a position table");
    return fromArray(path, sha, h.dtype, h.shape, reinterpret_cast<const uint8_t*>(bytes.constData() + h.dataOffset),
                     static_cast<size_t>(bytes.size() - h.dataOffset));
}

PositionFile readSafetensors(const QString& path, const QByteArray& bytes, const std::string& sha)
{
    try {
        const model::SafeTensors file = model::SafeTensors::fromBytes(bytes, path);
        const model::TensorInfo* t = file.find("position_ids");
        if (!t)
            bad(path, "has no tensor 'position_ids' ([3,1,L] as transformers' get_rope_index returns it)");
        std::vector<long long> shape(t->shape.begin(), t->shape.end());
        const char* dtype = t->dtype == model::DType::F64 ? "f8"
            : t->dtype == model::DType::F32               ? "f4"
            : t->dtype == model::DType::I64               ? "i8"
            : t->dtype == model::DType::I32               ? "i4"
                                                          : model::dtypeName(t->dtype);
        return fromArray(path, sha, dtype, shape, file.data(*t), static_cast<size_t>(t->end - t->begin));
    } catch (const model::ModelError& e) {
        bad(path, e.what());
    }
}

} // namespace

PositionFile readPositionFile(const std::string& file)
{
    return parsePositionFile(io::readInputFile(QString::fromStdString(file), kMaxPositionFileBytes, "position table"), file);
}

PositionFile parsePositionFile(const QByteArray& bytes, const std::string& name)
{
    const QString path = QString::fromStdString(name);
    const QString suffix = QFileInfo(path).suffix().toLower();
    const std::string sha = QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex().toStdString();
    try {
        if (suffix == "csv")
            return readCsv(path, bytes, sha);
        if (suffix == "json")
            return readJson(path, bytes, sha);
        if (suffix == "npy")
            return readNpy(path, bytes, sha);
        if (suffix == "safetensors")
            return readSafetensors(path, bytes, sha);
    } catch (const std::bad_alloc&) {
        bad(path, "too large for this machine's memory (" + std::to_string(bytes.size() >> 20) + " MB)");
    }
    bad(path, "unknown kind of position table; expected .csv, .json (from `ropescope positions`), .npy or .safetensors");
}

geometry::CustomSchemeRef positionFileRef(const PositionFile& file)
{
    geometry::CustomSchemeRef ref;
    ref.file = file.scheme->file();
    ref.sha256 = file.scheme->sha256();
    ref.scheme = file.scheme;
    return ref;
}

} // namespace ropescope::user_schemes
