#pragma once
#include "core/geometry/frequency.h"
#include "core/geometry/layout.h"
#include "core/geometry/scheme_kind.h"

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ropescope::geometry {

enum class Modality : std::uint8_t { Text, Image, Video };
const char* modalityName(Modality m);

// A contiguous run of visual tokens on one H x W grid: one image, or one frame of a video.
// Tokens inside are row-major: token begin + r * cols + c.
struct VisualBlock {
    int segment = 0;
    int frame = 0;
    int begin = 0;
    int rows = 0;
    int cols = 0;

    int size() const { return rows * cols; }
    int end() const { return begin + size(); }
};

// A Circle-RoPE ring: its centre, in-plane basis and radius in (t,h,w) position space (the plane is
// orthogonal to the text axis).
struct Ring {
    int block = 0;
    Eigen::Vector3d centre;
    Eigen::Vector3d u, v; // in-plane basis: token = centre + R (cos theta u + sin theta v)
    double radius = 0.0;

    Eigen::Vector3d at(double theta) const { return centre + radius * (std::cos(theta) * u + std::sin(theta) * v); }
};

// The one description of where every token sits, shared by the cone view, the tables, the metrics and
// the model: what the view draws is exactly what the model is fed.
struct PositionTable {
    SchemeKind scheme = SchemeKind::Mrope;
    // A custom scheme's name ("my_scheme.py"; empty for a built-in) and its components' names.
    std::string customScheme;
    std::vector<std::string> customComponents;
    Layout layout;
    std::vector<Modality> modality;
    std::vector<int> segment;
    std::vector<int> frame; // -1 for text
    std::vector<int> row;   // -1 for text
    std::vector<int> col;   // -1 for text
    std::vector<VisualBlock> blocks;
    std::vector<int> textTokens;
    std::vector<Ring> rings; // Circle-RoPE only: one per visual block
    // tokens x components, column-major so each component is contiguous for the metric loops.
    Eigen::MatrixXd positions;
    FrequencyAllocation allocation;
    RotaryConfig rotary;

    int size() const { return static_cast<int>(modality.size()); }
    int components() const { return static_cast<int>(positions.cols()); }
    int visualTokenCount() const { return size() - static_cast<int>(textTokens.size()); }
    bool isText(int token) const { return modality[static_cast<size_t>(token)] == Modality::Text; }
    // The scheme's name as views show it (the custom file's name, or the built-in's).
    std::string schemeLabel() const { return customScheme.empty() ? schemeName(scheme) : customScheme; }
    std::vector<std::string> componentLabels() const { return customScheme.empty() ? componentNames(scheme) : customComponents; }
};

// (t, h, w) <-> (w, h, t): the official Circle-RoPE code (and the 3-D view's x, y, z) order coordinates
// w, h, t; the tables order them t, h, w. The swap is its own inverse.
inline Eigen::Vector3d reverseAxes(const Eigen::Vector3d& v)
{
    return {v.z(), v.y(), v.x()};
}

// Token metadata (modality, segment, frame, row, col, blocks) of a layout; positions left empty.
PositionTable tokenMetadata(const Layout& layout);

} // namespace ropescope::geometry
