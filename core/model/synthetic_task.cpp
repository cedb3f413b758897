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
// Row and column steps to the neighbouring cell: left, right, above, below (the relation words' order).
const int kNeighbour[4][2] = {{0, -1}, {0, 1}, {-1, 0}, {1, 0}};

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

} // namespace ropescope::model
