#pragma once
#include "core/geometry/position_table.h"

#include <QAbstractTableModel>

namespace ropescope::views {

// The current PositionTable for a QTableView: index, modality, segment, frame, row, col, p0..p{C-1}.
// Numbers are returned as numbers so a QSortFilterProxyModel sorts them numerically.
class PositionTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    using QAbstractTableModel::QAbstractTableModel;

    void setTable(const geometry::PositionTable& table);
    const geometry::PositionTable& table() const { return table_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    geometry::PositionTable table_;
};

} // namespace ropescope::views
