#include "core/user_schemes/worker_wire.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace ropescope::user_schemes::wire {
namespace {

std::string header(std::uint32_t kind, std::size_t length)
{
    if (length > kMaxFrame)
        throw WireError("message of " + std::to_string(length) + " bytes is over the limit");
    const std::uint32_t fields[2] = {kind, static_cast<std::uint32_t>(length)};
    return std::string(reinterpret_cast<const char*>(fields), sizeof fields);
}

// Waits for `events` on fd until the deadline (none: forever); false when it passed.
bool waitFor(int fd, short events, const Clock::time_point* deadline)
{
    for (;;) {
        int timeout = -1;
        if (deadline) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
            if (left <= 0)
                return false;
            timeout = static_cast<int>(std::min<long long>(left, 1 << 30));
        }
        pollfd p{fd, events, 0};
        const int n = poll(&p, 1, timeout);
        if (n > 0)
            return true; // readable, writable, or hung up: the read or write says which
        if (n < 0 && errno != EINTR)
            throw WireError(std::string("poll: ") + std::strerror(errno));
    }
}

bool writeAll(int fd, const char* p, std::size_t n, const Clock::time_point* deadline)
{
    while (n > 0) {
        if (!waitFor(fd, POLLOUT, deadline))
            return false;
        // MSG_NOSIGNAL: a worker that died must not take RopeScope with it through SIGPIPE.
        const ssize_t w = send(fd, p, n, MSG_NOSIGNAL | (deadline ? MSG_DONTWAIT : 0));
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            throw WireError(std::string("the other side closed the connection (") + std::strerror(errno) + ")");
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool readAll(int fd, char* p, std::size_t n, const Clock::time_point* deadline)
{
    while (n > 0) {
        if (!waitFor(fd, POLLIN, deadline))
            return false;
        const ssize_t r = recv(fd, p, n, deadline ? MSG_DONTWAIT : 0);
        if (r == 0)
            throw WireError("the other side closed the connection");
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            throw WireError(std::string("read failed (") + std::strerror(errno) + ")");
        }
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

bool send(int fd, std::uint32_t kind, const std::string& payload, const Clock::time_point* deadline)
{
    const std::string head = header(kind, payload.size());
    return writeAll(fd, head.data(), head.size(), deadline) && writeAll(fd, payload.data(), payload.size(), deadline);
}

bool receive(int fd, std::uint32_t* kind, std::string* payload, const Clock::time_point* deadline)
{
    std::uint32_t fields[2];
    if (!readAll(fd, reinterpret_cast<char*>(fields), sizeof fields, deadline))
        return false;
    if (fields[1] > kMaxFrame)
        throw WireError("a message of " + std::to_string(fields[1]) + " bytes is over the limit");
    *kind = fields[0];
    payload->resize(fields[1]);
    return readAll(fd, payload->data(), payload->size(), deadline);
}

} // namespace

void WireWriter::str(const std::string& s)
{
    if (s.size() > kMaxFrame)
        throw WireError("string too long for a message");
    u32(static_cast<std::uint32_t>(s.size()));
    buffer_.append(s);
}

void WireWriter::f64s(const double* values, std::size_t count)
{
    raw(values, count * sizeof(double));
}

void WireReader::raw(void* out, std::size_t n)
{
    if (n > left_)
        throw WireError("the message ends early");
    std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
}

std::uint32_t WireReader::u32()
{
    std::uint32_t v;
    raw(&v, sizeof v);
    return v;
}

std::int64_t WireReader::i64()
{
    std::int64_t v;
    raw(&v, sizeof v);
    return v;
}

double WireReader::f64()
{
    double v;
    raw(&v, sizeof v);
    return v;
}

std::string WireReader::str(std::size_t maxBytes)
{
    const std::uint32_t n = u32();
    if (n > maxBytes || n > left_)
        throw WireError("a text of " + std::to_string(n) + " bytes is longer than allowed");
    std::string s(p_, n);
    p_ += n;
    left_ -= n;
    return s;
}

void WireReader::f64s(double* out, std::size_t count)
{
    if (count > left_ / sizeof(double))
        throw WireError("the message holds fewer numbers than it declares");
    raw(out, count * sizeof(double));
}

void WireReader::finish() const
{
    if (left_ != 0)
        throw WireError("the message has " + std::to_string(left_) + " bytes after its last field");
}

void sendFrame(int fd, std::uint32_t kind, const std::string& payload)
{
    send(fd, kind, payload, nullptr);
}

std::pair<std::uint32_t, std::string> receiveFrame(int fd)
{
    std::pair<std::uint32_t, std::string> out;
    receive(fd, &out.first, &out.second, nullptr);
    return out;
}

bool sendFrame(int fd, std::uint32_t kind, const std::string& payload, Clock::time_point deadline)
{
    return send(fd, kind, payload, &deadline);
}

bool receiveFrame(int fd, std::uint32_t* kind, std::string* payload, Clock::time_point deadline)
{
    return receive(fd, kind, payload, &deadline);
}

} // namespace ropescope::user_schemes::wire
