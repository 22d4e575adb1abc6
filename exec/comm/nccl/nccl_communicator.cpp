// NCCL communicator (see nccl_communicator.hpp; the ordering rules in nccl_ordering.hpp).
#include "exec/comm/nccl/nccl_communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <deque>
#include <map>

#include "exec/comm/mpi_check.hpp"
#include "exec/comm/nccl/nccl_ordering.hpp"
#include "exec/cuda/buffer_pool.hpp"
#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"

namespace fabtrain::cuda {
namespace {

bool on_device(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// A started request: its staging buffers (pool slots), where its result goes back to on the
// host, and the event its stream records when done.
struct Started {
  bool host_in = false, host_out = false;
  std::vector<int> slots;
  std::span<float> host_result;
  const float* device_result = nullptr;
  cudaEvent_t done = nullptr;
};

// A group's NCCL communicator and this rank's position in it (-1: not a member).
struct Group {
  std::vector<int> ranks;
  ncclComm_t comm = nullptr;
  bool owned = false;  // false: the world communicator itself
  int position = -1;
};

}  // namespace

struct NcclCommunicator::Impl {
  explicit Impl(MpiCommunicator& m) : mpi(m) {}
  MpiCommunicator& mpi;
  int device = 0;
  ncclComm_t world = nullptr;
  cudaStream_t collective_stream = nullptr;
  cudaStream_t copy_stream = nullptr;  // host staging copies only
  // Point-to-point: per colour of edge (nccl_ordering.hpp) a two-rank communicator (the sender
  // is its rank 0) and a stream; null where this rank has no edge of that colour.
  TransferColours colours;
  bool connected = false;
  std::vector<ncclComm_t> edge_comms;
  std::vector<cudaStream_t> edge_streams;
  cudaEvent_t staged = nullptr, ready = nullptr;  // reused: a wait captures the event at the call
  std::vector<Group> groups;
  BufferPool<DeviceArray<float>> pool;
  std::vector<cudaEvent_t> free_events;
  std::map<int, Started> started;
  std::deque<int> eager_sends;  // blocking sends, finished as their events complete
  int next_request = 0;

  cudaStream_t stream_of(int q) const {
    return q == collective_queue ? collective_stream : edge_streams.at(q - 1);
  }
  // The queue of a transfer with peer; fails when connect_peers() did not name the peer.
  int transfer_queue(int peer, bool sending) const {
    const int q = colours.queue(mpi.rank(), peer, sending);
    if (q < 0 || !edge_comms.at(q - 1))
      fail("NcclCommunicator: rank {} {} rank {}, which connect_peers() did not name as a peer",
           mpi.rank(), sending ? "sends to" : "receives from", peer);
    return q;
  }
  cudaEvent_t take_event() {
    if (free_events.empty()) {
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      return e;
    }
    cudaEvent_t e = free_events.back();
    free_events.pop_back();
    return e;
  }
  float* slot(Started& r, std::int64_t count) {
    r.slots.push_back(pool.acquire(count));
    return pool.data(r.slots.back());
  }

  // Plays request_steps' start half: op(device_in, device_out, request) queues the NCCL call.
  template <typename Op>
  int start(int q, std::span<const float> in, std::span<float> out, Op&& op) {
    cudaStream_t stream = stream_of(q);
    Started r;
    r.host_in = !in.empty() && !on_device(in.data());
    r.host_out = !out.empty() && !on_device(out.data());
    const float* din = in.data();
    float* dout = out.data();
    for (HostStep step : request_steps(r.host_in, r.host_out).at_start) switch (step) {
        case HostStep::stage_in: {
          float* d = slot(r, std::int64_t(in.size()));
          CUDA_CHECK(
              cudaMemcpyAsync(d, in.data(), in.size_bytes(), cudaMemcpyHostToDevice, copy_stream));
          din = d;
          break;
        }
        case HostStep::after_stage:
          CUDA_CHECK(cudaEventRecord(staged, copy_stream));
          CUDA_CHECK(cudaStreamWaitEvent(stream, staged, 0));
          break;
        case HostStep::after_compute:
          CUDA_CHECK(cudaEventRecord(ready, compute_stream()));
          CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
          break;
        case HostStep::enqueue:
          if (r.host_out) {
            const bool in_place = r.host_in && in.size() == out.size() &&
                                  static_cast<const void*>(in.data()) == out.data();
            dout = in_place ? const_cast<float*>(din) : slot(r, std::int64_t(out.size()));
            r.host_result = out;
            r.device_result = dout;
          }
          op(din, dout, r);
          break;
        case HostStep::record_done:
          r.done = take_event();
          CUDA_CHECK(cudaEventRecord(r.done, stream));
          break;
        default:
          break;
      }
    const int id = next_request++;
    started.emplace(id, std::move(r));
    return id;
  }

  // Plays request_steps' wait half.
  void finish(int request) {
    auto it = started.find(request);
    Started r = std::move(it->second);
    started.erase(it);
    for (HostStep step : request_steps(r.host_in, r.host_out).at_wait) switch (step) {
        case HostStep::sync_done:
          CUDA_CHECK(cudaEventSynchronize(r.done));
          break;
        case HostStep::copy_out:
          CUDA_CHECK(cudaMemcpyAsync(r.host_result.data(), r.device_result,
                                     r.host_result.size_bytes(), cudaMemcpyDeviceToHost,
                                     copy_stream));
          CUDA_CHECK(cudaStreamSynchronize(copy_stream));
          break;
        case HostStep::release:
          for (int s : r.slots) pool.release(s);
          free_events.push_back(r.done);
          break;
        default:
          break;
      }
  }

  void finish_sends(bool wait_all) {
    while (!eager_sends.empty()) {
      const cudaError_t state = cudaEventQuery(started.at(eager_sends.front()).done);
      if (state == cudaErrorNotReady && !wait_all) return;
      if (state != cudaErrorNotReady) CUDA_CHECK(state);
      finish(eager_sends.front());
      eager_sends.pop_front();
    }
  }

  const Group& group_of(int group) const {
    if (group < 0 || group >= int(groups.size()))
      fail("NcclCommunicator: group {} is not one of the {} registered groups", group,
           groups.size());
    if (!groups[group].comm)
      fail("NcclCommunicator: rank {} is not a member of group {}", mpi.rank(), group);
    return groups[group];
  }
  void destroy_groups() {
    for (Group& g : groups)
      if (g.owned && g.comm) ncclCommDestroy(g.comm);
    groups.clear();
  }
  // Every rank's peers (an all-gather over MPI), so that every rank colours the same edges.
  std::vector<std::vector<int>> all_peers(const std::vector<int>& mine) const {
    const int n = mpi.size();
    int count = int(mine.size());
    std::vector<int> counts(n), offsets(n + 1, 0);
    MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < n; ++r) offsets[r + 1] = offsets[r] + counts[r];
    std::vector<int> flat(std::max(1, offsets[n]));
    MPI_CHECK(MPI_Allgatherv(mine.data(), count, MPI_INT, flat.data(), counts.data(),
                             offsets.data(), MPI_INT, MPI_COMM_WORLD));
    std::vector<std::vector<int>> peers(n);
    for (int r = 0; r < n; ++r)
      peers[r].assign(flat.begin() + offsets[r], flat.begin() + offsets[r + 1]);
    return peers;
  }
  // One split per colour (collective over the world: every rank, in colour order), then one
  // grouped tiny transfer per edge (NCCL connects lazily: the first real transfer would wait
  // for the peer to reach its own).
  void connect(const std::vector<int>& mine) {
    colours = TransferColours(all_peers(mine));
    const int me = mpi.rank();
    edge_comms.assign(colours.colours(), nullptr);
    edge_streams.assign(colours.colours(), nullptr);
    for (int c = 0; c < colours.colours(); ++c) {
      const auto [sender, receiver] = colours.edge_of(me, c);
      const bool on_edge = sender >= 0;
      NCCL_CHECK(ncclCommSplit(world, on_edge ? sender * mpi.size() + receiver : NCCL_SPLIT_NOCOLOR,
                               me == sender ? 0 : 1, &edge_comms[c], nullptr));
      if (on_edge) CUDA_CHECK(cudaStreamCreateWithFlags(&edge_streams[c], cudaStreamNonBlocking));
    }
    DeviceArray<float> tiny(1);
    CUDA_CHECK(cudaMemset(tiny.data(), 0, sizeof(float)));
    for (int c = 0; c < colours.colours(); ++c) {
      const auto [sender, receiver] = colours.edge_of(me, c);
      if (sender < 0) continue;
      if (me == sender)
        NCCL_CHECK(ncclSend(tiny.data(), 1, ncclFloat, 1, edge_comms[c], edge_streams[c]));
      else
        NCCL_CHECK(ncclRecv(tiny.data(), 1, ncclFloat, 0, edge_comms[c], edge_streams[c]));
      CUDA_CHECK(cudaStreamSynchronize(edge_streams[c]));
    }
  }
};

NcclCommunicator::NcclCommunicator(MpiCommunicator& mpi) : impl_(std::make_unique<Impl>(mpi)) {
  Impl& s = *impl_;
  const int devices = device_count();
  if (devices > 0 && mpi.local_size() > devices)
    fail(
        "NCCL communicator: {} ranks on host {} but only {} GPUs (NCCL needs one GPU per rank; "
        "use --comm mpi to share a GPU between ranks)",
        mpi.local_size(), mpi.host(), devices);
  s.device = select_device(mpi.local_rank());
  ncclUniqueId id{};
  if (mpi.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  NCCL_CHECK(ncclCommInitRank(&s.world, mpi.size(), id, mpi.rank()));
  for (cudaStream_t* st : {&s.collective_stream, &s.copy_stream})
    CUDA_CHECK(cudaStreamCreateWithFlags(st, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&s.ready, cudaEventDisableTiming));
}

NcclCommunicator::~NcclCommunicator() {
  Impl& s = *impl_;
  try {
    s.finish_sends(true);
  } catch (...) {
  }
  for (auto& [id, r] : s.started)  // started, never waited: their events only
    if (r.done) cudaEventDestroy(r.done);
  for (cudaEvent_t e : s.free_events) cudaEventDestroy(e);
  for (cudaEvent_t e : {s.staged, s.ready})
    if (e) cudaEventDestroy(e);
  s.destroy_groups();
  for (ncclComm_t c : s.edge_comms)
    if (c) ncclCommDestroy(c);
  if (s.world) ncclCommDestroy(s.world);
  for (cudaStream_t st : s.edge_streams)
    if (st) cudaStreamDestroy(st);
  for (cudaStream_t st : {s.collective_stream, s.copy_stream})
    if (st) cudaStreamDestroy(st);
}

int NcclCommunicator::rank() const { return impl_->mpi.rank(); }
int NcclCommunicator::size() const { return impl_->mpi.size(); }
std::string NcclCommunicator::host() const { return impl_->mpi.host(); }
int NcclCommunicator::device() const { return impl_->device; }

std::string NcclCommunicator::version() const {
  int v = 0;
  NCCL_CHECK(ncclGetVersion(&v));
  return fmt::format("NCCL {}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

void NcclCommunicator::set_groups(const std::vector<std::vector<int>>& groups) {
  Impl& s = *impl_;
  s.destroy_groups();
  // Every rank splits the world once per group, in the same order (ncclCommSplit is collective);
  // a group of every rank in order is the world communicator itself.
  for (const std::vector<int>& ranks : groups) {
    Group g;
    g.ranks = ranks;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == rank()) g.position = int(i);
    bool whole = int(ranks.size()) == size();
    for (std::size_t i = 0; whole && i < ranks.size(); ++i) whole = ranks[i] == int(i);
    if (whole) {
      g.comm = s.world;
    } else {
      NCCL_CHECK(ncclCommSplit(s.world, g.position >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                               g.position >= 0 ? g.position : 0, &g.comm, nullptr));
      g.owned = true;
    }
    s.groups.push_back(std::move(g));
  }
}

void NcclCommunicator::connect_peers(const std::vector<int>& peers) {
  Impl& s = *impl_;
  std::vector<int> mine;
  for (int p : peers)
    if (p != rank() && std::find(mine.begin(), mine.end(), p) == mine.end()) {
      if (p < 0 || p >= size()) fail("NcclCommunicator::connect_peers: no rank {}", p);
      mine.push_back(p);
    }
  if (s.connected) fail("NcclCommunicator::connect_peers: called twice");
  s.connected = true;
  s.connect(mine);  // collective: a job without transfers has no colours and splits nothing
}

void NcclCommunicator::all_reduce(int group, std::span<float> data) {
  wait(start_all_reduce(group, data));
}

void NcclCommunicator::reduce_scatter(int group, std::span<const float> in, std::span<float> out) {
  wait(start_reduce_scatter(group, in, out));
}

void NcclCommunicator::all_gather(int group, std::span<const float> in, std::span<float> out) {
  wait(start_all_gather(group, in, out));
}

// Transfers between a pair of ranks keep the schedule's order on one communicator per
// direction, so the tag (the interpreter's mb/tensor) needs no matching: NCCL pairs them in order.
// Eager: the host data is staged before returning (the caller may reuse it), the transfer
// completes on the device when the peer receives it.
void NcclCommunicator::send(int peer, std::span<const float> data, int tag) {
  Impl& s = *impl_;
  s.finish_sends(false);
  const int request = start_send(peer, data, tag);
  CUDA_CHECK(cudaStreamSynchronize(s.copy_stream));  // copies only: waits for no peer
  s.eager_sends.push_back(request);
}

void NcclCommunicator::recv(int peer, std::span<float> data, int tag) {
  wait(start_recv(peer, data, tag));
}

int NcclCommunicator::start_all_reduce(int group, std::span<float> data) {
  Impl& s = *impl_;
  ncclComm_t comm = s.group_of(group).comm;
  return s.start(collective_queue, data, data, [&](const float* in, float* out, Started&) {
    NCCL_CHECK(ncclAllReduce(in, out, data.size(), ncclFloat, ncclSum, comm, s.collective_stream));
  });
}

int NcclCommunicator::start_reduce_scatter(int group, std::span<const float> in,
                                           std::span<float> out) {
  Impl& s = *impl_;
  const Group& g = s.group_of(group);
  if (in.size() != out.size() * g.ranks.size())
    fail(
        "NcclCommunicator::reduce_scatter: {} values in, {} out, over {} ranks (in must be out "
        "x ranks)",
        in.size(), out.size(), g.ranks.size());
  return s.start(collective_queue, in, out, [&](const float* din, float* dout, Started& r) {
    // NCCL's in-place reduce-scatter has its output at input + position * count; the
    // communicator's at the input's start: such an output goes through a pool buffer.
    const std::size_t n = out.size();
    const bool overlaps = dout >= din && dout < din + in.size();
    float* target = overlaps && dout != din + g.position * n ? s.slot(r, std::int64_t(n)) : dout;
    NCCL_CHECK(ncclReduceScatter(din, target, n, ncclFloat, ncclSum, g.comm, s.collective_stream));
    if (target != dout)
      CUDA_CHECK(cudaMemcpyAsync(dout, target, n * sizeof(float), cudaMemcpyDeviceToDevice,
                                 s.collective_stream));
  });
}

int NcclCommunicator::start_all_gather(int group, std::span<const float> in, std::span<float> out) {
  Impl& s = *impl_;
  const Group& g = s.group_of(group);
  if (out.size() != in.size() * g.ranks.size())
    fail(
        "NcclCommunicator::all_gather: {} values in, {} out, over {} ranks (out must be in x "
        "ranks)",
        in.size(), out.size(), g.ranks.size());
  return s.start(collective_queue, in, out, [&](const float* din, float* dout, Started&) {
    NCCL_CHECK(ncclAllGather(din, dout, in.size(), ncclFloat, g.comm, s.collective_stream));
  });
}

int NcclCommunicator::start_send(int peer, std::span<const float> data, int /*tag*/) {
  Impl& s = *impl_;
  const int q = s.transfer_queue(peer, true);
  ncclComm_t comm = s.edge_comms[q - 1];
  return s.start(q, data, {}, [&](const float* src, float*, Started&) {
    NCCL_CHECK(ncclSend(src, data.size(), ncclFloat, 1, comm, s.stream_of(q)));  // to rank 1
  });
}

int NcclCommunicator::start_recv(int peer, std::span<float> data, int /*tag*/) {
  Impl& s = *impl_;
  const int q = s.transfer_queue(peer, false);
  ncclComm_t comm = s.edge_comms[q - 1];
  return s.start(q, {}, data, [&](const float*, float* dst, Started&) {
    NCCL_CHECK(ncclRecv(dst, data.size(), ncclFloat, 0, comm, s.stream_of(q)));  // from rank 0
  });
}

void NcclCommunicator::wait(int request) {
  Impl& s = *impl_;
  if (!s.started.count(request) ||
      std::find(s.eager_sends.begin(), s.eager_sends.end(), request) != s.eager_sends.end())
    unknown_request(request);
  s.finish(request);
}

void NcclCommunicator::barrier() {
  impl_->finish_sends(true);
  impl_->mpi.barrier();
}

void NcclCommunicator::abort(const std::string& message) {
  Impl& s = *impl_;
  for (Group& g : s.groups)
    if (g.owned && g.comm) ncclCommAbort(g.comm);
  for (ncclComm_t c : s.edge_comms)
    if (c) ncclCommAbort(c);
  if (s.world) ncclCommAbort(s.world);
  s.mpi.abort(message);
}

}  // namespace fabtrain::cuda
