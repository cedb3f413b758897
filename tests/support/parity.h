#pragma once
// What the parity suites share: the fixtures' folder and a tensor comparison that says the error it found.
#include "tests/support/test_paths.h"
#include <QString>
#include <QtTest>

#include <torch/types.h>

namespace ropescope::test {

inline QString fixture(const QString& name)
{
    return QString(ROPESCOPE_TEST_DATA) + "/fixtures/" + name;
}

inline double maxAbs(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// numpy's allclose as one number: max(|a - b| - rtol |b|), which is <= atol exactly when allclose(a, b, rtol, atol).
inline double maxExcess(const torch::Tensor& a, const torch::Tensor& b, double rtol)
{
    const auto theirs = b.to(torch::kFloat64);
    return ((a.to(torch::kFloat64) - theirs).abs() - rtol * theirs.abs()).max().item<double>();
}

} // namespace ropescope::test

// Same shape and max |ours - theirs| <= tolerance; logs the error either way (the numbers the notes cite).
#define EXPECT_CLOSE(ours, theirs, tolerance, what)                                                                                        \
    do {                                                                                                                                   \
        const auto o_ = (ours);                                                                                                            \
        const auto t_ = (theirs);                                                                                                          \
        QVERIFY2(o_.sizes() == t_.sizes(), qPrintable(QString("%1: shape differs").arg(what)));                                            \
        const double e_ = ropescope::test::maxAbs(o_, t_);                                                                                 \
        qInfo("%s: max abs error %.3g", qPrintable(QString(what)), e_);                                                                    \
        QVERIFY2(e_ <= (tolerance), qPrintable(QString("%1: max abs error %2 > %3").arg(what).arg(e_).arg(tolerance)));                    \
    } while (0)

// The decoder's part of a run against a fixture's expected tensors (`want(name)`): attentions, every layer's
// output, the final norm, logits, and the generated ids and their logits. A failure returns from the caller's
// test function through QVERIFY, as inline checks would.
#define EXPECT_DECODER_MATCHES(result, want, outputs, attention)                                                                           \
    do {                                                                                                                                   \
        const auto& p_ = (result).prefill;                                                                                                 \
        EXPECT_CLOSE(torch::stack(p_.attentions, 0).unsqueeze(1), want("attentions"), attention, "attentions");                            \
        EXPECT_CLOSE(torch::stack(p_.layerOutputs, 0).unsqueeze(1), want("decoder_layer_outputs"), outputs, "decoder_layer_outputs");      \
        EXPECT_CLOSE(p_.finalNorm.unsqueeze(0), want("final_norm_output"), outputs, "final_norm_output");                                  \
        EXPECT_CLOSE(p_.logits.unsqueeze(0), want("logits"), outputs, "logits");                                                           \
        QVERIFY(torch::equal((result).generatedIds.unsqueeze(0), want("generated_ids")));                                                  \
        EXPECT_CLOSE((result).generatedLogits.unsqueeze(0), want("generated_logits"), outputs, "generated_logits");                        \
    } while (0)

// allclose(ours, theirs, rtol, atol) with the same shape; logs the max abs error and the allclose excess.
#define EXPECT_ALLCLOSE(ours, theirs, atol, rtol, what)                                                                                    \
    do {                                                                                                                                   \
        const auto o_ = (ours);                                                                                                            \
        const auto t_ = (theirs);                                                                                                          \
        QVERIFY2(o_.sizes() == t_.sizes(), qPrintable(QString("%1: shape differs").arg(what)));                                            \
        const double e_ = ropescope::test::maxAbs(o_, t_);                                                                                 \
        const double x_ = ropescope::test::maxExcess(o_, t_, (rtol));                                                                      \
        if ((rtol) > 0)                                                                                                                    \
            qInfo("%s: max abs error %.3g (less rtol %.0e x |theirs|: %.3g)", qPrintable(QString(what)), e_, double(rtol), x_);            \
        else                                                                                                                               \
            qInfo("%s: max abs error %.3g", qPrintable(QString(what)), e_);                                                                \
        QVERIFY2(x_ <= (atol),                                                                                                             \
                 qPrintable(QString("%1: max abs error %2, %3 beyond rtol %4 > atol %5").arg(what).arg(e_).arg(x_).arg(rtol).arg(atol)));  \
    } while (0)
