// The CUDA devices of this machine: how many, what each is, which one a rank uses, and device
// memory that frees itself. Safe to call where no GPU or driver exists (the count is then 0).
// Not here: the stage or the communicator.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fabtrain::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  std::size_t memory_bytes = 0;
  int multiprocessors = 0;
};

// 0 when there is no device, no driver or cudaGetDeviceCount fails for any reason.
int device_count();
// Why there is no usable device: "" when there is one, else cudaGetDeviceCount's own error
// (a driver too old for this CUDA, no driver, no device) or "no CUDA device".
std::string device_problem();
// The stream the stage's kernels run on (set by the CUDA operations; the legacy default stream
// until then): communication started after a kernel waits for it there.
cudaStream_t compute_stream();
void set_compute_stream(cudaStream_t stream);
DeviceInfo device_info(int index);
std::string describe(const DeviceInfo& info);  // "NVIDIA H200 (sm_90, 132 SMs, 140.4 GiB)"
// The device of a rank: its node-local rank modulo the devices; fails when there are none.
int select_device(int local_rank);

// Allocation with a clear error, and its release (defined in cuda_device.cpp); every device
// buffer of the backend goes through them, so tests can count them.
void* device_alloc(std::size_t bytes, const char* what);
void device_free(void* data);
// cudaMalloc and cudaFree calls of device_alloc and device_free so far: a step after the first
// makes none (tests of the hot path).
struct DeviceAllocations {
  long long allocations = 0, frees = 0;
};
DeviceAllocations device_allocations();

// An owned device array of T (device_alloc/device_free); resize() discards the contents.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::int64_t count) { resize(count); }
  ~DeviceArray() { release(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      release();
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  // Allocates exactly count elements unless already that size (then keeps the contents).
  T* sized(std::int64_t count) {
    if (count != size_) resize(count);
    return data_;
  }
  // At least count elements: reallocates only to grow (scratch reused across microbatches).
  T* grown(std::int64_t count) {
    if (count > size_) resize(count);
    return data_;
  }
  void resize(std::int64_t count);
  T* data() const { return data_; }
  std::int64_t size() const { return size_; }

 private:
  void release() {
    if (data_) device_free(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::int64_t size_ = 0;
};

template <typename T>
void DeviceArray<T>::resize(std::int64_t count) {
  release();
  if (count > 0)
    data_ = static_cast<T*>(device_alloc(std::size_t(count) * sizeof(T), "DeviceArray"));
  size_ = count;
}

}  // namespace fabtrain::cuda
