// ropescope-scheme-worker: runs one Python scheme file for RopeScope, in a process of its own. RopeScope
// (scheme_worker.cpp) starts it with a connected socket on fd 3, its stdout and stderr in a capture file,
// a memory limit and its own process group; it answers one request at a time (worker_wire.h) and is
// killed from outside when a call overruns. Nothing it sends is trusted: RopeScope checks every value.
// Python's headers before anything of Qt's (there is none here) and before the project's.
#include "core/user_schemes/python_runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "core/user_schemes/worker_wire.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

namespace py = pybind11;
using namespace ropescope::user_schemes;
using wire::Kind;
using wire::Status;
using wire::WireReader;
using wire::WireWriter;

namespace {

constexpr int kSocket = 3;
constexpr std::size_t kMaxText = 1 << 20;

struct Loaded {
    std::string path;
    py::object module;
    int components = 0; // from COMPONENTS, 0 when the file names none
};

const char* segmentKind(std::uint32_t k)
{
    return k == 1 ? "image" : k == 2 ? "video" : "text";
}

std::string errorReply(const std::string& line, const std::string& detail)
{
    WireWriter w;
    w.str(line);
    w.str(detail);
    return w.bytes();
}

std::string describe(py::error_already_set& e, const std::string& path, const char* what)
{
    py::tuple d = schemeRuntime().attr("describe")(e.value(), e.trace() ? e.trace() : py::none(), path, what);
    return errorReply(d[0].cast<std::string>(), d[1].cast<std::string>());
}

std::string load(Loaded& out, WireReader& in, std::chrono::milliseconds limit)
{
    out.path = in.str(4096);
    const std::string source = in.str(kMaxText);
    py::list modules; // (name, path, source) of the folder's files the user let it import
    const std::uint32_t moduleCount = in.u32();
    for (std::uint32_t i = 0; i < moduleCount; ++i) {
        std::string name = in.str(256);
        std::string path = in.str(4096);
        modules.append(py::make_tuple(name, path, py::bytes(in.str(kMaxText))));
    }
    in.finish();
    WireWriter w;
    CallDeadline deadline(limit);
    py::module_ m = schemeRuntime().attr("load")(out.path, py::bytes(source), modules);
    py::list params = schemeRuntime().attr("parameters")(m);
    w.u32(static_cast<std::uint32_t>(params.size()));
    for (py::handle p : params) {
        py::tuple t = p.cast<py::tuple>();
        w.str(t[0].cast<std::string>());
        for (int i = 1; i <= 3; ++i)
            w.f64(t[i].cast<double>());
    }
    py::object names = schemeRuntime().attr("components")(m);
    const std::vector<std::string> list = names.is_none() ? std::vector<std::string>{} : names.cast<std::vector<std::string>>();
    w.u32(static_cast<std::uint32_t>(list.size()));
    for (const std::string& n : list)
        w.str(n);
    out.module = m;
    out.components = static_cast<int>(list.size());
    return w.bytes();
}

std::string positions(const Loaded& scheme, WireReader& in, std::chrono::milliseconds limit)
{
    const std::string spec = in.str(kMaxText);
    const std::uint32_t segmentCount = in.u32();
    py::list segments;
    for (std::uint32_t i = 0; i < segmentCount; ++i) {
        const std::uint32_t kind = in.u32();
        const std::int64_t length = in.i64(), frames = in.i64(), rows = in.i64(), cols = in.i64();
        segments.append(py::make_tuple(segmentKind(kind), length, frames, rows, cols));
    }
    py::dict values;
    const std::uint32_t valueCount = in.u32();
    for (std::uint32_t i = 0; i < valueCount; ++i) {
        const std::string name = in.str(4096);
        values[py::str(name)] = in.f64();
    }
    const std::uint32_t expected = in.u32();
    in.finish();
    CallDeadline deadline(limit);
    py::object layout = schemeRuntime().attr("Layout")(spec, segments);
    py::array_t<double, py::array::c_style | py::array::forcecast> a =
        schemeRuntime().attr("call_positions")(scheme.module, layout, values, expected);
    if (a.ndim() != 2)
        throw std::runtime_error("positions() did not give a 2-D array");
    WireWriter w;
    w.u32(static_cast<std::uint32_t>(a.shape(0)));
    w.i64(a.shape(1));
    w.f64s(a.data(), static_cast<std::size_t>(a.size()));
    return w.bytes();
}

std::string allocation(const Loaded& scheme, WireReader& in, std::chrono::milliseconds limit)
{
    const std::uint32_t headDim = in.u32(), pairs = in.u32(), components = in.u32();
    in.finish();
    CallDeadline deadline(limit);
    py::object a = schemeRuntime().attr("call_allocation")(scheme.module, headDim, pairs, components);
    WireWriter w;
    w.u32(a.is_none() ? 0 : 1);
    if (!a.is_none()) {
        const std::vector<long long> v = a.cast<std::vector<long long>>();
        w.u32(static_cast<std::uint32_t>(v.size()));
        for (long long x : v)
            w.i64(x);
    }
    return w.bytes();
}

} // namespace

int main(int argc, char** argv)
{
    // Ends with RopeScope, however RopeScope ends (argv[2]: its pid). Watched from a thread rather than by
    // PR_SET_PDEATHSIG, which fires when the RopeScope *thread* that started the worker ends.
    if (argc < 3)
        return 3;
    const pid_t parent = static_cast<pid_t>(std::strtol(argv[2], nullptr, 10));
    if (getppid() != parent)
        return 3;
    std::thread([parent] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
            if (getppid() != parent)
                _exit(0);
        }
    }).detach();
    const std::chrono::milliseconds limit(std::max(1L, std::strtol(argv[1], nullptr, 10)));
    try {
        startPython();
        wire::sendFrame(kSocket, static_cast<std::uint32_t>(Kind::Ready), {});
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ropescope-scheme-worker: %s\n", e.what());
        return 4;
    }
    std::optional<Loaded> scheme;
    for (;;) {
        std::pair<std::uint32_t, std::string> request;
        try {
            py::gil_scoped_release idle; // the watchdog may be waiting for the GIL to interrupt a finished call
            request = wire::receiveFrame(kSocket);
        } catch (const wire::WireError&) {
            return 0; // RopeScope closed the connection
        }
        const Kind kind = static_cast<Kind>(request.first);
        WireReader in(request.second);
        Status status = Status::Ok;
        std::string reply;
        const char* what = kind == Kind::Load ? "loading the file" : kind == Kind::Positions ? "positions()" : "allocation()";
        try {
            if (kind == Kind::Load) {
                scheme.emplace();
                reply = load(*scheme, in, limit);
            } else if (!scheme || !scheme->module) {
                throw std::runtime_error("no scheme loaded");
            } else if (kind == Kind::Positions) {
                reply = positions(*scheme, in, limit);
            } else if (kind == Kind::Allocation) {
                reply = allocation(*scheme, in, limit);
            } else {
                throw std::runtime_error("unknown request");
            }
        } catch (py::error_already_set& e) {
            status = Status::Error;
            reply = describe(e, scheme ? scheme->path : std::string(), what);
            if (kind == Kind::Load)
                scheme.reset();
        } catch (const std::exception& e) {
            status = Status::Error;
            reply = errorReply(std::string(what) + ": " + e.what(), e.what());
            if (kind == Kind::Load)
                scheme.reset();
        }
        try {
            wire::sendFrame(kSocket, static_cast<std::uint32_t>(status), reply);
        } catch (const wire::WireError&) {
            return 0;
        }
    }
}
