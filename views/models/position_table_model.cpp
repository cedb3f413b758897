#include "views/models/position_table_model.h"

#include <QBrush>
#include <QColor>

namespace ropescope::views {

namespace {
constexpr int kMetaColumns = 6;
}

void PositionTableModel::setTable(const geometry::PositionTable& table)
{
    beginResetModel();
    table_ = table;
    endResetModel();
}

int PositionTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : table_.size();
}

int PositionTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : kMetaColumns + table_.components();
}

QVariant PositionTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= table_.size())
        return {};
    const int i = index.row();
    const auto k = static_cast<size_t>(i);
    const bool text = table_.isText(i);
    if (role == Qt::ForegroundRole && text)
        return QBrush(QColor(40, 70, 140));
    if (role == Qt::TextAlignmentRole)
        return index.column() == 1 ? int(Qt::AlignLeft | Qt::AlignVCenter) : int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole) { // a narrow column elides its cells: the full value, to full precision
        if (index.column() < kMetaColumns)
            return data(index, Qt::DisplayRole);
        return QString::number(table_.positions(i, index.column() - kMetaColumns), 'g', 17);
    }
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    switch (index.column()) {
    case 0: return i;
    case 1: return geometry::modalityName(table_.modality[k]);
    case 2: return table_.segment[k];
    case 3: return text ? QVariant() : QVariant(table_.frame[k]);
    case 4: return text ? QVariant() : QVariant(table_.row[k]);
    case 5: return text ? QVariant() : QVariant(table_.col[k]);
    default: {
        const double v = table_.positions(i, index.column() - kMetaColumns);
        // Display rounds for reading; EditRole keeps full precision (copy uses it).
        return role == Qt::DisplayRole ? QVariant(QString::number(v, 'g', 6)) : QVariant(v);
    }
    }
}

QVariant PositionTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return {};
    static const char* names[kMetaColumns] = {"index", "modality", "segment", "frame", "row", "col"};
    if (section < kMetaColumns)
        return names[section];
    return QString("p%1").arg(section - kMetaColumns);
}

} // namespace ropescope::views
