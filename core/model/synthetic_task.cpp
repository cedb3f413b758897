#include "synthetic_task.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

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

void draw(QPainter& p, const Object& o)
{
    const double cell = 28.0;
    const QPointF c(o.col * cell + cell / 2, o.row * cell + cell / 2);
    const double r = o.size / 2.0;
    p.setBrush(kPalette[o.colour]);
    p.setPen(Qt::NoPen);
    switch (o.shape) {
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

const QStringList& SyntheticTask::questionTypes()
{
    static const QStringList t{"colour", "shape", "where", "relation", "count"};
    return t;
}

const QStringList& SyntheticTask::answers()
{
    static const QStringList a = [] {
        QStringList out = colours() + shapes() + QStringList{"topleft", "topright", "bottomleft", "bottomright"};
        for (int n = 1; n <= 6; ++n)
            out << kNumbers[n];
        return out;
    }();
    return a;
}

QStringList SyntheticTask::vocabulary()
{
    QStringList v = answers();
    for (const QString& s : shapes())
        v << plural(s);
    v << QStringList{"what", "colour", "is", "the", "shape", "object", "where", "how", "many", "are", "there", "left", "right",
                     "above", "below", "of"};
    v.removeDuplicates();
    return v;
}

SyntheticSample SyntheticTask::sample(uint64_t seed, uint64_t index)
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
            o.row = anchor.row + (d == 2 ? -1 : d == 3 ? 1 : 0);
            o.col = anchor.col + (d == 0 ? -1 : d == 1 ? 1 : 0);
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
    for (int y = 0; y < kImageSize; ++y) {
        uchar* line = s.image.scanLine(y);
        for (int x = 0; x < kImageSize; ++x) {
            const QColor c = background(x, y);
            line[3 * x] = static_cast<uchar>(c.red());
            line[3 * x + 1] = static_cast<uchar>(c.green());
            line[3 * x + 2] = static_cast<uchar>(c.blue());
        }
    }
    {
        QPainter p(&s.image);
        p.setRenderHint(QPainter::Antialiasing, false); // byte-identical images everywhere
        for (const Object& o : objects)
            draw(p, o);
    }
    auto mark = [&](const Object& o) { s.mask[static_cast<size_t>(o.row * kGrid + o.col)] = true; };
    auto uniqueShape = [&](const Object& x) {
        return std::count_if(objects.begin(), objects.end(), [&](const Object& o) { return o.shape == x.shape; }) == 1;
    };

    // Pick a question type whose answer is well defined for this image; retry deterministically.
    // The type is drawn first and an object that suits it is searched for, so the five types stay about
    // equally frequent (only "relation" needs a neighbouring pair, and falls back to another type).
    auto uniqueColour = [&](const Object& x) {
        return std::count_if(objects.begin(), objects.end(), [&](const Object& o) { return o.colour == x.colour; }) == 1;
    };
    for (int attempt = 0; attempt < 64; ++attempt) {
        const int type = rng.below(5);
        const int first = rng.below(count);
        int pick = first;
        for (int k = 0; k < count; ++k) {
            const Object& c = objects[static_cast<size_t>((first + k) % count)];
            if (type == 1 ? uniqueColour(c) : type == 0 || type == 2 ? uniqueShape(c) : true) {
                pick = (first + k) % count;
                break;
            }
        }
        const Object& x = objects[static_cast<size_t>(pick)];
        if (type == 0) { // colour of a shape that appears once
            if (!uniqueShape(x))
                continue;
            s.question = "what colour is the " + shapes()[x.shape];
            s.answer = colours()[x.colour];
            mark(x);
        } else if (type == 1) { // shape of a colour that appears once
            if (!uniqueColour(x))
                continue;
            s.question = "what shape is " + colours()[x.colour];
            s.answer = shapes()[x.shape];
            mark(x);
        } else if (type == 2) { // quadrant of a shape that appears once
            if (!uniqueShape(x))
                continue;
            s.question = "where is the " + shapes()[x.shape];
            s.answer = QString(x.row < kGrid / 2 ? "top" : "bottom") + (x.col < kGrid / 2 ? "left" : "right");
            mark(x);
        } else if (type == 3) { // the object in the neighbouring cell in a direction: one of the pairs there are
            static const char* relations[] = {"left", "right", "above", "below"};
            struct Pair {
                const Object *of, *next;
                int relation;
            };
            std::vector<Pair> pairs;
            for (const Object& a : objects)
                for (const Object& n : objects)
                    if (uniqueShape(a))
                    for (int r = 0; r < 4; ++r)
                        if (n.row == a.row + (r == 2 ? -1 : r == 3 ? 1 : 0) && n.col == a.col + (r == 0 ? -1 : r == 1 ? 1 : 0))
                            pairs.push_back({&a, &n, r});
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
    // Unreachable in practice (a count question is always answerable); kept so every path returns a sample.
    s.mask = {};
    int n = 0;
    for (const Object& o : objects)
        if (o.shape == objects[0].shape) {
            ++n;
            mark(o);
        }
    s.question = "how many " + plural(shapes()[objects[0].shape]);
    s.answer = kNumbers[n];
    s.type = "count";
    return s;
}

} // namespace ropescope::model
