#include "core/model/training/synthetic_task.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace ropescope::model {
namespace {

// splitmix64: tiny, portable, and the same numbers on every platform (std:: distributions are not).
struct Rng {
    uint64_t state;
    uint64_t next()
    {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

struct Object {
    int shape, colour, row, col, size;
};

const QColor kPalette[] = {QColor(220, 40, 40), QColor(40, 170, 60), QColor(40, 80, 220), QColor(235, 200, 30), QColor(150, 60, 190)};
const char* kNumbers[] = {"zero", "one", "two", "three", "four", "five", "six"};
// Row and column steps to the neighbouring cell: left, right, above, below (the relation words' order).
const int kNeighbour[4][2] = {{0, -1}, {0, 1}, {-1, 0}, {1, 0}};

// A shape of "radius" r (half its width) centred on c, with the painter's current pen and brush.
void drawShape(QPainter& p, int shape, QPointF c, double r)
{
    switch (shape) {
    case 0: p.drawEllipse(c, r, r); break;
    case 1: p.drawRect(QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r)); break;
    case 2: {
        QPainterPath t;
        t.moveTo(c.x(), c.y() - r);
        t.lineTo(c.x() + r, c.y() + r);
        t.lineTo(c.x() - r, c.y() + r);
        t.closeSubpath();
        p.drawPath(t);
        break;
    }
    default: {
        QPainterPath d;
        d.moveTo(c.x(), c.y() - r);
        d.lineTo(c.x() + r, c.y());
        d.lineTo(c.x(), c.y() + r);
        d.lineTo(c.x() - r, c.y());
        d.closeSubpath();
        p.drawPath(d);
    }
    }
}

constexpr double kCell = 28.0;
constexpr double kMaxOffset = 10.0; // px from the cell's centre, each axis: the centre stays in its cell

void drawGrid(QImage& image, const std::vector<Object>& objects)
{
    for (int y = 0; y < image.height(); ++y) {
        uchar* line = image.scanLine(y);
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = SyntheticTask::background(x, y);
            line[3 * x] = static_cast<uchar>(c.red());
            line[3 * x + 1] = static_cast<uchar>(c.green());
            line[3 * x + 2] = static_cast<uchar>(c.blue());
        }
    }
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing, false); // byte-identical images everywhere
    p.setPen(Qt::NoPen);
    for (const Object& o : objects) {
        p.setBrush(kPalette[o.colour]);
        drawShape(p, o.shape, QPointF(o.col * kCell + kCell / 2, o.row * kCell + kCell / 2), o.size / 2.0);
    }
}

// The pictures drawn otherwise (Rendering::Varied and ::Drawn). Their random draws come from a stream of
// their own, so the objects, questions and answers stay those of the Grid sample.
struct OtherLook {
    double minSize, maxSize; // px
    int shade;               // +-, per colour channel
    double outlined;         // share of objects with a darker outline
    int noise;               // +-, per pixel
    int supersample;         // drawn at this many times the size, then filtered down
    // Background ramps to choose from: linear, smoothstep, then t^0.8 and t^1.25. Mild on purpose: a cell
    // redder than the image's mean is right of the middle for all four, so "where" stays answerable.
    int profiles;
};

double uniform(Rng& rng, double lo, double hi)
{
    return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
}

double ramp(double t, int profile)
{
    switch (profile) {
    case 1: return t * t * (3 - 2 * t);
    case 2: return std::pow(t, 0.8);
    case 3: return std::pow(t, 1.25);
    default: return t;
    }
}

int clampByte(double v)
{
    return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0)));
}

// The background keeps the grid's cue (redder to the right, bluer downwards: the one thing "where"
// questions can be answered from, see the README) with other end colours, strengths and profiles.
void drawOther(QImage& image, const std::vector<Object>& objects, Rng& rng, const OtherLook& look)
{
    const int n = SyntheticTask::kImageSize, scale = look.supersample, big = n * scale;
    const double red0 = uniform(rng, 195, 225), red1 = std::min(255.0, red0 + uniform(rng, 25, 55));
    const double blue0 = uniform(rng, 195, 225), blue1 = std::min(255.0, blue0 + uniform(rng, 25, 55));
    const double green = uniform(rng, 205, 245);
    const int redProfile = rng.below(look.profiles), blueProfile = rng.below(look.profiles);
    QImage canvas(big, big, QImage::Format_RGB888);
    for (int y = 0; y < big; ++y) {
        uchar* line = canvas.scanLine(y);
        const double b = blue0 + (blue1 - blue0) * ramp((y + 0.5) / big, blueProfile);
        for (int x = 0; x < big; ++x) {
            line[3 * x] = static_cast<uchar>(clampByte(red0 + (red1 - red0) * ramp((x + 0.5) / big, redProfile)));
            line[3 * x + 1] = static_cast<uchar>(clampByte(green));
            line[3 * x + 2] = static_cast<uchar>(clampByte(b));
        }
    }
    {
        QPainter p(&canvas);
        p.setRenderHint(QPainter::Antialiasing, true);
        p.scale(scale, scale);
        std::vector<std::pair<QPointF, double>> placed; // centre and radius of the objects drawn so far
        for (const Object& o : objects) {
            double r = uniform(rng, look.minSize, look.maxSize) / 2;
            // Anywhere with its centre in its cell, as a user would place it: it may cover parts of the
            // neighbouring cells' tokens, never another object (retried closer to the centre; centred and
            // made smaller when a large neighbour leaves no room).
            QPointF c;
            for (int attempt = 0;; ++attempt) {
                const double room = attempt < 8 ? kMaxOffset * (1 - attempt / 8.0) : 0;
                const double x = o.col * kCell + kCell / 2 + uniform(rng, -room, room),
                             y = o.row * kCell + kCell / 2 + uniform(rng, -room, room);
                const double inside = std::min(r + 1, kCell / 2); // whole, inside the picture, when it fits its cell
                c = QPointF(std::clamp(x, inside, SyntheticTask::kImageSize - inside),
                            std::clamp(y, inside, SyntheticTask::kImageSize - inside));
                const bool clear = std::all_of(placed.begin(), placed.end(), [&](const std::pair<QPointF, double>& other) {
                    return std::hypot(other.first.x() - c.x(), other.first.y() - c.y()) >= (other.second + r) * std::sqrt(2.0) + 1;
                });
                if (clear)
                    break;
                if (room == 0) {
                    for (const auto& [centre, radius] : placed)
                        r = std::min(r, (std::hypot(centre.x() - c.x(), centre.y() - c.y()) - 1) / std::sqrt(2.0) - radius);
                    r = std::max(r, 4.0);
                    break;
                }
            }
            placed.emplace_back(c, r);
            const QColor base = kPalette[o.colour];
            const QColor fill(clampByte(base.red() + rng.below(2 * look.shade + 1) - look.shade),
                              clampByte(base.green() + rng.below(2 * look.shade + 1) - look.shade),
                              clampByte(base.blue() + rng.below(2 * look.shade + 1) - look.shade));
            p.setBrush(fill);
            if (uniform(rng, 0, 1) < look.outlined)
                p.setPen(QPen(fill.darker(150), uniform(rng, 1.0, 2.0)));
            else
                p.setPen(Qt::NoPen);
            drawShape(p, o.shape, c, r);
        }
    }
    image = scale == 1 ? canvas : canvas.scaled(n, n, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    if (look.noise > 0)
        for (int y = 0; y < n; ++y) {
            uchar* line = image.scanLine(y);
            for (int x = 0; x < 3 * n; ++x)
                line[x] = static_cast<uchar>(clampByte(line[x] + rng.below(2 * look.noise + 1) - look.noise));
        }
}

QString plural(const QString& shape)
{
    return shape + "s";
}

} // namespace

QColor SyntheticTask::background(int x, int y)
{
    return QColor(210 + 40 * x / (kImageSize - 1), 230, 210 + 40 * y / (kImageSize - 1));
}

const QStringList& SyntheticTask::shapes()
{
    static const QStringList s{"circle", "square", "triangle", "diamond"};
    return s;
}

const QStringList& SyntheticTask::colours()
{
    static const QStringList c{"red", "green", "blue", "yellow", "purple"};
    return c;
}

const QStringList& SyntheticTask::quadrants()
{
    static const QStringList q{"topleft", "topright", "bottomleft", "bottomright"};
    return q;
}

int SyntheticTask::quadrantOf(int row, int col)
{
    return (row < kGrid / 2 ? 0 : 2) + (col < kGrid / 2 ? 0 : 1);
}

const QStringList& SyntheticTask::questionTypes()
{
    static const QStringList t{"colour", "shape", "where", "relation", "count"};
    return t;
}

const QStringList& SyntheticTask::answers()
{
    static const QStringList a = [] {
        QStringList out = colours() + shapes() + quadrants();
        for (int n = 1; n <= 6; ++n)
            out << kNumbers[n];
        return out;
    }();
    return a;
}

QString SyntheticTask::inputsNote()
{
    return QString("Trained on RopeScope's shapes task: %1 in %2, one per cell of an 8x8 grid (224x224 pictures, 28 px "
                   "cells; objects 10-32 px across, centred in their cell), on a pastel background "
                   "that is redder to the right and bluer downwards (its \"where\" answers read that gradient). "
                   "Questions: what colour is the circle \u00b7 what shape is red \u00b7 where is the circle \u00b7 what is "
                   "left of / right of / above / below the circle \u00b7 how many circles \u00b7 how many are red.")
        .arg(shapes().join(", "), colours().join(", "));
}

QStringList SyntheticTask::vocabulary()
{
    QStringList v = answers();
    for (const QString& s : shapes())
        v << plural(s);
    v << QStringList{"what", "colour", "is",    "the",  "shape", "object", "where", "how",
                     "many", "are",    "there", "left", "right", "above",  "below", "of"};
    v.removeDuplicates();
    return v;
}

SyntheticSample SyntheticTask::sample(uint64_t seed, uint64_t index, Rendering rendering)
{
    Rng rng{seed * 0x2545F4914F6CDD1Dull ^ (index + 1) * 0x9E3779B97F4A7C15ull};
    rng.next();
    // Objects: 2-6, distinct cells, distinct (shape, colour). Half of them after the first sit next to an
    // earlier one, so "what is left of X" questions have an answer often enough.
    std::vector<Object> objects;
    const int count = 2 + rng.below(5);
    while (static_cast<int>(objects.size()) < count) {
        Object o{rng.below(4), rng.below(5), rng.below(kGrid), rng.below(kGrid), 14 + rng.below(11)};
        if (!objects.empty() && rng.below(2) == 0) {
            const Object& anchor = objects[static_cast<size_t>(rng.below(static_cast<int>(objects.size())))];
            const int d = rng.below(4);
            o.row = anchor.row + kNeighbour[d][0];
            o.col = anchor.col + kNeighbour[d][1];
            if (o.row < 0 || o.row >= kGrid || o.col < 0 || o.col >= kGrid)
                continue;
        }
        const bool clash = std::any_of(objects.begin(), objects.end(), [&](const Object& x) {
            return (x.row == o.row && x.col == o.col) || (x.shape == o.shape && x.colour == o.colour);
        });
        if (!clash)
            objects.push_back(o);
    }

    SyntheticSample s;
    s.cellColour.fill(-1);
    s.cellShape.fill(-1);
    for (const Object& o : objects) {
        s.cellColour[static_cast<size_t>(o.row * kGrid + o.col)] = static_cast<int8_t>(o.colour);
        s.cellShape[static_cast<size_t>(o.row * kGrid + o.col)] = static_cast<int8_t>(o.shape);
    }
    s.image = QImage(kImageSize, kImageSize, QImage::Format_RGB888);
    if (rendering == Rendering::OnGrid) {
        drawGrid(s.image, objects);
    } else {
        Rng look{(seed + 0x51ED27ull) * 0xD1B54A32D192ED03ull ^ (index + 1) * 0x8CB92BA72F3D8DD7ull ^ static_cast<uint64_t>(rendering)};
        look.next();
        if (rendering == Rendering::Varied)
            drawOther(s.image, objects, look, {10, 32, 30, 0.3, look.below(2) * 3, 1, 2});
        else
            drawOther(s.image, objects, look, {12, 32, 35, 0.3, 4, 4, 4});
    }
    auto mark = [&](const Object& o) { s.mask[static_cast<size_t>(o.row * kGrid + o.col)] = true; };
    auto uniqueShape = [&](const Object& x) {
        return std::count_if(objects.begin(), objects.end(), [&](const Object& o) { return o.shape == x.shape; }) == 1;
    };
    auto uniqueColour = [&](const Object& x) {
        return std::count_if(objects.begin(), objects.end(), [&](const Object& o) { return o.colour == x.colour; }) == 1;
    };
    // Types 0 and 2 ask about a shape, type 1 about a colour: it must appear once. Relation and count
    // questions can start from any object.
    auto suits = [&](int type, const Object& x) { return type == 1 ? uniqueColour(x) : type == 0 || type == 2 ? uniqueShape(x) : true; };

    // The type is drawn first and an object that suits it is searched for, so the five types stay about
    // equally frequent (only "relation" needs a neighbouring pair, and falls back to another type). A count
    // question is always answerable; the last attempt asks one.
    const int attempts = 64;
    for (int attempt = 0;; ++attempt) {
        const int type = attempt + 1 < attempts ? rng.below(5) : 4;
        const int first = rng.below(count);
        int pick = first;
        for (int k = 0; k < count; ++k)
            if (suits(type, objects[static_cast<size_t>((first + k) % count)])) {
                pick = (first + k) % count;
                break;
            }
        const Object& x = objects[static_cast<size_t>(pick)];
        if (!suits(type, x))
            continue;
        if (type == 0) { // colour of a shape that appears once
            s.question = "what colour is the " + shapes()[x.shape];
            s.answer = colours()[x.colour];
            mark(x);
        } else if (type == 1) { // shape of a colour that appears once
            s.question = "what shape is " + colours()[x.colour];
            s.answer = shapes()[x.shape];
            mark(x);
        } else if (type == 2) { // quadrant of a shape that appears once
            s.question = "where is the " + shapes()[x.shape];
            s.answer = quadrants()[quadrantOf(x.row, x.col)];
            mark(x);
        } else if (type == 3) { // the object in the neighbouring cell in a direction: one of the pairs there are
            static const char* relations[] = {"left", "right", "above", "below"};
            struct Pair {
                const Object *of, *next;
                int relation;
            };
            std::vector<Pair> pairs;
            for (const Object& a : objects) {
                if (!uniqueShape(a))
                    continue;
                for (const Object& n : objects)
                    for (int r = 0; r < 4; ++r)
                        if (n.row == a.row + kNeighbour[r][0] && n.col == a.col + kNeighbour[r][1])
                            pairs.push_back({&a, &n, r});
            }
            if (pairs.empty())
                continue;
            const Pair& p = pairs[static_cast<size_t>(rng.below(static_cast<int>(pairs.size())))];
            s.question = QString("what is ") + relations[p.relation] + (p.relation < 2 ? " of the " : " the ") + shapes()[p.of->shape];
            s.answer = shapes()[p.next->shape];
            mark(*p.of);
            mark(*p.next);
        } else { // count by shape or by colour
            const bool byShape = rng.below(2) == 0;
            int n = 0;
            for (const Object& o : objects)
                if (byShape ? o.shape == x.shape : o.colour == x.colour) {
                    ++n;
                    mark(o);
                }
            s.question = byShape ? "how many " + plural(shapes()[x.shape]) : "how many are " + colours()[x.colour];
            s.answer = kNumbers[n];
        }
        s.type = questionTypes()[type];
        return s;
    }
}

SyntheticSample SyntheticTask::trainingSample(uint64_t seed, uint64_t index)
{
    return sample(seed, index, index % 2 ? Rendering::Varied : Rendering::OnGrid);
}

const char* renderingName(Rendering r)
{
    switch (r) {
    case Rendering::Varied: return "varied";
    case Rendering::Drawn: return "drawn";
    default: return "grid";
    }
}

std::optional<Rendering> renderingFromName(const QString& name)
{
    for (Rendering r : {Rendering::OnGrid, Rendering::Varied, Rendering::Drawn})
        if (name == QLatin1String(renderingName(r)))
            return r;
    return std::nullopt;
}

} // namespace ropescope::model
