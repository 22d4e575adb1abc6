// The ZeRO shard layout (exec/play/zero_layout.hpp) on its own: a hand-worked example, then every
// shard split of real stages (pipeline and tensor-parallel pieces of gpt2-nano): each local
// element in exactly one chunk, pack and unpack inverse, the wte slice first in every chunk.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "common/error.hpp"
#include "exec/model/cpu_ops.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/play/bucket_segments.hpp"
#include "exec/play/zero_layout.hpp"
#include "models/model_spec.hpp"

using namespace fabtrain;

TEST_CASE("zero layout: a hand-worked split of two regions over two ranks") {
  // Local elements 0..12 hold: [0, 4) full 10..13, [4, 10) the wte (full 0..5), [10, 13) full
  // 20..22; wte_size 6. wte: 6 elements, 3 per chunk; the rest: locals 0..3 and 10..12, 7
  // elements, 4 per chunk (chunk 1 padded by one).
  const std::vector<ParamRun> runs = {{10, 0, 4, true}, {0, 4, 6, true}, {20, 10, 3, false}};
  const ZeroLayout z(runs, 6, 2);
  CHECK(z.wte_total() == 6);
  CHECK(z.rest_total() == 7);
  CHECK(z.wte_chunk() == 3);
  CHECK(z.chunk_size() == 7);
  std::vector<float> local(13);
  std::iota(local.begin(), local.end(), 1.0f);  // local element i holds i + 1
  std::vector<float> c0(7), c1(7);
  z.pack<float>(local, 0, c0);
  z.pack<float>(local, 1, c1);
  CHECK(c0 == std::vector<float>{5, 6, 7, 1, 2, 3, 4});
  CHECK(c1 == std::vector<float>{8, 9, 10, 11, 12, 13, 0});
  std::vector<float> back(13, -1.0f);
  z.unpack<float>(c0, 0, back);
  z.unpack<float>(c1, 1, back);
  CHECK(back == local);
  std::vector<float> wte(6);
  z.copy_wte_out(local, wte);
  CHECK(wte == std::vector<float>{5, 6, 7, 8, 9, 10});
}

TEST_CASE("zero layout: wte goes in full-offset order, and a run may straddle its end") {
  // The wte pieces come in local order 1 then 0 (full offsets 3.. and 0..); the last run
  // starts inside wte (full 4, wte_size 6): 2 of its elements are wte, 3 are not.
  const std::vector<ParamRun> runs = {{3, 0, 1, true}, {0, 1, 3, true}, {4, 4, 5, false}};
  const ZeroLayout z(runs, 6, 1);
  CHECK(z.wte_total() == 6);
  CHECK(z.rest_total() == 3);
  std::vector<float> local = {30, 0, 10, 20, 40, 50, 60, 70, 80}, wte(6);
  z.copy_wte_out(local, wte);
  CHECK(wte == std::vector<float>{0, 10, 20, 30, 40, 50});
  std::vector<float> chunk(9);
  z.pack<float>(local, 0, chunk);
  CHECK(chunk == std::vector<float>{0, 10, 20, 30, 40, 50, 60, 70, 80});
  std::vector<float> in = {1, 2, 3, 4, 5, 6}, into(9, 0.0f);
  z.copy_wte_in(in, into);
  CHECK(into == std::vector<float>{4, 1, 2, 3, 5, 6, 0, 0, 0});
  CHECK_THROWS_AS(ZeroLayout(runs, 6, 0), Error);
}

TEST_CASE("zero layout: every stage of gpt2-nano splits into chunks covering each element once") {
  const ModelSpec m = load_model("gpt2-nano");
  const std::int64_t wte_size = full_layout(m).size[t_wte];
  const int blocks = block_count(m);
  for (const BlockRange range : {BlockRange{0, blocks}, BlockRange{0, 3}, BlockRange{3, blocks}})
    for (int tp : {1, 2})
      for (int parts : {1, 2, 3, 4}) {
        INFO("blocks [" << range.begin << ", " << range.end << ") tp=" << tp << " parts=" << parts);
        Gpt2Stage stage(m, range, tp, tp - 1, 1, 8, 1);
        const std::int64_t n = std::int64_t(stage.params().size());
        const ZeroLayout z(stage.param_runs(), wte_size, parts);
        CHECK(z.wte_total() + z.rest_total() == n);
        CHECK(z.chunk_size() * parts >= n);
        CHECK(z.chunk_size() * parts < n + 2 * parts);  // padding: under one element per region
        std::vector<float> local(n);
        std::iota(local.begin(), local.end(), 1.0f);
        std::vector<int> seen(n, 0);
        std::vector<float> back(n, 0.0f), chunk(z.chunk_size());
        for (int d = 0; d < parts; ++d) {
          z.pack<float>(local, d, chunk);
          for (float v : chunk)
            if (v != 0.0f) ++seen[std::int64_t(v) - 1];
          z.unpack<float>(chunk, d, back);
        }
        CHECK(std::count(seen.begin(), seen.end(), 1) == n);
        CHECK(back == local);
        // Each chunk starts with its slice of wte in full-offset order: with every element
        // holding its full offset + 1, chunk d's first values are d * wte_chunk + 1, + 2, ...
        if (z.wte_total() == 0) continue;
        CHECK(z.wte_total() == wte_size);  // a stage holding wte holds all of it (not split)
        std::vector<float> full_of(n);
        for (const ParamRun& run : stage.param_runs())
          for (std::int64_t k = 0; k < run.count; ++k)
            full_of[run.local_offset + k] = float(run.full_offset + k + 1);
        std::int64_t wrong = 0;
        for (int d = 0; d < parts; ++d) {
          z.pack<float>(full_of, d, chunk);
          for (std::int64_t i = 0; i < z.wte_chunk() && d * z.wte_chunk() + i < wte_size; ++i)
            if (chunk[i] != float(d * z.wte_chunk() + i + 1)) ++wrong;
        }
        CHECK(wrong == 0);
      }
}

TEST_CASE("zero layout: gradient buckets give every dp rank 1/dp of each bucket") {
  const ModelSpec m = load_model("gpt2-nano");
  const std::int64_t wte_size = full_layout(m).size[t_wte];
  const int blocks = block_count(m);
  // Blocks of every stage in three buckets (backward order), the head with the last stage's wte.
  for (const BlockRange range : {BlockRange{0, blocks}, BlockRange{0, 3}, BlockRange{3, blocks}}) {
    INFO("blocks [" << range.begin << ", " << range.end << ")");
    Gpt2Stage stage(m, range, 1, 0, 1, 8, 1);
    const std::int64_t n = std::int64_t(stage.params().size());
    const int mid = (range.begin + range.end) / 2;
    const std::vector<BlockRange> buckets = {
        {range.end - 1, range.end}, {mid, range.end - 1}, {range.begin, mid}};
    const auto segments = bucket_segments(m, stage.param_runs(), buckets, range.begin == 0);
    REQUIRE(segments.size() == 3);
    std::int64_t total = 0;
    for (const Segments& s : segments)
      for (const auto& [at, count] : s) total += count;
    CHECK(total == n);
    if (range.begin == 0) CHECK(segments[2].front().first == 0);  // wte and wpe: the embed's
    if (range.begin != 0) CHECK(segments[0].size() == 2);         // the head: wte first, lnf last
    const ZeroLayout z(stage.param_runs(), wte_size, 2, segments);
    CHECK(z.buckets() == 3);
    CHECK(z.wte_bucket() == (range.begin == 0 ? 2 : 0));
    std::vector<float> local(n);
    std::iota(local.begin(), local.end(), 1.0f);
    // A bucket's parts of the two chunks together hold exactly the bucket's elements, and they
    // sit in the chunk where bucket_in_chunk says.
    for (int k = 0; k < 3; ++k) {
      std::vector<int> seen(n, 0);
      std::vector<float> back(n, 0.0f);
      for (int d = 0; d < 2; ++d) {
        std::vector<float> part(z.bucket_part(k)), chunk(z.chunk_size());
        z.pack_bucket<float>(local, k, d, part);
        z.pack<float>(local, d, chunk);
        for (const auto& [chunk_at, part_at, count] : z.bucket_in_chunk(k))
          for (std::int64_t i = 0; i < count; ++i) CHECK(chunk[chunk_at + i] == part[part_at + i]);
        for (float v : part)
          if (v != 0.0f) ++seen[std::int64_t(v) - 1];
        z.unpack_bucket<float>(part, k, d, back);
      }
      std::int64_t in_bucket = 0, wrong = 0;
      for (const auto& [at, count] : segments[k]) {
        in_bucket += count;
        for (std::int64_t i = at; i < at + count; ++i) wrong += seen[i] != 1 || back[i] != local[i];
      }
      CHECK(std::count(seen.begin(), seen.end(), 1) == in_bucket);
      CHECK(wrong == 0);
    }
  }
  // Buckets that miss elements are refused.
  Gpt2Stage stage(m, {0, blocks}, 1, 0, 1, 8, 1);
  CHECK_THROWS_AS(bucket_segments(m, stage.param_runs(), {{1, blocks}}, true), Error);
}

TEST_CASE("zero layout: its pieces copied in a backend's memory pack and unpack as on the host") {
  // What a device shard does (Gpt2Ops::copy_runs over pieces()), here with the CPU's operations,
  // against pack/unpack: whole chunks and bucket parts, tp and pipeline stages, padding zeroed.
  const ModelSpec m = load_model("gpt2-nano");
  const std::int64_t wte_size = full_layout(m).size[t_wte];
  const int blocks = block_count(m);
  const std::unique_ptr<Gpt2Ops> ops = make_cpu_ops();
  for (const int tp : {1, 2})
    for (const BlockRange range : {BlockRange{0, blocks}, BlockRange{3, blocks}}) {
      INFO("tp=" << tp << " blocks [" << range.begin << ", " << range.end << ")");
      Gpt2Stage stage(m, range, tp, tp - 1, 1, 8, 1);
      const std::int64_t n = std::int64_t(stage.params().size());
      const std::vector<BlockRange> buckets = {{range.end - 1, range.end},
                                               {range.begin, range.end - 1}};
      const auto segments = bucket_segments(m, stage.param_runs(), buckets, range.begin == 0);
      const ZeroLayout z(stage.param_runs(), wte_size, 3, segments);
      std::vector<float> local(n);
      std::iota(local.begin(), local.end(), 1.0f);
      for (int d = 0; d < 3; ++d) {
        std::vector<float> want(z.chunk_size()), got(z.chunk_size(), 0.0f);
        z.pack<float>(local, d, want);
        ops->copy_runs(got.data(), local.data(), z.pieces(d));
        CHECK(got == want);
        std::vector<float> back(n, -1.0f), want_back(n, -1.0f);
        z.unpack<float>(want, d, want_back);
        ops->copy_runs(back.data(), got.data(), ZeroLayout::reversed(z.pieces(d)));
        CHECK(back == want_back);
        for (int k = 0; k < 2; ++k) {
          std::vector<float> part(z.bucket_part(k)), copied(z.bucket_part(k), 0.0f);
          z.pack_bucket<float>(local, k, d, part);
          ops->copy_runs(copied.data(), local.data(), z.bucket_pieces(k, d));
          CHECK(copied == part);
        }
      }
    }
}
