#include "core/geometry/paper_table1.h"

#include "core/geometry/metrics.h"
#include "core/geometry/scheme.h"

namespace ropescope::geometry {
namespace {

const char* kLayout = "image:3x3,text:5";

double ptdOf(SchemeKind kind)
{
    SchemeParams p;
    p.kind = kind;
    return computePtd(buildPositionTable(parseLayout(kLayout), p)).mean;
}

// The paper's "spatial" embedding: 2-D (h, w) image indices, text on the diagonal continuing the 1-D
// count (k, k) for k = 9..13. No real model uses exactly this, so it is built by hand.
double spatialPaperPtd()
{
    PositionTable t = tokenMetadata(parseLayout(kLayout));
    t.positions.resize(t.size(), 2);
    for (int i = 0; i < t.size(); ++i) {
        if (t.isText(i))
            t.positions.row(i).setConstant(i); // tokens 9..13
        else
            t.positions.row(i) << t.row[static_cast<size_t>(i)], t.col[static_cast<size_t>(i)];
    }
    return computePtd(t).mean;
}

} // namespace

std::vector<Table1Row> paperTable1()
{
    return {
        {"Hard", "1-D: image 0..8, text 9..13", ptdOf(SchemeKind::Hard), "2.22"},
        {"Unordered", "1-D: every image token 0, text 1..5", ptdOf(SchemeKind::Unordered), "0"},
        {"Spatial", "2-D (h,w): image {0,1,2}^2, text (k,k), k=9..13", spatialPaperPtd(), "0.64"},
        {"Circle", "3-D cone: ring R=10, alpha=0.5 around (0,0,0), text from max+1", ptdOf(SchemeKind::Circle), "0"},
        {"M-RoPE", "3-D (t,h,w) as Qwen2-VL: image (0,h,w), text (k,k,k), k=3..7", ptdOf(SchemeKind::Mrope), "-"},
    };
}

} // namespace ropescope::geometry
