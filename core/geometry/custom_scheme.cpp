#include "core/geometry/custom_scheme.h"

#include "core/geometry/errors.h"

namespace ropescope::geometry {

CustomValues CustomSchemeRef::resolvedValues() const
{
    CustomValues out;
    if (scheme)
        for (const CustomParameter& p : scheme->parameters())
            out[p.name] = p.defaultValue;
    for (const auto& [name, value] : values)
        out[name] = value;
    return out;
}

bool operator==(const CustomSchemeRef& a, const CustomSchemeRef& b)
{
    return a.file == b.file && a.sha256 == b.sha256 && a.values == b.values && a.importsFolder == b.importsFolder && a.scheme == b.scheme;
}

std::vector<std::string> defaultComponentNames(int components)
{
    if (components == 1)
        return {"n"};
    if (components == 3)
        return {"t", "h", "w"};
    std::vector<std::string> out;
    for (int c = 0; c < components; ++c)
        out.push_back("v" + std::to_string(c + 1));
    return out;
}

std::string customLabel(const CustomSchemeRef& ref)
{
    if (ref.scheme)
        return ref.scheme->label();
    const size_t slash = ref.file.find_last_of('/');
    return slash == std::string::npos ? ref.file : ref.file.substr(slash + 1);
}

} // namespace ropescope::geometry
