#pragma once
#include "core/geometry/position_table.h"

#include <QtTest>

#include <cmath>
#include <vector>

// Compares every position of `table` with `expected` (one row per token) to `tolerance`.
inline bool positionsEqual(const ropescope::geometry::PositionTable& table, const std::vector<std::vector<double>>& expected,
                           double tolerance = 1e-9)
{
    if (table.size() != static_cast<int>(expected.size())) {
        qWarning("table has %d tokens, expected %d", table.size(), int(expected.size()));
        return false;
    }
    for (int i = 0; i < table.size(); ++i) {
        const auto& row = expected[static_cast<size_t>(i)];
        if (table.components() != static_cast<int>(row.size())) {
            qWarning("table has %d components, expected %d", table.components(), int(row.size()));
            return false;
        }
        for (int c = 0; c < table.components(); ++c)
            if (std::abs(table.positions(i, c) - row[static_cast<size_t>(c)]) > tolerance) {
                qWarning("token %d component %d: got %.12g, expected %.12g", i, c, table.positions(i, c), row[static_cast<size_t>(c)]);
                return false;
            }
    }
    return true;
}
