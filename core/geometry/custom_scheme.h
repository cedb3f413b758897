#pragma once
#include "core/geometry/layout.h"

#include <Eigen/Core>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ropescope::geometry {

// A parameter a custom scheme declares (a Python file's PARAMETERS entry): the GUI gives it a slider, the
// CLI takes it as --param name=value, sessions and batch items keep its value.
struct CustomParameter {
    std::string name;
    double defaultValue = 0;
    double min = 0;
    double max = 1;
};

using CustomValues = std::map<std::string, double>;

// A scheme whose positions come from outside RopeScope's C++: a Python file (core/python) or a position
// table read from a file (io::readPositionTable). Geometry knows only this interface, so the view, the
// metrics and the model treat it as they treat a built-in: what is drawn is what the model is fed.
class CustomScheme {
public:
    virtual ~CustomScheme() = default;

    // Where it comes from (the path as given) and a hash of the content (sessions keep both).
    virtual const std::string& file() const = 0;
    virtual const std::string& sha256() const = 0;
    // What the views and tables call it: the file's name.
    virtual std::string label() const = 0;
    // Position components C (1..4), fixed for the scheme: every call returns this many.
    virtual int components() const = 0;
    virtual std::vector<std::string> componentNames() const = 0;
    virtual std::vector<CustomParameter> parameters() const { return {}; }
    // Whether it was loaded with the .py files beside it importable (Python schemes; CustomSchemeRef keeps it).
    virtual bool importsFolder() const { return false; }
    // The component driving each rotated pair (halfDim entries), when the scheme fixes one; otherwise the
    // default for its component count (or --allocation / the model's own).
    virtual std::optional<std::vector<int>> allocation(int headDim, int halfDim) const
    {
        (void)headDim;
        (void)halfDim;
        return std::nullopt;
    }
    // tokens x components. Throws InvalidInput naming what is wrong (the file and line for a Python error);
    // the result is checked again by buildPositionTable (shape, finite).
    virtual Eigen::MatrixXd positions(const Layout& layout, const CustomValues& values) const = 0;
};

// A custom scheme as a SchemeParams holds it: the file and its hash (what a session or job names), the
// parameter values, and the loaded scheme (absent until the application has loaded, and trusted, the file).
struct CustomSchemeRef {
    std::string file;
    std::string sha256;
    CustomValues values;
    // A Python scheme may import the .py files beside it (the user's choice, kept in sessions); its sha256
    // then covers those files too.
    bool importsFolder = false;
    std::shared_ptr<const CustomScheme> scheme;

    // The value of a declared parameter: the one set, else its default.
    CustomValues resolvedValues() const;
};

bool operator==(const CustomSchemeRef& a, const CustomSchemeRef& b);

// Component names for a scheme file that names none: n for one, t,h,w for three, v1..vC otherwise.
std::vector<std::string> defaultComponentNames(int components);

// A custom scheme's name as the views and messages show it ("my_scheme.py").
std::string customLabel(const CustomSchemeRef& ref);

} // namespace ropescope::geometry
