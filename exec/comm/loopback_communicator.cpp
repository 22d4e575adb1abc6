// LoopbackCommunicator (see loopback_communicator.hpp): one mutex and one condition variable
// for the whole hub; a collective is two rendezvous of its group around reading every member's
// posted input.
#include "exec/comm/loopback_communicator.hpp"

#include <algorithm>
#include <chrono>

#include "common/error.hpp"

namespace fabtrain {

LoopbackHub::LoopbackHub(int size, double timeout_s) : size_(size), timeout_s_(timeout_s) {
  if (size < 1) fail("LoopbackHub: {} ranks, at least 1 needed", size);
  for (int r = 0; r < size; ++r) world_.ranks.push_back(r);
  world_.posted.assign(size, nullptr);
}

void LoopbackHub::fail_all(const std::string& message) {
  if (aborted_.empty()) aborted_ = message;
  changed_.notify_all();
  fail("{}", message);
}

template <typename Done>
void LoopbackHub::wait(std::unique_lock<std::mutex>& lock, int rank, const char* what, Done done) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  while (!done()) {
    if (!aborted_.empty())
      fail("loopback rank {} in {}: another rank failed: {}", rank, what, aborted_);
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !done())
      fail_all(fmt::format("loopback rank {} waited {} s in {} (a rank is missing from it)", rank,
                           timeout_s_, what));
  }
}

void LoopbackHub::rendezvous(std::unique_lock<std::mutex>& lock, Group& g, int rank,
                             const char* what) {
  const long round = g.round;
  if (++g.arrived == int(g.ranks.size())) {
    g.arrived = 0;
    ++g.round;
    changed_.notify_all();
    return;
  }
  wait(lock, rank, what, [&] { return g.round != round; });
}

LoopbackHub::Group& LoopbackHub::group(int index, int rank) {
  if (!groups_set_) fail("loopback rank {}: a collective before set_groups", rank);
  if (index < 0 || index >= int(groups_.size()))
    fail("loopback rank {}: group {} is not one of the {} registered", rank, index, groups_.size());
  Group& g = groups_[index];
  if (std::find(g.ranks.begin(), g.ranks.end(), rank) == g.ranks.end())
    fail("loopback rank {}: not a member of group {}", rank, index);
  return g;
}

template <typename Compute, typename Write>
void LoopbackCommunicator::collective(int group, const float* in, const char* what, Compute compute,
                                      Write write) {
  std::unique_lock lock(hub_.mutex_);
  LoopbackHub::Group& g = hub_.group(group, rank_);
  const int position = int(std::find(g.ranks.begin(), g.ranks.end(), rank_) - g.ranks.begin());
  g.posted[position] = in;
  hub_.rendezvous(lock, g, rank_, what);
  const std::vector<float> result = compute(g.posted, position);  // every input posted, unchanged
  hub_.rendezvous(lock, g, rank_, what);                          // nobody reads inputs any more
  lock.unlock();
  write(result);
}

void LoopbackCommunicator::all_reduce(int group, std::span<float> data) {
  collective(
      group, data.data(), "all_reduce",
      [&](const std::vector<const float*>& posted, int) {
        std::vector<float> sum(data.size(), 0.0f);
        for (const float* p : posted)  // group order: the same bits on every member
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += p[i];
        return sum;
      },
      [&](const std::vector<float>& sum) { std::copy(sum.begin(), sum.end(), data.begin()); });
}

void LoopbackCommunicator::reduce_scatter(int group, std::span<const float> in,
                                          std::span<float> out) {
  collective(
      group, in.data(), "reduce_scatter",
      [&](const std::vector<const float*>& posted, int position) {
        if (in.size() != out.size() * posted.size())
          fail("loopback reduce_scatter: {} floats in, {} out over {} ranks", in.size(), out.size(),
               posted.size());
        std::vector<float> sum(out.size(), 0.0f);
        const std::size_t at = std::size_t(position) * out.size();
        for (const float* p : posted)
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += p[at + i];
        return sum;
      },
      [&](const std::vector<float>& sum) { std::copy(sum.begin(), sum.end(), out.begin()); });
}

void LoopbackCommunicator::all_gather(int group, std::span<const float> in, std::span<float> out) {
  collective(
      group, in.data(), "all_gather",
      [&](const std::vector<const float*>& posted, int) {
        if (out.size() != in.size() * posted.size())
          fail("loopback all_gather: {} floats in, {} out over {} ranks", in.size(), out.size(),
               posted.size());
        std::vector<float> all(out.size());
        for (std::size_t r = 0; r < posted.size(); ++r)
          std::copy_n(posted[r], in.size(), all.begin() + r * in.size());
        return all;
      },
      [&](const std::vector<float>& all) { std::copy(all.begin(), all.end(), out.begin()); });
}

void LoopbackCommunicator::send(int peer, std::span<const float> data, int tag) {
  if (peer < 0 || peer >= size())
    fail("loopback rank {}: send to rank {} of {}", rank_, peer, size());
  std::lock_guard lock(hub_.mutex_);
  hub_.mail_[{rank_, peer, tag}].emplace_back(data.begin(), data.end());
  hub_.changed_.notify_all();
}

void LoopbackCommunicator::recv(int peer, std::span<float> data, int tag) {
  if (peer < 0 || peer >= size())
    fail("loopback rank {}: recv from rank {} of {}", rank_, peer, size());
  std::unique_lock lock(hub_.mutex_);
  auto& box = hub_.mail_[{peer, rank_, tag}];
  hub_.wait(lock, rank_, "recv", [&] { return !box.empty(); });
  std::vector<float> message = std::move(box.front());
  box.pop_front();
  if (message.size() != data.size())
    hub_.fail_all(fmt::format("loopback rank {}: recv of {} floats from rank {} (tag {}) got {}",
                              rank_, data.size(), peer, tag, message.size()));
  std::copy(message.begin(), message.end(), data.begin());
}

void LoopbackCommunicator::barrier() {
  std::unique_lock lock(hub_.mutex_);
  hub_.rendezvous(lock, hub_.world_, rank_, "barrier");
}

long LoopbackHub::start(int index, int rank, Op op, std::span<const float> in,
                        std::span<float> out) {
  Group& g = group(index, rank);
  const int position = int(std::find(g.ranks.begin(), g.ranks.end(), rank) - g.ranks.begin());
  const int n = int(g.ranks.size());
  const long seq = next_seq_[{index, rank}]++;
  Started& s = started_[{index, seq}];
  if (s.arrived == 0) {
    s.op = op;
    s.in.assign(n, {});
    s.out.assign(n, {});
  } else if (s.op != op) {
    fail_all(
        fmt::format("loopback rank {}: started collective {} of group {} is another kind "
                    "than its other members started",
                    rank, seq, index));
  }
  const std::size_t want = op == Op::all_reduce       ? in.size()
                           : op == Op::reduce_scatter ? out.size() * n
                                                      : in.size() * n;
  if ((op == Op::reduce_scatter ? in.size() : out.size()) != want)
    fail_all(
        fmt::format("loopback rank {}: started collective of {} floats in, {} out over {} "
                    "ranks does not fit",
                    rank, in.size(), out.size(), n));
  s.in[position] = in;
  s.out[position] = out;
  if (++s.arrived == n) {
    for (int p = 0; p < n; ++p)
      if (s.in[p].size() != s.in[0].size() || s.out[p].size() != s.out[0].size())
        fail_all(fmt::format("loopback: members of group {} started collective {} with other sizes",
                             index, seq));
    finish(s, n);
    changed_.notify_all();
  }
  return seq;
}

// Every member's result first (inputs may alias outputs), then the writes. Sums in group order.
void LoopbackHub::finish(Started& s, int n) {
  std::vector<std::vector<float>> results(n);
  for (int p = 0; p < n; ++p) {
    std::vector<float>& r = results[p];
    if (s.op == Op::all_reduce) {
      r.assign(s.in[0].size(), 0.0f);
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < r.size(); ++i) r[i] += s.in[q][i];
    } else if (s.op == Op::reduce_scatter) {
      r.assign(s.out[p].size(), 0.0f);
      const std::size_t at = std::size_t(p) * r.size();
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < r.size(); ++i) r[i] += s.in[q][at + i];
    } else {
      for (int q = 0; q < n; ++q) r.insert(r.end(), s.in[q].begin(), s.in[q].end());
    }
  }
  for (int p = 0; p < n; ++p) std::copy(results[p].begin(), results[p].end(), s.out[p].begin());
  s.done = true;
}

int LoopbackCommunicator::start_all_reduce(int group, std::span<float> data) {
  std::lock_guard lock(hub_.mutex_);
  const long seq = hub_.start(group, rank_, LoopbackHub::Op::all_reduce, data, data);
  requests_[next_request_] = {group, seq, {}, -1, 0};
  return next_request_++;
}

int LoopbackCommunicator::start_reduce_scatter(int group, std::span<const float> in,
                                               std::span<float> out) {
  std::lock_guard lock(hub_.mutex_);
  const long seq = hub_.start(group, rank_, LoopbackHub::Op::reduce_scatter, in, out);
  requests_[next_request_] = {group, seq, {}, -1, 0};
  return next_request_++;
}

int LoopbackCommunicator::start_all_gather(int group, std::span<const float> in,
                                           std::span<float> out) {
  std::lock_guard lock(hub_.mutex_);
  const long seq = hub_.start(group, rank_, LoopbackHub::Op::all_gather, in, out);
  requests_[next_request_] = {group, seq, {}, -1, 0};
  return next_request_++;
}

int LoopbackCommunicator::start_send(int peer, std::span<const float> data, int tag) {
  send(peer, data, tag);  // eager: already in the peer's mailbox
  requests_[next_request_] = {};
  return next_request_++;
}

int LoopbackCommunicator::start_recv(int peer, std::span<float> data, int tag) {
  if (peer < 0 || peer >= size())
    fail("loopback rank {}: recv from rank {} of {}", rank_, peer, size());
  requests_[next_request_] = {-1, 0, data, peer, tag};
  return next_request_++;
}

void LoopbackCommunicator::wait(int request) {
  auto it = requests_.find(request);
  if (it == requests_.end()) unknown_request(request);
  const Request r = it->second;
  requests_.erase(it);
  if (r.group < 0) {
    if (r.peer >= 0) recv(r.peer, r.recv, r.tag);
    return;
  }
  std::unique_lock lock(hub_.mutex_);
  auto found = hub_.started_.find({r.group, r.seq});
  LoopbackHub::Started& s = found->second;
  hub_.wait(lock, rank_, "wait", [&] { return s.done; });
  if (++s.waited == int(s.in.size())) hub_.started_.erase(found);
}

void LoopbackCommunicator::set_groups(const std::vector<std::vector<int>>& groups) {
  std::unique_lock lock(hub_.mutex_);
  if (!hub_.groups_set_) {  // the first caller registers; every rank passes the same list
    hub_.groups_.clear();
    for (const std::vector<int>& ranks : groups) {
      LoopbackHub::Group g;
      g.ranks = ranks;
      g.posted.assign(ranks.size(), nullptr);
      hub_.groups_.push_back(std::move(g));
    }
    hub_.groups_set_ = true;
  }
  hub_.rendezvous(lock, hub_.world_, rank_, "set_groups");
}

void LoopbackCommunicator::abort(const std::string& message) {
  std::lock_guard lock(hub_.mutex_);
  hub_.fail_all(fmt::format("loopback rank {} aborted: {}", rank_, message));
}

}  // namespace fabtrain
