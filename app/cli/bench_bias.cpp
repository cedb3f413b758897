#include "app/cli/bench_bias.h"

#include "app/cli/attend_run.h"
#include "app/cli/bias_run.h"
#include "app/cli/cli_error.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/bias_samples.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>

#include <sys/resource.h>

namespace ropescope::cli {

int benchBias(const QCommandLineParser& parser)
{
    return runModelCommand([&] {
        const QString dir = parser.isSet("model") ? parser.value("model") : io::bundledModel();
        const std::unique_ptr<ModelOnDevice> m = ModelOnDevice::load(dir, c10::kCPU, c10::kFloat);
        constexpr int kSamples = 200;
        model::BiasRequest request;
        request.schemes.push_back(std::nullopt);
        request.labels << "own";
        for (const auto kind : {geometry::SchemeKind::Vrope, geometry::SchemeKind::Circle}) {
            model::ModelScheme s;
            s.params.kind = kind;
            request.schemes.push_back(s);
            request.labels << geometry::schemeName(kind);
        }
        model::useSyntheticSamples(request, kSamples);
        QElapsedTimer timer;
        timer.start();
        const model::BiasAccumulation a = model::measureBias(*m, request);
        const double measureS = static_cast<double>(timer.nsecsElapsed()) / 1e9;
        timer.restart();
        const reports::BiasReport report = reports::biasReport(a);
        const double reportS = static_cast<double>(timer.nsecsElapsed()) / 1e9;
        rusage usage{};
        ::getrusage(RUSAGE_SELF, &usage);
        const double peakMb = static_cast<double>(usage.ru_maxrss) / 1024.0;
        const QJsonObject row{
            {"model", dir},          {"samples", kSamples}, {"schemes", 3},          {"layers", static_cast<int>(a.layers.size())},
            {"measure_s", measureS}, {"report_s", reportS}, {"peak_rss_mb", peakMb}, {"goal_s", 20}};
        const QByteArray text =
            QString("bias: %1 samples x 3 schemes x %2 layers on %3: measure %4 s, report %5 s (goal < 20 s), peak RSS %6 MB\n")
                .arg(kSamples)
                .arg(a.layers.size())
                .arg(dir)
                .arg(measureS, 0, 'f', 2)
                .arg(reportS, 0, 'f', 2)
                .arg(peakMb, 0, 'f', 0)
                .toUtf8();
        writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(row).toJson() : text);
        return 0;
    });
}

} // namespace ropescope::cli
