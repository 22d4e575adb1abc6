#include "exec/play/device_shard.hpp"

#include "common/error.hpp"
#include "exec/model/gpt2_stage.hpp"

namespace fabtrain {
namespace {

// Uploads a 0/1 mask as floats (the backend's masks), complete before `values` goes away.
void upload_mask(Gpt2Ops& ops, Buffer& to, std::span<const unsigned char> mask) {
  const std::vector<float> values(mask.begin(), mask.end());
  ops.upload(to.sized(ops, std::int64_t(values.size())), values.data(),
             std::int64_t(values.size()));
  ops.synchronize();
}

}  // namespace

DeviceShard::DeviceShard(Gpt2Ops& ops, const ZeroLayout& zero, int position,
                         std::span<const unsigned char> decay,
                         std::span<const unsigned char> counted)
    : ops_(ops), zero_(zero), position_(position) {
  const std::int64_t n = zero.chunk_size();
  if (std::int64_t(decay.size()) != n || std::int64_t(counted.size()) != n)
    fail("device shard: masks of {} and {} entries for a chunk of {}", decay.size(), counted.size(),
         n);
  for (Buffer* b : {&params_, &grads_, &m_, &v_}) ops.zero(b->sized(ops, n), n);
  upload_mask(ops, decay_, decay);
  upload_mask(ops, counted_, counted);
}

std::pair<float*, float*> DeviceShard::buffers(int request, std::int64_t in, std::int64_t out) {
  auto& [a, b] = buffers_[request];
  return {a.grown(ops_, in), b.grown(ops_, out)};
}

const std::pair<std::vector<CopyRun>, std::vector<CopyRun>>& DeviceShard::runs(int k, int d) {
  auto it = runs_.find({k, d});
  if (it == runs_.end()) {
    std::vector<CopyRun> pack = k < 0 ? zero_.pieces(d) : zero_.bucket_pieces(k, d);
    std::vector<CopyRun> unpack = ZeroLayout::reversed(pack);
    it = runs_.emplace(std::pair{k, d}, std::pair{std::move(pack), std::move(unpack)}).first;
  }
  return it->second;
}

void DeviceShard::pack(const float* local, int k, int d, float* to) {
  ops_.zero(to, k < 0 ? zero_.chunk_size() : zero_.bucket_part(k));
  ops_.copy_runs(to, local, runs(k, d).first);
}

void DeviceShard::unpack(const float* from, int k, int d, float* local) {
  ops_.copy_runs(local, from, runs(k, d).second);
}

std::vector<CopyRun> DeviceShard::part_in_chunk(int k) const {
  if (k < 0) return {{0, 0, zero_.chunk_size()}};
  std::vector<CopyRun> runs;
  for (const auto& [chunk_at, part_at, n] : zero_.bucket_in_chunk(k))
    runs.push_back({chunk_at, part_at, n});
  return runs;
}

void DeviceShard::take_params(int k, float* part) {
  ops_.copy_runs(part, params_.data(), part_in_chunk(k));
}

void DeviceShard::add_gradients(int k, const float* part) {
  for (const CopyRun& r : part_in_chunk(k))
    ops_.add_into(grads_.data() + r.from, part + r.to, r.count);
}

void DeviceShard::zero_gradients() { ops_.zero(grads_.data(), size()); }

void DeviceShard::scale_gradients(float factor) { ops_.scale(grads_.data(), size(), factor); }

double DeviceShard::gradient_square_sum() {
  return ops_.masked_square_sum(grads_.data(), counted_.data(), size());
}

void DeviceShard::adamw(const AdamW& a, float lr, int step, float grad_scale) {
  if (step < 1) fail("AdamW: step {} must count from 1", step);
  ops_.adamw(params_.data(), grads_.data(), m_.data(), v_.data(), decay_.data(), size(),
             {lr, a.beta1, a.beta2, a.eps, a.weight_decay, step, grad_scale});
}

void DeviceShard::moments(std::vector<float>* m, std::vector<float>* v) {
  for (auto [host, device] : {std::pair{m, &m_}, std::pair{v, &v_}}) {
    if (!host) continue;
    host->assign(std::size_t(size()), 0.0f);
    ops_.download(host->data(), device->data(), size());
  }
}

void DeviceShard::set_moments(std::span<const float> m, std::span<const float> v) {
  if (std::int64_t(m.size()) != size() || std::int64_t(v.size()) != size())
    fail("device shard: AdamW state of {} and {} values for a chunk of {}", m.size(), v.size(),
         size());
  ops_.upload(m_.data(), m.data(), size());
  ops_.upload(v_.data(), v.data(), size());
  ops_.synchronize();  // the caller's spans may go away
}

}  // namespace fabtrain
