#include "app/gui/attention/attention_controls.h"

#include "app/gui/attention/attention_choices.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/attention_request.h"
#include "core/model/training/synthetic_task.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>

namespace ropescope::gui {

QString wrappable(const QString& text)
{
    constexpr int kRun = 24;
    static const QString breakAfter = "/,:;=_";
    QString out;
    out.reserve(text.size() + text.size() / kRun);
    int run = 0, sinceBreak = 0;
    for (const QChar c : text) {
        out += c;
        if (c.isSpace() || c == QChar(0x200B)) {
            run = sinceBreak = 0;
            continue;
        }
        ++run;
        ++sinceBreak;
        if (run > kRun / 2 && (breakAfter.contains(c) || sinceBreak >= kRun)) {
            out += QChar(0x200B);
            sinceBreak = 0;
        }
    }
    return out;
}

QString plainText(const QString& shown)
{
    return QString(shown).remove(QChar(0x200B));
}

namespace {

// Rows of the side column, each a heading above its field (QFormLayout's addRow, wrapped).
struct ColumnRows {
    QVBoxLayout* column;
    void addRow(QWidget* field) { column->addWidget(field); }
    void addRow(QLayout* fields) { column->addLayout(fields); }
    void addRow(const QString& heading, QWidget* field) { headed(heading)->addWidget(field); }
    void addRow(const QString& heading, QLayout* fields) { headed(heading)->addLayout(fields); }
    QVBoxLayout* headed(const QString& heading)
    {
        auto* row = new QVBoxLayout;
        row->setSpacing(2); // a heading sits closer to its field than to the row above
        row->addWidget(new QLabel(heading));
        column->addLayout(row);
        return row;
    }
};

} // namespace

// The controls scroll in their own column, so the image keeps the width.
AttentionControls::AttentionControls(QWidget* parent) : QScrollArea(parent)
{
    auto* sidePanel = new QWidget;
    // The column's content always takes the viewport's width, never its own minimum: a label that cannot wrap
    // narrower is cut, not the column widened past its room with the buttons pushed out of reach (issue 56
    // item 2; QScrollArea makes its widget at least as wide as the widget's minimum size hint, an Ignored
    // width has none).
    sidePanel->setObjectName("attentionColumn");
    sidePanel->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* side = new QVBoxLayout(sidePanel);
    // Labels above their fields: the column is narrow (260-360 px), and a field beside its label would be
    // cut at the column's right edge. Plain box layouts, not a QFormLayout with WrapAllRows: that one's
    // height-for-width undercounts word-wrapped rows, and after a long error the Run button was squeezed to
    // nothing (issue 56 item 3).
    addInputRows(side);
    addAnswerRows(side);
    addMapRows(side);
    status = new QLabel;
    status->setObjectName("attentionStatus");
    status->setWordWrap(true);
    side->addWidget(status);
    side->addStretch(1);
    setWidget(sidePanel);
    sidePanel->installEventFilter(this); // its height follows its width (fitContentHeight)
    setWidgetResizable(true);
    setFrameShape(QFrame::NoFrame);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setMinimumWidth(260);
    setMaximumWidth(360);
    setObjectName("attentionControls");
}

// The prompt: the model, its images, the question, the scheme choices, Run, and the notes and errors below Run.
void AttentionControls::addInputRows(QVBoxLayout* column)
{
    ColumnRows form{column};
    modelName = new QLabel;
    modelName->setObjectName("modelName");
    modelName->setWordWrap(true);
    openModel = new QPushButton("Model...");
    openModel->setObjectName("openModel");
    openImage = new QPushButton("Image...");
    openImage->setObjectName("openImage");
    addImage = new QPushButton("+ Image...");
    addImage->setObjectName("addImage");
    addImage->setToolTip(QString("Add a further image to the prompt (up to %1): one map per image, and each image's share of the "
                                 "attention")
                             .arg(model::kMaxPromptImages));
    auto* buttons = new QGridLayout; // two rows: the three keep their words in the narrowest column
    buttons->addWidget(openModel, 0, 0);
    buttons->addWidget(openImage, 0, 1);
    buttons->addWidget(addImage, 1, 1);
    form.addRow("Model", modelName);
    form.addRow(buttons);
    errorNote = new QLabel;
    errorNote->setObjectName("attentionError");
    errorNote->setWordWrap(true);
    errorNote->setStyleSheet("color: #b00020");
    errorNote->hide();
    question = new QLineEdit(io::sampleQuestion());
    question->setObjectName("question");
    form.addRow("Question", question);
    explorerScheme = new QCheckBox("explorer's scheme");
    explorerScheme->setToolTip("Run the model under the scheme, parameters and AGE schedule set in the Parameters panel;\n"
                               "off: under the scheme the model was trained with");
    explorerScheme->setObjectName("explorerScheme");
    form.addRow(explorerScheme);
    compare = new QCheckBox("compare with own scheme");
    compare->setToolTip("Also run the model under its own (trained) scheme: its map, the difference map and\n"
                        "the total-variation shift between the two maps at the shown layer");
    compare->setObjectName("compare");
    compare->setEnabled(false);
    form.addRow(compare);
    run = new QPushButton("Run");
    run->setObjectName("run");
    form.addRow(run);
    // An error below Run, with the notes: above it, it pushed Question and Run down by its height as it came (issue 72
    // item 4: Run from y 290 to 422 at 1280x720), and a click meant for Run landed elsewhere.
    form.addRow(errorNote);
    // Before a run: words the model cannot read, and what a task model was trained to answer. Below Run, so
    // the note coming and going as a question is typed moves nothing the user is about to click (issue 56
    // item 4: Run moved by 60 px and a click landed on the answer).
    questionNote = new QLabel;
    questionNote->setObjectName("questionNote");
    questionNote->setWordWrap(true);
    questionNote->setStyleSheet("color: #a04000;");
    questionNote->hide();
    form.addRow(questionNote);
    modelInputs = new QLabel(model::SyntheticTask::inputsNote());
    modelInputs->setObjectName("modelInputs");
    modelInputs->setWordWrap(true);
    modelInputs->setStyleSheet("color: #555; font-size: 11px;");
    modelInputs->hide();
    form.addRow(modelInputs);
}

// What the run answered, and the tokens whose maps can be shown.
void AttentionControls::addAnswerRows(QVBoxLayout* column)
{
    ColumnRows form{column};
    answer = new QLabel;
    answer->setObjectName("answer");
    answer->setStyleSheet("font-weight: bold; font-size: 15px;");
    answer->setWordWrap(true); // a long answer wraps in the column (issue 56 item 2: it widened the column)
    form.addRow("Answer", answer);
    // Each question and answer token has its own map: click one to show it, "all" for the mean.
    tokens = new QLabel;
    tokens->setObjectName("mapTokens");
    tokens->setWordWrap(true);
    tokens->setTextFormat(Qt::RichText);
    tokens->setToolTip("The map of one token: a question token's own attention, or for an answer token the attention of\n"
                       "the step that produced it. \"all\": the mean over the question tokens.");
    form.addRow("Map of", tokens);
}

// How the map is drawn: layer, head, map type, colours, opacity, contrast and smoothing (repaints, no re-run).
void AttentionControls::addMapRows(QVBoxLayout* column)
{
    ColumnRows form{column};
    layer = new QSlider(Qt::Horizontal);
    layer->setObjectName("attentionLayer");
    layer->setToolTip("The decoder layer whose text -> image attention is shown");
    layerNumber = new QLabel("0");
    layerNumber->setObjectName("attentionLayerNumber");
    layerNumber->setMinimumWidth(24);
    auto* layerRow = new QHBoxLayout;
    layerRow->addWidget(layer, 1);
    layerRow->addWidget(layerNumber);
    form.addRow("Layer", layerRow);
    head = new QComboBox;
    head->setObjectName("head");
    head->setToolTip("mean or max over the heads, or one head");
    form.addRow("Head", head);
    mapType = new QComboBox;
    mapType->setObjectName("mapType");
    for (int t = 0; t < kMapTypes; ++t)
        mapType->addItem(mapTypeLabel(static_cast<MapType>(t)));
    mapType->setToolTip("The model's own positional prior: the head's score with q and k replaced by their means over the\n"
                        "prompt (content averaged away), rotated to each image token as the decoder rotates them. r is its\n"
                        "correlation with the head's attention: how much of the map position alone explains.\n"
                        "Gradient relevancy (Chefer et al. 2021): which image tokens the answer's first token depends on,\n"
                        "through every layer's attention weighted by its gradient (one backward pass; layer, head and token\n"
                        "do not apply).");
    form.addRow("Map type", mapType);
    priorFit = new QLabel;
    priorFit->setObjectName("priorFit");
    priorFit->setWordWrap(true);
    priorFit->setTextFormat(Qt::PlainText);
    form.addRow(priorFit);
    colormap = new QComboBox;
    colormap->addItems({"jet", "viridis"});
    form.addRow("Colormap", colormap);
    opacity = new QSlider(Qt::Horizontal);
    opacity->setRange(0, 100);
    opacity->setValue(55);
    form.addRow("Opacity", opacity);
    gamma = new QDoubleSpinBox;
    gamma->setRange(0.1, 5);
    gamma->setValue(0.6);
    gamma->setSingleStep(0.1);
    form.addRow("Contrast (gamma)", gamma);
    smoothing = new QDoubleSpinBox;
    smoothing->setRange(0, 5);
    smoothing->setValue(1.0);
    smoothing->setSingleStep(0.25);
    form.addRow("Smoothing (cells)", smoothing);
}

QSize AttentionControls::sizeHint() const
{
    return {maximumWidth(), QScrollArea::sizeHint().height()};
}

bool AttentionControls::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == widget() && (event->type() == QEvent::LayoutRequest || event->type() == QEvent::Resize))
        fitContentHeight();
    return QScrollArea::eventFilter(watched, event);
}

// QScrollArea sizes its widget from the widget's minimum size, which a layout computes without height-for-width:
// each word-wrapped label (the error, the answer, the notes, the status) counts as one line. When a label wrapped to
// more lines than that, the column was short of height and the form took it from other rows: after a failed load the
// Question field or the Run button was squeezed to nothing (issue 56 item 3; issue 45 item 6 was another path to it).
// The column's minimum height is its layout's height at the width it has, so the scroll bar covers everything.
void AttentionControls::fitContentHeight()
{
    QWidget* content = widget();
    if (!content || !content->layout() || content->width() <= 0)
        return;
    const int height = content->layout()->heightForWidth(content->width());
    if (height > 0 && content->minimumHeight() != height)
        content->setMinimumHeight(height);
}

} // namespace ropescope::gui
