// NCCL communicator (see nccl_communicator.hpp).
#include "exec/comm/nccl/nccl_communicator.hpp"

#include <mpi.h>

#include <deque>
#include <map>

#include "exec/comm/mpi_check.hpp"
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

struct PendingSend {
  DeviceArray<float> buffer;
  cudaEvent_t done = nullptr;
};

// A started request: its staging buffers (host spans), where its result goes back to on the host,
// and the event its stream records when done.
struct Started {
  DeviceArray<float> in, out;
  std::span<float> host_out;  // non-empty: copied back from out before done
  cudaEvent_t done = nullptr;
};

}  // namespace

struct NcclCommunicator::Impl {
  explicit Impl(MpiCommunicator& m) : mpi(m) {}
  MpiCommunicator& mpi;
  int device = 0;
  ncclComm_t world = nullptr, up = nullptr, down = nullptr;
  cudaStream_t collective_stream = nullptr, up_stream = nullptr, down_stream = nullptr;
  struct Group {
    std::vector<int> ranks;
    ncclComm_t comm = nullptr;
    int position = -1;
  };
  std::vector<Group> groups;
  DeviceArray<float> in_buffer, out_buffer, recv_buffer;
  std::deque<PendingSend> pending;
  cudaStream_t compute_stream = nullptr;  // the legacy default stream
  std::map<int, Started> started;
  int next_request = 0;

  // Orders stream after the work queued so far on the compute stream.
  void after_compute(cudaStream_t stream) {
    cudaEvent_t ready;
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ready, compute_stream));
    CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
    CUDA_CHECK(cudaEventDestroy(ready));  // released once the wait has been satisfied
  }
  // Queues op(device_in, device_out) on stream without waiting; returns the request.
  template <typename Op>
  int start(cudaStream_t stream, std::span<const float> in, std::span<float> out, Op&& op) {
    after_compute(stream);
    Started r;
    const float* din = in.data();
    float* dout = out.data();
    if (!in.empty() && !on_device(in.data())) {
      float* staged = r.in.sized(std::int64_t(in.size()));
      CUDA_CHECK(
          cudaMemcpyAsync(staged, in.data(), in.size_bytes(), cudaMemcpyHostToDevice, stream));
      din = staged;
    }
    if (!out.empty() && !on_device(out.data())) {
      dout = r.out.sized(std::int64_t(out.size()));
      r.host_out = out;
    }
    op(din, dout);
    if (!r.host_out.empty())
      CUDA_CHECK(
          cudaMemcpyAsync(out.data(), dout, out.size_bytes(), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaEventCreateWithFlags(&r.done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(r.done, stream));
    const int id = next_request++;
    started.emplace(id, std::move(r));
    return id;
  }

  ncclComm_t comm_of(int group) const {
    if (group < 0 || group >= int(groups.size()))
      fail("NcclCommunicator: group {} is not one of the {} registered groups", group,
           groups.size());
    if (!groups[group].comm)
      fail("NcclCommunicator: rank {} is not a member of group {}", mpi.rank(), group);
    return groups[group].comm;
  }
  int group_size(int group) const { return int(groups[group].ranks.size()); }
  void finish_sends(bool wait_all) {
    while (!pending.empty()) {
      const cudaError_t state = wait_all ? cudaEventSynchronize(pending.front().done)
                                         : cudaEventQuery(pending.front().done);
      if (state == cudaErrorNotReady) return;
      CUDA_CHECK(state);
      cudaEventDestroy(pending.front().done);
      pending.pop_front();
    }
  }
  // Runs op(device_in, device_out) on the collective stream, staging host spans.
  template <typename Op>
  void collective(std::span<const float> in, std::span<float> out, Op&& op) {
    const bool device_spans = on_device(in.data()) && on_device(out.data());
    const float* din = in.data();
    float* dout = out.data();
    if (!device_spans) {
      float* staged_in = in_buffer.sized(std::max<std::int64_t>(in_buffer.size(), in.size()));
      dout = out_buffer.sized(std::max<std::int64_t>(out_buffer.size(), out.size()));
      CUDA_CHECK(cudaMemcpyAsync(staged_in, in.data(), in.size_bytes(), cudaMemcpyHostToDevice,
                                 collective_stream));
      din = staged_in;
    }
    op(din, dout);
    if (!device_spans)
      CUDA_CHECK(cudaMemcpyAsync(out.data(), dout, out.size_bytes(), cudaMemcpyDeviceToHost,
                                 collective_stream));
    CUDA_CHECK(cudaStreamSynchronize(collective_stream));
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
  NCCL_CHECK(ncclCommSplit(s.world, 0, mpi.rank(), &s.up, nullptr));
  NCCL_CHECK(ncclCommSplit(s.world, 0, mpi.rank(), &s.down, nullptr));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.collective_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.up_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.down_stream, cudaStreamNonBlocking));
}

NcclCommunicator::~NcclCommunicator() {
  Impl& s = *impl_;
  try {
    s.finish_sends(true);
  } catch (...) {
  }
  for (auto& g : s.groups)
    if (g.comm) ncclCommDestroy(g.comm);
  for (ncclComm_t c : {s.up, s.down, s.world})
    if (c) ncclCommDestroy(c);
  for (cudaStream_t st : {s.collective_stream, s.up_stream, s.down_stream})
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
  for (auto& g : s.groups)
    if (g.comm) ncclCommDestroy(g.comm);
  s.groups.clear();
  // Every rank splits the world once per group, in the same order (ncclCommSplit is collective).
  for (const std::vector<int>& ranks : groups) {
    Impl::Group g;
    g.ranks = ranks;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == rank()) g.position = int(i);
    NCCL_CHECK(ncclCommSplit(s.world, g.position >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                             g.position >= 0 ? g.position : 0, &g.comm, nullptr));
    s.groups.push_back(std::move(g));
  }
}

void NcclCommunicator::all_reduce(int group, std::span<float> data) {
  Impl& s = *impl_;
  ncclComm_t comm = s.comm_of(group);
  s.collective(data, data, [&](const float* in, float* out) {
    NCCL_CHECK(ncclAllReduce(in, out, data.size(), ncclFloat, ncclSum, comm, s.collective_stream));
  });
}

void NcclCommunicator::reduce_scatter(int group, std::span<const float> in, std::span<float> out) {
  Impl& s = *impl_;
  ncclComm_t comm = s.comm_of(group);
  if (in.size() != out.size() * std::size_t(s.group_size(group)))
    fail(
        "NcclCommunicator::reduce_scatter: {} values in, {} out, over {} ranks (in must be out x "
        "ranks)",
        in.size(), out.size(), s.group_size(group));
  s.collective(in, out, [&](const float* din, float* dout) {
    NCCL_CHECK(
        ncclReduceScatter(din, dout, out.size(), ncclFloat, ncclSum, comm, s.collective_stream));
  });
}

void NcclCommunicator::all_gather(int group, std::span<const float> in, std::span<float> out) {
  Impl& s = *impl_;
  ncclComm_t comm = s.comm_of(group);
  if (out.size() != in.size() * std::size_t(s.group_size(group)))
    fail(
        "NcclCommunicator::all_gather: {} values in, {} out, over {} ranks (out must be in x "
        "ranks)",
        in.size(), out.size(), s.group_size(group));
  s.collective(in, out, [&](const float* din, float* dout) {
    NCCL_CHECK(ncclAllGather(din, dout, in.size(), ncclFloat, comm, s.collective_stream));
  });
}

// Transfers between a pair of ranks keep the schedule's order on one communicator per
// direction, so the tag (the interpreter's mb/tensor) needs no matching: NCCL pairs them in order.
void NcclCommunicator::send(int peer, std::span<const float> data, int /*tag*/) {
  Impl& s = *impl_;
  s.finish_sends(false);
  const bool upward = peer > rank();
  cudaStream_t stream = upward ? s.up_stream : s.down_stream;
  PendingSend p;
  const float* src = data.data();
  if (!on_device(src)) {
    float* staged = p.buffer.sized(std::int64_t(data.size()));
    CUDA_CHECK(cudaMemcpyAsync(staged, src, data.size_bytes(), cudaMemcpyHostToDevice, stream));
    src = staged;
  }
  NCCL_CHECK(ncclSend(src, data.size(), ncclFloat, peer, upward ? s.up : s.down, stream));
  CUDA_CHECK(cudaEventCreateWithFlags(&p.done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(p.done, stream));
  s.pending.push_back(std::move(p));  // eager: returns without waiting for the peer
}

void NcclCommunicator::recv(int peer, std::span<float> data, int /*tag*/) {
  Impl& s = *impl_;
  const bool upward = peer < rank();  // the data travels to a higher rank
  cudaStream_t stream = upward ? s.up_stream : s.down_stream;
  float* dst = data.data();
  const bool device_span = on_device(dst);
  if (!device_span)
    dst = s.recv_buffer.sized(std::max<std::int64_t>(s.recv_buffer.size(), data.size()));
  NCCL_CHECK(ncclRecv(dst, data.size(), ncclFloat, peer, upward ? s.up : s.down, stream));
  if (!device_span)
    CUDA_CHECK(
        cudaMemcpyAsync(data.data(), dst, data.size_bytes(), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void NcclCommunicator::set_compute_stream(cudaStream_t stream) { impl_->compute_stream = stream; }

int NcclCommunicator::start_all_reduce(int group, std::span<float> data) {
  Impl& s = *impl_;
  ncclComm_t comm = s.comm_of(group);
  return s.start(s.collective_stream, data, data, [&](const float* in, float* out) {
    NCCL_CHECK(ncclAllReduce(in, out, data.size(), ncclFloat, ncclSum, comm, s.collective_stream));
  });
}

int NcclCommunicator::start_reduce_scatter(int group, std::span<const float> in,
                                           std::span<float> out) {
  Impl& s = *impl_;
  ncclComm_t comm = s.comm_of(group);
  if (in.size() != out.size() * std::size_t(s.group_size(group)))
    fail("NcclCommunicator::start_reduce_scatter: {} values in, {} out, over {} ranks", in.size(),
         out.size(), s.group_size(group));
  return s.start(s.collective_stream, in, out, [&](const float* din, float* dout) {
    NCCL_CHECK(
        ncclReduceScatter(din, dout, out.size(), ncclFloat, ncclSum, comm, s.collective_stream));
  });
}

int NcclCommunicator::start_all_gather(int group, std::span<const float> in, std::span<float> out) {
  Impl& s = *impl_;
  ncclComm_t comm = s.comm_of(group);
  if (out.size() != in.size() * std::size_t(s.group_size(group)))
    fail("NcclCommunicator::start_all_gather: {} values in, {} out, over {} ranks", in.size(),
         out.size(), s.group_size(group));
  return s.start(s.collective_stream, in, out, [&](const float* din, float* dout) {
    NCCL_CHECK(ncclAllGather(din, dout, in.size(), ncclFloat, comm, s.collective_stream));
  });
}

int NcclCommunicator::start_send(int peer, std::span<const float> data, int /*tag*/) {
  Impl& s = *impl_;
  const bool upward = peer > rank();
  cudaStream_t stream = upward ? s.up_stream : s.down_stream;
  return s.start(stream, data, {}, [&](const float* src, float*) {
    NCCL_CHECK(ncclSend(src, data.size(), ncclFloat, peer, upward ? s.up : s.down, stream));
  });
}

int NcclCommunicator::start_recv(int peer, std::span<float> data, int /*tag*/) {
  Impl& s = *impl_;
  const bool upward = peer < rank();
  cudaStream_t stream = upward ? s.up_stream : s.down_stream;
  return s.start(stream, {}, data, [&](const float*, float* dst) {
    NCCL_CHECK(ncclRecv(dst, data.size(), ncclFloat, peer, upward ? s.up : s.down, stream));
  });
}

void NcclCommunicator::wait(int request) {
  Impl& s = *impl_;
  auto it = s.started.find(request);
  if (it == s.started.end()) unknown_request(request);
  Started r = std::move(it->second);
  s.started.erase(it);
  const cudaError_t state = cudaEventSynchronize(r.done);
  cudaEventDestroy(r.done);
  CUDA_CHECK(state);
}

void NcclCommunicator::barrier() {
  impl_->finish_sends(true);
  impl_->mpi.barrier();
}

void NcclCommunicator::abort(const std::string& message) {
  for (auto& g : impl_->groups)
    if (g.comm) ncclCommAbort(g.comm);
  impl_->mpi.abort(message);
}

}  // namespace fabtrain::cuda
