#pragma once
#include <string>
#include <vector>

namespace ropescope::geometry {

// Circle-RoPE paper Table 1: PTD of the classic layouts with 9 image tokens (3x3) and 5 text tokens,
// recomputed here, next to Qwen2-VL's real 3-D layout of the same tokens.
struct Table1Row {
    std::string label;
    std::string positions; // how the tokens are placed
    double ptd = 0.0;
    std::string paper; // the paper's printed value, or "-" where the paper has none
};

std::vector<Table1Row> paperTable1();

} // namespace ropescope::geometry
