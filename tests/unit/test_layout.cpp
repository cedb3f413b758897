#include "core/geometry/errors.h"
#include "core/geometry/layout.h"
#include "core/geometry/position_table.h"

#include <QtTest>

using namespace ropescope::geometry;

class TestLayout : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesSegments()
    {
        const Layout l = parseLayout("text:4, image:3x5 ,video:2x3x4,text:1");
        QCOMPARE(l.segments.size(), size_t(4));
        QCOMPARE(l.segments[0].kind, SegmentKind::Text);
        QCOMPARE(l.segments[0].length, 4);
        QCOMPARE(l.segments[1].kind, SegmentKind::Image);
        QCOMPARE(l.segments[1].rows, 3);
        QCOMPARE(l.segments[1].cols, 5);
        QCOMPARE(l.segments[2].kind, SegmentKind::Video);
        QCOMPARE(l.segments[2].frames, 2);
        QCOMPARE(l.tokenCount(), 4LL + 15 + 24 + 1);
        QCOMPARE(QString::fromStdString(l.toString()), QString("text:4,image:3x5,video:2x3x4,text:1"));
    }

    void metadataFollowsRowMajorFrames()
    {
        const PositionTable t = tokenMetadata(parseLayout("text:1,video:2x2x3,text:1"));
        QCOMPARE(t.size(), 14);
        QCOMPARE(t.blocks.size(), size_t(2));
        QCOMPARE(t.blocks[1].begin, 7);
        QCOMPARE(t.blocks[1].frame, 1);
        // token 1 + 6 + 1*3 + 2 = frame 1, row 1, col 2
        QCOMPARE(t.frame[12], 1);
        QCOMPARE(t.row[12], 1);
        QCOMPARE(t.col[12], 2);
        QCOMPARE(t.modality[12], Modality::Video);
        QCOMPARE(t.textTokens, (std::vector<int>{0, 13}));
        QCOMPARE(t.row[0], -1);
    }

    void rejectsBadLayouts_data()
    {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("empty") << ""
                               << "empty";
        QTest::newRow("unknown kind") << "text:4,imag:3x3"
                                      << "unknown kind 'imag'";
        QTest::newRow("zero") << "text:0"
                              << "at least 1";
        QTest::newRow("negative") << "image:-3x3"
                                  << "at least 1";
        QTest::newRow("not a number") << "text:four"
                                      << "not a whole number";
        QTest::newRow("float") << "text:2.5"
                               << "not a whole number";
        QTest::newRow("missing size") << "image:3x"
                                      << "missing grid width";
        QTest::newRow("image needs two") << "image:3"
                                         << "image takes HxW";
        QTest::newRow("video needs three") << "video:3x3"
                                           << "video takes TxHxW";
        QTest::newRow("no colon") << "text4"
                                  << "expected kind:size";
        QTest::newRow("stray comma") << "text:4,,image:2x2"
                                     << "segment 2";
        QTest::newRow("overflow") << "text:99999999999999999999999"
                                  << "too large";
        QTest::newRow("segment over limit") << "image:2000x2000"
                                            << "exceed the limit";
        QTest::newRow("total over limit") << "image:1000x1000,image:1000x1000"
                                          << "exceed the limit";
    }
    void rejectsBadLayouts()
    {
        QFETCH(QString, spec);
        QFETCH(QString, mentions);
        try {
            parseLayout(spec.toStdString());
            QFAIL("no error");
        } catch (const InvalidInput& e) {
            const QString message = e.what();
            QVERIFY2(message.startsWith("layout"), qPrintable(message));
            QVERIFY2(message.contains(mentions), qPrintable(message));
            QVERIFY(!message.contains('\n'));
        }
    }
};

QTEST_APPLESS_MAIN(TestLayout)
#include "test_layout.moc"
