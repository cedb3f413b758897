// ParameterPanel's layout: the text field (checked as typed, applied after a pause or on Enter) and the
// structured editor (text, N equal images or videos, text) kept in step with it (the panel: parameter_panel.cpp).
#include "views/widgets/parameter_panel.h"

#include "core/geometry/errors.h"
#include "core/geometry/layout.h"

#include <QLineEdit>
#include <QSpinBox>
#include <QTimer>

#include <string>
#include <utility>
#include <vector>

namespace ropescope::views {
using namespace geometry;

namespace {

// "text:B,image:HxW[,text:M,image:HxW]...,text:A" (or video:FxHxW) from the structured editor.
std::string structuredLayout(int before, int rows, int cols, int images, int frames, int between, int after)
{
    std::string out;
    auto add = [&](const std::string& s) { out += (out.empty() ? "" : ",") + s; };
    const std::string visual = frames > 1 ? "video:" + std::to_string(frames) + "x" + std::to_string(rows) + "x" + std::to_string(cols)
                                          : "image:" + std::to_string(rows) + "x" + std::to_string(cols);
    if (before > 0)
        add("text:" + std::to_string(before));
    for (int i = 0; i < images; ++i) {
        if (i > 0 && between > 0)
            add("text:" + std::to_string(between));
        add(visual);
    }
    if (after > 0)
        add("text:" + std::to_string(after));
    return out;
}

} // namespace

void ParameterPanel::structuredLayoutEdited()
{
    if (updating_)
        return;
    layoutPause_->stop();
    committedLayout_ = structuredLayout(textBefore_->value(), rows_->value(), cols_->value(), images_->value(), frames_->value(),
                                        textBetween_->value(), textAfter_->value());
    layout_->setText(QString::fromStdString(committedLayout_));
    layout_->setStyleSheet({});
    emitEdited();
}

void ParameterPanel::layoutTyped()
{
    // Say at once whether the text parses (red while it does not); apply it only after the pause.
    try {
        parseLayout(layout_->text().trimmed().toStdString());
        layout_->setStyleSheet({});
        layout_->setToolTip(kLayoutHelp);
    } catch (const InvalidInput& e) {
        layout_->setStyleSheet("background: #fde7e4;");
        layout_->setToolTip(QString(kLayoutHelp) + "\n\n" + e.what());
    }
    layoutPause_->start();
}

void ParameterPanel::commitLayout()
{
    layoutPause_->stop();
    const std::string text = layout_->text().trimmed().toStdString();
    if (text == committedLayout_) {
        layout_->setModified(false); // applied: Ctrl+Z in the field is now the window's Undo
        return;
    }
    try {
        parseLayout(text);
    } catch (const InvalidInput& e) {
        // The view keeps the last valid layout; nothing is applied or autosaved.
        const QString message = QString("%1 (showing the last valid layout, %2)").arg(e.what(), QString::fromStdString(committedLayout_));
        setError(message, "layout");
        Q_EMIT layoutRejected(message);
        return;
    }
    committedLayout_ = text;
    layout_->setModified(false);
    mirrorInStructuredEditor(parseLayout(text));
    emitEdited();
}

// The structured editor shows the layout when it has that shape (text, N equal visual blocks, text).
void ParameterPanel::mirrorInStructuredEditor(const Layout& l)
{
    const bool wasUpdating = std::exchange(updating_, true); // the spin boxes' signals end in emitEdited()
    std::vector<const Segment*> visual;
    for (const Segment& seg : l.segments)
        if (seg.isVisual())
            visual.push_back(&seg);
    bool shown = false;
    if (!visual.empty()) {
        const Segment& v = *visual.front();
        const int before = l.segments.front().isVisual() ? 0 : l.segments.front().length;
        const int after = l.segments.back().isVisual() ? 0 : l.segments.back().length;
        int between = 0;
        for (size_t i = 1; i + 1 < l.segments.size(); ++i)
            if (!l.segments[i].isVisual() && l.segments[i - 1].isVisual())
                between = l.segments[i].length;
        const std::string rebuilt = structuredLayout(before, v.rows, v.cols, static_cast<int>(visual.size()), v.frames, between, after);
        if (rebuilt == l.toString()) {
            textBefore_->setValue(before);
            rows_->setValue(v.rows);
            cols_->setValue(v.cols);
            images_->setValue(static_cast<int>(visual.size()));
            frames_->setValue(v.frames);
            textBetween_->setValue(between);
            textAfter_->setValue(after);
            shown = true;
        }
    }
    // A layout the editor cannot show (images of different sizes, uneven text between them, text alone)
    // disables it rather than leaving another layout's numbers in it: one of those edited would replace the
    // whole layout with a stale one.
    for (QSpinBox* spinBox : {textBefore_, rows_, cols_, images_, frames_, textBetween_, textAfter_}) {
        spinBox->setEnabled(shown);
        spinBox->setStatusTip(shown ? QString()
                                    : QString("This layout is edited as text: the grid editor shows text, N equal images or videos, text"));
    }
    updating_ = wasUpdating;
}

} // namespace ropescope::views
