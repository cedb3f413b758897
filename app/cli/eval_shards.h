#pragma once
// `eval` in shards: the state a shard writes (--state, eval_state.json: every sample's outcome), the merge of
// shard states into the one-process report bit for bit, and eval as a --slurm run.
#include "app/cli/sharded_command.h"
#include "core/model/analysis/evaluator.h"

#include <QJsonObject>
#include <QString>

namespace ropescope::cli {

// What the samples were drawn from, as the report and the state record it: {"model", "questions"} or
// {"model", "seed", "rendering"}, with "total" (samples in the whole stream or set).
struct EvalSource {
    QJsonObject json;
    int64_t total = 0;
};

QJsonObject evalStateJson(const model::EvalResult& result, const EvalSource& source);
// Reads and checks a state file (bounded; every field against what eval writes); throws UsageError naming it.
model::EvalResult readEvalState(const QString& path, EvalSource* source);
// The report: the text eval prints, or its JSON.
QByteArray evalReportText(const model::EvalResult& result, const EvalSource& source);
QJsonObject evalReportJson(const model::EvalResult& result, const EvalSource& source);
// Whether `path` holds exactly shard `shard` of `shards` of `source` (any source when null).
bool evalStateHoldsShard(const QString& path, int shard, int shards, const EvalSource* source = nullptr);

// `eval --merge STATE... --output F [--json]`, or `eval --merge --output DIR` on a --slurm run (writes DIR's
// eval.txt, eval.json and eval_state.json, refusing while a shard is not complete).
int mergeEval(const QCommandLineParser& parser);
ShardedCommand shardedEval();

} // namespace ropescope::cli
