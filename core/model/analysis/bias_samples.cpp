#include "core/model/analysis/bias_samples.h"

#include "core/model/engine/image_processor.h"
#include "core/model/engine/model_config.h"
#include "core/model/engine/preprocess_config.h"
#include "core/model/training/question_set.h"

#include <QDir>
#include <QFileInfo>
#include <QImageReader>

#include <map>

namespace ropescope::model {
namespace {

QStringList imagePatterns()
{
    QStringList patterns;
    for (const QByteArray& format : QImageReader::supportedImageFormats())
        patterns << "*." + QString::fromLatin1(format);
    return patterns;
}

QStringList imagesIn(const QDir& dir)
{
    QStringList files;
    for (const QString& name : dir.entryList(imagePatterns(), QDir::Files, QDir::Name))
        files << dir.filePath(name);
    return files;
}

QDir existingFolder(const QString& folder, const char* flag)
{
    const QDir dir(folder);
    if (!QFileInfo(folder).isDir())
        throw BadInputFile(std::string(flag) + " " + folder.toStdString() + ": not a folder");
    return dir;
}

// Samples read from files: each sample's files, one question each (or one for all).
void readFrom(BiasSampleSource& s, std::vector<QString> questions)
{
    s.total = static_cast<int64_t>(s.files.size());
    s.sampleAt = [files = s.files, questions = std::move(questions), video = s.video](int64_t k) {
        BiasSample sample;
        sample.video = video;
        sample.question = questions[static_cast<size_t>(k)];
        for (const QString& file : files[static_cast<size_t>(k)])
            sample.frames.push_back(loadImage(file));
        return sample;
    };
}

} // namespace

BiasSampleSource syntheticSamples(int64_t samples, uint64_t seed, Rendering rendering, int frames)
{
    if (frames < 0 || frames > kMaxVideoFrames)
        throw BadInputFile("--frames: 1.." + std::to_string(kMaxVideoFrames) + ", got " + std::to_string(frames));
    BiasSampleSource s;
    s.total = samples;
    s.video = frames > 0;
    s.description = QString("synthetic stream seed %1, rendering %2, %3 samples").arg(seed).arg(renderingName(rendering)).arg(samples);
    if (frames > 0)
        s.description += QString(", still videos of %1 frames").arg(frames);
    s.sampleAt = [seed, rendering, frames](int64_t k) {
        SyntheticSample sample = SyntheticTask::sample(seed, static_cast<uint64_t>(k), rendering);
        if (frames > 0)
            return BiasSample{std::vector<QImage>(static_cast<size_t>(frames), sample.image), true, sample.question};
        return BiasSample{{sample.image}, false, sample.question};
    };
    return s;
}

BiasSampleSource questionSetSamples(const QString& path)
{
    BiasSampleSource s;
    std::vector<QString> questions;
    for (const LabelledQuestion& q : readQuestionSet(path)) {
        s.files.push_back({q.image});
        questions.push_back(q.question);
    }
    s.description = "questions " + QFileInfo(path).fileName() + QString(", %1 samples").arg(s.files.size());
    readFrom(s, std::move(questions));
    return s;
}

BiasSampleSource imageFolderSamples(const QString& folder, const QString& question)
{
    const QDir dir = existingFolder(folder, "--images");
    BiasSampleSource s;
    for (const QString& file : imagesIn(dir))
        s.files.push_back({file});
    if (s.files.empty())
        throw BadInputFile("--images " + folder.toStdString() + ": no images in the folder");
    s.description = "images " + dir.dirName() + ", question '" + question + QString("', %1 samples").arg(s.files.size());
    readFrom(s, std::vector<QString>(s.files.size(), question));
    return s;
}

BiasSampleSource videoFolderSamples(const QString& folder, const QString& question)
{
    const QDir dir = existingFolder(folder, "--videos");
    BiasSampleSource s;
    s.video = true;
    for (const QString& name : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        const QStringList frames = imagesIn(QDir(dir.filePath(name)));
        if (frames.isEmpty())
            continue;
        if (frames.size() > kMaxVideoFrames)
            throw BadInputFile("--videos " + dir.filePath(name).toStdString() + ": " + std::to_string(frames.size()) +
                               " frames; a video takes at most " + std::to_string(kMaxVideoFrames));
        s.files.push_back(frames);
    }
    if (s.files.empty())
        throw BadInputFile("--videos " + folder.toStdString() + ": no videos in the folder (each video is a sub-folder of its frames)");
    s.description = "videos " + dir.dirName() + ", question '" + question + QString("', %1 samples").arg(s.files.size());
    readFrom(s, std::vector<QString>(s.files.size(), question));
    return s;
}

CommonShape commonShape(const BiasSampleSource& source, const ModelConfig& cfg, const PreprocessOptions& options)
{
    const int64_t factor = static_cast<int64_t>(cfg.vision.patchSize) * cfg.vision.mergeSize;
    auto gridOf = [&](QSize size) {
        const auto [h, w] = smartResize(size.height(), size.width(), factor, options.minPixels, options.maxPixels);
        return std::pair<int, int>{static_cast<int>(h / factor), static_cast<int>(w / factor)};
    };
    if (source.files.empty()) { // the synthetic stream draws one picture size (and one frame count)
        const BiasSample first = source.sampleAt(0);
        const auto [rows, cols] = gridOf(first.frames.front().size());
        const int patches = (static_cast<int>(first.frames.size()) + cfg.vision.temporalPatch - 1) / cfg.vision.temporalPatch;
        return {rows, cols, source.video ? patches : 0};
    }
    std::map<std::pair<int, int>, int> grids;
    std::map<int, int> frameCounts;
    std::pair<int, int> grid{0, 0};
    int frames = 0;
    for (const QStringList& files : source.files) {
        const QSize size = QImageReader(files.front()).size();
        if (!size.isValid())
            throw BadInputFile(files.front().toStdString() + ": not a readable image");
        const auto g = gridOf(size);
        if (++grids[g] > grids[grid] || grid.first == 0)
            grid = g;
        const int patches = (static_cast<int>(files.size()) + cfg.vision.temporalPatch - 1) / cfg.vision.temporalPatch;
        if (++frameCounts[patches] > frameCounts[frames] || frames == 0)
            frames = patches;
    }
    return {grid.first, grid.second, source.video ? frames : 0};
}

void useSamples(BiasRequest& request, const BiasSampleSource& source, const CommonShape& shape)
{
    request.rows = shape.rows;
    request.cols = shape.cols;
    request.frames = shape.frames;
    request.indices.clear();
    for (int64_t k = 0; k < source.total; ++k)
        request.indices.push_back(k);
    request.sampleAt = source.sampleAt;
}

void useSyntheticSamples(BiasRequest& request, int64_t samples, uint64_t seed)
{
    useSamples(request, syntheticSamples(samples, seed), {SyntheticTask::kGrid, SyntheticTask::kGrid, 0});
}

} // namespace ropescope::model
