// EditOrigin (app/gui/edit_origin.h): which states the window may save and record. The window's own suites
// (test_gui_session) drive the same paths through the real window; this one walks each transition.
#include "app/gui/edit_origin.h"

#include <QtTest>

using ropescope::gui::EditOrigin;
using Edit = EditOrigin::Edit;

class TestEditOrigin : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void userEditsAreRecorded()
    {
        EditOrigin o;
        QVERIFY(o.mayAutosave());
        QCOMPARE(o.edited(), Edit::Record);
        o.requested();
        QVERIFY(!o.restoredArrived());
        QVERIFY(o.adoptedIsTheUsers(false));
    }

    void aRestoreAppliedAtOnceIsNotSaved()
    {
        EditOrigin o;
        o.beginRestore();
        QVERIFY(!o.mayAutosave());
        o.requested(); // the restored state's own request
        QVERIFY(!o.restoredArrived());
        QCOMPARE(o.edited(), Edit::Ignore); // its settings arriving
        QVERIFY(!o.adoptedIsTheUsers(false));
        o.restoreCallReturned(false);
        QVERIFY(o.mayAutosave());
        QCOMPARE(o.edited(), Edit::Record); // the user's first edit after it
    }

    void editsWhileARestoreComputesAreSavedOnceItIsIn()
    {
        EditOrigin o;
        o.beginRestore();
        o.restoreCallReturned(true); // a large layout on the worker
        QVERIFY(!o.mayAutosave());
        QCOMPARE(o.edited(), Edit::Defer); // e.g. an Attention-tab setting
        QVERIFY(o.restoredArrived());
        QVERIFY(o.mayAutosave());
        QVERIFY(o.adoptedIsTheUsers(true)); // the deferred edit: saved now
        QVERIFY(!o.restoredArrived());
    }

    void theRestoredStateAloneIsNotSaved()
    {
        EditOrigin o;
        o.beginRestore();
        o.restoreCallReturned(true);
        QVERIFY(o.restoredArrived());
        QVERIFY(!o.adoptedIsTheUsers(true));
    }

    void aRequestOfTheUsersOvertakesTheRestore()
    {
        EditOrigin o;
        o.beginRestore();
        o.restoreCallReturned(true);
        o.requested(); // the user's own, while the restored layout still computes
        QVERIFY(o.mayAutosave());
        QVERIFY(!o.restoredArrived()); // what arrives now is the user's
        QVERIFY(o.adoptedIsTheUsers(false));
    }

    void theFallbackIsNotSaved()
    {
        EditOrigin o;
        o.beginRestore();
        o.restoreCallReturned(false); // not applied: its scheme file was not run
        o.beginFallback();
        QCOMPARE(o.edited(), Edit::Ignore);
        QVERIFY(!o.adoptedIsTheUsers(false));
        o.fallbackApplied();
        QCOMPARE(o.edited(), Edit::Record);
    }

    void undoIsNotRecordedAgain()
    {
        EditOrigin o;
        o.beginUndo();
        QVERIFY(o.undoing());
        o.undoApplied();
        QVERIFY(!o.undoing());
    }
};

QTEST_GUILESS_MAIN(TestEditOrigin)
#include "test_edit_origin.moc"
