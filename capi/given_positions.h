#pragma once
// Positions placed outside this library, held as a custom scheme so that PTD and the prior treat them as they
// treat a built-in's: what the Python package reads back from the `ropescope` binary for a Python scheme file
// (the file runs in the binary's bounded worker, never in the caller's process).
#include "core/geometry/custom_scheme.h"
#include "core/geometry/frequency.h"

#include <Eigen/Core>

#include <optional>
#include <string>
#include <vector>

namespace ropescope::capi {

class GivenPositions : public geometry::CustomScheme {
public:
    // positions: tokens x components; pairs: the component driving each rotated pair, or none for the default.
    GivenPositions(std::string label, std::vector<std::string> componentNames, Eigen::MatrixXd positions,
                   std::optional<std::vector<int>> pairs);

    const std::string& file() const override { return label_; }
    const std::string& sha256() const override { return sha256_; }
    std::string label() const override { return label_; }
    int components() const override { return static_cast<int>(positions_.cols()); }
    std::vector<std::string> componentNames() const override { return names_; }
    std::optional<std::vector<int>> allocation(int headDim, int halfDim) const override;
    Eigen::MatrixXd positions(const geometry::Layout& layout, const geometry::CustomValues& values) const override;

private:
    std::string label_, sha256_;
    std::vector<std::string> names_;
    Eigen::MatrixXd positions_;
    std::optional<std::vector<int>> pairs_;
};

// An allocation by its name ("sectioned", "interleaved", "interleaved-mrope", "hw-alternating", "distributed",
// "hw-interleaved", "per-pair") and sections, as `positions --format json` writes it, as the component of each of
// `halfDim` pairs. Throws geometry::InvalidInput("allocation", ...) for anything else (per-head has no such table).
std::vector<int> pairComponents(const std::string& kind, const std::vector<int>& sections, int components, int halfDim);

} // namespace ropescope::capi
