#pragma once
// The messages between RopeScope and its Python worker (scheme_worker.h, worker_main.cpp): a frame is
// {u32 kind, u32 length, payload}; a payload is a flat sequence of fixed-width numbers and length-prefixed
// strings, written by WireWriter and read back by WireReader, which checks every length against what is
// left (the worker runs untrusted code, so RopeScope reads its replies as it reads any outside file).
// No Python, Qt or LibTorch here: both sides link it.
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ropescope::user_schemes::wire {

// Requests (RopeScope -> worker) and the worker's one unsolicited message.
enum class Kind : std::uint32_t {
    Ready = 1,      // worker: the interpreter and numpy are up
    Load = 2,       // path, source -> parameters, component names
    Positions = 3,  // layout, values, expected components -> C, L, [C, L] float64
    Allocation = 4, // head_dim, pairs, components -> present, indices
};
// Reply status (the kind field of a reply frame).
enum class Status : std::uint32_t { Ok = 0, Error = 1 };

// The largest frame either side accepts: 4 components x 16M tokens of float64 and change.
constexpr std::uint32_t kMaxFrame = 600u << 20;

class WireError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class WireWriter {
public:
    void u32(std::uint32_t v) { raw(&v, sizeof v); }
    void i64(std::int64_t v) { raw(&v, sizeof v); }
    void f64(double v) { raw(&v, sizeof v); }
    void str(const std::string& s);
    void f64s(const double* values, std::size_t count);
    const std::string& bytes() const { return buffer_; }

private:
    void raw(const void* p, std::size_t n) { buffer_.append(static_cast<const char*>(p), n); }
    std::string buffer_;
};

class WireReader {
public:
    explicit WireReader(const std::string& payload) : p_(payload.data()), left_(payload.size()) { }
    std::uint32_t u32();
    std::int64_t i64();
    double f64();
    std::string str(std::size_t maxBytes);
    void f64s(double* out, std::size_t count);
    // Throws unless every byte was read (a reply longer than its fields is malformed too).
    void finish() const;

private:
    void raw(void* out, std::size_t n);
    const char* p_;
    std::size_t left_;
};

// Whole frames over a stream socket. The worker's side blocks; RopeScope's side waits until `deadline` and
// returns false when it passes (the caller then ends the worker). Both throw WireError on a closed or broken
// socket or a frame over kMaxFrame.
using Clock = std::chrono::steady_clock;
void sendFrame(int fd, std::uint32_t kind, const std::string& payload);
std::pair<std::uint32_t, std::string> receiveFrame(int fd);
bool sendFrame(int fd, std::uint32_t kind, const std::string& payload, Clock::time_point deadline);
bool receiveFrame(int fd, std::uint32_t* kind, std::string* payload, Clock::time_point deadline);

} // namespace ropescope::user_schemes::wire
