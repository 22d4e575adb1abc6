// CUDA device queries and allocation (see cuda_device.hpp).
#include "exec/cuda/cuda_device.hpp"

#include <fmt/format.h>

#include <atomic>

#include "exec/cuda/cuda_check.hpp"

namespace fabtrain::cuda {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return count;
}

std::string device_problem() {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(code),
                       cudaGetErrorName(code));
  }
  return count > 0 ? "" : "no CUDA device (cudaGetDeviceCount gives 0)";
}

namespace {
cudaStream_t the_compute_stream = nullptr;
}

cudaStream_t compute_stream() { return the_compute_stream; }
void set_compute_stream(cudaStream_t stream) { the_compute_stream = stream; }

DeviceInfo device_info(int index) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.index = index;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.memory_bytes = prop.totalGlobalMem;
  info.multiprocessors = prop.multiProcessorCount;
  return info;
}

std::string describe(const DeviceInfo& info) {
  return fmt::format("{} (sm_{}{}, {} SMs, {:.1f} GiB)", info.name, info.major, info.minor,
                     info.multiprocessors, double(info.memory_bytes) / double(1ull << 30));
}

int select_device(int local_rank) {
  const int count = device_count();
  if (count == 0)
    fail(
        "--device cuda: no usable CUDA device: {} (check nvidia-smi, the driver's CUDA version "
        "and CUDA_VISIBLE_DEVICES, or use --device cpu)",
        device_problem());
  const int device = local_rank % count;
  CUDA_CHECK(cudaSetDevice(device));
  return device;
}

namespace {
std::atomic<long long> allocations{0}, frees{0};
}  // namespace

DeviceAllocations device_allocations() { return {allocations.load(), frees.load()}; }

void device_free(void* data) {
  if (!data) return;
  ++frees;
  cudaFree(data);
}

void* device_alloc(std::size_t bytes, const char* what) {
  ++allocations;
  void* p = nullptr;
  const cudaError_t code = cudaMalloc(&p, bytes);
  if (code != cudaSuccess) {
    std::size_t free_bytes = 0, total_bytes = 0;
    (void)cudaGetLastError();
    cudaMemGetInfo(&free_bytes, &total_bytes);
    fail(
        "cudaMalloc of {:.1f} MiB for {} failed: {} ({:.1f} of {:.1f} GiB free; hint: lower the "
        "microbatch or --seq, or use recomputation / more pipeline or tensor-parallel ranks)",
        double(bytes) / double(1 << 20), what, cudaGetErrorString(code),
        double(free_bytes) / double(1ull << 30), double(total_bytes) / double(1ull << 30));
  }
  return p;
}

}  // namespace fabtrain::cuda
