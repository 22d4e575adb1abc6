// The hardware catalog: GPU types, NICs, FABRIC sites, inter-site latencies, network link classes
// and framework overheads, loaded from platforms/data/catalog.yaml. Every number there carries
// its source; assumptions say so. Names are FABRIC's own (GPU_RTX6000, NIC_ConnectX_6, UTAH...).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabtrain {

struct GpuType {
  std::string name;         // FABRIC component name, e.g. GPU_RTX6000; CPU devices too
  std::string description;  // "NVIDIA Quadro RTX 6000"
  double memory_bytes = 0;
  double peak_fp32_flops = 0;
  double peak_tf32_flops = 0;   // 0 where the GPU has no TF32
  double peak_fp16_flops = 0;   // dense tensor-core
  double peak_bf16_flops = 0;   // 0 where the GPU has no bf16
  double memory_bandwidth = 0;  // bytes/s
  int pcie_generation = 0;
  double pcie_bandwidth = 0;    // bytes/s per direction
  double nvlink_bandwidth = 0;  // bytes/s per direction per GPU, 0 without NVLink
  bool is_cpu = false;          // a CPU "device" (for the CPU executor's calibration loop)
  // Fraction of the FP32 peak its FP32 (SIMT) products reach, where it differs from the
  // catalog's compute default (GA102's doubled FP32 lanes, a CPU); 0: the default.
  double fp32_matmul_efficiency = 0;
  // Streaming multiprocessors: how many output tiles of a product run at once (one wave); 0:
  // unknown, no tile or wave quantization charged.
  int sm_count = 0;
  std::string source;
};

struct NicType {
  std::string name;      // NIC_Basic, NIC_ConnectX_5, NIC_ConnectX_6
  double bandwidth = 0;  // bytes/s per direction
  std::string source;
};

struct Site {
  std::string name;  // FABRIC site name, e.g. UTAH
  std::string location;
  double latitude = 0, longitude = 0;
};

struct SiteLatency {
  std::string a, b;
  double rtt_s = 0;
  bool measured = false;  // false: estimated from distance (the file says how)
  std::string source;
};

// Network behaviour of a class of link (what a TCP flow over it can do).
struct LinkClass {
  std::string name;             // l2bridge, l2sts, pcie, nvlink, switched
  double latency_s = 0;         // one-way latency added per hop of this class (inside a site)
  double tcp_window_bytes = 0;  // per TCP stream; 0 = not window-limited (RDMA, NVLink, PCIe)
  double efficiency = 1;        // achievable fraction of the line rate
  std::string source;
};

// How a communication library moves a transfer between two ranks over TCP (the catalog's
// communicators:, each default from the library's documentation). On network links a pair of
// ranks has streams_per_peer connections, each with at most min(TCP window, max_in_flight_bytes)
// unacknowledged, so a pair's bytes in flight are streams_per_peer times that; a point-to-point
// message over the eager limit first waits rendezvous_round_trips round trips for its receiver.
// One wire protocol of a collective library (NCCL's LL, LL128 and Simple): what a call pays
// once, what each ring step pays on top of the path's own latency (a hop inside one VM or one
// across the network), and the fraction of the link's bandwidth the payload gets (LL sends 4
// bytes of flag with every 4 bytes of data). A call runs the protocol whose estimate is lowest,
// as NCCL's tuner picks one by message size (the catalog's communicators: say where from).
struct CollectiveProtocol {
  std::string name;
  double call_latency_s = 0;
  double step_latency_intra_s = 0;  // a hop between GPUs of one VM (PCIe or NVLink)
  double step_latency_net_s = 0;    // a hop over the network
  double bandwidth_fraction = 1;
};

struct CommunicatorProfile {
  std::string name;                   // nccl-socket | openmpi-tcp
  std::string library;                // what it stands for, in words
  int streams_per_peer = 1;           // TCP connections a transfer between two ranks uses
  double max_in_flight_bytes = 0;     // per stream, the library's own buffer; 0: TCP's window only
  double eager_limit_bytes = 0;       // larger point-to-point messages rendezvous first; 0: never
  double rendezvous_round_trips = 0;  // what that costs, in round trips of the path
  std::map<std::string, std::string> knobs;  // the library's settings behind these numbers
  // Whether a rank's started (non-blocking) collectives of one group progress together, each on
  // its own schedule (Open MPI's libnbc), or one after another in start order (one NCCL stream).
  bool concurrent_collectives = false;
  // How its started reduce-scatter moves the bytes: as a ring (false), or as a binomial reduce of
  // the whole buffer to the group's first rank followed by a linear scatter of the parts from it
  // (true: Open MPI 4.1's libnbc, which has no other algorithm for it). YAML
  // started_reduce_scatter: ring | reduce_then_scatter.
  bool started_reduce_scatter_via_root = false;
  // Buffers the library keeps in GPU memory for each communicator (NCCL: NCCL_BUFFSIZE per
  // channel, per peer, per direction); 0 channels: none on the GPU (Open MPI's TCP path).
  int device_buffer_channels = 0;
  double device_buffer_bytes = 0;  // per channel, peer and direction
  std::string source;
  // Its collectives' protocols; empty: none modelled (every call a plain ring or tree).
  std::vector<CollectiveProtocol> protocols;
};

// What a training framework holds on each GPU besides the step's tensors (the catalog's
// framework_memory:): the CUDA context with the framework's kernels (by GPU type where a source
// measured one), the cuBLAS workspace, and the caching allocator's slack (reserved over
// allocated, as a fraction of what the step allocates). Communication buffers come from the
// communicator profile.
struct FrameworkMemory {
  std::string name;
  double context_bytes = 0;
  std::map<std::string, double> context_bytes_by_gpu;  // GPU type -> bytes
  double cublas_workspace_bytes = 0;
  double allocator_slack = 0;  // reserved = allocated x (1 + slack)
  // Data parallelism without ZeRO keeps a second copy of the gradients in its all-reduce
  // buckets (PyTorch DDP unless gradient_as_bucket_view).
  bool data_parallel_gradient_copy = false;
  // The mixed-precision optimizer keeps fp32 gradients beside the half ones (4 bytes a
  // parameter, sharded as the optimizer state).
  bool master_gradients = false;
  // Copies of the fp32 logits the loss's backward holds at once beside the kept activations
  // (PyTorch's cross-entropy: the gradient of the log-probabilities and of the logits; 0 where
  // the gradient is written in place of the logits).
  double loss_gradient_copies = 0;
  std::string source;
  double context_for(const std::string& gpu_type) const;
};

// Per-kind compute efficiencies and overheads: fractions of peak reached by matrix products and
// element-wise kernels and a per-kernel launch overhead.
struct ComputeDefaults {
  double matmul_efficiency = 0.5;            // of the FP32 peak (no tensor cores)
  double tensor_core_matmul_efficiency = 0;  // of the fp16/bf16/tf32 tensor-core peak; 0: as above
  // How a block's products and its element-wise kernels share time: overlapped (max of the two,
  // the roofline of one kernel) or one after the other (their sum, as a stream of kernels runs).
  bool serial_kernels = false;
  double memory_efficiency = 0.7;
  double kernel_overhead_s = 10e-6;
  // Output tile (rows = columns) of one thread block of a matrix product, for tile and wave
  // quantization (sim/cost/matmul_efficiency.hpp); 0: not charged.
  int matmul_tile = 0;
  std::string source;
};

// How Catalog::latency() estimates the round trip of a pair with no measurement:
// 2 * distance * route_factor / (fibre_fraction_of_c * c) + switching_allowance.
struct LatencyEstimate {
  double fibre_fraction_of_c = 2.0 / 3.0;
  double route_factor = 1;           // fibre path length over great-circle distance
  double switching_allowance_s = 0;  // added to the round trip
  std::string source;
};

// Great-circle distance between two sites in metres (spherical Earth).
double great_circle_distance_m(const Site& a, const Site& b);

struct Catalog {
  std::map<std::string, GpuType> gpus;
  std::map<std::string, NicType> nics;
  std::map<std::string, Site> sites;
  std::vector<SiteLatency> latencies;
  std::map<std::string, LinkClass> link_classes;
  std::map<std::string, CommunicatorProfile> communicators;
  std::string default_communicator;  // what a slice that names none runs
  ComputeDefaults compute;
  std::map<std::string, FrameworkMemory> framework_memory;
  std::string default_framework_memory;  // the profile plans are checked against
  LatencyEstimate latency_estimate;
  std::string path;  // the file it was loaded from

  const GpuType& gpu(const std::string& name) const;  // throws naming the known types
  const NicType& nic(const std::string& name) const;
  const Site& site(const std::string& name) const;
  const LinkClass& link_class(const std::string& name) const;
  const CommunicatorProfile& communicator(const std::string& name) const;
  // A framework memory profile by name; "" is the default one.
  const FrameworkMemory& framework_memory_profile(const std::string& name = "") const;
  // Round-trip latency between two sites: measured, or estimated from great-circle distance.
  SiteLatency latency(const std::string& a, const std::string& b) const;
};

// Loads a catalog file; throws fabtrain::Error naming the file, the field and what is wrong.
Catalog load_catalog(const std::string& path);
// The built-in catalog (platforms/data/catalog.yaml), loaded once.
const Catalog& builtin_catalog();
// `base` with the entries of a catalog file of the user's added or replacing the base's by name
// (GPU types, NICs, sites, link classes; a latency by site pair). Every section is optional;
// the entries follow the built-in catalog's rules (strict keys, units in names, sources).
Catalog extend_catalog(const Catalog& base, const std::string& path);
// The built-in catalog extended by a file (`--catalog`), loaded once per path and kept for the
// process; the built-in catalog itself when the path is empty.
const Catalog& catalog_with(const std::string& extra_path);

}  // namespace fabtrain
