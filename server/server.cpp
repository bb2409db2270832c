#include "server/server.hpp"

// <utility> before Asio: Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <utility>
// (keep the line above first)
#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/commands.hpp"
#include "server/snapshot.hpp"

namespace ccf::serve {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

class Session;

// The sessions, for the server-wide bound on clients' buffers: when their sum
// (ServerState::client_buffer_bytes) passes ServerState::max_client_memory, the sessions holding
// the most are closed, largest first, until the sum would be back under it.
class ClientRegistry {
 public:
  explicit ClientRegistry(ServerState& state) : state_(state) {}
  void enter(const std::shared_ptr<Session>& session);
  void leave(const Session* session);
  // Called by `grown` (on its thread) after its buffers grew. Returns true when `grown` itself
  // is to close; the others chosen are closed on their own threads.
  bool enforce(const Session* grown);

 private:
  ServerState& state_;
  std::mutex mutex_;
  std::unordered_map<const Session*, std::weak_ptr<Session>> sessions_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, ServerState& state, const ServerOptions& options,
          ClientRegistry& registry)
      : socket_(std::move(socket)),
        idle_(socket_.get_executor()),
        state_(state),
        options_(options),
        registry_(registry),
        parser_(options.limits) {
    client_.id = state_.next_client_id.fetch_add(1);
    client_.authenticated = state_.password.empty();
    state_.connected_clients.fetch_add(1);
  }
  ~Session() {
    registry_.leave(this);
    state_.client_buffer_bytes.fetch_sub(accounted_.load());
    state_.connected_clients.fetch_sub(1);
  }

  void start() {
    registry_.enter(shared_from_this());
    read();
  }

  // What this session's buffers hold allocated, as last accounted (read by other threads).
  std::uint64_t buffer_bytes() const noexcept { return accounted_.load(); }
  // Claims the session for eviction (once; the caller holds the registry's lock).
  void claim_for_eviction() noexcept { evicted_.store(true); }
  bool evicted() const noexcept { return evicted_.load(); }
  std::uint64_t id() const noexcept { return client_.id; }
  asio::any_io_executor executor() { return socket_.get_executor(); }

  // Closes the socket and frees the buffers. Runs on the session's thread; again is harmless.
  // A write still pending on output_ is cancelled by the close and never touches it again (its
  // operations run only on this thread, which is here). A completion already queued with
  // success still runs: the handlers check closed_ first, so it serves and buffers nothing.
  void close() {
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    std::string().swap(input_);
    std::string().swap(output_);
    account();
  }

 private:
  // Buffers emptied with more than this allocated are freed, so an idle client that once sent
  // or received a large value does not keep its memory.
  static constexpr std::size_t kKeepAllocated = 1u << 20;

  // Brings the server-wide sum up to date with this session's buffers. Returns true when the
  // session must close to bring the sum under the bound.
  bool account() {
    const std::uint64_t now = input_.capacity() + output_.capacity();
    const std::uint64_t before = accounted_.exchange(now);
    if (now <= before) {
      state_.client_buffer_bytes.fetch_sub(before - now);
      return false;
    }
    state_.client_buffer_bytes.fetch_add(now - before);
    return registry_.enforce(this);
  }

  void read() {
    client_.memo.forget();  // holds no filter while the client is idle (Keyspace::Memo)
    arm_idle_timer();
    socket_.async_read_some(
        asio::buffer(chunk_),
        [self = shared_from_this()](boost::system::error_code error, std::size_t bytes) {
          ++self->activity_;  // the idle timer armed for this read no longer closes
          self->idle_.cancel();
          if (error || self->closed_) return self->close();
          self->input_.append(self->chunk_.data(), bytes);
          if (self->account()) return self->close();
          self->serve_input();
        });
  }

  // Replies are written once they pass this size, before more buffered commands run: what a
  // client that does not read its replies can make the server hold is bounded by this plus one
  // reply (CF.SCANDUMP's 16 MiB chunk at most) and the parser's input bound.
  static constexpr std::size_t kMaxPendingOutput = 1u << 20;

  // Runs the complete commands in the input (until the replies pass kMaxPendingOutput), then
  // writes the replies; after the write, runs the rest, or reads more.
  void serve_input() {
    std::size_t offset = 0;
    bool close_after = false;
    while (output_.size() < kMaxPendingOutput) {
      std::size_t consumed = 0;
      const ParseStatus status =
          parser_.parse(std::string_view(input_).substr(offset), args_, consumed);
      offset += consumed;
      if (status == ParseStatus::kNeedMore) break;
      if (status == ParseStatus::kError) {
        pipeline_.flush(state_, client_, output_);
        ReplyWriter(output_, client_.proto).error("ERR " + parser_.error());
        close_after = true;
        break;
      }
      pipeline_.run(state_, client_, args_, output_);
      if (client_.close_after_reply) {
        close_after = true;
        break;
      }
    }
    pipeline_.flush(state_, client_, output_);
    input_.erase(0, offset);
    if (input_.empty() && input_.capacity() > kKeepAllocated) std::string().swap(input_);
    const bool more_to_run = !close_after && output_.size() >= kMaxPendingOutput;
    if (!close_after && !more_to_run && input_.size() > parser_.max_buffered_bytes()) {
      ReplyWriter(output_, client_.proto).error("ERR Protocol error: client buffer limit exceeded");
      close_after = true;
    }
    if (account()) return close();
    if (output_.empty()) {
      if (close_after) return close();
      return read();
    }
    asio::async_write(socket_, asio::buffer(output_),
                      [self = shared_from_this(), close_after, more_to_run](
                          boost::system::error_code error, std::size_t) {
                        self->output_.clear();
                        if (self->output_.capacity() > kKeepAllocated) {
                          std::string().swap(self->output_);
                        }
                        self->account();
                        if (error || close_after || self->closed_) return self->close();
                        if (more_to_run) return self->serve_input();
                        self->read();
                      });
  }

  // Closes the client if the read armed here sees nothing for the idle timeout. Both handlers
  // run on the session's thread; `activity_` tells a timer that fired after its read completed
  // (its cancel came too late) not to close.
  void arm_idle_timer() {
    if (options_.idle_timeout_seconds == 0) return;
    idle_.expires_after(std::chrono::seconds(options_.idle_timeout_seconds));
    idle_.async_wait(
        [self = shared_from_this(), armed = activity_](boost::system::error_code error) {
          if (!error && self->activity_ == armed) self->close();
        });
  }

  tcp::socket socket_;
  asio::steady_timer idle_;
  ServerState& state_;
  const ServerOptions& options_;
  ClientRegistry& registry_;
  std::atomic<std::uint64_t> accounted_{0};
  std::atomic<bool> evicted_{false};
  bool closed_ = false;  // on the session's thread only
  RequestParser parser_;
  ClientState client_;
  std::array<char, 16384> chunk_{};
  std::string input_;
  std::string output_;
  std::vector<std::string> args_;
  Pipeline pipeline_;
  std::uint64_t activity_ = 0;  // reads completed (on the session's thread)
};

void ClientRegistry::enter(const std::shared_ptr<Session>& session) {
  const std::lock_guard lock(mutex_);
  sessions_.emplace(session.get(), session);
}

void ClientRegistry::leave(const Session* session) {
  const std::lock_guard lock(mutex_);
  sessions_.erase(session);
}

bool ClientRegistry::enforce(const Session* grown) {
  const std::uint64_t limit = state_.max_client_memory;
  if (state_.client_buffer_bytes.load() <= limit) return false;
  // Declared before the lock: a Session whose last owner is this vector is destroyed after the
  // lock is released (its destructor calls leave()).
  std::vector<std::pair<std::uint64_t, std::shared_ptr<Session>>> largest;
  std::vector<std::shared_ptr<Session>> chosen;
  bool close_grown = false;
  {
    const std::lock_guard lock(mutex_);
    // Each session's bytes read once: other threads change them meanwhile, and a sort whose
    // keys change under it is undefined.
    for (const auto& [address, weak] : sessions_) {
      if (std::shared_ptr<Session> session = weak.lock()) {
        largest.emplace_back(session->buffer_bytes(), std::move(session));
      }
    }
    std::sort(largest.begin(), largest.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    // Sessions chosen before and not closed yet still count in the sum: they are on their way
    // out, and choosing others for their bytes would close more clients than the bound needs.
    std::uint64_t total = state_.client_buffer_bytes.load();
    for (const auto& [bytes, session] : largest) {
      if (session->evicted()) total -= std::min(total, bytes);
    }
    for (const auto& [bytes, session] : largest) {
      if (total <= limit) break;
      if (session->evicted()) continue;
      session->claim_for_eviction();
      total -= std::min(total, bytes);
      state_.evicted_clients.fetch_add(1);
      std::fprintf(stderr,
                   "ccf serve: client %llu closed: it held %llu bytes of buffers, and all "
                   "clients together more than --max-client-memory %llu\n",
                   static_cast<unsigned long long>(session->id()),
                   static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(limit));
      if (session.get() == grown) {
        close_grown = true;
      } else {
        chosen.push_back(session);
      }
    }
  }
  for (const auto& session : chosen) {
    asio::post(session->executor(), [session] { session->close(); });
  }
  return close_grown;
}

// One io_context per I/O thread, each run by that thread alone: a session lives on one
// context, so its handlers never run concurrently (no strand) and are never handed from one
// thread to another (a shared io_context wakes an idle thread for the handlers it posts).
// Sessions are dealt to the contexts round-robin as they are accepted. On 2 cores this measured
// no faster than one shared io_context (docs/server.md, "Figures").
class IoThreads {
 public:
  IoThreads(unsigned threads, std::chrono::microseconds busy_poll) : busy_poll_(busy_poll) {
    for (unsigned i = 0; i < threads; ++i) {
      contexts_.push_back(std::make_unique<asio::io_context>(1));
      // A context with no session yet must not return from run().
      guards_.emplace_back(asio::make_work_guard(*contexts_.back()));
    }
  }
  asio::io_context& first() { return *contexts_.front(); }
  asio::io_context& next() { return *contexts_[dealt_++ % contexts_.size()]; }

  // Runs every context, the first on the calling thread, until stop().
  void run() {
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < contexts_.size(); ++i) {
      threads.emplace_back([this, context = contexts_[i].get()] { run_context(*context); });
    }
    run_context(*contexts_.front());
    for (std::thread& thread : threads) thread.join();
  }
  void stop() {
    for (auto& context : contexts_) context->stop();
  }

 private:
  // With a busy-poll window the thread polls its context (epoll_wait with a zero timeout) until
  // it has found no ready handler for that long, and only then blocks for the next one. A
  // client's write to a socket whose thread is blocked in epoll_wait pays for the wake-up in
  // its own system call (docs/server.md, "Busy polling"); a thread that polls is not asleep.
  void run_context(asio::io_context& context) const {
    if (busy_poll_.count() == 0) {
      context.run();
      return;
    }
    using Clock = std::chrono::steady_clock;
    while (!context.stopped()) {
      const Clock::time_point idle_since = Clock::now();
      while (context.poll() == 0) {
        if (context.stopped()) return;
        if (Clock::now() - idle_since >= busy_poll_) {
          context.run_one();
          break;
        }
      }
    }
  }

  using Guard = asio::executor_work_guard<asio::io_context::executor_type>;
  std::chrono::microseconds busy_poll_;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<Guard> guards_;
  std::size_t dealt_ = 0;  // accept handlers run on the first context's thread only
};

class Listener {
 public:
  Listener(IoThreads& io, const ServerOptions& options, ServerState& state,
           ClientRegistry& registry)
      : registry_(registry),
        io_(io),
        acceptor_(io.first(), tcp::endpoint(asio::ip::make_address(options.bind), options.port)),
        backoff_(io.first()),
        options_(options),
        state_(state) {}

  tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }

  void accept() {
    acceptor_.async_accept(io_.next(), [this](boost::system::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted) return;
      if (error) {
        // Out of file descriptors (or another accept error): try again a little later rather
        // than spin on a listener that stays readable.
        backoff_.expires_after(std::chrono::milliseconds(100));
        backoff_.async_wait([this](boost::system::error_code waited) {
          if (!waited) accept();
        });
        return;
      }
      admit(std::move(socket));
      accept();
    });
  }

 private:
  void admit(tcp::socket socket) {
    if (state_.connected_clients.load() >= options_.max_clients) {
      static const std::string refusal = "-ERR max number of clients reached\r\n";
      boost::system::error_code ignored;
      asio::write(socket, asio::buffer(refusal), ignored);
      return;
    }
    // The session starts on its own context's thread, where all its handlers run.
    const asio::any_io_executor executor = socket.get_executor();
    asio::post(executor, [session = std::make_shared<Session>(std::move(socket), state_, options_,
                                                              registry_)] { session->start(); });
  }

  ClientRegistry& registry_;
  IoThreads& io_;
  tcp::acceptor acceptor_;
  asio::steady_timer backoff_;
  const ServerOptions& options_;
  ServerState& state_;
};

}  // namespace

// Writes a snapshot every `save_seconds` when `save_changes` writes have run since the last.
class PeriodicSaver {
 public:
  PeriodicSaver(ServerState& state, const ServerOptions& options) : state_(state) {
    if (options.save_seconds == 0) return;
    thread_ = std::thread(
        [this, period = std::chrono::seconds(options.save_seconds), wanted = options.save_changes] {
          std::unique_lock lock(mutex_);
          while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
            if (state_.changes.load() < wanted) continue;
            try {
              save_now(state_);
            } catch (const std::exception& error) {
              std::fprintf(stderr, "ccf serve: periodic save failed: %s\n", error.what());
            }
          }
        });
  }
  ~PeriodicSaver() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  PeriodicSaver(const PeriodicSaver&) = delete;
  PeriodicSaver& operator=(const PeriodicSaver&) = delete;

 private:
  ServerState& state_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

void run_server(const ServerOptions& options) {
  ServerState state;
  state.password = options.password;
  state.max_client_memory = options.max_client_memory;
  if (!options.directory.empty()) {
    state.snapshot_file = options.directory / options.file_name;
    load_snapshot(state.keyspace, state.snapshot_file);
  }
  ClientRegistry registry(state);  // before the contexts: it outlives the sessions they hold
  IoThreads io(options.threads, std::chrono::microseconds(options.busy_poll_us));
  Listener listener(io, options, state, registry);
  asio::signal_set signals(io.first(), SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) { io.stop(); });
  listener.accept();
  const tcp::endpoint at = listener.endpoint();
  std::printf("listening %s:%u\n", at.address().to_string().c_str(),
              static_cast<unsigned>(at.port()));
  std::fflush(stdout);
  {
    const PeriodicSaver saver(state, options);
    io.run();
  }
  finish_background_save(state);
  if (options.save_seconds != 0 && state.changes.load() > 0) save_now(state);  // at shutdown
}

}  // namespace ccf::serve
