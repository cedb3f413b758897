#include "views/widgets/parameter_panel.h"

#include "core/geometry/errors.h"
#include "core/geometry/layout.h"
#include "core/geometry/scheme_parameters.h"
#include "views/widgets/parameter_row_control.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include <utility>
#include <vector>

#include <cmath>
#include <utility>

namespace ropescope::views {
using namespace geometry;

namespace {

QSpinBox* spin(int lo, int hi, int value, const char* name)
{
    auto* s = new QSpinBox;
    s->setRange(lo, hi);
    s->setValue(value);
    s->setObjectName(name);
    s->setMinimumWidth(64); // a range up to 2^20 would otherwise make every box seven digits wide
    return s;
}

QDoubleSpinBox* doubleSpin(double lo, double hi, double value, double step, int decimals, const char* name)
{
    auto* s = new QDoubleSpinBox;
    s->setRange(lo, hi);
    s->setDecimals(decimals);
    s->setSingleStep(step);
    s->setValue(value);
    s->setObjectName(name);
    return s;
}

// A number box over a scheme parameter's valid range (from 0.01 where its minimum is not valid), at its default.
QDoubleSpinBox* rowBox(const char* key, double step, const char* name)
{
    const SchemeParameter& row = *findSchemeParameter(key);
    return doubleSpin(row.openMin ? 0.01 : row.min, row.max, row.defaultValue, step, 3, name);
}

// The window's words for a scheme parameter: its row's label (core/geometry/scheme_parameters.cpp).
QString label(const char* key)
{
    return QString::fromUtf8(findSchemeParameter(key)->label);
}

// A form whose rows put the label above the field when the panel is too narrow for both side by side.
QFormLayout* form(QWidget* box)
{
    auto* f = new QFormLayout(box);
    f->setRowWrapPolicy(QFormLayout::WrapLongRows);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    return f;
}

const char* kAgeOptions[] = {"none", "strategy_1", "strategy_2", "strategy_3", "strategy_4", "custom"};

} // namespace

ParameterPanel::ParameterPanel(QWidget* parent) : QWidget(parent)
{
    buildUi();
    setState(session::ExplorerState{});
}

void ParameterPanel::buildUi()
{
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(6, 6, 6, 6);

    // Scheme and layout
    auto* schemeBox = new QGroupBox("Scheme and layout");
    auto* schemeForm = form(schemeBox);
    scheme_ = new QComboBox;
    scheme_->setObjectName("scheme");
    for (SchemeKind k : allSchemes())
        scheme_->addItem(schemeName(k));
    scheme_->setToolTip("Where text and visual tokens are placed (docs/DESIGN.md sec. 2)");
    for (int i = 0; i < scheme_->count(); ++i)
        scheme_->setItemData(i, schemeSummary(allSchemes()[static_cast<size_t>(i)]), Qt::ToolTipRole);
    builtinSchemes_ = scheme_->count();
    setRecentSchemeFiles({});
    schemeForm->addRow("Scheme", scheme_);
    layout_ = new QLineEdit;
    layout_->setObjectName("layout");
    layout_->setToolTip(kLayoutHelp);
    schemeForm->addRow("Layout", layout_);
    // Up to the layout limit: a spin box that capped silently would draw another layout than the text.
    constexpr int kMax = static_cast<int>(kMaxLayoutTokens);
    textBefore_ = spin(0, kMax, 4, "textBefore");
    rows_ = spin(1, kMax, 8, "rows");
    cols_ = spin(1, kMax, 8, "cols");
    images_ = spin(1, kMax, 1, "images");
    frames_ = spin(1, kMax, 1, "frames");
    textBetween_ = spin(0, kMax, 2, "textBetween");
    textAfter_ = spin(0, kMax, 6, "textAfter");
    auto* grid = new QHBoxLayout;
    grid->addWidget(rows_);
    grid->addWidget(new QLabel("x"));
    grid->addWidget(cols_);
    rows_->setToolTip("Rows of the merged token grid of each image");
    cols_->setToolTip("Columns of the merged token grid of each image");
    images_->setToolTip("Images (or videos) in the sequence");
    frames_->setToolTip("Frames per video (1: images)");
    textBefore_->setToolTip("Text tokens before the first image");
    textAfter_->setToolTip("Text tokens after the last image");
    textBetween_->setToolTip("Text tokens between consecutive images");
    schemeForm->addRow("Grid H x W", grid);
    auto* counts = new QHBoxLayout;
    counts->addWidget(new QLabel("images"));
    counts->addWidget(images_);
    counts->addWidget(new QLabel("frames"));
    counts->addWidget(frames_);
    schemeForm->addRow(counts);
    auto* texts = new QHBoxLayout;
    texts->addWidget(new QLabel("text before"));
    texts->addWidget(textBefore_);
    texts->addWidget(new QLabel("after"));
    texts->addWidget(textAfter_);
    schemeForm->addRow(texts);
    auto* between = new QHBoxLayout;
    between->addWidget(new QLabel("text between images"));
    between->addWidget(textBetween_);
    schemeForm->addRow(between);
    root->addWidget(schemeBox);
    custom_ = new CustomSchemeControls;
    root->addWidget(custom_);
    connect(custom_, &CustomSchemeControls::edited, this, &ParameterPanel::emitEdited);

    // Circle-RoPE
    auto* circleBox = new QGroupBox("Circle-RoPE");
    auto* circleForm = form(circleBox);
    alpha_ = new QSlider(Qt::Horizontal);
    alpha_->setObjectName("alpha");
    alpha_->setRange(0, kAlphaSteps);
    alpha_->setToolTip("Circle-RoPE angle mixing: alpha * SA + (1 - alpha) * GA (0: grid angles, 1: spatial angles)");
    alphaBox_ = rowBox("alpha", 0.01, "alphaValue");
    alphaBox_->setToolTip(alpha_->toolTip());
    alphaBox_->setKeyboardTracking(false);
    auto* alphaRow = new QHBoxLayout;
    alphaRow->addWidget(alpha_, 1);
    alphaRow->addWidget(alphaBox_);
    circleForm->addRow(label("alpha"), alphaRow);
    radiusMode_ = new QComboBox;
    radiusMode_->setObjectName("radiusMode");
    radiusMode_->addItems({"fixed R", "auto-k (paper)", "auto-k (official code)"});
    radiusMode_->setItemData(0, "The ring radius is R", Qt::ToolTipRole);
    radiusMode_->setItemData(1, "R = k * max ||(x, y)||2 of the centred grid (the paper's auto mode)", Qt::ToolTipRole);
    radiusMode_->setItemData(2, "R = k * max centred coordinate (the official code's auto mode)", Qt::ToolTipRole);
    circleForm->addRow("Radius", radiusMode_);
    radius_ = rowBox("radius", 0.5, "radius");
    radius_->setToolTip("Fixed mode: the ring radius R. Auto modes: the factor k (R = k * the grid's extent).");
    effectiveRadius_ = new QLabel;
    effectiveRadius_->setObjectName("effectiveRadius");
    auto* radiusRow = new QHBoxLayout;
    radiusRow->addWidget(radius_, 1);
    radiusRow->addWidget(effectiveRadius_);
    circleForm->addRow(label("radius"), radiusRow);
    auto* vectorRow = new QHBoxLayout;
    const char* vectorNames[3] = {"vectorW", "vectorH", "vectorT"};
    for (int i = 0; i < 3; ++i) {
        vector_[i] = doubleSpin(-100, 100, 1, 0.1, 3, vectorNames[i]);
        vectorRow->addWidget(vector_[i]);
    }
    circleForm->addRow("Text vector (w,h,t)", vectorRow);
    for (QDoubleSpinBox* v : vector_)
        v->setToolTip("The text axis in (w, h, t) order, as the official code orders coordinates; image rings lie in\n"
                      "the plane orthogonal to it. Any non-zero vector; only its direction counts.");
    stride_ = rowBox("stride", 0.5, "stride");
    stride_->setToolTip("Video: frame t's ring is centred t * stride along (1,1,1) after frame 0's");
    circleForm->addRow(label("stride"), stride_);
    root->addWidget(circleBox);

    // The 2025 family: frame spacing, V2PE visual span, MM-RoPE scales, VideoRoPE++'s NTK factor.
    auto* strideBox = new QGroupBox("2025 schemes");
    auto* strideForm = form(strideBox);
    temporalStride_ = doubleSpin(-1, 1000, -1, 0.25, 3, "temporalStride");
    temporalStride_->setSpecialValueText("default");
    temporalStride_->setToolTip(
        "VideoRoPE / HoPE: frame f sits at s + delta * f on the time axis, each frame's grid centred on\n"
        "the diagonal through it; OmniRoPE / ILRoPE: frame f at shift + delta * f (default: VideoRoPE 2; the others 1,\n"
        "HoPE draws 0.5..1.5 while training)");
    strideForm->addRow(label("temporal_stride"), temporalStride_);
    visualStride_ = rowBox("visual_stride", 1, "visualStride");
    visualStride_->setToolTip("V2PE: the positions one image spans; each of its N tokens advances by stride / N, and the\n"
                              "text after it resumes at the next whole position + 1");
    strideForm->addRow(label("visual_stride"), visualStride_);
    auto* scaleRow = new QHBoxLayout;
    const char* scaleNames[3] = {"positionScaleT", "positionScaleH", "positionScaleW"};
    for (int i = 0; i < 3; ++i) {
        positionScale_[i] = doubleSpin(0, 1000, i == 0 ? 4 : 8, 1, 3, scaleNames[i]);
        positionScale_[i]->setToolTip("MM-RoPE: visual offsets scaled per axis (t, h, w); Lumos-1 uses 4, 8, 8");
        scaleRow->addWidget(positionScale_[i]);
    }
    strideForm->addRow("MM-RoPE scale (t,h,w)", scaleRow);
    ntkFactor_ = rowBox("ntk_factor", 1, "ntkFactor");
    ntkFactor_->setToolTip("VideoRoPE++ (YaRN-V): the time axis' pairs use theta * ((L s - 1) / (L - 1))^(d / (d - 2)),\n"
                           "s this context extension factor, L = 32768 as its code");
    strideForm->addRow(label("ntk_factor"), ntkFactor_);
    ntkAlpha_ = rowBox("ntk_alpha", 10, "ntkAlpha");
    ntkAlpha_->setToolTip("XD-RoPE (HunyuanVL): every pair turns at theta * alpha^(d / (d - 2)), Hunyuan's NTK-alpha\n"
                          "(1000 in HunyuanOCR; 1 keeps theta)");
    strideForm->addRow(label("ntk_alpha"), ntkAlpha_);
    newlineColumn_ = new QCheckBox("Newline column, span begin and end");
    newlineColumn_->setObjectName("newlineColumn");
    newlineColumn_->setChecked(true);
    newlineColumn_->setToolTip("XD-RoPE: each image row ends with a newline token and each image or frame has a begin and an\n"
                               "end token, H(W+1)+2 tokens per H x W grid. Off: only the layout's tokens, as a model runs it");
    strideForm->addRow("XD-RoPE tokens", newlineColumn_);
    root->addWidget(strideBox);

    // AGE
    auto* ageBox = new QGroupBox("Alternating geometry (AGE)");
    auto* ageForm = form(ageBox);
    age_ = new QComboBox;
    age_->setObjectName("age");
    for (const char* a : kAgeOptions)
        age_->addItem(a);
    agePattern_ = new QLineEdit("CM");
    agePattern_->setObjectName("agePattern");
    agePattern_->setToolTip("C = the scheme (Circle-RoPE), M = mrope, repeated over the layers");
    age_->setToolTip("AGE (Circle-RoPE sec. 4.2): which decoder layers use the scheme and which use M-RoPE");
    age_->setItemData(0, "Every layer uses the scheme", Qt::ToolTipRole);
    age_->setItemData(1, "strategy_1: every layer uses the scheme", Qt::ToolTipRole);
    age_->setItemData(2, "strategy_2: the first half of the layers use the scheme, the rest M-RoPE", Qt::ToolTipRole);
    age_->setItemData(3, "strategy_3: the first half M-RoPE, the second half the scheme", Qt::ToolTipRole);
    age_->setItemData(4, "strategy_4: alternating, even layers the scheme, odd layers M-RoPE (the paper's best)", Qt::ToolTipRole);
    age_->setItemData(5, "custom: a pattern of C (the scheme) and M (M-RoPE), repeated over the layers", Qt::ToolTipRole);
    auto* ageRow = new QHBoxLayout;
    ageRow->addWidget(age_);
    ageRow->addWidget(agePattern_);
    ageForm->addRow("Schedule", ageRow);
    ageLayers_ = spin(1, 1024, kDefaultAgeLayers, "ageLayers");
    ageLayers_->setToolTip("Number of decoder layers the schedule spans (36 in the official code; a model's own count)");
    ageForm->addRow("Layers", ageLayers_);
    layer_ = new QSlider(Qt::Horizontal);
    layer_->setObjectName("layer");
    layer_->setRange(0, 35);
    layerLabel_ = new QLabel;
    layerLabel_->setWordWrap(true); // "layer 0 of 36: circle (pattern CMCM...)" must not widen the panel
    layerNumber_ = new QLabel("0");
    layerNumber_->setMinimumWidth(28);
    auto* layerRow = new QHBoxLayout;
    layerRow->addWidget(layer_, 1);
    layerRow->addWidget(layerNumber_);
    layer_->setToolTip("The decoder layer whose positions are shown (AGE schedules differ per layer)");
    ageForm->addRow("Layer", layerRow);
    ageForm->addRow(layerLabel_);
    root->addWidget(ageBox);

    // Rotary
    auto* rotaryBox = new QGroupBox("Rotary frequencies (prior map)");
    auto* rotaryForm = form(rotaryBox);
    theta_ = new QLineEdit("1000000");
    theta_->setObjectName("theta");
    theta_->setValidator(new QDoubleValidator(1.0, 1e12, 6, theta_));
    theta_->setToolTip("Rotary base: frequency pair j turns by theta^(-2j/head_dim) per position");
    rotaryForm->addRow("theta", theta_);
    headDim_ = spin(2, 4096, 128, "headDim");
    headDim_->setSingleStep(2);
    headDim_->setToolTip("Rotary head dimension: head_dim/2 frequency pairs are split among the position axes");
    rotaryForm->addRow("head_dim", headDim_);
    partialRotary_ = doubleSpin(0.01, 1, 1, 0.05, 3, "partialRotary");
    partialRotary_->setToolTip("partial_rotary_factor: the share of each head's dims that rotate (Qwen3.5 0.25, GLM-4.1V 0.5);\n"
                               "the frequencies, sections and the prior cover those dims, the frequency view names the rest");
    rotaryForm->addRow("rotated fraction", partialRotary_);
    proportional_ = new QCheckBox("proportional (Gemma 4's full layers)");
    proportional_->setObjectName("proportional");
    proportional_->setToolTip("The rotated pairs turn at theta^(-2j/head_dim) over the whole head, on dims j and j+head_dim/2; the head's\n"
                              "other pairs at frequency 0. Gemma 4's full layers: head_dim 512, rotated fraction 0.25, theta 1e6.\n"
                              "The frequency view then shows every pair of the head, the unturned ones grey.");
    rotaryForm->addRow(proportional_);
    pairing_ = new QComboBox;
    pairing_->setObjectName("pairing");
    pairing_->addItems({rotaryPairingName(RotaryPairing::Half), rotaryPairingName(RotaryPairing::Adjacent)});
    pairing_->setToolTip("Which dims each frequency turns: half (j, j+d/2), as Qwen and Llama; adjacent (2j, 2j+1), as GLM-4.1V/4.6V.\n"
                         "The positions and the prior do not change; the frequency view names the dims. Model runs use the model's.");
    rotaryForm->addRow("pairs", pairing_);
    allocation_ = new QComboBox;
    allocation_->setObjectName("allocation");
    allocation_->addItems(
        {"scheme default", "sectioned", "interleaved", "interleaved-mrope", "hw-alternating", "distributed", "per-head", "hw-interleaved"});
    allocation_->setToolTip("Which position axis drives each frequency pair");
    const QString sections = QString::fromStdString(sectionsText(defaultMropeSection(128)));
    allocation_->setItemData(0, "The scheme's own: sectioned [" + sections + "] for the 3-axis schemes, interleaved for VRoPE",
                             Qt::ToolTipRole);
    allocation_->setItemData(1, "Contiguous sections per axis (M-RoPE's mrope_section), highest frequencies first", Qt::ToolTipRole);
    allocation_->setItemData(2, "Pair j goes to axis j mod C", Qt::ToolTipRole);
    allocation_->setItemData(3,
                             "Qwen3-VL's MRoPE-I: h on pairs j % 3 == 1 below 3 h, w on j % 3 == 2 below 3 w, t the rest "
                             "(sections t,h,w; default 24,20,20)",
                             Qt::ToolTipRole);
    allocation_->setItemData(4,
                             "VideoRoPE's: h on odd pairs below 2 h, w on even pairs from 2 below 2 w, t on pair 0 and the "
                             "lowest frequencies (sections t,h,w; default " +
                                 sections + ")",
                             Qt::ToolTipRole);
    allocation_->setItemData(5, "MM-RoPE's: every 8 pairs T,T,H,W,H,W,H,W, so each axis spans all frequencies", Qt::ToolTipRole);
    allocation_->setItemData(6,
                             "MHRoPE's: whole heads per axis (sections = heads for t,h,w; default 2,3,3 of 8); each such head "
                             "turns all its pairs by its axis, the remaining heads have no rotary",
                             Qt::ToolTipRole);
    allocation_->setItemData(7,
                             "ERNIE-4.5-VL's: h on even, w on odd frequencies from the highest down, t on the lowest "
                             "(sections t,h,w; default 20,22,22)",
                             Qt::ToolTipRole);
    rotaryForm->addRow("Allocation", allocation_);
    kvHeads_ = spin(1, 1024, 8, "kvHeads");
    kvHeads_->setToolTip("The heads a per-head allocation (MHRoPE) spreads its axes over: the KV heads (a model run uses its own)");
    rotaryForm->addRow("KV heads", kvHeads_);
    sections_ = new QLineEdit;
    sections_->setObjectName("sections");
    sections_->setPlaceholderText("default " + sections);
    sections_->setToolTip("Frequency pairs per axis for sectioned allocation (t,h,w), summing to head_dim/2");
    rotaryForm->addRow("Sections", sections_);
    temporal_ = new QComboBox;
    temporal_->setObjectName("temporal");
    temporal_->addItems({"Qwen2-VL: t", "Qwen2.5-VL: seconds"});
    temporal_->setItemData(0, "A video frame's time index is its frame number t", Qt::ToolTipRole);
    temporal_->setItemData(1, "A video frame's time index is floor(t * seconds per grid * tokens per second)", Qt::ToolTipRole);
    rotaryForm->addRow("Video time", temporal_);
    videoForm_ = new QComboBox;
    videoForm_->setObjectName("videoForm");
    videoForm_->addItems({"scheme's own", "one T x H x W grid", "one-frame grids"});
    videoForm_->setToolTip(
        "How a video:TxHxW is placed (--video): the scheme's own form (one-frame grids for mrope-i and mhrope,\n"
        "one grid for the others), one grid, or T one-frame grids in a row (Qwen3-VL's form, the reference's for every scheme)");
    rotaryForm->addRow("Video form", videoForm_);
    secondPerGrid_ = doubleSpin(0, 100, 1, 0.1, 3, "secondPerGrid");
    tokensPerSecond_ = doubleSpin(0, 100, 2, 0.5, 3, "tokensPerSecond");
    auto* tempRow = new QHBoxLayout;
    tempRow->addWidget(new QLabel("spg"));
    tempRow->addWidget(secondPerGrid_);
    tempRow->addWidget(new QLabel("tps"));
    tempRow->addWidget(tokensPerSecond_);
    rotaryForm->addRow(tempRow);
    root->addWidget(rotaryBox);

    // View
    auto* viewBox = new QGroupBox("View");
    auto* viewForm = form(viewBox);
    colour_ = new QComboBox;
    colour_->setObjectName("colour");
    colour_->addItems({"row / column", "image patches", "distance to selected"});
    colour_->setToolTip("How visual tokens are coloured in the 3-D view (the legend below says what each colour means)");
    viewForm->addRow("Colour", colour_);
    coneLines_ = new QCheckBox("cone lines");
    coneSurface_ = new QCheckBox("cone surface");
    labels_ = new QCheckBox("labels");
    dark_ = new QCheckBox("dark");
    auto* checks = new QGridLayout;
    checks->addWidget(coneLines_, 0, 0);
    checks->addWidget(coneSurface_, 0, 1);
    checks->addWidget(labels_, 1, 0);
    checks->addWidget(dark_, 1, 1);
    viewForm->addRow(checks);
    coneLines_->setToolTip("Lines from the selected text token to every visual token (a sample of them past 4,096)");
    coneSurface_->setToolTip("The cone from the selected text token over each image ring");
    labels_->setToolTip("Index labels on text tokens (overlapping ones are skipped)");
    dark_->setToolTip("Dark background");
    legend_ = new QLabel;
    legend_->setObjectName("legend");
    legend_->setWordWrap(true);
    viewForm->addRow(legend_);
    projection_ = new QComboBox;
    projection_->setObjectName("projection");
    projection_->addItems({"hadamard", "0,1,2", "0,1,3", "0,2,3", "1,2,3"});
    projection_->setToolTip("How 4-component (VRoPE) positions are shown in 3-D: a Hadamard rotation to 3 axes, or 3\n"
                            "of the 4 components");
    temporal_->setToolTip("How a video frame's time index is computed (mrope, compact and AGE's M-RoPE layers)");
    secondPerGrid_->setToolTip("Qwen2.5-VL: seconds per temporal grid");
    tokensPerSecond_->setToolTip("Qwen2.5-VL: tokens_per_second");
    viewForm->addRow("4-D view", projection_);
    auto* imageRow = new QHBoxLayout;
    auto* loadImage = new QPushButton("Load image...");
    loadImage->setObjectName("loadImage");
    loadImage->setToolTip("An image whose patches colour the visual tokens (colour mode: image patches)");
    imageLabel_ = new QLabel("(none)");
    imageLabel_->setWordWrap(true);
    imageRow->addWidget(loadImage);
    imageRow->addWidget(imageLabel_, 1);
    viewForm->addRow("Patch colours", imageRow);
    root->addWidget(viewBox);

    error_ = new QLabel;
    error_->setObjectName("error");
    error_->setWordWrap(true);
    error_->setStyleSheet("color: #b3261e;");
    root->addWidget(error_);
    root->addStretch(1);

    connect(loadImage, &QPushButton::clicked, this, &ParameterPanel::loadImageRequested);
    layoutPause_ = new QTimer(this);
    layoutPause_->setSingleShot(true);
    layoutPause_->setInterval(700);
    connect(layoutPause_, &QTimer::timeout, this, &ParameterPanel::commitLayout);
    connect(layout_, &QLineEdit::textEdited, this, &ParameterPanel::layoutTyped);
    connect(layout_, &QLineEdit::editingFinished, this, &ParameterPanel::commitLayout);
    for (QSpinBox* s : {textBefore_, rows_, cols_, images_, frames_, textBetween_, textAfter_}) {
        s->setKeyboardTracking(false); // typing 1000 applies 1000, not 1, 10 and 100 first
        connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ParameterPanel::structuredLayoutEdited);
    }
    connect(scheme_, qOverload<int>(&QComboBox::currentIndexChanged), this, &ParameterPanel::schemeChosen);
    for (QComboBox* c : {radiusMode_, age_, allocation_, temporal_, videoForm_, colour_, projection_, pairing_})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &ParameterPanel::emitEdited);
    for (QSlider* s : {alpha_, layer_})
        connect(s, &QSlider::valueChanged, this, &ParameterPanel::emitEdited);
    connect(alphaBox_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this](double v) {
        if (!updating_)
            alpha_->setValue(static_cast<int>(std::lround(v * kAlphaSteps))); // emits through the slider
    });
    for (QDoubleSpinBox* s :
         {radius_, vector_[0], vector_[1], vector_[2], stride_, secondPerGrid_, tokensPerSecond_, temporalStride_, visualStride_,
          positionScale_[0], positionScale_[1], positionScale_[2], ntkFactor_, ntkAlpha_, partialRotary_})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &ParameterPanel::emitEdited);
    for (QSpinBox* s : {ageLayers_, headDim_, kvHeads_})
        connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &ParameterPanel::emitEdited);
    for (QLineEdit* e : {agePattern_, theta_, sections_}) {
        connect(e, &QLineEdit::textEdited, this, &ParameterPanel::emitEdited);
        // Applied as typed: not "modified", so Ctrl+Z in the field is the window's Undo (app/gui/wheel_guard.cpp).
        connect(e, &QLineEdit::textEdited, e, [e] { e->setModified(false); });
    }
    for (QCheckBox* c : {coneLines_, coneSurface_, labels_, dark_, newlineColumn_, proportional_})
        connect(c, &QCheckBox::toggled, this, &ParameterPanel::emitEdited);
    listControls();
    buildTableControls(strideForm);
}

void ParameterPanel::listControls()
{
    controls_ = {
        {"layout", {layout_}},
        {"alpha", {alpha_, alphaBox_}},
        {"radius_mode", {radiusMode_}},
        {"radius", {radius_}},
        {"text_vector", {vector_[0], vector_[1], vector_[2]}},
        {"stride", {stride_}},
        {"temporal", {temporal_}},
        {"second_per_grid", {secondPerGrid_}},
        {"tokens_per_second", {tokensPerSecond_}},
        {"temporal_stride", {temporalStride_}},
        {"visual_stride", {visualStride_}},
        {"position_scale", {positionScale_[0], positionScale_[1], positionScale_[2]}},
        {"ntk_factor", {ntkFactor_}},
        {"ntk_alpha", {ntkAlpha_}},
        {"newline_column", {newlineColumn_}},
    };
}

void ParameterPanel::buildTableControls(QFormLayout* form)
{
    // A parameter of the table with no control above gets one here, from its row (words, type, range, default,
    // help): a new parameter needs no code in this panel to be set, applied, restored, enabled and marked.
    for (const SchemeParameter& row : schemeParameters()) {
        if (!controlsOf(QString::fromUtf8(row.key)).empty())
            continue;
        QWidget* control = makeRowControl(row);
        form->addRow(QString::fromUtf8(row.label), control);
        onRowControlEdited(row, control, this, [this] { emitEdited(); });
        tableControls_.emplace_back(row.key, control);
        controls_.push_back({QString::fromUtf8(row.key), {control}});
    }
}

void ParameterPanel::setRecentSchemeFiles(const QStringList& paths)
{
    const bool wasUpdating = std::exchange(updating_, true);
    while (scheme_->count() > builtinSchemes_)
        scheme_->removeItem(scheme_->count() - 1);
    scheme_->insertSeparator(scheme_->count());
    for (const QString& path : paths) {
        scheme_->addItem(QFileInfo(path).fileName(), path);
        scheme_->setItemData(scheme_->count() - 1, path, Qt::ToolTipRole);
    }
    scheme_->addItem("Python scheme...", "python");
    scheme_->setItemData(scheme_->count() - 1, "A .py file defining positions(layout, **params) -> [C, L] (docs/USER_SCHEMES.md)",
                         Qt::ToolTipRole);
    scheme_->addItem("Position table...", "positions");
    scheme_->setItemData(scheme_->count() - 1,
                         "Positions from a file: the CSV or JSON `ropescope positions` writes, .npy, or a .safetensors "
                         "with position_ids as transformers returns them",
                         Qt::ToolTipRole);
    updating_ = wasUpdating;
    if (shownCustom_) {
        session::ExplorerState state;
        state.params.custom = shownCustom_;
        selectSchemeOf(state);
    }
}

// The list shows the state's scheme: a built-in by name, a file by its entry (added when it is not listed).
void ParameterPanel::selectSchemeOf(const session::ExplorerState& s)
{
    const bool wasUpdating = std::exchange(updating_, true);
    if (!s.params.custom) {
        scheme_->setCurrentText(schemeName(s.params.kind));
    } else {
        const QString path = QString::fromStdString(s.params.custom->file);
        int index = scheme_->findData(path);
        if (index < 0) {
            scheme_->insertItem(builtinSchemes_ + 1, QString::fromStdString(customLabel(*s.params.custom)), path);
            index = builtinSchemes_ + 1;
        }
        scheme_->setCurrentIndex(index);
    }
    updating_ = wasUpdating;
}

void ParameterPanel::schemeChosen(int index)
{
    if (updating_)
        return;
    if (index < builtinSchemes_) {
        followRotaryDefaults();
        emitEdited();
        return;
    }
    // A file entry: the window loads it and shows the result; until then the list shows the state's scheme.
    const QString file = scheme_->itemData(index).toString();
    session::ExplorerState shown;
    shown.params.custom = shownCustom_;
    const bool current = shownCustom_ && file == QString::fromStdString(shownCustom_->file);
    if (!current) {
        if (!shownCustom_)
            shown.params.kind = lastBuiltin_;
        selectSchemeOf(shown);
        Q_EMIT schemeFileRequested(file == "python" || file == "positions" ? QString() : file,
                                   file == "positions" || (!file.endsWith(".py") && file != "python") ? "positions" : "python");
    }
}

void ParameterPanel::followRotaryDefaults()
{
    // A scheme with rotary settings of its own (GLM-V) brings them, unless the user set theta, the rotated
    // fraction or the pairing away from the previous scheme's: what was set by hand stays.
    const auto kind = schemeFromName(scheme_->currentText().toStdString());
    if (!kind || shownCustom_)
        return;
    const RotaryConfig before = schemeRotaryDefaults(lastBuiltin_), after = schemeRotaryDefaults(*kind);
    const QSignalBlocker blockTheta(theta_), blockPartial(partialRotary_), blockPairing(pairing_);
    if (theta_->text().toDouble() == before.theta)
        theta_->setText(QString::number(after.theta, 'g', 10));
    if (partialRotary_->value() == before.partial)
        partialRotary_->setValue(after.partial);
    if (pairing_->currentText().toStdString() == rotaryPairingName(before.pairing))
        pairing_->setCurrentText(rotaryPairingName(after.pairing));
    lastBuiltin_ = *kind;
}

void ParameterPanel::emitEdited()
{
    if (updating_)
        return;
    updateEnabled();
    Q_EMIT stateEdited();
}

void ParameterPanel::updateEnabled()
{
    // A scheme file places every token itself: the built-ins' own parameters do not apply to it.
    const auto kind = scheme_->currentIndex() < builtinSchemes_ ? schemeFromName(scheme_->currentText().toStdString()) : std::nullopt;
    // A control is enabled when the scheme reads its parameter, as the parameter table says for the state the
    // controls show (Qwen2-VL's time reads no seconds per grid); AGE's M layers are M-RoPE, which reads its rows too.
    session::ExplorerState shown;
    applyTo(shown);
    const bool ageOn = age_->currentText() != "none";
    geometry::SchemeParams asMrope = shown.params;
    asMrope.kind = SchemeKind::Mrope;
    for (const SchemeParameter& row : schemeParameters()) {
        const bool read = kind && (reads(row, shown.params) || (ageOn && reads(row, asMrope)));
        for (QWidget* w : controlsOf(QString::fromUtf8(row.key)))
            w->setEnabled(read);
    }
    videoForm_->setEnabled(kind.has_value());
    // The allocation in use: the one chosen, or the scheme's own design.
    const auto chosen = allocation_->currentIndex() > 0 ? allocationKindFromName(allocation_->currentText().toStdString())
        : kind                                          ? designAllocation(*kind)
                                                        : std::nullopt;
    const bool perHead = chosen == FrequencyAllocation::Kind::PerHead;
    kvHeads_->setEnabled(perHead);
    agePattern_->setEnabled(age_->currentText() == "custom");
    ageLayers_->setEnabled(ageOn);
    layer_->setEnabled(ageOn);
    layer_->setMaximum(ageLayers_->value() - 1);
    {
        const QSignalBlocker block(alphaBox_);
        alphaBox_->setValue(alpha_->value() / double(kAlphaSteps));
    }
    layerNumber_->setText(QString::number(layer_->value()));
    // The default the allocation in use takes at the rotated dims shown (GLM-V's half head: 8,12,12).
    RotaryConfig rotary;
    rotary.headDim = headDim_->value();
    rotary.partial = partialRotary_->value();
    const int rotated = rotary.rotaryDim();
    const std::vector<int> defaults = perHead                   ? defaultHeadSections(kvHeads_->value())
        : chosen == FrequencyAllocation::Kind::InterleavedMrope ? defaultInterleavedMropeSection(rotated)
        : chosen == FrequencyAllocation::Kind::HwInterleaved    ? defaultHwInterleavedSection(rotated)
                                                                : defaultMropeSection(rotated);
    sections_->setPlaceholderText("default " + QString::fromStdString(sectionsText(defaults)) + (perHead ? " heads (t,h,w)" : " (t,h,w)"));
    // Sections mean nothing to the allocations that fix every pair (interleaved, distributed) or to 1-D schemes.
    const int components = kind ? componentCount(*kind) : shownCustom_ && shownCustom_->scheme ? shownCustom_->scheme->components() : 0;
    sections_->setEnabled(components > 1 && chosen != FrequencyAllocation::Kind::Interleaved &&
                          chosen != FrequencyAllocation::Kind::Distributed);
    static const char* legends[] = {
        "Text tokens: dark blue on the text axis; the selected one red. Visual tokens: hue by column (red at the left, "
        "through yellow and green, to magenta at the right), lightness by row (dark top, light bottom).",
        "Text tokens: dark blue; the selected one red. Visual tokens: the colour of the image patch each stands for.",
        "Text tokens: dark blue; the selected one red. Visual tokens: distance to the selected text token in the "
        "view (viridis: dark purple nearest, yellow farthest)."};
    legend_->setText(legends[std::clamp(colour_->currentIndex(), 0, 2)]);
}

std::vector<QWidget*> ParameterPanel::controlsOf(const QString& key) const
{
    for (const auto& [name, widgets] : controls_)
        if (key == name)
            return widgets;
    return {};
}

void ParameterPanel::setError(const QString& message, const QString& parameter)
{
    error_->setText(message);
    for (const QPointer<QWidget>& w : marked_)
        if (w)
            w->setStyleSheet({});
    marked_.clear();
    if (message.isEmpty())
        return;
    const QString key = parameter == "positions" ? QString("layout") : parameter;
    for (QWidget* w : controlsOf(key)) {
        if (w == layout_ && layoutPause_->isActive())
            continue; // still being typed: marked only once applied
        w->setStyleSheet("background: #fde7e4;");
        marked_.emplace_back(w);
    }
}

void ParameterPanel::setLayerScheme(const QString& text)
{
    layerLabel_->setText(text);
}

void ParameterPanel::setEffectiveRadius(const QString& text)
{
    effectiveRadius_->setText(text);
}

} // namespace ropescope::views
